import Foundation
import Glibc
import RunLoopCore
import Testing
import TraceReading
import Tracing

/// The embedded recorder: what goes in comes back out, in order, with every loss counted.
@Suite(.serialized) struct RecorderTests {
    @Test func aRecordedRunReadsBackWithEveryEventTypeAndField() throws {
        let loopID = Shared<UInt64>(0)
        let loopThread = Shared<Int32>(0)
        let ids = Shared<[String: UInt64]>([:])
        let (folder, summary) = try record("roundtrip") {
            onThread {
                let loop = Loop.current
                loopID.value = loop.id
                loopThread.value = loop.threadID
                let timer = LoopTimer(after: .seconds(3600), tolerance: .microseconds(100), label: "tick") { _ in loop.stop() }
                let source = LoopSource(order: 3, label: "work") {}
                // The timer comes due 5 ms into the loop's sleep: a date set before the run could pass before the
                // loop first sleeps on a loaded machine (or under ThreadSanitizer), and it would fire unslept.
                let observer = LoopObserver(activities: .beforeWaiting, label: "watch") { _, _ in
                    timer.nextFireDate = .now.advanced(by: .milliseconds(5))
                }
                loop.add(timer, forMode: .default)
                loop.add(source, forMode: .default)
                loop.add(observer, forMode: .default)
                ids.value = ["timer": timer.id, "source": source.id, "observer": observer.id]
                source.signal()
                loop.perform { }
                loop.run(mode: .default, timeout: .seconds(1))
                source.invalidate()
                observer.invalidate()
            }
        }
        #expect(summary.eventsLost == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(events.count) == summary.eventsRecorded)
        #expect(reader.health.eventsRead == summary.eventsRecorded)
        #expect(reader.health.isComplete)

        let loop = loopID.value
        // Tests of other suites run loops in this process meanwhile, and the recorder is process-wide: only the
        // test loop's own thread is judged (the recorder's integrity is checked over every event above and below).
        let mine = events.filter { $0.threadID == loopThread.value }
        let names = mine.map(\.short)
        // The loop's run, in CFRunLoop's order: the block and source poll first, then the sleep, the timer.
        let run = names.drop { $0 != "run_begin" }
        #expect(Array(run.prefix(9)) == ["run_begin", "entry", "before_timers", "before_sources",
                                         "block_begin", "block_end", "source_perform_begin", "source_perform_end",
                                         "before_timers"])
        #expect(names.contains("observer_begin") && names.contains("wakeup") && names.contains("timer_fire_begin"))
        #expect(names.last == "run_end")

        for event in mine {
            switch event.payload {
            case .activity(_, let place):
                #expect(place.loopID == loop && place.mode == Loop.Mode.default.name && place.depth == 1)
            case .runBegin(let id, let mode, let timeout, let rash):
                #expect(id == loop && mode == Loop.Mode.default.name && timeout == 1_000_000_000 && !rash)
            case .runEnd(_, _, let result):
                #expect(result == .stopped)
            case .timerFireBegin(let id, let timer, let scheduled, let tolerance, let interval, let missed):
                #expect(id == loop && timer == ids.value["timer"] && tolerance == 100_000 && interval == 0 && missed == 0)
                #expect(event.timestamp >= scheduled)
            case .sourcePerformBegin(_, let source, let kind, let order, let signaled):
                #expect(source == ids.value["source"] && kind == .custom && order == 3 && signaled > 0 && signaled <= event.timestamp)
            case .blockBegin(_, let block, let enqueued):
                #expect(block > 0 && enqueued > 0 && enqueued <= event.timestamp)
            case .observerBegin(_, let observer, let activity):
                #expect(observer == ids.value["observer"] && activity == .beforeWaiting)
            case .wakeUp(_, let reason, let slept):
                #expect(reason == .timer && slept > 0)
            case .itemLabel(let item, let kind, let label):
                #expect((kind == .timer && label == "tick" && item == ids.value["timer"]) ||
                        (kind == .source && label == "work" && item == ids.value["source"]) ||
                        (kind == .observer && label == "watch" && item == ids.value["observer"]))
            case .sourceSignal(let source):
                #expect(source == ids.value["source"])
            case .loopCreate(let id, let tid, _):
                if id == loop { #expect(tid == event.threadID) }
            default:
                break
            }
        }
        // Iterations increase, timestamps never go backwards.
        let iterations = mine.compactMap { if case .activity(.beforeTimers, let p) = $0.payload { return p.iteration } else { return nil } }
        #expect(iterations == iterations.sorted() && Set(iterations).count == iterations.count)
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
    }

    @Test func eventsOfManyThreadsMergeInTimestampOrder() throws {
        let threads = 6, perThread = 20_000
        // Tests of other suites run loops and signal sources in this process at the same time, and the installed
        // recorder takes their events too: the counts below are of this test's threads.
        let ours = ThreadIDs()
        let (folder, summary) = try record("merge") {
            let done = DispatchGroup()
            for _ in 0..<threads {
                done.enter()
                Thread {
                    ours.insert(currentThreadID())
                    for n in 0..<perThread { LoopSource {}.signal(); if n % 1000 == 0 { usleep(100) } }
                    done.leave()
                }.start()
            }
            done.wait()
        }
        #expect(summary.eventsLost == 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(events.count) == summary.eventsRecorded)
        let mine = events.filter { ours.contains($0.threadID) }
        #expect(mine.count == threads * perThread)
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.timestamp <= $1.timestamp })
        #expect(Set(mine.map(\.threadID)).count == threads)
    }

    @Test func fullBuffersDropEventsAndEveryDropIsCounted() throws {
        var options = EmbeddedRecorder.Options()
        options.packetSize = 4096
        options.packetsPerThread = 2
        options.flushInterval = .seconds(10)      // the writer never catches up during the burst
        let emitted = 50_000
        let thread = Shared<Int32>(0)
        let (folder, summary) = try record("discard", options: options) {
            onThread {
                thread.value = currentThreadID()
                for _ in 0..<emitted { LoopSource {}.signal() }
            }
        }
        #expect(summary.eventsLost > 0)
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(events.count) == summary.eventsRecorded)
        #expect(reader.health.eventsLost == summary.eventsLost)
        // Per thread (other suites' loops may emit into the recorder meanwhile): what this thread's stream kept
        // and what it says it dropped add up to what the thread emitted.
        let kept = events.filter { $0.threadID == thread.value }.count
        let dropped = reader.health.lossWindows.filter { $0.stream == "tid \(thread.value)" }.map(\.events).reduce(0, +)
        #expect(dropped > 0)
        #expect(UInt64(kept) + dropped == UInt64(emitted), "kept \(kept), dropped \(dropped)")
    }

    @Test func theFlightRecorderKeepsTheNewestEventsAndCountsTheOverwritten() throws {
        var options = EmbeddedRecorder.Options()
        options.packetSize = 4096
        options.packetsPerThread = 4
        options.mode = .overwrite
        let emitted = 20_000
        let lastID = Shared<UInt64>(0)
        let thread = Shared<Int32>(0)
        let (folder, summary) = try record("overwrite", options: options) {
            onThread {
                thread.value = currentThreadID()
                var last: UInt64 = 0
                for _ in 0..<emitted { let s = LoopSource {}; s.signal(); last = s.id }
                lastID.value = last
            }
        }
        #expect(summary.eventsLost > 0)
        #expect(summary.eventsRecorded + summary.eventsLost >= UInt64(emitted))
        var reader = try EmbeddedTraceReader(path: folder)
        let (events, error) = readAll(&reader)
        #expect(error == nil)
        #expect(UInt64(events.count) == summary.eventsRecorded)
        // This thread's stream holds the newest of its events: consecutive sources ending with the last one.
        let kept = events.filter { $0.threadID == thread.value }.compactMap { event -> UInt64? in
            if case .sourceSignal(let id) = event.payload { return id } else { return nil }
        }
        #expect(kept.count > 0 && kept.count < emitted)
        #expect(kept.last == lastID.value)
        #expect(zip(kept, kept.dropFirst()).allSatisfy { $1 > $0 }, "newest events, in order")
        #expect(reader.health.eventsLost + reader.health.packetsLost > 0)
    }

    static let babeltraceCommand = TestRequirement(
        missing: TestEnvironment.executable("babeltrace2") == nil ? "the babeltrace2 command" : nil, problem: "babeltrace2 is not installed")

    @Test(.enabled(if: babeltraceCommand.shouldRun, babeltraceCommand.skipComment))
    func babeltrace2ReadsTheRecordersTrace() throws {
        guard Self.babeltraceCommand.requireMet(), let babeltrace = TestEnvironment.executable("babeltrace2") else { return }
        let (folder, summary) = try record("babeltrace") {
            onThread {
                let loop = Loop.current
                loop.add(LoopTimer(after: .milliseconds(1), label: "t") { _ in }, forMode: .default)
                loop.run(mode: .default, timeout: .seconds(1))
            }
        }
        let result = try runProcess(babeltrace, [folder])
        #expect(result.termination == .exited(0) && result.stderr.isEmpty, "\(result.termination): \(result.stderr)")
        let output = result.stdout
        let lines = output.split(separator: "\n")
        #expect(UInt64(lines.count) == summary.eventsRecorded, "babeltrace2 printed:\n\(output.prefix(2000))")
        #expect(output.contains("runloop:before_waiting"))
        #expect(output.contains("runloop:timer_fire_begin"))
        #expect(output.contains("reason = ( \"timer\" : container = 0 )"))
    }
}

