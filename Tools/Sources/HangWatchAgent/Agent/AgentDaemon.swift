import HangWatchReport
import Logging
import ServiceLifecycle
import Synchronization

/// `hangwatchd`, assembled: the spool checked, the exporters made (the Prometheus endpoint
/// listening, the OTLP pipeline built), and the agent, run as a swift-service-lifecycle
/// `ServiceGroup` whose graceful shutdown is SIGTERM or SIGINT. The executable only parses its
/// command line, reads the configuration and bootstraps logging.
public final class AgentDaemon: Sendable {
    /// The agent's version (`hangwatch_build_info{version}`).
    public static let version = MonitorVersion.current.version

    private let group: ServiceGroup

    /// Checks the spool first (an agent that will not start claims no endpoint), then makes the
    /// exporters and the agent. Throws `AgentFailure`: `.spoolRefused`, or `.failed` when an
    /// exporter cannot be made (the metrics port is taken, say).
    public init(
        configuration: AgentConfiguration, configurationFile: String?, overrides: [String], logger: Logger,
        levels: JournalLogHandler.LevelBox
    ) throws {
        do {
            try Spool(root: configuration.reportRoot).check()
        } catch {
            throw AgentFailure(kind: .spoolRefused, description: "\(error)")
        }
        // The outbox counts what it gives up in every exporter's metrics: through the hub, made last.
        let hub = Mutex<ExportHub?>(nil)
        var exporters: [any HangExporter] = []
        var services: [any Service] = []
        do {
            if let listen = configuration.metricsListen {
                exporters.append(try PrometheusExporter(version: Self.version, address: listen, logger: logger))
            }
            if let endpoint = configuration.otlpEndpoint {
                let otlp = try OTLPExporter(configuration: configuration, endpoint: endpoint, version: Self.version, logger: logger) { dropped in
                    hub.withLock { $0 }?.reportsDropped(.export, count: dropped)
                }
                exporters += [otlp, otlp.logRecords]
                services += otlp.services
            }
        } catch {
            throw AgentFailure(kind: .failed, description: "\(error)")
        }
        let exports = ExportHub(exporters)
        hub.withLock { $0 = exports }
        let agent = Agent(
            configuration: configuration, configurationFile: configurationFile, overrides: overrides, exports: exports,
            logger: logger, levels: levels)
        // A group stops its services in reverse order: the agent, last here, stops first, so the
        // exporters still run while it finishes its pass and then flush on their way out.
        var groupConfiguration = ServiceGroupConfiguration(
            services: (services + [AgentService(agent: agent)]).map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        // The group's own log lines follow the agent's convention too.
        groupConfiguration.logging.keys.signalKey = "hangwatch.signal"
        groupConfiguration.logging.keys.gracefulShutdownSignalsKey = "hangwatch.graceful_shutdown_signals"
        groupConfiguration.logging.keys.cancellationSignalsKey = "hangwatch.cancellation_signals"
        groupConfiguration.logging.keys.serviceKey = "hangwatch.service"
        groupConfiguration.logging.keys.servicesKey = "hangwatch.services"
        groupConfiguration.logging.keys.errorKey = "hangwatch.error"
        // After the agent's own deadline, a little slack before the group gives up on it.
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout + .seconds(2)
        group = ServiceGroup(configuration: groupConfiguration)
    }

    /// Runs until SIGTERM or SIGINT (returns) or a failure (throws `AgentFailure`). Keep the main
    /// run loop running meanwhile: the agent keeps its time there.
    public func run() async throws {
        do {
            try await group.run()
        } catch let problem as Spool.Problem {
            throw AgentFailure(kind: .spoolRefused, description: "\(problem)")
        } catch {
            throw AgentFailure(kind: .failed, description: "\(error)")
        }
    }
}

/// Why the agent could not start, or stopped other than by a signal.
public struct AgentFailure: Error, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The spool is missing or unsafe (hangwatchd exits 3; systemd does not restart it).
        case spoolRefused
        /// Anything else: the metrics port is taken, a service failed (hangwatchd exits 1).
        case failed
    }

    public var kind: Kind
    /// What went wrong and how to fix it.
    public var description: String
}
