import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import LogArchive
import Logging

/// The console's routes: sign-in and sign-out, and the pages, each for a signed-in viewer who
/// may read the app it names (another app's page is not found, as in the API).
struct ConsoleRoutes<Context: RequestContext>: Sendable {
    let console: SupportConsole

    var store: EventStore { console.store }
    var pages: ConsolePages { console.pages }

    /// What a form may hold: far more than a key or a token.
    static var maximumFormSize: Int { 16 * 1024 }

    func register(on router: Router<Context>) {
        let group = router.group("console")
        group.get { request, _ in try await signedIn(request) { try await home($0) } }
        for name in ConsolePages.assetTypes.keys {
            group.get(RouterPath(name)) { _, _ in pages.asset(name)! }
        }
        group.get("sign-in") { _, _ in pages.page("sign-in", SignInPage(problem: nil)) }
        group.post("sign-in") { request, _ in try await signIn(request) }
        group.post("sign-out") { request, _ in try await signOut(request) }
        group.get("search") { request, _ in try await signedIn(request) { try await search(request, $0) } }
        group.get("apps/:app") { request, context in
            try await signedIn(request) { try await health(try Self.app(context, readBy: $0), $0) }
        }
        group.get("apps/:app/activities/:activity") { request, context in
            try await signedIn(request) { try await activity(try Self.stream(context, readBy: $0), $0, masked: true) }
        }
        group.post("apps/:app/activities/:activity/reveal") { request, context in
            try await signedIn(request, posting: true) { session in
                let stream = try Self.stream(context, readBy: session)
                guard session.viewer == .admin else {
                    throw ConsolePageError(.forbidden, "Only the admin reveals content.")
                }
                try await store.recordContentRevealed(of: stream, by: .console)
                console.logger.notice(
                    "console: content revealed",
                    metadata: ["app": "\(stream.app)", "activity": "\(stream.activity)"]
                )
                return try await activity(stream, session, masked: false)
            }
        }
        group.get("apps/:app/devices/:device") { request, context in
            try await signedIn(request) { session in
                let app = try Self.app(context, readBy: session)
                guard let device = context.parameters.get("device").flatMap(DeviceID.init(rawValue:)) else {
                    throw ConsolePageError.notFound
                }
                return try await self.device(device, of: app, session)
            }
        }
        group.get("**") { request, _ in
            try await signedIn(request) { _ in throw ConsolePageError.notFound }
        }
    }

    // MARK: Sessions

    private func session(of request: Request) async throws -> ConsoleSession? {
        guard let token = ConsoleSessionCookie.token(of: request) else { return nil }
        return try await store.consoleSession(
            digest: ConsoleSessionCookie.digest(token),
            adminKeyDigest: console.adminKey?.digest
        )
    }

    /// Runs `page` for the signed-in viewer, or sends the browser to sign in. A form post must come
    /// from the console's own page (its `Origin`) and carry the session's CSRF token.
    private func signedIn(
        _ request: Request,
        posting: Bool = false,
        _ page: (ConsoleSession) async throws -> Response
    ) async throws -> Response {
        do {
            guard let session = try await session(of: request) else {
                return ConsolePages.redirect(to: "/console/sign-in")
            }
            do {
                if posting {
                    let form = try await Self.form(request)
                    guard Self.isSameOrigin(request), form["csrf"] == session.csrfToken else {
                        throw ConsolePageError(
                            .forbidden,
                            "The form is stale or came from another site: reload the page."
                        )
                    }
                }
                return try await page(session)
            } catch let error as ConsolePageError {
                return pages.page("message", error.page(ViewerView(session)), status: error.status)
            }
        } catch {
            return unavailable(error)
        }
    }

    private func unavailable(_ error: any Error) -> Response {
        console.logger.error("console: the log could not be read", metadata: ["error": "\(error)"])
        return pages.page(
            "message",
            MessagePage(
                title: "Unavailable",
                viewer: nil,
                message: "The log could not be read just now. Try again in a moment."
            ),
            status: .serviceUnavailable
        )
    }

    private func signIn(_ request: Request) async throws -> Response {
        do {
            let form = try await Self.form(request)
            guard Self.isSameOrigin(request) else {
                return pages.page(
                    "sign-in",
                    SignInPage(problem: "Sign in from the console's own page."),
                    status: .forbidden
                )
            }
            let presented = form["key"]?.trimmingCharacters(in: .whitespaces) ?? ""
            guard !presented.isEmpty else {
                return pages.page("sign-in", SignInPage(problem: "Enter a key."), status: .badRequest)
            }
            let key: ConsoleSessionKey
            if let adminKey = console.adminKey, adminKey.matches(presented) {
                key = .admin(keyDigest: adminKey.digest)
            } else if let holder = try await store.keyHolder(secret: presented) {
                key = .app(holder.app, keyID: holder.keyID)
            } else {
                console.logger.info("console: a sign-in with an unknown or revoked key was refused")
                return pages.page(
                    "sign-in",
                    SignInPage(problem: "The key is unknown or revoked."),
                    status: .unauthorized
                )
            }
            let token = ConsoleSessionCookie.randomToken()
            try await store.openConsoleSession(
                digest: ConsoleSessionCookie.digest(token),
                key: key,
                csrfToken: ConsoleSessionCookie.randomToken(),
                expiresAt: Timestamp.now() + console.configuration.sessionLifetime
            )
            var response = ConsolePages.redirect(to: "/console")
            response.setCookie(
                ConsoleSessionCookie.cookie(token, lifetime: console.configuration.sessionLifetime, for: request)
            )
            return response
        } catch let error as ConsolePageError {
            return pages.page("sign-in", SignInPage(problem: error.message), status: error.status)
        } catch {
            return unavailable(error)
        }
    }

    private func signOut(_ request: Request) async throws -> Response {
        var response = try await signedIn(request, posting: true) { _ in
            if let token = ConsoleSessionCookie.token(of: request) {
                try await store.closeConsoleSession(digest: ConsoleSessionCookie.digest(token))
            }
            return ConsolePages.redirect(to: "/console/sign-in")
        }
        if response.status == .seeOther {
            response.setCookie(ConsoleSessionCookie.removal(for: request))
        }
        return response
    }

    /// Whether a form post comes from a page of this server: its `Origin`, when it sends one, is
    /// this host's (as the proxy in front of it forwards it).
    static func isSameOrigin(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        let host = request.headers[HTTPField.Name("X-Forwarded-Host")!] ?? request.head.authority
        guard let host else { return false }
        return origin == "http://\(host)" || origin == "https://\(host)"
    }

    /// The request's form (`application/x-www-form-urlencoded`), by field.
    static func form(_ request: Request) async throws -> [String: String] {
        guard let body = try? await request.body.collect(upTo: maximumFormSize) else {
            throw ConsolePageError(.contentTooLarge, "The form is too large.")
        }
        var fields: [String: String] = [:]
        for pair in String(buffer: body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.formDecoded(parts[0]) else { continue }
            fields[name] = parts.count == 2 ? Self.formDecoded(parts[1]) : ""
        }
        return fields
    }

    private static func formDecoded(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    // MARK: Parameters

    private static func app(_ context: Context, readBy session: ConsoleSession) throws -> AppID {
        guard let app = context.parameters.get("app").flatMap(AppID.init(rawValue:)), session.viewer.reads(app) else {
            throw ConsolePageError.notFound
        }
        return app
    }

    private static func stream(_ context: Context, readBy session: ConsoleSession) throws -> StreamID {
        let app = try app(context, readBy: session)
        guard let activity = context.parameters.get("activity").flatMap(ActivityID.init(rawValue:)) else {
            throw ConsolePageError.notFound
        }
        return StreamID(app: app, activity: activity)
    }
}

/// A page that cannot be shown, and why, as the viewer reads it.
struct ConsolePageError: Error {
    let status: HTTPResponse.Status
    let message: String

    init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    /// Not found — or another app's, which is the same to the viewer.
    static let notFound = ConsolePageError(.notFound, "Nothing here: no such page, or not one your key reads.")

    func page(_ viewer: ViewerView) -> MessagePage {
        MessagePage(title: status.reasonPhrase, viewer: viewer, message: message)
    }
}
