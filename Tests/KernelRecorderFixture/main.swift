// A process that records with the kernel view until it is killed: KernelTracingTests SIGKILLs it and checks that
// nothing it loaded stays in the kernel. Prints "ready" once the probe is attached (or "unavailable: WHY").
import Foundation
import KernelTracing

do {
    let recorder = try KernelRecorder { _ in }
    try recorder.follow(process: getpid())
    // Unbuffered, so that the test sees it while this process sleeps.
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while true { sleep(60) }
} catch {
    print("unavailable: \(error)")
    exit(1)
}
