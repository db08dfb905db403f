import Glibc

/// The report's charts, drawn as inline SVG (no plotting library for Swift on Linux, and a page must need nothing
/// from the network). Colours come from the page's stylesheet classes, so light and dark schemes and print all
/// apply; every mark has a `<title>`, the hover value a browser shows without any script.
enum Chart {
    static let width = 760.0
    static let height = 170.0
    static let left = 56.0, right = 14.0, top = 12.0, bottom = 30.0
    static var plotWidth: Double { width - left - right }
    /// The width of a time-series chart's narrow drawing, shown instead of the wide one on a phone's screen
    /// (``responsive(_:)``): about the screen's own width in CSS pixels, so its text stays at its size there.
    static let narrowWidth = 360.0
    static var plotHeight: Double { height - top - bottom }

    /// A span of the trace's time, in seconds from its first event.
    struct Span {
        var from: Double
        var to: Double
    }

    /// A stall drawn on a time axis: a mark that links to its row in the stall table.
    struct StallMark {
        var at: Double
        var busyNanoseconds: UInt64
        /// Its row in the stall table, when the table lists it.
        var anchor: String?
        var label: String
    }

    static func number(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    private static func svg(width: Double = width, _ label: String, height: Double = height, _ children: [Node]) -> Node {
        .element("svg", attributes: [("viewBox", "0 0 \(number(width)) \(number(height))"), ("role", "img"), ("aria-label", label),
                                      ("class", "chart"), ("xmlns", "http://www.w3.org/2000/svg")],
                 [.element("title", text: label)] + children)
    }

    private static func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, _ cls: String) -> Node {
        .element("line", attributes: [("x1", number(x1)), ("y1", number(y1)), ("x2", number(x2)), ("y2", number(y2)), ("class", cls)])
    }

    private static func label(_ x: Double, _ y: Double, _ text: String, anchor: String = "middle", cls: String = "axis") -> Node {
        .element("text", attributes: [("x", number(x)), ("y", number(y)), ("text-anchor", anchor), ("class", cls)], [.text(text)])
    }

    private static func rect(_ x: Double, _ y: Double, _ w: Double, _ h: Double, _ cls: String, title: String? = nil) -> Node {
        .element("rect", attributes: [("x", number(x)), ("y", number(y)), ("width", number(max(w, 0.5))), ("height", number(max(h, 0))), ("class", cls)],
                 title.map { [.element("title", text: $0)] } ?? [])
    }

    /// A time-series chart drawn twice, wide and narrow: the page shows the narrow one on a phone's screen (CSS,
    /// `.narrow`), where the wide one scaled down would shrink its text to half its size. The narrow drawing has
    /// fewer ticks, the same data.
    static func responsive(_ draw: (_ width: Double) -> Node) -> Node {
        .element("div", ["class": "timeseries"], [
            .element("div", ["class": "wide"], [draw(width)]),
            .element("div", ["class": "narrow"], [draw(narrowWidth)]),
        ])
    }

    /// Time-axis ticks: round values between 0 and `seconds`, one per 120 units of the plot's width at most
    /// (six across the wide chart, two or three across the narrow one), so their labels never touch.
    private static func timeAxis(seconds: Double, plotWidth: Double, x: (Double) -> Double) -> [Node] {
        guard seconds > 0 else { return [] }
        let raw = seconds / max(floor(plotWidth / 115), 2)
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? raw
        var nodes: [Node] = [line(left, top + plotHeight, left + plotWidth, top + plotHeight, "axisline")]
        var t = 0.0
        while t <= seconds + step / 1000 {
            nodes.append(line(x(t), top + plotHeight, x(t), top + plotHeight + 4, "axisline"))
            // A label that would cross the chart's right edge ends at its tick instead (10 px text: at most 6 a character).
            let text = formatNanoseconds(t * 1e9)
            let crossesEdge = x(t) + Double(text.count) * 3 > left + plotWidth + right
            nodes.append(label(x(t), top + plotHeight + 16, text, anchor: crossesEdge ? "end" : "middle"))
            t += step
        }
        return nodes
    }

    /// Shaded windows of lost events on a time axis.
    private static func losses(_ spans: [Span], x: (Double) -> Double) -> [Node] {
        spans.map { span in
            rect(x(span.from), top, x(span.to) - x(span.from), plotHeight, "loss",
                 title: "events lost between +\(formatNanoseconds(span.from * 1e9)) and +\(formatNanoseconds(span.to * 1e9))")
        }
    }

    /// A loop's busy share over time (0–100 %), with the loss windows shaded and each stall marked at the top.
    static func utilization(_ values: [Double?], bucketSeconds: Double, losses lossSpans: [Span], stalls: [StallMark], title: String,
                            width: Double = width) -> Node {
        let plotWidth = width - left - right
        let seconds = Double(values.count) * bucketSeconds
        let x = { (t: Double) in left + (seconds > 0 ? t / seconds : 0) * plotWidth }
        let y = { (u: Double) in top + (1 - min(max(u, 0), 1)) * plotHeight }
        var nodes = losses(lossSpans, x: x)
        for share in [0.0, 0.5, 1.0] {
            nodes.append(line(left, y(share), left + plotWidth, y(share), "grid"))
            nodes.append(label(left - 6, y(share) + 4, "\(Int(share * 100))%", anchor: "end"))
        }
        // One path, broken where the loop had no events (nil buckets).
        var path = ""
        var penDown = false
        for (index, value) in values.enumerated() {
            guard let value else {
                penDown = false
                continue
            }
            let mid = (Double(index) + 0.5) * bucketSeconds
            path += (penDown ? "L" : "M") + number(x(mid)) + " " + number(y(value))
            penDown = true
        }
        nodes.append(.element("path", attributes: [("d", path), ("class", "series")]))
        // Hover values: one invisible column per bucket.
        let columnWidth = plotWidth / Double(max(values.count, 1))
        for (index, value) in values.enumerated() {
            guard let value else { continue }
            let at = Double(index) * bucketSeconds
            nodes.append(rect(x(at), top, columnWidth, plotHeight, "hover",
                              title: "+\(formatNanoseconds(at * 1e9))–\(formatNanoseconds((at + bucketSeconds) * 1e9)): \(formatPercent(value)) busy"))
        }
        for stall in stalls {
            let mark = Node.element("path", attributes: [("d", "M\(number(x(stall.at))) \(number(top))l-4 -8h8z"), ("class", "stall")],
                                    [.element("title", text: stall.label)])
            nodes.append(stall.anchor.map { .element("a", attributes: [("href", "#" + $0)], [mark]) } ?? mark)
        }
        nodes += timeAxis(seconds: seconds, plotWidth: plotWidth, x: x)
        nodes.append(axisTitle(x: left + plotWidth / 2, y: top + plotHeight + 30,
                               width < Self.width ? "time since the first event" : "time since the trace's first event"))
        nodes.append(axisTitle(x: 14, y: top + plotHeight / 2, "busy", vertical: true))
        return svg(width: width, title, height: height + axisTitleHeight, nodes)
    }

    /// A log axis from `low` to `high` over `plotWidth`: the position of a value, and the decade ticks.
    /// `baseline` is the plot's bottom edge, where the axis runs.
    private static func logAxis(low: Double, high: Double, plotWidth: Double, baseline: Double = top + plotHeight,
                                unit: (Double) -> String) -> (x: (Double) -> Double, ticks: [Node]) {
        let logLow = log10(low), logHigh = log10(high)
        let x = { (v: Double) in left + (log10(max(v, low)) - logLow) / (logHigh - logLow) * plotWidth }
        var ticks: [Node] = [line(left, baseline, left + plotWidth, baseline, "axisline")]
        var decade = pow(10, floor(logLow))
        while decade <= high * 1.0001 {
            if decade >= low * 0.999 {
                ticks.append(line(x(decade), baseline, x(decade), baseline + 4, "axisline"))
                ticks.append(label(x(decade), baseline + 16, unit(decade)))
            }
            decade *= 10
        }
        return (x, ticks)
    }

    /// An axis's title: under the tick labels (x), or turned up along the left edge (y).
    private static func axisTitle(x: Double, y: Double, _ text: String, vertical: Bool = false) -> Node {
        var attributes = [("x", number(x)), ("y", number(y)), ("text-anchor", "middle"), ("class", "axistitle")]
        if vertical { attributes.append(("transform", "rotate(-90 \(number(x)) \(number(y)))")) }
        return .element("text", attributes: attributes, [.text(text)])
    }

    /// Rows above a histogram's plot for the marks' labels (p50, p99, p99.9, max), one row each, so that no label
    /// is ever drawn over a bar, nor over another label.
    static let markRows = 4
    static let markRowHeight = 11.0
    /// Below the tick labels: the x axis's title.
    static let axisTitleHeight = 14.0

    /// The values a histogram bucket holds, as its bar's tooltip says them.
    private static func range(_ bucket: DistributionSummary.Bucket, unit: (Double) -> String) -> String {
        bucket.lowest == bucket.highest ? unit(Double(bucket.lowest)) : "\(unit(Double(bucket.lowest)))–\(unit(Double(bucket.highest)))"
    }

    /// A distribution on a log axis from its histogram buckets, with p50, p99, p99.9 and max marked: each mark a
    /// line through the plot and its label in a row of its own above it. `axis` names the values (with their
    /// unit: the axis is in the unit's own steps), `counting` what a bar counts.
    static func histogram(_ d: DistributionSummary, title: String, axis: String? = nil, counting: String = "count",
                          unit: (Double) -> String = { formatNanoseconds($0) }) -> Node {
        let buckets = d.buckets.filter { $0.count > 0 }
        guard d.count > 0, let highest = buckets.last?.upTo else {
            return .element("p", ["class": "na"], text: "\(title): no values")
        }
        let low = max(1.0, Double(buckets[0].lowest))
        let high = max(Double(highest), low * 10)
        // Half the page's width: distributions sit two to a row, and their labels must stay readable there.
        let chartWidth = 460.0, plotWidth = chartWidth - left - right
        let plotTop = top + Double(markRows) * markRowHeight, plotBottom = plotTop + plotHeight
        let (x, ticks) = logAxis(low: low, high: high, plotWidth: plotWidth, baseline: plotBottom, unit: unit)
        let tallest = Double(buckets.map(\.count).max() ?? 1)
        let y = { (c: Double) in plotBottom - c / tallest * plotHeight }
        var nodes: [Node] = []
        for bucket in buckets {
            let from = max(Double(bucket.lowest), low), to = max(Double(bucket.upTo), from)
            nodes.append(rect(x(from), y(Double(bucket.count)), x(to) - x(from), plotBottom - y(Double(bucket.count)), "bar",
                              title: "\(range(bucket, unit: unit)): \(bucket.count) (\(formatPercent(Double(bucket.count) / Double(d.count))))"))
        }
        for (row, (name, value)) in [("p50", d.p50), ("p99", d.p99), ("p99.9", d.p999), ("max", d.max)].enumerated() {
            let at = x(Double(value))
            nodes.append(line(at, plotTop, at, plotBottom, "mark"))
            // Its label in its own row above the plot, turned to the left of its line in the right half, so none
            // leaves the chart.
            let leftward = at > left + plotWidth * 0.5
            nodes.append(label(leftward ? at + 2 : at - 2, top + markRowHeight * Double(row) + 8,
                               "\(name) \(unit(Double(value)))", anchor: leftward ? "end" : "start", cls: "marklabel"))
        }
        nodes += ticks
        nodes.append(label(left - 6, plotTop + 8, "\(Int(tallest))", anchor: "end"))
        nodes.append(label(left - 6, plotBottom, "0", anchor: "end"))
        nodes.append(axisTitle(x: left + plotWidth / 2, y: plotBottom + 30, (axis ?? title) + " (log scale)"))
        nodes.append(axisTitle(x: 14, y: (plotTop + plotBottom) / 2, counting, vertical: true))
        return svg(width: chartWidth, "\(title): \(d.count) values, p50 \(unit(Double(d.p50))), p99 \(unit(Double(d.p99))), max \(unit(Double(d.max)))",
                   height: plotBottom + 30 + axisTitleHeight / 2, nodes)
    }

    /// A timer's lateness over time: each bucket's least and most late firing, the tolerance band, missed slots.
    /// A firing later than its tolerance by more than `lateThreshold` is drawn as late (the summary's late firing).
    static func timerLateness(_ timer: TraceSummary.Timeline.TimerLine, bucketSeconds: Double, buckets: Int, lateThreshold: UInt64,
                              losses lossSpans: [Span], width: Double = width) -> Node {
        let plotWidth = width - left - right
        let seconds = Double(buckets) * bucketSeconds
        let highest = Double(max(timer.buckets.map(\.highest).max() ?? 0, timer.toleranceNanoseconds, 1))
        let x = { (t: Double) in left + (seconds > 0 ? t / seconds : 0) * plotWidth }
        let y = { (ns: Double) in top + plotHeight - min(ns / highest, 1) * plotHeight }
        var nodes = losses(lossSpans, x: x)
        if timer.toleranceNanoseconds > 0 {
            let band = y(Double(timer.toleranceNanoseconds))
            nodes.append(rect(left, band, plotWidth, top + plotHeight - band, "tolerance",
                              title: "tolerance \(formatNanoseconds(timer.toleranceNanoseconds)): firings in this band are on time"))
        }
        for share in [0.0, 0.5, 1.0] {
            nodes.append(line(left, y(highest * share), left + plotWidth, y(highest * share), "grid"))
            nodes.append(label(left - 6, y(highest * share) + 4, formatNanoseconds(highest * share), anchor: "end"))
        }
        for bucket in timer.buckets {
            let at = x((Double(bucket.index) + 0.5) * bucketSeconds)
            let from = Double(bucket.index) * bucketSeconds
            let tip = "+\(formatNanoseconds(from * 1e9)): \(bucket.firings) firing(s), lateness \(formatNanoseconds(bucket.lowest))–\(formatNanoseconds(bucket.highest))"
                + (bucket.missed > 0 ? ", \(bucket.missed) missed slot(s)" : "")
            if bucket.highest > bucket.lowest {
                nodes.append(line(at, y(Double(bucket.lowest)), at, y(Double(bucket.highest)), "range"))
            }
            nodes.append(.element("circle", attributes: [("cx", number(at)), ("cy", number(y(Double(bucket.highest)))), ("r", "2.2"),
                                                          ("class", TimerFiring(scheduled: 0, tolerance: timer.toleranceNanoseconds, firedAt: bucket.highest)
                                                              .isLate(threshold: lateThreshold) ? "point late" : "point")],
                                  [.element("title", text: tip)]))
            if bucket.missed > 0 {
                nodes.append(.element("path", attributes: [("d", "M\(number(at - 3)) \(number(top - 8))l6 6m0 -6l-6 6"), ("class", "missed")],
                                      [.element("title", text: tip)]))
            }
        }
        nodes += timeAxis(seconds: seconds, plotWidth: plotWidth, x: x)
        nodes.append(axisTitle(x: left + plotWidth / 2, y: top + plotHeight + 30,
                               width < Self.width ? "time (× above: missed slots)" : "time since the trace's first event (× above: missed slots)"))
        nodes.append(axisTitle(x: 14, y: top + plotHeight / 2, "lateness", vertical: true))
        return svg(width: width, "timer \(timer.label): lateness over time", height: height + axisTitleHeight, nodes)
    }

    /// A comparison of one metric: each repetition's value of both sides as dots on one axis, the medians as bars.
    static func comparison(metric: String, baseline: [Double], current: [Double], unit: (Double) -> String) -> Node {
        let all = baseline + current
        guard let lowest = all.min(), let highest = all.max() else {
            return .element("p", ["class": "na"], text: "\(metric): no values")
        }
        let pad = highest > lowest ? (highest - lowest) * 0.08 : max(abs(highest) * 0.1, 1)
        let low = lowest - pad, high = highest + pad
        let rows: [(String, [Double], String)] = [("baseline", baseline, "base"), ("current", current, "current")]
        let rowHeight = 26.0
        let chartHeight = top + rowHeight * 2 + bottom
        let x = { (v: Double) in left + 40 + (v - low) / (high - low) * (plotWidth - 40) }
        var nodes: [Node] = []
        for (row, (name, values, cls)) in rows.enumerated() {
            let mid = top + rowHeight * (Double(row) + 0.5)
            nodes.append(label(left + 34, mid + 4, name, anchor: "end"))
            for value in values {
                nodes.append(.element("circle", attributes: [("cx", number(x(value))), ("cy", number(mid)), ("r", "3.5"), ("class", "dot " + cls)],
                                      [.element("title", text: "\(name): \(unit(value))")]))
            }
            if !values.isEmpty {
                let median = Comparison.median(values)
                nodes.append(line(x(median), mid - 9, x(median), mid + 9, "median " + cls))
            }
        }
        let axisY = top + rowHeight * 2
        nodes.append(line(left + 40, axisY, left + plotWidth, axisY, "axisline"))
        for share in [0.0, 0.5, 1.0] {
            let value = low + (high - low) * share
            nodes.append(label(x(value), axisY + 16, unit(value), anchor: share == 0 ? "start" : share == 1 ? "end" : "middle"))
        }
        return svg("\(metric): baseline and current repetitions", height: chartHeight, nodes)
    }

    /// The change's 95% bootstrap interval against the threshold (both directions: worse and better), on an axis of
    /// relative change or of points.
    static func changeInterval(_ result: Comparison.Result, threshold: Double) -> Node {
        let finite = [result.low, result.high, result.change].filter(\.isFinite)
        let reach = max((finite.map(abs).max() ?? 0), threshold) * 1.25
        let chartHeight = top + 30 + bottom
        let x = { (v: Double) in left + 40 + (min(max(v, -reach), reach) + reach) / (2 * reach) * (plotWidth - 40) }
        let text = { (v: Double) in result.inPoints ? formatPoints(v) : (v >= 0 ? "+" : "") + formatPercent(v) }
        let mid = top + 15
        // The worse direction is up for most metrics and down for the rest (a throughput): the threshold lines sit
        // on both sides, the verdict names the side.
        var nodes: [Node] = [
            label(left + 34, mid + 4, "change", anchor: "end"),
            line(x(0), top, x(0), top + 30, "zero"),
            line(x(threshold), top, x(threshold), top + 30, "threshold"),
            line(x(-threshold), top, x(-threshold), top + 30, "threshold"),
            .element("line", attributes: [("x1", number(x(result.low))), ("y1", number(mid)), ("x2", number(x(result.high))), ("y2", number(mid)),
                                          ("class", result.regressed ? "interval fail" : "interval")],
                     [.element("title", text: "95% interval \(text(result.low)) … \(text(result.high))")]),
            .element("circle", attributes: [("cx", number(x(result.change))), ("cy", number(mid)), ("r", "4"), ("class", "dot current")],
                     [.element("title", text: "change of the medians \(text(result.change))")]),
        ]
        for value in [-threshold, 0, threshold] {
            nodes.append(label(x(value), top + 30 + 16, value == 0 ? "0" : text(value)))
        }
        let worse = result.higherIsWorse ? "higher is worse" : "lower is worse"
        return svg("\(result.metric): change \(text(result.change)), interval \(text(result.low)) … \(text(result.high)), threshold ±\(text(threshold)) (\(worse))",
                   height: chartHeight, nodes)
    }

    /// Two distributions overlaid on one log axis, each as its share of its own count (the sides may have run
    /// different numbers of repetitions): the baseline filled, the current outlined.
    static func overlaid(baseline: [DistributionSummary.Bucket], current: [DistributionSummary.Bucket], title: String,
                         unit: (Double) -> String) -> Node {
        let all = (baseline + current).filter { $0.count > 0 }
        guard let smallest = all.map(\.lowest).min(), let largest = all.map(\.upTo).max() else {
            return .element("p", ["class": "na"], text: "\(title): no values on either side")
        }
        let low = max(1, Double(smallest)), high = max(Double(largest), low * 10)
        let (x, ticks) = logAxis(low: low, high: high, plotWidth: plotWidth, unit: unit)
        func shares(_ buckets: [DistributionSummary.Bucket]) -> [(bucket: DistributionSummary.Bucket, share: Double)] {
            let total = Double(buckets.reduce(0) { $0 + $1.count })
            return total == 0 ? [] : buckets.filter { $0.count > 0 }.map { ($0, Double($0.count) / total) }
        }
        let sides = [("baseline", "bar base", shares(baseline)), ("current", "bar current", shares(current))]
        let tallest = max(sides.flatMap { $0.2.map(\.share) }.max() ?? 1, 0.0001)
        let y = { (share: Double) in top + plotHeight - share / tallest * plotHeight }
        var nodes: [Node] = []
        for (side, cls, bars) in sides {
            for bar in bars {
                let from = max(Double(bar.bucket.lowest), low), to = max(Double(bar.bucket.upTo), from)
                nodes.append(rect(x(from), y(bar.share), x(to) - x(from), top + plotHeight - y(bar.share), cls,
                                  title: "\(side) \(range(bar.bucket, unit: unit)): \(formatPercent(bar.share))"))
            }
        }
        nodes += ticks
        nodes.append(label(left - 6, top + 10, formatPercent(tallest), anchor: "end"))
        nodes.append(label(left + plotWidth, top + 10, "■ baseline  □ current", anchor: "end"))
        return svg(title, nodes)
    }
}

extension Chart {
    /// One bar split into `parts` in proportion, each part a rectangle with its value on hover, and a legend line
    /// under it: where a loop's busy time or its late wake-ups' time went.
    static func stackedBar(_ label: String, parts: [(name: String, nanoseconds: UInt64)]) -> Node {
        let total = parts.reduce(0) { $0 + $1.nanoseconds }
        let barWidth = width - left - right, barHeight = 22.0
        var x = left
        var rects: [Node] = []
        for (index, part) in parts.enumerated() where part.nanoseconds > 0 {
            let w = total > 0 ? barWidth * Double(part.nanoseconds) / Double(total) : 0
            let share = total > 0 ? formatPercent(Double(part.nanoseconds) / Double(total)) : "0%"
            rects.append(.element("rect", attributes: [("x", number(x)), ("y", "4"), ("width", number(w)), ("height", number(barHeight)),
                                                       ("class", "part p\(index % 11)")],
                                  [.element("title", text: "\(part.name): \(formatNanoseconds(part.nanoseconds)) (\(share))")]))
            x += w
        }
        let legend = parts.enumerated().filter { $0.element.nanoseconds > 0 }.map { index, part in
            Node.element("span", ["class": "legend p\(index % 11)"], text: "\(part.name) \(formatNanoseconds(part.nanoseconds))")
        }
        return .element("figure", [:], [svg(label, height: barHeight + 8, rects),
                                         .element("figcaption", [:], [.text(label + ": ")] + legend)])
    }
}
