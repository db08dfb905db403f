import CWaitInterposer
import Foundation
import Glibc
import Testing

/// How rlctl finds the interposer: SwiftPM's resource folder beside the executable, or RLCTL_WAIT_INTERPOSER.
@Suite(.serialized) struct WaitInterposerPathTests {
    @Test func theBuiltLibraryIsFoundInTheResourceFolder() throws {
        let path = try interposerPath()
        #expect(path.hasSuffix("_CWaitInterposer.resources/librlctl-wait-interposer.so"))
        #expect(rl_wait_interposer_error() == nil)
    }

    @Test func theOverrideWinsAndAMissingOneSaysSo() throws {
        let built = try interposerPath()
        setenv("RLCTL_WAIT_INTERPOSER", built, 1)
        defer { unsetenv("RLCTL_WAIT_INTERPOSER") }
        #expect(try interposerPath() == built)
        setenv("RLCTL_WAIT_INTERPOSER", "/nonexistent/librlctl-wait-interposer.so", 1)
        var buffer = [CChar](repeating: 0, count: 4096)
        #expect(rl_wait_interposer_path(&buffer, buffer.count) == -1)
        #expect(String(cString: rl_wait_interposer_error())
                == "RLCTL_WAIT_INTERPOSER=/nonexistent/librlctl-wait-interposer.so: no such readable file")
    }
}
