#!/usr/bin/env python3
"""A minimal OTLP/HTTP receiver for the agent's tests.

Decodes requests with the official OpenTelemetry protobuf definitions (PyPI's opentelemetry-proto),
not with anything from this project, and appends one JSON line per log record and per metric to
OUT. Binds 127.0.0.1:PORT (0: any free port) and writes the port to OUT + ".port" when listening.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

OUT = sys.argv[1]
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(pairs):
    return {pair.key: value(pair.value) for pair in pairs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        lines = []
        if self.path == "/v1/logs":
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            response = ExportLogsServiceResponse()
            for resource_logs in request.resource_logs:
                resource = attributes(resource_logs.resource.attributes)
                for scope_logs in resource_logs.scope_logs:
                    for record in scope_logs.log_records:
                        lines.append({
                            "kind": "log",
                            "resource": resource,
                            "severity_text": record.severity_text,
                            "severity_number": record.severity_number,
                            "body": value(record.body),
                            "attributes": attributes(record.attributes),
                            # Empty (b"") when the record links to no trace.
                            "trace_id": record.trace_id.hex(),
                            "span_id": record.span_id.hex(),
                        })
        elif self.path == "/v1/metrics":
            request = ExportMetricsServiceRequest()
            request.ParseFromString(body)
            response = ExportMetricsServiceResponse()
            for resource_metrics in request.resource_metrics:
                resource = attributes(resource_metrics.resource.attributes)
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        lines.append({"kind": "metric", "name": metric.name, "resource": resource, "data": MessageToDict(metric)})
        else:
            self.send_response(404)
            self.end_headers()
            return
        with open(OUT, "a") as out:
            for line in lines:
                out.write(json.dumps(line) + "\n")
        payload = response.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
with open(OUT + ".port", "w") as port_file:
    port_file.write(str(server.server_address[1]))
server.serve_forever()
