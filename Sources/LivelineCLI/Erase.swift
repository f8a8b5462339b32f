import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import EventLogTools
import EventStore

/// `liveline erase <app> --activity <id> | --device <id>`: a person's data removed from the log
/// (docs/event-log.md#erasure), as the API's `POST /v1/erasures` does it, recorded as asked from
/// the command line.
struct Erase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Erase one dismissed activity, or every activity of a device and its tokens, from the log."
    )

    @Argument(help: "The app id.") var app: String
    @Option(help: "The activity to erase.") var activity: String?
    @Option(help: "The device whose activities and tokens to erase.") var device: String?
    @Flag(help: "Print JSON instead of a line.") var json = false
    @OptionGroup var options: ConfigurationOptions

    func validate() throws {
        guard AppID(rawValue: app) != nil else {
            throw ValidationError("the app id must be \(IdentifierRules.requirement)")
        }
        switch (activity, device) {
        case (let activity?, nil):
            guard ActivityID(rawValue: activity) != nil else {
                throw ValidationError("--activity must be \(IdentifierRules.requirement)")
            }
        case (nil, let device?):
            guard DeviceID(rawValue: device) != nil else {
                throw ValidationError("--device must be \(IdentifierRules.requirement)")
            }
        default:
            throw ValidationError("name what to erase: --activity or --device, one of the two")
        }
    }

    var scope: ErasureScope {
        if let activity { .activity(ActivityID(rawValue: activity)!) } else { .device(DeviceID(rawValue: device!)!) }
    }

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            try await environment.withStore { store in
                let app = AppID(rawValue: app)!
                let recorded: Erasure
                do {
                    recorded = try await store.requestErasure(scope, in: app, by: .commandLine)
                } catch ErasureRefusal.deviceNotFound(let device) {
                    throw ConfigurationError("app \(app) knows nothing of the device \(device)")
                } catch ErasureRefusal.notDismissed(let activities) {
                    throw ConfigurationError(
                        "only dismissed activities are erased; end these with dismissal immediate first: "
                            + activities.map(\.rawValue).joined(separator: ", ")
                    )
                }
                // Recorded: should the rest fail, the server's maintenance finishes it, as the
                // printed erasure says (no `finishedAt`).
                try? await store.eraseWaitingActivities()
                let erasure = (try? await store.erasure(recorded.id)).flatMap { $0 } ?? recorded
                print(json ? try prettyJSON(ErasureReport(erasure)) : ErasureReport(erasure).line)
            }
        }
    }
}

/// An erasure as `liveline erase` prints it.
struct ErasureReport: Encodable {
    let erasureId: Int64
    let appId: String
    let scope: String
    let activityId: String?
    let erasedDeviceId: String?
    let activities: Int
    let erased: Int
    let requestedAt: String
    let finishedAt: String?

    init(_ erasure: Erasure) {
        erasureId = erasure.id
        appId = erasure.app.rawValue
        scope = erasure.activity == nil ? "device" : "activity"
        activityId = erasure.activity?.rawValue
        erasedDeviceId = erasure.activity == nil ? erasure.erasedDeviceID.rawValue : nil
        activities = erasure.activities
        erased = erasure.erased
        requestedAt = erasure.requestedAt.description
        finishedAt = erasure.finishedAt?.description
    }

    var line: String {
        "erasure \(erasureId) of app \(appId): \(erased) of \(activities) "
            + "activit\(activities == 1 ? "y" : "ies") erased"
            + (erasedDeviceId.map { "; the device is \($0) in the log from now on" } ?? "")
            + (finishedAt == nil ? " (the rest is finished by the server's maintenance)" : "")
    }
}
