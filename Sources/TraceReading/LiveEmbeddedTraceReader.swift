import Glibc
import TraceModel

/// Follows an embedded trace while its recorder writes it (`rlctl top`): each ``poll()`` returns the events of the
/// packets written since the last one. The writer moves a thread's packet to disk when it is full or, by default,
/// at the thread's first event 100 ms after the packet began, so events arrive a few hundred milliseconds late at
/// most while a loop is active.
///
/// A view starts where the trace is when it attaches (``skipPast()``): earlier packets are neither read nor
/// counted as lost; ``names()`` reads only each stream's first packet, where a thread's loops are named.
/// Threads that start later bring new stream files, picked up at each poll. Events come in timestamp order
/// within a poll; a poll's events may be older than another thread's from the poll before (each thread's packets
/// close on their own schedule): the figures `rlctl top` shows are per thread, so that does not matter there.
public final class LiveEmbeddedTraceReader {
    public let path: String
    /// The recording process: an embedded trace's events carry no process id, and every one is this process's.
    public let processID: Int32
    public private(set) var health = TraceHealth()
    private let uuid: [UInt8]
    private let plan: DecodingPlan
    private var streams: [String: StreamCursor] = [:]

    public init(path: String, processID: Int32 = 0) throws(TraceReadError) {
        self.path = path
        self.processID = processID
        (uuid, plan, _) = try EmbeddedTraceReader.decodingSetUp(path)
    }

    /// Whether the recording has stopped (its end file is there) and everything it wrote was polled.
    public var ended: Bool {
        var isDirectory = false
        return EmbeddedTraceReader.exists(path + "/" + TraceSchema.endFileName, isDirectory: &isDirectory)
    }

    /// The naming events (`loop_create`, `loop_adapted`, `item_label`, `wait_thread`) of each stream's first packet.
    public func names() throws(TraceReadError) -> [TraceEvent] {
        var events: [TraceEvent] = []
        var scratch = TraceHealth()
        for name in try EmbeddedTraceReader.streamFiles(in: path) {
            let cursor = try openStream(name)
            while try cursor.advance(health: &scratch), cursor.currentPacketOffset == 0 {
                guard let event = try cursor.decodeCurrent() else { continue }
                switch event.payload {
                case .loopCreate, .loopAdapted, .itemLabel, .waitThread: events.append(event)
                default: break
                }
            }
        }
        return events
    }

    /// Passes over every packet on disk now: the view starts here. A stream that appears later (a thread that
    /// started since) is read from its start.
    public func skipPast() throws(TraceReadError) {
        try followNewStreams(fromTheirEnd: true)
    }

    /// The events of every packet completed since the last poll, in timestamp order.
    public func poll() throws(TraceReadError) -> [TraceEvent] {
        try followNewStreams(fromTheirEnd: false)
        var events: [TraceEvent] = []
        var streamsWithEvents = 0
        for cursor in streams.values {
            let before = events.count
            while try cursor.advance(health: &health) {
                if let event = try cursor.decodeCurrent() {
                    events.append(event)
                    health.eventsRead += 1
                } else {
                    health.eventsSkipped += 1
                }
            }
            if events.count > before { streamsWithEvents += 1 }
        }
        // Each stream's events are in order already: one busy thread's (the usual case) need no sort.
        if streamsWithEvents > 1 { events.sort { $0.timestamp < $1.timestamp } }
        return events
    }

    /// Follows the stream files not followed yet, from their start or from their end.
    private func followNewStreams(fromTheirEnd: Bool) throws(TraceReadError) {
        for name in try EmbeddedTraceReader.streamFiles(in: path) where streams[name] == nil {
            let cursor = try openStream(name)
            if fromTheirEnd { try cursor.skipToEnd() }
            streams[name] = cursor
        }
    }

    private func openStream(_ name: String) throws(TraceReadError) -> StreamCursor {
        // A recording being written may end mid-packet: that packet is read once it is whole.
        let cursor = try StreamCursor(path: path + "/" + name, uuid: uuid, plan: plan, mayEndMidPacket: true)
        cursor.processID = processID
        return cursor
    }
}
