// Builds librlctl-wait-interposer.so, the library `rlctl record --any` preloads into any program to record its
// libc wait calls (issue 13), into the CWaitInterposer target's resources.
//
// A build-tool plugin for the same reasons as LTTngProviderBuilder's (read its header): SwiftPM builds a dynamic
// library product only for `swift build` of the whole package, while a target's build command runs whenever
// anything linking the target is built, and its output lands in `<package>_CWaitInterposer.resources` beside
// every executable and test bundle, where rl_wait_interposer_path() looks.
//
// The library is C only, with no Swift runtime and no liblttng-ust (the LTTng provider is dlopen'ed when a
// recording asks for it): it is loaded into programs that know nothing of either. It is built from
// Sources/CWaitInterposer/interposer/*.c with the embedded recorder (CRecorder.c, compiled inside
// interposer/recorder_unit.c with RLREC_ALLOC_MMAP) and the schema table, optimized in every configuration
// (its wrappers are on every wait of the recorded program), and exports only the wrapped libc functions.
import Foundation
import PackagePlugin

@main
struct WaitInterposerBuilder: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        // (Target.directoryURL needs tools version 6.1; the package is 6.0, and the plugin serves one target.)
        let sources = context.package.directoryURL.appending(path: "Sources")
        let interposerFolder = sources.appending(path: "\(target.name)/interposer")
        let recorderFolder = sources.appending(path: "CRecorder")
        let schemaFolder = sources.appending(path: "CTraceSchema")
        let tracepointsFolder = sources.appending(path: "CRunLoopTracepoints")
        let interposerFiles = try FileManager.default
            .contentsOfDirectory(atPath: interposerFolder.path)
            .sorted()
            .map { interposerFolder.appending(path: $0) }
        let compiled = interposerFiles.filter { $0.pathExtension == "c" } + [schemaFolder.appending(path: "rl_schema.c")]
        // Every file the library is built from, so that SwiftPM rebuilds it when any of them changes.
        let inputs = interposerFiles + [
            recorderFolder.appending(path: "CRecorder.c"),
            recorderFolder.appending(path: "include/CRecorder.h"),
            schemaFolder.appending(path: "rl_schema.c"),
            schemaFolder.appending(path: "include/rl_schema.h"),
            schemaFolder.appending(path: "include/runloop_events.def"),
            tracepointsFolder.appending(path: "provider/rl_provider_abi.h"),
            tracepointsFolder.appending(path: "include/rl_tracepoints.h"),
        ]
        let output = context.pluginWorkDirectoryURL.appending(path: "librlctl-wait-interposer.so")
        var arguments = [
            "-shared", "-fPIC", "-O2", "-g", "-std=gnu11", "-Wall", "-Wextra",
            // Only the wrappers are exported (they are marked); everything else, the recorder included, stays
            // private to the library, so it cannot clash with a program's own symbols (rlctl's own recorder).
            "-fvisibility=hidden", "-Wl,--no-undefined", "-Wl,-soname,librlctl-wait-interposer.so",
            "-DRLREC_ALLOC_MMAP",
            "-I", interposerFolder.path,
            "-I", recorderFolder.path, "-I", recorderFolder.appending(path: "include").path,
            "-I", schemaFolder.appending(path: "include").path,
            "-I", tracepointsFolder.path,
            "-o", output.path,
        ]
        arguments += compiled.map(\.path)
        arguments += ["-ldl", "-lpthread"]
        return [
            .buildCommand(displayName: "Building the wait interposer (librlctl-wait-interposer.so)",
                          executable: try context.tool(named: "clang").url, arguments: arguments,
                          inputFiles: inputs, outputFiles: [output]),
        ]
    }
}
