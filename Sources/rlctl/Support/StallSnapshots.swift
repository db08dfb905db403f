import Analysis
import Foundation
import Glibc
import TraceReading
import Tracing

/// What `record` and `run` share for --snapshot-on-stall: where the snapshots go, and their explanation.
enum StallSnapshots {
    /// --output/--trace, or a new folder in the current one: snapshots are the point, so they are always kept.
    static func destination(_ requested: String?) throws -> TraceDestination {
        try TraceDestination(requested: requested ?? FileManager.default.currentDirectoryPath + "/rlctl-snapshots-\(getpid())",
                             label: "snapshots")
    }

    /// Whether the session's ring holds any event, from a snapshot of it written to a temporary folder (removed).
    static func ringHoldsEvents(_ session: LTTngStallSnapshots) -> Bool {
        let folder = NSTemporaryDirectory() + "rlctl-ring-check-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // When the check itself fails, say nothing is wrong rather than blame the program.
        guard (try? session.snapshotNow(into: folder)) != nil else { return true }
        guard TraceReaders.containsTrace(at: folder), var reader = try? TraceReaders.open(folder) else { return false }
        return ((try? reader.next()) ?? nil) != nil
    }

    /// Reads every snapshot taken and lists them, each with its stall and what led to it.
    static func listing(_ taken: [StallSnapshotFolder], thresholdNanoseconds threshold: UInt64, maxSnapshots: Int,
                        folder: String, program: String, tracer: String) throws -> SnapshotListing {
        let explained = try taken.map { snapshot in
            do {
                var reader = try TraceReaders.open(snapshot.path)
                return try StallSnapshotReader.read(&reader, path: snapshot.path)
            } catch {
                throw Failure.input("cannot read the snapshot \(snapshot.path): \(error)")
            }
        }
        return SnapshotListing(snapshots: explained, seenAt: taken.map(\.seenAtNanoseconds), takenAt: taken.map(\.takenAtNanoseconds),
                               armedAt: taken.map(\.armedAtNanoseconds), threshold: threshold,
                               maxSnapshots: maxSnapshots, folder: folder, program: program, tracer: tracer)
    }
}
