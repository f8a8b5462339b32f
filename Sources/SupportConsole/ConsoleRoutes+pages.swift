import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation
import Hummingbird
import LogArchive

/// The console's pages: each reads what it shows through the store and renders its template.
extension ConsoleRoutes {
    func home(_ session: ConsoleSession) async throws -> Response {
        guard case .admin = session.viewer else {
            guard case .app(let app) = session.viewer else { throw ConsolePageError.notFound }
            return ConsolePages.redirect(to: "/console/apps/\(app)")
        }
        let apps = try await store.apps().map {
            AppsPage.AppRow(id: $0.app.rawValue, bundleID: $0.settings.bundleID, open: $0.openActivities)
        }
        return pages.page("apps", AppsPage(viewer: ViewerView(session), apps: apps))
    }

    func search(_ request: Request, _ session: ConsoleSession) async throws -> Response {
        let query = (request.uri.queryParameters.get("q") ?? "").trimmingCharacters(in: .whitespaces)
        let apps: [AppID] =
            switch session.viewer {
            case .admin: try await store.apps().map(\.app)
            case .app(let app): [app]
            }
        let results = query.isEmpty ? nil : try await store.search(query, in: apps)
        return pages.page(
            "search",
            SearchPage(
                viewer: ViewerView(session),
                query: query,
                searched: results != nil,
                activities: results?.activities.map(ActivityRow.init) ?? [],
                devices: results?.devices.map { .init(app: $0.app.rawValue, device: $0.device.rawValue) } ?? []
            )
        )
    }

    func activity(_ stream: StreamID, _ session: ConsoleSession, masked: Bool) async throws -> Response {
        let audit = try await store.audit(
            of: stream,
            archives: console.configuration.archiveFolder,
            maskingContent: masked
        )
        guard !audit.entries.isEmpty else { throw ConsolePageError.notFound }
        let traces = try await store.traceContexts(
            of: audit.entries.compactMap { entry in
                guard let position = entry.position, let recordedAt = entry.recordedAt else { return nil }
                return (position, recordedAt)
            }
        )
        let page = ActivityPage(
            title: "Activity \(stream.activity)",
            viewer: ViewerView(session),
            app: stream.app.rawValue,
            id: stream.activity.rawValue,
            activity: try await store.activity(stream).map(ActivityRow.init),
            archive: audit.archive.map { "Retired: read from the archive of partition \($0.partition)." },
            masked: masked,
            entries: audit.entries.map { entry in
                entryView(entry, trace: entry.position.flatMap { traces[$0] })
            }
        )
        return pages.page("activity", page)
    }

    private func entryView(_ entry: AuditEntry, trace: TraceContext?) -> ActivityPage.EntryView {
        ActivityPage.EntryView(
            time: entry.occurredAt.description,
            type: entry.type,
            refused: entry.position == nil,
            cause: entry.cause?.rawValue,
            stateBefore: entry.stateBefore?.rawValue,
            stateAfter: entry.stateAfter?.rawValue,
            summary: entry.summary,
            data: String(decoding: entry.data.canonicalJSON, as: UTF8.self),
            problem: entry.problem,
            pushes: entry.deliveries.map(PushView.init),
            hasPushes: !entry.deliveries.isEmpty,
            token: entry.token.map { token in
                ActivityPage.TokenView(
                    kind: token.kind,
                    token: token.token,
                    invalidated: token.invalidated.map { "APNs \($0.status) \($0.reason) since \($0.invalidSince)" }
                )
            },
            reload: entry.reload?.summary,
            trace: trace.map { trace in
                let id = String(trace.traceID)
                return ActivityPage.TraceView(
                    id: id,
                    url: console.configuration.traceURLTemplate?.replacingOccurrences(of: "{traceId}", with: id)
                )
            }
        )
    }

    func device(_ device: DeviceID, of app: AppID, _ session: ConsoleSession) async throws -> Response {
        let overview = try await store.deviceOverview(device, of: app)
        guard !overview.isEmpty || !overview.starts.isEmpty else { throw ConsolePageError.notFound }
        let page = DevicePage(
            title: "Device \(device)",
            viewer: ViewerView(session),
            app: app.rawValue,
            device: device.rawValue,
            activities: overview.activities.map(ActivityRow.init),
            pushToStartTokens: overview.pushToStartTokens.map { token in
                DevicePage.StartTokenView(
                    activityType: token.slot.activityType,
                    token: token.current?.token,
                    registeredAt: token.current?.registeredAt.description,
                    unconfirmedInARow: token.current?.unconfirmedStartsInARow ?? 0,
                    suspect: token.current?.isSuspect ?? false,
                    lastChange: token.changes.last.map(Self.change) ?? ""
                )
            },
            reloadTokens: overview.reloadTokens.map { token in
                DevicePage.ReloadTokenView(
                    kind: Self.label(token.slot.kind),
                    token: token.current?.token,
                    registeredAt: token.current?.registeredAt.description,
                    lastChange: token.changes.last.map(Self.change) ?? ""
                )
            },
            starts: overview.starts.map { start in
                DevicePage.StartView(
                    activity: start.activity.rawValue,
                    activityType: start.activityType,
                    token: start.token,
                    acceptedAt: start.acceptedAt.description,
                    verdict: start.verdict?.rawValue ?? "waiting"
                )
            },
            pushes: overview.pushes.map(PushView.init)
        )
        return pages.page("device", page)
    }

    private static func label(_ kind: ReloadKind) -> String {
        switch kind {
        case .widgets: "widgets"
        case .control(let kind): "control \(kind)"
        }
    }

    private static func change(_ change: TokenChange) -> String {
        let answer = [change.status.map(String.init), change.reason].compactMap { $0 }.joined(separator: " ")
        return "\(change.kind.rawValue) at \(change.changedAt)" + (answer.isEmpty ? "" : " (APNs \(answer))")
    }

    func health(_ app: AppID, _ session: ConsoleSession) async throws -> Response {
        guard let health = try await store.health(of: app) else { throw ConsolePageError.notFound }
        let partitions = try await store.recordedPartitions(of: "events")
        let settings = health.settings
        let page = HealthPage(
            title: "App \(app)",
            viewer: ViewerView(session),
            app: app.rawValue,
            bundleID: settings.bundleID,
            caps: [
                .init(name: "app", open: health.openActivities, cap: "\(settings.maxOpen)"),
                .init(name: "service", open: health.openInService, cap: "\(health.serviceMaxOpen)"),
                .init(
                    name: "per device (busiest)",
                    open: health.busiestDevices.first?.open ?? 0,
                    cap: settings.maxOpenPerDevice.map(String.init) ?? "none"
                ),
            ],
            busiestDevices: health.busiestDevices.map { .init(device: $0.device.rawValue, open: $0.open) },
            deliveries: health.deliveriesLastHour.sorted { $0.key < $1.key }.map {
                .init(name: $0.key, count: $0.value)
            },
            credentials: health.credentials.map {
                "team \($0.teamID), key \($0.keyID), \($0.environment.rawValue), set at \($0.updatedAt)"
            },
            suspension: health.suspension.map {
                "APNs answered \($0.status) \($0.reason) at \($0.suspendedAt)"
                    + ($0.isCurrent ? "" : " — since lifted: the credentials were changed")
            },
            suspended: health.suspension?.isCurrent ?? false,
            heldPushes: health.heldPushes,
            startsWaiting: health.startsWaiting,
            verdicts: StartVerdict.allCases.map {
                .init(name: $0.rawValue, count: health.startVerdictsLastDay[$0] ?? 0)
            },
            retention: console.configuration.retention.map { "\($0.components.seconds / 86_400) days" },
            partitions: partitions.reversed().map { partition in
                .init(
                    name: partition.name,
                    from: partition.from,
                    to: partition.to,
                    state: partition.retired
                        ? (partition.archive == nil ? "retired" : "retired, archived")
                        : partition.live ? "live" : "detached"
                )
            }
        )
        return pages.page("health", page)
    }
}
