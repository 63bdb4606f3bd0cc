"""The context benchmark: its session is deterministic, its claims hold, and `check` catches broken ones."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_context  # noqa: E402

from miniagent.messages import conversation_error  # noqa: E402

TURNS = 24  # shorter than the benchmark's 60, so the file stays fast; the claims hold at any length past ~20


@pytest.fixture(scope="module")
def measured():
    return bench_context.run(turns=TURNS)


def test_every_claim_holds(measured):
    title, rows = measured
    assert f"{TURNS}-turn" in title
    assert [r["policy"] for r in rows] == list(bench_context.POLICIES)
    assert bench_context.check(rows) == []


def test_the_unmanaged_session_is_the_dearest_and_recalls_the_name(measured):
    rows = {r["policy"]: r for r in measured[1]}
    none = rows["none"]
    assert none["completed"] == "yes" and none["name_recalled"] == "yes" and none["vs_none"] == "100.0%"
    number = bench_context._number
    for name in ("sliding window", "token budget", "summarize", "window + truncation"):
        assert rows[name]["completed"] == "yes"
        assert number(rows[name]["input_tokens"]) < number(none["input_tokens"])
        assert number(rows[name]["max_per_call"]) < number(none["max_per_call"])


def test_the_windows_forget_the_name_and_the_summary_keeps_it(measured):
    rows = {r["policy"]: r for r in measured[1]}
    assert rows["sliding window"]["name_recalled"] == "no"
    assert rows["window + truncation"]["name_recalled"] == "no"
    assert rows["summarize"]["name_recalled"] == "yes"
    assert rows["summarize"]["model_calls"] > rows["none"]["model_calls"]  # the summary calls are counted


def test_the_naive_window_breaking_is_reported_not_hidden(measured):
    naive = {r["policy"]: r for r in measured[1]}["naive window"]
    assert naive["completed"].startswith("no: 400 at turn ")
    assert naive["name_recalled"] == "-"


def test_the_session_is_deterministic():
    assert bench_context.run(turns=8) == bench_context.run(turns=8)


def test_the_session_asks_for_the_name_it_was_given():
    asked = bench_context.questions(12)
    assert len(asked) == 12
    assert bench_context.NAME in asked[1] and asked[-1] == "What's my name?"
    assert any(q.startswith("Fetch") for q in asked) and any(q.startswith("Search") for q in asked)


def test_the_long_tools_return_thousands_of_characters():
    assert len(bench_context.search_web.fn(query="context windows")) > 2_000
    assert len(bench_context.fetch_page.fn(url="https://example.com/context-windows/1")) > 4_000
    assert "Context Windows" in bench_context.fetch_page.fn(url="https://example.com/context-windows/1")


def test_the_naive_window_really_produces_invalid_requests():
    """The benchmark's 400 is the window's fault, not the mock's: the view itself is invalid."""
    policy = bench_context.POLICIES["naive window"](None)
    history = [{"role": "user", "content": "task"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search_web", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hits"}]}]
    history += [{"role": "assistant", "content": "answer"}, {"role": "user", "content": "more"}] * 9
    assert conversation_error(history) is None
    assert conversation_error(policy.view(history)) is not None


@pytest.mark.parametrize("policy, key, value, words", [
    ("window + truncation", "input_tokens", "999,999,999", "window + truncation spent"),
    ("token budget", "max_per_call", f"{bench_context.BUDGET + 1:,}", "over the budget"),
    ("sliding window", "completed", "no: 400 at turn 7", "sliding window did not complete"),
])
def test_check_reports_a_broken_claim(measured, policy, key, value, words):
    rows = copy.deepcopy(measured[1])
    next(r for r in rows if r["policy"] == policy)[key] = value
    failed = bench_context.check(rows)
    assert len(failed) == 1 and words in failed[0]


def test_check_accepts_the_naive_window_breaking(measured):
    rows = copy.deepcopy(measured[1])
    assert next(r for r in rows if r["policy"] == "naive window")["completed"] != "yes"
    assert bench_context.check(rows) == []
