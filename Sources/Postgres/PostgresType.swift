/// The type OID of a parameter or a result column.
public struct PostgresType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public static let bool = PostgresType(rawValue: 16)
    public static let bytea = PostgresType(rawValue: 17)
    public static let name = PostgresType(rawValue: 19)
    public static let int8 = PostgresType(rawValue: 20)
    public static let int2 = PostgresType(rawValue: 21)
    public static let int4 = PostgresType(rawValue: 23)
    public static let text = PostgresType(rawValue: 25)
    public static let oid = PostgresType(rawValue: 26)
    public static let json = PostgresType(rawValue: 114)
    public static let float4 = PostgresType(rawValue: 700)
    public static let float8 = PostgresType(rawValue: 701)
    public static let bpchar = PostgresType(rawValue: 1042)
    public static let varchar = PostgresType(rawValue: 1043)
    public static let timestamp = PostgresType(rawValue: 1114)
    public static let timestamptz = PostgresType(rawValue: 1184)
    public static let uuid = PostgresType(rawValue: 2950)
    public static let jsonb = PostgresType(rawValue: 3802)
    public static let xid8 = PostgresType(rawValue: 5069)
    public static let boolArray = PostgresType(rawValue: 1000)
    public static let byteaArray = PostgresType(rawValue: 1001)
    public static let int4Array = PostgresType(rawValue: 1007)
    public static let textArray = PostgresType(rawValue: 1009)
    public static let int8Array = PostgresType(rawValue: 1016)
    public static let float8Array = PostgresType(rawValue: 1022)
    public static let timestamptzArray = PostgresType(rawValue: 1185)
    public static let jsonbArray = PostgresType(rawValue: 3807)

    public var description: String {
        switch self {
        case .bool: "bool"
        case .bytea: "bytea"
        case .name: "name"
        case .int8: "int8"
        case .int2: "int2"
        case .int4: "int4"
        case .text: "text"
        case .oid: "oid"
        case .json: "json"
        case .float4: "float4"
        case .float8: "float8"
        case .bpchar: "bpchar"
        case .varchar: "varchar"
        case .timestamp: "timestamp"
        case .timestamptz: "timestamptz"
        case .uuid: "uuid"
        case .jsonb: "jsonb"
        case .xid8: "xid8"
        case .boolArray: "bool[]"
        case .int4Array: "int4[]"
        case .textArray: "text[]"
        case .int8Array: "int8[]"
        case .float8Array: "float8[]"
        case .timestamptzArray: "timestamptz[]"
        case .jsonbArray: "jsonb[]"
        default: "oid \(rawValue)"
        }
    }
}
