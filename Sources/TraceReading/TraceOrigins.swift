import Foundation
import TraceModel

/// Where the traces under one folder came from: a relay daemon's output folder (`lttng-relayd -o DIR`) holds
/// `DIR/<hostname>/<session>-<date>/…` for every host that streamed to it, and each host's loops must be
/// summarized apart (loop ids restart in every process, and hosts' monotonic clocks are unrelated).
///
/// The host and the session come from each trace's own metadata (`env { hostname = …; trace_name = …; }`, which
/// LTTng and the embedded recorder both write), not from folder names, so a folder copied or renamed still
/// groups right. Snapshots are the exception: each is a copy of the same ring at another moment, so two of one
/// session overlap, and merging them would count every event they share twice. Each snapshot is an origin of
/// its own, named by its folder: an embedded recorder's says so in its end file (`snapshot_written_at`), and an
/// LTTng snapshot is the folder LTTng names `snapshot-N-DATE-TIME-M` (`lttng snapshot record`, and the
/// trigger's snapshots) with the trace folders under it.
public struct TraceOrigin: Sendable, Equatable {
    /// The machine that recorded (its hostname when it recorded), "" when the metadata does not say.
    public var host: String
    /// The LTTng session's name ("" for the embedded recorder, whose traces have none).
    public var session: String
    /// The trace folders (absolute paths, sorted) recorded by that host in that session.
    public var directories: [String]
    /// How the origin is shown and selected (`--host`): the host alone, or `host/session` when that host sent
    /// several sessions; a snapshot's folder.
    public var name: String
    /// Whether it is one snapshot (its name is then its folder).
    public var isSnapshot: Bool
    /// The kernel view recorded with it (``TraceSchema/kernelViewFolder``), read with its traces.
    public var kernelView: String?
    /// The wait calls the kernel recorded with it (``TraceSchema/kernelWaitsFolder``), read with its traces.
    public var kernelWaits: String?

    public init(host: String, session: String, directories: [String], name: String, isSnapshot: Bool = false, kernelView: String? = nil) {
        self.host = host
        self.session = session
        self.directories = directories
        self.name = name
        self.isSnapshot = isSnapshot
        self.kernelView = kernelView
    }
}

public enum TraceOrigins {
    /// The origins of the traces at or under `path`, in order of name; one origin for an ordinary trace folder.
    /// - Throws: ``TraceReadError`` when the path is missing or holds no trace (as ``CTFTraceFolders``).
    public static func find(at path: String) throws(TraceReadError) -> [TraceOrigin] {
        let directories = try CTFTraceFolders.find(at: path)
        var groups: [String: (host: String, session: String, directories: [String])] = [:]
        var unknown: [TraceOrigin] = []
        var snapshots: [String: (host: String, session: String, folder: String, directories: [String])] = [:]
        let root = directories.count == 1 ? "" : URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path + "/"
        for directory in directories {
            let environment = metadataEnvironment(of: directory)
            guard let host = environment["hostname"] else {
                // An unreadable or cut-off metadata file (a relay daemon that died before it wrote any) says
                // nothing: the folder stands alone, named by where it is, and its reader says what is wrong.
                let name = directory.hasPrefix(root) ? String(directory.dropFirst(root.count)) : directory
                unknown.append(TraceOrigin(host: "", session: "", directories: [directory], name: name))
                continue
            }
            let session = environment["trace_name"] ?? ""
            if let snapshot = snapshotFolder(of: directory, under: root) {
                snapshots["\(host)\u{0}\(session)\u{0}\(snapshot)", default: (host, session, snapshot, [])].directories.append(directory)
                continue
            }
            groups["\(host)\u{0}\(session)", default: (host, session, [])].directories.append(directory)
        }
        let sessionsPerHost = Dictionary(grouping: groups.values, by: \.host).mapValues(\.count)
        let named = groups.values.map { group in
            let name = sessionsPerHost[group.host, default: 0] > 1 ? "\(group.host)/\(group.session)" : group.host
            return TraceOrigin(host: group.host, session: group.session, directories: group.directories.sorted(), name: name)
        }
        let taken = snapshots.values.map { snapshot in
            TraceOrigin(host: snapshot.host, session: snapshot.session, directories: snapshot.directories.sorted(),
                        name: snapshot.folder, isSnapshot: true)
        }
        var origins = (unknown + named + taken).sorted { ($0.name, $0.directories.first ?? "") < ($1.name, $1.directories.first ?? "") }
        // A trace's parts (its kernel view, the kernel's wait calls) belong to the recording whose folder they are in:
        // inside an embedded trace's folder, or in an LTTng recording's output folder, above its trace folders
        // (…/ust/uid/0/64-bit). Found from each origin's first folder up to the folder searched, never in a folder
        // above another origin's traces (which recording's would they be?), unless it is the only one.
        let searched = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        for index in origins.indices where !origins[index].isSnapshot {
            guard let first = origins[index].directories.first else { continue }
            let others = origins.indices.filter { $0 != index }.flatMap { origins[$0].directories }
            var folder = first
            while true {
                let shared = others.contains { $0 == folder || $0.hasPrefix(folder + "/") }
                if !shared || origins.count == 1 {
                    let view = TraceParts.kernelView(besides: folder), waits = TraceParts.kernelWaits(besides: folder)
                    if view != nil || waits != nil {
                        origins[index].kernelView = view
                        origins[index].kernelWaits = waits
                        break
                    }
                }
                guard folder != searched, folder.hasPrefix(searched + "/"), let slash = folder.lastIndex(of: "/") else { break }
                folder = String(folder[..<slash])
            }
        }
        return origins
    }

    /// The snapshot `directory` belongs to, as a path relative to `root` (the folder searched; "" when it is the
    /// trace itself), or nil when it is no snapshot.
    static func snapshotFolder(of directory: String, under root: String) -> String? {
        let relative = root.isEmpty || !directory.hasPrefix(root) ? "" : String(directory.dropFirst(root.count))
        if let end = try? EmbeddedTraceReader.readPrefix(of: directory + "/" + TraceSchema.endFileName, bytes: 256),
           end.contains("snapshot_written_at") {
            return relative.isEmpty ? URL(fileURLWithPath: directory).lastPathComponent : relative
        }
        // LTTng's snapshot folder is an ancestor of its trace folders (…/snapshot-1-20261125-171940-0/ust/uid/0/64-bit).
        let components = relative.split(separator: "/")
        guard let index = components.firstIndex(where: isLTTngSnapshotName) else { return nil }
        return components[...index].joined(separator: "/")
    }

    /// `snapshot-N`, the name rlctl gives an LTTng snapshot's folder once the recording ends (its order), or
    /// `snapshot-N-YYYYMMDD-HHMMSS-M`, LTTng's own name for it (kept where the rename could not be made).
    static func isLTTngSnapshotName(_ name: Substring) -> Bool {
        let parts = name.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 5, parts[0] == "snapshot" else { return false }
        let digits = parts.dropFirst().map { $0.allSatisfy(\.isNumber) && !$0.isEmpty }
        return !digits.contains(false) && (parts.count == 2 || (parts[2].count == 8 && parts[3].count == 6))
    }

    /// The origins `selection` names (a host, or `host/session`), or all of them when it is nil.
    /// - Throws: ``TraceReadError`` naming the hosts there are when none matches.
    public static func find(at path: String, selecting selection: String?) throws(TraceReadError) -> [TraceOrigin] {
        let origins = try find(at: path)
        guard let selection else { return origins }
        let chosen = origins.filter { $0.name == selection || $0.host == selection }
        guard !chosen.isEmpty else {
            let known = origins.map { $0.name.isEmpty ? "(unnamed)" : $0.name }.joined(separator: ", ")
            throw TraceReadError(path: path, reason: "no trace from host \"\(selection)\" here (the traces come from: \(known))")
        }
        return chosen
    }

    /// The string settings of a trace's `env` block. LTTng's metadata file is packetized (binary packet headers
    /// between stretches of text), but the block sits whole in its first packet.
    static func metadataEnvironment(of directory: String) -> [String: String] {
        guard let head = try? EmbeddedTraceReader.readPrefix(of: directory + "/metadata", bytes: 16_384),
              let start = head.range(of: "env {") else { return [:] }
        let block = head[start.upperBound...].prefix { $0 != "}" }
        var settings: [String: String] = [:]
        for line in block.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            guard value.hasPrefix("\""), let end = value.dropFirst().firstIndex(of: "\"") else { continue }
            settings[parts[0].trimmingCharacters(in: .whitespaces)] = String(value[value.index(after: value.startIndex)..<end])
        }
        return settings
    }
}

extension TraceReaders {
    /// A reader for one origin's traces (``TraceOrigins``): the embedded reader for a single embedded trace, else
    /// the CTF reader over its folders.
    public static func open(_ origin: TraceOrigin) throws(TraceReadError) -> any TraceEventReader {
        let reader: any TraceEventReader
        if origin.directories.count == 1, EmbeddedTraceReader.recognizes(path: origin.directories[0]) {
            reader = try EmbeddedTraceReader(path: origin.directories[0])
        } else {
            reader = try CTFTraceReader(directories: origin.directories, reportedPath: origin.directories.count == 1 ? origin.directories[0] : origin.name)
        }
        var merged = reader
        if let kernelWaits = origin.kernelWaits { merged = try TracePartMergingReader(trace: merged, part: .kernelWaits(kernelWaits)) }
        guard let kernelView = origin.kernelView else { return merged }
        return try TracePartMergingReader(trace: merged, part: .kernelView(kernelView))
    }
}
