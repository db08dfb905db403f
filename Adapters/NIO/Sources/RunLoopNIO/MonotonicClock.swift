import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the clock of every trace timestamp, and the one NIO's `NIODeadline` reads on
/// Linux (`NIODeadline.timeNow()` calls `clock_gettime(CLOCK_MONOTONIC)`), so ticks and these stamps compare.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}
