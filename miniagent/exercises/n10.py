"""Checks for notebook 10 · Several agents."""

from __future__ import annotations

from typing import Any

from miniagent.exercises._core import (_check_callable, _exercise, _kind, _mock_client, _raised, _run, _show,
                                       not_yet, wrong_kind)
from miniagent.exercises.n02 import _as_tool  # the same rules for "is this a tool?" as in 02

SPECIALIST_SYSTEM = "You are a weather specialist. Answer briefly."


def _first_requests(client: Any) -> list[dict]:
    """The bodies of the requests that began a conversation (one user message so far)."""
    bodies = [r["body"] for r in client.mock.requests if isinstance(r.get("body"), dict)]
    return [b for b in bodies if len(b.get("messages") or []) == 1]


@_exercise("10", 1)
def check_10_1(specialist_tool: Any) -> None:
    """`specialist_tool(client, tools, system)` gives a tool whose every call runs a fresh loop over the task
    with those tools and that system prompt, returns the final text, and raises when the run fails."""
    from miniagent.builtin_tools import default_tools
    from miniagent.client import connect
    from miniagent.loop import LoopResult
    from miniagent.tools import ToolRegistry

    _check_callable(specialist_tool, "specialist_tool", "specialist_tool(client, tools, system) returns a tool",
                    zh="specialist_tool(client, tools, system) 返回一个工具")
    client = _mock_client()
    weather = [t for t in default_tools() if t.name == "get_weather"]
    made = _run(specialist_tool, client, weather, SPECIALIST_SYSTEM, name="specialist_tool")
    if made is None:
        not_yet("specialist_tool returned None: define the @tool function inside it and return it",
                zh="specialist_tool 返回了 None：在它内部定义 @tool 函数，再返回这个函数")
    specialist = _as_tool(made, "the tool specialist_tool returned", "specialist_tool 返回的工具")
    if "task" not in (specialist.input_schema.get("properties") or {}):
        not_yet(f"the tool's parameters are {list(specialist.input_schema.get('properties') or {})}: "
                "give it one parameter, task: str",
                zh=f"这个工具的参数是 {list(specialist.input_schema.get('properties') or {})}："
                   "只给它一个参数 task: str")
    answers = []
    for city in ("Paris", "Tokyo"):
        task = f"What is the weather in {city}?"
        answer = _run(specialist.fn, task=task, name="your specialist", case=f"given the task {task!r}",
                      case_zh=f"任务是 {task!r}")
        if isinstance(answer, LoopResult):
            wrong_kind("the tool returned the whole LoopResult: return result.text, the answer only",
                       zh="工具返回了整个 LoopResult：只返回 result.text，也就是回答本身")
        if not isinstance(answer, str):
            wrong_kind(f"the tool returned {_kind(answer)}: return the specialist's answer, a str",
                       zh=f"工具返回的是{_kind(answer)}：要返回专家 Agent 的回答，一个 str")
        answers.append(answer)
    starts = _first_requests(client)
    if len(starts) < 2:
        not_yet("two tasks should start two conversations, each with just the task as its user message: "
                "run run_loop(client, [user(task)], ...) inside the tool, on every call",
                zh="两个任务应该开启两段对话，每段只有一条 user 消息，就是任务本身："
                   "在工具里每次调用时都运行 run_loop(client, [user(task)], ...)")
    for body, city in zip(starts[:2], ("Paris", "Tokyo")):
        sent = body["messages"][0]
        if sent.get("content") != f"What is the weather in {city}?":
            not_yet(f"the specialist's conversation began with {_show(sent.get('content'), 60)}: "
                    "send the task itself, as the only user message",
                    zh=f"专家 Agent 的对话以 {_show(sent.get('content'), 60)} 开头："
                       "把任务本身作为唯一一条 user 消息发出去")
        if body.get("system") != SPECIALIST_SYSTEM:
            not_yet(f"the specialist's requests carried system={_show(body.get('system'), 50)}: pass the "
                    "system prompt you were given to run_loop",
                    zh=f"专家 Agent 的请求带的是 system={_show(body.get('system'), 50)}："
                       "把传给你的系统提示词传给 run_loop")
        if [t.get("name") for t in body.get("tools") or []] != ["get_weather"]:
            not_yet("the specialist's requests did not offer exactly the tools you were given: pass tools to run_loop",
                    zh="专家 Agent 的请求里提供的工具和传给你的不完全一样：把 tools 传给 run_loop")
    if "Paris" not in answers[0] or "Tokyo" not in answers[1]:
        not_yet(f"the answers were {_show(answers, 90)}: return result.text, the specialist's final answer",
                zh=f"得到的回答是 {_show(answers, 90)}：要返回 result.text，也就是专家 Agent 的最终回答")
    broken = connect(offline=True, quiet=True, max_retries=0)
    broken.mock.fault(500, times=20)
    failing = _as_tool(_run(specialist_tool, broken, weather, SPECIALIST_SYSTEM, name="specialist_tool"),
                       "the tool specialist_tool returned", "specialist_tool 返回的工具")
    result = ToolRegistry([failing]).run({"type": "tool_use", "id": "toolu_check", "name": failing.name,
                                          "input": {"task": "What is the weather in Rome?"}})
    if not result.get("is_error"):
        not_yet(f"when the specialist's API call failed, the parent got {_show(result.get('content'), 70)} as a "
                "normal result: if not result.ok, raise an exception saying why",
                zh=f"专家 Agent 的 API 调用失败时，父 Agent 拿到的却是正常结果 {_show(result.get('content'), 70)}："
                   "如果 result.ok 为假，就抛出一个说明原因的异常")


EMAIL_CASES = [("ada@example.com", True), ("Grace.Hopper@EXAMPLE.com", True), ("bob@example.org", False),
               ("eve@example.com.evil.io", False), ("mallory@notexample.com", False), ("ops@mail.example.com", False),
               ("example.com@evil.io", False), ("", False), ("@example.com", False)]
# Recipient lists: (to, approved?, the outside addresses a refusal must name)
LIST_CASES = [
    ("attacker@evil.example, ada@example.com", False, ["attacker@evil.example"]),  # the last '@' is at example.com
    ("ada@example.com, grace@example.com", True, []),
    ("Ada Lovelace <ada@example.com>", True, []),
    ("Ada <ada@example.com>; Grace Hopper <grace@EXAMPLE.COM>", True, []),
    ("ada@example.com; eve@evil.io", False, ["eve@evil.io"]),
    ("ada@example.com,eve@evil.io", False, ["eve@evil.io"]),
    ("ada@example.com eve@evil.io", False, ["eve@evil.io"]),
    ("Ada <eve@evil.io>", False, ["eve@evil.io"]),
    ('"ada@example.com" <eve@evil.io>', False, ["eve@evil.io"]),
    ("Ada Lovelace <ada@example.com>, Eve <eve@example.com.evil.io>", False, ["eve@example.com.evil.io"]),
]
LIST_HINT = ("'to' can name several recipients, separated by , or ;, each an address or Name <address>: split it "
             "into recipients, take the address inside <...> when there is one, and approve only when every one is "
             "at example.com; one that is not, or that you cannot read as an address, refuses the mail")
LIST_HINT_ZH = ("'to' 里可以有多个收件人，用 , 或 ; 分隔，每个收件人是一个地址，或者写成 Name <address>：先拆成一个个"
                "收件人，有 <...> 的取尖括号里的地址，只有每个地址都在 example.com 才批准；只要有一个不在，"
                "或者读不成地址，就拒绝这封邮件")


def _email_call(to: str) -> dict:
    return {"id": "toolu_check", "name": "send_email",
            "input": {"to": to, "subject": "Hello", "body": "Sent by the exercise check."}}


@_exercise("10", 2)
def check_10_2(approve_email: Any) -> None:
    """`approve_email(call)` approves mail whose every recipient is at example.com (True), refusing any other
    with a reason (a str) that names the outside address."""
    _check_callable(approve_email, "approve_email", "approve_email(call) returns True or a reason",
                    zh="approve_email(call) 返回 True 或拒绝的理由")
    cases = [(address, allowed, [address] if address and not allowed else []) for address, allowed in EMAIL_CASES]
    for address, allowed, named in cases + LIST_CASES:
        listed = any(c in address for c in ",;<") or " " in address.strip()
        answer = _run(approve_email, _email_call(address), name="approve_email", case=f"for mail to {address!r}",
                      case_zh=f"发往 {address!r} 的邮件")
        if answer is None:
            not_yet(f"approve_email returned None for {address!r}: return True, or the reason as a str",
                    zh=f"对发往 {address!r} 的邮件，approve_email 返回了 None：要返回 True，或者以 str 返回理由")
        if allowed:
            if answer is not True and listed and isinstance(answer, str):
                not_yet(f"mail to {address!r} was not approved (you returned {_show(answer, 50)}): {LIST_HINT}",
                        zh=f"发往 {address!r} 的邮件没有获批（你返回的是 {_show(answer, 50)}）：{LIST_HINT_ZH}")
            if answer is not True:
                not_yet(f"mail to {address!r} was not approved (you returned {_show(answer, 50)}): only the "
                        "bool True approves; compare the domain without regard to case",
                        zh=f"发往 {address!r} 的邮件没有获批（你返回的是 {_show(answer, 50)}）："
                           "只有 bool 值 True 才算批准；比较域名时不区分大小写")
            continue
        if answer is True and listed:
            not_yet(f"mail to {address!r} was approved, and {_show(named[0], 40)} is outside example.com: "
                    f"{LIST_HINT}",
                    zh=f"你批准了发往 {address!r} 的邮件，可 {_show(named[0], 40)} 并不在 example.com：{LIST_HINT_ZH}")
        if answer is True:
            hint = ("an address needs a name before the '@'" if address.startswith("@")
                    else "a dotted suffix is not the domain: compare everything after the last '@'"
                    if "example.com" in address.lower() else "check the domain after the '@'")
            hint_zh = ("地址在 '@' 前面要有用户名" if address.startswith("@")
                       else "含有 example.com 不等于域名就是它：比较最后一个 '@' 之后的全部内容"
                       if "example.com" in address.lower() else "检查 '@' 后面的域名")
            not_yet(f"mail to {address!r} was approved: {hint}",
                    zh=f"你批准了发往 {address!r} 的邮件：{hint_zh}")
        if answer is False:
            not_yet(f"mail to {address!r} was refused without a reason: return a str that says why, "
                    "naming the address, so the model can tell the user",
                    zh=f"拒绝发往 {address!r} 的邮件时没有给出理由：返回一个 str 说明原因，"
                       "并写明地址，这样模型才能告诉用户")
        if not isinstance(answer, str):
            wrong_kind(f"approve_email returned {_kind(answer)}: return True or a reason (a str)",
                       zh=f"approve_email 返回的是{_kind(answer)}：要返回 True 或理由（一个 str）")
        for outside in named:
            if outside not in answer:
                not_yet(f"the refusal {_show(answer, 60)} of mail to {address!r} does not name the outside "
                        f"address {outside!r}",
                        zh=f"拒绝发往 {address!r} 的邮件时，理由 {_show(answer, 60)} 里没有写明不在公司的地址 "
                           f"{outside!r}")


def _plan(*steps: tuple[str, bool], id: str = "toolu_plan") -> dict:
    return {"type": "tool_use", "id": id, "name": "update_plan",
            "input": {"steps": [{"step": s, "done": d} for s, d in steps]}}


def _assistant(*blocks: dict) -> dict:
    return {"role": "assistant", "content": list(blocks)}


def _results(*ids: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]}


_WEATHER = {"type": "tool_use", "id": "toolu_w", "name": "get_weather", "input": {"city": "Paris"}}
PLAN_CASES = [
    ("no plan at all", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], []),
    ("a plan with two steps open",
     [{"role": "user", "content": "Do three things"}, _assistant(_plan(("A", True), ("B", False), ("C", False))),
      _results("toolu_plan")], ["B", "C"]),
    ("an older plan, then a newer one",
     [{"role": "user", "content": "Go"}, _assistant(_plan(("old 1", False), ("old 2", False), id="toolu_1")),
      _results("toolu_1"), _assistant({"type": "text", "text": "Working."}, _WEATHER), _results("toolu_w"),
      _assistant(_plan(("new 1", True), ("new 2", False), id="toolu_2")), _results("toolu_2"),
      {"role": "assistant", "content": "Nearly done."}], ["new 2"]),
    ("a plan checked off completely, after a tool call in the same message",
     [{"role": "user", "content": "Go"}, _assistant(_plan(("only", False), id="toolu_0")), _results("toolu_0"),
      _assistant(_WEATHER, _plan(("only", True))), _results("toolu_w", "toolu_plan")], []),
    ("a plan in a user's pasted text only",
     [{"role": "user", "content": "update_plan: [ ] pretend step"}], []),
    ("a plan, then another tool call in the same message",
     [{"role": "user", "content": "Go"}, _assistant(_plan(("look it up", False), ("answer", False)), _WEATHER),
      _results("toolu_plan", "toolu_w")], ["look it up", "answer"]),
]
SHAPE = ('an update_plan call is a block {"type": "tool_use", "name": "update_plan", "input": {"steps": '
         '[{"step": "the text", "done": false}, ...]}} in an assistant message\'s content list: each step is a '
         'dict with "step" (its text, a str) and "done" (a bool)')
SHAPE_ZH = ('update_plan 调用是 assistant 消息 content 列表里的一个 block：{"type": "tool_use", "name": "update_plan", '
            '"input": {"steps": [{"step": "步骤文本", "done": false}, ...]}}；每个步骤是一个 dict，'
            '有 "step"（步骤文本，str）和 "done"（bool）两个键')
PLAN_CASES_ZH = {  # the Chinese of each case's description
    "no plan at all": "完全没有计划",
    "a plan with two steps open": "计划里还有两步没完成",
    "an older plan, then a newer one": "先有一个旧计划，后来又有一个新计划",
    "a plan checked off completely, after a tool call in the same message": "同一条消息里先有一个工具调用，之后的计划步骤全部完成",
    "a plan in a user's pasted text only": "计划只出现在用户粘贴的文本里",
    "a plan, then another tool call in the same message": "同一条消息里，计划之后还有另一个工具调用",
}


@_exercise("10", 3)
def check_10_3(open_steps: Any) -> None:
    """`open_steps(messages)`: the steps not done in the latest update_plan call, in order ([] without one)."""
    _check_callable(open_steps, "open_steps", "open_steps(messages) returns a list of step texts",
                    zh="open_steps(messages) 返回步骤文本的列表")
    for case, messages, want in PLAN_CASES:
        what_zh = PLAN_CASES_ZH.get(case, case)

        def shaped(history: list[dict], case: str = case, what_zh: str = what_zh) -> Any:
            try:
                return open_steps(history)
            except (KeyError, IndexError, TypeError, AttributeError) as exc:  # a guess at the shape that missed
                not_yet(f"open_steps raised {_raised(exc)} on {case}: {SHAPE}",
                        zh=f"在用例“{what_zh}”中，open_steps 抛出了 {_raised(exc)}：{SHAPE_ZH}")

        got = _run(shaped, [dict(m) for m in messages], name="open_steps", case=f"on {case}",
                   case_zh=f"用例“{what_zh}”")
        if got is None:
            not_yet(f"open_steps returned None on {case}: return a list (empty when there is no plan)",
                    zh=f"在用例“{what_zh}”中，open_steps 返回了 None：要返回一个列表（没有计划时返回空列表）")
        if not isinstance(got, list):
            wrong_kind(f"open_steps returned {_kind(got)}: return a list of the open steps' texts",
                       zh=f"open_steps 返回的是{_kind(got)}：要返回未完成步骤的文本列表")
        if got != want and any(not isinstance(item, str) for item in got):
            not_yet(f"on {case}, you returned {_show(got, 60)}, expected {_show(want, 60)}: return the open steps "
                    f"as their text, a list of str; {SHAPE}",
                    zh=f"在用例“{what_zh}”中，你返回了 {_show(got, 60)}，应该是 {_show(want, 60)}："
                       f"要返回未完成步骤的文本，一个 str 列表；{SHAPE_ZH}")
        if got != want:
            hint = ("the latest plan replaces the earlier ones: search from the end" if case.startswith("an older")
                    else "look at every block of the message, not only its first or last; the latest plan is the "
                         "last update_plan block" if "same message" in case
                    else "keep only steps whose done is false, as their text" if want
                    else "no update_plan tool_use block means no plan: return []")
            hint_zh = ("最新的计划取代之前的计划：从后往前找" if case.startswith("an older")
                       else "要看这条消息里的每一个 block，不能只看第一个或最后一个；最新的计划是最后一个 update_plan block"
                       if "same message" in case
                       else "只保留 done 为 false 的步骤，取它们的文本" if want
                       else "没有 update_plan 的 tool_use block，就是没有计划：返回 []")
            not_yet(f"on {case}, you returned {_show(got, 60)}, expected {_show(want, 60)}: {hint}",
                    zh=f"在用例“{what_zh}”中，你返回了 {_show(got, 60)}，应该是 {_show(want, 60)}：{hint_zh}")
