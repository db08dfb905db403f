@testable import Analysis
import Foundation
import Testing
import TestSupport

/// The report's charts read at a glance: no label is drawn over the data it labels, nor over another label, and
/// none leaves its chart. Checked on the SVG geometry the code writes (text at 10 px is at most 6 px a character
/// wide in the page's sans-serif font; a box from 8 px above its baseline to 2 px below).
@Suite struct ChartGeometryTests {
    struct Box: CustomStringConvertible {
        var x0, y0, x1, y1: Double
        var what: String
        func overlaps(_ other: Box) -> Bool { x0 < other.x1 && other.x0 < x1 && y0 < other.y1 && other.y0 < y1 }
        var description: String { "\(what) [\(Int(x0))…\(Int(x1)) × \(Int(y0))…\(Int(y1))]" }
    }

    /// The chart's viewBox, its text boxes and its bars.
    static func geometry(_ svg: String) throws -> (width: Double, height: Double, texts: [Box], bars: [Box]) {
        func attribute(_ name: String, in tag: Substring) -> String? {
            guard let range = tag.range(of: " \(name)=\"") else { return nil }
            return String(tag[range.upperBound...].prefix { $0 != "\"" })
        }
        let viewBox = try #require(svg.range(of: "viewBox=\"").map { svg[$0.upperBound...].prefix { $0 != "\"" } })
        let size = viewBox.split(separator: " ").compactMap { Double($0) }
        var texts: [Box] = [], bars: [Box] = []
        for piece in svg.components(separatedBy: "<text").dropFirst() {
            let tag = piece.prefix { $0 != ">" }
            guard attribute("transform", in: tag) == nil else { continue }   // an axis title turned up the left edge
            let content = piece.drop { $0 != ">" }.dropFirst().prefix { $0 != "<" }
            let x = Double(attribute("x", in: tag) ?? "") ?? 0, y = Double(attribute("y", in: tag) ?? "") ?? 0
            let width = Double(content.count) * 6
            let x0: Double = switch attribute("text-anchor", in: tag) {
            case "end": x - width
            case "middle": x - width / 2
            default: x
            }
            texts.append(Box(x0: x0, y0: y - 8, x1: x0 + width, y1: y + 2, what: "text \"\(content)\""))
        }
        for piece in svg.components(separatedBy: "<rect").dropFirst() {
            let tag = piece.prefix { $0 != ">" }
            guard attribute("class", in: tag) == "bar" else { continue }
            let x = Double(attribute("x", in: tag)!)!, y = Double(attribute("y", in: tag)!)!
            let w = Double(attribute("width", in: tag)!)!, h = Double(attribute("height", in: tag)!)!
            bars.append(Box(x0: x, y0: y, x1: x + w, y1: y + h, what: "bar"))
        }
        return (size[2], size[3], texts, bars)
    }

    /// Distributions of every shape (narrow, wide, one value, percentiles crowded at the top): the marks' labels
    /// never cover a bar or each other, and stay inside the chart.
    @Test func histogramLabelsNeverCoverTheBarsEachOtherOrTheEdge() throws {
        var random = SplitMix(seed: 28)
        var shapes: [[UInt64]] = [[5_000], [1, 2, 3], Array(repeating: 40_000, count: 99) + [50_000_000]]
        for _ in 0..<60 {
            let base = UInt64.random(in: 100...10_000_000, using: &random)
            let spread = Double.random(in: 1.01...1_000, using: &random)
            shapes.append((0..<Int.random(in: 1...400, using: &random)).map { _ in
                UInt64(Double(base) * pow(spread, Double.random(in: 0...1, using: &random)))
            })
        }
        for values in shapes {
            let chart = Chart.histogram(WaitLoopSummaryTests.distribution(values), title: "wake-up latency: block enqueue → run")
            let svg = chart.rendered
            let (width, height, texts, bars) = try Self.geometry(svg)
            #expect(texts.count >= 8, "4 marks, 2 counts, an axis title and a tick at least: \(svg)")
            for (index, text) in texts.enumerated() {
                #expect(text.x0 >= 0 && text.x1 <= width && text.y0 >= 0 && text.y1 <= height, "\(text) leaves the \(width)×\(height) chart")
                for bar in bars { #expect(!text.overlaps(bar), "\(text) covers \(bar) (values \(values.prefix(5))…)") }
                for other in texts[(index + 1)...] { #expect(!text.overlaps(other), "\(text) covers \(other)") }
            }
        }
    }

    /// Every chart of a loop says what its axes are, with the unit the ticks are in.
    @Test func everyAxisHasATitle() throws {
        let histogram = Chart.histogram(WaitLoopSummaryTests.distribution([1_000, 20_000, 300_000]), title: "sleep").rendered
        #expect(histogram.contains(">sleep (log scale)</text>") && histogram.contains(">count</text>"), "\(histogram)")
        let utilization = Chart.utilization([0.2, 0.5, nil, 1], bucketSeconds: 0.1, losses: [], stalls: [], title: "u").rendered
        #expect(utilization.contains(">time since the trace&#39;s first event</text>") || utilization.contains(">time since the trace's first event</text>"),
                "\(utilization)")
        #expect(utilization.contains(">busy</text>"))
    }

    /// On a phone the page shows a time series's narrow drawing (CSS picks it under 640 px), whose text keeps its
    /// size there: it is about a phone's width, and its tick labels, fewer, neither touch each other nor leave it,
    /// whatever the trace's length.
    @Test func timeSeriesHaveANarrowDrawingForAPhone() throws {
        for buckets in [1, 7, 40, 100, 333] {
            for bucketSeconds in [0.001, 0.01, 0.1, 1.7] {
                let values: [Double?] = (0..<buckets).map { $0 % 9 == 4 ? nil : Double($0 % 10) / 10 }
                let page = Chart.responsive { width in
                    Chart.utilization(values, bucketSeconds: bucketSeconds, losses: [], stalls: [], title: "u", width: width)
                }.rendered
                #expect(page.contains("class=\"wide\"") && page.contains("class=\"narrow\""))
                let drawings = page.components(separatedBy: "<svg").dropFirst().map { "<svg" + $0 }
                try #require(drawings.count == 2)
                let (wide, narrow) = (try Self.geometry(drawings[0]), try Self.geometry(drawings[1]))
                #expect(wide.width == Chart.width && narrow.width == Chart.narrowWidth)
                for (width, height, texts, _) in [wide, narrow] {
                    for (index, text) in texts.enumerated() {
                        #expect(text.x0 >= 0 && text.x1 <= width && text.y0 >= 0 && text.y1 <= height,
                                "\(text) leaves the \(width)×\(height) chart (\(buckets) × \(bucketSeconds) s)")
                        for other in texts[(index + 1)...] { #expect(!text.overlaps(other), "\(text) covers \(other) (\(buckets) × \(bucketSeconds) s)") }
                    }
                }
            }
        }
    }
}
