// Measuring in place (LoopMeasurements): the loop takes a reader's measurements at the start of an iteration and
// feeds them at the steps that hold each figure. Callout sites call measureCallout; sleeps and stalls are fed where
// the wait and the stall watch time them (Loop+Steps.swift, Stalls/StallWatch.swift).
extension Loop {
    /// Starts measuring into `measurements`, or stops with nil, from the loop's next iteration (a loop asleep now
    /// starts when it wakes). Any thread; measurements given again replace the previous ones.
    package func measure(into measurements: LoopMeasurements?) {
        lock.withLock {
            pendingMeasurements = measurements
            isMeasured.store(measurements != nil, ordering: .relaxed)
        }
        measurementsChanged.store(true, ordering: .releasing)
    }

    /// Stops measuring into `measurements` if they are still the ones given (others given since stay).
    package func stopMeasuring(into measurements: LoopMeasurements) {
        let stopped: Bool = lock.withLock {
            guard pendingMeasurements === measurements else { return false }
            pendingMeasurements = nil
            isMeasured.store(false, ordering: .relaxed)
            return true
        }
        if stopped { measurementsChanged.store(true, ordering: .releasing) }
    }

    /// Step 1: the measurements given since the last iteration, if any. One load per iteration otherwise.
    @inline(__always)
    func adoptMeasurements() {
        guard measurementsChanged.load(ordering: .relaxed) else { return }
        adoptPendingMeasurements()
    }

    @inline(never)
    private func adoptPendingMeasurements() {
        // Cleared before the read: measurements given in between are read now, or adopted again next iteration.
        measurementsChanged.store(false, ordering: .relaxed)
        measurements = lock.withLock { pendingMeasurements }
    }

    /// A callout serving what was due, signalled or enqueued at `since` (0: not stamped, nothing to measure)
    /// begins: its wake-up delay, from the tracer's timestamp of the begin event it just recorded, else `readAt` (a
    /// clock read the step just made), else a read of the clock the stamps were taken on. No clock read while
    /// nothing is measured.
    @inline(__always)
    func measureCallout(_ frame: RunFrame, since: UInt64, timer: Bool = false, readAt: UInt64? = nil) {
        guard let measurements, since != 0 else { return }
        let stamp = frame.sink?.lastEventTimestamp() ?? 0
        measurements.calloutBegan(at: stamp != 0 ? stamp : readAt ?? monotonicNanoseconds(), since: since, timer: timer)
    }
}
