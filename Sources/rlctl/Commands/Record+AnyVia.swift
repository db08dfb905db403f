import Analysis
import Foundation
import KernelTracing
import Tracing

/// `rlctl record --any --any-via preload|kernel|auto`: what records a program's wait calls. The interposer
/// (LD_PRELOAD) costs nothing outside the program but cannot reach a static program, nor one started with an
/// environment that lost it; the kernel (the syscall tracepoints, rlctl's kernel view) reaches every process, at a
/// cost on every system call of the machine while it records (docs/any-program.md). With auto, both: each process
/// the interposer records claims its waits (one call the probe recognizes), and the kernel records those of the
/// processes nobody claimed.
extension Record {
    struct AnyRoute {
        /// Where the kernel's wait calls go; nil when the kernel records none.
        var waits: KernelViewRecording.WaitsDestination?
        /// Beside the interposer: the token it claims a thread's waits with, this recording's own (another rlctl's
        /// kernel view, a `record --pid` of the same program, must not take those claims for its own).
        var claimToken: UInt32 = 0

        init(waits: KernelViewRecording.WaitsDestination?) {
            self.waits = waits
            if waits == .part { claimToken = UInt32.random(in: 1...0x7fff_ffff) }
        }

        /// No interposer at all.
        var byKernelAlone: Bool { waits == .trace }

        func tracerName(lttng: Bool, kernelRecorded: Int) -> String {
            if byKernelAlone { return "kernel (syscall tracepoints), any program" }
            let interposer = (lttng ? "LTTng" : "embedded recorder") + ", any program (wait interposer"
            guard kernelRecorded > 0 else { return interposer + ")" }
            return interposer + "; the kernel for \(kernelRecorded) process\(kernelRecorded == 1 ? "" : "es") it could not reach)"
        }
    }

    /// Chooses what records the waits, before anything runs: a program nothing can record is a one-line error.
    func chooseAnyRoute(kernelUnavailable: String?) throws -> AnyRoute {
        let via = anyVia ?? .auto
        var waitsUnavailable: String? {
            if kernelView.kernel == .off { return "--kernel off" }
            return kernelUnavailable ?? KernelView.unavailableReason(recordingWaits: true)
        }
        // A tracer asked for has nothing to record when the kernel records alone: said, not silently dropped.
        let tracerIgnored = tracer != .auto || subbufSize != nil || numSubbuf != nil ? " (so no tracer runs in it: --tracer and its buffers do not apply)" : ""
        switch via {
        case .preload:
            return AnyRoute(waits: nil)
        case .kernel:
            if let why = waitsUnavailable {
                throw Failure.input("--any-via kernel records the waits through the kernel view, which is not available here: \(why)")
            }
            do { _ = try ProgramInspection.inspect(command[0]) } catch {
                // A program the interposer cannot reach is fine here; one that is no program, or a 32-bit one (whose
                // system call numbers the probe does not read), is not.
                if error.kernelCanRecord == nil { throw Failure.input(error.description) }
            }
            return AnyRoute(waits: .trace)
        case .auto:
            let why = waitsUnavailable
            let program: ProgramInspection
            do { program = try ProgramInspection.inspect(command[0]) } catch {
                guard let reason = error.kernelCanRecord else { throw Failure.input(error.description) }
                guard why == nil else {
                    let instead = why == "--kernel off" ? "without --kernel off" : "(--any-via kernel), but its view is not available here: \(why!)"
                    throw Failure.input(error.description + "; the kernel could record it instead " + instead)
                }
                note("\(command[0]) is \(reason), out of LD_PRELOAD's reach: the kernel records its waits" + tracerIgnored)
                return AnyRoute(waits: .trace)
            }
            // Without the kernel's view, the interposer alone (a Go program is then explained, not recorded).
            guard why == nil else { return AnyRoute(waits: nil) }
            if program.isGo {
                note("\(command[0]) is a Go program, whose runtime waits with raw system calls the interposer does not see: the kernel records its waits" + tracerIgnored)
                return AnyRoute(waits: .trace)
            }
            // Loading the kernel's wait programs costs every system call of the machine while they are there
            // (docs/any-program.md), so only where the interposer may not reach: the programs a script or the
            // recorded program starts (or execs) can be anything.
            return AnyRoute(waits: program.script != nil || followChildren ? .part : nil)
        }
    }

    /// Says in the summary which mechanism recorded each process.
    static func describe(_ route: AnyRoute, in summary: inout TraceSummary, interposer: AnyProgramRecording.Outcome?,
                         kernel: KernelViewRecording?, outcome: KernelViewRecording.Outcome?) {
        var recorders: [TraceSummary.ProcessRecorder] = []
        for process in interposer?.processes ?? [] where process.waited {
            recorders.append(.init(pid: process.pid, process: process.name, by: .interposer))
        }
        for process in kernel?.processesRecorded ?? [] {
            // Beside the interposer, a process the kernel recorded is one it could not reach, or one whose threads wait
            // past libc; alone, the kernel was chosen (or the program is Go's).
            var why = process.unreachable
            // (A process whose program could not be looked at gets no reason rather than a guessed one.)
            if !route.byKernelAlone && why == nil && process.inspected {
                why = interposer?.processes.contains(where: { $0.pid == process.pid }) == true
                    ? "waits with raw system calls (Go's runtime does), which the interposer does not see"
                    : "started without the interposer in its environment"
            }
            recorders.append(.init(pid: process.pid, process: process.name, by: .kernel, why: why))
        }
        if summary.waits != nil { summary.waits!.recordedBy = recorders.isEmpty ? nil : recorders }
        outcome?.noteWaitsLost(in: &summary)
    }
}
