"""Our spans as OpenTelemetry spans: to any OTLP backend (Jaeger, Tempo, Phoenix, Langfuse...).

miniagent's tracer records each agent run, model call and tool call as a plain dict
(`Span.to_dict()`, one JSONL line each) whose attributes already use the OpenTelemetry
GenAI semantic conventions' names. This module only changes the container: it turns
those dicts into the SDK's `ReadableSpan`s, which any `SpanExporter` sends.

    from miniagent.otel import export, otlp_exporter
    export(tracer.spans, otlp_exporter())          # after a run, to http://localhost:4318/v1/traces

    sink = OTelSink(otlp_exporter(), batch=True)   # or live: each span as it ends
    agent = Agent(client, tracer=Tracer(on_end=sink))
    ...
    sink.shutdown()                                # sends what is still queued

What the conversion decides (the GenAI conventions, github.com/open-telemetry/semantic-conventions-genai):
- span kind: a model call is CLIENT (a call over HTTP to another process); a tool call
  is INTERNAL; an agent run is INTERNAL (`invoke_agent` of an agent in this process);
- status: "error" is ERROR with the error text as description, "ok" is OK, else UNSET;
  an error span without `error.type` gets one (the exception's class name, or `_OTHER`);
- attributes: strings, numbers, booleans and lists of one of those pass as they are; a
  dict or a mixed list becomes a JSON string, which the conventions allow for structured
  values ("MAY be recorded as a JSON string if structured format is not supported").
  `structured=True` passes dicts as they are instead (the SDK's AnyValue attributes, sent
  as an OTLP kvlist), for backends that show them;
- ids, parent links and times come from the dict (hex ids, Unix epoch nanoseconds).

Secrets: the tracer never records headers, so no key should be in a span. As a second
line, every string sent (names, attributes, error text) has the values of the
environment's `*API_KEY`, `*_TOKEN` and `*_SECRET` variables (the tracer's own rule), and
any `redact=` strings, replaced by `<redacted>` before it reaches an exporter.

OpenTelemetry is an optional extra: `pip install 'miniagent[tracing]'`. Nothing here is
imported by `import miniagent`, and the SDK itself is imported on first use.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

INSTALL_HINT = "pip install 'miniagent[tracing]' (opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"
REDACTED = "<redacted>"
SCOPE_NAME = "miniagent"
DEFAULT_SERVICE_NAME = "miniagent"
TRACES_PATH = "/v1/traces"

# Our span kinds ("agent", "model", "tool") as OTel span kinds, by the GenAI conventions.
KINDS = {"model": "CLIENT", "tool": "INTERNAL", "agent": "INTERNAL"}
_CLIENT_OPERATIONS = {"chat", "text_completion", "generate_content", "embeddings"}  # when `kind` is absent
_MIN_SECRET = 8  # shorter env values are not treated as secrets (they would redact common words)


def _require(module: str) -> Any:
    """Import `module`, or say how to install OpenTelemetry."""
    from importlib import import_module
    try:
        return import_module(module)
    except ImportError as error:
        raise ImportError(f"miniagent.otel needs OpenTelemetry ({module} is missing): {INSTALL_HINT}") from error


# --- secrets ------------------------------------------------------------------------

def env_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """The environment's secrets, by the rule of `miniagent.tracing.env_secrets` (the same rule, so
    what the tracer would redact, the export does too)."""
    from miniagent.tracing import env_secrets as rule

    return rule(environ)


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """`value` with every occurrence of each secret replaced by `<redacted>`, in strings at any depth."""
    secrets = sorted({s for s in secrets if s}, key=len, reverse=True)  # longest first: a key containing another
    if not secrets:
        return value
    return _scrub(value, secrets)


def _scrub(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {_scrub(str(k), secrets): _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, secrets) for v in value]
    return value


# --- attributes ---------------------------------------------------------------------

_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _primitive_list(values: list[Any]) -> bool:
    """True when OTel can hold `values` as an attribute array: all str, all bool, all int or all float."""
    kinds = {type(v) for v in values}  # bool is its own type here, not int
    if len(kinds) > 1 or not kinds <= {str, bool, int, float}:
        return False
    return kinds != {int} or all(_INT64[0] <= v <= _INT64[1] for v in values)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def attribute_value(value: Any, *, structured: bool = False) -> Any:
    """`value` as an OTel attribute value: primitives and homogeneous lists as they are, else JSON text."""
    if isinstance(value, (str, bool, float)):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    if isinstance(value, (list, tuple)):
        return list(value) if _primitive_list(list(value)) else (list(value) if structured else _json(value))
    if isinstance(value, Mapping) and structured:
        return {str(k): v for k, v in value.items()}
    return _json(value)


def otel_attributes(attributes: Mapping[str, Any] | None, *, structured: bool = False) -> dict[str, Any]:
    """A span's attributes as OTel holds them; None values are left out (OTel has no null attribute)."""
    return {str(k): attribute_value(v, structured=structured)
            for k, v in (attributes or {}).items() if v is not None}


# --- spans --------------------------------------------------------------------------

def _as_dict(span: Any) -> Mapping[str, Any]:
    if isinstance(span, Mapping):
        return span
    to_dict = getattr(span, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"a span is a dict or has .to_dict(), got {type(span).__name__}")


def _hex_id(span: Mapping[str, Any], key: str, digits: int) -> int:
    value = span.get(key)
    try:
        number = int(value, 16) if isinstance(value, str) and len(value) == digits else 0
    except ValueError:
        number = 0
    if not number:
        raise ValueError(f"span {span.get('name')!r}: {key} must be {digits} hex digits, not all zero; got {value!r}")
    return number


def _time_ns(span: Mapping[str, Any], key: str) -> int:
    value = span.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        hint = " (the span has not ended: export spans once they end, as OTelSink does)" if key == "end_ns" else ""
        raise ValueError(f"span {span.get('name')!r}: {key} must be Unix epoch nanoseconds, got {value!r}{hint}")
    return value


def _error_type(error: Any) -> str:
    """`RateLimitError: ...` -> `RateLimitError`; anything else -> `_OTHER` (the conventions' fallback)."""
    head = str(error or "").split(":", 1)[0].strip()
    return head if head.isidentifier() else "_OTHER"


class _Converter:
    """What every span of one export shares: the SDK's classes, the resource, the scope, the secrets."""

    def __init__(self, service_name: str | None, resource_attributes: Mapping[str, Any] | None,
                 redact: Iterable[str], structured: bool) -> None:
        self.trace = _require("opentelemetry.trace")
        self.sdk_trace = _require("opentelemetry.sdk.trace")
        resources = _require("opentelemetry.sdk.resources")
        scope = _require("opentelemetry.sdk.util.instrumentation")
        from miniagent import __version__
        name = service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
        self.resource = resources.Resource.create({**otel_attributes(resource_attributes), "service.name": name})
        self.scope = scope.InstrumentationScope(SCOPE_NAME, __version__)
        self.secrets = sorted({s for s in [*env_secrets(), *redact] if s}, key=len, reverse=True)
        self.structured = structured
        self.flags = self.trace.TraceFlags(self.trace.TraceFlags.SAMPLED)

    def context(self, trace_id: int, span_id: int) -> Any:
        return self.trace.SpanContext(trace_id, span_id, is_remote=False, trace_flags=self.flags)

    def kind(self, span: Mapping[str, Any]) -> Any:
        name = KINDS.get(span.get("kind"))
        if name is None:
            operation = (span.get("attributes") or {}).get("gen_ai.operation.name")
            name = "CLIENT" if operation in _CLIENT_OPERATIONS else "INTERNAL"
        return getattr(self.trace.SpanKind, name)

    def status(self, span: Mapping[str, Any]) -> Any:
        code = {"error": "ERROR", "ok": "OK"}.get(span.get("status"), "UNSET")
        description = str(span.get("error") or "error") if code == "ERROR" else None
        return self.trace.Status(getattr(self.trace.StatusCode, code), _scrub(description, self.secrets))

    def __call__(self, span: Any) -> Any:
        span = _as_dict(span)
        trace_id = _hex_id(span, "trace_id", 32)
        parent = (self.context(trace_id, _hex_id(span, "parent_id", 16))
                  if span.get("parent_id") is not None else None)
        attributes = otel_attributes(span.get("attributes"), structured=self.structured)
        if span.get("status") == "error" and "error.type" not in attributes:
            attributes["error.type"] = _error_type(span.get("error"))
        return self.sdk_trace.ReadableSpan(
            name=_scrub(str(span.get("name") or "span"), self.secrets),
            context=self.context(trace_id, _hex_id(span, "span_id", 16)),
            parent=parent,
            resource=self.resource,
            attributes=_scrub(attributes, self.secrets) if self.secrets else attributes,
            kind=self.kind(span),
            status=self.status(span),
            start_time=_time_ns(span, "start_ns"),
            end_time=_time_ns(span, "end_ns"),
            instrumentation_scope=self.scope,
        )


def to_otel(spans: Iterable[Any], *, service_name: str | None = None,
            resource_attributes: Mapping[str, Any] | None = None, redact: Iterable[str] = (),
            structured: bool = False) -> list[Any]:
    """Span dicts (or objects with `.to_dict()`) as opentelemetry-sdk `ReadableSpan`s, in the same order.

    `service_name`: the resource's `service.name` (default: OTEL_SERVICE_NAME, else "miniagent");
    `resource_attributes`: more resource attributes (`{"deployment.environment.name": "dev"}`);
    `redact`: strings to replace by `<redacted>` besides the environment's keys (`env_secrets()`);
    `structured`: pass dict attributes as OTel maps instead of JSON strings.
    Raises ValueError for a span with a malformed id or a missing time (an unfinished span).
    """
    convert = _Converter(service_name, resource_attributes, redact, structured)
    return [convert(span) for span in spans]


def export(spans: Iterable[Any], exporter: Any, **options: Any) -> Any:
    """Send `spans` through `exporter` (any SpanExporter: OTLP, console, in-memory); its SpanExportResult.

    `options` go to `to_otel` (service_name, resource_attributes, redact, structured).
    """
    return exporter.export(to_otel(spans, **options))


def otlp_exporter(endpoint: str | None = None, headers: Mapping[str, str] | None = None, **options: Any) -> Any:
    """An OTLP/HTTP (protobuf) span exporter: `OTLPSpanExporter` of opentelemetry-exporter-otlp-proto-http.

    `endpoint`: the collector's traces URL. A bare address (`http://localhost:4318`) gets
    `/v1/traces` added, the path OTLP/HTTP defines. None: the exporter reads the standard
    variables itself: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a full URL, used as is), else
    OTEL_EXPORTER_OTLP_ENDPOINT (a base URL, `/v1/traces` added), else
    http://localhost:4318/v1/traces. `headers` (an auth token for a hosted backend): None
    reads OTEL_EXPORTER_OTLP_TRACES_HEADERS, else OTEL_EXPORTER_OTLP_HEADERS.
    `options` (timeout, compression...) go to the exporter as they are.
    """
    module = _require("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    if endpoint is not None and urlsplit(endpoint).path in ("", "/"):
        endpoint = endpoint.rstrip("/") + TRACES_PATH
    return module.OTLPSpanExporter(endpoint=endpoint, headers=dict(headers) if headers else None, **options)


class OTelSink:
    """A span sink for the tracer: `sink(span_dict)` exports each span as it ends.

    `batch=False` (the default) sends each span at once, in the caller's thread, as the
    SDK's SimpleSpanProcessor does: simple, nothing lost, but each span waits for the
    collector, so it suits notebooks and tests. `batch=True` queues spans for a
    BatchSpanProcessor's background thread, as production does; call `shutdown()` (or
    use the sink as a context manager) so the last batch is sent. `exporter` defaults to
    `otlp_exporter()`. The other options are `to_otel`'s.
    """

    def __init__(self, exporter: Any = None, *, batch: bool = False, service_name: str | None = None,
                 resource_attributes: Mapping[str, Any] | None = None, redact: Iterable[str] = (),
                 structured: bool = False) -> None:
        export_module = _require("opentelemetry.sdk.trace.export")
        self._convert = _Converter(service_name, resource_attributes, redact, structured)
        self.exporter = exporter if exporter is not None else otlp_exporter()
        processor = export_module.BatchSpanProcessor if batch else export_module.SimpleSpanProcessor
        self._processor = processor(self.exporter)
        self._lock = threading.Lock() if not batch else None  # tools end spans from worker threads

    def __call__(self, span: Any) -> None:
        readable = self._convert(span)
        if self._lock is None:
            self._processor.on_end(readable)
            return
        with self._lock:
            self._processor.on_end(readable)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Send what is queued; True when done in time."""
        return self._processor.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Send what is queued and close the exporter; later spans are dropped with a warning."""
        self._processor.shutdown()

    def __enter__(self) -> "OTelSink":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()
