import Glibc

/// This machine's name as LTTng writes it into a trace (`hostname`, gethostname(2)): how a relay daemon files
/// this host's sessions and how `rlctl top` labels this machine's loops.
public enum HostName {
    public static var local: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
