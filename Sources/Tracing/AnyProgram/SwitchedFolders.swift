import Foundation
import Glibc

/// What processes that switched users left in folders of their own (`.switched-<pid>-XXXXXX`, made by the wait
/// interposer before a setuid, owned by the user the process became), copied into the trace folder as if they had
/// written there.
///
/// A recording that started in the folder and went on after the switch (a program that drops privileges itself)
/// has its start marker in the trace folder: its streams are appended to the ones there, its end marker copied. A
/// recording that started after the switch (nginx's worker, recording from its first wait) gets its own name in
/// the trace folder: the next free `<pid>.N` when an earlier recording of the same pid (before an exec) took
/// `<pid>`. Only regular files with the interposer's names are taken, and copied, never renamed: the folder was
/// the program's user's, who could have swapped a file for a symlink to something only root reads.
enum SwitchedFolders {
    static let prefix = ".switched-"

    static func merge(into folder: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        for name in names.sorted() where name.hasPrefix(prefix) {
            let path = folder + "/" + name
            var status = stat()
            guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { continue }
            mergeOne(path, into: folder)
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    private static func mergeOne(_ switched: String, into folder: String) {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: switched)) ?? []
        var renamed: [String: String] = [:]
        let started = files.compactMap { markerID($0, suffix: ".start") }
            .sorted { AnyProgramRecording.Outcome.generation($0) < AnyProgramRecording.Outcome.generation($1) }
        for marker in started { renamed[marker] = freeID(for: marker, in: folder, taken: Set(renamed.values)) }
        for name in files {
            let (id, rest): (String, String)
            if let streamID = streamID(name) {
                id = streamID
                rest = String(name.dropFirst("stream-".count + streamID.count))
            } else if let suffix = [".start", ".end", ".waited"].first(where: { markerID(name, suffix: $0) != nil }) {
                id = markerID(name, suffix: suffix)!
                rest = suffix
            } else {
                continue
            }
            let target = folder + "/" + (rest.hasPrefix("-") ? "stream-" : ".proc-") + (renamed[id] ?? id) + rest
            // A marker is written once: one already in the trace folder is not the same recording's.
            if rest.hasPrefix("-") || !FileManager.default.fileExists(atPath: target) { copy(switched + "/" + name, to: target) }
        }
    }

    /// Appends `source` to `target` (a stream the trace folder already has: the same recording before the switch),
    /// creating it when missing; nothing unless `source` itself, not what a symlink names, is a regular file.
    private static func copy(_ source: String, to target: String) {
        let fd = open(source, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return }
        let input = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
              FileManager.default.fileExists(atPath: target) || FileManager.default.createFile(atPath: target, contents: nil),
              let output = FileHandle(forWritingAtPath: target) else { return }
        defer { try? output.close() }
        _ = try? output.seekToEnd()
        while let chunk = try? input.read(upToCount: 1 << 20), !chunk.isEmpty {
            guard (try? output.write(contentsOf: chunk)) != nil else { return }
        }
    }

    private static func markerID(_ name: String, suffix: String) -> String? {
        guard name.hasPrefix(".proc-"), name.hasSuffix(suffix) else { return nil }
        let id = String(name.dropFirst(".proc-".count).dropLast(suffix.count))
        return isID(id) ? id : nil
    }

    /// `stream-<id>-<tid>`.
    private static func streamID(_ name: String) -> String? {
        guard name.hasPrefix("stream-"), let dash = name.lastIndex(of: "-"), Int(name[name.index(after: dash)...]) != nil else { return nil }
        let id = String(name[name.index(name.startIndex, offsetBy: "stream-".count)..<dash])
        return isID(id) ? id : nil
    }

    /// `<pid>` or `<pid>.<n>`.
    private static func isID(_ id: String) -> Bool {
        let parts = id.split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count) && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
    }

    private static func freeID(for id: String, in folder: String, taken: Set<String>) -> String {
        let pid = id.split(separator: ".").first.map(String.init) ?? id
        var candidate = id
        var n = 0
        while taken.contains(candidate) || FileManager.default.fileExists(atPath: "\(folder)/.proc-\(candidate).start") {
            n += 1
            candidate = "\(pid).\(n)"
        }
        return candidate
    }
}
