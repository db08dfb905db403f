import CRecorder
import Glibc

/// Turns SIGINT and SIGTERM into a call on an ordinary thread, so a recording can be stopped and its trace
/// completed before the process exits.
public enum TerminationSignals {
    /// Calls `handler` with the signal number on a dedicated thread when SIGINT or SIGTERM arrives. The handler
    /// usually stops the recording and then calls ``exit(reraising:)``.
    public static func watch(_ handler: @escaping @Sendable (Int32) -> Void) throws {
        let fd = rlsig_install()
        guard fd >= 0 else { throw RecorderError("cannot watch SIGINT/SIGTERM: \(String(cString: strerror(-fd)))") }
        let box = HandlerBox(fd: fd, handler: handler)
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<HandlerBox>.fromOpaque(raw!).takeRetainedValue()
            var byte: UInt8 = 0
            while true {
                let n = read(box.fd, &byte, 1)
                if n == 1 { box.handler(Int32(byte)); return nil }
                if n < 0 && errno == EINTR { continue }
                return nil
            }
        }, Unmanaged.passRetained(box).toOpaque())
        guard rc == 0 else { throw RecorderError("cannot start the signal watcher thread (pthread_create: \(rc))") }
        pthread_detach(thread)
    }

    /// Ends the process as the signal would have (exit status 128 + signal number to the shell).
    public static func exit(reraising signal: Int32) -> Never {
        rlsig_reraise(signal)
        Glibc.exit(128 + signal)
    }

    private final class HandlerBox: @unchecked Sendable {
        let fd: Int32
        let handler: @Sendable (Int32) -> Void
        init(fd: Int32, handler: @escaping @Sendable (Int32) -> Void) {
            self.fd = fd
            self.handler = handler
        }
    }
}
