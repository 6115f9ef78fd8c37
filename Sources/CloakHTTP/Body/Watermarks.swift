/// When a producer runs ahead of its consumer (swift-nio's high-low watermark strategy): it
/// goes on while fewer than ``high`` bytes wait, stops at ``high``, and starts again once the
/// consumer has taken them down to ``low``. Two marks, not one, so that a consumer taking
/// small pieces does not stop and start the producer on every piece.
public struct Watermarks: Sendable, Equatable {
    public var low: Int
    public var high: Int

    public init(low: Int, high: Int) {
        precondition(0 <= low && low <= high, "watermarks need 0 <= low <= high")
        self.low = low
        self.high = high
    }

    /// A streamed request body: two socket reads ahead of its handler at most, read again once
    /// one is left.
    public static let requestBody = Watermarks(low: 16 << 10, high: 32 << 10)
    /// A streamed answer or upstream request: the next piece is asked for once what the socket
    /// has not taken is down to one read's worth.
    public static let outgoingBody = Watermarks(low: 16 << 10, high: 16 << 10)
}
