import Foundation

/// openapi.yaml, the API's contract: the routing is generated from it at build time, and the
/// server serves it as a resource of this module.
public enum OpenAPIDocument {
    public static func bytes() throws -> [UInt8] {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return Array(try Data(contentsOf: url))
    }
}
