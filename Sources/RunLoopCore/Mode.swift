@_exported import TraceModel

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
        /// common mode, now and later; running it returns `Loop.RunResult.finished` at once.
        public static let common = Mode("kCFRunLoopCommonModes")

        public var description: String { name }
    }

    /// The points of an iteration that observers can watch (the trace vocabulary's `LoopActivity`).
    public typealias Activity = LoopActivity
    /// Why a run returned.
    public typealias RunResult = LoopRunResult
    /// What ended a sleep, as the trace's `wakeup` event reports it.
    public typealias WakeReason = LoopWakeReason
}
