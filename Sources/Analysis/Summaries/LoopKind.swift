/// The kinds of loop rlctl follows, by the names `rlctl top` and the summary's `allLoops` give them.
public enum LoopKind: String, Codable, Sendable, CaseIterable {
    case runLoopCore = "RunLoopCore"
    case foundation = "Foundation"
    case nio = "NIO"
    /// Any program's wait loop (`rlctl record --any`, through the wait interposer).
    case wait
}
