import ActivityLifecycle
import CanonicalJSON
import EventStore
import Testing

@Suite("The push-to-start budget in the store: a device's remote starts of the last hour, from the log")
struct PushToStartBudgetTests {
    static func remoteStart(device: String) -> Command {
        guard case .request(var request) = requestCommand(device: device) else { preconditionFailure("a request") }
        request.remoteStart = RemoteStart(pushToStartToken: "aa01", alert: Alert(title: "t", body: "b"))
        return .request(request)
    }

    @Test("remote starts arriving together for one device admit exactly the budget, in one batch or several")
    func together() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "b", maxOpen: 100, pushToStartBudgetPerHour: 3)
        )
        let outcomes = try await fixture.withStore(connections: 4, writers: 1) { store in
            try await withThrowingTaskGroup(of: CommandResult.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        try await store.execute(
                            Self.remoteStart(device: index.isMultiple(of: 2) ? "phone-1" : "phone-2"),
                            on: fixture.stream("start-\(index)"),
                            at: fixture.now
                        )
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(outcomes.filter { $0.accepted != nil }.count == 6)
        #expect(outcomes.filter { $0.rejection?.code == "push_to_start_budget_exhausted" }.count == 6)
        // A request the app starts itself is not a remote start: the budget does not apply.
        try await fixture.withStore { store in
            let local = try await store.execute(
                requestCommand(device: "phone-1"),
                on: fixture.stream("local"),
                at: fixture.now
            )
            #expect(local.accepted != nil)
            // An hour later, the device has its budget again.
            let later = try await store.execute(
                Self.remoteStart(device: "phone-1"),
                on: fixture.stream("later"),
                at: fixture.now + .seconds(3_601)
            )
            #expect(later.accepted != nil)
        }
    }
}
