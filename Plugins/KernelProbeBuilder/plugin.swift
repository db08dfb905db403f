// Builds runloop-kernel-probe.bpf, the kernel view's BPF object (Sources/CKernelProbe/bpf), into the CKernelProbe
// target's resources, where rl_kernel_probe.c finds it (`<package>_CKernelProbe.resources`, next to every
// executable and test bundle SwiftPM builds). A build-tool plugin for the reasons LTTngProviderBuilder gives in its
// header: a target's build command runs whenever anything that links the target is built, for every product.
//
// The object is compiled with the toolchain's own clang (it has the bpf target), always optimized (the verifier
// needs it, and it runs on every context switch) and with BTF (-g), which CO-RE needs: libbpf relocates the kernel
// fields the program declares against the running kernel's BTF, so nothing kernel-specific (no vmlinux.h) is
// generated at build time; only libbpf's headers (bpf_helpers.h…) and the kernel's UAPI headers are needed.
// Package.swift applies the plugin only when it found libbpf-dev (and RLCTL_DISABLE_LIBBPF is unset).
import Foundation
import PackagePlugin

@main
struct KernelProbeBuilder: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        // (Target.directoryURL needs tools version 6.1; the package is 6.0, and the plugin serves one target.)
        let targetFolder = context.package.directoryURL.appending(path: "Sources/\(target.name)")
        let includeFolder = targetFolder.appending(path: "include")
        let source = targetFolder.appending(path: "bpf/runloop_kernel_probe.bpf.c")
        let inputs = [source, includeFolder.appending(path: "rl_kernel_probe_record.h")]
        // Not ".o": SwiftPM would take an object file for something to link into the target.
        let output = context.pluginWorkDirectoryURL.appending(path: "runloop-kernel-probe.bpf")
        #if arch(x86_64)
        let (bpfArchitecture, multiarch) = ("x86", "x86_64-linux-gnu")
        #elseif arch(arm64)
        let (bpfArchitecture, multiarch) = ("arm64", "aarch64-linux-gnu")
        #else
        let (bpfArchitecture, multiarch) = ("unsupported", "unsupported")
        #endif
        let arguments = [
            "-target", "bpf", "-O2", "-g", "-Wall", "-Werror", "-D__TARGET_ARCH_\(bpfArchitecture)",
            // The UAPI headers (linux/bpf.h) include asm/types.h, which Debian keeps in the multiarch folder.
            "-I", includeFolder.path, "-I", "/usr/include/\(multiarch)",
            "-c", source.path, "-o", output.path,
        ]
        return [
            .buildCommand(displayName: "Building the kernel view's BPF object (runloop-kernel-probe.bpf)",
                          executable: try context.tool(named: "clang").url, arguments: arguments,
                          inputFiles: inputs, outputFiles: [output]),
        ]
    }
}
