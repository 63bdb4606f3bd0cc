"""Checks for notebook 05 · The full agent."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from miniagent.exercises._core import (_check_callable, _clip, _exercise, _graded_live, _kind, _mock_client, _run, _say, _show,
                                       not_yet, wrong_kind)
from miniagent.exercises.n02 import _as_tool  # the same rules for "is this a tool?" as in 02


@_exercise("05", 1)
def check_05_1(population_tool: Any, client: Any) -> None:
    """An agent on `client` with `default_tools()` plus the learner's tool calls it for the population
    of Tokyo, and the tool, run as the model asked, returns a number."""
    from miniagent.agent import Agent
    from miniagent.builtin_tools import default_tools

    if population_tool is None:
        not_yet("population_tool is still None: write the tool and keep it here",
                zh="population_tool 还是 None：写好工具，存在这里")
    learner = _as_tool(population_tool, "population_tool")
    tools = default_tools()
    if learner.name in tools:
        not_yet(f"default_tools() already has a tool named {learner.name!r}: give yours its own name",
                zh=f"default_tools() 里已经有一个叫 {learner.name!r} 的工具：给你的工具另起一个名字")
    tools.register(learner)
    question = "What is the population of Tokyo?"
    required = [str(k) for k in (learner.input_schema.get("required") or [])] \
        if isinstance(learner.input_schema, dict) else []

    def problem(on: Any) -> tuple[str, str, str] | None:
        """What went wrong with an agent on `on` (English, Chinese, and advice in both), or None."""
        agent = Agent(on, tools)
        _run(agent.run, question, name=_say("the agent", "Agent"), case=f"asked {question!r}",
             case_zh=f"问它 {question!r} 时")
        called = [e["name"] for e in agent.trace.of_type("tool_call")]
        if learner.name not in called:
            seen = f"called {', '.join(called)}" if called else "called no tool"
            seen_zh = f"调用了 {', '.join(called)}" if called else "没有调用任何工具"
            advice = _say(": do your tool's name and description say what it returns?",
                          "：你的工具的名字和描述说清楚它返回什么了吗？")
            if len(required) > 1:  # the question gives a city and nothing else: no model can fill the rest
                advice = _say(f": the question names only a city, but your tool requires {', '.join(required)}; "
                              "give the other parameters a default",
                              f"：问题里只有一个城市，你的工具却要求 {', '.join(required)}；给其他参数一个默认值")
            return (f"asked {question!r}, the agent {seen}", f"问 {question!r} 时，Agent {seen_zh}", advice)
        results = [e for e in agent.trace.of_type("tool_result") if e["name"] == learner.name]
        content = str(results[-1].get("content", "")) if results else ""
        if not results or results[-1].get("is_error"):
            return (f"your tool failed when the agent called it: {_clip(content, 120)}",
                    f"你的工具在 Agent 调用它时出错了：{_clip(content, 120)}", "")
        if not _a_population(content):
            return (f"your tool answered {_show(content, 50)} for Tokyo", f"你的工具对 Tokyo 的回答是 {_show(content, 50)}",
                    _say(": return the population, a number", "：应该返回人口，一个数字"))
        return None

    found = _graded_live(problem, client, (lambda f: f[0], lambda f: f[1]))
    if found:
        not_yet(found[0] + found[2], zh=found[1] + found[2])


_MANY = re.compile(r"\d\s*(million|billion|thousand|mio|mn|bn|[mkb]\b|万|亿|千)", re.I)


def _a_population(text: str) -> bool:
    """Whether `text` gives a number of people a city could have: 10,000 or more ("37,400,068",
    "37400068 people"), or a number with its scale in words ("37.4 million", "3740万"). A year, a
    status code or a count of known cities is not one."""
    numbers = re.findall(r"(?<!\d)\d{1,3}(?:[.,_ \u00a0\u2009\u202f]\d{3})+(?!\d)|\d+", text)  # 37,400,068 or 37400068
    if any(int(re.sub(r"\D", "", n)) >= 10_000 for n in numbers):
        return True
    return bool(_MANY.search(text))


def _trace(events: list[dict]) -> Any:
    """A trace of `events`, stamped by a clock that ticks 0.1 s per event (elapsed is not seconds)."""
    from datetime import datetime, timezone

    from miniagent.events import Trace

    ticks = iter(range(10_000))
    trace = Trace(clock=lambda: next(ticks) / 10, now=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
    for event in events:
        trace.record(event)
    return trace


def _round(iteration: int, calls: list[tuple[str, str, float]], finish_order: list[int] | None = None) -> list[dict]:
    """One round's events as an agent records them: a request, the response (its tool_use blocks in its
    content), the usage, each tool_call, then each tool_result in finishing order."""
    asked = [{"type": "tool_use", "id": id, "name": name, "input": {}} for id, name, _ in calls]
    usage = {"input_tokens": 300 + 40 * iteration, "output_tokens": 20 * len(calls)}
    events = [{"type": "request", "iteration": iteration, "messages": 2 * iteration - 1, "sent": 2 * iteration - 1},
              {"type": "response", "iteration": iteration, "stop_reason": "tool_use", "content": asked, "usage": usage},
              {"type": "usage", "iteration": iteration, **usage}]
    events += [{"type": "tool_call", "iteration": iteration, "id": id, "name": name, "input": {}}
               for id, name, _ in calls]
    for i in finish_order or range(len(calls)):
        id, name, seconds = calls[i]
        events.append({"type": "tool_result", "iteration": iteration, "id": id, "name": name,
                       "is_error": False, "content": "ok", "seconds": seconds})
    return events


def _visible_trace() -> Any:
    """Two calls in round 1 (fast 0.1 s, slow 0.9 s), one in round 2 (fast 0.05 s), then the answer:
    every event a real run records, so that any way of reading a real trace reads this one."""
    return _trace([{"type": "question", "text": "Fast and slow?"},
                   *_round(1, [("a", "fast", 0.1), ("b", "slow", 0.9)]), *_round(2, [("c", "fast", 0.05)]),
                   *_answer(3)])


def _answer(iteration: int) -> list[dict]:
    """The last round's events: the request, the model's answer and the stop."""
    usage = {"input_tokens": 300 + 40 * iteration, "output_tokens": 30}
    return [{"type": "request", "iteration": iteration, "messages": 2 * iteration - 1, "sent": 2 * iteration - 1},
            {"type": "response", "iteration": iteration, "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "Done."}], "usage": usage},
            {"type": "usage", "iteration": iteration, **usage},
            {"type": "stop", "stop": "end_turn", "reason": "the model finished its answer"}]


def _demo_trace() -> Any:
    from miniagent.agent import Agent

    agent = Agent(_mock_client())
    agent.run("现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。")
    return agent.trace


_ZH = {"a trace with 2 calls in round 1 and 1 in round 2": "第 1 轮 2 个调用、第 2 轮 1 个调用的 trace",
       "a run of the demo question": "演示问题的一次运行",
       "an empty trace": "空 trace",
       "a trace with 1 call in round 1 and 3 in round 2": "第 1 轮 1 个调用、第 2 轮 3 个调用的 trace",
       "a trace where 'fast' took 0.1 s and 'slow' 0.9 s": "一个 'fast' 用时 0.1 s、'slow' 用时 0.9 s 的 trace",
       "a trace whose slowest result arrives first": "最慢的结果最先到达的 trace",
       "a trace whose slowest call is neither the first nor the last": "最慢的调用既不是第一个也不是最后一个的 trace",
       "a trace where one tool, called twice, took longer in all than the slowest single call":
           "某个工具调用了两次、合计用时超过最慢那一次调用的 trace"}
"""The Chinese of the cases' descriptions in check_05_2 and check_05_3, for the hints in the Chinese edition."""


def _on(what: str) -> str:
    """'在……上' around a case's Chinese description, with a space after a final Latin word ("trace 上")."""
    zh = _ZH[what]
    return f"在{zh}{' ' if zh[-1].isascii() else ''}上"


@_exercise("05", 2)
def check_05_2(calls_per_round: Any) -> None:
    """`calls_per_round(trace)` on the notebook's example, a real agent run, an empty trace and a
    trace with other events in between."""
    _check_callable(calls_per_round, "calls_per_round", "calls_per_round(trace) returns {round: calls}",
                    zh="calls_per_round(trace) 返回 {round: calls}，即每一轮的调用次数")
    question = {"type": "question", "text": "Weather, time and a sum?"}
    cases = [
        ("a trace with 2 calls in round 1 and 1 in round 2", _visible_trace(), {1: 2, 2: 1}),
        ("a run of the demo question", _demo_trace(), {1: 4}),
        ("an empty trace", _trace([]), {}),
        ("a trace with 1 call in round 1 and 3 in round 2",
         _trace([question, *_round(1, [("t1", "get_current_time", 0.2)]),
                 *_round(2, [("w1", "get_weather", 0.3), ("w2", "get_weather", 0.1), ("c1", "calculate", 0.0)],
                         [1, 2, 0]), *_answer(3)]),
         {1: 1, 2: 3}),
    ]
    for what, trace, want in cases:
        got = _run(calls_per_round, trace, name="calls_per_round", case=f"on {what}", case_zh=_on(what))
        if got is None:
            not_yet(f"calls_per_round returned None on {what}: return a dict {{round: number of tool calls}}",
                    zh=f"calls_per_round {_on(what)}返回了 None：应该返回一个 dict {{round: 工具调用次数}}")
        if not isinstance(got, Mapping):
            wrong_kind(f"calls_per_round returned {_kind(got)}; return a dict {{round: number of tool calls}}",
                       zh=f"calls_per_round 返回的是{_kind(got)}；应该返回一个 dict {{round: 工具调用次数}}")
        if dict(got) != want:
            not_yet(f"on {what} the answer is {want}, yours was {_show(dict(got), 50)}: count the tool_call "
                    "events, grouped by their 'iteration'",
                    zh=f"{_on(what)}，答案是 {want}，你的是 {_show(dict(got), 50)}："
                       "按 'iteration' 分组，数一数 tool_call 事件")


@_exercise("05", 3)
def check_05_3(slowest_tool: Any) -> None:
    """`slowest_tool(trace)` by `seconds`, on traces where the last result to arrive, the last call
    made and the slowest differ."""
    _check_callable(slowest_tool, "slowest_tool", "slowest_tool(trace) returns a tool's name",
                    zh="slowest_tool(trace) 返回一个工具的名字")
    cases = [
        ("a trace where 'fast' took 0.1 s and 'slow' 0.9 s", _visible_trace(), "slow"),
        ("a trace whose slowest result arrives first",
         _trace([*_round(1, [("w", "get_weather", 0.8), ("c", "calculate", 0.01)], [0, 1]),
                 *_round(2, [("t", "get_current_time", 0.3)])]), "get_weather"),
        ("a trace whose slowest call is neither the first nor the last",
         _trace([*_round(1, [("a", "search_web", 0.2), ("b", "fetch_page", 1.5), ("c", "calculate", 0.1)],
                         [2, 0, 1]),
                 *_round(2, [("d", "search_web", 0.4)])]), "fetch_page"),
        ("a trace where one tool, called twice, took longer in all than the slowest single call",
         _trace([*_round(1, [("p", "get_weather", 0.5), ("r", "get_weather", 0.5), ("c", "calculate", 0.1)]),
                 *_round(2, [("s", "search_web", 0.8)]), *_answer(3)]), "search_web"),
    ]
    for what, trace, want in cases:
        got = _run(slowest_tool, trace, name="slowest_tool", case=f"on {what}", case_zh=_on(what))
        if got is None:
            not_yet(f"slowest_tool returned None on {what}: return the tool's name",
                    zh=f"slowest_tool {_on(what)}返回了 None：应该返回工具的名字")
        if not isinstance(got, str):
            wrong_kind(f"slowest_tool returned {_kind(got)}; return the tool's name, a string such as 'get_weather'",
                       zh=f"slowest_tool 返回的是{_kind(got)}；应该返回工具的名字，一个像 'get_weather' 这样的字符串")
        if got != want:
            not_yet(f"on {what} the slowest tool is {want!r}, yours said {_show(got, 40)}: compare the "
                    "'seconds' of the tool_result events, one result at a time",
                    zh=f"{_on(what)}，最慢的工具是 {want!r}，你的答案是 {_show(got, 40)}："
                       "逐个比较各个 tool_result 事件的 'seconds'")
