import TraceModel

/// Opens any trace rlctl understands, choosing the reader by what the folder holds.
public enum TraceReaders {
    /// Which kind of trace a folder holds.
    public enum Kind: String, Sendable {
        /// Written by ``EmbeddedRecorder``.
        case embedded
        /// A CTF trace written by LTTng (or any CTF 1.8 trace with `runloop` events).
        case ctf
    }

    public static func kind(of path: String) -> Kind {
        EmbeddedTraceReader.recognizes(path: path) ? .embedded : .ctf
    }

    /// Whether `path` holds a trace at all (LTTng writes nothing for a session no process emitted into).
    public static func containsTrace(at path: String) -> Bool {
        (try? CTFTraceFolders.find(at: path)) != nil || TraceParts.kernelWaits(besides: path) != nil
    }

    /// A reader for the trace at `path`; `host` picks one host's traces in a folder of several hosts' (a relay
    /// daemon's output, ``TraceOrigins``), which are never merged into one stream.
    /// - Throws: ``TraceReadError`` when the path is missing, is not a trace, or cannot be read, when `host` names
    ///   no host there, and when the folder holds several hosts' traces and `host` does not choose one.
    public static func open(_ path: String, host: String? = nil) throws(TraceReadError) -> any TraceEventReader {
        if let host { return try open(TraceOrigins.find(at: path, selecting: host), path: path) }
        let origins = try? TraceOrigins.find(at: path)
        if let origins, origins.count > 1 { return try open(origins, path: path) }
        var reader: any TraceEventReader
        let kernelWaits = TraceParts.kernelWaits(besides: path)
        // A recording in a folder below the one given (runs/, holding runs/rec/ust/uid/0/64-bit and rec's parts):
        // its parts are found from its own folder.
        if kernelWaits == nil, TraceParts.kernelView(besides: path) == nil, let origin = origins?.first,
           origin.kernelView != nil || origin.kernelWaits != nil {
            return try open(origin)
        }
        if let kernelWaits, (try? CTFTraceFolders.find(at: path)) == nil {
            // record --any where only the kernel recorded waits (no process loaded the interposer; LTTng then
            // writes no trace of its own): those waits are the trace.
            reader = try TracePartMergingReader.open(kernelWaits)
        } else {
            switch kind(of: path) {
            case .embedded:
                reader = try EmbeddedTraceReader(path: path)
            case .ctf:
                reader = try CTFTraceReader(path: path)
            }
            if let kernelWaits { reader = try TracePartMergingReader(trace: reader, part: .kernelWaits(kernelWaits)) }
        }
        // The kernel's view of the loops' threads, recorded beside them (rlctl run and record --kernel).
        guard let kernelView = TraceParts.kernelView(besides: path) else { return reader }
        return try TracePartMergingReader(trace: reader, part: .kernelView(kernelView))
    }

    private static func open(_ origins: [TraceOrigin], path: String) throws(TraceReadError) -> any TraceEventReader {
        guard origins.count == 1 else {
            let names = origins.map(\.name).joined(separator: ", ")
            throw TraceReadError(path: path, reason: "holds the traces of \(origins.count) hosts or sessions (\(names)), which are read one at a time: choose one with --host NAME (rlctl summarize and check take them all)")
        }
        return try open(origins[0])
    }
}
