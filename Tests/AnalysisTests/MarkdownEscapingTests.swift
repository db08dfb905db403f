@testable import Analysis
import Testing

/// `--format markdown` shows names from the trace and the command line literally: a `|` in a timer label must
/// not split its table row, a `<script>` in a program path must not become HTML (issue 27).
@Suite struct MarkdownEscapingTests {
    static let hostile = "a|b <script>x</script> & *c* _d_ `e` [f](g) #h ~i~ \\j\nk"
    static let escaped = ##"a\|b &lt;script&gt;x&lt;/script&gt; &amp; \*c\* \_d\_ \`e\` \[f\](g) \#h \~i\~ \\j<br>k"##

    @Test func everyCharacterThatWouldChangeTheMarkupIsEscaped() {
        #expect(Self.hostile.markdownEscaped == Self.escaped)
        #expect("frame 1.5ms (!) → run".markdownEscaped == "frame 1.5ms (!) → run")
        #expect("bio_close_file _x".markdownEscaped == #"bio_close_file \_x"#, "inside a word an underscore starts no emphasis")
    }

    /// The late-frame trace of ReportTextTests with a timer label, a source label and a title of the worst kind.
    @Test func timerLabelsCausesAndTheTitleStayInTheirCell() throws {
        let trace = ReportTextTests.lateFrame(timer: Self.hostile, source: "p|<b>")
        let markdown = SummaryReport.markdown(try trace.summarize(), title: "./app <x> | y")
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == #"### ./app &lt;x&gt; \| y"#)
        let row = try #require(lines.first { $0.hasPrefix("| a") }, "\(markdown)")
        #expect(row == "| \(Self.escaped) | 1 | 0 | none | 5.00ms | 5.00ms | 5.00ms | 0ns/s | 1 | source p\\|&lt;b&gt; (1×) |")
        #expect(lines.contains("- 1× source p\\|&lt;b&gt;"), "\(markdown)")
        #expect(!markdown.contains("<script>") && !markdown.contains("<b>"), "\(markdown)")
    }

    /// Compare's warning names the two workloads: a `run --file` path or a recorded program's command line.
    @Test func compareNamesTheWorkloadsLiterally() throws {
        func report(_ workload: String) throws -> RunReport {
            RunReport(workload: workload, tracer: "embedded", repetitions: [try VerdictTests.summary(), try VerdictTests.summary()])
        }
        let comparison = try #require(ComparisonReport(baseline: try report("./app <b>"), current: try report("./app | x"),
                                                       metrics: ["loop.utilization"], threshold: 0.1, thresholdText: "10%"))
        let warning = try #require(comparison.markdown.split(separator: "\n").first { $0.hasPrefix("⚠️") })
        #expect(warning == #"⚠️ warning: these may be different workloads: the baseline ran workload "./app &lt;b&gt;" and the current run "./app \| x""#)
    }
}
