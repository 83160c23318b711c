import Logging
import ServiceLifecycle
import UnixSignals

/// The agent as a swift-service-lifecycle `Service`: `run()` is its lifetime. It starts, reloads
/// on SIGHUP, and on graceful shutdown (SIGTERM, SIGINT, handled by the `ServiceGroup`) lets the
/// current work finish.
struct AgentService: Service {
    let agent: Agent

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        try await withGracefulShutdownHandler {
            try await agent.start()
            for await _ in hangups.cancelOnGracefulShutdown() {
                await agent.reload()
            }
        } onGracefulShutdown: {
            agent.beginStopping()
        }
        await agent.stop()
    }
}
