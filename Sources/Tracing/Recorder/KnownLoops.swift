import Foundation
import Glibc

/// The loops Tracing's sinks have seen created, so a recording started later can name them.
///
/// RunLoopCore reports `loop_create` once per loop, to the sink installed at that moment. A second recording in
/// the same process (`rlctl run --repeat`, a recorder started after the loops) would otherwise see the loop's
/// events but never its name and thread. Loops whose thread has exited are left out: their loop is gone.
enum KnownLoops {
    struct Loop {
        let id: UInt64
        let threadID: Int32
        let name: String
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var loops: [UInt64: Loop] = [:]

    static func created(loopID: UInt64, threadID: Int32, name: String) {
        lock.lock()
        defer { lock.unlock() }
        // Dead threads' entries go as new ones come, so a process that starts many short-lived loops keeps a
        // bounded list.
        if loops.count >= 64 { loops = loops.filter { isAlive($0.value.threadID) } }
        loops[loopID] = Loop(id: loopID, threadID: threadID, name: name)
    }

    /// The loops whose thread still runs, oldest first.
    static var alive: [Loop] {
        lock.lock()
        defer { lock.unlock() }
        return loops.values.filter { isAlive($0.threadID) }.sorted { $0.id < $1.id }
    }

    private static func isAlive(_ threadID: Int32) -> Bool {
        threadID == getpid() || access("/proc/self/task/\(threadID)", F_OK) == 0
    }
}
