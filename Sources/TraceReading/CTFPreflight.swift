import TraceModel
import Foundation

/// Checks the parts of a CTF trace folder that libbabeltrace2 2.0 trusts without checking, before it sees them.
///
/// Found by fuzzing real LTTng traces against babeltrace2 2.0.4 (Debian 12):
/// - a packetized `metadata` file cut inside a packet makes src.ctf.fs loop for ever (its packet reader never
///   notices the end of the file);
/// - an `index/<stream>.idx` entry whose packet lies beyond the end of its stream file aborts the process (an
///   assertion in the data-file mapper).
/// Everything else — TSDL syntax, packet headers and contexts, event payloads — babeltrace2 rejects with an
/// error, which ``CTFTraceReader`` turns into a ``TraceReadError``.
///
/// It also compares the folder with the trace's own accounting: LTTng writes a packet index per stream file
/// (`index/<stream>.idx`) and one stream per CPU (`<channel>_<cpu>`); a stream file that is missing or empty while
/// its index lists packets, or a CPU missing from a channel's numbering, is damage, counted as lost packets with
/// their time window (babeltrace2 would read the rest as if it were all).
enum CTFPreflight {
    /// Checks the folder; notes the damage found (lost events and packets, their windows and what is missing) in
    /// the reader's `health`.
    static func check(traceDirectory directory: String, noting health: inout TraceHealth) throws(TraceReadError) {
        let metadata = try checkMetadata(directory + "/metadata")
        let streams = CTFTraceFolders.streamFiles(in: directory)
        for stream in streams {
            let index = directory + "/index/" + stream + ".idx"
            if CTFTraceFolders.isRegularFile(index) {
                try checkIndex(index, stream: directory + "/" + stream)
            }
        }
        noteDamage(in: directory, streams: streams, health: &health)
        let renamed = renamedSchemaEvents(in: metadata)
        if !renamed.isEmpty {
            // babeltrace2 skips events of unknown names; how many there were is not known here: at least one.
            health.damage.append("the metadata declares events under names this schema does not know and lacks the schema's \(TraceSchema.someNames(renamed)) (renamed: damaged metadata); their events are lost, how many is unknown")
            health.eventsLost = health.eventsLost.addingLoss(1)
            health.noteLossWindow(.init(stream: directory, from: 0, to: .max, events: 1))
        }
    }

    /// The schema's events a trace's metadata lacks while it declares `runloop:` events the schema does not know, or
    /// declares a schema event under another provider's name (`runl#op:run_begin`): a renamed event, whose events
    /// babeltrace2 would skip unseen. Empty otherwise (an older provider's trace lacks newer events, and declares
    /// no unknown one).
    static func renamedSchemaEvents(in data: Data) -> [String] {
        // Packetized or not, the declarations are TSDL text: `name = "runloop:timer_fire_begin";`.
        let marker = Array("name = \"".utf8)
        var declared: [(provider: Substring, event: Substring)] = []
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var index = 0
            while index + marker.count < bytes.count {
                guard bytes[index] == marker[0], bytes[index..<index + marker.count].elementsEqual(marker) else {
                    index += 1
                    continue
                }
                let start = index + marker.count
                var end = start
                while end < bytes.count, end - start < 256, bytes[end] != UInt8(ascii: "\"") { end += 1 }
                let name = String(decoding: bytes[start..<end], as: UTF8.self)
                if let colon = name.lastIndex(of: ":") {
                    declared.append((name[..<colon], name[name.index(after: colon)...]))
                }
                index = end
            }
        }
        let schema = TraceSchema.events.map(\.name)
        let runloop = Set(declared.filter { $0.provider == "runloop" }.map { String($0.event) })
        let misnamed = declared.contains { $0.provider != "runloop" && schema.contains(String($0.event)) }
        let unknown = runloop.contains { !schema.contains($0) }
        guard misnamed || unknown else { return [] }
        return schema.filter { !runloop.contains($0) }
    }

    // ===== the trace's own accounting =====

    static func noteDamage(in directory: String, streams: [String], health: inout TraceHealth) {
        let indexFolder = directory + "/index"
        let indexed = ((try? FileManager.default.contentsOfDirectory(atPath: indexFolder)) ?? [])
            .filter { $0.hasSuffix(".idx") }.map { String($0.dropLast(4)) }.sorted()
        for stream in indexed where (CTFTraceFolders.fileSize(directory + "/" + stream) ?? 0) == 0 {
            guard let packets = indexedPackets(indexFolder + "/" + stream + ".idx"), packets.count > 0 else { continue }
            let missing = streams.contains(stream) ? "is empty" : "is missing"
            health.damage.append("\(stream) \(missing) while its packet index lists \(packets.count) packet(s)")
            health.packetsLost = health.packetsLost.addingLoss(UInt64(packets.count))
            health.noteLossWindow(.init(stream: directory + "/" + stream, from: packets.from, to: packets.to, events: 0))
        }
        // Gaps in a channel's per-CPU numbering (rlctl_0, rlctl_2: rlctl_1 is gone with its index).
        var cpus: [String: Set<Int>] = [:]
        for stream in Set(streams + indexed) {
            guard let underscore = stream.lastIndex(of: "_"), let cpu = Int(stream[stream.index(after: underscore)...]),
                  cpu >= 0, cpu < 1 << 16 else { continue }
            cpus[String(stream[..<underscore]), default: []].insert(cpu)
        }
        for (channel, seen) in cpus.sorted(by: { $0.key < $1.key }) {
            let absent = (0..<(seen.max() ?? 0)).filter { !seen.contains($0) }
            guard !absent.isEmpty else { continue }
            let names = absent.prefix(8).map { "\(channel)_\($0)" }.joined(separator: ", ") + (absent.count > 8 ? ", …" : "")
            health.damage.append("\(names) \(absent.count == 1 ? "is" : "are") missing, with \(absent.count == 1 ? "its index" : "their indexes"): stream \(channel)_\(seen.max()!) exists")
            health.packetsLost = health.packetsLost.addingLoss(UInt64(absent.count))   // at least one packet each
            health.noteLossWindow(.init(stream: directory, from: 0, to: .max, events: 0))
        }
    }

    /// How many packets an index lists, and the time they cover; nil for an index that cannot be read.
    static func indexedPackets(_ path: String) -> (count: Int, from: UInt64, to: UInt64)? {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe),
              data.count >= indexHeaderSize, data.readUInt32(at: 0, bigEndian: true) == indexMagic else { return nil }
        let entrySize = Int(data.readUInt32(at: 12, bigEndian: true))
        guard entrySize >= indexEntryMinimumSize else { return nil }
        let count = (data.count - indexHeaderSize) / entrySize
        guard count > 0 else { return (0, 0, 0) }
        // timestamp_begin and timestamp_end follow offset, packet_size and content_size.
        let from = data.readUInt64(at: indexHeaderSize + 24)
        let to = data.readUInt64(at: indexHeaderSize + (count - 1) * entrySize + 32)
        return (count, min(from, to), max(from, to))
    }

    // ===== metadata =====

    /// The packetized metadata header: magic, uuid[16], checksum, content_size, packet_size (bits), then five
    /// one-byte fields (compression, encryption and checksum schemes, major, minor).
    static let metadataHeaderSize = 37
    static let metadataMagic: UInt32 = 0x75D1_1D57

    /// Checks the metadata file and returns its bytes.
    static func checkMetadata(_ path: String) throws(TraceReadError) -> Data {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe)
        } catch {
            throw TraceReadError(path: path, reason: "cannot read the metadata file: \(error.localizedDescription)")
        }
        guard !data.isEmpty else { throw TraceReadError(path: path, offset: 0, reason: "the metadata file is empty") }
        guard data.count >= 4 else {
            throw TraceReadError(path: path, offset: 0, reason: "the metadata file is truncated (\(data.count) bytes)")
        }
        let little = data.readUInt32(at: 0, bigEndian: false)
        let bigEndian: Bool
        if little == metadataMagic {
            bigEndian = false
        } else if data.readUInt32(at: 0, bigEndian: true) == metadataMagic {
            bigEndian = true
        } else {
            return data   // TSDL text: babeltrace2's parser reports its own errors
        }
        var offset = 0
        var packet = 0
        while offset < data.count {
            let remaining = data.count - offset
            guard remaining >= metadataHeaderSize else {
                throw TraceReadError(path: path, offset: UInt64(offset),
                                     reason: "truncated metadata: packet \(packet) has \(remaining) of its \(metadataHeaderSize) header bytes")
            }
            guard data.readUInt32(at: offset, bigEndian: bigEndian) == metadataMagic else {
                throw TraceReadError(path: path, offset: UInt64(offset),
                                     reason: "corrupt metadata: packet \(packet) does not start with the metadata magic number")
            }
            let contentBits = data.readUInt32(at: offset + 24, bigEndian: bigEndian)
            let packetBits = data.readUInt32(at: offset + 28, bigEndian: bigEndian)
            guard contentBits % 8 == 0, packetBits % 8 == 0, Int(contentBits / 8) >= metadataHeaderSize,
                  contentBits <= packetBits else {
                throw TraceReadError(path: path, offset: UInt64(offset + 24),
                                     reason: "corrupt metadata: packet \(packet) has content size \(contentBits) bits and packet size \(packetBits) bits")
            }
            let contentBytes = Int(contentBits / 8)
            guard contentBytes <= remaining else {
                throw TraceReadError(path: path, offset: UInt64(data.count),
                                     reason: "truncated metadata: packet \(packet) needs \(contentBytes) bytes from byte \(offset), the file ends after \(remaining)")
            }
            offset += Int(packetBits / 8)
            packet += 1
        }
        return data
    }

    // ===== packet index =====

    /// LTTng's packet index (`index/<stream>.idx`), all big-endian: a 16-byte header (magic, major, minor, entry
    /// size), then one entry per packet starting with offset, packet_size and content_size (bits).
    static let indexMagic: UInt32 = 0xC1F1_DCC1
    static let indexHeaderSize = 16
    static let indexEntryMinimumSize = 56

    static func checkIndex(_ path: String, stream: String) throws(TraceReadError) {
        guard let streamSize = CTFTraceFolders.fileSize(stream), streamSize > 0 else { return }  // empty: ignored
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) else {
            throw TraceReadError(path: path, reason: "cannot read the packet index")
        }
        // babeltrace2 checks the header and entry size itself, and reads the stream without a bad index.
        guard data.count >= indexHeaderSize, data.readUInt32(at: 0, bigEndian: true) == indexMagic,
              data.readUInt32(at: 4, bigEndian: true) == 1 else { return }
        let entrySize = Int(data.readUInt32(at: 12, bigEndian: true))
        guard entrySize >= indexEntryMinimumSize, (data.count - indexHeaderSize) % entrySize == 0 else { return }
        let streamName = (stream as NSString).lastPathComponent
        var expected: UInt64 = 0
        var entry = 0
        var position = indexHeaderSize
        while position + entrySize <= data.count {
            let offset = data.readUInt64(at: position)
            let packetBits = data.readUInt64(at: position + 8)
            let contentBits = data.readUInt64(at: position + 16)
            let packetBytes = packetBits / 8
            let (end, overflow) = offset.addingReportingOverflow(packetBytes)
            if !overflow && offset == expected && end > streamSize && packetBits % 8 == 0 && packetBytes > 0 {
                throw TraceReadError(path: stream, offset: streamSize,
                                     reason: "truncated stream file: its packet index (index/\(streamName).idx) has packet \(entry) at bytes \(offset)..<\(end), the file has \(streamSize) bytes")
            }
            guard offset == expected, packetBits % 8 == 0, packetBytes > 0, !overflow, end <= streamSize,
                  contentBits <= packetBits else {
                throw TraceReadError(path: path, offset: UInt64(position),
                                     reason: "corrupt packet index: entry \(entry) (offset \(offset), packet size \(packetBits) bits, content size \(contentBits) bits) does not describe packet \(entry) of \(streamName) (\(streamSize) bytes; the packet should start at byte \(expected))")
            }
            expected = end
            entry += 1
            position += entrySize
        }
    }
}

fileprivate extension Data {
    func readUInt32(at offset: Int, bigEndian: Bool) -> UInt32 {
        var value: UInt32 = 0
        for index in 0..<4 {
            let byte = UInt32(self[self.startIndex + offset + index])
            value |= bigEndian ? byte << (8 * (3 - index)) : byte << (8 * index)
        }
        return value
    }

    /// A big-endian 64-bit integer.
    func readUInt64(at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in 0..<8 { value = value << 8 | UInt64(self[self.startIndex + offset + index]) }
        return value
    }
}
