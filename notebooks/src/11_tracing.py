# %% [markdown]
# # 11 · Tracing — seeing inside a run
#
# The article's last production lesson is short: put a trace on every step before you go
# live, or every failure in production is a black box. A user says "it was slow" or "it
# cost a fortune"; without a record of what ran inside what, for how long and with how
# many tokens, you can only guess. This notebook builds that record (spans), reads it,
# and sends it to the tools that operations teams already use (OpenTelemetry).
#
# **You will be able to**
# - record a run as spans and read its tree: what ran inside what, how long, how many tokens;
# - find the slow step and the wasted tokens of a run, and price them;
# - send the spans to any OpenTelemetry backend (Jaeger, Zipkin, Langfuse, ...).
#
# **You need** notebooks 03 and 05 (the loop and its event trace); 10 for the agents
# that call agents. Offline is fine: the OpenTelemetry SDK is part of the course install.

# %%
import contextvars
import inspect
import itertools
import json
import os
import tempfile
import textwrap
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import matplotlib.pyplot as plt
%matplotlib inline

import miniagent
from miniagent import Agent, team, tool
from miniagent.builtin_tools import default_tools
from miniagent.tracing import Tracer

llm = miniagent.connect()
if llm.mode == "live":
    llm.max_tokens = 300  # a small local model rambles to max_tokens: keep each live answer short
TOOLS = {t.name: t for t in default_tools()}
QUESTION = "What is the weather in Paris and Tokyo, and what is 1299 * 0.85?"

# %% [markdown]
# ## Events say what happened; spans say inside what, and for how long
#
# Notebook 05 gave every agent an event trace, `agent.trace`: one line per moment, in
# order. Here it is for a question that needs two tool calls in one round:

# %%
agent = Agent(llm, default_tools())
agent.run("What is the weather in Paris and Tokyo?")
print(agent.trace.table())

# %% [markdown]
# Good for reading one run. But to learn how long the Paris call took you must pair its
# `tool_call` with its `tool_result`; to learn it ran inside round 1 you read the
# iteration; and when a tool is itself an agent (notebook 10), that agent's steps are not
# here at all. A **span** records one step as one object: a name, its *parent* (the span
# it ran inside), a start, an end, a status (`ok` or `error`) and attributes (tokens,
# sizes). A run becomes a tree of spans.
#
# ## A span recorder in twenty lines
#
# Each span must know its parent without anyone passing it along. The recorder keeps "the
# span the running code is inside" in a *context variable*: entering a span makes it the
# current one, leaving restores the previous one, so spans nest like the `with` blocks.

# %%
current = contextvars.ContextVar("current_span", default=None)  # the id of the span code runs inside
spans, ids = [], itertools.count(1)


@contextmanager
def span(name, **attributes):
    """Record the block as a span: a child of the current span, and itself current inside the block."""
    record = {"span_id": next(ids), "parent_id": current.get(), "name": name, "start": time.perf_counter(),
              "end": None, "status": "unset", "attributes": attributes}
    spans.append(record)
    token = current.set(record["span_id"])
    try:
        yield record
        record["status"] = "ok"
    except Exception as error:
        record["status"], record["attributes"]["error"] = "error", repr(error)
        raise
    finally:
        record["end"] = time.perf_counter()
        current.reset(token)

# %% [markdown]
# To read them, print each span under its parent, indented, with its duration last:

# %%
def show(records, parent=None, depth=0):
    """Each span under its parent: name, status, tokens or output size (if recorded), duration."""
    for r in records:
        if r["parent_id"] != parent:
            continue
        a, ms, what = r["attributes"], (r["end"] - r["start"]) * 1000, ""
        if "gen_ai.usage.input_tokens" in a:
            what = f"{a['gen_ai.usage.input_tokens']:>6,} in {a['gen_ai.usage.output_tokens']:>4,} out"
        elif "miniagent.tool.output_chars" in a:
            what = f"{a['miniagent.tool.output_chars']:>6,} chars out"
        print(f"{'  ' * depth + r['name']:<40} {r['status']:<6} {what:<19} {ms:.1f} ms")
        show(records, r["span_id"], depth + 1)

# %% [markdown]
# Try it on a pretend agent: one model call, then two tool calls, one after the other.

# %%
def get_weather(city):
    with span("execute_tool get_weather", city=city):
        time.sleep(0.02)  # a slow weather service
        return f"{city}: 18°C"


with span("invoke_agent assistant"):
    with span("chat"):
        time.sleep(0.01)  # the model thinking
    for city in ("Paris", "Tokyo"):
        get_weather(city)
show(spans)

# %% [markdown]
# ## Break it: a thread starts with an empty context
#
# The loop runs a round's tool calls in parallel, one thread each (notebook 03). Do that
# here, naively:

# %%
spans.clear()
with span("invoke_agent assistant"):
    threads = [threading.Thread(target=get_weather, args=(city,)) for city in ("Paris", "Tokyo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
show(spans)
print("the tool spans' parents:", [r["parent_id"] for r in spans if r["name"].startswith("execute_tool")])

# %% [markdown]
# The tool spans lost their parent: a new thread starts with a fresh context, in which
# `current` is `None`, so each call looks like a run of its own. In a real trace those
# would be orphans that no tool can place. The fix is to run each thread *inside a copy*
# of the caller's context (one copy per thread: two threads cannot enter the same one):

# %%
spans.clear()
with span("invoke_agent assistant"):
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(get_weather, city))
               for city in ("Paris", "Tokyo")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
show(spans)

# %% [markdown]
# Why not one global "current span"? Two tools running at once would overwrite it, and
# each would record the other's children. A context variable has one value per context:
# asyncio gives every task its own copy automatically, and a thread gets one when you
# copy it in, as above. The package's tool registry does exactly that for every call:

# %%
source = inspect.getsource(miniagent.ToolRegistry.run_all)
print("\n".join(line.strip() for line in source.splitlines() if "context" in line))

# %% [markdown]
# ## Now from the package
#
# `miniagent.tracing` is this recorder grown up. A `Tracer` collects the spans; three
# places make them, each around the wait it measures: `Agent.run` (one `invoke_agent`
# span per run), the loop (one `chat` span per model call) and the tool registry (one
# `execute_tool` span per call, the context copied into its thread). The same question,
# traced by the package:

# %%
from miniagent import tracing

print(f"miniagent/tracing.py: about {round(len(inspect.getsource(tracing).splitlines()), -2)} lines")
tracer = Tracer()
Agent(llm, default_tools(), tracer=tracer).run("What is the weather in Paris and Tokyo?")
show([s.to_dict() for s in tracer.spans])

# %% [markdown]
# A package span has the fields of our records (`span_id`, `parent_id`, `name`, `start`,
# `end`, `status`, `attributes`), which is why `show` can print it. (`tracer.tree()`
# prints the same tree with a few more details; you will meet it before the exercises.)
#
# Does the package agree with the twenty lines? Record the same run with our recorder,
# wrapping the client and the tools so that each call is a span:

# %%
class TracedClient:
    """The client, with every model call recorded as a span."""

    def __init__(self, client):
        self.client = client

    def __getattr__(self, name):
        return getattr(self.client, name)

    def create(self, messages, **options):
        with span(f"chat {self.client.model}"):
            return self.client.create(messages, **options)


def traced(tool):
    """The same tool, each call recorded as a span."""
    def run(**arguments):
        with span(f"execute_tool {tool.name}"):
            return tool.fn(**arguments)
    return miniagent.Tool(tool.name, tool.description, tool.input_schema, run)

# %%
def shape(records, parent=None):
    """The tree without times: (name, [children]) for each span under `parent`."""
    return [(r["name"], shape(records, r["span_id"])) for r in records if r["parent_id"] == parent]


spans.clear()
with span("invoke_agent assistant"):
    Agent(TracedClient(llm), [traced(t) for t in default_tools()]).run("What is the weather in Paris and Tokyo?")
same = shape(spans) == shape([s.to_dict() for s in tracer.spans])
print("same tree:", same)
if not same:  # live, two runs of a real model need not take the same steps
    print("the model took other steps this time:", [name for name, _ in shape(spans)[0][1]])

# %% [markdown]
# The same tree. The tool spans of our recorder landed under the agent even though each
# tool ran on a thread of its own: the registry copied the context in, so even a recorder
# it has never heard of finds its parent.
#
# ## A real run: an orchestrator and two specialists
#
# Notebook 10's team: an orchestrator whose tools are a weather specialist and a math
# specialist, each an agent with its own tool. The mock asks both specialists in one
# round, so they work in parallel. Their tools answer after 50 ms, as real services
# would (the mock's tools answer at once). The spans should form this tree:
#
# ```mermaid
# flowchart TD
#     O["invoke_agent orchestrator"] --> C1["chat<br/>(splits the question)"]
#     O --> TW["execute_tool weather_expert"]
#     O --> TM["execute_tool math_expert"]
#     O --> C2["chat<br/>(combines the answers)"]
#     TW --> W["invoke_agent weather_expert"]
#     W --> W1["chat"] & G["execute_tool get_weather ×2"] & W2["chat"]
#     TM --> M["invoke_agent math_expert"]
#     M --> M1["chat"] & K["execute_tool calculate"] & M2["chat"]
# ```

# %%
def slow(tool, seconds=0.05):
    """The same tool, answering after `seconds`."""
    def run(**arguments):
        time.sleep(seconds)
        return tool.fn(**arguments)
    return miniagent.Tool(tool.name, tool.description, tool.input_schema, run)


def traced_team(client):
    """The orchestrator and its two specialists, traced; (the orchestrator, its tracer)."""
    weather = Agent(client, [slow(TOOLS["get_weather"])], name="weather_expert",
                    system="You are a weather specialist. Be brief.",
                    description="A weather specialist: knows the current weather and temperature of any city.")
    math = Agent(client, [slow(TOOLS["calculate"])], name="math_expert", system="You are a math specialist. Be brief.",
                 description="A math specialist: calculates arithmetic, percentages and totals exactly.")
    tracer = Tracer()
    return team.orchestrator(client, [weather, math], tracer=tracer), tracer


team_llm = llm
boss, team_tracer = traced_team(team_llm)
print(boss.run(QUESTION).text)
if len(team_tracer.of_kind("agent")) < 3:  # live, a small model may ask one specialist, or none
    print(f"\n(the model asked {len(team_tracer.of_kind('agent')) - 1} specialists; this section reads the mock's run)")
    team_llm = miniagent.connect(offline=True, quiet=True)
    boss, team_tracer = traced_team(team_llm)
    print(boss.run(QUESTION).text)
print()
show([s.to_dict() for s in team_tracer.spans])

# %% [markdown]
# Only the orchestrator was given the tracer. The specialists' spans found their place
# on their own: each specialist ran inside its tool's span, on that tool's thread, in a
# copy of the context. Compare what each record knows about this run:

# %%
counted = boss.trace.summary()
print("the orchestrator's agent.trace:", json.dumps({k: counted[k] for k in ("model_calls", "tool_calls")}))
summary = team_tracer.summary()
print("the spans:                     ", json.dumps({k: v for k, v in summary.items() if k != "wall_seconds"}))
print(f"the whole run took {summary['wall_seconds'] * 1000:.1f} ms")

# %% [markdown]
# The event trace sees two tool calls; the spans see every model call and tool call,
# the specialists' included. The token total counts model calls only: an agent span's
# tokens include its sub-agents' (notebook 10 charges them to the parent), so adding agent
# spans up would count the specialists twice.
#
# ## The timeline
#
# A tree shows nesting; a timeline shows time. `tracer.timeline()` draws one bar per span,
# in the tree's order, from its start to its end:

# %%
on = "the mock: its model calls take milliseconds" if team_llm.mode == "offline" else f"{team_llm.model}, live"
figure = team_tracer.timeline(title=f"An orchestrator and two specialists, on {on}")
figure.axes[0].set_xlim(0, figure.axes[0].get_xlim()[1] * 1.25)  # room on the right for the legend
plt.show()
for depth, s in team_tracer.walk():
    print(f"{'  ' * depth + s.name:<40} starts at {s.start * 1000:.1f} ms, lasts {s.seconds * 1000:.1f} ms")
chats = team_tracer.of_kind("model")
print(f"\nthe {len(chats)} model calls: {sum(s.seconds for s in chats) * 1000:.1f} ms in all, the longest "
      f"{max(s.seconds for s in chats) * 1000:.1f} ms; the whole run {summary['wall_seconds'] * 1000:.1f} ms")

# %% [markdown]
# Here the long bars are the tools, which sleep 50 ms each, and the model calls are
# slivers: the mock answers in a few milliseconds, as the last line says. Live it is the
# other way round: a model call takes seconds, so the chat bars dominate and the tools
# become the slivers; the same tree then shows which agent waits for which call.
#
# The two specialists' bars sit side by side in time. Measure it on their `invoke_agent`
# spans, not on the tool spans: the registry opens all of a round's tool spans before it
# starts any thread, so those overlap whatever happens, while an agent span begins inside
# its thread. How long the two runs overlapped, and what one after the other would cost:

# %%
runs = [s for s in team_tracer.of_kind("agent") if s.parent_id is not None]  # the specialists' runs
overlap = min(s.end for s in runs) - max(s.start for s in runs)
in_turn = sum(s.seconds for s in runs)
side_by_side = max(s.end for s in runs) - min(s.start for s in runs)
print("the specialists ran at the same time:", overlap > 0)
print(f"overlap {overlap * 1000:.1f} ms; both, side by side {side_by_side * 1000:.1f} ms; "
      f"one after the other they would take {in_turn * 1000:.1f} ms")

# %% [markdown]
# ## Finding the slow step and the wasted tokens
#
# Two tools that misbehave the way real ones do: an exchange-rate service that takes
# 0.3 s to answer, and a hotel search that returns every listing it has. The registry is
# built with `max_output_chars=None`, so nothing cuts the output (the package's default
# would):

# %%
@tool
def get_exchange_rate(currency: str) -> str:
    """Get today's exchange rate of a currency against the euro.

    Args:
        currency: a currency code such as USD or JPY
    """
    time.sleep(0.3)  # a slow service
    return f"1 EUR = 1.08 {currency}"


@tool
def search_hotels(city: str) -> str:
    """Search the hotels of a city: every listing, with its price and rating.

    Args:
        city: the city
    """
    return "\n".join(f"Hotel {i} in {city}: rooms from {80 + i % 50} EUR, rated {i % 5 + 1}/5, near the station"
                     for i in range(400))

# %% [markdown]
# Ask a question that needs both, and look at the tree:

# %%
TRIP = "Find hotels in Lisbon, and what is the exchange rate of USD?"
trip_llm, trip_tracer = llm, Tracer()
Agent(trip_llm, miniagent.ToolRegistry([get_exchange_rate, search_hotels], max_output_chars=None),
      tracer=trip_tracer).run(TRIP)
answered = [s for s in trip_tracer.of_kind("model") if s.status == "ok"]
if len(trip_tracer.of_kind("tool")) < 2 or len(answered) < 2:  # live, a small model may call less, or fail
    failed = [s.error for s in trip_tracer.of_kind("model") if s.status == "error"]
    print(f"(the model called {len(trip_tracer.of_kind('tool'))} tools, and answered {len(answered)} calls"
          f"{f', then failed: {failed[0]}' if failed else ''}; this section reads the mock's run)")
    trip_llm, trip_tracer = miniagent.connect(offline=True, quiet=True), Tracer()
    Agent(trip_llm, miniagent.ToolRegistry([get_exchange_rate, search_hotels], max_output_chars=None),
          tracer=trip_tracer).run(TRIP)
show([s.to_dict() for s in trip_tracer.spans])

# %% [markdown]
# The slow step: `slowest()` sorts the spans by duration. Ask for a kind, because the
# agent span contains every other span and so always comes first:

# %%
print(trip_tracer.slowest(n=2))
print(trip_tracer.slowest("tool", n=1))

# %% [markdown]
# The wasted tokens: each model span holds the input tokens of its call. The second call
# carries everything the first one did, plus the model's first answer and the tool
# results, so the jump between the two is mostly what the results cost; the tool spans
# say which result was big:

# %%
first, second = trip_tracer.of_kind("model")[:2]
jump = second.attributes["gen_ai.usage.input_tokens"] - first.attributes["gen_ai.usage.input_tokens"]
print(f"input tokens: {first.attributes['gen_ai.usage.input_tokens']:,} -> "
      f"{second.attributes['gen_ai.usage.input_tokens']:,} (+{jump:,})")
for s in trip_tracer.of_kind("tool"):
    print(f"{s.name:<30} {s.attributes['miniagent.tool.output_chars']:>7,} characters of output")

# %% [markdown]
# The hotel list is nearly all of the jump, and the model needed a few lines of it. Cut it
# at the door, as notebook 04 did, and measure again: once with the registry's cap
# (`max_output_chars`), once with the context policy `TruncateToolResults`.

# %%
from miniagent.context import TruncateToolResults


def second_call_tokens(tools, **settings):
    """The input tokens of the TRIP run's second model call, read from its spans."""
    traced_run = Tracer()
    Agent(trip_llm, tools, tracer=traced_run, **settings).run(TRIP)
    calls = [s for s in traced_run.of_kind("model") if s.status == "ok"]  # live, there may be no second
    return (f"{calls[1].attributes['gen_ai.usage.input_tokens']:,}" if len(calls) > 1 else "no second call"), traced_run


trip_tools = [get_exchange_rate, search_hotels]
capped, capped_tracer = second_call_tokens(miniagent.ToolRegistry(trip_tools, max_output_chars=2_000))
policed, _ = second_call_tokens(miniagent.ToolRegistry(trip_tools, max_output_chars=None),
                                policy=TruncateToolResults(2_000))
print(f"second call: {second.attributes['gen_ai.usage.input_tokens']:,} tokens uncut, {capped} with "
      f"max_output_chars=2000, {policed} with TruncateToolResults(2000)")

# %% [markdown]
# ## What it cost
#
# Tokens become dollars with a price table, and prices change, so the package's table
# (`miniagent/prices.py`) says on which day it was read. `tracer.cost(span)` prices a span
# and everything inside it; a model the table does not know costs `None`, never a guess.

# %%
from miniagent import prices


def dollars(amount):
    return "unknown" if amount is None else f"${amount:.6f}"


model = second.attributes["gen_ai.response.model"]
price = prices.price_of(model)
print(f"list prices read on {prices.PRICES_DATE}; the responses name the model {model!r}:")
print(f"  ${price.input} per million input tokens, ${price.output} per million output tokens" if price
      else "  not in the table, so its cost is unknown")
print("an unknown model costs", prices.cost("my-model", {"input_tokens": 1_000}))
for label, run in (("uncut", trip_tracer), ("capped", capped_tracer)):
    calls = ", ".join(dollars(run.cost(s)) for s in run.of_kind("model"))
    print(f"{label:<7} model calls {calls}; the run {dollars(run.cost())}")

# %% [markdown]
# Read these dollars for what they are. Offline, the mock echoes the model name it was
# sent (`claude-sonnet-5-5`, a row of the table) and counts tokens with its own estimate,
# so this is the list price of that model applied to the mock's counts: the method is
# right, the figures are not a bill. Live, the same cell prices the real usage. Either
# way the proportion holds: the capped run costs a fraction of the uncut one.
#
# ## Saving and reading spans
#
# `to_jsonl` writes one span per line, JSON Lines, like notebook 05's trace. A file of
# spans is the thing you keep, attach to a bug report, or query after the fact:

# %%
folder = Path(tempfile.mkdtemp())
path = trip_tracer.to_jsonl(folder / "trip.jsonl")
lines = path.read_text().splitlines()
record = json.loads(lines[-1])
print(len(lines), "lines; each has the keys", list(record))
print("the last one:", json.dumps({k: record[k] for k in ("name", "kind", "status")}))
print(textwrap.fill("its attributes: " + ", ".join(record["attributes"]), 100, subsequent_indent="  "))

# %% [markdown]
# With the `jq` tool you would ask `jq -c 'select(.kind == "tool") | {name, chars:
# .attributes["miniagent.tool.output_chars"]}' trip.jsonl`. The same query in Python is a
# loop over the lines; and `Tracer.from_jsonl` reads the file back into a tracer that
# answers everything the live one did:

# %%
for line in path.read_text().splitlines():
    s = json.loads(line)
    if s["kind"] == "tool":
        print({"name": s["name"], "chars": s["attributes"]["miniagent.tool.output_chars"]})

back = Tracer.from_jsonl(path)
print("the same spans:", [s.to_dict() for s in back.spans] == [s.to_dict() for s in trip_tracer.spans])
print("the same slowest tool:", back.slowest("tool", 1)[0].name)

# %% [markdown]
# ## What a span never holds
#
# Spans leave the process: to a file, to a collector, to a vendor. So by default a span
# holds sizes and counts, never what anyone wrote: not even an error's text, which so often
# quotes its input (a failed span says only the error's type); `Tracer(capture_content=True)`
# adds the messages, arguments, results and error texts (for debugging, where that is
# allowed). And no span
# ever holds an API key: spans never record headers, and any text they do record has
# every secret the process can see replaced (the values of environment variables whose
# names end in KEY, TOKEN, SECRET or PASSWORD, `ANTHROPIC_API_KEY` among them). A careless
# tool that prints its configuration, key included, puts that to the test (the key is a
# stand-in):

# %%
os.environ["EXAMPLE_API_KEY"] = "demo-key-7f3a9c2e51"  # not a real key


@tool
def show_config() -> str:
    """Show the service's configuration: region, limits and credentials."""
    return f"region=eu-west, max_requests=100, api_key={os.environ['EXAMPLE_API_KEY']}"


def config_run(client, capture):
    tracer = Tracer(capture_content=capture)
    agent = Agent(client, [show_config], tracer=tracer)
    agent.run("Show me the service configuration.")
    return agent, tracer


for capture in (False, True):
    config_agent, config_tracer = config_run(llm, capture)
    if not config_tracer.of_kind("tool"):  # live, a small model may not call the tool; the mock does
        print("(the model did not call show_config; this run is the mock's)")
        config_agent, config_tracer = config_run(miniagent.connect(offline=True, quiet=True), capture)
    result = next((s.attributes.get("gen_ai.tool.call.result") for s in config_tracer.of_kind("tool")), None)
    print(f"capture_content={capture}: the tool span's result is {result!r}")
    saved = config_tracer.to_jsonl(folder / "config.jsonl").read_text()
    events = json.dumps(config_agent.trace.events, default=str)
    print(f"  the key in the span file: {os.environ['EXAMPLE_API_KEY'] in saved}; "
          f"in agent.trace: {os.environ['EXAMPLE_API_KEY'] in events}")

# %% [markdown]
# The key never reaches a span, captured or not. Notice the other answer, though: the
# event trace of notebook 05 is an in-process debugging record that keeps text as it is,
# key and all. Keep it in the process; ship spans.
#
# ## OpenTelemetry: the spans every backend reads
#
# OpenTelemetry (OTel) is the open standard for traces: one data model, one wire
# protocol (OTLP), and exporters for every backend. Its *semantic conventions for
# generative AI* name the attributes an LLM span should carry, so a backend knows which
# number is the input tokens. The package's spans already use those names; the
# `miniagent.*` ones are ours. On the orchestrator run:

# %%
for kind in ("agent", "model", "tool"):
    s = team_tracer.of_kind(kind)[0]
    print(textwrap.fill(f"{s.name}: " + ", ".join(sorted(s.attributes)), 100, subsequent_indent="    "))

# %% [markdown]
# `miniagent/otel.py` turns our spans into the OpenTelemetry SDK's own spans, which any
# exporter sends. First to the SDK's in-memory exporter, to look at what it got: each
# span's OTel kind (a model call is a `CLIENT` call to another service; the rest is
# `INTERNAL`), its parent, its status.

# %%
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from miniagent import otel

memory = InMemorySpanExporter()
print(otel.export([s for _, s in team_tracer.walk()], memory))
exported = memory.get_finished_spans()
names = {s.context.span_id: s.name for s in exported}
for s in exported:
    parent = names[s.parent.span_id] if s.parent else "-"
    print(f"{s.name:<30} {s.kind.name:<8} {s.status.status_code.name:<3} parent: {parent}")

# %% [markdown]
# ## A real OTLP export, to a collector on this machine
#
# A backend receives OTLP over HTTP: a `POST` to `/v1/traces` whose body is a protobuf
# message. A small `http.server` handler makes a receiver that keeps what arrives:

# %%
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

received = []


class Collector(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):  # quiet
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
threading.Thread(target=server.serve_forever, daemon=True).start()
endpoint = f"http://127.0.0.1:{server.server_port}"

# %% [markdown]
# `otel.otlp_exporter(endpoint)` is the SDK's OTLP/HTTP exporter pointed at it. Send the
# spans of the run whose tool leaked a key (recorded with `capture_content=True`), then
# decode what arrived with OpenTelemetry's own protobuf classes:

# %%
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def decode(body):
    """The spans in one OTLP/HTTP request body."""
    request = ExportTraceServiceRequest.FromString(body)
    return [s for r in request.resource_spans for scope in r.scope_spans for s in scope.spans]


exporter = otel.otlp_exporter(endpoint)
print(otel.export([s for _, s in config_tracer.walk()], exporter))
exporter.shutdown()
url_path, content_type, body = received[0]
arrived = decode(body)
print(f"POST {url_path} ({content_type}): {len(arrived)} spans:", ", ".join(s.name for s in arrived))
print("the key in the bytes sent:", os.environ["EXAMPLE_API_KEY"].encode() in body, "| <redacted> in them:",
      b"<redacted>" in body)

# %% [markdown]
# On the wire an attribute is a key and a typed value. In OTLP's JSON form (the same
# message, as a backend's API or a `curl` would show it), three attributes of the chat
# span look like this: a string, a number and a list.

# %%
from google.protobuf.json_format import MessageToDict

chat = next(s for s in arrived if s.name.startswith("chat"))
for attribute in MessageToDict(chat)["attributes"]:
    if attribute["key"] in ("gen_ai.operation.name", "gen_ai.usage.input_tokens", "gen_ai.response.finish_reasons"):
        print(json.dumps(attribute))

# %% [markdown]
# Export after the run is fine for a notebook. A service exports each span as it ends,
# so a run that crashes halfway still leaves its spans behind: `OTelSink` is a tracer
# callback (`on_end`) that does that. It hands each span to a background thread, so the
# run never waits for the collector: one that is down, or accepts and never answers,
# costs the run nothing; it is reported once (a warning) and counted (`sink.stats()`),
# and leaving the `with` block waits for the last spans at most `otel.SHUTDOWN_SECONDS`.

# %%
received.clear()
with otel.OTelSink(otel.otlp_exporter(endpoint)) as sink:
    Agent(llm, default_tools(), tracer=Tracer(on_end=sink)).run("What is the weather in Paris?")
print(len(received), "requests, one per span, in the order they ended:")
print([s.name for _, _, body in received for s in decode(body)])
print("the sink's counters:", sink.stats())
server.shutdown()

# %% [markdown]
# ## In production
#
# Nothing below runs here (no network in this notebook); it is what you would do.
#
# **Where spans go.** Without an endpoint, `otlp_exporter()` reads the standard
# variables every OpenTelemetry SDK reads, so the code does not change between machines:
#
# ```bash
# export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318   # /v1/traces is added
# export OTEL_SERVICE_NAME=trip-planner                        # how the backend lists you
# ```
#
# **Jaeger**, open source, one container, OTLP on port 4318 and its web page on 16686
# (this is Jaeger 2; the older `jaegertracing/all-in-one` image is the archived 1.x line):
#
# ```bash
# docker run --rm -p 16686:16686 -p 4318:4318 jaegertracing/jaeger:latest
# ```
#
# **Zipkin** reads its own format, not OTLP: put the OpenTelemetry Collector in between
# (its `otel/opentelemetry-collector-contrib` image has the Zipkin exporter). It receives
# OTLP on 4318 and forwards to Zipkin; its `config.yaml`:
#
# ```yaml
# receivers:
#   otlp:
#     protocols:
#       http:
#         endpoint: 0.0.0.0:4318
# exporters:
#   zipkin:
#     endpoint: http://zipkin:9411/api/v2/spans
# service:
#   pipelines:
#     traces:
#       receivers: [otlp]
#       exporters: [zipkin]
# ```
#
# **Langfuse** (an LLM observability service, hosted or self-hosted) takes OTLP at
# `/api/public/otel`, with your project's public and secret keys as Basic auth, and asks
# exporters that send to it directly for an ingestion-version header. A full URL is
# used as it is, so give the whole traces path:
#
# ```python
# import base64
# keys = f"{os.environ['LANGFUSE_PUBLIC_KEY']}:{os.environ['LANGFUSE_SECRET_KEY']}"
# headers = {"Authorization": "Basic " + base64.b64encode(keys.encode()).decode(),
#            "x-langfuse-ingestion-version": "4"}
# exporter = otel.otlp_exporter("https://cloud.langfuse.com/api/public/otel/v1/traces", headers=headers)  # EU region
# ```
#
# **As spans end**, batched in a background thread (so no request waits for the
# collector), flushed when the process stops:
#
# ```python
# sink = otel.OTelSink(otel.otlp_exporter(), batch=True)
# agent = Agent(client, tools, tracer=Tracer(on_end=sink))
# ...
# sink.shutdown()  # sends what is still queued
# ```
#
# ## Summary
# - A span is one step with a start, an end, a status, attributes and a parent. A context
#   variable gives each step its parent; a thread needs a copy of the context to keep it.
# - The tree shows what ran inside what; the timeline shows what ran at once; `slowest()`,
#   the model spans' input tokens and `cost()` find the slow step and the wasted tokens.
# - Spans use OpenTelemetry's GenAI names, so one exporter sends them to Jaeger, Zipkin,
#   Langfuse or any OTLP backend; no span holds a key, nor any content unless you ask.
#
# ## Exercises
#
# The checks run your functions on tracers they build themselves, with times they choose.
# `miniagent.exercises.n11.build` makes such tracers, so you can try your code on one;
# `tracer.tree()` prints it:

# %%
from miniagent.exercises.n11 import agent as agent_node, build, model as model_node, tool as tool_node

example = build(agent_node("orchestrator", 0, 100, model_node(1, 20, 300, 60),
                           tool_node("weather_expert", 21, 80, agent_node("weather_expert", 22, 79,
                                                                          model_node(23, 78, 110, 40))),
                           model_node(81, 99, 420, 50)))
print(example.tree())

# %% [markdown]
# **Exercise 1.** Write `tokens_by_agent(tracer)`: a dict from each agent's name (its span's
# `gen_ai.agent.name` attribute) to the tokens (input plus output) of the model calls it
# made *itself*, summed over all its runs. A specialist's calls count for the specialist,
# not for the orchestrator that asked it. A failed model call has no usage attributes.

# %% tags=["exercise"]
def tokens_by_agent(tracer):
    """Exercise 1: {agent name: input + output tokens of the model calls it made itself}."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_11_1(tokens_by_agent)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_tokens_by_agent(tracer):
    totals = {}

    def visit(span, owner):
        if span.kind == "agent":
            owner = span.attributes["gen_ai.agent.name"]
            totals.setdefault(owner, 0)
        elif span.kind == "model" and owner is not None:
            usage = span.attributes
            totals[owner] += usage.get("gen_ai.usage.input_tokens", 0) + usage.get("gen_ai.usage.output_tokens", 0)
        for child in tracer.children(span):
            visit(child, owner)

    for root in tracer.children(None):
        visit(root, None)
    return totals


miniagent.exercises.check_11_1(reference_tokens_by_agent)

# %% [markdown]
# **Exercise 2.** Write `self_time(tracer, span)`: the seconds of `span` not covered by any
# of its direct children (`tracer.children(span)`). For an agent it is the time spent
# between calls, in the loop itself; a large self time means a step nobody traced. Careful:
# children that run in parallel overlap, and overlapping time is covered once.

# %% tags=["exercise"]
def self_time(tracer, span):
    """Exercise 2: the seconds of `span` that none of its children covers."""
    return span.seconds - sum(child.seconds for child in tracer.children(span))  # right until two overlap


# %% tags=["check"]
miniagent.exercises.check_11_2(self_time)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_self_time(tracer, span):
    covered, reach = 0.0, span.start
    for child in sorted(tracer.children(span), key=lambda s: s.start):
        start, end = max(child.start, reach), min(child.end, span.end)
        if end > start:  # the part of this child that no earlier child covered
            covered, reach = covered + end - start, end
    return span.seconds - covered


miniagent.exercises.check_11_2(reference_self_time)

# %% [markdown]
# **Exercise 3.** Write `otlp_attributes(attributes)`: a span's attributes as OTLP/JSON
# sends them, the list printed above. Each item is `{"key": name, "value": v}`, where `v`
# is `{"stringValue": text}`, `{"boolValue": flag}`, `{"intValue": "123"}` (64-bit
# integers are decimal strings in JSON), `{"doubleValue": 0.7}`, or for a list
# `{"arrayValue": {"values": [one such value per item]}}`.

# %% tags=["exercise"]
def otlp_attributes(attributes):
    """Exercise 3: [{"key": name, "value": {...}}, ...] for a dict of attributes."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_11_3(otlp_attributes)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_otlp_attributes(attributes):
    def value(v):
        if isinstance(v, bool):  # before int: True is an int in Python
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, str):
            return {"stringValue": v}
        return {"arrayValue": {"values": [value(item) for item in v]}}

    return [{"key": key, "value": value(v)} for key, v in attributes.items()]


miniagent.exercises.check_11_3(reference_otlp_attributes)

# %% [markdown]
# ## Next
#
# **[12 · Tools from anywhere](12_mcp.ipynb)**: the Model Context Protocol lets an agent use
# tools that live in another process. Each of those calls is a span too, so what you built
# here is how you will see where their time goes.
