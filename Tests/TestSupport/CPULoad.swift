import Foundation
import Glibc
import Testing

/// CPU-bound processes pinned to one CPU, the contention of a shared machine made on purpose: the kernel view's
/// tests put a loop beside them and expect the loop's late time blamed on them. Killed by `stop()` and by deinit.
public final class CPUHogs: @unchecked Sendable {
    public let processes: [RunningProcess]
    public var pids: [Int32] { processes.map(\.pid) }

    /// `count` shells spinning `while :; do :; done` on `cpu` (taskset), each in a process group of its own.
    public init(count: Int, cpu: Int) throws {
        var started: [RunningProcess] = []
        do {
            for _ in 0..<count {
                started.append(try RunningProcess("/usr/bin/taskset", ["-c", "\(cpu)", "/bin/sh", "-c", "while :; do :; done"],
                                                  ProcessOptions(timeout: .seconds(600), ownProcessGroup: true)))
            }
        } catch {
            for process in started { process.send(SIGKILL, toGroup: true); _ = process.wait() }
            throw error
        }
        processes = started
    }

    public func stop() {
        for process in processes where process.isRunning {
            process.send(SIGKILL, toGroup: true)
            _ = process.wait()
        }
    }

    deinit { stop() }
}

/// A cgroup with a CPU quota (CFS bandwidth control), made for one test and removed at the end: on the cgroup v2
/// hierarchy (`cpu.max`) when its root offers the cpu controller, else on v1's cpu hierarchy (`cpu.cfs_quota_us`,
/// `cpu.cfs_period_us`), as this project's machines have it.
public final class QuotaCgroup: @unchecked Sendable {
    public let path: String
    /// "v1" or "v2".
    public let hierarchy: String

    /// Why no such cgroup can be made here, or nil.
    public static var unavailableReason: String? {
        if getuid() != 0 { return "making a cgroup needs root" }
        if v2Root != nil || FileManager.default.fileExists(atPath: v1Root + "/cpu.cfs_quota_us") { return nil }
        return "no cpu controller: neither cgroup v2's cpu.max nor v1's cpu.cfs_quota_us"
    }

    private static let v1Root = "/sys/fs/cgroup/cpu"
    private static var v2Root: String? {
        let controllers = (try? String(contentsOfFile: "/sys/fs/cgroup/cgroup.controllers", encoding: .utf8)) ?? ""
        return controllers.split(whereSeparator: { $0 == " " || $0 == "\n" }).contains("cpu") ? "/sys/fs/cgroup" : nil
    }

    /// `quota` of CPU time per `period` (e.g. 20 ms per 100 ms).
    public init(name: String, quota: Duration, period: Duration) throws {
        let unique = "\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let quotaMicroseconds = quota.components.seconds * 1_000_000 + quota.components.attoseconds / 1_000_000_000_000
        let periodMicroseconds = period.components.seconds * 1_000_000 + period.components.attoseconds / 1_000_000_000_000
        if let root = Self.v2Root {
            path = "\(root)/\(unique)"
            hierarchy = "v2"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try write("\(quotaMicroseconds) \(periodMicroseconds)", to: "cpu.max")
        } else {
            path = "\(Self.v1Root)/\(unique)"
            hierarchy = "v1"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            try write("\(periodMicroseconds)", to: "cpu.cfs_period_us")
            try write("\(quotaMicroseconds)", to: "cpu.cfs_quota_us")
        }
    }

    /// The command line that runs `command` inside this cgroup (the shell joins it, then execs the command).
    public func wrap(_ command: [String]) -> [String] {
        ["/bin/sh", "-c", "echo $$ > '\(path)/cgroup.procs' && exec \"$@\"", "sh"] + command
    }

    /// How many periods the group was throttled in so far (cpu.stat's nr_throttled, both hierarchies).
    public var periodsThrottled: Int {
        let stat = (try? String(contentsOfFile: path + "/cpu.stat", encoding: .utf8)) ?? ""
        for line in stat.split(separator: "\n") where line.hasPrefix("nr_throttled ") {
            return Int(line.split(separator: " ")[1]) ?? 0
        }
        return 0
    }

    /// Removes the group once its processes are gone (a cgroup with members cannot be removed: they are killed).
    public func remove() {
        for _ in 0..<100 {
            if rmdir(path) == 0 || errno == ENOENT { return }
            let members = ((try? String(contentsOfFile: path + "/cgroup.procs", encoding: .utf8)) ?? "")
                .split(separator: "\n").compactMap { Int32($0) }
            for member in members { kill(member, SIGKILL) }
            usleep(20_000)
        }
    }

    deinit { remove() }

    private func write(_ value: String, to file: String) throws {
        do { try value.write(toFile: path + "/" + file, atomically: false, encoding: .utf8) } catch {
            remove()
            throw error
        }
    }
}

/// Tests that load the CPUs on purpose (hogs pinned beside a loop, a CPU quota) take a 2-core machine away from every
/// timing-sensitive test running beside them in the parallel suite. They run on their own, after it, when
/// RLCTL_TEST_CPU_LOAD=1 (`.ci/run` does: `swift test --no-parallel --filter CPULoad`).
public enum CPULoadTests {
    public static let enabled = ProcessInfo.processInfo.environment["RLCTL_TEST_CPU_LOAD"] == "1"
    public static let comment: Comment = "loads the CPUs on purpose: runs on its own after the suite, with RLCTL_TEST_CPU_LOAD=1 swift test --no-parallel --filter CPULoad (.ci/run does)"
}
