"""The mock against hostile clients (issue #8): every request gets a JSON answer, memory
stays bounded, the control endpoints are guarded, and the flaky mode is reproducible.

Most tests talk raw bytes over a socket, because the attacks live below what an HTTP
client library lets you send. `talk()` and `read_answer()` are shared with the fuzz test.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import select
import socket
import time
import tracemalloc
from dataclasses import dataclass

import httpx2
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from miniagent import DEFAULT_MODEL
from miniagent.mock import MockAPI, serve_in_thread
from miniagent.mock import api as mock_api

KEY = "sk-mock-hardening-key-4242"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
BODY = {"model": DEFAULT_MODEL, "max_tokens": 200, "messages": [{"role": "user", "content": "Hello"}]}
RAW_BODY = json.dumps(BODY).encode()
MAX_BODY = 32 * 1024 * 1024
ENDPOINTS = ["POST /v1/messages", "POST /v1/messages/count_tokens", "POST /_mock/script", "POST /_mock/fault",
             "GET /_mock/requests", "DELETE /_mock/requests", "POST /_mock/reset"]
BUG_MARKERS = ("Internal error in the mock", "mock: BUG", "Traceback")


def fixed_brain(body: dict) -> dict:
    return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None}


# --- raw HTTP ------------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool  # the server closed the connection after this answer
    whole: bool = True  # False: a fault cut it short (only when read with cut_ok=True)

    def error(self) -> tuple[int, str, str]:
        """(status, error type, message), after checking the API's error shape."""
        assert self.headers.get("content-type") == "application/json", self
        data = json.loads(self.body)
        assert set(data) == {"type", "error", "request_id"} and data["type"] == "error", data
        assert isinstance(data["error"]["type"], str) and isinstance(data["error"]["message"], str), data
        assert data["request_id"] == self.headers["request-id"]
        return self.status, data["error"]["type"], data["error"]["message"]


def read_answer(sock: socket.socket, *, head: bool = False, cut_ok: bool = False) -> Answer | None:
    """One HTTP response off the socket (after any 100 Continue); None if the server closed without a byte.

    A stream's chunked body is read to its last chunk. With `cut_ok` (the request asked for
    `x-mock-fault: cut=N`), a body that ends early is an answer too, marked not whole."""
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                assert not buf, f"the server closed mid-answer: {buf[:300]!r}"
                return None
            buf += chunk
        head_bytes, _, rest = buf.partition(b"\r\n\r\n")
        status_line, *lines = head_bytes.decode("latin-1").split("\r\n")
        match = re.fullmatch(r"HTTP/1\.1 (\d{3}) [^\r\n]*", status_line)
        assert match, f"not an HTTP status line: {status_line!r}"
        if match.group(1) != "100":
            break
        assert not lines, "a 100 Continue with headers"
        buf = rest
    headers = {}
    for line in lines:
        name, sep, value = line.partition(":")
        assert sep and name == name.strip(), f"a malformed header line: {line!r}"
        headers[name.lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        assert "content-length" not in headers and not head
        body, whole = read_chunks(sock, rest)
        assert whole or cut_ok, "the server closed in the middle of a stream"
        return Answer(int(match.group(1)), headers, body, not whole, whole)
    no_body = match.group(1) in ("204", "304")  # a browser's preflight is answered 204: no body, no length
    length = 0 if no_body else int(headers["content-length"])
    while not head and len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk and cut_ok:
            return Answer(int(match.group(1)), headers, rest, True, False)
        assert chunk, "the server closed before the end of the body"
        rest += chunk
    closed = False
    if headers.get("connection") == "close":
        tail = sock.recv(65536) if len(rest) <= (0 if head else length) else b"x"
        assert tail == b"", "the server promised to close, but sent more"
        closed = True
    return Answer(int(match.group(1)), headers, rest[:0 if head else length], closed)


def read_chunks(sock: socket.socket, buf: bytes) -> tuple[bytes, bool]:
    """A chunked body and whether it ended with its last chunk (else the server closed first)."""
    body = b""
    while True:
        while b"\r\n" not in buf:
            if not (more := sock.recv(65536)):
                return body, False
            buf += more
        size_line, _, buf = buf.partition(b"\r\n")
        size = int(size_line, 16)
        while len(buf) < size + 2:
            if not (more := sock.recv(65536)):
                return body + buf[:size], False
            buf += more
        assert buf[size:size + 2] == b"\r\n", "a chunk not followed by CRLF"
        body, buf = body + buf[:size], buf[size + 2:]
        if size == 0:
            return body, True


def talk(port: int, data: bytes, *, half_close: bool = True, timeout: float = 10.0, head: bool = False
         ) -> Answer | None:
    """Send raw bytes on a new connection and read one answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server may answer and close before taking everything
            pass
        return read_answer(sock, head=head)


def request_bytes(method: str = "POST", path: str = "/v1/messages", body: bytes = RAW_BODY,
                  headers: dict[str, str] | None = None, length: bool = True) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "host: mock"]
    lines += [f"{k}: {v}" for k, v in {**HEADERS, **(headers or {})}.items()]
    if length:
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


@contextlib.contextmanager
def serving(mock: MockAPI, **options: float):
    """(port, log) of a mock server on a thread; afterwards it is stopped, and its log
    must show no bug (the last-resort paths were never taken)."""
    log = io.StringIO()
    server, _ = serve_in_thread(mock, log=log, **{"idle_timeout": 5, "request_timeout": 5, **options})
    try:
        yield server.server_address[1], log
    finally:
        server.shutdown()
        time.sleep(0.05)  # let handlers that are closing write their last lines
        assert not any(marker in log.getvalue() for marker in BUG_MARKERS), log.getvalue()


@pytest.fixture
def served():
    """(mock, port, log) of a mock server on a thread."""
    mock = MockAPI(brain=fixed_brain)
    with serving(mock) as (port, log):
        yield mock, port, log


def still_serves(port: int) -> None:
    answer = talk(port, request_bytes())
    assert answer is not None and answer.status == 200, answer


# --- 1. malformed requests get the API's JSON error ------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "-5", "+5", "5_0", "1e3", " ", "0x10", "５", "\u00b2", "5 6"])
def test_an_invalid_content_length_is_a_json_400(served, value):
    _, port, _ = served
    answer = talk(port, request_bytes(headers={"content-length": value}, length=False))
    status, kind, message = answer.error()
    assert (status, kind) == (400, "invalid_request_error") and "content-length" in message
    assert answer.closed
    still_serves(port)


def test_two_different_content_lengths_are_a_json_400(served):
    _, port, _ = served
    data = request_bytes(headers={"Content-Length": str(len(RAW_BODY))}, length=False)
    data = data.replace(b"\r\n\r\n", f"\r\ncontent-length: {len(RAW_BODY) + 1}\r\n\r\n".encode(), 1)
    status, _, message = talk(port, data).error()
    assert status == 400 and "different values" in message


def test_the_same_content_length_twice_is_fine(served):
    _, port, _ = served
    data = request_bytes(headers={"Content-Length": f"{len(RAW_BODY)}, {len(RAW_BODY)}"}, length=False)
    assert talk(port, data).status == 200


def chunked(body: bytes, sizes: tuple[int, ...] = (7, 1, 30)) -> bytes:
    out, rest = b"", body
    for size in sizes:
        piece, rest = rest[:size], rest[size:]
        out += b"%x;ext=1\r\n%s\r\n" % (len(piece), piece)
    if rest:
        out += b"%X\r\n%s\r\n" % (len(rest), rest)
    return out + b"0\r\ntrailer: yes\r\n\r\n"


def test_a_chunked_body_works_over_raw_http(served):
    mock, port, _ = served
    answer = talk(port, request_bytes(body=chunked(RAW_BODY), headers={"transfer-encoding": "chunked"},
                                      length=False))
    assert answer.status == 200 and json.loads(answer.body)["type"] == "message"
    assert mock.records[-1]["body"] == BODY


def test_a_chunked_body_works_from_httpx(served):
    _, port, _ = served

    def pieces():  # a generator body: httpx2 sends it with transfer-encoding: chunked
        yield RAW_BODY[:10]
        yield RAW_BODY[10:]

    r = httpx2.post(f"http://127.0.0.1:{port}/v1/messages", content=pieces(), headers=HEADERS)
    assert r.request.headers["transfer-encoding"] == "chunked" and r.status_code == 200


@pytest.mark.parametrize("framing", [
    b"zz\r\nabc\r\n0\r\n\r\n",                 # not hexadecimal
    b"-1\r\nabc\r\n0\r\n\r\n",                 # negative
    b"3\r\nabcdef\r\n0\r\n\r\n",               # longer than announced
    b"3\r\nab",                                # cut off inside a chunk
    b"3\r\nabc",                               # cut off after a chunk
    b"3\r\nabc\r\n",                           # no last chunk
    b"3\r\nabc\r\n0\r\n",                      # no end of trailers
    b"1" * 5000 + b"\r\n",                     # an endless size line
    b"0\r\n" + b"t: x\r\n" * 40 + b"\r\n",     # too many trailer lines
])
def test_malformed_chunked_framing_is_a_json_400(served, framing):
    _, port, _ = served
    answer = talk(port, request_bytes(body=framing, headers={"transfer-encoding": "chunked"}, length=False))
    status, kind, message = answer.error()
    assert (status, kind) == (400, "invalid_request_error") and "chunk" in message
    still_serves(port)


def test_a_transfer_encoding_other_than_chunked_is_a_json_400(served):
    _, port, _ = served
    answer = talk(port, request_bytes(headers={"transfer-encoding": "gzip, chunked"}, length=False))
    assert answer.error()[0] == 400


def test_a_declared_body_over_the_limit_is_413_before_any_of_it_is_read(served):
    _, port, _ = served
    # nothing after the headers: an answer proves the server did not wait for the body
    answer = talk(port, request_bytes(body=b"", headers={"content-length": str(MAX_BODY + 1)}, length=False),
                  half_close=False)
    assert answer.error()[:2] == (413, "request_too_large") and answer.closed
    for huge in ("9" * 30, "9" * 5000):  # far beyond int() limits too
        answer = talk(port, request_bytes(body=b"", headers={"content-length": huge}, length=False), half_close=False)
        assert answer.error()[0] == 413


def test_expect_100_continue_gets_the_413_instead_of_continue(served):
    _, port, _ = served
    data = request_bytes(body=b"", headers={"content-length": str(MAX_BODY + 1), "expect": "100-continue"},
                         length=False)
    assert talk(port, data, half_close=False).error()[0] == 413


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit(served):
    _, port, _ = served
    data = request_bytes(body=b"%x\r\n" % (MAX_BODY + 1), headers={"transfer-encoding": "chunked"}, length=False)
    answer = talk(port, data, half_close=False)  # the chunk's bytes never come
    assert answer.error()[:2] == (413, "request_too_large") and answer.closed


def test_a_real_oversized_body_gets_its_413(served):
    """A client that sends all 32 MB + 1 still reads the 413: the server drains before closing."""
    _, port, _ = served
    r = httpx2.post(f"http://127.0.0.1:{port}/v1/messages", content=b"x" * (MAX_BODY + 1), headers=HEADERS)
    assert r.status_code == 413 and r.json()["error"]["type"] == "request_too_large"


def nested(depth: int, inner: object = 1) -> object:
    for _ in range(depth):
        inner = [inner]
    return inner


DEEP = b"[" * 100_000


@pytest.mark.parametrize("raw", [
    DEEP,
    DEEP + b"]" * 100_000,
    b'{"model": "m", "max_tokens": 5, "messages": ' + DEEP + b"}",
    json.dumps({**BODY, "metadata": {"user_id": None}}).encode()[:-1] + b', "x": ' + b"{\"a\":" * 50_000 + b"}",
])
def test_deep_json_is_a_clear_400_with_no_recursion_error(raw):
    mock = MockAPI()
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        reply = mock.handle("POST", path, HEADERS, raw)
        data = json.loads(reply.body)
        assert reply.status == 400 and "levels deep" in data["error"]["message"], data
    assert [r["body"] for r in mock.records] == [None, None]  # records read it safely too


def test_deep_json_to_the_control_endpoints_is_a_400():
    mock = MockAPI()
    for path in ("/_mock/script", "/_mock/fault"):
        reply = mock.handle("POST", path, {}, DEEP)
        assert reply.status == 400 and b"levels deep" in reply.body


def test_json_at_the_maximum_depth_goes_through_everything():
    """Validation, brain, token estimate, records and copies all cope with the deepest accepted body."""
    from miniagent.mock.safejson import MAX_JSON_DEPTH
    deep_input = {"x": nested(MAX_JSON_DEPTH - 7)}  # body > messages > message > content > block > input > x
    messages = [{"role": "user", "content": "What is the weather in Paris?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                   "input": deep_input}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "15 C"}]}]
    schema: dict = {"type": "string"}
    for _ in range(50):  # an array of arrays of ... of strings: 100 levels of JSON
        schema = {"type": "array", "items": schema}
    tool = {"name": "get_weather", "description": "Weather", "input_schema": {"type": "object",
                                                                              "properties": {"x": schema}}}
    body = {**BODY, "messages": messages, "tools": [tool]}
    raw = json.dumps(body).encode()
    mock = MockAPI()
    mock.script(lambda b: {"content": "scripted"})
    for _ in range(2):  # a scripted callable (deep copy), then the brain
        reply = mock.handle("POST", "/v1/messages", HEADERS, raw)
        assert reply.status == 200, reply.body
    assert mock.records[0]["body"] == body
    too_deep = json.dumps({**body, "metadata": {"user_id": None, "x": nested(MAX_JSON_DEPTH)}}).encode()
    assert b"levels deep" in mock.handle("POST", "/v1/messages", HEADERS, too_deep).body


def test_deep_json_over_http_is_a_400_and_the_server_lives_on(served):
    _, port, _ = served
    assert talk(port, request_bytes(body=DEEP)).error()[0] == 400
    still_serves(port)


@pytest.mark.parametrize("raw, status", [
    (b"GARBAGE\r\n\r\n", 400),                                   # a bad request line
    (b"GET / HTTP/1.1 extra\r\n\r\n", 400),                      # too many words
    (b"GET / HTTQ/1.1\r\n\r\n", 400),                            # not HTTP
    (b"GET /\r\n", 400),                                         # HTTP/0.9: no version, no headers
    (b"GET / HTTP/2.0\r\n\r\n", 505),                            # a version http.server refuses
    (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),      # a request line over 64 KB
    (b"GET / HTTP/1.1\r\n" + b"h: x\r\n" * 101 + b"\r\n", 431),  # too many headers
    (b"GET / HTTP/1.1\r\nh: " + b"x" * 70_000 + b"\r\n\r\n", 431),  # a header line over 64 KB
    (b"BREW /coffee HTTP/1.1\r\n\r\n", 404),                     # a method nobody serves
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)), 400),  # TLS to a plain port
])
def test_what_http_server_refuses_is_answered_in_json(served, raw, status):
    _, port, _ = served
    answer = talk(port, raw)
    assert answer.error()[0] == status and b"<html" not in answer.body.lower()
    still_serves(port)


def test_a_head_request_gets_headers_only(served):
    _, port, _ = served
    answer = talk(port, b"HEAD /v1/messages HTTP/1.1\r\nconnection: close\r\n\r\n", head=True)
    assert answer.status == 404 and answer.body == b"" and int(answer.headers["content-length"]) > 0


def test_blank_lines_before_a_request_are_skipped(served):
    _, port, _ = served
    assert talk(port, b"\r\n\r\n" + request_bytes()).status == 200


@pytest.mark.parametrize("header", ["slow=1e308", "slow=inf", "slow=61", "delay=1e400", "429 retry-after=inf",
                                    "429 retry-after=1e9", "529 slow=100000", "429 retry-after=86401"])
def test_absurd_fault_headers_are_a_400(header):
    reply = MockAPI().handle("POST", "/v1/messages", {**HEADERS, "x-mock-fault": header}, RAW_BODY)
    assert reply.status == 400 and reply.delay == 0 and b"x-mock-fault" in reply.body


@pytest.mark.parametrize("raw", [b'{"status": 429, "times": 1000000000000}', b'{"delay": 1e9}',
                                 b'{"delay": 1e999}', b'{"status": 429, "retry_after": 1e999}',
                                 b'{"delay": NaN}', b'{"status": 429, "message": 5}', b'{"drop": "yes"}'])
def test_absurd_fault_requests_are_a_400(raw):
    mock = MockAPI()
    reply = mock.handle("POST", "/_mock/fault", {}, raw)
    assert reply.status == 400, reply.body
    assert mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY).status == 200  # nothing was queued


@pytest.mark.parametrize("kwargs", [dict(status=429, times=10**12), dict(delay=float("nan")), dict(delay=1e9),
                                    dict(delay=float("inf")), dict(status=429, retry_after=float("inf")),
                                    dict(status=429, message="x" * 10_000)])
def test_absurd_fault_arguments_are_a_value_error(kwargs):
    with pytest.raises(ValueError):
        MockAPI().fault(**kwargs)


def test_times_is_a_count_not_a_list_of_copies():
    from miniagent.mock.faults import MAX_FAULT_TIMES
    mock = MockAPI(brain=fixed_brain)
    tracemalloc.start()
    try:
        mock.fault(529, times=MAX_FAULT_TIMES)
        reply = mock.handle("POST", "/_mock/fault", {}, b'{"status": 429, "times": 1000000}')
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200_000, f"queueing faults took {peak} bytes"
    assert json.loads(reply.body) == {"pending_faults": MAX_FAULT_TIMES + 1_000_000}
    assert mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY).status == 529


def test_a_lone_surrogate_is_echoed_as_valid_json():
    """JSON may escape half a surrogate pair; echoed back (in records, by the brain) it must still encode."""
    mock = MockAPI(brain=lambda body: {"content": body["messages"][0]["content"]})
    raw = RAW_BODY.replace(b"Hello", b"Hello \\ud800")
    reply = mock.handle("POST", "/v1/messages", HEADERS, raw)
    assert reply.status == 200 and json.loads(reply.body)["content"][0]["text"] == "Hello \ud800"
    reply = mock.handle("GET", "/_mock/requests", {}, b"")
    assert reply.status == 200 and json.loads(reply.body)[0]["body"]["messages"][0]["content"] == "Hello \ud800"


def test_an_internal_bug_becomes_a_500_that_says_so(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError(KEY)  # an exception whose text holds a key must not leak it

    monkeypatch.setattr(mock_api, "validate_request", broken)
    reply = MockAPI().handle("POST", "/v1/messages", HEADERS, RAW_BODY)
    data = json.loads(reply.body)
    assert reply.status == 500 and data["error"]["type"] == "api_error"
    assert "bug in the mock" in data["error"]["message"] and KEY not in reply.body.decode()


_text = st.text(max_size=40)
_header_names = st.sampled_from(["x-api-key", "authorization", "anthropic-version", "x-mock-fault", "content-type",
                                 "X-Api-Key", "x-other"])


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(method=st.sampled_from(["POST", "GET", "DELETE", "post", "", "BREW"]) | _text,
       path=st.sampled_from(["/v1/messages", "/v1/messages/count_tokens", "/_mock/script", "/_mock/fault",
                             "/_mock/requests", "/_mock/reset", "/v1/messages?beta=true",
                             "http://mock/v1/messages"]) | _text | st.builds("http://{}".format, _text),
       headers=st.dictionaries(_header_names, st.sampled_from([KEY, "2023-06-01", "2026-10-21", "429", "slow=0",
                                                                "drop", "Bearer " + KEY]) | _text, max_size=5),
       body=st.binary(max_size=200) | st.builds(lambda v: json.dumps(v).encode(), st.recursive(
           st.none() | st.booleans() | st.integers() | st.text(max_size=10),
           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
           max_leaves=20)))
@example(method="POST", path="/v1/messages", headers=HEADERS, body=DEEP)
@example(method="POST", path="http://[::1/v1/messages", headers=HEADERS, body=b"")
@example(method="POST", path="/v1/messages", headers=HEADERS,
         body=b'{"model": "\\udfff", "max_tokens": 999999, "messages": [{"role": "user", "content": "x"}]}')
@example(method="POST", path="/_mock/script", headers={}, body=b'[{"content": [{"type": "text"}]}]')
@example(method="POST", path="/_mock/fault", headers={}, body=b'{"status": 429, "times": 100000000000000}')
def test_handle_never_raises_for_any_input(method, path, headers, body):
    mock = MockAPI()
    reply = mock.handle(method, path, headers, body)
    assert 200 <= reply.status <= 599 or reply.drop
    if reply.status >= 400:
        data = json.loads(reply.body)
        if set(data) == {"error"}:  # OpenAI's shape: an OpenAI client (Bearer, no anthropic-version; openai_wire.py)
            assert set(data["error"]) == {"message", "type", "param", "code"}
        else:
            assert data["type"] == "error" and set(data["error"]) == {"type", "message"}
        assert "Internal error in the mock" not in data["error"]["message"]
        assert "the mock failed to answer" not in data["error"]["message"]
    assert reply.delay <= 60
    mock.records  # noqa: B018  (reading the records must not raise either)


# --- 2. bounded memory --------------------------------------------------------------------------


def test_records_are_bounded_by_count_oldest_first():
    mock = MockAPI(brain=fixed_brain, max_records=3)
    for _ in range(10):
        mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY)
    assert [r["n"] for r in mock.records] == [8, 9, 10]


def test_records_are_bounded_by_bytes():
    mock = MockAPI(brain=fixed_brain, max_record_bytes=5_000)
    padded = json.dumps({**BODY, "metadata": {"user_id": "u" * 1_500}}).encode()
    for _ in range(10):
        mock.handle("POST", "/v1/messages", HEADERS, padded)
    records = mock.records
    assert 1 <= len(records) <= 3 and records[-1]["n"] == 10
    assert sum(len(r["raw"]) + len(json.dumps(r["response"])) for r in records) <= 5_000


def test_a_record_larger_than_the_whole_budget_keeps_only_its_outline():
    mock = MockAPI(brain=fixed_brain, max_record_bytes=1_000)
    big = json.dumps({**BODY, "metadata": {"user_id": "u" * 5_000}}).encode()
    assert mock.handle("POST", "/v1/messages", HEADERS, big).status == 200
    [record] = mock.records
    assert (record["n"], record["status"], record["raw"], record["body"], record["headers"]) == (1, 200, None, None, {})


def test_record_bounds_are_checked():
    with pytest.raises(ValueError, match="max_records"):
        MockAPI(max_records=0)
    with pytest.raises(ValueError, match="max_record_bytes"):
        MockAPI(max_record_bytes=-1)


def test_records_can_be_cleared_in_python_and_over_http():
    mock = MockAPI(brain=fixed_brain)
    mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY)
    assert mock.clear_records() == 1 and mock.records == []
    mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY)
    reply = mock.handle("DELETE", "/_mock/requests", {}, b"")
    assert (reply.status, json.loads(reply.body)) == (200, {"cleared": 1}) and mock.records == []
    assert json.loads(mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY).body)["id"] == "msg_mock_0003"


@pytest.mark.parametrize("headers", [{"anthropic-version": "2023-06-01"},
                                     {**HEADERS, "x-api-key": "sk-a-stranger"},
                                     {"authorization": "Basic abc", "anthropic-version": "2023-06-01"}])
def test_a_request_that_fails_authentication_stores_nothing(headers):
    mock = MockAPI(api_keys={KEY}, brain=fixed_brain)
    for _ in range(3):
        assert mock.handle("POST", "/v1/messages", headers, RAW_BODY).status == 401
    assert mock.records == []


def test_the_script_queue_is_bounded():
    from miniagent.mock.api import MAX_SCRIPT, MAX_SCRIPT_BYTES
    mock = MockAPI()
    mock.script(*[{"content": "a"}] * MAX_SCRIPT)
    with pytest.raises(ValueError, match="at most"):
        mock.script({"content": "one too many"})
    assert mock.handle("POST", "/_mock/script", {}, b'[{"content": "x"}]').status == 400
    mock.reset()
    with pytest.raises(ValueError, match="bytes"):
        mock.script({"content": "x" * (MAX_SCRIPT_BYTES + 1)})


def test_a_scripted_response_must_be_json_data():
    with pytest.raises(ValueError, match="JSON"):
        MockAPI().script({"content": [{"type": "text", "text": {1, 2}}]})
    with pytest.raises(ValueError, match="levels deep"):
        MockAPI().script({"content": [{"type": "text", "text": nested(500)}]})


def test_pending_faults_are_bounded():
    from miniagent.mock.faults import MAX_PENDING_FAULTS
    mock = MockAPI()
    for _ in range(MAX_PENDING_FAULTS):
        mock.fault(429)
    with pytest.raises(ValueError, match="already waiting"):
        mock.fault(429)


def test_connections_beyond_the_limit_get_a_529_and_are_closed():
    with serving(MockAPI(brain=fixed_brain), max_connections=2) as (port, _):
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
        for sock in held:  # an answered request proves the connection holds a slot (kept alive, now idle)
            sock.sendall(request_bytes())
            assert read_answer(sock).status == 200
        answer = talk(port, request_bytes(), half_close=False)
        assert answer.error()[:2] == (529, "overloaded_error") and answer.closed
        assert "2 connections" in answer.error()[2]
        for sock in held:
            sock.close()
        deadline = time.monotonic() + 5  # the slots free up as soon as the server sees the closes
        while (answer := talk(port, request_bytes())).status == 529 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert answer.status == 200


def test_an_idle_connection_is_closed_after_the_idle_timeout():
    with serving(MockAPI(), idle_timeout=0.3) as (port, _), \
            socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        started = time.monotonic()
        assert sock.recv(100) == b""  # closed without a word: no request had begun
        assert time.monotonic() - started < 4


def test_a_trickling_request_gets_a_408_and_is_closed():
    """Slowloris: a byte now and then resets a per-read timeout forever, but not the request's deadline."""
    with serving(MockAPI(), idle_timeout=0.3, request_timeout=0.6) as (port, _), \
            socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        started = time.monotonic()
        for byte in request_bytes():  # a byte every 0.1 s: each read comes well within the idle timeout
            sock.sendall(bytes([byte]))
            if select.select([sock], [], [], 0.1)[0]:
                break  # the server has answered
        answer = read_answer(sock)
        assert answer.error()[:2] == (408, "timeout_error") and answer.closed
        assert time.monotonic() - started < 4


def test_server_options_are_checked():
    for bad in (dict(max_connections=0), dict(max_connections=2.5), dict(idle_timeout=float("inf")),
                dict(request_timeout=-1)):
        with pytest.raises(ValueError):
            serve_in_thread(MockAPI(), **bad)


# --- 3. the control endpoints need the key when there is one ---------------------------------------


CONTROL = [("GET", "/_mock/requests", b""), ("DELETE", "/_mock/requests", b""), ("POST", "/_mock/reset", b""),
           ("POST", "/_mock/script", b'[{"content": "x"}]'), ("POST", "/_mock/fault", b'{"status": 429}'),
           ("GET", "/_mock/nothing", b"")]


@pytest.mark.parametrize("method, path, body", CONTROL)
def test_control_endpoints_need_the_key_when_the_mock_has_keys(method, path, body):
    mock = MockAPI(api_keys={KEY})
    for headers, message in (({}, "x-api-key header is required"), ({"x-api-key": "sk-wrong"}, "invalid x-api-key"),
                             ({"authorization": "Bearer sk-wrong"}, "invalid x-api-key")):
        reply = mock.handle(method, path, headers, body)
        data = json.loads(reply.body)
        assert (reply.status, data["error"]["type"], data["error"]["message"]) == \
            (401, "authentication_error", message)
        assert b"sk-wrong" not in reply.body
    expected = 404 if path == "/_mock/nothing" else 200
    assert mock.handle(method, path, {"x-api-key": KEY}, body).status == expected
    assert mock.handle(method, path, {"Authorization": f"Bearer {KEY}"}, body).status == expected
    assert MockAPI().handle(method, path, {}, body).status == expected  # without keys, open as before


def test_control_endpoints_need_the_key_over_http_too():
    with serving(MockAPI(api_keys={KEY}, brain=fixed_brain)) as (port, _):
        url = f"http://127.0.0.1:{port}"
        assert httpx2.get(f"{url}/_mock/requests").status_code == 401
        assert httpx2.get(f"{url}/_mock/requests", headers={"x-api-key": KEY}).json() == []


def test_keys_never_reach_logs_records_or_error_texts():
    """Not even a key sent by mistake in another header, or in the query string."""
    mock = MockAPI(api_keys={KEY}, brain=fixed_brain)
    texts = []
    with serving(mock) as (port, log), httpx2.Client(base_url=f"http://127.0.0.1:{port}") as client:
        for headers in (HEADERS, {**HEADERS, "x-api-key": KEY + "x"}, {"authorization": f"Bearer {KEY}"},
                        {"authorization": f"Token {KEY}", "anthropic-version": "2023-06-01"},
                        {**HEADERS, "x-mock-fault": KEY}, {**HEADERS, "anthropic-version": KEY},
                        {**HEADERS, "x-note": f"my key is {KEY}"}):
            for path in ("/v1/messages", "/v1/messages/count_tokens", f"/v1/messages?key={KEY}",
                         "/_mock/requests", "/_mock/fault"):
                texts.append(client.post(path, json=BODY, headers=headers).text)
        texts.append(client.get("/_mock/requests", headers=HEADERS).text)
    texts += [log.getvalue(), json.dumps(mock.records)]
    assert len(mock.records) > 10
    for text in texts:
        assert KEY not in text


# --- 4. unknown paths and wrong methods -------------------------------------------------------------


@pytest.mark.parametrize("method, path", [("GET", "/v1/messages"), ("POST", "/v1/models"), ("PUT", "/"),
                                          ("GET", "/v1/messages/count_tokens"), ("GET", "/_mock/reset"),
                                          ("POST", "/_mock/nothing"), ("PATCH", "/_mock/requests")])
def test_unknown_paths_and_wrong_methods_list_the_endpoints(method, path):
    reply = MockAPI().handle(method, path, HEADERS, b"")
    data = json.loads(reply.body)
    assert (reply.status, data["error"]["type"]) == (404, "not_found_error")
    assert data["error"]["message"].startswith("Not Found") and all(e in data["error"]["message"] for e in ENDPOINTS)


def test_an_absolute_form_request_target_is_routed_by_its_path(served):
    """`POST http://host/v1/messages`, as a client sends through a proxy (RFC 9112 §3.2.2)."""
    _, port, _ = served
    assert talk(port, request_bytes(path="http://mock/v1/messages?beta=true")).status == 200


def test_a_404_over_http_lists_the_endpoints(served):
    _, port, _ = served
    status, kind, message = talk(port, request_bytes("GET", "/v2/anything", b"")).error()
    assert (status, kind) == (404, "not_found_error") and all(e in message for e in ENDPOINTS)


# --- 6. the flaky mode ----------------------------------------------------------------------------------


def outcomes(mock: MockAPI, count: int, path: str = "/v1/messages") -> list[int]:
    body = RAW_BODY if path == "/v1/messages" else json.dumps({"model": DEFAULT_MODEL, "messages": BODY["messages"]}).encode()
    return [mock.handle("POST", path, HEADERS, body).status for _ in range(count)]


def test_flaky_zero_never_fails():
    assert set(outcomes(MockAPI(brain=fixed_brain, flaky=0, seed=3), 500)) == {200}


def test_a_seed_gives_a_reproducible_pattern_and_reset_restarts_it():
    first = outcomes(MockAPI(brain=fixed_brain, flaky=0.5, seed=7), 200)
    mock = MockAPI(brain=fixed_brain, flaky=0.5, seed=7)
    assert outcomes(mock, 200) == first
    mock.reset()
    assert outcomes(mock, 200) == first
    assert outcomes(MockAPI(brain=fixed_brain, flaky=0.5, seed=8), 200) != first
    assert {429, 529, 200} == set(first)


def test_never_three_flaky_failures_in_a_row():
    statuses = outcomes(MockAPI(brain=fixed_brain, flaky=0.9, seed=1), 2_000)
    failures = [s != 200 for s in statuses]
    assert not any(all(failures[i:i + 3]) for i in range(len(failures) - 2))
    assert sum(failures) > 1_000  # and yet it is really flaky


def test_a_client_with_two_retries_always_gets_through():
    mock = MockAPI(brain=fixed_brain, flaky=0.9, seed=5)
    for _ in range(200):
        attempts = [mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY).status for _ in range(3)]
        assert 200 in attempts


def test_flaky_failures_look_like_the_real_ones():
    mock = MockAPI(brain=fixed_brain, flaky=0.9, seed=2)
    replies = [mock.handle("POST", "/v1/messages", HEADERS, RAW_BODY) for _ in range(50)]
    rate_limited = next(r for r in replies if r.status == 429)
    assert rate_limited.headers["retry-after"] == "0.05" and rate_limited.headers["retry-after-ms"] == "50"
    assert json.loads(rate_limited.body)["error"]["type"] == "rate_limit_error"
    overloaded = next(r for r in replies if r.status == 529)
    assert json.loads(overloaded.body)["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert all(r.delay == 0 for r in replies)


def test_count_tokens_is_flaky_too_but_control_endpoints_never():
    mock = MockAPI(brain=fixed_brain, flaky=0.9, seed=4)
    assert set(outcomes(mock, 100, "/v1/messages/count_tokens")) >= {429, 529}
    for _ in range(50):
        assert mock.handle("GET", "/_mock/requests", {}, b"").status == 200
        assert mock.handle("POST", "/_mock/fault", {}, b'{"delay": 0.01}').status == 200
        mock.handle("POST", "/_mock/reset", {}, b"")


def test_queued_faults_and_the_fault_header_come_before_flakiness():
    mock = MockAPI(brain=fixed_brain, flaky=0.99, seed=1)
    mock.fault(500, times=5)
    assert outcomes(mock, 5) == [500] * 5
    statuses = [mock.handle("POST", "/v1/messages", {**HEADERS, "x-mock-fault": "503"}, RAW_BODY).status
                for _ in range(5)]
    assert statuses == [503] * 5


@pytest.mark.parametrize("rate", [1, 1.0, -0.1, float("nan"), "0.5", True])
def test_the_flaky_rate_is_checked(rate):
    with pytest.raises(ValueError, match="flaky"):
        MockAPI(flaky=rate)


def test_the_command_line_takes_flaky_and_seed():
    from miniagent.mock.__main__ import build_mock, build_parser
    parser = build_parser()
    mock = build_mock(parser.parse_args(["--flaky", "0.5", "--seed", "7"]), parser)
    assert outcomes(mock, 200) == outcomes(MockAPI(flaky=0.5, seed=7), 200)
    with pytest.raises(SystemExit):
        build_mock(parser.parse_args(["--flaky", "1"]), parser)
