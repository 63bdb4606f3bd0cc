# %% [markdown]
# # 01 · One LLM call — an HTTP POST and a list of messages
#
# Frameworks make a model call look like a function call. Underneath it is one HTTP
# request with a JSON body, and every agent bug you will meet later shows up first as
# something wrong in that JSON. So we write it by hand.
#
# **You will be able to**
# - build and send a Messages API request with nothing but httpx2, and read the response;
# - explain why the model remembers nothing, and make it "remember" with the messages list;
# - tell the errors worth retrying (429, 529, 5xx) from those that are not (400, 401).
#
# **You need** notebook 00. Offline is fine.

# %%
import json
import time

import miniagent

llm = miniagent.connect()
if llm.format.name == "openai":  # this notebook writes the Messages API by hand; notebook 08 writes Chat Completions
    print(f"{llm.provider} speaks Chat Completions, so this notebook uses a mock of its own (the Messages API):")
    llm = miniagent.connect(offline=True, provider="anthropic")


def show(obj, limit=1200):
    """Pretty-print JSON, cut with a visible marker if long."""
    text = json.dumps(obj, indent=2, ensure_ascii=False)
    print(text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters]")


# %% [markdown]
# ## The request, by hand
#
# Three things go over the wire: a URL, three headers and a JSON body. The URL and the
# headers come from the connection, so they are right for whatever you connected to: the
# base URL plus `/v1/messages`, your key, the API version and the content type. The body
# needs `model`, `max_tokens` (the most tokens the answer may use) and `messages`.

# %%
url, headers = llm.endpoint()
body = {
    "model": llm.model,
    "max_tokens": 300,
    "messages": [{"role": "user", "content": "In one sentence: what is an LLM agent?"}],
}
print("POST", url)
show({name: "<your key>" if name in ("x-api-key", "authorization") else value for name, value in headers.items()})
show(body)

# %% [markdown]
# `llm.http` is a plain `httpx2.Client`. (Why `httpx2`: httpx has had no release since
# December 2024, and httpx2 is its maintained continuation, the same API under Pydantic's
# care, which the official SDKs, the MCP SDK and Starlette now depend on; httpx code reads
# the same with `httpx2` in the import.) Offline it is wired to the mock; live, to the
# internet. Either way the whole call is one `http.post`. A busy API sometimes answers
# 429 or 529, "try again shortly" (more on that below), so `post` tries up to three times:

# %%
http = llm.http


def post(body):
    for attempt in range(3):
        reply = http.post(url, headers=headers, json=body)
        if reply.status_code not in (429, 529):
            break
        time.sleep(float(reply.headers.get("retry-after", 1)))
    return reply


reply = post(body)
print(reply.status_code, reply.headers["content-type"], "request-id:", reply.headers.get("request-id"))
show(reply.json())

# %% [markdown]
# Read the response top to bottom:
# - `content` is a list of blocks; here one `text` block. Later we will see `tool_use` blocks.
# - `stop_reason` is why generation ended: `end_turn` means the model finished.
# - `usage` counts tokens in and out: that is what you pay for. Input that a prompt cache
#   served is counted apart, in `cache_read_input_tokens`; `miniagent.clientcore.input_billed`
#   adds up all of it.
# - the `request-id` header identifies the call if you ever need to report a problem
#   (Anthropic sends one; a local server may not, and then it reads `None`).

# %%
data = reply.json()
answer = "".join(block["text"] for block in data["content"] if block["type"] == "text")
print(answer)
print(data["stop_reason"], miniagent.clientcore.input_billed(data["usage"]), "tokens in,",
      data["usage"]["output_tokens"], "out")

# %% [markdown]
# ## The model remembers nothing
#
# Each request stands alone. Tell the model your name in one call, ask for it in the
# next, and it cannot know.

# %%
def ask(messages):
    """POST a messages list; return the reply's text."""
    r = post({"model": llm.model, "max_tokens": 300, "messages": messages})
    r.raise_for_status()
    return "".join(b["text"] for b in r.json()["content"] if b["type"] == "text")


print(ask([{"role": "user", "content": "Hi, my name is Ada."}]))
print(ask([{"role": "user", "content": "What is my name?"}]))

# %% [markdown]
# The "memory" of a chat is the list you send. Append the model's answer as an
# `assistant` message and your next question as a `user` message, and send all of it:

# %%
messages = [{"role": "user", "content": "Hi, my name is Ada."}]
messages.append({"role": "assistant", "content": ask(messages)})
messages.append({"role": "user", "content": "What is my name?"})
print(ask(messages))
show(messages)

# %% [markdown]
# Two calls, drawn. The server keeps nothing between them; the second request carries
# the whole conversation so far:
#
# ```mermaid
# sequenceDiagram
#     participant C as your code
#     participant A as Messages API
#     C->>A: POST /v1/messages<br/>messages = [user: "Hi, my name is Ada."]
#     A-->>C: 200 content = [text: "Nice to meet you, Ada! …"]
#     Note over C: append the answer (assistant)<br/>and the next question (user)
#     C->>A: POST /v1/messages<br/>messages = [user, assistant, user: "What is my name?"]
#     A-->>C: 200 content = [text: "Your name is Ada."]
#     Note over A: nothing is remembered<br/>between requests
# ```
#
# Everything later in this series (context windows, summaries, long-term memory)
# is a decision about what goes into this list. Note the cost: every call resends the
# whole list, so each turn costs more than the last.

# %%
history, sizes = [], []
for question in ["Hi, my name is Ada.", "I like tea.", "What is my name?", "What do I like?"]:
    history.append({"role": "user", "content": question})
    r = post({"model": llm.model, "max_tokens": 300, "messages": history}).json()
    history.append({"role": "assistant", "content": r["content"]})
    sizes.append(miniagent.clientcore.input_billed(r["usage"]))  # all of it, the part a prompt cache served too
print("input tokens per call:", sizes)

# %% [markdown]
# ## When the call fails
#
# The API answers a bad call with a status code and a JSON error. To show each one we
# inject faults, which only the mock can do, so this section always uses a mock of its
# own, even when you are live.

# %%
mock_llm = miniagent.connect(offline=True, provider="anthropic")  # the Messages API, whatever you connected to
(mock_url, mock_headers), mock_http = mock_llm.endpoint(), mock_llm.http
good = {"model": mock_llm.model, "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}

# %% [markdown]
# **401: no key.** The server does not even read the body.

# %%
no_key = {k: v for k, v in mock_headers.items() if k != "x-api-key"}
r = mock_http.post(mock_url, headers=no_key, json=good)
print(r.status_code)
show(r.json())

# %% [markdown]
# **400: a bad request.** Forget `max_tokens` and the API names the field. Sending the
# same request again would get the same answer, so a 400 is never retried: fix the
# request instead.

# %%
bad = {k: v for k, v in good.items() if k != "max_tokens"}
r = mock_http.post(mock_url, headers=mock_headers, json=bad)
print(r.status_code, "x-should-retry:", r.headers.get("x-should-retry"))
show(r.json())

# %% [markdown]
# **429 and 529: try again later.** A 429 means you are over your rate limit and comes
# with a `retry-after` header saying how long to wait. A 529 means the API is
# overloaded. Both are worth retrying; so are 500s and dropped connections.

# %%
mock_llm.mock.fault(429)
r = mock_http.post(mock_url, headers=mock_headers, json=good)
print(r.status_code, "retry-after:", r.headers["retry-after"])
show(r.json())
mock_llm.mock.fault(529)
r = mock_http.post(mock_url, headers=mock_headers, json=good)
print(r.status_code, r.json()["error"])

# %% [markdown]
# A retry loop, inline: retry only what can succeed later, wait what `retry-after`
# asks, otherwise back off exponentially (0.5 s, 1 s, 2 s …) with some jitter so that
# many clients do not retry in step.

# %%
import random

RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}


def post_with_retries(payload, attempts=3, sleep=time.sleep):
    for attempt in range(1, attempts + 1):
        r = mock_http.post(mock_url, headers=mock_headers, json=payload)
        if r.status_code not in RETRYABLE or attempt == attempts:
            return r, attempt
        wait = float(r.headers.get("retry-after", 0)) or 0.5 * 2 ** (attempt - 1) * random.uniform(0.75, 1)
        print(f"attempt {attempt}: {r.status_code} {r.json()['error']['type']}, retrying")
        sleep(wait)


mock_llm.mock.fault(429, times=2)
r, attempts = post_with_retries(good)
print(f"attempt {attempts}: {r.status_code}")

# %% [markdown]
# ## Now from the package
#
# `miniagent/client.py` is the same call with the care a real program needs: one
# exception class per status carrying the API's message, request id and a hint;
# retries with backoff that honour `retry-after`; usage totals; and a record of
# every attempt with the key redacted. It does the sending and reading; what to make
# of each answer (is it an error, is it worth a retry, what to record) is decided in
# `miniagent/clientcore.py`, shared with the async client of notebook 07. Read both
# next to this notebook.

# %%
import inspect

import miniagent.client
import miniagent.clientcore

for module in (miniagent.client, miniagent.clientcore):
    print(f"{module.__name__.replace('.', '/')}.py: about {round(len(inspect.getsource(module).splitlines()), -2)} lines")
response = llm.create(body["messages"], max_tokens=300)
print(miniagent.text_of(response))

# %% [markdown]
# Does the package send what we sent by hand? The client records each attempt, and
# the mock records the raw bytes it received. Compare the first request of this
# notebook (by hand) with the last one (the package):

# %%
sent = llm.last.request
print("same URL:", sent["url"] == url)
key_header = "x-api-key" if "x-api-key" in headers else "authorization"  # the preset's auth header
print("same headers:", sorted(sent["headers"]) == sorted(headers), "| key in the record:", sent["headers"][key_header])
if llm.mock:  # offline: the mock saw both requests
    by_hand, by_client = llm.mock.records[0]["raw"], llm.mock.records[-1]["raw"]
    print("same body bytes:", by_hand == by_client, f"({len(by_client.encode())} bytes)")
    print(by_client)

# %% [markdown]
# Errors are typed. A 400 raises `BadRequestError` at once; two 529s in a row are
# retried and the call succeeds on the third attempt (on `mock_llm`, which can inject
# them even when you are live).

# %%
try:
    mock_llm.create([])
except miniagent.BadRequestError as err:
    print(type(err).__name__, "->", err)

# %%
mock_llm.mock.fault(529, times=2)
response = mock_llm.create([{"role": "user", "content": "Hi"}])
for attempt in list(mock_llm.exchanges)[-3:]:
    print(attempt.attempt, attempt.status, attempt.error or "ok")
print(miniagent.text_of(response))

# %% [markdown]
# And a 429 whose `retry-after` says to wait is waited for exactly that long. The
# client takes its `sleep` function as a parameter, so we can record the waits
# instead of sleeping:

# %%
waits = []
patient = miniagent.Client(api_key="mock-key", base_url=mock_llm.base_url, transport=mock_llm.mock.transport(),
                           sleep=waits.append)
mock_llm.mock.fault(429, times=2, retry_after=0.25)
patient.create([{"role": "user", "content": "Hi"}])
print("waited:", waits, "then", patient.last.status)

# %% [markdown]
# ## Summary
# - A model call is an HTTP POST: URL, three headers, a JSON body with `model`,
#   `max_tokens` and `messages`. The answer's `content` is a list of blocks.
# - The model is stateless: the messages list is its only memory, resent in full each time.
# - Retry 429, 529, 5xx and dropped connections (honour `retry-after`); never retry 400 or 401.
#
# ## Exercises
#
# Each exercise has a cell for your answer, a check cell that says where you stand, and
# then the reference solution: try first.
#
# **Exercise 1.** Add a system prompt to a copy of `body`: a top-level `"system"` field,
# beside `"messages"`, saying "Answer in French.". Send it by hand with `post`, and keep
# what `post` returns, the `httpx2.Response`, in `french_reply`: its `.request` is what you
# sent, its `.json()` what came back.

# %% tags=["exercise"]
french_reply = None  # exercise 1: what post(...) returns for your request with a system prompt

# %% tags=["check"]
miniagent.exercises.check_01_1(french_reply)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
reference_reply = post({**body, "system": "Answer in French."})
print(json.loads(reference_reply.request.content)["system"], "->", reference_reply.status_code)
miniagent.exercises.check_01_1(reference_reply)

# %% [markdown]
# **Exercise 2.** A failed call's exception carries the API's request id, the thing to
# quote when you report a problem. Make a 429 outlast the client's retries with
# `mock_llm.mock.fault(429, times=3)`, catch `miniagent.RateLimitError` from
# `mock_llm.create(...)`, and keep `err.request_id` in `failed_request_id`.

# %% tags=["exercise"]
failed_request_id = None  # exercise 2: the request id of the 429 that outlasted the retries

# %% tags=["check"]
miniagent.exercises.check_01_2(failed_request_id, mock_llm)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
mock_llm.mock.fault(429, times=3)
try:
    mock_llm.create([{"role": "user", "content": "Hi"}])
except miniagent.RateLimitError as err:
    reference_request_id = err.request_id
print(reference_request_id)
miniagent.exercises.check_01_2(reference_request_id, mock_llm)

# %% [markdown]
# **Exercise 3.** A `retry-after` of an hour means "not now": waiting that long is worse
# than failing. Write `impatient_post`, a copy of `post_with_retries` that gives up at
# once (returning what it has, as it does after its last attempt) when `retry-after` is
# longer than 30 seconds, and still waits for a shorter one. The check queues 429s on
# `mock_llm`'s mock and passes its own `sleep`, so it sees every wait without waiting.

# %% tags=["exercise"]
def impatient_post(payload, attempts=3, sleep=time.sleep):
    """Exercise 3: post_with_retries, giving up at once when retry-after is over 30 seconds."""
    return post_with_retries(payload, attempts, sleep)  # replace with a changed copy of post_with_retries


# %% tags=["check"]
miniagent.exercises.check_01_3(impatient_post, mock_llm, good)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_impatient_post(payload, attempts=3, sleep=time.sleep):
    for attempt in range(1, attempts + 1):
        r = mock_http.post(mock_url, headers=mock_headers, json=payload)
        wait = float(r.headers.get("retry-after", 0))
        if r.status_code not in RETRYABLE or attempt == attempts or wait > 30:  # an hour's wait: give up now
            return r, attempt
        sleep(wait or 0.5 * 2 ** (attempt - 1) * random.uniform(0.75, 1))


miniagent.exercises.check_01_3(reference_impatient_post, mock_llm, good)

# %% [markdown]
# **Next: [02 · Tools](02_tools.ipynb)** — give the model something to do besides talk.
