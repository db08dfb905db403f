import Analysis
import Foundation
import Glibc
import Workloads

/// Set when a signal asks `rlctl top` to end (``Interruptions``), so that it ends like `q`: the terminal, the
/// session and the relay daemon rlctl started are left as they were.
private final class StopRequest: @unchecked Sendable {
    private let lock = NSLock()
    private var requested = false

    var isRequested: Bool { lock.withLock { requested } }
    func request() { lock.withLock { requested = true } }
}

private let topStop = StopRequest()

/// `rlctl top`'s screen: the table redrawn every interval on a terminal (keys read without echo), or printed
/// one table after another when standard input or output is not a terminal.
struct TopScreen {
    let view: any LiveView
    let interval: DurationValue
    var order: LiveLoopOrder
    let relay: String
    /// The loops are this machine's (no --relayd): their programs are named from /proc.
    let local: Bool

    private static let keys: [UInt8: LiveLoopOrder] = [
        UInt8(ascii: "u"): .utilization, UInt8(ascii: "r"): .runqueue, UInt8(ascii: "i"): .iterations, UInt8(ascii: "l"): .latency,
        UInt8(ascii: "s"): .stall, UInt8(ascii: "x"): .lost,
    ]

    init(view: any LiveView, interval: DurationValue, order: LiveLoopOrder, relay: String, local: Bool) {
        self.view = view
        self.interval = interval
        self.order = order
        self.relay = relay
        self.local = local
    }

    /// The view's last interval, each of this machine's loops with its program's name: read once per process
    /// and interval (a process of many loops is one file read, not one per row).
    func takeInterval() -> LiveInterval {
        var interval = view.takeInterval()
        guard local else { return interval }
        var programs: [Int32: String?] = [:]
        for index in interval.rows.indices where interval.rows[index].processID > 0 {
            let pid = interval.rows[index].processID
            if programs[pid] == nil {
                let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
                programs[pid] = .some(comm?.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            interval.rows[index].program = programs[pid] ?? nil
        }
        return interval
    }

    /// Ends the view at its next check, as `q` does; safe from any thread.
    static func stop() { topStop.request() }

    /// Waits `duration`, or less when a signal asked to stop (then false).
    func pause(_ duration: Duration) -> Bool {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline && !topStop.isRequested { usleep(20_000) }
        return !topStop.isRequested
    }

    func run() throws {
        let terminal = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
        var saved = termios()
        if terminal {
            tcgetattr(STDIN_FILENO, &saved)
            var raw = saved
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
            tcsetattr(STDIN_FILENO, TCSANOW, &raw)
            print("\u{1B}[?25l", terminator: "")
        }
        defer {
            if terminal {
                tcsetattr(STDIN_FILENO, TCSANOW, &saved)
                print("\u{1B}[?25h")
            }
        }
        var order = self.order
        var last = ContinuousClock.now
        var shown = LiveInterval(rows: [], sessions: 0, problem: nil, nothingToWatch: "")
        let length = Duration.nanoseconds(interval.nanoseconds)
        func draw() {
            let width = terminalWidth()
            let table = LiveTopTable.text(shown, order: order, relay: relay, interval: "\(interval)", width: width)
            // The legend on the screen only: printed tables (not a terminal) stay one table per interval.
            let legend = LiveTopTable.legend.map { String($0.prefix(width)) }.joined(separator: "\n")
            print(terminal ? "\u{1B}[H\u{1B}[2J" + table + "\n\n" + legend : table + "\n")
            fflush(nil)
        }
        while !topStop.isRequested {
            let deadline = last + length
            while ContinuousClock.now < deadline && !topStop.isRequested {
                guard terminal else {
                    usleep(50_000)
                    continue
                }
                var ready = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 50) == 1 else { continue }
                var key: UInt8 = 0
                guard read(STDIN_FILENO, &key, 1) == 1 else { return }
                if key == UInt8(ascii: "q") { return }
                if let chosen = Self.keys[key] {
                    order = chosen
                    draw()
                }
            }
            last = ContinuousClock.now
            shown = takeInterval()
            draw()
        }
    }

    private func terminalWidth() -> Int {
        var size = winsize()
        return ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 132
    }
}
