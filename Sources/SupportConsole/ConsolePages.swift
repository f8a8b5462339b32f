import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import NIOCore

/// The console's templates (`Templates/`, Mustache, which escapes every value it writes into
/// HTML) and its files (`Assets/`: the stylesheet and the icon), and the headers every console
/// response carries.
struct ConsolePages: Sendable {
    let library: MustacheLibrary
    /// Each file of `Assets/` by name, with its content type.
    let assets: [String: (contentType: String, bytes: ByteBuffer)]

    static let assetTypes = ["console.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"]

    /// The console's own page may load its stylesheet, post its forms to itself, and nothing else:
    /// no script, no frame, no other origin.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static func load() throws -> ConsolePages {
        guard let templates = Bundle.module.url(forResource: "Templates", withExtension: nil),
            let folder = Bundle.module.url(forResource: "Assets", withExtension: nil)
        else { throw CocoaError(.fileNoSuchFile) }
        var library = MustacheLibrary()
        for file in try FileManager.default.contentsOfDirectory(at: templates, includingPropertiesForKeys: nil)
        where file.pathExtension == "mustache" {
            try library.register(
                String(decoding: try Data(contentsOf: file), as: UTF8.self),
                named: file.deletingPathExtension().lastPathComponent
            )
        }
        var assets: [String: (contentType: String, bytes: ByteBuffer)] = [:]
        for (name, contentType) in assetTypes {
            assets[name] = (contentType, ByteBuffer(bytes: try Data(contentsOf: folder.appending(path: name))))
        }
        return ConsolePages(library: library, assets: assets)
    }

    /// `template` rendered with `context`.
    func page(_ template: String, _ context: Any, status: HTTPResponse.Status = .ok) -> Response {
        let html = library.render(context, withTemplate: template) ?? ""
        return Self.response(status, contentType: "text/html; charset=utf-8", body: ByteBuffer(string: html))
    }

    /// The file of `Assets/` named `name`, or `nil`.
    func asset(_ name: String) -> Response? {
        assets[name].map { Self.response(.ok, contentType: $0.contentType, body: $0.bytes, cached: true) }
    }

    /// A redirect to `location` after a form, or to sign in.
    static func redirect(to location: String) -> Response {
        var response = response(.seeOther, contentType: "text/plain; charset=utf-8", body: ByteBuffer())
        response.headers[.location] = location
        return response
    }

    private static func response(
        _ status: HTTPResponse.Status,
        contentType: String,
        body: ByteBuffer,
        cached: Bool = false
    ) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: contentType,
                .contentSecurityPolicy: contentSecurityPolicy,
                .xContentTypeOptions: "nosniff",
                .xFrameOptions: "DENY",
                // Same-origin form posts carry their Origin, which the console checks.
                .referrerPolicy: "same-origin",
                .cacheControl: cached ? "public, max-age=3600" : "no-store",
            ],
            body: .init(byteBuffer: body)
        )
    }
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
