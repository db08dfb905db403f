import Foundation

/// A budget checked against every host of a ``FleetSummary``: each host on its own (a fleet passes only when
/// every host does), a host whose traces cannot be read counting as incomplete data, never as a pass.
public struct FleetBudgetCheck: Sendable {
    public struct HostCheck: Sendable {
        public let host: String
        /// Nil when the host's traces could not be read (see `error`).
        public let check: BudgetCheck?
        public let error: String?
    }

    public let hosts: [HostCheck]

    public init(budget: Budget, fleet: FleetSummary) {
        hosts = fleet.hosts.map { host in
            guard let summary = host.summary else { return HostCheck(host: host.name, check: nil, error: host.error ?? "cannot read the trace") }
            let report = RunReport(workload: host.name, tracer: "fleet", repetitions: [summary])
            return HostCheck(host: host.name, check: BudgetCheck(budget: budget, report: report), error: nil)
        }
    }

    /// Hosts the data cannot vouch for: unreadable, or incomplete where the budget does not allow it.
    public var incompleteHosts: [String] { hosts.filter { $0.check?.incompleteForbidden ?? true }.map(\.host) }
    public var failedHosts: [String] { hosts.filter { ($0.check?.failed ?? 0) > 0 }.map(\.host) }
    public var incompleteForbidden: Bool { !incompleteHosts.isEmpty }
    public var failed: Int { failedHosts.count }
    public var passed: Bool { failedHosts.isEmpty && incompleteHosts.isEmpty }

    private var outcome: String {
        if passed { return "all \(hosts.count) hosts within budget" }
        var parts: [String] = []
        if !failedHosts.isEmpty { parts.append("rules failed on \(failedHosts.joined(separator: ", "))") }
        if !incompleteHosts.isEmpty { parts.append("incomplete data on \(incompleteHosts.joined(separator: ", "))") }
        return parts.joined(separator: "; ")
    }

    public func render(_ format: BudgetCheck.Format) -> String {
        switch format {
        case .text:
            var out: [String] = []
            for host in hosts {
                out.append("host \(host.host):")
                let body = host.check?.text ?? "UNREADABLE: \(host.error ?? "")"
                out += body.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }
            }
            out.append("fleet: " + outcome)
            return out.joined(separator: "\n")
        case .markdown:
            var out = ["## rlctl check of \(hosts.count) hosts: " + (passed ? "✅ " : "❌ ") + outcome]
            for host in hosts {
                out.append("")
                out.append("#### host \(host.host)")
                out.append("")
                out.append(host.check?.markdown ?? "⚠️ Unreadable: \(host.error ?? "")")
            }
            return out.joined(separator: "\n")
        case .json:
            struct HostDocument: Encodable {
                var host: String
                var check: BudgetCheck.JSONDocument?
                var error: String?
            }
            struct Document: Encodable {
                var passed: Bool
                var incomplete: Bool
                var hosts: [HostDocument]
            }
            return ReportJSON.line(Document(passed: passed, incomplete: incompleteForbidden,
                                            hosts: hosts.map { HostDocument(host: $0.host, check: $0.check?.jsonDocument, error: $0.error) }))
        case .junit:
            let cases = hosts.flatMap { host -> [JUnitReport.TestCase] in
                guard let check = host.check else {
                    return [.init(className: "rlctl.trace.\(host.host)", name: "trace readable", result: .failure(host.error ?? "cannot read the trace"))]
                }
                return check.junitCases(scope: host.host)
            }
            return JUnitReport(suite: "rlctl check", cases: cases).xml
        }
    }
}
