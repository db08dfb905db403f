import CRunLoopTracepoints
import Foundation
import Glibc
import Testing
import TestSupport
import TraceReading
import Tracing

/// Whether this build has a provider library to test (the package found liblttng-ust-dev); outside CI a build
/// without it skips these tests, with CI=true it fails them (CI installs LTTng-UST).
enum LTTngProviderEnvironment {
    static let requirement = TestRequirement(missing: rl_trace_provider_built() != 0 ? nil : "the provider library (built without LTTng-UST)",
                                             problem: "there is no LTTng provider to test")
    static var shouldRun: Bool { requirement.shouldRun }
    static var skipComment: Comment { requirement.skipComment }

    /// A `--sanitize=thread` build (its runtime is linked into every binary of the build): the provider is then
    /// never loaded, and the tests check that it is refused with the reason instead (runloop_tracepoints.c).
    static let threadSanitized = dlsym(nil, "__tsan_init") != nil
    static let tsanReason = "this is a ThreadSanitizer build"
}

/// The `runloop` provider is a library of its own (librunloop-lttng-provider.so) that a process loads only when it
/// traces with LTTng: `rlctl summarize`, `export` and `run` with the embedded recorder never map liblttng-ust (nor
/// start its threads), a program that installs `LTTngSink` does, and a provider that cannot be loaded is reported.
///
/// What a process loads is taken from the dynamic loader itself (`LD_DEBUG=files`, one log file per process with
/// `LD_DEBUG_OUTPUT`): it names every object mapped at start-up or by dlopen, in the process and in any child it
/// starts, so a library loaded late or by a child process is seen too.
@Suite(.serialized, .enabled(if: LTTngProviderEnvironment.shouldRun, LTTngProviderEnvironment.skipComment))
struct LTTngProviderTests {
    /// The folder of the running test bundle, where SwiftPM also puts rlctl, runloop-demo and the resources.
    static let productsFolder: String = {
        let executable = try! FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return URL(fileURLWithPath: executable).deletingLastPathComponent().path
    }()

    struct Run {
        /// nil when a signal ended it.
        var status: Int32?
        var stdout: String
        var stderr: String
        /// Every object the dynamic loader loaded, in the program and its children (LD_DEBUG=files).
        var loaderLog: String
    }

    /// Runs a program built next to the test bundle with the loader logging every object it loads.
    static func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        let path = productsFolder + "/" + program
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        let logs = temporaryPath("ld")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: logs) }
        var loaderLogging = environment.mapValues { Optional($0) }
        loaderLogging["LD_DEBUG"] = "files"
        loaderLogging["LD_DEBUG_OUTPUT"] = logs + "/ld"   // one file per process: ld.<pid>
        let result = try runProcess(path, arguments, ProcessOptions(environment: loaderLogging))
        var log = ""
        for file in try FileManager.default.contentsOfDirectory(atPath: logs).sorted() {
            log += try String(contentsOfFile: logs + "/" + file, encoding: .utf8)
        }
        return Run(status: result.status, stdout: result.stdout, stderr: result.stderr, loaderLog: log)
    }

    /// This process's mappings. Read to the end of file: /proc reports a size of 0, which Foundation's whole-file
    /// readers take literally.
    static func selfMaps() throws -> String {
        let file = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        defer { try? file.close() }
        return String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
    }

    /// The loader's lines about LTTng-UST libraries and the provider, for the failure messages.
    static func lttngLines(_ log: String) -> String {
        log.split(separator: "\n").filter { $0.contains("liblttng-ust") || $0.contains("librunloop-lttng-provider") }
            .prefix(8).joined(separator: "\n")
    }

    @Test func commandsThatDoNotTraceWithLTTngNeverLoadIt() throws {
        let trace = temporaryPath("trace")
        let csv = temporaryPath("events.csv")
        defer {
            try? FileManager.default.removeItem(atPath: trace)
            try? FileManager.default.removeItem(atPath: csv)
        }
        let commands: [[String]] = [
            ["run", "timers", "--duration", "200ms", "--trace", trace],   // the embedded recorder
            ["summarize", trace],
            ["summarize", trace, "--format", "json"],
            ["export", trace, "--format", "csv", "-o", csv],
            ["list"],
        ]
        for arguments in commands {
            let result = try Self.run("rlctl", arguments)
            #expect(result.status == 0, "rlctl \(arguments.joined(separator: " ")): \(result.stderr)")
            // The log is real: it names the C library every process loads. Otherwise an empty log would pass.
            #expect(result.loaderLog.contains("libc.so.6"), "no loader log for rlctl \(arguments.joined(separator: " "))")
            #expect(!result.loaderLog.contains("liblttng-ust"),
                    "rlctl \(arguments.joined(separator: " ")) loaded LTTng-UST:\n\(Self.lttngLines(result.loaderLog))")
            #expect(!result.loaderLog.contains("librunloop-lttng-provider"),
                    "rlctl \(arguments.joined(separator: " ")) loaded the provider:\n\(Self.lttngLines(result.loaderLog))")
        }
    }

    /// runloop-demo told to use LTTng (RLCTL_TRACER=lttng, as rlctl record sets it) only installs `LTTngSink`: its
    /// first events load the provider, which brings liblttng-ust.
    /// (A TSan build refuses, says so once, and runs on.)
    @Test func aProgramThatInstallsTheSinkLoadsTheProvider() throws {
        let result = try Self.run("runloop-demo", ["0.2"], environment: ["RLCTL_TRACER": "lttng"])
        #expect(result.status == 0, "\(result.stderr)")
        if LTTngProviderEnvironment.threadSanitized {
            #expect(result.stderr.contains(LTTngProviderEnvironment.tsanReason), "\(result.stderr)")
            #expect(!result.loaderLog.contains("liblttng-ust"), "\(Self.lttngLines(result.loaderLog))")
            return
        }
        #expect(result.loaderLog.contains("CRunLoopTracepoints.resources/librunloop-lttng-provider.so"),
                "runloop-demo did not load the provider from its resource folder:\n\(Self.lttngLines(result.loaderLog))")
        #expect(result.loaderLog.contains("liblttng-ust.so"), "\(Self.lttngLines(result.loaderLog))")
        #expect(!result.stderr.contains("provider is not loaded"), "\(result.stderr)")
    }

    /// RLCTL_LTTNG_PROVIDER replaces the search: a wrong path is reported once on stderr (the program asked for
    /// LTTng tracing and would otherwise record nothing silently), the program runs on untraced, and nothing of
    /// LTTng is loaded.
    @Test func aMissingProviderIsReportedOnceAndTheProgramRunsOn() throws {
        let missing = "/nonexistent-\(getpid())/librunloop-lttng-provider.so"
        let result = try Self.run("runloop-demo", ["0.2"], environment: ["RLCTL_TRACER": "lttng", "RLCTL_LTTNG_PROVIDER": missing])
        #expect(result.status == 0, "\(result.stderr)")
        let reports = result.stderr.components(separatedBy: "LTTngSink: the runloop LTTng provider is not loaded").count - 1
        #expect(reports == 1, "expected one report, got \(reports): \(result.stderr)")
        #expect(result.stderr.contains(LTTngProviderEnvironment.threadSanitized ? LTTngProviderEnvironment.tsanReason
                                                                              : "RLCTL_LTTNG_PROVIDER=\(missing)"),
                "\(result.stderr)")
        #expect(!result.loaderLog.contains("liblttng-ust"), "\(Self.lttngLines(result.loaderLog))")
    }

    /// `rlctl doctor` names a provider that does not load, with the loader's reason and what to do.
    @Test func doctorSaysWhyTheProviderDoesNotLoad() throws {
        let missing = "/nonexistent-\(getpid())/librunloop-lttng-provider.so"
        let result = try Self.run("rlctl", ["doctor"], environment: ["RLCTL_LTTNG_PROVIDER": missing])
        #expect(result.status == 1, "\(result.stdout)")
        let line = result.stdout.split(separator: "\n").first { $0.contains("LTTng provider") }.map(String.init) ?? ""
        #expect(line.contains("FAIL"), "\(result.stdout)")
        #expect(line.contains(LTTngProviderEnvironment.threadSanitized ? LTTngProviderEnvironment.tsanReason
                                                                       : "RLCTL_LTTNG_PROVIDER=\(missing)"), "\(result.stdout)")
        #expect(result.stdout.contains("RLCTL_LTTNG_PROVIDER to its path"), "\(result.stdout)")
        #expect(!result.loaderLog.contains("liblttng-ust"), "\(Self.lttngLines(result.loaderLog))")
    }

    /// A shared object that is not the provider (here the C library) is refused, not called through.
    @Test(.disabled(if: LTTngProviderEnvironment.threadSanitized, "a TSan build loads no provider at all"))
    func aLibraryThatIsNotTheProviderIsRefused() throws {
        let maps = try Self.selfMaps()
        let libc = try #require(maps.split(separator: "\n").compactMap { line -> String? in
            guard let slash = line.firstIndex(of: "/") else { return nil }
            let path = String(line[slash...])
            return path.hasSuffix("/libc.so.6") || path.contains("/libc-") ? path : nil
        }.first, "no libc in /proc/self/maps")
        let result = try Self.run("runloop-demo", ["0.2"], environment: ["RLCTL_TRACER": "lttng", "RLCTL_LTTNG_PROVIDER": libc])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("\(libc): not a runloop provider of this build"), "\(result.stderr)")
    }

    /// A process that asks (doctor, the tests, LTTngSession) loads the provider from its resource folder next to
    /// the executable, and only then maps liblttng-ust.
    @Test func askingForTheProviderLoadsItFromNextToTheExecutable() throws {
        if LTTngProviderEnvironment.threadSanitized {
            #expect(rl_trace_load() == -1 && !LTTngSink.isCompiledIn && rl_trace_provider_path() == nil)
            let error = rl_trace_load_error().map { String(cString: $0) } ?? ""
            #expect(error.contains(LTTngProviderEnvironment.tsanReason), "\(error)")
            #expect(!(try Self.selfMaps()).contains("liblttng-ust"))
            return
        }
        #expect(rl_trace_load() == 0, "\(rl_trace_load_error().map { String(cString: $0) } ?? "no error")")
        #expect(rl_trace_load_error() == nil)
        let path = try #require(rl_trace_provider_path().map { String(cString: $0) })
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        #expect(folder.lastPathComponent.hasSuffix("_CRunLoopTracepoints.resources"), "\(path)")
        #expect(folder.deletingLastPathComponent().path == Self.productsFolder, "\(path)")
        #expect(LTTngSink.isCompiledIn)
        let maps = try Self.selfMaps()
        #expect(maps.contains("librunloop-lttng-provider.so") && maps.contains("liblttng-ust.so"))
    }
}
