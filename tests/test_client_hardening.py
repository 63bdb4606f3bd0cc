"""The client against hostile input: bad keys, broken servers, absurd headers, huge and slow bodies.

Each test is one class of input from the hardening issue; each failed before the fix.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import tracemalloc

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import both
from miniagent.client import (MAX_RETRY_AFTER, APIError, APITimeoutError, Client, InvalidAPIKeyError,
                              MalformedResponseError, MissingAPIKeyError, RequestEncodingError,
                              ResponseTooLargeError, connect, retry_after_seconds)
from miniagent.mock import MockAPI, serve_in_thread

KEY = "sk-ant-api03-hardening-canary-0123456789abcdef"
OK = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "hi"}],
      "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 3}}
HELLO = [{"role": "user", "content": "hello"}]


def replying(*replies, **kwargs):
    """A client whose server answers with `replies` in order; also returns the requests it saw."""
    seen, queue = [], list(replies)

    def handler(request):
        seen.append(request)
        return queue.pop(0)

    kwargs.setdefault("max_retries", 0)
    client = Client(api_key=kwargs.pop("api_key", KEY), base_url="https://api.test",
                    transport=httpx2.MockTransport(handler), sleep=lambda s: None, **kwargs)
    return client, seen


def forms_of(key: str) -> list[str]:
    """The key as it could leak: raw, repr'd, JSON-escaped, as bytes, and each line of it."""
    forms = [key, repr(key)[1:-1], json.dumps(key)[1:-1], repr(key.encode("utf-8", "replace"))[2:-1]]
    return forms + [part for part in key.splitlines() if len(part) >= 6]


# --- the API key ----------------------------------------------------------------------


@both
def test_surrounding_whitespace_is_stripped_from_a_key():
    client, seen = replying(httpx2.Response(200, json=OK), api_key=f"  {KEY}\n")
    client.create(HELLO)
    assert seen[0].headers["x-api-key"] == KEY


@pytest.mark.parametrize("bad,what", [
    (f"{KEY[:12]}\r\n{KEY[12:]}", "a line break"),
    (f"{KEY[:12]}\n{KEY[12:]}", "a line break"),
    (f"{KEY[:12]} {KEY[12:]}", "a space"),
    (f"{KEY[:12]}\t{KEY[12:]}", "a whitespace character"),
    (f"{KEY[:12]}\x00{KEY[12:]}", "a control character"),
    (f"{KEY[:12]}\x7f{KEY[12:]}", "a control character"),
    (f"{KEY[:12]}\u00e9{KEY[12:]}", "a non-ASCII character"),
    (f"{KEY[:12]}\u200b{KEY[12:]}", "a non-ASCII character"),  # a zero-width space from a chat app
])
def test_a_key_with_bad_characters_inside_is_refused_before_any_request(bad, what):
    with pytest.raises(InvalidAPIKeyError) as info:
        Client(api_key=bad, transport=httpx2.MockTransport(lambda r: pytest.fail("a request was sent")))
    err = info.value
    assert what in str(err) and "character 13 of" in str(err)
    for text in (str(err), repr(err), err.message, repr(err.args)):
        for form in forms_of(bad):
            assert form not in text


@both
def test_connect_refuses_a_broken_key_from_the_environment_and_sends_nothing(monkeypatch):
    server, url = serve_in_thread()
    try:
        monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", f"{KEY[:20]}\r\n{KEY[20:]}")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        with pytest.raises(InvalidAPIKeyError, match="ANTHROPIC_API_KEY has a line break inside it") as info:
            connect(quiet=True)
        assert all(form not in str(info.value) for form in forms_of(KEY))
        assert server.mock.records == []
    finally:
        server.shutdown()


@pytest.mark.parametrize("empty", ["", "   ", "\n", None])
def test_an_empty_key_is_missing(empty):
    with pytest.raises(MissingAPIKeyError):
        Client(api_key=empty)


@both
def test_redaction_never_rewrites_the_data():
    """A short key ("anything", as the README suggests against the mock) must not corrupt answers."""
    mock = MockAPI()
    client = Client(api_key="anything", base_url="http://mock.invalid", transport=mock.transport())
    question = [{"role": "user", "content": "Say anything you like"}]
    answer = client.create(question)
    assert "anything" in answer["content"][0]["text"] and "<redacted>" not in json.dumps(answer)
    assert answer == mock.records[-1]["response"]  # exactly what the server sent
    follow_up = question + [{"role": "assistant", "content": answer["content"]}, {"role": "user", "content": "ok"}]
    assert client.create(follow_up)["type"] == "message"  # the mock accepted the history as stored


@both
def test_the_key_in_a_successful_answer_is_data_but_in_an_error_it_is_redacted():
    echoed = {**OK, "content": [{"type": "text", "text": f"your key is {KEY}"}]}
    client, _ = replying(httpx2.Response(200, json=echoed),
                         httpx2.Response(401, json={"type": "error", "error": {"type": "authentication_error",
                                                                              "message": f"invalid x-api-key {KEY}"}}))
    assert client.create(HELLO) == echoed
    with pytest.raises(APIError) as info:
        client.create(HELLO)
    assert KEY not in str(info.value) and KEY not in json.dumps(client.last.to_dict())
    assert "<redacted>" in str(info.value)


# --- malformed responses ----------------------------------------------------------------

BROKEN = {
    "a list": [],
    "a string": "message",
    "null": None,
    "no type": {k: v for k, v in OK.items() if k != "type"},
    "no content": {k: v for k, v in OK.items() if k != "content"},
    "content a string": {**OK, "content": "hi"},
    "content a dict": {**OK, "content": {"type": "text", "text": "hi"}},
    "a block that is a string": {**OK, "content": ["hi"]},
    "a block without type": {**OK, "content": [{"text": "hi"}]},
    "a block with a numeric type": {**OK, "content": [{"type": 3}]},
    "text not a string": {**OK, "content": [{"type": "text", "text": None}]},
    "text missing": {**OK, "content": [{"type": "text"}]},
    "tool_use without id": {**OK, "content": [{"type": "tool_use", "name": "f", "input": {}}]},
    "tool_use id a number": {**OK, "content": [{"type": "tool_use", "id": 7, "name": "f", "input": {}}]},
    "tool_use name missing": {**OK, "content": [{"type": "tool_use", "id": "t1", "input": {}}]},
    "tool_use input a string": {**OK, "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": "{}"}]},
    "no usage": {k: v for k, v in OK.items() if k != "usage"},
    "usage a list": {**OK, "usage": [1, 2]},
    "usage tokens a string": {**OK, "usage": {"input_tokens": "10", "output_tokens": 3}},
    "usage tokens negative": {**OK, "usage": {"input_tokens": -1, "output_tokens": 3}},
    "usage tokens a boolean": {**OK, "usage": {"input_tokens": True, "output_tokens": 3}},
    "cache tokens a string": {**OK, "usage": {**OK["usage"], "cache_read_input_tokens": "x"}},
    "id a number": {**OK, "id": 1},
    "no id": {k: v for k, v in OK.items() if k != "id"},
    "model missing": {k: v for k, v in OK.items() if k != "model"},
    "role user": {**OK, "role": "user"},
    "stop_reason a number": {**OK, "stop_reason": 1},
}


@pytest.mark.parametrize("name", BROKEN)
@both
def test_every_malformed_200_is_one_typed_error_with_status_and_request_id(name):
    client, _ = replying(httpx2.Response(200, json=BROKEN[name], headers={"request-id": "req_broken"}))
    with pytest.raises(MalformedResponseError) as info:
        client.create(HELLO)
    assert info.value.status == 200 and info.value.request_id == "req_broken"
    assert "req_broken" in str(info.value) and "not a Messages API response" in str(info.value)


@pytest.mark.parametrize("body", [b"", b"{", b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000, b"null"])
@both
def test_a_200_that_is_not_json_or_too_deep_is_malformed(body):
    client, _ = replying(httpx2.Response(200, content=body, headers={"request-id": "req_x"}))
    with pytest.raises(MalformedResponseError) as info:
        client.create(HELLO)
    assert info.value.request_id == "req_x"


@pytest.mark.parametrize("payload", [{"input_tokens": "5"}, {"tokens": 5}, [], {"input_tokens": -1}])
@both
def test_a_malformed_count_tokens_answer_is_typed(payload):
    client, _ = replying(httpx2.Response(200, json=payload))
    with pytest.raises(MalformedResponseError):
        client.count_tokens(HELLO)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=12)


@settings(deadline=None)
@given(key=st.sampled_from(sorted(OK)), value=JSON,
       block_key=st.sampled_from(["type", "text", "id", "name", "input"]), block_value=JSON)
def test_any_corruption_of_a_response_is_a_message_or_a_typed_error(key, value, block_key, block_value):
    corrupt = {**OK, key: value, "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {},
                                              block_key: block_value}]}
    client, _ = replying(httpx2.Response(200, json=corrupt))
    try:
        message = client.create(HELLO)
    except MalformedResponseError:
        return
    assert isinstance(message["content"], list) and isinstance(message["usage"]["input_tokens"], int)


@both
def test_an_error_body_of_any_shape_is_a_typed_error():
    for body in ({"error": "boom"}, {"error": {"message": 5, "type": ["x"]}}, [], "x" * 10_000):
        client, _ = replying(httpx2.Response(500, json=body))
        with pytest.raises(APIError) as info:
            client.create(HELLO)
        assert info.value.status == 500 and len(str(info.value)) < 3000


# --- retry-after ----------------------------------------------------------------------


@pytest.mark.parametrize("headers,expected", [
    ({"retry-after": "2"}, 2.0),
    ({"retry-after": " 0.5 "}, 0.5),
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "soon", "retry-after": "3"}, 3.0),  # an unreadable ms header falls back
    ({"retry-after": "-5"}, 0.0),
    ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past: now
    ({"retry-after": "1e308"}, MAX_RETRY_AFTER),  # absurd: capped
    ({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}, MAX_RETRY_AFTER),
    ({"retry-after": "soon"}, None),
    ({"retry-after": ""}, None),
    ({"retry-after": "nan"}, None),
    ({"retry-after": "inf"}, None),
    ({"retry-after": "Mon, 99 Foo 2025 99:99:99 GMT"}, None),
    ({"retry-after": "1, 2"}, None),
    ({"retry-after-ms": "-inf"}, None),
])
def test_retry_after_in_any_form_never_crashes(headers, expected):
    assert retry_after_seconds(httpx2.Headers(headers)) == expected


@settings(deadline=None)
@given(value=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255), max_size=40),
       name=st.sampled_from(["retry-after", "retry-after-ms"]))
def test_retry_after_is_none_or_a_bounded_wait(value, name):
    seconds = retry_after_seconds(httpx2.Headers({name: value.encode("latin-1")}))
    assert seconds is None or 0.0 <= seconds <= MAX_RETRY_AFTER


@both
def test_unreadable_retry_after_falls_back_to_backoff_and_absurd_is_not_waited():
    busy = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    waits = []
    client, _ = replying(httpx2.Response(429, json=busy, headers={"retry-after": "whenever"}),
                         httpx2.Response(200, json=OK), max_retries=1)
    client.sleep = waits.append
    client.create(HELLO)
    assert len(waits) == 1 and 0.375 <= waits[0] <= 0.5  # the first backoff step, with jitter
    client, _ = replying(httpx2.Response(429, json=busy, headers={"retry-after": "1e308"}), max_retries=3)
    with pytest.raises(APIError, match="asked to wait 86400 s, more than max_retry_wait"):
        client.create(HELLO)


# --- bounds: time per attempt, size per response, records ----------------------------------


class HostileServer:
    """A one-connection-at-a-time socket server whose answer is written by `behaviour(conn)`."""

    def __init__(self, behaviour):
        self.behaviour = behaviour
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                try:
                    self.behaviour(conn, self.stop)
                except OSError:
                    pass  # the client gave up: that is the point

    def close(self):
        self.stop.set()
        self.sock.close()


def trickle(payload: bytes, every: float):
    def behaviour(conn, stop):
        for i in range(len(payload)):
            if stop.is_set():
                return
            conn.sendall(payload[i:i + 1])
            time.sleep(every)
    return behaviour


BODY = json.dumps(OK).encode()
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(BODY)


@pytest.mark.parametrize("what,payload", [("the body", None), ("the headers", HEAD + BODY)])
@both
def test_a_server_that_trickles_cannot_hold_an_attempt_past_its_timeout(what, payload):
    """One byte every 50 ms would take 10+ s; the attempt must end near its 0.5 s timeout."""
    if payload is None:
        def behaviour(conn, stop):
            conn.sendall(HEAD)
            trickle(BODY, 0.05)(conn, stop)
    else:
        behaviour = trickle(payload, 0.05)
    server = HostileServer(behaviour)
    try:
        client = Client(api_key=KEY, base_url=server.url, timeout=0.5, max_retries=0)
        started = time.monotonic()
        with pytest.raises(APITimeoutError, match="within the timeout of 0.5 s"):
            client.create(HELLO)
        assert time.monotonic() - started < 2.0, f"trickling {what} held the call"
    finally:
        server.close()


@both
def test_an_oversized_response_is_refused_while_reading():
    big = {**OK, "content": [{"type": "text", "text": "x" * 3_000_000}]}
    client, _ = replying(httpx2.Response(200, json=big), max_response_bytes=1_000_000)
    with pytest.raises(ResponseTooLargeError, match="larger than max_response_bytes=1,000,000"):
        client.create(HELLO)
    assert client.last.error and client.last.status == 200


def test_a_decompression_bomb_fails_without_exhausting_memory():
    """200 MB of zeros, gzipped to about 200 kB, against a 1 MB bound, over a real socket."""
    bomb = gzip.compress(b"0" * 200_000_000, compresslevel=9)
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
            b"content-length: %d\r\n\r\n" % len(bomb))

    def behaviour(conn, stop):
        conn.sendall(head + bomb)

    server = HostileServer(behaviour)
    try:
        client = Client(api_key=KEY, base_url=server.url, max_response_bytes=1_000_000, max_retries=0)
        tracemalloc.start()
        try:
            with pytest.raises(ResponseTooLargeError):
                client.create(HELLO)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 100_000_000, f"peak {peak:,} bytes"
    finally:
        server.close()


@both
def test_records_of_exchanges_are_bounded_but_the_caller_gets_everything():
    long = "y" * 5_000_000
    reply = {**OK, "content": [{"type": "text", "text": long}]}
    client, _ = replying(httpx2.Response(200, json=reply))
    answer = client.create([{"role": "user", "content": long}])
    assert answer["content"][0]["text"] == long
    record = json.dumps(client.last.to_dict())
    assert len(record) < 100_000 and "more characters]" in record


# --- the request body ------------------------------------------------------------------


@pytest.mark.parametrize("messages,where", [
    ([{"role": "user", "content": "bad \ud800 text"}], "messages.0.content: a lone surrogate"),
    ([{"role": "user", "content": [{"type": "text", "text": "x", "n": float("nan")}]}], "messages.0.content.0.n: nan"),
    ([{"role": "user", "content": {"a", "set"}}], "messages.0.content: a set is not JSON"),
])
@both
def test_a_body_that_is_not_json_is_refused_before_sending_and_names_the_value(messages, where):
    client, seen = replying()
    with pytest.raises(RequestEncodingError, match=where):
        client.create(messages)
    assert seen == [] and len(client.exchanges) == 0


@both
def test_a_circular_body_is_named():
    loop: list = []
    loop.append(loop)
    client, _ = replying()
    with pytest.raises(RequestEncodingError, match="circular"):
        client.create([{"role": "user", "content": loop}])
