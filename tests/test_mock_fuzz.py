"""Fuzzing the mock server over raw sockets: whatever arrives, an HTTP answer, and bounded memory.

A fixed seed draws requests from a grammar that is mostly right and often wrong:
random methods, paths and versions, header sets with junk names, control characters
and non-UTF-8 bytes, bogus or missing content-lengths, chunked framing (good and bad),
truncated requests, deep JSON, huge declared lengths, random bytes. Each must get a
well-formed HTTP answer (a status line, and for 4xx/5xx the API's JSON error), or a
clean close when the client sent nothing at all; the server's last-resort 500 must
never be reached, and it must still serve a normal request afterwards.
"""

from __future__ import annotations

import io
import json
import random
import socket
import threading
import time
import tracemalloc

import pytest

from miniagent.mock import MockAPI, serve_in_thread
from miniagent.mock.openai_responses import ResponseStore
from miniagent.mock.threads import THREADS_BETA, ThreadStore
from test_mock_hardening import BODY, BUG_MARKERS, Answer, read_answer, request_bytes, talk

SEED = 20_260_808
pytestmark = pytest.mark.fuzz  # run by make test-props (CI), not by the everyday make test

BATCH = 500
MAX_RECORDS, MAX_RECORD_BYTES = 200, 1_000_000

VALID = json.dumps(BODY).encode()
COUNT = json.dumps({"model": BODY["model"], "messages": BODY["messages"]}).encode()
TOOLS = json.dumps({**BODY, "tools": [{"name": "get_weather", "description": "Weather in a city",
                                       "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
                    "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}]}).encode()
STREAMED = TOOLS[:-1] + b', "stream": true}'  # answered with a chunked stream of events
CHAT = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "Weather in Paris and Tokyo?"}],
                   "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
                       "type": "object", "properties": {"city": {"type": "string"}}}}}]}).encode()
CHAT_STREAMED = CHAT[:-1] + b', "stream": true, "stream_options": {"include_usage": true}}'
EMBED = b'{"model": "text-embedding-3-small", "input": ["hello", "weather"], "dimensions": 32}'
RESPONSES = json.dumps({"model": "gpt-5", "input": "Weather in Paris and Tokyo?", "instructions": "Be brief.",
                        "tools": [{"type": "function", "name": "get_weather", "parameters": {
                            "type": "object", "properties": {"city": {"type": "string"}}}}]}).encode()
RESPONSES_STREAMED = RESPONSES[:-1] + b', "stream": true}'
RESPONSES_CHAINED = b'{"model": "gpt-5", "input": "And tomorrow?", "previous_response_id": "resp_mock_0001"}'
RESPONSES_BODIES = [RESPONSES, RESPONSES_STREAMED, RESPONSES_CHAINED, RESPONSES[:-1] + b', "store": false}']
MAX_STORED = 20  # the fuzz fills the mock's store of responses to its bounds too
THREADED = [TOOLS[:-1] + b', "thread": {"type": "create"}}', STREAMED[:-1] + b', "thread": {"type": "create"}}',
            *(json.dumps({**BODY, "thread": {"type": "continue", "previous_message_id": f"msg_mock_{n:04d}"}}).encode()
              for n in (1, 2, 3, 5, 8))]  # a continue from an answer that may be held, continued or someone else's
CONTROL_BODIES = [b'{"status": 429}', b'{"status": 529, "times": 3}', b'[{"content": "scripted"}]', b'{"delay": 1e999}',
                  b'{"status": 429, "times": 1000000000000}', b'{"responses": 5}', b'null', b"[" * 3_000]
# Mostly plausible, so that most requests reach the API's own gates, validation and the brain.
# No /_mock/reset: the records must fill up to their bounds for the memory check to mean anything.
PATHS = ["/v1/messages"] * 20 + ["/v1/messages/count_tokens"] * 6 + ["/v1/chat/completions"] * 8 + [
    "/v1/embeddings"] * 3 + ["/v1/responses"] * 6 + ["/v1/responses/resp_mock_0001", "/chat/completions", 
    "/_mock/requests", "/_mock/script", "/_mock/fault", "/", "/v1/models", "/v1/messages?beta=true",
    "//v1/messages", "/%00", "/v1/messages/../../etc/passwd", "*", "http://mock/v1/messages"]
METHODS = ["POST"] * 20 + ["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD", "BREW", "post", "G\x00T"]
VERSIONS = ["HTTP/1.1"] * 30 + ["HTTP/1.0", "HTTP/2.0", "HTTP/1.1 extra", "http/1.1", "HTTP/1.x", "HTTP/01.1", ""]
FAULTS = ["429", "529", "500", "503", "429 retry-after=0.01", "slow=0.001", "slow=1e308", "slow=nan", "sometimes",
          "cut=3", "cut=60", "error-after=2", "cut=x"]


def junk(rng: random.Random, size: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(size))


def body_for(rng: random.Random, path: str) -> bytes:
    kind = rng.randrange(15)
    if kind < 3 or kind > 9:
        if path.startswith("/v1/responses"):
            return rng.choice(RESPONSES_BODIES)
        if "chat" in path or "embeddings" in path:
            return EMBED if "embeddings" in path else rng.choice([CHAT, CHAT_STREAMED])
        return COUNT if path.endswith("count_tokens") else rng.choice([VALID, TOOLS, STREAMED, *THREADED])
    if kind == 3:
        return rng.choice(CONTROL_BODIES)
    if kind == 4:
        return junk(rng, rng.randrange(1, 300))
    if kind == 5:
        return rng.choice([b"[" * rng.randrange(100, 20_000), b'{"a":' * 2_000 + b"1" + b"}" * 2_000])
    if kind == 6:  # control characters and non-UTF-8 inside otherwise plausible JSON
        return VALID.replace(b"Hello", rng.choice([b"\x00\x01\x1f", b"\xff\xfe\xc3(", b"\\ud800", b"\n\r\t"]))
    if kind == 7:
        return json.dumps(rng.choice([[], {}, 1, "x", None, {"model": 5}, {"messages": [{}] * 3}])).encode()
    if kind == 8:
        cut = rng.randrange(len(VALID))
        return VALID[:cut]
    return b""


def headers_for(rng: random.Random, body: bytes) -> list[bytes]:
    lines = []
    if rng.random() < 0.9:  # either way of sending a key (an OpenAI client sends a Bearer one)
        lines.append(rng.choice([b"x-api-key: sk-fuzz-key", b"authorization: Bearer sk-fuzz-key"]))
    if rng.random() < 0.9:
        lines.append(b"anthropic-version: " + rng.choice([b"2023-06-01", b"2026-10-21"] * 3 + [b"1999-01-01", b""]))
    if rng.random() < 0.15:
        lines.append(b"x-mock-fault: " + rng.choice(FAULTS).encode())
    if b'"thread"' in body and rng.random() < 0.9:
        lines.append(b"anthropic-beta: " + THREADS_BETA.encode())
    for _ in range(rng.randrange(4)):  # junk headers: odd names, control characters, high bytes, no colon
        lines.append(rng.choice([b"x-junk: " + junk(rng, 20).replace(b"\n", b"").replace(b"\r", b""),
                                 b"no colon here", b": empty name", b"x-\xff\xfe: v", b"x-ctl: a\x00b\x07c",
                                 b" leading-space: x", b"connection: close", b"expect: 100-continue",
                                 b"content-type: text/html"]))
    framing = rng.randrange(12)
    if framing < 7:
        lines.append(b"content-length: %d" % len(body))
    elif framing == 7:
        bogus = [b"abc", b"-1", b"1e3", b"99999999999", b"9" * 40, b"", b"%d" % (len(body) + 5),
                 b"%d, %d" % (len(body), len(body) + 1)]
        lines.append(b"content-length: " + rng.choice(bogus))
    elif framing == 8:
        lines.append(b"content-length: %d" % max(0, len(body) - rng.randrange(1, 10)))  # leftovers follow
    elif framing in (9, 10):
        lines.append(b"transfer-encoding: " + rng.choice([b"chunked"] * 4 + [b"gzip", b"chunked, chunked"]))
    return lines


def chunks(rng: random.Random, body: bytes) -> bytes:
    if rng.random() < 0.3:  # bad framing
        return rng.choice([b"zz\r\n", b"5\r\nab", b"%x\r\n" % (64 * 1024 * 1024), b"1;" + b"e" * 5_000 + b"\r\n",
                           b"3\r\nabcdef\r\n0\r\n\r\n", body])
    out, rest = b"", body
    while rest:
        size = rng.randrange(1, 64)
        out += b"%x\r\n%s\r\n" % (len(rest[:size]), rest[:size])
        rest = rest[size:]
    return out + b"0\r\n\r\n"


def make_request(rng: random.Random) -> bytes:
    """One fuzzed request as raw bytes (possibly not HTTP at all)."""
    if rng.random() < 0.05:
        return junk(rng, rng.randrange(1, 2_000))
    method, path, version = rng.choice(METHODS), rng.choice(PATHS), rng.choice(VERSIONS)
    if rng.random() < 0.1:
        path = "/" + junk(rng, rng.randrange(1, 50)).decode("latin-1").replace(" ", "").replace("\n", "")
    body = body_for(rng, path)
    lines = headers_for(rng, body)
    if any(line.startswith(b"transfer-encoding: chunked") for line in lines):
        body = chunks(rng, body)
    head = f"{method} {path} {version}".encode("latin-1") + b"\r\n" + b"".join(line + b"\r\n" for line in lines)
    data = head + b"\r\n" + body
    if rng.random() < 0.15:  # truncated anywhere
        data = data[:rng.randrange(len(data) + 1)]
    return data


class BugLog(io.TextIOBase):
    """A server log that keeps only the lines that report a bug, so it does not grow with the fuzz."""

    def __init__(self) -> None:
        super().__init__()
        self.bugs: list[str] = []

    def write(self, text: str) -> int:
        if any(marker in text for marker in BUG_MARKERS):
            self.bugs.append(text)
        return len(text)


@pytest.fixture(scope="module")
def server():
    log = BugLog()
    mock = MockAPI(max_records=MAX_RECORDS, max_record_bytes=MAX_RECORD_BYTES)
    mock.responses = ResponseStore(max_count=MAX_STORED)
    mock.threads = ThreadStore(max_threads=MAX_STORED)
    server, _ = serve_in_thread(mock, log=log, idle_timeout=2, request_timeout=2, max_connections=64)
    yield server, log
    server.shutdown()
    assert not log.bugs, log.bugs


def is_head(data: bytes) -> bool:
    """Whether the server takes this for a HEAD request (whose answer has no body)."""
    return data[:5].split(b" ")[0].strip() == b"HEAD"


def check(answer: Answer | None, data: bytes) -> None:
    """A well-formed answer (the API's error shape for 4xx/5xx), or a close if nothing was asked."""
    head = is_head(data)
    if answer is None:
        assert not data.strip(), f"no answer to {data[:300]!r}"
        return
    if not answer.whole:  # cut short, as the request's x-mock-fault asked
        return
    if answer.headers.get("transfer-encoding") == "chunked":  # a stream: the API's events, to the end
        assert answer.status == 200, answer
        if answer.body.startswith(b"event: response.created\n"):  # the Responses API's: its events, to the end
            last = answer.body.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
            assert last.startswith((b"event: response.completed\n", b"event: response.incomplete\n",
                                    b"event: error\n")), answer
            return
        if answer.body.startswith(b"data: "):  # OpenAI's: data-only chunks, then [DONE] (or its error chunk)
            assert answer.body.endswith((b"data: [DONE]\n\n", b'"type":"server_error","param":null,"code":null}}\n\n'))
            return
        assert answer.body.startswith(b"event: message_start\n"), answer
        assert answer.body.endswith((b'data: {"type":"message_stop"}\n\n', b'"message":"Overloaded"}}\n\n'))
        return
    if answer.status >= 400 and not head:
        message = error_message(answer)
        assert "Internal error in the mock" not in message and "the mock failed to answer" not in message
    assert answer.status != 500 or b"x-mock-fault: 500" in data, (data[:300], answer)


def error_message(answer: Answer) -> str:
    """The message of an error in either API's shape (OpenAI's: only `error`, with four keys)."""
    data = json.loads(answer.body) if answer.headers.get("content-type") == "application/json" else None
    if isinstance(data, dict) and set(data) == {"error"}:
        assert set(data["error"]) == {"message", "type", "param", "code"}, data
        assert answer.headers["x-request-id"].startswith("req_mock"), answer
        return data["error"]["message"]
    return answer.error()[2]


def send(port: int, data: bytes, abandon: bool) -> None:
    """Send one fuzzed request and check the answer (or, if the client abandons it, nothing)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(data)
            if abandon:  # the client is gone before the request is complete: nobody to answer
                return
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed before taking everything (e.g. a 413)
            pass
        check(read_answer(sock, head=is_head(data), cut_ok=b"x-mock-fault: cut=" in data), data)


def still_serves(port: int) -> None:
    """A normal request is answered (count_tokens: the fuzz may have queued faults for /v1/messages)."""
    answer = talk(port, request_bytes(path="/v1/messages/count_tokens", body=COUNT))
    assert answer is not None and answer.status == 200, answer


def run_batch(port: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(BATCH):
        send(port, make_request(rng), abandon=rng.random() < 0.05)
        if i % 100 == 99:
            still_serves(port)


def settled(threads: int) -> None:
    """Wait (up to 10 s) until the server's connection threads have ended, so memory is measured at rest."""
    limit = time.monotonic() + 10
    while threading.active_count() > threads and time.monotonic() < limit:
        time.sleep(0.01)


def mock_bytes() -> int:
    """Bytes allocated, and still held, by code in miniagent/mock (records, bodies, replies): the server's own
    memory, not whatever other tests' threads in this process are doing meanwhile."""
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(True, "*/miniagent/mock/*", all_frames=True)])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_every_fuzzed_request_gets_an_http_answer_and_memory_stays_bounded(server):
    srv, log = server
    port = srv.server_address[1]
    threads = threading.active_count()
    run_batch(port, SEED)  # warm up: the records fill to their bounds
    still_serves(port)
    tracemalloc.start()
    try:
        run_batch(port, SEED)
        settled(threads)
        after_second = mock_bytes()
        run_batch(port, SEED)
        settled(threads)
        after_third = mock_bytes()
    finally:
        tracemalloc.stop()
    still_serves(port)
    mock = srv.mock
    assert len(mock.records) <= MAX_RECORDS and mock._records.bytes <= MAX_RECORD_BYTES  # the log's own tally
    assert 0 < len(mock.responses) <= MAX_STORED  # responses were stored, and no more than the cap
    assert 0 < len(mock.threads) <= MAX_STORED  # so were threads
    # What is still allocated is at most the records that replaced older ones, not a leak per request.
    assert after_second < 3 * MAX_RECORD_BYTES, after_second
    assert after_third - after_second < 100_000, (after_second, after_third)
    assert not log.bugs, log.bugs


def test_the_records_survive_the_fuzz_as_json(server):
    srv, _ = server
    run_batch(srv.server_address[1], SEED + 1)
    records = srv.mock.records
    assert len(records) <= MAX_RECORDS
    json.dumps(records)  # every record is JSON data, whatever arrived


def test_requests_that_stall_midway_get_their_answer_in_time():
    """Cut anywhere and left hanging (the client still listening): a 408 once the request's
    time is up, or the answer if what arrived was a whole request; never a hang."""
    log = BugLog()
    server, _ = serve_in_thread(MockAPI(), log=log, idle_timeout=0.3, request_timeout=0.5)
    rng = random.Random(SEED + 2)
    sent = []
    try:
        for _ in range(40):
            data = make_request(rng)
            data = data[:rng.randrange(len(data) + 1)]
            sock = socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=10)
            sock.sendall(data)
            sent.append((sock, data))
        for sock, data in sent:
            check(read_answer(sock, head=is_head(data), cut_ok=b"x-mock-fault: cut=" in data), data)
    finally:
        for sock, _ in sent:
            sock.close()
        server.shutdown()
    assert not log.bugs, log.bugs
