import CRunLoopLinux
import Glibc

// The platform contract, on one screen: what a loop needs from the kernel and the clock.
//
// Two backends implement it. `EpollKernel` (EpollKernel.swift, the only file that knows epoll, eventfd or
// timerfd) is what every loop uses. `VirtualKernel` (VirtualKernel.swift) is a fake for tests: its clock moves
// only when a test advances it or when a loop would otherwise sleep, so timer rules are checked exactly.
//
// A loop reaches its backend through `Kernel`, an enum switched on at each call, not through `any LoopKernel`:
// the real path then costs one predictable branch and no dynamic dispatch, and `Loop` stays a non-generic public
// type.

/// What a loop asks of the kernel. Every deadline and `nowNanoseconds()` is in nanoseconds on the backend's clock
/// (CLOCK_MONOTONIC for the real one); a deadline of 0 means "disarmed".
protocol LoopKernel: AnyObject {
    /// The current time on the clock timers and run timeouts are scheduled on.
    func nowNanoseconds() -> UInt64
    /// Makes a wait return with ``SelectorToken/wakeUp`` (now or at the next wait). Safe from any thread.
    func wakeUp()
    /// Consumes pending wake-ups, so the next wait blocks again.
    func consumeWakeUp()
    /// Sets the one deadline a wait returns at with ``SelectorToken/timer`` (loop lock held); 0 disarms.
    func arm(deadline: UInt64)
    /// Consumes the timer's expiry (loop lock held): the timer is then disarmed until the next `arm`, whatever
    /// its deadline.
    func consumeTimerExpiry()
    /// A new wait set (one per mode) that always watches the wake-up and the timer.
    func makeWaitSet() -> WaitSet
    /// Starts watching a descriptor the caller owns in `set`; an error names the caller's mistake.
    func watch(_ fd: Int32, for interest: Readiness, token: UInt64, in set: WaitSet) -> KernelError?
    /// Stops watching a descriptor in `set`.
    func unwatch(_ fd: Int32, in set: WaitSet)
    /// What a descriptor reports now, without waiting (errors and hang-ups whatever the interest; nothing for a
    /// closed descriptor): a wait's report may be stale after a nested run.
    func currentReadiness(of fd: Int32, for interest: Readiness) -> Readiness
    /// Returns what is ready in `set`; blocks until something is unless `poll`.
    func wait(_ set: WaitSet, poll: Bool) -> ReadyEvents
    func close(_ set: WaitSet)
    /// Releases the wake-up and timer (the loop's thread is exiting).
    func close()
}

/// A loop's backend, chosen once when the loop is created.
enum Kernel {
    case epoll(EpollKernel)
    case virtual(VirtualKernel)

    var backend: any LoopKernel {
        switch self {
        case .epoll(let kernel): return kernel
        case .virtual(let kernel): return kernel
        }
    }

    /// Which clock the backend's dates are on: nil for CLOCK_MONOTONIC, else the virtual kernel's identity.
    var clockIdentity: ObjectIdentifier? {
        switch self {
        case .epoll: return nil
        case .virtual(let kernel): return ObjectIdentifier(kernel)
        }
    }

    // The calls an iteration makes, each a switch so the epoll case is a direct (inlinable) call. The rare ones
    // (wait sets, watch, close) go through `backend`.

    @inline(__always)
    func now() -> UInt64 {
        switch self {
        case .epoll: return monotonicNanoseconds()
        case .virtual(let kernel): return kernel.nowNanoseconds()
        }
    }

    @inline(__always)
    func wakeUp() {
        switch self {
        case .epoll(let kernel): kernel.wakeUp()
        case .virtual(let kernel): kernel.wakeUp()
        }
    }

    @inline(__always)
    func consumeWakeUp() {
        switch self {
        case .epoll(let kernel): kernel.consumeWakeUp()
        case .virtual(let kernel): kernel.consumeWakeUp()
        }
    }

    @inline(__always)
    func arm(deadline: UInt64) {
        switch self {
        case .epoll(let kernel): kernel.arm(deadline: deadline)
        case .virtual(let kernel): kernel.arm(deadline: deadline)
        }
    }

    @inline(__always)
    func consumeTimerExpiry() {
        switch self {
        case .epoll(let kernel): kernel.consumeTimerExpiry()
        case .virtual(let kernel): kernel.consumeTimerExpiry()
        }
    }

    @inline(__always)
    func wait(_ set: WaitSet, poll: Bool) -> ReadyEvents {
        switch self {
        case .epoll(let kernel): return kernel.wait(set, poll: poll)
        case .virtual(let kernel): return kernel.wait(set, poll: poll)
        }
    }
}

/// What one readiness report says about a descriptor (a private mapping of the epoll bits, which the virtual
/// backend reuses).
struct Readiness: OptionSet {
    let rawValue: UInt32
    static let readable = Readiness(rawValue: CRL_EPOLLIN)
    static let writable = Readiness(rawValue: CRL_EPOLLOUT)
    static let error = Readiness(rawValue: CRL_EPOLLERR)
    static let hangUp = Readiness(rawValue: CRL_EPOLLHUP | CRL_EPOLLRDHUP)
}

/// Tokens that identify a ready descriptor. Descriptor sources use their item ids, which count up from 1 and
/// never reach these.
enum SelectorToken {
    static let wakeUp: UInt64 = .max
    static let timer: UInt64 = .max - 1
    /// The main dispatch queue's descriptor, in the wait sets of the main loop's common modes (rule 38).
    static let mainQueue: UInt64 = .max - 2
}

/// One mode's wait set: a backend handle (the epoll descriptor, or the virtual backend's number for the set)
/// and the buffer its waits fill, allocated once.
final class WaitSet {
    let handle: Int32
    var ready = ReadyEvents(capacity: 64)
    /// Whether the main queue's descriptor is in the set (loop thread only; Loop+MainQueue.swift).
    var watchesMainQueue = false

    init(handle: Int32) {
        self.handle = handle
    }

    deinit {
        ready.deallocate()
    }
}

/// The ready descriptors one wait returned.
struct ReadyEvents {
    var count = 0
    /// Token and events side by side: after a sleep the first reports are one cold cache line, not two.
    let entries: UnsafeMutablePointer<crl_ready_event>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        // Aligned to a cache line, so that the first four reports share one.
        entries = UnsafeMutableRawPointer.allocate(byteCount: capacity * MemoryLayout<crl_ready_event>.stride, alignment: 64)
            .bindMemory(to: crl_ready_event.self, capacity: capacity)
    }

    func deallocate() {
        UnsafeMutableRawPointer(entries).deallocate()
    }

    subscript(index: Int) -> (token: UInt64, readiness: Readiness) {
        (entries[index].token, Readiness(rawValue: entries[index].events))
    }

    /// Appends one report; false when the buffer is full (the rest is reported by the next wait).
    mutating func append(token: UInt64, readiness: Readiness) -> Bool {
        guard count < capacity else { return false }
        entries[count] = crl_ready_event(token: token, events: readiness.rawValue)
        count += 1
        return true
    }
}

/// An error from the kernel that the caller can do something about.
struct KernelError: Error, CustomStringConvertible {
    let call: StaticString
    let errno: Int32
    var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}
