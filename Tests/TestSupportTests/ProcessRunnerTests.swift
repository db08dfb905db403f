import Foundation
import Glibc
import Testing
import TestSupport

/// The one process runner every test uses to start a program.
@Suite struct ProcessRunnerTests {
    /// Reading stdout to its end before stderr deadlocks here: the child blocks on a full stderr pipe (64 KiB)
    /// and never closes stdout.
    @Test func aMebibyteOnStderrBeforeStdoutDoesNotDeadlock() throws {
        let output = try runProcess("/bin/sh", ["-c", "head -c 1048576 /dev/zero | tr '\\0' e >&2; echo done"],
                                    ProcessOptions(timeout: .seconds(60)))
        #expect(output.termination == .exited(0) && !output.timedOut)
        #expect(output.stdout == "done\n")
        #expect(output.stderr.utf8.count == 1_048_576 && output.stderr.utf8.allSatisfy { $0 == UInt8(ascii: "e") })
    }

    @Test func aChildThatSleepsForeverIsKilledAtTheTimeout() throws {
        let start = ContinuousClock.now
        var output: ProcessOutput?
        try withKnownIssue {
            // Long enough for a loaded machine to start sh and let it print.
            output = try runProcess("/bin/sh", ["-c", "echo started; exec sleep 1000"], ProcessOptions(timeout: .seconds(3)))
        } matching: { issue in
            issue.description.contains("/bin/sh did not end within 3.0 seconds: killed") && issue.description.contains("stdout: started")
        }
        let took = ContinuousClock.now - start
        let result = try #require(output)
        #expect(result.timedOut && result.termination == .signaled(SIGKILL) && result.status == nil)
        #expect(result.stdout == "started\n", "the output before the kill is kept")
        #expect(took >= .seconds(3) && took < .seconds(15), "killed after \(took)")
    }

    /// With a process group of its own, the timeout kills what the child started too (else a grandchild could
    /// outlive the test, holding its pipes).
    @Test func theTimeoutKillsTheProcessGroupWhenAsked() throws {
        var output: ProcessOutput?
        try withKnownIssue {
            output = try runProcess("/bin/sh", ["-c", "sleep 1000 & echo $!; wait"],
                                    ProcessOptions(timeout: .seconds(3), ownProcessGroup: true))
        } matching: { $0.description.contains("did not end within") }
        let grandchild = try #require(output.flatMap { pid_t($0.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) })
        let end = ContinuousClock.now + .seconds(10)
        while kill(grandchild, 0) == 0 && ContinuousClock.now < end { usleep(10_000) }
        #expect(kill(grandchild, 0) == -1 && errno == ESRCH, "sleep \(grandchild) survived the group's kill")
    }

    @Test func exitStatusAndSignalAreReported() throws {
        let failed = try runProcess("/bin/sh", ["-c", "exit 3"])
        #expect(failed.termination == .exited(3) && failed.status == 3)
        let terminated = try runProcess("/bin/sh", ["-c", "kill -TERM $$"])
        #expect(terminated.termination == .signaled(SIGTERM) && terminated.status == nil)
        #expect(terminated.termination.description == "signal 15 (Terminated)")
        // Ignored by the test process or not, the child starts with default dispositions.
        let interrupted = try runProcess("/bin/sh", ["-c", "kill -INT $$; sleep 5"])
        #expect(interrupted.termination == .signaled(SIGINT))
    }

    @Test func environmentWorkingDirectoryAndStandardInput() throws {
        let output = try runProcess("/bin/sh", ["-c", "echo \"$RLCTL_RUNNER_TEST ${HOME-no home}\"; pwd; cat"],
                                    ProcessOptions(environment: ["RLCTL_RUNNER_TEST": "set", "HOME": nil],
                                                   workingDirectory: "/usr/bin", stdin: Data("from stdin".utf8)))
        #expect(output.termination == .exited(0))
        #expect(output.stdout == "set no home\n/usr/bin\nfrom stdin", "\(output.stdout)")
        let noInput = try runProcess("/bin/cat", [])
        #expect(noInput.termination == .exited(0) && noInput.stdout.isEmpty, "stdin is /dev/null")
    }

    @Test func aChildThatClosesItsInputEarlyDoesNotEndTheTestWithSIGPIPE() throws {
        let output = try runProcess("/bin/sh", ["-c", "exec 0<&-; echo closed"],
                                    ProcessOptions(stdin: Data(repeating: 65, count: 1 << 20)))
        #expect(output.termination == .exited(0) && output.stdout == "closed\n")
    }

    /// Only stdin, stdout and stderr reach the child, even a descriptor left inheritable (as Swift Testing leaves
    /// an exit test's pipes while it starts one).
    @Test func theChildInheritsNoOtherDescriptor() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        let output = try runProcess("/bin/sh", ["-c", "ls /proc/self/fd"])
        #expect(output.stdout.split(separator: "\n").sorted() == ["0", "1", "2", "3"], "\(output.stdout)")
    }

    @Test func stderrOnATerminalIsWhatTheTerminalReceived() throws {
        let output = try runProcess("/bin/sh", ["-c", "test -t 2 && echo tty >&2; test -t 1 || echo pipe"],
                                    ProcessOptions(stderrOnTerminal: true))
        // The terminal turns "\n" into "\r\n" (ONLCR), as it does for rlctl's progress line.
        #expect(output.stderr == "tty\r\n" && output.stdout == "pipe\n", "\(output.stderr.debugDescription) \(output.stdout.debugDescription)")
    }

    @Test func aMissingProgramIsAnErrorThatNamesIt() {
        #expect(throws: ProcessStartError.self) { try runProcess("/nonexistent/program", []) }
        do {
            _ = try runProcess("/nonexistent/program", [])
        } catch {
            #expect("\(error)" == "cannot start /nonexistent/program: No such file or directory")
        }
    }

    @Test func signalsReachARunningProcess() throws {
        let child = try RunningProcess("/bin/sh", ["-c", "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done"])
        let end = ContinuousClock.now + .seconds(10)
        while child.outputSoFar.stdout != "ready\n" && ContinuousClock.now < end { usleep(2_000) }
        #expect(child.isRunning)
        child.send(SIGTERM)
        let output = child.wait()
        #expect(output.termination == .exited(7) && output.stdout == "ready\ngot TERM\n")
        #expect(!child.isRunning)
    }
}

@Suite struct TextDifferenceTests {
    @Test func showsChangedLinesWithContext() {
        let expected = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"
        let actual = "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\neight\n"
        #expect(lineDifference(expected, actual) == """
              …
              two
              three
            - four
            + FOUR
              five
              six
              seven
            + eight
            \u{20} 
            """)
    }

    @Test func quotesLinesThatDifferOnlyInvisibly() {
        #expect(lineDifference("rlctl: error", "rlctl: error ") == "- \"rlctl: error\"\n+ \"rlctl: error \"")
    }

    @Test func aMismatchIsOneFailureWithTheDifference() {
        withKnownIssue {
            expectSameText("a\nb\n", "a\nc\n", "stdout")
        } matching: { $0.description.contains("stdout differs from the expected text (- expected, + actual):\n  a\n- c\n+ b") }
        expectSameText("same", "same", "stdout")
    }
}
