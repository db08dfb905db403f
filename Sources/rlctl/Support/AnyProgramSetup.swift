import Foundation
import TraceModel
import Tracing

/// `rlctl record --any`'s part around the program: the checks before it starts, the interposer's recording, and
/// what rlctl says afterwards about the processes it recorded.
struct AnyProgramSetup {
    let recording: AnyProgramRecording
    private let markerFolder: String?
    /// The embedded recording's registration, so that `rlctl top` (and its exporter) shows the program's wait
    /// loops while it runs: rlctl registers the folder the interposer writes into, under its own pid.
    private let liveEntry: String?

    /// `claimToken`: the kernel view records the waits of the threads the interposer does not claim with it (0: none).
    init(program: String, lttng: Bool, followChildren: Bool, destination: TraceDestination, claimToken: UInt32 = 0) throws {
        do { _ = try ProgramInspection.inspect(program) } catch { throw Failure.input(error.description) }
        let interposer: String
        do { interposer = try WaitInterposerLibrary.locate() } catch { throw Failure.input(error.description) }
        let folder: String
        if lttng {
            // LTTng writes the trace; the processes' markers go to a folder of their own.
            let markers = TraceDestination.temporaryFolder("any-markers")
            folder = markers
            markerFolder = markers
            // Also when a signal ends rlctl before removeMarkerFolder runs.
            ExitCleanups.shared.add { try? FileManager.default.removeItem(atPath: markers) }
        } else {
            folder = destination.path
            markerFolder = nil
        }
        do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
            throw Failure.input("cannot create \(folder): \(error.localizedDescription)")
        }
        let tracer: AnyProgramRecording.Tracer
        if lttng {
            guard LTTngSink.isCompiledIn, let provider = LTTngSink.providerPath else {
                throw Failure.input("the LTTng provider cannot be loaded: \(LTTngSink.providerLoadError ?? "this rlctl was built without LTTng")")
            }
            tracer = .lttng(provider: provider)
        } else {
            tracer = .embedded
        }
        do {
            recording = try AnyProgramRecording(folder: folder, tracer: tracer, followChildren: followChildren, interposer: interposer,
                                                claimToken: claimToken)
        } catch {
            throw Failure.input(error.description)
        }
        if case .embedded = tracer, let entry = LiveRecordings.register(tracePath: folder) {
            liveEntry = entry
            ExitCleanups.shared.add { LiveRecordings.unregister(entry) }
        } else {
            liveEntry = nil
        }
    }

    /// Reads what the processes left, says on stderr what was lost, and completes the trace when nothing was.
    func finish(ending: GatedChild.Ending) -> AnyProgramRecording.Outcome {
        let outcome = recording.finish()
        liveEntry.map(LiveRecordings.unregister)
        for process in outcome.cutOff {
            warn("process \(process.pid) (\(process.name)) did not complete its recording (killed or crashed): each of its threads' last events (up to 100 ms) are missing, and the trace is marked as cut off")
        }
        for process in outcome.execsNotRecorded {
            warn("process \(process.pid) (\(process.name)) exec'd a program that was not recorded: it passed it an environment without the wait interposer (it cleared or replaced its environment), or the program cannot be preloaded into; --any-via kernel, or --follow-children, records such a program from the kernel's side")
        }
        if outcome.eventsDiscarded > 0 {
            warn("the recorded processes dropped \(outcome.eventsDiscarded) events (full buffers, or waits made by a signal handler while the recorder was busy); the summary's loss figures count those the trace's packets report")
        }
        if outcome.writeErrors > 0 {
            warn("\(outcome.writeErrors) packets could not be written to the trace folder (disk full?): their events are lost and counted as such")
        }
        if outcome.threadsWithoutBuffer > 0 {
            warn("\(outcome.threadsWithoutBuffer) events were dropped by threads that could not get a recording buffer (out of memory)")
        }
        return outcome
    }

    func removeMarkerFolder() {
        if let markerFolder { try? FileManager.default.removeItem(atPath: markerFolder) }
    }

    private func warn(_ text: String) {
        FileHandle.standardError.write(Data("rlctl: \(text)\n".utf8))
    }
}

extension AnyProgramRecording.Outcome {
    /// Why a recording of `command` holds no wait, as the failure to report: one line, its cause first. A program
    /// that ended badly is a failed program (status 1); one that exited 0 left an incomplete recording (3).
    func nothingRecorded(_ command: String, _ ending: GatedChild.Ending, followedChildren: Bool) -> Failure {
        let status: Status = ending.succeeded ? .incomplete : .violation
        let children = processes.reduce(0) { $0 + $1.children }
        let text: String
        if processes.isEmpty {
            text = "the wait interposer never started recording in \(command), which \(ending): it did not load there (a program that replaces its environment, LD_PRELOAD included, before it execs, or a program not run through the dynamic loader), so nothing was recorded"
        } else if !followedChildren && children > 0 {
            text = "\(command) \(ending) without a single wait through libc in its own process, but it started \(children) child process\(children == 1 ? "" : "es"), which were not recorded: its loops may be theirs (a master with workers, as nginx's); record them too with --follow-children"
        } else if processes.contains(where: \.waited) {
            text = "\(command) \(ending) before any of its waits reached the trace: its recording was cut off (each thread's last events, up to 100 ms, are written only when the process ends by exit, _exit or exec)"
        } else {
            text = "\(command) \(ending) without a single wait through libc's epoll_wait, epoll_pwait, poll, ppoll, select or pselect: it waits with raw system calls (Go's runtime does) or never waited, so there is no loop to summarize"
        }
        return Failure(message: text, status: status)
    }
}
