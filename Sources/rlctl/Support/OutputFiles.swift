import Analysis
import ArgumentParser
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

/// Why nothing can be written in `folder`: it is missing (ENOENT), is no folder (ENOTDIR), or refuses a new
/// file (the errno creating one fails with: EACCES, EROFS, or ENOENT from a virtual file system such as /proc,
/// which root's access() passes); nil when files can be made there.
private func whyNotWritableFolder(_ folder: String) -> Int32? {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else { return ENOENT }
    guard isDirectory.boolValue else { return ENOTDIR }
    guard access(folder, W_OK) == 0 else { return errno }
    // The only sure test is to make a file there, as the result will be made (then removed at once).
    let probe = folder + "/.rlctl-probe-\(getpid())-\(UInt32.random(in: 0 ... .max))"
    let fd = open(probe, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return errno }
    close(fd)
    unlink(probe)
    return nil
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
        guard let path else {
            if !Console.quiet { Interruptions.shared.output { print(text) } }
            return
        }
        try write(text + "\n", to: path)
        wrote("the summary \(path)")
    }
}

/// How much rlctl says besides its results and errors: `--quiet` says nothing but errors (the exit status and the
/// files are the result).
enum Console {
    /// Set once, by the command, before anything is printed or any thread started.
    nonisolated(unsafe) static var quiet = false
}

/// `--quiet`, for the commands that write files or print long summaries.
struct QuietOption: ParsableArguments {
    @Flag(help: "Print nothing but errors and warnings about the data: no summary, no \"wrote\" line.")
    var quiet = false

    /// Makes it rlctl's for the rest of the command.
    func apply() { Console.quiet = quiet }
}

/// Every result file rlctl writes is said in one place and one way, `rlctl: wrote WHAT` on stderr (stdout holds
/// the results themselves), once the file is whole; nothing with --quiet.
func wrote(_ what: String) {
    guard !Console.quiet else { return }
    note("wrote " + what)
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
