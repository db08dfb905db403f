import Glibc
import TraceModel

/// Follows an LTTng live session on a relay daemon (`net://RELAY[:LIVE_PORT]/host/HOST/SESSION`) as it records,
/// speaking the viewer protocol itself (``RelayViewerConnection``) and decoding lttng-ust's packets itself
/// (``LTTngPacketLayout``): no libbabeltrace2 and no child process, which is what lets `rlctl top` watch 100k
/// events a second for a few percent of a core.
///
/// Events come in timestamp order across the session's streams (one per CPU): an event is handed out only once
/// every stream still open has shown, by a packet or by the relay's inactivity beacon, that it has nothing
/// earlier. The reading starts where the session is when it attaches (the relay sends no past): discards and
/// packet numbers before that are not this reader's losses.
public final class LTTngLiveReader {
    public let url: String
    public private(set) var health = TraceHealth()
    private let connection: RelayViewerConnection
    private let sessionID: UInt64
    /// One trace of the session (a per-UID session has one per bitness and user): its metadata stream and what
    /// decoding its packets takes.
    private final class Trace {
        let metadataStream: UInt64
        var metadata: [UInt8] = []
        var layout: LTTngPacketLayout?
        var decoder: PayloadDecoder?
        /// Why the metadata that arrived so far cannot be read: said when a packet needs it.
        var problem: TraceReadError?

        init(metadataStream: UInt64) { self.metadataStream = metadataStream }
    }
    /// By trace id.
    private var traces: [UInt64: Trace] = [:]
    /// The data streams, in the order they came.
    private var ordered: [DataStream] = []
    private var wantsNewStreams = false
    private var sessionEnded = false
    private var closed = false

    /// One data stream: its events decoded and not handed out yet (in order), and how far it is known.
    private final class DataStream {
        let id: UInt64
        let traceID: UInt64
        var events: [TraceEvent] = []
        var next = 0
        /// The time up to which this stream has shown everything (its last packet's end, or a beacon).
        var knownUntil: UInt64 = 0
        var lastTimestamp: UInt64 = 0
        var lastDiscarded: UInt64?
        var lastSequence: UInt64?
        var hungUp = false
        /// Since when the relay has had nothing for it, not even an inactivity beacon (nil: it answered).
        var silentSince: ContinuousClock.Instant?

        init(id: UInt64, traceID: UInt64) {
            self.id = id
            self.traceID = traceID
        }
    }

    /// Connects, finds the session, attaches to it, and reads its metadata.
    /// - Throws: ``TraceReadError`` saying why: no relay, no such session, another viewer follows it.
    public init(liveSession url: String, timeout: Duration = .seconds(10)) throws(TraceReadError) {
        self.url = url
        guard let hostRange = url.range(of: "/host/") else {
            throw TraceReadError(path: url, reason: "not a live session URL (net://RELAY[:LIVE_PORT]/host/HOST/SESSION)")
        }
        let names = url[hostRange.upperBound...].split(separator: "/", maxSplits: 1).map(String.init)
        guard names.count == 2 else { throw TraceReadError(path: url, reason: "not a live session URL (net://RELAY[:LIVE_PORT]/host/HOST/SESSION)") }
        connection = try RelayViewerConnection(relay: String(url[..<hostRange.lowerBound]), timeout: timeout)
        guard let session = try connection.listSessions().first(where: { $0.host == names[0] && $0.name == names[1] }) else {
            throw TraceReadError(path: url, reason: "no such live session on the relay daemon")
        }
        sessionID = session.id
        try connection.createViewerSession()
        switch try connection.attach(session: session.id) {
        case .streams(let streams): add(streams)
        case .alreadyFollowed: throw TraceReadError(path: url, reason: LiveSession.followedElsewhere)
        case .unknown: throw TraceReadError(path: url, reason: "no such live session on the relay daemon")
        case .notLive: throw TraceReadError(path: url, reason: "not a live session")
        }
        try readMetadata()
    }

    deinit { close() }

    /// Detaches from the session at once, so that another viewer can attach (closing alone leaves the relay to
    /// notice later).
    public func close() {
        guard !closed else { return }
        closed = true
        try? connection.detach(session: sessionID)
    }

    /// What ``nextBatch(limit:)`` found.
    public enum Batch {
        /// Events in timestamp order, at least one.
        case events([TraceEvent])
        /// Nothing arrived for a moment (about 200 ms).
        case nothingYet
        /// The session was destroyed and everything it recorded has been handed out.
        case end
    }

    /// The events that can be handed out now (at most `limit`), `.nothingYet` when none came for about 200 ms, or
    /// `.end`. A batch costs its reader one call, where an event at a time would cost one per event.
    public func nextBatch(limit: Int = 4096) throws(TraceReadError) -> Batch {
        var deadline: ContinuousClock.Instant?
        while true {
            let batch = merge(limit: limit)
            if !batch.isEmpty { return .events(batch) }
            if sessionEnded { return .end }
            let now = ContinuousClock.now
            if let deadline, now >= deadline { return .nothingYet }
            if deadline == nil { deadline = now + .milliseconds(200) }
            if try !fetchRound() {
                let more = merge(limit: limit)
                if !more.isEmpty { return .events(more) }
                // Nothing new on any stream: a relay hands out packets as sub-buffers fill or at the session's
                // live timer (500 ms and more), so asking again sooner than this buys nothing but requests.
                if !sessionEnded { usleep(50_000) }
            }
        }
    }

    // ===== merging the streams =====

    /// The decoded events every open stream has shown it has nothing earlier than, in timestamp order, at most
    /// `limit`. A stream's later packets begin where its last one ended, so nothing earlier than the least of the
    /// open streams' known ends can still come.
    private func merge(limit: Int) -> [TraceEvent] {
        var horizon = UInt64.max
        if !sessionEnded {
            // A stream the relay has said nothing of for a second (two live-timer periods of rlctl's sessions, and
            // no beacon) holds the others back no longer, nor does one it has never answered for: better a rare
            // event out of order than a view that stops.
            let cutoff = ContinuousClock.now - .seconds(1)
            for stream in ordered where !stream.hungUp && (stream.silentSince.map { $0 > cutoff } ?? true) {
                horizon = min(horizon, stream.knownUntil)
            }
        }
        var batch: [TraceEvent] = []
        while batch.count < limit {
            // The stream with the earliest event, and the next earliest head: its run up to that goes out at once.
            var best: DataStream?
            var first = UInt64.max, second = UInt64.max
            for stream in ordered where stream.next < stream.events.count {
                let timestamp = stream.events[stream.next].timestamp
                if timestamp < first {
                    second = first
                    first = timestamp
                    best = stream
                } else if timestamp < second {
                    second = timestamp
                }
            }
            guard let best, first <= horizon else { break }
            let bound = min(second, horizon)
            let start = best.next
            var end = start + 1
            let stop = min(best.events.count, start + limit - batch.count)
            while end < stop && best.events[end].timestamp <= bound { end += 1 }
            if batch.isEmpty && start == 0 && end == best.events.count {
                swap(&batch, &best.events)    // the whole queue: moved, not copied
                continue
            }
            batch += best.events[start..<end]
            if end == best.events.count {
                best.events.removeAll(keepingCapacity: true)
                best.next = 0
            } else {
                best.next = end
            }
        }
        health.eventsRead += UInt64(batch.count)
        return batch
    }

    // ===== fetching =====

    private func add(_ listed: [RelayViewerConnection.Stream]) {
        for stream in listed {
            if stream.isMetadata {
                if traces[stream.traceID] == nil { traces[stream.traceID] = Trace(metadataStream: stream.id) }
            } else if !ordered.contains(where: { $0.id == stream.id }) {
                ordered.append(DataStream(id: stream.id, traceID: stream.traceID))
            }
        }
    }

    private func refreshStreams() throws(TraceReadError) {
        wantsNewStreams = false
        switch try connection.newStreams(session: sessionID) {
        case .streams(let listed): add(listed)
        case .sessionEnded:
            if ordered.allSatisfy(\.hungUp) { sessionEnded = true }
        }
    }

    /// Reads the metadata that arrived for every trace. Metadata cut inside a declaration (the relay has part of
    /// it) keeps the layout read before, and is read again when more comes.
    private func readMetadata() throws(TraceReadError) {
        for trace in traces.values {
            var grew = false
            while let chunk = try connection.metadata(stream: trace.metadataStream), !chunk.isEmpty {
                trace.metadata += chunk
                grew = true
            }
            guard grew else { continue }
            let text = LTTngPacketLayout.metadataText(trace.metadata)
            guard !text.isEmpty else { continue }
            do {
                let parsed = try LTTngPacketLayout(metadata: text, path: url)
                trace.layout = parsed
                trace.decoder = PayloadDecoder(plan: parsed.plan)
                trace.problem = nil
            } catch {
                trace.problem = error
            }
        }
    }

    /// Asks every open stream for its next packet once. Returns whether any packet came.
    private func fetchRound() throws(TraceReadError) -> Bool {
        if wantsNewStreams || ordered.isEmpty { try refreshStreams() }
        var fetched = false
        for stream in ordered {
            guard !stream.hungUp else { continue }
            let id = stream.id
            let index = try connection.nextIndex(stream: id)
            if index.newMetadata { try readMetadata() }
            if index.newStreams { wantsNewStreams = true }
            if index.status != .retry { stream.silentSince = nil }
            switch index.status {
            case .ok:
                if try fetchPacket(stream, index) { fetched = true }
                stream.knownUntil = max(stream.knownUntil, nanoseconds(index.timestampEnd, of: stream))
            case .inactive:
                stream.knownUntil = max(stream.knownUntil, nanoseconds(index.timestampEnd, of: stream))
            case .retry:
                if stream.silentSince == nil { stream.silentSince = .now }
            case .hungUp, .end:
                stream.hungUp = true
            case .error:
                throw TraceReadError(path: url, reason: "the relay daemon could not index stream \(id)")
            }
        }
        if !ordered.isEmpty && ordered.allSatisfy(\.hungUp) { try refreshStreams() }
        return fetched
    }

    /// A time of `stream`'s clock in nanoseconds (the events' unit).
    private func nanoseconds(_ cycles: UInt64, of stream: DataStream) -> UInt64 {
        guard let frequency = traces[stream.traceID]?.layout?.frequency, frequency != 1_000_000_000 else { return cycles }
        return LTTngPacketLayout.nanoseconds(cycles, frequency: frequency)
    }

    private func fetchPacket(_ stream: DataStream, _ index: RelayViewerConnection.Index) throws(TraceReadError) -> Bool {
        guard index.packetSize % 8 == 0, index.packetSize / 8 <= UInt64(StreamCursor.maxPacketSize) else {
            throw TraceReadError(path: url, reason: "the relay daemon indexed an impossible packet size (\(index.packetSize) bits)")
        }
        for _ in 0..<50 {
            switch try connection.packet(stream: stream.id, offset: index.offset, length: UInt32(index.packetSize / 8)) {
            case .data(let bytes):
                try decode(bytes, of: stream)
                return true
            case .needsMetadata: try readMetadata()
            case .needsStreams: try refreshStreams()
            case .retry: usleep(1_000)
            case .end:
                stream.hungUp = true
                return false
            }
        }
        throw TraceReadError(path: url, reason: "the relay daemon kept a packet of stream \(stream.id) back")
    }

    // ===== decoding =====

    private func decode(_ bytes: [UInt8], of stream: DataStream) throws(TraceReadError) {
        guard let trace = traces[stream.traceID], let layout = trace.layout, let decoder = trace.decoder else {
            throw traces[stream.traceID]?.problem ?? TraceReadError(path: url, reason: "a packet of stream \(stream.id) came before its trace's metadata")
        }
        // Appended to a local array, handed back at the end: one access to the stream's queue per packet.
        var decoded: [TraceEvent] = []
        swap(&decoded, &stream.events)
        defer { swap(&decoded, &stream.events) }
        let packetFacts = try bytes.withUnsafeBytes { packet in
            Result { () throws(TraceReadError) in
                try layout.decode(packet, with: decoder, after: stream.lastTimestamp, into: &decoded, naming: "\(url): stream \(stream.id)")
            }
        }.get()
        account(stream, begin: packetFacts.begin, sequence: packetFacts.sequence, discarded: packetFacts.discarded)
        health.eventsSkipped += packetFacts.skipped
        stream.lastTimestamp = packetFacts.lastClock
    }

    /// Discards and sequence gaps since the stream's previous packet (its first packet is where the reading
    /// started: what came before is not a loss).
    private func account(_ stream: DataStream, begin: UInt64, sequence: UInt64, discarded: UInt64) {
        if let last = stream.lastDiscarded, discarded > last {
            health.eventsLost = health.eventsLost.addingLoss(discarded - last)
            health.noteLossWindow(.init(stream: "stream \(stream.id)", from: stream.lastTimestamp, to: max(begin, stream.lastTimestamp), events: discarded - last))
        }
        if let last = stream.lastSequence, sequence > last + 1 {
            health.packetsLost = health.packetsLost.addingLoss(sequence - last - 1)
            health.noteLossWindow(.init(stream: "stream \(stream.id)", from: stream.lastTimestamp, to: begin, events: 0))
        }
        stream.lastDiscarded = max(stream.lastDiscarded ?? 0, discarded)
        stream.lastSequence = sequence
    }
}
