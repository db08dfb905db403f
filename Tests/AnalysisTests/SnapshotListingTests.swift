@testable import Analysis
import Testing

/// Which stall a snapshot's listing says took it: a snapshot copied late can hold stalls reported after its own.
@Suite struct SnapshotListingTests {
    private static func stall(iteration: UInt64, at reported: UInt64) -> StallSnapshot.Stall {
        .init(report: .init(loopID: 1, loopName: "main", mode: "default", iteration: iteration, startNanoseconds: reported - 30_000_000,
                            reportedAtNanoseconds: reported, busyNanoseconds: 30_000_000, thresholdNanoseconds: 20_000_000,
                            culpritKind: "timer", culpritID: 7, culpritLabel: "tick", culpritNanoseconds: 30_000_000),
              before: [])
    }

    /// The second stall came after the first asked for the snapshot and before its folder was written.
    private static let snapshot = StallSnapshot(path: "/t/snapshot-1", events: 40, eventsLost: 0,
                                                stalls: [stall(iteration: 4, at: 1_000_000_000), stall(iteration: 8, at: 1_050_000_000)])

    @Test func theStallTheRecorderNamesIsTheTrigger() throws {
        let listing = SnapshotListing(snapshots: [Self.snapshot], seenAt: [1_060_000_000], takenAt: [1_000_000_000], threshold: 20_000_000,
                                      maxSnapshots: 2, folder: "/t", program: "janky", tracer: "embedded flight recorder")
        #expect(listing.trigger(0)?.report.iteration == 4)
        #expect(listing.text().contains("taken by the stall of iteration 4; its folder appeared 60.0ms after the stall was reported"),
                "\(listing.text())")
    }

    /// LTTng's trigger fires once, on the first stall it sees after it was armed: the later stall, reported while
    /// the session daemon wrote the snapshot, did not take it.
    @Test func theFirstStallSinceTheTriggerWasArmedTookAnLTTngSnapshot() throws {
        let listing = SnapshotListing(snapshots: [Self.snapshot], seenAt: [1_060_000_000], armedAt: [900_000_000], threshold: 20_000_000,
                                      maxSnapshots: 2, folder: "/t", program: "janky", tracer: "LTTng")
        #expect(listing.trigger(0)?.report.iteration == 4)
        // Re-armed after the first stall (the gap): the second took it.
        let rearmed = SnapshotListing(snapshots: [Self.snapshot], seenAt: [1_060_000_000], armedAt: [1_020_000_000], threshold: 20_000_000,
                                      maxSnapshots: 2, folder: "/t", program: "janky", tracer: "LTTng")
        #expect(rearmed.trigger(0)?.report.iteration == 8)
    }

    @Test func withoutEitherTheLastStallBeforeTheFolderAppearedIs() throws {
        let listing = SnapshotListing(snapshots: [Self.snapshot], seenAt: [1_060_000_000], threshold: 20_000_000, maxSnapshots: 2,
                                      folder: "/t", program: "janky", tracer: "LTTng")
        #expect(listing.trigger(0)?.report.iteration == 8)
    }
}
