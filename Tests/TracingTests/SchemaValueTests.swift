import RunLoopCore
import Testing
import TraceReading
import Tracing

/// The integer values of trace enumerations are a public contract shared by both backends.
@Suite struct SchemaValueTests {
    @Test func enumerationsRoundTripThroughTheirTraceValues() {
        for result in [Loop.RunResult.finished, .stopped, .timedOut, .handledSource] {
            #expect(Loop.RunResult(traceValue: result.traceValue) == result)
        }
        #expect([Loop.RunResult.finished, .stopped, .timedOut, .handledSource].map(\.traceValue) == [1, 2, 3, 4])
        for activity in Loop.Activity.ordered {
            #expect(Loop.Activity(traceValue: activity.traceValue) == activity)
        }
        #expect(Loop.Activity.ordered.map(\.traceValue) == [1, 2, 4, 32, 64, 128])
        #expect(Loop.Activity(traceValue: 3) == nil)
        for reason in Loop.WakeReason.allCases {
            #expect(Loop.WakeReason(traceValue: reason.traceValue) == reason)
        }
        #expect(Loop.WakeReason(traceValue: 7) == .mainQueue)
        #expect(Loop.WakeReason(traceValue: 8) == nil)
        #expect(LoopEventSink.SourceKind(traceValue: 2) == .port)
        #expect(LoopEventSink.ItemKind(traceValue: 4) == .observer)
    }
}
