import Foundation
import Testing

@testable import CloakCore

/// Base64 decoded as it arrives (files sent inside JSON): what Foundation encodes comes back the
/// same however it is cut, and junk, misplaced padding or a cut group are refused.
@Suite struct Base64StreamTests {
    static func decode(_ text: String, piece: Int) -> Result<[UInt8], Base64Stream.Failure> {
        var stream = Base64Stream()
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        do throws(Base64Stream.Failure) {
            var offset = 0
            while offset < bytes.count {
                try stream.feed(bytes[offset..<min(offset + piece, bytes.count)], into: &out)
                offset += piece
            }
            try stream.finish()
            return .success(out)
        } catch {
            return .failure(error)
        }
    }

    @Test(arguments: [0, 1, 2, 3, 4, 5, 100, 1001])
    func foundationsEncodingComesBack(count: Int) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 3) }
        let text = Data(bytes).base64EncodedString()
        for piece in [1, 3, 4, 7, 1000] {
            #expect(Self.decode(text, piece: piece) == .success(bytes), "\(count) in pieces of \(piece)")
        }
    }

    @Test(arguments: [
        ("QUJD\n", Base64Stream.Failure.invalidCharacter), ("QU JD", .invalidCharacter), ("QUJD-_", .invalidCharacter),
        ("QQ==QUJD", .invalidCharacter), ("Q===", .invalidCharacter), ("=QUJ", .invalidCharacter),
        ("QQ=A", .invalidCharacter),
        ("QUJ", .truncated), ("QQ", .truncated), ("QQ=", .truncated), ("QUJD\u{0}", .invalidCharacter),
        ("QUJDé", .invalidCharacter),
    ])
    func junkAndBrokenPaddingAreRefused(text: String, failure: Base64Stream.Failure) {
        #expect(Self.decode(text, piece: 1) == .failure(failure), "\(text.debugDescription)")
        #expect(Self.decode(text, piece: 100) == .failure(failure), "\(text.debugDescription)")
    }
}
