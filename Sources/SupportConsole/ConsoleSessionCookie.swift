import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// A console session's token: 32 random bytes in hexadecimal, kept by the browser in the
/// `liveline_console` cookie — `HttpOnly` (no script reads it), `SameSite=Strict` (no other
/// site's page sends it), `Path=/console`, and `Secure` when the request came over TLS through a
/// proxy. The database keeps only its SHA-256.
enum ConsoleSessionCookie {
    static let name = "liveline_console"

    /// 32 bytes from the system's secure generator, in hexadecimal: a session's token, or the
    /// CSRF token its forms carry.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in hex(UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    static func digest(_ token: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(token.utf8)))
    }

    /// The session token the request carries, when it has the form of one.
    static func token(of request: Request) -> String? {
        guard let value = request.cookies[name]?.value, value.utf8.count == 64,
            value.utf8.allSatisfy({
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            })
        else { return nil }
        return value
    }

    static func cookie(_ token: String, lifetime: Duration, for request: Request) -> Cookie {
        Cookie(
            name: name,
            value: token,
            maxAge: Int(lifetime.components.seconds),
            path: "/console",
            secure: cameOverTLS(request),
            httpOnly: true,
            sameSite: .strict
        )
    }

    /// The cookie that makes the browser forget its session.
    static func removal(for request: Request) -> Cookie {
        Cookie(
            name: name,
            value: "",
            maxAge: 0,
            path: "/console",
            secure: cameOverTLS(request),
            httpOnly: true,
            sameSite: .strict
        )
    }

    /// Whether the proxy in front of Liveline says the request came over TLS (`X-Forwarded-Proto`
    /// or `Forwarded`); Liveline itself serves plain HTTP.
    static func cameOverTLS(_ request: Request) -> Bool {
        if let proto = request.headers[HTTPField.Name("X-Forwarded-Proto")!] {
            return proto.split(separator: ",").first?.trimmingCharacters(in: .whitespaces).lowercased() == "https"
        }
        return request.headers[HTTPField.Name("Forwarded")!]?.lowercased().contains("proto=https") ?? false
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
    }
}
