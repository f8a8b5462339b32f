import EventStore
import Testing

@Suite("The rules of app settings, shared by the admin API and `liveline apps`")
struct AppSettingsTests {
    @Test("defaults are valid; each setting outside its range names its field")
    func rules() throws {
        #expect(try AppSettings(bundleID: "com.example").validated() == AppSettings(bundleID: "com.example"))
        let broken: [(AppSettings, String)] = [
            (AppSettings(bundleID: ""), "bundleId"),
            (AppSettings(bundleID: String(repeating: "b", count: 256)), "bundleId"),
            (AppSettings(bundleID: "b", maxOpen: -1), "maxOpen"),
            (AppSettings(bundleID: "b", maxOpen: Int(Int32.max) + 1), "maxOpen"),
            (AppSettings(bundleID: "b", maxOpenPerDevice: 0), "maxOpenPerDevice"),
            (AppSettings(bundleID: "b", priorityBudgetPerHour: -5), "priorityBudgetPerHour"),
        ]
        for (settings, field) in broken {
            do {
                _ = try settings.validated()
                Issue.record("\(settings) was accepted")
            } catch {
                #expect(error.field == field)
            }
        }
        #expect(try AppSettings(bundleID: "b", maxOpen: 0, maxOpenPerDevice: 1).validated().maxOpen == 0)
    }
}
