import Glibc

extension TraceSchema {
    /// A new trace's UUID: random, RFC 4122 version 4 (the same in its metadata and every packet).
    public static func newUUID() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40   // version 4
        bytes[8] = (bytes[8] & 0x3F) | 0x80   // RFC 4122 variant
        return bytes
    }

    /// The metadata clock's offset now: CLOCK_REALTIME − CLOCK_MONOTONIC in ns, which maps the traces' monotonic
    /// times to the wall clock.
    public static func currentClockOffsetNanoseconds() -> Int64 {
        var realtime = timespec(), monotonic = timespec()
        clock_gettime(CLOCK_REALTIME, &realtime)
        clock_gettime(CLOCK_MONOTONIC, &monotonic)
        return (Int64(realtime.tv_sec) - Int64(monotonic.tv_sec)) * 1_000_000_000 + Int64(realtime.tv_nsec) - Int64(monotonic.tv_nsec)
    }
}
