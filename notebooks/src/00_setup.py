# %% [markdown]
# # 00 · Setup — offline by default, live by one variable
#
# Every notebook in this series runs without an API key, against a strict mock of the
# Anthropic Messages API that ships with the `miniagent` package. Set one environment
# variable and the same cells talk to the real model.
#
# **You will be able to**
# - tell at a glance whether a notebook talks to the mock or to a real model;
# - switch between the two;
# - make a first call and read what came back.
#
# **You need** nothing: no key, no network. Start JupyterLab with `make lab`.

# %%
import json

import miniagent

llm = miniagent.connect()

# %% [markdown]
# That line is the first thing every notebook prints. `connect()` read the environment
# and picked a mode:
#
# | you set | you get |
# |---|---|
# | nothing | **offline**: the bundled mock API, deterministic |
# | `ANTHROPIC_API_KEY` | **live**: the real Messages API |
# | `ANTHROPIC_BASE_URL` as well | live, at that address (the official SDK reads the same variable) |
# | `MINIAGENT_MODEL` | the model name (the default is below) |
# | `MINIAGENT_OFFLINE=1` | offline, even with a key (`make test` sets it) |
#
# The kernel reads the environment when it starts: export a key *before* `make lab`,
# or restart the kernel after changing it.

# %%
print(llm)
print("default model:", miniagent.DEFAULT_MODEL)

# %% [markdown]
# Whatever the mode, your code makes the same call; only where the request goes changes:
#
# ```mermaid
# flowchart LR
#     code["your code<br/>llm.create(messages)"] --> client["miniagent.Client<br/>(httpx2)"]
#     client -- "offline: in-process transport,<br/>no socket" --> mock["MockAPI<br/>(in this kernel)"]
#     client -- "live: HTTPS" --> api["api.anthropic.com<br/>(a real model)"]
#     client -- "live + ANTHROPIC_BASE_URL:<br/>HTTP" --> server["python -m miniagent.mock<br/>(another process)"]
#     server --- mock2["MockAPI"]
# ```
#
# The mock behind both mock paths is the same object, so an answer reads the same
# whether it arrived in-process or over a socket.

# %% [markdown]
# Offline, the base URL ends in `.invalid`, a top-level domain reserved so that it can
# never resolve: nothing leaves your machine. The requests go to the mock through an
# in-process transport instead of a socket.
#
# ## A first call
#
# A call sends a list of messages and gets one message back. Here is the smallest one.

# %%
response = llm.create([{"role": "user", "content": "Hello! Who are you?"}])
print(json.dumps(response, indent=2, ensure_ascii=False))

# %% [markdown]
# The answer is a plain dict, exactly the JSON the API sent. Its text is in
# `content`, a list of blocks; `stop_reason` says why the model stopped; `usage`
# says what the call cost in tokens. Offline, the model says so in its answer.

# %%
print(miniagent.text_of(response))
print(llm.usage)

# %% [markdown]
# ## What the mock received
#
# The mock records every request, with the key redacted, so you can always see what
# was sent: here the three headers the API cares about, and the body exactly as it
# arrived. (Live, `llm.mock` is `None`; the client keeps its own record, shown in
# notebook 01.)

# %%
if llm.mock:
    record = llm.mock.records[-1]
    print(record["method"], record["path"], "->", record["status"])
    api_headers = {k: v for k, v in record["headers"].items() if k in ("x-api-key", "anthropic-version", "content-type")}
    print(json.dumps(api_headers, indent=2))
    print(record["raw"])

# %% [markdown]
# ## The mock as a real server
#
# The same mock runs as an HTTP server: `python -m miniagent.mock --port 8765` in a
# terminal. Point `ANTHROPIC_BASE_URL` at it with any key and you run the **live**
# code path, real sockets and all, while the mock answers. Here it is in a background thread:

# %%
from miniagent.mock import serve_in_thread

server, url = serve_in_thread()
over_http = miniagent.Client(api_key="any-key", base_url=url)
print(over_http.mode, "->", miniagent.text_of(over_http.create([{"role": "user", "content": "Hello over HTTP"}])))

# %% [markdown]
# Any client that speaks the Messages API can use it, so you can take the mock into your
# own projects and test them offline. The official `anthropic` SDK, pointed at it:

# %%
import anthropic

sdk = anthropic.Anthropic(base_url=url, api_key="any-key")
reply = sdk.messages.create(model=over_http.model, max_tokens=200,  # a model the mock serves, even live
                            messages=[{"role": "user", "content": "Hello from the official SDK!"}])
print(type(reply).__name__, reply.stop_reason, "->", reply.content[0].text)
server.shutdown()

# %% [markdown]
# ## Going live
#
# ```bash
# export ANTHROPIC_API_KEY=sk-ant-...      # from console.anthropic.com
# make lab
# ```
#
# From mainland China, where the Anthropic API cannot be reached, use a domestic provider
# that speaks the same Messages API: its preset and its key, two variables, and every
# notebook runs live. DeepSeek first:
#
# ```bash
# export MINIAGENT_PROVIDER=deepseek-anthropic    # or kimi-cn-anthropic, glm-anthropic, qwen-cn-anthropic
# export DEEPSEEK_API_KEY=sk-...                  # MOONSHOT_API_KEY, ZHIPUAI_API_KEY, DASHSCOPE_API_KEY
# make lab
# ```
#
# Keys are per region: a key made on a provider's China platform is refused (401) by its
# international endpoint and the other way round. A China key takes the China preset:
# `qwen-cn…`, `kimi-cn…`, `minimax-cn…`, and `glm…` (Z.ai, `zai…`, is GLM's international
# one). README.zh-CN.md has the table; notebook 08 lists every preset.
#
# The first cell of each notebook will then print `live · model …`. Live answers
# differ from the saved outputs, which were made offline; that is expected.
# Your key never appears in any output: requests are recorded with it redacted, and
# errors never quote it.
#
# ## Summary
# - `miniagent.connect()` picks offline or live from the environment and prints which.
# - A call is a list of messages in, one message (a dict) out.
# - The mock is strict and records everything it receives.
#
# ## Exercises
#
# Every notebook ends with exercises. Each has a cell for your answer and, below it, a
# check cell that runs your answer and says where you stand: `done!`, or `not yet:` and
# what to look at. After the check comes the reference solution: try first.
#
# **Exercise 1.** `max_tokens` caps the length of the answer. Ask any question with
# `max_tokens=20` (or fewer) so that the answer is cut off, and keep what `llm.create`
# returns in `cut_response`. Read its text, its `stop_reason` and its `usage`: what
# happened to the answer, and how would a program know?

# %% tags=["exercise"]
cut_response = None  # exercise 1: what llm.create(...) returns for a question with a small max_tokens

# %% tags=["check"]
miniagent.exercises.check_00_1(cut_response, llm)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
reference_response = llm.create([{"role": "user", "content": "Hello! Who are you?"}], max_tokens=20)
print(reference_response["stop_reason"], reference_response["usage"]["output_tokens"], "tokens:",
      miniagent.text_of(reference_response))
miniagent.exercises.check_00_1(reference_response, llm)

# %% [markdown]
# **Next: [01 · One LLM call](01_llm_call.ipynb)** — the same call built by hand with
# httpx2, so nothing is hidden.
