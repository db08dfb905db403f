import Foundation
import TraceModel

/// The LTTng live sessions a relay daemon serves (`lttng create --live`, `rlctl record --relayd`), as its live
/// protocol lists them: what ``LTTngLiveReader`` follows.
public struct LiveSession: Sendable, Equatable {
    /// `net://RELAY[:LIVE_PORT]/host/HOSTNAME/SESSION`.
    public var url: String
    public var host: String
    public var name: String
    /// Streams the session has so far (0 until a traced process emitted), and viewers attached to it.
    public var streams: Int
    public var clients: Int

    /// Why a session with a viewer cannot be followed.
    public static let followedElsewhere = "another viewer follows it (a relay daemon lets one viewer follow a session at a time)"
}

public enum LiveSessions {
    /// The sessions on the relay daemon at `relay` (`net://HOST[:LIVE_PORT]`), as its live protocol lists them
    /// (with those another viewer follows).
    /// - Throws: ``TraceReadError`` saying why, when the relay cannot be reached or does not answer.
    public static func list(relay: String, timeout: Duration = .seconds(10)) throws(TraceReadError) -> [LiveSession] {
        let base = relay.hasSuffix("/") ? String(relay.dropLast()) : relay
        return try RelayViewerConnection(relay: relay, timeout: timeout).listSessions().map {
            LiveSession(url: "\(base)/host/\($0.host)/\($0.name)", host: $0.host, name: $0.name,
                        streams: Int($0.streams), clients: Int($0.clients))
        }
    }
}
