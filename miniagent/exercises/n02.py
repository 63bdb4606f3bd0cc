"""Checks for notebook 02 · Tools."""

from __future__ import annotations

import ast
import copy
import math
import operator
from typing import Any, Callable

from miniagent.exercises._core import (_check_callable, _clip, _exercise, _graded_live, _kind, _raised, _run,
                                       _show, not_yet, wrong_kind)


def _as_tool(answer: Any, name: str, name_zh: str | None = None) -> Any:
    """A Tool from what the learner stored: a Tool, a function with a docstring, or a schema dict.

    `name` says what the hints call it; `name_zh` the same in Chinese (default: `name`, an identifier).
    """
    from miniagent.tools import Tool, tool

    name_zh = name_zh or name
    if answer is None:
        not_yet(f"{name} is still None: write the tool", zh=f"{name_zh} 还是 None：把工具写出来")
    if isinstance(answer, Tool):
        return answer
    if isinstance(answer, dict) and {"name", "description", "input_schema"} <= set(answer):
        try:
            return Tool(answer["name"], answer["description"], answer["input_schema"], lambda **_: "")
        except (TypeError, ValueError) as exc:
            not_yet(f"{name} is not a tool the API accepts: {_raised(exc)}",
                    zh=f"{name_zh} 不是 API 能接受的工具：{_raised(exc)}")
    if callable(answer) and not isinstance(answer, type):
        try:
            return tool(answer)
        except (TypeError, ValueError) as exc:
            not_yet(f"@tool refuses {name}: {_raised(exc)}", zh=f"@tool 不接受 {name_zh}：{_raised(exc)}")
    wrong_kind(f"{name} should be a tool (a function decorated with @tool), not {_kind(answer)}",
               zh=f"{name_zh} 应该是一个工具（用 @tool 装饰的函数），而不是{_kind(answer)}")


@_exercise("02", 1)
def check_02_1(time_tool: Any, client: Any) -> None:
    """The model (client) picks the renamed tool for the time in Tokyo, among other tools, and does
    not pick it for the weather: its name and description say what it does, and only that."""
    from miniagent.builtin_tools import default_tools
    from miniagent.client import APIError
    from miniagent.messages import tool_uses

    learner = _as_tool(time_tool, "time_tool")
    schema = learner.schema()
    others = [t.schema() for t in default_tools() if t.name not in ("get_current_time", learner.name)]

    def called(on: Any, question: str, tools: list[dict]) -> list[str]:
        try:
            response = on.create([{"role": "user", "content": question}], tools=tools)
        except APIError as err:
            not_yet(f"the API refused a request with your tool: {_clip(str(err).splitlines()[0], 160)}",
                    zh=f"API 拒绝了带着你的工具的请求：{_clip(str(err).splitlines()[0], 160)}")
        return [b.get("name") for b in tool_uses(response)]

    asked, unrelated = "What time is it in Tokyo?", "What's the weather in Paris?"

    def problem(on: Any) -> tuple[str, str] | None:
        """What the model on `on` did wrong with the learner's tool (English, Chinese), or None."""
        names = called(on, asked, others + [schema])
        if learner.name not in names:
            seen = f"called {', '.join(names)}" if names else "called no tool"
            seen_zh = f"调用了 {', '.join(names)}" if names else "没有调用任何工具"
            return (f"asked {asked!r}, the model {seen}: all it knew of yours was its name, {learner.name!r}, "
                    f"and its description, {_show(learner.description, 50)}; what there says it tells the time?",
                    f"问 {asked!r} 时，模型{seen_zh}：关于你的工具，它只知道名字 {learner.name!r} "
                    f"和描述 {_show(learner.description, 50)}；这里面哪一点说了它能报时？")
        if learner.name in called(on, unrelated, [schema]):
            return (f"the model also called {learner.name} for {unrelated!r}, which it cannot answer: "
                    "describe what the tool does, and only that",
                    f"问 {unrelated!r} 时，模型也调用了 {learner.name}，可它回答不了这个问题："
                    "描述里只写这个工具做什么，别的不写")
        return None

    found = _graded_live(problem, client, (lambda f: f[0].split(":")[0], lambda f: f[1].split("：")[0]))
    if found:
        not_yet(found[0], zh=found[1])
    if learner.name == "tool_a":
        not_yet("the model picked it by its description, but its name is still 'tool_a', which says nothing: "
                "rename it, as the exercise asks (a model reads the name beside the description, and so does "
                "whoever reads a trace)",
                zh="模型是凭描述选中它的，可它的名字还是 'tool_a'，什么也没说：按练习的要求给它改个名字"
                   "（模型会把名字和描述放在一起读，读 trace 的人也一样）")
    if learner.description.strip().startswith("Your description here"):
        not_yet("the model picked it by its name alone; a real model leans on the description too, and "
                "yours is still the placeholder: say what the tool does",
                zh="模型只凭名字就选中了它；真实模型也很看重描述，而你的描述还是占位文字：写清楚这个工具做什么")


def _tool_use(name: str, input: dict, id: str) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def _divide(a: float, b: float) -> float:
    """A small tool for the checks: it raises ZeroDivisionError for b = 0."""
    return a / b


@_exercise("02", 2)
def check_02_2(run_safely: Any) -> None:
    """`run_safely(fn, tool_use)` returns a tool_result the API accepts: the output, or the
    exception's message with is_error; nothing escapes. Tried on functions the learner cannot see."""
    from miniagent.builtin_tools import get_weather as weather_tool
    from miniagent.messages import conversation_error, result_text

    get_weather = weather_tool.fn  # the plain function, as the learner's own tools are

    _check_callable(run_safely, "run_safely", "run_safely(fn, tool_use) returns a tool_result block",
                    zh="run_safely(fn, tool_use) 返回一个 tool_result block")

    def expected_error(fn: Callable[..., Any], args: dict) -> str | None:
        try:
            fn(**args)
        except Exception as exc:  # computing what the learner's result must quote
            return str(exc)
        return None

    cases = [
        (get_weather, {"city": "Paris"}),
        (get_weather, {"city": "Atlantis"}),
        (_divide, {"a": 3, "b": 4}),
        (_divide, {"a": 1, "b": 0}),
        (get_weather, {"town": "Paris"}),
    ]
    for n, (fn, args) in enumerate(cases, 1):
        block = _tool_use(fn.__name__.lstrip("_"), args, f"toolu_check_{n}")
        call = f"{block['name']}({_show(args)})"
        result = _run(run_safely, fn, copy.deepcopy(block), name="run_safely", case=f"for {call}",
                      case_zh=f"调用 {call} 时")
        if result is None:
            not_yet(f"run_safely returned None for {call}: return the tool_result block",
                    zh=f"调用 {call} 时，run_safely 返回了 None：应该返回 tool_result block")
        if isinstance(result, dict) and "role" in result and "type" not in result:
            wrong_kind(f"run_safely returned a whole message (with a role) for {call}; return just the "
                       "tool_result block, the dict that goes inside that message's content",
                       zh=f"调用 {call} 时，run_safely 返回的是一整条消息（带着 role）；只要返回 tool_result block，"
                          "也就是放进那条消息 content 里的那个 dict")
        if not isinstance(result, dict):
            wrong_kind(f"run_safely returned {_kind(result)} for {call}; return the whole tool_result block, "
                       "a dict with type, tool_use_id and content",
                       zh=f"调用 {call} 时，run_safely 返回的是{_kind(result)}；应该返回完整的 tool_result block，"
                          "即一个含有 type、tool_use_id 和 content 的 dict")
        conversation = [{"role": "user", "content": "Use the tool."}, {"role": "assistant", "content": [block]},
                        {"role": "user", "content": [result]}]
        problem = _block_problem(result) or conversation_error(conversation)
        if problem:
            not_yet(f"for {call} the API would refuse your tool_result: {_clip(problem, 160)}",
                    zh=f"调用 {call} 时，API 会拒绝你的 tool_result：{_clip(problem, 160)}")
        error = expected_error(fn, args)
        text = result_text(result)
        if error is None:
            if result.get("is_error"):
                not_yet(f"for {call} the call worked, but your result says is_error: {_show(text, 60)}",
                        zh=f"调用 {call} 成功了，你的结果却标了 is_error：{_show(text, 60)}")
            if str(fn(**args)) not in text:
                not_yet(f"for {call} the content should be the output as text, {_show(str(fn(**args)), 50)}; "
                        f"yours was {_show(text, 50)}",
                        zh=f"调用 {call} 时，content 应该是文本形式的输出 {_show(str(fn(**args)), 50)}；"
                           f"你的是 {_show(text, 50)}")
        else:
            if result.get("is_error") is not True:
                not_yet(f"{call} raised, but your result has no is_error: True, so the model takes it as an answer",
                        zh=f"{call} 抛出了异常，但你的结果里没有 is_error: True，模型会把它当成正常的回答")
            if error[:30] not in text:
                not_yet(f"{call} raised, and your result does not say why: put the exception's message in "
                        f"its content (yours: {_show(text, 50)})",
                        zh=f"{call} 抛出了异常，你的结果却没说原因：把异常信息放进 content"
                           f"（你的是 {_show(text, 50)}）")


def _block_problem(block: dict) -> str | None:
    """What makes a tool_result block malformed, before the conversation rules are checked."""
    if block.get("type") != "tool_result":
        return f"its type is {_show(block.get('type'), 30)}, not 'tool_result'"
    if not isinstance(block.get("tool_use_id"), str):
        return "it has no tool_use_id saying which call it answers"
    content = block.get("content", "")
    if not isinstance(content, (str, list)) or (isinstance(content, list) and not all(
            isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in content)):
        return f"its content must be a string (or a list of text blocks), not {_kind(content)}"
    if "is_error" in block and not isinstance(block["is_error"], bool):
        return f"is_error must be true or false, not {_show(block['is_error'], 30)}"
    return None


class _TooBig(Exception):
    """Python's value of an expression would take too long to compute here."""


_PY_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
}
_PY_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert, ast.Not: operator.not_,
}
_MAX_BITS = 4_000


def _python_value(expression: str) -> Any:
    """What Python computes for `expression`, as eval would, but without eval.

    Only numbers and operators are evaluated, and a power or shift whose result would
    be huge raises _TooBig instead of freezing the kernel (`9**(0^10**8)` passes
    safe_eval, which reads it as 9**0, but Python's reading is 9**100000000).
    SyntaxError, TypeError and the like propagate: Python refusing is a difference too.
    """
    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _PY_UNARY:
            return _PY_UNARY[type(node.op)](value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _PY_BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(left, int) and isinstance(right, int) and right > 0:
                if isinstance(node.op, ast.LShift) and right > _MAX_BITS:
                    raise _TooBig
                if isinstance(node.op, ast.Pow) and abs(left) > 1 and right * math.log2(abs(left)) > _MAX_BITS:
                    raise _TooBig
            return _PY_BINARY[type(node.op)](left, right)
        raise _TooBig  # not arithmetic: safe_eval accepted it, so this cannot happen; refuse rather than guess

    return value(ast.parse(expression, mode="eval"))


@_exercise("02", 3)
def check_02_3(my_expression: Any) -> None:
    """An expression safe_eval accepts whose value Python computes differently (or refuses)."""
    from miniagent.builtin_tools import CalculatorError, format_number, safe_eval

    if my_expression is None:
        not_yet('my_expression is still None: write an expression as a string, such as "1 + 1"',
                zh='my_expression 还是 None：写一个字符串形式的表达式，比如 "1 + 1"')
    if not isinstance(my_expression, str):
        wrong_kind(f"my_expression should be the expression as a string, in quotes, not {_kind(my_expression)} "
                   f"(Python already computed {_show(my_expression, 30)})",
                   zh=f"my_expression 应该是加了引号的表达式字符串，而不是{_kind(my_expression)}"
                      f"（Python 已经把它算成了 {_show(my_expression, 30)}）")
    try:
        ours = safe_eval(my_expression)
    except CalculatorError as err:
        not_yet(f"safe_eval refuses it: {_clip(str(err), 120)}", zh=f"safe_eval 不接受它：{_clip(str(err), 120)}")
    try:
        theirs = _python_value(my_expression)
    except _TooBig:
        not_yet("Python's value of it is too large to compute here: try smaller numbers",
                zh="它在 Python 里的值太大，这里算不了：换小一点的数")
    except (SyntaxError, ValueError, TypeError, ArithmeticError, RecursionError, MemoryError):
        return  # Python refuses what safe_eval computes: a difference, and a real one
    if type(theirs) in (int, float) and theirs == ours and "^" in my_expression:
        not_yet(f"safe_eval and Python both give {_clip(format_number(ours), 40)}: ^ is the right symbol, but for "
                "these numbers its two meanings agree; try other numbers",
                zh=f"safe_eval 和 Python 算出来都是 {_clip(format_number(ours), 40)}：^ 这个符号找对了，"
                   "只是对这几个数，它的两种含义恰好得出同一个结果；换几个数试试")
    if type(theirs) in (int, float) and theirs == ours:
        not_yet(f"safe_eval and Python both give {_clip(format_number(ours), 40)}: which symbols does safe_eval's "
                "docstring read differently from Python?",
                zh=f"safe_eval 和 Python 算出来都是 {_clip(format_number(ours), 40)}：看看 safe_eval 的 docstring，"
                   "哪些符号它和 Python 的理解不一样？")
