import Glibc

/// A result file written beside its target and renamed over it once whole, so that a failed write (a full disk,
/// an error reading the input, a crash) never leaves a partial file where a complete one is expected, nor
/// replaces an older complete one. The temporary file is removed on every failure, and when dropped uncommitted.
/// Buffered (stdio): one syscall per 64 KiB, not per line.
public final class AtomicFile {
    public let path: String
    private let temporaryPath: String
    private var file: UnsafeMutablePointer<FILE>?
    /// The first write error: stdio's error flag does not keep errno, and a full disk must be named as such.
    private var writeErrno: Int32 = 0

    public init(replacing path: String) throws {
        self.path = path
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? path
        var template = Array("\(AtomicFile.folder(of: path))/.\(name).rlctl-XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        guard descriptor >= 0 else { throw OutputFileError(path: path, errno: errno) }
        temporaryPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // mkstemp's 0600 would make a report only its writer can read: the permissions of a file created as usual.
        let mask = umask(0)
        umask(mask)
        fchmod(descriptor, 0o666 & ~mask)
        guard let file = fdopen(descriptor, "w") else {
            let failure = errno
            close(descriptor)
            unlink(temporaryPath)
            throw OutputFileError(path: path, errno: failure)
        }
        setvbuf(file, nil, _IOFBF, 1 << 16)
        self.file = file
    }

    deinit { discard() }

    /// Writes `text`; a failure is reported by ``commit()``.
    public func write(_ text: String) {
        guard let file, writeErrno == 0 else { return }
        var text = text
        text.withUTF8 { buffer in
            if fwrite(buffer.baseAddress, 1, buffer.count, file) < buffer.count { writeErrno = errno }
        }
    }

    /// Puts the whole file in place of the target: flushed, synced to disk, renamed. Throws, leaving neither the
    /// target changed nor the temporary file behind, when any step fails.
    public func commit() throws {
        guard let file else { return }
        var failure = writeErrno
        if failure == 0, fflush(file) != 0 { failure = errno }
        if failure == 0, fsync(fileno(file)) != 0 { failure = errno }
        if fclose(file) != 0, failure == 0 { failure = errno }
        self.file = nil
        if failure == 0, rename(temporaryPath, path) != 0 { failure = errno }
        guard failure != 0 else { return }
        unlink(temporaryPath)
        throw OutputFileError(path: path, errno: failure)
    }

    /// Leaves the target as it was and removes the temporary file.
    public func discard() {
        guard let file else { return }
        fclose(file)
        self.file = nil
        unlink(temporaryPath)
    }

    /// Writes `text` to `path` in one go, atomically.
    public static func write(_ text: String, to path: String) throws {
        let file = try AtomicFile(replacing: path)
        file.write(text)
        try file.commit()
    }

    /// The folder a file at `path` goes in ("." for a bare name).
    public static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Why a result file could not be written, in one line that names the file and, for the usual causes, its folder.
public struct OutputFileError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32

    public init(path: String, errno: Int32) {
        self.path = path
        self.errno = errno
    }

    public var description: String {
        "cannot write \(path): \(Self.reason(errno, folder: AtomicFile.folder(of: path)))"
    }

    /// Why writing in `folder` fails with `errno`, in words (the disk full, no permission, …).
    public static func reason(_ errno: Int32, folder: String) -> String {
        switch errno {
        case ENOSPC, EDQUOT: return "the disk holding \(folder) is full"
        case EACCES, EPERM: return "no permission to write in \(folder)"
        case EROFS: return "\(folder) is on a read-only file system"
        case ENOENT:
            // A folder that exists and still says ENOENT takes no new files: a virtual file system (/proc, /sys).
            return access(folder, F_OK) == 0 ? "\(folder) takes no new files (a virtual file system?)" : "no folder \(folder)"
        case ENOTDIR: return "\(folder) is not a folder"
        case EISDIR: return "it is a folder"
        default: return String(cString: strerror(errno))
        }
    }
}
