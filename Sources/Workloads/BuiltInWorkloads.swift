/// The built-in workloads: presets of ``WorkloadSpec`` that `rlctl run <name>` adjusts with its options.
public enum BuiltInWorkload: String, CaseIterable, Sendable {
    case timers, sources, ports, io, blocks, modes, jank, mixed

    public var summary: String {
        switch self {
        case .timers: return "many repeating timers (--count, --interval, --tolerance, --handler-cost)"
        case .sources: return "producer threads signalling custom sources (--threads, --rate, --handler-cost)"
        case .ports: return "cross-thread request/reply over a message port (--threads, --rate, --bytes)"
        case .io: return "descriptor sources on socket pairs fed by writer threads (--threads, --rate, --bytes)"
        case .blocks: return "producer threads performing blocks (--threads, --rate, 0 = flood, --handler-cost)"
        case .modes: return "nested runs in a modal mode, common-mode and default-mode timers (--interval)"
        case .jank: return "a frame timer whose every Nth callout burns CPU: stalls and drift (--interval, --every, --cost)"
        case .mixed: return "timers, sources, blocks, ports, io and some jank at once"
        }
    }

    /// Options a user can set on the command line; nil fields keep the preset.
    public struct Overrides: Sendable {
        public var count: Int?
        public var interval: DurationValue?
        public var tolerance: DurationValue?
        public var handlerCost: DurationValue?
        public var threads: Int?
        public var rate: Double?
        public var bytes: Int?
        public var every: Int?
        public var cost: DurationValue?
        public init() {}
    }

    public func spec(duration: DurationValue, _ o: Overrides = Overrides()) -> WorkloadSpec {
        func producers(_ threads: Int, _ rate: Double) -> WorkloadSpec.Producers {
            .init(threads: o.threads ?? threads, rate: o.rate ?? rate, handlerCost: o.handlerCost ?? .zero, bytes: o.bytes ?? 64)
        }
        let timers = WorkloadSpec.Timers(count: o.count ?? 10, interval: o.interval ?? .milliseconds(1),
                                         tolerance: o.tolerance ?? .zero, handlerCost: o.handlerCost ?? .zero)
        let jank = WorkloadSpec.Jank(interval: o.interval ?? .milliseconds(16), every: o.every ?? 10, cost: o.cost ?? .milliseconds(25))
        let elements: [WorkloadSpec.Element]
        switch self {
        case .timers: elements = [.timers(timers)]
        case .sources: elements = [.sources(producers(2, 2000))]
        case .ports: elements = [.ports(producers(2, 1000))]
        case .io: elements = [.io(producers(2, 1000))]
        case .blocks: elements = [.blocks(producers(2, 5000))]
        case .modes: elements = [.modes(.init(interval: o.interval ?? .milliseconds(5)))]
        case .jank: elements = [.jank(jank)]
        case .mixed:
            elements = [.timers(.init(count: o.count ?? 8, interval: o.interval ?? .milliseconds(2), tolerance: o.tolerance ?? .zero,
                                      handlerCost: o.handlerCost ?? .microseconds(20))),
                        .sources(producers(1, 1000)), .blocks(producers(1, 2000)), .ports(producers(1, 500)),
                        .io(producers(1, 500)), .jank(.init(interval: .milliseconds(16), every: o.every ?? 20, cost: o.cost ?? .milliseconds(20)))]
        }
        return WorkloadSpec(duration: duration, elements: elements)
    }
}

extension DurationValue {
    public static func microseconds(_ value: Int64) -> DurationValue { DurationValue(nanoseconds: value * 1_000) }
}
