import Analysis
import Foundation
import Glibc

/// Refuses, before any work is done (a program run, a trace read), a result file that could not be written
/// afterwards: its folder must exist and be writable. Finding out after the work would lose it.
func requireWritableOutputs(_ paths: String?...) throws {
    for case let path? in paths {
        if let failure = whyNotWritable(path) { throw Failure.input(OutputFileError(path: path, errno: failure).description) }
    }
}

/// Why a file cannot be written at `path`, as the errno writing it would fail with (so that it is said in the
/// words a failed write uses); nil when it can be, as far as can be told beforehand.
private func whyNotWritable(_ path: String) -> Int32? {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { return EISDIR }
    return whyNotWritableFolder(AtomicFile.folder(of: path))
}

/// Why nothing can be written in `folder`: it is missing (ENOENT), is no folder (ENOTDIR), or refuses writes
/// (access's errno: EACCES, EROFS); nil when files can be made there.
private func whyNotWritableFolder(_ folder: String) -> Int32? {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else { return ENOENT }
    guard isDirectory.boolValue else { return ENOTDIR }
    return access(folder, W_OK) == 0 ? nil : errno
}

/// Writes a result file atomically (see AtomicFile), or fails with a one-line message that says why.
func write(_ text: String, to path: String) throws {
    do { try AtomicFile.write(text, to: path) } catch let error as OutputFileError { throw Failure.input(error.description) }
}

/// Where `run` and `record` put their summary: on stdout, or with --summary FILE in that file alone, so that
/// the program's own output (record's program writes to the same stdout) never mixes into it.
struct SummaryDestination {
    let path: String?

    func deliver(_ text: String) throws {
        guard let path else { return Interruptions.shared.output { print(text) } }
        try write(text + "\n", to: path)
        note("wrote the summary \(path)")
    }
}

/// Refuses, before the program or the workload starts, a trace folder that could not be written: the folder, or
/// the nearest folder above it that exists (the recorder makes the missing ones), must be a writable folder.
/// Otherwise the program would run, and its trace be lost, for nothing.
func requireWritableTraceFolder(_ path: String?) throws {
    guard let path else { return }
    var candidate = URL(fileURLWithPath: path).standardizedFileURL.path
    while !FileManager.default.fileExists(atPath: candidate) {
        let parent = (candidate as NSString).deletingLastPathComponent
        if parent == candidate || parent.isEmpty { return }
        candidate = parent
    }
    if let failure = whyNotWritableFolder(candidate) {
        throw Failure.input("cannot write the trace in \(path): \(OutputFileError.reason(failure, folder: candidate))")
    }
}
