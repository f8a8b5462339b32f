import ActivityLifecycle
import EventStore
import Logging

extension LivelineAPI {
    /// Records the erasure, then erases what waits (this one, usually all of it) before answering:
    /// 202 once recorded, even when the database failed after that — the log's maintenance
    /// finishes what is left, and a retry would find the device's rows gone already.
    func requestErasure(_ input: Operations.RequestErasure.Input) async throws -> Operations.RequestErasure.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let app = try Caller.app()
        let scope: ErasureScope =
            switch (body.activityId, body.deviceId) {
            case (let activity?, nil): .activity(activity)
            case (nil, let device?): .device(device)
            default:
                throw Problem.invalidErasure
            }
        let recorded: Erasure
        do {
            recorded = try await store.requestErasure(scope, in: app, by: .appAPI)
        } catch let refusal as ErasureRefusal {
            throw Problem(refusal)
        }
        do {
            try await store.eraseWaitingActivities()
        } catch {
            // Recorded: the answer says so, and the log's maintenance finishes it.
            logger.warning(
                "an erasure was recorded, and its activities are left to the maintenance",
                metadata: ["erasure": "\(recorded.id)", "error": "\(String(reflecting: error))"]
            )
        }
        let erasure = (try? await store.erasure(recorded.id, in: app)).flatMap { $0 } ?? recorded
        return .accepted(.init(body: .json(.init(erasure))))
    }

    func getErasure(_ input: Operations.GetErasure.Input) async throws -> Operations.GetErasure.Output {
        guard let erasure = try await store.erasure(input.path.erasureId, in: try Caller.app()) else {
            throw Problem.erasureNotFound(input.path.erasureId)
        }
        return .ok(.init(body: .json(.init(erasure))))
    }
}

extension Components.Schemas.Erasure {
    init(_ erasure: Erasure) {
        self.init(
            erasureId: erasure.id,
            scope: erasure.activity == nil ? .device : .activity,
            activityId: erasure.activity,
            erasedDeviceId: erasure.activity == nil ? erasure.erasedDeviceID : nil,
            requestedBy: erasure.requestedBy == .appAPI ? .appApi : .commandLine,
            requestedAt: erasure.requestedAt,
            finishedAt: erasure.finishedAt,
            activities: erasure.activities,
            erased: erasure.erased
        )
    }
}
