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
enum CTFPreflight {
    static func check(traceDirectory directory: String) throws(TraceReadError) {
        try checkMetadata(directory + "/metadata")
        let streams = CTFTraceFolders.streamFiles(in: directory)
        for stream in streams {
            let index = directory + "/index/" + stream + ".idx"
            if CTFTraceFolders.isRegularFile(index) {
                try checkIndex(index, stream: directory + "/" + stream)
            }
        }
    }

    // ===== metadata =====

    /// The packetized metadata header: magic, uuid[16], checksum, content_size, packet_size (bits), then five
    /// one-byte fields (compression, encryption and checksum schemes, major, minor).
    static let metadataHeaderSize = 37
    static let metadataMagic: UInt32 = 0x75D1_1D57

    static func checkMetadata(_ path: String) throws(TraceReadError) {
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
            return    // TSDL text: babeltrace2's parser reports its own errors
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
