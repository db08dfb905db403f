import CProcess
import Foundation
import Glibc

/// Turns SIGINT, SIGTERM and SIGHUP into a call on an ordinary thread, so a recording can be stopped and its trace
/// completed before the process exits.
enum TerminationSignals {
    /// Signals that arrive within this time of the last one passed on are the same request delivered again and
    /// are not passed on: timeout(1) signals its child and then the child's process group, some supervisors do
    /// the same, and a terminal's Ctrl-C reaches every process of the foreground group. A person who presses
    /// Ctrl-C twice to mean it takes longer than this.
    public static let repeatWindow: Duration = .milliseconds(300)

    /// Calls `handler` with the signal number on a dedicated thread each time SIGINT, SIGTERM or SIGHUP arrives (repeats
    /// within ``repeatWindow`` excepted). The handler usually stops the recording and then calls
    /// ``exit(reraising:)``. A later `watch` replaces the handler: one watcher thread serves the process, so every
    /// signal reaches the newest handler.
    public static func watch(_ handler: @escaping @Sendable (Int32) -> Void) throws {
        watcher.lock.lock()
        defer { watcher.lock.unlock() }
        watcher.handler = handler
        guard !watcher.started else { return }
        let fd = rlsig_install()
        guard fd >= 0 else { throw Failure.input("cannot watch SIGINT/SIGTERM/SIGHUP: \(String(cString: strerror(-fd)))") }
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            TerminationSignals.serve(fd: Int32(Int(bitPattern: raw)))
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(fd)))
        guard rc == 0 else { throw Failure.input("cannot start the signal watcher thread (pthread_create: \(rc))") }
        pthread_detach(thread)
        watcher.started = true
    }

    /// The watcher thread: each signal record goes to the handler installed at that moment.
    private static func serve(fd: Int32) {
        let window = UInt64(repeatWindow.components.seconds) * 1_000_000_000
            + UInt64(repeatWindow.components.attoseconds / 1_000_000_000)
        var lastPassedOn: UInt64?
        var record = [UInt8](repeating: 0, count: Int(RLSIG_RECORD_SIZE))
        while true {
            var got = 0
            while got < record.count {
                let n = record.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                got += n
            }
            let signo = Int32(record[0])
            let arrived = record.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 1, as: UInt64.self) }
            if let last = lastPassedOn, arrived >= last, arrived - last < window { continue }
            lastPassedOn = arrived
            watcher.lock.lock()
            let handler = watcher.handler
            watcher.lock.unlock()
            handler?(signo)
        }
    }

    /// Ends the process as the signal would have (exit status 128 + signal number to the shell), once what rlctl
    /// made is undone (``ExitCleanups``).
    public static func exit(reraising signal: Int32) -> Never {
        ExitCleanups.shared.runAll()
        rlsig_reraise(signal)
        Glibc.exit(128 + signal)
    }

    private final class Watcher: @unchecked Sendable {
        let lock = NSLock()
        var handler: (@Sendable (Int32) -> Void)?
        var started = false
    }

    private static let watcher = Watcher()
}
