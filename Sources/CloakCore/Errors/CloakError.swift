/// A failure as Cloak answers it: a VGSError-style body with a code and a type (the HTTP status
/// each code is answered with belongs to the service: `CloakService`'s `ErrorStatus.swift`).
///
/// Errors compare by code only. A description names fields and rules, never a submitted value:
/// build them from field names, counts and type names alone.
public struct CloakError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The VGSErrorType codes Cloak answers with (SPEC §6).
    public enum Code: Int, Sendable, CaseIterable {
        case inputDataIsNotValid = 1001
        case malformedRequest = 1002
        case payloadTooLarge = 1003
        case invalidAccessToken = 1300
        case forbidden = 1301
        case unexpectedResponseType = 1400
        case unexpectedResponseDataFormat = 1401
        case notFound = 1404
        case methodNotAllowed = 1405
        case upstreamTimeout = 1408
        case aliasNotFound = 1422
        case tooManyRequests = 1429
        case invalidConfigurationURL = 1480
        case vaultUnavailable = 1500
        case tooManyConnections = 1503
        /// The store's disk is below `limits.disk_reserve_mib`: what would grow it waits (507).
        case insufficientStorage = 1507

        /// The `VGSErrorType` case name.
        public var typeName: String {
            switch self {
            case .inputDataIsNotValid: return "inputDataIsNotValid"
            case .malformedRequest: return "malformedRequest"
            case .payloadTooLarge: return "payloadTooLarge"
            case .invalidAccessToken: return "invalidAccessToken"
            case .forbidden: return "forbidden"
            case .unexpectedResponseType: return "unexpectedResponseType"
            case .unexpectedResponseDataFormat: return "unexpectedResponseDataFormat"
            case .notFound: return "notFound"
            case .methodNotAllowed: return "methodNotAllowed"
            case .upstreamTimeout: return "upstreamTimeout"
            case .aliasNotFound: return "aliasNotFound"
            case .tooManyRequests: return "tooManyRequests"
            case .invalidConfigurationURL: return "invalidConfigurationURL"
            case .vaultUnavailable: return "vaultUnavailable"
            case .tooManyConnections: return "tooManyConnections"
            case .insufficientStorage: return "insufficientStorage"
            }
        }

        /// The `VGSErrorInfoKey` string (each equals its identifier, as in the SDK).
        public var key: String {
            switch self {
            case .inputDataIsNotValid: return "VGSSDKErrorInputDataIsNotValid"
            case .malformedRequest: return "VGSSDKErrorMalformedRequest"
            case .payloadTooLarge: return "VGSSDKErrorPayloadTooLarge"
            case .invalidAccessToken: return "VGSSDKErrorInvalidAccessToken"
            case .forbidden: return "VGSSDKErrorForbidden"
            case .unexpectedResponseType: return "VGSSDKErrorUnexpectedResponseType"
            case .unexpectedResponseDataFormat: return "VGSSDKErrorUnexpectedResponseDataFormat"
            case .notFound: return "VGSSDKErrorNotFound"
            case .methodNotAllowed: return "VGSSDKErrorMethodNotAllowed"
            case .upstreamTimeout: return "VGSSDKErrorUpstreamTimeout"
            case .aliasNotFound: return "VGSSDKErrorAliasNotFound"
            case .tooManyRequests: return "VGSSDKErrorTooManyRequests"
            case .invalidConfigurationURL: return "VGSSDKErrorWrongConfiguration"
            case .vaultUnavailable: return "VGSSDKErrorVaultUnavailable"
            case .tooManyConnections: return "VGSSDKErrorTooManyConnections"
            case .insufficientStorage: return "VGSSDKErrorInsufficientStorage"
            }
        }
    }

    public let code: Code
    public let message: String
    public let extraInfo: [(key: String, value: JSONValue)]

    public init(_ code: Code, _ message: String, extraInfo: [(key: String, value: JSONValue)] = []) {
        self.code = code
        self.message = message
        self.extraInfo = extraInfo
    }

    public static func == (lhs: CloakError, rhs: CloakError) -> Bool { lhs.code == rhs.code }

    public var description: String { "\(code.rawValue) \(code.typeName): \(message)" }

    public static func malformed(_ message: String) -> CloakError { CloakError(.malformedRequest, message) }
    public static func notFound(_ message: String) -> CloakError { CloakError(.notFound, message) }

    /// The error body: `{"error":{"domain","code","type","key","description","extraInfo"}}`.
    public var body: JSONValue {
        .object([
            (
                "error",
                .object([
                    ("domain", .string("vgscollect.sdk")),
                    ("code", .int(code.rawValue)),
                    ("type", .string(code.typeName)),
                    ("key", .string(code.key)),
                    ("description", .string(message)),
                    ("extraInfo", .object(extraInfo)),
                ])
            )
        ])
    }
}
