import Foundation
import RunLoopCore

/// One recording of this process's loops with the tracer of one's choice: the one way `rlctl run`, `rlctl doctor`
/// and the tests trace.
///
/// ```swift
/// let (_, recorded) = try Recording.run(.embedded(), into: "run.rltrace") { recording in
///     // … run loops; recording.progress counts the events so far …
/// }
/// // recorded.folder holds the trace; recorded.recorder has the exact counts of recorded and lost events
/// ```
///
/// ``stop()`` may come from any thread, also while the body runs (a second Ctrl-C that must leave a complete
/// trace before the process ends): the recording stops once, and every caller gets the same outcome.
public final class Recording: @unchecked Sendable {
    /// Which tracer records, and how.
    public enum Tracer: Sendable {
        /// The embedded recorder: a CTF trace written by this process, no tracer installed.
        case embedded(EmbeddedRecorder.Options = .init())
        /// An LTTng session that traces this process only (a session daemon must answer, see
        /// ``LTTngTools/ensureSessionDaemon()``).
        case lttng(LTTngOptions = .init())
        /// An LTTng session in snapshot mode that traces this process only, and writes a snapshot into the
        /// folder each time one of its loops reports a stall (``LTTngStallSnapshots``); `Loop.stallThreshold` is
        /// set meanwhile.
        case lttngSnapshots(SnapshotOptions)
        /// The embedded recorder as a flight recorder that writes a snapshot into the folder each time one of
        /// this process's loops reports a stall the policy accepts (``EmbeddedRecorder/Options/stallSnapshots``);
        /// `Loop.stallThreshold` is set meanwhile.
        case embeddedSnapshots(StallSnapshotPolicy, EmbeddedRecorder.Options = .init())
        /// No sink: the loops run untraced, to measure what tracing itself costs.
        case none
    }

    public struct LTTngOptions: Sendable {
        /// `lttng enable-channel` options (`--subbuf-size=1M`, `--overwrite`); LTTng's default channel when empty.
        public var channelOptions: [String]
        /// How long LTTng may take to enable the tracepoints in this process.
        public var startTimeout: Duration
        /// What the session's name says it is for (`rlctl-LABEL-PID-RANDOM`, as `lttng list` shows it).
        public var label: String

        public init(channelOptions: [String] = [], startTimeout: Duration = .seconds(20), label: String = "run") {
            self.channelOptions = channelOptions
            self.startTimeout = startTimeout
            self.label = label
        }
    }

    public struct SnapshotOptions: Sendable {
        public var threshold: Duration
        public var maxSnapshots: Int
        public var minimumGap: Duration
        public var channelOptions: [String]
        /// How long LTTng may take to enable the tracepoints in this process.
        public var startTimeout: Duration

        public init(threshold: Duration, maxSnapshots: Int, minimumGap: Duration, channelOptions: [String] = [],
                    startTimeout: Duration = .seconds(20)) {
            self.threshold = threshold
            self.maxSnapshots = maxSnapshots
            self.minimumGap = minimumGap
            self.channelOptions = channelOptions
            self.startTimeout = startTimeout
        }
    }

    /// Events so far (embedded recorder only: LTTng counts in its own buffers, out of this process's sight).
    public struct Progress: Sendable, Equatable {
        public var recorded: UInt64
        public var lost: UInt64
    }

    /// What a stopped recording left.
    public struct Outcome: Sendable, Equatable {
        /// The trace folder (nil with ``Tracer/none``).
        public var folder: String?
        /// The embedded recorder's exact counts of recorded and lost events; LTTng's losses are in its trace.
        public var recorder: EmbeddedRecorder.Summary?
        /// How the embedded recorder stamped its events.
        public var clock: EmbeddedRecorder.ClockReport?
        /// The snapshots taken (``Recording/Tracer/lttngSnapshots(_:)``, ``Recording/Tracer/embeddedSnapshots(_:_:)``), oldest first.
        public var snapshots: [StallSnapshotFolder]?
        /// Why no snapshot could be taken after some point (LTTng: the trigger could not be armed again; embedded:
        /// a snapshot could not be written), if so.
        public var snapshotProblem: String?
    }

    /// The trace folder (nil with ``Tracer/none``).
    public let folder: String?
    /// The embedded recorder, for code that emits into it directly rather than through a loop.
    public let embeddedRecorder: EmbeddedRecorder?
    private let session: LTTngSession?
    private let snapshots: LTTngStallSnapshots?
    private let lock = NSLock()
    private var stopped: Result<Outcome, RecordingError>?

    private init(folder: String?, recorder: EmbeddedRecorder? = nil, session: LTTngSession? = nil,
                 snapshots: LTTngStallSnapshots? = nil) {
        self.folder = folder
        embeddedRecorder = recorder
        self.session = session
        self.snapshots = snapshots
    }

    /// Starts recording into `folder` (ignored with ``Tracer/none``) and installs the tracer's sink.
    public static func start(_ tracer: Tracer, into folder: String) throws(RecordingError) -> Recording {
        let recording: Recording
        switch tracer {
        case .none:
            recording = Recording(folder: nil, recorder: nil, session: nil)
        case .embedded(let options):
            let recorder = try startRecorder(into: folder, options: options)
            recording = Recording(folder: folder, recorder: recorder, session: nil)
            LoopEventSink.install(recorder)
        case .embeddedSnapshots(let policy, var options):
            options.stallSnapshots = policy
            let recorder = try startRecorder(into: folder, options: options)
            recording = Recording(folder: folder, recorder: recorder, session: nil)
            Loop.stallThreshold = .nanoseconds(Int64(policy.thresholdNanoseconds))
            LoopEventSink.install(recorder)
        case .lttng(let options):
            let session: LTTngSession
            do {
                session = try LTTngSession.recordThisProcess(name: LTTngSession.uniqueName(options.label), output: folder,
                                                             channelOptions: options.channelOptions, timeout: options.startTimeout)
            } catch {
                throw .lttngSetUp(error)
            }
            recording = Recording(folder: folder, recorder: nil, session: session)
            LoopEventSink.install(LTTngSink())
        case .lttngSnapshots(let options):
            let snapshots: LTTngStallSnapshots
            do {
                snapshots = try LTTngStallSnapshots(
                    session: LTTngSession.uniqueName("snapshots"), output: folder,
                    options: .init(thresholdNanoseconds: LTTngStallSnapshots.nanoseconds(options.threshold),
                                   maxSnapshots: options.maxSnapshots, minimumGap: options.minimumGap, processID: getpid(),
                                   channelOptions: options.channelOptions),
                    startTimeout: options.startTimeout)
            } catch {
                throw .lttngSetUp(error)
            }
            recording = Recording(folder: folder, snapshots: snapshots)
            Loop.stallThreshold = options.threshold
            LoopEventSink.install(LTTngSink())
        }
        return recording
    }

    private static func startRecorder(into folder: String, options: EmbeddedRecorder.Options) throws(RecordingError) -> EmbeddedRecorder {
        do {
            let recorder = try EmbeddedRecorder(directory: folder, options: options)
            try recorder.start()
            return recorder
        } catch let error as RecorderError {
            throw .recorder(error)
        } catch {
            throw .recorder(RecorderError("\(error)"))
        }
    }

    /// Records what `body` does, stopping when it returns or throws.
    public static func run<T>(_ tracer: Tracer, into folder: String,
                              _ body: (Recording) throws -> T) throws -> (value: T, outcome: Outcome) {
        let recording = try start(tracer, into: folder)
        let value: T
        do {
            value = try body(recording)
        } catch {
            _ = try? recording.stop()
            throw error
        }
        return (value, try recording.stop())
    }

    /// The embedded recorder's counts so far, as each event is recorded (nil for LTTng and none).
    public var progress: Progress? {
        embeddedRecorder.map { let p = $0.progress; return Progress(recorded: p.recorded, lost: p.lost) }
    }

    /// Uninstalls the sink, stops the tracer and completes the trace. Any thread may call it, any number of
    /// times: a later call waits for the first and returns what it returned.
    @discardableResult
    public func stop() throws(RecordingError) -> Outcome {
        lock.lock()
        defer { lock.unlock() }
        if stopped == nil { stopped = finish() }
        return try stopped!.get()
    }

    private func finish() -> Result<Outcome, RecordingError> {
        // Before the tracer stops, so no loop emits into a stopped recording.
        LoopEventSink.install(nil)
        var outcome = Outcome(folder: folder)
        if let embeddedRecorder {
            do {
                outcome.recorder = try embeddedRecorder.stop()
            } catch let error as RecorderError {
                return .failure(.recorder(error))
            } catch {
                return .failure(.recorder(RecorderError("\(error)")))
            }
            outcome.clock = embeddedRecorder.clockReport
            if embeddedRecorder.options.stallSnapshots != nil {
                Loop.stallThreshold = nil
                outcome.snapshots = outcome.recorder?.snapshots
                outcome.snapshotProblem = outcome.recorder?.snapshotProblem
            }
        }
        if let session {
            do { try session.stop() } catch { return .failure(.lttngStop(error)) }
        }
        if let snapshots {
            Loop.stallThreshold = nil
            outcome.snapshots = snapshots.finish()
            outcome.snapshotProblem = snapshots.rearmProblem
        }
        return .success(outcome)
    }
}

/// Why a recording could not start or complete.
public enum RecordingError: Error, CustomStringConvertible, Sendable {
    case recorder(RecorderError)
    case lttngSetUp(LTTngError)
    case lttngStop(LTTngError)

    public var description: String {
        switch self {
        case .recorder(let error): return error.description
        case .lttngSetUp(let error): return "cannot set up the LTTng session: \(error)"
        case .lttngStop(let error): return "cannot stop the LTTng session: \(error)"
        }
    }

    /// The tracer's own words, without saying which step failed.
    public var reason: String {
        switch self {
        case .recorder(let error): return error.description
        case .lttngSetUp(let error), .lttngStop(let error): return error.description
        }
    }
}

extension Duration {
    /// Whole nanoseconds, 0 for a negative duration: the tracers' thresholds, gaps and clocks.
    var nonNegativeNanoseconds: UInt64 {
        let (seconds, attoseconds) = max(self, .zero).components
        return UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
    }
}
