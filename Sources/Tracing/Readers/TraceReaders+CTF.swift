extension TraceReaders {
    static func openCTF(_ path: String) throws(TraceReadError) -> any TraceEventReader {
        try CTFTraceReader(path: path)
    }
}
