import Glibc
import NIOCore
import NIOPosix
import RunLoopCore
import RunLoopNIO
import Testing
import TestSupport

/// The adapter's events as a sink receives them, from real event loops. LoopEventSink.install is process-wide,
/// hence serialized.
@Suite(.serialized)
struct AdapterTests {
    /// A group whose loops are traced by `delegate`, shut down after `body`.
    func withTracedGroup<T>(threads: Int, _ body: (MultiThreadedEventLoopGroup, NIOLoopTracing.MetricsDelegate) throws -> T) throws -> T {
        let delegate = NIOLoopTracing.MetricsDelegate()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads, metricsDelegate: delegate)
        delegate.adopt(group)
        defer { try? group.syncShutdownGracefully() }
        return try body(group, delegate)
    }

    @Test func ticksCountTheirTasksAndTheirSleepIsTheGapSinceThePreviousTick() throws {
        let sink = CapturingSink()
        let tasks = 25
        try withTracedGroup(threads: 1) { group, _ in
            let loop = group.next()
            try withSink(sink) {
                // Tasks enqueued by a task run in the same tick (NIO drains its queue until it is empty, so a
                // submission that comes while the tick runs joins it too: the count is at least, not exactly, N + 1).
                try loop.submit { for _ in 0..<tasks { loop.execute {} } }.wait()
                #expect(eventually { sink.ticks.count >= 1 })
                try loop.submit {}.wait()
                #expect(eventually { sink.ticks.count >= 2 })
            }
        }
        let ticks = sink.ticks
        // Which tick it is depends on what the loop ran before the sink saw it (seen in CI: [2, 27, 2]): one tick
        // ran the task and the ones it enqueued.
        #expect(ticks.contains { $0.tasks >= UInt64(tasks + 1) }, "a tick ran the task and the \(tasks) it enqueued: \(ticks.map(\.tasks))")
        #expect(ticks.dropFirst().allSatisfy { $0.tasks >= 1 })
        for tick in ticks { #expect(tick.start <= tick.end) }
        for (previous, tick) in zip(ticks, ticks.dropFirst()) {
            #expect(tick.sleep == tick.start - previous.end, "NIO's sleep time is the gap since the previous tick ended")
        }
    }

    @Test func eachLoopIsAnnouncedOncePerSinkWithItsThreadAndGroup() throws {
        let first = CapturingSink()
        let second = CapturingSink()
        try withTracedGroup(threads: 2) { group, delegate in
            let loops = Array(group.makeIterator())
            func threadsAfterSomeTicks(_ sink: CapturingSink) throws -> [Int32] {
                var threads: [Int32] = []
                for _ in 0..<3 {
                    threads = try loops.map { try $0.submit { currentThreadID() }.wait() }
                }
                #expect(eventually { Set(sink.ticks.map(\.loopID)).count == loops.count })
                return threads
            }
            let threads = try withSink(first) { try threadsAfterSomeTicks(first) }
            let threadsAgain = try withSink(second) { try threadsAfterSomeTicks(second) }
            #expect(threads == threadsAgain)

            for sink in [first, second] {
                let creations = sink.creations
                #expect(creations.map(\.threadID).sorted() == threads.sorted(), "one loop_create per loop and sink")
                for creation in creations {
                    #expect(creation.name.hasPrefix("NIO-ELT-"), "the thread's name: \(creation.name)")
                    let adapted = sink.events.filter { if case .loopAdapted(creation.loopID, _, _) = $0 { true } else { false } }
                    #expect(adapted == [.loopAdapted(loopID: creation.loopID, adapter: .nio, groupID: delegate.groupID)])
                }
                // Announced before any tick of the loop, on the loop's own thread.
                let withThreads = sink.eventsWithThreads
                for creation in creations {
                    let announcedAt = withThreads.firstIndex { $0.event == .loopCreated(loopID: creation.loopID, threadID: creation.threadID, name: creation.name) }!
                    let firstTick = withThreads.firstIndex { if case .nioTick(creation.loopID, _, _, _, _) = $0.event { true } else { false } }!
                    #expect(announcedAt < firstTick)
                    #expect(withThreads[announcedAt].threadID == creation.threadID)
                }
            }
            // A loop keeps its id across sinks, as RunLoopCore's loops do.
            #expect(Set(first.creations.map(\.loopID)) == Set(second.creations.map(\.loopID)))
        }
    }

    @Test func aReadThatBlocksItsLoopIsOneNIOIOEventCoveringTheBlockAndCountedInTheNextTicksSleep() throws {
        let sink = CapturingSink()
        let block: UInt32 = 80_000   // µs
        let clients = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? clients.syncShutdownGracefully() }
        try withTracedGroup(threads: 1) { group, delegate in
            let server = try ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "test"))
                        try channel.pipeline.syncOperations.addHandler(BlockingReader(microseconds: block))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            defer { try? server.close().wait() }
            let serverThread = try group.next().submit { currentThreadID() }.wait()
            try withSink(sink) {
                let client = try ClientBootstrap(group: clients).connect(to: server.localAddress!).wait()
                defer { try? client.close().wait() }
                try client.writeAndFlush(client.allocator.buffer(string: "x")).wait()
                #expect(eventually { sink.reads.contains { $0.event == .read } && sink.ticks.contains { tick in
                    sink.reads.contains { $0.event == .read && tick.start >= $0.end } } })
                let clientPort = client.localAddress!.port!

                let loopID = try #require(sink.creations.first { $0.threadID == serverThread }).loopID
                #expect(sink.events.contains(.loopAdapted(loopID: loopID, adapter: .nio, groupID: delegate.groupID)))
                let read = try #require(sink.reads.first { $0.event == .read })
                #expect(read.loopID == loopID)
                #expect(read.end - read.start >= UInt64(block) * 1_000, "the read covers the \(block) µs block")
                let label = CapturingSink.Event.itemLabeled(id: read.channelID, kind: .channel, label: "test 127.0.0.1:\(clientPort)")
                let events = sink.events
                let labeledAt = try #require(events.firstIndex(of: label), "the channel is labeled: \(events)")
                #expect(labeledAt < events.firstIndex { if case .nioIO = $0 { true } else { false } }!, "labeled before its first event")
                #expect(events.filter { if case .itemLabeled = $0 { true } else { false } }.count == 1, "once per channel")
                // What the brief calls the NIO blind spot: the next tick's sleep includes the read.
                let nextTick = try #require(sink.ticks.first { $0.loopID == loopID && $0.start >= read.end })
                #expect(nextTick.sleep >= read.end - read.start)
            }
        }
    }

    @Test func aLoopWhoseGroupIsNotKnownYetIsAnnouncedByItsChannelThenAdaptedAgainWithItsGroupAtItsTick() throws {
        let sink = CapturingSink()
        let clients = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? clients.syncShutdownGracefully() }
        // No adopt(_:), and the sink installed by the read itself, in front of the tracing handler: the loop's
        // first event under the sink is that read, before any tick could tell the loop its group.
        let delegate = NIOLoopTracing.MetricsDelegate()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: delegate)
        defer { try? group.syncShutdownGracefully() }
        let served = Shared(0)
        let server = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SinkInstallingReader(sink: sink))
                    try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "late"))
                    try channel.pipeline.syncOperations.addHandler(CountingReader(count: served))
                }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? server.close().wait() }
        let client = try ClientBootstrap(group: clients).connect(to: server.localAddress!).wait()
        defer { try? client.close().wait() }
        defer { LoopEventSink.install(nil) }
        try client.writeAndFlush(client.allocator.buffer(string: "x")).wait()
        #expect(eventually { !sink.ticks.isEmpty && served.value == 1 })
        let events = sink.events
        let loopID = try #require(sink.creations.first).loopID
        let read = try #require(sink.reads.first)
        // Up to the first tick, with the read's nio_io events (read, read_complete) as one.
        let firstTick = events.firstIndex { if case .nioTick = $0 { true } else { false } } ?? events.count
        let kinds = events.prefix(firstTick + 1).map { event -> String in
            switch event {
            case .loopCreated: "loop_create"
            case .loopAdapted(_, _, let groupID): groupID == 0 ? "loop_adapted group 0" : groupID == delegate.groupID ? "loop_adapted group" : "loop_adapted other"
            case .itemLabeled: "item_label"
            case .nioIO: "nio_io"
            case .nioTick: "nio_tick"
            case .probeFire: "probe_fire"
            case .loopStall: "loop_stall"
            }
        }
        let collapsed = kinds.enumerated().filter { $0.offset == 0 || !($0.element == "nio_io" && kinds[$0.offset - 1] == "nio_io") }.map(\.element)
        #expect(collapsed == ["loop_create", "loop_adapted group 0", "item_label", "nio_io", "loop_adapted group", "nio_tick"])
        #expect(read.loopID == loopID)
        #expect(sink.creations.count == 1)
    }

    @Test func theProbeFiresOnEveryLoopAndItsLatenessShowsABlock() throws {
        let sink = CapturingSink()
        try withTracedGroup(threads: 2) { group, _ in
            try withSink(sink) {
                let probe = NIOLoopTracing.startLatenessProbe(on: group, every: .milliseconds(5))
                let loop = group.next()
                let thread = try loop.submit { currentThreadID() }.wait()
                #expect(eventually { Set(sink.probes.map(\.loopID)).count == 2 })
                loop.execute { usleep(100_000) }
                #expect(eventually { sink.probes.contains { $0.lateness >= 90_000_000 } })
                probe.stop()
                let firesAtStop = sink.probes.count
                usleep(30_000)
                #expect(sink.probes.count == firesAtStop, "no probe fires after stop()")

                let blockedLoop = try #require(sink.creations.first { $0.threadID == thread }).loopID
                let late = sink.probes.filter { $0.lateness >= 90_000_000 }
                #expect(late.allSatisfy { $0.loopID == blockedLoop }, "only the blocked loop was late")
                #expect(sink.probes.allSatisfy { $0.cost > 0 }, "each firing reports its own cost")
            }
        }
    }

    /// A tick whose task phase runs longer than Loop.stallThreshold is reported by the adapter as a stall, from
    /// the tick's own times; NIO tells no task apart, so there is no culprit. Shorter ticks say nothing.
    @Test func aTickLongerThanTheStallThresholdIsReportedAsAStall() throws {
        let sink = CapturingSink()
        try withTracedGroup(threads: 1) { group, _ in
            let loop = group.next()
            try withSink(sink) {
                // Under withSink's recordingLock: the threshold is process-wide, and MetricsTests sets its own.
                Loop.stallThreshold = .milliseconds(20)
                defer { Loop.stallThreshold = nil }
                _ = try loop.submit { usleep(1_000) }.wait()
                _ = try loop.submit { usleep(40_000) }.wait()
                #expect(eventually { sink.ticks.contains { $0.end - $0.start >= 40_000_000 } })
            }
        }
        let stalls = sink.events.compactMap { event -> (UInt64, String, UInt64, UInt64, UInt64, UInt64, LoopEventSink.Culprit)? in
            if case .loopStall(let l, let m, let i, let s, let b, let t, let c) = event { return (l, m, i, s, b, t, c) }
            return nil
        }
        let long = sink.ticks.filter { $0.end - $0.start > 20_000_000 }
        #expect(stalls.count == long.count, "one stall per tick over 20 ms: \(sink.ticks.map { $0.end - $0.start })")
        for (stall, tick) in zip(stalls, long) {
            #expect(stall.0 == tick.loopID)
            #expect(stall.1 == "nio-tasks")
            #expect(stall.3 == tick.start)
            #expect(stall.4 == tick.end - tick.start)
            #expect(stall.5 == 20_000_000)
            #expect(stall.6 == .none)
        }
        // Iterations count the loop's ticks from its first: the stall's is the long tick's place among them.
        if let stall = stalls.first, let long = long.first {
            let place = sink.ticks.filter { $0.loopID == long.loopID }.firstIndex { $0.start == long.start }!
            #expect(stall.2 == UInt64(place + 1))
        }
    }

    /// Outside `rlctl record` (no sink when the group is made) the adapter steps aside: the tracing handler removes
    /// itself from each pipeline of the group's loops, and nothing reaches a sink installed later; with a sink
    /// installed first, the handler stays and the channel's reads and the loop's ticks are traced.
    @Test func aGroupMadeWithNoSinkStepsAsideAndOneMadeWithASinkTraces() throws {
        LoopEventSink.install(nil)
        /// Whether the tracing handler was still in the pipeline when the channel read.
        func serve(_ group: MultiThreadedEventLoopGroup) throws -> Bool? {
            let clients = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try? clients.syncShutdownGracefully() }
            let seen = Shared<Bool?>(nil)
            let server = try ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "aside"))
                        try channel.pipeline.syncOperations.addHandler(PipelineInspector(seen: seen))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            defer { try? server.close().wait() }
            let client = try ClientBootstrap(group: clients).connect(to: server.localAddress!).wait()
            defer { try? client.close().wait() }
            try client.writeAndFlush(client.allocator.buffer(string: "x")).wait()
            #expect(eventually { seen.value != nil })
            return seen.value
        }
        let plain = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: 1)
        let stayed = try serve(plain)
        #expect(stayed == false, "the handler removed itself on a loop of a group made with no sink")
        try plain.syncShutdownGracefully()

        let sink = CapturingSink()
        try withSink(sink) {
            let traced = NIOLoopTracing.makeEventLoopGroup(numberOfThreads: 1)
            defer { try? traced.syncShutdownGracefully() }
            let stayed = try serve(traced)
            #expect(stayed == true)
            #expect(eventually { !sink.reads.isEmpty && !sink.ticks.isEmpty }, "the read and the loop's ticks are traced")
        }
    }

    @Test func nothingIsEmittedWithNoSinkInstalled() throws {
        let sink = CapturingSink()
        LoopEventSink.install(sink)
        LoopEventSink.install(nil)
        let clients = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? clients.syncShutdownGracefully() }
        let served = Shared(0)
        try withTracedGroup(threads: 1) { group, _ in
            let probe = NIOLoopTracing.startLatenessProbe(on: group, every: .milliseconds(1))
            defer { probe.stop() }
            let server = try ServerBootstrap(group: group)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOLoopTracing.ChannelHandler(label: "quiet"))
                        try channel.pipeline.syncOperations.addHandler(CountingReader(count: served))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            defer { try? server.close().wait() }
            let client = try ClientBootstrap(group: clients).connect(to: server.localAddress!).wait()
            try client.writeAndFlush(client.allocator.buffer(string: "x")).wait()
            #expect(eventually { served.value == 1 })
            try client.close().wait()
            for _ in 0..<10 { _ = try group.next().submit { usleep(2_000) }.wait() }
        }
        #expect(sink.events.isEmpty, "a sink no longer installed received \(sink.events.count) events")
    }
}

extension CapturingSink {
    var probes: [(loopID: UInt64, scheduled: UInt64, lateness: UInt64, cost: UInt64)] {
        events.compactMap { if case .probeFire(let l, let s, let la, let c) = $0 { return (l, s, la, c) } else { return nil } }
    }
}

/// Blocks its loop in channelRead: the mistake the adapter is there to show.
final class BlockingReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let microseconds: UInt32
    init(microseconds: UInt32) { self.microseconds = microseconds }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { usleep(microseconds) }
}

/// Installs `sink` when its channel first reads.
final class SinkInstallingReader: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let sink: LoopEventSink
    init(sink: LoopEventSink) { self.sink = sink }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if LoopEventSink.current !== sink { LoopEventSink.install(sink) }
        context.fireChannelRead(data)
    }
}

/// Notes, at the first read, whether the adapter's tracing handler is in the pipeline.
final class PipelineInspector: ChannelInboundHandler {
    typealias InboundIn = NIOAny
    let seen: Shared<Bool?>
    init(seen: Shared<Bool?>) { self.seen = seen }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let present = (try? context.pipeline.syncOperations.handler(type: NIOLoopTracing.ChannelHandler.self)) != nil
        seen.mutate { if $0 == nil { $0 = present } }
    }
}

final class CountingReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let count: Shared<Int>
    init(count: Shared<Int>) { self.count = count }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { count.mutate { $0 += 1 } }
}
