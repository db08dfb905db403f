/// Trimming without Foundation, for the trace formats' `key = value;` lines (spaces and tabs only).
extension StringProtocol {
    package var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    package var trimmingQuotes: String {
        var text = String(self)
        if text.hasPrefix("\"") { text.removeFirst() }
        if text.hasSuffix("\"") { text.removeLast() }
        return text
    }
}
