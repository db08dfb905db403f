import CWaitInterposer
import Foundation

/// Where librlctl-wait-interposer.so is: the library `rlctl record --any` preloads into a program.
///
/// The WaitInterposerBuilder plugin builds it for the CWaitInterposer target, and SwiftPM copies it into that
/// target's resource folder, `<package>_CWaitInterposer.resources`, beside every executable that links the target
/// (rlctl does, through Tracing). An installed rlctl may ship it beside itself instead; `RLCTL_WAIT_INTERPOSER` names
/// another file. The search is CWaitInterposer's (`rl_wait_interposer_path`), shared with its tests.
public enum WaitInterposerLibrary {
    public struct NotFound: Error, CustomStringConvertible {
        public let description: String
    }

    /// The library's absolute path (the dynamic loader resolves a relative LD_PRELOAD entry against the program's
    /// working directory, not rlctl's).
    public static func locate() throws(NotFound) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard rl_wait_interposer_path(&buffer, buffer.count) == 0 else {
            throw NotFound(description: rl_wait_interposer_error().map { String(cString: $0) } ?? "the wait interposer cannot be found")
        }
        let path = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
