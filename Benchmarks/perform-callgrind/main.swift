import Glibc
import RunLoopCore
import Synchronization

// One producer thread performs no-op blocks into a loop running run(mode:timeout:) on its own thread, as issue 30's
// throughput harness does, for instruction counts under callgrind (perform-callgrind.sh builds it against any
// commit's RunLoopCore). Arguments: blocks (200,000), blocks per burst (64), most blocks waiting before the
// producer yields (65,536). Only the public API of every RunLoopCore version since 1da2ad2 is used.
let arguments = CommandLine.arguments.dropFirst().map { Int($0)! }
let total = arguments.first ?? 200_000
let batch = arguments.count > 1 ? arguments[1] : 64
let backlog = arguments.count > 2 ? arguments[2] : 65_536

final class State: @unchecked Sendable {
    let executed = Atomic<Int>(0)
    let ready = Atomic<Bool>(false)
    var loop: Loop?
}
enum Shared {
    static let state = State()
    static let block: @Sendable () -> Void = { Shared.state.executed.wrappingAdd(1, ordering: .relaxed) }
}
let state = Shared.state
let block = Shared.block

nonisolated func loopThread(_: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let loop = Loop.current
    let keepAlive = LoopSource {}
    loop.add(keepAlive, forMode: .default)
    Shared.state.loop = loop
    Shared.state.ready.store(true, ordering: .releasing)
    loop.run(mode: .default, timeout: .seconds(3600))
    keepAlive.invalidate()
    return nil
}
var thread = pthread_t()
pthread_create(&thread, nil, loopThread, nil)
while !state.ready.load(ordering: .acquiring) { sched_yield() }
let loop = state.loop!
var submitted = 0
while submitted < total {
    for _ in 0..<batch { loop.perform(block) }
    submitted += batch
    while submitted - state.executed.load(ordering: .relaxed) > backlog { sched_yield() }
}
while state.executed.load(ordering: .relaxed) < submitted { sched_yield() }
loop.perform { loop.stop() }
pthread_join(thread, nil)
print("blocks \(state.executed.load(ordering: .relaxed))")
