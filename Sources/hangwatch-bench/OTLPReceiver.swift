import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An OTLP/HTTP receiver for figure 21, on 127.0.0.1 (any free port): it answers every export with
/// an empty success (a valid empty `Export…ServiceResponse`) and keeps the report id
/// (`hangwatch.report.id`) of each log record the agent sends, read from the protobuf by hand
/// (`ExportLogsServiceRequest` → `ResourceLogs` 1 → `ScopeLogs` 2 → `LogRecord` 2 →
/// `attributes` 6: `KeyValue` key 1, value 2 → `AnyValue` string 1; opentelemetry-proto's
/// logs.proto and common.proto), and which of them went out named (`hangwatch.hang.signature_kind`
/// `names`: the agent named the report's frames before it sent the record).
final class OTLPReceiver: Sendable {
    private struct Received {
        var reportIDs: Set<String> = []
        var named: Set<String> = []
        var records = 0
        var undecodable = 0
    }

    private final class Tally: Sendable {
        let state = Mutex(Received())
    }

    private let received = Tally()
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel: any Channel
    let port: Int

    init() throws {
        let received = self.received
        do {
            channel = try ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.pipeline.configureHTTPServerPipeline().flatMap {
                        channel.pipeline.addHandler(Handler { path, body in
                            guard path == "/v1/logs" else { return }
                            let ids = Self.reportIDs(inLogsRequest: body)
                            received.state.withLock { state in
                                guard let ids else {
                                    state.undecodable += 1
                                    return
                                }
                                state.records += ids.count
                                for record in ids {
                                    guard let id = record.id else { continue }
                                    state.reportIDs.insert(id)
                                    if record.named { state.named.insert(id) }
                                }
                            }
                        })
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        port = channel.localAddress?.port ?? 0
    }

    func stop() {
        try? channel.close().wait()
        try? group.syncShutdownGracefully()
    }

    /// Log records received, the distinct report ids among them (and of those, the ones sent
    /// named), and requests that did not decode.
    var counts: (records: Int, reportIDs: Set<String>, named: Set<String>, undecodable: Int) {
        received.state.withLock { ($0.records, $0.reportIDs, $0.named, $0.undecodable) }
    }

    /// One HTTP request's body, then the empty success.
    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let onRequest: (String, [UInt8]) -> Void
        var path = ""
        var body: [UInt8] = []

        init(onRequest: @escaping (String, [UInt8]) -> Void) { self.onRequest = onRequest }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                path = head.uri
                body = []
            case .body(var buffer):
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            case .end:
                onRequest(path, body)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "application/x-protobuf")
                headers.add(name: "Content-Length", value: "0")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    /// Each log record's report id (nil for a record without one) and whether it went out named,
    /// or nil if the body is not an `ExportLogsServiceRequest`.
    static func reportIDs(inLogsRequest body: [UInt8]) -> [(id: String?, named: Bool)]? {
        var ids: [(id: String?, named: Bool)] = []
        guard let resources = ProtobufFields.lengthDelimited(body[...], field: 1) else { return nil }
        for resource in resources {
            guard let scopes = ProtobufFields.lengthDelimited(resource, field: 2) else { return nil }
            for scope in scopes {
                guard let records = ProtobufFields.lengthDelimited(scope, field: 2) else { return nil }
                for record in records {
                    guard let attributes = ProtobufFields.lengthDelimited(record, field: 6) else { return nil }
                    var id: String?
                    var named = false
                    for attribute in attributes {
                        guard let key = ProtobufFields.lengthDelimited(attribute, field: 1)?.first,
                            let value = ProtobufFields.lengthDelimited(attribute, field: 2)?.first,
                            let text = ProtobufFields.lengthDelimited(value, field: 1)?.first
                        else { continue }
                        switch String(decoding: key, as: UTF8.self) {
                        case "hangwatch.report.id": id = String(decoding: text, as: UTF8.self)
                        case "hangwatch.hang.signature_kind": named = String(decoding: text, as: UTF8.self) == "names"
                        default: break
                        }
                    }
                    ids.append((id, named))
                }
            }
        }
        return ids
    }
}

/// Just enough of the protobuf wire format to find length-delimited fields.
enum ProtobufFields {
    /// The payloads of every length-delimited field number `field` in `message`, skipping the
    /// other fields; nil if the message is malformed.
    static func lengthDelimited(_ message: ArraySlice<UInt8>, field: UInt64) -> [ArraySlice<UInt8>]? {
        var found: [ArraySlice<UInt8>] = []
        var index = message.startIndex
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < message.endIndex, shift < 64 {
                let byte = message[index]
                index += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        while index < message.endIndex {
            guard let key = varint() else { return nil }
            switch key & 7 {
            case 0:
                guard varint() != nil else { return nil }
            case 1:
                index += 8
            case 5:
                index += 4
            case 2:
                guard let length = varint(), length <= UInt64(message.endIndex - index) else { return nil }
                let end = index + Int(length)
                if key >> 3 == field { found.append(message[index..<end]) }
                index = end
            default:
                return nil
            }
            guard index <= message.endIndex else { return nil }
        }
        return found
    }
}
