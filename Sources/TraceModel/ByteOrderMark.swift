extension String {
    /// Without the byte-order mark some editors put first: a file's first line must mean the same with or without
    /// one (the budget parser took it for part of a metric name, libyaml for part of the first key).
    package var droppingByteOrderMark: String {
        unicodeScalars.first == "\u{FEFF}" ? String(unicodeScalars.dropFirst()) : self
    }
}
