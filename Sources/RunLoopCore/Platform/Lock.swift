import Glibc

/// A mutex with a condition variable on CLOCK_MONOTONIC.
///
/// RunLoopCore keeps one per loop (guarding the mode tables, the block queue and the run stack)
/// and one per port (guarding its message queue). Callouts never run while one is held. Package-visible: the
/// package's other libraries (RunLoopMetrics) use it where ThreadSanitizer must see the lock.
///
/// The mutex and the condition live in one allocation with its header, so reaching the mutex costs one
/// pointer load: a cross-thread wake-up takes two locks that the other thread's cache holds, and each extra
/// dependent load there was a cache miss in the wake-up's latency.
package struct ConditionLock: @unchecked Sendable {
    private final class Storage: ManagedBuffer<Void, PThreadPair> {
        deinit {
            withUnsafeMutablePointerToElements { pair in
                pthread_cond_destroy(&pair.pointee.condition)
                pthread_mutex_destroy(&pair.pointee.mutex)
            }
        }
    }

    private let storage: Storage

    package init() {
        storage = unsafeDowncast(Storage.create(minimumCapacity: 1) { _ in }, to: Storage.self)
        storage.withUnsafeMutablePointerToElements { pair in
            pair.initialize(to: PThreadPair())
            PThreadMutex.initialize(UnsafeMutableRawPointer(pair).assumingMemoryBound(to: pthread_mutex_t.self))
            var conditionAttributes = pthread_condattr_t()
            pthread_condattr_init(&conditionAttributes)
            pthread_condattr_setclock(&conditionAttributes, CLOCK_MONOTONIC)
            precondition(pthread_cond_init(&pair.pointee.condition, &conditionAttributes) == 0,
                         "BUG IN RunLoopCore (please report): pthread_cond_init failed")
            pthread_condattr_destroy(&conditionAttributes)
        }
    }

    @inline(__always)
    private var mutex: UnsafeMutablePointer<pthread_mutex_t> {
        storage.withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0).assumingMemoryBound(to: pthread_mutex_t.self) }
    }

    @inline(__always)
    package func lock() {
        PThreadMutex.lock(mutex)
    }

    @inline(__always)
    package func unlock() {
        PThreadMutex.unlock(mutex)
    }

    @inline(__always)
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits on the condition (lock held) until signalled or until `deadline` (monotonic ns; nil: forever).
    /// Returns false when the deadline passed.
    package func wait(until deadline: UInt64?) -> Bool {
        storage.withUnsafeMutablePointerToElements { pair in
            guard let deadline else {
                pthread_cond_wait(&pair.pointee.condition, &pair.pointee.mutex)
                return true
            }
            var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            return pthread_cond_timedwait(&pair.pointee.condition, &pair.pointee.mutex, &spec) != ETIMEDOUT
        }
    }

    package func broadcast() {
        storage.withUnsafeMutablePointerToElements { pair in
            _ = pthread_cond_broadcast(&pair.pointee.condition)
        }
    }
}

/// The mutex first, so a pointer to the pair is a pointer to the mutex.
struct PThreadPair {
    var mutex = pthread_mutex_t()
    var condition = pthread_cond_t()
}

/// A pthread mutex in memory its owner keeps in place (a mutex must not move): ``ConditionLock``'s, and the block
/// queue's, which shares a cache line with the queue's counts.
enum PThreadMutex {
    /// `spinsBeforeSleeping`: glibc's adaptive mutex, which spins a little before it sleeps in the kernel, for a
    /// lock held for a few hundred nanoseconds by threads on different CPUs (the block queue's): a producer that
    /// finds it taken would otherwise sleep and be woken, two system calls and a context switch per collision.
    static func initialize(_ mutex: UnsafeMutablePointer<pthread_mutex_t>, spinsBeforeSleeping: Bool = false) {
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        var type = spinsBeforeSleeping ? Int32(PTHREAD_MUTEX_ADAPTIVE_NP) : Int32(PTHREAD_MUTEX_DEFAULT)
        // Error checking in debug builds turns a re-entrant lock (our bug) into a crash, not a hang.
        assert({ type = Int32(PTHREAD_MUTEX_ERRORCHECK); return true }())
        precondition(pthread_mutexattr_settype(&attributes, type) == 0 && pthread_mutex_init(mutex, &attributes) == 0,
                     "BUG IN RunLoopCore (please report): pthread_mutex_init failed")
        pthread_mutexattr_destroy(&attributes)
    }

    @inline(__always)
    static func lock(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
        let rc = pthread_mutex_lock(mutex)
        assert(rc == 0, "BUG IN RunLoopCore (please report): pthread_mutex_lock returned \(rc)")
    }

    @inline(__always)
    static func unlock(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
        let rc = pthread_mutex_unlock(mutex)
        assert(rc == 0, "BUG IN RunLoopCore (please report): pthread_mutex_unlock returned \(rc)")
    }
}

/// 64 bytes of nothing: stored between fields that different threads write, so that they never share a cache line.
struct CacheLinePad {
    private let words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
}
