"""Checks for notebook 11 · Tracing.

Each check runs the learner's function on tracers it builds itself: synthetic spans, made
through the public `Tracer.start`/`Tracer.finish` with a clock the check controls, so the
times and the nesting of every hidden case are known exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from miniagent.exercises._core import _check_callable, _exercise, _kind, _run, _show, not_yet, wrong_kind

IN, OUT = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"
EPOCH_NS = 1_764_500_000_000_000_000  # the wall clock of every hidden tracer (any fixed instant does)


# --- hidden tracers --------------------------------------------------------------------------
# A node is (kind, name, start_ms, end_ms, attributes, children); `agent`, `model` and `tool` make them.


def agent(name: str, start: float, end: float, *children: tuple) -> tuple:
    return ("agent", name, start, end, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name},
            list(children))


def model(start: float, end: float, tokens_in: int | None, tokens_out: int | None = None) -> tuple:
    """A model call; tokens_in=None is a failed call, whose span has no usage at all."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-sonnet-5-5"}
    if tokens_in is not None:
        attributes.update({IN: tokens_in, OUT: tokens_out or 0, "gen_ai.response.finish_reasons": ["end_turn"]})
    return ("model", "claude-sonnet-5-5", start, end, attributes, [])


def tool(name: str, start: float, end: float, *children: tuple) -> tuple:
    return ("tool", name, start, end, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
            list(children))


def build(*roots: tuple) -> Any:
    """A Tracer holding `roots` and everything inside them, with exactly the given times (milliseconds)."""
    from miniagent.tracing import Tracer

    now = [0.0]
    tracer = Tracer(seed=11, clock=lambda: now[0], wall_ns=lambda: EPOCH_NS)

    def add(node: tuple, parent: Any) -> tuple[int, int]:
        kind, name, start, end, attributes, children = node
        now[0] = start / 1000
        prefix = {"agent": "invoke_agent", "model": "chat", "tool": "execute_tool"}[kind]
        span = tracer.start(f"{prefix} {name}", kind, attributes, parent)
        spent = [0, 0]
        for child in children:
            for i, n in enumerate(add(child, span)):
                spent[i] += n
        if kind == "model":
            spent = [attributes.get(IN, 0), attributes.get(OUT, 0)]
        now[0] = end / 1000
        if kind == "agent":  # as the package does: an agent's tokens include its sub-agents'
            tracer.finish(span, **{IN: spent[0], OUT: spent[1], "miniagent.stop": "end_turn"})
        elif kind == "model" and IN not in attributes:
            tracer.finish(span, "RateLimitError: 429 rate_limit_error")
        else:
            tracer.finish(span)
        return spent[0], spent[1]

    for root in roots:
        add(root, None)
    return tracer


# --- exercise 1: tokens by agent -------------------------------------------------------------


def _tokens_by_agent(tracer: Any, nested: bool = False, output: bool = True) -> dict[str, int]:
    """The reference (nested=True: sub-agents' calls counted too; output=False: input tokens only)."""
    totals: dict[str, int] = {}

    def visit(span: Any, owners: list[str]) -> None:
        if span.kind == "agent":
            owners = [*owners, span.attributes["gen_ai.agent.name"]]
            totals.setdefault(owners[-1], 0)
        elif span.kind == "model" and owners:
            spent = span.attributes.get(IN, 0) + (span.attributes.get(OUT, 0) if output else 0)
            for owner in (set(owners) if nested else {owners[-1]}):
                totals[owner] += spent
        for child in tracer.children(span):
            visit(child, owners)

    for root in tracer.children(None):
        visit(root, [])
    return totals


def _last_run_only(tracer: Any) -> dict[str, int]:
    totals: dict[str, int] = {}
    for span in tracer.of_kind("agent"):
        own = [c for c in tracer.children(span) if c.kind == "model"]
        totals[span.attributes["gen_ai.agent.name"]] = sum(c.attributes.get(IN, 0) + c.attributes.get(OUT, 0)
                                                           for c in own)
    return totals


def _last_agent_seen(tracer: Any) -> dict[str, int]:
    """Each model call charged to the agent span met last in the tree's order, not to its nearest ancestor."""
    totals: dict[str, int] = {}
    owner = None
    for _, span in tracer.walk():
        if span.kind == "agent":
            owner = span.attributes["gen_ai.agent.name"]
            totals.setdefault(owner, 0)
        elif span.kind == "model" and owner is not None:
            totals[owner] += span.attributes.get(IN, 0) + span.attributes.get(OUT, 0)
    return totals


def _agent_attributes(tracer: Any) -> dict[str, int]:
    totals: dict[str, int] = {}
    for span in tracer.of_kind("agent"):
        name = span.attributes["gen_ai.agent.name"]
        totals[name] = totals.get(name, 0) + span.attributes.get(IN, 0) + span.attributes.get(OUT, 0)
    return totals


TOKEN_CASES = [
    ("one agent, two model calls and a tool", lambda: build(
        agent("assistant", 0, 60, model(1, 20, 120, 30), tool("get_weather", 21, 30), model(31, 59, 200, 45)))),
    ("an orchestrator and two specialists working in parallel", lambda: build(
        agent("orchestrator", 0, 100, model(1, 20, 300, 60),
              tool("weather_expert", 21, 80, agent("weather_expert", 22, 79, model(23, 40, 110, 40),
                                                   tool("get_weather", 41, 45), model(46, 78, 190, 20))),
              tool("math_expert", 21, 70, agent("math_expert", 23, 69, model(24, 50, 100, 25))),
              model(81, 99, 420, 50)))),
    ("the same specialist asked twice in one round", lambda: build(
        agent("orchestrator", 0, 100, model(1, 20, 250, 50),
              tool("translator", 21, 60, agent("translator", 22, 59, model(23, 58, 80, 30))),
              tool("translator", 21, 65, agent("translator", 23, 64, model(24, 63, 90, 35))),
              model(66, 99, 330, 40)))),
    ("three levels: an agent asks an agent that asks an agent", lambda: build(
        agent("planner", 0, 200, model(1, 10, 500, 80),
              tool("researcher", 11, 150, agent("researcher", 12, 149, model(13, 30, 220, 30),
                                                tool("fact_checker", 31, 120, agent("fact_checker", 32, 119,
                                                                                    model(33, 118, 150, 20))),
                                                model(121, 148, 300, 40))),
              model(151, 199, 650, 90)))),
    ("two separate runs of one agent in the same tracer", lambda: build(
        agent("assistant", 0, 30, model(1, 29, 100, 10)), agent("assistant", 40, 90, model(41, 89, 140, 12)))),
    ("a specialist whose model call failed (its span has no usage)", lambda: build(
        agent("orchestrator", 0, 80, model(1, 20, 240, 50),
              tool("weather_expert", 21, 40, agent("weather_expert", 22, 39, model(23, 38, None))),
              model(41, 79, 310, 30)))),
]
TOKEN_CASES_ZH = {  # the Chinese of each case's description
    "one agent, two model calls and a tool": "一个 Agent，两次模型调用和一次工具调用",
    "an orchestrator and two specialists working in parallel": "一个编排者和两个并行工作的专家 Agent",
    "the same specialist asked twice in one round": "一轮里两次询问同一个专家 Agent",
    "three levels: an agent asks an agent that asks an agent": "三层：一个 Agent 问另一个 Agent，后者再问第三个",
    "two separate runs of one agent in the same tracer": "同一个 tracer 里，同一个 Agent 的两次独立运行",
    "a specialist whose model call failed (its span has no usage)": "专家 Agent 的模型调用失败了（它的 span 没有 usage）",
}


def _positive(totals: Mapping[str, Any]) -> dict[str, Any]:
    """Agents with 0 tokens may be listed or left out: both are right."""
    return {name: n for name, n in totals.items() if n != 0}


@_exercise("11", 1)
def check_11_1(tokens_by_agent: Any) -> None:
    """`tokens_by_agent(tracer)`: {agent name: input + output tokens of the model calls it made itself}."""
    _check_callable(tokens_by_agent, "tokens_by_agent", "tokens_by_agent(tracer) returns {agent name: tokens}",
                    zh="tokens_by_agent(tracer) 返回 {Agent 名字: token 数}")
    for what, make in TOKEN_CASES:
        what_zh = TOKEN_CASES_ZH.get(what, what)
        got = _run(tokens_by_agent, make(), name="tokens_by_agent", case=f"on {what}", case_zh=f"用例“{what_zh}”")
        if got is None:
            not_yet(f"tokens_by_agent returned None on {what}: return a dict {{agent name: tokens}}",
                    zh=f"在用例“{what_zh}”中，tokens_by_agent 返回了 None：要返回一个 dict {{Agent 名字: token 数}}")
        if not isinstance(got, Mapping):
            wrong_kind(f"tokens_by_agent returned {_kind(got)}; return a dict {{agent name: tokens}}",
                       zh=f"tokens_by_agent 返回的是{_kind(got)}；要返回一个 dict {{Agent 名字: token 数}}")
        tracer = make()
        want = _tokens_by_agent(tracer)
        if _positive(got) == _positive(want):
            continue
        names = {str(name) for name in got}
        if names and all(name.startswith("invoke_agent ") for name in names):
            not_yet("key the totals by the agent's name (the span's gen_ai.agent.name attribute), "
                    "not by the span's name 'invoke_agent …'",
                    zh="总数要以 Agent 的名字（span 的 gen_ai.agent.name 属性）为键，"
                       "而不是 span 的名字 'invoke_agent …'")
        if _positive(got) in (_positive(_tokens_by_agent(tracer, nested=True)), _positive(_agent_attributes(tracer))):
            not_yet(f"on {what}, your totals count the sub-agents' tokens too ({_show(dict(got))}): an agent span's "
                    "own usage includes them; sum only the model calls whose nearest agent is this one",
                    zh=f"在用例“{what_zh}”中，你的总数把子 Agent 的 token 也算进去了（{_show(dict(got))}）："
                       "Agent span 自己的 usage 已经包含了它们；只累加直属于它的模型调用（离调用最近的 Agent 就是它）")
        if _positive(got) == _positive(_tokens_by_agent(tracer, output=False)):
            not_yet(f"on {what}, you counted input tokens only: add gen_ai.usage.output_tokens too",
                    zh=f"在用例“{what_zh}”中，你只算了输入 token：还要加上 gen_ai.usage.output_tokens")
        if _positive(got) == _positive(_last_agent_seen(tracer)):
            not_yet(f"on {what}, a call made after a sub-agent finished went to that sub-agent ({_show(dict(got))}): "
                    "the owner of a model call is the nearest agent among its ancestors (follow parent_id up), "
                    "not the last agent span you met",
                    zh=f"在用例“{what_zh}”中，子 Agent 结束之后的那次调用被算到了子 Agent 头上（{_show(dict(got))}）："
                       "模型调用属于它祖先里离它最近的那个 Agent（顺着 parent_id 往上找），"
                       "而不是你最后遇到的那个 Agent span")
        if _positive(got) == _positive(_last_run_only(tracer)):
            not_yet(f"on {what}, an agent that ran more than once kept only one run's tokens: add them up",
                    zh=f"在用例“{what_zh}”中，运行了不止一次的 Agent 只留下了一次运行的 token：要把每次运行都加起来")
        not_yet(f"on {what}, expected {_show(want)}, got {_show(dict(got))}",
                zh=f"在用例“{what_zh}”中，期望 {_show(want)}，得到 {_show(dict(got))}")


# --- exercise 2: self time -------------------------------------------------------------------


SELF_TIME_CASES = [  # (what, tree, the index of the span asked about in tracer.spans)
    ("a model call (no children)", lambda: build(agent("a", 0, 50, model(2, 40, 10, 5))), 1),
    ("an agent whose calls ran one after another", lambda: build(
        agent("a", 0, 100, model(5, 30, 10, 5), tool("t", 32, 50), model(55, 95, 20, 5))), 0),
    ("a tool that holds a sub-agent", lambda: build(
        agent("a", 0, 100, tool("expert", 10, 90, agent("expert", 12, 85, model(14, 60, 1, 1), model(62, 84, 1, 1))))), 1),
    ("an agent with two tools in parallel", lambda: build(
        agent("a", 0, 100, model(2, 20, 10, 5), tool("slow", 22, 70), tool("fast", 23, 40), model(72, 98, 20, 5))), 0),
    ("a chain of overlapping tools", lambda: build(
        agent("a", 0, 200, tool("t1", 10, 60), tool("t2", 50, 110), tool("t3", 100, 150), model(160, 190, 1, 1))), 0),
    ("an agent with one long tool and a short one inside its time", lambda: build(
        agent("a", 0, 100, tool("long", 5, 90), tool("short", 10, 20))), 0),
    ("an orchestrator whose specialists ran in parallel", lambda: build(
        agent("o", 0, 120, model(1, 20, 1, 1),
              tool("x", 22, 100, agent("x", 24, 98, model(25, 60, 1, 1), model(61, 97, 1, 1))),
              tool("y", 22, 80, agent("y", 25, 78, model(26, 77, 1, 1))), model(101, 118, 1, 1))), 0),
]
SELF_TIME_CASES_ZH = {  # the Chinese of each case's description
    "a model call (no children)": "一次模型调用（没有子 span）",
    "an agent whose calls ran one after another": "一个 Agent，它的调用一个接一个地运行",
    "a tool that holds a sub-agent": "一个内含子 Agent 的工具",
    "an agent with two tools in parallel": "一个 Agent，两个工具并行运行",
    "a chain of overlapping tools": "一串依次重叠的工具",
    "an agent with one long tool and a short one inside its time": "一个 Agent，有一个长工具，还有一个落在它时间段内的短工具",
    "an orchestrator whose specialists ran in parallel": "一个编排者，它的专家 Agent 并行运行",
}


def _self_time(tracer: Any, span: Any) -> float:
    """The reference: the span's time not covered by any of its direct children (overlaps counted once)."""
    covered, reach = 0.0, span.start
    for child in sorted(tracer.children(span), key=lambda s: s.start):
        start, end = max(child.start, reach), min(child.end, span.end)
        if end > start:
            covered += end - start
            reach = end
    return span.seconds - covered


def _all_descendants(tracer: Any, span: Any) -> float:
    inside = [s for _, s in tracer.walk() if s is not span and _inside(tracer, s, span)]
    return span.seconds - sum(s.seconds for s in inside)


def _inside(tracer: Any, span: Any, ancestor: Any) -> bool:
    by_id = {s.span_id: s for s in tracer.spans}
    while span.parent_id is not None:
        span = by_id.get(span.parent_id)
        if span is None:
            return False
        if span is ancestor:
            return True
    return False


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


@_exercise("11", 2)
def check_11_2(self_time: Any) -> None:
    """`self_time(tracer, span)`: seconds of `span` not covered by any of its direct children."""
    _check_callable(self_time, "self_time", "self_time(tracer, span) returns seconds, a number",
                    zh="self_time(tracer, span) 返回秒数，一个数字")
    for what, make, index in SELF_TIME_CASES:
        what_zh = SELF_TIME_CASES_ZH.get(what, what)
        tracer = make()
        span = tracer.spans[index]
        got = _run(self_time, tracer, span, name="self_time", case=f"on {what}", case_zh=f"用例“{what_zh}”")
        if got is None:
            not_yet(f"self_time returned None on {what}: return the seconds, a number",
                    zh=f"在用例“{what_zh}”中，self_time 返回了 None：要返回秒数，一个数字")
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            wrong_kind(f"self_time returned {_kind(got)}; return a number of seconds",
                       zh=f"self_time 返回的是{_kind(got)}；要返回一个表示秒数的数字")
        reference = make()
        want = _self_time(reference, reference.spans[index])
        if _close(got, want):
            continue
        children = reference.children(reference.spans[index])
        summed = reference.spans[index].seconds - sum(c.seconds for c in children)
        if _close(got, want * 1000):
            not_yet(f"on {what}, you answered {got:g}: that is milliseconds; return seconds, as span.seconds is",
                    zh=f"在用例“{what_zh}”中，你的答案是 {got:g}：这是毫秒；要返回秒，和 span.seconds 一样")
        if children and _close(got, reference.spans[index].seconds):
            not_yet(f"on {what}, you returned the span's whole duration: subtract the time its children cover",
                    zh=f"在用例“{what_zh}”中，你返回的是 span 的整个时长：要减去它的子 span 覆盖的时间")
        if summed < 0 and _close(got, 0):
            not_yet(f"on {what}, expected {want:.3f} s, got 0: the children's seconds add up to more than the span's, "
                    "because they overlap; clamping at 0 hides that, merge their intervals instead",
                    zh=f"在用例“{what_zh}”中，期望 {want:.3f} s，得到 0：子 span 的秒数加起来比这个 span 还长，"
                       "因为它们有重叠；把结果截到 0 只是把问题藏起来，要先合并它们的区间")
        if _close(got, summed):
            not_yet(f"on {what}, expected {want:.3f} s, got {got:.3f} s: children that overlap in time (a parallel "
                    "round) cover that time once; merge their intervals before you subtract",
                    zh=f"在用例“{what_zh}”中，期望 {want:.3f} s，得到 {got:.3f} s："
                       "子 span 在时间上重叠时（并行的一轮），重叠部分只算一次；先合并它们的区间，再做减法")
        if _close(got, _all_descendants(reference, reference.spans[index])):
            not_yet(f"on {what}, you subtracted the grandchildren too: their time already lies inside their "
                    "parents'; use the direct children only (tracer.children(span))",
                    zh=f"在用例“{what_zh}”中，你把孙 span 也减掉了：它们的时间本来就落在各自父 span 的时间里；"
                       "只用直接子 span（tracer.children(span)）")
        not_yet(f"on {what}, expected {want:.3f} s, got {got:.3f} s: the span's seconds minus the time covered "
                "by at least one of its children",
                zh=f"在用例“{what_zh}”中，期望 {want:.3f} s，得到 {got:.3f} s："
                   "用 span 的秒数减去至少被一个子 span 覆盖的时间")


# --- exercise 3: attributes as OTLP/JSON -------------------------------------------------------


ATTRIBUTE_CASES = [
    ("a model span's attributes", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-sonnet-5-5",
                                   "gen_ai.usage.input_tokens": 270, "gen_ai.usage.output_tokens": 69,
                                   "gen_ai.response.finish_reasons": ["tool_use"]}),
    ("a server address and port", {"server.address": "api.anthropic.com", "server.port": 443}),
    ("a flag (a bool)", {"miniagent.stream": True, "miniagent.retried": False}),
    ("a temperature (a float)", {"gen_ai.request.temperature": 0.7, "gen_ai.request.top_p": 1.0}),
    ("lists of numbers", {"miniagent.tool.sizes": [17, 40, 38], "miniagent.scores": [0.5, 0.25]}),
    ("a list of flags", {"miniagent.flags": [True, False]}),
    ("a big token count", {"gen_ai.usage.input_tokens": 12_345_678_901}),
]
ATTRIBUTE_CASES_ZH = {  # the Chinese of each case's description
    "a model span's attributes": "模型 span 的属性",
    "a server address and port": "服务器地址和端口",
    "a flag (a bool)": "标志位（bool）",
    "a temperature (a float)": "temperature 参数（float）",
    "lists of numbers": "数字列表",
    "a list of flags": "标志位列表",
    "a big token count": "很大的 token 数",
}


def _any_value(value: Any) -> dict:
    """The reference: one value as OTLP/JSON's AnyValue (64-bit integers as decimal strings, as proto3 JSON does)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [_any_value(v) for v in value]}}


def _otlp_attributes(attributes: Mapping[str, Any]) -> list[dict]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def _same_value(got: Any, want: dict) -> bool:
    """Whether an AnyValue matches; an intValue may be a JSON number as well as a string (readers accept both)."""
    if not isinstance(got, Mapping) or set(got) != set(want):
        return False
    (kind, expected), = want.items()
    value = got[kind]
    if kind == "intValue":
        return not isinstance(value, bool) and (value == int(expected) if isinstance(value, int)
                                                else isinstance(value, str) and value == expected)
    if kind == "arrayValue":
        items = value.get("values") if isinstance(value, Mapping) else None
        return (isinstance(items, list) and len(items) == len(expected["values"])
                and all(_same_value(g, w) for g, w in zip(items, expected["values"])))
    if kind == "doubleValue":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and value == expected
    return type(value) is type(expected) and value == expected


@_exercise("11", 3)
def check_11_3(otlp_attributes: Any) -> None:
    """`otlp_attributes(attributes)`: the list of {"key", "value": AnyValue} that OTLP/JSON sends."""
    _check_callable(otlp_attributes, "otlp_attributes",
                    'otlp_attributes(attributes) returns a list of {"key": ..., "value": {...}}',
                    zh='otlp_attributes(attributes) 返回由 {"key": ..., "value": {...}} 组成的列表')
    for what, attributes in ATTRIBUTE_CASES:
        what_zh = ATTRIBUTE_CASES_ZH.get(what, what)
        got = _run(otlp_attributes, dict(attributes), name="otlp_attributes", case=f"on {what}",
                   case_zh=f"用例“{what_zh}”")
        if got is None:
            not_yet(f"otlp_attributes returned None on {what}: return the list of key-value dicts",
                    zh=f"在用例“{what_zh}”中，otlp_attributes 返回了 None：要返回由键值 dict 组成的列表")
        if isinstance(got, Mapping):
            wrong_kind('otlp_attributes returned a dict; OTLP sends a list: [{"key": name, "value": {...}}, ...]',
                       zh='otlp_attributes 返回的是一个 dict；OTLP 发送的是列表：[{"key": name, "value": {...}}, ...]')
        if not isinstance(got, (list, tuple)):
            wrong_kind(f"otlp_attributes returned {_kind(got)}; return a list of key-value dicts",
                       zh=f"otlp_attributes 返回的是{_kind(got)}；要返回由键值 dict 组成的列表")
        if not all(isinstance(item, Mapping) and set(item) == {"key", "value"} for item in got):
            not_yet(f'on {what}, each item should be a dict with exactly "key" and "value", got {_show(list(got))}',
                    zh=f'在用例“{what_zh}”中，每一项都应该是只含 "key" 和 "value" 两个键的 dict，'
                       f"你给的是 {_show(list(got))}")
        keys = [item["key"] for item in got]
        if sorted(map(str, keys)) != sorted(attributes):
            not_yet(f"on {what}, the keys should be {sorted(attributes)}, once each; yours were {_show(keys)}",
                    zh=f"在用例“{what_zh}”中，键应该是 {sorted(attributes)}，每个出现一次；你的是 {_show(keys)}")
        by_key = {item["key"]: item["value"] for item in got}
        for key, value in attributes.items():
            want = _any_value(value)
            if _same_value(by_key[key], want):
                continue
            _explain(what, key, value, by_key[key], want)


def _explain(what: str, key: str, value: Any, got: Any, want: dict) -> None:
    shown = f"on {what}, {key}={value!r} became {_show(got)}; expected {_show(want)}"
    shown_zh = (f"在用例“{ATTRIBUTE_CASES_ZH.get(what, what)}”中，{key}={value!r} 变成了 {_show(got)}；"
                f"应该是 {_show(want)}")
    kinds = set(got) if isinstance(got, Mapping) else set()
    if _contains_bool(value) and "intValue" in str(got):
        not_yet(f"{shown}: True is an int in Python (isinstance(True, int)), so test for bool before int",
                zh=f"{shown_zh}：在 Python 里 True 也是 int（isinstance(True, int)），所以要先判断 bool，再判断 int")
    if isinstance(value, (int, float)) and kinds == {"stringValue"}:
        not_yet(f"{shown}: numbers stay numbers (intValue, doubleValue), so a backend can sum and sort them",
                zh=f"{shown_zh}：数字要保持为数字（intValue、doubleValue），后端才能对它们求和、排序")
    if isinstance(value, list) and "arrayValue" not in kinds:
        not_yet(f'{shown}: a list is {{"arrayValue": {{"values": [one AnyValue per item]}}}}',
                zh=f'{shown_zh}：列表要写成 {{"arrayValue": {{"values": [每个元素一个 AnyValue]}}}}')
    if isinstance(value, float) and kinds == {"doubleValue"} and isinstance(got["doubleValue"], str):
        not_yet(f"{shown}: a doubleValue is a JSON number; only 64-bit integers (intValue) are written as strings",
                zh=f"{shown_zh}：doubleValue 是 JSON 数字；只有 64 位整数（intValue）才写成字符串")
    if isinstance(value, int) and not isinstance(value, bool) and kinds == {"doubleValue"}:
        not_yet(f"{shown}: an int is an intValue (its digits as a string): a double holds integers exactly only "
                "up to 2**53, and a backend sums token counts as integers",
                zh=f"{shown_zh}：int 对应 intValue（把数字写成字符串）：double 只能精确表示 2**53 以内的整数，"
                   "而后端是按整数累加 token 数的")
    if isinstance(value, float) and "intValue" in kinds:
        not_yet(f"{shown}: a float is a doubleValue (keep 0.7 a number, not rounded)",
                zh=f"{shown_zh}：float 对应 doubleValue（0.7 要保持为数字，不要取整）")
    not_yet(shown, zh=shown_zh)


def _contains_bool(value: Any) -> bool:
    return isinstance(value, bool) or isinstance(value, list) and any(isinstance(v, bool) for v in value)
