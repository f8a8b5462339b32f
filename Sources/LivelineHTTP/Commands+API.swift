import ActivityLifecycle

extension Command {
    /// The command of `registerPushToken`, from the body the generated code decoded.
    static func registerPushToken(_ body: Components.Schemas.PushTokenRegistration) throws -> Command {
        guard body.pushToken.isVisibleASCII(lengths: 1...512) else {
            throw Problem.invalidRequest("pushToken must be 1–512 visible ASCII characters.", field: "/pushToken")
        }
        return .registerPushToken(body.pushToken)
    }
}
