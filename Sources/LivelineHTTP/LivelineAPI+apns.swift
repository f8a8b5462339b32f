import ActivityLifecycle
import EventStore

extension LivelineAPI {
    func setAPNsCredentials(
        _ input: Operations.SetAPNsCredentials.Input
    ) async throws -> Operations.SetAPNsCredentials.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let app = try Self.appID(input.path.appId)
        let credentials = try APNsCredentials(body)
        guard let secretKey = dependencies.secretKey else { throw Problem.secretKeyNotConfigured }
        let summary = try await store.setAPNsCredentials(credentials, for: app, sealedWith: secretKey, by: .adminAPI)
        return .ok(.init(body: .json(.init(summary))))
    }

    func getAPNsCredentials(
        _ input: Operations.GetAPNsCredentials.Input
    ) async throws -> Operations.GetAPNsCredentials.Output {
        let app = try Self.appID(input.path.appId)
        guard let summary = try await store.apnsCredentialSummary(of: app) else {
            guard try await store.app(app) != nil else { throw Problem.appNotFound(app) }
            throw Problem.apnsCredentialsNotFound(app)
        }
        return .ok(.init(body: .json(.init(summary))))
    }

    func removeAPNsCredentials(
        _ input: Operations.RemoveAPNsCredentials.Input
    ) async throws -> Operations.RemoveAPNsCredentials.Output {
        let app = try Self.appID(input.path.appId)
        if try await !store.removeAPNsCredentials(of: app, by: .adminAPI), try await store.app(app) == nil {
            throw Problem.appNotFound(app)
        }
        return .noContent(.init())
    }
}

extension APNsCredentials {
    /// The credentials of a request, held to their rules: a 400 naming the field otherwise, or a
    /// 422 for a well-formed PEM that is not a P-256 private key.
    init(_ body: Components.Schemas.APNsCredentialsInput) throws {
        do {
            try self.init(
                teamID: body.teamId,
                keyID: body.keyId,
                environment: APNsEnvironment(body.environment),
                privateKeyPEM: body.privateKey
            )
        } catch  where error.isWellFormed {
            throw Problem.unusableAPNsKey("\(error.field) \(error.reason).", field: "/\(error.field)")
        } catch {
            throw Problem.invalidRequest("\(error.field) \(error.reason).", field: "/\(error.field)")
        }
    }
}

extension APNsEnvironment {
    init(_ environment: Components.Schemas.APNsEnvironment) {
        switch environment {
        case .sandbox: self = .sandbox
        case .production: self = .production
        }
    }
}

extension Components.Schemas.APNsEnvironment {
    init(_ environment: APNsEnvironment) {
        switch environment {
        case .sandbox: self = .sandbox
        case .production: self = .production
        }
    }
}

extension Components.Schemas.APNsCredentials {
    init(_ summary: APNsCredentialSummary) {
        self.init(
            appId: summary.app,
            teamId: summary.teamID,
            keyId: summary.keyID,
            environment: .init(summary.environment),
            publicKeySha256: summary.publicKeySHA256,
            updatedAt: summary.updatedAt
        )
    }
}
