// cloak-scale-fill: fills a store with card records for Benchmarks/scale.sh, through `Vault` in
// this process (so they are sealed, fingerprinted and signed as the server makes them), far
// faster than over HTTP. A benchmark tool only: the `cloak` binary has no such command.
//
//   cloak-scale-fill STORE_URL KEYS FROM TO ALIASES_FILE
//
// Makes records FROM..<TO of the filler series (`ScaleCards.card(series: 0, i)`, the series
// Benchmarks/load/scale.lua asks for again as known cards), FPE_SIX_T_FOUR and PERSISTENT, and
// appends about 2,000 of their aliases, spread over the range, to ALIASES_FILE (the reveal and
// egress cases pick from them).
import CloakCore
import CloakService
import CloakVault
import Dispatch
import Foundation
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 6, let from = Int(arguments[3]), let to = Int(arguments[4]), from <= to else {
    FileHandle.standardError.write(Data("usage: cloak-scale-fill STORE_URL KEYS FROM TO ALIASES_FILE\n".utf8))
    exit(2)
}
var settings = ServiceConfiguration.VaultSettings()
settings.store = arguments[1]
settings.keys = arguments[2]
let vault = try VaultBootstrap.open(settings, environment: ProcessInfo.processInfo.environment, logger: nil)

let perCall = 250
let inFlight = DispatchSemaphore(value: 16)
let all = DispatchGroup()
let sampleEvery = max(1, (to - from) / 2_000)
let sample = Mutex<[String]>([])
let failures = Atomic<Int>(0)
let started = Date()
var next = from
while next < to {
    let range = next..<min(next + perCall, to)
    next = range.upperBound
    let requests = range.map {
        AliasRequest(value: ScaleCards.card(series: 0, $0), format: .FPE_SIX_T_FOUR, storage: .persistent)
    }
    inFlight.wait()
    all.enter()
    vault.createAliases(requests) { result in
        defer {
            inFlight.signal()
            all.leave()
        }
        guard case let .success(records) = result else {
            failures.add(1, ordering: .relaxed)
            return
        }
        let picked = zip(range, records).filter { $0.0 % sampleEvery == 0 }.compactMap { $0.1.aliases.first?.alias }
        if !picked.isEmpty { sample.withLock { $0 += picked } }
    }
    if range.upperBound % 100_000 == 0 {
        let rate = Double(range.upperBound - from) / Date().timeIntervalSince(started)
        print("cloak-scale-fill: \(range.upperBound) records (\(Int(rate)) a second)")
    }
}
all.wait()
vault.close()
guard failures.load(ordering: .relaxed) == 0 else {
    FileHandle.standardError.write(Data("cloak-scale-fill: \(failures.load(ordering: .relaxed)) batches failed\n".utf8))
    exit(1)
}
let lines = sample.withLock { $0 }.map { $0 + "\n" }.joined()
guard let out = FileHandle(forWritingAtPath: arguments[5]) ?? {
    _ = FileManager.default.createFile(atPath: arguments[5], contents: nil)
    return FileHandle(forWritingAtPath: arguments[5])
}() else { exit(1) }
out.seekToEndOfFile()
out.write(Data(lines.utf8))
print("cloak-scale-fill: \(to - from) records in \(Int(Date().timeIntervalSince(started))) s")

/// The benchmark's card numbers: 16 digits, Luhn-valid, each `i` below 10^8 in its own guess
/// bucket (BIN and last four). Benchmarks/load/scale.lua makes the same numbers.
enum ScaleCards {
    static func card(series: Int, _ i: Int) -> String {
        // 4, the series, four digits of i's, five middle digits, the check digit, the last four.
        var d = [4, series % 10]
        d += digits(i / 10_000 % 10_000, 4) + digits(i / 100_000_000 % 100_000, 5) + [0] + digits(i % 10_000, 4)
        // The check digit is 5th from the right: not doubled.
        var sum = 0
        for (position, digit) in d.reversed().enumerated() where position != 4 {
            let doubled = position % 2 == 1 ? digit * 2 : digit
            sum += doubled > 9 ? doubled - 9 : doubled
        }
        d[11] = (10 - sum % 10) % 10
        return d.map(String.init).joined()
    }

    static func digits(_ n: Int, _ count: Int) -> [Int] {
        var out = [Int](repeating: 0, count: count)
        var n = n
        for k in stride(from: count - 1, through: 0, by: -1) {
            out[k] = n % 10
            n /= 10
        }
        return out
    }
}
