# %% [markdown]
# # 03 · The ReAct loop — let the model decide when it is done
#
# An agent is a model with tools, called in a loop, that decides for itself when to
# stop. Each round the model either asks for tools (we run them and send the results
# back) or answers (we stop). That loop is ReAct: *reason* about what is needed, *act*
# with a tool, repeat.
#
# **You will be able to**
# - write the loop in about twenty lines and run the article's demo question with it;
# - run a round's tool calls in parallel, and measure what that saves;
# - stop a model that never stops, and handle every `stop_reason` without spinning.
#
# **You need** notebooks 01 and 02. Offline is fine.

# %%
import json
import time
from concurrent.futures import ThreadPoolExecutor

import miniagent
from miniagent.mock import scripts

llm = miniagent.connect()
tools = miniagent.default_tools()
print(tools)

# %% [markdown]
# ## The loop, inline
#
# Call the model. If it stopped for any reason other than `tool_use`, we are done. If
# it wants tools, run every `tool_use` block of the response (at the same time: they
# do not depend on each other), and answer all of them in **one** user message, in
# the order they were asked. Repeat, but never forever.
#
# ```mermaid
# flowchart TD
#     q([question]) --> ask["call the model with the history and the tools"]
#     ask --> why{stop_reason?}
#     why -- "end_turn" --> answer([the answer])
#     why -- "tool_use" --> run["run every tool_use block, all at once"]
#     run --> results["append ONE user message:<br/>every tool_result, in call order"]
#     results --> budget{within the budgets?}
#     budget -- yes --> ask
#     budget -- no --> halt([stop, and say why])
#     why -- "max_tokens, refusal, anything else" --> halt
# ```

# %%
def react(question, tools, max_iterations=10, verbose=True):
    messages = [{"role": "user", "content": question}]
    for round_number in range(1, max_iterations + 1):
        response = llm.create(messages, tools=tools.schemas())
        messages.append({"role": "assistant", "content": response["content"]})
        calls = miniagent.tool_uses(response)
        if verbose:
            print(f"--- round {round_number}: stop_reason={response['stop_reason']}")
        if response["stop_reason"] != "tool_use":
            return miniagent.text_of(response), messages
        with ThreadPoolExecutor() as pool:
            results = list(pool.map(tools.run, calls))  # map keeps the call order
        for call, result in zip(calls, results):
            if verbose:
                print(f"    {call['name']}({json.dumps(call['input'], ensure_ascii=False)}) -> {result['content']}")
        messages.append({"role": "user", "content": results})
    return f"stopped after {max_iterations} rounds", messages

# %% [markdown]
# The article's demo question asks for four things at once: the time, a sum, and the
# weather in two cities.

# %%
question = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
answer, messages = react(question, tools)
print("\nfinal answer:", answer)

# %% [markdown]
# Two model calls. In round 1 the model asked for all four tools in one response; the
# loop ran them and sent four `tool_result` blocks back in one message; in round 2 the
# model had everything and answered. Here is round 1's request as the model sent it:

# %%
print(json.dumps(messages[1]["content"], indent=1, ensure_ascii=False))

# %% [markdown]
# ## Parallel tool calls, measured
#
# Real tools wait on networks and disks. Give each of the four tools 0.3 s of latency
# and run round 1's calls one after another (as the article's loop does), then all at
# once.

# %%
from miniagent.tools import Tool, ToolRegistry


spans = []  # (mode, tool name, start, end), to draw below


def with_latency(tool, seconds=0.3):
    def slow(**arguments):
        began = time.perf_counter()
        time.sleep(seconds)
        spans.append((mode, tool.name, began, time.perf_counter()))
        return tool.fn(**arguments)
    return Tool(tool.name, tool.description, tool.input_schema, slow)


slow_tools = ToolRegistry([with_latency(t) for t in tools])
calls = miniagent.tool_uses(messages[1])
if not calls:  # a real model may answer round 1 in words: time the mock's scripted calls instead
    print(f"in round 1 the model {miniagent.what_it_did(messages[1])}; timing the mock's calls instead")
    calls = miniagent.tool_uses(miniagent.connect(offline=True, quiet=True).create(messages[:1], tools=tools.schemas()))

timings = {}
for mode in ("serial", "parallel"):
    started = time.perf_counter()
    slow_tools.run_all(calls, parallel=mode == "parallel")
    timings[mode] = time.perf_counter() - started
ran = sum(1 for span in spans if span[0] == "parallel")  # calls whose arguments passed the schema check
if ran < 2:
    print(f"{ran} of the {len(calls)} calls ran, so there is no parallel speed-up to measure")
else:
    print(f"{ran} calls: serial {timings['serial']:.2f} s, parallel {timings['parallel']:.2f} s: "
          f"{timings['serial'] / timings['parallel']:.1f}x faster")
    print("parallel takes about as long as the slowest call:", timings["parallel"] < 0.45)

# %% [markdown]
# Drawn on one time axis, each bar one tool call:

# %%
import matplotlib.pyplot as plt
%matplotlib inline

fig, ax = plt.subplots(figsize=(8, 2.8))
labels = []
for row, (mode, name, began, ended) in enumerate(sorted(spans, key=lambda s: (s[0] == "parallel", s[2]))):
    zero = min(b for m, _, b, _ in spans if m == mode)  # each mode's clock starts at its first call
    ax.barh(row, ended - began, left=began - zero, color="tab:red" if mode == "serial" else "tab:green")
    labels.append(f"{mode}: {name}")
ax.set_yticks(range(len(labels)), labels)
ax.invert_yaxis()
ax.set_xlabel("seconds since the round's first call")
ax.set_title("The same four calls, one after another and all at once")
plt.show()

# %% [markdown]
# The serial loop pays the sum of the latencies; the parallel one pays the slowest.
# With four calls that is close to 4x (`make bench` measures it on your machine).
#
# ## A model that never stops
#
# A vague tool description or a tool that keeps failing can make a model call tools
# forever, and each call costs more than the last, because the history grows. The
# mock can play such a model on cue, so this section uses a mock of its own even when
# you are live.

# %%
mock_llm = miniagent.connect(offline=True)
mock_llm.mock.script(scripts.runaway_varied("calculate", lambda n: {"expression": f"{n} * 2"}), repeat=True)
result = miniagent.run_loop(mock_llm, [{"role": "user", "content": "算一下"}], tools=tools, max_iterations=6)
print(result.stop, "-", result.reason)
print("tokens used:", result.usage.input_tokens, "in,", result.usage.output_tokens, "out")

# %% [markdown]
# `run_loop` is the package's version of `react` (next section). The iteration cap
# stopped it; without it, this loop would run until your budget ran out. A cap on
# iterations bounds the *number* of calls but not their *size*, so add a cumulative
# token budget as a second guard:

# %%
result = miniagent.run_loop(mock_llm, [{"role": "user", "content": "算一下"}], tools=tools,
                            max_iterations=50, token_budget=3_000)
print(result.stop, "-", result.reason, f"({result.iterations} calls)")

# %% [markdown]
# A model that repeats *the same* call with the same arguments is not making progress.
# Rather than burn the budget, the loop notices the third identical call and stops,
# saying why:

# %%
mock_llm.mock.reset()
mock_llm.mock.script(scripts.runaway("get_weather", {"city": "北京"}), repeat=True)
result = miniagent.run_loop(mock_llm, [{"role": "user", "content": "天气如何？"}], tools=tools)
print(result.stop, "-", result.reason, f"({result.iterations} calls)")
print("the unexecuted call was answered:", result.messages[-1]["content"][0]["content"])

# %% [markdown]
# ## Every `stop_reason` needs a branch
#
# The article's loop has two branches: `end_turn` returns, `tool_use` runs tools.
# Anything else falls through both, appends nothing, and sends the identical request
# again. `max_tokens` is the common case: the answer did not fit. Here is the article's
# loop, faithfully, against a model whose tool call is cut off by `max_tokens` (the
# section's mock again, even live: a real model is not cut off on cue):

# %%
def article_loop(messages, max_iterations=10):
    for _ in range(max_iterations):
        response = mock_llm.create(messages, tools=tools.schemas())
        if response["stop_reason"] == "end_turn":
            return miniagent.text_of(response)
        if response["stop_reason"] == "tool_use":
            messages.append({"role": "assistant", "content": response["content"]})
            results = [tools.run(call) for call in miniagent.tool_uses(response)]
            messages.append({"role": "user", "content": results})
    return "max iterations reached"


mock_llm.mock.reset()
mock_llm.mock.script(scripts.truncated_tool_call("calculate", {}), repeat=True)
tokens_before = mock_llm.usage.total_tokens
print(article_loop([{"role": "user", "content": "算一下 (1024 + 768) * 2"}]))
print("identical requests sent:", len(mock_llm.mock.requests),
      "| tokens paid:", mock_llm.usage.total_tokens - tokens_before)

# %% [markdown]
# Ten identical, paid requests, and nothing learnt from any of them. Worse, if the loop
# had run that cut-off call, it would have executed a tool with half its arguments.
# The package's loop handles every stop reason: `end_turn` and `stop_sequence` finish,
# `pause_turn` continues, and `max_tokens`, `refusal` or anything unknown stop with a
# reason. A truncated tool call is never run; it is answered with an error so the
# history stays valid:

# %%
mock_llm.mock.reset()
mock_llm.mock.script(scripts.truncated_tool_call("calculate", {}))
result = miniagent.run_loop(mock_llm, [{"role": "user", "content": "算一下 (1024 + 768) * 2"}], tools=tools)
print(result.stop, "-", result.reason, f"({result.iterations} call)")
print(json.dumps(result.messages[-1], ensure_ascii=False))

# %% [markdown]
# ## Now from the package
#
# `miniagent/loop.py` is `react` plus the guards: the budgets above, events for
# tracing, a context policy hook (notebook 04), and a history left exactly as it was
# when an API call fails. It returns a `LoopResult`: why it stopped, the final text,
# the full messages, the number of calls and the usage. Does it agree with our inline
# loop? Freeze the clock so the two runs can be compared, and run both:

# %%
import inspect
from datetime import datetime, timezone

import miniagent.builtin_tools
import miniagent.loop

print(f"miniagent/loop.py: about {round(len(inspect.getsource(miniagent.loop).splitlines()), -2)} lines")
miniagent.builtin_tools.now = lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)
inline_answer, inline_messages = react(question, tools, verbose=False)
result = miniagent.run_loop(llm, [{"role": "user", "content": question}], tools=tools)
print("same answer:", result.text == inline_answer, "| same calls:", result.iterations == len(inline_messages) // 2)
if llm.mode == "live" and result.text != inline_answer:  # only the mock answers the same question the same way
    print("(live, the model samples each answer, so two runs of one question rarely agree word for word)")
print(result.stop, "-", result.reason)
print(result.text)

# %% [markdown]
# ## Summary
# - The loop: call; if `stop_reason` is `tool_use`, run all the calls (in parallel) and
#   answer them in one message in order; otherwise stop. Parallel calls cost the slowest
#   call, not the sum.
# - Budgets stop runaway models: an iteration cap, a token budget, a repeated-call check.
# - Every `stop_reason` gets a branch. A truncated tool call is never executed.
#
# ## Exercises
#
# Each exercise has a cell for your answer, a check cell that says where you stand, and
# then the reference solution: try first. In exercises 1 and 3 you write a variant of
# `react` that takes the client as its first argument (write `client` where `react` says
# `llm`), so that the check can hand it a model that misbehaves on cue.
#
# **Exercise 1.** Write `budget_react(client, question, tools, token_budget, max_iterations=10)`:
# `react`, but it stops once `client.usage.total_tokens` has grown by more than
# `token_budget` during this run, and returns `(answer, messages)` as `react` does.

# %% tags=["exercise"]
def budget_react(client, question, tools, token_budget, max_iterations=10):
    """Exercise 1: react on `client`, stopping once this run has used more than token_budget tokens."""
    ...  # your code here: start from a copy of react


# %% tags=["check"]
miniagent.exercises.check_03_1(budget_react)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_budget_react(client, question, tools, token_budget, max_iterations=10):
    messages = [{"role": "user", "content": question}]
    start = client.usage.total_tokens  # the client may have worked before: count this run only
    for _ in range(max_iterations):
        response = client.create(messages, tools=tools.schemas())
        messages.append({"role": "assistant", "content": response["content"]})
        if response["stop_reason"] != "tool_use":
            return miniagent.text_of(response), messages
        if client.usage.total_tokens - start > token_budget:
            return f"stopped: this run used more than {token_budget:,} tokens", messages
        with ThreadPoolExecutor() as pool:
            results = list(pool.map(tools.run, miniagent.tool_uses(response)))
        messages.append({"role": "user", "content": results})
    return f"stopped after {max_iterations} rounds", messages


miniagent.exercises.check_03_1(reference_budget_react)

# %% [markdown]
# **Exercise 2.** Run the demo question through `run_loop` on `llm` with
# `tool_choice={"type": "auto", "disable_parallel_tool_use": True}`, and keep the
# `LoopResult` in `one_at_a_time`. How many model calls does it take now, against the
# parallel run above, and why?

# %% tags=["exercise"]
one_at_a_time = None  # exercise 2: the LoopResult of run_loop with parallel tool use disabled

# %% tags=["check"]
miniagent.exercises.check_03_2(one_at_a_time, llm)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
reference_result = miniagent.run_loop(llm, [{"role": "user", "content": question}], tools=tools,
                                      tool_choice={"type": "auto", "disable_parallel_tool_use": True})
print(reference_result.iterations, "model calls; tool calls per round:",
      [len(miniagent.tool_uses(m)) for m in reference_result.messages if m["role"] == "assistant"])
miniagent.exercises.check_03_2(reference_result, llm)

# %% [markdown]
# **Exercise 3.** Write `careful_react(client, question, tools, max_iterations=10)`:
# `react`, but on `max_tokens` it stops at once with an answer that says so (include the
# words "max_tokens"), and it never runs a cut-off tool call, not even one whose
# arguments look complete.

# %% tags=["exercise"]
def careful_react(client, question, tools, max_iterations=10):
    """Exercise 3: react on `client`, stopping on max_tokens and running no cut-off call."""
    ...  # your code here: start from a copy of react


# %% tags=["check"]
miniagent.exercises.check_03_3(careful_react)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_careful_react(client, question, tools, max_iterations=10):
    messages = [{"role": "user", "content": question}]
    for _ in range(max_iterations):
        response = client.create(messages, tools=tools.schemas())
        messages.append({"role": "assistant", "content": response["content"]})
        if response["stop_reason"] == "max_tokens":  # a cut-off answer: any tool call in it is incomplete
            return "stopped: the answer was cut off by max_tokens", messages
        if response["stop_reason"] != "tool_use":
            return miniagent.text_of(response), messages
        with ThreadPoolExecutor() as pool:
            results = list(pool.map(tools.run, miniagent.tool_uses(response)))
        messages.append({"role": "user", "content": results})
    return f"stopped after {max_iterations} rounds", messages


miniagent.exercises.check_03_3(reference_careful_react)

# %% [markdown]
# **Next: [04 · Context](04_context.ipynb)** — the history grows every round; keep
# what each call sends bounded without breaking it.
