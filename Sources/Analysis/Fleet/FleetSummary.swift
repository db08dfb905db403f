import Foundation
import TraceModel
import TraceReading

/// The summaries of a folder holding several hosts' traces (a relay daemon's output folder): one per origin
/// (``TraceOrigin``), each computed on its own, since loop ids and monotonic clocks mean nothing across hosts.
public struct FleetSummary: Codable, Sendable {
    public var format = "rlctl-fleet-summary/1"
    public var hosts: [Host]

    /// One host's (or one host's session's) summary, or why it could not be read.
    public struct Host: Codable, Sendable {
        /// The origin's name: its hostname, or `hostname/session` when the host sent several sessions.
        public var name: String
        public var traceFolders: [String]
        public var summary: TraceSummary?
        /// Why this host's traces could not be read (a relay daemon that died mid-session leaves a cut-off trace).
        public var error: String?
        /// True when the origin is one snapshot of a folder of snapshots (its name is its folder).
        public var snapshot: Bool?
    }

    public init(hosts: [Host]) { self.hosts = hosts }

    /// The hosts whose traces could not be read.
    public var unreadable: [Host] { hosts.filter { $0.summary == nil } }
}

/// What a trace folder summarizes to: one summary, or one per host.
public enum FolderSummary: Sendable {
    case single(TraceSummary)
    case fleet(FleetSummary)
}

extension TraceSummarizer {
    /// Summarizes `path` per origin when it holds the traces of several hosts or sessions (of those `host` picks,
    /// when given), else as one trace, exactly as ``summarize(traceAt:options:host:)``.
    /// - Throws: when `path` cannot be read at all, or `host` names no host there; a host whose own traces
    ///   cannot be read is a ``FleetSummary/Host`` with an `error`, the others are still summarized.
    public static func summarizeEach(traceAt path: String, host: String?, options: Options) throws(ReportInputError) -> FolderSummary {
        guard let origins = try? TraceOrigins.find(at: path, selecting: host), origins.count > 1 else {
            return .single(try summarize(traceAt: path, options: options, host: host))
        }
        return .fleet(FleetSummary(hosts: origins.map { origin in
            do {
                return .init(name: origin.name, traceFolders: origin.directories, summary: try summarize(origin, options: options),
                             error: nil, snapshot: origin.isSnapshot ? true : nil)
            } catch {
                return .init(name: origin.name, traceFolders: origin.directories, summary: nil, error: "\(error)",
                             snapshot: origin.isSnapshot ? true : nil)
            }
        }))
    }

    /// Summarizes one origin's traces.
    public static func summarize(_ origin: TraceOrigin, options: Options) throws(ReportInputError) -> TraceSummary {
        do {
            var reader = try TraceReaders.open(origin)
            return try summarize(&reader, options: options)
        } catch {
            throw ReportInputError("cannot read trace: \(error)")
        }
    }
}
