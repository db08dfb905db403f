import Dispatch
import Glibc
import RunLoopCore
import Testing

/// An object a handler captures whose deinit uses the loop, as a controller torn down with its thread may.
final class UsesLoopInDeinit: Sendable {
    let loop: Loop
    let deinits: Shared<Int>

    init(_ loop: Loop, _ deinits: Shared<Int>) {
        self.loop = loop
        self.deinits = deinits
    }

    func touch() {}

    deinit {
        // Each of these takes the loop's lock.
        _ = loop.currentMode
        loop.add(LoopTimer(after: .zero) { _ in }, forMode: .default)
        loop.perform {}
        deinits.value += 1
    }
}

/// Rulebook §1 (rule 3): a thread's loop is torn down when the thread exits.
@Suite(.serialized) struct ThreadExitTests {
    @Test func exitCancelsSourcesDropsBlocksDetachesTimersAndClosesDescriptors() {
        let cancels = TraceLog()
        let blockRan = Shared(false)
        let timerBox = Shared<LoopTimer?>(nil)
        var pipeFDs: [Int32] = [0, 0]
        #expect(pipe(&pipeFDs) == 0)
        defer { close(pipeFDs[0]); close(pipeFDs[1]) }
        let readEnd = pipeFDs[0]

        let thread = JoinableThread {
            let loop = Loop.current
            loop.addCommonMode("ui")
            loop.add(LoopSource(cancel: { _, mode in cancels.append("cancel:\(mode)") }, perform: {}), forMode: .common)
            loop.add(DescriptorSource(fileDescriptor: readEnd) { _, _ in }, forMode: "io")
            let timer = LoopTimer(after: .seconds(60)) { _ in }
            loop.add(timer, forMode: .default)
            timerBox.value = timer
            loop.add(LoopPort { _, _ in }, forMode: .default)
            loop.perform { blockRan.value = true }
            loop.run(mode: "io", timeout: .milliseconds(5))
        }
        thread.start()
        thread.join()
        #expect(cancels.events.sorted() == ["cancel:kCFRunLoopDefaultMode", "cancel:ui"])
        #expect(!blockRan.value, "pending blocks are dropped, not run")
        #expect(timerBox.value?.isValid == true, "timers are detached but not invalidated")
        // The detached timer can join another loop.
        let refired = onThread { () -> Bool in
            let loop = Loop.current
            guard let timer = timerBox.value else { return false }
            loop.add(timer, forMode: .default)
            defer { timer.invalidate() }
            return loop.contains(timer, inMode: .default)
        }
        #expect(refired)
        #expect(fcntl(readEnd, F_GETFD) != -1, "the user's descriptor stays open")
    }

    /// Counted in a child process: other tests open descriptors concurrently in this one. Only the kinds a loop
    /// opens are counted: the child also holds descriptors it inherited, which the test runtime may close meanwhile,
    /// and libdispatch's own (an epoll descriptor, an eventfd and a timerfd per clock it arms timers on).
    @Test func exitedLoopThreadsLeakNoDescriptors() async {
        await #expect(processExitsWith: .success) {
            _ = onThread { Loop.current.id }   // the main loop's descriptors exist from here on
            // libdispatch opens a timerfd of its own the first time a dispatch timer is armed, which the test runtime
            // may do at any moment (under load it did, failing this test): armed here first, so it is in `before`.
            let fired = DispatchSemaphore(value: 0)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { fired.signal() }
            fired.wait()
            let before = openLoopDescriptors()
            var pipeFDs: [Int32] = [0, 0]
            _ = pipe(&pipeFDs)
            let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
            for _ in 0..<50 {
                _ = onThread { () -> Bool in
                    let loop = Loop.current
                    loop.addCommonMode("ui")
                    loop.add(LoopTimer(after: .milliseconds(1)) { _ in }, forMode: .default)
                    loop.add(LoopSource {}, forMode: "a")
                    loop.add(DescriptorSource(fileDescriptor: readEnd) { _, _ in }, forMode: .common)
                    loop.add(LoopPort { _, _ in }, forMode: "b")
                    loop.run(mode: .default, timeout: .milliseconds(10))
                    return true
                }
            }
            close(readEnd)
            close(writeEnd)
            var after = openLoopDescriptors()
            // Anything libdispatch holds for a moment more settles; a loop's leaked descriptors do not.
            for _ in 0..<40 where after != before {
                usleep(50_000)
                after = openLoopDescriptors()
            }
            if after != before {
                print("descriptors before: \(before), after 50 loop threads exited: \(after)")
                exit(1)
            }
        }
    }

    /// Rule 37, in a child process: before the fix a debug build trapped (EDEADLK) and a release build hung.
    @Test func aDeinitThatUsesTheLoopDuringTearDownDoesNotDeadlock() async {
        await #expect(processExitsWith: .success) {
            let deinits = Shared(0)
            let thread = JoinableThread {
                let loop = Loop.current
                loop.addCommonMode("ui")
                // Each item's handler holds the only reference to an object whose deinit uses the loop.
                let forTimer = UsesLoopInDeinit(loop, deinits)
                let forSource = UsesLoopInDeinit(loop, deinits)
                let forObserver = UsesLoopInDeinit(loop, deinits)
                let forPort = UsesLoopInDeinit(loop, deinits)
                loop.add(LoopTimer(after: .seconds(60)) { _ in forTimer.touch() }, forMode: .common)
                loop.add(LoopSource { forSource.touch() }, forMode: "other")
                loop.add(LoopObserver(activities: .entry) { _, _ in forObserver.touch() }, forMode: .default)
                loop.add(LoopPort { _, _ in forPort.touch() }, forMode: .common)
                loop.run(mode: .default, timeout: .milliseconds(1))
            }
            thread.start()
            thread.join()
            if deinits.value != 4 {
                print("deinits: \(deinits.value)")
                exit(1)
            }
        }
    }

    @Test func aLoopWhoseThreadExitedIgnoresNewWork() {
        let loop = onThread { Loop.current }
        loop.perform { Issue.record("a block ran on a torn-down loop") }
        loop.wakeUp()
        loop.stop()
        let timer = LoopTimer(after: .zero) { _ in }
        loop.add(timer, forMode: .default)
        #expect(!loop.contains(timer, inMode: .default))
    }
}
