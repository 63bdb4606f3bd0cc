"""Our spans as OpenTelemetry spans: to any OTLP backend (Jaeger, Tempo, Phoenix, Langfuse...).

miniagent's tracer records each agent run, model call and tool call as a plain dict
(`Span.to_dict()`, one JSONL line each) whose attributes already use the OpenTelemetry
GenAI semantic conventions' names. This module only changes the container: it turns
those dicts into the SDK's `ReadableSpan`s, which any `SpanExporter` sends.

    from miniagent.otel import export, otlp_exporter
    export(tracer.spans, otlp_exporter())          # after a run, to http://localhost:4318/v1/traces

    sink = OTelSink(otlp_exporter(), batch=True)   # or live: each span as it ends, sent by a
    agent = Agent(client, tracer=Tracer(on_end=sink))  # background thread (the run never waits for
    ...                                            # the collector; a dead one is reported, counted)
    sink.shutdown()                                # sends what is still queued, within a bound

What the conversion decides (the GenAI conventions, github.com/open-telemetry/semantic-conventions-genai):
- span kind: a model call is CLIENT (a call over HTTP to another process); a tool call
  is INTERNAL; an agent run is INTERNAL (`invoke_agent` of an agent in this process);
- status: "error" is ERROR with the span's error as description (without the tracer's
  capture_content, only the error's type and a fixed sentence), "ok" is OK, else UNSET;
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

import atexit
import json
import logging
import os
import re
import threading
import time
import weakref
from collections import deque
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


# The sink's bounds. A collector that is slow, down, or accepts and never answers must cost the
# agent nothing: spans wait in a bounded queue for one background thread, and every wait is bounded.
QUEUE_SPANS = 2048        # spans waiting to be sent, at most; past that each new one is dropped (and counted)
BATCH_SPANS = 512         # spans in one export with batch=True (the SDK's default batch size)
BATCH_SECONDS = 1.0       # with batch=True, how long a first span waits for others to join its batch
SHUTDOWN_SECONDS = 5.0    # how long shutdown() (or the end of the process) waits for the queue to drain
SLOW_EXPORT_SECONDS = 2.0  # an export still unanswered after this long is reported

_logger = logging.getLogger(__name__)


class OTelSink:
    """A span sink for the tracer: `sink(span_dict)` hands each span, as it ends, to a background
    thread that exports it, so the agent never waits for the collector.

    `batch=False` (the default) sends each span on its own, in the order they ended (a notebook
    can count them); `batch=True` sends up to BATCH_SPANS at a time, as production does.
    `exporter` defaults to `otlp_exporter()`; the other options are `to_otel`'s.

    A collector that is slow, down or never answers cannot slow a run: a span's end only
    converts it and puts it in a queue of at most `max_queue` spans (QUEUE_SPANS); when
    the queue is full the span is dropped and counted. The first trouble (a failed export,
    an export unanswered for SLOW_EXPORT_SECONDS, a dropped span, spans left unsent at
    shutdown) is logged once, as a warning of the `miniagent.otel` logger; the counters
    say the rest: `sink.stats()` -> {"sent", "failed", "dropped", "queued"}.

    `shutdown()` (or leaving a `with OTelSink(...)` block) sends what is still queued,
    waiting at most `timeout` seconds (SHUTDOWN_SECONDS), then closes the exporter; what
    could not be sent by then is counted as dropped. A sink never shut down is shut down
    with the same bound when the process ends, so exit never hangs on a dead collector.
    Why not the SDK's BatchSpanProcessor: its force_flush ignores its timeout, it logs
    every dropped span, and it has no counter a user can read.
    """

    def __init__(self, exporter: Any = None, *, batch: bool = False, max_queue: int = QUEUE_SPANS,
                 timeout: float = SHUTDOWN_SECONDS, service_name: str | None = None,
                 resource_attributes: Mapping[str, Any] | None = None, redact: Iterable[str] = (),
                 structured: bool = False) -> None:
        if max_queue < 1 or timeout < 0:
            raise ValueError(f"max_queue must be at least 1 and timeout at least 0, got {max_queue} and {timeout}")
        export_module = _require("opentelemetry.sdk.trace.export")
        self._success = export_module.SpanExportResult.SUCCESS
        self._convert = _Converter(service_name, resource_attributes, redact, structured)
        self.exporter = exporter if exporter is not None else otlp_exporter()
        self.batch, self.max_queue, self.timeout = batch, max_queue, timeout
        self.sent = self.failed = self.dropped = 0
        self.problem: str | None = None  # the first trouble, as it was reported
        self._queue: deque = deque()
        self._changed = threading.Condition()  # the queue, the counters and the states below
        self._in_flight = 0  # spans the exporter is sending now
        self._since = 0.0    # when that export began (time.monotonic())
        self._flushing = 0   # callers waiting for the queue to drain: a batch does not wait for more spans
        self._closed = self._stopping = False
        self._thread = threading.Thread(target=self._work, name="miniagent-otel-export", daemon=True)
        self._thread.start()
        _OPEN.add(self)

    # --- the caller's side: never waits for the collector -------------------------------------

    def __call__(self, span: Any) -> None:
        readable = self._convert(span)
        with self._changed:
            closed, full = self._closed, len(self._queue) >= self.max_queue
            if closed or full:
                self.dropped += 1
            else:
                self._queue.append(readable)
                self._changed.notify_all()
            slow = self._in_flight and time.monotonic() - self._since > SLOW_EXPORT_SECONDS
        if closed or full:
            self._report("a span ended after the sink was shut down" if closed else
                         f"the queue is full ({self.max_queue:,} spans): the collector cannot keep up")
        elif slow:
            self._report(f"the collector has not answered an export for more than {SLOW_EXPORT_SECONDS:g} s")

    def stats(self) -> dict[str, int]:
        """Spans sent; failed (the exporter could not deliver them); dropped (the queue was full, the sink
        shut down, or its shutdown gave up waiting for them); queued (waiting, or being sent)."""
        with self._changed:
            return {"sent": self.sent, "failed": self.failed, "dropped": self.dropped,
                    "queued": len(self._queue) + self._in_flight}

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        """Wait until every queued span has been exported (at most `timeout_millis`, default the sink's
        timeout); True when done in time."""
        seconds = self.timeout if timeout_millis is None else timeout_millis / 1000
        with self._changed:
            self._flushing += 1
            self._changed.notify_all()
            try:
                return self._changed.wait_for(lambda: not self._queue and not self._in_flight, seconds)
            finally:
                self._flushing -= 1

    def shutdown(self, timeout_millis: int | None = None) -> None:
        """Send what is queued (waiting at most `timeout_millis`, default the sink's timeout) and close the
        exporter; spans that could not be sent in time, and later ones, are counted as dropped."""
        with self._changed:
            if self._stopping:  # shut down already, or being shut down in another thread
                return
            self._stopping = True
        drained = self.force_flush(timeout_millis)
        with self._changed:
            self._closed = True
            left, self._queue = len(self._queue) + self._in_flight, deque()
            self.dropped += left
            self._in_flight = 0  # an export still under way is given up: its result is not counted again
            self._changed.notify_all()
        _OPEN.discard(self)
        if not drained:
            seconds = self.timeout if timeout_millis is None else timeout_millis / 1000
            self._report(f"{left:,} spans were not sent within the shutdown's {seconds:g} s")
        self.exporter.shutdown()

    def __enter__(self) -> "OTelSink":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"OTelSink({', '.join(f'{k}={v}' for k, v in self.stats().items())})"

    # --- the exporting thread --------------------------------------------------------------

    def _work(self) -> None:
        context = _require("opentelemetry.context")  # the export's own HTTP calls are not to be traced
        context.attach(context.set_value(context._SUPPRESS_INSTRUMENTATION_KEY, True))
        while True:
            spans = self._next()
            if spans is None:
                return
            ok, why = self._send(spans)
            with self._changed:
                counted = self._in_flight == len(spans)  # else shutdown gave it up and counted it
                if counted:
                    self._in_flight = 0
                    if ok:
                        self.sent += len(spans)
                    else:
                        self.failed += len(spans)
                self._changed.notify_all()
            if not ok and counted:
                self._report(f"an export of {len(spans)} span{'s' * (len(spans) > 1)} failed ({why})")

    def _next(self) -> list | None:
        """The next spans to send (waiting for them; with batch, a moment for a batch to form); None once closed."""
        with self._changed:
            self._changed.wait_for(lambda: self._queue or self._closed)
            if self._closed:
                return None
            if self.batch:
                self._changed.wait_for(lambda: len(self._queue) >= BATCH_SPANS or self._flushing or self._closed,
                                       BATCH_SECONDS)
                if self._closed:
                    return None
            count = min(len(self._queue), BATCH_SPANS if self.batch else 1)
            spans = [self._queue.popleft() for _ in range(count)]
            self._in_flight, self._since = len(spans), time.monotonic()
            return spans

    def _send(self, spans: list) -> tuple[bool, str]:
        try:
            result = self.exporter.export(spans)
        except Exception as exc:  # noqa: BLE001 - the thread must outlive a broken exporter to serve later spans
            return False, f"{type(exc).__name__}: {exc}"
        return result == self._success, f"the exporter answered {getattr(result, 'name', result)}"

    def _report(self, why: str) -> None:
        """Log the first trouble, once per sink; the counters keep count of the rest."""
        with self._changed:
            if self.problem is not None:
                return
            self.problem = why
        _logger.warning("miniagent.otel.OTelSink: %s; spans are dropped rather than slow the agent. "
                        "Is the collector up? sink.stats() counts what was sent, failed and dropped.", why)


_OPEN: "weakref.WeakSet[OTelSink]" = weakref.WeakSet()  # sinks not yet shut down, for the end of the process


@atexit.register
def _shutdown_open_sinks() -> None:
    """At the end of the process, shut down every sink still open, within SHUTDOWN_SECONDS in all."""
    ends = time.monotonic() + SHUTDOWN_SECONDS
    for sink in list(_OPEN):
        left = max(0.0, min(sink.timeout, ends - time.monotonic()))
        sink.shutdown(timeout_millis=int(left * 1000))
