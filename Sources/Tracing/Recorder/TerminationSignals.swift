import CRecorder
import Foundation
import Glibc

/// Turns SIGINT and SIGTERM into a call on an ordinary thread, so a recording can be stopped and its trace
/// completed before the process exits.
public enum TerminationSignals {
    /// Calls `handler` with the signal number on a dedicated thread each time SIGINT or SIGTERM arrives. The
    /// handler usually stops the recording and then calls ``exit(reraising:)``. A later `watch` replaces the
    /// handler: one watcher thread serves the process, so every signal reaches the newest handler.
    public static func watch(_ handler: @escaping @Sendable (Int32) -> Void) throws {
        watcher.lock.lock()
        defer { watcher.lock.unlock() }
        watcher.handler = handler
        guard !watcher.started else { return }
        let fd = rlsig_install()
        guard fd >= 0 else { throw RecorderError("cannot watch SIGINT/SIGTERM: \(String(cString: strerror(-fd)))") }
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            TerminationSignals.serve(fd: Int32(Int(bitPattern: raw)))
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(fd)))
        guard rc == 0 else { throw RecorderError("cannot start the signal watcher thread (pthread_create: \(rc))") }
        pthread_detach(thread)
        watcher.started = true
    }

    /// The watcher thread: each signal byte goes to the handler installed at that moment.
    private static func serve(fd: Int32) {
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return }
            watcher.lock.lock()
            let handler = watcher.handler
            watcher.lock.unlock()
            handler?(Int32(byte))
        }
    }

    /// Ends the process as the signal would have (exit status 128 + signal number to the shell).
    public static func exit(reraising signal: Int32) -> Never {
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
