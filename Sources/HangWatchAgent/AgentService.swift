import Logging
import ServiceLifecycle
import UnixSignals

/// The agent as a swift-service-lifecycle `Service`: starts, reloads on SIGHUP, and on graceful
/// shutdown (SIGTERM, SIGINT, handled by the `ServiceGroup`) lets the current work finish.
public struct AgentService: Service {
    public let agent: Agent

    public init(agent: Agent) {
        self.agent = agent
    }

    public func run() async throws {
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
