import Foundation
import Glibc
import Testing

/// One HTTP/1.1 request on loopback, answered whole (the server closes the connection): the status code and the
/// body. For the exporter's tests and Prometheus's HTTP API; nil when nothing answers within `timeout`.
public func loopbackGet(port: Int, path: String, method: String = "GET", timeout: Int = 5) -> (status: Int, body: String)? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var deadline = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &deadline, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &deadline, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return nil }
    let request = Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else { return nil }
    var response: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count == 0 { break }
        guard count > 0 else { return nil }
        response += chunk[0..<count]
    }
    let text = String(decoding: response, as: UTF8.self)
    guard let headerEnd = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") else { return nil }
    var body = String(text[headerEnd.upperBound...])
    // Prometheus answers its API in chunks.
    if text[..<headerEnd.lowerBound].lowercased().contains("transfer-encoding: chunked") { body = dechunked(body) }
    return (status, body)
}

private func dechunked(_ body: String) -> String {
    var rest = Substring(body)
    var out = ""
    while let lineEnd = rest.range(of: "\r\n"), let size = Int(rest[..<lineEnd.lowerBound].split(separator: ";").first ?? "", radix: 16), size > 0 {
        let start = lineEnd.upperBound
        let bytes = Array(rest[start...].utf8)
        guard bytes.count >= size else { break }
        out += String(decoding: bytes[0..<size], as: UTF8.self)
        rest = Substring(String(decoding: bytes[size...], as: UTF8.self)).dropFirst(2)
    }
    return out
}

/// A Prometheus server of a test's own (Debian's `prometheus`): on a free loopback port, with a configuration and
/// storage in a temporary folder, scraping `targets` every second; killed and its folder removed when stopped.
public final class LocalPrometheus {
    public let port: Int
    public let folder: String
    private let process: RunningProcess

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public init(scraping targets: [String]) throws {
        guard let executable = TestEnvironment.executable("prometheus") else {
            throw StartError(description: "prometheus is not installed (scripts/install-deps.sh installs Debian's package)")
        }
        folder = temporaryPath("prometheus")
        try FileManager.default.createDirectory(atPath: folder + "/data", withIntermediateDirectories: true)
        let list = targets.map { "'\($0)'" }.joined(separator: ", ")
        try """
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: rlctl
                static_configs:
                  - targets: [\(list)]
            """.write(toFile: folder + "/prometheus.yml", atomically: true, encoding: .utf8)
        port = freeLoopbackPort()
        process = try RunningProcess(executable, ["--config.file=\(folder)/prometheus.yml", "--storage.tsdb.path=\(folder)/data",
                                                  "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn"],
                                     ProcessOptions(timeout: .seconds(900)))
        let ready = eventually(timeout: .seconds(60)) {
            if let answer = loopbackGet(port: self.port, path: "/-/ready", timeout: 1), answer.status == 200 { return true }
            usleep(100_000)
            return !self.process.isRunning
        }
        guard ready && process.isRunning else {
            let output = process.outputSoFar
            stop()
            throw StartError(description: "prometheus did not get ready on 127.0.0.1:\(port): \(output.stderr.suffix(1000))")
        }
    }

    deinit { stop() }

    public func stop() {
        if process.isRunning {
            process.send(SIGKILL)
            _ = process.wait()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// An instant query's samples: each series' labels and value (an empty list when nothing matches; nil when
    /// Prometheus did not answer, or answered with an error).
    public func query(_ expression: String) -> [(labels: [String: String], value: Double)]? {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: allowed) ?? expression
        guard let answer = loopbackGet(port: port, path: "/api/v1/query?query=\(encoded)"), answer.status == 200,
              let json = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
              json["status"] as? String == "success", let data = json["data"] as? [String: Any],
              let result = data["result"] as? [[String: Any]] else { return nil }
        return result.compactMap { sample in
            guard let labels = sample["metric"] as? [String: String], let value = sample["value"] as? [Any],
                  value.count == 2, let text = value[1] as? String, let number = Double(text) else { return nil }
            return (labels, number)
        }
    }

    /// The one value `expression` has, once it has one (within `timeout`), else nil.
    public func value(_ expression: String, timeout: Duration = .seconds(30), until done: (Double) -> Bool = { _ in true }) -> Double? {
        var found: Double?
        _ = eventually(timeout: timeout) {
            if let samples = query(expression), samples.count == 1 {
                found = samples[0].value
                if done(samples[0].value) { return true }
            }
            usleep(250_000)
            return false
        }
        return found
    }
}

/// The port an `rlctl top --serve 127.0.0.1:0` says on stderr it serves on (within 30 s), else nil.
public func exporterPort(of top: RunningProcess) -> Int? {
    var port: Int?
    _ = eventually(timeout: .seconds(30)) {
        port = top.outputSoFar.stderr.firstMatch(of: /metrics at http:\/\/127\.0\.0\.1:(\d+)\/metrics/).flatMap { Int($0.output.1) }
        usleep(50_000)
        return port != nil
    }
    return port
}

/// A TCP port free on loopback right now (the kernel's pick).
public func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}
