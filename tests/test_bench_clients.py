"""The clients benchmark's instruments, quickly: the three clients get the same answer from one mock server,
each timing is taken, the table has every row, and the import claim (a 10x gap, far above noise) holds.
The timed per-call and first-token bounds are checked by make bench, where a noisy machine can be re-run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_clients  # noqa: E402

from miniagent.mock import serve_in_subprocess  # noqa: E402

pytestmark = pytest.mark.bench  # run by make test-bench (CI), not by the everyday make test


def test_the_three_clients_agree_and_first_token_waits_for_the_pacing():
    proc, base_url = serve_in_subprocess("--api-key", bench_clients.KEY, cwd=bench_clients.ROOT)
    clients = bench_clients.Clients(base_url)
    try:
        assert clients.call_raw() == clients.call_mini() == clients.call_sdk() == "tool_use"
        for first_token in (clients.stream_raw(), clients.stream_mini(), clients.stream_sdk()):
            assert bench_clients.FIRST_TOKEN <= first_token < bench_clients.FIRST_TOKEN + 2
        assert len(clients.mini.exchanges) == 1 and clients.mini.usage.calls == 1  # miniagent's records were kept
    finally:
        clients.close()
        proc.terminate()
        proc.wait(timeout=10)


def test_interleaving_rotates_the_order_and_drops_the_warm_up_round():
    seen: list[str] = []
    calls = {name: (lambda name=name: seen.append(name) or 0.001) for name in "abc"}
    times = bench_clients.interleaved(calls, total=4, per_round=2)
    assert {name: len(values) for name, values in times.items()} == {"a": 4, "b": 4, "c": 4}
    assert seen[:6] == list("aabbcc") and seen[6:12] == list("bbccaa")


def test_the_claims_are_named_and_the_import_one_holds():
    title, rows, claims = bench_clients.run(calls=6, per_round=3, streams=2, import_runs=1)
    assert [c.name for c in claims] == ["miniagent adds little to a call", "miniagent is no slower than the SDK",
                                        "the first token is not held back", "miniagent imports fast"]
    assert claims[3].holds  # anthropic's import is ~10x miniagent.client's: far above noise
    assert len(rows) == 3 + 3 + len(bench_clients.MODULES) + 1 and rows[-1]["measure"].startswith("load")
