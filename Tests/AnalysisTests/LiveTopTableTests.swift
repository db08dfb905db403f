@testable import Analysis
import Foundation
import Testing

/// `rlctl top`'s table and JSON document: the run-queue columns, their losses, and why they are empty.
@Suite struct LiveTopTableTests {
    static func row(runQueue: Double?, throttled: Double?, kernelLost: UInt64?, lost: UInt64 = 2) -> LiveLoopRow {
        LiveLoopRow(host: "vm", session: "s", processID: 42, threadID: 43, loopID: 1, name: "main", kind: LoopKind.runLoopCore.rawValue,
                    utilization: 0.5, iterationsPerSecond: 100, wakeLatencyP99Nanoseconds: nil, worstStallNanoseconds: nil,
                    lostEvents: lost, runQueueShare: runQueue, throttledShare: throttled, kernelLostRecords: kernelLost)
    }

    @Test func theKernelViewsFiguresAndLossesAreShownBesideTheTracers() throws {
        var interval = LiveInterval(rows: [Self.row(runQueue: 0.25, throttled: 0.125, kernelLost: 3)], sessions: 1, problem: nil, nothingToWatch: "")
        interval.kernel = .on
        interval.kernelLostRecords = 3
        let text = LiveTopTable.text(interval, order: .runqueue, relay: "this machine", interval: "1s")
        #expect(text.contains("kernel view lost 3 record(s)"), "\(text)")
        let row = try #require(text.split(separator: "\n").last.map(String.init))
        #expect(row.contains("50.0%") && row.contains("25.0%") && row.contains("12.5%") && row.hasSuffix("2 +3 kernel"), "\(row)")
        let json = try LiveTopTable.json(interval, order: .runqueue)
        #expect(json.contains("\"kernelLostRecords\":3,") && json.contains("\"runQueueShare\":0.25"), "\(json)")
        #expect(json.contains("\"kernel\":{\"lostRecords\":3,\"status\":\"on\"}"), "\(json)")
    }

    /// A row names its program; on a narrow screen the least important columns go first, and the loop, its
    /// program and its utilization stay, never cut in the middle of a figure.
    @Test func aNarrowScreenDropsTheLeastImportantColumnsFirst() throws {
        var row = Self.row(runQueue: 0.25, throttled: 0.125, kernelLost: 0)
        row.program = "nginx"
        var interval = LiveInterval(rows: [row], sessions: 1, problem: nil, nothingToWatch: "")
        interval.kernel = .on
        let wide = LiveTopTable.text(interval, order: .utilization, relay: "this machine", interval: "1s").split(separator: "\n")
        #expect(wide[1].hasPrefix("host  pid  program  thread  loop    kind") && wide[1].hasSuffix("lost"), "\(wide[1])")
        #expect(wide[2].contains("nginx"))
        let narrow = LiveTopTable.text(interval, order: .utilization, relay: "this machine", interval: "1s", width: 60).split(separator: "\n")
        let header = narrow[1].split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        #expect(!header.contains("host") && !header.contains("throttled") && !header.contains("thread"), "\(narrow[1])")
        #expect(header.starts(with: ["pid", "program", "loop"]) && header.contains("util") && narrow[1].count <= 60, "\(narrow[1])")
        #expect(narrow[2].contains("nginx") && narrow[2].contains("50.0%") && narrow[2].count <= 60, "\(narrow[2])")
        let tiny = LiveTopTable.text(interval, order: .utilization, relay: "this machine", interval: "1s", width: 30).split(separator: "\n")
        #expect(tiny[1].hasPrefix("program") || tiny[1].hasPrefix("pid"), "\(tiny[1])")
    }

    @Test func withoutAKernelViewTheColumnsAreNullAndTheReasonIsSaidOnce() throws {
        var interval = LiveInterval(rows: [Self.row(runQueue: nil, throttled: nil, kernelLost: nil)], sessions: 1, problem: nil, nothingToWatch: "")
        interval.kernel = .notAvailable("--kernel off")
        let json = try LiveTopTable.json(interval, order: .utilization)
        #expect(json.contains("\"kernelLostRecords\":null") && json.contains("\"runQueueShare\":null") && json.contains("\"throttledShare\":null"), "\(json)")
        #expect(json.components(separatedBy: "--kernel off").count == 2, "\(json)")
    }
}
