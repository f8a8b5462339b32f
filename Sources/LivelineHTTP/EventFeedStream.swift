import ActivityLifecycle
import EventStore
import Foundation
import ServiceLifecycle

/// The app's events as Server-Sent Events: `id` is the position, `event` the type, `data` the
/// event as JSON. Reads the log as the feed does, waking on appends; says something every
/// `heartbeat` so proxies keep the connection; ends when the client goes or the server stops.
struct EventFeedStream: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>

    static let heartbeat: Duration = .seconds(15)
    static let batchSize = 100

    let store: EventStore
    let listener: AppendListener
    let app: AppID
    let after: Int64

    func makeAsyncIterator() -> Iterator {
        Iterator(stream: self, position: after)
    }

    struct Iterator: AsyncIteratorProtocol {
        let stream: EventFeedStream
        var position: Int64
        var greeted = false

        mutating func next() async throws -> ArraySlice<UInt8>? {
            guard greeted else {
                greeted = true
                // At once, so that clients see the stream is open before the first event.
                return ArraySlice(": liveline events of \(stream.app) after \(position)\n\n".utf8)
            }
            guard !Task.isCancelled, !Task.isShuttingDownGracefully else { return nil }
            let (store, listener, app, after) = (stream.store, stream.listener, stream.app, position)
            let events: [StoredEvent]
            do {
                events = try await cancelWhenGracefulShutdown {
                    try await store.events(
                        after: after,
                        app: app,
                        limit: EventFeedStream.batchSize,
                        waitingUpTo: EventFeedStream.heartbeat,
                        listener: listener
                    )
                }
            } catch is CancellationError {
                return nil
            }
            guard let last = events.last else { return ArraySlice(": keep-alive\n\n".utf8) }
            position = last.position
            return ArraySlice(try Self.encode(events))
        }

        private static func encode(_ events: [StoredEvent]) throws -> [UInt8] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            var output: [UInt8] = []
            for event in events {
                output += "id: \(event.position)\nevent: \(event.event.type.rawValue)\ndata: ".utf8
                output += try encoder.encode(Components.Schemas.Event(event))
                output += "\n\n".utf8
            }
            return output
        }
    }
}
