import Analysis
import ArgumentParser
import Exporter
import Foundation
import Glibc
import KernelTracing
import Tracing
import Workloads

extension LiveLoopOrder: ExpressibleByArgument {}

enum TopFormat: String, ExpressibleByArgument, CaseIterable {
    case text, json
}

struct Top: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A live view of every traced loop, on this machine or streaming to an LTTng relay daemon.",
        discussion: """
        One row per loop: host, process, program (its command name, for this machine's processes), thread, loop, \
        kind (RunLoopCore, Foundation, NIO, or a wait loop of any program), and over the last interval its utilization, its run queue (the share of the interval the loop's \
        thread was runnable but not running: waiting for a CPU behind other tasks, or throttled) and of that the \
        throttled share (its cgroup out of CPU quota), iterations per second, worst wake-up latency p99 (timer, \
        source, block, port or job; a wait loop's waits past their timeouts; none for NIO and Foundation loops), the late \
        wake-ups' time the kernel view explained and its largest cause (late: "12.0ms throttled"), its busiest iteration over --stall, and the events \
        the tracer lost. A view starts when it attaches: loops created before it show by id, without name. The \
        status line counts the sessions followed: each embedded recording's folder and each LTTng live session is \
        one. On a screen narrower than the table the least important columns are left out first (the host, the \
        throttled share, the thread, the kind, …); the loop, its program and its utilization stay. The screen \
        says what each column means under the table.

        The run-queue and throttled columns come from the kernel view (docs/kernel-view.md): with --kernel auto, \
        the default, top loads the kernel recorder's BPF program when this machine allows it (root, or CAP_BPF and \
        CAP_PERFMON; BTF; libbpf) and follows the process of every loop it shows, whatever recorded the loop \
        (embedded recorder or LTTng; a loop's process is followed from the interval after it first shows, so its \
        first interval has no figure). With --kernel on a machine that cannot is an error before the view starts; \
        with --kernel off, or where it cannot, or with --relayd (the loops of other machines), the columns show - \
        and the status line says once why (in JSON: null on every row, kernel.unavailableReason once). A program \
        being recorded with its own kernel view (rlctl run --kernel on) can be watched: each loads its own. The \
        kernel recorder's lost records are shown beside the tracer's in the lost column ("12 +3 kernel") and on \
        the status line: the shares of such an interval are lower bounds. What top loaded is removed when it ends \
        however it ends (q, a signal, SIGKILL: the programs belong to its file descriptors). The kernel figures \
        cover the interval moved back 60 ms, as the kernel recorder hands its records out a few ms late; a followed \
        process's loop figures wait for them too, so that its late wake-ups are split by cause.

        With no --relayd, rlctl top shows every traced loop on this machine. Programs whose loops emit to LTTng \
        (the LTTng sink, or rlctl record with LTTng): it starts a relay daemon of its own on free loopback ports \
        and a live session of every process's runloop events (with the vtid and vpid contexts), and removes both \
        when it ends, by q, SIGINT, SIGTERM or SIGHUP alike (exit status 0; a second signal ends it at once and \
        still removes them; a session daemon top had to start is stopped too). Should its relay daemon die, top \
        starts it again on the same ports, with a new session, and says so on stderr. A top killed by SIGKILL \
        leaves them: the next LTTng-using rlctl (or rlctl doctor) stops that relay daemon, destroys the session \
        and removes the folder. Where LTTng cannot be used it says so once and shows the rest. And programs \
        recording with the embedded recorder (rlctl record or run with the embedded recorder, \
        RLCTL_TRACER=embedded, and rlctl record --any's programs, whose wait loops show by their own process): each registers its trace folder while it records (in $RLCTL_LIVE_DIR, else \
        $XDG_RUNTIME_DIR/rlctl-live, else /tmp/rlctl-live-UID), and rlctl top reads the packets as the recorder writes them, every 200 ms (a thread's \
        packet reaches the disk within about 100 ms of its events while the thread is busy). A program that starts \
        later appears, one that ends drops out.

        --relayd net://HOST[:LIVE_PORT] follows every live session of that relay daemon instead: programs on any \
        number of hosts recorded with rlctl record --relayd. The port is the relay's live port (lttng-relayd \
        --live-port, 5344 by default), not the one record --relayd streams to. Sessions are listed again every \
        2 s; a relay daemon that stops answering is said on the status line until it is back.

        Keys: q quits; u, r, i, l, s and x sort by utilization, run queue, iterations, latency, stall and lost. \
        Without a \
        terminal rlctl prints one table per interval; --once prints one interval and exits, --format json as one \
        JSON document.

        Not shown: the flight recorder (--flight-recorder, --snapshot-on-stall), which writes nothing while it \
        runs.

        --serve HOST:PORT serves every loop to Prometheus at http://HOST:PORT/metrics instead of drawing the \
        table (docs/metrics.md): per loop, labelled by host, pid, program, runloop_thread, runloop_id, \
        runloop_name and runloop_kind, the counters runloop_iterations, runloop_time (runloop_state active or \
        idle, seconds), runloop_stalls (over --stall), and with the kernel view runloop_runqueue_time, \
        runloop_throttled_time and runloop_late_time (seconds late of the late wake-ups, by cause: slack, \
        wake_path, run_queue, throttled, blocked, loop_work); the gauges runloop_utilization and, for RunLoopCore and wait loops, \
        runloop_wakeup_delay_p99 (seconds; NaN for an interval with no wake-up) over the last interval; and \
        rlctl_events_lost (per session), rlctl_kernel_records_lost, rlctl_loops, rlctl_loops_not_exported, \
        rlctl_sessions and rlctl_kernel_view. The counters start when top first sees the loop (an embedded \
        recording that begins while top runs is read from its start). A loop's series end 15 s after its process is gone (time for a scrape to read its last figures), or after 5 minutes \
        unseen; past --serve-loops loops the others are only \
        counted. The address must be loopback (127.0.0.1, [::1], localhost) unless --serve-public; port 0 takes \
        a free one, and stderr says which. It serves until SIGINT or SIGTERM.

        Examples:
          rlctl top
          rlctl top --relayd net://collector
          rlctl top --relayd net://127.0.0.1:5344 --once --format json
          rlctl top --kernel on --sort runqueue
          rlctl top --serve 127.0.0.1:9464
        """
    )

    @Option(help: "A relay daemon's live URL, net://HOST[:LIVE_PORT] (default: this machine's loops, through a relay of rlctl's own).")
    var relayd: String?

    @Option(help: "How often the view refreshes, e.g. 1s (100ms to 60s).", transform: durationArgument)
    var interval: DurationValue = .seconds(1)

    @Option(help: "Sort by utilization, runqueue, iterations, latency, stall or lost.")
    var sort: LiveLoopOrder = .utilization

    @Flag(help: "Print one interval and exit.")
    var once = false

    @Option(help: "text or json (json with --once).")
    var format: TopFormat = .text

    @Option(help: "The run-queue and throttled columns, from the kernel view (BPF on the scheduler's tracepoints): auto (on when this machine allows it; otherwise the status line says why not), on (an error when it cannot be), or off.")
    var kernel: KernelChoice = .auto

    @Option(help: ArgumentHelp("Serve every loop's figures to Prometheus at http://HOST:PORT/metrics instead of drawing the table, e.g. 127.0.0.1:9464 (port 0: any free port). Loopback only unless --serve-public.", valueName: "host:port"))
    var serve: String?

    @Flag(help: "With --serve: allow an address that is not loopback (other machines can then read this machine's loops).")
    var servePublic = false

    @Option(help: "With --serve: the most loops exported at once (others are counted in rlctl_loops_not_exported).")
    var serveLoops: Int = 1000

    @OptionGroup var analysis: AnalysisOptions

    func validate() throws {
        if let relayd {
            guard relayd.hasPrefix("net://") || relayd.hasPrefix("net4://") || relayd.hasPrefix("net6://"),
                  relayd.split(separator: "/").count == 2 else {
                throw ValidationError("--relayd takes a relay daemon's live URL, net://HOST[:LIVE_PORT] (got \"\(relayd)\")")
            }
        }
        guard interval.nanoseconds >= 100_000_000 && interval.nanoseconds <= 60_000_000_000 else {
            throw ValidationError("--interval must be between 100ms and 60s (got \(interval))")
        }
        if format == .json && !once { throw ValidationError("--format json prints one interval: give --once") }
        if serve != nil && (once || format == .json) {
            throw ValidationError("--serve serves until it is stopped: leave out --once and --format json")
        }
        if serve == nil && (servePublic || serveLoops != 1000) {
            throw ValidationError("--serve-public and --serve-loops go with --serve")
        }
        guard serveLoops >= 1 && serveLoops <= 100_000 else {
            throw ValidationError("--serve-loops must be between 1 and 100000 (got \(serveLoops))")
        }
        if kernel == .on && relayd != nil {
            throw ValidationError("--kernel on: the kernel view sees this machine's threads, not a relay daemon's loops (leave out --relayd)")
        }
    }

    /// The loops with the run-queue column: top's own kernel recorder following their processes, or why not. The
    /// recorder is stopped by `stop` and, should top be ended by a second signal, by the exit clean-ups; what it
    /// loaded belongs to top's descriptors, so even SIGKILL leaves nothing loaded.
    /// `unavailable`: why this machine cannot take the kernel view (``KernelChoice/requireAvailable()``, asked
    /// before anything is set up, so that `--kernel on` fails alone).
    private func withKernelColumn(_ loops: any LiveView, unavailable: String?) throws -> (view: any LiveView, stop: () -> Void) {
        if relayd != nil {
            return (LiveKernelColumn(loops: loops, notAvailable: "the loops are on a relay daemon; the kernel view sees this machine's threads only"), {})
        }
        if kernel == .off { return (LiveKernelColumn(loops: loops, notAvailable: "--kernel off"), {}) }
        if let unavailable { return (LiveKernelColumn(loops: loops, notAvailable: unavailable), {}) }
        let column = LockedColumn()
        let recorder: KernelRecorder
        do {
            recorder = try KernelRecorder { events in column.value?.consume(events) }
        } catch {
            // Available a moment ago, refused now (memory, a limit on BPF programs): with auto top goes on without it.
            if kernel == .on { throw Failure.input("--kernel on: cannot start the kernel view: \(error)") }
            return (LiveKernelColumn(loops: loops, notAvailable: "\(error)"), {})
        }
        let view = LiveKernelColumn(loops: loops) { process in
            // A process that ended since its row was taken is simply not followed.
            (try? recorder.follow(process: process)) != nil
        }
        column.value = view
        let cleanup = ExitCleanups.shared.add { _ = recorder.stop() }
        return (view, {
            recorder.stop()
            ExitCleanups.shared.remove(cleanup)
        })
    }

    /// The column the kernel recorder's consumer thread feeds, set once the column exists.
    private final class LockedColumn: @unchecked Sendable {
        private let lock = NSLock()
        private var column: LiveKernelColumn?
        var value: LiveKernelColumn? {
            get { lock.withLock { column } }
            set { lock.withLock { column = newValue } }
        }
    }

    func run() throws {
        let kernelUnavailable = relayd == nil ? try kernel.requireAvailable() : nil
        // Bound before anything is started: a port in use fails alone.
        let series = LoopSeries(loopLimit: serveLoops)
        var server: ScrapeServer?
        if let serve {
            do { server = try ScrapeServer(serving: serve, allowRemote: servePublic) { series.exposition() } } catch {
                throw Failure.input(error.description)
            }
        }
        defer { server?.stop() }
        Interruptions.shared.prepare("the view")
        let stall = UInt64(analysis.stall.nanoseconds)
        var local: LTTngLocalLiveSession?
        var localCleanup: ExitCleanups.Token?
        let loops: any LiveView
        let relay = relayd.map { LiveRelayView(relay: $0, stallThresholdNanoseconds: stall) }
        if let relay {
            loops = relay
        } else {
            var views: [any LiveView] = [LiveEmbeddedView(stallThresholdNanoseconds: stall)]
            do {
                try LTTngRecording.requireUsable("LTTng")
                try LTTngRecording.ensureSessionDaemon()
                let made = try LTTngLocalLiveSession(relayRestarted: { note($0) })
                local = made
                localCleanup = ExitCleanups.shared.add { made.close() }
                views.append(LiveRelayView(relay: local!.liveURL, stallThresholdNanoseconds: stall))
            } catch let failure as Failure {
                note("showing the embedded recorder's recordings only: \(failure.message)")
            } catch {
                note("showing the embedded recorder's recordings only: cannot watch this machine's LTTng sessions: \(error)")
            }
            loops = LiveViews(views)
        }
        defer {
            local?.close()
            localCleanup.map(ExitCleanups.shared.remove)
        }
        // (After the clean-up above: a kernel view that --kernel on asks for and that fails to start here still
        // leaves no session behind.)
        let (view, stopKernelView) = try withKernelColumn(loops, unavailable: kernelUnavailable)
        defer { stopKernelView() }
        let shownAs = relayd ?? "this machine"
        defer { view.stop() }
        let screen = TopScreen(view: view, interval: interval, order: sort, relay: shownAs, local: relayd == nil)
        guard Interruptions.shared.startViewing(stop: { TopScreen.stop() }) else { return }
        // The first listing and attachment, before the view's first interval begins.
        view.refresh()
        view.waitUntilAttached(timeout: .seconds(10))
        guard screen.pause(.milliseconds(300)) else { return }
        _ = view.takeInterval()
        if once {
            guard screen.pause(.nanoseconds(interval.nanoseconds)) else { return }
            let shown = screen.takeInterval()
            if let problem = relay?.problem { throw Failure.input("cannot read the relay daemon at \(shownAs): \(problem)") }
            print(format == .json ? try LiveTopTable.json(shown, order: sort) : LiveTopTable.text(shown, order: sort, relay: shownAs, interval: "\(interval)"))
            return
        }
        if let server {
            try export(screen, into: series, server: server)
        } else {
            try screen.run()
        }
    }

    /// `--serve`: every interval's rows into the series, served until a signal ends top.
    private func export(_ screen: TopScreen, into series: LoopSeries, server: ScrapeServer) throws {
        let first = screen.takeInterval()
        series.update(with: first)
        server.start()
        var said = first.problem
        note("serving the loops' metrics at http://\(server.address)/metrics (every \(interval)); ends with SIGINT or SIGTERM")
        if case .notAvailable(let why) = first.kernel { note("no run-queue or throttled time: \(why)") }
        while screen.pause(.nanoseconds(interval.nanoseconds)) {
            let interval = screen.takeInterval()
            series.update(with: interval)
            // A problem is said when it begins or changes, not every interval.
            if interval.problem != said, let problem = interval.problem { note(problem) }
            said = interval.problem
        }
    }
}
