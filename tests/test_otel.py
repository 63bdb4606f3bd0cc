"""miniagent.otel: span dicts become OpenTelemetry spans, in memory and over OTLP/HTTP."""

import json
import sys

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the tracing extra: pip install 'miniagent[tracing]'")

from opentelemetry.sdk.trace.export import SpanExportResult  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from miniagent import __version__, otel  # noqa: E402
from miniagent.otel import OTelSink, export, otlp_exporter, to_otel  # noqa: E402
from otlp_receiver import OTLPReceiver  # noqa: E402

FAKE_KEY = "sk-ant-test-NOT-A-REAL-KEY-123"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
T0 = 1_764_500_000_000_000_000  # Unix epoch ns
MS = 1_000_000


def span(name, kind, span_id, parent_id, start_ms, end_ms, attributes, status="ok", error=None):
    return {"name": name, "kind": kind, "trace_id": TRACE, "span_id": span_id, "parent_id": parent_id,
            "start": start_ms / 1000, "end": end_ms / 1000, "start_ns": T0 + start_ms * MS, "end_ns": T0 + end_ms * MS,
            "status": status, "error": error, "attributes": attributes}


def agent_run():
    """An agent that calls the model, runs two tools in parallel (one of them a sub-agent whose model call fails)."""
    model = {"gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-5-5",
             "server.address": "api.anthropic.com", "server.port": 443}
    return [
        span("chat claude-sonnet-5-5", "model", "00000000000000b1", "00000000000000a1", 1, 20,
             {**model, "gen_ai.operation.name": "chat", "gen_ai.request.max_tokens": 1024,
              "gen_ai.response.id": "msg_mock_1", "gen_ai.response.model": "claude-sonnet-5-5",
              "gen_ai.response.finish_reasons": ["tool_use"], "gen_ai.usage.input_tokens": 120,
              "gen_ai.usage.output_tokens": 30, "gen_ai.usage.cache_read.input_tokens": 0,
              "miniagent.request.messages": 1}),
        span("execute_tool get_weather", "tool", "00000000000000c1", "00000000000000a1", 21, 30,
             {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
              "gen_ai.tool.call.id": "toolu_mock_1", "gen_ai.tool.type": "function",
              "gen_ai.tool.call.arguments": {"city": "Paris"}, "gen_ai.tool.call.result": "18°C, sunny",
              "miniagent.tool.input_chars": 16, "miniagent.tool.output_chars": 11}),
        span("chat claude-haiku-5-5", "model", "00000000000000e1", "00000000000000d1", 23, 26,
             {**model, "gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-haiku-5-5",
              "error.type": "RateLimitError"}, status="error", error="RateLimitError: 429 rate_limit_error"),
        span("invoke_agent expert", "agent", "00000000000000d1", "00000000000000c2", 22, 28,
             {**model, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "expert"},
             status="error", error="RateLimitError: 429 rate_limit_error"),
        span("execute_tool ask_expert", "tool", "00000000000000c2", "00000000000000a1", 21, 29,
             {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask_expert",
              "gen_ai.tool.call.id": "toolu_mock_2", "gen_ai.tool.type": "function"}),
        span("invoke_agent weather-bot", "agent", "00000000000000a1", None, 0, 40,
             {**model, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-bot",
              "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30, "miniagent.stop": "end_turn"}),
    ]


def by_name(spans):
    return {s.name: s for s in spans}


def test_in_memory_export_keeps_names_links_kinds_status_and_attributes():
    exporter = InMemorySpanExporter()
    assert export(agent_run(), exporter) is SpanExportResult.SUCCESS
    spans = by_name(exporter.get_finished_spans())
    assert len(spans) == 6
    root, chat = spans["invoke_agent weather-bot"], spans["chat claude-sonnet-5-5"]
    weather, ask = spans["execute_tool get_weather"], spans["execute_tool ask_expert"]
    expert = spans["invoke_agent expert"]
    failed = spans["chat claude-haiku-5-5"]

    assert {s.context.trace_id for s in spans.values()} == {int(TRACE, 16)}
    assert root.parent is None and root.context.span_id == 0xA1
    assert chat.parent.span_id == weather.parent.span_id == ask.parent.span_id == root.context.span_id
    assert expert.parent.span_id == ask.context.span_id and failed.parent.span_id == expert.context.span_id
    assert all(s.context.trace_flags.sampled and not s.context.is_remote for s in spans.values())
    # the two tools overlap: they ran in parallel
    assert weather.start_time < ask.end_time and ask.start_time < weather.end_time
    assert (root.start_time, root.end_time) == (T0, T0 + 40 * MS)

    assert chat.kind is SpanKind.CLIENT and failed.kind is SpanKind.CLIENT
    assert root.kind is expert.kind is weather.kind is ask.kind is SpanKind.INTERNAL
    assert root.status.status_code is StatusCode.OK and weather.status.status_code is StatusCode.OK
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == "RateLimitError: 429 rate_limit_error"
    assert failed.attributes["error.type"] == "RateLimitError"
    assert expert.attributes["error.type"] == "RateLimitError"  # added: the conventions require it on errors

    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert tuple(chat.attributes["gen_ai.response.finish_reasons"]) == ("tool_use",)
    assert chat.attributes["gen_ai.usage.input_tokens"] == 120 and chat.attributes["server.port"] == 443
    assert root.attributes["gen_ai.agent.name"] == "weather-bot" and root.attributes["miniagent.stop"] == "end_turn"
    assert weather.attributes["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'  # a dict became JSON text
    assert weather.attributes["gen_ai.tool.call.result"] == "18°C, sunny"

    assert root.resource.attributes["service.name"] == "miniagent"
    assert (root.instrumentation_scope.name, root.instrumentation_scope.version) == ("miniagent", __version__)


def test_attribute_values():
    value = otel.attribute_value
    assert value(["a", "b"]) == ["a", "b"] and value([1, 2]) == [1, 2] and value([]) == []
    assert value([1, "a"]) == '[1,"a"]' and value([{"type": "text"}]) == '[{"type":"text"}]'
    assert value({"b": [1]}) == '{"b":[1]}' and value(True) is True and value(2 ** 64) == str(2 ** 64)
    assert value({"b": 1}, structured=True) == {"b": 1}
    assert otel.otel_attributes({"kept": 0, "dropped": None}) == {"kept": 0}


def test_options_and_objects_with_to_dict():
    class Span:
        def to_dict(self):
            return agent_run()[-1]

    [converted] = to_otel([Span()], service_name="shop", resource_attributes={"deployment.environment.name": "dev"})
    assert converted.resource.attributes["service.name"] == "shop"
    assert converted.resource.attributes["deployment.environment.name"] == "dev"
    [structured] = to_otel([agent_run()[1]], structured=True)
    assert dict(structured.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}


@pytest.mark.parametrize("change, message", [
    ({"trace_id": "xyz"}, "trace_id must be 32 hex digits"),
    ({"span_id": "0" * 16}, "span_id must be 16 hex digits"),
    ({"end_ns": None}, "has not ended"),
])
def test_a_malformed_span_is_refused_with_a_reason(change, message):
    with pytest.raises(ValueError, match=message):
        to_otel([{**agent_run()[0], **change}])
    with pytest.raises(TypeError, match="to_dict"):
        to_otel([42])


def test_secrets_are_redacted_before_any_exporter(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    leaky = span(f"chat {FAKE_KEY}", "model", "00000000000000b1", None, 0, 1,
                 {"gen_ai.input.messages": json.dumps([{"role": "user", "content": f"my key is {FAKE_KEY}"}]),
                  "nested": {"key": FAKE_KEY}, "other": "hunter2-password"},
                 status="error", error=f"AuthenticationError: bad key {FAKE_KEY}")
    [converted] = to_otel([leaky], redact=["hunter2-password"])
    text = json.dumps({"name": converted.name, "attributes": dict(converted.attributes),
                       "error": converted.status.description})
    assert FAKE_KEY not in text and "hunter2" not in text and text.count("<redacted>") == 5


def test_otlp_http_export_reaches_a_collector():
    with OTLPReceiver() as receiver:
        exporter = otlp_exporter(receiver.endpoint, headers={"x-team": "tests"}, timeout=5)
        assert export(agent_run(), exporter) is SpanExportResult.SUCCESS
        exporter.shutdown()
    assert receiver.paths == ["/v1/traces"]  # a bare address got the OTLP/HTTP path
    received = {s["name"]: s for s in receiver.spans()}
    assert len(received) == 6 and {s["trace_id"] for s in received.values()} == {TRACE}
    assert received["invoke_agent weather-bot"]["parent_id"] is None
    assert received["execute_tool ask_expert"]["parent_id"] == "00000000000000a1"
    assert received["invoke_agent expert"]["parent_id"] == "00000000000000c2"
    chat = received["chat claude-sonnet-5-5"]
    assert chat["kind"] == "CLIENT" and chat["status"] == "OK" and chat["start_ns"] == T0 + MS
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert chat["attributes"]["gen_ai.usage.output_tokens"] == 30
    assert received["execute_tool get_weather"]["attributes"]["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'
    failed = received["chat claude-haiku-5-5"]
    assert (failed["status"], failed["description"]) == ("ERROR", "RateLimitError: 429 rate_limit_error")
    assert chat["resource"]["service.name"] == "miniagent" and chat["scope"] == ("miniagent", __version__)


def test_otlp_exporter_reads_the_standard_variables(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert otlp_exporter()._endpoint == "http://collector:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/custom")
    assert otlp_exporter()._endpoint == "http://traces:9999/custom"
    assert otlp_exporter("http://here:4318/v1/traces")._endpoint == "http://here:4318/v1/traces"


class CountingExporter(InMemorySpanExporter):
    """The in-memory exporter, keeping how many spans each export call carried."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def export(self, spans):
        self.calls.append(len(spans))
        return super().export(spans)


@pytest.mark.parametrize("batch", [False, True])
def test_sink_exports_each_span_as_it_ends(batch):
    exporter = CountingExporter()
    sink = OTelSink(exporter, batch=batch)
    for finished in agent_run():
        sink(finished)
    assert sink.force_flush()  # the background thread has sent them all
    assert [s.name for s in exporter.get_finished_spans()] == [s["name"] for s in agent_run()]
    if not batch:  # one export per span, in the order they ended
        assert exporter.calls == [1] * 6
    else:  # a batch gathers what is queued (the flush sends it without waiting for more)
        assert sum(exporter.calls) == 6 and len(exporter.calls) < 6
    assert sink.stats() == {"sent": 6, "failed": 0, "dropped": 0, "queued": 0} and sink.problem is None
    sink.shutdown()


def test_a_clear_message_when_opentelemetry_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # what an absent package looks like
    with pytest.raises(ImportError, match=r"pip install 'miniagent\[tracing\]' \(opentelemetry-sdk and "
                                          r"opentelemetry-exporter-otlp-proto-http\)"):
        to_otel(agent_run())
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with pytest.raises(ImportError, match=r"trace_exporter is missing\): pip install 'miniagent\[tracing\]'"):
        otlp_exporter()




# --- a real agent run, traced by miniagent.tracing and exported ------------------------------------

def test_an_offline_agent_run_exports_its_nesting():
    from miniagent import Agent, connect
    from miniagent.tracing import Tracer

    tracer = Tracer(seed=7)
    agent = Agent(connect(offline=True, quiet=True), tracer=tracer)
    assert agent.run("What is the weather in Paris and in Tokyo?").ok
    exporter = InMemorySpanExporter()
    assert export(tracer.spans, exporter) is SpanExportResult.SUCCESS
    spans = exporter.get_finished_spans()
    assert len(spans) == len(tracer.spans) >= 4
    [root] = [s for s in spans if s.parent is None]
    assert root.name == "invoke_agent assistant" and root.kind is SpanKind.INTERNAL
    children = [s for s in spans if s.parent is not None]
    assert all(s.parent.span_id == root.context.span_id for s in children)
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    chats = [s for s in children if s.name.startswith("chat ")]
    tools = [s for s in children if s.name.startswith("execute_tool ")]
    assert len(chats) == 2 and len(tools) == 2  # the mock asks for both cities in one turn
    assert all(s.kind is SpanKind.CLIENT and s.attributes["gen_ai.operation.name"] == "chat" for s in chats)
    assert all(s.kind is SpanKind.INTERNAL and s.attributes["gen_ai.tool.name"] == "get_weather" for s in tools)
    assert all(s.status.status_code is StatusCode.OK for s in spans)
    assert root.attributes["gen_ai.usage.input_tokens"] == sum(s.attributes["gen_ai.usage.input_tokens"] for s in chats)
    assert root.start_time <= min(s.start_time for s in children) and root.end_time >= max(s.end_time for s in children)


def test_no_api_key_reaches_the_collector(monkeypatch):
    """A live-mode client holding a (fake) key, content capture on, each span exported as it ends."""
    import httpx2

    from miniagent import Agent, MockAPI, connect
    from miniagent.tracing import Tracer

    class Spy(httpx2.BaseTransport):  # proves the key really went out with each request
        def __init__(self, inner):
            self.inner, self.keys = inner, []

        def handle_request(self, request):
            self.keys.append(request.headers.get("x-api-key"))
            return self.inner.handle_request(request)

    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    spy = Spy(MockAPI().transport())
    client = connect(offline=False, quiet=True, transport=spy)
    with OTLPReceiver() as receiver:
        sink = OTelSink(otlp_exporter(receiver.endpoint, timeout=5))
        tracer = Tracer(capture_content=True, on_end=sink)
        assert Agent(client, tracer=tracer).run("What is the weather in Paris?").ok
        sink.shutdown()
    assert spy.keys and set(spy.keys) == {FAKE_KEY}
    assert len(receiver.spans()) == len(tracer.spans) >= 3
    raw = b"".join(receiver.bodies)
    assert b"Paris" in raw  # content was captured and sent...
    assert FAKE_KEY.encode() not in raw and b"NOT-A-REAL-KEY" not in raw  # ...the key was not
