"""The streaming benchmark's instruments, on a barely paced mock: no timing is asserted here, only that
the socket timestamp is taken, comes before the callback, and both agents get the same answer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_streaming  # noqa: E402

from miniagent.mock import MockAPI, serve_in_thread  # noqa: E402

pytestmark = pytest.mark.bench  # run by make test-bench (CI), not by the everyday make test


def test_arrival_is_stamped_at_the_socket_before_on_text_and_the_answers_agree():
    tokens, deltas = bench_streaming.answer_tokens()
    assert tokens > 50 and deltas > 10  # a long enough answer to spread over the benchmark's seconds
    server, base_url = serve_in_thread(MockAPI(pacing={"first": 0.001, "rate": 1_000_000}))
    try:
        streamed, plain = bench_streaming.streamed_run(base_url), bench_streaming.plain_run(base_url)
    finally:
        server.shutdown()
    assert streamed["handoff"] >= 0 and streamed["deltas"] == deltas
    assert streamed["text"] == plain["text"]


def test_a_marker_split_across_two_reads_is_still_found():
    class Reads:
        def __init__(self, pieces):
            self.pieces = list(pieces)

        def read(self, max_bytes, timeout=None):
            return self.pieces.pop(0)

    clock = bench_streaming._Arrivals(None)
    stream = bench_streaming._ArrivalStream(Reads([b'data: {"delta":{"type":"text_', b'delta","text":"Hi"}}']), clock)
    stream.read(4096)
    assert clock.first_text is None
    stream.read(4096)
    assert clock.first_text is not None
