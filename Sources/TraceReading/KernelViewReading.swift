import TraceModel

/// The parts of a trace: traces of their own in a trace's folder, written by rlctl beside what the programs
/// wrote, read with the trace and never taken for a trace (a host, a session) apart. Each says what it is in its
/// metadata (`rlctl_trace_part`).
enum TraceParts {
    /// The kernel view (``TraceSchema/kernelViewFolder``): the kernel's side of the loops' threads.
    static func kernelView(besides path: String) -> String? {
        find(TraceSchema.kernelViewFolder, part: TraceSchema.kernelViewPart, besides: path)
    }

    /// The wait calls the kernel recorded (``TraceSchema/kernelWaitsFolder``), for what the wait interposer could
    /// not reach.
    static func kernelWaits(besides path: String) -> String? {
        find(TraceSchema.kernelWaitsFolder, part: TraceSchema.kernelWaitsPart, besides: path)
    }

    /// Whether `directory` is a part of the trace around it.
    static func isPart(_ directory: String) -> Bool {
        let part = TraceOrigins.metadataEnvironment(of: directory)["rlctl_trace_part"]
        return part == TraceSchema.kernelViewPart || part == TraceSchema.kernelWaitsPart
    }

    private static func find(_ folder: String, part: String, besides path: String) -> String? {
        let candidate = (path.hasSuffix("/") ? String(path.dropLast()) : path) + "/" + folder
        return TraceOrigins.metadataEnvironment(of: candidate)["rlctl_trace_part"] == part ? candidate : nil
    }
}

/// A trace's events and one of its parts' (``TraceParts``), merged by time into one stream (on equal times the
/// trace's first: a kernel event describes a moment the loop's events around it already bracket). Its health is the
/// trace's, with what the part's own files lost or could not keep (a stream cut short or deleted, a missing end
/// file) said as the part's damage; the records the kernel recorder dropped are its `kernel_lost` events, for the
/// analysis.
struct TracePartMergingReader: TraceEventReader {
    /// Which part it is: what its damage is said as, and whether its events are the loops' own.
    struct Part {
        var folder: String
        /// "the kernel view".
        var label: String
        /// Whether its events count as events read (the kernel's wait calls do; the kernel view's records, which
        /// the summary says apart, do not: a trace whose loops' streams are gone holds no events, whatever the
        /// kernel saw).
        var eventsAreTheLoops: Bool
        /// Its folder's name (`rlctl-kernel`).
        var name: String { folder.split(separator: "/").last.map(String.init) ?? folder }

        static func kernelView(_ folder: String) -> Part { Part(folder: folder, label: "the kernel view", eventsAreTheLoops: false) }
        static func kernelWaits(_ folder: String) -> Part {
            Part(folder: folder, label: "the kernel's trace of the wait calls", eventsAreTheLoops: true)
        }
    }

    private var trace: any TraceEventReader
    private var kernel: EmbeddedTraceReader
    private let part: Part
    private var nextOfTrace: TraceEvent?
    private var nextOfKernel: TraceEvent?
    private var started = false

    /// A part read as a trace of its own (when there is nothing else to merge it with).
    static func open(_ folder: String) throws(TraceReadError) -> EmbeddedTraceReader {
        do { return try EmbeddedTraceReader(path: folder) } catch {
            throw TraceReadError(path: error.path, offset: error.offset, reason: Part.kernelWaits(folder).label + ": " + error.reason)
        }
    }

    init(trace: any TraceEventReader, part: Part) throws(TraceReadError) {
        self.trace = trace
        self.part = part
        do { kernel = try EmbeddedTraceReader(path: part.folder) } catch {
            throw TraceReadError(path: error.path, offset: error.offset, reason: part.label + ": " + error.reason)
        }
    }

    var health: TraceHealth {
        var combined = trace.health
        let view = kernel.health
        if part.eventsAreTheLoops { combined.eventsRead &+= view.eventsRead }
        combined.eventsLost = combined.eventsLost.addingLoss(view.eventsLost)
        combined.packetsLost &+= view.packetsLost
        combined.eventsSkipped &+= view.eventsSkipped
        for window in view.lossWindows {
            combined.noteLossWindow(.init(stream: part.name + "/" + window.stream, from: window.from, to: window.to,
                                          events: window.events))
        }
        combined.damage += view.damage.map { part.label + ": " + $0 }
        if view.recordingCutOff {
            combined.damage.append("\(part.label) is cut off (its end file is missing): rlctl was killed while it recorded")
            combined.recordingCutOff = true
        }
        if let failure = view.writeFailure { combined.damage.append("\(part.label) could not be written: \(failure)") }
        return combined
    }

    mutating func next() throws(TraceReadError) -> TraceEvent? {
        if !started {
            started = true
            nextOfTrace = try trace.next()
            nextOfKernel = try readKernel()
        }
        switch (nextOfTrace, nextOfKernel) {
        case (nil, nil):
            return nil
        case (let event?, nil):
            nextOfTrace = try trace.next()
            return event
        case (nil, let event?):
            nextOfKernel = try readKernel()
            return event
        case (let event?, let kernelEvent?):
            if event.timestamp <= kernelEvent.timestamp {
                nextOfTrace = try trace.next()
                return event
            }
            nextOfKernel = try readKernel()
            return kernelEvent
        }
    }

    private mutating func readKernel() throws(TraceReadError) -> TraceEvent? {
        do { return try kernel.next() } catch {
            throw TraceReadError(path: error.path, offset: error.offset, reason: part.label + ": " + error.reason)
        }
    }
}
