import Foundation
import TraceModel
import TraceReading
import Testing
import TestSupport

/// The example program, built next to the test bundle, recorded the way `rlctl record` asks a program to.
@Suite struct FoundationTimerAppTests {
    static let productsFolder: String = {
        let executable = try! FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path
    }()

    static let app = productsFolder + "/foundation-timer-app"

    @Test func theEmbeddedTraceShowsTheMainLoopsIterationsAndEachStall() throws {
        let folder = temporaryPath("foundation-timer-app")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try runProcess(Self.app, ["--duration", "1s", "--stall-every", "4"],
                                    ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": folder]))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let counts = try Self.counts(result.stdout)
        // Ticks 4 and 8 of the ~9 in a second; fewer only if the machine starved the program of whole tick slots.
        #expect(counts.stalls >= 1 && counts.stalls <= 2, "stdout: \(result.stdout)")

        var reader = try TraceReaders.open(folder)
        var events: [TraceEvent] = []
        while let event = try reader.next() { events.append(event) }
        #expect(reader.health.eventsLost == 0 && reader.health.packetsLost == 0 && !reader.health.recordingCutOff)

        let adapted = events.compactMap { event -> UInt64? in
            if case .loopAdapted(let loopID, .foundation, 0) = event.payload { return loopID }
            return nil
        }
        #expect(adapted.count == 1)
        let loopID = try #require(adapted.first)
        let created = events.compactMap { event -> Int32? in
            if case .loopCreate(loopID, let threadID, "RunLoop.main") = event.payload { return threadID }
            return nil
        }

        let activities = events.compactMap { event -> (time: UInt64, activity: LoopActivity, place: TraceEvent.Place)? in
            if case .activity(let activity, let place) = event.payload, place.loopID == loopID {
                return (event.timestamp, activity, place)
            }
            return nil
        }
        #expect(!activities.isEmpty)
        // Announced once, with the main thread's id (the process id), the thread every activity came from.
        let activityThreads = Set(events.filter {
            if case .activity(_, let place) = $0.payload { return place.loopID == loopID }
            return false
        }.map(\.threadID))
        #expect(created.count == 1 && activityThreads == Set(created), "loop_create threads \(created), activity threads \(activityThreads)")
        #expect(activities.allSatisfy { $0.place.mode == "kCFRunLoopDefaultMode" && $0.place.depth == 1 })
        // Iterations are numbered 1, 2, 3… in order, each starting at its beforeTimers.
        let numbers = activities.filter { $0.activity == .beforeTimers }.map(\.place.iteration)
        #expect(numbers == Array(1...UInt64(numbers.count)))
        // A repeating timer fires at most once per iteration, so every frame the program counted had its own.
        #expect(numbers.count >= counts.frames && counts.frames > 0, "iterations \(numbers.count), \(result.stdout)")

        // Busy time runs from a wake-up to the next beforeWaiting or exit: the 80 ms sleeps sit in two of them.
        var busy: [UInt64] = []
        var wokeAt: UInt64?
        for (time, activity, _) in activities {
            if activity == .afterWaiting { wokeAt = time }
            if activity == .beforeWaiting || activity == .exit, let start = wokeAt {
                busy.append(time - start)
                wokeAt = nil
            }
        }
        // Each stalled tick sits in one; a preemption of 80 ms or more on a loaded machine may add another.
        let stalled = busy.filter { $0 >= 80_000_000 }
        #expect(stalled.count >= counts.stalls, "busy intervals of 80 ms or more: \(stalled), \(result.stdout)")
    }

    /// With RLCTL_STALL_THRESHOLD the adapter reports each Foundation iteration busier than it (`loop_stall`),
    /// timed by the recorder's own stamps of the activities; an observer sees no callout, so the culprit is none.
    @Test func theAdapterReportsEachStalledIterationItself() throws {
        let folder = temporaryPath("foundation-timer-app-stalls")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try runProcess(Self.app, ["--duration", "1s", "--stall-every", "4"],
                                    ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": folder,
                                                                 "RLCTL_STALL_THRESHOLD": "50ms"]))
        #expect(result.status == 0, "stderr: \(result.stderr)")
        var reader = try TraceReaders.open(folder)
        var events: [TraceEvent] = []
        while let event = try reader.next() { events.append(event) }
        let starts = Dictionary(events.compactMap { event -> (UInt64, UInt64)? in
            if case .activity(.beforeTimers, let place) = event.payload { return (place.iteration, event.timestamp) }
            return nil
        }, uniquingKeysWith: { first, _ in first })
        let stalls = events.compactMap { event -> TraceEvent.LoopStall? in
            if case .loopStall(let stall) = event.payload { return stall }
            return nil
        }
        // One per 80 ms tick; a preemption past the threshold on a loaded machine is a stall too.
        let counts = try Self.counts(result.stdout)
        #expect(counts.stalls >= 1 && stalls.count(where: { $0.busy >= 80_000_000 }) >= counts.stalls,
                "\(result.stdout): \(stalls)")
        for stall in stalls {
            #expect(stall.threshold == 50_000_000)
            #expect(stall.culpritKind == .none)
            #expect(stall.mode == "kCFRunLoopDefaultMode")
            #expect(starts[stall.iteration] == stall.start, "the stall's iteration began at its beforeTimers")
        }
    }

    /// The counts of the program's last line, "foundation-timer-app: F frames, T ticks, S stalls of 80 ms".
    static func counts(_ stdout: String) throws -> (frames: Int, stalls: Int) {
        let words = stdout.split(whereSeparator: \.isWhitespace)
        func count(before word: String) throws -> Int {
            let index = try #require(words.firstIndex { $0 == word }, "no '\(word)' in: \(stdout)")
            return try #require(Int(words[index - 1]), "no count before '\(word)' in: \(stdout)")
        }
        return (try count(before: "frames,"), try count(before: "stalls"))
    }

    @Test func badFlagsAreOneLineAndExitStatus2() throws {
        for arguments in [["--bogus"], ["--duration"], ["--duration", "3"], ["--stall-every", "0"]] {
            let result = try runProcess(Self.app, arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.hasPrefix("foundation-timer-app: ") && result.stderr.filter { $0 == "\n" }.count == 1,
                    "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }
}
