# %% [markdown]
# # 06 · Streaming — the first words in milliseconds, the same message at the end
#
# A long answer takes seconds to generate, and a plain call shows nothing until the
# last token. Streaming sends each piece as it is written. The article's advice is to
# add it early ("流式输出（SSE）越早上越好"): once users are on the agent, adding
# streaming means changing the whole call chain. Here it slots in under the client: the
# loop and the agent still receive one message dict, plus callbacks while it forms.
#
# **You will be able to**
# - read a stream of Server-Sent Events on the wire and assemble it into the message by hand;
# - watch a tool call's arguments form, and never run a call that a broken stream cut short;
# - measure what streaming buys (the time to the first words) and what it does not (the total).
#
# **You need** notebooks 01–05. Offline is fine.

# %%
import json
import time
from collections import Counter

import miniagent
from miniagent.mock import scripts

llm = miniagent.connect()
if llm.mode == "live":
    llm.max_tokens = 300  # live, each answer is kept short: a small local model rambles to max_tokens
tools = miniagent.default_tools()
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"

# %% [markdown]
# ## The same request, streamed
#
# Add `"stream": true` to the body. The answer is still `200`, but its content type is
# `text/event-stream`, and httpx2's `stream()` lets you read the body as it arrives
# instead of waiting for all of it. The URL and headers are the connection's own
# (`llm.endpoint()`: its base URL, its path, its auth header with the key).

# %%
hand = llm  # the connection these by-hand cells talk to
if llm.format.name == "openai":
    hand = miniagent.connect(offline=True, quiet=True, provider="anthropic")
    print(f"{llm.provider} speaks Chat Completions, which takes no Messages API body: the mock answers these cells")
url, headers = hand.endpoint()
body = {"model": hand.model, "max_tokens": 300, "stream": True,
        "messages": [{"role": "user", "content": "Hello! Who are you?"}]}

for attempt in range(3):  # a busy API answers 429 or 529 before any event: wait, try again (notebook 01)
    with hand.http.stream("POST", url, headers=headers, json=body) as reply:
        raw = b"".join(reply.iter_bytes())
    if reply.status_code not in (429, 529):
        break
    time.sleep(float(reply.headers.get("retry-after", 1)))
print(reply.status_code, reply.headers["content-type"])
print(raw.decode()[:900], "...")

# %% [markdown]
# That is the whole format. Each event is an `event:` line naming its type, a `data:`
# line holding JSON whose `type` repeats the name, and a blank line. The order is
# fixed: `message_start` (the message with empty `content`), then for each content
# block a `content_block_start`, its `content_block_delta`s and a `content_block_stop`,
# then `message_delta` (the stop reason and the final usage) and `message_stop`. A
# `ping` can come at any time and means nothing. And an `error` event can come at any
# time too, `data: {"type": "error", "error": {"type": "overloaded_error", "message":
# "Overloaded"}}`: the API could not finish the answer. The status was 200 long before,
# so this event is the only sign; the stream ends there, with no `message_stop`, and
# what arrived is half an answer (below, you break a stream this way).
#
# ```mermaid
# sequenceDiagram
#     participant C as your code
#     participant A as Messages API
#     C->>A: POST /v1/messages, "stream": true
#     A-->>C: 200 text/event-stream
#     A-->>C: message_start (content = [])
#     A-->>C: content_block_start (index 0, text "")
#     loop as the model writes
#         A-->>C: content_block_delta (index 0, text_delta "…")
#     end
#     A-->>C: content_block_stop (index 0)
#     A-->>C: message_delta (stop_reason, usage)
#     A-->>C: message_stop
# ```
#
# ## Parse it by hand
#
# Split the body at blank lines; in each event, the `data:` line is the JSON.

# %%
def events_of(raw):
    events = []
    for chunk in raw.decode().split("\n\n"):
        for line in chunk.splitlines():
            if line.startswith("data:"):
                events.append(json.loads(line[len("data:"):]))
    return events


events = events_of(raw)
print(len(events), "events:", dict(Counter(e["type"] for e in events)))
if events and events[0]["type"] != "message_start":  # llama.cpp leaves it out when an answer begins in Chinese
    print(f"this server began with {events[0]['type']}, not message_start: the message's id and model never came")

# %% [markdown]
# Assembling the text is a loop over the deltas. The result is exactly the answer a
# plain call gives for the same request (the mock's, that is: a real model need not
# answer the same twice, so live the cell shows both):

# %%
text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
plain = hand.create(body["messages"], max_tokens=300)
print(text)
if hand.mode == "offline":
    print("same as the plain call:", text == miniagent.text_of(plain))
else:
    print("the plain call, asked again:", miniagent.text_of(plain)[:300])

# %% [markdown]
# This parser is good enough for one clean body read at once, and wrong for a real
# network. Bytes arrive in pieces split anywhere: in the middle of a line, between the
# `\r` and the `\n` of a line break, inside a multi-byte character (北 is three bytes).
# The format also allows `\r\n` or `\r` line endings, comment lines that start with `:`,
# and data spread over several `data:` lines. Feed the hand-made parser this stream
# cut in two at an unlucky place:

# %%
wire = "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0," \
       "\"delta\":{\"type\":\"text_delta\",\"text\":\"北京\"}}\r\n\r\n".encode()
cut = wire.index("北".encode()) + 1  # one byte into 北, whose UTF-8 form is three bytes
first_piece, second_piece = wire[:cut], wire[cut:]
for piece in (first_piece, second_piece):
    try:
        print(events_of(piece))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        print(type(err).__name__, "->", str(err)[:80])

# %% [markdown]
# The package's `SSEParser` (in `miniagent/streaming.py`) keeps what it has not yet
# understood and waits for more. Fed the same two pieces, it gives one event, whole:

# %%
parser = miniagent.SSEParser()
print(parser.feed(first_piece))
print(parser.feed(second_piece))

# %% [markdown]
# ## A tool call, forming
#
# Tool calls stream too. A `tool_use` block starts with its name and an empty
# `input`; its arguments come as `input_json_delta` fragments that are pieces of JSON
# text, valid only once the block stops. Stream the article's demo question and watch
# the calculator's arguments grow:

# %%
with llm.stream([{"role": "user", "content": DEMO}], tools=tools.schemas()) as stream:
    for event in stream:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            print(f"block {event['index']}: tool_use {event['content_block']['name']}")
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
            partial = stream.accumulator.forming[-1]["partial_json"]  # the JSON so far
            print(f"   +{event['delta']['partial_json']!r:14} -> {partial!r}")
message = stream.message
print(message["stop_reason"], [b.get("name", b["type"]) for b in message["content"]])
if not miniagent.tool_uses(message):
    print(f"the model {miniagent.what_it_did(message)}: no arguments formed")

# %% [markdown]
# Four tool calls form one after another, each in its own block, so fragments are
# joined per `index`: a client that joined them across blocks would hand the calculator
# `{"city":"北京"}`. Until a block stops, its JSON does not parse:

# %%
halfway = '{"expression":"(1024 + 768'
try:
    json.loads(halfway)
except json.JSONDecodeError as err:
    print("json.loads:", err)

# %% [markdown]
# ## Break it on purpose: a stream cut in the middle of a tool call
#
# A connection can drop halfway through a stream. Here the mock cuts it right after the
# first fragment of the calculator's arguments (a mock of its own, so this also runs
# live). What should the client do with half a tool call?

# %%
broken = miniagent.connect(offline=True, quiet=True)
broken.mock.script(scripts.cut_tool_call("calculate", {"expression": "(1024 + 768) * 2"},
                                         text="Let me work that out."))
try:
    broken.create([{"role": "user", "content": "(1024 + 768) * 2?"}], tools=tools.schemas(), stream=True)
except miniagent.StreamError as err:
    print(err)
    print("partial content:", json.dumps(err.partial["content"], ensure_ascii=False))

# %% [markdown]
# Never run it. Its arguments are a fragment, and guessing the rest is guessing what the
# model meant. The client raises `StreamError`, says how far the stream got, and does
# **not** retry on its own: the text you may already have shown would come a second
# time. Before the first byte, a failed stream is retried like any call (429, 529,
# dropped connections); after it, the decision is yours.
#
# The other way a stream fails after its 200 is the `error` event. Here the mock is
# overloaded after two pieces of text, read first by hand, then by the client:

# %%
weather_question = [{"role": "user", "content": "The weather in Beijing?"}]
broken.mock.script(scripts.overloaded_midway("Beijing is sunny today, 25 degrees, a light wind."))
url, headers = broken.endpoint()
by_hand = {**body, "model": broken.model, "messages": weather_question}
with broken.http.stream("POST", url, headers=headers, json=by_hand) as reply:
    last_event = b"".join(reply.iter_bytes()).decode().strip().split("\n\n")[-1]
print(reply.status_code, "| the last event:\n" + last_event)

broken.mock.script(scripts.overloaded_midway("Beijing is sunny today, 25 degrees, a light wind."))
try:
    broken.create(weather_question, stream=True)
except miniagent.APIError as err:
    print(type(err).__name__, "->", str(err).split(" (request")[0])
    print("partial content:", json.dumps(err.partial["content"], ensure_ascii=False))

# %% [markdown]
# The client raises what a plain call would have got as a 529 (`OverloadedError`), says
# it came mid-stream, keeps what arrived in `err.partial`, and again does not retry on
# its own. The agent below treats either failure as a failed call: the run ends, and the
# history stays as it was.
#
# ## Now from the package
#
# `miniagent/streaming.py` has the parser and the accumulator; `client.stream()` reads
# the socket and feeds them; `client.create(..., stream=True)` returns the same dict a
# plain call returns. Do the streamed and plain answers agree, for a question that calls
# four tools at once? (Live, a model need not answer the same twice: the cell says what
# each answer did.)

# %%
import inspect

import miniagent.streaming

print(f"miniagent/streaming.py: about {round(len(inspect.getsource(miniagent.streaming).splitlines()), -2)} lines")
streamed = llm.create([{"role": "user", "content": DEMO}], tools=tools.schemas(), stream=True)
plain = llm.create([{"role": "user", "content": DEMO}], tools=tools.schemas())

if llm.mode == "offline":  # the mock answers the same twice; a real model need not
    same = [b.get("input", b.get("text")) for b in streamed["content"]] == \
           [b.get("input", b.get("text")) for b in plain["content"]]
    print("same blocks:", same, "| same stop_reason:", streamed["stop_reason"] == plain["stop_reason"])
else:
    print("same fields:", sorted(streamed) == sorted(plain), "| streamed:", miniagent.what_it_did(streamed),
          "| plain:", miniagent.what_it_did(plain))

# %% [markdown]
# ## What streaming buys, measured
#
# Give the mock a model's pace: the first token after 0.2 s, then 80 tokens a second.
# (A mock of its own again: the real API sets its own pace.) Time each text delta's
# arrival, streamed, and the one arrival of the plain call:

# %%
paced = miniagent.connect(offline=True, quiet=True)
paced.mock.pace(first=0.2, rate=80)
question = [{"role": "user", "content": "What is your name, and what can you do?"}]

started, arrivals = time.perf_counter(), []
with paced.stream(question) as stream:
    for event in stream:
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
            arrivals.append((time.perf_counter() - started, len(event["delta"]["text"])))
streamed_total = time.perf_counter() - started

started = time.perf_counter()
answer = paced.create(question)
plain_total = time.perf_counter() - started

print(f"streamed: first text after {arrivals[0][0]:.2f} s, all of it after {streamed_total:.2f} s")
print(f"plain:    first text after {plain_total:.2f} s, all of it after {plain_total:.2f} s")
print(f"{len(arrivals)} text deltas; the same text: {miniagent.text_of(stream.message) == miniagent.text_of(answer)}")

# %%
import matplotlib.pyplot as plt
%matplotlib inline

shown = [0]
for _, size in arrivals:
    shown.append(shown[-1] + size)
fig, ax = plt.subplots(figsize=(8, 3.2))
ax.step([0] + [t for t, _ in arrivals], shown, where="post", label="streamed")
ax.step([0, plain_total], [0, shown[-1]], where="post", label="plain")
ax.set_xlabel("seconds after sending")
ax.set_ylabel("characters on screen")
ax.set_title("The same answer, streamed and not")
ax.legend()
plt.show()

# %% [markdown]
# Streaming cuts the wait for the first words from the whole answer's time to the first
# token's, and changes nothing about the total: the model writes at the same speed
# either way. What a user feels is the first number. (`make bench` measures both on
# your machine, and how soon the package hands a delta to your code after it arrives.)
#
# ## The streamed agent
#
# The agent takes `stream=True` and two callbacks: `on_text` for each piece of text as
# it arrives, and `on_tool_use` for each tool call as it forms and when it is complete.
# The loop underneath still sees only final messages, so budgets, context policies and
# the trace work unchanged.

# %%
pieces = []


def on_text(delta):
    pieces.append(delta)


def on_tool_use(call):
    if call["done"]:
        print(f"tool call complete: {call['name']}({json.dumps(call['input'], ensure_ascii=False)})")


agent = miniagent.Agent(llm, stream=True, on_text=on_text, on_tool_use=on_tool_use)
result = agent.run(DEMO)
written = "".join(miniagent.text_of(m) for m in agent.history if m["role"] == "assistant")
print(f"\n{len(pieces)} pieces of text arrived over {result.iterations} model calls; "
      f"joined, they are everything the model wrote:", "".join(pieces) == written)
print(result.text)

# %% [markdown]
# And a stream that breaks inside a tool call, in the agent: the run ends with
# `api_error`, nothing ran, and the agent's history is what it was before the question.

# %%
fragile = miniagent.Agent(broken, stream=True)
broken.mock.script(scripts.cut_tool_call("calculate", {"expression": "2 * 21"}))
failed = fragile.run("What is 2 * 21?")
print(failed.stop, "->", failed.reason.splitlines()[0][:110])
print("tool results in the trace:", len(fragile.trace.of_type("tool_result")), "| history:", fragile.history)

# %% [markdown]
# ## Summary
# - A streamed answer is a sequence of Server-Sent Events; added up in order (text
#   appended per block, tool JSON joined per block and parsed when the block stops),
#   they give exactly the message a plain call returns.
# - Parse bytes, not lines: a network splits anywhere, even inside a character.
# - Retry a stream only before its first byte. A tool call a broken stream cut short is
#   never run.
# - Streaming shortens the wait for the first words, not the total.
#
# ## Exercises
#
# **Exercise 1.** The hand-made `events_of` above assumes `\n` line endings and one
# `data:` line per event. Write `parse_events(raw: bytes) -> list[dict]` that returns
# each event's parsed data, in order, also for streams with `\r\n` line endings, comment
# lines (they start with `:`), `data:` lines with no space after the colon (the one space
# there is optional), and an event whose JSON is spread over several `data:` lines
# (joined with `\n`, as the format says). Every event counts, `error` too.

# %% tags=["exercise"]
def parse_events(raw):
    """Exercise 1: the parsed JSON of each event's data, in order."""
    return events_of(raw)  # start from the hand-made version and fix it


# %% tags=["check"]
miniagent.exercises.check_06_1(parse_events)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_parse_events(raw):
    events = []
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    for chunk in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


miniagent.exercises.check_06_1(reference_parse_events)

# %% [markdown]
# **Exercise 2.** Write `tool_inputs(events) -> dict` mapping the `index` of each
# `tool_use` block to its parsed input, or to `None` when its JSON never completed (a
# stream cut short, or `max_tokens`). A block whose fragments are all empty has the
# input `{}`.

# %% tags=["exercise"]
def tool_inputs(events):
    """Exercise 2: {index: input dict, or None if the block's JSON never completed}."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_06_2(tool_inputs)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_tool_inputs(events):
    fragments, inputs = {}, {}
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            fragments[event["index"]] = []
        elif event["type"] == "content_block_delta" and event["index"] in fragments:
            fragments[event["index"]].append(event["delta"].get("partial_json", ""))
        elif event["type"] == "content_block_stop" and event["index"] in fragments:
            text = "".join(fragments[event["index"]])
            try:
                inputs[event["index"]] = json.loads(text) if text else {}
            except json.JSONDecodeError:
                inputs[event["index"]] = None
    return {index: inputs.get(index) for index in fragments}


miniagent.exercises.check_06_2(reference_tool_inputs)

# %% [markdown]
# **Exercise 3.** Write `time_to_first_text(client, messages) -> float`: the seconds from
# sending the request to the first `text_delta`, using `client.stream(...)`. The check
# runs it on mocks paced at speeds you cannot see.

# %% tags=["exercise"]
def time_to_first_text(client, messages):
    """Exercise 3: seconds from sending to the first text delta."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_06_3(time_to_first_text)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_time_to_first_text(client, messages):
    started = time.perf_counter()
    with client.stream(messages) as stream:
        for event in stream:
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                return time.perf_counter() - started
    return time.perf_counter() - started  # an answer with no text: the whole wait


miniagent.exercises.check_06_3(reference_time_to_first_text)

# %% [markdown]
# **Next: [07 · Async and serving](07_async_serving.ipynb)**: the same agent behind a web
# page, streaming to many users at once from one process.
