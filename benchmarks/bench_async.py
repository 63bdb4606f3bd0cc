"""Async: many agent runs at once from one process, against a model that takes its time.

The mock server runs in its own process (`python -m miniagent.mock --first-token 1`),
so every answer waits a second before its first token, as a busy real model might,
and the mock's own work does not share this process's GIL. Each run is one
`AsyncAgent` (its own conversation) asking a question the model answers in one call,
with the default tools offered.

- **concurrency**: `CONCURRENT` runs started together with `asyncio.gather`, against
  `SEQUENTIAL` runs one after another in the same benchmark. One by one, each run
  costs its full second, so `CONCURRENT` of them would take about `CONCURRENT`
  seconds; at once, they wait their seconds together. Claim: the whole batch finishes
  within 3 s of wall time. Latencies (p50, p95) are per run, from its start.
- **memory per conversation**: a second batch of the same runs under `tracemalloc`
  (which slows Python down, so it is not the timed batch): the peak of Python
  allocations while they all wait, minus what was allocated before, per run. Printed,
  with no claim: it is what a conversation costs to hold open, and the basis of the
  notebook's "where one process stops" estimate.
- **CPU per run**: process CPU time of the timed batch, per run: the work that does not
  overlap (parsing, JSON, the loop's decisions) and bounds the runs per second one
  core can serve.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import time
import tracemalloc
from pathlib import Path

from claims import Claim
from miniagent.aclient import AsyncClient
from miniagent.aloop import AsyncAgent
from miniagent.builtin_tools import default_tools
from miniagent.mock import serve_in_subprocess

QUESTION = "Hello! Who are you?"
FIRST_TOKEN = 1.0     # seconds the mock waits before every answer
CONCURRENT = 100      # runs at once
SEQUENTIAL = 5        # runs one by one, for the per-run baseline
MAX_WALL = 3.0        # seconds for the concurrent batch
ROOT = Path(__file__).resolve().parents[1]


def start_mock() -> tuple[subprocess.Popen, str]:
    return serve_in_subprocess("--first-token", str(FIRST_TOKEN), cwd=ROOT)


async def one_run(client: AsyncClient) -> float:
    """Seconds for one conversation's question, from its start to its answer."""
    agent = AsyncAgent(client, default_tools())
    started = time.perf_counter()
    result = await agent.run(QUESTION)
    assert result.ok, result.reason
    return time.perf_counter() - started


async def batch(base_url: str, n: int, *, together: bool) -> tuple[float, list[float]]:
    """(wall seconds, per-run seconds) for n runs, at once or one by one, sharing one connection pool."""
    async with AsyncClient(api_key="mock-key", base_url=base_url, mode="live") as client:
        started = time.perf_counter()
        if together:
            latencies = await asyncio.gather(*(one_run(client) for _ in range(n)))
        else:
            latencies = [await one_run(client) for _ in range(n)]
        return time.perf_counter() - started, list(latencies)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def memory_per_run(base_url: str, n: int) -> float:
    """Bytes of Python allocations per conversation while n of them are in flight."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(batch(base_url, n, together=True))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - before) / n


def run() -> tuple[str, list[dict], list[Claim]]:
    proc, base_url = start_mock()
    try:
        asyncio.run(batch(base_url, 1, together=True))  # warm up: imports, the first connection
        one_wall, one_latencies = asyncio.run(batch(base_url, SEQUENTIAL, together=False))
        cpu_before = time.process_time()
        wall, latencies = asyncio.run(batch(base_url, CONCURRENT, together=True))
        cpu_per_run = (time.process_time() - cpu_before) / CONCURRENT
        per_conversation = memory_per_run(base_url, CONCURRENT)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    per_run = statistics.median(one_latencies)
    one_by_one = per_run * CONCURRENT
    rows = [
        {"runs": f"{SEQUENTIAL} one by one", "wall_s": f"{one_wall:.2f}", "p50_s": f"{per_run:.3f}",
         "p95_s": f"{percentile(one_latencies, 95):.3f}", "note": f"{CONCURRENT} this way: about {one_by_one:.0f} s"},
        {"runs": f"{CONCURRENT} at once", "wall_s": f"{wall:.2f}", "p50_s": f"{statistics.median(latencies):.3f}",
         "p95_s": f"{percentile(latencies, 95):.3f}",
         "note": f"CPU {cpu_per_run * 1000:.1f} ms and {per_conversation / 1024:.0f} KiB per run"},
    ]
    claims = [
        Claim("100 runs at once", f"{CONCURRENT} runs finished in {wall:.2f} s of wall time "
              f"(one by one: {per_run:.2f} s each, about {one_by_one:.0f} s for {CONCURRENT}; "
              f"{one_by_one / wall:.0f}x)", f"within {MAX_WALL:g} s", wall <= MAX_WALL),
    ]
    title = (f"Async: {CONCURRENT} AsyncAgent runs at once against the mock server in another process, every answer "
             f"{FIRST_TOKEN:g} s to its first token (one model call per run)")
    return title, rows, claims


if __name__ == "__main__":
    title, rows, claims = run()
    print(title)
    for row in rows:
        print(row)
    for claim in claims:
        print(claim)
