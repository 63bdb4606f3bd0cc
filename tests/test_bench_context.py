"""The context benchmark and notebook 04 measure one session: `miniagent.workload`'s.

Its session is deterministic, its claims hold, each claim notices when its measurement
breaks, and notebook 04's saved comparison table is the benchmark's, number for number.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_context  # noqa: E402

import miniagent  # noqa: E402
from miniagent import workload  # noqa: E402
from miniagent.messages import conversation_error  # noqa: E402

pytestmark = pytest.mark.bench  # run by make test-bench (CI), not by the everyday make test

CLAIMS = ["square law", "a window is linear", "tool output dominates", "the naive window breaks",
          "pair-safe policies complete", "the token budget holds", "window + truncation is cheap",
          "a summary remembers, a window forgets", "structured memory is cheap",
          "structured memory stays within the budget", "structured memory remembers"]


@pytest.fixture(scope="module")
def sessions():
    return bench_context.measure()  # the full session, as make bench runs it (about 3 s)


def test_every_claim_is_named_and_holds(sessions):
    claims = bench_context.claims(sessions)
    assert [c.name for c in claims] == CLAIMS
    assert [str(c) for c in claims if not c.holds] == []
    assert all(str(c).startswith("✓ ") and "(claim: " in str(c) for c in claims)


def test_run_gives_the_title_the_table_and_the_claims():
    title, rows, claims = bench_context.run(turns=12)
    assert "12-turn" in title and "notebook 04" in title
    labels = ["none", *workload.policies(miniagent.connect(offline=True, quiet=True), memory=True)]
    assert [r["policy"] for r in rows] == labels and labels[-1] == "structured memory"
    assert [c.name for c in claims] == CLAIMS


def test_the_unmanaged_session_is_the_dearest_and_recalls_the_name(sessions):
    none = sessions["none"]
    assert none.completed and none.recalled and none.turns == workload.TURNS
    assert none.calls == len(none.per_call)  # no policy, no summary calls
    for label in bench_context.PAIR_SAFE:
        assert sessions[label].completed
        assert sessions[label].input_tokens < none.input_tokens
        assert sessions[label].largest_call < none.largest_call


def test_the_windows_forget_the_name_and_the_summaries_keep_it(sessions):
    assert not sessions["sliding window"].recalled and not sessions["window + truncation"].recalled
    assert sessions["summarize"].recalled and sessions["summarize tool output"].recalled
    assert sessions["summarize"].calls > sessions["none"].calls  # the summary calls are counted


def test_structured_memory_recalls_both_facts_through_its_block(sessions):
    """End to end on the workload: the facts come from extraction calls (counted), the block carries them."""
    memory, alone = sessions["structured memory"], sessions["window + truncation"]
    assert memory.remembers == "name + pref" and alone.remembers == "neither"
    policy = memory.policy
    assert policy.facts == {"name": workload.NAME, "preference": workload.PREFERENCE}
    assert memory.calls == len(memory.per_call) + policy.extractions > len(memory.per_call)
    assert memory.input_tokens > sum(memory.per_call)  # the extraction calls' input is in the total
    last_view = policy.view(memory.history[:-1])  # the last question's request, as it was sent
    assert conversation_error(last_view) is None
    assert not any(m["content"] == workload.questions()[1] for m in last_view[1:])  # turn 2 long dropped ...
    assert "- name: Ada" in str(last_view[0]["content"])  # ... its fact carried by the first message


def test_the_naive_window_breaking_is_reported_not_hidden(sessions):
    naive = sessions["naive window"]
    assert naive.broke and naive.ending.startswith("400 at turn ")
    row = next(r for r in workload.compare(sessions) if r["policy"] == "naive window")
    assert row["completed"] == naive.ending and row["recalled"] == "-" and row["doubling"] == "-"


def test_the_session_is_deterministic():
    assert bench_context.run(turns=8)[1] == bench_context.run(turns=8)[1]


def test_the_session_asks_for_the_name_it_was_given():
    asked = workload.questions(12)
    assert len(asked) == 12
    assert workload.NAME in asked[1] and asked[-1] == "What's my name, and what do I prefer?"
    assert asked[6] == f"One more thing: I prefer {workload.PREFERENCE}."  # half-way: turn 7 of 12
    assert any(q.startswith("Fetch") for q in asked) and any(q.startswith("Search") for q in asked)
    assert workload.questions(4)[2:] == [asked[6], asked[-1]]
    with pytest.raises(ValueError, match="at least 4 turns"):
        workload.questions(3)


def test_the_long_tools_return_thousands_of_characters():
    assert len(workload.search_web.fn(query="context windows")) > 2_000
    page = workload.fetch_page.fn(url="https://example.com/context-windows/1")
    assert len(page) > 4_000 and "Context Windows" in page


def test_the_naive_window_really_produces_invalid_requests():
    """The benchmark's 400 is the window's fault, not the mock's: the view itself is invalid."""
    policy = workload.policies(miniagent.connect(offline=True, quiet=True))["naive window"]
    history = [{"role": "user", "content": "task"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "search_web", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hits"}]}]
    history += [{"role": "assistant", "content": "answer"}, {"role": "user", "content": "more"}] * 9
    assert conversation_error(history) is None
    assert conversation_error(policy.view(history)) is not None


def broken(sessions, label, **changes):
    """A copy of the measurements with one session's fields changed."""
    out = copy.copy(sessions)
    out[label] = dataclasses.replace(sessions[label], **changes)
    return out


@pytest.mark.parametrize("label, changes, claim", [
    ("none", {"per_call": [1_000] * 118}, "square law"),
    ("sliding window", {"per_call": list(range(1, 119))}, "a window is linear"),
    ("naive window", {"broke": None}, "the naive window breaks"),
    ("token budget", {"broke": (7, "400 invalid_request_error: ...")}, "pair-safe policies complete"),
    ("summarize tool output", {"unfinished": [(9, "max_iterations")]}, "pair-safe policies complete"),
    ("token budget", {"per_call": [workload.BUDGET + 1]}, "the token budget holds"),
    ("window + truncation", {"input_tokens": 999_999_999}, "window + truncation is cheap"),
    ("summarize", {"answer": "I don't know your name."}, "a summary remembers, a window forgets"),
    ("sliding window", {"answer": "Your name is Ada."}, "a summary remembers, a window forgets"),
    ("structured memory", {"input_tokens": 999_999_999}, "structured memory is cheap"),
    ("structured memory", {"per_call": [workload.BUDGET + 1]}, "structured memory stays within the budget"),
    ("structured memory", {"answer": "Your name is Ada."}, "structured memory remembers"),
    ("window + truncation", {"answer": f"You like {workload.PREFERENCE}."}, "structured memory remembers"),
])
def test_each_claim_notices_a_broken_measurement(sessions, label, changes, claim):
    failed = [c for c in bench_context.claims(broken(sessions, label, **changes)) if not c.holds]
    assert [c.name for c in failed] == [claim]
    assert str(failed[0]).startswith("✗ ")


def test_the_tool_output_claim_notices_short_tools(sessions):
    history = [dict(m, content=[dict(b, content="ok") if b.get("type") == "tool_result" else b
                                for b in m["content"]]) if isinstance(m["content"], list) else m
               for m in sessions["none"].history]
    failed = [c.name for c in bench_context.claims(broken(sessions, "none", history=history)) if not c.holds]
    assert failed == ["tool output dominates"]


def test_the_workload_is_light_to_import():
    from test_import_light import HEAVY, loaded_after

    assert loaded_after("import miniagent.workload") == {m: False for m in HEAVY}


def test_notebook_04_runs_the_same_session_and_shows_the_same_table(sessions):
    """One workload, one table: the notebook imports the session instead of redefining it."""
    source = (ROOT / "notebooks" / "src" / "04_context.py").read_text()
    body = source[:source.index("## Exercises")]
    assert "workload.run_session(llm, policy, TURNS)" in body and "workload.policies(llm)" in body
    assert "TURNS = workload.TURNS if" in body
    for own in ("def search_web", "def fetch_page", "class Session", "TOPICS ="):
        assert own not in body, f"notebook 04 defines its own {own}: use miniagent.workload's"
    saved = nbformat.read(ROOT / "notebooks" / "04_context.ipynb", as_version=4)
    outputs = "".join(o.get("text", "") for c in saved.cells if c.cell_type == "code" for o in c.outputs)
    shown = ["none", *workload.policies(miniagent.connect(offline=True, quiet=True))]  # no structured memory
    assert "structured memory" not in shown
    assert workload.format_table(workload.compare({label: sessions[label] for label in shown})) in outputs
