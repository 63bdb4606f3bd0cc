"""The mock over HTTP against the mock in-process: what the socket costs, and 200 clients at once.

The claims (DESIGN, principle 3: the mock is fast, about a millisecond a request):
- a keep-alive request over loopback HTTP (`serve_in_thread`, one `httpx2.Client`) costs
  at most 3x the same request answered in-process (`MockAPI.transport()`): no
  Nagle / delayed-ACK stall, which used to add ~40 ms to every request;
- 200 concurrent requests over HTTP (200 threads, each with its own `httpx2.Client` and
  connection, released at once) all get 200 OK. Not one `httpx2.AsyncClient` with 200
  connections: its pool scans every connection for every request, so at 200 the
  client's own bookkeeping (~1 s) would swamp what the server does.

The claim is checked on what an agent sends on its first turn: a system prompt, three
tools and a question that calls two of them. The table also shows a bare "Hello": the
socket's fixed cost (~0.4 ms, most of it in httpx2's own connection handling) weighs
more beside a cheaper answer, so its ratio is higher (about 3x on our 2-core machines).
Both ways in are timed in alternating batches of the same run and compared by their
medians, because these machines are noisy.
"""

from __future__ import annotations

import statistics
import threading
import time

import httpx2

from claims import Claim
from miniagent import DEFAULT_MODEL
from miniagent.mock import MockAPI, serve_in_thread

BATCHES, PER_BATCH, CONCURRENT = 7, 200, 200
MAX_RATIO = 3.0
HEADERS = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}


def _tool(name: str, description: str, **properties: str) -> dict:
    return {"name": name, "description": description, "input_schema": {
        "type": "object", "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
        "required": list(properties)}}


REQUEST = {
    "model": DEFAULT_MODEL, "max_tokens": 1024,
    "system": "You are a helpful assistant. Use the tools when they help, and answer briefly.",
    "tools": [_tool("get_weather", "Get the current weather for a city", city="The city, e.g. Paris"),
              _tool("get_current_time", "Get the current time in a timezone", timezone="An IANA timezone"),
              _tool("calculate", "Evaluate an arithmetic expression", expression="e.g. (2 + 3) * 4")],
    "messages": [{"role": "user", "content": "What's the weather in Beijing, and what time is it in Tokyo?"}],
}


HELLO = {"model": DEFAULT_MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": "Hello"}]}


def per_request_ms(client: httpx2.Client, count: int, body: dict = REQUEST) -> float:
    started = time.perf_counter()
    for _ in range(count):
        response = client.post("/v1/messages", json=body, headers=HEADERS)
        assert response.status_code == 200, response.text
    return (time.perf_counter() - started) / count * 1000


def concurrent(url: str, count: int) -> tuple[float, int]:
    """Wall time for `count` requests in flight at once, and how many got 200 OK."""
    clients = [httpx2.Client(base_url=url, timeout=30) for _ in range(count)]
    start, statuses = threading.Barrier(count + 1), []

    def one(client: httpx2.Client) -> None:
        start.wait()
        try:
            statuses.append(client.post("/v1/messages", json=REQUEST, headers=HEADERS).status_code)
        except httpx2.HTTPError as exc:
            statuses.append(type(exc).__name__)

    threads = [threading.Thread(target=one, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    start.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    for client in clients:
        client.close()
    return wall, statuses.count(200)


def run() -> tuple[str, list[dict], list[Claim]]:
    server, url = serve_in_thread(MockAPI())
    times: dict[tuple[str, str], list[float]] = {}
    try:
        with httpx2.Client(transport=MockAPI().transport(), base_url="http://mock") as local, \
                httpx2.Client(base_url=url) as remote:
            for _ in range(BATCHES + 1):  # the first round warms up connections and caches
                for name, body in (("agent turn", REQUEST), ("hello", HELLO)):
                    for way, client in (("in-process", local), ("http", remote)):
                        times.setdefault((name, way), []).append(per_request_ms(client, PER_BATCH, body))
        wall, ok = concurrent(url, CONCURRENT)
    finally:
        server.shutdown()
    ms = {key: statistics.median(values[1:]) for key, values in times.items()}
    rows = []
    for name in ("agent turn", "hello"):
        inproc, http = ms[(name, "in-process")], ms[(name, "http")]
        rows.append({"request": name, "way in": "in-process (httpx2 transport)", "per_request_ms": f"{inproc:.3f}",
                     "vs_in_process": "1.00x", "result": "-"})
        rows.append({"request": name, "way in": "HTTP keep-alive (one httpx2.Client)", "per_request_ms": f"{http:.3f}",
                     "vs_in_process": f"{http / inproc:.2f}x", "result": "-"})
    inproc = ms[("agent turn", "in-process")]
    rows.append({"request": "agent turn", "way in": f"HTTP, {CONCURRENT} at once (a thread each)",
                 "per_request_ms": f"{wall / CONCURRENT * 1000:.3f}",
                 "vs_in_process": f"{wall / CONCURRENT * 1000 / inproc:.2f}x",
                 "result": f"{ok}/{CONCURRENT} OK in {wall:.2f} s"})
    ratio = ms[("agent turn", "http")] / inproc
    claims = [
        Claim("the socket is cheap", f"an agent turn over HTTP keep-alive costs {ratio:.2f}x the in-process mock "
              f"({ms[('agent turn', 'http')]:.3f} ms vs {inproc:.3f} ms)", f"at most {MAX_RATIO:g}x", ratio <= MAX_RATIO),
        Claim("200 clients at once", f"{ok} of {CONCURRENT} concurrent requests got 200 OK in {wall:.2f} s",
              f"all {CONCURRENT}", ok == CONCURRENT),
    ]
    return f"Mock API: in-process vs HTTP on loopback (median of {BATCHES} batches of {PER_BATCH})", rows, claims
