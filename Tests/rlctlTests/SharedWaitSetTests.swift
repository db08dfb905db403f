import Foundation
import Glibc
import Testing
import TestSupport

/// A wait set several threads take turns at, recorded with `rlctl record --any` (the interposer) and the kernel view:
/// tokio's multi-threaded runtime, two workers sharing one epoll descriptor, each parked on a futex while the other
/// holds the I/O driver. Built from Debian's packaged crates (librust-tokio-dev, cargo: scripts/install-deps.sh).
@Suite(.serialized, .enabled(if: kernelViewRequirement.shouldRun, kernelViewRequirement.skipComment))
struct SharedWaitSetTests {
    static let tokio: TestRequirement = {
        let missing = ["/usr/bin/cargo", "/usr/bin/rustc"].filter { !FileManager.default.isExecutableFile(atPath: $0) }
            + (((try? FileManager.default.contentsOfDirectory(atPath: "/usr/share/cargo/registry")) ?? []).contains { $0.hasPrefix("tokio-1.") }
                ? [] : ["librust-tokio-dev"])
        return TestRequirement(missing: missing.isEmpty ? nil : missing.joined(separator: ", "),
                               problem: "Debian's cargo and tokio crates are not installed")
    }()

    /// The tokio server built offline against /usr/share/cargo/registry, in a temporary folder.
    static func buildTokioServer() throws -> String {
        let folder = temporaryPath("tokio-server")
        try FileManager.default.copyItem(atPath: AnyProgramTests.programs + "/tokio-server", toPath: folder)
        try FileManager.default.createDirectory(atPath: folder + "/.cargo", withIntermediateDirectories: true)
        try """
            [source.crates-io]
            replace-with = "debian"
            [source.debian]
            directory = "/usr/share/cargo/registry"
            [net]
            offline = true

            """.write(toFile: folder + "/.cargo/config.toml", atomically: true, encoding: .utf8)
        let built = try runProcess("/usr/bin/cargo", ["build", "--release", "--quiet"],
                                   ProcessOptions(environment: ["RUSTC": "/usr/bin/rustc", "CARGO_HOME": folder + "/.cargo-home"],
                                                  workingDirectory: folder, timeout: .seconds(600)))
        try #require(built.status == 0, "cargo build: \(built.stderr)")
        return folder + "/target/release/tokio-server"
    }

    /// One line to the server and its answer; false when it failed.
    static func ask(_ port: Int, _ line: String) -> Bool {
        let fd = AnyProgramTests.connectLoopback(port)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array((line + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        return read(fd, &buffer, buffer.count) > 0
    }

    /// tokio multi-thread at light load, asked one line at a time, every third a burn of 40 ms of CPU: its two workers are one
    /// wait set; every burn is a stall of about 40 ms and no other stall is blamed on the program; each
    /// worker's busy time (time waiting for a CPU, which the kernel view measures, left aside) is within 10% of its
    /// CPU time since the server listened, although each spends most of the run parked on a futex outside the wait.
    @Test(.enabled(if: tokio.shouldRun, tokio.skipComment))
    func tokioMultiThreadIsOneWaitSetWithoutFalseStallsOrParkedBusyTime() throws {
        guard Self.tokio.requireMet() else { return }
        let server = try Self.buildTokioServer()
        let port = AnyProgramTests.freePort()
        let trace = temporaryPath("tokio-any.rltrace"), report = temporaryPath("tokio-cpu.json")
        let rlctl = try CLI.start(["record", "--any", "--tracer", "embedded", "--output", trace, "--stall", "35ms", "--",
                                   server, "\(port)", "5", report])
        try #require(AnyProgramTests.waitForPort(port), "the tokio server did not listen on \(port)")
        let pid = try #require(rlctl.child(running: "tokio-server"), "no tokio-server under rlctl")
        // CPU time from here on, as the recording's busy time is: the warm-up included (its busy time is in the
        // summary too; a worker that got no burn after it has little else to compare).
        let before = AttachTests.cpuTimes(pid)
        // Warm-up: the interposer sees a worker from its first wait on, and a worker that the other one hands tasks to
        // may not have waited yet (docs/any-program.md): a second of requests two at a time first, so that both
        // workers take the I/O driver in turn.
        let warmUpEnd = ContinuousClock.now + .seconds(1)
        while ContinuousClock.now < warmUpEnd {
            DispatchQueue.concurrentPerform(iterations: 2) { _ in _ = Self.ask(port, "hello") }
            usleep(5_000)
        }
        usleep(100_000)
        let burns = 8
        for number in 0..<(3 * burns + 6) {
            #expect(Self.ask(port, number % 3 == 2 && number < 3 * burns ? "burn" : "hello"))
            usleep(20_000)
        }
        let recorded = rlctl.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let waits = try AnyProgramTests.summary(trace, stall: "35ms")
        let set = try #require((waits["sets"] as? [[String: Any]])?.first, "no wait set: \(waits)")
        let workers = try #require(set["threads"] as? [Int])
        #expect(workers.count == 2, "tokio's two workers: \(workers)")
        #expect(set["parkedSeparated"] as? Bool == true)
        // Each burn is 40 ms of the worker's CPU time: a stall holds round(on CPU / 40 ms) of them (a worker may run two
        // back to back, and a loaded machine stretches them); any other stall must be mostly the wait for a CPU.
        var burnsSeen = 0
        for stall in set["worstStalls"] as? [[String: Any]] ?? [] {
            let busy = stall["busyNanoseconds"] as? Int ?? 0
            let kernel = stall["kernel"] as? [String: Any] ?? [:]
            let onCPU = kernel["onCPUNanoseconds"] as? Int ?? 0, queued = kernel["runQueueNanoseconds"] as? Int ?? 0
            if onCPU >= 35_000_000 {
                burnsSeen += Int((Double(onCPU) / 40_000_000).rounded())
            } else {
                #expect(queued > busy / 2, "a stall that was no burn, not explained by the wait for a CPU: \(stall)")
            }
        }
        #expect(burnsSeen == burns, "\(burns) burns of 40 ms of CPU: \(set)")
        let cpu = try #require(try AnyProgramTests.json(report)["cpu_ns"] as? [String: Any])
        for loop in try AnyProgramTests.waitLoops(waits) where workers.contains(loop["threadID"] as? Int ?? -1) {
            let tid = loop["threadID"] as? Int ?? 0
            let busy = Double(loop["busyNanoseconds"] as? Int ?? 0)
            let split = (loop["kernel"] as? [String: Any])?["busy"] as? [String: Any]
            let queued = Double((split?["runQueueNanoseconds"] as? Int ?? 0) + (split?["throttledNanoseconds"] as? Int ?? 0))
            let onCPU = Double(cpu["\(tid)"] as? Int ?? 0) - Double(before[Int32(tid)] ?? 0)
            #expect(onCPU > 0 && abs(busy - queued - onCPU) <= 0.1 * onCPU + 3_000_000,
                    "worker \(tid): busy \(busy) ns (\(queued) ns of it waiting for a CPU), on a CPU \(onCPU) ns, parked \(loop["parkedNanoseconds"] ?? "none"): \(loop)")
        }
    }
}
