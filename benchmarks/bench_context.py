"""Context policies on one long, tool-heavy session: what it costs under each policy.

The claims (notebook 04, and the article's section 5): resending the whole history
every call makes a session's input tokens grow with the square of its length, and a
policy bounds it without ever sending a request the API rejects. The session is 60
scripted turns against the offline mock (deterministic: the same rows every run): a
task, the user's name, then searches and page fetches (thousands of characters each),
weather and arithmetic in rotation, and "What's my name?" at the end.

Acceptance:
- a pair-safe window plus tool-output truncation spends at most 25% of the unmanaged
  session's cumulative input tokens;
- under TokenBudget no call's input (system prompt and tool schemas included, via
  `reserve`) exceeds the budget;
- every pair-safe policy completes the session. The naive window (the article's
  trimMessages) is expected to break with a 400; the table reports where.
"""

from __future__ import annotations

from typing import Any, Callable

import miniagent
from miniagent.builtin_tools import calculate, get_weather
from miniagent.context import (Compose, NaiveWindow, SlidingWindow, Summarize, TokenBudget,
                               TruncateToolResults)
from miniagent.messages import user
from miniagent.tokens import estimate_request
from miniagent.tools import ToolRegistry, tool

TURNS = 60
BUDGET = 4_000          # TokenBudget's max_tokens per call, everything included
WINDOW = 20             # messages kept by the windows (the naive one: trimMessages(messages, 10))
TRUNCATE_TO = 1_000     # characters a tool result is cut to
MAX_SHARE = 0.25        # window + truncation must cost at most this share of the unmanaged session
SYSTEM = "You are a research assistant. Use the tools when they help, and answer briefly."
NAME = "Ada"

FILLER = ("It walks through the idea with an example, lists the usual mistakes, quotes a "
          "benchmark and ends with advice that a careful team would test on its own workload. ")
TOPICS = ["context windows", "prompt caching", "tool calling", "agent memory", "rate limits",
          "token pricing", "streaming", "retries", "evaluation"]
CITIES = ["Beijing", "Shanghai", "London", "Paris", "Tokyo"]


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
RESERVE = estimate_request({"system": SYSTEM, "tools": TOOLS.schemas(), "messages": []})


def questions(turns: int) -> list[str]:
    """The session: a task, the user's name, tool questions in rotation, then the name asked back."""
    asked = ["I'm writing a short guide to running LLM agents in production. Search for context windows.",
             f"By the way, my name is {NAME}."]
    for i in range(turns - 3):
        topic = TOPICS[i // 4 % len(TOPICS)]
        asked.append([f"Search for {topic}.", f'Fetch "https://example.com/{topic.replace(" ", "-")}/1" for me.',
                      f"What's the weather in {CITIES[i % len(CITIES)]}?", f"Calculate {12 + i} * {7 + i}."][i % 4])
    return asked + ["What's my name?"]


# Each policy is built on the session's own client (Summarize calls the model itself).
POLICIES: dict[str, Callable[[Any], Any]] = {
    "none": lambda client: None,
    "naive window": lambda client: NaiveWindow(max_turns=WINDOW // 2),
    "sliding window": lambda client: SlidingWindow(max_messages=WINDOW),
    "token budget": lambda client: TokenBudget(max_tokens=BUDGET, reserve=RESERVE),
    "summarize": lambda client: Summarize(client, trigger_tokens=6_000, keep_recent_tokens=2_500),
    "window + truncation": lambda client: Compose(TruncateToolResults(max_chars=TRUNCATE_TO),
                                                  SlidingWindow(max_messages=WINDOW)),
}


def session(make_policy: Callable[[Any], Any], turns: int) -> dict:
    """Run the session on a fresh offline client; every successful call's input tokens, and how it ended."""
    client = miniagent.connect(offline=True, quiet=True)
    policy = make_policy(client)
    history: list[dict] = []
    broke, answer = None, ""
    for turn, question in enumerate(questions(turns), 1):
        result = miniagent.run_loop(client, history + [user(question)], tools=TOOLS, system=SYSTEM, policy=policy)
        if result.stop == "api_error":
            broke = f"no: {result.error.status} at turn {turn}"
            break
        if not result.ok:  # the mock should answer every turn; anything else would skew the numbers
            raise RuntimeError(f"turn {turn} ended with {result.stop}: {result.reason}")
        history, answer = result.messages, result.text
    inputs = [r["response"]["usage"]["input_tokens"] for r in client.mock.requests if r["status"] == 200]
    return {"inputs": inputs, "broke": broke, "recalled": NAME in answer}


def run(turns: int = TURNS) -> tuple[str, list[dict]]:
    measured = {name: session(make, turns) for name, make in POLICIES.items()}
    unmanaged = sum(measured["none"]["inputs"])
    rows = []
    for name, m in measured.items():
        total = sum(m["inputs"])
        rows.append({"policy": name, "model_calls": len(m["inputs"]), "input_tokens": f"{total:,}",
                     "max_per_call": f"{max(m['inputs']):,}", "vs_none": f"{total / unmanaged:.1%}",
                     "completed": m["broke"] or "yes", "name_recalled": "-" if m["broke"] else ("yes" if m["recalled"] else "no")})
    return (f"Context policies: a {turns}-turn tool-heavy session (offline mock; token budget {BUDGET:,}, "
            f"windows of {WINDOW} messages, tool output cut to {TRUNCATE_TO:,} characters)", rows)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def check(rows: list[dict]) -> list[str]:
    by_name = {r["policy"]: r for r in rows}
    failed = []
    unmanaged = _number(by_name["none"]["input_tokens"])
    managed = _number(by_name["window + truncation"]["input_tokens"])
    if managed > MAX_SHARE * unmanaged:
        failed.append(f"window + truncation spent {managed:,} input tokens, {managed / unmanaged:.1%} of the "
                      f"unmanaged session's {unmanaged:,}; the claim is at most {MAX_SHARE:.0%}")
    largest = _number(by_name["token budget"]["max_per_call"])
    if largest > BUDGET:
        failed.append(f"a call under TokenBudget sent {largest:,} input tokens, over the budget of {BUDGET:,}")
    for r in rows:
        if r["policy"] != "naive window" and r["completed"] != "yes":
            failed.append(f"{r['policy']} did not complete the session ({r['completed']})")
    return failed
