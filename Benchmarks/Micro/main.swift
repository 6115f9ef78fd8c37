import CloakCore
import CloakCrypto
import CloakHTTP
import CloakService
import CloakVault
import Foundation

/// glibc's `malloc_trim` (malloc.h is not in Swift's Glibc module).
@_silgen_name("malloc_trim") func mallocTrim(_ pad: Int) -> Int32

// Micro-benchmarks of Cloak's hot paths. Each case runs for about a second after a warm-up and
// prints nanoseconds per operation and operations per second on one core.
//   swift run -c release cloak-micro [filter]

struct Case {
    let name: String
    let body: () -> Void
}

func measure(_ c: Case) {
    for _ in 0..<1000 { c.body() }
    var iterations = 1000
    while true {
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<iterations { c.body() }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        if elapsed > 1_000_000_000 || iterations > 100_000_000 {
            let ns = Double(elapsed) / Double(iterations)
            let name = c.name.padding(toLength: 44, withPad: " ", startingAt: 0)
            print("\(name) \(String(format: "%10.0f", ns)) ns/op \(String(format: "%12.0f", 1e9 / ns)) op/s")
            return
        }
        iterations *= 4
    }
}

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let yaml = try String(contentsOf: root.appendingPathComponent("config/cloak.yaml"), encoding: .utf8)
var configuration = try ServiceConfiguration.parse(yaml: yaml)
// The in-process cases call as one anonymous client millions of times: without this, all but the
// first burst would measure a 429 instead of the handler.
configuration.limits.anonymous = RateLimit(requestsPerMinute: RateLimit.maxPerMinute, burst: RateLimit.maxPerMinute)
let form = configuration.forms["checkout"]!
let body = try Array(Data(contentsOf: root.appendingPathComponent("Benchmarks/load/validate-body.json")))
let today = CalendarDate(year: 2026, month: 11, day: 22)!
let service = CloakService(configuration: configuration, logSink: { _ in }, today: { today })
let ff1 = try FF1(key: SymmetricKey(Array(repeating: 0x2B, count: 32)), radix: 10)
let nistSample: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
let tweak: [UInt8] = Array("9876543210".utf8)
let generator = try AliasGenerator(environment: "sandbox", ff1Key: SymmetricKey(Array(repeating: 7, count: 32)))
let parsed = try JSONParser().parse(body)
let submission = try CollectRequest(parsed, form: form)
let validation = FormValidation(form: form, values: submission.values, context: ValidationContext(today: today))
let request = HTTPRequest(
    method: .POST, path: "/forms/checkout/validate",
    headers: [("Host", "127.0.0.1"), ("Content-Type", "application/json")],
    body: body, requestID: "bench")
let sealKey = SymmetricKey(Array(repeating: 3, count: 32))
let sealedSample = try AESGCM.seal(Array(repeating: 1, count: 16), key: sealKey, associatedData: [1, 2])
var sink = 0

// An egress answer's check for what a digest step and an HMAC step computed (review V, item 9):
// the runs kept for one request, then a 4 KiB JSON answer read once.
let computed = [Digest.sha256(body), HMACKey(sealKey).authenticate(body)]
let answer4K = HTTPResponse(
    status: 200, headers: [("Content-Type", "application/json")],
    body: Array(String(repeating: #"{"id":"ch_3Nq8xY2eZvKYlo2C","status":"succeeded"},"#, count: 80).utf8))

var cases: [Case] = [
    Case(name: "encoded runs: keep SHA-256 + HMAC") {
        var runs = EncodedRuns()
        for raw in computed { runs.add(raw) }
        sink &+= runs.isEmpty ? 0 : 1
    },
    Case(name: "encoded runs: keep both, read a 4 KiB answer") {
        var runs = EncodedRuns()
        for raw in computed { runs.add(raw) }
        sink &+= runs.appear(in: answer4K) ? 1 : 0
    },
    Case(name: "json parse (validate body)") { sink &+= (try? JSONParser().parse(body)) == nil ? 0 : 1 },
    Case(name: "collect request (fields lookup)") {
        sink &+= (try? CollectRequest(parsed, form: form))?.values.count ?? 0
    },
    Case(name: "form validation (6 fields)") {
        sink &+=
            FormValidation(form: form, values: submission.values, context: ValidationContext(today: today)).fields.count
    },
    Case(name: "state document encode") { sink &+= validation.stateJSON.count },
    Case(name: "brand detect (visa)") {
        sink &+= CardBrandTable.standard.detect("4111111111111111").cardNumberLengths.count
    },
    Case(name: "ff1 raw, 10 decimal digits, AES-256") {
        sink &+= Int((try? ff1.encrypt(nistSample, tweak: tweak))?[0] ?? 0)
    },
    Case(name: "alias FPE_SIX_T_FOUR, 16 digits, Luhn-valid") {
        sink &+=
            (try? generator.alias(for: "4111111111111111", format: .FPE_SIX_T_FOUR, luhnValid: true, attempt: 0))?.count
            ?? 0
    },
    Case(name: "alias UUID") {
        sink &+= (try? generator.alias(for: "x", format: .UUID, luhnValid: true, attempt: 0))?.count ?? 0
    },
    Case(name: "aes-256-gcm seal 16 bytes") {
        sink &+=
            (try? AESGCM.seal(
                Array(repeating: 1, count: 16), key: SymmetricKey(Array(repeating: 3, count: 32)),
                associatedData: [1, 2]))?.tag.count ?? 0
    },
    Case(name: "hmac-sha256 (fingerprint of a card number)") {
        sink &+= Int(
            Digest.hmacSHA256(key: Array(repeating: 9, count: 32), Array("cloak/v1/value\u{0}4111111111111111".utf8))[0]
        )
    },
    Case(name: "aes-256-gcm open 16 bytes") {
        sink &+= (try? AESGCM.open(sealedSample, key: sealKey, associatedData: [1, 2]))?.count ?? 0
    },
    Case(name: "service.handle validate (incl. log line)") { sink &+= service.handle(request).body.count },
    Case(name: "service.handle healthz (incl. log line)") {
        sink &+= service.handle(HTTPRequest(method: .GET, path: "/healthz", requestID: "b")).status
    },
]
// A BIN table of 350,000 ranges (issue 48): 8-digit ranges of 100 numbers over 4xxxxxxx and
// 5xxxxxxx, 6-digit ones under them and 11-digit ones over some, with 40,000 distinct issuers.
// Its CPU to read and build, the resident memory it holds, and a lookup's cost.
func residentKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}
var binCSV: [UInt8] = Array("low,high,brand,funding,segment,issuer,country,currency,product\n".utf8)
var binRanges = 0
@MainActor func binRow(_ low: String, _ high: String, _ n: Int) {
    let funding = ["credit", "debit", "prepaid", "charge"][n % 4]
    binCSV += Array("\(low),\(high),visa,\(funding),consumer,Issuer \(n % 40_000),US,USD,Product \(n % 7)\n".utf8)
    binRanges += 1
}
for i in 0..<300_000 {
    let low = 40_000_000 + i * 100
    binRow(String(low), String(low + 99), i)
}
for i in 0..<40_000 { binRow(String(400_000 + i * 10), String(400_000 + i * 10 + 9), i) }
for i in 0..<10_000 {
    let low = 40_000_000_000 + i * 100_000
    binRow(String(low), String(low + 99_999), i)
}
let rssBefore = residentKiB()
let buildStart = clock()
let binTable = BinTable(try BinTableReader(format: .csv).read(binCSV))
let buildCPU = Double(clock() - buildStart) / Double(CLOCKS_PER_SEC)
let rssPeak = residentKiB()
_ = mallocTrim(0)  // as the server does after it swaps a table in: the reading's heap goes back
let rssAfter = residentKiB()
let binQueries = (0..<1024).map { Array(String(4_000_000_000_000_000 + $0 * 2_999_999_999_997).utf8) }
var binIndex = 0
cases.append(
    Case(name: "bin lookup (16 digits, 350k ranges)") {
        binIndex = (binIndex + 1) & 1023
        sink &+= binTable.lookup(binQueries[binIndex])?.issuer?.utf8.count ?? 0
    })

if let filter = CommandLine.arguments.dropFirst().first { cases = cases.filter { $0.name.contains(filter) } }
if CommandLine.arguments.dropFirst().first.map({ "bin lookup".contains($0) }) ?? true {
    print(
        "bin table: \(binRanges) ranges (\(binCSV.count / 1024) KiB of CSV) read and built in \(String(format: "%.2f", buildCPU)) s of CPU; resident +\((rssPeak - rssBefore) / 1024) MiB after reading, +\((rssAfter - rssBefore) / 1024) MiB held (after malloc_trim)"
    )
}
for c in cases { measure(c) }

/// The sweep of expired intents (issue 22), once per store: 20,000 intents (one alias each) in 100
/// buckets, all expired, removed as the vault's sweep does (1,000 a transaction, committed),
/// with the trigger that gives their bucket places back. PostgreSQL when
/// CLOAK_BENCH_POSTGRES_URL names a database. Prints the wall time per expired intent.
func sweep(_ store: any AliasStore, label: String) throws {
    let count = 20_000
    try store.begin()
    for i in 0..<count {
        let bucket = Array(repeating: UInt8(i % 100), count: 16)
        _ = try store.reserveBucketSlot(bucket, limit: Int.max)
        try store.insert(
            StoredRecord(
                id: "sweep-\(UUID().uuidString)", fingerprint: nil, keyID: "k", sealed: sealedSample,
                storage: .persistent,
                classifiers: [], createdAt: 1, expiresAt: 2,
                aliases: [IssuedAlias(alias: "tok_sweep_\(UUID().uuidString)", format: .UUID)],
                intent: true, bucket: bucket))
    }
    try store.commit()
    let start = DispatchTime.now().uptimeNanoseconds
    var removed = 0, last = 0
    repeat {
        try store.begin()
        last = try store.deleteExpired(now: 3, limit: 1_000)
        try store.commit()
        removed += last
    } while last == 1_000
    let ns = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(max(removed, 1))
    print(
        "\("sweep, \(label), \(removed) expired intents".padding(toLength: 44, withPad: " ", startingAt: 0)) \(String(format: "%10.0f", ns)) ns/intent"
    )
}
if CommandLine.arguments.dropFirst().first.map({ "sweep".contains($0) }) ?? true {
    let directory = NSTemporaryDirectory() + "cloak-micro-sweep-\(UUID().uuidString)"
    try sweep(SQLiteAliasStore(path: directory + "/sweep.db"), label: "SQLite")
    try? FileManager.default.removeItem(atPath: directory)
    if let url = ProcessInfo.processInfo.environment["CLOAK_BENCH_POSTGRES_URL"] {
        try sweep(PostgreSQLAliasStore(url: url), label: "PostgreSQL")
    }
}
if sink == 42 { print("") }
