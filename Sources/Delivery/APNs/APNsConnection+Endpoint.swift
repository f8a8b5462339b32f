import NIOCore

extension APNsConnection {
    /// Where a connection goes: a host, its port, and the name its certificate must carry.
    struct Endpoint: Hashable, Sendable {
        let host: String
        let port: Int

        /// From `https://host[:port]`; `nil` for anything else.
        init?(url: String) {
            guard url.hasPrefix("https://") else { return nil }
            var authority = Substring(url.dropFirst("https://".count))
            if authority.hasSuffix("/") { authority = authority.dropLast() }
            guard !authority.isEmpty, !authority.contains("/") else { return nil }
            if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
                guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
                    return nil
                }
                self.host = String(authority[..<colon])
                self.port = port
            } else {
                self.host = String(authority)
                self.port = 443
            }
            guard !host.isEmpty else { return nil }
        }

        /// The `:authority` of its requests.
        var authority: String { port == 443 ? host : "\(host):\(port)" }

        /// The host without an IPv6 address's brackets: what is connected to.
        var address: String {
            host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        }

        /// SNI and the certificate's name; an address has neither (its certificate is checked
        /// against the address).
        var serverHostname: String? {
            (try? SocketAddress(ipAddress: address, port: 0)) == nil ? host : nil
        }
    }
}
