"""Three clients against one mock server: raw httpx2, miniagent's `Client`, the official `anthropic` SDK.

One `python -m miniagent.mock` server in a process of its own on 127.0.0.1 (so its work does not
share the clients' GIL), and three ways of making the same Messages API call from this process:

1. **raw httpx2**: `httpx2.Client.post("/v1/messages", json=...)` and `response.json()`: the floor;
   nothing checked, no retries, no records;
2. **miniagent**: `Client.create(messages, system=..., tools=...)`: the body built, the response's
   size and shape checked, the usage added up, the exchange recorded (key redacted), retries ready;
3. **anthropic SDK**: `Anthropic.messages.create(...)`: the response parsed into pydantic models.

Measured, all in the same run:

- **per call**: `CALLS` calls of each, in rounds of `PER_ROUND`, the three in a rotating order
  every round (so drift in the machine's load falls on all three alike), each call timed on its
  own; median and p90. The request is an agent's first turn (a system prompt, three tools, a
  question), as in bench_mock_server.py. Each client keeps one keep-alive connection.
- **time to first token**, streamed: the mock paces the answer (`x-mock-pace: first=FIRST_TOKEN`
  on the request, so the same server stays unpaced for the calls above): the first text delta is
  due `FIRST_TOKEN` s after the request arrives. Timed from the call until the caller holds the
  first text delta (the raw httpx2 row parses the SSE lines by hand); the whole stream is read each
  time, so the connection is reused. Interleaved the same way.
- **import**: `import X` timed inside a fresh interpreter (`python -c`), `IMPORT_RUNS` times each,
  interleaved, after one warm-up round (so every `.pyc` is compiled); median. `miniagent.client` is
  what the first call needs (`connect`, `Client`); `import miniagent` alone loads nothing (lazy names).

The claims state what these numbers support, with a margin for a noisy 2-core machine:

- miniagent's call costs at most `MAX_OVERHEAD_MS` more than raw httpx2's (medians);
- miniagent's call is no slower than the SDK's (medians);
- miniagent's first token reaches the caller at most `MAX_TTFT_OVERHEAD_MS` after raw httpx2's;
- importing what the first call needs (`miniagent.client`) is at least `MIN_IMPORT_SPEEDUP`x faster
  than importing `anthropic`.

    python benchmarks/bench_clients.py               # the table and the claims
    python benchmarks/bench_clients.py --make-test   # also times one `make test` (off by default: minutes)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import httpx2

from claims import Claim
from miniagent.client import Client
from miniagent.clientcore import API_VERSION, DEFAULT_MODEL
from miniagent.mock import serve_in_subprocess

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-bench-clients"
CALLS = 200            # timed calls of each client (after a warm-up round)
PER_ROUND = 10         # calls of one client before the next takes its turn
STREAMS = 30           # timed streamed calls of each client
FIRST_TOKEN = 0.05     # seconds the mock waits before the first text delta of a streamed answer
IMPORT_RUNS = 7        # fresh interpreters per module
MODULES = ("httpx2", "miniagent", "miniagent.client", "anthropic")

MAX_OVERHEAD_MS = 0.5       # miniagent's median call over raw httpx2's
MAX_TTFT_OVERHEAD_MS = 5.0  # miniagent's median time to first token over raw httpx2's
MIN_IMPORT_SPEEDUP = 3.0    # import anthropic / import miniagent.client


def _tool(name: str, description: str, **properties: str) -> dict:
    return {"name": name, "description": description, "input_schema": {
        "type": "object", "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
        "required": list(properties)}}


SYSTEM = "You are a helpful assistant. Use the tools when they help, and answer briefly."
TOOLS = [_tool("get_weather", "Get the current weather for a city", city="The city, e.g. Paris"),
         _tool("get_current_time", "Get the current time in a timezone", timezone="An IANA timezone"),
         _tool("calculate", "Evaluate an arithmetic expression", expression="e.g. (2 + 3) * 4")]
MESSAGES = [{"role": "user", "content": "What's the weather in Beijing, and what time is it in Tokyo?"}]
MAX_TOKENS = 1024
BODY = {"model": DEFAULT_MODEL, "max_tokens": MAX_TOKENS, "system": SYSTEM, "tools": TOOLS, "messages": MESSAGES}
STREAM_MESSAGES = [{"role": "user", "content": "Hello! Who are you?"}]
STREAM_BODY = {"model": DEFAULT_MODEL, "max_tokens": MAX_TOKENS, "messages": STREAM_MESSAGES, "stream": True}
HEADERS = {"x-api-key": KEY, "anthropic-version": API_VERSION}
PACE = {"x-mock-pace": f"first={FIRST_TOKEN}"}
CONTENDERS = ("raw httpx2", "miniagent", "anthropic SDK")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# --- one call of each --------------------------------------------------------------


class Clients:
    """The three clients, each with its own keep-alive connection to the server; two of each (one paced)."""

    def __init__(self, base_url: str) -> None:
        import anthropic  # here, not at the top: collecting the tests (make test) must not load the SDK

        self.raw = httpx2.Client(base_url=base_url, timeout=30)
        self.mini = Client(api_key=KEY, base_url=base_url)
        self.mini_paced = Client(api_key=KEY, base_url=base_url)
        self.mini_paced.http.headers.update(PACE)  # merged into every request this client sends
        self.sdk = anthropic.Anthropic(api_key=KEY, base_url=base_url)
        self.sdk_paced = anthropic.Anthropic(api_key=KEY, base_url=base_url, default_headers=PACE)

    def close(self) -> None:
        for client in (self.raw, self.mini.http, self.mini_paced.http, self.sdk, self.sdk_paced):
            client.close()

    # plain calls: each returns the answer's stop reason, so the three can be checked alike
    def call_raw(self) -> str:
        response = self.raw.post("/v1/messages", json=BODY, headers=HEADERS)
        response.raise_for_status()
        return response.json()["stop_reason"]

    def call_mini(self) -> str:
        return self.mini.create(MESSAGES, system=SYSTEM, tools=TOOLS, max_tokens=MAX_TOKENS)["stop_reason"]

    def call_sdk(self) -> str:
        return self.sdk.messages.create(model=DEFAULT_MODEL, max_tokens=MAX_TOKENS, system=SYSTEM, tools=TOOLS,
                                        messages=MESSAGES).stop_reason

    # streamed calls: each returns seconds from the call to the first text delta in hand (whole stream read)
    def stream_raw(self) -> float:
        started, first = time.perf_counter(), None
        with self.raw.stream("POST", "/v1/messages", json=STREAM_BODY, headers={**HEADERS, **PACE}) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if first is None and line.startswith("data: ") and '"text_delta"' in line:
                    if json.loads(line[6:])["delta"]["text"] is not None:
                        first = time.perf_counter()
        assert first is not None
        return first - started

    def stream_mini(self) -> float:
        started, first = time.perf_counter(), None
        with self.mini_paced.stream(STREAM_MESSAGES, max_tokens=MAX_TOKENS) as events:
            for event in events:
                if first is None and event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                    first = time.perf_counter()
        assert first is not None
        return first - started

    def stream_sdk(self) -> float:
        started, first = time.perf_counter(), None
        with self.sdk_paced.messages.stream(model=DEFAULT_MODEL, max_tokens=MAX_TOKENS,
                                            messages=STREAM_MESSAGES) as stream:
            for event in stream:
                if first is None and event.type == "content_block_delta" and event.delta.type == "text_delta":
                    first = time.perf_counter()
        assert first is not None
        return first - started


def interleaved(calls: dict[str, Callable[[], float]], total: int, per_round: int) -> dict[str, list[float]]:
    """`total` timings of each callable, in rounds of `per_round`, the order rotating each round; a warm-up
    round first (connections, caches) is not kept. Each callable returns its own timing in seconds."""
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    rounds = -(-total // per_round)
    for r in range(rounds + 1):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            for _ in range(per_round):
                value = calls[name]()
                if r:
                    times[name].append(value)
    return {name: values[:total] for name, values in times.items()}


def timed(call: Callable[[], object]) -> Callable[[], float]:
    def run_once() -> float:
        started = time.perf_counter()
        call()
        return time.perf_counter() - started
    return run_once


# --- imports -----------------------------------------------------------------------


def import_seconds(module: str) -> float:
    """Seconds `import module` takes in a fresh interpreter (interpreter start-up not counted)."""
    code = f"import time\nt = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - t)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout.strip().splitlines()[-1])


def import_times(runs: int, modules: tuple[str, ...] = MODULES) -> dict[str, list[float]]:
    for module in modules:  # warm-up: every .pyc written, the files in the page cache
        import_seconds(module)
    times: dict[str, list[float]] = {m: [] for m in modules}
    for r in range(runs):
        for module in modules[r % len(modules):] + modules[:r % len(modules)]:
            times[module].append(import_seconds(module))
    return times


def make_test_seconds() -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(["make", "test"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, proc.returncode


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


# --- the benchmark -----------------------------------------------------------------


def run(*, calls: int = CALLS, per_round: int = PER_ROUND, streams: int = STREAMS, import_runs: int = IMPORT_RUNS,
        make_test: bool = False) -> tuple[str, list[dict], list[Claim]]:
    load_before = load()
    proc, base_url = serve_in_subprocess("--api-key", KEY, cwd=ROOT)
    clients = Clients(base_url)
    try:
        answers = {clients.call_raw(), clients.call_mini(), clients.call_sdk()}
        assert answers == {"tool_use"}, answers  # the same request, the same answer, whichever client
        per_call = interleaved({"raw httpx2": timed(clients.call_raw), "miniagent": timed(clients.call_mini),
                                "anthropic SDK": timed(clients.call_sdk)}, calls, per_round)
        ttft = interleaved({"raw httpx2": clients.stream_raw, "miniagent": clients.stream_mini,
                            "anthropic SDK": clients.stream_sdk}, streams, 1)
    finally:
        clients.close()
        proc.terminate()
        proc.wait(timeout=10)
    imports = import_times(import_runs)
    make = make_test_seconds() if make_test else None
    load_after = load()

    ms = lambda values: statistics.median(values) * 1000  # noqa: E731
    p90 = lambda values: percentile(values, 90) * 1000  # noqa: E731
    rows: list[dict] = []
    base = ms(per_call["raw httpx2"])
    for name in CONTENDERS:
        rows.append({"measure": f"per call ({calls} each)", "client": name, "median_ms": f"{ms(per_call[name]):.3f}",
                     "p90_ms": f"{p90(per_call[name]):.3f}", "vs_raw_httpx": f"{ms(per_call[name]) / base:.2f}x",
                     "over_raw_ms": f"{ms(per_call[name]) - base:+.3f}"})
    base_ttft = ms(ttft["raw httpx2"])
    for name in CONTENDERS:
        rows.append({"measure": f"first token, paced {FIRST_TOKEN * 1000:.0f} ms ({streams} each)", "client": name,
                     "median_ms": f"{ms(ttft[name]):.3f}", "p90_ms": f"{p90(ttft[name]):.3f}",
                     "vs_raw_httpx": f"{ms(ttft[name]) / base_ttft:.2f}x",
                     "over_raw_ms": f"{ms(ttft[name]) - base_ttft:+.3f}"})
    base_import = ms(imports["httpx2"])
    for module in MODULES:
        rows.append({"measure": f"import, fresh process ({import_runs} each)", "client": f"import {module}",
                     "median_ms": f"{ms(imports[module]):.1f}", "p90_ms": f"{p90(imports[module]):.1f}",
                     "vs_raw_httpx": f"{ms(imports[module]) / base_import:.2f}x",
                     "over_raw_ms": f"{ms(imports[module]) - base_import:+.1f}"})
    if make is not None:
        rows.append({"measure": "make test (one run)", "client": "-", "median_ms": f"{make[0] * 1000:.0f}",
                     "p90_ms": "-", "vs_raw_httpx": "-", "over_raw_ms": f"exit status {make[1]}"})
    rows.append({"measure": "load (uptime 1/5/15 min)", "client": "-", "median_ms": f"before {load_before}",
                 "p90_ms": f"after {load_after}", "vs_raw_httpx": "-", "over_raw_ms": "-"})

    mini, sdk = ms(per_call["miniagent"]), ms(per_call["anthropic SDK"])
    ttft_over = ms(ttft["miniagent"]) - base_ttft
    speedup = ms(imports["anthropic"]) / ms(imports["miniagent.client"])
    claims = [
        Claim("miniagent adds little to a call", f"miniagent's call takes {mini - base:+.3f} ms over raw httpx2's "
              f"(medians {mini:.3f} vs {base:.3f} ms)", f"at most {MAX_OVERHEAD_MS:g} ms", mini - base <= MAX_OVERHEAD_MS),
        Claim("miniagent is no slower than the SDK", f"median call {mini:.3f} ms (miniagent) vs {sdk:.3f} ms (SDK): "
              f"{sdk / mini:.2f}x", "miniagent's median at most the SDK's", mini <= sdk),
        Claim("the first token is not held back", f"miniagent hands over the first text delta {ttft_over:+.3f} ms "
              f"after raw httpx2 does (medians {ms(ttft['miniagent']):.1f} vs {base_ttft:.1f} ms, "
              f"{FIRST_TOKEN * 1000:.0f} ms of it the mock's pacing)", f"at most {MAX_TTFT_OVERHEAD_MS:g} ms later",
              ttft_over <= MAX_TTFT_OVERHEAD_MS),
        Claim("miniagent imports fast", f"import miniagent.client takes {ms(imports['miniagent.client']):.0f} ms, "
              f"import anthropic {ms(imports['anthropic']):.0f} ms: {speedup:.1f}x faster",
              f"at least {MIN_IMPORT_SPEEDUP:g}x faster", speedup >= MIN_IMPORT_SPEEDUP),
    ]
    from anthropic import __version__ as sdk_version

    title = (f"Clients against one mock server (python -m miniagent.mock, another process): raw httpx2, miniagent, "
             f"the anthropic SDK {sdk_version} (httpx2 {httpx2.__version__}); interleaved")
    return title, rows, claims


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--make-test", action="store_true", help="also time one `make test` run (minutes)")
    parser.add_argument("--calls", type=int, default=CALLS, help=f"timed calls of each client (default {CALLS})")
    args = parser.parse_args(argv)
    from run_all import table

    title, rows, claims = run(calls=args.calls, make_test=args.make_test)
    print(f"## {title}\n\n{table(rows)}\n\nclaims:")
    for claim in claims:
        print(f"  {claim}")
    return 0 if all(c.holds for c in claims) else 1


if __name__ == "__main__":
    sys.exit(main())
