public import ActivityLifecycle
public import CanonicalJSON
public import Foundation

/// What an erasure removes: one activity of an app, or every activity of one of its devices with
/// the device's tokens (docs/decisions/0040).
public enum ErasureScope: Hashable, Sendable {
    case activity(ActivityID)
    case device(DeviceID)

    /// The device of a device's erasure.
    public var device: DeviceID? {
        guard case .device(let device) = self else { return nil }
        return device
    }
}

/// Who asked for an erasure, as it is recorded.
public enum ErasureRequester: String, Hashable, Sendable {
    /// The app's backend, with its key.
    case appAPI = "app_api"
    /// `liveline erase`.
    case commandLine = "command_line"
}

/// An erasure as it is recorded: who asked, when, its scope, and how far it got. It names no
/// device, token or content: a device is named by the reference that stands for it in the log
/// from then on (`erased:<reference>`).
public struct Erasure: Hashable, Sendable {
    public let id: Int64
    public let app: AppID
    /// The activity of an activity's erasure; `nil` for a device's.
    public let activity: ActivityID?
    public let reference: UUID
    public let requestedBy: ErasureRequester
    public let requestedAt: Timestamp
    /// When its last activity was erased; `nil` while some are still to be.
    public let finishedAt: Timestamp?
    /// The activities it erases, and those erased so far.
    public let activities: Int
    public let erased: Int

    /// The device id that stands for the erased device in the log.
    public var erasedDeviceID: DeviceID { DeviceID(uncheckedRawValue: "erased:\(reference.uuidString.lowercased())") }
}

/// Why an erasure was not recorded.
public enum ErasureRefusal: Error, Hashable, Sendable {
    /// The app knows nothing of the device: no activity, token or reload names it, and no archive
    /// does. (An activity named alone is always erased: archives may hold it, and nothing in the
    /// database says which activities they hold.)
    case deviceNotFound(DeviceID)
    /// Activities still on a screen, or not yet dismissed, that the app must end (with
    /// `dismissal: immediate`) first: an erased activity could still be sent a push.
    case notDismissed([ActivityID])
}
