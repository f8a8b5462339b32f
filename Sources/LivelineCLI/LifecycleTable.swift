import ActivityLifecycle
import ArgumentParser
import CanonicalJSON

/// `liveline lifecycle`: prints the state machine's transition table and state diagram, computed
/// from the code itself (the generated part of docs/lifecycle.md).
struct LifecycleTable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lifecycle",
        abstract: "Print the lifecycle's transition table and state diagram (Markdown + Mermaid)."
    )

    func run() {
        print(TransitionTable(lifecycle: Lifecycle()).markdown)
    }
}
