import HangWatch
import Hummingbird

/// Puts each request's route and W3C trace context in effect as HangWatch labels while its
/// handler runs: a hang in the handler (a pool thread held by its task) carries `route` (`GET
/// /checkout`: the matched route's pattern, not the path with its ids) and, when the client sent
/// one, `traceparent`, which `hangwatchd` turns into the trace link of the hang's OpenTelemetry
/// record. Add it to a route group (`router.group().add(middleware:)`): there the route is
/// already matched; a router-wide middleware runs before it is.
///
/// Work the handler hands to another thread (an event loop's `submit`, a dispatch queue) runs
/// outside the labels: wrap it there too if it may hang.
struct HangLabelsMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var labels = ["route": "\(request.method.rawValue) \(context.endpointPath ?? request.uri.path)"]
        if let traceparent = request.headers.first(where: { $0.name.canonicalName == "traceparent" }) {
            labels["traceparent"] = traceparent.value
        }
        return try await HangMonitor.withLabels(labels) { try await next(request, context) }
    }
}
