"""Checks for notebook 06 · Streaming."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from typing import Any

from miniagent.exercises._core import (_check_callable, _exercise, _kind, _mock_client, _run, _show, not_yet,
                                       wrong_kind)


def _sse(events: list[dict], *, newline: str = "\n", comments: bool = False, split_data: bool = False,
         space: str = " ") -> bytes:
    """A stream of `events` as the wire could carry it: another line ending, comment lines, the
    JSON of each event spread over several `data:` lines, or no space after the colon (the format
    allows all four)."""
    out = [": a comment line, which a parser must skip"] if comments else []
    for event in events:
        data = json.dumps(event, ensure_ascii=False, separators=(", ", ": "))
        lines = [f"event: {event['type']}"]
        if split_data and ", " in data:  # cut between two JSON members: each line alone is not JSON
            head, tail = data.split(", ", 1)
            lines += [f"data:{space}{head},", f"data:{space}{tail}"]
        else:
            lines.append(f"data:{space}{data}")
        if comments:
            lines.insert(1, ": keep-alive")
        out.append(newline.join(lines) + newline)
    return newline.join(out).encode("utf-8") + newline.encode()


def _stream_cases() -> list[tuple[str, list[dict]]]:
    """(description, events) for the streaming checks: text, the demo's four tool calls, a
    max_tokens cut inside tool JSON, a stream cut short, CJK and emoji."""
    from miniagent.mock.stream import message_events

    usage = {"input_tokens": 10, "output_tokens": 30}
    text = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "北京：晴 ☀️, 25°C. Shanghai: cloudy."}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}
    calls = [{"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}},
             {"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {"expression": "(1024 + 768) * 2"}},
             {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {"city": "北京"}},
             {"type": "tool_use", "id": "toolu_4", "name": "get_weather", "input": {"city": "上海"}}]
    tools = {**text, "content": [{"type": "text", "text": "Let me check."}, *calls], "stop_reason": "tool_use"}
    cut = {**text, "content": [{"type": "text", "text": "Working."}, {**calls[1], "input": {}}],
           "stop_reason": "max_tokens"}
    events = message_events(tools)
    broken = events[:next(i for i, e in enumerate(events) if e.get("index") == 3 and e["type"] == "content_block_delta"
                          and e["delta"].get("partial_json")) + 1]
    return [("a text answer", message_events(text)),
            ("the demo's four tool calls", events),
            ("a tool call cut off by max_tokens", message_events(cut, cut_json='{"expression": "(10')),
            ("a stream cut inside the third tool call", broken)]


def _overloaded() -> list[dict]:
    """A text answer that an `error` event ends after two pieces of text, as an overloaded API sends it."""
    from miniagent.mock.stream import message_events

    events = message_events({"id": "msg_2", "type": "message", "role": "assistant", "model": "m",
                             "content": [{"type": "text", "text": "Beijing is sunny today, 25 degrees, a light wind."}],
                             "stop_reason": "end_turn", "stop_sequence": None,
                             "usage": {"input_tokens": 10, "output_tokens": 12}})
    deltas = [i for i, e in enumerate(events) if e["type"] == "content_block_delta"]
    return events[:deltas[1] + 1] + [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]


_ZH = {"a text answer": "一段纯文本回答", "the demo's four tool calls": "演示里的四个工具调用",
       "a tool call cut off by max_tokens": "被 max_tokens 截断的工具调用",
       "a stream cut inside the third tool call": "第三个工具调用中途断开的流",
       "with \\n line endings": "换行符是 \\n", "with \\r\\n line endings": "换行符是 \\r\\n",
       "with comment lines": "带注释行", "with the JSON over two data: lines": "JSON 分在两行 data: 里",
       "with no space after data:": "data: 后面没有空格",
       "a stream that an error event ends": "以 error 事件结束的流"}
"""The Chinese of the cases' descriptions above, for the hints in the Chinese edition."""


@_exercise("06", 1)
def check_06_1(parse_events: Any) -> None:
    """`parse_events(raw)` on streams with LF and CRLF line endings, comment lines and data spread
    over several `data:` lines: the parsed data of every event, in order."""
    _check_callable(parse_events, "parse_events", "parse_events(raw bytes) returns the events' parsed data",
                    zh="parse_events(raw bytes) 返回每个事件解析后的 data")
    cases = [(what, events) for what, events in _stream_cases() if what != "a stream cut inside the third tool call"]
    cases.append(("a stream that an error event ends", _overloaded()))
    forms = [("with \\n line endings", {}), ("with \\r\\n line endings", {"newline": "\r\n"}),
             ("with comment lines", {"comments": True}), ("with the JSON over two data: lines", {"split_data": True}),
             ("with no space after data:", {"space": ""})]
    for (what, events), (how, style) in [(case, form) for case in cases for form in forms]:
        raw = _sse(events, **style)
        where_zh = f"在{_ZH[what]}上，{_ZH[how]}"
        got = _run(parse_events, raw, name="parse_events", case=f"on {what} {how}", case_zh=where_zh)
        if got is None:
            not_yet(f"parse_events returned None on {what} {how}: return a list of dicts",
                    zh=f"parse_events 返回了 None（{where_zh}）：应该返回一个 dict 列表")
        if not isinstance(got, list):
            wrong_kind(f"parse_events returned {_kind(got)}; return a list with one dict per event",
                       zh=f"parse_events 返回的是{_kind(got)}；应该返回一个列表，每个事件一个 dict")
        if got and all(isinstance(item, str) for item in got):
            wrong_kind("parse_events returned strings: parse each event's data with json.loads",
                       zh="parse_events 返回的是字符串：用 json.loads 解析每个事件的 data")
        if got != events:
            first = next((i for i, (a, b) in enumerate(zip(got, events)) if a != b), min(len(got), len(events)))
            seen = _show(got[first], 50) if first < len(got) else "nothing"
            seen_zh = f"是 {_show(got[first], 50)}" if first < len(got) else "没有这个事件"
            not_yet(f"on {what} {how}: {len(got)} events where there are {len(events)}; event {first} should be "
                    f"{_show(events[first], 50)}, yours was {seen}"
                    + (": join the data: lines of one event with \\n before parsing"
                       if style.get("split_data") else
                       ": keep every event, error included: it is how a stream that began with a 200 says it failed"
                       if first < len(events) and events[first]["type"] == "error" else ""),
                    zh=f"{where_zh}：流里有 {len(events)} 个事件，你得到 {len(got)} 个；事件 {first} 应该是 "
                       f"{_show(events[first], 50)}，你的{seen_zh}"
                       + ("：解析之前，先用 \\n 把同一个事件的几行 data: 拼起来" if style.get("split_data") else
                          "：每个事件都要保留，error 也不例外：一个以 200 开始的流，就是靠它来说明自己失败了"
                          if first < len(events) and events[first]["type"] == "error" else ""))


@_exercise("06", 2)
def check_06_2(tool_inputs: Any) -> None:
    """`tool_inputs(events)`: {index: input, or None if the JSON never completed}, per block."""
    _check_callable(tool_inputs, "tool_inputs", "tool_inputs(events) returns {index: input or None}",
                    zh="tool_inputs(events) 返回 {index: input 或 None}")
    wants = {"a text answer": {},
             "the demo's four tool calls": {1: {}, 2: {"expression": "(1024 + 768) * 2"}, 3: {"city": "北京"},
                                            4: {"city": "上海"}},
             "a tool call cut off by max_tokens": {1: None},
             "a stream cut inside the third tool call": {1: {}, 2: {"expression": "(1024 + 768) * 2"}, 3: None}}
    for what, events in _stream_cases():
        got = _run(tool_inputs, copy.deepcopy(events), name="tool_inputs", case=f"on {what}",
                   case_zh=f"在{_ZH[what]}上")
        if got is None:
            not_yet(f"tool_inputs returned None on {what}: return a dict (empty if there is no tool call)",
                    zh=f"tool_inputs 在{_ZH[what]}上返回了 None：应该返回一个 dict（没有工具调用就返回空 dict）")
        if not isinstance(got, Mapping):
            wrong_kind(f"tool_inputs returned {_kind(got)}; return a dict {{index: input or None}}",
                       zh=f"tool_inputs 返回的是{_kind(got)}；应该返回一个 dict {{index: input 或 None}}")
        want = wants[what]
        if dict(got) == want:
            continue
        # the first block that differs; of a key 1 and a key "1", the int first (its hint says what the keys
        # must be), whatever order the set holds them in (str hashes change with every process)
        wrong = next((i for i in sorted(set(want) | set(got), key=lambda i: (str(i), isinstance(i, str)))
                      if dict(got).get(i, "?") != want.get(i, "?")), None)
        if wrong not in got:
            hint = ": every tool_use block has an entry, keyed by its index (the int), finished or not"
            hint_zh = "：每个 tool_use block 都要有一项，以它的 index（一个 int）为键，不管它完整与否"
        elif wrong not in want:
            hint = ": only tool_use blocks have an entry (a text block has no input)"
            hint_zh = "：只有 tool_use block 才有一项（text block 没有 input）"
        elif want.get(wrong) == {}:
            hint = ": all its fragments are empty, so no arguments came: its input is {}, not None"
            hint_zh = "：它的片段全是空的，也就是没有参数：input 是 {}，不是 None"
        elif want.get(wrong, "?") is None:
            hint = ": its JSON never completed, so its input is None (never guess the rest)"
            hint_zh = "：它的 JSON 始终没有完整，所以 input 是 None（不要去猜剩下的部分）"
        else:
            hint = ": join the fragments of each block separately, by its index, and parse them at its content_block_stop"
            hint_zh = "：按 index 分别拼接每个 block 的片段，到它的 content_block_stop 再解析"
        not_yet(f"on {what}, block {wrong} should be {_show(want.get(wrong, 'absent'), 40)}, yours was "
                f"{_show(dict(got).get(wrong, 'absent'), 40)}{hint}",
                zh=f"在{_ZH[what]}上，block {wrong} 应该是 {_show(want.get(wrong, '缺失'), 40)}，你的是 "
                   f"{_show(dict(got).get(wrong, '缺失'), 40)}{hint_zh}")


@_exercise("06", 3)
def check_06_3(time_to_first_text: Any) -> None:
    """`time_to_first_text(client, messages)` on two mocks paced differently: close to each one's
    first-token time, well before the whole answer's."""
    _check_callable(time_to_first_text, "time_to_first_text",
                    "time_to_first_text(client, messages) returns seconds, a float",
                    zh="time_to_first_text(client, messages) 返回秒数，一个 float")
    question = [{"role": "user", "content": "What is your name, and what can you do?"}]
    for first in (0.15, 0.45):
        client = _mock_client()
        client.mock.pace(first=first, rate=100)
        got = _run(time_to_first_text, client, copy.deepcopy(question), name="time_to_first_text",
                   case=f"on a mock whose first token comes after {first} s",
                   case_zh=f"在第一个 token {first} s 后才到的 mock 上")
        if got is None:
            not_yet("time_to_first_text returned None: return the seconds, a float",
                    zh="time_to_first_text 返回了 None：应该返回秒数，一个 float")
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
            wrong_kind(f"time_to_first_text returned {_kind(got)}; return the seconds, a number such as 0.2",
                       zh=f"time_to_first_text 返回的是{_kind(got)}；应该返回秒数，一个像 0.2 这样的数")
        if not any(e.request["body"].get("stream") for e in client.exchanges):
            not_yet("it made no streamed request: use client.stream(messages); "
                    "a plain call gives nothing until the end",
                    zh="它没有发出流式请求：用 client.stream(messages)；普通调用要到最后才有东西")
        whole = first + 30 / 100  # the mock's answer is about 30 tokens, at 100 a second after the first
        if got > 10 and first - 0.05 <= got / 1000 <= first + (whole - first) / 2:
            not_yet(f"it said {got:g}, which is the first token's time ({first} s) in milliseconds: return seconds "
                    "(time.perf_counter() differences already are)",
                    zh=f"它给出 {got:g}，这是第一个 token 的时间（{first} s）换算成的毫秒数：应该返回秒"
                       "（time.perf_counter() 的差值本来就是秒）")
        if got < first - 0.05:
            not_yet(f"it said {got:.2f} s, before any text could arrive (the first token came after {first} s): "
                    "stop the clock at the first text_delta, not at message_start",
                    zh=f"它给出 {got:.2f} s，这时还不可能有文本到达（第一个 token {first} s 后才到）："
                       "在第一个 text_delta 停表，而不是在 message_start")
        if got > first + (whole - first) / 2:
            not_yet(f"it said {got:.2f} s, nearer the whole answer's time than the first token's ({first} s): "
                    "stop the clock at the first text_delta",
                    zh=f"它给出 {got:.2f} s，更接近整个回答的耗时，而不是第一个 token 的（{first} s）："
                       "在第一个 text_delta 停表")
