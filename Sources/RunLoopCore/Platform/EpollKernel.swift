import CRunLoopLinux
import Glibc

// The real backend: the only file that knows epoll, eventfd or timerfd.
//
// A loop owns one `EpollKernel`: an eventfd for wake-ups and a timerfd for the next deadline (timers and the
// run timeout share it, so a run timeout needs no helper thread). Each mode gets its own wait set, an epoll
// instance holding the eventfd, the timerfd and that mode's descriptor sources, so a run waits on exactly
// the descriptors of its mode, as CFRunLoop waits on a mode's port set.

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
final class EpollKernel: LoopKernel {
    let wakeFD: Int32
    let timerFD: Int32
    /// The absolute monotonic deadline the timerfd is armed for; 0 when disarmed. Guarded by the loop lock.
    private(set) var armedDeadline: UInt64 = 0

    init() {
        wakeFD = checked(crl_eventfd_create(), "eventfd")
        timerFD = checked(crl_timerfd_create(), "timerfd_create")
    }

    @inline(__always)
    func nowNanoseconds() -> UInt64 {
        monotonicNanoseconds()
    }

    @inline(__always)
    func wakeUp() {
        _ = checked(crl_eventfd_signal(wakeFD), "eventfd_write")
    }

    func consumeWakeUp() {
        _ = crl_eventfd_drain(wakeFD)
    }

    /// An expired one-shot timerfd is disarmed: forgetting its deadline makes the next `arm` set it again even
    /// for the same date (a timer added in a callout for the date that just fired would otherwise never wake
    /// the loop). When it was re-armed for a later date meanwhile, there is no expiry and the deadline stands.
    func consumeTimerExpiry() {
        if crl_timerfd_drain(timerFD) == 0 { armedDeadline = 0 }
    }

    /// A no-op when already armed for `deadline`, which keeps the common "same next timer" iteration free of
    /// syscalls.
    func arm(deadline: UInt64) {
        guard deadline != armedDeadline else { return }
        armedDeadline = deadline
        _ = checked(crl_timerfd_arm(timerFD, deadline), "timerfd_settime")
        if deadline == 0 {
            // A disarmed timer must not leave an old expiry behind to wake the next wait.
            _ = crl_timerfd_drain(timerFD)
        }
    }

    func close() {
        _ = crl_close(wakeFD)
        _ = crl_close(timerFD)
    }

    func makeWaitSet() -> WaitSet {
        let set = WaitSet(handle: checked(crl_epoll_create(), "epoll_create1"))
        _ = checked(crl_epoll_ctl(set.handle, EPOLL_CTL_ADD, wakeFD, CRL_EPOLLIN, SelectorToken.wakeUp), "epoll_ctl")
        _ = checked(crl_epoll_ctl(set.handle, EPOLL_CTL_ADD, timerFD, CRL_EPOLLIN, SelectorToken.timer), "epoll_ctl")
        return set
    }

    /// Fails with EBADF/EPERM for a closed descriptor or one epoll cannot watch (a regular file), which are the
    /// caller's mistakes, not ours.
    func watch(_ fd: Int32, for interest: Readiness, token: UInt64, in set: WaitSet) -> KernelError? {
        let rc = crl_epoll_ctl(set.handle, EPOLL_CTL_ADD, fd, interest.rawValue, token)
        return rc < 0 ? KernelError(call: "epoll_ctl(ADD)", errno: -rc) : nil
    }

    /// A descriptor the user already closed has left the set by itself, so errors are ignored.
    func unwatch(_ fd: Int32, in set: WaitSet) {
        _ = crl_epoll_ctl(set.handle, EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// poll(2)'s bits are epoll's for these events; POLLNVAL (a closed descriptor) maps to nothing ready.
    func currentReadiness(of fd: Int32, for interest: Readiness) -> Readiness {
        var entry = pollfd(fd: fd, events: Int16(truncatingIfNeeded: interest.rawValue), revents: 0)
        var rc: Int32
        repeat { rc = Glibc.poll(&entry, 1, 0) } while rc < 0 && errno == EINTR
        guard rc > 0 else { return [] }
        let reported = Readiness(rawValue: UInt32(UInt16(bitPattern: entry.revents)))
        return reported.intersection(interest.union([.error, .hangUp]))
    }

    @inline(__always)
    func wait(_ set: WaitSet, poll: Bool) -> ReadyEvents {
        _blockingWaitForWork(set, poll: poll)
    }

    /// Do not rename: profiles separate the loop's sleep from its work by this name.
    @inline(never)
    func _blockingWaitForWork(_ set: WaitSet, poll: Bool) -> ReadyEvents {
        let n = checked(crl_epoll_wait(set.handle, set.ready.entries, Int32(set.ready.capacity),
                                       poll ? 0 : -1), "epoll_wait")
        set.ready.count = Int(n)
        return set.ready
    }

    func close(_ set: WaitSet) {
        _ = crl_close(set.handle)
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
