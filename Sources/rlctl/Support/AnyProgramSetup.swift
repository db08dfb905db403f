import Foundation
import Tracing

/// `rlctl record --any`'s part around the program: the checks before it starts, the interposer's recording, and
/// what rlctl says afterwards about the processes it recorded.
struct AnyProgramSetup {
    let recording: AnyProgramRecording
    private let markerFolder: String?

    init(program: String, lttng: Bool, followChildren: Bool, destination: TraceDestination) throws {
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
            recording = try AnyProgramRecording(folder: folder, tracer: tracer, followChildren: followChildren, interposer: interposer)
        } catch {
            throw Failure.input(error.description)
        }
    }

    /// Reads what the processes left, says on stderr what was lost, and completes the trace when nothing was.
    func finish(ending: GatedChild.Ending) -> AnyProgramRecording.Outcome {
        let outcome = recording.finish()
        for process in outcome.cutOff {
            warn("process \(process.pid) (\(process.name)) did not complete its recording (killed or crashed): each of its threads' last events (up to 100 ms) are missing, and the trace is marked as cut off")
        }
        for process in outcome.execsNotRecorded {
            warn("process \(process.pid) (\(process.name)) exec'd a program that was not recorded: it passed it an environment without the wait interposer (it cleared or replaced its environment), or the program cannot be preloaded into")
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
    /// Why a recording of `command` holds no wait: one line.
    func nothingRecorded(_ command: String, _ ending: GatedChild.Ending) -> String {
        if processes.isEmpty {
            return "the wait interposer never started recording in \(command), which \(ending): it did not load there (a program that replaces its environment, LD_PRELOAD included, before it execs, or a program not run through the dynamic loader), so nothing was recorded"
        }
        return "\(command) \(ending) without a single wait through libc's epoll_wait, epoll_pwait, poll, ppoll, select or pselect: it waits with raw system calls (Go's runtime does) or never waited, so there is no loop to summarize"
    }
}
