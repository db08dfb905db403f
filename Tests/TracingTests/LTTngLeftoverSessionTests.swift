import Glibc
import Testing
@testable import Tracing

/// Which process a session name says made it: what ``LTTngLeftoverSessions`` decides a session is orphaned by.
struct LTTngLeftoverSessionTests {
    @Test func aNameOfThisRlctlNamesThisProcessAndItsStartTime() throws {
        let owner = try #require(LTTngLeftoverSessions.owner(of: LTTngSession.uniqueName("record")))
        #expect(owner.pid == getpid())
        #expect(owner.start != nil && owner.start == ProcessStart.time(of: getpid()))
    }

    /// Earlier rlctls named sessions rlctl-LABEL-PID-RANDOM, labels ending in digits among them: their pid is
    /// the one before the random number, never a digit of the label.
    @Test func anEarlierRlctlsNameNamesItsPidAlone() {
        #expect(LTTngLeftoverSessions.owner(of: "rlctl-record-1234-987654321")! == (1234, nil))
        #expect(LTTngLeftoverSessions.owner(of: "rlctl-conn-2-1234-987654321")! == (1234, nil))
        #expect(LTTngLeftoverSessions.owner(of: "rlctl-live-test-1234.5678-987654321")! == (1234, 5678))
    }

    @Test func otherNamesHaveNoOwner() {
        for name in ["demo", "rlctl-record", "rlctl-record-abc-def", "auto-20261128-120000", "rlctl-x-1.2.3-4"] {
            #expect(LTTngLeftoverSessions.owner(of: name) == nil, "\(name)")
        }
    }

    @Test func theListingGivesEachSessionItsOutput() {
        let listing = """
            Available recording sessions:
              1) rlctl-record-1.2-3 [active]
                Trace output: /tmp/rlctl-record-1-4

              2) rlctl-top-5.6-7 [inactive]
                Trace output: net://127.0.0.1:1234:1235

            Use lttng list <session_name> for more details
            """
        let sessions = LTTngLeftoverSessions.sessions(in: listing)
        #expect(sessions.map(\.name) == ["rlctl-record-1.2-3", "rlctl-top-5.6-7"])
        #expect(sessions.map(\.output) == ["/tmp/rlctl-record-1-4", "net://127.0.0.1:1234:1235"])
    }
}
