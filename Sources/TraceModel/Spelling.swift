/// The name a mistyped one was most likely meant to be: for "did you mean …?" in the messages of commands,
/// metrics and options.
public enum Spelling {
    /// The name among `names` closest to `word`: at most two edits away (a swap of neighbours is one edit), or
    /// one that begins with it (two characters at least); nil when none is that close.
    public static func closest(to word: String, among names: [String]) -> String? {
        let typed = word.lowercased()
        let candidates = names.map { (name: $0, distance: distance(typed, $0.lowercased())) }
            .filter { $0.distance <= 2 || (typed.count >= 2 && $0.name.lowercased().hasPrefix(typed)) }
        return candidates.min { ($0.distance, $0.name) < ($1.distance, $1.name) }?.name
    }

    /// Levenshtein distance, with a swap of two neighbours counting as one edit (`rnu` for `run`).
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0 ... a.count { d[i][0] = i }
        for j in 0 ... b.count { d[0][j] = j }
        for i in 1 ... a.count {
            for j in 1 ... b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}
