import Glibc

/// A pthread mutex and condition (on CLOCK_MONOTONIC), not Synchronization's `Mutex`: its futex lives in the
/// uninstrumented standard library, so ThreadSanitizer could not see it order anything.
final class PThreadLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        mutex.initialize(to: pthread_mutex_t())
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "RunLoopMetrics: pthread_mutex_init failed")
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "RunLoopMetrics: pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Lock held: waits until ``signal()`` or `duration` passes.
    func wait(for duration: Duration) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = duration.components
        var nanoseconds = Int64(now.tv_nsec) + attoseconds / 1_000_000_000
        var deadline = timespec(tv_sec: now.tv_sec + Int(seconds) + Int(nanoseconds / 1_000_000_000), tv_nsec: 0)
        nanoseconds %= 1_000_000_000
        deadline.tv_nsec = Int(nanoseconds)
        _ = pthread_cond_timedwait(condition, mutex, &deadline)
    }

    /// Lock held: wakes the waiter.
    func signal() {
        pthread_cond_signal(condition)
    }
}
