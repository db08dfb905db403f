import Glibc

/// A joinable thread for workload producers.
final class ProducerThread: @unchecked Sendable {
    private var thread = pthread_t()
    private let body: () -> Void

    init(_ body: @escaping () -> Void) {
        self.body = body
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            Unmanaged<ProducerThread>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context)
        precondition(rc == 0, "rlctl: cannot start a producer thread (pthread_create: \(rc))")
    }

    func join() {
        pthread_join(thread, nil)
    }
}
