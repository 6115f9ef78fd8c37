extension RequestFraming {
    /// Why a stream was refused. The descriptions name the rule, never a byte of the request.
    enum BrokenRule: Sendable, Equatable, CustomStringConvertible {
        case bareLineFeed
        case bareCarriageReturn
        case controlCharacter
        case obsoleteLineFolding
        case malformedFieldLine
        case whitespaceBeforeColon
        case invalidContentLength
        case conflictingContentLength
        case framingFieldTooLong
        case unsupportedTransferEncoding
        case repeatedTransferEncoding
        case transferEncodingWithContentLength
        case transferEncodingBeforeHTTP11
        case unexpectedBody
        case invalidChunkSize
        case chunkLineTooLong
        case missingChunkTerminator
        case framingFieldInTrailer
        case invalidTrailerFieldName
        case connectNotServed
        case invalidConnectTarget

        var description: String {
            switch self {
            case .bareLineFeed: "a line ends in LF without CR"
            case .bareCarriageReturn: "a CR is not followed by LF"
            case .controlCharacter: "a control character in a request head or trailer"
            case .obsoleteLineFolding: "a header line starts with whitespace (obs-fold)"
            case .malformedFieldLine: "a header line has no name or no colon"
            case .whitespaceBeforeColon: "whitespace between a header name and its colon"
            case .invalidContentLength: "Content-Length is not 1 to 18 digits"
            case .conflictingContentLength: "Content-Length headers disagree"
            case .framingFieldTooLong: "a Content-Length or Transfer-Encoding line is too long"
            case .unsupportedTransferEncoding: "Transfer-Encoding is not exactly chunked"
            case .repeatedTransferEncoding: "more than one Transfer-Encoding header"
            case .transferEncodingWithContentLength: "Transfer-Encoding with Content-Length"
            case .transferEncodingBeforeHTTP11: "Transfer-Encoding in a request that is not HTTP/1.1"
            case .unexpectedBody: "a body on a method read without one (HEAD, TRACE, CONNECT or unknown)"
            case .invalidChunkSize: "a chunk size is not 1 to 16 hex digits"
            case .chunkLineTooLong: "a chunk size line is too long"
            case .missingChunkTerminator: "chunk data is not followed by CRLF"
            case .framingFieldInTrailer: "Content-Length or Transfer-Encoding in a trailer"
            case .invalidTrailerFieldName: "a trailer field name is not a token"
            case .connectNotServed: "CONNECT on a listener that opens no tunnels"
            case .invalidConnectTarget: "a CONNECT target that is not host:port"
            }
        }
    }
}
