"""Notebook 15's hooks: the order they run in and the failure rules, as miniagent/hooks.py writes them."""

from __future__ import annotations

import miniagent
from miniagent.hooks import Hooks
from miniagent.tools import ToolRegistry, tool


@tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: the file
    """
    if path == "missing":
        raise FileNotFoundError(path)
    return f"contents of {path}"


def run(registry, **input):
    return registry.run({"type": "tool_use", "id": "t1", "name": "read_file", "input": input})


def test_before_hooks_run_in_order_and_the_first_no_blocks():
    seen, hooks = [], Hooks()
    hooks.before("log", lambda name, args: seen.append(("log", args["path"])))
    hooks.before("no_env", lambda name, args: "secrets stay out" if args["path"].endswith(".env") else None)
    hooks.before("never_reached_on_block", lambda name, args: seen.append(("second", args["path"])))
    tools = hooks.wrap(ToolRegistry([read_file]))
    assert run(tools, path="a.txt")["content"] == "contents of a.txt"
    blocked = run(tools, path=".env")
    assert blocked["is_error"] and "blocked by no_env: secrets stay out" in blocked["content"]
    assert seen == [("log", "a.txt"), ("second", "a.txt"), ("log", ".env")]
    assert hooks.blocked == ["no_env blocked read_file: secrets stay out"]


def test_a_before_hook_that_raises_blocks_the_call():
    ran, hooks = [], Hooks()
    hooks.before("broken", lambda name, args: 1 / 0)
    def read_file(path: str) -> str:
        """Read a file."""
        ran.append(path)
        return "x"

    tools = hooks.wrap(ToolRegistry([tool(read_file)]))
    result = run(tools, path="a.txt")
    assert result["is_error"] and "blocked by broken" in result["content"] and ran == []
    assert hooks.failures == ["broken raised ZeroDivisionError: division by zero"]


def test_after_hooks_add_context_in_order_and_a_failing_one_changes_nothing():
    hooks = Hooks()
    hooks.after("size", lambda name, args, output: f"{len(output)} characters")
    hooks.after("broken", lambda name, args, output: {}["x"])
    hooks.after("quiet", lambda name, args, output: None)
    hooks.after("hint", lambda name, args, output: "run the tests next")
    tools = hooks.wrap(ToolRegistry([read_file]))
    assert run(tools, path="a.txt")["content"] == "contents of a.txt\n[size] 17 characters\n[hint] run the tests next"
    assert hooks.failures == ["broken raised KeyError: 'x'"]


def test_after_hooks_are_not_called_when_the_tool_raised():
    called, hooks = [], Hooks()
    hooks.after("log", lambda name, args, output: called.append(output))
    result = run(hooks.wrap(ToolRegistry([read_file])), path="missing")
    assert result["is_error"] and "FileNotFoundError" in result["content"] and called == []


def test_turn_end_hooks_see_the_stop_and_a_failing_one_does_not_end_the_run():
    ends, hooks = [], Hooks()
    hooks.at_turn_end("broken", lambda event: 1 / 0)
    hooks.at_turn_end("count", lambda event: ends.append(event["stop"]))
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), hooks.wrap(miniagent.default_tools()),
                            on_step=hooks.on_step)
    result = agent.run("What is (1024 + 768) * 2?")
    assert result.stop == "end_turn" and "3584" in result.text
    assert ends == ["end_turn"] and hooks.failures == ["broken raised ZeroDivisionError: division by zero"]


def test_until_done_sends_the_agent_back_and_stops_within_its_rounds():
    checks, hooks = [], Hooks()

    def tests_pass(result):
        checks.append(result.text)
        return "the tests still fail: run them again" if len(checks) < 3 else None

    hooks.until_done("tests_pass", tests_pass)
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), [])
    hooks.run(agent, "Hello!")
    assert len(checks) == 3  # two rounds sent back, the third let it stop
    asked = [m["content"] for m in agent.history if m["role"] == "user"]
    again = "[tests_pass] the tests still fail: run them again"
    assert asked == ["Hello!", again, again]
    never_done = Hooks()
    never_done.until_done("never", lambda result: "again")
    agent.reset()
    never_done.run(agent, "Hello!", max_rounds=2)
    assert sum(m["role"] == "user" for m in agent.history) == 3  # the question and two rounds, no more
