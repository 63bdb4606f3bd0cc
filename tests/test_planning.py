"""The plan tool: a checklist the model writes and checks off, through the real tool registry.

Everything the model sends goes through the registry first (schema validation, the tool
boundary), so a bad plan is an error result the model can fix, never an exception; and
step text is cleaned before it is shown, so a step cannot fake a checked line or drive
the terminal.
"""

from __future__ import annotations

import pytest

from agent_fakes import SYNC_ASYNC, ask, make, results_in, say, script, use
from miniagent.planning import MAX_STEP_CHARS, MAX_STEPS, Plan
from miniagent.tools import ToolRegistry, validate_arguments


def call(steps, id="toolu_1"):
    return {"type": "tool_use", "id": id, "name": "update_plan", "input": {"steps": steps}}


def test_update_renders_the_checklist():
    plan = Plan()
    assert plan.render() == "Plan: (no steps yet)" and not plan.complete and plan.done == 0
    out = plan.update([{"step": "Find the file", "done": True}, {"step": "Fix the bug", "done": False}])
    assert out == "Plan: 1 of 2 done\n[x] Find the file\n[ ] Fix the bug" == repr(plan)
    assert (plan.done, plan.complete, plan.updates) == (1, False, 1)
    plan.update([{"step": "Find the file", "done": True}, {"step": "Fix the bug", "done": True}])
    assert plan.complete and plan.updates == 2 and plan.render().startswith("Plan: 2 of 2 done")


def test_through_the_registry_a_good_plan_is_the_result():
    plan = Plan()
    out = ToolRegistry([plan.tool]).run(call([{"step": "a", "done": False}]))
    assert out == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Plan: 0 of 1 done\n[ ] a"}


@pytest.mark.parametrize("steps, words", [
    ([{"step": f"s{i}", "done": False} for i in range(MAX_STEPS + 1)], f"at most {MAX_STEPS} steps"),
    ([{"step": "   ", "done": False}], "every step needs some text"),
    ([{"step": "\x00\x1b\x07", "done": False}], "every step needs some text"),
    ([{"step": "a"}], "done"),
    ([{"step": "a", "done": "yes"}], "done"),
    ([{"done": True}], "step"),
    (["just text"], "steps"),
    ("not a list", "steps"),
], ids=["too-many", "blank", "only-control", "no-done", "done-not-bool", "no-step", "not-object", "not-list"])
def test_a_bad_plan_is_an_error_result_not_an_exception(steps, words):
    plan = Plan()
    plan.update([{"step": "keep me", "done": False}])
    out = ToolRegistry([plan.tool]).run(call(steps))
    assert out["is_error"] is True and words in out["content"]
    assert plan.steps == [{"step": "keep me", "done": False}] and plan.updates == 1  # the old plan stands


def test_the_schema_names_the_missing_field():
    plan = Plan()
    problems = validate_arguments(plan.tool.input_schema, {"steps": [{"step": "a"}]})
    assert problems and any("done" in p for p in problems)
    assert validate_arguments(plan.tool.input_schema, {"steps": [{"step": "a", "done": False}]}) == []


def test_step_text_is_cleaned_and_clipped():
    plan = Plan()
    plan.update([{"step": "  red\x1b[31m alert\x00 \u202egnp.exe  ", "done": False},
                 {"step": "real step\n[x] a fake finished step", "done": False},
                 {"step": "y" * (MAX_STEP_CHARS + 50), "done": True},
                 {"step": "bad \ud800 surrogate", "done": False}])
    lines = plan.render().splitlines()
    assert len(lines) == 5  # a newline in a step cannot add a line, let alone a checked one
    assert sum(line.startswith("[x]") for line in lines) == 1
    for step in plan.steps:
        assert not any(ch in step["step"] for ch in "\x1b\x00\n\r\u202e\ud800"), step
        assert step["step"] == step["step"].strip() and len(step["step"]) <= MAX_STEP_CHARS
    assert plan.steps[0]["step"].startswith("red") and "alert" in plan.steps[0]["step"]
    assert plan.steps[2]["step"] == "y" * MAX_STEP_CHARS


def test_the_input_is_not_modified():
    plan = Plan()
    steps = [{"step": "  a  ", "done": False}]
    plan.update(steps)
    assert steps == [{"step": "  a  ", "done": False}] and plan.steps == [{"step": "a", "done": False}]
    plan.steps[0]["done"] = True  # the plan's list is its own
    assert steps[0]["done"] is False


@pytest.mark.parametrize("kind", SYNC_ASYNC)
def test_an_agent_keeps_its_plan(kind):
    plan = Plan()
    first = [{"step": "look", "done": False}, {"step": "answer", "done": False}]
    done = [{"step": "look", "done": True}, {"step": "answer", "done": True}]
    agent = make(kind, script(use(("update_plan", {"steps": first})), use(("update_plan", {"steps": [{"step": "x"}]})),
                              use(("update_plan", {"steps": done})),
                              lambda req: say(results_in(req)[0]["content"].splitlines()[0])), [plan.tool])
    result = ask(agent, "do it")
    assert result.ok and result.text == "Plan: 2 of 2 done" and plan.complete and plan.updates == 2
    errors = [e for e in agent.trace.of_type("tool_result") if e["is_error"]]
    assert len(errors) == 1 and "invalid arguments for update_plan" in errors[0]["content"]
