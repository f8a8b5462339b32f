import PropertyBased
import PropertyChecks
import Testing

/// `checkProperty` fails a property whose body throws, which `propertyCheck` lets pass.
@Suite("Property checks")
struct CheckPropertyTests {
    struct Thrown: Error {}

    /// `withKnownIssue` fails unless an issue is recorded: `propertyCheck` records none here.
    @Test("an error a property's body throws is an issue of the check")
    func thrownErrorsFail() async {
        await withKnownIssue {
            await checkProperty(count: 5, input: Gen.int(in: 0...3)) { _ in throw Thrown() }
        }
        await withKnownIssue {
            await checkProperty(count: 5, input: Gen.int(in: 0...3), Gen.bool()) { value, _ in
                if value >= 0 { throw Thrown() }
            }
        }
    }
}
