import ArgumentParser

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Describe the built-in workloads.")

    func run() {
        for workload in WorkloadKind.allCases {
            let name = workload.rawValue
            print(name + String(repeating: " ", count: max(1, 10 - name.count)) + workload.summary)
        }
    }
}
