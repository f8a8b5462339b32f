import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A certificate for `localhost` and `127.0.0.1`, made and signed by its own key at start-up.
/// Clients trust it by its PEM (the local APNs' "trusted CA").
struct SelfSignedCertificate {
    let certificate: NIOSSLCertificate
    let privateKey: NIOSSLPrivateKey
    /// The certificate in PEM, for a client's trust roots.
    let pem: String

    init() throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName("Liveline local APNs")
        }
        let now = Date()
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 24 * 3600),
            issuer: name,
            subject: name,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: Certificate.PrivateKey(key)
        )
        pem = try certificate.serializeAsPEM().pemString
        self.certificate = try NIOSSLCertificate(bytes: Array(pem.utf8), format: .pem)
        privateKey = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
    }
}
