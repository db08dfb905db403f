import Glibc
import NIOCore
import NIOHTTP1

/// `GET /` answers at once; `GET /slow?ms=N` first blocks its event loop for N ms inside `channelRead` (the classic
/// mistake the adapter is there to find); `GET /metrics` answers what `metrics` renders (404 without it);
/// anything else is 404.
public final class HTTPHandler: ChannelInboundHandler {
    public typealias InboundIn = HTTPServerRequestPart
    public typealias OutboundOut = HTTPServerResponsePart

    private let metrics: (@Sendable () -> String)?

    public init(metrics: (@Sendable () -> String)? = nil) {
        self.metrics = metrics
    }

    private var request: HTTPRequestHead?

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (status, body) = answer(head)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: head.uri == "/metrics" && status == .ok ? "text/plain; version=0.0.4" : "text/plain")
        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        let keepAlive = head.isKeepAlive
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        let written = context.writeAndFlushPromise()
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        if !keepAlive {
            written.futureResult.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
        }
    }

    private func answer(_ head: HTTPRequestHead) -> (HTTPResponseStatus, String) {
        guard head.method == .GET else { return (.methodNotAllowed, "GET only\n") }
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        switch parts.first.map(String.init) ?? "/" {
        case "/":
            return (.ok, "ok\n")
        case "/metrics":
            guard let metrics else { return (.notFound, "not found\n") }
            return (.ok, metrics())
        case "/slow":
            guard let milliseconds = Self.milliseconds(in: parts.count > 1 ? parts[1] : "") else {
                return (.badRequest, "/slow needs ms=N, 0...60000\n")
            }
            usleep(UInt32(milliseconds) * 1_000)
            return (.ok, "slept \(milliseconds) ms\n")
        default:
            return (.notFound, "not found\n")
        }
    }

    private static func milliseconds(in query: Substring) -> Int? {
        for pair in query.split(separator: "&") where pair.hasPrefix("ms=") {
            if let value = Int(pair.dropFirst(3)), (0...60_000).contains(value) { return value }
        }
        return nil
    }
}

extension ChannelHandlerContext {
    fileprivate func writeAndFlushPromise() -> EventLoopPromise<Void> { eventLoop.makePromise() }
}
