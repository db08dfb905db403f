import Foundation
import Glibc
import Testing
import TestSupport

/// `rlctl report`, `run --report` and `record --report`: the page's numbers are summarize's, bad input is one
/// line, and a real browser (headless Chromium) loads the pages of `timers`, `jank`, a lossy trace and a
/// comparison with no console message, showing the summary's figures; each page's screenshot is kept in
/// .build/test-artifacts.
@Suite(.serialized) struct ReportTests {
    static let chromium = TestRequirement(missing: TestEnvironment.executable("chromium") == nil ? "chromium" : nil,
                                          problem: "no headless browser to load the report pages")
    static let artifacts: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent(".build/test-artifacts").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The figures a page shows, by name, in the order they appear: `["utilization": ["26.6%"], ...]`.
    static func figures(_ page: String) -> [String: [String]] {
        var found: [String: [String]] = [:]
        for part in page.components(separatedBy: "<span class=\"value\">").dropFirst() {
            guard let valueEnd = part.range(of: "</span><span class=\"name\">"),
                  let nameEnd = part.range(of: "</span>", range: valueEnd.upperBound..<part.endIndex) else { continue }
            found[String(part[valueEnd.upperBound..<nameEnd.lowerBound]), default: []].append(String(part[..<valueEnd.lowerBound]))
        }
        return found
    }

    /// `26.6%` → 0.266.
    static func percent(_ text: String?) -> Double? {
        guard let text, text.hasSuffix("%") else { return nil }
        return Double(text.dropLast()).map { $0 / 100 }
    }

    /// The page's figures against the summary JSON of the same input: events read, and per RunLoopCore loop its
    /// utilization (three significant digits) and stall count.
    static func expectFiguresMatch(_ page: String, summary: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = figures(page)
        let health = summary["health"] as? [String: Any] ?? [:]
        #expect(shown["events read"]?.first == "\(health["eventsRead"] as? Int ?? -1)", sourceLocation: sourceLocation)
        let loops = summary["loops"] as? [[String: Any]] ?? []
        #expect((shown["utilization"] ?? []).count >= loops.count, sourceLocation: sourceLocation)
        for (index, loop) in loops.enumerated() {
            let expected = loop["utilization"] as? Double ?? -1
            let onPage = percent(shown["utilization"]?[index]) ?? -2
            #expect(abs(onPage - expected) <= max(expected, 0.01) * 0.005, "loop \(index): page \(onPage), summary \(expected)", sourceLocation: sourceLocation)
            #expect(shown["stalls"]?[index] == "\(loop["stalls"] as? Int ?? -1)", sourceLocation: sourceLocation)
        }
    }

    // ===== the command =====

    @Test func aTracesPageShowsWhatSummarizePrints() throws {
        let page = temporaryPath("shared.html")
        defer { try? FileManager.default.removeItem(atPath: page) }
        let result = try CLI.run(["report", sharedTrace, "-o", page])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty && result.stderr == "rlctl: wrote the report \(page)\n", "\(result.stdout)\(result.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let summary = try Self.json(try CLI.run(["summarize", sharedTrace, "--format", "json"]).stdout)
        Self.expectFiguresMatch(html, summary: summary)
        #expect(html.contains("utilization over time") && html.contains("Timers (worst p99 lateness first)"))
    }

    @Test func aBudgetsVerdictIsOnThePageRuleByRule() throws {
        let page = temporaryPath("budget.html")
        defer { try? FileManager.default.removeItem(atPath: page) }
        let budget = try CLI.file("mixed.budget", "trace.lost == 0\nloop.iterations <= 1\n")
        let result = try CLI.run(["report", sharedTrace, "-o", page, "--budget", budget])
        #expect(result.status == 0, "the page is made whatever the verdict: \(result.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("1 rule(s) failed"))
        #expect(html.contains("<tr class=\"pass\"><td>trace.lost == 0</td><td>0</td><td>pass</td></tr>"))
        #expect(html.contains("<tr class=\"fail\"><td>loop.iterations &lt;= 1</td>"))
        let missing = try CLI.run(["report", sharedTrace, "-o", page, "--budget", "/nonexistent.budget"])
        #expect(missing.status == 2 && missing.stderr == "rlctl: /nonexistent.budget: no such budget file (or it cannot be read)\n", "\(missing.stderr)")
    }

    @Test func runAndRecordDrawTheirPageToo() throws {
        let page = temporaryPath("run.html"), recorded = temporaryPath("record.html")
        defer {
            try? FileManager.default.removeItem(atPath: page)
            try? FileManager.default.removeItem(atPath: recorded)
        }
        let run = try CLI.run(["run", "timers", "--count", "2", "--duration", "300ms", "--report", page, "--format", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("wrote the report \(page)"))
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("<title>rlctl report: run timers</title>"))
        Self.expectFiguresMatch(html, summary: try Self.json(run.stdout))

        let demo = CLI.sibling("runloop-demo")
        let record = try CLI.run(["record", "--tracer", "embedded", "--report", recorded, "--", demo, "0.3"])
        #expect(record.status == 0, "\(record.stderr)")
        let drawn = try String(contentsOfFile: recorded, encoding: .utf8)
        #expect(drawn.contains("program: \(demo) 0.3") && drawn.contains("utilization over time"), "\(drawn.prefix(3000))")
    }

    /// Ctrl-C ends a run early: its page still comes, and says it covers only what ran (the workload asked for
    /// more), so that nobody reads a 1 s run as the 4 s one the header names.
    @Test func aRunEndedByCtrlCSaysSoOnItsPage() throws {
        let page = temporaryPath("interrupted.html")
        defer { try? FileManager.default.removeItem(atPath: page) }
        let child = try CLI.start(["run", "timers", "--count", "2", "--duration", "4s", "--repeat", "2", "--report", page])
        try child.waitUntilSignalsAreCaught()
        usleep(800_000)
        child.send(SIGINT)
        let end = child.wait()
        #expect(end.status == 0, "\(end.termination): \(end.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("<p class=\"about\">1 repetition(s) of 2</p>"))
        #expect(html.contains("<p class=\"about\">SIGINT ended the run early: the page covers the part that ran, not all of 4s</p>"))
    }

    @Test func badInputIsOneLine() throws {
        try expectUsageError(["report", "-o", temporaryPath("x.html")],
                             "give an input (a trace folder, summary or run report), or --baseline and --current")
        try expectUsageError(["report", sharedTrace, "--baseline", sharedTrace, "--current", sharedTrace, "-o", temporaryPath("x.html")],
                             "give either an input or --baseline and --current, not both")
        try expectUsageError(["report", "--baseline", sharedTrace, "--current", sharedTrace, "--budget", "b", "-o", temporaryPath("x.html")],
                             "--budget applies to a single input, not to a comparison")
        let missing = try CLI.run(["report", "/nonexistent/trace", "-o", temporaryPath("x.html")])
        #expect(missing.status == 2 && missing.stderr.hasPrefix("rlctl: ") && missing.stderr.split(separator: "\n").count == 1, "\(missing.stderr)")
        let unwritable = try CLI.run(["report", sharedTrace, "-o", "/nonexistent/folder/x.html"])
        #expect(unwritable.status == 2, "\(unwritable.stderr)")
        #expect(unwritable.stderr == "rlctl: cannot write /nonexistent/folder/x.html: no folder /nonexistent/folder\n", "\(unwritable.stderr)")
        let folder = NSTemporaryDirectory()
        let onAFolder = try CLI.run(["report", sharedTrace, "-o", folder])
        #expect(onAFolder.status == 2 && onAFolder.stderr == "rlctl: cannot write \(folder): it is a folder\n", "\(onAFolder.stderr)")
        // A run report from a newer rlctl is refused by name; an older one (its newer fields absent) loads.
        let report = temporaryPath("r.json")
        defer { try? FileManager.default.removeItem(atPath: report) }
        try #require(try CLI.run(["run", "timers", "--count", "1", "--duration", "100ms", "--output", report, "--format", "json"]).status == 0)
        // JSONEncoder writes the slash escaped.
        let original = try String(contentsOfFile: report, encoding: .utf8).replacingOccurrences(of: "\\/", with: "/")
        try #require(original.contains("\"rlctl-run-report/1\""))
        try original.replacingOccurrences(of: "rlctl-run-report/1", with: "rlctl-run-report/2").write(toFile: report, atomically: true, encoding: .utf8)
        let newer = try CLI.run(["report", report, "-o", temporaryPath("x.html")])
        #expect(newer.status == 2 && newer.stderr == "rlctl: \(report): a run report of format \"rlctl-run-report/2\", which this rlctl cannot read (it reads up to rlctl-run-report/1): use the rlctl that wrote it, or a newer one\n", "\(newer.stderr)")
        try original.replacingOccurrences(of: "rlctl-run-report/1", with: "rlctl-run-report/0").write(toFile: report, atomically: true, encoding: .utf8)
        #expect(try CLI.run(["report", report, "-o", temporaryPath("x.html")]).status == 0)
        let noTracer = try CLI.run(["run", "timers", "--tracer", "none", "--report", temporaryPath("x.html")])
        #expect(noTracer.status == 2 && noTracer.stderr == "rlctl: --report needs a tracer (not --tracer none)\n", "\(noTracer.stderr)")
    }

    @Test func aComparisonPageGivesCompareVerdictInItsOrder() throws {
        let a = temporaryPath("a.json"), b = temporaryPath("b.json"), page = temporaryPath("cmp.html")
        defer { for path in [a, b, page] { try? FileManager.default.removeItem(atPath: path) } }
        for output in [a, b] {
            let run = try CLI.run(["run", "timers", "--count", "2", "--duration", "200ms", "--repeat", "3", "--output", output, "--format", "json"])
            try #require(run.status == 0, "\(run.stderr)")
        }
        let result = try CLI.run(["report", "--baseline", a, "--current", b, "-o", page, "--threshold", "500%"])
        #expect(result.status == 0, "\(result.stderr)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("no regression beyond 500%"))
        let compare = try CLI.run(["compare", a, b, "--threshold", "500%", "--format", "json"])
        let results = try Self.json(compare.stdout)["metrics"] as? [[String: Any]] ?? []
        let metrics = results.compactMap { $0["metric"] as? String }
        #expect(!metrics.isEmpty)
        // One section per metric, in compare's order.
        let sections = html.components(separatedBy: "<section class=\"metric\"><h3>").dropFirst().map { String($0.prefix { $0 != " " }) }
        #expect(sections == metrics)
    }

    /// Runs of different workloads, compared anyway: the page says so above the verdict, as compare warns.
    @Test func aComparisonOfDifferentWorkloadsSaysSo() throws {
        let a = temporaryPath("timers.json"), b = temporaryPath("jank.json"), page = temporaryPath("mismatch.html")
        defer { for path in [a, b, page] { try? FileManager.default.removeItem(atPath: path) } }
        try #require(try CLI.run(["run", "timers", "--duration", "200ms", "--output", a, "--format", "json"]).status == 0)
        try #require(try CLI.run(["run", "jank", "--duration", "200ms", "--output", b, "--format", "json"]).status == 0)
        try #require(try CLI.run(["report", "--baseline", a, "--current", b, "-o", page, "--allow-different-workloads"]).status == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        #expect(html.contains("These may be different workloads: the baseline ran workload &quot;timers&quot; and the current run &quot;jank&quot;."))
        // Distribution metrics are drawn whole, both sides overlaid.
        #expect(html.contains("timer.lateness: the whole distribution of each side"))
    }

    // ===== in a browser =====

    /// Loads the page in headless Chromium (every network request sent to a closed port), returns its DOM, and
    /// keeps a screenshot. No console message is allowed: the page has no script, so one would be a failed load.
    static func load(_ page: String, screenshot name: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let browser = TestEnvironment.executable("chromium")!
        let common = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--proxy-server=127.0.0.1:9",
                      "--user-data-dir=" + temporaryPath("chromium-profile"), "--enable-logging=stderr", "--v=0"]
        let dom = try runProcess(browser, common + ["--dump-dom", "file://" + page], ProcessOptions(timeout: .seconds(90)))
        #expect(dom.status == 0, "\(dom.stderr)", sourceLocation: sourceLocation)
        let console = dom.stderr.split(separator: "\n").filter { $0.contains("CONSOLE") || $0.contains("net::ERR_") }
        #expect(console.isEmpty, "console: \(console)", sourceLocation: sourceLocation)
        let png = "\(artifacts)/report-\(name).png"
        try? FileManager.default.removeItem(atPath: png)
        let shot = try runProcess(browser, common + ["--window-size=1100,2400", "--screenshot=" + png, "file://" + page], ProcessOptions(timeout: .seconds(90)))
        #expect(shot.status == 0 && ((try? FileManager.default.attributesOfItem(atPath: png)[.size] as? Int) ?? 0) > 10_000,
                "no screenshot: \(shot.stderr.suffix(500))", sourceLocation: sourceLocation)
        return dom.stdout
    }

    /// The page as a person sees it on a laptop (1400 px) and on a phone (390 px): nothing cut off at the
    /// window's right edge (Pages/right-edge.py counts the screenshot's rows with anything but the background in
    /// its last columns: a chart or grid wider than the window reaches there).
    @Test(.enabled(if: chromium.shouldRun, chromium.skipComment))
    func thePageFitsALaptopAndAPhone() throws {
        guard Self.chromium.requireMet() else { return }
        let page = temporaryPath("fits.html")
        defer { try? FileManager.default.removeItem(atPath: page) }
        try #require(try CLI.run(["run", "mixed", "--duration", "1s", "--report", page, "--quiet"]).status == 0)
        let browser = TestEnvironment.executable("chromium")!
        let edge = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Pages/right-edge.py").path
        for width in [1400, 390] {
            let png = "\(Self.artifacts)/report-mixed-\(width).png"
            try? FileManager.default.removeItem(atPath: png)
            let shot = try runProcess(browser, ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--proxy-server=127.0.0.1:9",
                                                "--user-data-dir=" + temporaryPath("chromium-profile"), "--window-size=\(width),3000",
                                                "--screenshot=" + png, "file://" + page], ProcessOptions(timeout: .seconds(90)))
            let made = FileManager.default.fileExists(atPath: png)
            try #require(shot.status == 0 && made, "no screenshot at \(width) px: \(shot.stderr.suffix(300))")
            let cut = try runProcess("/usr/bin/python3", [edge, png])
            #expect(cut.status == 0 && cut.stdout == "0\n", "at \(width) px, \(cut.stdout) rows reach the right edge (cut off): \(png) \(cut.stderr)")
        }
    }

    @Test(.enabled(if: chromium.shouldRun, chromium.skipComment))
    func theBrowserShowsTheTimersJankAndLossyPagesWithTheSummarysFigures() throws {
        guard Self.chromium.requireMet() else { return }
        let cases: [(name: String, run: [String])] = [
            ("timers", ["run", "timers", "--count", "4", "--duration", "500ms"]),
            ("jank", ["run", "jank", "--duration", "1s"]),
            // A flood of blocks into a 64 KiB buffer: events are lost, and the page must say so.
            ("lossy", ["run", "blocks", "--rate", "0", "--duration", "300ms", "--buffer-kib", "64"]),
        ]
        for (name, arguments) in cases {
            let page = temporaryPath("\(name).html")
            defer { try? FileManager.default.removeItem(atPath: page) }
            let run = try CLI.run(arguments + ["--report", page, "--format", "json"])
            try #require(run.status == 0 || run.status == 3, "\(name): \(run.stderr)")
            let summary = try Self.json(run.stdout)
            let dom = try Self.load(page, screenshot: name)
            Self.expectFiguresMatch(dom, summary: summary)
            let lost = (summary["health"] as? [String: Any])?["eventsLost"] as? Int ?? 0
            if name == "lossy" {
                #expect(lost > 0, "the lossy run lost nothing: make its buffer smaller")
                #expect(dom.contains("events and 0 packets lost in") && dom.contains("class=\"loss\""), "losses said and shaded")
            } else {
                #expect(dom.contains("Complete: no event lost, every run complete.") || lost > 0)
            }
            if name == "jank" { #expect(dom.contains("href=\"#stall-1-0\""), "a stall marked and linked") }
        }
    }

    @Test(.enabled(if: chromium.shouldRun, chromium.skipComment))
    func theBrowserShowsAComparison() throws {
        guard Self.chromium.requireMet() else { return }
        let a = temporaryPath("a.json"), b = temporaryPath("b.json"), page = temporaryPath("cmp.html")
        defer { for path in [a, b, page] { try? FileManager.default.removeItem(atPath: path) } }
        for output in [a, b] {
            try #require(try CLI.run(["run", "timers", "--duration", "200ms", "--repeat", "3", "--output", output, "--format", "json"]).status == 0)
        }
        try #require(try CLI.run(["report", "--baseline", a, "--current", b, "-o", page, "--allow-different-workloads"]).status == 0)
        let dom = try Self.load(page, screenshot: "comparison")
        #expect(dom.contains("class=\"verdict"))
        #expect(dom.contains("<svg"))
    }
}
