package import CanonicalJSON
package import Postgres

extension PostgresTimestamp {
    package init(_ timestamp: Timestamp) {
        self.init(microsecondsSince1970: timestamp.microsecondsSince1970)
    }
}

extension Timestamp {
    package init(_ timestamp: PostgresTimestamp) {
        self.init(microsecondsSince1970: timestamp.microsecondsSince1970)
    }
}
