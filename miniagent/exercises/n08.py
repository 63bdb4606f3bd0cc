"""Checks for notebook 08 · Other providers."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from miniagent.exercises._core import _check_callable, _exercise, _kind, _run, _show, not_yet, wrong_kind

WEATHER = {"name": "get_weather", "description": "Get the current weather for a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}},
                            "required": ["city"]}}
CLOCK = {"name": "get_current_time", "description": "The current date and time.",
         "input_schema": {"type": "object", "properties": {}}}
CONVERT = {"name": "convert", "description": "Convert a temperature.",
           "input_schema": {"type": "object", "properties": {
               "value": {"type": "number"}, "unit": {"type": "string", "enum": ["C", "F"]}},
               "required": ["value", "unit"], "additionalProperties": False}}


@_exercise("08", 1)
def check_08_1(to_openai_tool: Any) -> None:
    """`to_openai_tool(tool)`: an Anthropic tool definition as an OpenAI function tool."""
    _check_callable(to_openai_tool, "to_openai_tool", "to_openai_tool(tool) returns the OpenAI tool dict",
                    zh="to_openai_tool(tool) 返回 OpenAI 的工具 dict")
    for tool in (WEATHER, CLOCK, CONVERT):
        want = {"type": "function", "function": {"name": tool["name"], "description": tool["description"],
                                                 "parameters": tool["input_schema"]}}
        given = copy.deepcopy(tool)
        got = _run(to_openai_tool, given, name="to_openai_tool", case=f"on the {tool['name']} tool",
                   case_zh=f"在 {tool['name']} 工具上")
        if got is None:
            not_yet("to_openai_tool returned None: build and return the OpenAI tool dict",
                    zh="to_openai_tool 返回了 None：构造 OpenAI 的工具 dict，并返回它")
        if given != tool:
            not_yet(f"to_openai_tool changed the tool it was given ({tool['name']}): build a new dict",
                    zh=f"to_openai_tool 修改了传给它的工具（{tool['name']}）：应该构造一个新的 dict")
        if not isinstance(got, Mapping):
            wrong_kind(f"to_openai_tool returned {_kind(got)}; return a dict",
                       zh=f"to_openai_tool 返回的是{_kind(got)}；应该返回一个 dict")
        if got.get("type") != "function":
            not_yet(f"on {tool['name']}: an OpenAI tool says what kind it is: \"type\": \"function\"; "
                    f"yours has type {_show(got.get('type'))}",
                    zh=f"{tool['name']} 工具：OpenAI 的工具要写明自己的类型：\"type\": \"function\"；"
                       f"你的 type 是 {_show(got.get('type'))}")
        function = got.get("function")
        if not isinstance(function, Mapping):
            not_yet(f"on {tool['name']}: the name, description and schema go inside \"function\"; yours has "
                    f"{_show(sorted(got))} at the top",
                    zh=f"{tool['name']} 工具：name、description 和 schema 都放在 \"function\" 里面；"
                       f"你的顶层是 {_show(sorted(got))}")
        if "input_schema" in function or function.get("parameters") != tool["input_schema"]:
            not_yet(f"on {tool['name']}: OpenAI calls the schema \"parameters\" (Anthropic: \"input_schema\"); "
                    f"keep it exactly as it is",
                    zh=f"{tool['name']} 工具：OpenAI 把 schema 叫作 \"parameters\"（Anthropic 叫 \"input_schema\"）；"
                       f"schema 本身原样保留")
        if function.get("strict") is True and not _strict_ready(tool["input_schema"]):
            not_yet(f"on {tool['name']}: \"strict\": true makes OpenAI hold the model to the schema, and it takes "
                    "that only for a schema with additionalProperties: false and every property required, which "
                    "this one is not: leave strict out (or false)",
                    zh=f"{tool['name']} 工具：\"strict\": true 会让 OpenAI 强制模型遵守 schema，但只有写了 "
                       "additionalProperties: false、所有属性都 required 的 schema 才能这样用，这个 schema 不是："
                       "不写 strict（或者写 false）")
        if isinstance(function.get("strict"), bool):  # false is the default; true where the schema allows it
            got = {**got, "function": {k: v for k, v in function.items() if k != "strict"}}
        if dict(got) != want:
            where, where_zh = _difference(want, dict(got), "result")
            not_yet(f"on {tool['name']}: {where}", zh=f"{tool['name']} 工具：{where_zh}")


def _strict_ready(schema: Any) -> bool:
    """Whether OpenAI takes "strict": true with this schema: every object closed, every property required."""
    if isinstance(schema, Mapping):
        if schema.get("type") == "object" and (schema.get("additionalProperties") is not False or
                                               set(schema.get("required", [])) != set(schema.get("properties", {}))):
            return False
        return all(_strict_ready(value) for value in schema.values())
    if isinstance(schema, list):
        return all(_strict_ready(value) for value in schema)
    return True


def _difference(want: Any, got: Any, path: str, path_zh: str | None = None) -> tuple[str, str]:
    """Where `got` first differs from `want`, in English and Chinese: a key missing or extra, or a value.

    `path` names the value (`path_zh` in the Chinese hint, if it differs): "result['function']".
    """
    zh = path if path_zh is None else path_zh
    if isinstance(want, Mapping) and isinstance(got, Mapping):
        for key in want:
            if key not in got:
                return (f"{path} has no {key!r} (expected {_show(want[key], 50)})",
                        f"{zh} 里缺了 {key!r}（应该是 {_show(want[key], 50)}）")
        for key in got:
            if key not in want:
                return (f"{path} has {key!r}: {_show(got[key], 40)}, which does not belong there",
                        f"{zh} 里多了 {key!r}: {_show(got[key], 40)}，它不该在那里")
        for key in want:
            if want[key] != got[key]:
                return _difference(want[key], got[key], f"{path}[{key!r}]", f"{zh}[{key!r}]")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got)):
            if a != b:
                return _difference(a, b, f"{path}[{i}]", f"{zh}[{i}]")
    return (f"{path} should be {_show(want, 60)}, got {_show(got, 60)}",
            f"{zh} 应该是 {_show(want, 60)}，实际是 {_show(got, 60)}")


def _chunk(index: int, *, id: str | None = None, name: str | None = None, arguments: str = "") -> dict:
    call: dict = {"index": index}
    if id is not None:
        call |= {"id": id, "type": "function"}
    function: dict = {"arguments": arguments}
    if name is not None:
        function = {"name": name, "arguments": arguments}
    call["function"] = function
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def _stream(*pieces: dict, finish: str = "tool_calls") -> list[dict]:
    first = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}
    last = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    return [first, *pieces, last]


def _cases() -> list[tuple[str, list[dict], list[dict]]]:
    """(what, chunks, the calls they add up to) for the assembling check."""
    two = _stream(_chunk(0, id="call_a", name="get_weather"), _chunk(0, arguments='{"ci'),
                  _chunk(0, arguments='ty": "北京"}'), _chunk(1, id="call_b", name="get_weather"),
                  _chunk(1, arguments='{"city": '), _chunk(1, arguments='"上海"}'))
    interleaved = _stream(_chunk(0, id="call_a", name="calculate"), _chunk(1, id="call_b", name="get_current_time"),
                          _chunk(0, arguments='{"expression": '), _chunk(1, arguments="{}"),
                          _chunk(0, arguments='"(1024 + 768) * 2"}'))
    empty = _stream(_chunk(0, id="call_c", name="get_current_time"))
    broken = _stream(_chunk(0, id="call_d", name="get_weather"), _chunk(0, arguments='{"city": "Par'),
                     finish="length")
    return [
        ("two calls, one after the other", two,
         [{"id": "call_a", "name": "get_weather", "input": {"city": "北京"}},
          {"id": "call_b", "name": "get_weather", "input": {"city": "上海"}}]),
        ("two calls whose pieces take turns", interleaved,
         [{"id": "call_a", "name": "calculate", "input": {"expression": "(1024 + 768) * 2"}},
          {"id": "call_b", "name": "get_current_time", "input": {}}]),
        ("a call without arguments", empty, [{"id": "call_c", "name": "get_current_time", "input": {}}]),
        ("a call cut off mid-arguments", broken, [{"id": "call_d", "name": "get_weather", "input": None}]),
        ("a stream whose last chunk has only usage, no choices (OpenAI's stream_options include_usage)",
         [*empty, {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}],
         [{"id": "call_c", "name": "get_current_time", "input": {}}]),
    ]


_ZH = {"two calls, one after the other": "先后到达的两个调用", "two calls whose pieces take turns": "片段交替到达的两个调用",
       "a call without arguments": "一个没有参数的调用", "a call cut off mid-arguments": "参数传到一半被截断的调用",
       "a stream whose last chunk has only usage, no choices (OpenAI's stream_options include_usage)":
           "最后一个 chunk 只有 usage、没有 choices 的流（OpenAI 的 stream_options include_usage）",
       "a plain conversation": "一段普通对话",
       "two tool calls answered in one user turn": "在同一个 user 轮次里回答的两个工具调用",
       "a call with no text, and a question after its result": "不带文本、结果后面还跟着一个问题的调用"}
"""The Chinese of the cases' descriptions (`_cases`, `_tool_turns`), for the hints in the Chinese edition."""


@_exercise("08", 2)
def check_08_2(assemble_tool_calls: Any) -> None:
    """`assemble_tool_calls(chunks)`: the tool calls a streamed OpenAI answer adds up to, in index order:
    `{"id", "name", "input"}`, input the parsed arguments ({} when none came) or None if they never
    became valid JSON."""
    _check_callable(assemble_tool_calls, "assemble_tool_calls",
                    "assemble_tool_calls(chunks) returns a list of {id, name, input}",
                    zh="assemble_tool_calls(chunks) 返回一个 {id, name, input} 列表")
    for what, chunks, want in _cases():
        got = _run(assemble_tool_calls, copy.deepcopy(chunks), name="assemble_tool_calls", case=f"on {what}",
                   case_zh=f"在{_ZH[what]}上")
        if got is None:
            not_yet(f"assemble_tool_calls returned None on {what}: return the list of calls",
                    zh=f"assemble_tool_calls 在{_ZH[what]}上返回了 None：应该返回调用的列表")
        if not isinstance(got, list):
            wrong_kind(f"assemble_tool_calls returned {_kind(got)}; return a list of dicts, one per call",
                       zh=f"assemble_tool_calls 返回的是{_kind(got)}；应该返回一个 dict 列表，每个调用一个")
        if got == want:
            continue
        if len(got) != len(want):
            not_yet(f"on {what}: {len(got)} calls where there are {len(want)}: a call starts with the chunk that "
                    "has its id and name; later pieces of it carry only its index",
                    zh=f"在{_ZH[what]}上：应该有 {len(want)} 个调用，你得到 {len(got)} 个：带 id 和 name 的 chunk "
                       "是一个调用的开头，它后面的片段只带 index")
        for mine, right in zip(got, want):
            if not isinstance(mine, Mapping):
                wrong_kind(f"on {what}: each call should be a dict {{id, name, input}}, got {_kind(mine)}",
                           zh=f"在{_ZH[what]}上：每个调用都应该是一个 dict {{id, name, input}}，实际是{_kind(mine)}")
            if (mine.get("id"), mine.get("name")) != (right["id"], right["name"]):
                not_yet(f"on {what}: expected the call {right['id']} {right['name']}, got {mine.get('id')!r} "
                        f"{mine.get('name')!r}: keep each index's id and name from its first chunk",
                        zh=f"在{_ZH[what]}上：应该是调用 {right['id']} {right['name']}，实际是 {mine.get('id')!r} "
                           f"{mine.get('name')!r}：每个 index 的 id 和 name 都取自它的第一个 chunk")
            if mine.get("input") != right["input"]:
                hint = ("the arguments never became valid JSON: say so with None, never guess the rest"
                        if right["input"] is None else
                        "no arguments came: that is {}" if right["input"] == {} else
                        "join the argument pieces of each index separately, then json.loads the whole")
                hint_zh = ("参数始终没能拼成合法的 JSON：用 None 表示，不要去猜剩下的部分"
                           if right["input"] is None else
                           "一个参数片段都没收到：那就是 {}" if right["input"] == {} else
                           "按 index 分别拼接参数片段，拼完整后再 json.loads")
                not_yet(f"on {what}: call {right['id']}'s input should be {_show(right['input'])}, yours was "
                        f"{_show(mine.get('input'))}: {hint}",
                        zh=f"在{_ZH[what]}上：调用 {right['id']} 的 input 应该是 {_show(right['input'])}，你的是 "
                           f"{_show(mine.get('input'))}：{hint_zh}")
        not_yet(f"on {what}: expected {_show(want, 70)}, got {_show(got, 70)}",
                zh=f"在{_ZH[what]}上：应该是 {_show(want, 70)}，实际是 {_show(got, 70)}")


def _tool_turns() -> list[tuple[str, list[dict], list[dict]]]:
    """(what, canonical messages, the OpenAI messages they become)."""
    call = lambda i, name, input: {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": input}  # noqa: E731
    result = lambda i, text: {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text}  # noqa: E731
    plain = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi! How can I help?"}]
    demo = [
        {"role": "user", "content": "北京和上海的天气怎么样？"},
        {"role": "assistant", "content": [{"type": "text", "text": "我来查一下。"},
                                          call(1, "get_weather", {"city": "北京"}),
                                          call(2, "get_weather", {"city": "上海"})]},
        {"role": "user", "content": [result(1, "北京：晴"), result(2, "上海：多云")]},
    ]
    demo_openai = [
        {"role": "user", "content": "北京和上海的天气怎么样？"},
        {"role": "assistant", "content": "我来查一下。", "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": "北京"}, ensure_ascii=False)}},
            {"id": "toolu_2", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": "上海"}, ensure_ascii=False)}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "北京：晴"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "上海：多云"},
    ]
    only_calls = [
        {"role": "user", "content": [{"type": "text", "text": "What time is it?"}]},
        {"role": "assistant", "content": [call(3, "get_current_time", {})]},
        {"role": "user", "content": [result(3, "12:00"), {"type": "text", "text": "And in Tokyo?"}]},
    ]
    only_calls_openai = [
        {"role": "user", "content": "What time is it?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "toolu_3", "type": "function", "function": {"name": "get_current_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "toolu_3", "content": "12:00"},
        {"role": "user", "content": "And in Tokyo?"},
    ]
    return [("a plain conversation", plain, plain),
            ("two tool calls answered in one user turn", demo, demo_openai),
            ("a call with no text, and a question after its result", only_calls, only_calls_openai)]


@_exercise("08", 3)
def check_08_3(to_openai_messages: Any) -> None:
    """`to_openai_messages(messages)`: canonical (Anthropic) messages as OpenAI chat messages."""
    _check_callable(to_openai_messages, "to_openai_messages",
                    "to_openai_messages(messages) returns the OpenAI messages list",
                    zh="to_openai_messages(messages) 返回 OpenAI 的消息列表")
    for what, messages, want in _tool_turns():
        given = copy.deepcopy(messages)
        got = _run(to_openai_messages, given, name="to_openai_messages", case=f"on {what}",
                   case_zh=f"在{_ZH[what]}上")
        if got is None:
            not_yet(f"to_openai_messages returned None on {what}: return the list of messages",
                    zh=f"to_openai_messages 在{_ZH[what]}上返回了 None：应该返回消息列表")
        if given != messages:
            not_yet(f"on {what}: to_openai_messages changed the messages it was given; build new ones",
                    zh=f"在{_ZH[what]}上：to_openai_messages 修改了传给它的消息；应该构造新的消息")
        if not isinstance(got, list):
            wrong_kind(f"to_openai_messages returned {_kind(got)}; return a list of message dicts",
                       zh=f"to_openai_messages 返回的是{_kind(got)}；应该返回一个由消息 dict 组成的列表")
        if got == want:
            continue
        if [_same_meaning(m) for m in got] == [_same_meaning(m) for m in want]:
            continue  # arguments with other spacing or escapes, text as content parts: the API reads them the same
        roles = [m.get("role") if isinstance(m, Mapping) else _kind(m) for m in got]
        want_roles = [m["role"] for m in want]
        if roles != want_roles:
            not_yet(f"on {what}: the roles came out as {roles}, expected {want_roles}: each tool_result becomes "
                    "its own \"tool\" message (with tool_call_id), in order, before any text of that turn",
                    zh=f"在{_ZH[what]}上：得到的 role 依次是 {roles}，应该是 {want_roles}：每个 tool_result 都单独变成"
                       "一条 \"tool\" 消息（带 tool_call_id），按原来的顺序，放在这一轮的所有文本之前")
        for index, (mine, right) in enumerate(zip(got, want)):
            if _same_meaning(mine) != _same_meaning(right):
                hint = hint_zh = ""
                if right.get("tool_calls") and isinstance(mine, Mapping):
                    calls = mine.get("tool_calls")
                    if calls and isinstance(calls, list) and isinstance(calls[0], Mapping):
                        arguments = (calls[0].get("function") or {}).get("arguments")
                        if not isinstance(arguments, str):
                            hint = ": a tool call's arguments are a JSON string (json.dumps), not a dict"
                            hint_zh = "：工具调用的 arguments 是一个 JSON 字符串（json.dumps），不是 dict"
                    if "content" not in mine:
                        hint = hint or ": an assistant message with tool calls still has \"content\" (None if no text)"
                        hint_zh = hint_zh or "：带工具调用的 assistant 消息也要有 \"content\"（没有文本就是 None）"
                elif right["role"] in ("user", "assistant") and isinstance(right.get("content"), str):
                    hint = ": text blocks become a plain string"
                    hint_zh = "：text block 要变成一个普通字符串"
                where, where_zh = _difference(_same_meaning(right), _same_meaning(mine), f"message {index}",
                                              f"第 {index} 条消息")
                not_yet(f"on {what}: {where}{hint}", zh=f"在{_ZH[what]}上：{where_zh}{hint_zh}")


def _same_meaning(message: Any) -> Any:
    """A message as the API reads it: arguments parsed, a list of text parts joined into one string."""
    if not isinstance(message, Mapping):
        return message
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text" for p in content):
        out["content"] = "".join(str(p.get("text", "")) for p in content)
    calls = out.get("tool_calls")
    if isinstance(calls, list) and all(isinstance(c, Mapping) and isinstance(c.get("function"), Mapping) for c in calls):
        out["tool_calls"] = [{**c, "function": {**c["function"], "arguments": _json(c["function"].get("arguments"))}}
                             for c in calls]
    return out


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else ("not a string", text)
    except ValueError:
        return ("not JSON", text)
