import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl record --any` on programs that switch users (nginx's workers become www-data) and on programs whose waits
/// it cannot see (Go): a loop where there is one, and otherwise the real reason there is none.
@Suite(.serialized) struct AnyProgramOutcomeTests {
    static let nginx: TestRequirement = {
        var missing = ["nginx", "wrk"].filter { TestEnvironment.executable($0) == nil }
        if geteuid() != 0 { missing.append("root (nginx's master switches its workers to www-data)") }
        if getpwnam("www-data") == nil { missing.append("the www-data user") }
        return TestRequirement(missing: missing.isEmpty ? nil : missing.joined(separator: ", "),
                               problem: "nginx as its packages run it (a root master, www-data workers) cannot run here")
    }()
    static let go = AnyProgramTests.requirement(["go"])

    // ===== nginx: master + worker, the worker switched to www-data =====

    @Test(.enabled(if: nginx.shouldRun, nginx.skipComment))
    func nginxsWorkerRecordsAfterItBecomesWwwData() throws {
        guard Self.nginx.requireMet() else { return }
        let server = try NginxPrefix()
        defer { server.remove() }
        let trace = temporaryPath("nginx.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let rlctl = try CLI.start(["record", "--any", "--follow-children", "--tracer", "embedded", "--output", trace, "--"] + server.command)
        defer { rlctl.send(SIGKILL, toGroup: true) }
        try #require(AnyProgramTests.waitForPort(server.port, timeout: .seconds(60)), "nginx did not listen on \(server.port): \(rlctl.outputSoFar.stderr)")
        let worker = try #require(server.worker(), "nginx started no worker")
        let wwwData = getpwnam("www-data").pointee.pw_uid
        #expect(eventually(timeout: .seconds(20)) { server.effectiveUser(of: worker) == wwwData }, "the worker did not become www-data")
        let load = try runProcess(TestEnvironment.executable("wrk")!, ["-t1", "-c4", "-d2s", "http://127.0.0.1:\(server.port)/"])
        #expect(load.status == 0, "\(load.stderr)")
        rlctl.send(SIGTERM)   // passed on to the master, which stops its worker and exits
        let recorded = rlctl.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        #expect(!recorded.stderr.contains("did not complete"), "\(recorded.stderr)")
        let waits = try AnyProgramTests.summary(trace)
        let loop = try #require(try AnyProgramTests.waitLoops(waits).first { $0["pid"] as? Int == Int(worker) },
                                "no loop of the worker \(worker): \(waits)")
        // wrk made thousands of requests in 2 s; each is at least one wake-up of the worker's epoll_wait.
        #expect((loop["iterations"] as? Int ?? 0) > 200, "\(loop)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: trace)) ?? []
        #expect(!left.contains { $0.hasPrefix(".switched-") }, "the worker's own folder was left in the trace: \(left)")
    }

    @Test(.enabled(if: nginx.shouldRun, nginx.skipComment))
    func nginxUnfollowedPointsToFollowChildren() throws {
        guard Self.nginx.requireMet() else { return }
        let server = try NginxPrefix()
        defer { server.remove() }
        let rlctl = try CLI.start(["record", "--any", "--tracer", "embedded", "--"] + server.command)
        defer { rlctl.send(SIGKILL, toGroup: true) }
        try #require(AnyProgramTests.waitForPort(server.port, timeout: .seconds(60)), "nginx did not listen on \(server.port): \(rlctl.outputSoFar.stderr)")
        rlctl.send(SIGTERM)
        let result = rlctl.wait()
        #expect(result.status == 3, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("--follow-children"), "\(result.stderr)")
        #expect(!result.stderr.contains("raw system calls"), "\(result.stderr)")
    }

    // ===== a program that drops privileges itself =====

    static let root = TestRequirement(missing: geteuid() == 0 && getpwnam("nobody") != nil ? nil : "root and the nobody user",
                                      problem: "a program cannot switch users here")

    @Test(.enabled(if: root.shouldRun && AnyProgramTests.compiler.shouldRun, root.skipComment))
    func aProgramThatBecomesNobodyMidRunKeepsOneLoop() throws {
        guard Self.root.requireMet(), AnyProgramTests.compiler.requireMet() else { return }
        let trace = temporaryPath("switch-user.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try Self.recordSwitchUser(into: trace)
        #expect(!result.stderr.contains("did not complete"), "\(result.stderr)")
        let loop = try AnyProgramTests.busiestLoop(in: try AnyProgramTests.summaryObject(trace))
        // The stream begun as root and the one written as nobody are one thread's: 41 waits, 40 iterations.
        #expect(loop["waits"] as? Int == 41, "\(loop)")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: trace)) ?? []
        #expect(!left.contains { $0.hasPrefix(".switched-") }, "\(left)")
        #expect(FileManager.default.fileExists(atPath: trace + "/.end"), "the trace is not marked complete: \(left)")
    }

    /// The same program exec'ing itself after the switch: the new image records into the folder the switch made,
    /// under a name of its own.
    @Test(.enabled(if: root.shouldRun && AnyProgramTests.compiler.shouldRun, root.skipComment))
    func aProgramThatExecsAfterBecomingNobodyRecordsBothImages() throws {
        guard Self.root.requireMet(), AnyProgramTests.compiler.requireMet() else { return }
        let trace = temporaryPath("switch-exec.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try Self.recordSwitchUser(into: trace, then: ["exec"])
        #expect(result.stderr.isEmpty, "\(result.stderr)")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: trace)) ?? []
        let starts = names.filter { $0.hasPrefix(".proc-") && $0.hasSuffix(".start") }
        #expect(starts.count == 2 && starts.contains { $0.contains(".1.start") }, "\(names)")
        let loops = try AnyProgramTests.waitLoops(try AnyProgramTests.summary(trace))
        #expect(loops.reduce(0) { $0 + ($1["waits"] as? Int ?? 0) } == 51, "\(loops.map { ($0["threadID"] ?? "?", $0["waits"] ?? "?") })")
    }

    /// switch-user.c recorded into `trace`, becoming nobody; its run must succeed.
    static func recordSwitchUser(into trace: String, then: [String] = []) throws -> ProcessOutput {
        let program = try AnyProgramTests.compile("switch-user.c")
        let nobody = getpwnam("nobody").pointee
        let result = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", trace, "--", program,
                                  "\(nobody.pw_uid)", "\(nobody.pw_gid)"] + then)
        try #require(result.status == 0, "\(result.termination): \(result.stderr)")
        return result
    }

    // ===== thread names follow renames =====

    @Test(.enabled(if: AnyProgramTests.compiler.shouldRun, AnyProgramTests.compiler.skipComment))
    func threadsRenamedAfterTheirFirstWaitCarryTheirNewNames() throws {
        guard AnyProgramTests.compiler.requireMet() else { return }
        let program = try AnyProgramTests.compile("renamed-threads.c", flags: ["-pthread"])
        let trace = temporaryPath("renamed.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let result = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", trace, "--", program])
        try #require(result.status == 0, "\(result.termination): \(result.stderr)")
        let loops = try AnyProgramTests.waitLoops(try AnyProgramTests.summary(trace))
        let names = Set(loops.filter { $0["family"] as? String == "epoll" }.compactMap { $0["thread"] as? String })
        #expect(names == ["main-renamed", "named-later"], "\(loops.map { ($0["threadID"] ?? "?", $0["thread"] ?? "?", $0["waits"] ?? "?") })")
    }

    static let memcached = AnyProgramTests.requirement(["memcached"])

    @Test(.enabled(if: memcached.shouldRun && root.shouldRun, memcached.skipComment))
    func memcachedsWorkersAreNamedMcWorker() throws {
        guard Self.memcached.requireMet(), Self.root.requireMet() else { return }
        let port = AnyProgramTests.freePort()
        let trace = temporaryPath("memcached.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        // As root memcached must switch users (-u): its workers are the switched process's threads.
        let rlctl = try CLI.start(["record", "--any", "--tracer", "embedded", "--output", trace, "--",
                                   TestEnvironment.executable("memcached")!, "-p", "\(port)", "-l", "127.0.0.1", "-U", "0", "-t", "4", "-u", "nobody"])
        defer { rlctl.send(SIGKILL, toGroup: true) }
        try #require(AnyProgramTests.waitForPort(port, timeout: .seconds(60)), "memcached did not listen on \(port): \(rlctl.outputSoFar.stderr)")
        // Connections go to the workers in turn: 8 of them reach each of the 4 workers twice.
        for _ in 0..<8 { try Self.memcacheRequests(port: port, count: 50) }
        rlctl.send(SIGTERM)
        let recorded = rlctl.wait()
        try #require(recorded.status == 0, "\(recorded.termination): \(recorded.stderr)")
        let loops = try AnyProgramTests.waitLoops(try AnyProgramTests.summary(trace))
        let workers = loops.filter { ($0["iterations"] as? Int ?? 0) >= 50 && $0["threadID"] as? Int != $0["pid"] as? Int }
        #expect(workers.count == 4, "\(loops.map { ($0["threadID"] ?? "?", $0["thread"] ?? "?", $0["iterations"] ?? "?") })")
        #expect(workers.allSatisfy { $0["thread"] as? String == "mc-worker" }, "\(workers.map { $0["thread"] ?? "?" })")
    }

    /// `count` memcache `version` requests, one after the other, on one connection.
    static func memcacheRequests(port: Int, count: Int) throws {
        let fd = AnyProgramTests.connectLoopback(port)
        try #require(fd >= 0, "cannot connect to memcached on \(port)")
        defer { close(fd) }
        var reply = [UInt8](repeating: 0, count: 256)
        for _ in 0..<count {
            try #require(send(fd, "version\r\n", 9, 0) == 9)
            let got = recv(fd, &reply, reply.count, 0)
            try #require(got > 0 && String(decoding: reply[0..<got], as: UTF8.self).hasPrefix("VERSION"), "memcached did not answer")
        }
    }

    // ===== rlctl's own threads in the program say whose they are =====

    @Test(.enabled(if: AnyProgramTests.compiler.shouldRun, AnyProgramTests.compiler.skipComment), arguments: ["embedded", "lttng"])
    func theInterposersThreadsAreNamedAsRlctls(tracer: String) throws {
        guard AnyProgramTests.compiler.requireMet() else { return }
        if tracer == "lttng" { guard LTTngCLIEnvironment.shouldRun, LTTngCLIEnvironment.requirement.requireMet() else { return } }
        let program = try AnyProgramTests.compile("idle-loop.c")
        let trace = temporaryPath("own-threads-\(tracer).rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let rlctl = try CLI.start(["record", "--any", "--tracer", tracer, "--output", trace, "--", program, "4000"])
        defer { rlctl.send(SIGKILL, toGroup: true) }
        // The markers go to the trace folder (embedded) or to a folder of their own (LTTng): the program's pid is
        // rlctl's child's.
        var names: [String] = []
        let own = tracer == "embedded" ? "rlctl-writer" : "rlctl-flusher"
        let seen = eventually(timeout: .seconds(60)) {
            guard let children = try? String(contentsOfFile: "/proc/\(rlctl.pid)/task/\(rlctl.pid)/children", encoding: .utf8),
                  let pid = children.split(separator: " ").first else { return false }
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            names = tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            return names.contains(own)
        }
        #expect(seen, "no thread named \(own) in the program: \(names)")
        let result = rlctl.wait()
        try #require(result.status == 0, "\(result.termination): \(result.stderr)")
        let loops = try AnyProgramTests.waitLoops(try AnyProgramTests.summary(trace))
        #expect(!loops.contains { ($0["thread"] as? String ?? "").hasPrefix("rlctl-") }, "\(loops.map { $0["thread"] ?? "?" })")
    }

    // ===== libuv with idle-time metrics: its zero-timeout checks are no iterations =====

    static let libuv = TestRequirement(
        missing: TestEnvironment.executable("cc") != nil && FileManager.default.fileExists(atPath: "/usr/include/uv.h") ? nil : "cc, libuv1-dev",
        problem: "a libuv program cannot be built here")

    @Test(.enabled(if: libuv.shouldRun, libuv.skipComment))
    func aLibuvLoopWithIdleTimeMetricsHasLibuvsIterationCount() throws {
        guard Self.libuv.requireMet() else { return }
        let program = try AnyProgramTests.compile("uv-idle-metrics.c", libraries: ["-luv"])
        let trace = temporaryPath("uv.rltrace"), count = temporaryPath("uv-count.txt")
        defer { try? FileManager.default.removeItem(atPath: trace); try? FileManager.default.removeItem(atPath: count) }
        let result = try CLI.run(["record", "--any", "--tracer", "embedded", "--output", trace, "--", program, "200", count])
        try #require(result.status == 0, "\(result.termination): \(result.stderr)")
        let own = try #require(Int(try String(contentsOfFile: count, encoding: .utf8).split(separator: " ").last?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""), "no iteration count from the program")
        let loop = try AnyProgramTests.busiestLoop(in: try AnyProgramTests.summaryObject(trace))
        let iterations = try #require(loop["iterations"] as? Int)
        let checks = try #require((loop["wakeCauses"] as? [String: Any])?["nonBlockingChecks"] as? Int)
        // libuv counts a turn that ends the run too; rlctl counts the turns between two waits' ends.
        #expect(abs(iterations - own) <= 2, "rlctl \(iterations) iterations, libuv \(own)")
        #expect(checks >= own - 2, "\(checks) zero-timeout checks for \(own) iterations: \(loop)")
    }

    // ===== Go: raw system calls, whichever way it ends (by the interposer alone; the kernel records them otherwise) =====

    @Test(.enabled(if: go.shouldRun, go.skipComment))
    func aGoProgramThatExitsCleanlyIsExplainedWithoutACutOffAndJSONStillPrints() throws {
        guard Self.go.requireMet() else { return }
        let program = try Self.buildGo()
        defer { try? FileManager.default.removeItem(atPath: program) }
        let result = try CLI.run(["record", "--any", "--any-via", "preload", "--format", "json", "--", program, "300ms"])
        #expect(result.status == 3, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("exited with status 0 without a single wait through libc"), "\(result.stderr)")
        #expect(result.stderr.contains("raw system calls"), "\(result.stderr)")
        #expect(!result.stderr.contains("did not complete its recording"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                   "stdout is not a summary: \(result.stdout.prefix(300))")
        #expect(((printed["waits"] as? [String: Any])?["loops"] as? [Any])?.isEmpty ?? true, "\(printed)")
    }

    @Test(.enabled(if: go.shouldRun, go.skipComment))
    func aGoProgramStoppedBySIGTERMIsExplainedByItsRawSystemCalls() throws {
        guard Self.go.requireMet() else { return }
        let program = try Self.buildGo()
        defer { try? FileManager.default.removeItem(atPath: program) }
        let trace = temporaryPath("go-stopped.rltrace")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let rlctl = try CLI.start(["record", "--any", "--any-via", "preload", "--tracer", "embedded", "--output", trace, "--", program, "60s"])
        defer { rlctl.send(SIGKILL, toGroup: true) }
        // Stopped once the interposer records in it (its start marker), and its ticker has run a while.
        try #require(eventually(timeout: .seconds(60)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: trace)) ?? []).contains { $0.hasPrefix(".proc-") && $0.hasSuffix(".start") }
        }, "the interposer never started recording in the Go program")
        usleep(300_000)
        rlctl.send(SIGTERM)
        let result = rlctl.wait()
        #expect(result.status == 1, "\(result.termination): \(result.stderr)")
        #expect(result.stderr.contains("was killed by signal 15"), "\(result.stderr)")
        #expect(result.stderr.contains("raw system calls"), "\(result.stderr)")
        #expect(!result.stderr.contains("did not complete its recording"), "\(result.stderr)")
    }

    static func buildGo() throws -> String {
        let output = temporaryPath("go-ticker")
        let result = try runProcess(TestEnvironment.executable("go")!, ["build", "-o", output, "\(AnyProgramTests.programs)/go-ticker.go"],
                                    ProcessOptions(timeout: .seconds(300)))
        try #require(result.status == 0, "go build: \(result.stderr)")
        return output
    }
}

/// An nginx of its own: prefix, configuration and logs in a temporary folder, a master with one worker that becomes
/// www-data, serving a fixed answer on a free loopback port.
private struct NginxPrefix {
    let folder: String
    let port: Int

    init() throws {
        folder = temporaryPath("nginx")
        port = AnyProgramTests.freePort()
        try FileManager.default.createDirectory(atPath: folder + "/logs", withIntermediateDirectories: true)
        let temporary = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map { "\($0)_temp_path \(folder)/\($0);" }.joined(separator: "\n    ")
        try """
            daemon off;
            master_process on;
            worker_processes 1;
            user www-data;
            pid \(folder)/nginx.pid;
            error_log \(folder)/logs/error.log;
            events { worker_connections 64; }
            http {
                access_log off;
                \(temporary)
                server {
                    listen 127.0.0.1:\(port);
                    location / { return 200 "ok\\n"; }
                }
            }
            """.write(toFile: folder + "/nginx.conf", atomically: true, encoding: .utf8)
    }

    var command: [String] { [TestEnvironment.executable("nginx")!, "-p", folder, "-c", folder + "/nginx.conf", "-e", folder + "/logs/error.log"] }

    /// The master's child once it has one.
    func worker() -> pid_t? {
        var found: pid_t?
        _ = eventually(timeout: .seconds(20)) {
            guard let text = try? String(contentsOfFile: folder + "/nginx.pid", encoding: .utf8),
                  let master = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                  let children = try? String(contentsOfFile: "/proc/\(master)/task/\(master)/children", encoding: .utf8) else { return false }
            found = children.split(separator: " ").compactMap { Int32($0) }.first
            return found != nil
        }
        return found
    }

    /// The effective uid in /proc/PID/status (Uid: real effective saved fs).
    func effectiveUser(of pid: pid_t) -> uid_t? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") }) else { return nil }
        let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
        return fields.count > 2 ? uid_t(fields[2]) : nil
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }
}
