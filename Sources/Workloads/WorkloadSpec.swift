/// A workload: elements that run together on one loop for a duration. Built-in workloads are presets of this;
/// a workload file (JSON or YAML) describes one directly:
///
/// ```yaml
/// duration: 3s
/// elements:
///   - kind: timers
///     count: 20
///     interval: 1ms
///   - kind: blocks
///     threads: 2
///     rate: 5000
///   - kind: jank
///     interval: 16ms
///     every: 10
///     cost: 25ms
/// ```
public struct WorkloadSpec: Codable, Sendable, Equatable {
    public var duration: DurationValue
    public var elements: [Element]

    public init(duration: DurationValue, elements: [Element]) {
        self.duration = duration
        self.elements = elements
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case duration, elements }

    public init(from decoder: Decoder) throws {
        try rejectUnknownKeys(in: decoder, allowed: CodingKeys.allCases.map(\.rawValue), of: "a workload")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // As `rlctl run --duration` (the README promises every field a default).
        duration = try c.decodeIfPresent(DurationValue.self, forKey: .duration) ?? .seconds(3)
        elements = try c.decode([Element].self, forKey: .elements)
    }

    /// One element; `kind` selects which.
    public enum Element: Codable, Sendable, Equatable {
        case timers(Timers)
        case sources(Producers)
        case ports(Producers)
        case io(Producers)
        case blocks(Producers)
        case modes(Modes)
        case jank(Jank)

        private enum CodingKeys: String, CodingKey { case kind }

        public init(from decoder: Decoder) throws {
            let kind = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .kind)
            switch kind {
            case "timers": self = .timers(try Timers(from: decoder))
            case "sources": self = .sources(try Producers(from: decoder))
            case "ports": self = .ports(try Producers(from: decoder))
            case "io": self = .io(try Producers(from: decoder))
            case "blocks": self = .blocks(try Producers(from: decoder))
            case "modes": self = .modes(try Modes(from: decoder))
            case "jank": self = .jank(try Jank(from: decoder))
            default:
                throw DecodingError.dataCorruptedError(forKey: .kind, in: try decoder.container(keyedBy: CodingKeys.self),
                                                       debugDescription: "unknown element kind \"\(kind)\" (use timers, sources, ports, io, blocks, modes or jank)")
            }
        }

        public func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch self {
            case .timers(let v): try container.encode("timers", forKey: .kind); try v.encode(to: encoder)
            case .sources(let v): try container.encode("sources", forKey: .kind); try v.encode(to: encoder)
            case .ports(let v): try container.encode("ports", forKey: .kind); try v.encode(to: encoder)
            case .io(let v): try container.encode("io", forKey: .kind); try v.encode(to: encoder)
            case .blocks(let v): try container.encode("blocks", forKey: .kind); try v.encode(to: encoder)
            case .modes(let v): try container.encode("modes", forKey: .kind); try v.encode(to: encoder)
            case .jank(let v): try container.encode("jank", forKey: .kind); try v.encode(to: encoder)
            }
        }
    }

    /// Repeating timers, their first fire dates spread over one interval.
    public struct Timers: Codable, Sendable, Equatable {
        static let elementKinds = "a timers element"
        public var count: Int = 10
        public var interval: DurationValue = .milliseconds(1)
        public var tolerance: DurationValue = .zero
        public var handlerCost: DurationValue = .zero

        public init(count: Int = 10, interval: DurationValue = .milliseconds(1), tolerance: DurationValue = .zero, handlerCost: DurationValue = .zero) {
            self.count = count
            self.interval = interval
            self.tolerance = tolerance
            self.handlerCost = handlerCost
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case count, interval, tolerance, handlerCost = "handler_cost" }
        public init(from decoder: Decoder) throws {
            try rejectUnknownKeys(in: decoder, allowed: ["kind"] + CodingKeys.allCases.map(\.rawValue), of: Self.elementKinds)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            count = try c.decodeIfPresent(Int.self, forKey: .count) ?? 10
            interval = try c.decodeIfPresent(DurationValue.self, forKey: .interval) ?? .milliseconds(1)
            tolerance = try c.decodeIfPresent(DurationValue.self, forKey: .tolerance) ?? .zero
            handlerCost = try c.decodeIfPresent(DurationValue.self, forKey: .handlerCost) ?? .zero
        }
    }

    /// Producer threads feeding the loop: custom sources, port requests, descriptor writes or performed blocks.
    public struct Producers: Codable, Sendable, Equatable {
        static let elementKinds = "a sources, ports, io or blocks element"
        public var threads: Int = 2
        /// Events per second per thread; 0 means as fast as possible. See ``isPossibleRate(_:)``.
        public var rate: Double = 1000
        public var handlerCost: DurationValue = .zero
        /// Bytes per message (ports, io).
        public var bytes: Int = 64

        public init(threads: Int = 2, rate: Double = 1000, handlerCost: DurationValue = .zero, bytes: Int = 64) {
            self.threads = threads
            self.rate = rate
            self.handlerCost = handlerCost
            self.bytes = bytes
        }

        /// A producer paces itself on a grid of 1e9 / rate nanoseconds: above 10 million per second the step is
        /// under 100 ns, finer than a sleep can keep (`1e99` made it 0, a flood under another name), and below one
        /// event in 1000 s nothing would happen in any run worth tracing.
        public static func isPossibleRate(_ rate: Double) -> Bool { rate == 0 || (0.001...10_000_000).contains(rate) }
        public static let possibleRates = "0 (as fast as possible) or 0.001 to 10000000 events per second per thread"

        enum CodingKeys: String, CodingKey, CaseIterable { case threads, rate, handlerCost = "handler_cost", bytes }
        public init(from decoder: Decoder) throws {
            try rejectUnknownKeys(in: decoder, allowed: ["kind"] + CodingKeys.allCases.map(\.rawValue), of: Self.elementKinds)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            threads = try c.decodeIfPresent(Int.self, forKey: .threads) ?? 2
            rate = try c.decodeIfPresent(Double.self, forKey: .rate) ?? 1000
            handlerCost = try c.decodeIfPresent(DurationValue.self, forKey: .handlerCost) ?? .zero
            bytes = try c.decodeIfPresent(Int.self, forKey: .bytes) ?? 64
        }
    }

    /// Mode switches: every `period` a callout runs the loop nested in a modal mode for `hold`; a common-mode
    /// timer keeps firing there, a default-mode timer waits.
    public struct Modes: Codable, Sendable, Equatable {
        static let elementKinds = "a modes element"
        public var period: DurationValue = .milliseconds(100)
        public var hold: DurationValue = .milliseconds(30)
        public var interval: DurationValue = .milliseconds(5)

        public init(period: DurationValue = .milliseconds(100), hold: DurationValue = .milliseconds(30), interval: DurationValue = .milliseconds(5)) {
            self.period = period
            self.hold = hold
            self.interval = interval
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case period, hold, interval }
        public init(from decoder: Decoder) throws {
            try rejectUnknownKeys(in: decoder, allowed: ["kind"] + CodingKeys.allCases.map(\.rawValue), of: Self.elementKinds)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            period = try c.decodeIfPresent(DurationValue.self, forKey: .period) ?? .milliseconds(100)
            hold = try c.decodeIfPresent(DurationValue.self, forKey: .hold) ?? .milliseconds(30)
            interval = try c.decodeIfPresent(DurationValue.self, forKey: .interval) ?? .milliseconds(5)
        }
    }

    /// A repeating timer whose every `every`-th callout burns `cost` of CPU: stalls and drift to look at.
    public struct Jank: Codable, Sendable, Equatable {
        static let elementKinds = "a jank element"
        public var interval: DurationValue = .milliseconds(16)
        public var every: Int = 10
        public var cost: DurationValue = .milliseconds(25)

        public init(interval: DurationValue = .milliseconds(16), every: Int = 10, cost: DurationValue = .milliseconds(25)) {
            self.interval = interval
            self.every = every
            self.cost = cost
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case interval, every, cost }
        public init(from decoder: Decoder) throws {
            try rejectUnknownKeys(in: decoder, allowed: ["kind"] + CodingKeys.allCases.map(\.rawValue), of: Self.elementKinds)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            interval = try c.decodeIfPresent(DurationValue.self, forKey: .interval) ?? .milliseconds(16)
            every = try c.decodeIfPresent(Int.self, forKey: .every) ?? 10
            cost = try c.decodeIfPresent(DurationValue.self, forKey: .cost) ?? .milliseconds(25)
        }
    }

    /// Checks every value; the message says which element and field is wrong.
    public func validate() throws(WorkloadError) {
        guard duration.nanoseconds > 0 else { throw WorkloadError("duration must be greater than zero (got \(duration))", at: ["duration"]) }
        guard !elements.isEmpty else { throw WorkloadError("a workload needs at least one element", at: ["elements"]) }
        for (index, element) in elements.enumerated() {
            let at = "element \(index + 1)"
            func field(_ name: String) -> [String] { ["elements", "\(index)", name] }
            switch element {
            case .timers(let t):
                guard (1...100_000).contains(t.count) else { throw WorkloadError("\(at) (timers): count must be 1 to 100000 (got \(t.count))", at: field("count")) }
                guard t.interval.nanoseconds > 0 else { throw WorkloadError("\(at) (timers): interval must be greater than zero", at: field("interval")) }
            case .sources(let p), .ports(let p), .io(let p), .blocks(let p):
                guard (1...256).contains(p.threads) else { throw WorkloadError("\(at): threads must be 1 to 256 (got \(p.threads))", at: field("threads")) }
                guard Producers.isPossibleRate(p.rate) else { throw WorkloadError("\(at): rate must be \(Producers.possibleRates) (got \(p.rate))", at: field("rate")) }
                guard (0...(1 << 20)).contains(p.bytes) else { throw WorkloadError("\(at): bytes must be 0 to 1048576 (got \(p.bytes))", at: field("bytes")) }
            case .modes(let m):
                guard m.period.nanoseconds > 0, m.interval.nanoseconds > 0 else { throw WorkloadError("\(at) (modes): period and interval must be greater than zero", at: field(m.period.nanoseconds > 0 ? "interval" : "period")) }
                guard m.hold.nanoseconds < m.period.nanoseconds else { throw WorkloadError("\(at) (modes): hold (\(m.hold)) must be shorter than period (\(m.period))", at: field("hold")) }
            case .jank(let j):
                guard j.interval.nanoseconds > 0 else { throw WorkloadError("\(at) (jank): interval must be greater than zero", at: field("interval")) }
                guard j.every >= 1 else { throw WorkloadError("\(at) (jank): every must be at least 1 (got \(j.every))", at: field("every")) }
            }
        }
    }
}

/// A workload that cannot run as described, in one line.
public struct WorkloadError: Error, CustomStringConvertible {
    public let description: String
    /// Where in a workload file the wrong value is: keys, and element indexes as text (`elements`, `0`, `count`);
    /// empty when the error is about no one value.
    public let path: [String]
    public init(_ description: String, at path: [String] = []) {
        self.description = description
        self.path = path
    }
}

/// Any key, to list what a mapping holds.
private struct AnyKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

/// A misspelt key (`cnt: 3`) would otherwise leave its field at the default without a word.
private func rejectUnknownKeys(in decoder: Decoder, allowed: [String], of what: String) throws {
    let container = try decoder.container(keyedBy: AnyKey.self)
    for key in container.allKeys.map(\.stringValue).sorted() where !allowed.contains(key) {
        throw DecodingError.dataCorrupted(.init(
            codingPath: decoder.codingPath,
            debugDescription: "unknown key \"\(key)\" in \(what) (it takes \(allowed.joined(separator: ", ")))"))
    }
}
