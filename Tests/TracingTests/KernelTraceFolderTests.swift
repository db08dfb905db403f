import Foundation
import Glibc
import RunLoopCore
import Testing
import TestSupport
import TraceModel
import TraceReading
import Tracing

/// The kernel view's trace folder (`<trace>/rlctl-kernel`): written by KernelTraceWriter, merged with the trace by
/// time by every way a trace is opened, its damage said as the kernel view's, never taken for another trace.
@Suite struct KernelTraceFolderTests {
    /// Kernel events about thread 4243 from `start`, one time off the CPU every `step` ns, with timers, run queues,
    /// a task's name and a loss.
    static func kernelEvents(from start: UInt64, step: UInt64, count: Int) -> [TraceEvent.Payload] {
        var payloads: [TraceEvent.Payload] = [.kernelBegin(pid: 4100, command: "loop-app"), .kernelTask(threadID: 812, pid: 810, command: "sh")]
        for index in 0..<count {
            let back = start + step * UInt64(index + 1)
            if index % 3 == 0 { payloads.append(.kernelTimer(threadID: 4243, due: back - 900, latest: back - 850, fired: back - 800)) }
            let reason = KernelOffCPUReason.allCases[index % KernelOffCPUReason.allCases.count]
            if reason.leftRunnable {
                payloads.append(.kernelRunQueue(.init(threadID: 4243, cpu: Int32(index % 2), others: UInt64(index),
                                                      culprits: [.init(threadID: 812, nanoseconds: 400)])))
            }
            payloads.append(.kernelOffCPU(.init(threadID: 4243, reason: reason, syscall: reason.leftRunnable ? -1 : 232, left: back - 700,
                                                woken: reason.leftRunnable ? back - 700 : back - 300, back: back, cpu: Int32(index % 2),
                                                wakerThreadID: reason.leftRunnable ? -1 : 812, throttled: reason == .throttled ? 200 : 0)))
            if index == count / 2 { payloads.append(.kernelLost(records: 3, from: back - step)) }
        }
        return payloads
    }

    /// The moment a kernel payload is stamped with: a time off the CPU (and its timer and run queue) at its return.
    static func stamp(_ payloads: [TraceEvent.Payload], from start: UInt64) -> [TraceEvent] {
        var time = start
        return payloads.map { payload in
            if case .kernelOffCPU(let off) = payload { time = off.back }
            return TraceEvent(timestamp: time, threadID: 0, payload: payload)
        }
    }

    /// An embedded trace of one thread's source signals, and its events.
    static func embeddedTrace(_ name: String) throws -> (folder: String, events: [TraceEvent]) {
        let (folder, _) = try record(name) {
            onThread { for _ in 0..<40 { LoopSource {}.signal(); usleep(100) } }
        }
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        return (folder, events)
    }

    static func writeKernelView(_ events: [TraceEvent], into trace: String) throws {
        let writer = try KernelTraceWriter(folder: trace + "/" + TraceSchema.kernelViewFolder)
        var rest = events[...]
        while !rest.isEmpty {
            try writer.write(Array(rest.prefix(100)))
            rest = rest.dropFirst(100)
        }
        try writer.finish()
    }

    /// What the readers must give: both sides in time order, the trace's event first at equal times.
    static func expectMerged(_ read: [TraceEvent], main: [TraceEvent], kernel: [TraceEvent], sourceLocation: SourceLocation = #_sourceLocation) {
        let isKernel = { (event: TraceEvent) in event.payload.eventName.hasPrefix("kernel_") }
        #expect(read.filter { !isKernel($0) } == main, sourceLocation: sourceLocation)
        #expect(read.filter(isKernel).map(\.payload) == kernel.map(\.payload), sourceLocation: sourceLocation)
        #expect(read.filter(isKernel).map(\.timestamp) == kernel.map(\.timestamp), sourceLocation: sourceLocation)
        #expect(zip(read, read.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp }, "in time order", sourceLocation: sourceLocation)
    }

    @Test func aTraceAndItsKernelViewReadAsOneInTimeOrder() throws {
        let (folder, main) = try Self.embeddedTrace("kernel-folder")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try #require(main.first?.timestamp), last = try #require(main.last?.timestamp)
        // From before the trace's first event to after its last: several packets, some at a loop event's very time.
        let kernel = Self.stamp(Self.kernelEvents(from: first - 5_000, step: max(1, (last - first) / 2_000), count: 2_400), from: first - 5_000)
        try Self.writeKernelView(kernel, into: folder)
        for open in [{ try TraceReaders.open(folder) }, { try TraceReaders.open(TraceOrigins.find(at: folder)[0]) }] {
            var reader = try open()
            let (events, error) = readAll(&reader)
            #expect(error == nil)
            Self.expectMerged(events, main: main, kernel: kernel)
            // The loops' events are the trace's count; the kernel view's records are the kernel view's.
            #expect(reader.health.eventsRead == UInt64(main.count) && reader.health.isComplete && reader.health.damage.isEmpty)
        }
        let origins = try TraceOrigins.find(at: folder)
        #expect(origins.count == 1 && origins[0].kernelView == folder + "/" + TraceSchema.kernelViewFolder)
    }

    @Test func theWriterTakesKernelEventsOnly() throws {
        let folder = temporaryPath("kernel-refusal")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let writer = try KernelTraceWriter(folder: folder)
        #expect(throws: RecorderError.self) { try writer.write([TraceEvent(timestamp: 1, threadID: 1, payload: .sourceSignal(sourceID: 1))]) }
        #expect(throws: RecorderError.self) { try KernelTraceWriter(folder: folder) }   // already a trace
    }

    /// A kernel view deleted, cut short or never finished is the kernel view's damage: said, never complete, and the
    /// loops' events are all still read.
    @Test(arguments: ["stream deleted", "stream cut short", "end file missing"])
    func aDamagedKernelViewIsSaidAndTheTraceIsStillRead(damage: String) throws {
        let (folder, main) = try Self.embeddedTrace("kernel-damage")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try #require(main.first?.timestamp)
        try Self.writeKernelView(Self.stamp(Self.kernelEvents(from: first, step: 1_000, count: 3_000), from: first), into: folder)
        let view = folder + "/" + TraceSchema.kernelViewFolder
        let stream = try #require(try FileManager.default.contentsOfDirectory(atPath: view).first { $0.hasPrefix("stream-") })
        switch damage {
        case "stream deleted": try FileManager.default.removeItem(atPath: view + "/" + stream)
        case "stream cut short": #expect(truncate(view + "/" + stream, 70_000) == 0)
        default: try FileManager.default.removeItem(atPath: view + "/" + TraceSchema.endFileName)
        }
        var reader = try TraceReaders.open(folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(events.filter { !$0.payload.eventName.hasPrefix("kernel_") } == main)
        let health = reader.health
        #expect(health.damage.contains { $0.hasPrefix("the kernel view") }, "\(health.damage)")
        if damage == "end file missing" { #expect(health.recordingCutOff) } else { #expect(health.eventsLost > 0 && !health.isComplete) }
    }

    /// The kernel's trace of the wait calls (`record --any` where the interposer cannot reach): its events are the
    /// loops' (counted as read), merged by time with the trace's; alone (LTTng wrote nothing), it is the trace; its
    /// damage is said as its own.
    @Test func theKernelsWaitCallsAreReadWithTheTraceOrAsIt() throws {
        let (folder, main) = try Self.embeddedTrace("kernel-waits")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try #require(main.first?.timestamp)
        func writeWaits(into trace: String) throws -> [TraceEvent] {
            let writer = try WaitTraceWriter(folder: trace + "/" + TraceSchema.kernelWaitsFolder, part: TraceSchema.kernelWaitsPart)
            var events = [TraceEvent(timestamp: first + 1, threadID: 5001, processID: 5000,
                                     payload: .waitThread(pid: 5000, ppid: 1, thread: "static-loop", process: "static-loop"))]
            for index in 0..<50 {
                let begin = first + 10_000 * UInt64(index + 1)
                events.append(TraceEvent(timestamp: begin + 5_000, threadID: 5001, processID: 5000, payload: .waitBatch(.init(threadID: 5001, waits: [
                    .init(call: .epollWait, target: 3, setSize: 1, timeout: 2_000_000, begin: begin, end: begin + 5_000, ready: 0, error: 0),
                ]))))
            }
            try writer.write(events, thread: 5001)
            try writer.finish()
            return events
        }
        let waits = try writeWaits(into: folder)
        var reader = try TraceReaders.open(folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(events.filter { $0.threadID != 5001 } == main)
        #expect(events.filter { $0.threadID == 5001 }.map(\.payload) == waits.map(\.payload))
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp }, "in time order")
        #expect(reader.health.eventsRead == UInt64(main.count + waits.count) && reader.health.isComplete)
        #expect(try TraceOrigins.find(at: folder).count == 1)

        // Alone in an otherwise empty folder: the trace.
        let alone = temporaryPath("kernel-waits-alone")
        defer { try? FileManager.default.removeItem(atPath: alone) }
        try FileManager.default.createDirectory(atPath: alone, withIntermediateDirectories: true)
        let only = try writeWaits(into: alone)
        #expect(TraceReaders.containsTrace(at: alone))
        var aloneReader = try TraceReaders.open(alone)
        let (read, aloneError) = readAll(&aloneReader)
        #expect(aloneError == nil && read.map(\.payload) == only.map(\.payload))

        // Its end file gone: said as its own damage, cut off.
        try FileManager.default.removeItem(atPath: folder + "/" + TraceSchema.kernelWaitsFolder + "/" + TraceSchema.endFileName)
        var damaged = try TraceReaders.open(folder)
        _ = readAll(&damaged)
        #expect(damaged.health.damage.contains { $0.hasPrefix("the kernel's trace of the wait calls is cut off") }, "\(damaged.health.damage)")
        #expect(damaged.health.recordingCutOff)
    }

    /// A recording in a folder below the one given, its trace a few folders down as LTTng lays it out
    /// (runs/rec/ust/uid/0/64-bit) and its parts in its own folder (runs/rec/rlctl-kernel-waits): read with them.
    @Test func aRecordingsPartsAreFoundFromItsOwnFolder() throws {
        let (trace, main) = try Self.embeddedTrace("kernel-waits-nested")
        let runs = temporaryPath("runs")
        defer { try? FileManager.default.removeItem(atPath: runs); try? FileManager.default.removeItem(atPath: trace) }
        let recording = runs + "/rec"
        try FileManager.default.createDirectory(atPath: recording + "/ust/uid/0", withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: trace, toPath: recording + "/ust/uid/0/64-bit")
        let writer = try WaitTraceWriter(folder: recording + "/" + TraceSchema.kernelWaitsFolder, part: TraceSchema.kernelWaitsPart)
        let first = try #require(main.first?.timestamp)
        let waits = [TraceEvent(timestamp: first + 1, threadID: 5001, processID: 5000,
                                payload: .waitThread(pid: 5000, ppid: 1, thread: "static-loop", process: "static-loop"))]
        try writer.write(waits, thread: 5001)
        try writer.finish()
        for opened in [runs, recording] {
            var reader = try TraceReaders.open(opened)
            let (events, error) = readAll(&reader)
            #expect(error == nil)
            #expect(events.filter { $0.threadID == 5001 }.map(\.payload) == waits.map(\.payload), "opened at \(opened)")
            #expect(events.count == main.count + waits.count)
        }
        let origins = try TraceOrigins.find(at: runs)
        #expect(origins.count == 1 && origins[0].kernelWaits == recording + "/" + TraceSchema.kernelWaitsFolder)
    }

    /// babeltrace2 reads the kernel view beside its trace, one timeline (every rlctl clock is absolute).
    @Test func babeltrace2ReadsTheKernelViewBesideItsTrace() throws {
        guard let babeltrace = TestEnvironment.executable("babeltrace2") else {
            if TestEnvironment.isCI { Issue.record("CI=true but babeltrace2 is missing (scripts/install-deps.sh installs it)") }
            return
        }
        let (folder, main) = try Self.embeddedTrace("kernel-babeltrace")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try #require(main.first?.timestamp)
        try Self.writeKernelView(Self.stamp(Self.kernelEvents(from: first, step: 1_000, count: 10), from: first), into: folder)
        let result = try runProcess(babeltrace, [folder, folder + "/" + TraceSchema.kernelViewFolder])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        // kernel_begin and kernel_task, 4 timers, 4 run queues, 10 times off the CPU, 1 loss.
        #expect(lines.count == main.count + 2 + 4 + 4 + 10 + 1, "\(lines.count) lines")
        #expect(lines.contains { $0.contains("runloop:kernel_off_cpu:") && $0.contains("reason = ( \"throttled\"") && $0.contains("throttled_ns = 200") })
        #expect(lines.contains { $0.contains("runloop:source_signal:") })
    }
}
