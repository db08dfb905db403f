import Foundation
import Glibc

/// What rlctl made that must not outlive it (an LTTng session, a relay daemon, a session daemon it started, a
/// temporary folder), undone on every way out that runs code: a normal return, a failure's exit, and a signal
/// that ends rlctl (``TerminationSignals/exit(reraising:)``), whose re-raised default action skips `defer` and
/// `atexit` alike. A SIGKILL runs nothing: the next LTTng-using rlctl removes the sessions it left
/// (``LTTngRecording/ensureSessionDaemon()``).
final class ExitCleanups: @unchecked Sendable {
    static let shared = ExitCleanups()

    /// Identifies one registered clean-up, to withdraw it once its owner undid the thing itself.
    struct Token: Hashable { fileprivate let id: Int }

    private let lock = NSLock()
    private let running = NSLock()
    private var pending: [(token: Token, undo: () -> Void)] = []
    private var nextID = 0
    private var atExitInstalled = false

    /// Registers `undo`; clean-ups run newest first, so what was made last (a session) goes before what it
    /// needs (the daemon that serves it).
    @discardableResult
    func add(_ undo: @escaping () -> Void) -> Token {
        lock.lock()
        defer { lock.unlock() }
        if !atExitInstalled {
            atExitInstalled = true
            atexit { ExitCleanups.shared.runAll() }
        }
        nextID += 1
        let token = Token(id: nextID)
        pending.append((token, undo))
        return token
    }

    /// Withdraws a clean-up whose owner has done it (or handed the thing over).
    func remove(_ token: Token) {
        lock.lock()
        pending.removeAll { $0.token == token }
        lock.unlock()
    }

    /// Runs every pending clean-up once, newest first. A second caller (the signal's thread while the main one
    /// exits) waits until the first is done, then finds none left: either may end the process once it returns.
    func runAll() {
        running.lock()
        defer { running.unlock() }
        lock.lock()
        let taken = pending
        pending.removeAll()
        lock.unlock()
        for cleanup in taken.reversed() { cleanup.undo() }
    }
}
