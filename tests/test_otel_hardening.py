"""OTelSink against collectors that are slow, down or never answer: the agent never waits for them, the
trouble is reported once (a warning of the `miniagent.otel` logger) and counted (`sink.stats()`), and
neither shutdown nor the end of the process waits longer than its bound.

No sleep makes a test pass: each waits on an event or a condition with a deadline, and every
duration asserted is a bound that the code as it was (each span sent in the caller's thread,
waiting up to the exporter's timeout) is far beyond.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the tracing extra: pip install 'miniagent[tracing]'")

from opentelemetry.sdk.trace.export import SpanExportResult  # noqa: E402

from miniagent import Agent, connect, otel  # noqa: E402
from miniagent.otel import OTelSink, otlp_exporter  # noqa: E402
from miniagent.tracing import Tracer  # noqa: E402
from otlp_receiver import OTLPReceiver, SilentCollector  # noqa: E402

RUN_BOUND = 0.5  # seconds a silent collector may add to a run, at most (it was 4 x the exporter's timeout)
WAIT = 5.0       # the longest any test waits for a thread or a condition
QUESTION = "What is the weather in Paris?"
TESTS = os.path.dirname(os.path.abspath(__file__))


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "miniagent.otel" and r.levelno == logging.WARNING]


def timed_run(client, tracer, bound: float) -> float:
    """Seconds one agent run took; fails as soon as it takes longer than `bound` (the run goes on in its thread)."""
    done, took = threading.Event(), []

    def run():
        began = time.perf_counter()
        assert Agent(client, tracer=tracer).run(QUESTION).ok
        took.append(time.perf_counter() - began)
        done.set()
    threading.Thread(target=run, daemon=True).start()
    assert done.wait(bound), f"the run took longer than {bound:.2f} s"
    return took[0]


def span_dicts(n: int) -> list[dict]:
    tracer = Tracer(seed=5)
    for i in range(n):
        tracer.finish(tracer.start(f"execute_tool t{i}", "tool"))
    return [s.to_dict() for s in tracer.spans]


class Stuck:
    """An exporter whose export blocks until `release` is set, as a collector that never answers."""

    def __init__(self):
        self.release, self.entered, self.calls = threading.Event(), threading.Event(), 0

    def export(self, spans):
        self.calls += 1
        self.entered.set()
        self.release.wait(WAIT)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.release.set()


def test_a_silent_collector_adds_nothing_to_a_run_and_shutdown_is_bounded(caplog):
    client = connect(offline=True, quiet=True)
    timed_run(client, Tracer(), WAIT)  # warm up (imports, the mock's first answers)
    baseline = timed_run(client, Tracer(), WAIT)
    with SilentCollector() as collector:
        sink = OTelSink(otlp_exporter(collector.endpoint))  # the exporter's own default timeout (10 s)
        tracer = Tracer(on_end=sink)
        took = timed_run(client, tracer, baseline + RUN_BOUND)
        assert took - baseline < RUN_BOUND and len(tracer.spans) == 4
        began = time.perf_counter()
        sink.shutdown(timeout_millis=200)
        assert time.perf_counter() - began < 0.2 + RUN_BOUND
        # nothing failed fast (a refused connection would be "failed"): the export was waiting on the collector
        assert sink.stats() == {"sent": 0, "failed": 0, "dropped": 4, "queued": 0}
    sink._thread.join(WAIT)  # the collector gone, the export under way ends, and the thread with it
    assert not sink._thread.is_alive()
    [warning] = warnings_of(caplog)
    assert "4 spans were not sent within the shutdown's 0.2 s" in warning and "sink.stats()" in warning


def test_a_full_queue_drops_and_counts_each_span_and_warns_once(caplog):
    exporter = Stuck()
    sink = OTelSink(exporter, max_queue=3)
    spans = span_dicts(10)
    sink(spans[0])
    assert exporter.entered.wait(WAIT)  # the first span is being sent, and stays so
    for span in spans[1:]:
        sink(span)
    assert sink.stats() == {"sent": 0, "failed": 0, "dropped": 6, "queued": 4}
    [warning] = warnings_of(caplog)
    assert "the queue is full (3 spans)" in warning
    exporter.release.set()
    assert sink.force_flush(int(WAIT * 1000))
    assert sink.stats() == {"sent": 4, "failed": 0, "dropped": 6, "queued": 0} and exporter.calls == 4
    sink.shutdown()
    sink.shutdown()  # twice is once
    sink(spans[0])  # after shutdown: dropped and counted, not sent, and no second warning
    assert sink.stats()["dropped"] == 7 and len(warnings_of(caplog)) == 1


def test_an_export_that_does_not_answer_is_reported_while_the_run_goes_on(caplog, monkeypatch):
    monkeypatch.setattr(otel, "SLOW_EXPORT_SECONDS", 0.0)  # any export under way is "slow" at once
    exporter = Stuck()
    sink = OTelSink(exporter)
    first, second = span_dicts(2)
    sink(first)
    assert exporter.entered.wait(WAIT)
    sink(second)  # the caller notices, and goes on
    [warning] = warnings_of(caplog)
    assert "has not answered an export for more than 0 s" in warning
    exporter.release.set()
    assert sink.force_flush(int(WAIT * 1000)) and sink.stats()["sent"] == 2
    sink.shutdown()


@pytest.mark.parametrize("failure", ["refused", "raised"])
def test_failed_exports_are_counted_and_reported_once_and_the_thread_goes_on(caplog, failure):
    class Failing:
        def export(self, spans):
            if failure == "raised":
                raise ConnectionError("collector unreachable")
            return SpanExportResult.FAILURE

        def shutdown(self):
            pass

    sink = OTelSink(Failing())
    for span in span_dicts(3):
        sink(span)
    assert sink.force_flush(int(WAIT * 1000))
    assert sink.stats() == {"sent": 0, "failed": 3, "dropped": 0, "queued": 0}
    [warning] = warnings_of(caplog)
    assert ("ConnectionError: collector unreachable" if failure == "raised" else "answered FAILURE") in warning
    sink.shutdown()


def test_a_healthy_collector_gets_every_span_one_request_each_in_order():
    with OTLPReceiver() as receiver:
        with OTelSink(otlp_exporter(receiver.endpoint, timeout=5)) as sink:
            tracer = Tracer(on_end=sink)
            assert Agent(connect(offline=True, quiet=True), tracer=tracer).run(QUESTION).ok
        names = [s["name"] for s in receiver.spans()]
    assert len(receiver.bodies) == len(tracer.spans) == 4
    assert names == [s.name for s in sorted(tracer.spans, key=lambda s: s.end_ns)]  # in the order they ended
    assert sink.stats() == {"sent": 4, "failed": 0, "dropped": 0, "queued": 0}


def test_the_end_of_the_process_does_not_wait_on_a_silent_collector():
    """A script that never shuts its sink down: at exit the sink is flushed, within its bound, and said so."""
    script = textwrap.dedent(f"""
        import atexit, sys, time
        atexit.register(lambda: print(f"exit took {{time.monotonic() - ended:.3f}}", flush=True))  # runs last
        sys.path.insert(0, {TESTS!r})
        from otlp_receiver import SilentCollector
        from miniagent.otel import OTelSink, otlp_exporter
        from miniagent.tracing import Tracer
        collector = SilentCollector().__enter__()
        tracer = Tracer(on_end=OTelSink(otlp_exporter(collector.endpoint), timeout=0.3))
        for i in range(4):
            tracer.finish(tracer.start(f"execute_tool t{{i}}", "tool"))
        ended = time.monotonic()
    """)
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "MINIAGENT_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    exit_seconds = float(done.stdout.split("exit took ")[1])
    assert exit_seconds < 0.3 + RUN_BOUND, (exit_seconds, time.monotonic() - began)
    assert done.stderr.count("miniagent.otel.OTelSink:") == 1 and "were not sent within" in done.stderr
