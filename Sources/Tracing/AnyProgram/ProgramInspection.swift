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

    /// Why the interposer could not reach the program: one line for the user.
    public struct Unreachable: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
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
                try checkELF(header, path: file, named: script == nil ? program : file)
                return ProgramInspection(executable: file, script: script)
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

    private static func checkELF(_ header: [UInt8], path: String, named name: String) throws(Unreachable) {
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
        var interpreted = false
        if entrySize >= 4 {
            let all = try programHeaders(path, offset: offset, entrySize: entrySize, count: count, header: header)
            for index in 0..<count where u32(all, index * entrySize) == 3 { interpreted = true }
        }
        guard interpreted else {
            throw Unreachable(description: "\(name) is statically linked: no dynamic loader runs in it, so LD_PRELOAD cannot place the wait interposer there and no wait would be recorded")
        }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & S_ISUID != 0, status.st_uid != geteuid() {
            throw Unreachable(description: "\(name) is set-user-ID: the dynamic loader ignores LD_PRELOAD for it when another user runs it")
        }
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
