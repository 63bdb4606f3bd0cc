"""Streaming: how soon the agent hands a piece of text to your code, and what streaming costs in total.

The mock is paced like a real model (pacing.py): the first text after `FIRST` seconds,
the rest of the answer over about `SPREAD` seconds (the rate is chosen from the
answer's token count, measured first). It runs as the HTTP server (`serve_in_thread`),
so the bytes really cross a loopback socket. One question, asked by two agents on the
same paced mock, streamed and not, in alternating runs of the same benchmark:

- **socket to callback**: when the first text delta arrives, how long until `on_text`
  is called with it. Arrival is timestamped at the lowest level the client has: the
  `recv()` that returns the bytes holding the first `text_delta`, in a wrapped httpcore2
  network stream (below httpx2, h11, the client's SSE parser and accumulator, and the
  loop). The callback's time is `time.perf_counter()` inside `on_text`. Claim: within
  20 ms (the parsing in between takes well under a millisecond; 20 ms is a frame of
  video, below what a reader notices).
- **the total**: a streamed run against an unstreamed one. The paced mock answers an
  unstreamed request after the time its stream would have taken, so the only difference
  is the client's work per event. Claim: within 5% (streaming moves the first words
  forward; it does not make the whole answer slower).

Runs alternate (streamed, plain, streamed, ...) and are compared by their medians,
because these machines are noisy; each run opens its own connection.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpcore2

from claims import Claim
from miniagent import deadline
from miniagent.agent import Agent
from miniagent.client import Client
from miniagent.mock import MockAPI, serve_in_thread
from miniagent.mock.pacing import delta_tokens

QUESTION = "Tell me about yourself and what tools you have, in detail."
FIRST = 0.2        # seconds to the first text
SPREAD = 2.0       # seconds for the rest of the answer
RUNS = 3           # of each kind, alternating
MAX_HANDOFF = 0.020  # seconds from the socket to on_text
MAX_TOTAL_DIFFERENCE = 0.05
MARKER = b'"text_delta"'


class _ArrivalStream(httpcore2.NetworkStream):
    """A socket stream that notes when the bytes of the first text delta came out of `recv()`."""

    def __init__(self, inner: httpcore2.NetworkStream, clock: "_Arrivals") -> None:
        self.inner, self.clock = inner, clock
        self._tail = b""  # the end of the last read: a marker split across two reads is still found

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self.inner.read(max_bytes, timeout)
        now = time.perf_counter()
        if self.clock.first_text is None and MARKER in self._tail + data:
            self.clock.first_text = now
        self._tail = data[-len(MARKER):]
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, timeout)

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return self.inner.start_tls(ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Arrivals(httpcore2.NetworkBackend):
    """httpcore2's sockets (already wrapped for the client's deadlines), wrapped once more to timestamp reads."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self.inner = inner
        self.first_text: float | None = None

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore2.NetworkStream:
        return _ArrivalStream(self.inner.connect_tcp(host, port, timeout, local_address, socket_options), self)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore2.NetworkStream:
        return _ArrivalStream(self.inner.connect_unix_socket(path, timeout, socket_options), self)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def client_for(base_url: str) -> tuple[Client, _Arrivals]:
    """A client of the mock server whose socket reads are timestamped (the package's own transport, wrapped)."""
    transport = deadline.deadline_transport()
    pool = transport._pool  # httpcore2's documented extension point, reached as deadline.py reaches it
    arrivals = _Arrivals(pool._network_backend)
    pool._network_backend = arrivals
    return Client(api_key="mock-key", base_url=base_url, transport=transport, mode="live"), arrivals


def answer_tokens() -> tuple[int, int]:
    """(tokens after the first text delta, number of text deltas) of the mock's answer, from an unpaced stream."""
    mock = MockAPI()
    client = Client(api_key="mock-key", base_url="http://mock.invalid", transport=mock.transport(), mode="offline")
    Agent(client, stream=True).run(QUESTION)
    deltas = [e for e in mock.requests[-1]["response"] if e["type"] == "content_block_delta"]
    return sum(delta_tokens(e) for e in deltas[1:]), len(deltas)


def streamed_run(base_url: str) -> dict:
    client, arrivals = client_for(base_url)
    handed: list[float] = []
    agent = Agent(client, stream=True, on_text=lambda delta: handed.append(time.perf_counter()))
    started = time.perf_counter()
    result = agent.run(QUESTION)
    total = time.perf_counter() - started
    assert result.ok and handed and arrivals.first_text is not None, result.reason
    return {"total": total, "first_text": handed[0] - started, "handoff": handed[0] - arrivals.first_text,
            "deltas": len(handed), "text": result.text}


def plain_run(base_url: str) -> dict:
    client, _ = client_for(base_url)
    agent = Agent(client)
    started = time.perf_counter()
    result = agent.run(QUESTION)
    total = time.perf_counter() - started
    assert result.ok, result.reason
    return {"total": total, "first_text": total, "text": result.text}


def run() -> tuple[str, list[dict], list[Claim]]:
    tokens, deltas = answer_tokens()
    rate = tokens / SPREAD
    mock = MockAPI(pacing={"first": FIRST, "rate": rate})
    server, base_url = serve_in_thread(mock)
    streamed, plain = [], []
    try:
        for _ in range(RUNS):
            streamed.append(streamed_run(base_url))
            plain.append(plain_run(base_url))
    finally:
        server.shutdown()
    assert all(s["text"] == p["text"] for s, p in zip(streamed, plain))  # the same answer either way
    s_total = statistics.median(r["total"] for r in streamed)
    p_total = statistics.median(r["total"] for r in plain)
    handoffs = [r["handoff"] for r in streamed]
    worst, typical = max(handoffs), statistics.median(handoffs)
    difference = s_total / p_total - 1
    paced = FIRST + tokens / rate
    rows = [
        {"mode": "streamed", "total_s": f"{s_total:.3f}",
         "first_text_s": f"{statistics.median(r['first_text'] for r in streamed):.3f}",
         "socket_to_on_text_ms": f"{typical * 1000:.2f} (worst {worst * 1000:.2f})",
         "on_text_calls": str(streamed[0]["deltas"])},
        {"mode": "not streamed", "total_s": f"{p_total:.3f}", "first_text_s": f"{p_total:.3f}",
         "socket_to_on_text_ms": "-", "on_text_calls": "-"},
    ]
    claims = [
        Claim("socket to on_text", f"the first text delta reached on_text {typical * 1000:.2f} ms after its recv() "
              f"(worst of {RUNS}: {worst * 1000:.2f} ms)", f"within {MAX_HANDOFF * 1000:.0f} ms",
              worst <= MAX_HANDOFF),
        Claim("streaming costs nothing in total", f"streamed {s_total:.3f} s, not streamed {p_total:.3f} s "
              f"({difference:+.1%})", f"within {MAX_TOTAL_DIFFERENCE:.0%}", abs(difference) <= MAX_TOTAL_DIFFERENCE),
    ]
    title = (f"Streaming over loopback HTTP: first text after {FIRST:g} s, then {tokens} tokens in {deltas - 1} "
             f"deltas at {rate:.1f} tokens/s (the whole answer paced at {paced:.2f} s; medians of {RUNS} runs each)")
    return title, rows, claims
