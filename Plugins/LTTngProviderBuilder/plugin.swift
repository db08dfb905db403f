// Builds librunloop-lttng-provider.so, the `runloop` LTTng-UST provider as a shared object of its own, for
// CRunLoopTracepoints (docs/lttng.md, "Loading the provider").
//
// Why a build-tool plugin and not a `.library(type: .dynamic)` product: SwiftPM builds a dynamic library
// product only with `swift build` of the whole package, never for `swift run rlctl`, `swift build --product
// runloop-demo` or a dependent package's executable, and a target cannot depend on its own package's product.
// A build command of the target is run whenever anything that links the target is built, and SwiftPM copies
// its non-source output into the target's resource folder, `<package>_CRunLoopTracepoints.resources`, next to
// every executable and test bundle it builds, which is where runloop_tracepoints.c looks for it.
//
// Package.swift applies the plugin only when it found liblttng-ust-dev (and RLCTL_DISABLE_LTTNG is unset).
// The object is built for the host with the toolchain's clang, optimized in every configuration (the probes
// are the enabled path of every event) and with debug information.
import Foundation
import PackagePlugin

@main
struct LTTngProviderBuilder: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        // (Target.directoryURL needs tools version 6.1; the package is 6.0, and the plugin serves one target.)
        let targetFolder = context.package.directoryURL.appending(path: "Sources/\(target.name)")
        let providerFolder = targetFolder.appending(path: "provider")
        let includeFolder = targetFolder.appending(path: "include")
        let source = providerFolder.appending(path: "runloop_lttng_provider.c")
        // The schema every event is expanded from (runloop_events.def), in the CTraceSchema target.
        let schemaFolder = context.package.directoryURL.appending(path: "Sources/CTraceSchema/include")
        // Every file the object is built from, so that SwiftPM rebuilds it when any of them changes.
        let inputs = [
            source,
            providerFolder.appending(path: "rl_provider_abi.h"),
            includeFolder.appending(path: "runloop_provider.h"),
            includeFolder.appending(path: "rl_tracepoints.h"),
            schemaFolder.appending(path: "runloop_events.def"),
            schemaFolder.appending(path: "runloop_events_as_calls.def"),
            schemaFolder.appending(path: "rl_schema.h"),
        ]
        let output = context.pluginWorkDirectoryURL.appending(path: "librunloop-lttng-provider.so")
        let arguments = [
            "-shared", "-fPIC", "-O2", "-g", "-std=gnu11", "-Wall", "-Wextra",
            // Only rl_lttng_provider_v1 is exported (the file marks it); -Bsymbolic binds the provider's own
            // references to its own tracepoints even when the process defines the same names (tracebench's C
            // baseline does), so the state words Swift reads are the ones these probes check.
            "-fvisibility=hidden", "-Wl,-Bsymbolic", "-Wl,--no-undefined",
            "-Wl,-soname,librunloop-lttng-provider.so",
            "-I", includeFolder.path, "-I", providerFolder.path, "-I", schemaFolder.path, "-I", "/usr/local/include",
            "-o", output.path, source.path,
            "-L", "/usr/local/lib", "-llttng-ust",
        ]
        return [
            .buildCommand(displayName: "Building the runloop LTTng provider (librunloop-lttng-provider.so)",
                          executable: try context.tool(named: "clang").url, arguments: arguments,
                          inputFiles: inputs, outputFiles: [output]),
        ]
    }
}
