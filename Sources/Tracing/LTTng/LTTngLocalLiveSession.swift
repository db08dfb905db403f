import Foundation
import Glibc

/// What `rlctl top` with no relay daemon reads: a relay daemon of its own on free loopback ports (its output in a
/// temporary folder) and a live session streaming to it that traces every process emitting `runloop` events on
/// this machine, with the `vtid` and `vpid` contexts. Programs that start later are traced as they register
/// with the session daemon; programs recorded by other sessions (`rlctl record`) are seen too, since LTTng gives
/// each event to every session that enables it. ``close()`` destroys the session, stops the relay daemon and
/// removes the folder.
public final class LTTngLocalLiveSession: @unchecked Sendable {
    /// The live session; a new one after the relay daemon was restarted.
    public var session: LTTngSession { state.withLock { $0.session } }
    /// Where a live reader connects (`net://127.0.0.1:PORT`); the same after a restart.
    public let liveURL: String
    private let output: String
    private let ports: [Int]
    private let liveTimer: Duration
    private let state: Guarded
    private let closing = NSLock()
    private let keeper = DispatchSemaphore(value: 0)
    private let keeperDone = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - liveTimer: how often the tracer sends what it has to the relay daemon, for the live reader.
    ///   - relayRestarted: called (on a thread of its own) each time the relay daemon, found dead, was
    ///     started again on the same ports with a new session, or could not be; with what to tell the user.
    public init(liveTimer: Duration = .milliseconds(500), relayRestarted: @escaping @Sendable (String) -> Void = { _ in }) throws(LTTngError) {
        try LTTngTools.ensureSessionDaemon()
        let ports = Self.freePorts(3)
        guard ports.count == 3 else { throw LTTngError("no free loopback port for a relay daemon") }
        self.ports = ports
        self.liveTimer = liveTimer
        output = NSTemporaryDirectory() + "\(Self.folderPrefix)\(getpid())-\(ProcessStart.time(of: getpid()) ?? 0)-\(UInt32.random(in: 0...UInt32.max))"
        liveURL = "net://127.0.0.1:\(ports[2])"
        let (relayd, session) = try Self.startRelay(output: output, ports: ports, liveTimer: liveTimer)
        state = Guarded(relayd: relayd, session: session)
        let thread = Thread { [self] in keepRelayAlive(relayRestarted) }
        thread.name = "rlctl-top-relay"
        thread.start()
    }

    deinit { close() }

    /// Safe from any thread: a signal's thread may close it while the owner's does; the second waits until the
    /// first is done, since a signal's thread ends the process when it returns.
    public func close() {
        closing.lock()
        defer { closing.unlock() }
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        keeper.signal()
        keeperDone.wait()
        let (relayd, session) = state.withLock { ($0.relayd, $0.session) }
        session.destroy()
        if let relayd { Self.stop(relayd) }
        try? FileManager.default.removeItem(atPath: output)
    }

    /// A relay daemon that died (killed, out of memory) would leave top showing nothing for good: every second it
    /// is looked at, and a dead one is started again on the same ports (its live readers reconnect by themselves),
    /// with a new session, since the old one streamed to the dead relay.
    private func keepRelayAlive(_ relayRestarted: @Sendable (String) -> Void) {
        defer { keeperDone.signal() }
        while keeper.wait(timeout: .now() + .seconds(1)) == .timedOut {
            let dead = state.withLock { state -> pid_t? in
                guard let relayd = state.relayd, LTTngTools.waitForExit(relayd, within: .zero) != nil else { return nil }
                state.relayd = nil
                return relayd
            }
            guard let dead else { continue }
            let old = session
            old.destroy()
            do {
                let (relayd, session) = try Self.startRelay(output: output, ports: ports, liveTimer: liveTimer)
                let closedMeanwhile = state.withLock { state -> Bool in
                    if !state.closed { (state.relayd, state.session) = (relayd, session) }
                    return state.closed
                }
                if closedMeanwhile {
                    session.destroy()
                    Self.stop(relayd)
                    return
                }
                relayRestarted("the relay daemon rlctl started (pid \(dead)) died: started it again (pid \(relayd)), with session \(session.name)")
            } catch {
                relayRestarted("the relay daemon rlctl started (pid \(dead)) died, and starting it again failed: \(error)")
                return
            }
        }
    }

    /// Starts `lttng-relayd` on `ports` (control, data, live) and a live session streaming to it.
    private static func startRelay(output: String, ports: [Int], liveTimer: Duration) throws(LTTngError) -> (pid_t, LTTngSession) {
        guard let executable = LTTngTools.path(of: "lttng-relayd") else {
            throw LTTngError("`lttng-relayd` not found in PATH: \(LTTngTools.installHint)")
        }
        let relayd = try LTTngTools.spawnDaemon(executable, [
            "--output=\(output)", "--control-port=tcp://127.0.0.1:\(ports[0])", "--data-port=tcp://127.0.0.1:\(ports[1])",
            "--live-port=tcp://127.0.0.1:\(ports[2])",
        ])
        let recordURL = "net://127.0.0.1:\(ports[0]):\(ports[1])"
        do throws(LTTngError) {
            let deadline = ContinuousClock.now + .seconds(10)
            while RelayURL.unreachableReason(recordURL, timeout: .milliseconds(200)) != nil {
                guard ContinuousClock.now < deadline, LTTngTools.waitForExit(relayd, within: .zero) == nil else {
                    throw LTTngError("the relay daemon rlctl started (lttng-relayd on 127.0.0.1:\(ports[0])) did not listen")
                }
                usleep(20_000)
            }
            let session = try LTTngSession.create(name: LTTngSession.uniqueName("top"), relay: recordURL, liveTimer: liveTimer,
                                                  contexts: ["vtid", "vpid"])
            do { try session.start() } catch {
                session.destroy()
                throw error
            }
            return (relayd, session)
        } catch {
            stop(relayd)
            try? FileManager.default.removeItem(atPath: output)
            throw error
        }
    }

    private final class Guarded: @unchecked Sendable {
        struct State {
            var relayd: pid_t?
            var session: LTTngSession
            var closed = false
        }
        private let lock = NSLock()
        private var state: State
        init(relayd: pid_t, session: LTTngSession) { state = State(relayd: relayd, session: session) }
        func withLock<T>(_ body: (inout State) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(&state)
        }
    }

    /// The relay daemon's output folder: `rlctl-top-PID-START-RANDOM` in the temporary folder, after its owner.
    private static let folderPrefix = "rlctl-top-"

    /// A relay daemon whose top is gone, stopped with its folder by ``removeOrphanedRelays()``.
    public struct OrphanedRelay: Sendable, Equatable {
        public let relayd: pid_t
        public let owner: pid_t
        public let folder: String
    }

    /// Stops the relay daemons that an `rlctl top` killed by SIGKILL left running (found by the output folder in
    /// their command line; a reused pid does not count as their top), and removes their folders.
    public static func removeOrphanedRelays() -> [OrphanedRelay] {
        let prefix = "--output=" + NSTemporaryDirectory() + folderPrefix
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var removed: [OrphanedRelay] = []
        for entry in processes {
            guard let pid = pid_t(entry),
                  let line = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")) else { continue }
            let arguments = line.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard arguments.first.map({ $0.hasSuffix("lttng-relayd") }) == true,
                  let output = arguments.first(where: { $0.hasPrefix(prefix) }) else { continue }
            let parts = output.dropFirst(prefix.count).split(separator: "-")
            guard parts.count == 3, let owner = pid_t(parts[0]), let started = UInt64(parts[1]),
                  ProcessStart.time(of: owner) != started else { continue }
            stop(pid)
            let folder = String(output.dropFirst("--output=".count))
            try? FileManager.default.removeItem(atPath: folder)
            removed.append(OrphanedRelay(relayd: pid, owner: owner, folder: folder))
        }
        return removed
    }

    private static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        if LTTngTools.waitForExit(pid, within: .seconds(5)) == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// Loopback ports the kernel says are free now (bound to port 0, then released).
    private static func freePorts(_ count: Int) -> [Int] {
        var sockets: [Int32] = []
        defer { sockets.forEach { Glibc.close($0) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { break }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { break }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }
}
