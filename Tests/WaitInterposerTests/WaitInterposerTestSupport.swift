import CWaitInterposer
import Foundation
import Glibc
import TestSupport
import Testing
import TraceModel
import TraceReading

/// A test's setup failed (no compiler, no interposer): said as the test's failure.
struct SetupError: Error, CustomStringConvertible {
    let description: String
}

/// The test program (Programs/waits.c), compiled once per test process with the system's C compiler.
enum WaitsProgram {
    static let path: Result<String, SetupError> = compile()

    private static func compile() -> Result<String, SetupError> {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "Programs/waits.c").path
        let folder = FileManager.default.temporaryDirectory.appending(path: "wait-interposer-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let output = folder + "/waits"
        do {
            let result = try runProcess("/usr/bin/env", ["cc", "-O1", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                                                         "-o", output, source, "-lpthread"])
            guard result.status == 0 else {
                return .failure(SetupError(description: "cc \(source) failed: \(result.stderr)"))
            }
            return .success(output)
        } catch {
            return .failure(SetupError(description: "cannot run cc: \(error)"))
        }
    }
}

/// The interposer built by the WaitInterposerBuilder plugin, found as rlctl finds it.
func interposerPath() throws -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    guard rl_wait_interposer_path(&buffer, buffer.count) == 0 else {
        throw SetupError(description: String(cString: rl_wait_interposer_error()))
    }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// One run of the test program under the interposer, as `rlctl record --any` sets it up, read back.
struct InterposedRun {
    let folder: String
    let output: ProcessOutput
    let events: [TraceEvent]
    let health: TraceHealth
    /// Every file of the folder but the metadata (markers and streams).
    let files: Set<String>

    /// The numbers the program printed after `label` ("pid 12" → values("pid") == [12]), in order.
    func values(_ label: String) -> [Int32] {
        output.stdout.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            return words.count == 2 && words[0] == label ? Int32(words[1]) : nil
        }
    }

    var pid: Int32 { values("pid").first ?? -1 }

    /// The epoll descriptors a thread created, in order (the program prints "ep <tid> <descriptor>").
    func epollDescriptors(thread: Int32) -> [Int32] {
        output.stdout.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            return words.count == 3 && words[0] == "ep" && Int32(words[1]) == thread ? Int32(words[2]) : nil
        }
    }

    /// The payloads of one thread's events, in order.
    func payloads(thread: Int32) -> [TraceEvent.Payload] {
        events.filter { $0.threadID == thread }.map(\.payload)
    }

    /// A marker's `key=value` lines (nil when the file is absent).
    func marker(_ name: String) -> [String: String]? {
        guard let text = try? String(contentsOfFile: folder + "/" + name, encoding: .utf8) else { return nil }
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
        }
        return values
    }

    /// Each wait of a thread: its begin and end events.
    func waits(thread: Int32) -> [(begin: TraceEvent, end: TraceEvent)] {
        let mine = events.filter { $0.threadID == thread }
        var pairs: [(begin: TraceEvent, end: TraceEvent)] = []
        var open: TraceEvent?
        for event in mine {
            switch event.payload {
            case .waitBegin: open = event
            case .waitEnd: if let begin = open { pairs.append((begin, event)) }; open = nil
            default: break
            }
        }
        return pairs
    }
}

/// Runs Programs/waits.c with `arguments` under the interposer into a new trace folder, then reads it back. Like
/// rlctl, it writes the trace's `.end` only when every process marker that started has ended.
func runInterposed(_ arguments: [String], follow: Bool = false, tracer: String = "embedded",
                   sourceLocation: SourceLocation = #_sourceLocation) throws -> InterposedRun {
    let program = try WaitsProgram.path.get()
    let folder = FileManager.default.temporaryDirectory.appending(path: "wait-interposer-trace-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    var generator = SystemRandomNumberGenerator()
    let uuid = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
    try TraceSchema.metadata(uuid: uuid, clockOffsetNanoseconds: 0, hostname: "test")
        .write(toFile: folder + "/metadata", atomically: true, encoding: .utf8)
    var environment: [String: String?] = [
        "LD_PRELOAD": try interposerPath(),
        "RLCTL_ANY_TRACE_DIR": folder,
        "RLCTL_ANY_UUID": uuid.map { String(format: "%02x", $0) }.joined(),
        "RLCTL_ANY_TRACER": tracer,
        "RLCTL_ANY_ROOT_PID": nil,
        // Small buffers: a test thread needs little, and each is populated at its first event.
        "RLCTL_ANY_SUB_BUFFER_SIZE": "16384",
        "RLCTL_ANY_SUB_BUFFER_COUNT": "4",
        // The program's own copy: not following children, the interposer takes its variables out of the environment.
        "WAITS_TRACE_DIR": folder,
    ]
    environment["RLCTL_ANY_FOLLOW"] = follow ? "1" : nil
    let output = try runProcess(program, arguments, ProcessOptions(environment: environment, timeout: .seconds(20)),
                                sourceLocation: sourceLocation)
    let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder)).subtracting(["metadata"])
    let starts = names.filter { $0.hasPrefix(".proc-") && $0.hasSuffix(".start") }
    if starts.allSatisfy({ names.contains($0.dropLast(".start".count) + ".end") }) {
        try "".write(toFile: folder + "/" + TraceSchema.endFileName, atomically: true, encoding: .utf8)
    }
    var reader = try EmbeddedTraceReader(path: folder)
    var events: [TraceEvent] = []
    while let event = try reader.next() { events.append(event) }
    return InterposedRun(folder: folder, output: output, events: events, health: reader.health, files: names)
}

/// The wait_thread event the program's threads send (the program is named `waits`).
func announcement(pid: Int32, ppid: Int32) -> TraceEvent.Payload {
    .waitThread(pid: pid, ppid: ppid, thread: "waits", process: "waits")
}

/// `count` waits that each time out after `timeout` milliseconds on the epoll descriptor `ep`.
func idleEpollWaits(_ count: Int, ep: Int32, maxEvents: UInt32 = 4, milliseconds: Int64) -> [TraceEvent.Payload] {
    Array(repeating: [.waitBegin(call: .epollWait, target: ep, setSize: maxEvents, timeout: milliseconds * 1_000_000),
                      .waitEnd(ready: 0, error: 0)], count: count).flatMap { $0 }
}
