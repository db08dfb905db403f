import Glibc
import Testing
import TraceModel

/// /proc/PID/stat read as the kernel writes it: a command name may hold spaces and parentheses.
struct ProcessStatTests {
    @Test func aNameWithSpacesAndParenthesesRunsToTheLastParenthesis() throws {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 120 0 0 0 7 3 0 0 20 0 3 0 987654 1000 200 "
            + "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
        let stat = try #require(ProcessStat(parsing: line))
        #expect(stat.name == "my (odd) name" && stat.state == "S" && stat.parent == 1 && stat.startTime == 987654)
        #expect(!stat.isKernelThread)
        #expect(ProcessStat(parsing: "4242 (cut short) S 1") == nil)
    }

    @Test func thisProcessAndAKernelThreadReadAsTheyAre() throws {
        let own = try #require(ProcessStat(pid: getpid()))
        #expect(own.parent == getppid() && !own.isKernelThread)
        #expect(ProcessStat(pid: getpid(), thread: getpid())?.startTime == own.startTime)
        #expect(ProcessStat(pid: 2)?.isKernelThread == true)   // kthreadd
    }
}
