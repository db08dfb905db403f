import TraceModel

/// A nanosecond count in the unit that keeps it readable: `850ns`, `12.3us`, `4.56ms`, `1.20s`.
public func formatNanoseconds(_ value: Double) -> String {
    let v = abs(value)
    let sign = value < 0 ? "-" : ""
    if v < 1_000 { return sign + "\(Int(v.rounded()))ns" }
    if v < 1_000_000 { return sign + threeDigits(v / 1e3) + "us" }
    if v < 1_000_000_000 { return sign + threeDigits(v / 1e6) + "ms" }
    return sign + threeDigits(v / 1e9) + "s"
}

public func formatNanoseconds(_ value: UInt64) -> String { formatNanoseconds(Double(value)) }

func threeDigits(_ value: Double) -> String {
    if value >= 100 { return String(Int(value.rounded())) }
    let digits = value >= 10 ? 1 : 2
    let scale = digits == 1 ? 10.0 : 100.0
    let rounded = (value * scale).rounded() / scale
    var text = String(rounded)
    if let dot = text.firstIndex(of: ".") {
        let decimals = text.distance(from: dot, to: text.endIndex) - 1
        if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
    }
    return text
}

/// `0.1234` as `12.3%`.
public func formatPercent(_ ratio: Double) -> String {
    guard ratio.isFinite else { return ratio > 0 ? "+inf%" : "-inf%" }
    return threeDigits(abs(ratio) * 100).withSign(ratio < 0 ? "-" : "") + "%"
}

extension String {
    func withSign(_ sign: String) -> String { sign + self }
    /// Left-aligned in a column of `width` (at least one space after).
    public func padded(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
    /// Right-aligned in a column of `width`.
    public func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}

/// A metric's value written in its unit.
public func formatMetric(_ value: Double, unit: Metric.Unit) -> String {
    switch unit {
    case .duration: return formatNanoseconds(value)
    case .rate: return formatNanoseconds(value) + "/s"
    case .ratio: return threeDigits(value * 100) + "%"
    case .count: return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// A change of a ratio in points with its sign: `0.04` as `+4.00 pts`.
public func formatPoints(_ delta: Double) -> String {
    guard delta.isFinite else { return delta > 0 ? "+inf pts" : "-inf pts" }
    return (delta < 0 ? "-" : "+") + threeDigits(abs(delta) * 100) + " pts"
}

extension String {
    /// This text shown literally in Markdown, wherever it goes (a table cell, a list item, a heading): program
    /// paths, thread names, timer labels and the like come from the trace or the command line, and a `|` would
    /// split a table's row, `<script>` would be HTML, `*` or `_` would start emphasis, a newline would end the row.
    /// An `_` inside a word (`bio_close_file`) starts no emphasis and stays as it is.
    public var markdownEscaped: String {
        let characters = Array(self)
        var out = ""
        for (index, character) in characters.enumerated() {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "_" where index > 0 && index + 1 < characters.count
                && characters[index - 1].isWordCharacter && characters[index + 1].isWordCharacter:
                out.append(character)
            case "\\", "|", "`", "*", "_", "[", "]", "#", "~": out += "\\" + String(character)
            case _ where character.isNewline: out += "<br>"
            default: out.append(character)
            }
        }
        return out
    }
}

private extension Character {
    var isWordCharacter: Bool { isLetter || isNumber }
}
