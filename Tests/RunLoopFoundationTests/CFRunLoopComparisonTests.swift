import CFoundationRunLoop
import Foundation
import RunLoopCore
import Testing
import TestSupport

// The same scenarios on CFRunLoop itself (Foundation's RunLoop on this machine runs swift-corelibs-foundation's
// CoreFoundation) and on RunLoopCore, compared as exact activity traces (issue 30). In real time: the sequences do
// not depend on timing (the only timer is 50 ms away from every callout that matters), only the dates would.

/// A thread-safe list of trace words.
private typealias Words = Shared<[String]>

extension Shared where Value == [String] {
    fileprivate func append(_ word: String) { mutate { $0.append(word) } }
    fileprivate var text: String { value.joined(separator: " ") }
}

/// What a scenario does on the loop's own thread, the first time its observer sees `activity`.
enum OwnThreadAction: String, CaseIterable, Sendable {
    case wakeUp, perform
}

/// CF's activity bits, as the rulebook keeps them, with the trace's short names.
private let activityNames: [(bit: UInt, name: String)] = [(1, "Entry"), (2, "BT"), (4, "BS"), (32, "BW"), (64, "AW"), (128, "Exit")]

/// An observer's state on CF: C callbacks reach it through the context's info pointer.
private final class CFObserverBox {
    let handler: (UInt) -> Void
    init(_ handler: @escaping (UInt) -> Void) { self.handler = handler }
}

/// Adds an observer of every activity to the current CFRunLoop's common modes; it lives as long as the loop keeps it.
private func addCFObserver(_ handler: @escaping (UInt) -> Void) {
    let box = CFObserverBox(handler)
    var context = rlcf_observer_context(
        version: 0, info: Unmanaged.passRetained(box).toOpaque(), retain: nil,
        release: { info in
            guard let info else { return }
            Unmanaged<CFObserverBox>.fromOpaque(info).release()
        },
        copyDescription: nil)
    let observer = rlcf_observer_create(nil, 0x0FFF_FFFF, 1, 0, { _, activity, info in
        guard let info else { return }
        Unmanaged<CFObserverBox>.fromOpaque(info).takeUnretainedValue().handler(activity)
    }, &context)
    if let observer {
        rlcf_run_loop_add_observer(rlcf_run_loop_get_current(), observer, rlcf_common_modes())
        rlcf_release(UnsafeRawPointer(observer))
    }
}

/// Runs `activity`'s scenario on CFRunLoop: a one-shot timer `T` 50 ms away keeps the default mode alive; the
/// observer does `action` the first time it sees `activity`, then logs every activity.
private func cfTrace(_ action: OwnThreadAction, at activity: UInt) -> String {
    onThread { () -> String in
        let log = Words([])
        let loop = rlcf_run_loop_get_current()
        var done = false
        addCFObserver { seen in
            if seen == activity && !done {
                done = true
                switch action {
                case .wakeUp: rlcf_run_loop_wake_up(loop)
                case .perform: RunLoop.current.perform(inModes: [.default]) { log.append("B") }
                }
            }
            log.append(activityNames.first { $0.bit == seen }?.name ?? "?")
        }
        RunLoop.current.add(Timer(fire: Date(timeIntervalSinceNow: 0.05), interval: 0, repeats: false) { _ in log.append("T") },
                            forMode: .default)
        _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 5))
        return log.text
    }
}

/// The same scenario on RunLoopCore (returnAfterSourceHandled, as `RunLoop.run(mode:before:)` runs CF).
private func coreTrace(_ action: OwnThreadAction, at activity: UInt) -> String {
    onThread { () -> String in
        let log = Words([])
        let loop = Loop.current
        let done = Shared(false)
        loop.add(LoopObserver(activities: .all) { _, seen in
            if seen.rawValue == activity && !done.value {
                done.value = true
                switch action {
                case .wakeUp: loop.wakeUp()
                case .perform: loop.perform(inMode: .default) { log.append("B") }
                }
            }
            log.append(activityNames.first { $0.bit == seen.rawValue }?.name ?? "?")
        }, forMode: .default)
        loop.add(LoopTimer(after: .milliseconds(50)) { _ in log.append("T") }, forMode: .default)
        loop.run(mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
        return log.text
    }
}

@Suite struct CFRunLoopComparisonTests {
    /// A wake-up or a perform from an observer at each of the six activities: CF's exact trace, and RunLoopCore's
    /// the same but where the rulebook declares a difference (rule 31: a block performed by a BeforeWaiting
    /// observer runs in the same iteration instead of waiting for the timer).
    @Test(arguments: OwnThreadAction.allCases, activityNames.map(\.bit))
    func anObserverOnTheLoopsThread(_ action: OwnThreadAction, _ activity: UInt) {
        let extra = "Entry BT BS BW AW BT BS BW AW T Exit"
        let plain = "Entry BT BS BW AW T Exit"
        let expectedCF: String = switch (action, activity) {
        case (.wakeUp, 1), (.wakeUp, 2), (.wakeUp, 4), (.wakeUp, 32): extra
        case (.wakeUp, _): plain
        case (.perform, 1), (.perform, 2), (.perform, 4): "Entry BT BS B BW AW T Exit"
        case (.perform, 32), (.perform, 64): "Entry BT BS BW AW T B Exit"
        case (.perform, _): plain
        }
        let cf = cfTrace(action, at: activity)
        let core = coreTrace(action, at: activity)
        #expect(cf == expectedCF)
        if action == .perform && activity == 32 {
            #expect(core == "Entry BT BS BW AW B BT BS BW AW T Exit", "Better than CF (rule 31)")
        } else {
            #expect(core == cf)
        }
    }

    /// The first case: a timer callout that performs a block and calls wake-up costs no iteration.
    @Test func aTimerCalloutThatPerformsAndWakes() {
        let cf = onThread { () -> String in
            let log = Words([])
            addCFObserver { seen in log.append(activityNames.first { $0.bit == seen }?.name ?? "?") }
            RunLoop.current.add(Timer(fire: Date(timeIntervalSinceNow: 0.01), interval: 0, repeats: false) { _ in
                log.append("T1")
                RunLoop.current.perform(inModes: [.default]) { log.append("B") }
                rlcf_run_loop_wake_up(rlcf_run_loop_get_current())
            }, forMode: .default)
            RunLoop.current.add(Timer(fire: Date(timeIntervalSinceNow: 0.06), interval: 0, repeats: false) { _ in log.append("T2") },
                                forMode: .default)
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 5))
            return log.text
        }
        let core = onThread { () -> String in
            let log = Words([])
            let loop = Loop.current
            loop.add(LoopObserver(activities: .all) { _, seen in
                log.append(activityNames.first { $0.bit == seen.rawValue }?.name ?? "?")
            }, forMode: .default)
            loop.add(LoopTimer(after: .milliseconds(10)) { _ in
                log.append("T1")
                loop.perform(inMode: .default) { log.append("B") }
                loop.wakeUp()
            }, forMode: .default)
            loop.add(LoopTimer(after: .milliseconds(60)) { _ in log.append("T2") }, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
            return log.text
        }
        #expect(cf == "Entry BT BS BW AW T1 B BT BS BW AW T2 Exit")
        #expect(core == cf)
    }

    /// Rule 22: two timers created with past dates, the first created having the later date, added in the other
    /// order, fire in creation order on both.
    @Test func pastTimersFireInCreationOrder() {
        let cf = onThread { () -> String in
            let log = Words([])
            let first = Timer(fire: Date(timeIntervalSinceNow: -0.01), interval: 0, repeats: false) { _ in log.append("first") }
            usleep(1000)
            let second = Timer(fire: Date(timeIntervalSinceNow: -0.05), interval: 0, repeats: false) { _ in log.append("second") }
            RunLoop.current.add(second, forMode: .default)
            RunLoop.current.add(first, forMode: .default)
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 5))
            return log.text
        }
        let core = onThread { () -> String in
            let log = Words([])
            let loop = Loop.current
            let first = LoopTimer(fireAt: .now.advanced(by: .milliseconds(-10))) { _ in log.append("first") }
            usleep(1000)
            let second = LoopTimer(fireAt: .now.advanced(by: .milliseconds(-50))) { _ in log.append("second") }
            loop.add(second, forMode: .default)
            loop.add(first, forMode: .default)
            loop.run(mode: .default, timeout: .seconds(5), returnAfterSourceHandled: true)
            return log.text
        }
        #expect(cf == "first second")
        #expect(core == cf)
    }
}
