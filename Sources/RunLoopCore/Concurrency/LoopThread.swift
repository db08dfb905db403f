import CRunLoopLinux
import Glibc

/// A thread that owns a running loop: what a Swift program starts to give an actor (or any work) a loop of
/// its own, and closes when done.
///
/// The thread is named `name` (the kernel keeps the first 15 bytes), so traces show it in `loop_create`. Its
/// loop runs the default mode, which is a common mode, over and over until ``close()``: an idle loop sleeps and
/// is kept alive by a source of the thread's own, a run that a callout stopped is started again, so blocks
/// performed for the common modes and jobs of actors on ``loop`` run as long as the thread lives.
///
/// ```swift
/// let thread = LoopThread(name: "render")
/// actor Renderer {
///     let loop: Loop
///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
///     init(loop: Loop) { self.loop = loop }
/// }
/// let renderer = Renderer(loop: thread.loop)
/// …
/// thread.close()    // stops the loop and joins the thread
/// ```
///
/// Closing and deinit:
/// - ``close()`` stops the loop and returns once the thread has exited and its loop is torn down (rule 3:
///   sources get their cancel callbacks, pending blocks are dropped, pending actor jobs go on after the thread,
///   see Concurrency/Loop+Executor.swift). It is idempotent and safe from any thread; concurrent calls all
///   return after the thread has exited.
/// - Called on the loop's own thread (from a callout or an actor job), ``close()`` cannot wait for the thread
///   it runs on: it asks the loop to stop and returns at once; the thread exits when the callout has returned.
///   A later ``close()`` from another thread waits for that exit.
/// - The stop is a signal of a source in the common modes, so it never falls between two runs: the innermost
///   run in a common mode performs it. While a callout runs a private mode (or blocks), closing waits for it. A
///   stop that ends a nested run is repeated for the run around it, and for any run in a common mode a callout
///   starts after it: such a run returns at once (after the sources signalled before it), so a callout that runs
///   the loop until something happens must also end when a run returns `Loop.RunResult.stopped`.
/// - Releasing the last reference closes the thread the same way; when that happens on the loop's own thread,
///   the thread is detached instead of joined.
public final class LoopThread: @unchecked Sendable {
    /// The thread's loop.
    public let loop: Loop
    /// The thread's name as given (the kernel's copy may be shorter).
    public let name: String

    private let thread: pthread_t
    private let driver: Driver
    /// Guards `joinState`; its condition wakes callers waiting for another caller's join.
    private let joinLock = ConditionLock()
    private var joinState = JoinState.running

    private enum JoinState {
        case running
        /// One caller is in `pthread_join`; others wait for `joined`.
        case joining
        case joined
    }

    /// Starts the thread and returns once its loop exists.
    /// - Precondition: the process can start another thread (a failing `pthread_create` stops the program with
    ///   its error, as running out of threads leaves nothing to fall back on).
    public init(name: String = "LoopThread") {
        self.name = name
        let driver = Driver(name: name)
        self.driver = driver
        var handle = pthread_t()
        let start = Unmanaged.passRetained(driver).toOpaque()
        let rc = pthread_create(&handle, nil, { argument in
            Unmanaged<Driver>.fromOpaque(argument!).takeRetainedValue().runThread()
            return nil
        }, start)
        if rc != 0 {
            Unmanaged<Driver>.fromOpaque(start).release()
            usageFailure("LoopThread: pthread_create failed (\(rc)); the process cannot start more threads")
        }
        thread = handle
        loop = driver.waitForLoop()
    }

    deinit {
        if isOnItsThread {
            driver.requestStop()
            pthread_detach(thread)
        } else {
            close()
        }
    }

    /// Stops the loop and waits until the thread has exited; see the type documentation.
    public func close() {
        driver.requestStop()
        if isOnItsThread { return }
        joinLock.lock()
        switch joinState {
        case .joined:
            break
        case .joining:
            while joinState != .joined { _ = joinLock.wait(until: nil) }
        case .running:
            joinState = .joining
            joinLock.unlock()
            pthread_join(thread, nil)
            joinLock.lock()
            joinState = .joined
            joinLock.broadcast()
        }
        joinLock.unlock()
    }

    /// Shuts the thread down: another name for ``close()``.
    public func shutdown() {
        close()
    }

    /// A pthread id comparison, not the loop's ownership: during the thread's exit (when its loop is torn down
    /// and releases what it held) the loop belongs to no thread, but the thread still cannot join itself. The
    /// id is not reused before the join, and a joined thread is never compared.
    private var isOnItsThread: Bool {
        pthread_equal(pthread_self(), thread) != 0
    }
}

// ===== the thread's side =====

extension LoopThread {
    /// What the thread runs, shared with the handle: the handle may be released first (a detached thread).
    private final class Driver: @unchecked Sendable {
        let name: String
        private let lock = ConditionLock()
        /// Guarded by lock: the loop and its stop source once the thread has made them.
        private var published: (loop: Loop, stop: LoopSource)?
        private var stopRequested = false
        /// Loop thread only: set by the stop source, read between runs.
        private var finishing = false
        /// Loop thread only: the stop source, for its own perform.
        private var stopSource: LoopSource?

        init(name: String) {
            self.name = name
        }

        func runThread() {
            setCurrentThreadName(name)
            let loop = Loop.current
            // One source keeps the common modes alive while idle and carries the stop. A signal, unlike
            // `Loop.stop()`, is not lost between two runs, and unlike a block it is not taken into an outer
            // pass's batch: the innermost run in a common mode performs it, whatever the nesting.
            // Last of the signalled sources: once signalled it stays signalled, and a run that returns after the
            // first source handled must still get to the program's own.
            let stop = LoopSource(order: .max, label: "LoopThread.stop") { [unowned self] in self.stopRun(of: loop) }
            stopSource = stop
            loop.add(stop, forMode: .common)
            lock.withLock {
                published = (loop, stop)
                lock.broadcast()
            }
            while !finishing {
                loop.run(mode: .default, timeout: Loop.forever)
            }
            stop.invalidate()
            stopSource = nil
        }

        func waitForLoop() -> Loop {
            lock.withLock {
                while published == nil { _ = lock.wait(until: nil) }
                return published!.loop
            }
        }

        /// Signals the stop source once. The signal is sent under the lock: a later caller that finds the stop
        /// requested (a close from a callout) returns knowing the source is signalled, not about to be.
        func requestStop() {
            lock.withLock {
                guard !stopRequested else { return }
                stopRequested = true
                published?.stop.signalAndWakeUp()
            }
        }

        /// Ends the run the source performs in and signals itself again, so that the source stays signalled
        /// until the thread exits: the run around a nested one is stopped in turn (a source re-signalled in its
        /// perform runs on a later iteration, after the nested run returned), and so is a run in a common mode
        /// that a callout starts after the stop was performed, which would otherwise hold `close()` until its
        /// timeout.
        private func stopRun(of loop: Loop) {
            finishing = true
            loop.stop()
            stopSource?.signal()
        }
    }
}

/// Names the calling thread (Linux keeps 15 bytes; the name is cut at a character boundary to fit).
private func setCurrentThreadName(_ name: String) {
    var bytes = 0
    var fitting = ""
    for character in name {
        let length = character.utf8.count
        if bytes + length > 15 { break }
        bytes += length
        fitting.append(character)
    }
    _ = crl_set_thread_name(fitting)
}
