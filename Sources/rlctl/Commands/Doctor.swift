import ArgumentParser
import Dispatch
import Foundation
import Glibc
import KernelTracing
import RunLoopCore
import TraceReading
import Tracing

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the tracing set-up and say what to fix.",
        discussion: """
        Checks, in order: whether this rlctl has the runloop LTTng provider compiled in, whether liblttng-ust is \
        loaded, whether libbabeltrace2 (the LTTng trace reader) is compiled in, whether lttng-tools is \
        installed, whether an LTTng session daemon answers, and whether a test loop's events go through a real \
        LTTng session and come back. Sessions that rlctl processes killed by SIGKILL left active in the daemon \
        (named rlctl-LABEL-PID.START-…, their process gone) are removed, and each is named; every LTTng-using rlctl \
        command removes them too. A daemon started with --start-daemon keeps running after the doctor, for the \
        commands that follow; one that record, run or top starts stops when they end. The embedded recorder (rlctl run's default) needs none of this.

        Then a warning, which does not fail the doctor: whether LTTng's consumer daemon can be starved of CPU. With \
        the kernel's autogroup scheduling on, the daemon runs in a scheduler group of its own, and a program that \
        keeps every CPU busy can keep it from running for seconds; LTTng then discards events. Autogroup off \
        (sysctl -w kernel.sched_autogroup_enabled=0) removes the risk; the embedded recorder does not have it.

        Last, the kernel view (rlctl run and record --kernel, docs/kernel-view.md): whether this rlctl has its BPF \
        program and libbpf, and whether the program loads and attaches to the scheduler's and the timers' \
        tracepoints here (root, or CAP_BPF with CAP_PERFMON; BTF at /sys/kernel/btf/vmlinux; tracefs). When it \
        cannot, that is a warning: run and record go on without it (--kernel auto) and their summaries say why.

        Exit status: 0 every check passed (warnings included); 1 a check failed (each failure says what to do).
        """
    )

    @Flag(help: "Start an LTTng session daemon if none answers (lttng-sessiond --daemonize), so the round trip can run.")
    var startDaemon = false

    func run() throws {
        var report = DoctorReport()
        let provider = checkProvider(&report)
        checkLibrary(&report, providerCompiledIn: provider)
        let reader = checkReader(&report)
        let tools = checkTools(&report)
        let daemon = tools && checkDaemon(&report)
        if daemon { removeLeftoverSessions(&report) }
        if provider && reader && daemon {
            checkRoundTrip(&report)
            checkConsumerScheduling(&report)
        } else {
            report.add("round trip", .skipped, "needs the items above", fix: nil)
        }
        checkKernelView(&report)
        print(report.rendered)
        if report.failures > 0 {
            throw Failure(message: "\(report.failures) check\(report.failures == 1 ? "" : "s") failed; each says what to do", status: .violation)
        }
    }

    private func checkKernelView(_ report: inout DoctorReport) {
        if let reason = KernelView.unavailableReason() {
            report.add("kernel view", .warned, "not available: \(reason)",
                       fix: "run and record go on without it (--kernel auto) and say so; docs/kernel-view.md says what it needs")
        } else {
            report.add("kernel view", .passed, "the BPF program loads and attaches to the scheduler's and the timers' tracepoints (--kernel auto turns it on)")
        }
    }

    private func checkProvider(_ report: inout DoctorReport) -> Bool {
        if LTTngSink.isCompiledIn {
            report.add("LTTng provider", .passed, "loaded from \(LTTngSink.providerPath ?? "?") (\(LTTngSink.providerEventCount) runloop:* tracepoints)")
            return true
        }
        if LTTngSink.isProviderBuilt {   // built with LTTng, but its library does not load here
            report.add("LTTng provider", .failed, LTTngSink.providerLoadError ?? "the provider library does not load",
                       fix: "rebuild (swift build) so that librunloop-lttng-provider.so is beside rlctl, or set RLCTL_LTTNG_PROVIDER to its path")
            return false
        }
        let disabled = ProcessInfo.processInfo.environment["RLCTL_DISABLE_LTTNG"].map { !["", "0", "false", "no", "off"].contains($0.lowercased()) } ?? false
        report.add("LTTng provider", .failed, "this rlctl was built without liblttng-ust",
                   fix: disabled ? "unset RLCTL_DISABLE_LTTNG and rebuild (\(LTTngRecording.rebuild))"
                                 : "install liblttng-ust-dev (bash scripts/install-deps.sh), then rebuild (\(LTTngRecording.rebuild))")
        return false
    }

    private func checkLibrary(_ report: inout DoctorReport, providerCompiledIn: Bool) {
        if let loaded = Self.loadedLibrary(containing: "liblttng-ust.so") {
            report.add("liblttng-ust", .passed, "loaded from \(loaded)")
        } else if providerCompiledIn {
            report.add("liblttng-ust", .failed, "the provider is compiled in but liblttng-ust is not loaded", fix: "reinstall liblttng-ust1 / liblttng-ust-dev")
        } else if let installed = InstalledFiles.find(["lttng/tracepoint.h"], under: ["/usr/include", "/usr/local/include"]) {
            report.add("liblttng-ust", .failed, "installed (\(installed)) but not used by this build", fix: "rebuild rlctl (\(LTTngRecording.rebuild)) so it detects it")
        } else {
            report.add("liblttng-ust", .failed, "not installed", fix: "install liblttng-ust-dev (bash scripts/install-deps.sh), then rebuild (\(LTTngRecording.rebuild))")
        }
    }

    private func checkReader(_ report: inout DoctorReport) -> Bool {
        if CTFTraceReader.isAvailable {
            report.add("libbabeltrace2", .passed, "compiled in: rlctl reads LTTng trace folders")
            return true
        }
        report.add("libbabeltrace2", .failed, "this rlctl was built without libbabeltrace2, so it cannot read LTTng traces",
                   fix: "install libbabeltrace2-dev (bash scripts/install-deps.sh), unset RLCTL_DISABLE_BABELTRACE2, rebuild (\(LTTngRecording.rebuild))")
        return false
    }

    private func checkTools(_ report: inout DoctorReport) -> Bool {
        do {
            try LTTngTools.requireInstalled()
            let version = (try? LTTngTools.lttng(["--version"], timeout: .seconds(10)))?
                .split(separator: "\n").first.map(String.init) ?? "lttng"
            report.add("lttng-tools", .passed, version.trimmingCharacters(in: .whitespaces))
            return true
        } catch {
            let missing = LTTngTools.missingCommands.map { "`\($0)`" }
            report.add("lttng-tools", .failed, "\(missing.joined(separator: " and ")) not found in PATH", fix: LTTngTools.installHint)
            return false
        }
    }

    private func checkDaemon(_ report: inout DoctorReport) -> Bool {
        if LTTngTools.isSessionDaemonReachable {
            report.add("session daemon", .passed, "answers (lttng list)")
            return true
        }
        guard startDaemon else {
            report.add("session daemon", .failed, "none answers this user",
                       fix: "start one: lttng-sessiond --daemonize (root traces root's programs), or rlctl doctor --start-daemon")
            return false
        }
        do {
            let started = try LTTngTools.ensureSessionDaemon()
            report.add("session daemon", .passed, started ? "started (lttng-sessiond --daemonize) and answers"
                                                          : "answers (lttng list; another launcher started it)")
            return true
        } catch {
            report.add("session daemon", .failed, "cannot start one: \(error)", fix: "run lttng-sessiond in a terminal to see why it fails")
            return false
        }
    }

    /// Not a failure: the sessions are gone once the doctor has looked.
    private func removeLeftoverSessions(_ report: inout DoctorReport) {
        let removed = LTTngRecording.removeLeftovers()
            + TraceDestination.removeOrphanedTemporaryFolders().map { "removed the temporary trace folder \($0), whose rlctl is gone" }
        report.add("orphan sessions", .passed, removed.isEmpty ? "none: every rlctl-… session and temporary trace folder belongs to a running rlctl"
                                                              : removed.joined(separator: "; "))
    }

    /// A warning, not a failure: recording works, but a program that keeps every CPU busy may lose events.
    private func checkConsumerScheduling(_ report: inout DoctorReport) {
        let scheduling = LTTngConsumerScheduling.current()
        if let risk = scheduling.risk {
            report.add("consumer CPU", .warned, risk, fix: LTTngConsumerScheduling.fix)
        } else if scheduling.daemons.isEmpty {
            report.add("consumer CPU", .skipped, "no lttng-consumerd runs yet (the session daemon starts it with a session)")
        } else {
            let why = scheduling.autogroupEnabled ? "it shares this process's scheduler group" : "autogroup scheduling is off"
            report.add("consumer CPU", .passed, "lttng-consumerd gets a CPU under load: \(why)")
        }
    }

    /// A test loop on a new thread, traced into a session for this process only, read back with the CTF reader.
    private func checkRoundTrip(_ report: inout DoctorReport) {
        let started = ContinuousClock.now
        let output = NSTemporaryDirectory() + "rlctl-doctor-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: output) }
        do {
            let (expected, _) = try Recording.run(.lttng(.init(startTimeout: .seconds(10), label: "doctor")), into: output) { _ in
                ProbeLoop.run()
            }
            let reader = try CTFTraceReader(path: output)
            var seen = Set<String>()
            var ours = 0
            while let event = try reader.next() {
                guard expected.owns(event) else { continue }
                ours += 1
                seen.insert(event.payload.eventName)
            }
            let wanted: Set<String> = ["loop_create", "entry", "before_timers", "before_waiting", "after_waiting",
                                       "timer_fire_begin", "timer_fire_end", "wakeup", "exit"]
            let missing = wanted.subtracting(seen).sorted()
            let elapsed = started.duration(to: .now)
            let milliseconds = Int(elapsed / .milliseconds(1))
            if missing.isEmpty {
                report.add("round trip", .passed,
                           "\(ours) events of a test loop went through an LTTng session and came back in \(milliseconds) ms; \(reader.health.eventsLost) lost")
            } else {
                report.add("round trip", .failed, "the trace lacks \(missing.joined(separator: ", ")) (\(ours) events came back)",
                           fix: "run lttng list -u while a traced program runs: it should list the runloop:* tracepoints")
            }
        } catch {
            report.add("round trip", .failed, (error as? RecordingError)?.reason ?? "\(error)",
                       fix: "check that the session daemon runs as this user (root's daemon traces root's programs)")
        }
    }

    /// The loaded shared object whose path contains `name`, from /proc/self/maps (read with stdio: the file
    /// reports a size of 0, which Foundation's whole-file readers take literally).
    static func loadedLibrary(containing name: String) -> String? {
        guard let file = fopen("/proc/self/maps", "r") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line).trimmingCharacters(in: .whitespacesAndNewlines)
            if let path = text.split(separator: " ", omittingEmptySubsequences: true).last, path.contains(name) {
                return String(path)
            }
        }
        return nil
    }
}

/// The loop `doctor` traces: created on a new thread (so its loop_create is traced), one timer, stopped by it.
enum ProbeLoop {
    struct IDs: Sendable {
        var loopID: UInt64 = 0
        var timerID: UInt64 = 0

        func owns(_ event: TraceEvent) -> Bool {
            switch event.payload {
            case .activity(_, let place): return place.loopID == loopID
            case .loopCreate(let loop, _, _), .runBegin(let loop, _, _, _), .runEnd(let loop, _, _), .wakeUp(let loop, _, _),
                 .timerFireBegin(let loop, _, _, _, _, _), .timerFireEnd(let loop, _):
                return loop == loopID
            case .itemLabel(let item, _, _): return item == timerID
            default: return false
            }
        }
    }

    static func run() -> IDs {
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var ids = IDs()
        let thread = Foundation.Thread {
            let loop = Loop.current
            let timer = LoopTimer(after: .milliseconds(2), label: "rlctl-doctor") { _ in loop.stop() }
            loop.add(timer, forMode: .default)
            ids = IDs(loopID: loop.id, timerID: timer.id)
            _ = loop.run(mode: .default, timeout: .seconds(5))
            finished.signal()
        }
        thread.start()
        finished.wait()
        return ids
    }
}

/// The checks' results as a table, each failure with its fix.
struct DoctorReport {
    enum Outcome: String { case passed = "ok", failed = "FAIL", warned = "warn", skipped = "skip" }
    private var lines: [String] = []
    private(set) var failures = 0
    private(set) var warnings = 0

    mutating func add(_ name: String, _ outcome: Outcome, _ detail: String, fix: String? = nil) {
        if outcome == .failed { failures += 1 }
        if outcome == .warned { warnings += 1 }
        lines.append("  \(outcome.rawValue.padding(toLength: 5, withPad: " ", startingAt: 0)) \(name.padding(toLength: 16, withPad: " ", startingAt: 0)) \(detail)")
        if let fix { lines.append("        fix: \(fix)") }
    }

    var rendered: String {
        let verdict = failures == 0
            ? "Everything works: rlctl record and rlctl run --tracer lttng can trace with LTTng."
                + (warnings == 0 ? "" : " Read the warning above before recording a program that keeps every CPU busy.")
            : "\(failures) problem\(failures == 1 ? "" : "s"). The embedded recorder (rlctl run's default) works without any of this."
        return (["rlctl doctor: the tracing set-up"] + lines + [verdict]).joined(separator: "\n")
    }
}
