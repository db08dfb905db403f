import Analysis
import ArgumentParser
import Foundation
import Glibc
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
        One row per loop: host, process, thread, loop, kind (RunLoopCore, Foundation, NIO, or a wait loop of any \
        program), and over the last interval its utilization, iterations per second, worst wake-up latency p99 \
        (timer, source, block, port or job; none for the other kinds), its busiest iteration over --stall, and the \
        events the tracer lost. A view starts when it attaches: loops created before it show by id, without name.

        With no --relayd, rlctl top shows every traced loop on this machine. Programs whose loops emit to LTTng \
        (the LTTng sink, or rlctl record with LTTng): it starts a relay daemon of its own on free loopback ports \
        and a live session of every process's runloop events (with the vtid and vpid contexts), and removes both \
        when it ends, by q, SIGINT, SIGTERM or SIGHUP alike (exit status 0; a second signal ends it at once and \
        still removes them; a session daemon top had to start is stopped too). Should its relay daemon die, top \
        starts it again on the same ports, with a new session, and says so on stderr. A top killed by SIGKILL \
        leaves them: the next LTTng-using rlctl (or rlctl doctor) stops that relay daemon, destroys the session \
        and removes the folder. Where LTTng cannot be used it says so once and shows the rest. And programs \
        recording with the embedded recorder (rlctl record or run with the embedded recorder, \
        RLCTL_TRACER=embedded): each registers its trace folder while it records (in $RLCTL_LIVE_DIR, else \
        $XDG_RUNTIME_DIR/rlctl-live, else /tmp/rlctl-live-UID), and rlctl top reads the packets as the recorder writes them, every 200 ms (a thread's \
        packet reaches the disk within about 100 ms of its events while the thread is busy). A program that starts \
        later appears, one that ends drops out.

        --relayd net://HOST[:LIVE_PORT] follows every live session of that relay daemon instead: programs on any \
        number of hosts recorded with rlctl record --relayd. The port is the relay's live port (lttng-relayd \
        --live-port, 5344 by default), not the one record --relayd streams to. Sessions are listed again every \
        2 s; a relay daemon that stops answering is said on the status line until it is back.

        Keys: q quits; u, i, l, s and x sort by utilization, iterations, latency, stall and lost. Without a \
        terminal rlctl prints one table per interval; --once prints one interval and exits, --format json as one \
        JSON document.

        Not shown: the flight recorder (--flight-recorder, --snapshot-on-stall), which writes nothing while it \
        runs, and record --any's embedded recordings, whose interposer writes its streams itself.

        Examples:
          rlctl top
          rlctl top --relayd net://collector
          rlctl top --relayd net://127.0.0.1:5344 --once --format json
        """
    )

    @Option(help: "A relay daemon's live URL, net://HOST[:LIVE_PORT] (default: this machine's loops, through a relay of rlctl's own).")
    var relayd: String?

    @Option(help: "How often the view refreshes, e.g. 1s (100ms to 60s).", transform: durationArgument)
    var interval: DurationValue = .seconds(1)

    @Option(help: "Sort by utilization, iterations, latency, stall or lost.")
    var sort: LiveLoopOrder = .utilization

    @Flag(help: "Print one interval and exit.")
    var once = false

    @Option(help: "text or json (json with --once).")
    var format: TopFormat = .text

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
    }

    func run() throws {
        Interruptions.shared.prepare("the view")
        let stall = UInt64(analysis.stall.nanoseconds)
        var local: LTTngLocalLiveSession?
        var localCleanup: ExitCleanups.Token?
        let view: any LiveView
        let relay = relayd.map { LiveRelayView(relay: $0, stallThresholdNanoseconds: stall) }
        if let relay {
            view = relay
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
            view = LiveViews(views)
        }
        defer {
            local?.close()
            localCleanup.map(ExitCleanups.shared.remove)
        }
        let shownAs = relayd ?? "this machine"
        defer { view.stop() }
        let screen = TopScreen(view: view, interval: interval, order: sort, relay: shownAs)
        guard Interruptions.shared.startViewing(stop: { TopScreen.stop() }) else { return }
        // The first listing and attachment, before the view's first interval begins.
        view.refresh()
        view.waitUntilAttached(timeout: .seconds(10))
        guard screen.pause(.milliseconds(300)) else { return }
        _ = view.takeInterval()
        if once {
            guard screen.pause(.nanoseconds(interval.nanoseconds)) else { return }
            let shown = view.takeInterval()
            if let problem = relay?.problem { throw Failure.input("cannot read the relay daemon at \(shownAs): \(problem)") }
            print(format == .json ? try LiveTopTable.json(shown, order: sort) : LiveTopTable.text(shown, order: sort, relay: shownAs, interval: "\(interval)"))
            return
        }
        try screen.run()
    }
}
