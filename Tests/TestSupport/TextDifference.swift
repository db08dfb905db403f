import Testing

/// Checks that `actual` is exactly `expected` (golden CLI text), and when it is not, records one failure that shows
/// the lines that differ, with two lines of context, rather than two long strings to compare by eye.
public func expectSameText(_ actual: String, _ expected: String, _ what: String,
                           sourceLocation: SourceLocation = #_sourceLocation) {
    guard actual != expected else { return }
    Issue.record("\(what) differs from the expected text (- expected, + actual):\n\(lineDifference(expected, actual))",
                 sourceLocation: sourceLocation)
}

/// The lines of `old` and `new` that differ, in diff's notation ("- " removed, "+ " added, "  " context), from the
/// longest common subsequence of their lines. Lines that differ only in invisible characters are shown quoted.
public func lineDifference(_ old: String, _ new: String, context: Int = 2) -> String {
    let a = old.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let b = new.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    // common[i][j]: the length of the longest common subsequence of a[i...] and b[j...].
    var common = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in stride(from: a.count - 1, through: 0, by: -1) {
        for j in stride(from: b.count - 1, through: 0, by: -1) {
            common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : max(common[i + 1][j], common[i][j + 1])
        }
    }
    var lines: [(mark: Character, text: String)] = []
    var i = 0, j = 0
    while i < a.count || j < b.count {
        if i < a.count && j < b.count && a[i] == b[j] {
            lines.append((" ", a[i])); i += 1; j += 1
        } else if i < a.count && (j == b.count || common[i + 1][j] >= common[i][j + 1]) {
            lines.append(("-", a[i])); i += 1
        } else {
            lines.append(("+", b[j])); j += 1
        }
    }
    let changed = lines.indices.filter { lines[$0].mark != " " }
    let shown = Set(changed.flatMap { max(0, $0 - context)...min(lines.count - 1, $0 + context) })
    let removed = Set(lines.filter { $0.mark == "-" }.map(\.text))
    let added = Set(lines.filter { $0.mark == "+" }.map(\.text))
    var text: [String] = []
    for index in lines.indices where shown.contains(index) {
        if index > 0 && !shown.contains(index - 1) { text.append("  …") }
        let line = lines[index]
        // A line whose visible text is on both sides differs in spaces or control characters: quote it.
        let visible = line.text.trimmingTrailingSpaces
        let ambiguous = line.mark != " " && (line.mark == "-" ? added : removed).contains { $0.trimmingTrailingSpaces == visible }
        text.append("\(line.mark) \(ambiguous ? line.text.debugDescription : line.text)")
    }
    return text.joined(separator: "\n")
}

private extension String {
    var trimmingTrailingSpaces: Substring {
        var end = endIndex
        while end > startIndex, let last = self[..<end].last, last.isWhitespace { end = index(before: end) }
        return self[..<end]
    }
}
