import Foundation
import Glibc
import Synchronization

/// A one-line progress display on a terminal (stderr), for runs longer than a second; silent otherwise.
final class ProgressLine: @unchecked Sendable {
    private let running = Atomic<Bool>(true)
    private var thread = pthread_t()
    private let render: () -> String
    private let active: Bool

    init(total: Duration, enabled: Bool, render: @escaping () -> String) {
        self.render = render
        active = enabled && isatty(STDERR_FILENO) == 1 && total > .seconds(1)
        guard active else { return }
        pthread_create(&thread, nil, { raw in
            let me = Unmanaged<ProgressLine>.fromOpaque(raw!).takeUnretainedValue()
            while me.running.load(ordering: .acquiring) {
                FileHandle.standardError.write(Data("\r\u{1B}[K\(me.render())".utf8))
                usleep(250_000)
            }
            return nil
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    func finish() {
        guard active else { return }
        running.store(false, ordering: .releasing)
        pthread_join(thread, nil)
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
