"""Trace: stamped events, JSON Lines round trip, summary, a readable table, no secrets."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from miniagent.client import Client
from miniagent.mock import MockAPI
from miniagent.events import Trace, describe

from agent_fakes import SYNC_ASYNC, ask, make, say, script


class FakeClock:
    """Monotonic seconds and wall-clock time that advance only when told to."""

    def __init__(self):
        self.seconds = 100.0
        self.wall = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)

    def tick(self, seconds):
        self.seconds += seconds
        self.wall += timedelta(seconds=seconds)

    def monotonic(self):
        return self.seconds

    def now(self):
        return self.wall


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def trace(clock):
    return Trace(clock=clock.monotonic, now=clock.now)


def demo_events():
    """The events of one tool round, as the loop and the agent emit them."""
    return [
        {"type": "question", "text": "weather in Paris and London?"},
        {"type": "request", "iteration": 1, "messages": 1, "sent": 1},
        {"type": "response", "iteration": 1, "stop_reason": "tool_use",
         "content": [{"type": "tool_use", "id": "a", "name": "get_weather", "input": {"city": "Paris"}},
                     {"type": "tool_use", "id": "b", "name": "get_weather", "input": {"city": "London"}}],
         "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"type": "usage", "iteration": 1, "input_tokens": 100, "output_tokens": 20},
        {"type": "tool_call", "iteration": 1, "id": "a", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_call", "iteration": 1, "id": "b", "name": "get_weather", "input": {"city": "London"}},
        # London finished first: results arrive in finishing order
        {"type": "tool_result", "iteration": 1, "id": "b", "name": "get_weather", "is_error": True,
         "content": "Error: unknown city", "seconds": 0.01},
        {"type": "tool_result", "iteration": 1, "id": "a", "name": "get_weather", "is_error": False,
         "content": "Paris: sunny", "seconds": 0.02},
        {"type": "request", "iteration": 2, "messages": 3, "sent": 3},
        {"type": "error", "iteration": 2, "error": "500 api_error: Internal server error"},
        {"type": "stop", "stop": "api_error", "reason": "the API call failed"},
    ]


def test_record_stamps_time_and_elapsed(trace, clock):
    clock.tick(50)  # time before the first event does not count
    first = trace.record({"type": "request", "iteration": 1})
    clock.tick(0.25)
    second = trace.record({"type": "stop", "stop": "end_turn", "reason": "done"})
    assert first["elapsed"] == 0.0 and second["elapsed"] == 0.25
    assert first["t"] == "2026-05-09T06:24:01.000+00:00"
    assert datetime.fromisoformat(second["t"]).utcoffset() == timedelta(0)
    assert second["stop"] == "end_turn" and len(trace) == 2 and list(trace)[1] is second


def test_record_copies_and_does_not_touch_the_input(trace):
    event = {"type": "request", "iteration": 1}
    stored = trace.record(event)
    assert event == {"type": "request", "iteration": 1} and stored is not event
    assert list(stored)[:3] == ["type", "t", "elapsed"]


@pytest.mark.parametrize("bad", [{}, {"type": 3}, "request", None])
def test_record_rejects_non_events(trace, bad):
    with pytest.raises(ValueError, match="string 'type'"):
        trace.record(bad)


def test_jsonl_round_trip(trace, clock, tmp_path):
    for event in demo_events():
        trace.record(event)
        clock.tick(0.1)
    path = trace.to_jsonl(tmp_path / "run.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(demo_events())
    for line in lines:
        obj = json.loads(line)
        assert isinstance(obj["type"], str) and datetime.fromisoformat(obj["t"])
    assert "Paris" in lines[0] or "Paris" in lines[2]  # non-ASCII-safe, readable JSON
    loaded = Trace.from_jsonl(path)
    assert loaded.events == trace.events and loaded.summary() == trace.summary()


def test_jsonl_keeps_non_ascii_readable(trace, tmp_path):
    trace.record({"type": "question", "text": "北京天气"})
    assert "北京天气" in trace.to_jsonl(tmp_path / "t.jsonl").read_text(encoding="utf-8")


def test_from_jsonl_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"type": "request"}\n\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3: not JSON"):
        Trace.from_jsonl(path)
    path.write_text('[1, 2]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: expected an object with a 'type'"):
        Trace.from_jsonl(path)


def test_summary_counts(trace, clock):
    for event in demo_events():
        trace.record(event)
        clock.tick(0.5)
    assert trace.summary() == {
        "model_calls": 2, "tool_calls": 2, "tool_errors": 1, "api_errors": 1,
        "input_tokens": 100, "output_tokens": 20, "total_tokens": 120,
        "wall_seconds": 5.0,
    }


def test_empty_trace():
    trace = Trace()
    assert len(trace) == 0 and trace.summary()["wall_seconds"] == 0.0 and trace.summary()["model_calls"] == 0
    assert trace.table().splitlines()[0].split() == ["#", "elapsed", "type", "what"]


def test_table_lists_concurrent_results_in_call_order(trace):
    for event in demo_events():
        trace.record(event)
    rows = trace.rows()
    results = [what for _, _, kind, what in rows if kind == "tool_result"]
    assert results == ["get_weather -> Paris: sunny", "get_weather -> error Error: unknown city"]
    assert [n for n, *_ in rows] == list(range(1, len(demo_events()) + 1))
    assert [e["id"] for e in trace.of_type("tool_result")] == ["b", "a"]  # the raw order is kept
    table = trace.table()
    assert "get_weather({\"city\": \"Paris\"})" in table and "stop_reason=tool_use, 2 tool_use" in table


def test_table_clips_long_lines(trace):
    trace.record({"type": "question", "text": "x" * 500})
    (row,) = trace.rows(width=40)
    assert len(row[3]) == 40 and row[3].endswith("…")


def test_clear(trace, clock):
    trace.record({"type": "request"})
    clock.tick(3)
    trace.clear()
    assert len(trace) == 0
    assert trace.record({"type": "request"})["elapsed"] == 0.0


@pytest.mark.parametrize("event, expected", [
    ({"type": "stop", "stop": "max_iterations", "reason": "stopped after 3"}, "max_iterations: stopped after 3"),
    ({"type": "usage", "input_tokens": 1234, "output_tokens": 5}, "1,234 in, 5 out"),
    ({"type": "tool_result", "name": "f", "content": [{"type": "text", "text": "x"}]},
     'f -> [{"type": "text", "text": "x"}]'),
    ({"type": "custom", "a": 1}, '{"a": 1}'),
])
def test_describe(event, expected):
    assert describe(event) == expected


def test_an_agent_trace_never_holds_the_api_key(tmp_path):
    """Even with a real-looking key and a failing call, the key appears nowhere in the trace."""
    from miniagent.agent import Agent

    key = "sk-ant-api03-SECRET-do-not-leak-0123456789"
    mock = MockAPI()
    client = Client(api_key=key, base_url="http://mock.invalid", transport=mock.transport(), max_retries=0)
    agent = Agent(client)
    agent.run("What is (1024 + 768) * 2?")
    mock.fault(401, message=f"invalid x-api-key {key}")
    agent.run("And the weather in Paris?")
    text = agent.trace.to_jsonl(tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert agent.trace.summary()["api_errors"] == 1
    assert key not in text and "SECRET" not in text


def test_to_jsonl_never_writes_a_key_the_environment_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("EXAMPLE_API_KEY", 'demo-"key"-7f3a9c2e51')
    trace = Trace()
    trace.record({"type": "tool_result", "id": "t", "name": "show_config",
                  "content": 'region=eu, api_key=demo-"key"-7f3a9c2e51'})
    text = trace.to_jsonl(tmp_path / "t.jsonl").read_text()
    assert "7f3a9c2e51" not in text and "<redacted>" in text
    assert "7f3a9c2e51" in trace.events[0]["content"]  # in memory, the event is as it came
    assert Trace.from_jsonl(tmp_path / "t.jsonl")[0]["content"] == "region=eu, api_key=<redacted>"


@pytest.mark.parametrize("kind", SYNC_ASYNC)
def test_input_a_cache_served_is_counted_and_said(kind):
    """A server that caches the prompt reports most of it as cache reads: summing input_tokens alone
    made a growing conversation look flat ([1, 15, 16, 16] live on llama.cpp)."""
    cached = {"input_tokens": 1, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 20, "output_tokens": 5}
    agent = make(kind, script(say("first", cached), say("second", {"input_tokens": 7, "output_tokens": 3})))
    ask(agent, "one")
    first = agent.trace.summary()
    assert first["input_tokens"] == 321 and first["cache_read_input_tokens"] == 300
    assert first["cache_creation_input_tokens"] == 20 and agent.usage.input_tokens == 321
    assert "321 in (300 from the cache), 5 out" in agent.trace.table()
    agent.trace.clear()
    ask(agent, "two")
    assert agent.trace.summary()["input_tokens"] == 7 and "cache_read_input_tokens" not in agent.trace.summary()
