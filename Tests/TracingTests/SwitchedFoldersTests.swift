import Foundation
import Glibc
import Testing
import TestSupport
@testable import Tracing

/// What a process that switched users left in its own folder, brought into the trace folder by rlctl (root): a
/// recording continued after the switch, one begun after it under a pid the folder already has, and what the
/// program's user could have planted there.
@Suite struct SwitchedFoldersTests {
    @Test func recordingsAreJoinedRenamedAndNothingButRegularFilesIsRead() throws {
        let folder = temporaryPath("switched-trace")
        let secret = temporaryPath("root-only.txt")
        defer { try? FileManager.default.removeItem(atPath: folder); try? FileManager.default.removeItem(atPath: secret) }
        let switched = folder + "/.switched-42-abcdef"
        try FileManager.default.createDirectory(atPath: switched, withIntermediateDirectories: true)
        func write(_ path: String, _ text: String) throws { try text.write(toFile: path, atomically: false, encoding: .utf8) }
        try write(secret, "root's secret")
        // Before the switch: recording 42 with its stream.
        try write(folder + "/.proc-42.start", "pid=42\n")
        try write(folder + "/stream-42-42", "packets-before;")
        // After it: 42 went on (its stream continues, its end marker), then exec'd: a new recording that took the
        // name 42 in its own folder; and a symlink where a stream would be.
        try write(switched + "/stream-42-42", "packets-after;")
        try write(switched + "/.proc-42.end", "reason=exec\n")
        try write(switched + "/.proc-42.1.start", "pid=42\nexe=/next\n")
        try write(switched + "/.proc-42.1.end", "reason=exit\n")
        try write(switched + "/stream-42.1-42", "next-image;")
        #expect(symlink(secret, switched + "/stream-42.1-43") == 0)
        try write(switched + "/unrelated", "x")

        SwitchedFolders.merge(into: folder)

        let names = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        #expect(names == [".proc-42.start", ".proc-42.end", "stream-42-42", ".proc-42.1.start", ".proc-42.1.end", "stream-42.1-42"])
        #expect(try String(contentsOfFile: folder + "/stream-42-42", encoding: .utf8) == "packets-before;packets-after;")
        #expect(try String(contentsOfFile: folder + "/.proc-42.1.start", encoding: .utf8).contains("exe=/next"))
        #expect(try String(contentsOfFile: folder + "/stream-42.1-42", encoding: .utf8) == "next-image;")
    }

    /// A recording begun after the switch under a name the trace folder already holds gets the next free one.
    @Test func aStartedRecordingTakesTheNextFreeName() throws {
        let folder = temporaryPath("switched-names")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let switched = folder + "/.switched-7-xyz"
        try FileManager.default.createDirectory(atPath: switched, withIntermediateDirectories: true)
        for name in [".proc-7.start", ".proc-7.end", ".proc-7.1.start", ".proc-7.1.end"] {
            #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data("before\n".utf8)))
        }
        #expect(FileManager.default.createFile(atPath: switched + "/.proc-7.start", contents: Data("after\n".utf8)))
        #expect(FileManager.default.createFile(atPath: switched + "/stream-7-9", contents: Data("s".utf8)))
        SwitchedFolders.merge(into: folder)
        #expect(try String(contentsOfFile: folder + "/.proc-7.2.start", encoding: .utf8) == "after\n")
        #expect(FileManager.default.fileExists(atPath: folder + "/stream-7.2-9"))
        #expect(try String(contentsOfFile: folder + "/.proc-7.start", encoding: .utf8) == "before\n")
    }
}
