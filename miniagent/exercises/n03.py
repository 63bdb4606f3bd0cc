"""Checks for notebook 03 · The ReAct loop."""

from __future__ import annotations

import copy
from typing import Any, Callable

from miniagent.exercises._core import (_NotYet, _check_callable, _clip, _exercise, _fused, _kind,
                                       _mock_client, _ok_calls, _plural, _raised, _run, _say, _show, not_yet,
                                       wrong_kind)
from miniagent.exercises.n01 import _BUGS  # the same rule for "a slip, not a decision" as in 01


def _answer_and_messages(result: Any, name: str, case: str, case_zh: str) -> tuple[str, list]:
    """The (answer, messages) pair a react-style function returns, or the right verdict
    (`case_zh`: the Chinese of `case`, a phrase that can open a sentence)."""
    if result is None:
        not_yet(f"{name} returned None {case}: return (answer, messages), as react does",
                zh=f"{case_zh}，{name} 返回了 None：要像 react 那样返回 (answer, messages)")
    if not isinstance(result, (tuple, list)) or len(result) != 2 or not isinstance(result[0], str):
        wrong_kind(f"{name} returned {_kind(result)} {case}; return (answer, messages), as react does",
                   zh=f"{case_zh}，{name} 返回的是{_kind(result)}；要像 react 那样返回 (answer, messages)")
    return result[0], result[1]


def _runaway(limit: int) -> Callable[[dict], dict]:
    from miniagent.mock import scripts

    return _fused(scripts.runaway_varied("calculate", lambda n: {"expression": f"{n} * 2"}), limit)


@_exercise("03", 1)
def check_03_1(budget_react: Any) -> None:
    """`budget_react(client, question, tools, token_budget)` still answers a question that needs no
    stopping, and, against a model that never stops, stops once the run (not the client's
    lifetime) has used more than the budget."""
    from miniagent.builtin_tools import default_tools

    _check_callable(budget_react, "budget_react", "react with a client argument and a token budget",
                    zh="带 client 参数和 token 预算的 react")
    tools = default_tools()
    client = _mock_client()
    question = "What is (1024 + 768) * 2?"
    result = _run(budget_react, client, question, tools, 1_000_000, name="budget_react",
                  case="(token_budget=1,000,000)", case_zh="token_budget=1,000,000", max_iterations=10)
    if not _ok_calls(client):
        not_yet("budget_react made no model calls with the client it was given: start from a copy of react, "
                "and call client.create where react calls llm.create",
                zh="budget_react 没有用传给它的 client 调用模型：从 react 的副本改起，"
                   "把 react 里调用 llm.create 的地方换成 client.create")
    answer, _ = _answer_and_messages(result, "budget_react", "with a large budget", "预算很大时")
    if "3584" not in answer:
        not_yet(f"with token_budget=1,000,000 and {question!r} the answer should come from the model "
                f"(it says 3584); yours was {_show(answer, 50)}",
                zh=f"token_budget=1,000,000、问题是 {question!r} 时，答案应该来自模型"
                   f"（它会说 3584）；你的答案是 {_show(answer, 50)}")

    budget, before = 950, 5_200  # the run passes 950 tokens at call 3 counting all of them, at call 4 counting input only
    client = _mock_client()
    client.usage.add({"input_tokens": before - 200, "output_tokens": 200})  # spent before this run
    client.mock.script(_runaway(40), repeat=True)
    case = f"(a model that never stops, token_budget={budget:,})"
    case_zh = f"模型停不下来，token_budget={budget:,}"
    failure = _attempt(budget_react, client, "算一下", tools, budget, name="budget_react", case=case,
                       case_zh=case_zh, max_iterations=30)
    calls, used, stop_after, used_then = _ok_calls(client), 0, None, 0
    for n, exchange in enumerate(calls, 1):
        usage = exchange.usage
        used += usage["input_tokens"] + usage["output_tokens"]
        if used > budget and stop_after is None:
            stop_after, used_then = n, used
    if stop_after is None or len(calls) < stop_after:
        not_yet(f"with token_budget={budget:,} it stopped after {_plural(len(calls), 'call')}, when this run "
                f"had used only {used:,} tokens: count the tokens this run used (the client had used "
                f"{before:,} before it)",
                zh=f"token_budget={budget:,} 时，它调用了 {len(calls)} 次模型就停了，而这次运行只用了 {used:,} 个 "
                   f"token：要数的是这次运行用掉的 token（在它之前，client 已经用了 {before:,} 个）")
    if len(calls) > stop_after:
        not_yet(f"the runaway model made {_plural(len(calls), 'call')}; with token_budget={budget:,} the run "
                f"should stop after call {stop_after}, when it had used {used_then:,} tokens",
                zh=f"停不下来的模型被调用了 {len(calls)} 次；token_budget={budget:,} 时，运行应该在第 {stop_after} "
                   f"次调用后停下，那时已经用了 {used_then:,} 个 token")
    if failure:
        raise failure


def _attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> _NotYet | None:
    """`_run`, keeping its "not yet" for later: a check may have a more telling hint to give first
    (a loop stopped by the check's fuse raises, but the real fault is that it never stopped)."""
    try:
        _run(fn, *args, **kwargs)
    except _NotYet as exc:
        return exc
    return None


@_exercise("03", 2)
def check_03_2(one_at_a_time: Any, client: Any) -> None:
    """The LoopResult of a run_loop on `client` with disable_parallel_tool_use: one tool per round,
    several rounds, ending with the model's answer; and `client` really sent that tool_choice."""
    from miniagent.loop import LoopResult
    from miniagent.messages import tool_uses

    if one_at_a_time is None:
        not_yet("one_at_a_time is still None: keep the LoopResult that run_loop returns",
                zh="one_at_a_time 还是 None：把 run_loop 返回的 LoopResult 存在这里")
    if isinstance(one_at_a_time, int) and not isinstance(one_at_a_time, bool):
        wrong_kind("one_at_a_time holds a number; keep the LoopResult itself (its .iterations is the number)",
                   zh="one_at_a_time 存的是一个数；要存 LoopResult 本身（那个数在它的 .iterations 里）")
    if not isinstance(one_at_a_time, LoopResult):
        wrong_kind(f"one_at_a_time should be the LoopResult that run_loop returns, not {_kind(one_at_a_time)}",
                   zh=f"one_at_a_time 应该是 run_loop 返回的 LoopResult，而不是{_kind(one_at_a_time)}")
    rounds = [len(tool_uses(m)) for m in one_at_a_time.messages if m.get("role") == "assistant"]
    first = one_at_a_time.messages[0] if one_at_a_time.messages else None
    sent = [e.request["body"] for e in client.exchanges]
    asked_right = any(isinstance(b.get("tool_choice"), dict) and b["tool_choice"].get("disable_parallel_tool_use") is True
                      and (b.get("messages") or [None])[0] == first for b in sent)
    if not asked_right and getattr(client, "mode", None) == "live":
        _no_request_without_parallel()
    if getattr(client, "mode", None) == "live" and one_at_a_time.stop != "api_error":
        # A live model decides how many tools to call, and some servers ignore disable_parallel_tool_use
        # (llama.cpp does): what it did says nothing of the request, which is the learner's part.
        print(_say(f"(live, the model called {_plural(sum(rounds), 'tool')} in {_plural(len(rounds), 'round')} "
                   f"and the run ended with {one_at_a_time.stop!r}: only the request you sent is graded)",
                   f"（在线时，模型在 {len(rounds)} 轮里调用了 {sum(rounds)} 个工具，运行以 "
                   f"{one_at_a_time.stop!r} 结束：只给你发出的请求评分）"))
        return
    for n, count in enumerate(rounds, 1):
        if count > 1:
            not_yet(f"in round {n} the model asked for {count} tools at once: pass tool_choice with "
                    "disable_parallel_tool_use to run_loop",
                    zh=f"第 {n} 轮里，模型一次要了 {count} 个工具：给 run_loop 传一个带 "
                       "disable_parallel_tool_use 的 tool_choice")
    if one_at_a_time.stop not in ("end_turn", "stop_sequence"):
        not_yet(f"the run ended with {one_at_a_time.stop!r}, not with the model's answer: "
                f"{_clip(one_at_a_time.reason, 120)}",
                zh=f"运行以 {one_at_a_time.stop!r} 结束，而不是以模型的回答结束："
                   f"{_clip(one_at_a_time.reason, 120)}")
    if sum(rounds) < 2:
        not_yet(f"the model called {_plural(sum(rounds), 'tool')}: ask the demo question, which needs several",
                zh=f"模型调用了 {sum(rounds)} 个工具：要问演示里的那个问题，它需要调用好几个工具")
    if not asked_right:
        _no_request_without_parallel()


def _no_request_without_parallel() -> None:
    not_yet("llm sent no request for this question with disable_parallel_tool_use: true: run it with llm "
            "and tool_choice={\"type\": \"auto\", \"disable_parallel_tool_use\": True}",
            zh="llm 没有为这个问题发出带 disable_parallel_tool_use: true 的请求：用 llm 来跑，并传入 "
               "tool_choice={\"type\": \"auto\", \"disable_parallel_tool_use\": True}")


class _Spy:
    """Wraps a ToolRegistry and records every tool call run through it, whatever the way in."""

    def __init__(self) -> None:
        from miniagent.builtin_tools import default_tools
        from miniagent.tools import Tool, ToolRegistry

        self.ran: list[Any] = []
        spy = self

        class SpyRegistry(ToolRegistry):
            def run(self, tool_use: dict) -> dict:
                spy.ran.append(tool_use)
                return super().run(tool_use)

            def run_all(self, tool_uses: list[dict], *args: Any, **kwargs: Any) -> list[dict]:
                spy.ran.extend(tool_uses)
                return super().run_all(tool_uses, *args, **kwargs)

        def watched(t: Any) -> Any:
            def fn(**arguments: Any) -> Any:
                spy.ran.append({"name": t.name, "input": arguments})
                return t.fn(**arguments)
            return Tool(t.name, t.description, t.input_schema, fn, t.timeout)

        self.tools = SpyRegistry([watched(t) for t in default_tools()])


_CUT_ZH = {"a tool call cut off by max_tokens": "被 max_tokens 截断的工具调用",
           "a text cut off by max_tokens": "被 max_tokens 截断的文本"}
"""The Chinese of the cases' descriptions in check_03_3, for the hints in the Chinese edition."""


@_exercise("03", 3)
def check_03_3(careful_react: Any) -> None:
    """`careful_react(client, question, tools)` stops on max_tokens, says so, and runs nothing: not the
    cut-off tool call (whose arguments look complete), not through any way in; and still answers."""
    from miniagent.mock import scripts

    _check_callable(careful_react, "careful_react", "react with a client argument that stops on max_tokens",
                    zh="带 client 参数、遇到 max_tokens 就停下的 react")
    cut_call = scripts.truncated_tool_call("calculate", {"expression": "(1024 + 768) * 2"})
    cut_text = scripts.text("The answer, in full detail, is that", stop_reason="max_tokens")
    for what, response in (("a tool call cut off by max_tokens", cut_call), ("a text cut off by max_tokens", cut_text)):
        client, spy = _mock_client(), _Spy()
        client.mock.script(_fused(lambda body, r=response: copy.deepcopy(r), 20), repeat=True)
        case = f"(a model whose answer is {what})"
        what_zh = _CUT_ZH[what]
        outcome: dict[str, Any] = {}

        def noted(*a: Any, **k: Any) -> Any:
            try:
                return outcome.setdefault("result", careful_react(*a, **k))
            except Exception as exc:  # noted for the hint, then reported by _run as any exception is
                outcome["raised"] = exc
                raise

        failure = _attempt(noted, client, "算一下 (1024 + 768) * 2", spy.tools, name="careful_react", case=case,
                           case_zh=f"模型的回答是{what_zh}", max_iterations=10)
        calls = len(_ok_calls(client))
        if calls == 0 and not failure:
            not_yet("careful_react made no model calls with the client it was given: start from a copy of react, "
                    "and call client.create where react calls llm.create",
                    zh="careful_react 没有用传给它的 client 调用模型：从 react 的副本改起，"
                       "把 react 里调用 llm.create 的地方换成 client.create")
        if spy.ran:
            not_yet(f"on {what}, careful_react ran {spy.ran[0].get('name', 'a tool')}: never run a cut-off call, "
                    "its arguments may be incomplete",
                    zh=f"遇到{what_zh}时，careful_react 运行了 {spy.ran[0].get('name', '某个工具')}："
                       "被截断的调用绝不能运行，它的参数可能不完整")
        if calls > 1:
            not_yet(f"after {what} it called the model again ({_plural(calls, 'call')} in all): stop on max_tokens",
                    zh=f"遇到{what_zh}之后，它又调用了模型（一共 {calls} 次）：遇到 max_tokens 就要停下")
        if failure and calls == 1 and "raised" in outcome and not isinstance(outcome["raised"], _BUGS):
            not_yet(f"on {what}, careful_react raised {_raised(outcome['raised'])}: stop by returning "
                    "(answer, messages), with an answer that says max_tokens, as react returns its answer",
                    zh=f"遇到{what_zh}时，careful_react 抛出了 {_raised(outcome['raised'])}：停下的方式是返回 "
                       "(answer, messages)，答案里写明 max_tokens，就像 react 返回它的答案那样")
        if failure:
            raise failure
        answer, _ = _answer_and_messages(outcome.get("result"), "careful_react", f"on {what}", f"遇到{what_zh}时")
        if "max_tokens" not in answer:
            not_yet(f"on {what} the answer should say so (include the words max_tokens); "
                    f"yours was {_show(answer, 50)}",
                    zh=f"遇到{what_zh}时，答案里应该说明这一点（写上 max_tokens 这个词）；"
                       f"你的答案是 {_show(answer, 50)}")
    client, spy = _mock_client(), _Spy()
    question = "What is (1024 + 768) * 2?"
    result = _run(careful_react, client, question, spy.tools, name="careful_react", case=f"for {question!r}",
                  case_zh=f"问题是 {question!r}", max_iterations=10)
    answer, _ = _answer_and_messages(result, "careful_react", f"for {question!r}", f"问题是 {question!r} 时")
    if "3584" not in answer:
        not_yet(f"for {question!r}, which needs no stopping, the answer should come from the model "
                f"(it says 3584); yours was {_show(answer, 50)}",
                zh=f"问题 {question!r} 不需要中途停下，答案应该来自模型"
                   f"（它会说 3584）；你的答案是 {_show(answer, 50)}")
