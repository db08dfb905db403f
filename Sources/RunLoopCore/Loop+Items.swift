// Adding, removing and finding items, and the common-modes bookkeeping. Everything here runs under the loop's
// lock except the source schedule/cancel callouts, which run after it is dropped.

/// What every item kind (timer, custom source, descriptor source, port, observer) does to join or leave a mode.
protocol ModeItem: AnyObject {
    static var kindName: String { get }
    static var traceKind: LoopEventSink.ItemKind { get }
    var id: UInt64 { get }
    var label: String? { get }
    var binding: Binding { get }
    var modes: Set<Loop.Mode> { get set }
    var isValid: Bool { get }
    /// Adds the item to a mode's tables (lock held); false when the kernel refused it (a descriptor source only).
    func attach(to state: ModeState, loop: Loop) -> Bool
    /// Removes the item from a mode's tables (lock held).
    func detach(from state: ModeState, loop: Loop)
}

extension ModeItem {
    func insert(into state: ModeState, loop: Loop) -> Bool {
        guard !modes.contains(state.mode), attach(to: state, loop: loop) else { return false }
        modes.insert(state.mode)
        return true
    }

    func remove(from state: ModeState, loop: Loop) -> Bool {
        guard modes.remove(state.mode) != nil else { return false }
        detach(from: state, loop: loop)
        return true
    }

    /// Leaves every mode of `loop` and unbinds (lock held). Returns the modes left.
    @discardableResult
    func removeFromAllModes(loop: Loop) -> Set<Loop.Mode> {
        // Emptied before the walk: `left` then owns the storage, so nothing is copied (a one-shot timer goes
        // through here after every firing).
        let left = modes
        modes.removeAll()
        for mode in left {
            if let state = loop.modes[mode] { detach(from: state, loop: loop) }
        }
        binding.release()
        return left
    }
}

extension LoopTimer: ModeItem {
    static var kindName: String { "LoopTimer" }
    static var traceKind: LoopEventSink.ItemKind { .timer }
    func attach(to state: ModeState, loop: Loop) -> Bool {
        state.insertTimer(self)
        return true
    }
    func detach(from state: ModeState, loop: Loop) { state.removeTimer(self) }
}

extension LoopSource: ModeItem {
    static var kindName: String { "LoopSource" }
    static var traceKind: LoopEventSink.ItemKind { .source }
    func attach(to state: ModeState, loop: Loop) -> Bool {
        state.sources.append(self)
        return true
    }
    func detach(from state: ModeState, loop: Loop) { state.sources.removeAll { $0 === self } }
}

extension DescriptorSource: ModeItem {
    static var kindName: String { "DescriptorSource" }
    static var traceKind: LoopEventSink.ItemKind { .descriptor }

    /// A descriptor closed by another thread (EBADF) or already watched in this mode (EEXIST) is a runtime race in
    /// a server, not a programming error: the refusal is recorded and the add fails (the loop then invalidates the
    /// source). A regular file (EPERM) can never be watched, which only a mistake explains.
    func attach(to state: ModeState, loop: Loop) -> Bool {
        if let error = loop.kernel.backend.watch(fileDescriptor, for: epollInterest, token: id, in: state.waitSet) {
            requireUsage(error.errno != EPERM, "DescriptorSource: descriptor \(fileDescriptor) cannot be watched (a regular file or directory is always ready; read it directly)")
            recordWatchFailure(WatchFailure(errno: error.errno, mode: state.mode))
            return false
        }
        // A registration of a closed descriptor whose number was reused is gone from the kernel: the new one owns
        // the number now.
        state.watchers[fileDescriptor] = id
        state.descriptors[id] = self
        return true
    }

    /// Unwatches only this source's own registration: a source whose descriptor was closed and whose number now
    /// belongs to another source must not unwatch that one (rule 20a).
    func detach(from state: ModeState, loop: Loop) {
        if state.watchers[fileDescriptor] == id {
            loop.kernel.backend.unwatch(fileDescriptor, in: state.waitSet)
            state.watchers[fileDescriptor] = nil
        }
        state.descriptors[id] = nil
    }
}

extension LoopPort: ModeItem {
    static var kindName: String { "LoopPort" }
    static var traceKind: LoopEventSink.ItemKind { .port }

    func attach(to state: ModeState, loop: Loop) -> Bool {
        if modes.isEmpty { setDeliveringLoop(loop) }
        state.ports.append(self)
        return true
    }

    func detach(from state: ModeState, loop: Loop) {
        state.ports.removeAll { $0 === self }
        if modes.isEmpty { setDeliveringLoop(nil) }
    }
}

extension LoopObserver: ModeItem {
    static var kindName: String { "LoopObserver" }
    static var traceKind: LoopEventSink.ItemKind { .observer }
    func attach(to state: ModeState, loop: Loop) -> Bool {
        state.insertObserver(self)
        return true
    }
    func detach(from state: ModeState, loop: Loop) { state.removeObserver(self) }
}

import Glibc

extension ModeState {
    var allItems: [any ModeItem] {
        var items: [any ModeItem] = []
        items.append(contentsOf: sources as [any ModeItem])
        items.append(contentsOf: Array(descriptors.values) as [any ModeItem])
        items.append(contentsOf: ports as [any ModeItem])
        items.append(contentsOf: timers as [any ModeItem])
        items.append(contentsOf: observers as [any ModeItem])
        return items
    }
}

// ===== public add / remove / contains =====

extension Loop {
    /// Adds a timer to a mode (or, with ``Mode/common``, to every common mode, now and later).
    /// A timer belongs to one loop at a time; adding it twice to a mode does nothing. Adding an invalidated item
    /// of any kind does nothing (another thread may have invalidated it a moment before).
    public func add(_ timer: LoopTimer, forMode mode: Mode) { addItem(timer, mode) }
    /// Removes a timer from a mode (with ``Mode/common``, from every common mode). The timer stays valid.
    public func remove(_ timer: LoopTimer, forMode mode: Mode) { removeItem(timer, mode) }
    /// Whether the timer is in the mode (with ``Mode/common``: was added with the common token).
    public func contains(_ timer: LoopTimer, inMode mode: Mode) -> Bool { containsItem(timer, mode) }

    /// Adds a custom source; its `schedule` callout runs once for each concrete mode it joins.
    public func add(_ source: LoopSource, forMode mode: Mode) { addItem(source, mode) }
    /// Removes a custom source; its `cancel` callout runs once for each mode it leaves.
    public func remove(_ source: LoopSource, forMode mode: Mode) { removeItem(source, mode) }
    /// Whether the custom source is in the mode.
    public func contains(_ source: LoopSource, inMode mode: Mode) -> Bool { containsItem(source, mode) }

    /// Starts watching a descriptor source's descriptor in a mode. A descriptor the kernel refuses (closed by
    /// another thread, or already watched in the mode) leaves the source out and invalidated, with
    /// ``DescriptorSource/watchFailure`` saying why.
    public func add(_ source: DescriptorSource, forMode mode: Mode) { addItem(source, mode) }
    /// Stops watching a descriptor source's descriptor in a mode. The descriptor is not closed.
    public func remove(_ source: DescriptorSource, forMode mode: Mode) { removeItem(source, mode) }
    /// Whether the descriptor source is in the mode.
    public func contains(_ source: DescriptorSource, inMode mode: Mode) -> Bool { containsItem(source, mode) }

    /// Adds an observer to a mode.
    public func add(_ observer: LoopObserver, forMode mode: Mode) { addItem(observer, mode) }
    /// Removes an observer from a mode.
    public func remove(_ observer: LoopObserver, forMode mode: Mode) { removeItem(observer, mode) }
    /// Whether the observer is in the mode.
    public func contains(_ observer: LoopObserver, inMode mode: Mode) -> Bool { containsItem(observer, mode) }

    /// Schedules a port: its messages are delivered to its handler in this mode.
    public func add(_ port: LoopPort, forMode mode: Mode) {
        requireUsage(port.handler != nil, "Loop.add(_:forMode:): this LoopPort has no handler; give it one, or read it with receive(timeout:) instead of scheduling it")
        addItem(port, mode)
    }
    /// Unschedules a port from a mode; messages wait in its queue until it is scheduled again.
    public func remove(_ port: LoopPort, forMode mode: Mode) { removeItem(port, mode) }
    /// Whether the port is in the mode.
    public func contains(_ port: LoopPort, inMode mode: Mode) -> Bool { containsItem(port, mode) }

    /// The mode's tables, created on first use (lock held).
    func modeState(_ mode: Mode) -> ModeState {
        if let state = modes[mode] { return state }
        let state = ModeState(mode: mode, waitSet: kernel.backend.makeWaitSet())
        state.isCommon = commonModeSet.contains(mode)
        modes[mode] = state
        return state
    }

    /// Adding an invalid item does nothing, as in CF: another thread may have invalidated it a moment ago, which
    /// is a race in the caller's program, not a mistake in this call (rule 37, issue 11 item 5).
    private func addItem<Item: ModeItem>(_ item: Item, _ mode: Mode) {
        guard item.isValid else { return }
        var joined: [Mode] = []
        var refused = false
        lock.lock()
        guard !isTornDown else {
            lock.unlock()
            return
        }
        let firstBinding = item.binding.loop == nil
        guard item.binding.bind(to: self) else {
            lock.unlock()
            usageFailure("Loop.add(_:forMode:): the \(Item.kindName) already belongs to another loop; remove it there first (an item belongs to one loop at a time)")
        }
        // Again now that it is bound: an invalidate() that ran before the binding found no loop to remove it
        // from, so this add must not put it in a mode. One that runs after waits for this lock and removes it.
        guard item.isValid else {
            releaseIfInNoMode(item)
            lock.unlock()
            return
        }
        if firstBinding { assignSequence(item) }
        if mode == .common {
            if commonItemIDs.insert(ObjectIdentifier(item)).inserted {
                commonItems.append(item)
                for common in commonModeSet {
                    if item.insert(into: modeState(common), loop: self) {
                        joined.append(common)
                    } else if !item.modes.contains(common) {
                        refused = true
                    }
                }
            }
        } else if item.insert(into: modeState(mode), loop: self) {
            joined.append(mode)
        } else {
            refused = !item.modes.contains(mode)
        }
        if refused { releaseIfInNoMode(item) }
        if Item.self == LoopTimer.self { timersDidChange() }
        lock.unlock()
        if refused, let source = item as? DescriptorSource {
            // The kernel refused the descriptor: the source is invalidated, which runs its cancel handler.
            source.invalidate()
        }
        if firstBinding, let label = item.label, let sink = LoopEventSink.current {
            sink.itemLabeled(id: item.id, kind: Item.traceKind, label: label)
        }
        if let source = item as? LoopSource, let schedule = source.schedule {
            for mode in joined { schedule(self, mode) }
        }
    }

    private func removeItem<Item: ModeItem>(_ item: Item, _ mode: Mode) {
        var left: [Mode] = []
        lock.lock()
        guard item.binding.loop === self else {
            lock.unlock()
            return
        }
        if mode == .common {
            if commonItemIDs.remove(ObjectIdentifier(item)) != nil {
                commonItems.removeAll { $0 === item }
                for common in commonModeSet {
                    if let state = modes[common], item.remove(from: state, loop: self) { left.append(common) }
                }
            }
        } else if let state = modes[mode], item.remove(from: state, loop: self) {
            left.append(mode)
        }
        releaseIfInNoMode(item)
        if Item.self == LoopTimer.self { timersDidChange() }
        lock.unlock()
        if let source = item as? LoopSource, let cancel = source.cancel {
            for mode in left { cancel(self, mode) }
        }
    }

    private func containsItem<Item: ModeItem>(_ item: Item, _ mode: Mode) -> Bool {
        lock.withLock {
            guard item.binding.loop === self else { return false }
            if mode == .common { return commonItemIDs.contains(ObjectIdentifier(item)) }
            return item.modes.contains(mode)
        }
    }

    /// Unbinds an item that is in none of this loop's modes and not a common item (lock held).
    private func releaseIfInNoMode<Item: ModeItem>(_ item: Item) {
        if item.modes.isEmpty && !commonItemIDs.contains(ObjectIdentifier(item)) {
            item.binding.release()
        }
    }

    private func assignSequence<Item: ModeItem>(_ item: Item) {
        if let timer = item as? LoopTimer {
            timer.sequence = Sequence.next()
            timer.settleDateGivenUnbound(on: self)
        } else if let observer = item as? LoopObserver {
            observer.sequence = Sequence.next()
        }
    }

    /// Removes an invalidated item from every mode and the common set (lock held). Returns the modes it left.
    func detach<Item: ModeItem>(_ item: Item) -> Set<Mode> {
        if commonItemIDs.remove(ObjectIdentifier(item)) != nil {
            commonItems.removeAll { $0 === item }
        }
        let left = item.removeFromAllModes(loop: self)
        if Item.self == LoopTimer.self { timersDidChange() }
        return left
    }

    /// Moves a timer to a new fire date in every mode it is in (lock held).
    func reschedule(_ timer: LoopTimer, to date: UInt64) {
        if timer.isFiring { timer.fireDateSetDuringCallout = true }
        // Two walks over the timer's modes rather than an array of their states: this runs after every firing of
        // a repeating timer, which must not allocate.
        for mode in timer.modes { modes[mode]?.removeTimer(timer) }
        timer.fireDateNanoseconds = date
        for mode in timer.modes { modes[mode]?.insertTimer(timer) }
        timersDidChange()
    }

    /// Re-arms the kernel timer of a sleeping loop after its timers changed (lock held), so a new earlier timer
    /// wakes it on time and a removed one causes no spurious wake-up.
    func timersDidChange() {
        guard let state = sleepingIn else { return }
        kernel.arm(deadline: wakeDeadline(for: state, runDeadline: sleepingDeadline))
    }

    /// When a loop sleeping in `state` must wake: the coalesced timer date or the run deadline (lock held).
    func wakeDeadline(for state: ModeState, runDeadline: UInt64) -> UInt64 {
        guard let timerDate = coalescedWakeDate(state.timers) else { return runDeadline }
        return max(min(timerDate, runDeadline), 1)
    }
}
