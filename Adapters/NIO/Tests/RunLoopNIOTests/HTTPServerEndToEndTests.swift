import Foundation
import RunLoopCore
import Testing
import TestSupport
import TraceReading

/// The example server, built beside these tests, recorded the way `rlctl record` records it (the embedded tracer
/// chosen through the environment) and read back: a /slow request is a long nio_io on one event loop.
@Suite struct HTTPServerEndToEndTests {
    static let server: String = {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [folder, folder.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("nio-http-server").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return folder.appendingPathComponent("nio-http-server").path
    }()

    @Test func aSlowRequestIsANIOIOEventAsLongAsItsBlockOnTheLoopThatServedIt() throws {
        let trace = temporaryPath("nio-http-server.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let process = try RunningProcess(Self.server, ["--port", "0", "--threads", "2", "--duration", "3s", "--probe", "10ms"],
                                         ProcessOptions(environment: ["RLCTL_TRACER": "embedded", "RLCTL_TRACE_DIR": trace],
                                                        timeout: .seconds(60)))
        #expect(eventually { process.outputSoFar.stdout.contains("\n") })
        let line = process.outputSoFar.stdout
        let port = try #require(line.split(separator: "\n").first.flatMap { Int($0.replacing("listening on 127.0.0.1:", with: "")) },
                                "the server prints its port: \(line)")
        for _ in 0..<3 { #expect(loopbackGet(port: port, path: "/")?.body == "ok\n") }
        #expect(loopbackGet(port: port, path: "/slow?ms=200")?.body == "slept 200 ms\n")
        let output = process.wait()
        #expect(output.termination == .exited(0), "\(output.stderr)")

        var reader = try TraceReaders.open(trace)
        var adapted: [UInt64: LoopAdapter] = [:]
        var ticks: [UInt64: Int] = [:]
        var longReads: [UInt64] = []
        var probed: Set<UInt64> = []
        while let event = try reader.next() {
            switch event.payload {
            case .loopAdapted(let loopID, let adapter, _): adapted[loopID] = adapter
            case .nioTick(let loopID, _, _, _, _): ticks[loopID, default: 0] += 1
            case .nioIO(let loopID, _, .read, let start, let end) where end - start >= 200_000_000: longReads.append(loopID)
            case .probeFire(let loopID, _, _, _): probed.insert(loopID)
            default: break
            }
        }
        #expect(reader.health.eventsLost == 0 && reader.health.packetsLost == 0 && !reader.health.recordingCutOff)
        #expect(adapted.count == 2 && adapted.values.allSatisfy { $0 == .nio }, "two NIO loops: \(adapted)")
        #expect(Set(ticks.keys) == Set(adapted.keys), "both loops ticked: \(ticks)")
        #expect(probed == Set(adapted.keys), "the probe ran on both loops")
        #expect(longReads.count == 1, "one read of 200 ms or more: the /slow request's")
        #expect(longReads.allSatisfy { adapted[$0] == .nio })
    }

    @Test(arguments: [["--threads", "0"], ["--duration", "6"], ["--port", "70000"], ["--what", "1"], ["--port"]])
    func badFlagsAreOneLineAndExitTwo(arguments: [String]) throws {
        let output = try runProcess(Self.server, arguments, ProcessOptions(timeout: .seconds(30)))
        #expect(output.termination == .exited(2))
        #expect(output.stderr.hasPrefix("nio-http-server: ") && output.stderr.filter { $0 == "\n" }.count == 1, "\(output.stderr)")
        #expect(output.stdout.isEmpty)
    }
}
