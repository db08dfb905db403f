import Foundation
import Testing

/// The module boundaries of docs/architecture.md, enforced: each module imports only the modules it may, both in
/// its sources and in Package.swift, and the readers and the analyses never reach the loop or the LTTng provider,
/// not even through another module.
@Suite struct ArchitectureTests {
    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// What each of the package's modules may import from the package (docs/architecture.md, "What may import
    /// what"). Modules outside the package (Foundation, ArgumentParser, Histogram…) are not this test's concern.
    static let allowed: [String: Set<String>] = [
        "CTraceSchema": [],
        "TraceModel": ["CTraceSchema"],
        "CRunLoopLinux": [],
        "RunLoopCore": ["CRunLoopLinux", "TraceModel"],
        "CRecorder": ["CTraceSchema"],
        "CRunLoopTracepoints": ["CTraceSchema"],
        "CWaitInterposer": [],
        "Tracing": ["RunLoopCore", "TraceModel", "CRecorder", "CRunLoopTracepoints", "CWaitInterposer"],
        "CBabeltrace2": ["CTraceSchema"],
        "TraceReading": ["TraceModel", "CBabeltrace2"],
        "Analysis": ["TraceModel", "TraceReading"],
        "Workloads": ["RunLoopCore", "TraceModel"],
        "CProcess": [],
        "CKernelProbe": [],
        "KernelTracing": ["TraceModel", "CKernelProbe"],
        "Exporter": ["Analysis", "TraceModel"],
        "rlctl": ["RunLoopCore", "TraceModel", "Tracing", "TraceReading", "Analysis", "Workloads", "CProcess", "KernelTracing", "Exporter"],
        "runloop-demo": ["RunLoopCore", "TraceModel", "Tracing"],
        "metrics-demo": ["RunLoopCore", "TraceModel", "Tracing", "RunLoopMetrics"],
        "main-queue-demo": ["RunLoopCore", "TraceModel"],
        "CFoundationRunLoop": [],
        "RunLoopFoundation": ["CFoundationRunLoop", "RunLoopCore", "TraceModel", "Tracing"],
        "foundation-timer-app": ["RunLoopFoundation", "TraceModel"],
        "RunLoopMetrics": ["RunLoopCore"],
    ]

    /// Modules that must never be linked into these, directly or through another module.
    static let forbidden: [String: Set<String>] = [
        "TraceModel": ["RunLoopCore", "Tracing", "CRunLoopTracepoints", "CRecorder", "TraceReading", "Analysis"],
        "TraceReading": ["RunLoopCore", "Tracing", "CRunLoopTracepoints", "CRecorder", "Analysis"],
        "Analysis": ["RunLoopCore", "Tracing", "CRunLoopTracepoints", "CRecorder"],
        "Exporter": ["RunLoopCore", "Tracing", "CRunLoopTracepoints", "CRecorder", "KernelTracing"],
        "RunLoopCore": ["Tracing", "TraceReading", "Analysis", "CRunLoopTracepoints", "CRecorder", "KernelTracing", "CKernelProbe"],
        // The kernel recorder runs in rlctl, beside the loops it watches: never inside them, nor in the readers.
        "Tracing": ["KernelTracing", "CKernelProbe"],
        "KernelTracing": ["RunLoopCore", "Tracing", "TraceReading", "Analysis"],
        // Metrics ride on the seam beside any tracer, and pull no tracer into a program.
        "RunLoopMetrics": ["Tracing", "TraceReading", "Analysis", "CRecorder", "CRunLoopTracepoints"],
    ]

    struct Target {
        var name: String
        var path: String
        var dependencies: [String]
    }

    /// What the SwiftNIO adapter's package (Adapters/NIO, kept apart so that the core build never fetches
    /// SwiftNIO) may import from this repository's modules. The example server's twin without tracing must not
    /// reach the tracing seam, or the benchmark's "adapter absent" row would not be.
    static let adapterAllowed: [String: Set<String>] = [
        "CRunLoopNIO": [],
        "RunLoopNIO": ["CRunLoopNIO", "RunLoopCore", "Tracing", "TraceModel", "RunLoopMetrics"],
        "NIOHTTPExample": [],
        "nio-http-server": ["RunLoopNIO", "NIOHTTPExample", "RunLoopMetrics"],
        "nio-http-server-untraced": ["NIOHTTPExample"],
        "nio-io-bench": ["RunLoopNIO", "RunLoopCore"],
    ]

    /// The package's targets with their declared dependencies on other targets, read from Package.swift (not from
    /// `swift package dump-package`, which would wait for the build lock the running `swift test` holds).
    /// `folder` is a package's folder in the repository (the adapter's), whose products of this package
    /// (`.product(name: "Tracing", package: "rlctl")`) count as dependencies on those modules.
    static func targets(in folder: String = "") throws -> [Target] {
        let root = folder.isEmpty ? repository : repository.appendingPathComponent(folder)
        let prefix = folder.isEmpty ? "" : folder + "/"
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let declaration = try Regex(#"\.(target|executableTarget|testTarget|plugin)\(\s*name:\s*"([^"]+)""#)
        var targets: [Target] = []
        for match in manifest.matches(of: declaration) {
            let kind = String(match.output[1].substring ?? "")
            let name = String(match.output[2].substring ?? "")
            let body = balancedArguments(manifest, from: match.range.upperBound)
            var dependencies: [String] = []
            if let list = body.firstRange(of: "dependencies:") {
                let inside = balancedList(body, from: list.upperBound)
                // Bare strings are targets; `.product(name:package:)` entries name other packages' products, this
                // repository's main package's ("rlctl") among them.
                let ours = inside.matches(of: try Regex(#"\.product\(\s*name:\s*"([^"]+)",\s*package:\s*"rlctl"\s*\)"#))
                    .map { String($0.output[1].substring ?? "") }
                let withoutProducts = inside.replacing(try Regex(#"\.product\([^)]*\)"#), with: "")
                dependencies = withoutProducts.matches(of: try Regex(#""([^"]+)""#)).map { String($0.output[1].substring ?? "") } + ours
            }
            var path = kind == "testTarget" ? "Tests/\(name)" : kind == "plugin" ? "Plugins/\(name)" : "Sources/\(name)"
            if let pathArgument = body.firstMatch(of: try Regex(#"path:\s*"([^"]+)""#)) {
                path = String(pathArgument.output[1].substring ?? "")
            }
            path = prefix + path
            targets.append(Target(name: name, path: path, dependencies: dependencies))
        }
        return targets
    }

    /// The text from `start` up to the parenthesis that closes the call `start` is inside.
    static func balancedArguments(_ text: String, from start: String.Index) -> Substring {
        var depth = 1
        var index = start
        while index < text.endIndex {
            switch text[index] {
            case "(": depth += 1
            case ")": depth -= 1; if depth == 0 { return text[start..<index] }
            default: break
            }
            index = text.index(after: index)
        }
        return text[start...]
    }

    /// The `[…]` list that starts at the first bracket after `start`.
    static func balancedList(_ text: Substring, from start: String.Index) -> Substring {
        guard let open = text[start...].firstIndex(of: "[") else { return "" }
        var depth = 0
        var index = open
        while index < text.endIndex {
            switch text[index] {
            case "[": depth += 1
            case "]": depth -= 1; if depth == 0 { return text[text.index(after: open)..<index] }
            default: break
            }
            index = text.index(after: index)
        }
        return text[open...]
    }

    /// Every `import` of a module of the package in the target's Swift and C sources.
    static func imports(of target: Target, among modules: Set<String>) throws -> [(file: String, module: String)] {
        let folder = repository.appendingPathComponent(target.path)
        guard let files = FileManager.default.enumerator(atPath: folder.path) else { return [] }
        let swiftImport = try Regex(#"(?m)^\s*(?:@_exported\s+|@testable\s+|@_spi\([^)]*\)\s+)*import\s+(?:(?:struct|class|enum|func|protocol|typealias|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)"#)
        var found: [(String, String)] = []
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: swiftImport) {
                let module = String(match.output[1].substring ?? "")
                if modules.contains(module) { found.append(("\(target.path)/\(file)", module)) }
            }
        }
        return found
    }

    @Test func everyModuleImportsOnlyWhatTheArchitectureAllows() throws {
        let targets = try Self.targets()
        let byName = Dictionary(targets.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let modules = Set(targets.map(\.name)).union(Self.allowed.keys)
        var problems: [String] = []
        for target in targets where !target.path.hasPrefix("Tests/") && !target.path.hasPrefix("Plugins/") {
            guard let allowed = Self.allowed[target.name] else {
                problems.append("\(target.name): a module docs/architecture.md and this test do not know; add it to both")
                continue
            }
            for dependency in target.dependencies where byName[dependency]?.path.hasPrefix("Plugins/") != true {
                if !allowed.contains(dependency) {
                    problems.append("Package.swift: \(target.name) depends on \(dependency)")
                }
            }
            for (file, module) in try Self.imports(of: target, among: modules) where module != target.name {
                if !allowed.contains(module) { problems.append("\(file): imports \(module)") }
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func theSwiftNIOAdapterImportsOnlyWhatItMayAndTheCoreNeverNamesSwiftNIO() throws {
        let targets = try Self.targets(in: "Adapters/NIO")
        #expect(Set(targets.filter { !$0.path.contains("/Tests/") }.map(\.name)) == Set(Self.adapterAllowed.keys),
                "Adapters/NIO's targets and this test's list differ")
        let modules = Set(try Self.targets().map(\.name)).union(targets.map(\.name))
        var problems: [String] = []
        for target in targets where !target.path.contains("/Tests/") {
            let allowed = Self.adapterAllowed[target.name] ?? []
            for dependency in target.dependencies where !allowed.contains(dependency) {
                problems.append("Adapters/NIO/Package.swift: \(target.name) depends on \(dependency)")
            }
            for (file, module) in try Self.imports(of: target, among: modules) where module != target.name && !allowed.contains(module) {
                problems.append("\(file): imports \(module)")
            }
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        // SwiftNIO stays out of the core products' build graph: a cold core build must not fetch it.
        let manifest = try String(contentsOf: Self.repository.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(!manifest.contains("swift-nio"), "Package.swift names swift-nio")
        // The reader sees the adapter's edges, products of this package included.
        #expect(Set(targets.first { $0.name == "RunLoopNIO" }?.dependencies ?? []) == ["CRunLoopNIO", "RunLoopCore", "Tracing", "RunLoopMetrics"])
    }

    @Test func theReadersAndTheAnalysesNeverReachTheLoopNorTheLTTngProvider() throws {
        let targets = try Self.targets()
        let dependencies = Dictionary(targets.map { ($0.name, $0.dependencies) }, uniquingKeysWith: { first, _ in first })
        for (module, banned) in Self.forbidden {
            try #require(dependencies[module] != nil, "Package.swift has no target \(module)")
            var reached: Set<String> = []
            var pending = dependencies[module] ?? []
            while let next = pending.popLast() {
                if reached.insert(next).inserted { pending += dependencies[next] ?? [] }
            }
            #expect(reached.isDisjoint(with: banned), "\(module) reaches \(reached.intersection(banned).sorted())")
        }
    }

    /// The test above would pass on a manifest it failed to read; this pins what it reads.
    @Test func theManifestReaderSeesTheDeclaredEdges() throws {
        let targets = try Self.targets()
        let analysis = try #require(targets.first { $0.name == "Analysis" })
        #expect(Set(analysis.dependencies) == ["TraceReading", "TraceModel"])
        let demo = try #require(targets.first { $0.name == "runloop-demo" })
        #expect(demo.path == "Examples/runloop-demo")
        #expect(demo.dependencies.contains("Tracing"))
        #expect(targets.contains { $0.name == "rlctlTests" })
    }
}
