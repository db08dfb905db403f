import Foundation
import TraceModel
import TraceReading

/// What `rlctl run --output` writes: every repetition's summary, so `compare` can judge noise.
public struct RunReport: Codable, Sendable {
    public var format = RunReport.formatPrefix + String(RunReport.formatVersion)
    static let formatPrefix = "rlctl-run-report/"
    static let formatVersion = 1
    public var workload: String
    public var tracer: String
    public var repetitions: [TraceSummary]

    /// The workload's name when a run report gave it, nil for a summary or trace folder (which do not know it).
    public var workloadName: String? { tracer == "summary" || workload.isEmpty || isTraceFolder ? nil : workload }
    /// Set for reports made from a trace folder, whose `workload` is just the folder's path.
    public var isTraceFolder = false

    enum CodingKeys: String, CodingKey { case format, workload, tracer, repetitions }

    public init(workload: String, tracer: String, repetitions: [TraceSummary]) {
        self.workload = workload
        self.tracer = tracer
        self.repetitions = repetitions
    }

    /// The report as `rlctl run --output` writes it: pretty-printed, keys sorted. Throws for a figure JSON
    /// cannot hold (a non-finite number).
    public func json() throws -> String {
        try ReportJSON.pretty(self)
    }

    /// The value of a metric in each repetition.
    public func values(of metric: Metric.Definition) -> [Double] {
        repetitions.map { metric.value(in: $0) }
    }
}

/// Why a trace or report given as input cannot be read, in one line.
public struct ReportInputError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension RunReport {
    /// Reads `path` as a trace folder (summarized with `options`), a summary (`rlctl summarize --format json`) or
    /// a run report (`rlctl run --output`): what `check` and `compare` accept.
    /// `host` picks one host's traces in a folder of several hosts' (``TraceOrigins``); it applies to trace folders only.
    public static func load(from path: String, options: TraceSummarizer.Options, host: String? = nil) throws(ReportInputError) -> RunReport {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ReportInputError("\(path): no such file or trace folder")
        }
        if isDirectory.boolValue {
            var report = RunReport(workload: path, tracer: TraceReaders.kind(of: path).rawValue,
                                   repetitions: [try TraceSummarizer.summarize(traceAt: path, options: options, host: host)])
            report.isTraceFolder = true
            return report
        }
        if let host { throw ReportInputError("\(path): --host \(host) picks a host's traces in a trace folder, and this is a file") }
        guard let data = FileManager.default.contents(atPath: path) else { throw ReportInputError("\(path): cannot read the file") }
        let decoder = JSONDecoder()
        if let report = try? decoder.decode(RunReport.self, from: data), !report.repetitions.isEmpty {
            // Older reports load (fields added since are optional); a newer one may mean what this rlctl cannot read.
            let version = report.format.hasPrefix(formatPrefix) ? Int(report.format.dropFirst(formatPrefix.count)) : nil
            guard let version, version <= formatVersion else {
                throw ReportInputError("\(path): a run report of format \"\(report.format)\", which this rlctl cannot read (it reads up to \(formatPrefix)\(formatVersion)): use the rlctl that wrote it, or a newer one")
            }
            return report
        }
        if let summary = try? decoder.decode(TraceSummary.self, from: data) {
            return RunReport(workload: path, tracer: "summary", repetitions: [summary])
        }
        throw ReportInputError("\(path): not a trace folder, a summary (rlctl summarize --format json) or a run report (rlctl run --output)")
    }
}

extension TraceSummarizer {
    /// Opens the trace folder at `path`, whichever tracer wrote it, and summarizes it.
    public static func summarize(traceAt path: String, options: Options, host: String? = nil) throws(ReportInputError) -> TraceSummary {
        do {
            var reader = try TraceReaders.open(path, host: host)
            return try summarize(&reader, options: options)
        } catch {
            throw ReportInputError("cannot read trace: \(error)")
        }
    }
}
