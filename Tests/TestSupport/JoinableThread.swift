import Glibc

/// A pthread the test can join, so that it waits for the thread's exit and with it the tear-down of the thread's
/// loop (Foundation's Thread cannot be joined).
public final class JoinableThread: @unchecked Sendable {
    /// Dropped once run: it may hold the object that holds this thread.
    private var body: (@Sendable () -> Void)?
    private var thread = pthread_t()

    public init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    public func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            let me = Unmanaged<JoinableThread>.fromOpaque(raw!).takeRetainedValue()
            me.body?()
            me.body = nil
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    private let joining = TestLock()
    private var joined = false

    /// Waits for the thread's exit; again, and from any thread, returns at once (a pthread joined twice is undefined:
    /// it crashed a test whose deferred wait came after its own).
    public func join() {
        joining.lock()
        defer { joining.unlock() }
        guard !joined else { return }
        pthread_join(thread, nil)
        joined = true
    }
}

/// Runs `body` on a new thread (with its own loop, for RunLoopCore) and returns its result once the thread has
/// exited.
public func onThread<T>(_ body: @escaping @Sendable () -> T) -> T {
    let result = Shared<T?>(nil)
    let thread = JoinableThread { result.value = body() }
    thread.start()
    thread.join()
    return result.value!
}

/// Waits until `condition` holds, polling, for at most `timeout`.
@discardableResult
public func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(200)
    }
    return condition()
}

/// Names the calling thread (prctl(PR_SET_NAME), through /proc: Swift does not import the variadic prctl).
public func setCurrentThreadName(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    _ = name.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}
