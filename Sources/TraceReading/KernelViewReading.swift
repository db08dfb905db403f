import TraceModel

/// The kernel view of a trace (``TraceSchema/kernelViewFolder``): a trace of its own beside the trace's streams,
/// written by rlctl's kernel recorder, read with the trace and never taken for a trace (a host, a session) apart.
enum KernelViewFolders {
    /// The kernel view belonging to the trace at `path` (an embedded trace folder or an LTTng output folder), if it
    /// has one.
    static func find(besides path: String) -> String? {
        let candidate = (path.hasSuffix("/") ? String(path.dropLast()) : path) + "/" + TraceSchema.kernelViewFolder
        return isKernelView(candidate) ? candidate : nil
    }

    /// Whether `directory` holds a kernel view: its metadata says it is one (`rlctl_trace_part`).
    static func isKernelView(_ directory: String) -> Bool {
        TraceOrigins.metadataEnvironment(of: directory)["rlctl_trace_part"] == TraceSchema.kernelViewPart
    }
}

/// A trace's events and its kernel view's, merged by time into one stream (on equal times the trace's first: a
/// kernel event describes a moment the loop's events around it already bracket). Its health is the trace's, with
/// what the kernel view's own files lost or could not keep (a stream cut short or deleted, a missing end file) said as
/// the kernel view's damage; the records the kernel recorder dropped are its `kernel_lost` events, for the analysis.
struct KernelViewMergingReader: TraceEventReader {
    private var trace: any TraceEventReader
    private var kernel: EmbeddedTraceReader
    private var nextOfTrace: TraceEvent?
    private var nextOfKernel: TraceEvent?
    private var started = false

    init(trace: any TraceEventReader, kernelView folder: String) throws(TraceReadError) {
        self.trace = trace
        do { kernel = try EmbeddedTraceReader(path: folder) } catch {
            throw TraceReadError(path: error.path, offset: error.offset, reason: "the kernel view: " + error.reason)
        }
    }

    var health: TraceHealth {
        var combined = trace.health
        let view = kernel.health
        // Events read are the loops' (a trace whose loops' streams are gone holds no events, whatever the kernel saw);
        // the kernel view's own count is its records, which the summary says apart.
        combined.eventsLost = combined.eventsLost.addingLoss(view.eventsLost)
        combined.packetsLost &+= view.packetsLost
        combined.eventsSkipped &+= view.eventsSkipped
        for window in view.lossWindows {
            combined.noteLossWindow(.init(stream: TraceSchema.kernelViewFolder + "/" + window.stream, from: window.from, to: window.to,
                                          events: window.events))
        }
        combined.damage += view.damage.map { "the kernel view: " + $0 }
        if view.recordingCutOff {
            combined.damage.append("the kernel view is cut off (its end file is missing): rlctl was killed while it recorded")
            combined.recordingCutOff = true
        }
        if let failure = view.writeFailure { combined.damage.append("the kernel view could not be written: \(failure)") }
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
            throw TraceReadError(path: error.path, offset: error.offset, reason: "the kernel view: " + error.reason)
        }
    }
}
