

// The integer values enumerations take in traces. Both backends (the LTTng provider header and the recorder's
// CTF metadata) declare these exact mappings; readers decode them with the initializers below.

extension LoopRunResult {
    /// CFRunLoop's values: finished 1, stopped 2, timed_out 3, handled_source 4.
    public var traceValue: Int64 {
        switch self {
        case .finished: return 1
        case .stopped: return 2
        case .timedOut: return 3
        case .handledSource: return 4
        }
    }

    public init?(traceValue: Int64) {
        switch traceValue {
        case 1: self = .finished
        case 2: self = .stopped
        case 3: self = .timedOut
        case 4: self = .handledSource
        default: return nil
        }
    }
}

extension LoopActivity {
    /// A single activity from its CF bit value (1, 2, 4, 32, 64, 128).
    public init?(traceValue: Int64) {
        let activity = LoopActivity(rawValue: UInt(clamping: max(traceValue, 0)))
        guard LoopActivity.ordered.contains(activity) else { return nil }
        self = activity
    }

    public var traceValue: Int64 { Int64(rawValue) }
}

extension LoopWakeReason {
    /// timer 0, source 1, descriptor 2, port 3, manual 4, timeout 5, stop 6, main_queue 7.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let reason = LoopWakeReason(rawValue: value) else { return nil }
        self = reason
    }
}

extension LoopSourceKind {
    /// custom 0, descriptor 1, port 2.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let kind = LoopSourceKind(rawValue: value) else { return nil }
        self = kind
    }
}

extension LoopItemKind {
    /// timer 0, source 1, descriptor 2, port 3, observer 4, channel 5.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let kind = LoopItemKind(rawValue: value) else { return nil }
        self = kind
    }
}

extension LoopAdapter {
    /// foundation 1, nio 2.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let adapter = LoopAdapter(rawValue: value) else { return nil }
        self = adapter
    }
}

extension NIOIOEvent {
    /// read 0, read_complete 1, active 2, inactive 3, writability_changed 4, user_event 5, error 6.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let event = NIOIOEvent(rawValue: value) else { return nil }
        self = event
    }
}

extension WaitCall {
    /// epoll_wait 0, epoll_pwait 1, epoll_pwait2 2, poll 3, ppoll 4, select 5, pselect 6.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let call = WaitCall(rawValue: value) else { return nil }
        self = call
    }
}

extension KernelOffCPUReason {
    /// preempted 0, throttled 1, sleeping 2, disk_sleep 3, other 4.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let reason = KernelOffCPUReason(rawValue: value) else { return nil }
        self = reason
    }
}

extension LoopCalloutKind {
    /// none 0, timer 1, source 2, descriptor 3, port 4, observer 5, block 6, main_queue 7, job 8.
    public var traceValue: Int64 { Int64(rawValue) }

    public init?(traceValue: Int64) {
        guard let value = UInt8(exactly: traceValue), let kind = LoopCalloutKind(rawValue: value) else { return nil }
        self = kind
    }
}
