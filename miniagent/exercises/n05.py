"""Checks for notebook 05 · The full agent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from miniagent.exercises._core import (_check_callable, _clip, _exercise, _kind, _mock_client, _run, _show,
                                       not_yet, wrong_kind)
from miniagent.exercises.n02 import _as_tool  # the same rules for "is this a tool?" as in 02


@_exercise("05", 1)
def check_05_1(population_tool: Any, client: Any) -> None:
    """An agent on `client` with `default_tools()` plus the learner's tool calls it for the population
    of Tokyo, and the tool, run as the model asked, returns a number."""
    from miniagent.agent import Agent
    from miniagent.builtin_tools import default_tools

    if population_tool is None:
        not_yet("population_tool is still None: write the tool and keep it here")
    learner = _as_tool(population_tool, "population_tool")
    tools = default_tools()
    if learner.name in tools:
        not_yet(f"default_tools() already has a tool named {learner.name!r}: give yours its own name")
    tools.register(learner)
    agent = Agent(client, tools)
    question = "What is the population of Tokyo?"
    _run(agent.run, question, name="the agent", case=f"asked {question!r}")
    called = [e["name"] for e in agent.trace.of_type("tool_call")]
    if learner.name not in called:
        seen = f"called {', '.join(called)}" if called else "called no tool"
        not_yet(f"asked {question!r}, the agent {seen}: do your tool's name and description say what it returns?")
    results = [e for e in agent.trace.of_type("tool_result") if e["name"] == learner.name]
    content = str(results[-1].get("content", "")) if results else ""
    if not results or results[-1].get("is_error"):
        not_yet(f"your tool failed when the agent called it: {_clip(content, 120)}")
    if not any(ch.isdigit() for ch in content):
        not_yet(f"your tool answered {_show(content, 50)} for Tokyo: return the population, a number")


def _trace(events: list[dict]) -> Any:
    """A trace of `events`, stamped by a clock that ticks 0.1 s per event (elapsed is not seconds)."""
    from datetime import datetime, timezone

    from miniagent.trace import Trace

    ticks = iter(range(10_000))
    trace = Trace(clock=lambda: next(ticks) / 10, now=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
    for event in events:
        trace.record(event)
    return trace


def _round(iteration: int, calls: list[tuple[str, str, float]], finish_order: list[int] | None = None) -> list[dict]:
    """One round's events: a request, a response, each tool_call, then each tool_result in finishing order."""
    events = [{"type": "request", "iteration": iteration, "messages": 1, "sent": 1},
              {"type": "response", "iteration": iteration, "stop_reason": "tool_use", "content": [], "usage": {}}]
    events += [{"type": "tool_call", "iteration": iteration, "id": id, "name": name, "input": {}}
               for id, name, _ in calls]
    for i in finish_order or range(len(calls)):
        id, name, seconds = calls[i]
        events.append({"type": "tool_result", "iteration": iteration, "id": id, "name": name,
                       "is_error": False, "content": "ok", "seconds": seconds})
    return events


def _visible_trace() -> Any:
    """The notebook's example: two calls in round 1 (fast 0.1 s, slow 0.9 s), one in round 2."""
    return _trace([{"type": "tool_call", "iteration": 1, "id": "a", "name": "fast"},
                   {"type": "tool_call", "iteration": 1, "id": "b", "name": "slow"},
                   {"type": "tool_result", "iteration": 1, "id": "a", "name": "fast", "seconds": 0.1},
                   {"type": "tool_result", "iteration": 1, "id": "b", "name": "slow", "seconds": 0.9},
                   {"type": "tool_call", "iteration": 2, "id": "c", "name": "fast"}])


def _demo_trace() -> Any:
    from miniagent.agent import Agent

    agent = Agent(_mock_client())
    agent.run("现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。")
    return agent.trace


@_exercise("05", 2)
def check_05_2(calls_per_round: Any) -> None:
    """`calls_per_round(trace)` on the notebook's example, a real agent run, an empty trace and a
    trace with other events in between."""
    _check_callable(calls_per_round, "calls_per_round", "calls_per_round(trace) returns {round: calls}")
    question = {"type": "question", "text": "Weather, time and a sum?"}
    cases = [
        ("a trace with 2 calls in round 1 and 1 in round 2", _visible_trace(), {1: 2, 2: 1}),
        ("a run of the demo question", _demo_trace(), {1: 4}),
        ("an empty trace", _trace([]), {}),
        ("a trace with 1 call in round 1 and 3 in round 2",
         _trace([question, *_round(1, [("t1", "get_current_time", 0.2)]),
                 *_round(2, [("w1", "get_weather", 0.3), ("w2", "get_weather", 0.1), ("c1", "calculate", 0.0)],
                         [1, 2, 0])]),
         {1: 1, 2: 3}),
    ]
    for what, trace, want in cases:
        got = _run(calls_per_round, trace, name="calls_per_round", case=f"on {what}")
        if got is None:
            not_yet(f"calls_per_round returned None on {what}: return a dict {{round: number of tool calls}}")
        if not isinstance(got, Mapping):
            wrong_kind(f"calls_per_round returned {_kind(got)}; return a dict {{round: number of tool calls}}")
        if dict(got) != want:
            not_yet(f"on {what} the answer is {want}, yours was {_show(dict(got), 50)}: count the tool_call "
                    "events, grouped by their 'iteration'")


@_exercise("05", 3)
def check_05_3(slowest_tool: Any) -> None:
    """`slowest_tool(trace)` by `seconds`, on traces where the last result to arrive, the last call
    made and the slowest differ."""
    _check_callable(slowest_tool, "slowest_tool", "slowest_tool(trace) returns a tool's name")
    cases = [
        ("a trace where 'fast' took 0.1 s and 'slow' 0.9 s", _visible_trace(), "slow"),
        ("a trace whose slowest result arrives first",
         _trace([*_round(1, [("w", "get_weather", 0.8), ("c", "calculate", 0.01)], [0, 1]),
                 *_round(2, [("t", "get_current_time", 0.3)])]), "get_weather"),
        ("a trace whose slowest call is neither the first nor the last",
         _trace([*_round(1, [("a", "search_web", 0.2), ("b", "fetch_page", 1.5), ("c", "calculate", 0.1)],
                         [2, 0, 1]),
                 *_round(2, [("d", "search_web", 0.4)])]), "fetch_page"),
    ]
    for what, trace, want in cases:
        got = _run(slowest_tool, trace, name="slowest_tool", case=f"on {what}")
        if got is None:
            not_yet(f"slowest_tool returned None on {what}: return the tool's name")
        if not isinstance(got, str):
            wrong_kind(f"slowest_tool returned {_kind(got)}; return the tool's name, a string such as 'get_weather'")
        if got != want:
            not_yet(f"on {what} the slowest tool is {want!r}, yours said {_show(got, 40)}: compare the "
                    "'seconds' of the tool_result events")
