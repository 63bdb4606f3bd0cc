# %% [markdown]
# # 04 · Context — a cost that grows every turn, bounded without breaking anything
#
# An agent keeps its conversation in `messages` and sends all of it on every call. It
# has to: the model remembers nothing between calls (notebook 01). But it means every
# call is bigger than the one before, and the bill for a session grows with the
# *square* of its length. This notebook measures that growth, bounds it with context
# policies, and checks that no policy ever sends a request the API rejects.
#
# **You will be able to**
# - explain, with numbers, why resending the history makes a session's cost grow with the square of its length;
# - bound what each call sends (a pair-safe window, a token budget, a summary, shorter tool output) without a single 400;
# - say what each policy costs and what it forgets.
#
# **You need** notebooks 01–03. Offline is fine.

# %%
import copy
import inspect
import itertools
import json
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
%matplotlib inline
# (inline: figures are drawn into the notebook even where MPLBACKEND is set to Agg)

import miniagent
from miniagent.builtin_tools import calculate, get_weather
from miniagent.messages import blocks, conversation_error, result_text
from miniagent.tokens import estimate_block, estimate_request
from miniagent.tools import ToolRegistry, tool

llm = miniagent.connect()
TURNS = 36 if llm.mode == "offline" else 16  # live, every token below is paid for: keep it shorter

# %% [markdown]
# ## A long, tool-heavy session
#
# Most of an agent's tokens come back from tools: a search returns ten hits with
# snippets, a page fetch returns a whole article. Two fake tools stand in for them.
# They return a few thousand characters of plausible text, always the same for the
# same input, so every run of this notebook measures the same thing. The weather and
# calculator tools from notebook 02 give the short answers in between.

# %%
FILLER = ("It walks through the idea with an example, lists the usual mistakes, quotes a "
          "benchmark and ends with advice that a careful team would test on its own workload. ")


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

# %%
@tool
def fetch_page(url: str) -> str:
    """Fetch a web page by its address and return its full text.

    Args:
        url: The page's address, starting with https://
    """
    words = [part for part in url.split("/") if part and not part.isdigit()]
    topic = words[-1].replace("-", " ") if words else "this topic"
    sections = [f"Section {i}: {topic}, step {i}. " + FILLER * 2 for i in range(1, 13)]
    return f"{topic.title()}: the long guide\n\n" + "\n\n".join(sections) + \
        f"\n\nConclusion: measure {topic} before you tune it."


tools = ToolRegistry([get_weather, calculate, search_web, fetch_page])
print(tools)
print("search_web returns", len(search_web.fn(query="context windows")), "characters,",
      "fetch_page", len(fetch_page.fn(url="https://example.com/context-windows/1")))

# %% [markdown]
# The session: the user sets a task, gives their name, then asks for searches, page
# fetches, weather and sums, round and round, and at the very end asks for their name.
# The name comes in turn 2, not turn 1, on purpose: every policy below keeps the first
# message (the task), so a fact stated there would survive all of them.

# %%
TOPICS = ["context windows", "prompt caching", "tool calling", "agent memory", "rate limits",
          "token pricing", "streaming", "retries", "evaluation"]
CITIES = ["Beijing", "Shanghai", "London", "Paris", "Tokyo"]


def session_questions(turns):
    """Turn 1 sets the task, turn 2 gives a name, the last turn asks for it; tool questions in between."""
    questions = ["I'm writing a short guide to running LLM agents in production. Search for context windows.",
                 "By the way, my name is Ada."]
    for i in range(turns - 3):
        topic = TOPICS[i // 4 % len(TOPICS)]
        questions.append([f"Search for {topic}.", f'Fetch "https://example.com/{topic.replace(" ", "-")}/1" for me.',
                          f"What's the weather in {CITIES[i % len(CITIES)]}?", f"Calculate {12 + i} * {7 + i}."][i % 4])
    return questions + ["What's my name?"]


QUESTIONS = session_questions(TURNS)
print(len(QUESTIONS), "turns:")
for n, question in [*enumerate(QUESTIONS[:7], 1), ("...", ""), (len(QUESTIONS), QUESTIONS[-1])]:
    print(f"  {n:>3} {question}")

# %% [markdown]
# To run it, do what an agent does: keep one history, append each question, let
# `run_loop` (notebook 03) answer it, keep the history it returns. The loop reports
# every model response as an event with the API's `usage`; the session records each
# call's `input_tokens`, the turn it belongs to, and how the session ended.

# %%
SYSTEM = "You are a research assistant. Use the tools when they help, and answer briefly."


@dataclass
class Session:
    policy: object
    per_call: list = field(default_factory=list)      # input tokens of each call the loop made
    turn_of_call: list = field(default_factory=list)  # the turn each of those calls belongs to
    history: list = field(default_factory=list)       # the full history the agent kept
    answer: str = ""                                  # the answer to the last question
    broke: tuple | None = None                        # (turn, error) if an API call failed
    calls: int = 0                                    # every model call, summary calls included
    input_tokens: int = 0                             # input tokens of all those calls

# %%
def run_session(policy=None, questions=QUESTIONS):
    """Ask the questions one after another, keeping the history between them, as an agent does."""
    session, before = Session(policy), copy.copy(llm.usage)

    def record(event):
        if event["type"] == "response":
            session.per_call.append(event["usage"]["input_tokens"])
            session.turn_of_call.append(turn)

    for turn, question in enumerate(questions, 1):
        result = miniagent.run_loop(llm, session.history + [miniagent.user(question)], tools=tools,
                                    system=SYSTEM, policy=policy, on_event=record)
        if result.stop == "api_error":
            session.broke = (turn, str(result.error).splitlines()[0])
            break
        session.history, session.answer = result.messages, result.text
    session.calls = llm.usage.calls - before.calls
    session.input_tokens = llm.usage.input_tokens - before.input_tokens
    return session

# %% [markdown]
# ## Every call resends everything
#
# First with no policy at all: each call sends the whole history.

# %%
none = run_session()
calls = len(none.per_call)
print(f"{len(none.history)} messages in the history, {calls} model calls, {none.input_tokens:,} input tokens in all")
for n in (1, 2, calls // 4, calls // 2, 3 * calls // 4, calls):
    print(f"  call {n:3} (turn {none.turn_of_call[n - 1]:2}): {none.per_call[n - 1]:7,} input tokens")

# %% [markdown]
# Each call carries every earlier turn, so its size grows in a straight line with the
# turn number. What you pay is the sum of those sizes: a triangle, and a triangle's area
# grows with the square of its side. Double the length of the session and the bill
# roughly quadruples:

# %%
def input_until(session, turn):
    """Input tokens of every call made up to and including `turn`."""
    return sum(tokens for tokens, t in zip(session.per_call, session.turn_of_call) if t <= turn)


half, whole = input_until(none, TURNS // 2), input_until(none, TURNS)
print(f"turns 1-{TURNS // 2}: {half:,} input tokens")
print(f"turns 1-{TURNS}: {whole:,} input tokens, {whole / half:.1f} times as many for twice the turns")

# %% [markdown]
# A longer history costs more than money. Every call waits while more tokens are read;
# the article adds that a model with pages of stale results in front of it answers
# worse; and past the model's context window the request fails outright.
#
# ## Five ways to run the same session
#
# A *context policy* decides what each call sends. `run_loop(..., policy=...)` asks it
# for a **view** of the history just before each call, and hands it each round's tool
# results before they enter the history, so it can shorten them once. The policies of
# `miniagent.context`, from light to heavy:
#
# - **naive window**: the article's `trimMessages(messages, 10)`, the first message plus the last 19;
# - **sliding window**: the same size, but it cuts only where no `tool_use` loses its `tool_result`;
# - **summarize**: once the history is long enough, the model folds the older turns into one summary;
# - **budget + truncate**: tool output cut short as it arrives, then as many recent turns
#   as fit a token budget that counts the system prompt and the tool schemas too.

# %%
from miniagent.context import Compose, NaiveWindow, SlidingWindow, Summarize, TokenBudget, TruncateToolResults

reserve = estimate_request({"system": SYSTEM, "tools": tools.schemas(), "messages": []})
print(f"system prompt + tool schemas: {reserve} tokens on every call (the budget's reserve)")
policies = {
    "naive window": NaiveWindow(max_turns=10),
    "sliding window": SlidingWindow(max_messages=20),
    "summarize": Summarize(llm, trigger_tokens=6_000, keep_recent_tokens=2_500),
    "budget + truncate": Compose(TruncateToolResults(max_chars=1_000), TokenBudget(max_tokens=3_000, reserve=reserve)),
}
for label, policy in policies.items():
    print(f"  {label:18} {policy.describe()}")

# %%
sessions = {"none": none} | {label: run_session(policy) for label, policy in policies.items()}
for label, session in sessions.items():
    ending = f"stopped at turn {session.broke[0]}" if session.broke else f"completed all {TURNS} turns"
    print(f"{label:18} {ending:24} largest call: {max(session.per_call):6,} input tokens")
turn, error = sessions["naive window"].broke
print(f"\nthe naive window at turn {turn}:\n  {error}")

# %% [markdown]
# The naive window broke the first time it had to cut (you will see why below). Every
# other policy completed the session. The figure shows each call's size and the running
# total; the red cross is the naive window's rejected call.

# %%
fig, (per_call_ax, total_ax) = plt.subplots(1, 2, figsize=(12, 4.2))
for label, session in sessions.items():
    x = range(1, len(session.per_call) + 1)
    running = list(itertools.accumulate(session.per_call))
    per_call_ax.plot(x, session.per_call, label=label)
    total_ax.plot(x, running, label=label)
    if session.broke:  # the call after the last one that ran is the one the API rejected
        per_call_ax.plot(len(x) + 1, session.per_call[-1], "rx", markersize=12, mew=3, label="400 (rejected)")
        total_ax.plot(len(x) + 1, running[-1], "rx", markersize=12, mew=3)
per_call_ax.set(title="Input tokens of each call", xlabel="model call", ylabel="input tokens")
total_ax.set(title="Input tokens so far (what you pay for)", xlabel="model call")
per_call_ax.legend()
plt.show()

# %% [markdown]
# The same numbers as text, every tenth call:

# %%
def print_table(header, rows):
    """Rows of values under a header, each column as wide as its widest value."""
    cells = [[str(v) for v in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths))))
        if n == 0:
            print("  ".join("-" * w for w in widths))


marks = sorted({1, *range(10, calls + 1, 10), calls})
for title, column in (("input tokens of call", lambda s, n: s.per_call[n - 1]),
                      ("input tokens up to call", lambda s, n: sum(s.per_call[:n]))):
    rows = [[label] + [f"{column(s, n):,}" if n <= len(s.per_call) else "-" for n in marks]
            for label, s in sessions.items()]
    print_table([title, *marks], rows)
    print()
print("-: the session had stopped before that call")

# %% [markdown]
# Each policy that completed keeps every call under a ceiling, so its running total grows
# in a straight line instead of a curve. Now look at each in turn: how the naive one
# breaks, what the others keep, and what they cost.
#
# ## The naive window's 400, up close
#
# The article's window counts messages without looking inside them. Here it is in
# Python, and a small history to try it on: three questions, each answered with a tool.

# %%
def trim_messages(messages, max_turns):
    """The article's trimMessages: the first message plus the last max_turns * 2 - 1."""
    if len(messages) <= max_turns * 2:
        return messages
    return [messages[0]] + messages[len(messages) - (max_turns * 2 - 1):]


def call(id, name, **input):
    return {"type": "tool_use", "id": id, "name": name, "input": input}


small = [
    miniagent.user("What's the weather in Paris?"),
    miniagent.assistant([call("toolu_1", "get_weather", city="Paris")]),
    miniagent.user([miniagent.tool_result("toolu_1", "Paris: partly cloudy, 16°C, light breeze")]),
    miniagent.assistant("Paris is partly cloudy, 16°C."),
    miniagent.user("And in Tokyo?"),
    miniagent.assistant([call("toolu_2", "get_weather", city="Tokyo")]),
    miniagent.user([miniagent.tool_result("toolu_2", "Tokyo: clearing up, 21°C, light breeze")]),
    miniagent.assistant("Tokyo is clearing up, 21°C."),
    miniagent.user("Calculate (1024 + 768) * 2."),
    miniagent.assistant([call("toolu_3", "calculate", expression="(1024 + 768) * 2")]),
    miniagent.user([miniagent.tool_result("toolu_3", "3584")]),
]

# %%
def outline(messages):
    """One line per message: its position, its role and what its blocks are."""
    for i, message in enumerate(messages):
        parts = []
        for b in blocks(message["content"]):
            if b["type"] == "text":
                parts.append(json.dumps(b["text"][:40], ensure_ascii=False))
            elif b["type"] == "tool_use":
                parts.append(f"tool_use {b['id']} ({b['name']})")
            elif b["type"] == "tool_result":
                parts.append(f"tool_result for {b['tool_use_id']}")
        print(f"  [{i:2}] {message['role']:9} {', '.join(parts)}")


outline(small)

# %% [markdown]
# With `max_turns=3` the window keeps the first message and the last five:

# %%
view = trim_messages(small, 3)
outline(view)
try:
    llm.create(view, tools=tools.schemas())
except miniagent.BadRequestError as err:
    print(err)

# %% [markdown]
# The cut fell between message 5 (`tool_use toolu_2`) and message 6 (its
# `tool_result`). The view now holds a result for a call it does not contain. The API
# merges the first message and the orphaned result into one user turn
# (`messages.0`) and rejects the request: every `tool_result` must answer a `tool_use`
# in the message just before it. Retrying cannot help; the next call cuts in the same
# kind of place. In the session, turn 1 already called a tool, so the window's very
# first cut orphaned a result.
#
# The fix is one loop: if the cut lands on a message of tool results, move it forward
# past them, dropping the pair together. The view may hold a message or two fewer than
# the limit; it is always a valid conversation.

# %%
def has_tool_results(message):
    return any(b.get("type") == "tool_result" for b in blocks(message["content"]))


def sliding_window(messages, max_messages):
    """The first message plus the last ones, at most max_messages, never cutting a call from its result."""
    if len(messages) <= max_messages:
        return list(messages)
    cut = len(messages) - (max_messages - 1)
    while has_tool_results(messages[cut]):  # its tool_use is on the dropped side: drop the results too
        cut += 1
    return [messages[0]] + messages[cut:]


view = sliding_window(small, 6)
outline(view)
print("conversation_error:", conversation_error(view))
response = llm.create(view, tools=tools.schemas())
print(response["stop_reason"], "-", miniagent.text_of(response))

# %% [markdown]
# ## The other bug: trimming the only copy
#
# The article's agent writes `messages = trimMessages(messages, 10)`. The trimmed list
# *replaces* the history, so whatever the window drops is gone for good: no later
# summary, no bigger window, no "what did I say first?" can get it back. Do the same to
# the unmanaged session's history as it was just before the last question:

# %%
def says_name(messages):
    """Is turn 2, where the user gave their name, in these messages?"""
    return any(m["content"] == QUESTIONS[1] for m in messages)


messages = none.history[:-2]            # the agent's history before "What's my name?"
messages = trim_messages(messages, 10)  # the article's line: the window replaces it
print(len(none.history) - 2, "messages before,", len(messages), "after")
print("is the name still in the agent's memory?", says_name(messages))
print("is it still a valid conversation?", conversation_error(messages) or "yes")

# %% [markdown]
# The policies in `miniagent.context` never touch the history. `view()` returns a new,
# shorter list for one request; the loop appends to the full history and the next call
# gets a fresh view of it.

# %%
history = none.history[:-2]
before = copy.deepcopy(history)
view = SlidingWindow(max_messages=20).view(history)
print(len(history), "messages in the history,", len(view), "in the view")
print("history unchanged:", history == before, "| the name still in it:", says_name(history))
sliding = sessions["sliding window"]
print(f"the sliding-window session kept all {len(sliding.history)} messages; "
      f"its calls sent at most {max(sliding.per_call):,} input tokens")

# %% [markdown]
# ## What the model still knows at the end
#
# The session's last question was "What's my name?", and the name was given in turn 2.
# Here is how each session answered:

# %%
for label, session in sessions.items():
    answer = f"(no answer: the session stopped at turn {session.broke[0]})" if session.broke else session.answer
    print(f"{label:18} {answer}")

# %% [markdown]
# Both windows dropped turn 2 long ago, and the model (or the mock, which only knows
# what the request contains) cannot know the name. The summary kept it, because the
# summarising prompt asks for every fact the user stated. This is the message that
# stands in for the older turns in the summarize session's last call:

# %%
summarize = policies["summarize"]
print(summarize.stats())
head = summarize.summary_message(none.history[0])["content"] if summarize.summary else "(no summary was needed)"
print(head if len(head) <= 900 else head[:900] + f"\n... [{len(head) - 900} more characters]")

# %% [markdown]
# The summary is model-written, so it is as good as the model: here, the mock keeps the
# stated facts, the last questions and clipped tool results. It also costs calls of its
# own, counted in `summaries_made` and `summary_tokens`; `covered` is how many history
# messages it replaces.
#
# ## Tool output: where the tokens go
#
# The article claims that 80% of the token waste is tool output. Measure the share in
# this session: every call resent every earlier tool result, so add up the
# `tool_result` blocks of every request the unmanaged session sent (estimated with
# `miniagent.tokens`, the same rule the mock's `usage` uses).

# %%
def tool_output_tokens(messages):
    return sum(estimate_block(b) for m in messages for b in blocks(m["content"]) if b["type"] == "tool_result")


sent = [none.history[:i + 1] for i, m in enumerate(none.history) if m["role"] == "user"]  # one call each
total = sum(none.per_call)
tool_part, fixed_part = sum(tool_output_tokens(s) for s in sent), reserve * len(sent)
print(f"{len(sent)} requests, {total:,} input tokens:")
print(f"  tool output                      {tool_part / total:6.1%}")
print(f"  system prompt + tool schemas     {fixed_part / total:6.1%}")
print(f"  questions, answers, tool calls   {(total - tool_part - fixed_part) / total:6.1%}")

# %% [markdown]
# The article speaks of "waste", which it does not define; what you can measure is the
# share of input tokens, and in this session it lands close to the article's figure:
# tool output is most of what the agent sends. That is not a law of nature. It follows
# from the tools: a search result or a page is hundreds of tokens, a question ten. An
# agent whose tools return one number each would show a small share. Measure your own
# agent before you trust a percentage.
#
# The article's two remedies act on that part only, once, when a result arrives: cut
# it, or have the model summarise it.

# %%
from miniagent.context import SummarizeToolResults

tool_policies = {
    "truncate tool output": TruncateToolResults(max_chars=1_000),
    "summarize tool output": SummarizeToolResults(llm, max_chars=1_000),
}
sessions |= {label: run_session(policy) for label, policy in tool_policies.items()}
for label in tool_policies:
    session = sessions[label]
    print(f"{label:22} {session.input_tokens:,} input tokens ({session.input_tokens / none.input_tokens:.0%} of none), "
          f"{session.calls} model calls, {session.policy.stats()}")

# %% [markdown]
# What a page fetch looks like in each history. Truncation keeps the head (what the
# page is) and the tail (how it ends) and says how much is missing:

# %%
def first_result(session, tool_name):
    """The text of the first tool_result answering a call to `tool_name`."""
    ids = {b["id"] for m in session.history for b in blocks(m["content"])
           if b["type"] == "tool_use" and b["name"] == tool_name}
    return next((result_text(b) for m in session.history for b in blocks(m["content"])
                 if b["type"] == "tool_result" and b["tool_use_id"] in ids), f"(no {tool_name} call)")


print(first_result(sessions["truncate tool output"], "fetch_page"))

# %% [markdown]
# The summary costs one extra model call per long result, and keeps what the model
# judged important rather than what happened to sit at the ends:

# %%
print(first_result(sessions["summarize tool output"], "fetch_page"))

# %% [markdown]
# ## What each policy costs
#
# One table for all seven sessions. *Model calls* include the summary calls a policy
# makes; *input tokens* count every one of those calls; *largest call* is the biggest
# single request, the number that must stay under the model's context window.

# %%
def recalled(session):
    return "-" if session.broke else ("yes" if "Ada" in session.answer else "no")


rows = []
for label, s in sessions.items():
    rows.append([label, s.calls, s.calls - len(s.per_call), f"{s.input_tokens:,}",
                 f"{s.input_tokens / none.input_tokens:.0%}", f"{max(s.per_call):,}",
                 f"400 at turn {s.broke[0]}" if s.broke else "yes", recalled(s)])
print_table(["policy", "model calls", "summary calls", "input tokens", "vs none", "largest call",
             "completed", "name recalled"], rows)

# %% [markdown]
# Reading it:
# - **none** remembers everything and pays the square: the largest bill and the largest calls.
# - **naive window** is cheap only because it died early. Never ship it.
# - **sliding window** is cheap and flat, and forgets everything outside the window, the name included.
# - **summarize** remembers the facts, for extra model calls; its calls are bigger than a window's.
# - **budget + truncate** bounds the largest call exactly; its cost depends on the budget you pick.
# - **truncate / summarize tool output** alone keep the whole conversation (and the name), but
#   the history still grows every turn: they shrink the slope, not the shape. Combine one with a window.
#
# ## Now from the package
#
# `miniagent/context.py` holds all of these. Its windows cut only at the places
# `safe_cuts` allows (it also handles two assistant messages in a row, which the API
# merges into one turn); `TokenBudget` counts tokens instead of messages; `Summarize`
# caches its summary and only makes a new one when the unsummarised part grows past
# the trigger again; `Compose` chains policies. Do the inline windows agree with the
# package's on every request of the session?

# %%
import miniagent.context

print(f"miniagent/context.py: {len(inspect.getsource(miniagent.context).splitlines())} lines")
same_naive = all(NaiveWindow(max_turns=10).view(s) == trim_messages(s, 10) for s in sent)
same_sliding = all(SlidingWindow(max_messages=20).view(s) == sliding_window(s, 20) for s in sent)
print(f"on all {len(sent)} requests: naive windows agree: {same_naive}, sliding windows agree: {same_sliding}")
invalid = sum(conversation_error(trim_messages(s, 10)) is not None for s in sent)
print(f"views the naive window would have sent that the API rejects: {invalid} of {len(sent)}")

# %% [markdown]
# ## Summary
# - Every call resends the history, so call size grows linearly and the session's cost
#   with the square of its length. In a tool-heavy agent, tool output is most of it: measure yours.
# - Bound it with a view, never by trimming the only copy, and cut only between complete
#   tool_use/tool_result pairs: the naive window's cut is a 400 waiting to happen.
# - Windows are cheap and forget; summaries remember and cost calls; shrinking tool output
#   once, on arrival, pays off on every later call.
#
# ## Exercises
# 1. Write `orphaned_results(messages)`: the ids of `tool_result` blocks whose `tool_use`
#    is not in the message just before. The check tries it on `small` and on the naive view.
# 2. Fix the article's window: write `trim_safe(messages, max_turns)` that keeps the first
#    message and at most `max_turns * 2` messages in all, and never sends an invalid
#    conversation. The check tries it on every request of the session.
# 3. Find a policy that still knows the name at the end and spends at most a quarter of
#    the unmanaged session's input tokens, summary calls included. (Policies compose:
#    `Compose(Summarize(...), TruncateToolResults(...))`.)

# %%
def orphaned_results(messages):
    """Exercise 1: tool_use_ids answered by a tool_result whose tool_use is not in the message before."""
    return []  # your code here


def exercise_1_check(fn):
    cases = [(small, []), (trim_messages(small, 3), ["toolu_2"]), (sliding_window(small, 6), [])]
    try:
        wrong = [(len(m), want, got) for m, want in cases if (got := fn(m)) != want]
    except Exception as exc:
        wrong = [("?", "no error", f"{type(exc).__name__}: {exc}")]
    print("exercise 1:", "done!" if not wrong else f"not yet: on a {wrong[0][0]}-message history the answer is "
          f"{wrong[0][1]}, yours was {wrong[0][2]}; compare each result's tool_use_id with the ids of the "
          "tool_use blocks in the message before it")


exercise_1_check(orphaned_results)

# %%
def trim_safe(messages, max_turns):
    """Exercise 2: the article's trimMessages, without the orphaned tool_result."""
    return trim_messages(messages, max_turns)  # start from the article's version and fix it


def exercise_2_check(fn):
    for max_turns, request in itertools.product((3, 5, 10), sent):
        try:
            view = fn(request, max_turns)
            problem = conversation_error(view) or (
                f"{len(view)} messages, more than {max_turns * 2}" if len(view) > max_turns * 2 else None) or (
                None if view[0] == request[0] and view[-1] == request[-1] else "it must keep the first and last message")
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            print(f"exercise 2: not yet: with max_turns={max_turns} and {len(request)} messages: {problem}")
            return
    print("exercise 2: done!")


exercise_2_check(trim_safe)

# %%
my_policy = None  # exercise 3: your policy here


def exercise_3_check(policy):
    if policy is None:
        print("exercise 3: not yet: set my_policy, e.g. Compose(Summarize(llm, ...), TruncateToolResults(...))")
        return
    try:
        session = run_session(policy)
    except Exception as exc:
        print(f"exercise 3: not yet: the session failed with {type(exc).__name__}: {exc}")
        return
    share = session.input_tokens / none.input_tokens
    if session.broke:
        print(f"exercise 3: not yet: the session stopped at turn {session.broke[0]}: {session.broke[1]}")
    elif "Ada" not in session.answer or share > 0.25:
        print(f"exercise 3: not yet: {share:.0%} of the unmanaged input tokens, and the last answer was "
              f"{session.answer!r}")
    else:
        print(f"exercise 3: done! {share:.0%} of the unmanaged input tokens, and the name recalled")


exercise_3_check(my_policy)

# %% [markdown]
# **Next: [05 · The full agent](05_agent.ipynb)**: the call, the tools, the loop and a
# context policy, assembled into one agent that keeps a conversation, survives failed
# calls and records what it did.
