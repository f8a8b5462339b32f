/// The isolation level a transaction runs at.
public enum IsolationLevel: Sendable, CaseIterable {
    case readCommitted
    case repeatableRead
    case serializable

    /// The statement that starts a transaction at this level.
    var beginStatement: String {
        switch self {
        case .readCommitted: "BEGIN ISOLATION LEVEL READ COMMITTED"
        case .repeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ"
        case .serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE"
        }
    }
}
