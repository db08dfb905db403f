import Glibc

/// The embedded recordings being written on this machine: a recorder registers its trace folder here while it
/// records (``EmbeddedRecorder``), so that `rlctl top` finds every one, as it finds LTTng's sessions.
///
/// The registry is a folder of one small file per recording, `PID-ID`, holding the trace folder's absolute path:
/// `$RLCTL_LIVE_DIR` when set (the tests keep their own), else `$XDG_RUNTIME_DIR/rlctl-live`, else
/// `/tmp/rlctl-live-UID`. A recording that stops removes its file; one whose process died without stopping
/// (SIGKILL, a crash) leaves it, and ``list()`` removes it once it finds the process gone.
public enum LiveRecordings {
    public struct Entry: Sendable, Equatable {
        public var processID: Int32
        /// The trace folder being written.
        public var path: String
        /// The registration file.
        public var file: String
    }

    public static var folder: String {
        if let chosen = environment("RLCTL_LIVE_DIR"), !chosen.isEmpty { return chosen }
        if let runtime = environment("XDG_RUNTIME_DIR"), !runtime.isEmpty { return runtime + "/rlctl-live" }
        return "/tmp/rlctl-live-\(getuid())"
    }

    /// Registers a recording of this process into `tracePath`; returns the registration file (for
    /// ``unregister(_:)``), or nil when the registry cannot be written (the recording goes on, unseen by top).
    public static func register(tracePath: String) -> String? {
        let registry = folder
        if mkdir(registry, 0o700) != 0 && errno != EEXIST { return nil }
        let absolute = tracePath.hasPrefix("/") ? tracePath : currentDirectory() + "/" + tracePath
        let file = registry + "/\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let temporary = file + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        let bytes = Array((absolute + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        // Renamed into place whole: a reader never sees half a path.
        guard written == bytes.count, rename(temporary, file) == 0 else {
            unlink(temporary)
            return nil
        }
        return file
    }

    public static func unregister(_ file: String) {
        unlink(file)
    }

    /// The recordings registered now whose process is alive; the files of dead processes are removed.
    public static func list() -> [Entry] {
        let registry = folder
        guard let directory = opendir(registry) else { return [] }
        defer { closedir(directory) }
        var entries: [Entry] = []
        while let item = readdir(directory) {
            let name = withUnsafePointer(to: item.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
            guard !name.hasSuffix(".new"), let dash = name.firstIndex(of: "-"), let pid = Int32(name[..<dash]) else { continue }
            let file = registry + "/" + name
            guard kill(pid, 0) == 0 || errno == EPERM else {
                unlink(file)
                continue
            }
            guard let path = SmallFile.text(at: file)?.split(separator: "\n").first.map(String.init), path.hasPrefix("/") else { continue }
            entries.append(Entry(processID: pid, path: path, file: file))
        }
        return entries.sorted { ($0.processID, $0.file) < ($1.processID, $1.file) }
    }

    private static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    private static func currentDirectory() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return "." }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
