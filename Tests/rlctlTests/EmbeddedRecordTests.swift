import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record --tracer embedded`, and the program's side of it (`LoopEventSink.installFromEnvironment()`):
/// recording any program with no tracer installed, the trace a killed program leaves, and the environment's
/// bad values. Needs nothing but the built programs.
@Suite(.serialized)
struct EmbeddedRecordTests {
    @Test func recordsAProgramWithTheEmbeddedRecorderAndSummarizesIt() throws {
        let output = temporaryPath("embedded-record")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try CLI.run(["record", "--tracer", "embedded", "--output", output, "--format", "json", "--",
                                  CLI.sibling("runloop-demo"), "0.6"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n", maxSplits: 1)
        #expect(lines.first?.hasPrefix("runloop-demo: ") == true, "the program's own output first: \(result.stdout.prefix(300))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data((lines.last ?? "").utf8)) as? [String: Any])
        let health = json["health"] as? [String: Any]
        #expect((health?["eventsRead"] as? Int ?? 0) > 100)
        #expect(health?["eventsLost"] as? Int == 0)
        #expect(health?["recordingCutOff"] == nil, "a program that exited completed its trace")
        let loops = json["loops"] as? [[String: Any]] ?? []
        #expect(loops.map { $0["name"] as? String } == ["main"])
        let timers = json["timers"] as? [[String: Any]] ?? []
        #expect(timers.contains { $0["label"] as? String == "frame" && ($0["firings"] as? Int ?? 0) >= 20 }, "\(timers)")
        #expect(FileManager.default.fileExists(atPath: output + "/.end"), "the recorder wrote its end file last")
        #expect(FileManager.default.fileExists(atPath: output + "/metadata"))
    }

    /// The program records itself: a SIGKILL leaves the packets written so far (at most about the switch
    /// interval of each thread's newest events are missing), and every reader says the recording was cut off.
    @Test func aProgramKilledBySIGKILLLeavesACutOffTraceThatSaysSo() throws {
        let output = temporaryPath("embedded-killed")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let program = try RunningProcess(CLI.sibling("runloop-demo"), ["10"],
                                         ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": output],
                                                        timeout: .seconds(60)))
        try program.waitUntilRecording(into: output)   // its own start, however slow the machine
        usleep(1_200_000)
        program.send(SIGKILL)
        let ended = program.wait()
        #expect(ended.termination == .signaled(SIGKILL))
        #expect(!FileManager.default.fileExists(atPath: output + "/.end"))

        let summary = try CutOffRunTests.summary(output)
        let health = summary["health"] as? [String: Any]
        #expect(health?["recordingCutOff"] as? Bool == true)
        let loop = try CutOffRunTests.loop(summary)
        #expect(loop["results"] as? [String: Int] == ["did_not_end": 1])
        // Packets close every 100 ms: the trace keeps most of the 1.2 s, not nothing.
        let wall = CutOffRunTests.uint(loop["wallNanoseconds"])
        #expect(wall > 700_000_000 && wall < 5_000_000_000, "about 1.2 s recorded: \(wall) ns")

        let text = try CLI.run(["summarize", output])
        #expect(text.status == 0)
        #expect(text.stdout.contains("the recording was cut off: its process was killed or crashed"), "\(text.stdout.prefix(600))")
        let verdict = try CutOffRunTests.check(output, budget: CutOffRunTests.budget)
        #expect(verdict.status == 3, "a cut-off recording never passes a budget: \(verdict.stdout)")
        #expect(verdict.stdout.contains("cut off by the death of their process"), "\(verdict.stdout)")
    }

    /// SIGTERM with its default action: the recording is completed first, then the program ends by the signal.
    @Test func aProgramEndedBySIGTERMCompletesItsTraceAndStillDiesOfTheSignal() throws {
        let output = temporaryPath("embedded-terminated")
        defer { try? FileManager.default.removeItem(atPath: output) }
        let program = try RunningProcess(CLI.sibling("runloop-demo"), ["10"],
                                         ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": output],
                                                        timeout: .seconds(60)))
        try program.waitUntilRecording(into: output)   // the recorder has started; its handler is set up right after
        usleep(1_000_000)
        program.send(SIGTERM)
        #expect(program.wait().termination == .signaled(SIGTERM))
        #expect(FileManager.default.fileExists(atPath: output + "/.end"))
        let summary = try CutOffRunTests.summary(output)
        #expect((summary["health"] as? [String: Any])?["recordingCutOff"] == nil)
        #expect(try CutOffRunTests.loop(summary)["results"] as? [String: Int] == ["did_not_end": 1])
    }

    @Test(arguments: [SIGINT, SIGTERM, SIGKILL])
    func aRecordedProgramCutOffBySignal(signal: Int32) throws {
        try CutOffRecordTests.recordAndCutOff(tracer: "embedded", signal: signal)
    }

    @Test(arguments: [
        (["RLCTL_TRACER": "bogus"], "rlctl tracing: RLCTL_TRACER=bogus is not a tracer (embedded or lttng); this process is not traced\n"),
        (["RLCTL_TRACER": "embedded"], "rlctl tracing: RLCTL_TRACER=embedded needs RLCTL_TRACE_DIR, the trace folder; this process is not traced\n"),
    ])
    func aBadTracerEnvironmentIsOneLineAndTheProgramRunsAnyway(environment: [String: String], stderr: String) throws {
        let result = try runProcess(CLI.sibling("runloop-demo"), ["0.2"], ProcessOptions(environment: environment, timeout: .seconds(60)))
        #expect(result.termination == .exited(0))
        expectSameText(result.stderr, stderr, "runloop-demo: stderr")
    }

    @Test func aFolderThatHoldsATraceAlreadyIsRefusedAndTheProgramRunsAnyway() throws {
        let output = temporaryPath("embedded-taken")
        defer { try? FileManager.default.removeItem(atPath: output) }
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        try "/* CTF 1.8 */".write(toFile: output + "/metadata", atomically: true, encoding: .utf8)
        let result = try runProcess(CLI.sibling("runloop-demo"), ["0.2"],
                                    ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": output], timeout: .seconds(60)))
        #expect(result.termination == .exited(0))
        #expect(result.stderr == "rlctl tracing: cannot record into \(output): \(output) already holds a trace; choose another folder or delete it; this process is not traced\n",
                "\(result.stderr)")
    }

    @Test func lttngBufferFlagsAreRefusedWithTheEmbeddedRecorder() throws {
        let result = try CLI.run(["record", "--tracer", "embedded", "--subbuf-size", "1M", "--", "/bin/true"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--subbuf-size and --num-subbuf set up LTTng's buffers: not with --tracer embedded"), "\(result.stderr)")
    }

    @Test func aProgramWithoutTheLineGetsTheAdviceWithTheEmbeddedRecorderToo() throws {
        let result = try CLI.run(["record", "--tracer", "embedded", "--", "/bin/true"])
        #expect(result.status == 3, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("the program must call LoopEventSink.installFromEnvironment() (module Tracing), or use an adapter"), "\(result.stderr)")
    }

    /// A wrapper shell that does not exec passes the tracer variables on unread: the program it starts is not the
    /// recorded one, so it installs no tracer, unless --follow-children asks for it.
    @Test func aProgramAWrapperStartsIsTracedOnlyWhenChildrenAreFollowed() throws {
        // `; true` keeps sh from exec'ing the program in its own process: runloop-demo is sh's child.
        let script = "'\(CLI.sibling("runloop-demo"))' 0.3; true"
        let unfollowed = temporaryPath("wrapper-unfollowed"), followed = temporaryPath("wrapper-followed")
        defer { for folder in [unfollowed, followed] { try? FileManager.default.removeItem(atPath: folder) } }
        let alone = try CLI.run(["record", "--tracer", "embedded", "--output", unfollowed, "--", "sh", "-c", script])
        #expect(alone.status == 3, "no runloop event from sh itself: \(alone.termination): \(alone.stderr)")
        #expect(alone.stdout.hasPrefix("runloop-demo: "), "the child ran: \(alone.stdout.prefix(300))")
        // rlctl's own kernel view of sh (kernel/) may be there; no trace of the program's.
        let written = ((try? FileManager.default.contentsOfDirectory(atPath: unfollowed)) ?? []).filter { $0 != "rlctl-kernel" }
        #expect(written.isEmpty, "the child wrote no trace of its own: \(written)")
        let both = try CLI.run(["record", "--tracer", "embedded", "--follow-children", "--output", followed, "--format", "json",
                                "--", "sh", "-c", script])
        try #require(both.status == 0, "\(both.termination): \(both.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data((both.stdout.split(separator: "\n", maxSplits: 1).last ?? "").utf8)) as? [String: Any])
        let loops = json["loops"] as? [[String: Any]] ?? []
        #expect(loops.map { $0["name"] as? String } == ["main"], "the child's loop: \(loops)")
    }
}
