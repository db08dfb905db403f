import Foundation
// FoundationXML rather than XMLCoder or Plot (both on the package list): it ships with the Swift toolchain and is
// maintained with swift-corelibs-foundation, so the JUnit report costs no new package, and its XMLDocument is
// libxml2's serializer, which escapes names and messages by the XML rules instead of by our own list.
import FoundationXML

/// JSON as the reports write it: `Codable`, keys sorted so the output is stable, one line.
enum ReportJSON {
    static func line(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every number goes through JSONNumber, which writes a non-finite one as null, so encoding cannot fail.
        return String(decoding: try! encoder.encode(value), as: UTF8.self)
    }

    /// Pretty-printed, keys sorted: the documents a user keeps (a summary, a run report). Throws for a figure JSON
    /// cannot hold (a non-finite number) rather than write nothing or an invalid document.
    static func pretty(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}

/// A number in a JSON report: `null` when there is none, and when it is not finite (JSON has no NaN or
/// infinity, and a report that a parser rejects is worse than one that says "no number").
struct JSONNumber: Encodable, Equatable {
    let value: Double?

    init(_ value: Double?) { self.value = value.flatMap { $0.isFinite ? $0 : nil } }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let value { try container.encode(value) } else { try container.encodeNil() }
    }
}

/// A JUnit XML test suite, the format CI systems show as test results.
struct JUnitReport {
    struct TestCase {
        enum Result {
            case passed
            case failure(String)
            case skipped(String)
        }

        var className: String
        var name: String
        var result: Result
    }

    var suite: String
    var cases: [TestCase]

    var xml: String {
        let root = XMLElement(name: "testsuite")
        let failures = cases.filter { if case .failure = $0.result { return true } else { return false } }.count
        root.addAttribute(attribute("name", suite))
        root.addAttribute(attribute("tests", "\(cases.count)"))
        root.addAttribute(attribute("failures", "\(failures)"))
        for testCase in cases {
            let element = XMLElement(name: "testcase")
            element.addAttribute(attribute("classname", testCase.className))
            element.addAttribute(attribute("name", testCase.name))
            switch testCase.result {
            case .passed: break
            case .failure(let message): element.addChild(outcome("failure", message))
            case .skipped(let message): element.addChild(outcome("skipped", message))
            }
            root.addChild(element)
        }
        let document = XMLDocument(rootElement: root)
        document.version = "1.0"
        document.characterEncoding = "UTF-8"
        document.isStandalone = true
        return document.xmlString(options: [.nodePrettyPrint, .nodeCompactEmptyElement])
            .trimmingCharacters(in: .newlines)
    }

    private func outcome(_ name: String, _ message: String) -> XMLElement {
        let element = XMLElement(name: name)
        element.addAttribute(attribute("message", message))
        return element
    }

    private func attribute(_ name: String, _ value: String) -> XMLNode {
        XMLNode.attribute(withName: name, stringValue: value) as! XMLNode
    }
}
