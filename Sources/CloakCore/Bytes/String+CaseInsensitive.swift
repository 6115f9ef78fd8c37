extension String {
    /// ASCII case-insensitive equality, as header names compare.
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        // Bytes only: `==` would also match canonically equivalent non-ASCII names. The bytes
        // are read in place (native and small strings), without copying either string: it runs
        // dozens of times a proxied request.
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        let inPlace = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in Self.equalIgnoringASCIICase(x, y) }
        }
        if let inPlace, let equal = inPlace { return equal }
        var x = self, y = other  // a string without contiguous UTF-8 (bridged) is made native
        return x.withUTF8 { x in y.withUTF8 { y in Self.equalIgnoringASCIICase(x, y) } }
    }

    private static func equalIgnoringASCIICase(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool
    {
        for i in 0..<x.count where x[i] != y[i] {
            let lower = x[i] | 0x20
            guard lower == y[i] | 0x20, lower >= 97, lower <= 122 else { return false }
        }
        return true
    }
}
