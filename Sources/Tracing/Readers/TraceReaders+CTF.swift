extension TraceReaders {
    static func openCTF(_ path: String) throws(TraceReadError) -> any TraceEventReader {
        // Reached for folders that are not embedded traces: a missing path gets the embedded reader's clear error.
        _ = try EmbeddedTraceReader(path: path)
        throw TraceReadError(path: path, reason: "not a trace rlctl can read")
    }
}
