import Foundation

/// Files of the system's packages: headers, libraries, wherever the distribution put them.
public enum InstalledFiles {
    /// The first of `relatives` found under one of `bases` or its multiarch subfolders (Debian's
    /// `x86_64-linux-gnu`, …), bases in order; nil when none is installed.
    public static func find(_ relatives: [String], under bases: [String]) -> String? {
        for base in bases {
            let multiarch = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).filter { $0.contains("-linux-") }.sorted()
            for folder in [base] + multiarch.map({ base + "/" + $0 }) {
                for relative in relatives where FileManager.default.fileExists(atPath: folder + "/" + relative) {
                    return folder + "/" + relative
                }
            }
        }
        return nil
    }
}
