import CRunLoopNIO
import NIOCore
import RunLoopCore

extension NIOLoopTracing {
    /// Times each inbound I/O event of a channel through the rest of its pipeline (`nio_io` events): NIO's own
    /// tick info counts this work as sleep, so this is what shows a handler that blocks its loop in
    /// `channelRead`. Add one per channel, first in the pipeline:
    ///
    /// ```swift
    /// .childChannelInitializer { channel in
    ///     channel.pipeline.addHandler(NIOLoopTracing.ChannelHandler(label: "http")).flatMap { … }
    /// }
    /// ```
    ///
    /// The channel appears in traces as "LABEL REMOTE-ADDRESS". On a loop of a group
    /// ``makeEventLoopGroup(numberOfThreads:)`` made with no sink installed it removes itself from the pipeline;
    /// elsewhere, with no sink installed, each event costs one load and one branch.
    public final class ChannelHandler: ChannelInboundHandler, RemovableChannelHandler {
        public typealias InboundIn = NIOAny
        public typealias InboundOut = NIOAny

        private let label: String
        /// The channel's trace id (0 until first traced), kept across sinks.
        private var channelID: UInt64 = 0
        /// The sink the channel's label was given to (its address), 0 for none.
        private var labeledSink: UInt = 0

        public init(label: String) {
            _ = NIOLoopTracing.tracerFromEnvironment
            self.label = label
        }

        public func handlerAdded(context: ChannelHandlerContext) {
            // On a loop of a group made with no sink (the program is not being recorded): a hop less per event.
            if LoopEventSink.current == nil && rlnio_current_thread_state()!.pointee.untraced != 0 {
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            }
        }

        public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard let sink = LoopEventSink.current else { return context.fireChannelRead(data) }
            let start = monotonicNanoseconds()
            context.fireChannelRead(data)
            emit(.read, context: context, sink: sink, start: start)
        }

        public func channelReadComplete(context: ChannelHandlerContext) {
            guard let sink = LoopEventSink.current else { return context.fireChannelReadComplete() }
            let start = monotonicNanoseconds()
            context.fireChannelReadComplete()
            emit(.readComplete, context: context, sink: sink, start: start)
        }

        public func channelActive(context: ChannelHandlerContext) {
            guard let sink = LoopEventSink.current else { return context.fireChannelActive() }
            let start = monotonicNanoseconds()
            context.fireChannelActive()
            emit(.active, context: context, sink: sink, start: start)
        }

        public func channelInactive(context: ChannelHandlerContext) {
            guard let sink = LoopEventSink.current else { return context.fireChannelInactive() }
            let start = monotonicNanoseconds()
            context.fireChannelInactive()
            emit(.inactive, context: context, sink: sink, start: start)
        }

        public func channelWritabilityChanged(context: ChannelHandlerContext) {
            guard let sink = LoopEventSink.current else { return context.fireChannelWritabilityChanged() }
            let start = monotonicNanoseconds()
            context.fireChannelWritabilityChanged()
            emit(.writabilityChanged, context: context, sink: sink, start: start)
        }

        public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard let sink = LoopEventSink.current else { return context.fireUserInboundEventTriggered(event) }
            let start = monotonicNanoseconds()
            context.fireUserInboundEventTriggered(event)
            emit(.userEvent, context: context, sink: sink, start: start)
        }

        public func errorCaught(context: ChannelHandlerContext, error: any Error) {
            guard let sink = LoopEventSink.current else { return context.fireErrorCaught(error) }
            let start = monotonicNanoseconds()
            context.fireErrorCaught(error)
            emit(.error, context: context, sink: sink, start: start)
        }

        @inline(__always)
        private func emit(_ event: LoopEventSink.NIOEvent, context: ChannelHandlerContext, sink: LoopEventSink, start: UInt64) {
            let end = monotonicNanoseconds()
            // Announced before the label and the event: a reader meets the loop before anything on it.
            let loopID = LoopAnnouncement.loopID(for: sink)
            let sinkBits = UInt(bitPattern: Unmanaged.passUnretained(sink).toOpaque())
            if labeledSink != sinkBits {
                labelChannel(context: context, sink: sink, sinkBits: sinkBits)
            }
            sink.nioIO(loopID: loopID, channelID: channelID, event: event, start: start, end: end)
        }

        @inline(never)
        private func labelChannel(context: ChannelHandlerContext, sink: LoopEventSink, sinkBits: UInt) {
            if channelID == 0 { channelID = LoopEventSink.makeID() }
            labeledSink = sinkBits
            sink.itemLabeled(id: channelID, kind: .channel, label: "\(label) \(Self.describe(context.channel.remoteAddress))")
        }

        /// "127.0.0.1:54321", "[::1]:54321", a socket path, or "-" for a channel with no peer (yet).
        static func describe(_ address: SocketAddress?) -> String {
            guard let address else { return "-" }
            switch address {
            case .v4:
                return "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
            case .v6:
                return "[\(address.ipAddress ?? "?")]:\(address.port ?? 0)"
            case .unixDomainSocket:
                return address.pathname ?? "unix"
            }
        }
    }
}
