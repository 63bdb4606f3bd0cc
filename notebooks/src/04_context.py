# %% [markdown]
# # 04 · Context — a cost that grows every turn, bounded without breaking anything
#
# The model remembers nothing between calls (notebook 01), so an agent resends its whole
# history on every call, and a session's bill grows with the *square* of its length.
#
# **You will be able to**
# - explain, with numbers, why resending the history costs the square of the session's length;
# - bound what each call sends (a pair-safe window, a token budget, a summary, shorter tool output) without a single 400;
# - say what each policy costs and what it forgets.
#
# **You need** notebooks 01–03. Offline is fine.

# %%
import inspect
import itertools
import json

import miniagent
from miniagent import workload
from miniagent.context import Compose, NaiveWindow, SlidingWindow, Summarize, TruncateToolResults
from miniagent.messages import blocks, conversation_error

llm = miniagent.connect()

# %% [markdown]
# ## A long, tool-heavy session
#
# Most of an agent's tokens come back from tools: a search returns ten hits, a page a
# whole article. `miniagent.workload` holds such a session (`make bench` measures it
# too): two fake tools return a few thousand characters each, beside notebook 02's
# short weather and calculator tools.

# %%
print(workload.TOOLS)
print("search_web returns", len(workload.search_web.fn(query="context windows")), "characters,",
      "fetch_page", len(workload.fetch_page.fn(url="https://example.com/context-windows/1")))

# %% [markdown]
# The user sets a task, gives their name in turn 2 (not turn 1, which every window below
# keeps), asks for searches, pages, weather and sums, states a preference halfway through
# (metric units), and at the end asks for their name and what they prefer.
#
# **Live, every token is paid for, and a local model is slow.** This notebook runs the
# session eight times: at 60 turns, as offline, about 870 model calls and 4.8 million
# input tokens. So live, the next cell sets `TURNS = 4` and caps each answer at 100 tokens.

# %%
TURNS = workload.TURNS if llm.mode == "offline" else 4  # offline: 60, the session make bench runs
if llm.mode == "live":
    llm.max_tokens = 100  # a small model rambles to max_tokens: keep each call short
questions = workload.questions(TURNS)
print(f"TURNS = {TURNS}")
for n, question in [*enumerate(questions[:6], 1), ("...", ""), (len(questions), questions[-1])]:
    print(f"  {n:>3} {question}")

# %% [markdown]
# The driver does what an agent does: keep one history, append each question, let
# `run_loop` (notebook 03) answer it, and record each call's `usage`:

# %%
print(inspect.getsource(workload.run_session))

# %% [markdown]
# ## Every call resends everything
#
# First with no policy: each call sends the whole history.

# %%
def run_session(policy=None):
    """The session under `policy`, TURNS questions long, on this notebook's client."""
    return workload.run_session(llm, policy, TURNS)


none = run_session()
calls = len(none.per_call)
print(f"{TURNS} turns, {calls} model calls, {none.input_tokens:,} input tokens in all")
for n in sorted({1, 2, calls // 4, calls // 2, 3 * calls // 4, calls} - {0}):
    print(f"  call {n:3} (turn {none.turn_of_call[n - 1]:2}): {none.per_call[n - 1]:7,} input tokens")

# %% [markdown]
# Each call carries every earlier turn, so its size grows in a straight line. You pay
# the sum of those sizes, a triangle, whose area grows with the square of its side:
# double the session and the bill roughly quadruples.

# %%
half, whole = none.input_up_to(TURNS // 2), none.input_up_to(TURNS)
print(f"turns 1-{TURNS // 2}: {half:,} input tokens")
print(f"turns 1-{TURNS}: {whole:,} input tokens, {whole / half:.1f} times as many for twice the turns")

# %% [markdown]
# A long history is also slower, buries the question under stale output, and past the
# context window fails.
#
# ## A policy chooses what each call sends
#
# Before each call, `run_loop(..., policy=...)` asks a *context policy* for a **view**
# of the history and sends only that; the history stays whole. The policy also sees
# each round's tool results once, on arrival, and may shorten them.
#
# ```mermaid
# flowchart LR
#     subgraph history ["history: all of it, kept (grey: not in this view)"]
#         direction TB
#         h1["turn 1: the task"] --- h2["turn 2: my name is Ada"] --- h3["turns 3–50"]
#         h3 --- h4["turns 51–59"] --- h5["turn 60: what's my name?"]
#     end
#     subgraph view ["view: what one call sends"]
#         direction TB
#         v1["turn 1: the task"] --- v4["turns 51–59"] --- v5["turn 60: what's my name?"]
#     end
#     history -- "policy.view(history)" --> view
#     view -- "client.create(view)" --> model(["model"])
#     model -- "its reply" --> appended["appended to the history"]
#     model -- "tool_use" --> tools["tools"]
#     tools -- "policy.on_tool_results():<br/>shortened on arrival" --> appended
#     classDef dropped fill:#eee,stroke:#999,stroke-dasharray:4 2,color:#777
#     class h2,h3 dropped
# ```
#
# Seven policies from `miniagent.context`, as this notebook and `make bench` set them up:
# - **naive window**: the article's `trimMessages(messages, 10)`, the first message plus the last 19;
# - **sliding window**: as many, cut only where no `tool_use` loses its `tool_result`;
# - **token budget**: as many recent messages as fit, system prompt and tools included;
# - **summarize**: the model folds older turns into one summary;
# - **truncate / summarize tool output**: each long result shortened once, on arrival;
# - **window + truncation**: both ideas at once.

# %%
print(inspect.getsource(workload.policies))
print(f"WINDOW = {workload.WINDOW}, BUDGET = {workload.BUDGET:,}, RESERVE = {workload.RESERVE}, "
      f"TRUNCATE_TO = {workload.TRUNCATE_TO:,}, SUMMARY_TRIGGER = {workload.SUMMARY_TRIGGER:,}, "
      f"SUMMARY_KEEP = {workload.SUMMARY_KEEP:,}")

# %%
sessions = {"none": none} | {label: run_session(policy) for label, policy in workload.policies(llm).items()}
for label, s in sessions.items():
    print(f"{label:22} largest call: {s.largest_call:6,} input tokens, completed: {s.ending}")
naive = sessions["naive window"]
if naive.broke:
    print(f"\nthe naive window at turn {naive.broke[0]}:\n  {naive.broke[1]}")

# %% [markdown]
# The naive window broke at its first cut (see below); the others completed. Each
# call's size, and the running total you pay for (dotted: a parabola to compare with):

# %%
import matplotlib.pyplot as plt
%matplotlib inline
# (inline: figures are drawn into the notebook even where MPLBACKEND is set to Agg)

fig, (per_call_ax, total_ax) = plt.subplots(1, 2, figsize=(12, 4.2), layout="constrained")
for label, s in sessions.items():
    style, x = "--" if "tool output" in label else "-", range(1, len(s.per_call) + 1)
    per_call_ax.plot(x, s.per_call, style, label=label)
    total_ax.plot(x, list(itertools.accumulate(s.per_call)), style)
    if s.broke:  # the call after the last one that ran is the one the API rejected
        per_call_ax.plot(len(x) + 1, s.per_call[-1], "rx", markersize=12, mew=3, label="400 (rejected)")
total_ax.plot(range(1, calls + 1), [none.input_tokens * (n / calls) ** 2 for n in range(1, calls + 1)], "k:",
              label="parabola: total × (call / last call)²")
per_call_ax.set(title="Input tokens of each call", xlabel="model call", ylabel="input tokens")
total_ax.set(title="Input tokens so far (what you pay for)", xlabel="model call")
total_ax.yaxis.set_major_formatter("{x:,.0f}")
per_call_ax.legend(fontsize=8)
total_ax.legend()
plt.show()

# %% [markdown]
# The numbers behind the figure (the loop's calls; the table below adds summary calls):

# %%
print(workload.checkpoints(sessions, every=20))

# %% [markdown]
# The unmanaged total follows the parabola. A window keeps every call under a ceiling,
# so its total grows in a straight line; shortening tool output only makes each call
# grow more slowly (dashed).
#
# ## The naive window's 400, up close
#
# The article's window counts messages without looking inside them. Here it is, with a
# small history: three questions, each answered with a tool.

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
    for i, m in enumerate(messages):
        parts = [json.dumps(b["text"][:40], ensure_ascii=False) if b["type"] == "text"
                 else f"tool_use {b['id']} ({b['name']})" if b["type"] == "tool_use"
                 else f"tool_result for {b['tool_use_id']}" for b in blocks(m["content"])]
        print(f"  [{i:2}] {m['role']:9} {', '.join(parts)}")


outline(small)

# %% [markdown]
# With `max_turns=3` the window keeps the first message and the last five. Send that:

# %%
view = trim_messages(small, 3)
outline(view)
try:
    response = llm.create(view, tools=workload.TOOLS.schemas())
    print(f"this server answered it ({response['stop_reason']}): the Messages API itself answers 400")
except miniagent.BadRequestError as err:
    print(err)

# %% [markdown]
# The cut fell between `tool_use toolu_2` and its `tool_result`. The API merges the
# first message and the orphaned result into one user turn (`messages.0`) and rejects
# it: every `tool_result` must answer a `tool_use` in the message just before. Retrying
# cannot help. In the session, turn 1 called a tool, so the very first cut did this.
#
# The fix is one loop: if the cut lands on tool results, move it past them, dropping
# the pair together. The view may be a message short; it is always valid.

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
response = llm.create(view, tools=workload.TOOLS.schemas())
print(response["stop_reason"], "-", miniagent.text_of(response)[:300])

# %% [markdown]
# ## The other bug: trimming the only copy
#
# The article writes `messages = trimMessages(messages, 10)`: the trimmed list
# *replaces* the history, so what it drops is gone for good. A policy's `view()` is a
# new list for one request. Both, on the history before the last question:

# %%
def says_name(messages):  # is turn 2, where the user gave their name, among these messages?
    return any(m["content"] == questions[1] for m in messages)


history = none.history[:-2]
view = SlidingWindow(max_messages=20).view(history)
print(f"a policy's view: sends {len(view)} of {len(history)} messages; "
      f"name in the view: {says_name(view)}, in the history: {says_name(history)}")
history = trim_messages(history, 10)  # the article's line: the window replaces the history
print(f"trimMessages:    {len(history)} messages left; name in the history: {says_name(history)}")

# %% [markdown]
# ## What the model still knows at the end
#
# The last question was "What's my name, and what do I prefer?"; the name came in turn 2,
# the preference in turn 31:

# %%
for label, s in sessions.items():
    answer = " ".join(s.answer.split())[:240]  # on one line, clipped: a small model rambles
    print(f"{label:22} {answer if not s.broke else f'(no answer: stopped at turn {s.broke[0]})'}")

# %% [markdown]
# The windows dropped turn 2 long ago (and turn 31 too), and the model knows only what the
# request holds. The summary kept both: its prompt asks for every fact the user stated.
# Keeping such facts apart, in a small block every request carries, is notebook 09's
# structured memory (`make bench` measures it beside these policies).
# This message stands in for the older turns in the summarize session's last call:

# %%
summarize = sessions["summarize"].policy
print(summarize.stats())
head = summarize.summary_message(none.history[0])["content"] if summarize.summary else "(no summary was needed)"
print(head if len(head) <= 900 else head[:900] + f"\n... [{len(head) - 900} more characters]")

# %% [markdown]
# A summary is as good as the model that writes it, and each one costs a call
# (`summaries_made`, `summary_tokens`); `covered` counts the messages it replaces.
#
# ## Tool output: where the tokens go
#
# The article claims that 80% of the token waste is tool output. Add up the
# `tool_result` blocks of every request the unmanaged session sent:

# %%
sent = workload.requests_of(none.history)  # each call's messages: the history up to each user message
total = sum(none.per_call)
tool_part = sum(workload.tool_output_tokens(s) for s in sent)
fixed_part = workload.RESERVE * len(sent)
print(f"{len(sent)} requests, {total:,} input tokens:")
if not tool_part:
    print("  (the model called no tool in this session: no tool output to count)")
print(f"  tool output                      {tool_part / total:6.1%}")
print(f"  system prompt + tool schemas     {fixed_part / total:6.1%}")
print(f"  questions, answers, tool calls   {(total - tool_part - fixed_part) / total:6.1%}")

# %% [markdown]
# Close to the article's figure, but it follows from these tools: a page is a thousand
# tokens, a question ten. Measure your own agent before you trust a percentage.
#
# The article's two remedies act once, on arrival: cut the result (head and tail, with
# a note of what is missing), or have the model summarise it (a call each). The first
# page fetch, in each of those sessions:

# %%
for label in ("truncate tool output", "summarize tool output"):
    s = sessions[label]
    print(f"--- {label}: {s.input_tokens / none.input_tokens:.0%} of the unmanaged input tokens, {s.policy.stats()}")
    print(workload.first_result(s.history, "fetch_page"), end="\n\n")

# %% [markdown]
# ## What each policy costs
#
# The table `make bench` prints. *calls* and *input tokens* include summary calls;
# *largest call* must fit the context window; *doubling* is the whole session's cost
# over its first half's: 4x for a square, 2x for a line.

# %%
print(workload.format_table(workload.compare(sessions)))
print(f"\nthis notebook so far: {llm.usage.calls:,} model calls, {llm.usage.input_tokens:,} input tokens")

# %% [markdown]
# - **none** remembers everything and pays the square.
# - **naive window** is cheap only because it died early. Never ship it.
# - **sliding window** and **token budget** are cheap and flat, and forget the name;
#   the budget bounds the largest call exactly.
# - **summarize** remembers, for a few extra calls and bigger requests.
# - **truncate / summarize tool output** remember too, but still grow every turn.
# - **window + truncation** is the cheapest that completes.

# %% [markdown]
# ## When the server keeps the history: message threads
#
# Every policy above decides, on the client, what each call resends. Anthropic's message
# threads (a beta, `message-threads-2026-08-12`) move the history to the server instead: the
# first request says `"thread": {"type": "create"}` and carries the conversation so far, and
# each later one carries only the new turn and the id of the answer it follows. The official
# SDK's tool runner works this way by default. Three turns, on a mock of its own (offline in
# either mode; it holds threads as the API does: `miniagent/mock/threads.py`). Watch the bytes
# each request sends, with a thread and without, and the input tokens, which the mock counts
# over the whole conversation the model reads.
#
# The request stops growing; what the model reads does not (whether the real API bills the
# held turns differently, say as cached, the SDK does not say). And a context policy has
# nothing left to cut: a continue sends no history, so the server, not `policy.view()`,
# decides what the model sees: all of it, until the context window is full. To send a view,
# you start a new thread (`create`) with it; the SDK does the same when the server has lost a
# thread (a 404 `thread_not_found`): it resends the whole history.

# %%
import httpx2
from miniagent.mock import MockAPI

threads_mock = MockAPI()
api = httpx2.Client(base_url="https://api.anthropic.com", transport=threads_mock.transport(), headers={
    "x-api-key": "sk-any", "anthropic-version": "2023-06-01", "anthropic-beta": "message-threads-2026-08-12"})
talk, thread = [], {"type": "create"}
for question in ["My name is Ada.", "I prefer metric units.", "What's my name, and what do I prefer?"]:
    talk.append(miniagent.user(question))
    full = {"model": miniagent.DEFAULT_MODEL, "max_tokens": 100, "messages": talk}
    request = {**full, "messages": talk if thread["type"] == "create" else talk[-1:], "thread": thread}
    reply = api.post("/v1/messages", json=request).json()
    talk.append(miniagent.assistant(reply["content"]))
    print(f"{len(json.dumps(request)):4} bytes sent with the thread ({len(json.dumps(full)):4} without), "
          f"{reply['usage']['input_tokens']:3} input tokens: {miniagent.text_of(reply)[:60]}")
    thread = {"type": "continue", "previous_message_id": reply["id"]}
print(json.dumps(request, ensure_ascii=False))
print(f"the server holds {len(threads_mock.threads.conversation(reply['id'], 'sk-any'))} messages under "
      f"{reply['id']}; the last request carried {len(request['messages'])}")

# %% [markdown]
# ## Now from the package
#
# `miniagent/context.py` holds all of these; its windows cut only where `safe_cuts`
# allows. Do the inline windows agree with the package's?

# %%
import miniagent.context

print(f"miniagent/context.py: about {round(len(inspect.getsource(miniagent.context).splitlines()), -2)} lines, "
      f"miniagent/workload.py (this session): about {round(len(inspect.getsource(workload).splitlines()), -2)}")
same_naive = all(NaiveWindow(max_turns=10).view(s) == trim_messages(s, 10) for s in sent)
same_sliding = all(SlidingWindow(max_messages=20).view(s) == sliding_window(s, 20) for s in sent)
print(f"on all {len(sent)} requests: naive windows agree: {same_naive}, sliding windows agree: {same_sliding}")
invalid = sum(conversation_error(trim_messages(s, 10)) is not None for s in sent)
print(f"views the naive window would have sent that the API rejects: {invalid} of {len(sent)}")

# %% [markdown]
# ## Summary
# - Every call resends the history: call size grows linearly, a session's cost with the
#   square of its length. In a tool-heavy agent, tool output is most of it: measure yours.
# - Bound it with a view, never by trimming the only copy, and never cut a `tool_use`
#   from its `tool_result`: that is a 400.
# - Windows are cheap and forget; summaries remember and cost calls; shrinking tool
#   output on arrival pays off on every later call.
#
# ## Exercises
#
# Each exercise has a cell for your answer, a check cell that says where you stand, and
# then the reference solution: try first.
#
# **Exercise 1.** Write `orphaned_results(messages)`: the `tool_use_id`s of the
# `tool_result` blocks whose `tool_use` is not in the message just before. A message's
# content may be a string or a list of blocks (`blocks(content)` reads both). The check
# tries it on histories you have not seen, a naive window's view among them.

# %% tags=["exercise"]
def orphaned_results(messages):
    """Exercise 1: tool_use_ids answered by a tool_result whose tool_use is not in the message before."""
    return []  # your code here


# %% tags=["check"]
miniagent.exercises.check_04_1(orphaned_results)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
from miniagent.messages import blocks


def reference_orphaned_results(messages):
    orphans = []
    for i, message in enumerate(messages):
        before = blocks(messages[i - 1]["content"]) if i > 0 else []
        asked = {b["id"] for b in before if b["type"] == "tool_use"}
        orphans += [b["tool_use_id"] for b in blocks(message["content"])
                    if b["type"] == "tool_result" and b["tool_use_id"] not in asked]
    return orphans


miniagent.exercises.check_04_1(reference_orphaned_results)

# %% [markdown]
# **Exercise 2.** Fix the article's window: write `trim_safe(messages, max_turns)`, which
# keeps the first message and as many of the latest ones as fit in `max_turns * 2`
# messages in all, never separates a `tool_use` from its `tool_result`, and returns a new
# list (the one it is given is the agent's only copy of the history). The check tries it
# on every request of a long session you have not seen.

# %% tags=["exercise"]
def trim_safe(messages, max_turns):
    """Exercise 2: the article's trimMessages, without the orphaned tool_result."""
    if len(messages) <= max_turns * 2:
        return list(messages)
    return [messages[0]] + messages[len(messages) - (max_turns * 2 - 1):]  # the article's cut: fix it


# %% tags=["check"]
miniagent.exercises.check_04_2(trim_safe)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
from miniagent.messages import blocks


def reference_trim_safe(messages, max_turns):
    if len(messages) <= max_turns * 2:
        return list(messages)
    cut = len(messages) - (max_turns * 2 - 1)
    while any(b["type"] == "tool_result" for b in blocks(messages[cut]["content"])):
        cut += 1  # its tool_use is on the dropped side: drop the results with it
    return [messages[0]] + messages[cut:]


miniagent.exercises.check_04_2(reference_trim_safe)

# %% [markdown]
# **Exercise 3.** Find a policy that still knows the name at the end of the session and
# spends fewer input tokens (summary calls included) than every policy above that knew it
# too. It is graded on the 60-turn session: offline on this run's sessions; live on a
# mock of its own, `practice` (a few turns rank no policy, and a small model forgets the
# name anyway). Policies compose: `Compose(TruncateToolResults(...), Summarize(practice, ...))`,
# and their settings matter.

# %%
practice, practice_sessions, practice_run = llm, sessions, run_session
if llm.mode == "live":  # the mock's 60 turns, every policy above on it: about ten seconds, no tokens spent
    practice = miniagent.connect(offline=True, quiet=True)

    def practice_run(policy):
        return workload.run_session(practice, policy)

    practice_sessions = {"none": practice_run(None)} | {label: practice_run(policy) for label, policy
                                                        in workload.policies(practice).items()}

# %% tags=["exercise"]
my_policy = None  # exercise 3: your policy, e.g. Compose(TruncateToolResults(...), Summarize(practice, ...))

# %% tags=["check"]
miniagent.exercises.check_04_3(my_policy, practice_run, practice_sessions, workload.NAME)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
from miniagent.context import Compose, Summarize, TruncateToolResults

# Short tool output makes each summary cheaper, so summarising earlier and keeping less pays.
reference_policy = Compose(TruncateToolResults(max_chars=300),
                           Summarize(practice, trigger_tokens=4_000, keep_recent_tokens=1_500))
miniagent.exercises.check_04_3(reference_policy, practice_run, practice_sessions, workload.NAME)

# %% [markdown]
# **Next: [05 · The full agent](05_agent.ipynb)**: the call, the tools, the loop and a
# context policy, assembled into one agent that keeps a conversation, survives failed
# calls and records what it did.
