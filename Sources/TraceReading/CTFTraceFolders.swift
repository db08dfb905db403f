import TraceModel
import Foundation

/// Finds the CTF traces under a path: LTTng writes a session as `<output>/ust/uid/<uid>/64-bit/` (per-user
/// buffers) or `<output>/ust/pid/<name>-<pid>-<date>/` (per-process buffers), each a folder holding a `metadata`
/// file and one data file per stream (plus an `index/` folder).
enum CTFTraceFolders {
    /// How deep below the given path to look (`snapshot-1-…/ust/uid/0/64-bit` is five levels).
    static let maximumDepth = 8

    /// The absolute paths of the trace folders at or under `path`, sorted; `path` may also be a `metadata` file.
    /// - Throws: ``TraceReadError`` when the path does not exist, is another kind of file, or holds no trace.
    static func find(at path: String) throws(TraceReadError) -> [String] {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard !path.isEmpty, fileManager.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw TraceReadError(path: path, reason: "no such trace (the path does not exist)")
        }
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        if !isDirectory.boolValue {
            if (absolute as NSString).lastPathComponent == "metadata" {
                return [(absolute as NSString).deletingLastPathComponent]
            }
            throw TraceReadError(path: path, reason: "not a CTF trace: a file, not a trace folder (give the folder that holds `metadata`, or a folder above it)")
        }
        guard fileManager.isReadableFile(atPath: absolute) else {
            throw TraceReadError(path: path, reason: "cannot read the folder (permission denied)")
        }
        var found: [String] = []
        search(absolute, depth: 0, into: &found)
        guard !found.isEmpty else {
            throw TraceReadError(path: path, reason: "no CTF trace here: no `metadata` file in this folder or the folders below it")
        }
        return found.sorted()
    }

    private static func search(_ directory: String, depth: Int, into found: inout [String]) {
        let fileManager = FileManager.default
        if isRegularFile(directory + "/metadata") {
            // A kernel view (or the kernel's wait calls) inside an LTTng output folder is part of that folder's
            // trace, read with it.
            if depth == 0 || !TraceParts.isPart(directory) { found.append(directory) }
            return
        }
        guard depth < maximumDepth, let entries = try? fileManager.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries.sorted() where !entry.hasPrefix(".") {
            let child = directory + "/" + entry
            // Real folders only: a symbolic link could make the walk loop.
            guard let attributes = try? fileManager.attributesOfItem(atPath: child),
                  attributes[.type] as? FileAttributeType == .typeDirectory else { continue }
            search(child, depth: depth + 1, into: &found)
        }
    }

    static func isRegularFile(_ path: String) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return false }
        let type = attributes[.type] as? FileAttributeType
        if type == .typeRegular { return true }
        if type == .typeSymbolicLink {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
        return false
    }

    /// The data stream files of a trace folder, as src.ctf.fs sees them: every regular file but `metadata` and
    /// hidden files.
    static func streamFiles(in directory: String) -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.filter { $0 != "metadata" && !$0.hasPrefix(".") && isRegularFile(directory + "/" + $0) }.sorted()
    }

    static func fileSize(_ path: String) -> UInt64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        return (attributes[.size] as? NSNumber)?.uint64Value
    }
}
