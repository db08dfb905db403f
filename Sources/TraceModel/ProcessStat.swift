import Glibc

/// The fields rlctl reads from a task's line in /proc/PID/stat (or /proc/PID/task/TID/stat), the kernel's own
/// account of it. The command name may hold spaces and parentheses, so it runs to the last `)`.
public struct ProcessStat: Sendable, Equatable {
    public var name: String
    /// R, S, D, Z…
    public var state: Character
    public var parent: Int32
    /// The kernel's PF_* flags.
    public var flags: UInt64
    /// When it started, in clock ticks since boot.
    public var startTime: UInt64

    /// PF_KTHREAD: a kernel thread, with no program of its own.
    public var isKernelThread: Bool { flags & 0x0020_0000 != 0 }

    /// Process `pid`'s line, or its thread `thread`'s; nil when there is none (the task is gone).
    public init?(pid: Int32, thread: Int32? = nil) {
        let path = "/proc/\(pid)" + (thread.map { "/task/\($0)" } ?? "") + "/stat"
        guard let line = SmallFile.text(at: path) else { return nil }
        self.init(parsing: line)
    }

    public init?(parsing line: String) {
        guard let open = line.firstIndex(of: "("), let close = line.lastIndex(of: ")") else { return nil }
        // After the name: state, ppid, pgrp, session, tty, tpgid, flags, … start time (the 20th).
        let fields = line[line.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let state = fields[0].first, let parent = Int32(fields[1]), let flags = UInt64(fields[6]),
              let startTime = UInt64(fields[19]) else { return nil }
        name = String(line[line.index(after: open)..<close])
        self.state = state
        self.parent = parent
        self.flags = flags
        self.startTime = startTime
    }
}

/// A small file's text (/proc's and /sys's: one read of at most 8 KiB), without Foundation; nil when it cannot be
/// read or is empty.
enum SmallFile {
    static func text(at path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let n = read(fd, &bytes, bytes.count)
        guard n > 0 else { return nil }
        return String(decoding: bytes[0..<n], as: UTF8.self)
    }
}
