"""Streaming from the mock (issue #10): every answer it can give can also be streamed.

The central property: accumulating the events of a streamed answer gives exactly the
plain answer to the same request (same keys, same order), for the brain's answers and
for scripted ones. Around it: the event sequence and its framing, pacing (in-process
with a fake clock, over HTTP with the stream's own timestamps), faults that break a
stream midway, records, and the server's behaviour (chunks, keep-alive, a client
that leaves midway).

The accumulator and the SSE parser here are written independently of the mock's
code (and of `miniagent.streaming`), so they check it rather than echo it.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import socket
import time

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagent import DEFAULT_MODEL
from miniagent.builtin_tools import default_tools
from miniagent.mock import MockAPI, Pacing, scripts, serve_in_thread
from miniagent.mock.pacing import MAX_PACED_SECONDS
from miniagent.mock.stream import JSON_DELTA_TOKENS, TEXT_DELTA_TOKENS, message_events, pieces
from miniagent.tokens import estimate_content, estimate_text

KEY = "sk-mock-stream-key-5150"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
TOOLS = default_tools().schemas()
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
HELLO = [{"role": "user", "content": "Hello"}]
EVENT_TYPES = {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
               "message_stop", "ping", "error"}


def body(text: str = "Hello", tools: list | None = None, **extra) -> dict:
    b = {"model": DEFAULT_MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": text}], **extra}
    if tools:
        b["tools"] = tools
    return b


# --- an independent SSE parser and accumulator ---------------------------------------------------------


def parse_sse(raw: bytes) -> list[dict]:
    """The events of an SSE body, checking the API's framing: `event: X`, `data: {json}`, a blank line."""
    text = raw.decode("utf-8")
    assert text.endswith("\n\n") or not text, text[-200:]
    events = []
    for frame in text.split("\n\n")[:-1]:
        lines = frame.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        data = json.loads(lines[1][len("data: "):])
        assert data["type"] == lines[0][len("event: "):], frame  # the name always equals data.type
        events.append(data)
    return events


def accumulate(events: list[dict]) -> dict:
    """The message a client builds from the events (what the SDK's helper does). A tool call
    whose JSON never completed (max_tokens, a broken stream) gets `{}`, never a guess."""
    assert events[0]["type"] == "message_start", events[:1]
    message = copy.deepcopy(events[0]["message"])
    buffers: dict[int, str] = {}
    for event in events[1:]:
        kind = event["type"]
        if kind == "content_block_start":
            assert event["index"] == len(message["content"])  # sequential, from 0
            message["content"].append(copy.deepcopy(event["content_block"]))
        elif kind == "content_block_delta":
            block, delta = message["content"][event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                buffers[event["index"]] = buffers.get(event["index"], "") + delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
        elif kind == "content_block_stop":
            text = buffers.get(event["index"], "")
            if text:
                try:
                    message["content"][event["index"]]["input"] = json.loads(text)
                except ValueError:
                    message["content"][event["index"]]["input"] = {}
        elif kind == "message_delta":
            message["stop_reason"] = event["delta"]["stop_reason"]
            message["stop_sequence"] = event["delta"]["stop_sequence"]
            message["usage"]["output_tokens"] = event["usage"]["output_tokens"]
    return message


def check_sequence(events: list[dict]) -> None:
    """The real API's order (wire-format §1.7): start, one early ping, blocks in order, delta, stop."""
    kinds = [e["type"] for e in events]
    assert set(kinds) <= EVENT_TYPES
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("ping") == 1 and kinds.index("ping") <= 2
    start = events[0]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["stop_sequence"] is None
    assert start["usage"]["output_tokens"] <= 1
    open_block = None
    for event in events[1:-2]:
        if event["type"] == "content_block_start":
            assert open_block is None
            open_block, first = event["index"], True
            block = event["content_block"]
            if block["type"] == "text":
                assert block["text"] == ""
            if block["type"] == "tool_use":
                assert block["input"] == {}
        elif event["type"] == "content_block_delta":
            assert event["index"] == open_block
            if event["delta"]["type"] == "input_json_delta" and first:
                assert event["delta"]["partial_json"] == ""  # the first fragment is "", as the API's is
            first = False
        elif event["type"] == "content_block_stop":
            assert event["index"] == open_block
            open_block = None
    assert open_block is None


def ordered(value: object) -> str:
    """Equality that also sees the order of keys."""
    return json.dumps(value, ensure_ascii=False)


def exchange(request: dict, mock: MockAPI | None = None, headers: dict | None = None) -> tuple[dict, list[dict]]:
    """(plain answer, streamed events) for the same request, each from a fresh mock (so the same ids)."""
    raw = json.dumps({**request, "stream": False}).encode()
    plain = (mock or MockAPI()).handle("POST", "/v1/messages", {**HEADERS, **(headers or {})}, raw)
    streamed = MockAPI().handle("POST", "/v1/messages", {**HEADERS, **(headers or {})},
                                json.dumps({**request, "stream": True}).encode())
    assert plain.status == streamed.status == 200, (plain.body, streamed.body)
    assert streamed.headers["content-type"] == "text/event-stream; charset=utf-8"
    return json.loads(plain.body), parse_sse(streamed.sent)


def check_agrees(request: dict) -> tuple[dict, list[dict]]:
    plain, events = exchange(request)
    check_sequence(events)
    assert ordered(accumulate(events)) == ordered(plain)
    return plain, events


def json_fragments(events: list[dict], index: int) -> list[str]:
    return [e["delta"]["partial_json"] for e in events
            if e["type"] == "content_block_delta" and e["index"] == index and "partial_json" in e["delta"]]


# --- 1. the events, their framing, and what they add up to -----------------------------------------------


def test_a_text_answer_streams_as_the_api_does():
    mock = MockAPI()
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        r = client.post("/v1/messages", json=body(stream=True), headers=HEADERS)
    assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert r.headers["request-id"] == "req_mock_0001" and "content-length" not in r.headers
    events = parse_sse(r.content)
    check_sequence(events)
    assert [e["type"] for e in events[:3]] == ["message_start", "content_block_start", "ping"]
    texts = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert len(texts) > 3 and all(estimate_text(t) <= TEXT_DELTA_TOKENS for t in texts)
    plain, _ = exchange(body())
    assert "".join(texts) == plain["content"][0]["text"]
    assert ordered(accumulate(events)) == ordered(plain)
    assert events[0]["message"]["usage"]["input_tokens"] == plain["usage"]["input_tokens"]
    assert events[-2]["usage"] == {"output_tokens": plain["usage"]["output_tokens"]}


def test_parallel_tool_calls_stream_one_block_at_a_time():
    plain, events = check_agrees(body(DEMO, TOOLS))
    calls = [(i, b) for i, b in enumerate(plain["content"]) if b["type"] == "tool_use"]
    assert len(calls) == 4 and plain["stop_reason"] == "tool_use"
    for index, call in calls:
        fragments = json_fragments(events, index)
        assert fragments[0] == ""
        if call["input"]:
            assert json.loads("".join(fragments)) == call["input"]
            assert len(fragments) >= 3  # the arguments arrive in several pieces
            assert all(estimate_text(f) <= JSON_DELTA_TOKENS for f in fragments)
        else:  # an empty input: only the opening "" (as the real API sends it)
            assert fragments == [""]


def test_count_tokens_and_usage_agree_with_the_stream():
    request = body(DEMO, TOOLS)
    counted = MockAPI().handle("POST", "/v1/messages/count_tokens", HEADERS, json.dumps(
        {k: request[k] for k in ("model", "messages", "tools")}).encode())
    plain, events = check_agrees(request)
    assert json.loads(counted.body)["input_tokens"] == plain["usage"]["input_tokens"] \
        == events[0]["message"]["usage"]["input_tokens"]
    assert events[-2]["usage"]["output_tokens"] == plain["usage"]["output_tokens"] == estimate_content(plain["content"])


def test_a_tool_call_cut_by_max_tokens_streams_json_that_never_completes():
    whole, _ = exchange(body(DEMO, TOOLS))
    calc = next(i for i, b in enumerate(whole["content"]) if b["type"] == "tool_use" and b["name"] == "calculate")
    budget = estimate_content(whole["content"][:calc + 1]) - 1  # the calculate call misses by one token
    plain, events = check_agrees(body(DEMO, TOOLS, max_tokens=budget))
    assert plain["stop_reason"] == "max_tokens" and plain["content"][-1] == {**whole["content"][calc], "input": {}}
    sent = "".join(json_fragments(events, calc))
    full = json.dumps(whole["content"][calc]["input"], ensure_ascii=False, separators=(",", ":"))
    assert sent and full.startswith(sent) and sent != full  # the start of the arguments, never all of them
    with pytest.raises(ValueError):
        json.loads(sent)
    assert events[-2]["delta"] == {"stop_reason": "max_tokens", "stop_sequence": None}
    assert estimate_content(plain["content"]) <= budget


def test_a_text_cut_by_max_tokens_and_a_stop_sequence():
    plain, events = check_agrees(body("What is the capital of France?", max_tokens=10))
    assert plain["stop_reason"] == "max_tokens"
    plain, events = check_agrees(body("What is the capital of France?", stop_sequences=["never", "model:"]))
    assert events[-2]["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": "model:"}


THINKING = {"content": [{"type": "thinking", "thinking": "The user greets me; a greeting back will do.",
                         "signature": "c2lnbmF0dXJl"}, {"type": "text", "text": "Hello there!"}]}


@pytest.mark.parametrize("response", [
    scripts.refusal(), scripts.pause_turn(), scripts.text("Scripted, with a stop sequence.", "stop_sequence"),
    scripts.tool_call("get_weather", {"city": "北京"}, text="Checking."),
    scripts.truncated_tool_call("calculate", {"expression": "(10"}),
    {"content": [{"type": "tool_use", "id": "toolu_given", "name": "get_current_time", "input": {}}]},
    {"content": []}, {"content": ""}, THINKING,
    {"content": [{"type": "text", "text": "with citations", "citations": None}, {"type": "image_like"}]},
], ids=["refusal", "pause_turn", "stop_sequence", "tool_call", "truncated", "given_id", "empty", "empty_text",
        "thinking", "odd_blocks"])
def test_a_scripted_answer_streams_to_the_same_message(response):
    plain_mock, stream_mock = MockAPI(), MockAPI()
    plain_mock.script(response)
    stream_mock.script(response)
    raw = json.dumps(body(tools=TOOLS)).encode()
    plain = json.loads(plain_mock.handle("POST", "/v1/messages", HEADERS, raw).body)
    reply = stream_mock.handle("POST", "/v1/messages", HEADERS, json.dumps(body(tools=TOOLS, stream=True)).encode())
    events = parse_sse(reply.sent)
    check_sequence(events)
    assert ordered(accumulate(events)) == ordered(plain)
    assert events[-2]["delta"]["stop_reason"] == plain["stop_reason"]


def test_the_same_request_gives_the_same_bytes():
    raw = json.dumps(body(DEMO, TOOLS, stream=True)).encode()
    first, second = (MockAPI().handle("POST", "/v1/messages", HEADERS, raw) for _ in range(2))
    assert first.sent == second.sent and first.events == second.events


def test_errors_before_the_stream_stay_plain_json():
    mock = MockAPI()
    mock.script({"status": 529})
    for headers, raw, status in ((HEADERS, json.dumps(body(stream=True)).encode(), 529),  # scripted error
                                 ({**HEADERS, "x-mock-fault": "429"}, json.dumps(body(stream=True)).encode(), 429),
                                 (HEADERS, json.dumps({**body(stream=True), "max_tokens": -1}).encode(), 400),
                                 (HEADERS, json.dumps({**body(), "stream": "yes"}).encode(), 400)):
        reply = mock.handle("POST", "/v1/messages", headers, raw)
        assert reply.status == status and reply.events is None
        assert reply.headers["content-type"] == "application/json" and json.loads(reply.body)["type"] == "error"


def test_a_lone_surrogate_echoed_into_a_stream_stays_valid():
    mock = MockAPI(brain=lambda b: {"content": [{"type": "text", "text": b["messages"][0]["content"]},
                                                {"type": "tool_use", "name": "t", "input": {"x": "\ud800"}}]})
    raw = json.dumps(body("Hello \ud800 there", stream=True)).encode()
    events = parse_sse(mock.handle("POST", "/v1/messages", HEADERS, raw).sent)
    message = accumulate(events)
    assert message["content"][0]["text"] == "Hello \ud800 there" and message["content"][1]["input"] == {"x": "\ud800"}


# --- properties -----------------------------------------------------------------------------------------

PHRASES = ["Hello", "What's the weather in Paris and London?", "北京和上海的天气怎么样？",
           "What time is it?", "Please calculate (12 + 30) * 4", "My name is Ada.", "What is my name?", "Summarise our conversation.",
           "Tell me a joke.", "现在几点了？", "算一下 128 * 28", "I like jazz.", DEMO]


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(st.sampled_from(PHRASES) | st.text(min_size=1, max_size=30), min_size=1, max_size=3),
       tools=st.lists(st.sampled_from(TOOLS), unique_by=lambda t: t["name"], max_size=3),
       max_tokens=st.integers(1, 400), stops=st.lists(st.sampled_from(["model", "。", "the", "Paris", "zz"]),
                                                      max_size=2))
def test_any_streamed_answer_adds_up_to_the_plain_one(parts, tools, max_tokens, stops):
    text = " ".join(parts)
    if not text.strip():
        text = "Hello"
    request = body(text, tools, max_tokens=max_tokens, **({"stop_sequences": stops} if stops else {}))
    plain, events = check_agrees(request)
    assert events[-2]["usage"]["output_tokens"] == plain["usage"]["output_tokens"] <= max_tokens


@settings(deadline=None)
@given(text=st.text(max_size=300), tokens=st.integers(1, 8))
def test_pieces_add_up_to_the_text_and_stay_small(text, tokens):
    cut = pieces(text, tokens)
    assert "".join(cut) == text and all(cut)
    assert all(estimate_text(p) <= tokens for p in cut)


def test_pieces_of_a_huge_text_are_few_and_fast():
    text = "word " * 400_000  # 2 MB, as a script may send
    started = time.perf_counter()
    cut = pieces(text, TEXT_DELTA_TOKENS)
    assert "".join(cut) == text and len(cut) <= 4_096
    assert time.perf_counter() - started < 2


# --- 2. pacing ------------------------------------------------------------------------------------------


class FakeSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def paced_client(mock: MockAPI, sleep: FakeSleep, **kwargs) -> httpx2.Client:
    return httpx2.Client(transport=mock.transport(sleep=sleep), base_url="http://mock", **kwargs)


def test_pacing_waits_first_then_tokens_over_rate_in_process():
    mock, sleep = MockAPI(pacing={"first": 0.2, "rate": 50}), FakeSleep()
    with paced_client(mock, sleep) as client:
        with client.stream("POST", "/v1/messages", json=body(DEMO, TOOLS, stream=True), headers=HEADERS) as r:
            assert sleep.calls == []  # the headers come at once; the waits are in the body
            events = parse_sse(r.read())
    deltas = [e for e in events if e["type"] == "content_block_delta"]
    expected = [0.2] + [estimate_text(e["delta"].get("text", e["delta"].get("partial_json", ""))) / 50
                        for e in deltas[1:]]
    assert sleep.calls == pytest.approx([w for w in expected if w > 0])
    total = sum(sleep.calls)
    sleep.calls.clear()
    with paced_client(mock, sleep) as client:  # plain, with the same pacing: after the whole stream's time
        assert client.post("/v1/messages", json=body(DEMO, TOOLS), headers=HEADERS).status_code == 200
    assert sleep.calls == [pytest.approx(total)]


def test_the_pace_header_overrides_the_mock_and_is_checked():
    mock, sleep = MockAPI(pacing=Pacing(first=0.5)), FakeSleep()
    with paced_client(mock, sleep) as client:
        client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-pace": "off"})
        assert sleep.calls == []
        client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-pace": "first=0.1"})
        assert sleep.calls == [0.1]
        for bad in ("first=61", "rate=0", "rate=-3", "rate=inf", "first=nan", "fast", "first=0.1,first=0.2", KEY):
            r = client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-pace": bad})
            assert r.status_code == 400 and "x-mock-pace" in r.json()["error"]["message"], bad
            assert KEY not in r.text
        counted = client.post("/v1/messages/count_tokens", json={"model": DEFAULT_MODEL, "messages": HELLO},
                              headers={**HEADERS, "x-mock-pace": "first=0.3"})
        assert counted.status_code == 200 and sleep.calls == [0.1]  # token counts are never paced


@pytest.mark.parametrize("kwargs", [dict(first=-1), dict(first=61), dict(first=float("nan")), dict(rate=0),
                                    dict(rate=-5), dict(rate=float("inf")), dict(rate=2e6), dict(rate=True)])
def test_absurd_pacing_is_a_value_error(kwargs):
    with pytest.raises(ValueError):
        Pacing(**kwargs)
    with pytest.raises(ValueError):
        MockAPI(pacing=kwargs)
    with pytest.raises(ValueError):
        MockAPI().pace(**kwargs)


def test_a_slow_rate_is_bounded_by_the_longest_paced_answer():
    mock, sleep = MockAPI(pacing={"first": 1, "rate": 0.001}), FakeSleep()
    with paced_client(mock, sleep, timeout=None) as client:
        client.post("/v1/messages", json=body(DEMO, TOOLS, stream=True), headers=HEADERS).read()
        assert sleep.calls[0] == 1 and sum(sleep.calls) == pytest.approx(MAX_PACED_SECONDS)
        sleep.calls.clear()
        client.post("/v1/messages", json=body(DEMO, TOOLS), headers=HEADERS)
        assert sleep.calls == [pytest.approx(MAX_PACED_SECONDS)]


def test_a_gap_longer_than_the_read_timeout_raises_read_timeout():
    mock, sleep = MockAPI(pacing={"first": 2.0}), FakeSleep()
    with paced_client(mock, sleep, timeout=httpx2.Timeout(5.0, read=0.5)) as client:
        with client.stream("POST", "/v1/messages", json=body(stream=True), headers=HEADERS) as r:
            assert r.status_code == 200
            seen = b""
            with pytest.raises(httpx2.ReadTimeout):
                for chunk in r.iter_raw():
                    seen += chunk
    assert sleep.calls == [0.5]  # waited as long as the timeout, not as long as the gap
    assert [e["type"] for e in parse_sse(seen)] == ["message_start", "content_block_start", "ping"]


def test_pace_control_endpoint_and_reset():
    mock = MockAPI(pacing={"first": 0.3})
    reply = mock.handle("POST", "/_mock/pace", {}, b'{"first": 0.1, "rate": 40}')
    assert (reply.status, json.loads(reply.body)) == (200, {"pacing": {"first": 0.1, "rate": 40.0}})
    assert mock.pacing == Pacing(0.1, 40)
    assert mock.handle("POST", "/_mock/pace", {}, b'{"rate": 0}').status == 400
    assert mock.handle("POST", "/_mock/pace", {}, b'[1]').status == 400
    mock.handle("POST", "/_mock/reset", {}, b"")
    assert mock.pacing == Pacing(0.3)  # back to the constructor's
    mock.pacing = {"rate": 100}
    assert mock.pacing == Pacing(rate=100)
    with pytest.raises(ValueError):
        mock.pacing = {"first": 0.1, "speed": 3}
    assert json.loads(mock.handle("POST", "/_mock/pace", {}, b"{}").body) == {"pacing": {"first": 0.0, "rate": None}}


def test_the_async_transport_streams_with_the_same_waits():
    mock, slept = MockAPI(pacing={"first": 0.2, "rate": 50}), []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async def go() -> bytes:
        async with httpx2.AsyncClient(transport=mock.async_transport(sleep=fake_sleep), base_url="http://m") as c:
            async with c.stream("POST", "/v1/messages", json=body(DEMO, TOOLS, stream=True), headers=HEADERS) as r:
                return await r.aread()

    events = parse_sse(asyncio.run(go()))
    check_sequence(events)
    sync_sleep = FakeSleep()
    with paced_client(MockAPI(pacing={"first": 0.2, "rate": 50}), sync_sleep) as client:
        client.post("/v1/messages", json=body(DEMO, TOOLS, stream=True), headers=HEADERS).read()
    assert slept == sync_sleep.calls and slept[0] == 0.2


# --- 3. faults that break a stream ---------------------------------------------------------------------


def stream_until_broken(client: httpx2.Client, headers: dict, request: dict | None = None
                        ) -> tuple[list[dict], Exception | None]:
    """The events a client received, and the error that ended the stream (None: it ended properly)."""
    seen = b""
    try:
        with client.stream("POST", "/v1/messages", json=request or body(DEMO, TOOLS, stream=True),
                           headers=headers) as r:
            assert r.status_code == 200
            for chunk in r.iter_raw():
                seen += chunk
    except httpx2.TransportError as exc:
        return parse_sse(seen), exc
    return parse_sse(seen), None


@pytest.mark.parametrize("n", [0, 1, 5, 12])
def test_a_cut_stream_sends_exactly_n_events_then_breaks(n):
    with httpx2.Client(transport=MockAPI().transport(), base_url="http://mock") as client:
        events, error = stream_until_broken(client, {**HEADERS, "x-mock-fault": f"cut={n}"})
    assert len(events) == n and isinstance(error, httpx2.RemoteProtocolError)
    assert "incomplete chunked read" in str(error)


def test_a_cut_past_the_end_still_withholds_message_stop():
    with httpx2.Client(transport=MockAPI().transport(), base_url="http://mock") as client:
        whole, error = stream_until_broken(client, HEADERS)
        assert error is None
    with httpx2.Client(transport=MockAPI().transport(), base_url="http://mock") as client:
        events, error = stream_until_broken(client, {**HEADERS, "x-mock-fault": "cut=100000"})
    assert events == whole[:-1] and isinstance(error, httpx2.RemoteProtocolError)


@pytest.mark.parametrize("n", [0, 3, 9])
def test_error_after_n_events_sends_the_error_event_and_ends(n):
    mock = MockAPI()
    mock.fault(error_after=n)
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        events, error = stream_until_broken(client, HEADERS)
    assert error is None and len(events) == n + 1
    assert events[-1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert "message_stop" not in [e["type"] for e in events]


def test_stream_faults_through_the_control_endpoint_and_queue():
    mock = MockAPI()
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        assert client.post("/_mock/fault", json={"cut": 4, "times": 2}).json() == {"pending_faults": 2}
        for _ in range(2):
            events, error = stream_until_broken(client, HEADERS)
            assert len(events) == 4 and error is not None
        assert stream_until_broken(client, HEADERS)[1] is None
        assert client.post("/_mock/fault", json={"error_after": 2}).status_code == 200
        assert stream_until_broken(client, HEADERS)[0][-1]["type"] == "error"


@pytest.mark.parametrize("bad", ["cut=-1", "cut=x", "cut=1000001", "error-after=", "cut=3 error-after=3",
                                 "429 cut=3", "drop cut=2"])
def test_bad_stream_fault_headers_are_a_400(bad):
    reply = MockAPI().handle("POST", "/v1/messages", {**HEADERS, "x-mock-fault": bad},
                             json.dumps(body(stream=True)).encode())
    assert reply.status == 400 and b"x-mock-fault" in reply.body


@pytest.mark.parametrize("kwargs", [dict(cut=-1), dict(cut=1.5), dict(cut=True), dict(error_after=10**7),
                                    dict(cut=2, error_after=2), dict(status=429, cut=1), dict(drop=True, cut=0)])
def test_bad_stream_fault_arguments_are_a_value_error(kwargs):
    with pytest.raises(ValueError):
        MockAPI().fault(**kwargs)


def test_stream_faults_on_a_plain_request():
    """Documented: cut=N breaks a plain body off after N bytes; error-after is a 529 (no 'after the 200')."""
    whole = MockAPI().handle("POST", "/v1/messages", HEADERS, json.dumps(body()).encode()).body
    mock = MockAPI()
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        with pytest.raises(httpx2.RemoteProtocolError, match=f"received 40 bytes, expected {len(whole)}"):
            client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-fault": "cut=40"})
        r = client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-fault": "error-after=3"})
        assert r.status_code == 529 and r.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
        r = client.post("/v1/messages/count_tokens", json={"model": DEFAULT_MODEL, "messages": HELLO},
                        headers={**HEADERS, "x-mock-fault": "error-after=0"})
        assert r.status_code == 529
        r = client.post("/v1/messages", json={"model": DEFAULT_MODEL}, headers={**HEADERS, "x-mock-fault": "error-after=1"})
        assert r.status_code == 529  # before validation, like any status fault
        r = client.post("/v1/messages", json={"model": DEFAULT_MODEL, "stream": True},
                        headers={**HEADERS, "x-mock-fault": "error-after=1"})
        assert r.status_code == 400  # a stream that never starts has nothing to break
        with pytest.raises(httpx2.RemoteProtocolError, match="received 5 bytes"):  # any body: a token count too
            client.post("/v1/messages/count_tokens", json={"model": DEFAULT_MODEL, "messages": HELLO},
                        headers={**HEADERS, "x-mock-fault": "cut=5"})
        with pytest.raises(httpx2.RemoteProtocolError):  # at most all but one byte, so it always breaks
            client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-fault": "cut=1000000"})
    record = mock.records[0]
    assert record["status"] == 200 and record["response"] == whole[:40].decode()  # what was sent, as text


def test_a_scripted_cut_tool_call_shows_partial_arguments():
    mock = MockAPI()
    mock.script(scripts.cut_tool_call("get_weather", {"city": "San Francisco"}, text="Checking."))
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        events, error = stream_until_broken(client, HEADERS, body("weather?", TOOLS, stream=True))
    assert isinstance(error, httpx2.RemoteProtocolError)
    assert events[-1]["type"] == "content_block_delta" and events[-1]["index"] == 1
    sent = "".join(json_fragments(events, 1))
    assert sent and '{"city":"San Francisco"}'.startswith(sent) and sent != '{"city":"San Francisco"}'
    assert accumulate(events)["content"][1]["input"] == {}  # no content_block_stop: never parsed


def test_a_scripted_overload_midway():
    mock = MockAPI()
    mock.script(scripts.overloaded_midway("One, two, three, four, five, six, seven, eight.", deltas=2),
                scripts.overloaded_midway("plain"))
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        events, error = stream_until_broken(client, HEADERS, body(stream=True))
        plain = client.post("/v1/messages", json=body(), headers=HEADERS)
    kinds = [e["type"] for e in events]
    assert error is None and kinds.count("content_block_delta") == 2 and kinds[-1] == "error"
    assert plain.status_code == 529


def test_a_request_fault_wins_over_a_scripted_one():
    mock = MockAPI()
    mock.script(scripts.cut_tool_call("get_weather", {"city": "Paris"}))
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        events, error = stream_until_broken(client, {**HEADERS, "x-mock-fault": "error-after=1"},
                                            body(stream=True))
    assert error is None and [e["type"] for e in events] == ["message_start", "error"]


def test_bad_scripted_faults_fail_early():
    for fault in ({"status": 529}, {"cut": -1}, {}, "cut=3", {"cut": 1, "error_after": 1}):
        with pytest.raises(ValueError):
            MockAPI().script({"content": "x", "fault": fault})
    with pytest.raises(ValueError):
        scripts.with_fault(scripts.text("x"), cut="many")


# --- 4. records ------------------------------------------------------------------------------------------


def test_a_streamed_request_is_recorded_with_its_events():
    mock = MockAPI()
    reply = mock.handle("POST", "/v1/messages", {**HEADERS, "x-mock-fault": "cut=6"},
                        json.dumps(body(DEMO, TOOLS, stream=True)).encode())
    mock.handle("POST", "/v1/messages", {"authorization": f"Bearer {KEY}", "anthropic-version": "2026-10-21"},
                json.dumps(body(stream=True)).encode())
    cut, whole = mock.records
    assert cut["status"] == 200 and cut["body"]["stream"] is True
    assert cut["response"] == parse_sse(reply.sent) and len(cut["response"]) == 6
    assert whole["response"][-1] == {"type": "message_stop"}
    assert accumulate(whole["response"])["id"] == "msg_mock_0002"
    assert KEY not in json.dumps(mock.records)
    served = json.loads(mock.handle("GET", "/_mock/requests", {}, b"").body)
    assert served[1]["response"] == whole["response"]


def test_stream_records_stay_bounded():
    mock = MockAPI(max_record_bytes=20_000, max_records=5)
    for _ in range(20):
        mock.handle("POST", "/v1/messages", HEADERS, json.dumps(body(DEMO, TOOLS, stream=True)).encode())
    assert len(mock.records) <= 5 and mock._records.bytes <= 20_000


# --- 5. robustness --------------------------------------------------------------------------------------


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fault=st.none() | st.sampled_from(["cut=0", "cut=3", "error-after=2", "cut=99999", "slow=0", "cut=",
                                          "error-after=1 slow=0.001", "529"]) | st.text(max_size=20),
       pace=st.none() | st.sampled_from(["first=0.01", "rate=1000", "off", "first=1e9"]) | st.text(max_size=20),
       stream=st.sampled_from([True, False, "true", None]), text=st.sampled_from(PHRASES) | st.text(max_size=20))
def test_handle_never_raises_for_streams(fault, pace, stream, text):
    headers = {**HEADERS, **({"x-mock-fault": fault} if fault is not None else {}),
               **({"x-mock-pace": pace} if pace is not None else {})}
    reply = MockAPI().handle("POST", "/v1/messages", headers,
                             json.dumps({**body(text or "x", TOOLS), "stream": stream}).encode())
    assert 200 <= reply.status <= 599 and reply.delay <= 60
    if reply.events is not None:
        assert reply.status == 200 and sum(w for w, _ in reply.events) <= MAX_PACED_SECONDS + 1e-9
        parse_sse(reply.sent)
    elif reply.broken:  # a plain answer cut short: part of its body, and the length of all of it
        assert len(reply.body) < int(reply.headers["content-length"])
    elif reply.status >= 400:
        assert "Internal error in the mock" not in json.loads(reply.body)["error"]["message"]


# --- over HTTP --------------------------------------------------------------------------------------------


@pytest.fixture
def served():
    """(mock, base_url, server, log) of a mock server on a thread."""
    log = io.StringIO()
    mock = MockAPI()
    server, url = serve_in_thread(mock, log=log, idle_timeout=5, request_timeout=5)
    try:
        yield mock, url, server, log
    finally:
        server.shutdown()
        assert "BUG" not in log.getvalue() and "Traceback" not in log.getvalue(), log.getvalue()


def request_bytes(request: dict, headers: dict | None = None) -> bytes:
    raw = json.dumps(request).encode()
    lines = ["POST /v1/messages HTTP/1.1", "host: mock", *(f"{k}: {v}" for k, v in {**HEADERS, **(headers or {})}
                                                          .items()), f"content-length: {len(raw)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + raw


def read_head(sock: socket.socket, buf: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, "closed before the headers"
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    return int(status_line.split()[1]), {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}, rest


def read_chunked(sock: socket.socket, buf: bytes) -> tuple[bytes, bytes, bool]:
    """(body, bytes after it, ended properly) of a chunked body; not ended if the server closed first."""
    body = b""
    while True:
        while b"\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                return body, b"", False
            buf += chunk
        size_line, _, buf = buf.partition(b"\r\n")
        size = int(size_line, 16)
        while len(buf) < size + 2:
            chunk = sock.recv(65536)
            if not chunk:
                return body + buf[:size], b"", False
            buf += chunk
        assert buf[size:size + 2] == b"\r\n"
        if size == 0:
            return body, buf[2:], True
        body, buf = body + buf[:size], buf[size + 2:]


def test_over_http_a_stream_is_chunked_and_the_connection_is_kept_alive(served):
    mock, url, server, _ = served
    port = server.server_address[1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request_bytes(body(DEMO, TOOLS, stream=True)))
        status, headers, rest = read_head(sock)
        assert status == 200 and headers["transfer-encoding"] == "chunked" and "content-length" not in headers
        assert headers["content-type"] == "text/event-stream; charset=utf-8" and headers["request-id"]
        raw, rest, ended = read_chunked(sock, rest)
        assert ended and rest == b""
        events = parse_sse(raw)
        check_sequence(events)
        sock.sendall(request_bytes(body()))  # the same connection serves the next request
        status, headers, rest = read_head(sock)
        while len(rest) < int(headers["content-length"]):
            rest += sock.recv(65536)
        assert status == 200 and json.loads(rest)["id"] == "msg_mock_0002"
    plain, _ = exchange(body(DEMO, TOOLS))
    assert ordered(accumulate(events)) == ordered(plain)


def test_over_http_a_cut_stream_ends_without_its_last_chunk(served):
    _, url, _, log = served
    with httpx2.Client(base_url=url) as client:
        events, error = stream_until_broken(client, {**HEADERS, "x-mock-fault": "cut=7"})
        assert len(events) == 7 and isinstance(error, httpx2.RemoteProtocolError)
        events, error = stream_until_broken(client, {**HEADERS, "x-mock-fault": "error-after=4"})
        assert error is None and len(events) == 5 and events[-1]["type"] == "error"
        with pytest.raises(httpx2.RemoteProtocolError):  # a plain body cut short
            client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-fault": "cut=10"})
        assert client.post("/v1/messages", json=body(), headers=HEADERS).status_code == 200
    lines = log.getvalue().splitlines()
    assert "POST /v1/messages 200 (stream of 7 events, cut by a fault)" in lines
    assert "POST /v1/messages 200 (stream of 5 events)" in lines
    assert "POST /v1/messages 200 (cut short by a fault)" in lines


def test_over_http_pacing_is_felt(served):
    """One run, generous bounds: the first delta cannot come before `first`, the whole stream not
    much before its schedule; a plain request with the same pacing comes when the stream would end."""
    mock, url, _, _ = served
    answer = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"
    mock.script(scripts.text(answer), scripts.text(answer))
    schedule_rest = sum(estimate_text(e["delta"]["text"]) for e in message_events(
        {"content": [{"type": "text", "text": answer}], "usage": {"output_tokens": 0}})
        if e["type"] == "content_block_delta") / 200  # an upper bound on the paced part: ~0.1 s
    pace = {"x-mock-pace": "first=0.2,rate=200"}
    with httpx2.Client(base_url=url) as client:
        started = time.monotonic()
        arrivals = []
        with client.stream("POST", "/v1/messages", json=body(stream=True), headers={**HEADERS, **pace}) as r:
            headers_at = time.monotonic() - started
            for line in r.iter_lines():
                if line.startswith("event: "):
                    arrivals.append((line[7:], time.monotonic() - started))
        first_delta = next(t for name, t in arrivals if name == "content_block_delta")
        assert first_delta >= 0.15, arrivals
        assert headers_at < first_delta
        assert arrivals[-1][1] >= 0.15 + schedule_rest * 0.5 and arrivals[-1][0] == "message_stop"
        started = time.monotonic()
        assert client.post("/v1/messages", json=body(), headers={**HEADERS, **pace}).status_code == 200
        assert time.monotonic() - started >= 0.15


def test_over_http_a_client_that_leaves_midway_frees_its_thread(served):
    mock, url, server, log = served
    mock.pace(first=0.05, rate=1)  # seconds between deltas, a minute for the whole answer
    port = server.server_address[1]
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(request_bytes(body(DEMO, TOOLS, stream=True)))
    status, _, rest = read_head(sock)
    while b"content_block_delta" not in rest:  # the first delta has come; the rest is seconds away
        rest += sock.recv(65536)
    assert status == 200 and server.connections == 1
    left = time.monotonic()
    sock.close()
    while server.connections and time.monotonic() - left < 5:
        time.sleep(0.01)
    assert server.connections == 0 and time.monotonic() - left < 2
    assert "POST /v1/messages 200 (stream: the client left midway)" in log.getvalue().splitlines()
    with httpx2.Client(base_url=url) as client:  # and the server serves on
        assert client.post("/v1/messages", json=body(), headers={**HEADERS, "x-mock-pace": "off"}).status_code == 200


def test_the_command_line_takes_pacing():
    from miniagent.mock.__main__ import build_mock, build_parser
    parser = build_parser()
    mock = build_mock(parser.parse_args(["--first-token", "0.2", "--tokens-per-second", "40"]), parser)
    assert mock.pacing == Pacing(0.2, 40)
    assert build_mock(parser.parse_args([]), parser).pacing == Pacing()
    for bad in (["--first-token", "61"], ["--tokens-per-second", "0"], ["--first-token", "nan"]):
        with pytest.raises(SystemExit):
            build_mock(parser.parse_args(bad), parser)
