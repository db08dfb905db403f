import CRunLoopLinux
import Glibc

// One loop per thread: a pthread key holds each thread's loop and tears it down when the thread exits.
// The main thread's loop is a process-wide object, never torn down.

/// The main thread's loop; creating any loop creates it first.
let mainLoop = Loop(isMain: true)

private let threadLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let rc = pthread_key_create(&key) { pointer in
        guard let pointer else { return }
        Unmanaged<Loop>.fromOpaque(pointer).takeRetainedValue().threadDidExit()
    }
    precondition(rc == 0, "RunLoopCore: pthread_key_create failed (\(rc)); the process has run out of thread-specific keys")
    return key
}()

func currentThreadLoop() -> Loop {
    if currentThreadIsMain() { return mainLoop }
    if let pointer = pthread_getspecific(threadLoopKey) {
        return Unmanaged<Loop>.fromOpaque(pointer).takeUnretainedValue()
    }
    _ = mainLoop
    let loop = Loop(isMain: false)
    pthread_setspecific(threadLoopKey, Unmanaged.passRetained(loop).toOpaque())
    return loop
}

/// The calling thread's clock: its loop's when it has one (a virtual kernel's in tests), else CLOCK_MONOTONIC
/// (identity nil, as ``Kernel/clockIdentity``). Creates no loop.
func currentThreadClock() -> (identity: ObjectIdentifier?, now: UInt64) {
    if !currentThreadIsMain(), let pointer = pthread_getspecific(threadLoopKey) {
        let loop = Unmanaged<Loop>.fromOpaque(pointer).takeUnretainedValue()
        return (loop.kernel.clockIdentity, loop.now())
    }
    return (nil, monotonicNanoseconds())
}

func currentThreadName() -> String {
    var buffer = [CChar](repeating: 0, count: 32)
    guard crl_thread_name(&buffer, Int32(buffer.count)) == 0 else { return "" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Whether `loop` is the calling (non-main) thread's loop.
func isCurrentThreadLoop(_ loop: Loop) -> Bool {
    pthread_getspecific(threadLoopKey) == Unmanaged.passUnretained(loop).toOpaque()
}

@_spi(VirtualTime)
extension Loop {
    /// Gives the calling thread a loop on `kernel`, for tests that drive time themselves: afterwards
    /// ``current`` is that loop, and it is torn down when the thread exits, like any other.
    /// - Precondition: a secondary thread that has no loop yet; one loop per kernel.
    public static func makeCurrent(on kernel: VirtualKernel) -> Loop {
        requireUsage(!currentThreadIsMain(), "Loop.makeCurrent(on:): the main thread's loop is always a real one; use a new thread")
        requireUsage(pthread_getspecific(threadLoopKey) == nil,
                     "Loop.makeCurrent(on:): this thread already has a loop; call it first thing on a new thread")
        kernel.attachLoop()
        _ = mainLoop
        let loop = Loop(isMain: false, kernel: .virtual(kernel))
        pthread_setspecific(threadLoopKey, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }
}
