import Foundation
import Glibc
import Testing
import TestSupport

/// The checker of the trace-event rules finds each kind of break (the export tests rely on its silence).
@Suite struct ChromeTraceRulesTests {
    func violations(_ events: String) throws -> [String] {
        let path = NSTemporaryDirectory() + "rules-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "{\"traceEvents\":[\(events)]}".write(toFile: path, atomically: true, encoding: .utf8)
        return try ChromeTraceFile(path: path).violations()
    }

    @Test func aWellFormedFileHasNoViolation() throws {
        #expect(try violations("""
            {"ph":"B","name":"run","pid":1,"tid":1,"ts":0},
            {"ph":"X","name":"signal","pid":1,"tid":2,"ts":1,"dur":0,"bind_id":"0x1","flow_out":true},
            {"ph":"B","name":"perform","pid":1,"tid":1,"ts":2,"bind_id":"0x1","flow_in":true},
            {"ph":"X","name":"inner","pid":1,"tid":1,"ts":2.5,"dur":0.5},
            {"ph":"E","pid":1,"tid":1,"ts":3},
            {"ph":"E","pid":1,"tid":1,"ts":4},
            {"ph":"C","name":"backlog","pid":1,"ts":4,"args":{"items":2}},
            {"ph":"n","name":"block queued","cat":"queue","id":"queued on loop 1","pid":1,"ts":4,"bind_id":"0x2","flow_out":true},
            {"ph":"X","name":"block","pid":1,"tid":1,"ts":5,"dur":1,"bind_id":"0x2","flow_in":true},
            {"ph":"b","name":"stall","cat":"stall","id":"loop 1","pid":1,"ts":0},
            {"ph":"e","name":"stall","cat":"stall","id":"loop 1","pid":1,"ts":4}
            """) == [])
    }

    @Test func eachBreakIsFound() throws {
        let found = try violations("""
            {"ph":"E","pid":1,"tid":1,"ts":1},
            {"ph":"B","name":"open","pid":1,"tid":3,"ts":1},
            {"ph":"B","name":"outer","pid":1,"tid":2,"ts":0},
            {"ph":"E","pid":1,"tid":2,"ts":5},
            {"ph":"X","name":"across","pid":1,"tid":2,"ts":4,"dur":3},
            {"ph":"X","name":"lonely start","pid":1,"tid":2,"ts":8,"dur":0,"bind_id":"0x9","flow_out":true},
            {"ph":"C","name":"flag","pid":1,"ts":2,"args":{"on":true}},
            {"ph":"e","name":"stall","cat":"stall","id":"loop 1","pid":1,"ts":4},
            {"ph":"b","name":"stall","cat":"stall","id":"loop 2","pid":1,"ts":10},
            {"ph":"e","name":"stall","cat":"stall","id":"loop 2","pid":1,"ts":20},
            {"ph":"b","name":"stall","cat":"stall","id":"loop 2","pid":1,"ts":15},
            {"ph":"e","name":"stall","cat":"stall","id":"loop 2","pid":1,"ts":25}
            """)
        #expect(found.contains { $0.hasPrefix("an E with no B on thread 1/1") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("async slices on stall/loop 2 overlap") }, "\(found)")
        #expect(found.contains { $0.contains("slices on thread 1/3 never end") }, "\(found)")
        #expect(found.contains { $0.contains("across") && $0.contains("without nesting") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("flow 0x9 has 1 starts and 0 ends") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("counter flag on is not numeric") }, "\(found)")
        #expect(found.contains { $0.hasPrefix("an async end with no begin") }, "\(found)")
        #expect(found.count == 7, "\(found)")
    }
}
