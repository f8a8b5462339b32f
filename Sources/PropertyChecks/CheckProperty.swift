public import PropertyBased
public import Testing

// `propertyCheck` (swift-property-based 2.0.1, with Swift 6.2 or later) counts the issues its
// body records, and drops an error its body throws (`try?` around the body's scope): a property
// whose body threw — a database error, a row that would not decode — passed. `checkProperty`
// runs the same check, and records what the body throws as an issue of the run that threw it, so
// that it fails, shrinks and reports its seed like any other. (An error of `#require` was
// recorded as it was thrown.)

/// `propertyCheck`, with an error `body` throws recorded as an issue.
public func checkProperty<InputValue, ResultValue>(
    count: Int = 100,
    input: Generator<ResultValue, some Sequence<InputValue>>,
    perform body: (ResultValue) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    await propertyCheck(
        count: count,
        input: input,
        perform: { value in
            do {
                try await body(value)
            } catch is ExpectationFailedError {
            } catch {
                Issue.record(error, sourceLocation: sourceLocation)
            }
        },
        isolation: isolation,
        sourceLocation: sourceLocation
    )
}

/// `checkProperty` of two generators' values.
public func checkProperty<InA, InB, OutA, OutB>(
    count: Int = 100,
    input first: Generator<OutA, some Sequence<InA>>,
    _ second: Generator<OutB, some Sequence<InB>>,
    perform body: (OutA, OutB) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    await checkProperty(
        count: count,
        input: zip(first, second),
        perform: { try await body($0.0, $0.1) },
        isolation: isolation,
        sourceLocation: sourceLocation
    )
}

/// `checkProperty` of three generators' values.
public func checkProperty<InA, InB, InC, OutA, OutB, OutC>(
    count: Int = 100,
    input first: Generator<OutA, some Sequence<InA>>,
    _ second: Generator<OutB, some Sequence<InB>>,
    _ third: Generator<OutC, some Sequence<InC>>,
    perform body: (OutA, OutB, OutC) async throws -> Void,
    isolation: isolated (any Actor)? = #isolation,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    await checkProperty(
        count: count,
        input: zip(first, second, third),
        perform: { try await body($0.0, $0.1, $0.2) },
        isolation: isolation,
        sourceLocation: sourceLocation
    )
}
