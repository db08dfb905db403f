// The words a run-loop trace is written in: what the loop reports (RunLoopCore, through LoopEventSink), what the
// tracers write and what the readers and analyses decode. They live here, apart from the loop, so that the
// readers and the analyses share them without linking the loop's machinery; RunLoopCore names them
// `Loop.Activity`, `Loop.RunResult`, `Loop.WakeReason`, `LoopEventSink.SourceKind` and `LoopEventSink.ItemKind`.
// Their values in traces are in TraceValues.swift.

/// The points of an iteration that observers can watch. Raw values are CFRunLoop's.
@frozen
public struct LoopActivity: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt

    @inlinable
    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    // Computed and inlinable rather than stored: the loop compares activities on every iteration, and a stored
    // static of another module is reached through an accessor call each time.

    /// A run begins (once per run, before the first iteration).
    @inlinable public static var entry: LoopActivity { LoopActivity(rawValue: 1) }
    /// An iteration is about to fire due timers.
    @inlinable public static var beforeTimers: LoopActivity { LoopActivity(rawValue: 2) }
    /// An iteration is about to perform signalled custom sources.
    @inlinable public static var beforeSources: LoopActivity { LoopActivity(rawValue: 4) }
    /// The loop is about to sleep.
    @inlinable public static var beforeWaiting: LoopActivity { LoopActivity(rawValue: 32) }
    /// The loop woke up, before handling what woke it.
    @inlinable public static var afterWaiting: LoopActivity { LoopActivity(rawValue: 64) }
    /// A run ends.
    @inlinable public static var exit: LoopActivity { LoopActivity(rawValue: 128) }
    /// Every activity.
    @inlinable public static var all: LoopActivity { LoopActivity(rawValue: 1 | 2 | 4 | 32 | 64 | 128) }

    /// The single activities, in the order an iteration reaches them.
    public static let ordered: [LoopActivity] = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

    /// The trace name of a single activity (`entry`, `before_timers`, …).
    public var description: String {
        switch self {
        case .entry: return "entry"
        case .beforeTimers: return "before_timers"
        case .beforeSources: return "before_sources"
        case .beforeWaiting: return "before_waiting"
        case .afterWaiting: return "after_waiting"
        case .exit: return "exit"
        default: return LoopActivity.ordered.filter { contains($0) }.map(\.description).joined(separator: "|")
        }
    }
}

/// Why a run returned.
public enum LoopRunResult: Sendable, Equatable, CustomStringConvertible {
    /// The mode is empty (or is the common token, or was never created).
    case finished
    /// `Loop.stop()` ended the run.
    case stopped
    /// The timeout passed.
    case timedOut
    /// A source was handled and the run was asked to return after one.
    case handledSource

    public var description: String {
        switch self {
        case .finished: return "finished"
        case .stopped: return "stopped"
        case .timedOut: return "timed_out"
        case .handledSource: return "handled_source"
        }
    }
}

/// What ended a sleep, as the trace's `wakeup` event reports it.
public enum LoopWakeReason: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case timer, source, descriptor, port, manual, timeout, stop
    /// Main-queue work arrived (the main loop, in a common mode).
    case mainQueue

    private static let names = ["timer", "source", "descriptor", "port", "manual", "timeout", "stop", "main_queue"]
    /// The trace name (the case's name: these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
}

/// The kind of a performed source, as `source_perform_begin` reports it.
public enum LoopSourceKind: UInt8, Sendable, CustomStringConvertible {
    case custom, descriptor, port

    private static let names = ["custom", "descriptor", "port"]
    /// The trace name (the case's name: these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
}

/// What a labelled item is, as `item_label` reports it.
public enum LoopItemKind: UInt8, Sendable, CustomStringConvertible {
    case timer, source, descriptor, port, observer
    /// A SwiftNIO channel traced by RunLoopNIO's channel handler.
    case channel

    private static let names = ["timer", "source", "descriptor", "port", "observer", "channel"]
    /// The trace name (the case's name: these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
}

/// What kind of callout ran longest in a stalled iteration, as `loop_stall` reports it.
public enum LoopCalloutKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// No callout ran (the loop's own work), or the loop's tracer cannot see its callouts (an adapted loop).
    case none
    case timer, source, descriptor, port, observer, block
    /// The main dispatch queue's work (rule 38).
    case mainQueue
    /// An actor job the loop ran as its executor.
    case job

    private static let names = ["none", "timer", "source", "descriptor", "port", "observer", "block", "main_queue", "job"]
    /// The trace name (these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
}

/// Which adapter traces a loop that is not built on RunLoopCore, as `loop_adapted` reports it.
public enum LoopAdapter: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// A Foundation `RunLoop` (CFRunLoop), seen through an observer of its activities.
    case foundation = 1
    /// A SwiftNIO event loop, seen through its metrics delegate's ticks.
    case nio = 2

    /// The trace name (the case's name: these never change, traces are read by it).
    public var description: String {
        switch self {
        case .foundation: return "foundation"
        case .nio: return "nio"
        }
    }
}

/// The libc call a thread waited in, as `wait_begin` reports it (`rlctl record --any`).
public enum WaitCall: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case epollWait, epollPwait, epollPwait2, poll, ppoll, select, pselect

    private static let names = ["epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect"]
    /// The trace name (the libc function's: these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
    /// Whether it waits on an epoll descriptor (the event's `target`) rather than on a set passed with the call.
    public var isEpoll: Bool { rawValue <= WaitCall.epollPwait2.rawValue }
}

/// How a thread left its CPU, as the kernel saw it (`kernel_off_cpu`): still runnable (``preempted`` by the
/// scheduler, or ``throttled`` by its cgroup's CPU quota), or blocked (``sleeping``, interruptible; ``diskSleep``,
/// uninterruptible: I/O, a page fault); ``other``: stopped, traced or dead.
public enum KernelOffCPUReason: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case preempted, throttled, sleeping, diskSleep, other

    private static let names = ["preempted", "throttled", "sleeping", "disk_sleep", "other"]
    /// The trace name (these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
    /// Whether the thread was still runnable when it left (it waited for a CPU, not for an event).
    public var leftRunnable: Bool { self == .preempted || self == .throttled }
}

/// What a traced SwiftNIO channel's pipeline handled, as `nio_io` reports it.
public enum NIOIOEvent: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case read, readComplete, active, inactive, writabilityChanged, userEvent, error

    private static let names = ["read", "read_complete", "active", "inactive", "writability_changed", "user_event", "error"]
    /// The trace name (these never change, traces are read by it).
    public var description: String { Self.names[Int(rawValue)] }
}
