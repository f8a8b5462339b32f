import ActivityLifecycle
import Foundation
import HTTPTypes
import LocalAPNs
import TestSupport
import Testing

/// The support console in a real browser: `liveline serve` seeded with an activity whose push
/// APNs refused, then scripts/console-browser-test.py drives Debian's chromium through it with
/// Selenium (sign in, search, the timeline and its APNs reason, another app's activity refused,
/// hostile content inert, sign out). scripts/install-dependencies.sh installs the browser.
@Suite("The support console in chromium", .serialized)
struct ConsoleBrowserTests {
    static let adminKey = "browser-admin-key"
    static let token = String(repeating: "5e", count: 32)
    static let browserTools = ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"]

    @Test("sign in, search, read a push's APNs reason, another app's activity refused, content inert, sign out")
    func console() async throws {
        for tool in Self.browserTools {
            try #require(
                FileManager.default.isExecutableFile(atPath: tool),
                "\(tool) is missing: scripts/install-dependencies.sh installs chromium, chromium-driver and python3-selenium"
            )
        }
        let (shop, other) = (AppID(rawValue: "shop")!, AppID(rawValue: "other")!)
        let served = try await ServedApps.make([shop, other])
        let (server, port) = try await Loopback.startServer(
            ["serve"],
            database: served.database,
            environment: served.environment.merging(["LIVELINE_ADMIN_KEY": Self.adminKey]) { $1 }
        )
        defer { server.terminate() }
        let key = served.keys[shop]!
        // APNs refuses the activity's pushes: the timeline shows why.
        served.apns.fail(.status(400, reason: "DeviceTokenNotForTopic"), times: 100, deviceToken: Self.token)
        let requested = try await ServedApps.call(
            port: port,
            .post,
            "/v1/activities",
            #"""
            {"activityId":"order-1","activityType":"Order<b>Type</b>","deviceId":"phone-1",
             "attributes":{"note":"<script>window.pwned=1</script> \"quoted\" 'single'"},
             "contentState":{"stage":"<script>window.pwned=1</script> \"quoted\" 'single'"}}
            """#,
            key: key
        )
        #expect(requested.status == .created)
        let registered = try await ServedApps.call(
            port: port,
            .put,
            "/v1/activities/order-1/push-token",
            #"{"pushToken":"\#(Self.token)"}"#,
            key: key
        )
        #expect(registered.status == .ok)
        #expect(
            try await ServedApps.call(
                port: port,
                .post,
                "/v1/activities/order-1/updates",
                #"{"contentState":{"stage":"packed"}}"#,
                key: key
            ).status == .ok
        )
        var refused = false
        for _ in 0..<300 where !refused {
            let deliveries = try await ServedApps.call(
                port: port,
                .get,
                "/v1/activities/order-1/deliveries",
                nil,
                key: key
            )
            refused = deliveries.body.contains("DeviceTokenNotForTopic")
            if !refused { try await Task.sleep(for: .milliseconds(50)) }
        }
        try #require(refused, "APNs' refusal was not recorded")
        let secret = try await ServedApps.call(
            port: port,
            .post,
            "/v1/activities",
            #"{"activityId":"secret-1","activityType":"T","contentState":{"n":1}}"#,
            key: served.keys[other]!
        )
        #expect(secret.status == .created)

        let browser = Process()
        browser.executableURL = URL(filePath: "/usr/bin/python3")
        browser.arguments = [
            "scripts/console-browser-test.py", "http://127.0.0.1:\(port)", Self.adminKey, key, "shop", "order-1",
            "DeviceTokenNotForTopic", "other", "secret-1",
        ]
        let output = Pipe()
        browser.standardOutput = output
        browser.standardError = output
        try browser.run()
        let printed = try await Task.detached { try output.fileHandleForReading.readToEnd() ?? Data() }.value
        browser.waitUntilExit()
        #expect(browser.terminationStatus == 0, "\(String(decoding: printed, as: UTF8.self))")
        try await served.apns.shutdown()
    }
}
