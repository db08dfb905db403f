/// HTML and SVG built as a tree and escaped on the way out. Labels, modes and program names come from traces, that
/// is from the traced program: written through this type, no text or attribute reaches the page unescaped. (A tree
/// of our own rather than a DSL package: the report needs a few dozen elements, and the core build stays free of
/// another dependency.)
struct Node {
    fileprivate enum Content {
        case element(name: String, attributes: [(String, String)], children: [Node])
        case text(String)
        /// The page's own fixed stylesheet and script: constants of this module, never trace data.
        case constant(StaticString)
    }

    fileprivate let content: Content

    static func element(_ name: String, _ attributes: KeyValuePairs<String, String> = [:], _ children: [Node] = []) -> Node {
        Node(content: .element(name: name, attributes: attributes.map { ($0.key, $0.value) }, children: children))
    }

    static func element(_ name: String, _ attributes: KeyValuePairs<String, String> = [:], text: String) -> Node {
        element(name, attributes, [.text(text)])
    }

    /// An element whose attributes are computed (a chart's coordinates).
    static func element(_ name: String, attributes: [(String, String)], _ children: [Node] = []) -> Node {
        Node(content: .element(name: name, attributes: attributes, children: children))
    }

    static func text(_ text: String) -> Node { Node(content: .text(text)) }

    static func constant(_ text: StaticString) -> Node { Node(content: .constant(text)) }

    private static let voidElements: Set<String> = ["meta", "br", "hr", "img", "link", "input"]

    func render(into out: inout String) {
        switch content {
        case .text(let text):
            out += Self.escape(text)
        case .constant(let text):
            out += text.description
        case .element(let name, let attributes, let children):
            out += "<" + name
            for (key, value) in attributes {
                out += " " + key + "=\"" + Self.escape(value) + "\""
            }
            if Self.voidElements.contains(name) {
                out += ">"
                return
            }
            // SVG shapes with no children close themselves: the page stays small with thousands of them.
            if children.isEmpty && !["div", "span", "td", "th", "p", "section", "script", "style", "title", "a", "text", "tr", "table"].contains(name) {
                out += "/>"
                return
            }
            out += ">"
            for child in children { child.render(into: &out) }
            out += "</" + name + ">"
        }
    }

    var rendered: String {
        var out = ""
        render(into: &out)
        return out
    }

    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters have no place in a page (a label is the program's bytes).
                if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" { out += "\u{FFFD}" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }
}
