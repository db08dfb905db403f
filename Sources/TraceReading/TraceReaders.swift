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
        (try? CTFTraceFolders.find(at: path)) != nil
    }

    /// A reader for the trace at `path`.
    /// - Throws: ``TraceReadError`` when the path is missing, is not a trace, or cannot be read.
    public static func open(_ path: String) throws(TraceReadError) -> any TraceEventReader {
        switch kind(of: path) {
        case .embedded:
            return try EmbeddedTraceReader(path: path)
        case .ctf:
            return try CTFTraceReader(path: path)
        }
    }
}
