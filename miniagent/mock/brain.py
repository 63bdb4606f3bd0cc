"""The offline mock's brain: a deterministic stand-in for a model.

`respond(body)` reads an already-validated Messages API request and returns the
part of a response that a model decides: content blocks, `stop_reason` and
`stop_sequence`. MockAPI adds the ids and the usage.

It is a pure function of the request, on purpose. A real model remembers nothing
between calls either, so whatever the request no longer contains (a trimmed
message, a name said long ago) the brain cannot know. That is what lets the
notebooks show statelessness, memory and context trimming without a network.

It is plausible, not clever: it recognises a few kinds of request by keyword
(weather, time, arithmetic, search, ...), picks the tools whose name and
description match, fills their arguments from the schema, writes the final answer
from the tool results, corrects a failed call once, and otherwise answers briefly
and says that it is the offline mock. Read it top to bottom: the question, picking
tools, filling arguments, answering after tool results, facts and summaries, plain
answers, then the limits every answer passes through (stop sequences, max_tokens).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from itertools import groupby

from miniagent.messages import blocks, result_text, text_of, tool_results, tool_uses
from miniagent.tokens import estimate_block, estimate_text

# --- what to say, in both languages --------------------------------------------------

SAY = {
    "en": {
        "mark": "(offline mock) ",
        "hello": "Hello{name}! I'm the offline mock model. Ask me something, or give me tools to call.",
        "unknown": ("I'm the offline mock: I can call the tools you give me, remember what is in this "
                    "conversation and summarise it, but I know nothing else, so I can't answer \"{q}\". "
                    "Set ANTHROPIC_API_KEY to ask a real model."),
        "no_fit": "None of the tools I was given ({names}) fits this question. ",
        "no_tools": "I may not use tools for this request (tool_choice is none). ",
        "need": "To call {tool} I need the {field}. Which {field} do you mean?",
        "know_name": "Your name is {v}.",
        "know_likes": "You told me you like {v}.",
        "forgot_name": "I don't know your name: nothing in this conversation says it, "
                       "and I only know what is in the messages I am sent.",
        "forgot_likes": "I don't know what you like: nothing in this conversation says it, "
                        "and I only know what is in the messages I am sent.",
        "got_name": "Nice to meet you, {v}! I'll know your name for as long as it stays in this conversation.",
        "got_likes": "Noted: you like {v}. I'll know it for as long as it stays in this conversation.",
        "time": "It is {r}.", "math": "{e} = {r}", "weather": "{c}: {r}", "other": "{n} returned: {r}",
        "failed": '{call} failed: "{r}"',
        "failed_again": '{call} failed again after one correction: "{r}"',
        "retry": "{n} failed, so I'll try again with {k} = {v}.",
        "summary": "Summary: ", "nothing": "there is nothing to summarise yet.",
        "fact_name": "The user's name is {v}.", "fact_likes": "The user likes {v}.",
        "asked": "The user asked: {items}.", "results": "Key tool results: {items}.", "points": "Key points: {items}.",
    },
    "zh": {
        "mark": "（离线模拟）",
        "hello": "你好{name}！我是离线模拟模型。可以问我问题，或者给我一些工具来调用。",
        "unknown": ("我是离线模拟模型：我能调用你给我的工具、记住这段对话里的内容并做总结，但别的我都不知道，"
                    "所以回答不了「{q}」。设置 ANTHROPIC_API_KEY 就能问真正的模型。"),
        "no_fit": "给我的工具（{names}）都不适合这个问题。",
        "no_tools": "这次请求不允许我使用工具（tool_choice 为 none）。",
        "need": "要调用 {tool}，我还需要 {field}。请告诉我 {field}。",
        "know_name": "你叫{v}。",
        "know_likes": "你说过你喜欢{v}。",
        "forgot_name": "我不知道你的名字：这段对话里没有提到，而我只知道发给我的消息里的内容。",
        "forgot_likes": "我不知道你喜欢什么：这段对话里没有提到，而我只知道发给我的消息里的内容。",
        "got_name": "你好，{v}！只要这句话还在对话里，我就记得你的名字。",
        "got_likes": "记下了：你喜欢{v}。只要这句话还在对话里，我就记得。",
        "time": "现在是 {r}。", "math": "{e} = {r}", "weather": "{c}：{r}", "other": "{n} 返回：{r}",
        "failed": "{call} 失败：「{r}」",
        "failed_again": "{call} 修正一次后仍然失败：「{r}」",
        "retry": "{n} 出错了，我把 {k} 改成 {v} 再试一次。",
        "summary": "摘要：", "nothing": "目前还没有可总结的内容。",
        "fact_name": "用户叫{v}。", "fact_likes": "用户喜欢{v}。",
        "asked": "用户问过：{items}。", "results": "工具结果：{items}。", "points": "要点：{items}。",
    },
}

_HAN = re.compile(r"[\u3400-\u9fff]")


def language(text: str) -> str:
    """'zh' when the text is mostly Chinese, else 'en'.

    Counting (rather than "any Chinese character") keeps "What's the weather in 北京?"
    an English question.
    """
    han = len(_HAN.findall(text))
    return "zh" if han and han >= len(re.findall(r"[A-Za-z]+", text)) else "en"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --- reading the request -------------------------------------------------------------------


def _user_text(message: dict) -> str:
    return text_of(message) if message["role"] == "user" else ""


def question_index(messages: list[dict]) -> int:
    """Index of the latest user message with text: the question being worked on (-1 if none)."""
    for i in range(len(messages) - 1, -1, -1):
        if _user_text(messages[i]).strip():
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
    """The tool calls made since the question, each paired with its result."""
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


# --- picking tools ---------------------------------------------------------------------------

# A concept is a kind of request the brain recognises, with the words that signal it.
CONCEPTS = {
    "time": r"\b(?:time|clock|date|what day)\b|几点|时间|日期|星期几",
    "math": r"\b(?:calculat\w*|comput\w*|math\w*|arithmetic|expressions?|evaluate)\b|计算|算一下|算算|帮我算|算出|表达式",
    "weather": r"\b(?:weather|forecasts?|temperatures?|rain\w*|snow\w*|sunny)\b|天气|气温|温度|下雨|下雪",
    "search": r"\b(?:search\w*|look up)\b|搜索|搜一下|查找",
    "convert": r"\b(?:convert\w*|conversion)\b|转换|换算",
    "translate": r"\btranslat\w*|翻译",
}
_CONCEPT_RX = {c: re.compile(p, re.IGNORECASE) for c, p in CONCEPTS.items()}

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


def content_words(text: str) -> list[tuple[int, str]]:
    """(position, word) for words that carry meaning: 4+ letters, no stopwords, no concept words."""
    words = []
    for m in re.finditer(r"[A-Za-z][A-Za-z'-]{3,}", text):
        w = m.group().lower()
        if w in _STOPWORDS or any(rx.fullmatch(w) for rx in _CONCEPT_RX.values()):
            continue
        words.append((m.start(), w[:-1] if w.endswith("s") and len(w) > 4 else w))
    return words


@dataclass
class Pick:
    """A tool chosen for the question, and where in the question it was asked for."""

    index: int
    anchors: list[int] = field(default_factory=list)
    strong: bool = True  # picked by concept (so worth asking for a missing argument)


def asked_concepts(question: str) -> dict[str, list[int]]:
    """Concept -> positions where the question asks for it (an arithmetic expression asks for math)."""
    asked = {c: [m.start() for m in rx.finditer(question)] for c, rx in _CONCEPT_RX.items()}
    asked["math"] = sorted(asked["math"] + [pos for pos, _ in expressions(question)])
    return {c: pos for c, pos in asked.items() if pos}


def pick_tools(question: str, tools: list[dict]) -> list[Pick]:
    """The tools the question needs, ordered by where the question asks for them.

    A tool the concept table knows is picked when the question asks for its concept
    (the best-fitting one if several tools share it). A tool it doesn't know is picked
    when it shares content words with the question. A tool whose name and description
    say nothing ("tool_1", "Does things.") can match neither, so it is never picked.
    """
    asked = asked_concepts(question)
    known = [tool_concepts(t) for t in tools]
    picks: list[Pick] = []
    for concept in sorted(asked, key=lambda c: asked[c][0]):
        covering = [p for p in picks if concept in known[p.index]]
        if covering:
            covering[0].anchors += asked[concept]
            continue
        candidates = [i for i, cs in enumerate(known) if concept in cs]
        if candidates:
            fit = lambda i: (len(known[i] & asked.keys()) / len(known[i]), len(known[i] & asked.keys()), -i)
            picks.append(Pick(max(candidates, key=fit), list(asked[concept])))
    words = content_words(question)
    for i, tool in enumerate(tools):
        if any(p.index == i for p in picks):
            continue
        theirs = {w for _, w in content_words(tool_text(tool))}
        shared = [pos for pos, w in words if w in theirs]
        if len({w for _, w in words if w in theirs}) >= (2 if known[i] else 1):
            picks.append(Pick(i, shared, strong=False))
    return sorted(picks, key=lambda p: min(p.anchors))


# --- finding argument values in the question ---------------------------------------------------

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


def expressions(text: str) -> list[tuple[int, str]]:
    """(position, expression) for each arithmetic expression, its spacing kept as written."""
    found = []
    for m in re.finditer(r"[\d(][\d\s.+\-*/%()]*[\d)]", text):
        expr, start = m.group(), m.start()
        while expr.count(")") > expr.count("(") and expr.endswith(")"):
            expr = expr[:-1].rstrip()
        while expr.count("(") > expr.count(")") and expr.startswith("("):
            expr, start = expr[1:].lstrip(), start + len(expr) - len(expr[1:].lstrip())
        is_date = re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", expr)
        if re.search(r"[\d)]\s*(?:\*\*|//|[-+*/%])\s*[-(]*\s*\d", expr) and not is_date:
            found.append((start, expr))
    return found


def numbers(text: str) -> list[int | float]:
    """The numbers in the text, in order; those inside an arithmetic expression only if there are no others."""
    spans = [(p, p + len(e)) for p, e in expressions(text)]
    every = [(m.start(), m.group()) for m in re.finditer(r"-?\d+(?:\.\d+)?", text)]
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
    r"|search(?: for)?|look up|find|translate|convert)\s+)+|^(?:请|帮我|你能|能不能|麻烦|顺便|再|然后|告诉我"
    r"|搜索一下|搜一下|搜索|查找|查一下|翻译一下|翻译)+", re.IGNORECASE)


def phrase(question: str, pick: Pick) -> str:
    """The part of the question a free-text argument should carry: its clause, minus the asking."""
    text = clause(question, min(pick.anchors)) if pick.anchors else question
    text = re.sub(r"\s+(?:please|for me|thanks)\W*$|(?:吧|呢|一下)\W*$", "", _FILLER.sub("", text), flags=re.I)
    return text.strip(" ?？!！.。") or question.strip()


# --- filling arguments from the schema -----------------------------------------------------------


def kind(name: str, prop: dict) -> str:
    """What sort of value a property wants, judged from its name, description and type."""
    kind_of_type = {"integer": "number", "number": "number", "boolean": "boolean"}
    if "enum" in prop:
        return "enum"
    if prop.get("type") not in (None, "string"):
        return kind_of_type.get(prop.get("type"), "other")
    low, desc = name.lower(), (prop.get("description") or "").lower()
    if re.search(r"city|location|place|town", low) or re.search(r"\bcity\b|城市", desc):
        return "city"
    if re.search(r"expr|formula|equation|math", low):
        return "expression"
    if re.search(r"timezone|^tz$", low):
        return "timezone"
    return "string"


def enum_choice(question: str, options: list) -> object | None:
    """The enum option the question mentions; after "to/into/in" wins ("convert 100 F to C" -> C)."""
    for opt in options:
        o = re.escape(str(opt))
        if re.search(rf"\b(?:to|into|in)\s+{o}\b" if len(str(opt)) > 1 else rf"\b(?:to|into|in)\s+{o}", question, re.I):
            return opt
    for opt in options:
        flags = re.I if len(str(opt)) > 1 else 0
        if re.search(rf"\b{re.escape(str(opt))}\b", question, flags):
            return opt
    return None


@dataclass
class Ask:
    """What the question offers as argument values, found once."""

    question: str
    cities: list[str]  # the cities meant for this tool
    all_cities: list[str]
    numbers: list
    quoted: list[str]


def values_for(name: str, prop: dict, ask: Ask, pick: Pick, required: bool) -> list:
    """Candidate values for one property, best first ([] when the question gives none)."""
    k, q = kind(name, prop), ask.question
    if k == "city":
        return ask.cities or (ask.all_cities if required else [])
    if k == "expression":
        return [e for _, e in expressions(q)]
    if k == "timezone":
        zone = re.search(r"\b(?:[A-Z][a-z]+/[A-Za-z_]+|UTC)\b", q)
        zones = [zone.group()] if zone else [timezone_of(c) for c in ask.cities if timezone_of(c)]
        return zones[:1]
    if k == "number":
        return [ask.numbers.pop(0)] if ask.numbers else []
    if k == "enum":
        chosen = enum_choice(q, prop["enum"])
        if chosen is None and required:
            chosen = prop.get("default", prop["enum"][0] if prop["enum"] else None)
        return [] if chosen is None else [chosen]
    if k == "boolean":
        return [prop.get("default", False)] if required else []
    if k == "string":
        if ask.quoted:
            return [ask.quoted.pop(0)]
        return [phrase(q, pick)] if required else []
    return []


def _fallback(prop: dict, ask: Ask, pick: Pick):
    """A value for a required property when the caller forces the tool (tool_choice any/tool)."""
    defaults = {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    if "enum" in prop and prop["enum"]:
        return prop["enum"][0]
    return defaults.get(prop.get("type"), phrase(ask.question, pick))


def fill_args(tool: dict, ask: Ask, pick: Pick, forced: bool = False) -> tuple[list[dict], str | None]:
    """Inputs for the calls of one tool, or the required property the question cannot fill.

    One call per value when a city or expression property has several ("北京和上海" -> two
    get_weather calls). Optional properties are filled only when the question gives them.
    """
    schema = tool.get("input_schema") or {}
    required = schema.get("required") or []
    base: dict = {}
    fan: tuple[str, list] | None = None
    for name, prop in (schema.get("properties") or {}).items():
        values = values_for(name, prop, ask, pick, name in required)
        if not values:
            if name not in required:
                continue
            if not forced:
                return [], name
            values = [_fallback(prop, ask, pick)]
        base[name] = values[0]
        if fan is None and len(values) > 1 and kind(name, prop) in ("city", "expression"):
            fan = (name, values)
    if fan:
        return [{**base, fan[0]: v} for v in fan[1]], None
    return [base], None


def _assign_cities(question: str, picks: list[Pick], tools: list[dict]) -> dict[int, list[str]]:
    """Give each city in the question to the nearest tool that takes a city or a timezone.

    So in "几点了？...北京和上海的天气" both cities go to the weather tool, not the clock.
    """
    takers = [p for p in picks if any(kind(n, s) in ("city", "timezone") for n, s in
                                      ((tools[p.index].get("input_schema") or {}).get("properties") or {}).items())]
    given: dict[int, list[str]] = {p.index: [] for p in takers}
    for pos, city in find_cities(question):
        if takers:
            near = min(takers, key=lambda p: min((abs(a - pos) for a in p.anchors), default=10**6))
            given[near.index].append(city)
    return given


def _tool_use(name: str, inp: dict) -> dict:
    return {"type": "tool_use", "name": name, "input": inp}


def plan(question: str, tools: list[dict], choice: dict) -> tuple[list[dict], list[tuple[str, str]]]:
    """All the tool calls this question needs, and (tool, field) pairs it could not fill.

    All of them even with `disable_parallel_tool_use`: the caller makes them one per turn.
    """
    mode = choice.get("type", "auto")
    if not tools or mode == "none":
        return [], []
    picks = pick_tools(question, tools)
    names = [t["name"] for t in tools]
    if mode == "tool":
        picks = [p for p in picks if names[p.index] == choice.get("name")] or [Pick(names.index(choice["name"]))]
    elif mode == "any" and not picks:
        words = {w for _, w in content_words(question)}
        overlap = [len(words & {w for _, w in content_words(tool_text(t))}) for t in tools]
        picks = [Pick(overlap.index(max(overlap)))]
    cities = _assign_cities(question, picks, tools)
    all_cities = [c for _, c in find_cities(question)]
    nums, quotes = numbers(question), quoted(question)
    calls, missing = [], []
    for pick in picks:
        ask = Ask(question, cities.get(pick.index, []), all_cities, nums, quotes)
        inputs, lacking = fill_args(tools[pick.index], ask, pick, forced=mode in ("any", "tool"))
        if lacking:
            if pick.strong:
                missing.append((names[pick.index], lacking))
            continue
        calls += [_tool_use(names[pick.index], inp) for inp in inputs]
    return calls, missing


def describe(calls: list[dict], tools: list[dict], lang: str) -> str:
    """The short sentence a model writes before its tool calls."""
    cn = "零一两三四五六七八九十"
    parts = []
    for name, group in groupby(calls, key=lambda c: c["name"]):
        group = list(group)
        concept = primary_concept(_tool_named(tools, name))
        first = next((v for v in group[0]["input"].values() if isinstance(v, str)), "")
        n = len(group)
        if concept == "time":
            parts.append("查一下时间" if lang == "zh" else "check the time")
        elif concept == "math":
            parts.append("计算表达式" if lang == "zh" else "calculate " + " and ".join(
                str(next(iter(c["input"].values()), "")) for c in group))
        elif concept == "weather" and lang == "zh":
            parts.append(f"查询{first}的天气" if n == 1 else f"查询{cn[n] if n <= 10 else n}座城市的天气")
        elif concept == "weather":
            cities = [next((v for v in c["input"].values() if isinstance(v, str)), "") for c in group]
            parts.append("look up the weather in " + " and ".join(cities))
        elif lang == "zh":
            parts.append(f"调用 {name}" + (f" {n} 次" if n > 1 else ""))
        else:
            parts.append(f"call {name}" + (f" {n} times" if n > 1 else ""))
    if lang == "zh":
        return "我来" + ("、".join(parts[:-1]) + "，并" + parts[-1] if len(parts) > 1 else parts[0]) + "。"
    return "I'll " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]) + "."


def _tool_named(tools: list[dict], name: str) -> dict:
    return next((t for t in tools if t.get("name") == name), {"name": name})


# --- after tool results: correct once, or answer ---------------------------------------------------


def allowed_values(error: str) -> list[str]:
    """The values an error message offers ("Known cities: 北京 (Beijing), ...", "one of 'C', 'F'")."""
    hint = re.search(r"\bdid you mean\s+['\"]?([\w/+-]+)|\bthat is ([A-Za-z_]+/[\w/+-]+)", error, re.I)
    if hint:
        return [hint.group(1) or hint.group(2)]
    m = re.search(r"(?:\bone of|\bknown \w+|\ballowed(?: values)?|valid(?: values| options)?|choices|options"
                  r"|such as|可选值?|支持)\s*[:：]?\s*(.+)", error, re.I)
    if not m:
        return []
    listing = re.split(r",?\s+got\b|\.(?:\s|$)", m.group(1))[0]
    items = re.findall(r"['\"“‘「]([^'\"”’」]+)['\"”’」]", listing)
    if not items:
        for part in re.split(r"[,，、;]|\s+or\s+", listing):
            items += [x.strip() for x in re.split(r"[()（）]", part) if x.strip()]
    return [x for x in items if x.strip(".… ")]


def best_match(value: str, options: list[str]) -> str | None:
    """The option meant by a wrong value: same ignoring case, then a prefix, then the closest spelling."""
    low = {o.lower(): o for o in options}
    v = value.strip().lower()
    if not v:
        return None
    if v in low:
        return low[v]
    for o in options:
        if o.lower().startswith(v) or v.startswith(o.lower()):
            return o
    close = difflib.get_close_matches(v, list(low), n=1, cutoff=0.6)
    return low[close[0]] if close else None


def correction(pair: Pair, tool: dict, question: str) -> dict | None:
    """A corrected input for a failed call, or None when the error gives nothing to go on."""
    inp, error = dict(pair.call.get("input") or {}), pair.result
    options = allowed_values(error)
    if options and inp:
        named = [k for k, v in inp.items() if str(v) and re.search(rf"(?<!\w){re.escape(str(v))}(?!\w)", error, re.I)]
        named = named or [k for k in inp if re.search(rf"\b{re.escape(k)}\b", error)] or list(inp)[-1:]
        better = best_match(str(inp[named[0]]), options)
        if better is None or better == inp[named[0]]:
            return None
        return {**inp, named[0]: better}
    props = (tool.get("input_schema") or {}).get("properties") or {}
    lacking = [k for k in props if k not in inp and re.search(rf"\b{re.escape(k)}\b", error)]
    if not lacking:
        return None
    ask = Ask(question, [c for _, c in find_cities(question)], [], numbers(question), quoted(question))
    pick = Pick(0, [m.start() for m in re.finditer(re.escape(tool.get("name", "")), question)])
    for k in lacking:
        found = values_for(k, props[k], ask, pick, required=True)
        if not found:
            return None
        inp[k] = found[0]
    return inp


def _args(call: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in (call.get("input") or {}).items())


def _same(a: dict, b: dict) -> bool:
    return a.get("name") == b.get("name") and a.get("input") == b.get("input")


def result_line(pair: Pair, tool: dict, lang: str, again: bool) -> str:
    """One line of the final answer: a result phrased by the kind of tool, or the failure quoted."""
    say, r = SAY[lang], _clip(pair.result, 300)
    name, inp = pair.call.get("name", ""), pair.call.get("input") or {}
    if pair.error:
        return say["failed_again" if again else "failed"].format(call=f"{name}({_args(pair.call)})", r=r)
    concept = primary_concept(tool)
    props = (tool.get("input_schema") or {}).get("properties") or {}
    value_of = lambda k: next((str(v) for n, v in inp.items() if kind(n, props.get(n, {"type": "string"})) == k), None)
    if concept == "time":
        return say["time"].format(r=r)
    if concept == "math" and (e := value_of("expression")):
        return r if e in r else say["math"].format(e=e, r=r)
    if concept == "weather" and (c := value_of("city")):
        return r if r.startswith(c) else say["weather"].format(c=c, r=r)
    return say["other"].format(n=name, r=r)


def retries(question: str, pairs: list[Pair], tools: list[dict], lang: str) -> tuple[list[dict], list[str]]:
    """Corrected calls for the latest round's failures, and a note for each.

    Once per tool: a tool that already failed in an earlier round gets no second
    correction, so a tool that keeps failing cannot make the brain loop.
    """
    latest = max(p.round for p in pairs)
    calls, notes = [], []
    for pair in (p for p in pairs if p.round == latest and p.error):
        name, tool = pair.call.get("name"), _tool_named(tools, pair.call.get("name", ""))
        if "input_schema" not in tool or any(p.error and p.call.get("name") == name for p in pairs if p.round < latest):
            continue
        fixed = correction(pair, tool, question)
        if fixed is not None:
            calls.append(_tool_use(name, fixed))
            key = next(k for k in fixed if fixed[k] != (pair.call.get("input") or {}).get(k))
            notes.append(SAY[lang]["retry"].format(n=name, k=key, v=json.dumps(fixed[key], ensure_ascii=False)))
    return calls, notes


def final_answer(question: str, pairs: list[Pair], tools: list[dict], lang: str) -> str:
    """The answer composed from the results in call order; a corrected call reports its retry in its place."""
    lines, done = [], set()
    for i, pair in enumerate(pairs):
        if i in done:
            continue
        tool = _tool_named(tools, pair.call.get("name", ""))
        fixed = correction(pair, tool, question) if pair.error else None
        retry = next((j for j, p in enumerate(pairs) if fixed is not None and p.round == pair.round + 1
                      and _same(p.call, _tool_use(tool["name"], fixed))), None)
        if retry is not None:
            done.add(retry)
            pair = pairs[retry]
        again = pair.error and any(p.error and p.round < pair.round and p.call.get("name") == tool["name"]
                                   for p in pairs)
        lines.append(result_line(pair, tool, lang, again))
    return SAY[lang]["mark"] + "\n".join(lines)


def after_tools(question: str, pairs: list[Pair], body: dict, lang: str) -> list[dict]:
    """The turn after tool results: corrections and calls still needed, else the final answer."""
    tools, choice = body.get("tools") or [], body.get("tool_choice") or {}
    mode = choice.get("type", "auto")
    planned, _ = plan(question, tools, choice)
    calls, notes = retries(question, pairs, tools, lang) if mode != "none" else ([], [])
    calls += [c for c in planned if not any(_same(c, p.call) for p in pairs) and not any(_same(c, x) for x in calls)]
    if mode == "tool":
        calls = [c for c in calls if c["name"] == choice.get("name")]
    if not calls and mode in ("any", "tool"):
        calls = planned  # a forced tool choice leaves the model no way to stop
    if choice.get("disable_parallel_tool_use"):
        calls, notes = calls[:1], notes[:1]
    if calls:
        return [{"type": "text", "text": " ".join(notes) or describe(calls, tools, lang)}, *calls]
    return [{"type": "text", "text": final_answer(question, pairs, tools, lang)}]


# --- facts stated in the conversation, and summaries --------------------------------------------------

_NAME = r"([A-Z][\w'-]*|[\u4e00-\u9fff]{1,4}(?![\u4e00-\u9fff]))"
_ZH_NAME = r"(?!什么|谁)([\u4e00-\u9fffA-Za-z]{1,8}?)(?=[，。！？,.!?\s；;]|$)"
_ZH_THING = r"(?!什么)([^，。！？,.!?\n；;]{1,20})"
# First person: only believed in user (or system) text. Third person: anywhere, e.g. in a summary.
FIRST_PERSON = {
    "name": [rf"\b(?i:my name is|call me)\s+([A-Za-z][\w'-]*)", rf"\b(?:I'm|I am) {_NAME}(?=\s*(?:[,.!;]|$|and\b))",
             rf"我叫{_ZH_NAME}", rf"我的名字(?:是|叫){_ZH_NAME}"],
    "likes": [r"\bI (?:really )?(?:like|love|prefer) ([^.,!?;\n]{2,40})", r"\bmy favou?rite \w+ is ([^.,!?;\n]{2,40})",
              rf"我(?:很|最)?(?:喜欢|爱|偏爱){_ZH_THING}"],
}
THIRD_PERSON = {
    "name": [rf"\b(?i:the user's name is|the user is called)\s+{_NAME}", rf"用户叫{_ZH_NAME}",
             rf"用户的名字是{_ZH_NAME}"],
    "likes": [r"\bthe user likes ([^.,!?;\n]{2,40})", rf"用户喜欢{_ZH_THING}"],
}
ASKS = {
    "name": r"\bwhat(?:'s| is) my name\b|\b(?:know|remember) my name\b|\bwho am i\b"
            r"|我叫什么|我的名字(?:是|叫)?什么|我是谁|记得我的名字|知道我的名字",
    "likes": r"\bwhat do i (?:like|love|prefer)\b|\bwhat(?:'s| is) my favou?rite\b|我喜欢什么|我爱什么",
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


def entries_of(body: dict, messages: list[dict]) -> list[tuple[str, str]]:
    """The conversation as (role, text): system, then each message's text and tool results."""
    system = body.get("system") or ""
    out = [("system", system if isinstance(system, str) else text_of({"content": system}))]
    calls: dict[str, dict] = {}
    for m in messages:
        for b in blocks(m["content"]):
            if b.get("type") == "text":
                out.append((m["role"], b.get("text", "")))
            elif b.get("type") == "tool_use":
                calls[b.get("id")] = b
            elif b.get("type") == "tool_result":
                call = calls.get(b.get("tool_use_id"), {})
                out.append(("tool", f"{call.get('name', 'tool')}({_args(call)}) → {result_text(b)}"))
    return out


_SUMMARISE = re.compile(r"\bsummar(?:ise|ize|y)\w*|\bcompress\w*|\btl;?dr\b|总结|摘要|概括|压缩", re.I)
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
        if _SUMMARISE.search(line):
            line = re.split(r"[:：]", line, maxsplit=1)[1] if re.search(r"[:：]", line) else ""
        if not line.strip() or re.fullmatch(r"\s*</?\w+>\s*", line):
            continue  # blank, or a tag such as <conversation>
        m = _ROLE_LINE.match(line)
        if m:
            has_roles = True
            who = (m.group(1) or "").lower()
            if m.group(2):
                out.append(("tool", line.strip()))
            else:
                out.append(("user" if who in ("user", "human") else "assistant", m.group(3)))
        elif has_roles:
            out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
        else:
            out.append(("note", line.strip()))
    return out, has_roles


def summarise(entries: list[tuple[str, str]], lang: str) -> str:
    """A short summary (at most about 150 words) that keeps stated facts, questions and tool results."""
    say = SAY[lang]
    parts = [say["fact_" + k].format(v=v) for k, v in facts(entries).items()]
    stated = lambda t: any(re.search(p, t, re.I) for ps in FIRST_PERSON.values() for p in ps)
    asked = [t for r, t in entries if r == "user" and t.strip() and (not stated(t) or re.search(r"[?？]", t))]
    quote = "「{}」" if lang == "zh" else '"{}"'
    if asked:
        parts.append(say["asked"].format(items="; ".join(quote.format(_clip(t, 60)) for t in asked[-4:])))
    results = [t for r, t in entries if r == "tool"]
    if results:
        parts.append(say["results"].format(items="; ".join(_clip(t, 80) for t in results[-4:])))
    notes = [t for r, t in entries if r == "note"]
    if notes and not asked and not results:  # plain text, e.g. a long tool output to shorten
        parts.append(say["points"].format(items="; ".join(_clip(t, 80) for t in notes[:4])))
    joined = ("" if lang == "zh" else " ").join(parts)
    text = say["mark"] + say["summary"] + (joined or say["nothing"])
    if lang == "zh":
        return _clip(text, 300)
    words = text.split()
    return text if len(words) <= 150 else " ".join(words[:150]) + " …"


# --- plain answers -------------------------------------------------------------------------------------

_GREETING = re.compile(r"^\W*(?:hi|hello|hey|good (?:morning|afternoon|evening)|greetings)\b"
                       r"|^\W*(?:你好|您好|嗨|哈喽|早上好|晚上好)", re.I)


def plain_answer(question: str, known: dict[str, str], tools: list[dict], lang: str) -> str:
    """An answer without tools: a recalled fact, an acknowledgement, a greeting, or an honest "I don't know"."""
    say = SAY[lang]
    for fact, pattern in ASKS.items():
        if re.search(pattern, question, re.I):
            return say["mark"] + (say["know_" + fact].format(v=known[fact]) if fact in known else say["forgot_" + fact])
    mine = facts([("user", question)])
    if mine and not re.search(r"[?？]", question):
        fact = "name" if "name" in mine else "likes"
        return say["mark"] + say["got_" + fact].format(v=mine[fact])
    if _GREETING.search(question) and len(question) < 40:
        name = known.get("name")
        return say["mark"] + say["hello"].format(name=(f", {name}" if lang == "en" else f"，{name}") if name else "")
    no_fit = say["no_fit"].format(names=", ".join(t.get("name", "") for t in tools)) if tools else ""
    if tools and plan(question, tools, {"type": "auto"})[0]:
        no_fit = say["no_tools"]  # a tool fits, but tool_choice "none" forbids it
    return say["mark"] + no_fit + say["unknown"].format(q=_clip(question.strip(), 80))


# --- the response -----------------------------------------------------------------------------------


def decide(body: dict, messages: list[dict]) -> list[dict]:
    """The content of the answer, before any limit is applied."""
    at = question_index(messages)
    question = _user_text(messages[at]) if at >= 0 else ""
    lang = language(question)
    tools, choice = body.get("tools") or [], body.get("tool_choice") or {}
    pairs = episode(messages, at)
    if pairs and tool_results(messages[-1]):
        return after_tools(question, pairs, body, lang)
    system = body.get("system") or ""
    system = system if isinstance(system, str) else text_of({"content": system})
    if choice.get("type") not in ("any", "tool") and (
            _SUMMARISE.search(question) or (_SUMMARISE.search(system) and len(messages) == 1)):
        pasted, has_roles = transcript(question)
        entries = pasted if has_roles or len(messages) == 1 else entries_of(body, messages[:at])
        said = " ".join(t for r, t in entries if r == "user")
        return [{"type": "text", "text": summarise(entries, language(said) if said else lang)}]
    known = facts(entries_of(body, messages))
    if not any(re.search(p, question, re.I) for p in ASKS.values()) or choice.get("type") in ("any", "tool"):
        calls, missing = plan(question, tools, choice)
        if calls:
            calls = calls[:1] if choice.get("disable_parallel_tool_use") else calls
            return [{"type": "text", "text": describe(calls, tools, lang)}, *calls]
        if missing:
            tool, prop = missing[0]
            return [{"type": "text", "text": SAY[lang]["mark"] + SAY[lang]["need"].format(tool=tool, field=prop)}]
    return [{"type": "text", "text": plain_answer(question, known, tools, lang)}]


def _cut_text(text: str, budget: int) -> str:
    """The longest start of the text whose token estimate fits the budget."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if estimate_text(text[:mid]) <= budget else (lo, mid - 1)
    return text[:lo].rstrip()


def finish(content: list[dict], body: dict) -> dict:
    """Apply the limits a real model stops at: a stop sequence in the text, then max_tokens.

    A text cut this way is stripped of trailing whitespace (and dropped if nothing is
    left), so the response can always be sent back as the next assistant turn. A
    tool_use block that does not fit comes back with an empty input (if even that
    fits): a truncated call that must never be executed. The content's token estimate
    never exceeds max_tokens, so the usage MockAPI reports never does either.
    """
    stop_reason, stop_sequence = None, None
    for n, block in enumerate(content):
        text = block.get("text", "") if block["type"] == "text" else ""
        hits = [(text.find(s), s) for s in body.get("stop_sequences") or [] if s and s in text]
        if hits:
            pos, stop_sequence = min(hits, key=lambda h: (h[0], -len(h[1])))
            content = content[:n] + ([{"type": "text", "text": text[:pos].rstrip()}] if text[:pos].strip() else [])
            stop_reason = "stop_sequence"
            break
    budget, kept = body.get("max_tokens", 4096), []
    for block in content:
        cost = estimate_block(block)
        if cost <= budget:
            kept.append(block)
            budget -= cost
            continue
        stop_reason, stop_sequence = "max_tokens", None
        if block["type"] == "tool_use":
            if estimate_block(cut_call := {**block, "input": {}}) <= budget:
                kept.append(cut_call)
        elif (cut := _cut_text(block["text"], budget)).strip():
            kept.append({"type": "text", "text": cut})
        break
    if stop_reason is None:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in kept) else "end_turn"
    return {"content": kept, "stop_reason": stop_reason, "stop_sequence": stop_sequence}


def respond(body: dict) -> dict:
    """The mock model's answer to a validated Messages API request body (no ids, no usage).

    A final assistant message is a prefill: the answer continues it, without repeating it.
    """
    messages = list(body["messages"])
    prefill = ""
    if messages and messages[-1]["role"] == "assistant":
        prefill = text_of(messages.pop())
    content = decide(body, messages)
    if prefill:
        content = continue_from(prefill, content)
    return finish(content, body)


def continue_from(prefill: str, content: list[dict]) -> list[dict]:
    """What comes after a prefill: the tool calls alone, or the answer's text past the prefill."""
    calls = [b for b in content if b["type"] == "tool_use"]
    if calls:
        return calls
    full = "".join(b["text"] for b in content)
    rest = full[len(prefill):] if full.startswith(prefill) else " " + full
    return [{"type": "text", "text": rest}] if rest.strip() else []
