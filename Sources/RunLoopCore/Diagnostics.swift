// API misuse stops the program with a message that says what the caller did wrong. `precondition` drops its
// message in optimized builds, so misuse goes through these, which print it in every build.

/// Stops the program with `message` unless `condition` holds.
@inline(__always)
func requireUsage(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                  file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { usageFailure(message(), file: file, line: line) }
}

/// Stops the program with a message naming the caller's mistake.
@inline(never)
func usageFailure(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("RunLoopCore usage error: \(message)", file: file, line: line)
}
