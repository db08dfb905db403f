import CRunLoopLinux
import Glibc

// The platform contract, on one screen. This file is the only one that knows epoll, eventfd or timerfd.
//
// A loop owns one `Selector`: an eventfd for wake-ups and a timerfd for the next deadline (timers and the
// run timeout share it, so a run timeout needs no helper thread). Each mode gets its own `WaitSet`, an epoll
// instance holding the eventfd, the timerfd and that mode's descriptor sources, so a run waits on exactly
// the descriptors of its mode, as CFRunLoop waits on a mode's port set.

/// What one readiness report says about a descriptor (a private mapping of the epoll bits).
struct Readiness: OptionSet {
    let rawValue: UInt32
    static let readable = Readiness(rawValue: CRL_EPOLLIN)
    static let writable = Readiness(rawValue: CRL_EPOLLOUT)
    static let error = Readiness(rawValue: CRL_EPOLLERR)
    static let hangUp = Readiness(rawValue: CRL_EPOLLHUP | CRL_EPOLLRDHUP)
}

/// Tokens that identify a ready descriptor. Descriptor sources use their item ids, which count up from 1 and
/// never reach these two.
enum SelectorToken {
    static let wakeUp: UInt64 = .max
    static let timer: UInt64 = .max - 1
}

/// The ready descriptors one wait returned. The buffers are allocated once per wait set.
struct ReadyEvents {
    fileprivate(set) var count = 0
    fileprivate let tokens: UnsafeMutablePointer<UInt64>
    fileprivate let events: UnsafeMutablePointer<UInt32>
    fileprivate let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        tokens = .allocate(capacity: capacity)
        events = .allocate(capacity: capacity)
    }

    func deallocate() {
        tokens.deallocate()
        events.deallocate()
    }

    subscript(index: Int) -> (token: UInt64, readiness: Readiness) {
        (tokens[index], Readiness(rawValue: events[index]))
    }
}

/// An error from the kernel that the caller can do something about.
struct KernelError: Error, CustomStringConvertible {
    let call: StaticString
    let errno: Int32
    var description: String { "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// Traps on an errno that can only mean a bug in RunLoopCore (a bad descriptor of our own, a bad pointer).
@inline(__always)
private func checked(_ result: Int32, _ call: StaticString) -> Int32 {
    if result < 0 {
        let err = -result
        precondition(err != EBADF && err != EFAULT && err != EINVAL,
                     "BUG IN RunLoopCore (please report): \(call) failed with errno \(err)")
        fatalError("RunLoopCore: \(call) failed: \(String(cString: strerror(err))) (errno \(err)); the process is out of kernel resources")
    }
    return result
}

/// The loop's wake-up eventfd and deadline timerfd.
final class Selector {
    let wakeFD: Int32
    let timerFD: Int32
    /// The absolute monotonic deadline the timerfd is armed for; 0 when disarmed. Guarded by the loop lock.
    private(set) var armedDeadline: UInt64 = 0

    init() {
        wakeFD = checked(crl_eventfd_create(), "eventfd")
        timerFD = checked(crl_timerfd_create(), "timerfd_create")
    }

    /// Writes the eventfd. Safe from any thread while the selector is open.
    @inline(__always)
    func wakeUp() {
        _ = checked(crl_eventfd_signal(wakeFD), "eventfd_write")
    }

    /// Consumes pending wake-ups; returns whether there were any.
    @discardableResult
    func drainWakeUp() -> Bool {
        crl_eventfd_drain(wakeFD) == 0
    }

    /// Consumes a timer expiry; returns whether one was pending.
    @discardableResult
    func drainTimer() -> Bool {
        crl_timerfd_drain(timerFD) == 0
    }

    /// Arms the timerfd for `deadline` (monotonic ns; 0 disarms). A no-op when already armed for it,
    /// which keeps the common "same next timer" iteration free of syscalls.
    func arm(deadline: UInt64) {
        guard deadline != armedDeadline else { return }
        armedDeadline = deadline
        _ = checked(crl_timerfd_arm(timerFD, deadline), "timerfd_settime")
        if deadline == 0 {
            // A disarmed timer must not leave an old expiry behind to wake the next wait.
            drainTimer()
        }
    }

    func close() {
        _ = crl_close(wakeFD)
        _ = crl_close(timerFD)
    }

    /// A new epoll instance that watches this selector's wake-up and timer descriptors.
    func makeWaitSet() -> WaitSet {
        let set = WaitSet(epollFD: checked(crl_epoll_create(), "epoll_create1"))
        _ = checked(crl_epoll_ctl(set.epollFD, EPOLL_CTL_ADD, wakeFD, CRL_EPOLLIN, SelectorToken.wakeUp), "epoll_ctl")
        _ = checked(crl_epoll_ctl(set.epollFD, EPOLL_CTL_ADD, timerFD, CRL_EPOLLIN, SelectorToken.timer), "epoll_ctl")
        return set
    }
}

/// One mode's epoll instance.
final class WaitSet {
    let epollFD: Int32
    private var ready = ReadyEvents(capacity: 64)

    init(epollFD: Int32) {
        self.epollFD = epollFD
    }

    deinit {
        ready.deallocate()
    }

    /// Starts watching a descriptor the caller owns. Fails with EBADF/EPERM for a closed descriptor or one
    /// epoll cannot watch (a regular file), which are the caller's mistakes, not ours.
    func watch(_ fd: Int32, for interest: Readiness, token: UInt64) -> KernelError? {
        let rc = crl_epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, interest.rawValue, token)
        return rc < 0 ? KernelError(call: "epoll_ctl(ADD)", errno: -rc) : nil
    }

    /// Stops watching; a descriptor the user already closed has left the set by itself, so errors are ignored.
    func unwatch(_ fd: Int32) {
        _ = crl_epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Blocks until something is ready (or only polls), and returns what is.
    /// Do not rename: profiles separate the loop's sleep from its work by this name.
    @inline(never)
    func _blockingWaitForWork(poll: Bool) -> ReadyEvents {
        let n = checked(crl_epoll_wait(epollFD, ready.tokens, ready.events, Int32(ready.capacity), poll ? 0 : -1), "epoll_wait")
        ready.count = Int(n)
        return ready
    }

    func close() {
        _ = crl_close(epollFD)
    }
}

/// Monotonic time in nanoseconds (CLOCK_MONOTONIC, the clock LTTng stamps events with).
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    crl_monotonic_ns()
}

/// True when `fd` is an open descriptor of this process.
func isOpenDescriptor(_ fd: Int32) -> Bool {
    crl_fd_is_open(fd) == 1
}

func currentThreadIsMain() -> Bool {
    crl_is_main_thread() == 1
}
