import Foundation
import Testing
import TestSupport

/// `rlctl run blocks --rate 0`: producers that outpace the loop are held back at a bounded backlog (rlctl's memory
/// stays bounded), and the run says so, in text and in JSON. The loop runs at most one block per 2 ms, while each
/// producer performs far faster, so being held back does not depend on the machine's speed or load.
@Suite struct BlockFloodTests {
    static let threads = 2
    /// WorkloadRunner's default limit of blocks in flight per producer.
    static let limitPerProducer = 256
    static let flood = ["run", "blocks", "--threads", "\(threads)", "--rate", "0", "--handler-cost", "2ms", "--duration", "400ms"]

    @Test func anUntracedFloodIsHeldBackAtABoundedBacklogAndSaysSo() throws {
        let result = try CLI.run(Self.flood + ["--tracer", "none"])
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("block producers ") }, "\(result.stdout)")
        let words = line.split(separator: " ")
        let heldBack = words.firstIndex(of: "back").flatMap { Int(words[$0 + 1]) } ?? 0
        let mostQueued = words.firstIndex(of: "most").flatMap { Int(words[$0 + 1]) } ?? .max
        #expect(line.contains(" — the loop could not keep up: ") && heldBack > 0, "\(line)")
        #expect(mostQueued <= Self.threads * Self.limitPerProducer, "\(line)")
        #expect(line.hasSuffix("(limit \(Self.limitPerProducer) per producer)"), "\(line)")
    }

    @Test func aTracedFloodsSummaryCarriesTheBacklogInJSON() throws {
        let result = try CLI.run(Self.flood + ["--tracer", "embedded", "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let backlog = try #require(json["blockBacklog"] as? [String: Any], "\(result.stdout.prefix(500))")
        #expect((backlog["heldBack"] as? Int ?? 0) > 0 && (backlog["heldBackNanoseconds"] as? Int ?? 0) > 0, "\(backlog)")
        #expect((backlog["mostQueued"] as? Int ?? .max) <= Self.threads * Self.limitPerProducer, "\(backlog)")
        #expect(backlog["limitPerProducer"] as? Int == Self.limitPerProducer, "\(backlog)")
    }
}
