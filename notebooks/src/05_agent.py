# %% [markdown]
# # 05 · The full agent — the pieces of 01–04, assembled
#
# You have built each part on its own: the call (01), tools (02), the loop (03) and the
# context policies (04). An agent is those parts wired together, plus three duties that
# only show up once a person talks to it for more than one question: keep the
# conversation, survive a failed call without corrupting it, and record what happened.
#
# **You will be able to**
# - assemble a working agent from the package's pieces in about a dozen lines;
# - run the article's demo question and read its trace, round by round and as JSON Lines;
# - hold a conversation with it, in code and in a chat widget.
#
# **You need** notebooks 01–04 (03 and 04 especially). Offline is fine.

# %%
import json
import re
import tempfile
from pathlib import Path

import miniagent

llm = miniagent.connect()
if llm.mode == "live":
    llm.max_tokens = 300  # live, each answer is kept short: a small local model rambles to max_tokens

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"

# %% [markdown]
# The demo question is the one the article asks its Java agent. In English: *"What time
# is it? Also work out (1024 + 768) * 2, and tell me the weather in Beijing and
# Shanghai."* It needs three different tools, one of them twice, and an answer that
# puts four results together.
#
# ## Assembling it yourself
#
# Every piece comes from an earlier notebook: `run_loop` (03) does the rounds,
# `default_tools()` (02) gives the weather, clock and calculator tools, a
# `SlidingWindow` (04) decides what each call sends. What is left for the agent is
# the history between questions:
#
# ```mermaid
# flowchart LR
#     q([question]) --> history
#     subgraph agent["Agent"]
#         history[("history<br/>kept between questions")] --> policy["policy (04)<br/>picks what each call sends"]
#         policy --> loop["run_loop (03)<br/>rounds: call, then tools"]
#         loop -- "new turns, kept unless the run failed" --> history
#         loop -.-> trace["trace<br/>every step, as JSON Lines"]
#     end
#     loop <--> tools["tools (02)"]
#     loop <--> client["Client (01)"] <--> api[("Messages API<br/>or the mock")]
#     loop --> answer([answer])
# ```

# %%
from miniagent.builtin_tools import default_tools
from miniagent.context import SlidingWindow
from miniagent.loop import run_loop


class TinyAgent:
    def __init__(self, client, tools, system=None, policy=None):
        self.client, self.tools, self.system, self.policy = client, tools, system, policy
        self.history = []

    def run(self, question):
        result = run_loop(self.client, self.history + [miniagent.user(question)], tools=self.tools,
                          system=self.system, policy=self.policy, max_iterations=10)
        if result.stop != "api_error":  # a failed call must not leave half a turn behind
            self.history = result.messages
        return result


tiny = TinyAgent(llm, default_tools(), policy=SlidingWindow(max_messages=20))
result = tiny.run(DEMO)
print(result.stop, "after", result.iterations, "model calls")
print(result.text)

# %% [markdown]
# Two model calls: in the first the model asked for four tools at once, the loop ran
# them concurrently and sent back four results; in the second it wrote the answer.
# Notice what `run` does *not* do: it never appends to `self.history` while the loop is
# running. `run_loop` works on a copy and returns the extended list, and the agent keeps
# it only if the run did not die on an API error. The history holds every step:

# %%
from miniagent.messages import blocks

for message in tiny.history:
    print(f"{message['role']:<9}", [block["type"] for block in blocks(message["content"])])

# %% [markdown]
# ## Now from the package
#
# `miniagent.Agent` is the same idea with the remaining duties filled in: a trace of
# every step, cumulative token usage, a callback per step, and `verbose=True`, which
# prints the run the way the article's sample output does.

# %%
import inspect

import miniagent.agent

print(f"miniagent/agent.py: about {round(len(inspect.getsource(miniagent.agent).splitlines()), -2)} lines")
agent = miniagent.Agent(llm, verbose=True)
result = agent.run(DEMO)

# %% [markdown]
# Compare it with the article's output: the same four calls in round 1, the answer in
# round 2. The calculator really computed 3584 (the article's version returns a canned
# string, because evaluating the model's text with a real interpreter would let the
# model run code); the weather is canned data; the time is your clock's.
#
# Does the package agree with the dozen lines above? The tool calls are the same, and
# the answers differ at most in the time (the clock moved between the two runs). A real
# model need not answer the same twice, so live the cell shows what each run called:

# %%
def calls(history):
    return [(b["name"], b["input"]) for m in history for b in miniagent.tool_uses(m)]


def without_times(text):
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<time>", text)


if llm.mode == "offline":
    print("same tool calls:", calls(tiny.history) == calls(agent.history))
    print("same answer:    ", without_times(miniagent.text_of(tiny.history[-1])) == without_times(result.text))
else:
    print("live, a model need not answer the same twice; the dozen lines called", calls(tiny.history) or "no tool",
          "| the package's Agent called", calls(agent.history) or "no tool")

# %% [markdown]
# ## Reading the trace
#
# When an agent does something odd, the first question is always *what did it see and
# what did it do?* `agent.trace` answers it: one event per step, each with a UTC
# timestamp and the seconds since the run began. The loop emits `request`, `response`,
# `tool_call`, `tool_result`, `error` and `stop`; the agent adds the `question` and one
# `usage` event per model call.

# %%
print(agent.trace.table())
if not agent.trace.of_type("tool_call"):
    print("(the model called no tool this time: there is no parallel round in this trace)")

# %% [markdown]
# The `tool_call` and `tool_result` rows are the parallel round: the calls start
# together and the results come back as each tool finishes. (They may finish in any
# order; the table lists them in call order, and `elapsed` says when each arrived.) The summary is what you would put on a dashboard:

# %%
print(json.dumps({k: v for k, v in agent.trace.summary().items() if k != "wall_seconds"}, indent=2))
print(f"wall time: {agent.trace.summary()['wall_seconds']:.3f} s")

# %% [markdown]
# Saved as JSON Lines (one JSON object per line), a trace can go to a log file, `jq`,
# or any log pipeline, and be loaded back:

# %%
folder = Path(tempfile.mkdtemp())
path = agent.trace.to_jsonl(folder / "demo.jsonl")
lines = path.read_text(encoding="utf-8").splitlines()
print(len(lines), "lines; the first three:")
for line in lines[:3]:
    event = json.loads(line)
    print(f"  {event['type']:<9} t={event['t']}  elapsed={event['elapsed']:.3f} s  keys={sorted(event)}")

from miniagent.events import Trace

loaded = Trace.from_jsonl(path)
print("loaded back, same summary:", loaded.summary() == agent.trace.summary())

# %% [markdown]
# A trace must be safe to ship to a log service, so it must never hold a key. It holds
# only what the loop put in its events: message content, tool inputs and outputs, token
# counts. Check the file for the key this notebook uses:

# %%
url, headers = llm.endpoint()  # what this connection sends: the preset's auth header holds the key
key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
print("key found in the trace file:", bool(key) and key in path.read_text(encoding="utf-8"))

# %% [markdown]
# The same agent runs in a terminal: `python -m miniagent --verbose "…"` (or
# `make demo` for the article's question); `--trace run.jsonl` writes this file.

# %%
import subprocess
import sys

cli = subprocess.run([sys.executable, "-m", "miniagent", "What is (1024 + 768) * 2?"],
                     capture_output=True, text=True, encoding="utf-8")
print(cli.stdout + f"exit status: {cli.returncode}")

# %% [markdown]
# ## A conversation
#
# Across questions the agent keeps its history, so a fact stated in one question is
# there for the next. The model itself still remembers nothing: it is sent the whole
# history every time (notebook 01).

# %%
chat_agent = miniagent.Agent(llm)
for question in ["Hi, my name is Ada.", "What is the weather in London?", "What is my name?"]:
    print("you:  ", question)
    print("agent:", chat_agent.chat(question))
print(len(chat_agent.history), "messages in the history")

# %% [markdown]
# `reset()` empties the history (and the trace), and the name is gone: nothing in what
# is sent says it any more.

# %%
chat_agent.reset()
print(chat_agent.chat("What is my name?"))

# %% [markdown]
# ## Break it on purpose: a failed call in the middle of a conversation
#
# The article's agent appends the question to its one `messages` list and then calls
# the model. If that call fails, the question stays behind; retry, and the model gets
# it twice. Here is that pattern against a mock that fails once with a 500 (its own
# mock, so this works the same live; `max_retries=0` so the client does not retry it
# away):

# %%
flaky = miniagent.connect(offline=True, quiet=True, max_retries=0)
messages = []


def naive_ask(question):
    messages.append(miniagent.user(question))  # appended before we know the call worked
    response = flaky.create(messages)
    messages.append(miniagent.assistant(response["content"]))
    return miniagent.text_of(response)


flaky.mock.fault(500)
try:
    naive_ask("Hello!")
except miniagent.APIError as err:
    print("failed:", str(err).splitlines()[0])
naive_ask("Hello!")
print([m["role"] for m in messages], "<- the question is in there twice")

# %% [markdown]
# With a tool round in between it is worse: a failure after the tools ran leaves a
# `tool_use` and its result in the list for an answer that never came. `Agent.run`
# keeps the history untouched until the run ends, and drops the whole run on an API
# error, so the retry is clean:

# %%
careful = miniagent.Agent(flaky)
flaky.mock.fault(500)
failed = careful.run("Hello!")
print(failed.stop, "->", len(careful.history), "messages kept")
print(careful.run("Hello!").stop, "->", [m["role"] for m in careful.history])

# %% [markdown]
# ## A chat widget
#
# `miniagent.widgets.ChatView` puts an agent behind a text box. Each tool call appears
# as a line you can expand to see its arguments and result; the token count under the
# box is the agent's running total. (The widget module imports ipywidgets, so it is
# loaded only when you ask for it: `import miniagent` stays light.)
#
# Type the demo question into the box and press Enter or click **Send**.

# %%
from miniagent.widgets import ChatView, TraceView

chat = ChatView(miniagent.Agent(llm))
chat.send("Hi! What can you do?")
chat

# %% [markdown]
# A widget lives only while its kernel runs: in a notebook opened without running it,
# run the cell again to get one. Where no widget can be drawn (GitHub, a terminal,
# the tests that check this notebook), its text form stands in: the transcript.
# A `TraceView` does the same for a trace: a table here, plain text elsewhere.

# %%
TraceView(chat.agent.trace)

# %% [markdown]
# ## Everything you wrote in 01–05, in one file
#
# The article's promise is an agent you can read whole in about 300 lines. The package
# keeps every edge hardened, and so grew far past that; `miniagent/tiny.py` keeps the
# promise: the call, tools with a schema and a registry, the loop with every
# `stop_reason`, parallel tools and both budgets, a pair-safe window and the agent, on
# httpx2 and the standard library alone. Open it beside this notebook and read it in
# one sitting:

# %%
import miniagent.tiny

source = inspect.getsource(miniagent.tiny)
print(f"miniagent/tiny.py: {'under' if len(source.splitlines()) <= 300 else 'OVER'} 300 lines; its parts:")
for line in source.splitlines():
    if line.startswith("# --- "):
        print("  ", line.strip("# -"))

# %% [markdown]
# It runs the demo question with the same tools, built by its own `tool()` from the same
# functions. Like `connect()`, `tiny.connect()` takes the mock unless ANTHROPIC_API_KEY is
# set (it speaks the Messages API only: no other providers). On the mock it makes the
# same tool calls in the same rounds as `miniagent.Agent` and gives the same answer
# (`tests/test_tiny.py` holds it to that):

# %%
from miniagent import builtin_tools

one_file = miniagent.tiny.Agent(
    miniagent.tiny.connect(),
    [miniagent.tiny.tool(t.fn) for t in (builtin_tools.get_weather, builtin_tools.get_current_time,
                                         builtin_tools.calculate)],
    system=miniagent.agent.DEFAULT_SYSTEM)
small = one_file.run(DEMO)
print("talking to", one_file.llm.http.base_url)
print(small.stop, "after", small.iterations, "model calls; the tools of each round:")
for i, calls in enumerate(small.rounds, 1):
    print(f"  {i}:", [name for name, _ in calls])
print(small.text)

# %% [markdown]
# What it leaves out is what the rest of the series adds, and the package's own modules
# hold: streaming, async, other providers, the trace, approval, summaries, and the
# hundreds of hardening rules a real deployment needs.
#
# %% [markdown]
# ## What mature frameworks add
#
# Section 7 of the article lists what Spring AI and LangChain4j do that its 300 lines
# do not. The same list for miniagent, and where this series takes each one up:
#
# | capability | miniagent after notebook 05 | mature frameworks | in this series |
# |---|---|---|---|
# | tool calling | `@tool` from type hints, validated arguments, errors as results | annotation-driven tools | 02 |
# | ReAct loop | every `stop_reason`, parallel tools, three budgets | the same | 03 |
# | context management | pair-safe window, token budget, summaries, truncation | several memory strategies | 04 |
# | streaming (SSE) | not yet | full reactive streaming | 06 streaming |
# | async and concurrency | tools in threads; calls are blocking | reactive stacks end to end | 07 async and serving |
# | other models | Anthropic only | dozens of providers behind one interface | 08 providers |
# | long-term memory, retrieval (RAG) | the conversation only | Redis, PgVector, Milvus; loaders, splitters | 09 memory and retrieval |
# | several agents | one | multi-agent orchestration | 10 several agents |
# | observability | a trace in JSON Lines | Micrometer, OpenTelemetry | 11 tracing |
# | tools from elsewhere | Python functions | MCP clients | 12 MCP |
# | production readiness | limits and clean failures | framework integration, config, starters | 13 the production checklist |
#
# Notebooks 06 to 13 build each of these, in that order.
#
# As the article puts it, frameworks solve engineering problems, not conceptual ones.
# Knowing the mechanism is what lets you judge when a framework is worth it, and where
# to look when its abstraction hides the bug.
#
# ## Summary
# - An agent is a client, tools, the loop and a context policy, plus a history it keeps
#   between questions and restores when a call fails.
# - A trace of every step (here as JSON Lines) is how you find out what it saw and did.
# - `miniagent.Agent` (and `python -m miniagent`, and `ChatView`) are this, packaged;
#   `miniagent/tiny.py` is all of it in one file of under 300 lines, to read in one sitting.
#
# ## Exercises
#
# Each exercise has a cell for your answer, a check cell that says where you stand, and
# then the reference solution: try first.
#
# **Exercise 1.** Give the agent a new tool: write `get_population(city: str)` with `@tool`
# and a docstring, returning the population of a few cities of your choice, Tokyo among
# them, and keep it in `population_tool`. The check adds it to `default_tools()`, asks an agent on `llm` *"What is the
# population of Tokyo?"*, and looks at what the agent called and what your tool returned.

# %% tags=["exercise"]
from miniagent import tool

population_tool = None  # exercise 1: your tool, a function decorated with @tool

# %% tags=["check"]
miniagent.exercises.check_05_1(population_tool, llm)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
from miniagent import tool


@tool(name="get_population")
def reference_population(city: str) -> str:
    """Get the population of a city: how many people live there.

    Args:
        city: the city's English name, e.g. Tokyo
    """
    known = {"Tokyo": 37_400_068, "Beijing": 21_893_095, "Paris": 11_208_440}
    return f"{known[city]:,} people" if city in known else f"no population data for {city}"


miniagent.exercises.check_05_1(reference_population, llm)

# %% [markdown]
# **Exercise 2.** Write `calls_per_round(trace)` returning `{round: number of tool calls}`:
# for the demo run above it is `{1: 4}`. The check tries it on that run and on traces
# you have not seen.

# %% tags=["exercise"]
def calls_per_round(trace):
    """Exercise 2: {round: number of tool calls} for the run a trace records."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_05_2(calls_per_round)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_calls_per_round(trace):
    rounds = {}
    for event in trace.of_type("tool_call"):
        rounds[event["iteration"]] = rounds.get(event["iteration"], 0) + 1
    return rounds


miniagent.exercises.check_05_2(reference_calls_per_round)

# %% [markdown]
# **Exercise 3.** Write `slowest_tool(trace)` returning the name of the tool whose
# `tool_result` took the most `seconds`. (The last result to arrive is not always the
# slowest: the check tries traces where it is not.)

# %% tags=["exercise"]
def slowest_tool(trace):
    """Exercise 3: the name of the tool whose tool_result took the most seconds."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_05_3(slowest_tool)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_slowest_tool(trace):
    return max(trace.of_type("tool_result"), key=lambda event: event["seconds"])["name"]


miniagent.exercises.check_05_3(reference_slowest_tool)

# %% [markdown]
# **Next: [06 · Streaming](06_streaming.ipynb)** — the answer arrives as it is written,
# and tool calls as they form, while the loop and this agent still see one message.
