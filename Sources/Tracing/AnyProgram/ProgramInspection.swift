import Foundation
import Glibc

/// What `rlctl record --any` can tell about a program before it starts it: whether the wait interposer, an
/// `LD_PRELOAD` library, can reach its wait calls at all. The dynamic loader preloads libraries only into
/// dynamically linked programs of its own architecture, and ignores `LD_PRELOAD` for set-user-ID programs run by
/// another user; a script runs its interpreter, which is what must be checked.
public struct ProgramInspection: Sendable, Equatable {
    /// The file that will run: the program found in PATH, or the interpreter of a script (`#!`), followed
    /// through `/usr/bin/env NAME`.
    public let executable: String
    /// The script the interpreter runs, when the program is one.
    public let script: String?
    /// A Go program (its ELF notes hold Go's build ID): Go's runtime waits with raw system calls, never through libc.
    public var isGo = false

    /// Why the interposer could not reach the program: one line for the user.
    public struct Unreachable: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        /// Why, in a few words, when the kernel can record the program instead (`statically linked`); nil when
        /// nothing can (not a program, a 32-bit one).
        public var kernelCanRecord: String? = nil
    }

    /// Resolves `program` (looked up in `searchPath` when it has no slash) and checks what will run. Throws
    /// ``Unreachable`` with the reason when nothing could be recorded.
    public static func inspect(_ program: String, searchPath: String? = ProcessInfo.processInfo.environment["PATH"]) throws(Unreachable) -> ProgramInspection {
        guard let path = resolve(program, searchPath: searchPath) else {
            throw Unreachable(description: "\(program): no such program (not a file, and not found in PATH)")
        }
        var file = path, script: String?
        // Linux follows up to four nested interpreters; more is not a program that runs.
        for _ in 0..<5 {
            let header = try readHeader(file)
            guard header.starts(with: [0x23, 0x21]) else {   // "#!"
                let isGo = try checkELF(header, path: file, named: script == nil ? program : file)
                return ProgramInspection(executable: file, script: script, isGo: isGo)
            }
            guard let interpreter = interpreter(ofScript: header, searchPath: searchPath) else {
                throw Unreachable(description: "\(file): its #! line names no interpreter that can be found")
            }
            script = script ?? file
            file = interpreter
        }
        throw Unreachable(description: "\(program): too many nested #! interpreters")
    }

    static func resolve(_ program: String, searchPath: String?) -> String? {
        let manager = FileManager.default
        if program.contains("/") { return manager.isExecutableFile(atPath: program) ? program : nil }
        for folder in (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") where !folder.isEmpty {
            let candidate = "\(folder)/\(program)"
            var isDirectory: ObjCBool = false
            if manager.fileExists(atPath: candidate, isDirectory: &isDirectory), !isDirectory.boolValue,
               manager.isExecutableFile(atPath: candidate) {
                return candidate
            }
        }
        return nil
    }

    private static func readHeader(_ path: String) throws(Unreachable) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Unreachable(description: "\(path): cannot be read (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { throw Unreachable(description: "\(path): empty or unreadable, not a program") }
        return Array(bytes[0..<count])
    }

    /// The interpreter a `#!` line runs, with `/usr/bin/env NAME` resolved in PATH as env would.
    private static func interpreter(ofScript header: [UInt8], searchPath: String?) -> String? {
        let line = header.dropFirst(2).prefix { $0 != 0x0A }
        let words = String(decoding: line, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first else { return nil }
        if (first as NSString).lastPathComponent == "env" {
            // env's own options (-S, -i…) come before the program's name.
            guard let name = words.dropFirst().first(where: { !$0.hasPrefix("-") && !$0.contains("=") }) else { return nil }
            return resolve(name, searchPath: searchPath)
        }
        return FileManager.default.isExecutableFile(atPath: first) ? first : nil
    }

    /// Returns whether it is a Go program.
    private static func checkELF(_ header: [UInt8], path: String, named name: String) throws(Unreachable) -> Bool {
        guard header.count >= 64, header[0] == 0x7F, header[1] == 0x45, header[2] == 0x4C, header[3] == 0x46 else {
            throw Unreachable(description: "\(name) is neither an ELF program nor a #! script")
        }
        guard header[4] == 2 else {
            throw Unreachable(description: "\(name) is a 32-bit program: the wait interposer is built for this machine's 64-bit programs only, and the loader would not preload it")
        }
        guard header[5] == 1 else { throw Unreachable(description: "\(name) is a big-endian program, not one for this machine") }
        func u16(_ at: Int) -> Int { Int(header[at]) | Int(header[at + 1]) << 8 }
        func u64(_ at: Int) -> Int { (0..<8).reduce(0) { $0 | Int(header[at + $1]) << (8 * $1) } }
        let machine = u16(18)
        if let host = hostMachine, machine != host {
            throw Unreachable(description: "\(name) is built for another processor (ELF machine \(machine)): the interposer cannot be loaded into it")
        }
        // Program headers: PT_INTERP (3) names the dynamic loader, which is what reads LD_PRELOAD. A static
        // program (static-pie included) has none.
        let offset = u64(32), entrySize = u16(54), count = u16(56)
        var interpreted = false, isGo = false
        if entrySize >= 40 {
            let all = try programHeaders(path, offset: offset, entrySize: entrySize, count: count, header: header)
            for index in 0..<count where index * entrySize + 40 <= all.count {
                let type = u32(all, index * entrySize)
                if type == 3 { interpreted = true }
                // PT_NOTE: Go's build ID note is there (name "Go", type 4), in a static Go program as in a cgo one.
                if type == 4 && !isGo {
                    let at = index * entrySize
                    let noteOffset = (0..<8).reduce(0) { $0 | Int(all[at + 8 + $1]) << (8 * $1) }
                    let noteSize = (0..<8).reduce(0) { $0 | Int(all[at + 32 + $1]) << (8 * $1) }
                    isGo = holdsGoNote(path, offset: noteOffset, size: noteSize)
                }
            }
        }
        guard interpreted else {
            throw Unreachable(description: "\(name) is statically linked: no dynamic loader runs in it, so LD_PRELOAD cannot place the wait interposer there and no wait would be recorded",
                              kernelCanRecord: "statically linked")
        }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_ISUID != 0, status.st_uid != geteuid() {
            throw Unreachable(description: "\(name) is set-user-ID: the dynamic loader ignores LD_PRELOAD for it when another user runs it",
                              kernelCanRecord: "set-user-ID")
        }
        return isGo
    }

    /// Whether the notes at `offset` (a PT_NOTE segment of `size` bytes) hold Go's build ID.
    private static func holdsGoNote(_ path: String, offset: Int, size: Int) -> Bool {
        guard size > 0, size <= 1 << 16, offset >= 0 else { return false }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var notes = [UInt8](repeating: 0, count: size)
        guard notes.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, size, off_t(offset)) }) == size else { return false }
        var at = 0
        while at + 12 <= size {
            let nameSize = u32(notes, at), descriptionSize = u32(notes, at + 4), type = u32(notes, at + 8)
            guard nameSize >= 0, descriptionSize >= 0 else { return false }
            let name = at + 12
            if type == 4, nameSize == 3 || nameSize == 4, name + 3 <= size, notes[name] == 0x47, notes[name + 1] == 0x6F, notes[name + 2] == 0 { return true }
            at = name + (nameSize + 3) / 4 * 4 + (descriptionSize + 3) / 4 * 4
        }
        return false
    }

    private static func u32(_ bytes: [UInt8], _ at: Int) -> Int {
        guard at + 4 <= bytes.count else { return -1 }
        return (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) }
    }

    private static func programHeaders(_ path: String, offset: Int, entrySize: Int, count: Int, header: [UInt8]) throws(Unreachable) -> [UInt8] {
        let size = entrySize * count
        guard size > 0, size <= 1 << 20 else { return [] }
        if offset + size <= header.count { return Array(header[offset..<(offset + size)]) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Unreachable(description: "\(path): cannot be read (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: size)
        let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, off_t(offset)) }
        return got == size ? bytes : []
    }

    /// The ELF machine of this process (e_machine of /proc/self/exe), to compare programs with.
    private static let hostMachine: Int? = {
        let fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 20)
        guard bytes.withUnsafeMutableBytes({ read(fd, $0.baseAddress, 20) }) == 20 else { return nil }
        return Int(bytes[18]) | Int(bytes[19]) << 8
    }()
}
