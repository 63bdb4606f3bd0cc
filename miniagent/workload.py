"""One long, tool-heavy session: the workload behind notebook 04 and `make bench`.

A claim such as "a window plus truncation spends a quarter of the tokens" is only
worth something on a stated workload, and two copies of a workload drift apart. So
the session lives here, once: its tools, its questions, its driver, its parameters
and the context policies it is run under. Notebook 04 and
`benchmarks/bench_context.py` both import it and run it with the same `TURNS`.

The session: the user sets a task (turn 1), gives their name (turn 2), then asks
for searches, page fetches, weather and sums in rotation, states a preference
half-way through, and at the end asks for their name and preference back.
Searches and page fetches return thousands of characters, as real ones do, so
tool output dominates the tokens. The name comes in turn 2, not turn 1,
on purpose: every window keeps the first message, so a fact stated there would
survive all of them. Everything is deterministic: the same run gives the same
numbers offline.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from miniagent.builtin_tools import calculate, get_weather
from miniagent.clientcore import input_billed
from miniagent.i18n import language, pad, say, width
from miniagent.context import (Compose, NaiveWindow, Policy, SlidingWindow, Summarize, SummarizeToolResults,
                               TokenBudget, TruncateToolResults)
from miniagent.loop import run_loop
from miniagent.messages import blocks, result_text, user
from miniagent.tokens import estimate_block, estimate_request
from miniagent.tools import ToolRegistry, tool

TURNS = 60             # questions in the session (live, notebook 04 runs fewer: every token is paid for)
WINDOW = 20            # messages the windows keep (the naive one: the article's trimMessages(messages, 10))
BUDGET = 4_000         # TokenBudget's ceiling per call, system prompt and tool schemas included
TRUNCATE_TO = 1_000    # characters a long tool result is cut (or summarised) to on arrival
SUMMARY_TRIGGER = 6_000  # Summarize folds older turns once the unsummarised part passes this many tokens
SUMMARY_KEEP = 2_500     # ... and keeps about this many tokens of recent turns verbatim
MEMORY_TOKENS = 200      # StructuredMemory's block of facts, at most (estimated tokens)

SYSTEM = "You are a research assistant. Use the tools when they help, and answer briefly."
NAME = "Ada"
PREFERENCE = "answers in metric units"  # stated half-way through the session
LAST_QUESTION = "What's my name, and what do I prefer?"
TOPICS = ["context windows", "prompt caching", "tool calling", "agent memory", "rate limits",
          "token pricing", "streaming", "retries", "evaluation"]
CITIES = ["Beijing", "Shanghai", "London", "Paris", "Tokyo"]
ASKED = {"task": "I'm writing a short guide to running LLM agents in production. Search for context windows.",
         "name": "By the way, my name is {name}.", "preference": "One more thing: I prefer {preference}.",
         "search": "Search for {topic}.", "fetch": 'Fetch "{url}" for me.', "weather": "What's the weather in {city}?",
         "calculate": "Calculate {a} * {b}."}
# The Chinese edition's kernel (MINIAGENT_LANG=zh, read once, on import) runs the same session as a
# Chinese user types it: the same turns, tools, calls and numbers (tests/test_zh_edition.py checks),
# in Chinese. The pages it fetches keep their English addresses.
if language() == "zh":
    SYSTEM = "你是一名研究助理。需要时使用工具，回答要简短。"
    NAME = "小明"
    PREFERENCE = "用公制单位的回答"
    LAST_QUESTION = "我叫什么名字？我喜欢什么？"
    ASKED = {"task": "我在写一份在生产环境里运行 LLM Agent 的简明指南。帮我搜索一下上下文窗口。",
             "name": "顺便说一下，我叫{name}。", "preference": "另外：我喜欢{preference}。",
             "search": "帮我搜索一下{topic}。", "fetch": '帮我抓取 "{url}" 这个网页。', "weather": "{city}天气怎么样？",
             "calculate": "算一下 {a} * {b}。"}
    _TOPIC_NAMES = ["上下文窗口", "提示缓存", "工具调用", "Agent 记忆", "限流", "token 计价", "流式输出", "重试", "评测"]
    _CITY_NAMES = ["北京", "上海", "伦敦", "巴黎", "东京"]
else:
    _TOPIC_NAMES, _CITY_NAMES = TOPICS, CITIES
FILLER = ("It walks through the idea with an example, lists the usual mistakes, quotes a "
          "benchmark and ends with advice that a careful team would test on its own workload. ")


# --- the tools: two long outputs, two short ones ----------------------------------------


@tool
def search_web(query: str) -> str:
    """Search the web and return the top ten hits, each with a title, a link and a snippet.

    Args:
        query: What to search for, in a few words.
    """
    slug = "-".join(query.lower().split())
    hits = [f"{i}. {query.title()}, part {i} of a series\n   https://example.com/{slug}/{i}\n   {FILLER}\n"
            for i in range(1, 11)]
    return f"Top 10 results for {query!r}:\n" + "".join(hits)


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page by its address and return its full text.

    Args:
        url: The page's address, starting with https://
    """
    words = [part for part in url.split("/") if part and not part.isdigit()]
    topic = words[-1].replace("-", " ") if words else "this topic"
    sections = [f"Section {i}: {topic}, step {i}. " + FILLER * 2 for i in range(1, 13)]
    return (f"{topic.title()}: the long guide\n\n" + "\n\n".join(sections)
            + f"\n\nConclusion: measure {topic} before you tune it.")


TOOLS = ToolRegistry([get_weather, calculate, search_web, fetch_page])
# What every request carries besides the messages: TokenBudget reserves room for it.
RESERVE = estimate_request({"system": SYSTEM, "tools": TOOLS.schemas(), "messages": []})


def questions(turns: int = TURNS) -> list[str]:
    """The user's turns: a task, the user's name, tool questions in rotation with a preference stated
    at turn `turns // 2 + 1`, then the name and the preference asked back."""
    if turns < 4:
        raise ValueError(f"the session needs at least 4 turns (task, name, preference, question), got {turns}")
    asked = [ASKED["task"], ASKED["name"].format(name=NAME)]
    for i in range(turns - 4):
        k = i // 4 % len(TOPICS)
        url = f"https://example.com/{TOPICS[k].replace(' ', '-')}/1"
        asked.append([ASKED["search"].format(topic=_TOPIC_NAMES[k]), ASKED["fetch"].format(url=url),
                      ASKED["weather"].format(city=_CITY_NAMES[i % len(CITIES)]),
                      ASKED["calculate"].format(a=12 + i, b=7 + i)][i % 4])
    asked.insert(turns // 2, ASKED["preference"].format(preference=PREFERENCE))
    return asked + [LAST_QUESTION]


# --- the policies it is run under ---------------------------------------------------------


def StructuredMemory(client: Any, inner: Policy, **options: Any) -> Policy:  # noqa: N802 (a class's name)
    """Notebook 09's `miniagent.memory.StructuredMemory(client, inner, ...)`, imported when first made.

    This module is notebook 04's, which comes before memory: importing it loads nothing of notebook 09.
    """
    from miniagent.memory.structured import StructuredMemory

    return StructuredMemory(client, inner, **options)


def policies(client: Any, *, memory: bool = False) -> dict[str, Policy]:
    """The context policies to compare, by label. The summarising ones call the model through `client`.

    `memory=True` adds structured memory (`make bench` runs it). Notebook 04 leaves it out: its
    exercise 3 asks for a policy cheaper than every one it ran that recalls the name, a target
    set for summaries; structured memory is notebook 09's subject.
    """
    chosen = {
        "naive window": NaiveWindow(max_turns=WINDOW // 2),
        "sliding window": SlidingWindow(max_messages=WINDOW),
        "token budget": TokenBudget(max_tokens=BUDGET, reserve=RESERVE),
        "summarize": Summarize(client, trigger_tokens=SUMMARY_TRIGGER, keep_recent_tokens=SUMMARY_KEEP),
        "truncate tool output": TruncateToolResults(max_chars=TRUNCATE_TO),
        "summarize tool output": SummarizeToolResults(client, max_chars=TRUNCATE_TO),
        "window + truncation": Compose(TruncateToolResults(max_chars=TRUNCATE_TO),
                                       SlidingWindow(max_messages=WINDOW)),
    }
    if memory:
        chosen["structured memory"] = StructuredMemory(client, Compose(TruncateToolResults(max_chars=TRUNCATE_TO),
                                                                       SlidingWindow(max_messages=WINDOW)),
                                                       max_tokens=MEMORY_TOKENS)
    return chosen


# --- the driver -----------------------------------------------------------------------------


@dataclass
class Session:
    """What one run of the session did: every call's size, the history, the last answer, how it ended."""

    policy: Any
    turns: int                                             # questions the session was to ask
    per_call: list[int] = field(default_factory=list)      # input tokens of each call the loop made, cached included
    turn_of_call: list[int] = field(default_factory=list)  # the turn each of those calls belongs to
    history: list[dict] = field(default_factory=list)      # the full history the agent kept
    answer: str = ""                                       # the answer to the last question
    broke: tuple[int, str] | None = None                   # (turn, first line of the error) if a call failed
    unfinished: list[tuple[int, str]] = field(default_factory=list)  # (turn, stop) of turns that ended otherwise
    calls: int = 0                                         # every model call, summary calls included
    input_tokens: int = 0                                  # input tokens of all those calls

    @property
    def largest_call(self) -> int:
        """The biggest single request: what must stay under the model's context window."""
        return max(self.per_call, default=0)

    @property
    def completed(self) -> bool:
        return self.broke is None and not self.unfinished

    @property
    def ending(self) -> str:
        """"yes" if every turn was answered, else what stopped it and where, e.g. "400 at turn 6" (是, 第 6 轮 400)."""
        if self.broke:
            return say("wl_at_turn", what=self.broke[1].split(" ", 1)[0], turn=self.broke[0])
        if self.unfinished:
            return say("wl_at_turn", what=self.unfinished[0][1], turn=self.unfinished[0][0])
        return say("wl_yes")

    @property
    def recalled(self) -> bool:
        """Did the last answer give the name the user stated in turn 2?"""
        return self.broke is None and NAME in self.answer

    @property
    def recalled_preference(self) -> bool:
        """Did the last answer give the preference the user stated half-way through?"""
        return self.broke is None and PREFERENCE in self.answer

    @property
    def remembers(self) -> str:
        """What the last answer recalled: "name + pref", "name", "pref", "neither" ("-" if the session broke)."""
        if self.broke:
            return "-"
        return say({(True, True): "wl_name_pref", (True, False): "wl_name", (False, True): "wl_pref"}.get(
            (self.recalled, self.recalled_preference), "wl_neither"))

    def input_up_to(self, turn: int) -> int:
        """Input tokens of the loop's calls for turns 1..`turn` (summary calls not included)."""
        return sum(tokens for tokens, t in zip(self.per_call, self.turn_of_call) if t <= turn)

    @property
    def doubling(self) -> float | None:
        """How many times the first half of the turns the whole session cost: 4 for a square, 2 for a line."""
        half = self.input_up_to(self.turns // 2)
        return self.input_up_to(self.turns) / half if self.completed and half else None


def run_session(client: Any, policy: Any = None, turns: int = TURNS) -> Session:
    """Ask the questions one after another, keeping the history between them, as an agent does."""
    session, before = Session(policy, turns), copy.copy(client.usage)
    turn = 0

    def record(event: dict) -> None:
        if event["type"] == "response":
            session.per_call.append(input_billed(event["usage"] or {}))  # a prompt cache's part counts too
            session.turn_of_call.append(turn)

    for turn, question in enumerate(questions(turns), 1):
        result = run_loop(client, session.history + [user(question)], tools=TOOLS,
                          system=SYSTEM, policy=policy, on_event=record)
        if result.stop == "api_error":
            session.broke = (turn, str(result.error).splitlines()[0])
            break
        if not result.ok:
            session.unfinished.append((turn, result.stop))
        session.history, session.answer = result.messages, result.text
    session.calls = client.usage.calls - before.calls
    session.input_tokens = client.usage.input_tokens - before.input_tokens
    return session


# --- where the tokens go ------------------------------------------------------------------


def requests_of(history: list[dict]) -> list[list[dict]]:
    """The messages of every call an unmanaged session made: the history up to each user message."""
    return [history[:i + 1] for i, m in enumerate(history) if m["role"] == "user"]


def tool_output_tokens(messages: list[dict]) -> int:
    """Estimated tokens of the `tool_result` blocks in `messages` (the rule the mock's usage uses)."""
    return sum(estimate_block(b) for m in messages for b in blocks(m["content"]) if b["type"] == "tool_result")


def first_result(history: list[dict], tool_name: str) -> str:
    """The text of the first `tool_result` answering a call to `tool_name`: how a policy left it."""
    ids = {b["id"] for m in history for b in blocks(m["content"]) if b["type"] == "tool_use" and b["name"] == tool_name}
    return next((result_text(b) for m in history for b in blocks(m["content"])
                 if b["type"] == "tool_result" and b["tool_use_id"] in ids), f"(no {tool_name} call)")


# --- the comparison both print ------------------------------------------------------------


def compare(sessions: dict[str, Session]) -> list[dict[str, str]]:
    """One row per session, as notebook 04 and `make bench` print them (`sessions` must hold "none")."""
    unmanaged = max(1, sessions["none"].input_tokens)
    rows = []
    for label, s in sessions.items():
        rows.append({
            "policy": label,
            "calls": f"{s.calls:,}",
            "input tokens": f"{s.input_tokens:,}",
            "vs none": f"{s.input_tokens / unmanaged:.1%}",
            "largest call": f"{s.largest_call:,}",
            "doubling": f"{s.doubling:.2f}x" if s.doubling else "-",
            "completed": s.ending,
            "recalled": s.remembers,
        })
    return rows


# compare()'s columns as the Chinese edition heads them (the rows keep their English keys: code reads them)
_COLUMNS_ZH = {"policy": "策略", "calls": "调用次数", "input tokens": "输入 token", "vs none": "相对 none",
               "largest call": "最大的一次调用", "doubling": "翻倍比", "completed": "跑完", "recalled": "记得"}


def format_table(rows: list[dict[str, str]]) -> str:
    """Rows of strings under their keys, the first column left-aligned and the others right-aligned
    (in display columns: a Chinese character takes two); the heads in the learner's language."""
    keys = list(rows[0])
    heads = [_COLUMNS_ZH.get(k, k) if language() == "zh" else k for k in keys]
    widths = [max(width(h), *(width(r[k]) for r in rows)) for h, k in zip(heads, keys)]

    def line(values: list[str]) -> str:
        return "  ".join(pad(v, w, "<" if i == 0 else ">") for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(heads), line(["-" * w for w in widths]), *(line([r[k] for k in keys]) for r in rows)])


def checkpoints(sessions: dict[str, Session], every: int = 20) -> str:
    """The numbers behind notebook 04's figure: each session's call sizes and running totals at every
    `every`-th call, and the parabola through the unmanaged session's total ("-": it had stopped)."""
    last = len(sessions["none"].per_call)
    marks = [1, *range(every, last, every), last]

    def row(label: str, values: list) -> str:
        return pad(label, 22) + "".join(f"{v:>10,}" if isinstance(v, int) else f"{v:>10}" for v in values)

    lines = []
    for title, series in ((say("wl_of_call"), lambda s: s.per_call),
                          (say("wl_so_far"), lambda s: list(itertools.accumulate(s.per_call)))):
        lines.append(row(title, marks))
        lines += [row(label, [series(s)[n - 1] if n <= len(s.per_call) else "-" for n in marks])
                  for label, s in sessions.items()]
        lines.append("")
    total = sessions["none"].input_tokens
    lines.append(row(say("wl_parabola"), [round(total * (n / last) ** 2) for n in marks]))
    return "\n".join(lines)
