import Foundation
import Glibc
import RunLoopCore
import TraceModel

/// The environment variables between `rlctl record --any` and the wait interposer it preloads
/// (librlctl-wait-interposer.so, Sources/CWaitInterposer).
public enum WaitInterposerEnvironment {
    public static let traceFolder = "RLCTL_ANY_TRACE_DIR"
    public static let uuid = "RLCTL_ANY_UUID"
    public static let tracer = "RLCTL_ANY_TRACER"
    public static let lttngProvider = "RLCTL_ANY_LTTNG_PROVIDER"
    public static let follow = "RLCTL_ANY_FOLLOW"
    public static let rootProcess = "RLCTL_ANY_ROOT_PID"
    public static let switchedFolder = "RLCTL_ANY_SWITCHED_DIR"
    /// Set when rlctl's kernel view records the waits of the threads no interposer claims: the token the interposer
    /// claims each thread's with, at its first wait through libc (rl_kernel_probe_record.h, RL_KP_CLAIM).
    public static let kernelWaits = "RLCTL_ANY_KERNEL_WAITS"
    public static let preload = "LD_PRELOAD"
}

/// One recording of any program's wait calls: the trace folder prepared before the program starts (the metadata,
/// written by rlctl since the interposer cannot build it), the program's environment, and afterwards what each
/// process the interposer loaded into left behind.
///
/// Each recording process writes a hidden start marker when it starts recording and an end marker when its
/// recording is complete (`.proc-<id>.start`, `.proc-<id>.end`, `key=value` lines). The trace's own `.end` is
/// written here, once every started process has ended its recording: a process killed mid-run leaves the trace
/// marked as cut off, as the embedded recorder's own traces are.
public struct AnyProgramRecording: Sendable {
    public enum Tracer: Sendable, Equatable {
        case embedded
        /// The interposer emits through the LTTng provider at this path.
        case lttng(provider: String)
    }

    /// Where the trace (embedded) or the process markers (LTTng) go.
    public let folder: String
    public let tracer: Tracer
    public let followChildren: Bool
    public let interposer: String
    /// The token with which the interposer claims a thread's waits from rlctl's kernel view, which records those of
    /// the threads it does not claim; 0: the kernel view records no waits.
    public let claimToken: UInt32
    private let uuid: [UInt8]

    public init(folder: String, tracer: Tracer, followChildren: Bool, interposer: String, claimToken: UInt32 = 0) throws(RecorderError) {
        self.folder = folder
        self.tracer = tracer
        self.followChildren = followChildren
        self.interposer = interposer
        self.claimToken = claimToken
        uuid = TraceSchema.newUUID()
        if case .embedded = tracer { try writeMetadata() }
    }

    private func writeMetadata() throws(RecorderError) {
        let metadata = TraceSchema.metadata(uuid: uuid, clockOffsetNanoseconds: TraceSchema.currentClockOffsetNanoseconds(),
                                            hostname: ProcessInfo.processInfo.hostName)
        do { try metadata.write(toFile: folder + "/metadata", atomically: true, encoding: .utf8) } catch {
            throw RecorderError("cannot write \(folder)/metadata: \(error.localizedDescription)")
        }
    }

    /// The program's environment: `base` with the interposer first in LD_PRELOAD (the program's own preloads kept
    /// after it) and the interposer's settings.
    public func environment(_ base: [String: String]) -> [String: String] {
        var environment = base
        let own = base[WaitInterposerEnvironment.preload].map { $0.split(whereSeparator: { $0 == ":" || $0 == " " }).map(String.init) } ?? []
        // A forked child's LTTng events would carry its parent's vtid and vpid (lttng-ust caches them) unless
        // lttng-ust's fork wrapper re-registers it: lttng-ust(3), liblttng-ust-fork.so.
        var ours = [interposer]
        if case .lttng = tracer, followChildren, let fork = Self.lttngForkLibrary { ours.append(fork) }
        environment[WaitInterposerEnvironment.preload] = (ours + own.filter { !ours.contains($0) }).joined(separator: ":")
        environment[WaitInterposerEnvironment.traceFolder] = folder
        environment[WaitInterposerEnvironment.uuid] = uuid.map { String(format: "%02x", $0) }.joined()
        switch tracer {
        case .embedded:
            environment[WaitInterposerEnvironment.tracer] = "embedded"
            environment[WaitInterposerEnvironment.lttngProvider] = nil
        case .lttng(let provider):
            environment[WaitInterposerEnvironment.tracer] = "lttng"
            environment[WaitInterposerEnvironment.lttngProvider] = provider
        }
        environment[WaitInterposerEnvironment.follow] = followChildren ? "1" : nil
        environment[WaitInterposerEnvironment.rootProcess] = nil
        environment[WaitInterposerEnvironment.switchedFolder] = nil
        environment[WaitInterposerEnvironment.kernelWaits] = claimToken > 0 ? "\(claimToken)" : nil
        // The program records into the folder; it must not also install a RunLoopCore tracer there.
        environment[TracerEnvironment.folder] = nil
        return environment
    }

    /// lttng-ust's fork wrapper, where it is installed (it comes with liblttng-ust).
    static let lttngForkLibrary = InstalledFiles.find(["liblttng-ust-fork.so.1"], under: ["/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib"])

    /// What one process's markers say.
    public struct ProcessRecord: Sendable, Equatable {
        public var marker: String
        public var pid: Int32
        public var ppid: Int32
        public var executable: String
        public var name: String
        /// False when the process never completed its recording (killed, or crashed).
        public var completed: Bool
        /// exit, exec (the process became another program, recorded on under the same pid), stopped.
        public var ending: String?
        public var eventsRecorded: UInt64
        public var eventsDiscarded: UInt64
        public var writeErrors: UInt64
        public var threadsWithoutBuffer: UInt64
        /// Whether a thread of it waited through libc (its `.waited` marker): one that never did lost nothing,
        /// even when it never completed its recording.
        public var waited: Bool
        /// The processes it forked while it recorded (known once it completed its recording).
        public var children: UInt64
    }

    /// Every process the interposer recorded, and whether the trace is complete.
    public struct Outcome: Sendable {
        public var processes: [ProcessRecord]
        /// Processes whose recording lost its last events: a process that never waited had none to lose (a Go
        /// program ends by a system call that no exit hook sees).
        public var cutOff: [ProcessRecord] { processes.filter { !$0.completed && $0.waited } }
        public var writeErrors: UInt64 { processes.reduce(0) { $0 + $1.writeErrors } }
        /// Events the processes dropped: full buffers, and waits made by a signal handler that interrupted the
        /// recorder (those appear in no packet header, so only here).
        public var eventsDiscarded: UInt64 { processes.reduce(0) { $0 + $1.eventsDiscarded } }
        public var threadsWithoutBuffer: UInt64 { processes.reduce(0) { $0 + $1.threadsWithoutBuffer } }

        /// Processes that exec'd a program which never recorded: the environment it got lacked the interposer (the
        /// process cleared or replaced it), or the program is one the loader cannot preload into.
        public var execsNotRecorded: [ProcessRecord] {
            processes.filter { record in
                record.ending == "exec" && !processes.contains { $0.pid == record.pid && Self.generation($0.marker) > Self.generation(record.marker) }
            }
        }

        /// A marker's recording number within its pid: `<pid>` is 0, `<pid>.N` is N (one per exec'd image).
        static func generation(_ marker: String) -> Int {
            guard let dot = marker.firstIndex(of: ".") else { return 0 }
            return Int(marker[marker.index(after: dot)...]) ?? 0
        }
    }

    /// Reads the markers, and writes the trace's `.end` when every process completed its recording (embedded).
    public func finish() -> Outcome {
        SwitchedFolders.merge(into: folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        var records: [ProcessRecord] = []
        for name in names.sorted() where name.hasPrefix(".proc-") && name.hasSuffix(".start") {
            let marker = String(name.dropFirst(".proc-".count).dropLast(".start".count))
            let start = Self.readMarker(folder + "/" + name)
            let end = FileManager.default.fileExists(atPath: "\(folder)/.proc-\(marker).end")
                ? Self.readMarker("\(folder)/.proc-\(marker).end") : nil
            func number(_ values: [String: String]?, _ key: String) -> UInt64 { values?[key].flatMap { UInt64($0) } ?? 0 }
            records.append(ProcessRecord(
                marker: marker, pid: Int32(start["pid"] ?? "") ?? 0, ppid: Int32(start["ppid"] ?? "") ?? 0,
                executable: start["exe"] ?? "", name: start["comm"] ?? "", completed: end != nil, ending: end?["reason"],
                eventsRecorded: number(end, "events_recorded"), eventsDiscarded: number(end, "events_discarded"),
                writeErrors: number(end, "write_errors"), threadsWithoutBuffer: number(end, "threads_without_buffer"),
                waited: FileManager.default.fileExists(atPath: "\(folder)/.proc-\(marker).waited"), children: number(end, "children")))
        }
        let outcome = Outcome(processes: records)
        if case .embedded = tracer, !records.isEmpty, outcome.cutOff.isEmpty {
            _ = FileManager.default.createFile(atPath: folder + "/" + TraceSchema.endFileName, contents: Data("complete\n".utf8))
        }
        return outcome
    }

    private static func readMarker(_ path: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return values
    }
}
