/// `rlctl report`: one self-contained HTML page (inline SVG and stylesheet, no script, no request to any address)
/// for a trace's summary, a run report or a comparison. Every number on it is read from the same summary
/// `summarize` prints, rendered a second time; only the lines over time come from the summary's timeline.
public enum HTMLReport {
    /// What the page's header says about its input.
    public struct Context: Sendable {
        public var title: String
        /// Lines under the title: what ran, the tracer, how the page was made.
        public var about: [String]
        public var budget: BudgetCheck?

        public init(title: String, about: [String] = [], budget: BudgetCheck? = nil) {
            self.title = title
            self.about = about
            self.budget = budget
        }
    }

    /// How many timers get a chart of their own (the worst first; the rest are rows of the timer table).
    static let timerCharts = 12

    // ===== a trace, a run =====

    /// The page of one summary (a trace, or one repetition of a run).
    public static func summary(_ s: TraceSummary, context: Context) -> String {
        var body: [Node] = header(context)
        body.append(verdictSection(s))
        body.append(healthSection(s.health))
        if let budget = context.budget { body.append(budgetSection(budget)) }
        if let reported = reportedSection(s) { body.append(reported) }
        body.append(contentsOf: loopSections(s))
        return page(title: context.title, body: body)
    }

    /// A run report: its repetitions side by side, then the first repetition in full (or the one asked for).
    public static func run(_ report: RunReport, context: Context) -> String {
        guard let first = report.repetitions.first else {
            return page(title: context.title, body: header(context) + [.element("p", ["class": "problem"], text: "the run report holds no repetition")])
        }
        var body = header(context)
        if report.repetitions.count > 1 { body.append(repetitionsSection(report)) }
        body.append(verdictSection(first))
        body.append(healthSection(first.health))
        if let budget = context.budget { body.append(budgetSection(budget)) }
        if report.repetitions.count > 1 {
            body.append(.element("p", ["class": "note"], text: "Below: repetition 1 of \(report.repetitions.count) in full."))
        }
        if let reported = reportedSection(first) { body.append(reported) }
        body.append(contentsOf: loopSections(first))
        return page(title: context.title, body: body)
    }

    // ===== a comparison =====

    /// The comparison `rlctl compare` decides, metric by metric in its order: both sides' repetitions, the medians,
    /// the bootstrap interval of the change against the threshold, and the verdict.
    /// A metric's verdict in words: a wall-clock metric slower because of the machine is not a regression.
    private static func state(_ result: Comparison.Result) -> String {
        if result.explainedByContention { return "slower: the machine, not the code" }
        if result.inconclusive { return "inconclusive: the interval crosses the threshold (more repetitions could tell)" }
        return result.regressed ? "regressed" : result.improved ? "improved" : "within the threshold"
    }

    public static func comparison(_ c: ComparisonReport, baseline: RunReport, current: RunReport, context: Context) -> String {
        var body = header(context)
        let verdict = c.regressed ? "\(c.regressions.count) regression(s) beyond \(c.thresholdText)" : "no regression beyond \(c.thresholdText)"
        body.append(.element("p", ["class": c.regressed ? "verdict fail" : "verdict pass"], text: verdict))
        if let mismatch = c.mismatch {
            body.append(.element("p", ["class": "problem"], text: "These may be different workloads: \(mismatch)."))
        }
        if let contention = c.contentionText {
            body.append(.element("p", ["class": "note"], text: contention + "."))
        }
        body.append(.element("p", ["class": "note"], text:
            "Baseline: \(c.baselineRepetitions) repetition(s) of \(baseline.workloadName ?? "its workload"); current: \(c.currentRepetitions) of \(current.workloadName ?? "its workload"). "
            + "A metric regresses only when the whole 95% bootstrap interval of its change is past the threshold (ratios change in points)."))
        var rows: [Node] = [row(["metric", "baseline (median)", "current (median)", "change", "95% interval", "verdict"], header: true)]
        for result in c.results {
            let unit = Metric.named(result.metric)?.unit ?? .count
            rows.append(row([result.metric, formatMetric(result.baseline, unit: unit), formatMetric(result.current, unit: unit),
                             change(result.change, result.inPoints), change(result.low, result.inPoints) + " … " + change(result.high, result.inPoints),
                             state(result)],
                            cls: result.regressed && !result.explainedByContention ? "fail" : result.improved ? "pass" : nil))
        }
        body.append(.element("table", [:], rows))
        for result in c.results {
            guard let metric = Metric.named(result.metric) else { continue }
            let unit = { (value: Double) in formatMetric(value, unit: metric.unit) }
            body.append(.element("section", ["class": "metric"], [
                .element("h3", text: result.metric + " — " + state(result)),
                Chart.comparison(metric: result.metric, baseline: baseline.values(of: metric), current: current.values(of: metric), unit: unit),
                Chart.changeInterval(result, threshold: c.threshold),
            ] + overlaidDistributions(metric, baseline: baseline, current: current, unit: unit)))
        }
        return page(title: context.title, body: body)
    }

    /// For a statistic of a distribution (`timer.lateness.p99`): both sides' whole distributions, every repetition's
    /// values together.
    private static func overlaidDistributions(_ metric: Metric.Definition, baseline: RunReport, current: RunReport,
                                              unit: @escaping (Double) -> String) -> [Node] {
        guard let distribution = metric.distribution else { return [] }
        func merged(_ report: RunReport) -> [DistributionSummary.Bucket] {
            var counts: [UInt64: UInt64] = [:]
            for summary in report.repetitions {
                for bucket in distribution(summary).buckets { counts[bucket.upTo, default: 0] += bucket.count }
            }
            return counts.sorted { $0.key < $1.key }.map { DistributionSummary.Bucket(upTo: $0.key, count: $0.value) }
        }
        let name = metric.name.split(separator: ".").dropLast().joined(separator: ".")
        return [.element("figure", [:], [
            .element("figcaption", text: "\(name): the whole distribution of each side (all its repetitions), as shares"),
            Chart.overlaid(baseline: merged(baseline), current: merged(current), title: "\(name): baseline and current distributions", unit: unit),
        ])]
    }

    private static func change(_ value: Double, _ inPoints: Bool) -> String {
        inPoints ? formatPoints(value) : (value >= 0 ? "+" : "") + formatPercent(value)
    }

    // ===== parts =====

    private static func header(_ context: Context) -> [Node] {
        [.element("h1", text: context.title)] + context.about.map { .element("p", ["class": "about"], text: $0) }
    }

    private static func row(_ cells: [String], header: Bool = false, cls: String? = nil) -> Node {
        let cellNodes = cells.map { Node.element(header ? "th" : "td", text: $0) }
        return cls.map { .element("tr", ["class": $0], cellNodes) } ?? .element("tr", [:], cellNodes)
    }

    private static func figures(_ pairs: [(String, String)]) -> Node {
        .element("div", ["class": "figures"], pairs.map { name, value in
            .element("div", ["class": "figure"], [.element("span", ["class": "value"], text: value), .element("span", ["class": "name"], text: name)])
        })
    }

    /// What is wrong, if anything, before any figure (the text summary's first lines).
    private static func verdictSection(_ s: TraceSummary) -> Node {
        let verdict = SummaryVerdict(s)
        let finding: Node = verdict.isClean
            ? .element("p", ["class": "pass"], text: verdict.nothingFound.prefix(1).uppercased() + verdict.nothingFound.dropFirst() + ".")
            : .element("ul", ["class": "problems"], verdict.findings.map { .element("li", text: $0) })
        return .element("section", ["class": "findings"], [.element("h2", text: "Verdict"), finding])
    }

    private static func healthSection(_ h: TraceSummary.Health) -> Node {
        let problems = SummaryReport.healthProblems(h)
        var children: [Node] = [
            .element("h2", text: "Trace health"),
            figures([("events read", "\(h.eventsRead)"), ("events lost", "\(h.eventsLost)"), ("packets lost", "\(h.packetsLost)"),
                     ("loss windows", "\(h.lossWindows.count)")]),
        ]
        if problems.isEmpty {
            children.append(.element("p", ["class": "pass"], text: "Complete: no event lost, every run complete."))
        } else {
            children.append(.element("ul", ["class": "problems"], problems.map { .element("li", text: $0) }))
            children.append(.element("p", ["class": "note"], text: "Windows with lost events are shaded on every time axis; figures over them may undercount."))
        }
        if let skipped = SummaryReport.skippedNote(h) { children.append(.element("p", ["class": "note"], text: skipped)) }
        return .element("section", ["class": h.complete ? "health" : "health incomplete"], children)
    }

    private static func budgetSection(_ check: BudgetCheck) -> Node {
        var rows: [Node] = [row(["rule", "value", "verdict"], header: true)]
        for verdict in check.verdicts {
            let state = verdict.noData ? "no data" + (verdict.noDataReason.map { ": \($0)" } ?? "") : verdict.passed ? "pass" : "FAIL"
            rows.append(row([verdict.rule.text, verdict.noData ? "—" : formatMetric(verdict.value, unit: verdict.unit), state],
                            cls: verdict.passed ? "pass" : "fail"))
        }
        var children: [Node] = [
            .element("h2", text: "Budget"),
            .element("p", ["class": check.passed ? "verdict pass" : "verdict fail"],
                     text: check.passed ? "within budget" : "\(check.failed) rule(s) failed" + (check.incompleteForbidden ? "; the data is incomplete and the budget does not allow it" : "")),
            .element("table", [:], rows),
        ]
        if !check.incompleteness.isEmpty {
            children.append(.element("ul", ["class": "problems"], check.incompleteness.map { .element("li", text: $0) }))
        }
        return .element("section", ["class": "budget"], children)
    }

    /// The stalls and hangs the loops reported themselves (`loop_stall`, `loop_hang`), when there are some: what
    /// the program saw at its own threshold, next to the summary's stalls at --stall in each loop's section.
    private static func reportedSection(_ s: TraceSummary) -> Node? {
        guard let r = s.reported else { return nil }
        var children: [Node] = [.element("h2", text: "What the loops reported")]
        if r.stalls > 0 {
            let thresholds = r.thresholdsNanoseconds.map { formatNanoseconds($0) }.joined(separator: ", ")
            let shown = r.worst.count < r.stalls ? " (the \(r.worst.count) longest)" : ""
            var table: [Node] = [row(["at", "busy", "loop", "iteration", "mode", "longest callout"], header: true)]
            for stall in r.worst.sorted(by: { $0.startNanoseconds < $1.startNanoseconds }) {
                table.append(row([offset(stall.startNanoseconds, in: s), formatNanoseconds(stall.busyNanoseconds),
                                  SummaryReport.loopName(stall.loopID, stall.loopName), "\(stall.iteration)", stall.mode,
                                  stall.culpritDescription]))
            }
            children.append(.element("h3", text: "\(r.stalls) stall(s) busier than \(thresholds)\(shown)"))
            children.append(.element("table", ["class": "stalls"], table))
        }
        if r.hangs > 0 {
            var table: [Node] = [row(["reported at", "busy for at least", "loop", "iteration"], header: true)]
            for hang in r.hangReports {
                table.append(row([offset(hang.reportedAtNanoseconds, in: s), formatNanoseconds(hang.busyAtLeastNanoseconds),
                                  SummaryReport.loopName(hang.loopID, hang.loopName), "\(hang.iteration)"]))
            }
            children.append(.element("h3", text: "\(r.hangs) hang(s) the watchdog saw while they lasted"))
            children.append(.element("table", ["class": "stalls"], table))
        }
        return .element("section", ["class": "reported"], children)
    }

    private static func repetitionsSection(_ report: RunReport) -> Node {
        let metrics = ["loop.utilization", "loop.busy_per_iteration.p99", "timer.lateness.p99", "stalls.count"].compactMap(Metric.named)
        var rows: [Node] = [row(["repetition"] + metrics.map(\.name), header: true)]
        for (index, summary) in report.repetitions.enumerated() {
            rows.append(row(["\(index + 1)"] + metrics.map { formatMetric($0.value(in: summary), unit: $0.unit) }))
        }
        return .element("section", ["class": "repetitions"], [.element("h2", text: "\(report.repetitions.count) repetitions"), .element("table", [:], rows)])
    }

    /// Time spans of the trace's loss windows, in seconds from the timeline's origin.
    private static func lossSpans(_ s: TraceSummary) -> [Chart.Span] {
        guard let timeline = s.timeline else { return [] }
        let origin = Double(timeline.originNanoseconds)
        return s.health.lossWindows.map {
            Chart.Span(from: max(0, (Double($0.from) - origin) / 1e9), to: max(0, (Double(max($0.to, $0.from)) - origin) / 1e9))
        }
    }

    /// Where the page's times count from: the timeline's origin (the first loop event, as the summary's times),
    /// so that a table's "+1.20s" and a chart's axis agree.
    private static func origin(_ s: TraceSummary) -> UInt64? { s.timeline?.originNanoseconds ?? s.health.firstEventNanoseconds }

    private static func seconds(_ ns: UInt64, from s: TraceSummary) -> Double {
        let origin = origin(s) ?? ns
        return ns >= origin ? Double(ns - origin) / 1e9 : 0
    }

    private static func offset(_ ns: UInt64, in s: TraceSummary) -> String {
        let origin = origin(s) ?? ns
        return "+" + formatNanoseconds(ns >= origin ? ns - origin : 0)
    }

    /// A loop's utilization over time, every stall marked where it began (per bucket: how many, and the worst,
    /// linked to its row when the stall table lists it).
    private static func timelineChart(_ s: TraceSummary, key: String, tableRows: [UInt64: String], title: String) -> Node {
        guard let timeline = s.timeline else {
            return .element("p", ["class": "na"], text: "Utilization over time: not in this input (a summary or run report saved without a timeline; rlctl report TRACE draws it).")
        }
        guard let line = timeline.loops.first(where: { $0.key == key }) else {
            return .element("p", ["class": "na"], text: "Utilization over time: no sleep or event of this loop in the timeline.")
        }
        let marks = line.stalls.map { bucket in
            Chart.StallMark(at: seconds(bucket.worstAtNanoseconds, from: s), busyNanoseconds: bucket.worstBusyNanoseconds,
                            anchor: tableRows[bucket.worstAtNanoseconds],
                            label: (bucket.count > 1 ? "\(bucket.count) stalls here, the worst " : "stall ")
                                + formatNanoseconds(bucket.worstBusyNanoseconds) + (bucket.worstCause.map { ": \($0)" } ?? ""))
        }
        return Chart.responsive { width in
            Chart.utilization(line.utilization, bucketSeconds: Double(timeline.bucketNanoseconds) / 1e9, losses: lossSpans(s), stalls: marks,
                              title: title, width: width)
        }
    }

    private static func distributions(_ items: [(String, DistributionSummary, Bool)]) -> Node {
        .element("div", ["class": "distributions"], items.compactMap { title, d, isCount in
            guard d.count > 0 else { return nil }
            return .element("figure", [:], [
                .element("figcaption", text: title),
                isCount ? Chart.histogram(d, title: title, unit: { "\(Int($0.rounded()))" }) : Chart.histogram(d, title: title),
            ])
        })
    }

    /// A stall as a loop's section shows it: a row of its table (`anchor` its id) and a mark on its line.
    private struct StallRow {
        var anchor: String
        var at: UInt64
        var busy: UInt64
        var culprit: String
        var iteration: UInt64
    }

    /// A loop's listed stalls in time order, their rows' ids `prefix-0`, `prefix-1`…
    private static func stallRows(_ stalls: [(at: UInt64, busy: UInt64, culprit: String, iteration: UInt64)], anchor prefix: String) -> [StallRow] {
        stalls.sorted { $0.at < $1.at }.enumerated().map { index, stall in
            StallRow(anchor: "\(prefix)-\(index)", at: stall.at, busy: stall.busy, culprit: stall.culprit, iteration: stall.iteration)
        }
    }

    private static func stallTable(_ s: TraceSummary, _ rows: [StallRow], total: UInt64) -> Node {
        let threshold = s.stallThresholdNanoseconds
        guard !rows.isEmpty else {
            return .element("p", ["class": "pass"], text: "No stall (no iteration busier than \(formatNanoseconds(threshold))).")
        }
        var table: [Node] = [row(["at", "busy", "culprit (longest callout of the iteration)", "iteration"], header: true)]
        for stall in rows {
            table.append(.element("tr", ["id": stall.anchor], [
                .element("td", text: offset(stall.at, in: s)), .element("td", text: formatNanoseconds(stall.busy)),
                .element("td", text: stall.culprit), .element("td", text: "\(stall.iteration)"),
            ]))
        }
        let shown = rows.count < total ? " (the \(rows.count) worst)" : ""
        return .element("div", [:], [.element("h3", text: "\(total) stall(s) over \(formatNanoseconds(threshold))\(shown)"), .element("table", ["class": "stalls"], table)])
    }

    /// One loop's section, whatever traced it: its heading and figures, its utilization over time with every stall
    /// marked, what its tracer cannot see, its distributions, its stalls, then `extra`.
    private static func loopSection(_ s: TraceSummary, id: String, key: TimelineRecorder.Key, heading: String, figures pairs: [(String, String)],
                                    notAvailable list: [String]?, distributions items: [(String, DistributionSummary, Bool)],
                                    stalls: [StallRow], stallCount: UInt64, extra: [Node] = []) -> Node {
        let name = s.timelineName(key)?.name ?? heading
        var children: [Node] = [
            .element("h2", text: heading),
            figures(pairs),
            timelineChart(s, key: TraceSummary.Timeline.key(for: key),
                          tableRows: Dictionary(stalls.map { ($0.at, $0.anchor) }, uniquingKeysWith: { a, _ in a }),
                          title: "\(name): utilization over time"),
        ]
        children += notAvailable(list)
        children.append(distributions(items))
        children.append(stallTable(s, stalls, total: stallCount))
        return .element("section", ["class": "loop", "id": id], children + extra)
    }

    /// A loop's kernel side, any kind of loop: where its busy time went and where its late wake-ups' time went, as
    /// stacked bars, and who held the CPU it waited for; nothing without a kernel view.
    private static func kernelSection(_ k: TraceSummary.KernelFacet?) -> [Node] {
        guard let k else { return [] }
        let b = k.busy
        var nodes: [Node] = [.element("h3", text: "The kernel's side" + (k.coversWholeLoop ? "" : " (since the kernel view began)")
                                      + (k.affectedByLoss ? " — kernel records lost in its window" : ""))]
        nodes.append(Chart.stackedBar("busy time", parts: [("on CPU", b.onCPUNanoseconds), ("waiting for a CPU", b.runQueueNanoseconds),
                                                             ("throttled", b.throttledNanoseconds), ("blocked", b.blockedNanoseconds)]))
        let late = k.lateWakeUps
        if late.explained > 0 {
            nodes.append(Chart.stackedBar("where the late time went (\(late.explained) late wake-up(s), \(formatNanoseconds(late.latenessNanoseconds)))",
                                          parts: late.parts.named))
        }
        let culprits = (b.culprits ?? []).map { ("busy", $0) } + late.culprits.map { ("late wake-ups", $0) }
        if !culprits.isEmpty {
            var table: [Node] = [row(["who held the CPU", "CPU", "time", "while"], header: true)]
            for (when, culprit) in culprits {
                table.append(row([culprit.name, "\(culprit.cpu)", formatNanoseconds(culprit.nanoseconds), when]))
            }
            nodes.append(.element("table", [:], table))
        }
        if let missing = k.notAvailable {
            nodes.append(.element("p", ["class": "na"], text: "Not available from the kernel view for this loop: " + missing.joined(separator: ", ") + "."))
        }
        return nodes
    }

    private static func notAvailable(_ list: [String]?) -> [Node] {
        guard let list, !list.isEmpty else { return [] }
        return [.element("p", ["class": "na"], text: "Not available for this loop (its tracer cannot see them): " + list.joined(separator: ", ") + ".")]
    }

    private static func loopSections(_ s: TraceSummary) -> [Node] {
        var sections: [Node] = []
        let anyLoop = !s.loops.isEmpty || !(s.nio?.loops.isEmpty ?? true) || !(s.waits?.loops.isEmpty ?? true)
        if !anyLoop {
            sections.append(.element("p", ["class": "problem"], text: "No loop in this input: nothing traced ran (or every event of it was lost)."))
        }
        let lossMark = " — events lost in its window"
        for loop in s.loops {
            let id = loop.loopID ?? 0
            let key = TimelineRecorder.Key.loop(id)
            var items: [(String, DistributionSummary, Bool)] = [("busy per iteration", loop.busyPerIteration, false), ("sleep", loop.sleep, false),
                                                                ("wake-up latency: timer due → callout", loop.wakeLatency.timer, false),
                                                                ("wake-up latency: source signal → perform", loop.wakeLatency.source, false),
                                                                ("wake-up latency: block enqueue → run", loop.wakeLatency.block, false),
                                                                ("wake-up latency: port send → handler", loop.wakeLatency.port, false),
                                                                ("wake-up latency: job enqueue → run", loop.wakeLatency.jobOrEmpty, false)]
            for kind in loop.calloutDurations.keys.sorted() {
                items.append(("callout: \(kind)", loop.calloutDurations[kind]!, false))
            }
            var slowest: [Node] = []
            if !loop.slowestCallouts.isEmpty {
                // With the kernel view, ranked by time on the CPU as the summary ranks them, with both times.
                let onCPU = loop.slowestCallouts.contains { $0.kernel != nil }
                var table: [Node] = [row(["callout", "kind", "duration"] + (onCPU ? ["on CPU", "where the rest went"] : []) + ["at"], header: true)]
                for callout in loop.slowestCallouts.sorted(by: { $0.rankNanoseconds > $1.rankNanoseconds }) {
                    let kernel = onCPU ? [callout.kernel.map { formatNanoseconds($0.onCPUNanoseconds) } ?? "not available",
                                          callout.kernel.map { SummaryReport.kernelSplitText($0) } ?? "before the kernel view"] : []
                    table.append(row([callout.label, callout.kind, formatNanoseconds(callout.durationNanoseconds)] + kernel + [offset(callout.atNanoseconds, in: s)]))
                }
                slowest = [.element("h3", text: "Slowest callouts" + (onCPU ? " (by time on the CPU)" : "")), .element("table", [:], table)]
            }
            sections.append(loopSection(
                s, id: "loop-\(id)", key: key,
                heading: (s.timelineName(key)?.name ?? "loop \(id)") + (loop.adapter.map { " (\($0))" } ?? "") + (loop.affectedByLoss ? lossMark : ""),
                figures: [("utilization", formatPercent(loop.utilization)), ("iterations", "\(loop.iterations)"), ("runs", "\(loop.runs)"),
                          ("busy", formatNanoseconds(loop.busyNanoseconds)), ("asleep", formatNanoseconds(loop.sleepNanoseconds)),
                          ("stalls", "\(loop.stalls)"), ("worst stall", loop.worstStalls.map(\.busyNanoseconds).max().map(formatNanoseconds) ?? "—")],
                notAvailable: loop.notAvailable, distributions: items,
                stalls: stallRows(loop.worstStalls.map { ($0.atNanoseconds, $0.busyNanoseconds, $0.cause, $0.iteration) }, anchor: "stall-\(id)"),
                stallCount: loop.stalls, extra: slowest + kernelSection(loop.kernel)))
        }
        for loop in s.nio?.loops ?? [] {
            let key = TimelineRecorder.Key.nio(loop.loopID)
            sections.append(loopSection(
                s, id: "nio-\(loop.loopID)", key: key,
                heading: (s.timelineName(key)?.name ?? "NIO loop \(loop.loopID)") + (loop.affectedByLoss ? lossMark : ""),
                figures: [("utilization", formatPercent(loop.utilization)), ("ticks", "\(loop.ticks)"), ("ticks/s", threeDigits(loop.ticksPerSecond)),
                          ("tasks", "\(loop.tasks)"), ("stalls", "\(loop.stalls)")],
                notAvailable: loop.notAvailable,
                distributions: [("busy per iteration", loop.busyPerIteration, false), ("sleep", loop.sleep, false),
                                ("tick (task phase)", loop.tickDuration, false), ("tasks per tick", loop.tasksPerTick, true)]
                    + (loop.ioDuration.map { [("I/O event", $0, false)] } ?? []),
                stalls: stallRows(loop.worstStalls.map { ($0.atNanoseconds, $0.busyNanoseconds, $0.cause, $0.iteration) }, anchor: "stall-nio-\(loop.loopID)"),
                stallCount: loop.stalls, extra: kernelSection(loop.kernel)))
        }
        if let waits = s.waits {
            for (position, loop) in waits.loops.enumerated() {
                sections.append(loopSection(
                    s, id: "wait-\(position)",
                    key: .wait(threadID: loop.threadID, target: loop.target, epoll: loop.family == TraceSummary.WaitLoopSummary.epollFamily),
                    heading: loop.name + (loop.affectedByLoss ? lossMark : ""),
                    figures: [("utilization", formatPercent(loop.utilization)), ("iterations", "\(loop.iterations)"),
                              ("iterations/s", threeDigits(loop.iterationsPerSecond)), ("late wake-ups", "\(loop.lateWakeUps)"), ("stalls", "\(loop.stalls)")]
                        + (loop.millisecondRests.map { [("1 ms rests (Go's rounding)", "\($0)")] } ?? []),
                    notAvailable: waits.notAvailable,
                    distributions: [("busy per iteration", loop.busyPerIteration, false), ("sleep (one blocking wait)", loop.sleep, false),
                                    ("wake lateness (timed-out waits)", loop.lateness, false), ("ready per wake-up", loop.readyPerWakeUp, true)],
                    stalls: stallRows(loop.worstStalls.map { ($0.atNanoseconds, $0.busyNanoseconds, "not available", $0.iteration) }, anchor: "stall-wait-\(position)"),
                    stallCount: loop.stalls, extra: kernelSection(loop.kernel)))
            }
        }
        if !s.timers.isEmpty { sections.append(timerSection(s)) }
        return sections
    }

    private static func timerSection(_ s: TraceSummary) -> Node {
        var children: [Node] = [.element("h2", text: "Timers (worst p99 lateness first)")]
        var table: [Node] = [row(["timer", "firings", "missed", "tolerance", "lateness p50", "p99", "max", "drift", "late firings: what held the loop"], header: true)]
        for timer in s.timers {
            let causes = SummaryReport.sortedCauses(timer.lateFiringCauses).prefix(3).map { "\($0.1)× \($0.0)" }.joined(separator: "; ")
            table.append(row([timer.label + (timer.affectedByLoss ? " (!)" : ""), "\(timer.firings)", "\(timer.missed)", SummaryReport.toleranceText(timer),
                              formatNanoseconds(timer.lateness.p50), formatNanoseconds(timer.lateness.p99), formatNanoseconds(timer.lateness.max),
                              formatNanoseconds(timer.driftNanosecondsPerSecond) + "/s", causes.isEmpty ? "—" : causes]))
        }
        children.append(.element("table", [:], table))
        if let timeline = s.timeline {
            for timer in s.timers.prefix(timerCharts) {
                guard let line = timeline.timers.first(where: { $0.timerID == timer.timerID }) else { continue }
                children.append(.element("figure", [:], [
                    .element("figcaption", text: "\(timer.label): lateness over time (each point the most late firing of its \(formatNanoseconds(timeline.bucketNanoseconds)), red when later than its tolerance by over \(formatNanoseconds(s.lateThresholdNanoseconds)); the line down to the least late; × a missed grid slot; the band is the tolerance)"),
                    Chart.responsive { width in
                        Chart.timerLateness(line, bucketSeconds: Double(timeline.bucketNanoseconds) / 1e9, buckets: timeline.buckets,
                                            lateThreshold: s.lateThresholdNanoseconds, losses: lossSpans(s), width: width)
                    },
                ]))
            }
            if s.timers.count > timerCharts {
                children.append(.element("p", ["class": "note"], text: "\(s.timers.count - timerCharts) more timers are in the table only."))
            }
        }
        return .element("section", ["class": "timers", "id": "timers"], children)
    }

    // ===== the page =====

    private static func page(title: String, body: [Node]) -> String {
        var out = "<!doctype html>\n"
        Node.element("html", ["lang": "en"], [
            .element("head", [:], [
                .element("meta", ["charset": "utf-8"]),
                .element("meta", ["name": "viewport", "content": "width=device-width, initial-scale=1"]),
                .element("meta", ["name": "color-scheme", "content": "light dark"]),
                .element("title", text: title),
                .element("style", [:], [.constant(stylesheet)]),
            ]),
            .element("body", [:], [.element("main", [:], body), .element("footer", [:], [.text(
                "Made by rlctl report. Self-contained: this file loads nothing from any address. Hover a mark for its value; a stall's ▼ links to its row. "
                + "For the timeline of every callout: rlctl export TRACE --format chrome -o trace.json, then open it at https://ui.perfetto.dev (\"Open trace file\"; read in the browser, not uploaded).")])]),
        ]).render(into: &out)
        return out + "\n"
    }

    static let stylesheet: StaticString = """
    :root{--fg:#1b1e23;--bg:#fff;--muted:#5f6b7a;--grid:#e3e6ea;--accent:#2563eb;--accent2:#d97706;--bad:#c81e1e;--good:#15803d;--loss:rgba(217,119,6,.16);--band:rgba(21,128,61,.12);--card:#f6f7f9}
    @media (prefers-color-scheme:dark){:root{--fg:#e5e7eb;--bg:#121417;--muted:#9aa4b2;--grid:#2a2f36;--accent:#60a5fa;--accent2:#fbbf24;--bad:#f87171;--good:#4ade80;--loss:rgba(251,191,36,.16);--band:rgba(74,222,128,.12);--card:#1a1d22}}
    body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
    main,footer{max-width:1000px;margin:0 auto;padding:16px 20px}
    footer{color:var(--muted);font-size:12px;border-top:1px solid var(--grid)}
    h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--grid);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
    .about,.note,.na{color:var(--muted);margin:4px 0}.problem,.fail{color:var(--bad)}.pass{color:var(--good)}
    .verdict{font-weight:600;font-size:16px}
    ul.problems{color:var(--bad);margin:6px 0;padding-left:20px}
    .figures{display:flex;flex-wrap:wrap;gap:10px;margin:8px 0}.figure{background:var(--card);border-radius:6px;padding:6px 12px;min-width:90px}
    .figure .value{display:block;font-size:18px;font-weight:600}.figure .name{color:var(--muted);font-size:12px}
    table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{text-align:left;padding:3px 10px 3px 0;border-bottom:1px solid var(--grid);vertical-align:top}
    tr.fail td{color:var(--bad)}tr.pass td{color:var(--fg)}tr:target td{background:var(--loss)}
    .distributions{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(440px,100%),1fr));gap:6px 18px}
    .timeseries .narrow{display:none}
    @media (max-width:640px){table{display:block;overflow-x:auto}.timeseries .wide{display:none}.timeseries .narrow{display:block}}
    figure{margin:8px 0}figcaption{font-size:13px;color:var(--muted)}
    svg.chart{width:100%;height:auto;display:block}
    svg .axis{fill:var(--muted);font-size:10px}svg .axistitle{fill:var(--muted);font-size:10px;font-style:italic}svg .marklabel{fill:var(--accent2);font-size:10px}
    svg .axisline{stroke:var(--muted);stroke-width:1}svg .grid{stroke:var(--grid);stroke-width:1}
    svg .series{fill:none;stroke:var(--accent);stroke-width:1.6}
    svg .hover{fill:transparent}svg .hover:hover{fill:var(--grid);opacity:.5}
    svg .bar{fill:var(--accent);opacity:.75}svg .bar:hover{opacity:1}svg .bar.base{fill:var(--muted);opacity:.45}svg .bar.current{fill:none;stroke:var(--accent);stroke-width:1.5;opacity:1}
    svg .mark{stroke:var(--accent2);stroke-width:1;stroke-dasharray:3 2}
    svg .loss{fill:var(--loss)}svg .tolerance{fill:var(--band)}
    svg .stall{fill:var(--bad)}svg .missed{stroke:var(--bad);stroke-width:1.5}
    svg .range{stroke:var(--muted);stroke-width:1}svg .point{fill:var(--accent)}svg .point.late{fill:var(--bad)}
    svg .dot.base{fill:var(--muted)}svg .dot.current{fill:var(--accent)}svg .median{stroke-width:2}svg .median.base{stroke:var(--muted)}svg .median.current{stroke:var(--accent)}
    svg .part.p0,.legend.p0{fill:var(--good);color:var(--good)}svg .part.p1,.legend.p1{fill:var(--bad);color:var(--bad)}
    svg .part.p2,.legend.p2{fill:var(--accent2);color:var(--accent2)}svg .part.p3,.legend.p3{fill:var(--muted);color:var(--muted)}
    svg .part.p4,.legend.p4{fill:#7c3aed;color:#7c3aed}svg .part.p5,.legend.p5{fill:#db2777;color:#db2777}svg .part.p6,.legend.p6{fill:#0891b2;color:#0891b2}
    svg .part.p7,.legend.p7{fill:var(--accent);color:var(--accent)}svg .part.p8,.legend.p8{fill:#b91c1c;color:#b91c1c}
    svg .part.p9,.legend.p9{fill:#a16207;color:#a16207}svg .part.p10,.legend.p10{fill:#475569;color:#475569}.legend{margin-right:10px}
    svg .interval{stroke:var(--accent);stroke-width:4}svg .interval.fail{stroke:var(--bad)}svg .threshold{stroke:var(--bad);stroke-dasharray:4 3}svg .zero{stroke:var(--muted)}
    @media print{body{font-size:11px}main,footer{max-width:none}section{break-inside:avoid}svg .hover{display:none}}
    """
}
