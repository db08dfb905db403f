import ArgumentParser

/// A duration on the command line: a number and a unit (`ns`, `us`, `ms`, `s`), e.g. `250us`, `1.5s`.
struct DurationArgument: ExpressibleByArgument, CustomStringConvertible, Sendable {
    let duration: Duration
    let text: String

    init?(argument: String) {
        let units: [(String, Double)] = [("ns", 1e-9), ("us", 1e-6), ("µs", 1e-6), ("ms", 1e-3), ("s", 1)]
        guard let (suffix, scale) = units.first(where: { argument.hasSuffix($0.0) }),
              let value = Double(argument.dropLast(suffix.count)), value.isFinite, value >= 0 else { return nil }
        self.duration = .nanoseconds(Int64((value * scale * 1e9).rounded()))
        self.text = argument
    }

    var description: String { text }

    static var defaultCompletionKind: CompletionKind { .default }
}
