import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

/// The support console over plain HTTP: sessions (cookie, expiry by revocation, sign-out, CSRF),
/// every page's status and headers, content masked until an admin reveals it, values escaped,
/// and an app's key kept to its app.
@Suite("The support console over HTTP: sessions, pages, escaping, masking, one app per key")
struct ConsoleTests {
    /// Content no page may show unmasked, nor as markup.
    static let hostile = #"<script>window.pwned=1</script> "quoted" 'single'"#

    /// A browser of the console: the session cookie it holds.
    struct Browser {
        let fixture: APIFixture
        var cookie: String?

        func get(_ path: String, headers: HTTPFields = [:]) async throws -> TestResponse {
            var headers = headers
            if let cookie { headers[.cookie] = cookie }
            return try await fixture.send(.get, path, key: nil, headers: headers)
        }

        func post(_ path: String, form: [(String, String)], headers: HTTPFields = [:]) async throws -> TestResponse {
            var headers = headers
            if let cookie { headers[.cookie] = cookie }
            let body = form.map { "\(Self.encoded($0.0))=\(Self.encoded($0.1))" }.joined(separator: "&")
            return try await fixture.send(
                .post,
                path,
                key: nil,
                headers: headers,
                body: Array(body.utf8),
                contentType: "application/x-www-form-urlencoded"
            )
        }

        /// Signs in with `key`; the session's cookie from then on.
        mutating func signIn(_ key: String) async throws {
            let response = try await post("/console/sign-in", form: [("key", key)])
            #expect(response.status == .seeOther)
            #expect(response.headers[.location] == "/console")
            let cookie = try #require(response.headers[.setCookie])
            self.cookie = String(cookie.prefix { $0 != ";" })
        }

        /// The CSRF token the page's forms carry.
        static func csrf(in page: String) throws -> String {
            let marker = #"name="csrf" value=""#
            let start = try #require(page.range(of: marker)).upperBound
            return String(page[start...].prefix { $0 != "\"" })
        }

        private static func encoded(_ text: String) -> String {
            text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
        }
    }

    /// Requests an activity of the app holding `key`, with hostile content and a device.
    static func requestActivity(
        _ id: String,
        device: String,
        token: String?,
        in fixture: APIFixture,
        key: String
    )
        async throws
    {
        var body: [String: JSONValue] = [
            "activityId": .string(id), "activityType": .string("Order<b>Type</b>"),
            "attributes": .object(["note": .string(hostile)]),
            "contentState": .object(["stage": .string(hostile)]), "deviceId": .string(device),
        ]
        if token == nil { body["relevanceScore"] = .number(JSONNumber(10)) }
        let response = try await fixture.send(.post, "/v1/activities", key: key, body: JSONObject(body).canonicalJSON)
        #expect(response.status == .created)
        if let token {
            let registered = try await fixture.send(
                .put,
                "/v1/activities/\(id)/push-token",
                key: key,
                body: Array(#"{"pushToken":"\#(token)"}"#.utf8)
            )
            #expect(registered.status == .ok)
        }
    }

    static func html(_ response: TestResponse) -> String { String(buffer: response.body) }

    @Test("a page without a session sends the browser to sign in; every page carries the console's headers")
    func signInFirst() async throws {
        try await APIFixture.run { fixture in
            let browser = Browser(fixture: fixture)
            for path in ["/console", "/console/search?q=x", "/console/apps/any", "/console/apps/any/activities/a"] {
                let response = try await browser.get(path)
                #expect(response.status == .seeOther, "\(path)")
                #expect(response.headers[.location] == "/console/sign-in", "\(path)")
            }
            let page = try await browser.get("/console/sign-in")
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"))
            #expect(!policy.contains("script-src"))
            #expect(page.headers[.xContentTypeOptions] == "nosniff")
            #expect(page.headers[.cacheControl] == "no-store")
            #expect(page.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            #expect(Self.html(page).contains(#"<form method="post" action="/console/sign-in""#))
            let stylesheet = try await browser.get("/console/console.css")
            #expect(stylesheet.status == .ok && stylesheet.headers[.contentType] == "text/css; charset=utf-8")
        }
    }

    @Test(
        "sign-in: a wrong or empty key is refused and opens nothing; the cookie is HttpOnly, SameSite=Strict, Secure behind TLS"
    )
    func signIn() async throws {
        try await APIFixture.run { fixture in
            var browser = Browser(fixture: fixture)
            let wrong = try await browser.post("/console/sign-in", form: [("key", "not-a-key")])
            #expect(wrong.status == .unauthorized)
            #expect(wrong.headers[.setCookie] == nil)
            #expect(Self.html(wrong).contains("The key is unknown or revoked."))
            let empty = try await browser.post("/console/sign-in", form: [("key", "  ")])
            #expect(empty.status == .badRequest)
            let elsewhere = try await browser.post(
                "/console/sign-in",
                form: [("key", APIFixture.adminKey)],
                headers: [.origin: "https://attacker.example"]
            )
            #expect(elsewhere.status == .forbidden && elsewhere.headers[.setCookie] == nil)

            let signedIn = try await browser.post("/console/sign-in", form: [("key", APIFixture.adminKey)])
            let cookie = try #require(signedIn.headers[.setCookie])
            #expect(cookie.hasPrefix("liveline_console="))
            for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=28800"] {
                #expect(cookie.contains(attribute), "\(cookie)")
            }
            #expect(!cookie.contains("Secure"))
            let overTLS = try await browser.post(
                "/console/sign-in",
                form: [("key", APIFixture.adminKey)],
                headers: [HTTPField.Name("X-Forwarded-Proto")!: "https"]
            )
            #expect(overTLS.headers[.setCookie]?.contains("Secure") == true)

            try await browser.signIn(APIFixture.adminKey)
            let home = try await browser.get("/console")
            #expect(home.status == .ok)
            #expect(Self.html(home).contains(#"id="viewer">admin<"#))
            // A forged cookie is no session.
            browser.cookie = "liveline_console=" + String(repeating: "ab", count: 32)
            #expect(try await browser.get("/console").status == .seeOther)
        }
    }

    @Test("sign-out takes the session's CSRF token, ends the session and clears the cookie")
    func signOut() async throws {
        try await APIFixture.run { fixture in
            var browser = Browser(fixture: fixture)
            try await browser.signIn(APIFixture.adminKey)
            let page = Self.html(try await browser.get("/console"))
            let forged = try await browser.post(
                "/console/sign-out",
                form: [("csrf", String(repeating: "0", count: 64))]
            )
            #expect(forged.status == .forbidden)
            #expect(try await browser.get("/console").status == .ok)
            let out = try await browser.post("/console/sign-out", form: [("csrf", try Browser.csrf(in: page))])
            #expect(out.status == .seeOther && out.headers[.location] == "/console/sign-in")
            #expect(out.headers[.setCookie]?.contains("Max-Age=0") == true)
            #expect(try await browser.get("/console").status == .seeOther)
        }
    }

    @Test(
        "an app's key sees its app only: another app's pages are not found, its search finds nothing there, and revoking the key ends the session"
    )
    func oneAppPerKey() async throws {
        try await APIFixture.run { fixture in
            let (mine, _, myKey) = try await fixture.makeApp()
            let (theirs, _, theirKey) = try await fixture.makeApp()
            try await Self.requestActivity("shared-id", device: "phone-1", token: nil, in: fixture, key: myKey.key)
            try await Self.requestActivity("shared-id", device: "phone-2", token: nil, in: fixture, key: theirKey.key)
            var browser = Browser(fixture: fixture)
            try await browser.signIn(myKey.key)
            let home = try await browser.get("/console")
            #expect(home.status == .seeOther && home.headers[.location] == "/console/apps/\(mine)")
            #expect(try await browser.get("/console/apps/\(mine)").status == .ok)
            #expect(try await browser.get("/console/apps/\(mine)/activities/shared-id").status == .ok)
            for path in [
                "/console/apps/\(theirs)", "/console/apps/\(theirs)/activities/shared-id",
                "/console/apps/\(theirs)/devices/phone-2",
            ] {
                let response = try await browser.get(path)
                #expect(response.status == .notFound, "\(path)")
                #expect(Self.html(response).contains("Nothing here"))
            }
            let search = Self.html(try await browser.get("/console/search?q=shared-id"))
            #expect(search.contains("/console/apps/\(mine)/activities/shared-id"))
            #expect(!search.contains("/console/apps/\(theirs)/"))
            #expect(!Self.html(try await browser.get("/console/search?q=phone-2")).contains("phone-2</a>"))
            // Only the admin reveals content.
            let page = Self.html(try await browser.get("/console/apps/\(mine)/activities/shared-id"))
            #expect(!page.contains(#"id="reveal""#))
            let reveal = try await browser.post(
                "/console/apps/\(mine)/activities/shared-id/reveal",
                form: [("csrf", try Browser.csrf(in: page))]
            )
            #expect(reveal.status == .forbidden)

            let revoked = try await fixture.send(
                .delete,
                "/v1/admin/apps/\(mine)/keys/\(myKey.keyId)",
                key: APIFixture.adminKey
            )
            #expect(revoked.status == .noContent)
            #expect(try await browser.get("/console/apps/\(mine)").status == .seeOther)
        }
    }

    @Test("the timeline masks content, escapes every value, and the admin's reveal shows it escaped and is audited")
    func timelineMaskedEscapedRevealed() async throws {
        try await APIFixture.run { fixture in
            let (app, _, key) = try await fixture.makeApp()
            try await Self.requestActivity(
                "order-1",
                device: "phone-1",
                token: String(repeating: "c0", count: 32),
                in: fixture,
                key: key.key
            )
            var browser = Browser(fixture: fixture)
            try await browser.signIn(APIFixture.adminKey)
            let masked = try await browser.get("/console/apps/\(app)/activities/order-1")
            #expect(masked.status == .ok)
            let page = Self.html(masked)
            #expect(page.contains("activity.requested") && page.contains("activity.push_token_changed"))
            #expect(page.contains(#""stage":"•••""#.replacingOccurrences(of: "\"", with: "&quot;")))
            #expect(!page.contains("pwned"))
            #expect(page.contains("Order&lt;b&gt;Type&lt;/b&gt;") && !page.contains("<b>Type"))
            #expect(page.contains(String(repeating: "c0", count: 32)))

            let revealed = try await browser.post(
                "/console/apps/\(app)/activities/order-1/reveal",
                form: [("csrf", try Browser.csrf(in: page))]
            )
            #expect(revealed.status == .ok)
            let shown = Self.html(revealed)
            #expect(shown.contains("&lt;script&gt;window.pwned=1&lt;/script&gt;"))
            #expect(!shown.contains("<script>"))
            #expect(shown.contains("&quot;quoted&quot;") || shown.contains("\\&quot;quoted\\&quot;"))
            #expect(shown.contains("&#39;single&#39;"))
            let audit = try await fixture.store.adminChanges(of: app, limit: 10)
            #expect(audit.first?.action == "content.revealed" && audit.first?.actor == "console")
            #expect(audit.first?.details.members["activityId"] == .string("order-1"))

            let missing = try await browser.get("/console/apps/\(app)/activities/no-such")
            #expect(missing.status == .notFound)
            let invalid = try await browser.get("/console/apps/\(app)/activities/%3Cscript%3E")
            #expect(invalid.status == .notFound)
            #expect(!Self.html(invalid).contains("<script>"))
        }
    }

    @Test(
        "search by activity id, device id and a token's first digits; the device and health pages show what the app has"
    )
    func searchDeviceHealth() async throws {
        try await APIFixture.run { fixture in
            let (app, _, key) = try await fixture.makeApp()
            let token = "ab12cd34" + String(repeating: "ef", count: 28)
            try await Self.requestActivity("trip-7", device: "rider-9", token: token, in: fixture, key: key.key)
            let startToken = "fe98dc76" + String(repeating: "01", count: 28)
            let registered = try await fixture.send(
                .put,
                "/v1/devices/rider-9/push-to-start-tokens/RideAttributes",
                key: key.key,
                body: Array(#"{"pushToStartToken":"\#(startToken)"}"#.utf8)
            )
            #expect(registered.status == .ok || registered.status == .created)
            var browser = Browser(fixture: fixture)
            try await browser.signIn(key.key)

            let byID = Self.html(try await browser.get("/console/search?q=trip-7"))
            #expect(byID.contains(#"href="/console/apps/\#(app)/activities/trip-7""#))
            let byDevice = Self.html(try await browser.get("/console/search?q=rider-9"))
            #expect(byDevice.contains(#"href="/console/apps/\#(app)/devices/rider-9""#))
            let byToken = Self.html(try await browser.get("/console/search?q=AB12CD34"))
            #expect(byToken.contains("/console/apps/\(app)/activities/trip-7"))
            let byStartToken = Self.html(try await browser.get("/console/search?q=fe98dc76"))
            #expect(byStartToken.contains("/console/apps/\(app)/devices/rider-9"))
            let nothing = Self.html(try await browser.get("/console/search?q=%3Cnothing%3E"))
            #expect(nothing.contains(#"id="nothing-found""#) && nothing.contains("&lt;nothing&gt;"))

            let device = try await browser.get("/console/apps/\(app)/devices/rider-9")
            #expect(device.status == .ok)
            let devicePage = Self.html(device)
            #expect(
                devicePage.contains("trip-7") && devicePage.contains(startToken)
                    && devicePage.contains("RideAttributes")
            )
            #expect(try await browser.get("/console/apps/\(app)/devices/nobody").status == .notFound)

            let health = try await browser.get("/console/apps/\(app)")
            #expect(health.status == .ok)
            let healthPage = Self.html(health)
            #expect(healthPage.contains("Open activities against each cap"))
            #expect(healthPage.contains("<td>app</td><td>1</td><td>5</td>"))
            #expect(healthPage.contains("none set"))
            #expect(healthPage.contains("events_"))
            #expect(try await browser.get("/console/no/such/page").status == .notFound)
        }
    }
}
