"""How the offline mock reads a request: what is asked, and what the text offers.

The mock's brain (`brain.py`) decides what to answer; this module only reads. It
finds the question being worked on and the tool calls made for it, the language it
is written in, the kinds of request it makes (weather, time, arithmetic, ...), the
values an argument could take (cities, expressions, numbers, quoted strings), the
facts a conversation states (a name, a preference), whether a question is about the
user (what a memory tool would hold), and fills a tool's arguments from its JSON schema.
It also tells the tools that stand for more than a function apart (another agent behind a
tool, a hand-off to another agent, a plan) and cuts a question into the self-contained
tasks several specialists are given.
Chinese is read as overlapping pairs of characters, since it has no spaces between words.
Keeping the reading apart lets each half be read on its own.

Everything here is a small table of keywords or a regular expression, not language
understanding: the point is an answer that is plausible, deterministic and easy to
predict, in English and Chinese. Every function is pure, so the same request always
reads the same way.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from miniagent import i18n
from miniagent.messages import blocks, result_text, text_block, text_of, tool_results, tool_uses
from miniagent.mock import spoken

# --- the language ---------------------------------------------------------------------------

_HAN = re.compile(r"[\u3400-\u9fff]")


def language(text: str) -> str:
    """'zh' when the text is mostly Chinese, else 'en'.

    Counting (rather than "any Chinese character") keeps "What's the weather in 北京?"
    an English question. A text with no words at all ("144 ÷ 12") is in the learner's language.
    """
    han, words = len(_HAN.findall(text)), len(re.findall(r"[A-Za-z]+", text))
    if not han and not words and text.strip():  # "144 ÷ 12": in no language, so in the learner's (MINIAGENT_LANG)
        return i18n.language()
    return "zh" if han and han >= words else "en"


# --- the question and the tool calls made for it -----------------------------------------------


def user_text(message: dict) -> str:
    """The text of a user message; '' for an assistant message."""
    return text_of(message) if message["role"] == "user" else ""


def system_text(body: dict) -> str:
    """The system prompt's text, whether it was sent as a string or as blocks."""
    return text_of({"content": body.get("system")})


def question_index(messages: list[dict]) -> int:
    """Index of the latest user message with text: the question being worked on (-1 if none)."""
    for i in range(len(messages) - 1, -1, -1):
        if user_text(messages[i]).strip():
            return i
    return -1


@dataclass
class Pair:
    """One tool call of this episode, its result, and the round (assistant turn) it was made in."""

    call: dict
    result: str
    error: bool
    round: int


def episode(messages: list[dict], start: int) -> list[Pair]:
    """The tool calls made since the question, each paired with its result.

    A result counts as a failure when it is marked `is_error` or starts with "error".
    """
    pairs: list[Pair] = []
    round_no = 0
    for i in range(start + 1, len(messages) - 1):
        calls = tool_uses(messages[i]) if messages[i]["role"] == "assistant" else []
        if not calls:
            continue
        answers = {b.get("tool_use_id"): b for b in tool_results(messages[i + 1])}
        for call in calls:
            block = answers.get(call.get("id"), {})
            text = result_text(block)
            failed = bool(block.get("is_error")) or text.lstrip().lower().startswith("error")
            pairs.append(Pair(call, text, failed, round_no))
        round_no += 1
    return pairs


def args_text(call: dict) -> str:
    """A call's input written as `k=v, k=v`, for answers and summaries."""
    return ", ".join(f"{k}={v}" for k, v in (call.get("input") or {}).items())


# --- tool calls and results written as text ------------------------------------------------------------

# Some frameworks keep a tool call and its result as plain text. smolagents' ToolCallingAgent sends the
# calls the model made back as an assistant text, "Calling tools:\n[{'id': ..., 'type': 'function',
# 'function': {'name': ..., 'arguments': {...}}}]" (a Python list), their results as a user text,
# "Observation:\n..." (one line per call when they fit on one), and a call that failed only as a user
# text, "Error:\nError executing tool 'name' with arguments {...}: ValueError: ..."; a text ReAct agent
# writes "Action: {"name": ..., "arguments": ...}" or "Action: name" and "Action Input: ...".
_CALLING = re.compile(r"(?:^|\n)[ \t]*Calling tools:[ \t]*\n?")
_ACTION_BLOB = re.compile(r"(?:^|\n)[ \t]*Action[ \t]*:\s*(?=\{)")
_ACTION_NAMED = re.compile(r"(?:^|\n)[ \t]*Action[ \t]*:[ \t]*([A-Za-z0-9_.-]{1,128})[ \t]*\n[ \t]*Action[ _]Input[ \t]*:"
                           r"[ \t]*([^\n]*(?:\n(?![ \t]*Observation\b)[^\n]*)*)", re.I)
_NAME_KEYS, _ARGS_KEYS = ("name", "tool", "tool_name", "action"), ("arguments", "args", "parameters", "input", "action_input")
# The start of a user text that answers the calls before it: the result, or smolagents' failure of one of them.
_OBSERVED = re.compile(r"^\s*(?:(?:Observations?|Tool (?:results?|outputs?|responses?)|观察(?:结果)?|工具结果)[ \t]*[:：][ \t]*\n?"
                       r"|Call id[ \t]*:[^\n]*\n(?=[ \t]*Error\b))", re.I)
_FAILED = re.compile(r"(?:^|\n)(?=Error:\nError executing (?:tool|request to team member) '([^'\n]{1,128})' with arguments )")
_RETRY = re.compile(r"\n\s*Now let's retry:")  # what smolagents adds after an error, to the model
MAX_TEXT_CALL = 100_000  # characters of a text read for calls: a longer one is left as text
MAX_TEXT_READ = 300_000  # characters of one request's texts read for calls (a run of smolagents' sends ~10,000)


def _literal(text: str) -> Any:
    """The Python or JSON literal the text is (a list of calls, a dict of arguments), else None."""
    if len(text) > MAX_TEXT_CALL:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _input(arguments: Any, tool: dict) -> dict:
    """A call's arguments as a tool_use input: an object (or a text of one); a lone value goes to a tool's one property."""
    if isinstance(arguments, str):
        parsed = _literal(arguments.strip())
        arguments = parsed if isinstance(parsed, dict) else arguments.strip()
    if isinstance(arguments, dict):
        return arguments if all(isinstance(k, str) for k in arguments) else {}
    props = list(schema_properties(tool))
    return {props[0]: arguments} if len(props) == 1 and arguments not in ("", None) else {}


def text_calls(text: str, tools: list[dict]) -> tuple[str, list[dict]]:
    """The calls of offered tools that an assistant text says it made (tool_use blocks without an id),
    and the text before them; ("", []) when it names none."""
    named = {t.get("name"): t for t in tools}
    found: list[tuple[Any, Any]] = []
    at = None
    if len(text) <= MAX_TEXT_CALL and (at := _CALLING.search(text)):
        listed = _literal(text[at.end():].strip())
        found = [(f.get("name"), f.get("arguments")) for item in (listed if isinstance(listed, list) else [])
                 if isinstance(item, dict) and isinstance(f := item.get("function"), dict)]
    elif len(text) <= MAX_TEXT_CALL and (at := _ACTION_BLOB.search(text)):
        try:
            blob = json.JSONDecoder().raw_decode(text, at.end())[0]
        except (ValueError, RecursionError):
            blob = None
        if isinstance(blob, dict):
            found = [(next((blob[k] for k in _NAME_KEYS if k in blob), None), next((blob[k] for k in _ARGS_KEYS if k in blob), {}))]
    elif len(text) <= MAX_TEXT_CALL and (at := _ACTION_NAMED.search(text)):
        found = [(at.group(1), at.group(2).strip())]
    calls = [{"type": "tool_use", "name": n, "input": _input(a, named[n])} for n, a in found
             if isinstance(n, str) and n in named]
    return (text[:at.start()].strip() if at and calls else ""), calls


def _failures(text: str, tools: list[dict]) -> tuple[str, list[tuple[dict, str]]]:
    """The calls a user text reports as failed (smolagents: "Error executing tool 'x' with arguments {...}: ..."),
    each with its error, and the text before the first; ("", []) when it reports none."""
    names = {t.get("name"): t for t in tools}
    starts = [m for m in _FAILED.finditer(text[:MAX_TEXT_CALL]) if m.group(1) in names]
    out = []
    for n, m in enumerate(starts):
        said = text[m.end():starts[n + 1].start() if n + 1 < len(starts) else len(text)]
        error = _RETRY.split(said.strip().removeprefix("Error:").strip())[0].strip()  # without the framework's advice
        given = error.partition(" with arguments")[2].lstrip()  # may be cut short: "...with arguments" and no more
        args: Any = given.split(": ", 1)[0]  # a lone value is written as it is
        for end in [c.start() + 1 for c in re.finditer(r"\}: ", given)][:8]:  # arguments written as a dict end at "}: "
            if isinstance(found := _literal(given[:end]), dict):
                args = found
                break
        out.append(({"type": "tool_use", "name": m.group(1), "input": _input(args, names[m.group(1)])}, error))
    return (text[:starts[0].start()].strip() if out else ""), out


def _results(text: str, count: int) -> list[str]:
    """One result per call: a line each when there are as many lines as calls, else the whole text for each."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines if count > 1 and len(lines) == count else [text] * count


def with_text_calls(messages: list[dict], tools: list[dict]) -> list[dict]:
    """The conversation with tool calls and results written as text made into tool_use and tool_result
    blocks, so they read like any others: an assistant text that names calls of offered tools, when the
    user text after it answers them ("Observation: ..."), and a user text that reports a failed call.
    Everything else is kept as it is; the list itself when nothing is written that way."""
    if not tools:
        return messages
    out: list[dict] = []
    pending: tuple[int, str] | None = None  # the assistant text just before: (its index in out, its text)
    spent = 0  # characters read for calls so far (parsing a literal is the slow part)

    def add(role: str, new: list[dict]) -> None:
        if out and out[-1]["role"] == role:
            out[-1] = {**out[-1], "content": blocks(out[-1]["content"]) + new}
        else:
            out.append({"role": role, "content": new})

    for n, message in enumerate(messages):
        content = blocks(message.get("content"))
        plain = bool(content) and all(isinstance(b, dict) and b.get("type") == "text" for b in content)
        text = text_of(message) if plain else ""
        waiting, pending = pending, None
        if plain and message["role"] == "assistant":
            pending = (len(out), text)  # read for calls only when the next message answers them
        elif plain and message["role"] == "user":
            answer = _OBSERVED.match(text) if waiting and spent + len(waiting[1]) <= MAX_TEXT_READ else None
            spent += len(waiting[1]) if waiting and answer else 0
            before, calls = text_calls(waiting[1], tools) if waiting and answer else ("", [])
            if answer and calls:
                ids = [f"toolu_text_{n}_{k}" for k in range(len(calls))]
                out[waiting[0]] = {**out[waiting[0]], "content": ([text_block(before)] if before else []) + [
                    {**call, "id": i} for call, i in zip(calls, ids)]}
                results = _results(_RETRY.split(text[answer.end():])[0].strip(), len(calls))
                out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}
                                                        for i, r in zip(ids, results)]})
                continue
            before, failed = _failures(text, tools) if spent + len(text) <= MAX_TEXT_READ else ("", [])
            spent += len(text) if failed else 0
            if failed:
                if before:
                    add("user", [text_block(before)])
                for k, (call, error) in enumerate(failed):
                    add("assistant", [{**call, "id": f"toolu_text_{n}_{k}"}])
                    add("user", [{"type": "tool_result", "tool_use_id": f"toolu_text_{n}_{k}", "content": error,
                                  "is_error": True}])
                continue
        out.append(message)
    return out if len(out) != len(messages) or any(a is not b for a, b in zip(out, messages)) else messages


# --- values in the text: cities, expressions, numbers, quoted strings ------------------------------

# (Chinese, English, IANA timezone)
CITIES = [
    ("北京", "Beijing", "Asia/Shanghai"), ("上海", "Shanghai", "Asia/Shanghai"),
    ("广州", "Guangzhou", "Asia/Shanghai"), ("深圳", "Shenzhen", "Asia/Shanghai"),
    ("杭州", "Hangzhou", "Asia/Shanghai"), ("成都", "Chengdu", "Asia/Shanghai"),
    ("重庆", "Chongqing", "Asia/Shanghai"), ("武汉", "Wuhan", "Asia/Shanghai"),
    ("西安", "Xi'an", "Asia/Shanghai"), ("南京", "Nanjing", "Asia/Shanghai"),
    ("天津", "Tianjin", "Asia/Shanghai"), ("香港", "Hong Kong", "Asia/Hong_Kong"),
    ("台北", "Taipei", "Asia/Taipei"), ("东京", "Tokyo", "Asia/Tokyo"), ("首尔", "Seoul", "Asia/Seoul"),
    ("新加坡", "Singapore", "Asia/Singapore"), ("曼谷", "Bangkok", "Asia/Bangkok"),
    ("孟买", "Mumbai", "Asia/Kolkata"), ("迪拜", "Dubai", "Asia/Dubai"), ("伦敦", "London", "Europe/London"),
    ("巴黎", "Paris", "Europe/Paris"), ("柏林", "Berlin", "Europe/Berlin"), ("罗马", "Rome", "Europe/Rome"),
    ("马德里", "Madrid", "Europe/Madrid"), ("莫斯科", "Moscow", "Europe/Moscow"),
    ("纽约", "New York", "America/New_York"), ("洛杉矶", "Los Angeles", "America/Los_Angeles"),
    ("旧金山", "San Francisco", "America/Los_Angeles"), ("芝加哥", "Chicago", "America/Chicago"),
    ("多伦多", "Toronto", "America/Toronto"), ("悉尼", "Sydney", "Australia/Sydney"),
    ("开罗", "Cairo", "Africa/Cairo"),
]
_NOT_PLACES = {"Celsius", "Fahrenheit", "English", "Chinese", "French", "German", "Japanese", "Spanish",
               "UTC", "GMT", "Python", "JSON", "The", "My", "Your", "It"}


def find_cities(text: str) -> list[tuple[int, str]]:
    """(position, name as written) of the cities in the text, in order, each city once.

    Known cities come from the table; an unknown place is taken from "in/for <Capitalised
    Words>" (so "weather in Atlantis" passes "Atlantis" and the tool can say it doesn't know it).
    """
    found: dict[str, tuple[int, str]] = {}
    for zh, en, _ in CITIES:
        for name in (zh, en):
            m = re.search(r"(?<![A-Za-z])" + re.escape(name) + r"(?![A-Za-z])", text, re.IGNORECASE)
            if m and (en not in found or m.start() < found[en][0]):
                found[en] = (m.start(), m.group())
    taken = [(p, p + len(n)) for p, n in found.values()]
    for m in re.finditer(r"\b(?i:in|for)\s+([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*)", text):
        place = m.group(1)
        if place not in _NOT_PLACES and not any(a <= m.start(1) < b for a, b in taken):
            found.setdefault(place, (m.start(1), place))
    if not found:  # 亚特兰蒂斯的天气 -> 亚特兰蒂斯
        m = re.search(r"([\u4e00-\u9fff]{2,8})的(?:天气|气温)", text)
        place = m and re.split(r"[我你查看问说告诉帮一下请在和与及、]+", m.group(1))[-1]
        if place and len(place) >= 2:
            found[place] = (m.start(1) + m.group(1).rfind(place), place)
    return sorted(found.values())


def timezone_of(city: str) -> str | None:
    return next((tz for zh, en, tz in CITIES if city.lower() in (zh, en.lower())), None)


def _symbolic(text: str) -> list[tuple[int, int, str]]:
    """(start, end, expression) of each expression written in symbols (in a `spoken.view` of the text)."""
    found = []
    for m in re.finditer(r"[\d(][\d\s.+\-*/%()^]*[\d)]", text):
        expr, start = m.group(), m.start()
        while expr.count(")") > expr.count("(") and expr.endswith(")"):
            expr = expr[:-1].rstrip()
        while expr.count("(") > expr.count(")") and expr.startswith("("):
            rest = expr[1:].lstrip()
            start, expr = start + len(expr) - len(rest), rest
        is_date = re.match(r"\d{4}-\d{1,2}-\d{1,2}(?![\d.])", expr)  # a date, perhaps with a time after it
        if re.search(r"[\d)]\s*(?:\*\*|//|[-+*/%^])\s*[-(]*\s*\d", expr) and not is_date:
            found.append((start, start + len(expr), expr))
    return found


def expression_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, expression) of each arithmetic expression: written in symbols, or said in words.

    The text is read as `spoken.view` gives it (full-width brackets and digits as ASCII, × ÷ as
    * /), so "（1024 + 768）× 2" is "(1024 + 768) * 2". Words become symbols ("12 乘以 34" ->
    "12 * 34", "15% of 80" -> "80 * 15 / 100", "100 华氏度是多少摄氏度" -> "(100 - 32) * 5 / 9"):
    see spoken.py. An expression in symbols keeps its spacing as written; unbalanced brackets at
    either end are dropped ("(2 + 3" -> "2 + 3"), and a date such as 2024-01-02 is not a subtraction.
    """
    seen = spoken.view(text)
    said = spoken.spoken(seen)
    written = [(a, b, e) for a, b, e in _symbolic(seen) if not any(s < b and a < t for s, t, _ in said)]
    return sorted(written + said)


def expressions(text: str) -> list[tuple[int, str]]:
    """(position, expression) for each arithmetic expression (see `expression_spans`)."""
    return [(a, e) for a, _, e in expression_spans(text)]


def numbers(text: str) -> list[int | float]:
    """The numbers in the text, in order; those inside an arithmetic expression only if there are no others.

    A minus sign counts only where it cannot be a hyphen: "-40" is negative, "ABC-1234" and
    "2026-05-09" hold no negative numbers.
    """
    spans = [(a, b) for a, b, _ in expression_spans(text)]
    every = [(m.start(), m.group()) for m in re.finditer(r"(?:(?<![\w.])-)?(?<![\w.])\d+(?:\.\d+)?|(?<![\w.-])-\d+(?:\.\d+)?", text)]
    outside = [(p, n) for p, n in every if not any(a <= p < b for a, b in spans)]
    return [float(n) if "." in n else int(n) for _, n in (outside or every)]


def quoted(text: str) -> list[str]:
    """The quoted strings in the text ("...", “...”, 「...」 or '...'), in order."""
    found = re.finditer(r'"([^"]+)"|“([^”]+)”|「([^」]+)」|\'([^\']{2,})\'', text)
    return [next(g for g in m.groups() if g) for m in found]


def clause(text: str, pos: int) -> str:
    """The clause of the text around a position (split at punctuation, not at decimal points)."""
    cuts = [m.end() for m in re.finditer(r"[,;?!，。；？！\n]|(?<!\d)\.(?!\d)", text)]
    start = max([c for c in cuts if c <= pos], default=0)
    end = min([c for c in cuts if c > pos], default=len(text) + 1) - 1
    return text[start:end].strip()


_FILLER = re.compile(
    r"^(?:(?:please|can you|could you|would you|help me|i want to|i'd like to|tell me|and|also|then|now|just"
    r"|search(?: for)?|look up|find|translate|convert|remember(?: that)?|note down(?: that)?|recall|forget)\s+)+"
    r"|^(?:请|帮我|你能|能不能|麻烦|顺便|再|然后|告诉我|搜索一下|搜一下|搜索|查找|查一下|翻译一下|翻译|记住|记下|记一下)+",
    re.IGNORECASE)
_CUT = re.compile(r"[,;?!，。；？！\n]|(?<!\d)\.(?!\d)")
# A clause that only points back ("Recall it from memory", "记住它") means the clause it points to.
_POINTS_BACK = re.compile(r"^(?:it|that|this|them|those|these)\b|^(?:它|这|那)", re.I)


def phrase(question: str, anchors: list[int]) -> str:
    """The part of the question a free-text argument should carry, minus the asking.

    That is the clause where the tool was asked for (its first anchor), or the whole
    question when there is no anchor.
    """
    text = clause(question, min(anchors)) if anchors else question
    text = re.sub(r"\s+(?:please|for me|thanks)\W*$|(?:吧|呢|一下)\W*$", "", _FILLER.sub("", text), flags=re.I)
    if anchors and _POINTS_BACK.search(text):
        others = [c.strip() for c in _CUT.split(question) if c.strip() and c.strip() != clause(question, min(anchors))]
        meant = next((c for c in others if content_words(c)), others[0] if others else None)
        if meant:
            return phrase(meant, [])
    return text.strip(" ?？!！.。") or question.strip()


_MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "was", "did", "had"}
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes", "'m": "is", "'ve": "has", "'d": "would",
              "'ll": "will", "don't": "doesn't", "haven't": "hasn't"}


def _third_person_verb(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _MODALS or not low.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    return verb[:-1] + "ies" if re.search(r"[^aeiou]y$", low) else verb + "s"


def as_fact(text: str) -> str:
    """A statement in the first person rewritten to make sense on its own, later, as a memory does:
    "my favourite colour is green" -> "The user's favourite colour is green.", "I like tea" -> "The
    user likes tea.", 我最喜欢的颜色是绿色 -> 用户最喜欢的颜色是绿色。"""
    text = text.strip()
    if language(text) == "zh":
        text = re.sub(r"我(?:自己)?(?!们)", "用户", text)
        return text if re.search(r"[。！？.!?]$", text) else text + "。"
    text = re.sub(r"\b(?:my|mine)\b", "the user's", text, flags=re.I)
    text = re.sub(r"\bmyself\b", "themselves", text, flags=re.I)
    text = re.sub(r"\bI('m|'ve|'d|'ll)|\bI\s+(don't|haven't|[A-Za-z]+)\b",
                  lambda m: "the user " + _third_person_verb(m.group(1) or m.group(2)), text)
    text = re.sub(r"\bme\b", "the user", text)
    text = text[:1].upper() + text[1:]
    return text if re.search(r"[.!?]$", text) else text + "."


# --- kinds of request, and the words that signal them ------------------------------------------

# A concept is a kind of request the brain recognises, with the words that signal it.
CONCEPTS = {
    "time": r"\b(?:time|clock|date|what day|which day|day of the week|weekday|what year|which year|what month)\b"
            r"|\bis (?:it|today|tomorrow) (?:a )?(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend|weekday)\b"
            r"|几点|时间|日期|(?:星期|周|礼拜)几|几月几|几号|(?:今天|明天|昨天)是?哪一?天|周末|今天(?:是)?(?:星期|周|礼拜)",
    "math": r"\b(?:calculat\w*|comput\w*|math\w*|arithmetic|expressions?|evaluate)\b|计算|算一下|算算|帮我算|算出|表达式",
    "weather": r"\b(?:weather|forecasts?|temperatures?|rain\w*|snow\w*|sunny|umbrella|cold|hot|warm|chilly|freezing"
               r"|coat|jacket|shorts)\b|\b(?:like|is it) outside\b|天气|气温|温度|下雨|下雪|带(?:把)?伞|雨伞|打伞"
               r"|(?:冷|热|凉快?|暖和?)(?:不(?:冷|热|凉|暖)|吗|嘛|么|吧|呢|啊|了)|[多更很好挺太](?:冷|热)|几度|多少度|外套|羽绒服",
    "search": r"\b(?:search\w*|look up)\b|搜索|搜一下|查找",
    "fetch": r"\bfetch\w*\b|\b(?:web )?pages?\b|https?://|抓取|网页|页面|链接",
    "convert": r"\b(?:convert\w*|conversion)\b|转换|换算",
    "translate": r"\btranslat\w*|翻译",
    # long-term memory: keeping a fact, looking one up again, deleting one
    "remember": r"\b(?:remember|memori[sz]e|keep in mind|note down)\b|记住|记下|记一下|记着",
    "recall": r"\b(?:recall\w*|remind\w*)\b|回忆|想起|记得",
    "forget": r"\b(?:forget|forgets|delete|deletes|erase|erases)\b|忘掉|忘记|忘了|删除|删掉",
}
LOOKUP = ("search", "recall")  # concepts of tools that find things again: their descriptions name what they hold
_CONCEPT_RX = {c: re.compile(p, re.IGNORECASE) for c, p in CONCEPTS.items()}

SUMMARISE = re.compile(r"\bsummar(?:ise|ize|y)\w*|\bcompress\w*|\btl;?dr\b|总结|摘要|概括|压缩", re.I)

_STOPWORDS = set("""
what when where which whom whose with from this that these those there their them they have does doing done
into onto about above after again also been being could would should shall will just like more most only
other some such than then very your yours please tell know want need help give make thing things stuff
tool tools function current given optionally optional return returns result results value values using used
uses input output data information info every each here over under much many today able thanks thank hello
okay sure accept accepts names name does something anything
""".split())


def tool_text(tool: dict) -> str:
    """What a tool says about itself: its name split into words, then its description."""
    return " ".join(re.split(r"[_\-]+", tool.get("name", ""))) + " " + (tool.get("description") or "")


def tool_concepts(tool: dict) -> set[str]:
    return {c for c, rx in _CONCEPT_RX.items() if rx.search(tool_text(tool))}


def primary_concept(tool: dict) -> str | None:
    """The concept a tool is mostly about: the one its name (then description) mentions first."""
    text = tool_text(tool)
    found = [(m.start(), c) for c, rx in _CONCEPT_RX.items() if (m := rx.search(text))]
    return min(found)[1] if found else None


def asked_concepts(question: str) -> dict[str, list[int]]:
    """Concept -> positions where the question asks for it (an arithmetic expression asks for math).

    "Remember" in a question ("Do you remember my name?") asks to recall, not to keep something.
    """
    asked = {c: [m.start() for m in rx.finditer(question)] for c, rx in _CONCEPT_RX.items()}
    asked["math"] = sorted(asked["math"] + [pos for pos, _ in expressions(question)])
    for pos in list(asked["remember"]):
        end = re.search(r"[,;?!，。；？！\n]|(?<!\d)\.(?!\d)|$", question[pos:pos + 300]).group()  # its clause's end
        if end in ("?", "？") and not re.match(r"\w+\s+that\b", question[pos:], re.I):
            asked["remember"].remove(pos)
            asked["recall"] = sorted(asked["recall"] + [pos])
    return {c: pos for c, pos in asked.items() if pos}


def is_lookup(tool: dict) -> bool:
    """Whether a tool finds things again (its main concept is search or recall)."""
    return primary_concept(tool) in LOOKUP


def recalls_memory(tool: dict) -> bool:
    """Whether a tool looks up what was kept from earlier conversations: its main concept is recall,
    or it searches and says it searches a memory."""
    concept = primary_concept(tool)
    says_memory = re.search(r"\bmemor(?:y|ies)\b|记忆", tool_text(tool), re.I)
    return concept == "recall" or concept == "search" and bool(says_memory)


# A question about the user (their own name, likes, things): what a memory of earlier conversations holds.
_ABOUT_ME = re.compile(r"\b(?:my|mine|am i|do i|did i|have i)\b|我(?!们)", re.I)
_QUESTION = re.compile(r"[?？]|^\W*(?:what|who|where|when|which|how|do|does|did|is|are|was|were|can|may|should)\b"
                       r"|什么|哪|谁|吗|几|多少|多[长久大远高重]|怎么|怎样|如何", re.I)


def is_question(text: str) -> bool:
    """Whether the text asks something (a question mark, a question word), rather than only says something."""
    return bool(_QUESTION.search(text))


def about_the_user(question: str) -> int | None:
    """Where the question asks something about the user ("What is my favourite colour?", "我最喜欢什么颜色？"):
    a question about what is the user's ("my ...", 我的, 我最喜欢) with something to look for; else None."""
    me = _ABOUT_ME.search(question)
    if me and (asked_facts(question) or _QUESTION.search(question) and content_words(question)):
        return me.start()
    return None


# Chinese function and question characters: a run of Chinese is cut at them before it is paired, so
# 我每年有多少天年假 gives 每年 ... 年假, and never 什么 or 的X (they would match every text).
_CJK_STOP = "的了吗呢吧啊是在和与或我你他她它们这那哪谁什么怎几个请把被给让有也都就还要每"
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@lru_cache(maxsize=65536)
def _concept_word(word: str) -> bool:
    return any(rx.fullmatch(word) for rx in _CONCEPT_RX.values())


def content_words(text: str, cjk: bool = True) -> list[tuple[int, str]]:
    """(position, word) for words that carry meaning: 4+ letters, no stopwords, no concept words.

    A final "s" is dropped from longer words, so "recipes" and "recipe" match. Chinese has no
    spaces between words, so a run of it gives its overlapping pairs of characters (带薪年假 ->
    带薪, 薪年, 年假; most Chinese words are two characters long), the way search engines index
    it; the run is first cut at function characters (_CJK_STOP). `cjk=False` leaves them out.
    """
    words = []
    for m in re.finditer(r"[A-Za-z][A-Za-z'-]{3,}", text):
        w = m.group().lower()
        if w in _STOPWORDS or _concept_word(w):
            continue
        words.append((m.start(), w[:-1] if w.endswith("s") and len(w) > 4 else w))
    if cjk:
        for m in _CJK_RUN.finditer(text):
            for run in re.finditer(f"[^{_CJK_STOP}]{{2,}}", m.group()):
                at = m.start() + run.start()
                for i in range(len(run.group()) - 1):
                    pair = run.group()[i:i + 2]
                    if not _concept_word(pair):
                        words.append((at + i, pair))
        words.sort()
    return words


def tool_words(tool: dict) -> set[str]:
    """The content words of a tool's name and description."""
    return {w for _, w in content_words(tool_text(tool))}


# --- tools that stand for more than a function: another agent, a hand-off, a plan -----------------------

_AGENTISH = re.compile(r"\b(?:agents?|specialists?|experts?|assistants?|delegat\w*)\b|self-contained task"
                       r"|专家|智能体|助手|代理", re.I)
_TRANSFER = re.compile(r"^(?:transfer|hand_?off)_to_(\w+)$", re.I)
_PLANNISH = re.compile(r"(?:^|_)(?:plan|todos?|checklist)(?:_|$)", re.I)


def is_delegate(tool: dict) -> bool:
    """Whether a tool is another agent behind a tool (`team.agent_tool`): its only input is a required
    string `task`, and its name or description says it is an agent, a specialist or an expert.

    Both, so a to-do tool whose one field happens to be called `task` stays an ordinary tool."""
    props = schema_properties(tool)
    required = (tool.get("input_schema") or {}).get("required") or []
    return (list(props) == ["task"] and json_type(props["task"]) == "string" and "task" in required
            and bool(_AGENTISH.search(tool_text(tool))))


def transfer_target(tool: dict) -> str | None:
    """The agent a hand-off tool passes the conversation to (`transfer_to_weather_desk` -> weather_desk), else None.

    A hand-off tool needs nothing to be called (a `reason` at most): `transfer_to_savings(amount)`
    moves money, not the conversation. A tool_use block reads the same way as a tool (its name)."""
    m = _TRANSFER.match(str(tool.get("name") or ""))
    required = (tool.get("input_schema") or {}).get("required") or []
    return m.group(1) if m and not required else None


def plan_fields(tool: dict) -> tuple[str, str, str] | None:
    """(list, text, flag) property names of a plan tool (`update_plan(steps=[{step, done}])`), else None.

    A plan tool takes a list of objects, each with a string and a boolean, and its name says it
    is a plan (update_plan, write_todos, checklist): the shape alone could be a list of settings."""
    if not _PLANNISH.search(str(tool.get("name") or "")):
        return None
    for name, prop in schema_properties(tool).items():
        items = prop.get("items") if isinstance(prop, dict) and json_type(prop) == "array" else None
        inner = items.get("properties") if isinstance(items, dict) else None
        if not isinstance(inner, dict):
            continue
        text = next((k for k, p in inner.items() if isinstance(p, dict) and json_type(p) == "string"), None)
        flag = next((k for k, p in inner.items() if isinstance(p, dict) and json_type(p) == "boolean"), None)
        if text and flag:
            return name, text, flag
    return None


_JOINS = re.compile(r"\b(?:and|also|then|plus)\b|另外|还有|以及|并且|然后|顺便|同时", re.I)
_CONNECTIVE = re.compile(r"^(?:(?:and|also|then|plus|besides|additionally)\b[\s,]*)+"
                         r"|^(?:另外|还有|以及|并且|而且|然后|顺便|同时|再)+", re.I)


def _pieces(text: str, anchors: list[list[int]]) -> list[tuple[int, int, int | None]]:
    """(start, end, owner) spans of the text: its clauses, a clause that asks two owners cut at the
    last "and" (又, 另外...) before the second one's first anchor; owner None where nobody is asked."""
    bounds = [0] + [m.end() for m in _CUT.finditer(text)] + [len(text)]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        firsts = sorted((min(inside), i) for i, ps in enumerate(anchors) if (inside := [p for p in ps if a <= p < b]))
        start = a
        for (_, i), (pos_next, _) in zip(firsts, firsts[1:]):
            before = [p for p in anchors[i] if start <= p < pos_next]
            joins = [m.start() for m in _JOINS.finditer(text, max(before, default=start), pos_next)]
            cut = joins[-1] if joins else pos_next
            out.append((start, cut, i))
            start = cut
        if b > a:
            out.append((start, b, firsts[-1][1] if firsts else None))
    return out


def _as_task(text: str, lang: str) -> str:
    """A piece of the question written to stand on its own: no "and"/另外 in front, a capital, an end mark."""
    text = _CONNECTIVE.sub("", text.strip().rstrip(",;，；、 ").lstrip(",;，；、 ")).strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:] if lang == "en" else text
    if re.search(r"[.!?。！？]$", text):
        return text
    asks = is_question(re.split(r"(?<=[.!?。！？])\s*", text)[-1])  # the last sentence says how it ends
    return text + ("？" if asks else "。") if lang == "zh" else text + ("?" if asks else ".")


def tasks(question: str, anchors: list[list[int]]) -> list[str]:
    """The self-contained part of the question for each of several helpers (one list of anchors each).

    Each clause goes to the helper it asks for (a clause that asks two is cut at the "and"
    between them); a clause that asks nobody ("I'm going to Paris.") goes with the next clause
    that does, since context comes before the question it sets up, else with the one before.
    So "What is the weather in Paris and Tokyo, and what is 1299 * 0.85?" gives "What is the
    weather in Paris and Tokyo?" and "What is 1299 * 0.85?". A helper asked nowhere (a forced
    choice) gets the whole question, and so does one helper alone.
    """
    lang = language(question)
    pieces = _pieces(question, anchors)
    asked = [o for _, _, o in pieces]
    owners = [o if o is not None else next((x for x in asked[n:] if x is not None),  # the next that asks, else
                                           next((x for x in reversed(asked[:n]) if x is not None), None))  # the one before
              for n, o in enumerate(asked)]
    out = []
    for i, _ in enumerate(anchors):
        runs, last = [], None  # runs of adjacent pieces stay one span of the question, commas and all
        for n, (a, b, _) in enumerate(pieces):
            if owners[n] != i:
                continue
            if last is not None and last == n - 1:
                runs[-1] = (runs[-1][0], b)
            else:
                runs.append((a, b))
            last = n
        said = [t for a, b in runs if (t := _as_task(question[a:b], lang))]
        out.append(("" if lang == "zh" else " ").join(said) if said else _as_task(question, lang) or question.strip())
    return out


# --- filling a tool's arguments from its schema -----------------------------------------------------


_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "additionalItems", "unevaluatedItems",
              "propertyNames", "if", "then", "else")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")
_LEAST = ("minItems", "minLength", "minProperties")  # the brain builds values this large
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_WORDS = ("pattern", "format", "$ref", "description", "title")
MAX_SCHEMA_LEAST = 1_000  # a minLength or minItems beyond this is left out: the brain does not build such values


def readable_schema(node: Any) -> dict:
    """A JSON schema as the brain reads it: every keyword whose value is of the wrong kind left out, at
    every depth (a property schema that is not an object, a `required` that is not a list of names...).

    A tool's schema is checked only loosely by the APIs (the Messages API wants `type: object` and
    `properties` an object; OpenAI only an object), and a prompt's not at all, so this is what keeps a
    malformed one from tripping the brain. A well-formed schema comes back equal to itself."""
    if not isinstance(node, dict):
        return {}
    out: dict = {}
    for key, value in node.items():
        if key == "type":
            keep = isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        elif key in _SUBSCHEMA_MAPS:
            keep = isinstance(value, dict)
            value = {k: readable_schema(v) for k, v in value.items() if isinstance(v, dict)} if keep else value
        elif key in _SUBSCHEMA:
            keep = isinstance(value, (dict, bool))
            value = readable_schema(value) if isinstance(value, dict) else value
        elif key in _SUBSCHEMA_LISTS:
            keep = isinstance(value, list)
            value = [readable_schema(v) for v in value if isinstance(v, dict)] if keep else value
        elif key == "required":
            keep = isinstance(value, list) and all(isinstance(v, str) for v in value)
        elif key == "enum":
            keep = isinstance(value, list)
        elif key in _COUNTS:
            keep = type(value) is int and 0 <= value and (key not in _LEAST or value <= MAX_SCHEMA_LEAST)
        elif key in _BOUNDS:
            keep = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        elif key in _WORDS:
            keep = isinstance(value, str)
        else:
            keep = True  # an annotation, or a keyword the brain does not read
        if keep:
            out[key] = value
    return out


def schema_properties(tool: dict) -> dict:
    return (tool.get("input_schema") or {}).get("properties") or {}


def name_words(name: str) -> list[str]:
    """A property's name as lowercase words: "firstName", "first_name" and "first-name" are ["first", "name"]."""
    return [w.lower() for w in re.split(r"[\W_]+|(?<=[a-z0-9])(?=[A-Z])", name) if w]


def json_type(prop: dict) -> str | None:
    """The one type a property wants: its `type`, or the first that is not "null" of a list of types."""
    kinds = prop.get("type")
    if isinstance(kinds, list):
        real = [k for k in kinds if k != "null"]
        return real[0] if real else ("null" if kinds else None)
    return kinds if isinstance(kinds, str) else None


_SENTIMENT_WORDS = {"sentiment", "mood", "tone", "feeling", "emotion"}
# What a string property is for, judged from the words of its name (the first row that fits wins).
_STRING_KINDS = [
    ("email", {"email", "mail"}),
    ("url", {"url", "uri", "link", "website", "homepage", "href"}),
    ("phone", {"phone", "telephone", "mobile"}),
    ("date", {"date", "birthday", "deadline", "dob"}),
    ("language", {"language", "lang", "locale"}),
    ("sentiment", _SENTIMENT_WORDS),
    ("answer", {"answer", "response", "reply", "output", "result", "explanation", "reason", "reasoning",
                "rationale", "justification", "comment", "comments", "note", "notes", "summary", "abstract",
                "tldr", "gist", "description", "details", "overview", "message", "text", "content", "body"}),
    ("keyword", {"keyword", "keywords", "tag", "tags", "label", "labels", "category", "categories"}),
    ("topic", {"title", "topic", "subject", "headline", "query", "question", "task", "goal", "intent", "search"}),
]
_PERSON_WORDS = {"author", "person", "customer", "sender", "recipient", "username", "user", "contact", "owner"}
_NAME_QUALIFIERS = {"first", "last", "full", "given", "family", "display", "nick", "user", "customer", "author",
                    "person", "contact", "sender", "recipient", "owner", "your", "my"}
# JSON Schema string formats the structured-outputs API supports (wire-format §5.C).
STRING_FORMATS = ("date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid")


def kind(name: str, prop: dict) -> str:
    """What sort of value a property wants, judged from its name, description, type and format."""
    if "enum" in prop:
        return "enum"
    if "const" in prop:
        return "const"
    t = json_type(prop)
    if t not in (None, "string"):
        return {"integer": "number", "number": "number", "boolean": "boolean"}.get(t, "other")
    low, desc = name.lower(), str(prop.get("description") or "").lower()
    if prop.get("format") in STRING_FORMATS:
        return "format"
    if re.search(r"city|location|place|town", low) or re.search(r"\bcity\b|城市", desc):
        return "city"
    if re.search(r"expr|formula|equation|math", low):
        return "expression"
    if re.search(r"timezone|^tz$", low):
        return "timezone"
    words = name_words(name)
    if "name" in words and (len(words) == 1 or words[0] in _NAME_QUALIFIERS) or set(words) & _PERSON_WORDS:
        return "person"
    for label, signals in _STRING_KINDS:
        if signals & set(words):
            return label
    return "string"


def enum_choice(question: str, options: list) -> object | None:
    """The enum option the question mentions; after "to/into/in" wins ("convert 100 F to C" -> C).

    A one-letter option must match its case when it stands alone, so the "a" in a
    sentence is not option "A". Only the first 500 options are looked for (a huge enum
    must not make every answer slow); the others can still be a default.
    """
    options = options[:500]
    for opt in options:
        tail = r"\b" if len(str(opt)) > 1 else ""
        if re.search(rf"\b(?:to|into|in)\s+{re.escape(str(opt))}{tail}", question, re.I):
            return opt
    for opt in options:
        if re.search(rf"\b{re.escape(str(opt))}\b", question, re.I if len(str(opt)) > 1 else 0):
            return opt
    return None


@dataclass
class Ask:
    """What the question offers as argument values for one tool (or one JSON answer).

    `numbers` and `quoted` are shared by all the tools of a question and consumed as
    they are used, so two tools never get the same number or quoted string. The
    question's own phrase goes to one free-text property only (`phrase_used`), never
    pasted into every string. A JSON answer also reads `context` (tool results, for
    labelled values and numbers), may put `answer` (what the brain would have said)
    into one answer-like property, and knows the conversation's `known` facts.
    """

    question: str
    cities: list[str]  # the cities meant for this tool
    all_cities: list[str]
    numbers: list[int | float]
    quoted: list[str]
    anchors: list[int] = field(default_factory=list)  # where the question asks for this tool
    context: str = ""
    answer: str = ""
    known: dict[str, str] = field(default_factory=dict)
    phrase_used: bool = False

    @property
    def text(self) -> str:
        """Everything a value may be read from: the question, then the context."""
        return f"{self.question}\n{self.context}" if self.context else self.question


def values_for(name: str, prop: dict, ask: Ask, required: bool) -> list:
    """Candidate values for one property, best first ([] when the question gives none).

    Only a city or an expression property can get several (one call per value).
    """
    k, q = kind(name, prop), ask.question
    if k == "city":
        return ask.cities or (ask.all_cities if required else [])
    if k == "expression":
        return [e for _, e in expressions(q)]
    if k == "timezone":
        zone = re.search(r"\b(?:[A-Z][a-z]+/[A-Za-z_]+|UTC)\b", q)
        if zone:
            return [zone.group()]
        return list(dict.fromkeys(tz for c in ask.cities if (tz := timezone_of(c))))  # "伦敦和纽约": one call each
    if k == "number":
        labelled = labelled_number(name, ask)
        if labelled is not None:
            return [labelled]
        return [ask.numbers.pop(0)] if ask.numbers else []
    if k == "enum":
        chosen = enum_choice(ask.text, prop["enum"])
        if chosen is None and set(name_words(name)) & _SENTIMENT_WORDS:
            chosen = next((o for o in prop["enum"] if str(o).lower() == sentiment(ask.text)), None)
        if chosen is None and required:
            chosen = prop.get("default", prop["enum"][0] if prop["enum"] else None)
        return [] if chosen is None else [chosen]
    if k == "const":
        return [prop["const"]]
    if k == "boolean":
        said = boolean_value(name, ask.text)
        if said is not None:
            return [said]
        return [prop.get("default", False)] if required else []
    if k == "other":
        return []
    return string_values(name, prop, k, ask, required)


# --- string values, by what the property is for ------------------------------------------------------

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+")  # bounded: linear time
_URL = re.compile(r"https?://[^\s<>\"'()（）「」]+[^\s<>\"'()（）「」.,;:!?。，]")
_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,}\d(?!\w)")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_DATE_TIME = re.compile(r"\b(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2})?")
_TIME = re.compile(r"\b(\d{1,2}:\d{2})(:\d{2})?(Z|[+-]\d{2}:\d{2})?(?![\d:])")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_IPV4 = re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b")
_HOST = re.compile(r"\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,}\b", re.I)
# A file's path: notes.txt, ./src/app.py, /var/log/old.log (an extension with a letter, so 0.85 is no file)
_PATH = re.compile(r"(?<![\w/.~@:-])(?:~?/|\.{1,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{1,8}"
                   r"(?![\w/])")
_PATH_WORDS = {"path", "file", "filename", "filepath", "files"}
# A value that fits the format when the question gives none: what a form's example would show.
FORMAT_EXAMPLES = {
    "date-time": "2026-01-01T00:00:00Z", "time": "00:00:00Z", "date": "2026-01-01", "duration": "P1D",
    "email": "user@example.com", "hostname": "example.com", "uri": "https://example.com", "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1", "uuid": "00000000-0000-4000-8000-000000000000",
}
_LANGUAGES = [("English", "英语|英文"), ("Chinese", "中文|汉语|普通话"), ("French", "法语|法文"), ("German", "德语|德文"),
              ("Spanish", "西班牙语"), ("Japanese", "日语|日文"), ("Korean", "韩语|韩文"), ("Italian", "意大利语"),
              ("Portuguese", "葡萄牙语"), ("Russian", "俄语"), ("Arabic", "阿拉伯语"), ("Dutch", "荷兰语"),
              ("Hindi", "印地语")]
_POSITIVE = re.compile(r"\b(?:love\w*|great|good|excellent|amazing|awesome|happy|glad|wonderful|fantastic|like[sd]?"
                       r"|enjoy\w*|best|perfect|recommend\w*)\b|喜欢|很好|太好|满意|开心|棒", re.I)
_NEGATIVE = re.compile(r"\b(?:hate\w*|bad|terrible|awful|poor|worst|broken|disappoint\w*|angry|sad|slow|useless"
                       r"|refund|never again)\b|讨厌|很差|太差|失望|生气|难过", re.I)
_NOT_PERSONS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "January",
                "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December", "What", "When", "Where", "Which", "Who", "Why", "How", "Please", "Hello",
                "Hi", "Extract", "Record", "Tell", "Give", "Return", "Answer", "Respond", "Reply", "Summarise",
                "Summarize", "Translate", "Convert", "Search", "Find", "Get", "Make", "Create", "Write", "List",
                "JSON", "API", "Is", "Are", "Can", "Could", "Would", "Should", "Do", "Does", "Did", "I", "We"}


def sentiment(text: str) -> str:
    """'positive', 'negative' or 'neutral', by counting a few telling words."""
    good, bad = len(_POSITIVE.findall(text)), len(_NEGATIVE.findall(text))
    return "positive" if good > bad else "negative" if bad > good else "neutral"


def _words(text: str, n: int) -> str:
    """At most n words of the text (n * 2 characters for Chinese, which has no spaces)."""
    if language(text) == "zh":
        return text[: n * 2].strip()
    return " ".join(text.split()[:n])


def _label(name: str) -> str:
    """A regular expression for a property's name as a question writes it ("first_name" -> "first[ _-]?name")."""
    return r"[\s_-]?".join(re.escape(w) for w in name_words(name)) or re.escape(name)


def labelled_value(name: str, text: str) -> str | None:
    """The value the text gives a property by name: `title: "Dune"`, `the colour is blue`, `status = done`."""
    if not name_words(name):
        return None
    m = re.search(rf"(?<![\w-]){_label(name)}s?\s*(?:is|was|are|[:：=])\s*(?:\"([^\"\n]+)\"|“([^”\n]+)”|'([^'\n]+)'"
                  rf"|([^\s,;!?。，；\n][^,;!?。，；\n]*?))(?=\s*(?:[,;!?。，；\n]|\.(?:\s|$)|\band\b|$))", text, re.I)
    if not m:
        return None
    value = next(g for g in m.groups() if g).strip()
    return value if value and len(value.split()) <= 8 else None


_FLAG_WORDS = {"is", "has", "have", "should", "can", "needs", "need", "requested", "request", "wants", "want",
               "enabled", "flag", "required", "includes", "include", "contains", "with", "allow", "allowed", "uses"}
_NEGATION = re.compile(r"\b(?:no|not|never|without|don't|doesn't|didn't|won't|isn't|aren't|wasn't|none)\W+(?:\w+\W+){0,2}$"
                       r"|(?:不|没有|没|无|别)$", re.I)


def boolean_value(name: str, text: str) -> bool | None:
    """A yes/no property the text speaks of: true when it names the thing ("wants a demo" for
    `demo_requested`, "this is urgent" for `is_urgent`), false when it says no to it, else None."""
    words = [w for w in name_words(name) if w not in _FLAG_WORDS and len(w) >= 3]
    for word in words:
        m = re.search(rf"\b{re.escape(word)}(?:s|es)?\b", text, re.I)
        if m:
            return not _NEGATION.search(text[max(0, m.start() - 40):m.start()])
    return None


def labelled_number(name: str, ask: Ask) -> int | float | None:
    """A number the text gives a property by name ("age: 36", "36 years old", "3 apples"); it is consumed."""
    words = name_words(name)
    if not words:
        return None
    number = r"(-?\d+(?:\.\d+)?)"
    label = _label(name)
    patterns = [rf"(?<![\w-]){label}s?\s*(?:is|was|are|of|[:：=])?\s*{number}(?![\d.])",
                rf"(?<![\d.]){number}\s*{label}"]
    if "age" in words:
        patterns.insert(0, rf"(?<![\d.]){number}\s*(?:years?|yrs?)(?:[\s-]*old)?|\baged\s*{number}")
    for pattern in patterns:
        m = re.search(pattern, ask.text, re.I)
        if m:
            raw = next(g for g in m.groups() if g)
            value = float(raw) if "." in raw else int(raw)
            if value in ask.numbers:
                ask.numbers.remove(value)
            return value
    return None


def _format_value(fmt: str, text: str) -> str | None:
    """A value of a JSON Schema string format found in the text, written as the format wants it."""
    if fmt == "date-time" and (m := _DATE_TIME.search(text)):
        return f"{m.group(1)}T{m.group(2)}{m.group(3) or ':00'}{m.group(4) or 'Z'}"
    if fmt == "date" and (m := _DATE.search(text)):
        return m.group()
    if fmt == "time" and (m := _TIME.search(text)):
        hours, rest = m.group(1).split(":")
        return f"{int(hours):02d}:{rest}{m.group(2) or ':00'}{m.group(3) or 'Z'}"
    finders = {"email": _EMAIL, "uri": _URL, "uuid": _UUID, "ipv4": _IPV4, "hostname": _HOST}
    m = finders[fmt].search(text) if fmt in finders else None
    return m.group() if m else None


def _person(text: str, ask: Ask) -> str | None:
    """A person's name: the one the conversation states, else capitalised words that are no city or keyword."""
    if ask.known.get("name"):
        return ask.known["name"]
    places = {c.lower() for _, c in find_cities(text)}
    for m in re.finditer(r"(?<![\w'])([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)", text):
        parts = m.group(1).replace("-", " ").split()
        while parts and parts[0] in _NOT_PERSONS:
            parts = parts[1:]
        candidate = " ".join(parts)
        if not parts or candidate.lower() in places or set(parts) & (_NOT_PLACES | _NOT_NAMES | _NOT_PERSONS):
            continue
        start = m.start() + m.group(1).find(parts[0])
        if len(parts) == 1 and re.search(r"(?:^|[.!?。！？]\s*)$", text[:start]):
            continue  # a lone capitalised word starting a sentence is just a capital letter
        return candidate
    return None


def _language_named(text: str) -> str | None:
    found = [(m.start(), en) for en, zh in _LANGUAGES if (m := re.search(rf"\b{en}\b|{zh}", text))]
    return min(found)[1] if found else None


def string_values(name: str, prop: dict, k: str, ask: Ask, required: bool) -> list:
    """Values for a string property: what the text says of it by name, then what the property is for
    (an email, a date, a person, a language...), then a quoted string, then the question's phrase,
    given to one free-text property only. [] when the text offers nothing fit."""
    text = ask.text
    if k == "format":
        found = _format_value(prop["format"], text)
        return [found] if found else []
    labelled = labelled_value(name, text)
    if labelled is not None:
        if labelled in ask.quoted:
            ask.quoted.remove(labelled)
        return [labelled]
    if k == "string" and _PATH_WORDS & set(name_words(name)) and (m := _PATH.search(ask.question)):
        return [m.group()]  # "Delete the file notes.txt" -> notes.txt, not the whole phrase
    finders = {"email": _EMAIL, "url": _URL, "phone": _PHONE, "date": _DATE}
    if k in finders:
        m = finders[k].search(text)
        return [m.group()] if m else []
    if k == "person":
        found = _person(text, ask)
        return [found] if found else []
    if k == "language":
        found = _language_named(text)
        return [found] if found else (["Chinese" if language(ask.question) == "zh" else "English"] if required else [])
    if k == "sentiment":
        return [sentiment(text)] if required else []
    if k == "keyword" and not ask.quoted:  # the question's own content words, a few
        found = list(dict.fromkeys(w for _, w in content_words(ask.question, cjk=False)))[:3]
        return found[:1] if required else found
    if ask.quoted:
        return [ask.quoted.pop(0)]
    if not required:
        return []
    if k == "answer" and ask.answer:
        value, ask.answer = ask.answer, ""  # one property says the answer; a second one gets the phrase
        return [value]
    if k == "topic":
        return [_words(phrase(ask.question, ask.anchors), 8)]
    if not ask.phrase_used:
        ask.phrase_used = True
        return [_words(phrase(ask.question, ask.anchors), 30)]
    return []


def placeholder(name: str, prop: dict, ask: Ask):
    """A value for a required property the text says nothing about: the schema's default, else a
    neutral value of the right kind ("unknown", 0, false, [], {}, an example date or email)."""
    k = kind(name, prop)
    if k == "enum":
        options = prop["enum"]
        return prop["default"] if "default" in prop and prop["default"] in options else (options[0] if options else None)
    if k == "const":
        return prop["const"]
    if "default" in prop:
        return prop["default"]
    if k == "number":
        return 0
    if k == "boolean":
        return False
    if k == "other":
        return {"array": [], "object": {}, "null": None}.get(json_type(prop) or "", None)
    if k == "format":
        return FORMAT_EXAMPLES[prop["format"]]
    examples = {"email": FORMAT_EXAMPLES["email"], "url": FORMAT_EXAMPLES["uri"], "date": FORMAT_EXAMPLES["date"],
                "sentiment": "neutral", "language": "Chinese" if language(ask.question) == "zh" else "English"}
    return examples.get(k, "未知" if language(ask.question) == "zh" else "unknown")


def fill_args(tool: dict, ask: Ask) -> tuple[list[dict], str | None]:
    """Inputs for the calls of one tool, or the required property the question cannot fill.

    One call per value when a city or expression property has several ("北京和上海" -> two
    get_weather calls). Optional properties are filled only when the question gives them.
    (A forced tool choice fills what the question lacks with placeholders: see structured.py.)
    """
    required = (tool.get("input_schema") or {}).get("required") or []
    base: dict = {}
    fan: tuple[str, list] | None = None
    for name, prop in schema_properties(tool).items():
        values = values_for(name, prop if isinstance(prop, dict) else {}, ask, name in required)
        if not values:
            if name not in required:
                continue
            return [], name
        base[name] = values[0]
        if fan is None and len(values) > 1 and kind(name, prop) in ("city", "expression", "timezone"):
            fan = (name, values)
    if fan:
        return [{**base, fan[0]: v} for v in fan[1]], None
    return [base], None


# --- facts stated in the conversation --------------------------------------------------------------

_NAME = r"([A-Z][\w'-]*|[\u4e00-\u9fff]{1,4}(?![\u4e00-\u9fff]))"
_ZH_NAME = r"(?!什么|谁)([\u4e00-\u9fffA-Za-z]{1,8}?)(?=[，。！？,.!?\s；;]|$)"
_ZH_THING = r"(?!什么|的)(?![^，。！？,.!?\n；;]*(?:什么|吗|哪))([^，。！？,.!?\n；;]{1,20})"  # not a question's
# A noted fact: a bulleted `key: value` line, as a list of facts in the user's message writes it
# ("- name: Ada"; miniagent.memory.StructuredMemory's block). The value runs to the end of the line.
_NOTED = r"(?m)^[ \t]*[-*•][ \t]*{key}[ \t]*[:：][ \t]*"
_NOTED_NAME = _NOTED.format(key=r"(?i:name|user'?s[ _]name|user_name)") + \
    r"([A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3}|[\u4e00-\u9fff]{1,4})[ \t]*$"
_NOTED_LIKES = _NOTED.format(key=r"(?:preferences?|prefers|likes|favou?rite[ _]?\w*)") + r"([^\n]{2,60}?)\s*$"
# First person: only believed in user (or system) text. Third person: anywhere, e.g. in a summary.
FIRST_PERSON = {
    "name": [rf"\b(?i:my name is|call me)\s+([A-Za-z][\w'-]*)", rf"\b(?:I'm|I am) {_NAME}(?=\s*(?:[,.!;]|$|and\b))",
             rf"我叫{_ZH_NAME}", rf"我的名字(?:是|叫){_ZH_NAME}", _NOTED_NAME],
    "likes": [r"\bI (?:really )?(?:like|love|prefer) ([^.,!?;\n]{2,40})", r"\bmy favou?rite \w+ is ([^.,!?;\n]{2,40})",
              rf"我(?:很|最)?(?:喜欢|爱|偏爱){_ZH_THING}", _NOTED_LIKES],
}
THIRD_PERSON = {
    "name": [rf"\b(?i:the user's name is|the user is called)\s+{_NAME}", rf"用户叫{_ZH_NAME}",
             rf"用户的名字是{_ZH_NAME}"],
    "likes": [r"\bthe user likes ([^.,!?;\n]{2,40})", rf"用户喜欢{_ZH_THING}"],
}
ASKS = {
    "name": r"\bwhat(?:'s| is) my name\b|\b(?:know|remember) my name\b|\bwho am i\b"
            r"|我叫什么|我的名字(?:是|叫)?什么|我是谁|记得我的名字|知道我的名字",
    "likes": r"\bwhat do i (?:like|love|prefer)\b|\bwhat(?:'s| is) my favou?rite\b|我(?:最|很)?(?:喜欢|爱)什么"
             r"|我(?:最|很)?(?:喜欢|爱)的\w{0,6}是什么",
}
_NOT_NAMES = {"Sorry", "Not", "Fine", "Good", "Here", "Back", "Done", "Ready", "Okay", "Ok", "Sure", "Happy",
              "Glad", "Also", "Just", "So", "Chinese", "English", "The"}


def facts(entries: list[tuple[str, str]]) -> dict[str, str]:
    """Facts stated in (role, text) entries; a later statement wins over an earlier one."""
    found: dict[str, tuple[int, int, str]] = {}
    for n, (role, text) in enumerate(entries):
        tables = [THIRD_PERSON] + ([FIRST_PERSON] if role in ("user", "system") else [])
        for table in tables:
            for fact, patterns in table.items():
                for pat in patterns:
                    for m in re.finditer(pat, text, 0 if fact == "name" else re.I):
                        value = m.group(1).strip()
                        if value and value not in _NOT_NAMES and (n, m.start()) >= found.get(fact, (-1, -1, ""))[:2]:
                            found[fact] = (n, m.start(), value)
    return {k: v[2] for k, v in found.items()}


def states_fact(text: str) -> bool:
    """Whether the text states a fact about the speaker ("My name is Ada", "我喜欢猫")."""
    return any(re.search(p, text, re.I) for ps in FIRST_PERSON.values() for p in ps)


def asked_fact(question: str) -> str | None:
    """The fact the question asks the model to recall ("What's my name?" -> 'name'), if any."""
    return next(iter(asked_facts(question)), None)


def asked_facts(question: str) -> list[str]:
    """Every fact the question asks to recall, in the order it asks them ("What's my name, and what do I prefer?")."""
    found = [(m.start(), fact) for fact, pattern in ASKS.items() if (m := re.search(pattern, question, re.I))]
    return [fact for _, fact in sorted(found)]


# A request for a list of facts as `key: value` lines (miniagent.memory.StructuredMemory's prompt).
LIST_FACTS = re.compile(r"\bfacts?\b[^\n]{0,120}?\bkey\s*:\s*value\b|事实[^\n]{0,60}?键\s*[:：]\s*值", re.I)
FACT_KEYS = {"name": "name", "likes": "preference"}  # the key each fact is listed under


# --- the conversation as (role, text) entries ----------------------------------------------------


def entries_of(body: dict, messages: list[dict]) -> list[tuple[str, str]]:
    """The conversation as (role, text): system, then each message's text and tool results."""
    out = [("system", system_text(body))]
    calls: dict[str, dict] = {}
    for m in messages:
        for b in blocks(m["content"]):
            if b.get("type") == "text":
                out.append((m["role"], b.get("text", "")))
            elif b.get("type") == "tool_use":
                calls[b.get("id")] = b
            elif b.get("type") == "tool_result":
                call = calls.get(b.get("tool_use_id"), {})
                out.append(("tool", f"{call.get('name', 'tool')}({args_text(call)}) → {result_text(b)}"))
    return out


_ROLE_LINE = re.compile(r"^\W{0,3}(?:(user|human|assistant|ai|model|system)\b\s*(?:\([^)]*\)\s*)?(?:[:：]|(?=called\b))"
                        r"|(result of|error from|tool[ _]?(?:result|output)?)\b[^:：\n]{0,40}[:：])\s*(.*)$", re.I)


def transcript(text: str) -> tuple[list[tuple[str, str]], bool]:
    """A conversation pasted into one message, as (role, text) entries, and whether it had roles.

    Lines like "User: ..." or "Result of calculate: 3584" start an entry; other lines
    continue the entry before them, or (before any role line, e.g. an earlier summary)
    become "note" entries. A line asking to summarise keeps only what follows its colon.
    """
    out: list[tuple[str, str]] = []
    has_roles = False
    for line in text.splitlines():
        if SUMMARISE.search(line):
            colon = re.search(r"[:：]", line)
            line = line[colon.end():] if colon else ""
        if not line.strip() or re.fullmatch(r"\s*</?\w+>\s*", line):
            continue  # blank, or a tag such as <conversation>
        m = _ROLE_LINE.match(line)
        if m:
            has_roles = True
            if m.group(2):
                out.append(("tool", line.strip()))
            else:
                out.append(("user" if m.group(1).lower() in ("user", "human") else "assistant", m.group(3)))
        elif has_roles:
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        else:
            out.append(("note", line.strip()))
    return out, has_roles
