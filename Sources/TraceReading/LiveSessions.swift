import Foundation
import TraceModel

/// The LTTng live sessions a relay daemon serves (`lttng create --live`, `rlctl record --relayd`), as its live
/// protocol lists them: what ``CTFTraceReader/init(liveSession:stallTimeout:)`` follows.
public struct LiveSession: Sendable, Equatable {
    /// `net://RELAY[:LIVE_PORT]/host/HOSTNAME/SESSION`.
    public var url: String
    public var host: String
    public var name: String
    /// Streams the session has so far (0 until a traced process emitted), and viewers attached to it.
    public var streams: Int
    public var clients: Int
}

public enum LiveSessions {
    /// The sessions on the relay daemon at `relay` (`net://HOST[:LIVE_PORT]`), through babeltrace2's
    /// `src.ctf.lttng-live` (its CLI's session listing).
    /// - Throws: ``TraceReadError`` saying why, when the relay cannot be reached or babeltrace2 is missing.
    public static func list(relay: String, timeout: Duration = .seconds(10)) throws(TraceReadError) -> [LiveSession] {
        let environment = ProcessInfo.processInfo.environment
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        guard let babeltrace = path.split(separator: ":").map({ "\($0)/babeltrace2" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TraceReadError(path: relay, reason: "babeltrace2 is not installed (it lists a relay daemon's live sessions): install it (scripts/install-deps.sh)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: babeltrace)
        process.arguments = ["--input-format=lttng-live", relay]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw TraceReadError(path: relay, reason: "cannot run babeltrace2: \(error.localizedDescription)") }
        try? output.fileHandleForWriting.close()
        // Drained while it runs, so that a long listing cannot fill the pipe and stall it.
        let collected = Collected()
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            collected.data = reader.readDataToEndOfFile()
            collected.done.signal()
        }
        let deadline = ContinuousClock.now + timeout
        while process.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            throw TraceReadError(path: relay, reason: "the relay daemon did not list its sessions within \(timeout)")
        }
        collected.done.wait()
        let text = String(decoding: collected.data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            let reason = text.split(separator: "\n").first { $0.contains("Failed to connect") || $0.contains("Connection refused") }
            throw TraceReadError(path: relay, reason: reason != nil ? "cannot connect to the relay daemon's live port" : "cannot list the relay daemon's live sessions (babeltrace2: \(text.split(separator: "\n").last ?? ""))")
        }
        return text.split(separator: "\n").compactMap { parse(String($0)) }
    }

    private final class Collected: @unchecked Sendable {
        var data = Data()
        let done = DispatchSemaphore(value: 0)
    }

    /// One line of the listing: `net://localhost/host/vm/s (timer = 1000000, 2 stream(s), 0 client(s) connected)`.
    static func parse(_ line: String) -> LiveSession? {
        guard let space = line.firstIndex(of: " ") else { return nil }
        let url = String(line[..<space])
        guard let hostRange = url.range(of: "/host/") else { return nil }
        let rest = url[hostRange.upperBound...].split(separator: "/", maxSplits: 1)
        guard rest.count == 2 else { return nil }
        func number(before suffix: String) -> Int {
            guard let range = line.range(of: suffix) else { return 0 }
            return Int(line[..<range.lowerBound].split(separator: " ").last ?? "") ?? 0
        }
        return LiveSession(url: url, host: String(rest[0]), name: String(rest[1]),
                           streams: number(before: " stream(s)"), clients: number(before: " client(s)"))
    }
}
