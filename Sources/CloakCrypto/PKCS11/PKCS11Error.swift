/// A PKCS#11 failure: what went wrong, named for an operator. Never a PIN or key byte.
package struct PKCS11Error: Error, Sendable, CustomStringConvertible, Equatable {
    package enum Kind: Sendable, Equatable {
        case malformedURI, pinUnreadable, moduleUnloadable, tokenNotFound, wrongPIN, objectNotFound, notAnAESKey
        /// More than one secret key carries the URI's object label.
        case ambiguousObject
        case failed
    }

    package let kind: Kind
    package let description: String

    package init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// A failed call: the function and the return value's name (`C_Login: CKR_PIN_INCORRECT`).
    static func call(_ function: String, _ rv: UInt) -> PKCS11Error {
        let name = returnValueNames[rv] ?? "CKR 0x" + String(rv, radix: 16)
        switch rv {
        case 0xA0, 0xA1, 0xA2:  // CKR_PIN_INCORRECT, CKR_PIN_INVALID, CKR_PIN_LEN_RANGE
            return PKCS11Error(.wrongPIN, "the token refused the PIN (\(function): \(name))")
        default:
            return PKCS11Error(.failed, "\(function) failed: \(name)")
        }
    }

    static let returnValueNames: [UInt: String] = [
        0x0: "CKR_OK", 0x1: "CKR_CANCEL", 0x2: "CKR_HOST_MEMORY", 0x3: "CKR_SLOT_ID_INVALID",
        0x5: "CKR_GENERAL_ERROR", 0x6: "CKR_FUNCTION_FAILED", 0x7: "CKR_ARGUMENTS_BAD",
        0x10: "CKR_ATTRIBUTE_READ_ONLY", 0x11: "CKR_ATTRIBUTE_SENSITIVE", 0x12: "CKR_ATTRIBUTE_TYPE_INVALID",
        0x13: "CKR_ATTRIBUTE_VALUE_INVALID", 0x20: "CKR_DATA_INVALID", 0x21: "CKR_DATA_LEN_RANGE",
        0x30: "CKR_DEVICE_ERROR", 0x31: "CKR_DEVICE_MEMORY", 0x32: "CKR_DEVICE_REMOVED",
        0x40: "CKR_ENCRYPTED_DATA_INVALID", 0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE", 0x54: "CKR_FUNCTION_NOT_SUPPORTED",
        0x60: "CKR_KEY_HANDLE_INVALID", 0x62: "CKR_KEY_SIZE_RANGE", 0x63: "CKR_KEY_TYPE_INCONSISTENT",
        0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED", 0x6A: "CKR_KEY_UNEXTRACTABLE", 0x70: "CKR_MECHANISM_INVALID",
        0x71: "CKR_MECHANISM_PARAM_INVALID", 0x82: "CKR_OBJECT_HANDLE_INVALID", 0x90: "CKR_OPERATION_ACTIVE",
        0x91: "CKR_OPERATION_NOT_INITIALIZED", 0xA0: "CKR_PIN_INCORRECT", 0xA1: "CKR_PIN_INVALID",
        0xA2: "CKR_PIN_LEN_RANGE", 0xA4: "CKR_PIN_LOCKED", 0xB0: "CKR_SESSION_CLOSED",
        0xB3: "CKR_SESSION_HANDLE_INVALID", 0xB5: "CKR_SESSION_READ_ONLY", 0xC0: "CKR_SIGNATURE_INVALID",
        0xD0: "CKR_TEMPLATE_INCOMPLETE", 0xD1: "CKR_TEMPLATE_INCONSISTENT", 0xE0: "CKR_TOKEN_NOT_PRESENT",
        0xE1: "CKR_TOKEN_NOT_RECOGNIZED", 0xE2: "CKR_TOKEN_WRITE_PROTECTED", 0x100: "CKR_USER_ALREADY_LOGGED_IN",
        0x101: "CKR_USER_NOT_LOGGED_IN", 0x102: "CKR_USER_PIN_NOT_INITIALIZED", 0x150: "CKR_BUFFER_TOO_SMALL",
        0x190: "CKR_CRYPTOKI_NOT_INITIALIZED", 0x191: "CKR_CRYPTOKI_ALREADY_INITIALIZED",
    ]
}
