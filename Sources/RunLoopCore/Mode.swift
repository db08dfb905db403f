extension Loop {
    /// A run-loop mode: a name that groups sources, timers and observers.
    ///
    /// A run is always in exactly one mode, and only that mode's items fire. Modes are created on first use.
    /// ``common`` is not a mode but a token meaning "every mode in the loop's common set".
    public struct Mode: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The mode's name, as it appears in traces.
        public var name: String

        public init(_ name: String) {
            self.name = name
        }

        public init(stringLiteral value: String) {
            self.name = value
        }

        /// The mode loops run in unless told otherwise (`kCFRunLoopDefaultMode`).
        public static let `default` = Mode("kCFRunLoopDefaultMode")

        /// The common-modes token (`kCFRunLoopCommonModes`). Adding an item with it adds the item to every
        /// common mode, now and later; running it returns ``Loop/RunResult/finished`` at once.
        public static let common = Mode("kCFRunLoopCommonModes")

        public var description: String { name }
    }

    /// The points of an iteration that observers can watch. Raw values are CFRunLoop's.
    public struct Activity: OptionSet, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt

        public init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// A run begins (once per run, before the first iteration).
        public static let entry = Activity(rawValue: 1)
        /// An iteration is about to fire due timers.
        public static let beforeTimers = Activity(rawValue: 2)
        /// An iteration is about to perform signalled custom sources.
        public static let beforeSources = Activity(rawValue: 4)
        /// The loop is about to sleep.
        public static let beforeWaiting = Activity(rawValue: 32)
        /// The loop woke up, before handling what woke it.
        public static let afterWaiting = Activity(rawValue: 64)
        /// A run ends.
        public static let exit = Activity(rawValue: 128)
        /// Every activity.
        public static let all: Activity = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

        /// The single activities, in the order an iteration reaches them.
        public static let ordered: [Activity] = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]

        /// The trace name of a single activity (`entry`, `before_timers`, …).
        public var description: String {
            switch self {
            case .entry: return "entry"
            case .beforeTimers: return "before_timers"
            case .beforeSources: return "before_sources"
            case .beforeWaiting: return "before_waiting"
            case .afterWaiting: return "after_waiting"
            case .exit: return "exit"
            default: return Activity.ordered.filter { contains($0) }.map(\.description).joined(separator: "|")
            }
        }
    }

    /// Why a run returned.
    public enum RunResult: Sendable, Equatable, CustomStringConvertible {
        /// The mode is empty (or is the common token, or was never created).
        case finished
        /// ``Loop/stop()`` ended the run.
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
    public enum WakeReason: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        case timer, source, descriptor, port, manual, timeout, stop

        public var description: String {
            switch self {
            case .timer: return "timer"
            case .source: return "source"
            case .descriptor: return "descriptor"
            case .port: return "port"
            case .manual: return "manual"
            case .timeout: return "timeout"
            case .stop: return "stop"
            }
        }
    }
}
