"""Spans without `capture_content` hold no error text: exceptions routinely quote what the user wrote.

A canary (a string that looks like a secret a user pasted) goes into a question, a tool's
arguments, the tool's exception and the API's error message. Without capture it must be
nowhere in what is recorded or exported: the spans, their tree, the JSONL file, the OTel
spans, the bytes an OTLP collector receives. What remains is each error's type and a fixed
description. With capture, the same run does record it (so the test can fail).
"""

from __future__ import annotations

import json

import httpx2
import pytest

from agent_fakes import Fake
from miniagent.agent import Agent
from miniagent.client import Client
from miniagent.tools import tool
from miniagent.tracing import NOT_CAPTURED, Tracer

CANARY = "sk-live-CANARY-7f3a9c2e51d04b86"  # looks like a key, but no variable holds it: only a user wrote it
QUESTION = f"My card note says {CANARY}; what is the weather there?"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    raise ValueError(f"no such city: {city!r}")


def anthropic_server():
    """The model asks for the weather of the canary, then the API refuses the next request, quoting it."""
    calls = {"n": 0}

    def handle(request: httpx2.Request) -> httpx2.Response:
        calls["n"] += 1
        if calls["n"] == 1:
            return httpx2.Response(200, json={
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": CANARY}}],
                "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}})
        return httpx2.Response(400, json={"type": "error", "error": {
            "type": "invalid_request_error", "message": f"messages.2.content.0: the text {CANARY!r} is not allowed"}},
            headers={"request-id": "req_1"})
    return httpx2.MockTransport(handle)


def traced_run(capture: bool, **tracer_options):
    tracer = Tracer(capture_content=capture, seed=3, **tracer_options)
    client = Client(api_key="sk-ant-test-0123456789", base_url="https://api.test", transport=anthropic_server(),
                    max_retries=0)
    result = Agent(client, [get_weather], tracer=tracer).run(QUESTION)
    assert result.stop == "api_error" and CANARY in str(result.error)  # the caller still gets the whole error
    return tracer


def everything_recorded(tracer: Tracer, tmp_path) -> str:
    """All a tracer lets out: the spans as data, the tree, the JSONL file, the OTel spans."""
    from miniagent.otel import to_otel

    exported = [{"name": s.name, "attributes": dict(s.attributes), "status": s.status.description,
                 "events": [e.name for e in s.events]} for s in to_otel(tracer.spans)]
    return "\n".join([json.dumps([s.to_dict() for s in tracer.spans]), tracer.tree(width=1000),
                      tracer.to_jsonl(tmp_path / "spans.jsonl").read_text(), json.dumps(exported, default=str)])


def test_without_capture_no_error_text_is_recorded_anywhere(tmp_path):
    tracer = traced_run(capture=False)
    assert CANARY not in everything_recorded(tracer, tmp_path)
    spans = {s.kind: s for s in tracer.spans}
    assert {k: (s.status, s.attributes.get("error.type"), s.error) for k, s in spans.items()} == {
        "tool": ("error", "tool_error", f"tool_error: {NOT_CAPTURED}"),
        "model": ("error", "BadRequestError", f"BadRequestError: {NOT_CAPTURED}"),
        "agent": ("error", "api_error", f"api_error: {NOT_CAPTURED}")}
    assert f"tool_error: {NOT_CAPTURED}" in tracer.tree(width=1000)


def test_with_capture_the_same_run_records_the_error_texts(tmp_path):
    tracer = traced_run(capture=True)
    recorded = everything_recorded(tracer, tmp_path)
    assert CANARY in recorded
    spans = {s.kind: s for s in tracer.spans}
    assert CANARY in spans["tool"].error and CANARY in spans["model"].error and CANARY in spans["agent"].error
    assert spans["model"].error.startswith("BadRequestError: 400 invalid_request_error: messages.2")


def test_the_otlp_collector_never_receives_the_error_text():
    pytest.importorskip("opentelemetry.sdk.trace", reason="the tracing extra: pip install 'miniagent[tracing]'")
    from miniagent.otel import OTelSink, otlp_exporter
    from otlp_receiver import OTLPReceiver

    with OTLPReceiver() as receiver:
        sink = OTelSink(otlp_exporter(receiver.endpoint, timeout=5))
        tracer = traced_run(capture=False, on_end=sink)
        sink.shutdown()
        received = receiver.spans()
    assert len(received) == len(tracer.spans) == 4  # two model calls, the tool, the run
    assert CANARY.encode() not in b"".join(receiver.bodies) and b"CANARY" not in b"".join(receiver.bodies)
    statuses = sorted((s["name"].split()[0], s["status"], s["description"], s["attributes"].get("error.type"))
                      for s in received)
    assert statuses == [("chat", "ERROR", f"BadRequestError: {NOT_CAPTURED}", "BadRequestError"),
                        ("chat", "OK", "", None),
                        ("execute_tool", "ERROR", f"tool_error: {NOT_CAPTURED}", "tool_error"),
                        ("invoke_agent", "ERROR", f"api_error: {NOT_CAPTURED}", "api_error")]


def test_an_exception_out_of_the_run_keeps_only_its_type():
    class PaymentError(Exception):
        pass

    def respond(request):
        raise PaymentError(f"card {CANARY} declined")
    tracer = Tracer()
    with pytest.raises(PaymentError):
        Agent(Fake(respond), tracer=tracer).run(QUESTION)
    assert [(s.kind, s.error, s.attributes.get("error.type")) for s in tracer.spans] == [
        ("agent", f"PaymentError: {NOT_CAPTURED}", "PaymentError"),
        ("model", f"PaymentError: {NOT_CAPTURED}", "PaymentError")]


def test_an_error_given_as_text_keeps_only_the_type_it_names():
    tracer = Tracer()
    named, unnamed = tracer.start("a", "tool"), tracer.start("b", "tool")
    tracer.finish(named, f"refused: {CANARY}", **{"error.type": "Refused"})
    tracer.finish(unnamed, f"{CANARY}: refused")  # no type named: the conventions' fallback, never the text's head
    assert (named.error, unnamed.error) == (f"Refused: {NOT_CAPTURED}", f"_OTHER: {NOT_CAPTURED}")
    assert unnamed.attributes["error.type"] == "_OTHER" and CANARY not in json.dumps(tracer.spans[1].to_dict())
    captured = Tracer(capture_content=True)
    opened = captured.start("c", "tool")
    captured.finish(opened, f"refused: {CANARY}")
    assert opened.error == f"refused: {CANARY}" and "error.type" not in opened.attributes
