"""The client streaming: the same message as create(), retries only before the first byte, bounds, redaction."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import httpx2
import pytest

from drivers import both
from miniagent import deadline
from miniagent.client import (APIConnectionError, APITimeoutError, AuthenticationError, Client,
                              InternalServerError, MalformedResponseError, OverloadedError, RateLimitError,
                              ResponseTooLargeError, StreamError)
from miniagent.loop import run_loop
from miniagent.streaming import encode_event

KEY = "sk-ant-api03-stream-canary-0123456789abcdef"
HELLO = [{"role": "user", "content": "hello"}]
SSE = {"content-type": "text/event-stream; charset=utf-8", "request-id": "req_stream"}
ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
          "content": [{"type": "text", "text": "Let me check the weather in 巴黎 ☀️."},
                      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
          "stop_reason": "tool_use", "stop_sequence": None,
          "usage": {"input_tokens": 377, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                    "output_tokens": 65}}


def events_of(message: dict, size: int = 7) -> list[dict]:
    """The API's event sequence for `message`: text and JSON in pieces of `size` characters, a ping early on."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
            text, key, kind = block["text"], "text", "text_delta"
        else:
            events.append({"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}})
            text, key, kind = json.dumps(block["input"]), "partial_json", "input_json_delta"
        events += [{"type": "content_block_delta", "index": i, "delta": {"type": kind, key: text[j:j + size]}}
                   for j in range(0, len(text), size)]
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                   "usage": {"output_tokens": message["usage"]["output_tokens"]}})
    return events + [{"type": "message_stop"}]


EVENTS = events_of(ANSWER)
BODY = b"".join(encode_event(e) for e in EVENTS)


def sse(body: bytes | list = BODY, status: int = 200, headers: dict | None = None) -> httpx2.Response:
    """A streamed answer; a list body is sent piece by piece, and an exception in it breaks the stream there."""
    if isinstance(body, list):
        pieces = list(body)

        def stream():
            for piece in pieces:
                if isinstance(piece, Exception):
                    raise piece
                yield piece
        return httpx2.Response(status, content=stream(), headers={**SSE, **(headers or {})})
    return httpx2.Response(status, content=body, headers={**SSE, **(headers or {})})


def error(status, kind, message, headers=None):
    return httpx2.Response(status, json={"type": "error", "error": {"type": kind, "message": message}},
                          headers={"request-id": "req_err", **(headers or {})})


def make(*replies, **kwargs):
    """A client whose server answers with `replies` in order; the requests it saw and the waits it took."""
    seen, sleeps, queue = [], [], list(replies)

    def handler(request):
        seen.append(request)
        reply = queue.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    client = Client(api_key=KEY, base_url="https://api.test", transport=httpx2.MockTransport(handler),
                    sleep=sleeps.append, **kwargs)
    return client, seen, sleeps


def cut_after(n: int) -> bytes:
    return b"".join(encode_event(e) for e in EVENTS[:n])


# --- the same message, streamed or not ------------------------------------------------------


@both
def test_stream_yields_every_event_and_ends_with_the_message():
    client, seen, _ = make(sse())
    with client.stream(HELLO, tools=[{"name": "get_weather", "input_schema": {"type": "object"}}]) as s:
        events = list(s)
    assert events == EVENTS  # pings included, each dict as the API sent it
    assert s.message == ANSWER and json.dumps(s.message) == json.dumps(ANSWER)  # key order too
    assert s.usage == ANSWER["usage"]
    assert (client.usage.input_tokens, client.usage.output_tokens, client.usage.calls) == (377, 65, 1)
    body = json.loads(seen[0].content)
    assert body["stream"] is True and body["tools"][0]["name"] == "get_weather"


@both
def test_create_with_stream_returns_what_create_returns():
    client, seen, _ = make(httpx2.Response(200, json=ANSWER), sse())
    plain = client.create(HELLO)
    got = []
    streamed = client.create(HELLO, stream=True, on_event=got.append)
    assert streamed == plain == ANSWER and json.dumps(streamed) == json.dumps(plain)
    assert got == EVENTS
    assert "stream" not in json.loads(seen[0].content) and json.loads(seen[1].content)["stream"] is True
    assert client.usage.calls == 2 and client.usage.output_tokens == 130


@both
def test_stream_false_is_a_plain_call_and_on_event_needs_a_stream():
    client, seen, _ = make(httpx2.Response(200, json=ANSWER))
    assert client.create(HELLO, stream=False) == ANSWER and "stream" not in json.loads(seen[0].content)
    with pytest.raises(TypeError, match="pass stream=True"):
        client.create(HELLO, on_event=print)


@both
def test_the_record_of_a_streamed_call():
    client, _, _ = make(sse())
    client.create(HELLO, stream=True)
    record = client.last.to_dict()
    assert record["status"] == 200 and record["response"] == ANSWER and record["error"] is None
    assert record["stream"] == {"events": len(EVENTS), "bytes": len(BODY), "complete": True}
    assert record["request"]["headers"]["x-api-key"] == "<redacted>" and record["request"]["body"]["stream"] is True


@both
def test_a_stream_split_anywhere_gives_the_same_message():
    pieces = [BODY[i:i + 3] for i in range(0, len(BODY), 3)]  # cuts inside characters and between \n\n
    client, _, _ = make(sse(pieces))
    assert client.create(HELLO, stream=True) == ANSWER


@both
def test_the_progress_is_visible_while_streaming():
    client, _, _ = make(sse())
    texts = []
    with client.stream(HELLO) as s:
        for event in s:
            texts.append(s.accumulator.text)
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
                assert s.accumulator.forming[0]["name"] == "get_weather"
    assert texts[-1] == ANSWER["content"][0]["text"] and "" in texts


@both
def test_the_loop_streams_without_knowing_how():
    final = {**ANSWER, "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn"}
    client, seen, _ = make(sse(), sse(b"".join(encode_event(e) for e in events_of(final))))
    result = run_loop(client, HELLO, tools=[_weather], stream=True)
    assert result.text == "Sunny." and all(json.loads(r.content)["stream"] for r in seen)


def _weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: the city
    """
    return "sunny"


# --- retries before the first byte, never after ------------------------------------------


@both
def test_a_429_before_the_stream_is_retried_as_create_does():
    client, seen, sleeps = make(error(429, "rate_limit_error", "slow down", {"retry-after": "0.25"}), sse())
    with client.stream(HELLO) as s:
        events = list(s)
    assert events == EVENTS and s.message == ANSWER  # one stream, nothing twice
    assert len(seen) == 2 and sleeps == [0.25]
    assert [(e.attempt, e.status) for e in client.exchanges] == [(1, 429), (2, 200)]
    assert client.exchanges[0].stream == {"events": 0, "bytes": 0, "complete": False}


@both
def test_529_5xx_and_dropped_connections_before_the_stream_are_retried_with_backoff():
    client, seen, sleeps = make(error(529, "overloaded_error", "Overloaded"), httpx2.ConnectError("refused"), sse(),
                                max_retries=2)
    assert client.create(HELLO, stream=True) == ANSWER
    assert len(seen) == 3 and 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0


@both
def test_a_stream_that_ends_before_its_first_byte_is_retried():
    client, seen, _ = make(sse(b""), sse([httpx2.ReadError("reset before any byte")]), sse())
    assert client.create(HELLO, stream=True) == ANSWER and len(seen) == 3


@both
def test_errors_before_the_stream_keep_their_types_and_limits():
    client, seen, _ = make(error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(AuthenticationError):
        client.create(HELLO, stream=True)
    assert len(seen) == 1
    client, seen, _ = make(*[error(529, "overloaded_error", "Overloaded")] * 3)
    with pytest.raises(OverloadedError):
        client.create(HELLO, stream=True)
    assert len(seen) == 3
    client, seen, sleeps = make(error(429, "rate_limit_error", "quota", {"retry-after": "3600"}), max_retry_wait=60)
    with pytest.raises(RateLimitError, match="more than max_retry_wait"):
        client.create(HELLO, stream=True)
    assert len(seen) == 1 and sleeps == []
    client, seen, _ = make(error(500, "api_error", "no", {"x-should-retry": "false"}))
    with pytest.raises(InternalServerError):
        client.create(HELLO, stream=True)
    assert len(seen) == 1


@both
def test_a_stream_cut_after_three_events_is_not_retried_and_says_how_far_it_got():
    cut = BODY.index(b"event: content_block_delta")  # after message_start, ping, content_block_start
    client, seen, sleeps = make(sse([BODY[:cut], httpx2.ReadError("connection reset by peer")]), sse())
    with pytest.raises(StreamError) as info:
        client.create(HELLO, stream=True)
    err = info.value
    assert len(seen) == 1 and sleeps == []  # never a silent retry that would repeat the text
    assert isinstance(err, APIConnectionError) and err.events == 3 and err.type == "stream_interrupted"
    assert str(err).startswith("stream_interrupted: the stream was cut (ReadError: connection reset by peer), "
                               "after 3 events (0 characters of text)")
    assert err.partial["content"] == [{"type": "text", "text": ""}] and err.request_id == "req_stream"
    assert "not retried" in err.hint
    assert client.last.stream == {"events": 3, "bytes": cut, "complete": False} and client.last.error
    assert client.usage.calls == 0


@both
def test_a_stream_cut_while_a_tool_call_forms_names_it_and_its_arguments():
    cut = BODY.rindex(b"event:", 0, BODY.rindex(b"input_json_delta"))  # before the tool call's last fragment
    client, _, _ = make(sse([BODY[:cut], httpx2.RemoteProtocolError("peer closed connection")]))
    with pytest.raises(StreamError) as info:
        client.create(HELLO, stream=True)
    message = str(info.value)
    assert f"{len(ANSWER['content'][0]['text'])} characters of text" in message
    assert "tool call 'get_weather' (toolu_1) was forming, its arguments so far: '{\"city\": \"Pari'" in message
    assert info.value.partial["content"][0] == ANSWER["content"][0]


@both
def test_a_stream_that_ends_early_says_so():
    for body, detail in [(cut_after(5), "ended before message_stop, after 5 events"),
                         (cut_after(5) + b"event: content_block_delta\ndata: {\"ty", "in the middle of an event")]:
        client, seen, _ = make(sse(body), sse())
        with pytest.raises(StreamError, match=detail) as info:
            client.create(HELLO, stream=True)
        assert info.value.type == "stream_incomplete" and len(seen) == 1


@both
def test_an_error_event_mid_stream_is_the_typed_error_and_is_not_retried():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    body = cut_after(5) + encode_event(overloaded)
    client, seen, sleeps = make(sse(body), sse())
    with pytest.raises(OverloadedError) as info:
        client.create(HELLO, stream=True)
    err = info.value
    assert len(seen) == 1 and sleeps == [] and err.status == 529 and err.request_id == "req_stream"
    assert "an error event in the middle of the stream, after 6 events (14 characters of text)" in str(err)
    assert err.partial["content"] == [{"type": "text", "text": "Let me check t"}]


@pytest.mark.parametrize("body,why", [
    (cut_after(3) + b"event: content_block_delta\ndata: {not json\n\n", "an event's data is not JSON"),
    (cut_after(1) + encode_event({"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta",
                                                                                      "text": "x"}}),
     "content_block_delta for block 4: before that block's content_block_start"),
    (encode_event(EVENTS[3]), "content_block_delta before message_start"),
])
@both
def test_a_malformed_stream_is_a_typed_error_with_status_and_request_id(body, why):
    client, seen, _ = make(sse(body), sse())
    with pytest.raises(MalformedResponseError, match=why) as info:
        client.create(HELLO, stream=True)
    assert info.value.status == 200 and info.value.request_id == "req_stream" and len(seen) == 1


@both
def test_a_json_answer_to_a_stream_request_is_named():
    client, seen, _ = make(httpx2.Response(200, json=ANSWER))
    with pytest.raises(MalformedResponseError, match="a stream was asked for, but the answer is 'application/json'"):
        client.create(HELLO, stream=True)
    assert len(seen) == 1


@both
def test_a_caller_who_stops_early_closes_the_stream_and_it_is_recorded():
    client, _, _ = make(sse())
    with client.stream(HELLO) as s:
        for event in s:
            if event["type"] == "content_block_start":
                break
    assert s.message is None and client.usage.calls == 0
    assert client.last.error == "closed by the caller after 3 events, before message_stop"
    assert list(s) == []  # a closed stream is not sent again


# --- bounds ----------------------------------------------------------------------------------


@both
def test_the_size_bound_applies_to_a_stream():
    big = {**ANSWER, "content": [{"type": "text", "text": "x" * 50_000}]}
    body = b"".join(encode_event(e) for e in events_of(big, size=1000))
    client, _, _ = make(sse([body[i:i + 4096] for i in range(0, len(body), 4096)]), max_response_bytes=20_000)
    with pytest.raises(ResponseTooLargeError, match="larger than max_response_bytes=20,000: the stream was not read "
                                                   "further, after") as info:
        client.create(HELLO, stream=True)
    assert info.value.partial["content"][0]["text"].startswith("xxx") and client.last.stream["bytes"] > 20_000


@both
def test_a_declared_size_over_the_bound_is_refused_before_reading():
    client, _, _ = make(sse(BODY, headers={"content-length": str(len(BODY))}), max_response_bytes=100)
    with pytest.raises(ResponseTooLargeError, match="it declares"):
        client.create(HELLO, stream=True)


@both
def test_a_gzipped_stream_is_read():
    import gzip

    client, _, _ = make(httpx2.Response(200, content=gzip.compress(BODY), headers={**SSE, "content-encoding": "gzip"}))
    assert client.create(HELLO, stream=True) == ANSWER


@both
def test_no_deadline_leaks_into_the_callers_code_between_events():
    client, _, _ = make(sse([BODY[i:i + 50] for i in range(0, len(BODY), 50)]))
    seen = []
    client.create(HELLO, stream=True, on_event=lambda event: seen.append(deadline.remaining()))
    assert seen and set(seen) == {None}


@both
def test_a_slow_caller_between_events_is_not_a_stalled_stream():
    """`timeout` bounds the waits for bytes, not the caller's own time between events."""
    client, _, _ = make(sse([BODY[:200], BODY[200:]]), timeout=0.1)
    slow = lambda event: time.sleep(0.15 if event["type"] == "message_start" else 0)  # noqa: E731
    assert client.create(HELLO, stream=True, on_event=slow) == ANSWER


def test_an_in_process_stream_that_is_late_is_caught_after_the_fact():
    def late():
        yield cut_after(3)
        time.sleep(0.3)
        yield BODY[len(cut_after(3)):]

    client, _, _ = make(httpx2.Response(200, content=late(), headers=SSE), timeout=0.1)
    with pytest.raises(StreamError, match="stalled: no bytes for 0.1 s"):
        client.create(HELLO, stream=True)


def test_until_never_extends_an_outer_deadline():
    with deadline.within(5):
        with deadline.until(time.monotonic() + 100):
            assert deadline.remaining() <= 5
        with deadline.within(0.5):
            assert deadline.remaining() <= 0.5
    assert deadline.remaining() is None


# --- secrets ------------------------------------------------------------------------------


@both
def test_the_key_never_appears_in_errors_or_records_but_data_is_data():
    echo = {**ANSWER, "content": [{"type": "text", "text": f"your key is {KEY}"}], "stop_reason": "end_turn"}
    leak = cut_after(5) + encode_event({"type": "error", "error": {"type": "api_error", "message": f"bad {KEY}"}})
    client, _, _ = make(sse(b"".join(encode_event(e) for e in events_of(echo))), sse(leak),
                        sse([cut_after(4), httpx2.ReadError(f"reset {KEY}")]), max_retries=0)
    assert client.create(HELLO, stream=True)["content"][0]["text"] == f"your key is {KEY}"  # data, untouched
    texts = []
    for _ in range(2):
        with pytest.raises(Exception) as info:
            client.create(HELLO, stream=True)
        texts += [str(info.value), repr(info.value), info.value.message, repr(info.value.args)]
    texts.append(json.dumps([e.to_dict() for e in list(client.exchanges)[1:]]))
    assert all(KEY not in text for text in texts) and "<redacted>" in texts[0] and "<redacted>" in texts[4]


# --- over a real socket: timing -----------------------------------------------------------------


class SlowServer:
    """A socket server that answers every request with `behaviour(conn, stop)`, one connection at a time."""

    def __init__(self, behaviour):
        self.behaviour, self.stop = behaviour, threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests += 1
                try:
                    self.behaviour(conn, self.stop)
                except OSError:
                    pass  # the client gave up: that is the point

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.sock.close()


def until_closed(conn, stop):
    """Send nothing more; return when the client hangs up (or the test ends)."""
    conn.settimeout(0.05)
    while not stop.is_set():
        try:
            if conn.recv(1) == b"":
                return
        except TimeoutError:
            continue


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\nrequest-id: req_sock\r\n\r\n"


@both
def test_over_a_socket_a_stream_in_tiny_pieces_is_the_same_message():
    def behaviour(conn, stop):
        conn.sendall(HEAD)
        for i in range(0, len(BODY), 5):
            conn.sendall(BODY[i:i + 5])

    with SlowServer(behaviour) as server:
        client = Client(api_key=KEY, base_url=server.url, timeout=5)
        assert client.create(HELLO, stream=True) == ANSWER


@both
def test_over_a_socket_a_stalled_stream_ends_after_timeout():
    def behaviour(conn, stop):
        conn.sendall(HEAD + cut_after(3))
        until_closed(conn, stop)

    with SlowServer(behaviour) as server:
        client = Client(api_key=KEY, base_url=server.url, timeout=0.5, max_retries=2)
        started = time.monotonic()
        stalled = r"the stream stalled: no bytes for 0.5 s \(the timeout\), after 3 events"
        with pytest.raises(StreamError, match=stalled):
            client.create(HELLO, stream=True)
        assert time.monotonic() - started < 2.0 and server.requests == 1


def test_over_a_socket_a_trickling_stream_ends_at_stream_timeout():
    """A ping every 0.1 s keeps every read within `timeout`, but not the whole stream within `stream_timeout`."""
    def behaviour(conn, stop):
        conn.sendall(HEAD + cut_after(1))
        while not stop.wait(0.1):
            conn.sendall(encode_event({"type": "ping"}))

    with SlowServer(behaviour) as server:
        client = Client(api_key=KEY, base_url=server.url, timeout=0.5, stream_timeout=1.0, max_retries=2)
        started = time.monotonic()
        events = []
        with pytest.raises(StreamError, match="did not finish within stream_timeout=1 s") as info:
            client.create(HELLO, stream=True, on_event=events.append)
        assert 0.9 < time.monotonic() - started < 2.5 and server.requests == 1
        assert info.value.type == "stream_timeout" and len(events) >= 5 and info.value.events == len(events)


def test_over_a_socket_no_first_byte_is_a_timeout_and_is_retried():
    def behaviour(conn, stop):
        conn.sendall(HEAD)
        until_closed(conn, stop)

    with SlowServer(behaviour) as server:
        client = Client(api_key=KEY, base_url=server.url, timeout=0.3, max_retries=1)
        client.sleep = lambda s: None
        started = time.monotonic()
        with pytest.raises(APITimeoutError, match="no stream began within the timeout of 0.3 s"):
            client.create(HELLO, stream=True)
        assert time.monotonic() - started < 2.0 and server.requests == 2


@both
def test_llamacpps_stream_without_message_start_is_kept_and_says_so():
    """llama.cpp's server (build 11434) sends no message_start when its answer begins with a character
    split across tokens (3 of 3 Chinese answers here): these are its bytes, replayed. The message is kept,
    with what message_start would have said unknown, and the exchange records the deviation."""
    body = (Path(__file__).parent / "data" / "llamacpp-stream-without-message-start.sse").read_bytes()
    assert body.startswith(b"event: content_block_start") and b"message_start" not in body
    client, seen, _ = make(sse(body))
    message = client.create(HELLO, stream=True)
    assert message["stop_reason"] == "max_tokens" and message["usage"]["output_tokens"] == 12
    assert message["content"][0]["type"] == "text" and message["content"][0]["text"].startswith("尾逐这")
    assert message["id"] == "msg_unknown" and message["usage"]["input_tokens"] == 0
    assert client.last.stream["deviations"] == ["the stream began without message_start (its id, model and "
                                                "input token count are unknown)"]


@both
def test_llamacpps_tool_use_started_without_input_is_built_from_its_deltas_and_says_so():
    """llama.cpp's server (build 11434) starts a tool_use block with no 'input' (the API sends {}), then
    sends its arguments as input_json_delta, keeping every block open until the end (notebook 06's demo
    question, SmolLM2-135M, max_tokens 300): its bytes, replayed. Each call gets the input its deltas built."""
    body = (Path(__file__).parent / "data" / "llamacpp-stream-tool-use-without-input.sse").read_bytes()
    assert b'"content_block":{"type":"tool_use","id":"6p3kilVrtlp3v656O8vQcPPUiGVUCYpH","name":"calculate"}}' in body
    client, seen, _ = make(sse(body))
    message = client.create(HELLO, stream=True)
    calls = [b for b in message["content"] if b["type"] == "tool_use"]
    assert [c["input"] for c in calls] == [{"expression": "<value>"}, {"expression": "<value_2>"},
                                           {"expression": "<value_2_2>"}, {}]  # the last one cut by max_tokens
    assert message["stop_reason"] == "max_tokens" and message["content"][0]["text"].startswith("可以在")
    assert client.last.stream["deviations"] == ["a tool_use block started without 'input' (its arguments came "
                                                "in its deltas, as usual)"]
