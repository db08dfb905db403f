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

    /// In a child process: the environment is the whole process's, and the tests running meanwhile look the
    /// interposer up and start programs that inherit it.
    @Test func theOverrideWinsAndAMissingOneSaysSo() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            var outcome: [String] = []
            guard let built = try? interposerPath() else {
                print("the built interposer was not found")
                exit(1)
            }
            setenv("RLCTL_WAIT_INTERPOSER", built, 1)
            let overridden = (try? interposerPath()) ?? "(none)"
            if overridden != built { outcome.append("the override \(built) gave \(overridden)") }
            setenv("RLCTL_WAIT_INTERPOSER", "/nonexistent/librlctl-wait-interposer.so", 1)
            var buffer = [CChar](repeating: 0, count: 4096)
            if rl_wait_interposer_path(&buffer, buffer.count) != -1 { outcome.append("a missing override was found") }
            let error = String(cString: rl_wait_interposer_error())
            if error != "RLCTL_WAIT_INTERPOSER=/nonexistent/librlctl-wait-interposer.so: no such readable file" {
                outcome.append("error: \(error)")
            }
            guard outcome.isEmpty else {
                print(outcome.joined(separator: "; "))
                exit(1)
            }
        }
        #expect(String(decoding: result?.standardOutputContent ?? [], as: UTF8.self) == "")
    }
}
