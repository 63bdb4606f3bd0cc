"""A tiny OTLP/HTTP trace receiver for tests: what a collector would get, decoded.

`with OTLPReceiver() as receiver:` listens on 127.0.0.1 (a free port), accepts
`POST /v1/traces` (protobuf `ExportTraceServiceRequest`, optionally gzip), keeps each
request's raw bytes in `receiver.bodies` and answers 200 with an empty
`ExportTraceServiceResponse`, as a collector does. `receiver.spans()` flattens what
arrived into dicts with hex ids and plain attribute values, easy to assert on.
`SilentCollector` is the other kind: one that accepts connections and never answers.
"""

from __future__ import annotations

import gzip
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                       ExportTraceServiceResponse)

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _value(any_value: Any) -> Any:
    which = any_value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, which) if which else None


def _attributes(key_values: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in key_values}


class OTLPReceiver:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.paths.append(self.path)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver.bodies.append(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)  # quick shutdown

    def __enter__(self) -> "OTLPReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def requests(self) -> list[ExportTraceServiceRequest]:
        return [ExportTraceServiceRequest.FromString(body) for body in self.bodies]

    def spans(self) -> list[dict[str, Any]]:
        """Every span received, with its resource and scope, as a dict."""
        found = []
        for request in self.requests():
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append({
                            "name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                            "parent_id": span.parent_span_id.hex() or None, "kind": KINDS[span.kind],
                            "status": STATUS[span.status.code], "description": span.status.message,
                            "start_ns": span.start_time_unix_nano, "end_ns": span.end_time_unix_nano,
                            "attributes": _attributes(span.attributes), "resource": resource,
                            "scope": (scope_spans.scope.name, scope_spans.scope.version)})
        return found


class SilentCollector:
    """A collector that is up and never answers: it accepts each connection, reads nothing and replies
    nothing, as a hung or overloaded backend does (a closed port would be refused at once instead).

    `with SilentCollector() as collector:` listens on 127.0.0.1 (a free port) at `collector.endpoint`;
    `collector.accepted` counts connections. Leaving the block closes every connection, so an
    exporter still waiting on one gets its error at once.
    """

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.accepted = 0
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True, name="silent-collector")

    def _accept(self) -> None:
        self.listener.settimeout(0.05)  # so that leaving the block ends this loop promptly
        while not self._stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections.append(connection)
            self.accepted += 1

    def __enter__(self) -> "SilentCollector":
        self.thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        self.thread.join(5)
        for connection in [*self.connections, self.listener]:
            connection.close()
