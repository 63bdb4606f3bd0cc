# %% [markdown]
# # 07 · Async and serving — many conversations in one process, streamed to a web page
#
# An agent spends almost all of its time waiting: for the model's first token, for a
# tool's web request. One conversation at a time, a server would sit idle through all
# of it. The article's table of what Spring AI and LangChain4j add to its mini agent has
# two rows for that: 异步与并发 (async and concurrency), where the frameworks bring
# "Reactive 全家桶" (the whole reactive family), and 流式输出（SSE）, streaming to the
# browser. In Python the same pieces are `asyncio` and an ASGI web service. This
# notebook builds both on the package you already have.
#
# **You will be able to**
# - write agent code with `async`/`await`, and spot the one mistake that quietly makes
#   it slower than plain code: a blocking call;
# - run 50 conversations at once from one process, and measure what that buys;
# - serve the agent over HTTP, streaming to a web page, and say where one process stops.
#
# **You need** notebooks 01–06. Offline is fine.

# %%
import asyncio
import json
import math
import statistics
import time
import tracemalloc

import httpx2

import miniagent
from miniagent.aloop import AsyncAgent

llm = miniagent.connect_async(max_retries=5, max_tokens=300)  # many calls at once meet more 429s and 529s
tools = miniagent.default_tools()
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"

# %% [markdown]
# `connect_async()` reads the environment exactly as `connect()` does and returns an
# `AsyncClient`: the same methods, the same errors, retries and redaction, but every
# method that waits is a coroutine function. Five retries rather than two: when fifty
# calls go out at once to a busy API, some meet a 429 or 529 several times in a row. And
# answers of at most 300 tokens: a small local model often writes up to the limit, and
# there each token takes time.
#
# ## One call, awaited
#
# Calling `llm.create(...)` no longer makes the request. It returns a *coroutine*, a
# call that has not started; `await` runs it and gives its result. Jupyter lets you
# `await` at the top level of a cell (in a script you would wrap it in `asyncio.run`).

# %%
hello = [miniagent.user("Hello! Who are you?")]
response = await llm.create(hello, max_tokens=200)
print(response["stop_reason"], "|", miniagent.text_of(response)[:90])

# %% [markdown]
# ## Break it: forget the `await`
#
# The most common async bug does not raise where it happens. Without `await`, you hold
# a coroutine, nothing was sent, and the error comes later, where you use the result:

# %%
sent_before = len(llm.mock.records) if llm.mode == "offline" else None
pending = llm.create(hello, max_tokens=200)
print(type(pending).__name__)
try:
    pending["content"]
except TypeError as err:
    print("TypeError:", err)
pending.close()  # never awaited: close it, or Python warns "coroutine ... was never awaited"
if sent_before is not None:
    print("requests the mock received meanwhile:", len(llm.mock.records) - sent_before)

# %% [markdown]
# ## Waiting together
#
# Give every answer a wait before its first token, as a busy real model has. Then ask
# ten questions one after another (live, four), and the same ones at once with
# `asyncio.gather`, which starts them all and waits for all of them, results in the order asked:

# %%
WAIT = 0.1  # seconds before each answer's first token (offline: the mock's pacing)
if llm.mode == "offline":
    llm.mock.pace(first=WAIT)
names = ["Ada", "Grace", "Alan", "Barbara", "Edsger", "Frances", "Donald", "Radia", "Ken", "Margaret"]
names = names if llm.mode == "offline" else names[:4]  # live, four: a local model takes seconds per answer
questions = [[miniagent.user(f"My name is {name}.")] for name in names]

started = time.perf_counter()
for question in questions:
    await llm.create(question, max_tokens=100)
one_by_one = time.perf_counter() - started

started = time.perf_counter()
answers = await asyncio.gather(*(llm.create(question, max_tokens=100) for question in questions))
together = time.perf_counter() - started
print(f"one by one: {one_by_one:.2f} s   at once: {together:.2f} s   ({one_by_one / together:.0f}x)")
named = sum(name in miniagent.text_of(answer) for name, answer in zip(names, answers))
print(f"answers in the order asked: {named} of {len(names)} name the person of their question")

# %% [markdown]
# One thread did all of it. An `await` is a place where a coroutine says "I am
# waiting": the *event loop* then runs another one that is ready, and comes back when
# the answer is in. No threads, no locks; but it only works if every wait is an `await`.
#
# ## Break it: one blocking call stalls everyone
#
# A plain function that waits (`time.sleep`, `requests.get`, a database driver without
# async support) holds the one thread, and no other coroutine can run meanwhile. Five
# lookups, first called directly from `async def`, then handed to a thread:

# %%
def slow_lookup(city):
    """A plain function that waits, like a web request made with a blocking library."""
    time.sleep(0.1)
    return f"{city}: sunny"


async def lookup_blocking(city):
    return slow_lookup(city)  # the event loop stops here for 0.1 s


async def lookup_in_thread(city):
    return await asyncio.to_thread(slow_lookup, city)  # waits in a thread; the loop runs on


cities = ["Paris", "Rome", "Oslo", "Lima", "Cairo"]
for name, lookup in (("blocking", lookup_blocking), ("to_thread", lookup_in_thread)):
    started = time.perf_counter()
    await asyncio.gather(*(lookup(city) for city in cities))
    print(f"{name:9}: 5 lookups at once took {time.perf_counter() - started:.2f} s")

# %% [markdown]
# The blocking version took the sum of the waits, as if there were no `gather`. Nothing
# warned: the code is correct, only slow. The package's tool registry does the safe
# thing for you: a tool written with `async def` is awaited, and a plain one runs in a
# thread of its own (`ToolRegistry.arun_all` in `miniagent/tools.py`).
#
# ## The loop, once, with two drivers
#
# The async loop must decide exactly what the sync one decides: the budgets, every
# `stop_reason`, repeat detection, what enters the history. Copy `run_loop` and add
# `await`s, and the two copies drift apart with the first bug fixed in only one. So the
# rules are written once, as a *generator*: it `yield`s each piece of I/O it needs and
# receives the outcome back from the `yield`. A *driver* does the I/O. Here is the
# idea at toy size:

# %%
def rules(question):
    """The decisions, and no waiting: ask for what is needed, get it back from `yield`."""
    answer = yield ("model", question)
    while answer.startswith("tool:"):
        result = yield ("tool", answer.removeprefix("tool:"))
        answer = yield ("model", result)
    return answer


def drive(steps, do):
    """The sync driver: do each thing asked, send the outcome back."""
    try:
        need = next(steps)
        while True:
            need = steps.send(do(need))
    except StopIteration as finished:
        return finished.value


async def adrive(steps, do):
    """The async driver: the same, with `await`."""
    try:
        need = next(steps)
        while True:
            need = steps.send(await do(need))
    except StopIteration as finished:
        return finished.value

# %% [markdown]
# A scripted model that first asks for the clock, and a clock tool, done both ways:

# %%
QUESTION = "What time is it?"


def do(need):
    kind, value = need
    if kind == "tool":
        return "12:00"
    return "tool:clock" if value == QUESTION else f"It is {value}."


async def ado(need):
    await asyncio.sleep(0)  # a real driver awaits the client and the tools here
    return do(need)


print(drive(rules(QUESTION), do))
print(await adrive(rules(QUESTION), ado))

# %% [markdown]
# The package's loop has this shape. `Loop.steps()` in `miniagent/loop.py` yields four
# kinds of need (`ModelCall`, `ToolCalls`, and a context policy's `PolicyView` and
# `PolicyResults`); an API error is thrown back in at the `yield`, where the rules
# handle it. `run_loop` and `arun_loop` (in `miniagent/aloop.py`, this notebook's
# module) are the two drivers (the mock answers both alike; a live model samples, so
# its two runs may differ):

# %%
import inspect

from miniagent import aloop, loop

for part in (loop.Loop.steps, loop.run_loop, aloop.arun_loop):
    print(f"{part.__qualname__:12} about {round(len(inspect.getsource(part).splitlines()), -1):3} lines")
sync_run = loop.run_loop(miniagent.connect(quiet=True, max_tokens=llm.max_tokens), [miniagent.user(DEMO)], tools=tools)
async_run = await aloop.arun_loop(llm, [miniagent.user(DEMO)], tools=tools)
print("the same run:", [m["role"] for m in sync_run.messages] == [m["role"] for m in async_run.messages],
      "|", sync_run.stop, async_run.stop)

# %% [markdown]
# ## Async tools, and a tool that hangs
#
# A tool can be a coroutine function. Awaited, it can also be *stopped*: when it runs past
# its `timeout`, the registry cancels it and answers the model with an error, where a
# plain function in a thread can only be abandoned (Python cannot kill a thread).

# %%
cancelled = []


@miniagent.tool(timeout=0.2)
async def get_exchange_rate(currency: str) -> str:
    """Get today's exchange rate of a currency against the euro.

    Args:
        currency: a currency code such as USD
    """
    try:
        await asyncio.sleep(60)  # a remote service that never answers
    except asyncio.CancelledError:
        cancelled.append(currency)
        raise
    return "1.08"


registry = miniagent.ToolRegistry([get_exchange_rate])
[result] = await registry.arun_all([{"type": "tool_use", "id": "toolu_1", "name": "get_exchange_rate",
                                      "input": {"currency": "USD"}}])
print(json.dumps(result, ensure_ascii=False))
print("cancelled:", cancelled)

# %% [markdown]
# ## Fifty conversations at once
#
# `AsyncAgent` is the agent of notebook 05 with `await agent.run(question)`: the same
# settings, trace and history rules, built on `arun_loop`. Each conversation gets its
# own agent (its own history); they share one client, and so one pool of connections.
# First a few conversations one by one, then fifty at once (live, four: a local model
# takes seconds per answer, and a hosted one bills each):

# %%
AT_ONCE = 50 if llm.mode == "offline" else 4


async def conversation(i):
    """One user's question, in a conversation of its own; returns (seconds, result)."""
    agent = AsyncAgent(llm, tools)
    started = time.perf_counter()
    result = await agent.run(f"What's the weather in Paris? I am user {i}.")
    return time.perf_counter() - started, result


alone = [await conversation(i) for i in range(min(5, AT_ONCE))]
per_conversation = statistics.median(seconds for seconds, _ in alone)
calls = statistics.median(result.iterations for _, result in alone)
tool_calls = statistics.median(sum(map(len, map(miniagent.tool_uses, result.messages))) for _, result in alone)

cpu, started = time.process_time(), time.perf_counter()
runs = await asyncio.gather(*(conversation(i) for i in range(AT_ONCE)))
wall, cpu = time.perf_counter() - started, time.process_time() - cpu
latencies = sorted(seconds for seconds, _ in runs)
print(f"one by one: {per_conversation:.2f} s each (model calls {calls:g}, tool calls {tool_calls:g}), "
      f"so {AT_ONCE} take about {AT_ONCE * per_conversation:.1f} s")
print(f"{AT_ONCE} at once: {wall:.2f} s in all ({AT_ONCE * per_conversation / wall:.2g}x); each one p50 "
      f"{latencies[math.ceil(AT_ONCE / 2) - 1]:.2f} s, p95 {latencies[math.ceil(AT_ONCE * 0.95) - 1]:.2f} s")
print(f"CPU: {cpu / AT_ONCE * 1000:.1f} ms per conversation | all answered: {all(r.ok for _, r in runs)}")

# %% [markdown]
# Each conversation still takes its two waits, but they overlap: fifty cost little
# more than one. (A local model is the exception: it computes every answer on your own
# cores, so answers asked at once wait for each other.) What does not overlap is the CPU work (building requests, parsing
# answers, the loop's decisions), a few milliseconds per conversation. That, and memory,
# is what bounds one process. The memory a conversation holds while it waits:

# %%
tracemalloc.start()  # counts Python's allocations (and slows it down: not for timing)
before = tracemalloc.get_traced_memory()[0]
await asyncio.gather(*(conversation(i) for i in range(AT_ONCE)))
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
kib = (peak - before) / AT_ONCE / 1024
# How many are in flight at the peak depends on thread timing, so the figure moves between
# runs (by about 10 KiB on a busy machine): print the bound it stays under.
print(f"{'under' if kib < 50 else 'OVER'} 50 KiB per conversation in flight")

# %% [markdown]
# ## Cancelling a run
#
# A user closes the tab; a deadline passes. `task.cancel()` stops a run at its current
# `await`: the model call is closed, running coroutine tools are cancelled, and the
# agent's history stays as it was before the question, as with Ctrl-C in notebook 05.
# Only coroutine tools can be cancelled: a plain function runs in a thread, which Python
# cannot stop, so its call goes on after the cancel, effects and all. This cell uses a
# mock of its own, even live, so that the run surely reaches the slow tool.

# %%
tool_started = asyncio.Event()


@miniagent.tool
async def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name
    """
    tool_started.set()
    await asyncio.sleep(60)  # slow: the user will not wait for it
    return f"{city}: sunny"


scripted = llm if llm.mode == "offline" else miniagent.connect_async(offline=True, quiet=True)
agent = AsyncAgent(scripted, [get_weather])
await agent.run("My name is Ada.")
before = list(agent.history)
task = asyncio.create_task(agent.run("What's the weather in Paris?"))
await tool_started.wait()
task.cancel()
try:
    await task
except asyncio.CancelledError:
    print("the run was cancelled while its tool ran")
print("history unchanged:", agent.history == before, "|", len(agent.history), "messages")
print(await agent.chat("What is my name?"))

# %% [markdown]
# ## The agent as a web service
#
# A web service puts each user's request on the event loop as its own task, so
# everything above applies. `miniagent/serve/` (FastAPI, run by uvicorn) has three
# routes: `POST /chat` answers with JSON when the run is over; `POST /chat/stream`
# answers with Server-Sent Events while it runs, the same framing as notebook 06; and
# `GET /` is a small page that uses the second one. The API key stays in the service:
# the browser only ever talks to it.
#
# ```mermaid
# flowchart LR
#     B["browser page<br/>fetch() + SSE parser"] -- "POST /chat/stream<br/>{message, conversation_id}" --> S["uvicorn + FastAPI<br/>one event loop"]
#     S -- "event: text / tool_use / tool_result / usage / done" --> B
#     S --> C1["conversation 1<br/>AsyncAgent + history"]
#     S --> C2["conversation 2<br/>AsyncAgent + history"]
#     C1 & C2 -- "AsyncClient, one pool<br/>(the key lives here)" --> A["Messages API"]
# ```
#
# `create_app` builds the service around any agent factory: a new agent for each run,
# given its conversation's history, which the service keeps (in its own memory by default;
# in a database when several processes serve, below). `serve_in_thread`, in the same
# module, starts it on uvicorn in a thread of this notebook, on a free port: re-running
# the cell, a second notebook or a neighbour on a shared JupyterHub never collide. (Ask
# it for a port that is taken and it fails at once, saying what to do.)

# %%
import functools

from miniagent.serve import create_app, serve_in_thread


@functools.cache
def service_client():
    """The service's one client, made by its first run: so on the service's own event loop."""
    return miniagent.connect_async(quiet=True, max_tokens=llm.max_tokens)


def new_agent():
    """The agent of each run (the service gives it the conversation's history): streamed."""
    return AsyncAgent(service_client(), tools, stream=True)


app = create_app(agent_factory=new_agent)
server, base = serve_in_thread(app)  # base: "http://127.0.0.1:" and the port it got
print("serving:", server.started, "| print(base) shows its address: open that in your browser to chat")

# %% [markdown]
# `POST /chat`, with httpx2 as any client would call it. No `conversation_id` starts a
# new conversation; send the id back to continue it.

# %%
http = httpx2.AsyncClient(base_url=base, timeout=30 if llm.mode == "offline" else 600)  # a local model is slow
reply = await http.post("/chat", json={"message": DEMO})
answer = reply.json()
print(reply.status_code, {k: v[:200] if k == "text" else v for k, v in answer.items() if k not in ("conversation_id", "tool_calls")})
for call in answer["tool_calls"]:
    print(f"  {call['name']}({json.dumps(call['input'], ensure_ascii=False)}) -> {call['result'][:40]}")

# %% [markdown]
# The same question streamed. Each event arrives as the run produces it: the
# conversation's id first, then text as it is written, each tool call as it forms and
# when complete, each tool's result, the usage of each model call, and `done`:

# %%
async def events(message, conversation_id=None):
    """The (event, data) pairs of one streamed answer, parsed with the package's SSE parser."""
    parser = miniagent.SSEParser()
    body = {"message": message, **({"conversation_id": conversation_id} if conversation_id else {})}
    async with http.stream("POST", "/chat/stream", json=body) as response:
        async for chunk in response.aiter_bytes():
            for event in parser.feed(chunk):
                yield event.event, json.loads(event.data)


seen, results = [], {}
async for name, data in events(DEMO):
    seen.append(name)
    if name == "tool_result":  # the tools run at once: they finish in any order
        results[data["id"]] = f"{data['name']} -> {data['content']}"
    elif name == "done":
        print("\n".join(f"tool_result  {results[key]}" for key in sorted(results)))
        print(f"done         {data['stop']}: {(data['text'].splitlines() or [''])[0][:120]}")
print("events:", {name: seen.count(name) for name in dict.fromkeys(seen)})

# %% [markdown]
# ## Bad requests, and what the service promises
#
# Whatever a client sends, the answer is a status and one JSON shape, `{"error": {"type",
# "message"}}`, and the service carries on. A few a broken client or a hostile one sends:

# %%
bad_requests = {
    "not JSON": dict(content=b"{oops", headers={"content-type": "application/json"}),
    "no message": dict(json={"conversation_id": None}),
    "empty message": dict(json={"message": "   "}),
    "unknown conversation": dict(json={"message": "hi", "conversation_id": "made-up"}),
    "a 1 MB body": dict(json={"message": "x" * 1_000_000}),
}
for what, request in bad_requests.items():
    reply = await http.post("/chat", **request)
    print(f"{what:21} {reply.status_code} {json.dumps(reply.json()['error'])[:90]}")
print("still answering:", (await http.post("/chat", json={"message": "Hello"})).status_code)

# %% [markdown]
# ## A client that leaves mid-answer
#
# A user closes the tab while a tool is still working. The connection closes; the
# service notices, cancels the run and its tools, and the conversation keeps the history
# it had before the question. That holds for coroutine tools, the only ones that can be
# cancelled. A plain function's thread runs on (a payment still goes through), so the
# service keeps that conversation busy (a 409 to its next question) until the call ends
# or its timeout passes, and then records what is known in the history: the call's
# result, or that it was still running when the run was stopped and its result is
# unknown. The model will not unknowingly pay twice. Give the service a weather tool that
# takes a minute, read until the call is made, then hang up (this service's agents use a
# mock of their own, even live, so that the call is surely made):

# %%
hung_up = []


@miniagent.tool
async def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name
    """
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        hung_up.append(city)
        raise
    return f"{city}: sunny"


slow_app = create_app(agent_factory=lambda: AsyncAgent(miniagent.connect_async(offline=True, quiet=True),
                                                       [get_weather], stream=True))
slow, slow_base = serve_in_thread(slow_app)

# %%
async with httpx2.AsyncClient(base_url=slow_base, timeout=30) as client:
    async with client.stream("POST", "/chat/stream", json={"message": "What's the weather in Paris?"}) as response:
        parser = miniagent.SSEParser()
        async for chunk in response.aiter_bytes():
            names = [event.event for event in parser.feed(chunk)]
            if "tool_use" in names:
                print("the tool is running; closing the connection")
                break  # leaving the `async with` closes the connection

for _ in range(500):  # the service notices within moments: the tool is cancelled, then the run ends
    if hung_up and not slow_app.state.service.running:
        break
    await asyncio.sleep(0.01)
[conversation_id] = slow_app.state.service.conversations.ids()
print("tool cancelled for:", hung_up, "| runs in progress:", slow_app.state.service.running,
      "| history kept:", slow_app.state.service.conversations.history(conversation_id))

# %% [markdown]
# ## Where one process stops
#
# Everything so far ran in one process, on one event loop, on one core. What it cost,
# from the cells above:

# %%
cpu_each = cpu / AT_ONCE
print(f"CPU: {cpu_each * 1000:.1f} ms per conversation, so one core is busy all the time when a new "
      f"conversation starts every {cpu_each * 1000:.1f} ms")
print(f"memory: {'under' if kib < 50 else 'OVER'} 50 KiB per conversation in flight, so 1 GiB holds "
      f"{'over' if kib < 50 else 'UNDER'} {1024 * 1024 // 50:,} at once")

# %% [markdown]
# A few milliseconds of CPU is a few hundred new conversations a second per core; tens
# of kilobytes is tens of thousands of conversations per gigabyte. Those are the mock's
# costs; a real model's answers are longer, so take them as floors. Long before either limit, a real deployment meets the model API's own rate
# limits (the 429s of notebook 01), and a process that crashes takes every conversation
# in its memory with it. So, in order:
# - **More cores**: several worker processes behind one address, each of them this
#   notebook's process. They share one listening socket and whichever is free takes the
#   next connection, so the next request of a conversation may reach another worker
#   than the last one did.
# - **Shared state**: so a conversation cannot live in one worker's memory.
#   `create_app(store=...)` keeps the conversations where every worker sees them: a
#   SQLite file for the workers of one machine (`"sqlite:///conversations.db"`),
#   PostgreSQL for several (`"postgresql://user@host/db"`). A run reads its
#   conversation's history when it starts and writes it when it ends, and meanwhile holds
#   a *lease* on it, an owner and an expiry taken by compare-and-set in the database: two
#   workers never run one conversation at once, and a worker that dies mid-run frees it
#   when its lease runs out. A question waiting for approval waits in the store too, so the
#   person's answer may reach any worker. Two apps on one file, as two workers would be:

# %%
import tempfile
from pathlib import Path

folder = Path(tempfile.mkdtemp())  # a fresh folder: the store makes its tables on first use
store = f"sqlite:///{folder / 'conversations.db'}"
workers = [create_app(agent_factory=lambda: AsyncAgent(llm, tools, stream=True), store=store) for _ in range(2)]
one, two = (httpx2.AsyncClient(transport=httpx2.ASGITransport(app=worker), base_url="http://127.0.0.1")
            for worker in workers)
begun = await one.post("/chat", json={"message": "Hi, my name is Ada."})
cid = begun.json()["conversation_id"]
continued = await two.post("/chat", json={"message": "What is my name?", "conversation_id": cid})
print("worker 1 began it, worker 2 continued it:", continued.status_code, continued.json()["text"][:120])
print("answered by two workers:", begun.headers["x-miniagent-worker"] != continued.headers["x-miniagent-worker"])
print("the history in the file:", [m["role"] for m in workers[0].state.service.conversations.history(cid)])
for client, worker in zip((one, two), workers):
    await client.aclose()
    worker.state.service.conversations.close()

# %% [markdown]
# Served for real, each worker is a process of its own, started by the command line with
# the store they share (uvicorn's own command line can load the same app):

# %%
print("python -m miniagent serve --workers 4 --store sqlite:///conversations.db")
print("MINIAGENT_SERVE_STORE=sqlite:///conversations.db uvicorn miniagent.serve:app --workers 4 "
      "--http miniagent.serve:GuardedH11Protocol --limit-concurrency 100")

# %% [markdown]
# - **Back-pressure**: keep the service's limits (`max_concurrent_runs`, body size,
#   conversations kept) so that overload is a quick 503 with `retry-after`, never a queue
#   that grows until memory runs out; and bound the connections themselves. uvicorn waits
#   for a request's headers for ever, so a client that sends a byte every few seconds
#   keeps its connection, and a few hundred such clients hold the service.
#   `GuardedH11Protocol` (what `python -m miniagent serve` gives uvicorn, and `--http`
#   above) closes a connection whose headers, or body, have not arrived within 10 s, and
#   refuses more than 100 connections at once, or 16 from one address.
#
# Stop the two services:

# %%
server.should_exit = slow.should_exit = True
await http.aclose()

# %% [markdown]
# ## Summary
# - `await` marks where a coroutine waits; while it waits, the event loop runs the
#   others. `asyncio.gather` runs many at once and keeps their order.
# - One blocking call inside `async def` stalls everything: hand blocking work to a
#   thread (`asyncio.to_thread`). The tool registry does it for plain-function tools.
# - The loop's rules are one generator; `run_loop` and `arun_loop` are drivers that do
#   its I/O. Cancelling a run cancels its coroutine tools (a plain tool's thread runs on)
#   and keeps the history valid.
# - A web service is the same event loop with HTTP in front: stream with SSE, bound
#   everything, answer every refusal with a JSON error, cancel on disconnect. Several
#   workers share their conversations in a database, each run under a lease.
#
# ## Exercises
#
# **Exercise 1.** Write `async def ask_all(questions, make_agent, limit)`: ask each question
# in a conversation of its own (`make_agent()` makes one agent), at most `limit` runs at
# once, and return the answers' texts in the order of the questions. (Hint:
# `asyncio.Semaphore`.) The check counts how many of its agents run at the same time.

# %% tags=["exercise"]
async def ask_all(questions, make_agent, limit):
    """Exercise 1: the answers' texts, in the order of the questions, at most `limit` runs at once."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_07_1(ask_all)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
async def reference_ask_all(questions, make_agent, limit):
    gate = asyncio.Semaphore(limit)

    async def ask(question):
        async with gate:  # at most `limit` inside at once; the others wait here
            return (await make_agent().run(question)).text

    return await asyncio.gather(*(ask(question) for question in questions))


miniagent.exercises.check_07_1(reference_ask_all)

# %% [markdown]
# **Exercise 2.** Write `make_async(fn)`: it returns an `async def` function that calls the
# blocking `fn` with the same arguments (keyword ones too) and returns its result, or
# raises its exception, without stopping the event loop meanwhile. The check runs it
# next to a coroutine that must get its turn.

# %% tags=["exercise"]
def make_async(fn):
    """Exercise 2: an async version of the blocking function fn."""
    async def run(*args, **kwargs):
        return fn(*args, **kwargs)  # this blocks the event loop: fix it
    return run


# %% tags=["check"]
miniagent.exercises.check_07_2(make_async)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_make_async(fn):
    async def run(*args, **kwargs):
        return await asyncio.to_thread(fn, *args, **kwargs)
    return run


miniagent.exercises.check_07_2(reference_make_async)

# %% [markdown]
# **Exercise 3.** The service sends JSON, which never holds a raw line break. Plain text
# can. Write `sse_frame(event, text) -> str`: one event named `event` whose data is
# `text`, any text, read back exactly by an SSE parser (the check uses the package's).
# A data line cannot hold a line break, so each line of the text (split at `\n`, `\r\n`
# or `\r`) gets its own `data:` line; a parser joins them with `\n`. An event name with a
# line break would break the framing: raise `ValueError`.

# %% tags=["exercise"]
def sse_frame(event, text):
    """Exercise 3: one Server-Sent Event carrying `text` as its data."""
    return f"event: {event}\ndata: {text}\n\n"  # right for one line of text only


# %% tags=["check"]
miniagent.exercises.check_07_3(sse_frame)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_sse_frame(event, text):
    if "\n" in event or "\r" in event:
        raise ValueError(f"an event name cannot contain a line break: {event!r}")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


miniagent.exercises.check_07_3(reference_sse_frame)

# %% [markdown]
# **Next: [08 · Other providers](08_providers.ipynb)**: the same agent on OpenAI-compatible
# APIs (DeepSeek, Qwen, Kimi, GLM, OpenAI, a local Ollama), and what changes in the wire format.
