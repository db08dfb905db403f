import ArgumentParser

@main
struct RLCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rlctl",
        abstract: "Make run-loop behaviour visible: run workloads on RunLoopCore and measure their timers and latency.",
        subcommands: [Run.self, List.self]
    )
}
