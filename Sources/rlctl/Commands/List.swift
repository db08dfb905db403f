import ArgumentParser
import Workloads

struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Describe the built-in workloads.")

    func run() {
        for workload in BuiltInWorkload.allCases {
            let name = workload.rawValue
            print(name + String(repeating: " ", count: max(1, 9 - name.count)) + workload.summary)
        }
        print("\nA workload file (rlctl run --file F.yaml|F.json) mixes these elements; see README.md.")
    }
}
