import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// A truncated or corrupt trace gives a clear error naming the file and offset, never a crash.
@Suite(.serialized) struct EmbeddedReaderCorruptionTests {
    /// A small real trace: a loop with a timer, a source and blocks, two threads.
    static let sample: (folder: String, events: Int) = {
        let (folder, summary) = try! record("corruption-sample") {
            onThread {
                let loop = Loop.current
                let count = Shared(0)
                let timer = LoopTimer(after: .zero, interval: .microseconds(200), label: "grid") { timer in
                    if count.mutate({ $0 += 1; return $0 }) == 50 { timer.invalidate() }
                }
                loop.add(timer, forMode: .default)
                let source = LoopSource(label: "s") {}
                loop.add(source, forMode: .default)
                onThread { for _ in 0..<100 { source.signal(); loop.perform {} } }
                loop.run(mode: .default, timeout: .milliseconds(30))
                source.invalidate()
            }
        }
        return (folder, Int(summary.eventsRecorded))
    }()

    private func streamFile(of folder: String) -> String {
        let names = try! FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("stream-") }.sorted()
        return folder + "/" + names.max { size(folder + "/" + $0) < size(folder + "/" + $1) }!
    }

    private func size(_ path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    private func copy(_ folder: String, to name: String) -> String {
        let target = temporaryPath(name)
        try! FileManager.default.copyItem(atPath: folder, toPath: target)
        return target
    }

    @Test func theSampleReadsCleanly() throws {
        var reader = try EmbeddedTraceReader(path: Self.sample.folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(events.count == Self.sample.events)
    }

    @Test func aMissingPathOrEmptyFolderIsAClearError() {
        #expect(throws: TraceReadError.self) { _ = try EmbeddedTraceReader(path: "/nonexistent/trace") }
        do {
            _ = try EmbeddedTraceReader(path: "/nonexistent/trace")
        } catch {
            #expect(error.description.contains("/nonexistent/trace") && error.description.contains("does not exist"))
        }
        let empty = temporaryPath("empty")
        try? FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        do {
            _ = try EmbeddedTraceReader(path: empty)
            Issue.record("an empty folder was accepted")
        } catch {
            #expect(error.description.contains("metadata"))
        }
    }

    /// A recording that completed says in its end file how many bytes and events each stream holds: a stream
    /// file cut short afterwards reads up to its last whole packet, and the rest is a loss named in the health,
    /// not an unreadable trace.
    @Test func aStreamCutShortAfterTheRecordingIsALossNamingIt() throws {
        let folder = copy(Self.sample.folder, to: "truncated")
        let stream = streamFile(of: folder)
        #expect(truncate(stream, off_t(size(stream) - 5)) == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil, "\(String(describing: error))")
        #expect(events.count < Self.sample.events)
        #expect(reader.health.eventsLost == UInt64(Self.sample.events - events.count), "every missing event is counted")
        let name = (stream as NSString).lastPathComponent
        #expect(reader.health.damage.contains { $0.hasPrefix(name + " holds") }, "\(reader.health.damage)")
        #expect(!reader.health.isComplete)
    }

    /// Without the end file's accounting (a trace of an older recorder), a stream cut inside a packet is still a
    /// clear error naming the file and offset.
    @Test func withoutAccountingATruncatedStreamNamesTheFileAndOffset() throws {
        let folder = copy(Self.sample.folder, to: "truncated-unaccounted")
        try "events_recorded = \(Self.sample.events);\n".write(toFile: folder + "/.end", atomically: true, encoding: .utf8)
        let stream = streamFile(of: folder)
        #expect(truncate(stream, off_t(size(stream) - 5)) == 0)
        let failure = embeddedReadFailure(folder)
        let message = try #require(failure).description
        #expect(message.contains(stream) && message.contains("at byte") && message.contains("truncated"))
    }

    /// Without the end file the recording was cut off by its process's death: the packet the death cut short
    /// ends the stream instead of being corruption, and the health says the recording was cut off.
    @Test func aCutOffRecordingEndsAtItsLastWholePacket() throws {
        let folder = copy(Self.sample.folder, to: "cut-off")
        try FileManager.default.removeItem(atPath: folder + "/.end")
        var complete = try EmbeddedTraceReader(path: folder)
        let (all, noError) = readAll(&complete)
        #expect(noError == nil && all.count == Self.sample.events, "nothing is missing but the end file")
        #expect(complete.health.recordingCutOff)

        let stream = streamFile(of: folder)
        #expect(truncate(stream, off_t(size(stream) - 5)) == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil, "\(String(describing: error))")
        #expect(events.count < Self.sample.events, "the cut-short packet is left out")
        #expect(reader.health.recordingCutOff)
        #expect(!Self.sampleHealth.recordingCutOff, "the sample itself ended cleanly")
    }

    static var sampleHealth: TraceHealth {
        var reader = try! EmbeddedTraceReader(path: sample.folder)
        _ = readAll(&reader)
        return reader.health
    }

    @Test func truncationAtEveryPointNeverCrashesNorReadsComplete() throws {
        let folder = copy(Self.sample.folder, to: "truncate-all")
        let stream = streamFile(of: folder)
        let original = try Data(contentsOf: URL(fileURLWithPath: stream))
        var errors = 0
        for cut in stride(from: 0, to: original.count, by: max(1, original.count / 300)) {
            try original.prefix(cut).write(to: URL(fileURLWithPath: stream))
            guard var reader = try? EmbeddedTraceReader(path: folder) else { errors += 1; continue }
            let (events, error) = readAll(&reader)
            #expect(events.count <= Self.sample.events)
            if error != nil { errors += 1; continue }
            // Never a silent wrong answer: fewer events read is a loss the health reports.
            #expect(events.count == Self.sample.events || !reader.health.isComplete, "cut at \(cut): \(events.count) events, complete")
        }
        #expect(errors == 0, "the end file's accounting makes every cut a loss, not an error")
    }

    @Test func randomByteMutationsNeverCrash() throws {
        let folder = copy(Self.sample.folder, to: "mutate")
        let stream = streamFile(of: folder)
        let original = try Data(contentsOf: URL(fileURLWithPath: stream))
        var generator = SplitMix(seed: 0x5eed)
        var outcomes = (clean: 0, failed: 0)
        for round in 0..<400 {
            var bytes = [UInt8](original)
            for _ in 0..<(1 + round % 8) {
                let index = Int(generator.next() % UInt64(bytes.count))
                bytes[index] = round % 3 == 0 ? 0xFF : UInt8(truncatingIfNeeded: generator.next())
            }
            try Data(bytes).write(to: URL(fileURLWithPath: stream))
            do {
                var reader = try EmbeddedTraceReader(path: folder)
                while try reader.next() != nil {}
                outcomes.clean += 1
            } catch {
                #expect(error.path.hasPrefix(folder))
                outcomes.failed += 1
            }
        }
        #expect(outcomes.failed > 0)
    }

    @Test func corruptMetadataIsRefused() throws {
        let folder = copy(Self.sample.folder, to: "metadata")
        try "garbage".write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
        #expect(throws: TraceReadError.self) { _ = try EmbeddedTraceReader(path: folder) }
        let text = try String(contentsOfFile: Self.sample.folder + "/metadata", encoding: .utf8)
        try text.replacingOccurrences(of: "rlctl_trace_format = 1", with: "rlctl_trace_format = 99")
            .write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
        do {
            _ = try EmbeddedTraceReader(path: folder)
            Issue.record("a future format version was accepted")
        } catch {
            #expect(error.description.contains("version 99 is not supported"))
        }
    }
}
