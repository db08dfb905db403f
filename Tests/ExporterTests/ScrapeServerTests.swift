import Exporter
import Foundation
import Glibc
import Testing
import TestSupport

/// The exporter's HTTP side: what it answers, and every address or client it must refuse or outlast.
@Suite struct ScrapeServerTests {
    static func serving(_ body: String = "runloop_iterations 1\n", address: String = "127.0.0.1:0", allowRemote: Bool = false) throws -> ScrapeServer {
        let server = try ScrapeServer(serving: address, allowRemote: allowRemote) { Array(body.utf8) }
        server.start()
        return server
    }

    @Test func servesTheMetricsAtSlashMetricsAndSaysWhereElse() throws {
        let server = try Self.serving()
        defer { server.stop() }
        #expect(server.address == "127.0.0.1:\(server.port)" && server.port > 0)
        let metrics = loopbackGet(port: Int(server.port), path: "/metrics")
        #expect(metrics?.status == 200 && metrics?.body == "runloop_iterations 1\n")
        #expect(loopbackGet(port: Int(server.port), path: "/metrics?x=1")?.status == 200)
        #expect(loopbackGet(port: Int(server.port), path: "/nothing")?.status == 404)
        #expect(loopbackGet(port: Int(server.port), path: "/metrics", method: "POST")?.status == 405)
        #expect(loopbackGet(port: Int(server.port), path: "/metrics", method: "HEAD").map { ($0.status, $0.body) } ?? (0, "x") == (200, ""))
    }

    @Test(arguments: [
        ("9464", "give HOST:PORT"), ("127.0.0.1", "give HOST:PORT"), (":9464", "the host is missing"),
        ("127.0.0.1:99999", "the port must be a number"), ("127.0.0.1:x", "the port must be a number"),
        ("[::1", "give HOST:PORT"), ("no-such-host.invalid:9464", "cannot resolve"),
        ("0.0.0.0:0", "not a loopback address"), ("192.0.2.1:0", "not a loopback address"),
    ])
    func aBadOrNonLocalAddressIsOneLine(address: String, expected: String) {
        #expect {
            _ = try ScrapeServer(serving: address, allowRemote: false) { [] }
        } throws: { error in
            let text = "\(error)"
            return text.hasPrefix("--serve \(address): ") && text.contains(expected) && !text.contains("\n")
        }
    }

    @Test func aPortInUseIsSaidAsSuch() throws {
        let first = try Self.serving()
        defer { first.stop() }
        #expect {
            _ = try ScrapeServer(serving: "127.0.0.1:\(first.port)", allowRemote: false) { [] }
        } throws: { "\($0)".contains("the port is in use") }
    }

    @Test func anyAddressIsServedWhenAskedFor() throws {
        let server = try Self.serving(address: "0.0.0.0:0", allowRemote: true)
        defer { server.stop() }
        #expect(loopbackGet(port: Int(server.port), path: "/metrics")?.status == 200)
    }

    @Test func aClientThatSendsNothingDoesNotHoldTheNextScrape() throws {
        let server = try Self.serving()
        defer { server.stop() }
        // Connected and silent: the server gives up on it after its deadline and answers the next one.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(server.port.bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(silent, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(connected == 0)
        #expect(loopbackGet(port: Int(server.port), path: "/metrics", timeout: 10)?.status == 200)
        // An oversized request is refused, not read forever.
        let huge = loopbackGet(port: Int(server.port), path: "/" + String(repeating: "a", count: 20_000))
        #expect(huge?.status == 431)
    }

    @Test func stopEndsServingAndFreesThePort() throws {
        let server = try Self.serving()
        let port = server.port
        server.stop()
        #expect(loopbackGet(port: Int(port), path: "/metrics", timeout: 1) == nil)
        let again = try Self.serving(address: "127.0.0.1:\(port)")
        again.stop()
    }
}
