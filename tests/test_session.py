"""Notebook 15's sessions: saved after each turn, resumed by another process with nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import miniagent
from miniagent.planning import Plan
from miniagent.session import Session

TURN = """
import sys, miniagent
from miniagent.planning import Plan
from miniagent.session import Session
plan = Plan()
agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), [plan.tool])
session = Session.open(sys.argv[1], agent, plan)
if sys.argv[2] == "plan":
    plan.update([{"step": "read the failing test", "done": True}, {"step": "fix calc.py", "done": False}])
result = session.ask(sys.argv[3])
print(result.text)
print("turns", session.turns, "messages", len(agent.history), "plan", plan.done, "of", len(plan.steps))
"""


def turn(path: Path, question: str, plan: str = "") -> list[str]:
    done = subprocess.run([sys.executable, "-c", TURN, str(path), plan or "-", question],
                          capture_output=True, text=True, encoding="utf-8", timeout=60,
                          env={**os.environ, "MINIAGENT_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_second_process_goes_on_where_the_first_stopped(tmp_path):
    path = tmp_path / "session.json"
    first = turn(path, "Hi, my name is Ada.", plan="plan")
    assert first[-1] == "turns 1 messages 2 plan 1 of 2"
    second = turn(path, "What is my name?")
    assert "Ada" in second[0]  # the mock read it from the history the new process loaded
    assert second[-1] == "turns 2 messages 4 plan 1 of 2"
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["turns"] == 2 and saved["tokens"]["input"] > 0 and len(saved["history"]) == 4
    assert not path.with_name("session.json.writing").exists()


def test_a_turn_that_fails_is_saved_too(tmp_path):
    client = miniagent.connect(offline=True, quiet=True, max_retries=0)
    session = Session.open(tmp_path / "s.json", miniagent.Agent(client, []))
    client.mock.fault(500)
    result = session.ask("Hello!")
    assert not result.ok and json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["turns"] == 1


@pytest.mark.parametrize("text,problem", [
    ("{not json", "not JSON"),
    ('{"version": 2, "history": []}', "version-1"),
    ('{"version": 1, "history": [1, 2]}', "message 0 is not"),
    ('{"version": 1, "history": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", '
     '"content": "x"}]}]}', "would be refused by the API"),  # a result for a call nobody made
])
def test_a_file_that_is_not_a_session_is_refused_and_left_alone(tmp_path, text, problem):
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=problem) as caught:
        Session.open(path, miniagent.Agent(miniagent.connect(offline=True, quiet=True), []), Plan())
    assert str(path) in str(caught.value) and path.read_text(encoding="utf-8") == text


def test_the_plan_is_kept_in_a_file_a_person_or_the_next_session_reads(tmp_path):
    plan = Plan(tmp_path / "work" / "TODO.md")
    plan.update([{"step": "run the tests", "done": True}, {"step": "fix calc.py", "done": False}])
    assert (tmp_path / "work" / "TODO.md").read_text(encoding="utf-8") == \
        "Plan: 1 of 2 done\n[x] run the tests\n[ ] fix calc.py\n"
    again = Plan.load(tmp_path / "work" / "TODO.md")
    assert again.steps == plan.steps and not (tmp_path / "work" / "TODO.md.writing").exists()
    assert Plan.load(tmp_path / "none.md").steps == []
