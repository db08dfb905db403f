import Foundation
import Glibc
import Testing
import TestSupport

/// Whether rlctl can take the kernel view here, as its doctor says.
let kernelViewRequirement: TestRequirement = {
    let doctor = try? CLI.run(["doctor"])
    let line = doctor?.stdout.split(separator: "\n").first { $0.contains("kernel view") }.map(String.init)
    let available = line.map { !$0.contains("not available") } ?? false
    return TestRequirement(missing: available ? nil : (line ?? "rlctl doctor did not say"), problem: "the kernel view is not available here")
}()

/// The kernel view end to end (`--kernel`, docs/kernel-view.md): the README's experiments, as a user runs them, with
/// CPU hogs pinned beside the loop and a cgroup with a CPU quota made for the test. They need root and BPF; in CI
/// (as root) a kernel view that cannot be taken fails them.
@Suite(.serialized, .enabled(if: kernelViewRequirement.shouldRun, kernelViewRequirement.skipComment))
struct KernelViewTests {
    static var requirement: TestRequirement { kernelViewRequirement }

    /// `rlctl ARGUMENTS` pinned to CPU 0 (the whole process, so the loop's thread too), as the README runs it.
    static func pinned(_ arguments: [String], prefix: [String] = []) throws -> ProcessOutput {
        let command = prefix + ["/usr/bin/taskset", "-c", "0", CLI.binary] + arguments
        return try RunningProcess(command[0], Array(command.dropFirst()), ProcessOptions(timeout: .seconds(180), ownProcessGroup: true)).wait()
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// `--kernel on` where the kernel view cannot be taken (here: not root) is a one-line error before anything runs.
    @Test func kernelOnWithoutPrivilegeFailsBeforeTheRun() throws {
        guard Self.requirement.requireMet() else { return }
        guard let setpriv = TestEnvironment.executable("setpriv") else {
            Issue.record("setpriv (util-linux) is missing")
            return
        }
        // The workload would print its summary; the error must come before it runs, alone.
        let result = try RunningProcess(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", CLI.binary, "run", "timers",
                                                  "--duration", "5s", "--kernel", "on"],
                                        ProcessOptions(environment: ["TMPDIR": "/tmp"], timeout: .seconds(60))).wait()
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("rlctl: --kernel on: the kernel view is not available: ")
                && lines[0].contains("root"), "\(result.stderr)")
    }

    /// `rlctl top` where the kernel view cannot be taken (not root): with auto the run-queue column says why on the
    /// status line; with `--kernel on` it is a one-line error before the view starts.
    @Test func topWithoutPrivilegeSaysWhyTheRunQueueIsNotAvailable() throws {
        guard Self.requirement.requireMet() else { return }
        guard let setpriv = TestEnvironment.executable("setpriv") else {
            Issue.record("setpriv (util-linux) is missing")
            return
        }
        let registry = temporaryPath("live-registry")
        func top(_ arguments: [String]) throws -> ProcessOutput {
            try RunningProcess(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", CLI.binary, "top", "--once", "--interval", "200ms"] + arguments,
                               ProcessOptions(environment: ["TMPDIR": "/tmp", "RLCTL_LIVE_DIR": registry, "PATH": "/nonexistent-rlctl-test"],
                                              timeout: .seconds(60))).wait()
        }
        let auto = try top([])
        #expect(auto.status == 0, "\(auto.stderr)")
        let status = auto.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(status.contains(" — run queue: not available (") && status.contains("root"), "\(auto.stdout)")
        let on = try top(["--kernel", "on"])
        #expect(on.status == 2 && on.stdout.isEmpty, "\(on.stdout)")
        let lines = on.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("rlctl: --kernel on: the kernel view is not available: "), "\(on.stderr)")
    }

    /// A kernel view that cannot load (here: its BPF object missing, or libbpf hidden from rlctl) is said in the
    /// summary with why, and the recording goes on; `--kernel on` makes it a one-line error before the run.
    @Test(arguments: ["object", "libbpf"])
    func aKernelViewThatCannotLoadIsSaidNotHidden(missing: String) throws {
        guard Self.requirement.requireMet() else { return }
        let library: String? = ["/usr/lib/x86_64-linux-gnu/libbpf.so.1", "/usr/lib64/libbpf.so.1", "/usr/lib/libbpf.so.1"].first { FileManager.default.fileExists(atPath: $0) }
        func run(_ arguments: [String]) throws -> ProcessOutput {
            let rlctl = [CLI.binary, "run", "timers", "--duration", "300ms"] + arguments
            if missing == "object" {
                return try RunningProcess(CLI.binary, Array(rlctl.dropFirst()),
                                          ProcessOptions(environment: ["RLCTL_KERNEL_PROBE": "/nonexistent/runloop-kernel-probe.bpf"])).wait()
            }
            // A mount namespace of its own where libbpf.so.1 is an empty file: dlopen fails as on a machine without it.
            let script = "mount --bind /dev/null \"$0\" && exec \"$@\""
            return try runProcess("/usr/bin/unshare", ["-m", "/bin/sh", "-c", script, library ?? "/nonexistent"] + rlctl)
        }
        if missing == "libbpf" && library == nil {
            Issue.record("libbpf.so.1 is not where this test looks for it")
            return
        }
        let auto = try run([])
        #expect(auto.status == 0, "\(auto.stderr)")
        let line = auto.stdout.split(separator: "\n").first { $0.hasPrefix("kernel view:") }.map(String.init) ?? ""
        #expect(line.hasPrefix("kernel view: not available — ") && line.contains(missing == "object" ? "RLCTL_KERNEL_PROBE" : "libbpf"), "\(auto.stdout.prefix(600))")
        let on = try run(["--kernel", "on"])
        #expect(on.status == 2 && on.stdout.isEmpty)
        #expect(on.stderr.hasPrefix("rlctl: --kernel on: the kernel view is not available: ") && on.stderr.split(separator: "\n").count == 1, "\(on.stderr)")
    }

    /// Two recordings at once each load their own kernel view and see their own loops.
    @Test func twoRecordingsAtOnceEachHaveTheirKernelView() throws {
        guard Self.requirement.requireMet() else { return }
        let first = try CLI.start(["run", "timers", "--duration", "1500ms", "--kernel", "on", "--format", "json"])
        let second = try CLI.start(["run", "jank", "--duration", "1500ms", "--kernel", "on", "--format", "json"])
        for result in [first.wait(), second.wait()] {
            #expect(result.status == 0, "\(result.stderr)")
            let summary = try Self.json(result.stdout)
            let kernel = try #require(summary["kernel"] as? [String: Any])
            #expect(kernel["status"] as? String == "on" && (kernel["records"] as? Int ?? 0) > 0, "\(kernel)")
            let loop = try #require((summary["loops"] as? [[String: Any]])?.first)
            #expect(loop["kernel"] != nil, "the loop has no kernel facet")
        }
    }

    /// Killed by SIGKILL while it records, rlctl leaves no BPF program loaded.
    @Test func sigkillLeavesNoBPFProgramBehind() throws {
        guard Self.requirement.requireMet() else { return }
        guard let bpftool = Self.bpftool else {
            Issue.record("bpftool is missing (scripts/install-deps.sh installs it)")
            return
        }
        let rlctl = try CLI.start(["run", "timers", "--duration", "60s", "--kernel", "on"])
        let ours = try Self.programsLoaded(by: rlctl.pid, bpftool: bpftool)
        #expect(ours.count >= 10, "the kernel view never loaded its programs: \(ours)")
        rlctl.send(SIGKILL, toGroup: true)
        _ = rlctl.wait()
        #expect(try Self.unloaded(ours, bpftool: bpftool), "left loaded after SIGKILL")
    }

    static func loadedPrograms(bpftool: String) throws -> Set<Int> {
        let listing = try runProcess(bpftool, ["-j", "prog", "show"])
        let programs = try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [[String: Any]] ?? []
        return Set(programs.compactMap { ($0["name"] as? String)?.hasPrefix("rlctl_kp_") == true ? $0["id"] as? Int : nil })
    }

    /// The kernel view's programs process `pid` holds (its descriptors' fdinfo), not another test's rlctl running
    /// meanwhile, once it has loaded them (at most 30 s).
    static func programsLoaded(by pid: Int32, bpftool: String) throws -> Set<Int> {
        func held() throws -> Set<Int> {
            let folder = "/proc/\(pid)/fdinfo"
            var ids: Set<Int> = []
            for entry in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                let text = (try? String(contentsOfFile: folder + "/" + entry, encoding: .utf8)) ?? ""
                for line in text.split(separator: "\n") where line.hasPrefix("prog_id:") {
                    if let id = Int(line.dropFirst("prog_id:".count).trimmingCharacters(in: .whitespaces)) { ids.insert(id) }
                }
            }
            return try ids.intersection(loadedPrograms(bpftool: bpftool))
        }
        let started = Date()
        var ours: Set<Int> = []
        while ours.count < 10, Date().timeIntervalSince(started) < 30 {
            usleep(50_000)
            ours = try held()
        }
        return ours
    }

    /// Whether `programs` are gone (the kernel frees a program after an RCU grace period once its last descriptor
    /// is closed: waits up to 10 s).
    static func unloaded(_ programs: Set<Int>, bpftool: String) throws -> Bool {
        let since = Date()
        while !(try loadedPrograms(bpftool: bpftool).intersection(programs)).isEmpty, Date().timeIntervalSince(since) < 10 { usleep(50_000) }
        return try loadedPrograms(bpftool: bpftool).intersection(programs).isEmpty
    }

    static var bpftool: String? {
        TestEnvironment.executable("bpftool") ?? ["/usr/sbin/bpftool"].first(where: { access($0, X_OK) == 0 })
    }

    /// `rlctl top` watching a `run --kernel on`: both load their own kernel view, top's run-queue column has a
    /// figure for the loop, and the run's kernel view is whole.
    @Test func topHasARunQueueColumnBesideARecordingWithItsOwnKernelView() throws {
        guard Self.requirement.requireMet() else { return }
        let registry = temporaryPath("live-registry")
        let trace = temporaryPath("top-kernel.rltrace")
        defer { try? FileManager.default.removeItem(atPath: registry); try? FileManager.default.removeItem(atPath: trace) }
        let environment = TopEmbeddedTests.isolated(registry)
        let run = try CLI.start(["run", "jank", "--duration", "120s", "--trace", trace, "--kernel", "on", "--format", "json"],
                                environment: environment)
        defer { run.send(SIGTERM); _ = run.wait() }
        TopEmbeddedTests.expectRegistered(run.pid, in: registry)
        let shown = try CLI.run(["top", "--once", "--format", "json", "--kernel", "on"], environment: environment)
        #expect(shown.status == 0, "\(shown.stderr)")
        let document = try Self.json(shown.stdout)
        let kernel = try #require(document["kernel"] as? [String: Any], "\(shown.stdout)")
        #expect(kernel["status"] as? String == "on" && kernel["unavailableReason"] == nil, "\(kernel)")
        let loop = try #require((document["loops"] as? [[String: Any]])?.first, "\(shown.stdout)")
        let share = try #require(loop["runQueueShare"] as? Double, "no run-queue figure: \(loop)")
        let throttled = try #require(loop["throttledShare"] as? Double, "no throttled figure: \(loop)")
        #expect(share >= 0 && share <= 1 && throttled <= share, "\(loop)")
        // A count (the probe misses a few times off the CPU, each counted as lost: not always 0).
        #expect(loop["kernelLostRecords"] is Int, "\(loop)")

        run.send(SIGTERM)
        let ended = run.wait()
        #expect(ended.status == 0, "\(ended.stderr)")
        let summary = try Self.json(ended.stdout)
        let runKernel = try #require(summary["kernel"] as? [String: Any])
        #expect(runKernel["status"] as? String == "on" && (runKernel["records"] as? Int ?? 0) > 0, "\(runKernel)")
    }

    /// What top loads goes when it ends by a signal, as by q.
    @Test(arguments: [SIGINT, SIGTERM, SIGHUP])
    func topRemovesItsKernelViewWhenSignalled(signal: Int32) throws {
        guard Self.requirement.requireMet() else { return }
        guard let bpftool = Self.bpftool else {
            Issue.record("bpftool is missing (scripts/install-deps.sh installs it)")
            return
        }
        let registry = temporaryPath("live-registry")
        defer { try? FileManager.default.removeItem(atPath: registry) }
        let top = try CLI.start(["top", "--kernel", "on", "--interval", "200ms"],
                                environment: TopEmbeddedTests.isolated(registry))
        let ours = try Self.programsLoaded(by: top.pid, bpftool: bpftool)
        #expect(ours.count >= 10, "top never loaded the kernel view's programs: \(ours)")
        top.send(signal)
        let ended = top.wait()
        #expect(ended.status == 0, "\(ended.termination): \(ended.stderr)")
        #expect(try Self.unloaded(ours, bpftool: bpftool), "left loaded after signal \(signal)")
    }
}

extension KernelViewTests {
    /// The README's experiments, which load the CPUs on purpose: on their own, after the parallel suite (CPULoadTests).
    @Suite(.serialized, .enabled(if: CPULoadTests.enabled, CPULoadTests.comment))
    struct CPULoad {
        /// Beside two CPU hogs on its CPU, a jank callout that needs 5 ms of CPU is not a 5 ms handler on the clock:
        /// the stall's split names the wait for the CPU and the hogs, and its time on the CPU stays about 5 ms.
        @Test func aStallBesideTwoHogsIsBlamedOnTheCPUNotTheCallout() throws {
            guard KernelViewTests.requirement.requireMet() else { return }
            let hogs = try CPUHogs(count: 2, cpu: 0)
            defer { hogs.stop() }
            let result = try KernelViewTests.pinned(["run", "jank", "--every", "10", "--cost", "5ms", "--duration", "2s", "--stall", "8ms",
                                          "--kernel", "on", "--format", "json"])
            #expect(result.status == 0, "\(result.stderr)")
            let summary = try KernelViewTests.json(result.stdout)
            #expect((summary["kernel"] as? [String: Any])?["status"] as? String == "on")
            let loop = try #require((summary["loops"] as? [[String: Any]])?.first)
            let worst = try #require((loop["worstStalls"] as? [[String: Any]])?.first, "no stall beside two hogs: \(result.stdout.prefix(2000))")
            let split = try #require(worst["kernel"] as? [String: Any], "the worst stall has no kernel split")
            let onCPU = try #require(split["onCPUNanoseconds"] as? Int), waiting = try #require(split["runQueueNanoseconds"] as? Int)
            let busy = try #require(worst["busyNanoseconds"] as? Int)
            // The handler needs 5 ms of CPU (it spins on its thread's CPU time); the iteration's other work is tiny.
            #expect(onCPU >= 4_500_000 && onCPU <= 8_000_000, "on CPU \(onCPU) ns of a 5 ms handler")
            #expect(waiting > onCPU, "waiting for the CPU \(waiting) ns, on it \(onCPU) ns, beside two hogs")
            #expect(busy >= onCPU + waiting - 100_000, "the parts (\(onCPU) + \(waiting)) exceed the stall's \(busy) ns")
            let culprits = (split["culprits"] as? [[String: Any]]) ?? []
            let hogPIDs = Set(hogs.pids)
            #expect(culprits.contains { ($0["pid"] as? Int).map { hogPIDs.contains(Int32($0)) } ?? false },
                    "the culprits \(culprits) name neither hog (\(hogPIDs))")
        }

        /// `rlctl top`'s row of a loop that always has work (every 10 ms frame burns 10 ms of CPU), run pinned to
        /// CPU 0 as `prefix` starts it, over a 2 s interval.
        static func topRowOfABusyLoop(prefix: [String] = []) throws -> [String: Any] {
            try topRow(of: ["jank", "--interval", "10ms", "--every", "1", "--cost", "10ms"], prefix: prefix)
        }

        /// `rlctl top`'s row of `rlctl run WORKLOAD…` run pinned to CPU 0 as `prefix` starts it, over a 2 s interval.
        static func topRow(of workload: [String], prefix: [String] = []) throws -> [String: Any] {
            let registry = temporaryPath("live-registry")
            let trace = temporaryPath("top-busy.rltrace")
            defer { try? FileManager.default.removeItem(atPath: registry); try? FileManager.default.removeItem(atPath: trace) }
            let environment = TopEmbeddedTests.isolated(registry)
            // (taskset and the cgroup's shell exec rlctl: the pid is rlctl's.)
            let command = prefix + ["/usr/bin/taskset", "-c", "0", CLI.binary, "run"] + workload
                + ["--duration", "120s", "--trace", trace, "--kernel", "off"]
            let run = try RunningProcess(command[0], Array(command.dropFirst()),
                                         ProcessOptions(environment: environment, timeout: .seconds(180), ownProcessGroup: true))
            defer { run.send(SIGTERM, toGroup: true); _ = run.wait() }
            TopEmbeddedTests.expectRegistered(run.pid, in: registry)
            let shown = try CLI.run(["top", "--once", "--format", "json", "--kernel", "on", "--interval", "2s"], environment: environment)
            #expect(shown.status == 0, "\(shown.stderr)")
            return try #require((try KernelViewTests.json(shown.stdout)["loops"] as? [[String: Any]])?.first, "\(shown.stdout)")
        }

        /// A loop that always has work, beside one hog on its CPU, gets about half of it: top's run-queue column
        /// shows the loop's thread waiting for the CPU about half of the interval (more on a machine busy meanwhile).
        @Test func topShowsTheRunQueueAHogForces() throws {
            guard KernelViewTests.requirement.requireMet() else { return }
            let hog = try CPUHogs(count: 1, cpu: 0)
            defer { hog.stop() }
            let loop = try Self.topRowOfABusyLoop()
            let share = try #require(loop["runQueueShare"] as? Double, "\(loop)")
            #expect(share >= 0.35 && share <= 0.95, "one hog beside an always-busy loop: run queue \(share) of the interval")
            #expect((loop["throttledShare"] as? Double ?? 1) < 0.05, "no quota, no throttling: \(loop)")
        }

        /// The same loop alone in a cgroup with 20 ms of CPU per 100 ms: most of the interval runnable, mostly
        /// throttled.
        @Test func topShowsTheThrottlingOfACPUQuota() throws {
            guard KernelViewTests.requirement.requireMet() else { return }
            if let reason = QuotaCgroup.unavailableReason {
                Issue.record("no CPU quota can be made here: \(reason)")
                return
            }
            let cgroup = try QuotaCgroup(name: "rlctl-top-test", quota: .milliseconds(20), period: .milliseconds(100))
            defer { cgroup.remove() }
            let loop = try Self.topRowOfABusyLoop(prefix: cgroup.wrap([]))
            let throttled = try #require(loop["throttledShare"] as? Double, "\(loop)")
            let share = try #require(loop["runQueueShare"] as? Double, "\(loop)")
            // At most 20% on the CPU: the rest runnable, most of it throttled (the probe tells throttling by the
            // cgroup's state when the thread leaves the CPU or is woken, and calls the rest run queue).
            #expect(share >= 0.5, "a 20% quota on an always-busy loop: run queue \(share) of the interval")
            #expect(throttled >= 0.25 && throttled <= share + 1e-9, "a 20% quota on an always-busy loop: throttled \(throttled), run queue \(share)")
        }

        /// A cgroup with 20 ms of CPU per 100 ms, spent by a hog in it on CPU 1; nil (the issue recorded) where no
        /// quota can be made.
        static func quotaSpentByAHog(_ name: String) throws -> (QuotaCgroup, RunningProcess)? {
            if let reason = QuotaCgroup.unavailableReason {
                Issue.record("no CPU quota can be made here: \(reason)")
                return nil
            }
            let cgroup = try QuotaCgroup(name: name, quota: .milliseconds(20), period: .milliseconds(100))
            do {
                let hog = try RunningProcess("/bin/sh", ["-c", "echo $$ > '\(cgroup.path)/cgroup.procs' && exec taskset -c 1 sh -c 'while :; do :; done'"],
                                             ProcessOptions(timeout: .seconds(300), ownProcessGroup: true))
                return (cgroup, hog)
            } catch {
                cgroup.remove()
                throw error
            }
        }

        /// `top --serve`'s late-time counter, as top's row has it: a loop whose one 10 ms timer wakes it while its
        /// cgroup is out of CPU quota (20 ms per 100 ms, spent by a hog in the same cgroup on the other CPU) is late
        /// because it was throttled, and top's row says so, by cause, adding up to no more than the interval.
        @Test func topCountsLateTimeThrottledUnderAQuota() throws {
            guard KernelViewTests.requirement.requireMet(), let (cgroup, hog) = try Self.quotaSpentByAHog("rlctl-top-late") else { return }
            defer { hog.send(SIGKILL, toGroup: true); _ = hog.wait(); cgroup.remove() }
            let loop = try Self.topRow(of: ["timers", "--count", "1", "--interval", "10ms"], prefix: cgroup.wrap([]))
            #expect(cgroup.periodsThrottled > 0, "the cgroup (\(cgroup.hierarchy)) was never throttled")
            let late = try #require(loop["lateTime"] as? [String: Any], "no late time in top's row: \(loop)")
            let throttled = try #require(late["throttledNanoseconds"] as? Int), explained = try #require(late["explained"] as? Int)
            let causes = ["runQueueNanoseconds", "throttledNanoseconds", "blockedNanoseconds", "slackNanoseconds", "wakePathNanoseconds",
                          "loopWorkNanoseconds"].map { late[$0] as? Int ?? 0 }
            #expect(explained > 0 && throttled > 20_000_000, "a 20% quota spent by a hog: \(late)")
            #expect(throttled == causes.max(), "throttling is the largest cause: \(late)")
            #expect(causes.reduce(0, +) <= 2_500_000_000, "more late time than the 2 s interval holds: \(late)")
        }

        /// A CPU quota (20 ms per 100 ms, spent by a hog in the same cgroup) reads as throttling, not as a slow loop.
        @Test func aCPUQuotaReadsAsThrottled() throws {
            guard KernelViewTests.requirement.requireMet(), let (cgroup, hog) = try Self.quotaSpentByAHog("rlctl-kernel-test") else { return }
            defer { hog.send(SIGKILL, toGroup: true); _ = hog.wait(); cgroup.remove() }
            let result = try KernelViewTests.pinned(["run", "jank", "--every", "5", "--cost", "2ms", "--duration", "2s", "--stall", "8ms",
                                          "--kernel", "on", "--format", "json"], prefix: cgroup.wrap([]))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(cgroup.periodsThrottled > 0, "the cgroup (\(cgroup.hierarchy)) was never throttled")
            let summary = try KernelViewTests.json(result.stdout)
            let overall = try #require((summary["kernel"] as? [String: Any])?["overall"] as? [String: Any])
            let busy = try #require(overall["busy"] as? [String: Any])
            let throttled = try #require(busy["throttledNanoseconds"] as? Int)
            #expect(throttled > 10_000_000, "throttled only \(throttled) ns under a 20%-of-a-CPU quota: \(busy)")
        }

        /// The same workload twice, the second beside a hog: the wall clock regressed, time on the CPU did not, and compare
        /// says so and passes; a handler that really got 300 µs slower still fails.
        @Test func compareTellsTheMachineFromTheCode() throws {
            guard KernelViewTests.requirement.requireMet() else { return }
            let quiet = temporaryPath("quiet.json"), busy = temporaryPath("busy.json"), slower = temporaryPath("slower.json")
            func record(_ output: String, handler: String) throws {
                let result = try KernelViewTests.pinned(["run", "timers", "--count", "4", "--interval", "5ms", "--handler-cost", handler,
                                              "--duration", "2s", "--repeat", "3", "--kernel", "on", "--output", output])
                #expect(result.status == 0, "\(result.stderr)")
            }
            try record(quiet, handler: "200us")
            do {
                let hog = try CPUHogs(count: 1, cpu: 0)
                defer { hog.stop() }
                try record(busy, handler: "200us")
            }
            try record(slower, handler: "500us")
            let aa = try CLI.run(["compare", quiet, busy])
            #expect(aa.status == 0, "A/A beside a hog failed:\n\(aa.stdout)\(aa.stderr)")
            // Beside the hog the wall clock usually regresses past the threshold, and the report names the contention; on a
            // machine busy enough during the quiet run too, nothing regresses at all. Either way the A/A pair passes.
            #expect(aa.stdout.contains("the machine, not the code") || aa.stdout.contains("no regression beyond"), "\(aa.stdout)")
            #expect(!aa.stdout.contains("REGRESSED"), "\(aa.stdout)")
            let regression = try CLI.run(["compare", quiet, slower])
            #expect(regression.status == 1, "a 300 µs slower handler passed:\n\(regression.stdout)\(regression.stderr)")
            #expect(regression.stdout.contains("kernel.oncpu_per_callout"), "\(regression.stdout)")
        }
    }
}
