import Foundation
import Glibc

/// What `rlctl top` with no relay daemon reads: a relay daemon of its own on free loopback ports (its output in a
/// temporary folder) and a live session streaming to it that traces every process emitting `runloop` events on
/// this machine, with the `vtid` and `vpid` contexts. Programs that start later are traced as they register
/// with the session daemon; programs recorded by other sessions (`rlctl record`) are seen too, since LTTng gives
/// each event to every session that enables it. ``close()`` destroys the session, stops the relay daemon and
/// removes the folder.
public final class LTTngLocalLiveSession: @unchecked Sendable {
    public let session: LTTngSession
    /// Where a live reader connects (`net://127.0.0.1:PORT`).
    public let liveURL: String
    private let relayd: pid_t
    private let output: String
    private var closed = false

    public init(liveTimer: Duration = .milliseconds(500)) throws(LTTngError) {
        try LTTngTools.ensureSessionDaemon()
        guard let executable = LTTngTools.path(of: "lttng-relayd") else {
            throw LTTngError("`lttng-relayd` not found in PATH: \(LTTngTools.installHint)")
        }
        let ports = Self.freePorts(3)
        guard ports.count == 3 else { throw LTTngError("no free loopback port for a relay daemon") }
        output = NSTemporaryDirectory() + "rlctl-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        relayd = try LTTngTools.spawnDaemon(executable, [
            "--output=\(output)", "--control-port=tcp://127.0.0.1:\(ports[0])", "--data-port=tcp://127.0.0.1:\(ports[1])",
            "--live-port=tcp://127.0.0.1:\(ports[2])",
        ])
        liveURL = "net://127.0.0.1:\(ports[2])"
        let recordURL = "net://127.0.0.1:\(ports[0]):\(ports[1])"
        do throws(LTTngError) {
            let deadline = ContinuousClock.now + .seconds(10)
            while RelayURL.unreachableReason(recordURL, timeout: .milliseconds(200)) != nil {
                guard ContinuousClock.now < deadline, LTTngTools.waitForExit(relayd, within: .zero) == nil else {
                    throw LTTngError("the relay daemon rlctl started (lttng-relayd on 127.0.0.1:\(ports[0])) did not listen")
                }
                usleep(20_000)
            }
            session = try LTTngSession.create(name: LTTngSession.uniqueName("top"), relay: recordURL, liveTimer: liveTimer,
                                              contexts: ["vtid", "vpid"])
            do { try session.start() } catch {
                session.destroy()
                throw error
            }
        } catch {
            Self.stop(relayd)
            try? FileManager.default.removeItem(atPath: output)
            throw error
        }
    }

    deinit { close() }

    public func close() {
        guard !closed else { return }
        closed = true
        session.destroy()
        Self.stop(relayd)
        try? FileManager.default.removeItem(atPath: output)
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
