"""Checks for notebook 04 · Context."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Callable

from miniagent.exercises._core import (_check_callable, _clip, _exercise, _kind, _run, _say, _show, not_yet,
                                       wrong_kind)


def _blocks(message: dict) -> list:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _ask(text: str) -> dict:
    return {"role": "user", "content": text}


def _reply(*content: Any) -> dict:
    return {"role": "assistant", "content": list(content)}


def _call(id: str, name: str = "get_weather", **input: Any) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input or {"city": "Paris"}}


def _result(id: str, text: str = "sunny, 25°C") -> dict:
    return {"type": "tool_result", "tool_use_id": id, "content": text}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


# The shape of each turn of the check's session: how many tool calls each round makes.
_TURN_SHAPES = [(1,), (), (2,), (1, 1), (3,), (), (1,), (2, 1), (1,), (), (1, 2), (1,)]


def _session() -> list[dict]:
    """A long, tool-heavy history the learner has never seen: rounds of one to three calls,
    some turns with no tools, some calls after a short text; every call answered."""
    messages, n = [], 0
    for turn, shape in enumerate(_TURN_SHAPES, 1):
        messages.append(_ask(f"Question {turn}: what now?"))
        for calls in shape:
            ids = [f"toolu_s{n + i + 1:02d}" for i in range(calls)]
            n += calls
            lead = [_text("Let me check.")] if turn % 3 == 0 else []
            messages.append(_reply(*lead, *[_call(i) for i in ids]))
            messages.append({"role": "user", "content": [_result(i, f"result of {i}") for i in ids]})
        messages.append(_reply(_text(f"Answer {turn}.")))
    return messages


def _requests() -> list[list[dict]]:
    """Every request of the session: each prefix that ends with a user message."""
    history = _session()
    return [history[:i + 1] for i, m in enumerate(history) if m["role"] == "user"]


def _orphans(messages: list[dict]) -> list[str]:
    """The reference answer of 04-1: results whose tool_use is not in the message just before."""
    found = []
    for i, message in enumerate(messages):
        before = _blocks(messages[i - 1]) if i > 0 else []
        asked = {b.get("id") for b in before if b.get("type") == "tool_use"}
        found += [b["tool_use_id"] for b in _blocks(message)
                  if b.get("type") == "tool_result" and b["tool_use_id"] not in asked]
    return found


def _naive_view(messages: list[dict], max_turns: int) -> list[dict]:
    """The article's trimMessages: the first message plus the last max_turns * 2 - 1."""
    if len(messages) <= max_turns * 2:
        return list(messages)
    return [messages[0]] + messages[len(messages) - (max_turns * 2 - 1):]


def _orphan_cases() -> list[tuple[str, str, list[dict]]]:
    """(what, its Chinese for the hints in the Chinese edition, messages) for each case."""
    history = _session()
    cut = next(r for r in _requests() if _orphans(_naive_view(r, 3)))
    return [
        ("a valid 20-message history", "一段有效的 20 条消息历史", history[:20]),
        (f"the naive window's view of a {len(cut)}-message history", f"朴素窗口从 {len(cut)} 条消息历史截出的视图",
         _naive_view(cut, 3)),
        ("a history whose first message holds a tool_result", "第一条消息就含 tool_result 的历史",
         [{"role": "user", "content": [_result("toolu_x")]}]),
        ("a message with two results, one of them for a call made in that turn",
         "一条带两个结果、其中一个对应本轮调用的消息",
         [_ask("Weather in Paris and Rome?"), _reply(_call("toolu_p")),
          {"role": "user", "content": [_result("toolu_p"), _result("toolu_r")]}]),
        ("a result whose tool_use is two messages back", "一个 tool_use 在两条消息之前的结果",
         [_ask("Weather?"), _reply(_call("toolu_a")), _ask("Never mind."), _reply(_text("OK.")),
          {"role": "user", "content": [_result("toolu_a")]}]),
        ("a history whose messages all have string content", "每条消息的 content 都是字符串的历史",
         [_ask("Hi"), {"role": "assistant", "content": "Hello!"}, _ask("Bye")]),
        ("a history whose first message answers a call only its last message makes",
         "第一条消息回答了一个直到最后一条消息才发出的调用的历史",
         [{"role": "user", "content": [_result("toolu_w")]}, _reply(_call("toolu_w"))]),
    ]


@_exercise("04", 1)
def check_04_1(orphaned_results: Any) -> None:
    """`orphaned_results(messages)` finds exactly the orphaned results, on histories it has not seen."""
    _check_callable(orphaned_results, "orphaned_results", "orphaned_results(messages) returns a list of ids",
                    zh="orphaned_results(messages) 返回一个 id 列表")
    for what, what_zh, messages in _orphan_cases():
        want = _orphans(messages)
        got = _run(orphaned_results, copy.deepcopy(messages), name="orphaned_results", case=f"on {what}",
                   case_zh=f"在{what_zh}上")
        if got is None:
            not_yet(f"orphaned_results returned None on {what}: return a list of ids",
                    zh=f"orphaned_results 在{what_zh}上返回了 None：应该返回一个 id 列表")
        if isinstance(got, (str, bytes, dict)) or not isinstance(got, Iterable):
            wrong_kind(f"orphaned_results returned {_kind(got)}; return a list of tool_use_ids (strings)",
                       zh=f"orphaned_results 返回的是{_kind(got)}；应该返回一个 tool_use_id 列表（字符串）")
        got = list(got)
        if not all(isinstance(i, str) for i in got):
            wrong_kind(f"orphaned_results returned {_show(got, 50)}; return the tool_use_ids, "
                       "strings such as 'toolu_1'",
                       zh=f"orphaned_results 返回了 {_show(got, 50)}；应该返回 tool_use_id，"
                          "也就是 'toolu_1' 这样的字符串")
        first = [b["tool_use_id"] for b in _blocks(messages[0]) if b.get("type") == "tool_result"] if messages else []
        if sorted(got) == sorted(i for i in want if i not in first) and any(i in want for i in first):
            not_yet(f"on {what} the answer is {want}, yours was {_show(got, 60)}: the first message has no "
                    "message before it (messages[i - 1] at i = 0 is the last one), so all its results are orphans",
                    zh=f"在{what_zh}上，答案是 {want}，你的是 {_show(got, 60)}：第一条消息前面没有消息"
                       "（i = 0 时 messages[i - 1] 是最后一条），所以它的结果全都是落单的")
        if sorted(got) != sorted(want):
            not_yet(f"on {what} the answer is {want}, yours was {_show(got, 60)}: compare each result's "
                    "tool_use_id with the ids of the tool_use blocks in the message just before it",
                    zh=f"在{what_zh}上，答案是 {want}，你的是 {_show(got, 60)}：把每个结果的 tool_use_id "
                       "和它前一条消息里各个 tool_use block 的 id 对一对")


def _safe_view(messages: list[dict], max_turns: int) -> list[dict]:
    """The reference answer of 04-2: the article's cut, moved forward past any tool results."""
    limit = max_turns * 2
    if len(messages) <= limit:
        return list(messages)
    cut = len(messages) - (limit - 1)
    while any(b.get("type") == "tool_result" for b in _blocks(messages[cut])):
        cut += 1
    return [messages[0]] + messages[cut:]


@_exercise("04", 2)
def check_04_2(trim_safe: Any) -> None:
    """`trim_safe(messages, max_turns)` on every request of a session it has not seen: a valid
    conversation, within the limit, first and last messages kept, the latest messages
    contiguous and as many as fit, and the history it was given left as it was."""
    from miniagent.messages import conversation_error

    _check_callable(trim_safe, "trim_safe", "trim_safe(messages, max_turns) returns a shorter list",
                    zh="trim_safe(messages, max_turns) 返回一个更短的列表")
    requests = _requests()
    same: tuple[str, str] | None = None  # the first case where it returned the list it was given
    for max_turns in (3, 5, 2, 10):
        for request in requests:
            given = copy.deepcopy(request)
            case = f"with max_turns={max_turns} on a {len(request)}-message history"
            case_zh = f"max_turns={max_turns}、历史有 {len(request)} 条消息"
            view = _run(trim_safe, given, max_turns, name="trim_safe", case=case, case_zh=case_zh)
            if view is None:
                not_yet(f"trim_safe returned None {case}: return the list of messages to send",
                        zh=f"{case_zh}时，trim_safe 返回了 None：应该返回要发送的消息列表")
            if not isinstance(view, (list, tuple)) or not all(isinstance(m, dict) for m in view):
                wrong_kind(f"trim_safe returned {_kind(view)}; return a list of messages",
                           zh=f"trim_safe 返回的是{_kind(view)}；应该返回一个消息列表")
            if view is given and not same:
                same = (case, case_zh)  # said last: a broken view is the bigger fault
            view = list(view)
            if given != request:
                not_yet(f"trim_safe changed the list it was given ({case}): that is the agent's only copy "
                        "of the history; return a new list instead",
                        zh=f"trim_safe 改动了传给它的列表（{case_zh}）：那是 Agent 手里唯一的历史记录副本；"
                           "应该返回一个新列表")
            if len(view) > max_turns * 2:
                not_yet(f"{case} it kept {len(view)} messages, more than max_turns * 2 = {max_turns * 2}",
                        zh=f"{case_zh}时，它保留了 {len(view)} 条消息，超过了 max_turns * 2 = {max_turns * 2}")
            if not view or view[0] != request[0]:
                not_yet(f"{case} it dropped the first message (the task): keep it",
                        zh=f"{case_zh}时，它丢掉了第一条消息（也就是任务）：要保留它")
            if view[-1] != request[-1]:
                not_yet(f"{case} it dropped the last message, the one the model must answer: keep it",
                        zh=f"{case_zh}时，它丢掉了最后一条消息，也就是模型要回答的那条：要保留它")
            problem = conversation_error(view)
            if problem:
                not_yet(f"{case} the API would refuse the view: {_clip(problem, 140)}",
                        zh=f"{case_zh}时，API 会拒绝这个视图：{_clip(problem, 140)}")
            if len(view) > 1 and view[1:] != request[len(request) - len(view) + 1:]:
                not_yet(f"{case} the view is not the first message plus the latest ones, in order",
                        zh=f"{case_zh}时，视图不是第一条消息加上按原顺序排列的最新几条消息")
            best = len(_safe_view(request, max_turns))
            if len(view) < best:
                not_yet(f"{case} it kept {len(view)} messages where {best} fit without breaking a pair: "
                        "drop only what you must",
                        zh=f"{case_zh}时，它只保留了 {len(view)} 条消息，而不拆散任何一对也能放下 {best} 条："
                           "只丢必须丢的")
    if same:
        not_yet(f"trim_safe returned the very list it was given ({same[0]}): return a new list, e.g. "
                "list(messages), so that what the caller does to the view leaves the history alone",
                zh=f"trim_safe 原样返回了传给它的那个列表（{same[1]}）：要返回一个新列表，比如 "
                   "list(messages)，这样调用方怎么改这个视图，历史记录都不受影响")


class _GuardedPolicy:
    """A learner's policy, each hook run through `_run`: an exception or an endless loop in it
    becomes a "not yet" instead of a dead session or a frozen kernel."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def view(self, messages: list[dict]) -> Any:
        view = _run(self.policy.view, messages, name=_say("your policy's view()", "你的策略的 view()"))
        if not isinstance(view, (list, tuple)):
            not_yet(f"your policy's view() returned {_kind(view)}: return the list of messages to send",
                    zh=f"你的策略的 view() 返回的是{_kind(view)}：应该返回要发送的消息列表")
        return view

    def on_tool_results(self, results: list[dict]) -> Any:
        return _run(self.policy.on_tool_results, results,
                    name=_say("your policy's on_tool_results()", "你的策略的 on_tool_results()"))

    def __getattr__(self, name: str) -> Any:  # describe(), stats(), ... as the policy has them
        return getattr(self.policy, name)


def _parts(policy: Any, depth: int = 0) -> list[Any]:
    """The policy and those it is made of (Compose's .policies, a memory's .inner), a few levels deep."""
    if depth > 4:
        return []
    found = [policy]
    try:
        inner = list(getattr(policy, "policies", None) or []) + [getattr(policy, "inner", None)]
    except Exception:  # the check boundary: a learner's object whose attributes raise or do not iterate
        return found
    for part in inner:
        if part is not None and not isinstance(part, type):
            found += _parts(part, depth + 1)
        elif part is not None:
            found.append(part)
    return found


def _clients(policy: Any) -> list[Any]:
    """The distinct clients a policy makes model calls with (Summarize's .client and the like)."""
    found: list[Any] = []
    for part in _parts(policy):
        try:
            client = None if isinstance(part, type) else getattr(part, "client", None)
        except Exception:  # the check boundary: a learner's object whose attributes raise
            client = None
        if client is not None and all(client is not c for c in found):
            found.append(client)
    return found


def _input_tokens(client: Any) -> int | None:
    try:
        value = client.usage.input_tokens
    except Exception:  # the check boundary: a learner's own client-like object
        return None
    return value if isinstance(value, int) else None


def _completed(session: Any) -> bool:
    """Did the session answer every turn? (A session may say so itself, or only say where it broke.)"""
    return not getattr(session, "broke", None) and not getattr(session, "unfinished", None)


def _sessions(measured: Any) -> list[tuple[str, Any]]:
    if isinstance(measured, Mapping):
        return [(str(label), s) for label, s in measured.items()]
    return [(f"session {n}", s) for n, s in enumerate(measured, 1)]


@_exercise("04", 3)
def check_04_3(my_policy: Any, run_session: Callable[[Any], Any], measured: Any, name: str) -> None:
    """`my_policy` completes the notebook's session (`run_session(policy)`), still knows `name` at
    the end, and spends fewer input tokens than every measured policy that also knew it.

    The target comes from `measured` (the notebook's sessions, by label), so it means the same
    offline and live. A session is read for `.input_tokens`, `.answer`, `.broke`, and, when it has
    them, `.unfinished` and `.policy`.
    """
    if my_policy is None:
        not_yet("my_policy is still None: make a policy, e.g. Compose(TruncateToolResults(...), Summarize(practice, ...))",
                zh="my_policy 还是 None：创建一个策略，比如 Compose(TruncateToolResults(...), Summarize(practice, ...))")
    if isinstance(my_policy, type):
        wrong_kind(f"my_policy is the class {my_policy.__name__}; make one: {my_policy.__name__}(...)",
                   zh=f"my_policy 是类 {my_policy.__name__}；要创建一个实例：{my_policy.__name__}(...)")
    if not callable(getattr(my_policy, "view", None)) or not callable(getattr(my_policy, "on_tool_results", None)):
        wrong_kind(f"my_policy should be a context policy, with view() and on_tool_results() like SlidingWindow(...); "
                   f"it is {_kind(my_policy)}",
                   zh="my_policy 应该是一个上下文策略，像 SlidingWindow(...) 那样有 view() 和 on_tool_results()；"
                      f"它现在是{_kind(my_policy)}")
    for part in _parts(my_policy):
        if isinstance(part, type):
            wrong_kind(f"your policy holds the class {part.__name__}; make one: {part.__name__}(...)",
                       zh=f"你的策略里放的是类 {part.__name__}；要创建一个实例：{part.__name__}(...)")
    knew = [(label, s) for label, s in _sessions(measured)
            if _completed(s) and name in str(getattr(s, "answer", "")) and getattr(s, "policy", None) is not my_policy]
    if not knew:
        not_yet(f"none of the measured sessions still knew {name!r} at the end, so there is no target to beat; "
                "run the cells above first",
                zh=f"测过的会话里，没有一个到最后还记得 {name!r}，所以没有要超过的目标；先运行上面的单元格")
    label, target = min(knew, key=lambda item: item[1].input_tokens)
    clients = _clients(my_policy)
    before = [_input_tokens(c) for c in clients]
    session = _run(run_session, _GuardedPolicy(my_policy), name="run_session", patient=True)
    elsewhere = [after - was for c, was in zip(clients, before)
                 if (after := _input_tokens(c)) is not None and was is not None and after - was
                 and after - was != session.input_tokens]
    if session.broke:
        turn, error = session.broke
        not_yet(f"the session stopped at turn {turn}: {_clip(error, 140)}",
                zh=f"会话在第 {turn} 轮中断了：{_clip(error, 140)}")
    if getattr(session, "unfinished", None):
        turn, stop = session.unfinished[0]
        not_yet(f"turn {turn} ended with {stop!r} instead of an answer",
                zh=f"第 {turn} 轮以 {stop!r} 结束，而不是给出回答")
    if name not in str(session.answer):
        not_yet(f"the session completed, but its last answer does not know the name: {_show(session.answer, 60)}: "
                "what in your policy keeps the turn that gave it?",
                zh=f"会话跑完了，但最后的回答不知道这个名字：{_show(session.answer, 60)}。"
                   "你的策略靠什么留住告诉它名字的那一轮？")
    if elsewhere:
        not_yet(f"your policy's own model calls (its summaries) went to another client, so the session did not "
                f"count their {sum(elsewhere):,} input tokens: give it the client the session runs on "
                "(practice in the notebook)",
                zh=f"你的策略自己的模型调用（它的摘要）发给了另一个 client，所以会话没有算上它们的 "
                   f"{sum(elsewhere):,} 个输入 token：把会话所用的那个 client 交给它（在 notebook 里就是 practice）")
    if session.input_tokens >= target.input_tokens:
        not_yet(f"it knew the name, but used {session.input_tokens:,} input tokens; {label!r} knew it too "
                f"with {target.input_tokens:,}: spend fewer",
                zh=f"它记得名字，但用了 {session.input_tokens:,} 个输入 token；{label!r} 也记得，"
                   f"只用了 {target.input_tokens:,} 个：要花得更少")
