@testable import Analysis
import Foundation
import Testing
import TestSupport
import TraceModel

/// The kernel view in the exports: its rows in CSV and JSONL (columns after the older ones, so that scripts reading
/// those by position keep working), and each followed thread's states off the CPU in the Chrome export.
@Suite struct KernelExportTests {
    /// Loop 1 on thread 7: asleep 1–10 ms, blocked in epoll_wait from 1.2 ms until its timer woke it at 8.1 ms, then
    /// runnable on CPU 0 behind sh (tid 812) until 9.5 ms; its callout 10.5–20 ms is throttled 12–17 ms.
    static func trace() -> [TraceEvent] {
        var t = TraceBuilder()
        t.kernelBegin(0, pid: 100, command: "app")
        t.add(0, .loopCreate(loopID: 1, threadID: 7, name: "main"))
        t.runBegin(0)
        t.activity(0, .beforeTimers)
        t.sleep(from: 1, to: 10)
        t.timer(1, scheduled: 8, at: 10.5, until: 20)
        t.task(812, pid: 810, "sh")
        t.offCPU(.sleeping, left: 1.2, woken: 8.1, back: 9.5, syscall: 232, timer: (8, 8.05, 8.06), culprits: [(812, 1.4)])
        t.offCPU(.throttled, left: 12, back: 17, throttled: 5)
        t.activity(21, .exit)
        t.runEnd(21)
        return t.inTimeOrder.events
    }

    static func export(_ format: TraceExportFormat) throws -> String {
        var reader = ArrayReader(trace())
        let path = NSTemporaryDirectory() + "kernel-export-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(format.rawValue)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try TraceExporter.export(&reader, format: format, to: path)
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    @Test func csvAndJSONLCarryTheKernelFieldsInColumnsOfTheirOwn() throws {
        let csv = try Self.export(.csv).split(separator: "\n").map(String.init)
        #expect(csv[0].hasSuffix(",culprit_label,tid,command,due_ns,latest_ns,fired_ns,cpu,others_ns,culprits,syscall,left_ns,woken_ns,back_ns,waker_tid,throttled_ns,records,from_ns"))
        let header = csv[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        func row(_ event: String) throws -> [String: String] {
            let line = try #require(csv.first { $0.split(separator: ",", omittingEmptySubsequences: false)[2] == event })
            let values = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return Dictionary(uniqueKeysWithValues: zip(header, values).filter { !$0.1.isEmpty })
        }
        #expect(try row("kernel_off_cpu") == ["timestamp_ns": "9500000", "thread_id": "0", "event": "kernel_off_cpu", "tid": "7",
                                              "reason": "sleeping", "syscall": "232", "left_ns": "1200000", "woken_ns": "8100000",
                                              "back_ns": "9500000", "cpu": "0", "waker_tid": "0", "throttled_ns": "0"])
        #expect(try row("kernel_run_queue") == ["timestamp_ns": "9500000", "thread_id": "0", "event": "kernel_run_queue", "tid": "7",
                                                "cpu": "0", "others_ns": "0", "culprits": "812:1400000"])
        #expect(try row("kernel_timer") == ["timestamp_ns": "9500000", "thread_id": "0", "event": "kernel_timer", "tid": "7",
                                            "due_ns": "8000000", "latest_ns": "8050000", "fired_ns": "8060000"])
        #expect(try row("kernel_task") == ["timestamp_ns": "0", "thread_id": "0", "event": "kernel_task", "tid": "812", "pid": "810", "command": "sh"])
        let jsonl = try Self.export(.jsonl).split(separator: "\n")
        #expect(jsonl.contains("{\"timestamp_ns\":17000000,\"thread_id\":0,\"event\":\"kernel_off_cpu\",\"tid\":7,\"cpu\":0,\"syscall\":-1,\"left_ns\":12000000,\"woken_ns\":12000000,\"back_ns\":17000000,\"waker_tid\":-1,\"throttled_ns\":5000000,\"reason\":\"throttled\"}"))
    }

    @Test func chromeDrawsEachThreadsStatesOffTheCPU() throws {
        var reader = ArrayReader(Self.trace())
        let path = NSTemporaryDirectory() + "kernel-export-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try TraceExporter.export(&reader, format: .chrome, to: path)
        let file = try ChromeTraceFile(path: path)
        #expect(file.violations() == [])
        let states = file.events("X").filter { $0["cat"] as? String == "kernel" }
        #expect(states.map { $0["name"] as? String } == ["blocked in epoll_wait", "waiting for CPU 0", "throttled (CPU quota)"])
        #expect(states.allSatisfy { $0["pid"] as? Int == 2 && $0["tid"] as? Int == 7 })
        #expect(states.map { $0["ts"] as? Double } == [1_200, 8_100, 12_000] && states.map { $0["dur"] as? Double } == [6_900, 1_400, 5_000])
        #expect(file.args(states[1])["held_by"] as? [String] == ["sh (pid 810) 1400000 ns"])
        let names = file.events("M").filter { $0["pid"] as? Int == 2 }.compactMap { file.args($0)["name"] as? String }
        #expect(names == ["loop 1 main: off the CPU", "kernel view: thread states"])
    }
}
