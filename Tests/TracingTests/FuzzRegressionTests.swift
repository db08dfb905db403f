import Foundation
import Testing
import TraceModel
import TraceReading

/// Every input the reader fuzzer (scripts/fuzz-readers.py) ever failed on, kept under Fixtures/fuzz with its
/// `FUZZ-CASE` file (the damage, and what went wrong): each must now read as damaged — an error naming a file, or
/// a health that is not complete — and never crash or claim completeness.
struct FuzzRegressionTests {
    static let cases: [String] = {
        let folder = FixtureCompatibilityTests.fixtures + "/fuzz"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().map { folder + "/" + $0 }
    }()

    @Test func thereAreCasesToReplay() {
        #expect(!Self.cases.isEmpty)
    }

    @Test(arguments: cases) func aKeptFuzzInputReadsAsDamaged(_ path: String) throws {
        let what = (try? String(contentsOfFile: path + "/FUZZ-CASE", encoding: .utf8)) ?? "?"
        if TraceReaders.kind(of: path) == .ctf && !CTFTraceReader.isAvailable { return }
        do {
            var reader = try TraceReaders.open(path)
            while try reader.next() != nil {}
            #expect(!reader.health.isComplete || reader.health.recordingCutOff, "read as complete: \(what)")
        } catch {
            #expect(error.path.hasPrefix(path), "the error names a file of the trace: \(error)")
        }
    }
}
