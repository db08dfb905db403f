import TraceModel

/// What a set of timer firings adds up to: one timer's, or a loop's and the whole trace's by merging its timers'.
/// Each firing is recorded once, in its timer's statistics; loop and overall figures are merges of those, so a
/// figure means the same in every section of a report.
struct TimerTotals {
    var firings: UInt64 = 0
    var missed: UInt64 = 0
    /// Firings of timers with a tolerance, and how many of those were within it.
    var firingsWithTolerance: UInt64 = 0
    var withinNonzeroTolerance: UInt64 = 0
    /// Firings within [fire date, fire date + tolerance], a zero tolerance included (on time exactly).
    var withinTolerance: UInt64 = 0
    var lateness = LatencyHistogram()
    var beyondTolerance = LatencyHistogram()
    var lateFirings: UInt64 = 0
    /// What held the loop when each late firing came due.
    var lateCauses: [String: UInt64] = [:]

    mutating func record(_ firing: TimerFiring, missed: UInt64, lateCause: String?) {
        firings += 1
        self.missed += missed
        lateness.record(firing.lateness)
        beyondTolerance.record(firing.beyondTolerance)
        let within = firing.isWithinTolerance
        if within { withinTolerance += 1 }
        if firing.tolerance > 0 {
            firingsWithTolerance += 1
            if within { withinNonzeroTolerance += 1 }
        }
        if let lateCause {
            lateFirings += 1
            lateCauses[lateCause, default: 0] += 1
        }
    }

    mutating func merge(_ other: TimerTotals) {
        firings += other.firings
        missed += other.missed
        firingsWithTolerance += other.firingsWithTolerance
        withinNonzeroTolerance += other.withinNonzeroTolerance
        withinTolerance += other.withinTolerance
        lateness.merge(other.lateness)
        beyondTolerance.merge(other.beyondTolerance)
        lateFirings += other.lateFirings
        for (cause, count) in other.lateCauses { lateCauses[cause, default: 0] += count }
    }

    /// The loop-level share: only firings with a tolerance have a window to be within; with none, vacuously all
    /// (reports say "no tolerance" rather than print it).
    var shareWithinNonzeroTolerance: Double {
        firingsWithTolerance > 0 ? Double(withinNonzeroTolerance) / Double(firingsWithTolerance) : 1
    }
}

/// One timer's statistics while a trace streams by: its totals, and what only a single timer has (its settings,
/// its lateness trend, the modes it fires in).
struct TimerStatistics {
    let timerID: UInt64
    /// The loop of its first firing (a timer belongs to one loop).
    let loopID: UInt64
    private(set) var totals = TimerTotals()
    private(set) var first: UInt64 = .max
    private(set) var last: UInt64 = 0
    private var tolerance: UInt64 = 0
    private var interval: UInt64 = 0
    /// The modes of the runs it fired in: which nested runs could have served it.
    private(set) var modes = ModeSet()
    private var trend = LinearTrend()

    init(timerID: UInt64, loopID: UInt64) {
        self.timerID = timerID
        self.loopID = loopID
    }

    /// Counts a firing in `mode`, before its cause is looked up (the cause depends on the modes it fires in).
    mutating func firing(inMode mode: Int) { modes.insert(mode) }

    mutating func record(_ firing: TimerFiring, interval: UInt64, missed: UInt64, lateCause: String?) {
        let ts = firing.firedAt
        first = min(first, ts)
        last = max(last, ts)
        tolerance = firing.tolerance
        self.interval = interval
        totals.record(firing, missed: missed, lateCause: lateCause)
        trend.add(x: Double(ts - first) / 1e9, y: Double(firing.lateness))
    }

    func summary(label: String) -> TraceSummary.TimerSummary {
        // Per-timer figures carry no bucket list (reports draw histograms per loop only).
        let lateness = totals.lateness.summary(withBuckets: false), beyond = totals.beyondTolerance.summary(withBuckets: false)
        return TraceSummary.TimerSummary(timerID: timerID, label: label, loopID: loopID, firings: totals.firings,
                                         missed: totals.missed, toleranceNanoseconds: tolerance, intervalNanoseconds: interval,
                                         lateness: lateness, beyondTolerance: beyond,
                                         withinTolerance: totals.firings > 0 ? Double(totals.withinTolerance) / Double(totals.firings) : 1,
                                         driftNanosecondsPerSecond: trend.slope, lateFirings: totals.lateFirings,
                                         lateFiringCauses: totals.lateCauses, lostEventsAffecting: 0)
    }
}

/// The least-squares slope of y over x, in constant memory (a timer's lateness over seconds of its run: drift).
struct LinearTrend {
    private var n = 0.0, sumX = 0.0, sumY = 0.0, sumXX = 0.0, sumXY = 0.0

    mutating func add(x: Double, y: Double) {
        n += 1; sumX += x; sumY += y; sumXX += x * x; sumXY += x * y
    }

    /// 0 until two points with different x.
    var slope: Double {
        let denominator = n * sumXX - sumX * sumX
        return n >= 2 && denominator > 1e-12 ? (n * sumXY - sumX * sumY) / denominator : 0
    }
}
