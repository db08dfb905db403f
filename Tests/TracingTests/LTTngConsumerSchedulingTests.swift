import Foundation
import Testing
import TestSupport
import Tracing

/// LTTngConsumerScheduling reads the proc file system; these tests give it a folder laid out like one.
struct LTTngConsumerSchedulingTests {
    /// A proc folder: the autogroup switch, this process's group, and processes by pid (name, group).
    private func proc(autogroup: String?, own: String?, processes: [Int32: (comm: String, group: String?)]) throws -> String {
        let root = temporaryPath("fake-proc")
        let files = FileManager.default
        func write(_ text: String, _ path: String) throws {
            try files.createDirectory(atPath: (root + path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: root + path, atomically: true, encoding: .utf8)
        }
        if let autogroup { try write(autogroup + "\n", "/sys/kernel/sched_autogroup_enabled") }
        if let own { try write(own + " nice 0\n", "/self/autogroup") }
        for (pid, process) in processes {
            try write(process.comm + "\n", "/\(pid)/comm")
            if let group = process.group { try write(group + " nice 0\n", "/\(pid)/autogroup") }
        }
        return root
    }

    @Test func aConsumerInAnotherAutogroupIsAtRiskAndTheRiskNamesItsPidAndGroups() throws {
        let root = try proc(autogroup: "1", own: "/autogroup-1",
                            processes: [6969: ("lttng-consumerd", "/autogroup-4"), 42: ("bash", "/autogroup-1")])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scheduling = LTTngConsumerScheduling.current(proc: root)
        #expect(scheduling == LTTngConsumerScheduling(autogroupEnabled: true, ownAutogroup: "/autogroup-1",
                                                      daemons: [.init(pid: 6969, autogroup: "/autogroup-4")]))
        #expect(scheduling.starvable.map(\.pid) == [6969])
        #expect(scheduling.risk == "lttng-consumerd (pid 6969) runs in scheduler group /autogroup-4, this process in /autogroup-1 "
                + "(kernel.sched_autogroup_enabled=1): a program that keeps every CPU busy can keep it off the CPUs for seconds, "
                + "and LTTng then discards events")
    }

    @Test func noRiskWithAutogroupOffInTheSameGroupOrWithNoConsumer() throws {
        let cases: [(String?, String?, [Int32: (comm: String, group: String?)])] = [
            ("0", "/autogroup-1", [6969: ("lttng-consumerd", "/autogroup-4")]),   // autogroup off
            ("1", "/autogroup-1", [6969: ("lttng-consumerd", "/autogroup-1")]),   // started from this session
            ("1", "/autogroup-1", [42: ("bash", "/autogroup-2")]),                // no consumer daemon
            (nil, nil, [6969: ("lttng-consumerd", nil)]),                         // a kernel without autogroups
        ]
        for (autogroup, own, processes) in cases {
            let root = try proc(autogroup: autogroup, own: own, processes: processes)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let scheduling = LTTngConsumerScheduling.current(proc: root)
            #expect(scheduling.starvable.isEmpty && scheduling.risk == nil, "\(scheduling)")
        }
    }

    @Test func everyConsumerDaemonIsFoundInPidOrder() throws {
        let root = try proc(autogroup: "1", own: "/autogroup-1",
                            processes: [900: ("lttng-consumerd", "/autogroup-4"), 88: ("lttng-consumerd", "/autogroup-4"),
                                        7: ("lttng-sessiond", "/autogroup-4")])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let scheduling = LTTngConsumerScheduling.current(proc: root)
        #expect(scheduling.daemons.map(\.pid) == [88, 900])
        #expect(scheduling.risk?.hasPrefix("lttng-consumerd (pid 88, 900) runs in scheduler group /autogroup-4") == true)
    }
}
