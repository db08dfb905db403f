import Foundation
import Glibc

/// An `lttng-relayd` of a test's own on three loopback ports nobody else uses (so it never meets the machine's
/// relay, nor another test's), killed when released.
public final class LocalRelayDaemon {
    private var process = Process()
    /// Its output folder.
    public let output: String
    public let controlPort: Int
    /// Where `rlctl record --relayd` (and `lttng create --set-url`) stream to.
    public var recordURL: String { "net://127.0.0.1:\(controlPort):\(controlPort + 1)" }
    /// Where live readers (`rlctl top --relayd`) connect.
    public var liveURL: String { "net://127.0.0.1:\(controlPort + 2)" }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public init() throws {
        output = temporaryPath("relay")
        // Apart by process and by relay within a process, in 10000-25499: below the kernel's ephemeral range
        // (32768-60999), where a relay daemon `rlctl top` starts on ports the kernel picks, or any connection's
        // local port, could hold one of them (a CI run saw a daemon on 43142 exit at once, five times).
        controlPort = 10_000 + Int(getpid() % 500) * 3 + (Self.started.add() % 8) * 2000
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let relayd = path.split(separator: ":").map({ "\($0)/lttng-relayd" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw StartError(description: "lttng-relayd is not installed (lttng-tools)")
        }
        executable = relayd
        try start()
    }

    private let executable: String

    /// Starts it again on the same ports, after ``stop()`` (a relay daemon restarting).
    public func restart() throws {
        stop()
        process = Process()
        try start()
    }

    /// Starts the daemon; one that exits before it listens is started again, up to five times (a port it needs
    /// may be held for a moment, as a restart's was once in a full run: its daemon exited at once).
    private func start() throws {
        for attempt in 1...5 {
            if attempt > 1 {
                process = Process()
                usleep(300_000)
            }
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["--output=\(output)", "--control-port=tcp://127.0.0.1:\(controlPort)",
                                 "--data-port=tcp://127.0.0.1:\(controlPort + 1)", "--live-port=tcp://127.0.0.1:\(controlPort + 2)"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let deadline = ContinuousClock.now + .seconds(10)
            while !(Self.listens(controlPort) && Self.listens(controlPort + 2)) {
                guard process.isRunning else { break }
                guard ContinuousClock.now < deadline else {
                    throw StartError(description: "lttng-relayd did not listen on 127.0.0.1:\(controlPort) within 10 s")
                }
                usleep(20_000)
            }
            if process.isRunning { return }
        }
        throw StartError(description: "lttng-relayd exited at once, five times, on 127.0.0.1:\(controlPort)-\(controlPort + 2) (ports taken?)")
    }

    deinit { stop() }

    /// Kills it (SIGKILL: it inherits the test process's blocked signals, SIGTERM among them); idempotent.
    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public func removeOutput() { try? FileManager.default.removeItem(atPath: output) }

    private static let started = Counter()
    private final class Counter: @unchecked Sendable {
        private var value = 0
        private let lock = NSLock()
        func add() -> Int { lock.lock(); defer { lock.unlock() }; value += 1; return value }
    }

    private static func listens(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
