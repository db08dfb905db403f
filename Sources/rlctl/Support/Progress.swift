import Analysis
import Foundation
import Glibc
import Synchronization

/// A one-line progress display on a terminal (stderr), for runs longer than a second; silent otherwise.
final class ProgressLine: @unchecked Sendable {
    private let running = Atomic<Bool>(true)
    private var thread = pthread_t()
    private let render: (_ elapsedOfTotal: String) -> String
    private let total: Duration
    private let start = ContinuousClock.now
    private let active: Bool

    /// `render` gets the time so far as "1.26s of 1.50s" and returns the whole line.
    init(total: Duration, enabled: Bool, render: @escaping (_ elapsedOfTotal: String) -> String) {
        self.render = render
        self.total = total
        active = enabled && isatty(STDERR_FILENO) == 1 && total > .seconds(1)
        guard active else { return }
        pthread_create(&thread, nil, { raw in
            let me = Unmanaged<ProgressLine>.fromOpaque(raw!).takeUnretainedValue()
            while me.running.load(ordering: .acquiring) {
                FileHandle.standardError.write(Data("\r\u{1B}[K\(me.render(me.elapsedOfTotal))".utf8))
                usleep(250_000)
            }
            return nil
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    private var elapsedOfTotal: String {
        "\(formatNanoseconds(UInt64((ContinuousClock.now - start).nanosecondsClamped))) of \(formatNanoseconds(UInt64(total.nanosecondsClamped)))"
    }

    func finish() {
        guard active else { return }
        running.store(false, ordering: .releasing)
        pthread_join(thread, nil)
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}

extension Duration {
    /// Whole nanoseconds, 0 for a negative duration.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        return max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
