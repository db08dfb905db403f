@testable import Analysis
import Foundation
import FoundationXML
import Testing
import TestSupport

/// The check and compare reports as people and CI read them: exact text and Markdown (the expected strings are
/// what rlctl printed for the same summaries before the renderers moved out of its commands), JSON that any
/// parser accepts (non-finite numbers as null), JUnit XML that is well-formed whatever the names hold.
@Suite struct ReportRenderingTests {
    private func check(_ budget: String, _ summaries: [TraceSummary]) throws -> BudgetCheck {
        BudgetCheck(budget: try Budget(text: budget, file: "test.budget"), report: RunReport(workload: "w", tracer: "embedded", repetitions: summaries))
    }

    private func object(_ json: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any], "not a JSON object: \(json)")
    }

    /// Whether python3's minidom (an XML parser that is not libxml2) accepts the document.
    private func pythonParses(_ xml: String) throws -> (ok: Bool, message: String) {
        let path = temporaryPath("junit.xml")
        try xml.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try runProcess("/usr/bin/env", ["python3", "-c", "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])", path])
        return (result.status == 0, result.stderr)
    }

    // MARK: - summary

    @Test func eventsOfUnknownKindsAreSaidNotCountedAsLost() throws {
        var summary = try VerdictTests.summary()
        let before = SummaryReport.text(summary)
        let beforeJSON = try SummaryReport.json(summary)
        #expect(!before.contains("skipped") && !beforeJSON.contains("eventsSkipped"))
        summary.health.trace.eventsSkipped = 66
        let text = SummaryReport.text(summary)
        #expect(text.contains("\n  66 event(s) of kinds this rlctl does not know were skipped (a newer recorder's trace)\n"), "\(text)")
        #expect(text.split(separator: "\n").first == before.split(separator: "\n").first, "skipped events are not losses")
        #expect(SummaryReport.markdown(summary).contains("Note: 66 event(s) of kinds this rlctl does not know were skipped"))
        let decoded = try JSONDecoder().decode(TraceSummary.self, from: Data(try SummaryReport.json(summary).utf8))
        #expect(decoded.health.trace.eventsSkipped == 66)
    }

    @Test func aSummaryFigureJSONCannotHoldIsAnErrorNotAnEmptyDocument() throws {
        var summary = try VerdictTests.summary()
        summary.overall.utilization = .nan
        #expect(throws: (any Error).self) { try SummaryReport.json(summary) }
        summary.overall.utilization = 0.5
        let json = try SummaryReport.json(summary)
        #expect(try JSONSerialization.jsonObject(with: Data(json.utf8)) is [String: Any])
    }

    // MARK: - check

    @Test func checkTextAndMarkdownSayEachRuleAndTheOutcome() throws {
        let result = try check("loop.utilization <= 80%\nstalls.count == 0\n", [try VerdictTests.summary()])
        #expect(result.text == """
            PASS loop.utilization                   76.7%  <= 80.0%
            FAIL stalls.count                           1  == 0
            trace: complete
            1 rule(s) failed
            """)
        #expect(result.markdown == """
            ### rlctl check: ❌ 1 rule(s) failed

            | | metric | value | limit |
            | --- | --- | --- | --- |
            | ✅ | `loop.utilization` | 76.7% | <= 80.0% |
            | ❌ | `stalls.count` | 1 | == 0 |

            Trace complete: no events lost, every run complete.
            """)
    }

    @Test func checkTextMarksFiguresOverLostEvents() throws {
        var lossy = try VerdictTests.summary()
        lossy.health.eventsLost = 17
        let result = try check("loop.utilization <= 80%\n", [lossy])
        #expect(result.text == """
              ?  loop.utilization                   76.7%  <= 80.0%  (!)
            trace: INCOMPLETE — 17 events/packets lost; figures marked (!) cover only part of the runs; the budget does not allow incomplete data (a rule such as `trace.lost <= N` or `trace.runs_incomplete <= N` would)
            incomplete: the data cannot show the budget is met
            """)
        #expect(result.markdown == """
            ### rlctl check: ❌ incomplete: the data cannot show the budget is met

            | | metric | value | limit |
            | --- | --- | --- | --- |
            | ⚠️ | `loop.utilization` | 76.7%  (!) | <= 80.0% |

            ⚠️ INCOMPLETE — 17 events/packets lost; figures marked (!) cover only part of the runs; the budget does not allow incomplete data (a rule such as `trace.lost <= N` or `trace.runs_incomplete <= N` would).
            """)
    }

    @Test func checkJSONIsSortedOneLineAndParses() throws {
        let result = try check("loop.utilization <= 80%\nwake.port.p99 <= 1ms\n", [try VerdictTests.summary()])
        let json = result.json
        #expect(!json.contains("\n"))
        #expect(json.hasPrefix(#"{"incomplete":true,"lost":0,"passed":false,"rules":[{"comparison":"<=","limit":0.8,"metric":"loop.utilization","passed":true,"value":0.766"#), "\(json)")
        let rules = try #require(try object(json)["rules"] as? [[String: Any]])
        #expect(rules.count == 2)
        #expect(rules[1]["value"] is NSNull, "no data is null: \(json)")
        #expect(rules[1]["limit"] as? Double == 1_000_000)
    }

    /// String interpolation wrote `nan` and `inf` into the JSON, which no parser accepts. A figure that is not a
    /// finite number measures nothing: the rule has no data, so it cannot pass and the check is incomplete.
    @Test func checkWritesNonFiniteValuesAsNoData() throws {
        for bad in [Double.nan, .infinity, -.infinity] {
            var summary = try VerdictTests.summary()
            summary.overall.utilization = bad
            let result = try check("loop.utilization <= 80%\n", [summary])
            let json = result.json
            let document = try object(json)
            let rule = try #require((document["rules"] as? [[String: Any]])?.first)
            #expect(rule["value"] is NSNull, "\(bad): \(json)")
            #expect(rule["passed"] as? Bool == false && document["incomplete"] as? Bool == true, "\(bad) never meets a limit: \(json)")
            #expect(result.text.hasPrefix("  ?  loop.utilization                 no data  <= 80.0%\n"), "\(result.text)")
        }
    }

    @Test func checkJUnitIsWellFormedAndEscapesNamesAndMessages() throws {
        var budget = try Budget(text: "stalls.count == 0\nloop.utilization <= 80%\nwake.port.p99 <= 1ms\n", file: "test.budget")
        budget.rules[0].text = #"stalls <&"'> "quoted" & 'single'"#
        var lossy = try VerdictTests.summary()
        lossy.health.eventsLost = 3
        let result = BudgetCheck(budget: budget, report: RunReport(workload: "w", tracer: "embedded", repetitions: [lossy]))
        let xml = result.junit
        let parsed = try pythonParses(xml)
        #expect(parsed.ok, "minidom rejects the JUnit report: \(parsed.message)\n\(xml)")

        let document = try XMLDocument(xmlString: xml)
        let suite = try #require(document.rootElement())
        #expect(suite.name == "testsuite")
        #expect(suite.attribute(forName: "name")?.stringValue == "rlctl check")
        #expect(suite.attribute(forName: "tests")?.stringValue == "4")
        // stalls.count fails, wake.port.p99 has no data, and the lost events fail the trace case.
        #expect(suite.attribute(forName: "failures")?.stringValue == "3")
        let cases = suite.elements(forName: "testcase")
        #expect(cases.map { $0.attribute(forName: "name")?.stringValue } == [#"stalls <&"'> "quoted" & 'single'"#, "loop.utilization <= 80%", "wake.port.p99 <= 1ms", "trace complete"])
        let messages = cases.map { $0.elements(forName: "failure").first?.attribute(forName: "message")?.stringValue }
        #expect(messages == ["stalls.count = 1, limit == 0", nil, "wake.port.p99: no data in the trace",
                             "3 events/packets lost, no data for wake.port.p99"])
        #expect(xml.contains(#"name="stalls &lt;&amp;&quot;'&gt; &quot;quoted&quot; &amp; 'single'""#), "\(xml)")
        #expect(xml.hasPrefix("<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\n<testsuite "), "\(xml)")
    }

    @Test func checkJUnitSkipsTheTraceCaseWhenTheBudgetAllowsTheLoss() throws {
        var lossy = try VerdictTests.summary()
        lossy.health.eventsLost = 3
        let xml = try check("trace.lost <= 10\n", [lossy]).junit
        let suite = try #require(try XMLDocument(xmlString: xml).rootElement())
        #expect(suite.attribute(forName: "failures")?.stringValue == "0")
        let trace = try #require(suite.elements(forName: "testcase").last)
        #expect(trace.elements(forName: "skipped").first?.attribute(forName: "message")?.stringValue == "3 events/packets lost")
    }

    // MARK: - compare

    private func report(p99: [Double], workload: String = "timers") throws -> RunReport {
        RunReport(workload: workload, tracer: "embedded", repetitions: try p99.map { value in
            var s = try VerdictTests.summary()
            s.overall.timerLateness.p99 = UInt64(value * 1_000_000)
            return s
        })
    }

    @Test func compareTextAndMarkdown() throws {
        let result = try #require(ComparisonReport(baseline: try report(p99: [1, 1, 1]), current: try report(p99: [3, 3, 3], workload: "jank"),
                                                   metrics: ["timer.lateness.p99"], threshold: 0.1, thresholdText: "10%"))
        #expect(result.text == """
            timer.lateness.p99                1.00ms → 3.00ms         +200%  95% CI [+200%, +200%]  REGRESSED
            1 regression(s) beyond 10%
            """)
        #expect(result.markdown == """
            ### rlctl compare: ❌ 1 regression(s) beyond 10%

            ⚠️ warning: these may be different workloads: the baseline ran workload "timers" and the current run "jank"

            | metric | baseline | current | change | 95% CI | |
            | --- | --- | --- | --- | --- | --- |
            | `timer.lateness.p99` | 1.00ms | 3.00ms | +200% | [+200%, +200%] | ❌ |

            Repetitions: 3 baseline, 3 current.
            """)
    }

    /// A metric that was 0 in the baseline changes by an infinite ratio: null in JSON, not `inf`.
    @Test func compareJSONWritesAnInfiniteChangeAsNull() throws {
        let result = try #require(ComparisonReport(baseline: try report(p99: [0, 0]), current: try report(p99: [2, 2]),
                                                   metrics: ["timer.lateness.p99"], threshold: 0.1, thresholdText: "10%"))
        let json = result.json
        #expect(json == #"{"metrics":[{"baseline":0,"change":null,"changeUnit":"relative","current":2000000,"high":null,"low":null,"metric":"timer.lateness.p99","regressed":true}],"regressions":1,"threshold":0.1}"#)
        #expect(try object(json)["regressions"] as? Int == 1)
    }
}
