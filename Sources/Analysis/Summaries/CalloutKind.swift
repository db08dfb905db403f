import TraceModel

/// What a callout ran: the kinds of work a loop calls out to. Summaries count durations per kind, and the metric
/// list derives `callout.<name>.*` from the same cases, so a kind and its metric cannot drift apart.
public enum CalloutKind: Int, CaseIterable, Sendable, CustomStringConvertible {
    case timer, source, descriptor, port, block, observer
    /// The main loop running the main dispatch queue's work (`DispatchQueue.main` blocks, `@MainActor` jobs).
    case mainQueue

    /// The id a main-queue servicing has in the summaries: servicings of a loop never nest and have no id of
    /// their own, and item and block ids start at 1.
    static let mainQueueCalloutID: UInt64 = 0
    /// An actor job run by a loop as its executor (`job_begin`/`job_end`).
    case job

    /// The kind of a performed source: custom sources are `source`, descriptors and ports their own kinds.
    public init(_ source: LoopSourceKind) {
        switch source {
        case .custom: self = .source
        case .descriptor: self = .descriptor
        case .port: self = .port
        }
    }

    /// The name summaries, metrics and reports use (`timer`, `source`, …).
    public var name: String {
        switch self {
        case .timer: return "timer"
        case .source: return "source"
        case .descriptor: return "descriptor"
        case .port: return "port"
        case .block: return "block"
        case .observer: return "observer"
        case .mainQueue: return "main_queue"
        case .job: return "job"
        }
    }

    public var description: String { name }

    /// Whether the callout is an item's (timer, source, observer), whose id an `item_label` may name. Blocks, jobs
    /// and main-queue servicings have no labels: their ids are not items' ids.
    var isItem: Bool {
        switch self {
        case .timer, .source, .descriptor, .port, .observer: return true
        case .block, .mainQueue, .job: return false
        }
    }

    /// How reports name one callout: its kind and, when the program labelled the item, the label (`timer frame`).
    func calloutName(label: String?) -> String {
        guard let label else { return name }
        return name + " " + label
    }
}
