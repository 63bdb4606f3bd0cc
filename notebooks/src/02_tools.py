# %% [markdown]
# # 02 · Tools — give the model hands
#
# A model on its own can only write text. Tools let it act: you describe functions in
# the request, the model answers "call this one, with these arguments", your code runs
# it, and you send the result back. The model never runs anything itself.
#
# **You will be able to**
# - describe a tool with JSON Schema, read the `tool_use` block the model sends back,
#   run it, and answer with a `tool_result`;
# - write descriptions the model can act on, and return errors the model can correct;
# - explain why `eval` in a calculator tool is a remote-code-execution hole, and what to do instead.
#
# **You need** notebook 01. Offline is fine.

# %%
import json
import time

import miniagent

llm = miniagent.connect()


def show(obj, limit=1500):
    """Pretty-print JSON, cut with a visible marker if long."""
    text = json.dumps(obj, indent=2, ensure_ascii=False)
    print(text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters]")


# %% [markdown]
# ## A tool, by hand
#
# A tool has three parts the model reads (a name, a description, a JSON Schema for its
# input) and one it never sees: the function you run.

# %%
weather_tool = {
    "name": "get_weather",
    "description": "Get the current weather for a city. Accepts Chinese or English city names, e.g. 北京 or Beijing.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name, e.g. 北京 or Beijing"}},
        "required": ["city"],
    },
}


def get_weather(city):
    return {"Beijing": "sunny, 25°C", "Paris": "light rain, 14°C"}.get(city, f"no data for {city}")

# %% [markdown]
# Send the tool list with the question. The model does not answer; it asks for the tool.

# %%
messages = [{"role": "user", "content": "What's the weather in Paris?"}]
response = llm.create(messages, tools=[weather_tool])
show(response["content"])
print("stop_reason:", response["stop_reason"])

# %% [markdown]
# `stop_reason` is `tool_use`: the model stopped because it wants a tool run. The
# `tool_use` block carries an `id`, the tool's `name`, and an `input` that follows the
# schema (`caller` says the model made the call itself; it matters only for calls made by
# code the API runs). Run it, and put the output in a `tool_result` block with the same id.

# %%
if not miniagent.tool_uses(response):  # a real model may answer in words instead
    print(f"the model {miniagent.what_it_did(response)}; this cell goes on from the mock's scripted call")
    response = miniagent.connect(offline=True, quiet=True).create(messages, tools=[weather_tool])
tool_use = miniagent.tool_uses(response)[0]
output = get_weather(**tool_use["input"])
tool_result = {"type": "tool_result", "tool_use_id": tool_use["id"], "content": output}
show(tool_result)

# %% [markdown]
# The conversation now has three turns: the question, the model's request (the
# assistant turn, sent back exactly as it came), and the result (a user turn).
# Send all of it, with the tools again:

# %%
messages.append({"role": "assistant", "content": response["content"]})
messages.append({"role": "user", "content": [tool_result]})
final = llm.create(messages, tools=[weather_tool])
print(final["stop_reason"], "->", miniagent.text_of(final))

# %% [markdown]
# The whole exchange, drawn. The `id` is what ties the result to the call:
#
# ```mermaid
# sequenceDiagram
#     participant C as your code
#     participant M as model (Messages API)
#     C->>M: messages = [user: "weather in Paris?"]<br/>tools = [get_weather: description + input_schema]
#     M-->>C: stop_reason = tool_use<br/>content = [tool_use: id toolu_…, name get_weather, input {city: Paris}]
#     Note over C: run get_weather(city="Paris")
#     C->>M: messages = [user, assistant (the tool_use, as it came),<br/>user: tool_result for toolu_… = "light rain, 14°C"]
#     M-->>C: stop_reason = end_turn<br/>content = [text: "Paris: light rain, 14°C"]
# ```
#
# ## Break it on purpose
#
# The API checks that every `tool_use` is answered by a `tool_result` in the very next
# message, and that every `tool_result` answers a `tool_use` in the message before. A
# history that loses one half of a pair is rejected. Drop the assistant turn:

# %% tags=["raises-exception"]
orphan = [messages[0], messages[2]]  # the question, then a result for a call nobody made
reply = llm.create(orphan, tools=[weather_tool])
print("this server accepted it, though the Messages API refuses it; the model", miniagent.what_it_did(reply))

# %% [markdown]
# The strict mock answers with the real API's 400 and its message. You will meet
# this error again in notebook 04, when trimming a long history cuts a pair in two.
# The other half of the rule: ask a new question without answering the call.

# %%
try:
    reply = llm.create(messages[:2] + [{"role": "user", "content": "Never mind. Hello!"}], tools=[weather_tool])
except miniagent.BadRequestError as err:
    print(err.message)
else:
    print("this server accepted it, though the Messages API refuses it; the model", miniagent.what_it_did(reply))

# %% [markdown]
# ## The description is the interface
#
# The model picks a tool by reading its name and description, nothing else. Here is
# the same function under a name and description that say nothing:

# %%
vague_tool = {**weather_tool, "name": "tool_1", "description": "Does things."}
for tool in (vague_tool, weather_tool):
    r = llm.create([{"role": "user", "content": "Is it raining in Paris?"}], tools=[tool])
    print(f"{tool['name']:12} -> {r['stop_reason']:9} {[b.get('name') for b in miniagent.tool_uses(r)]}")
if not miniagent.tool_uses(r):  # a small real model often ignores even a good description
    print("even with get_weather the model", miniagent.what_it_did(r))

# %% [markdown]
# With `tool_1` the model answers without calling anything: it had no way to know
# the tool was about weather. When an agent "doesn't use its tools", read the
# descriptions before you read the code.
#
# ## Errors are results
#
# Tools fail: a city that doesn't exist, an argument of the wrong type, a bug, a
# network call that hangs. If the exception escapes, the agent dies on the first
# failure. If instead the error text goes back to the model as a `tool_result` with
# `is_error: true`, the model can read it and try again.

# %%
from miniagent.builtin_tools import get_weather as real_weather

try:
    real_weather("Peking")
except ValueError as err:
    error_text = f"Error: {err}"
print(error_text)

# %% [markdown]
# `miniagent.ToolRegistry` does this for every tool it runs: an unknown tool name, bad
# arguments, an exception, a timeout — each becomes an error result. Watch the model
# correct itself: it asks for "Peking", reads the list of known cities in the error,
# and asks again for "Beijing".

# %%
tools = miniagent.default_tools()
messages = [{"role": "user", "content": "What's the weather in Peking?"}]
for _ in range(3):
    response = llm.create(messages, tools=tools.schemas())
    messages.append({"role": "assistant", "content": response["content"]})
    if response["stop_reason"] != "tool_use":
        break
    results = [tools.run(block) for block in miniagent.tool_uses(response)]
    for block, result in zip(miniagent.tool_uses(response), results):
        print(f"{block['name']}({block['input']}) -> error={result.get('is_error', False)}: {result['content'][:70]}")
    messages.append({"role": "user", "content": results})
if len(messages) == 2:  # the question and an answer: no tool was called, so there was no error to correct
    print("the model called no tool, so there was no error to correct; it answered:")
print(miniagent.text_of(response))

# %% [markdown]
# ## `@tool`: the schema from the function
#
# Writing JSON Schema by hand drifts out of date. `@tool` builds it from the type
# hints and the docstring, so the function is the single source of truth.

# %%
from typing import Literal

from miniagent import tool


@tool
def convert_temperature(value: float, unit: Literal["C", "F"] = "C") -> str:
    """Convert a temperature between Celsius and Fahrenheit.

    Args:
        value: the temperature to convert
        unit: the unit of `value`: "C" converts to Fahrenheit, "F" to Celsius
    """
    return f"{value * 9 / 5 + 32:.1f} °F" if unit == "C" else f"{(value - 32) * 5 / 9:.1f} °C"


show(convert_temperature.schema())

# %% [markdown]
# The registry checks the model's arguments against that schema *before* the function
# runs, and says exactly what is wrong, so the model's next attempt can fix it:

# %%
registry = miniagent.ToolRegistry([convert_temperature])
for args in ({"value": 30}, {"value": "hot"}, {"value": 30, "unit": "kelvin"}, {"temp": 30}):
    result = registry.run({"type": "tool_use", "id": "toolu_demo", "name": "convert_temperature", "input": args})
    print(f"{json.dumps(args):28} -> {result['content']}")

# %% [markdown]
# Two more ways a tool can hurt the loop: it hangs, or it returns a novel. The registry
# gives each call a timeout, and cuts long output in the middle with a visible marker
# (head and tail kept), so one tool cannot stall the agent or flood its context.

# %%
import threading

release = threading.Event()


@tool(timeout=0.2)
def fetch_page(url: str) -> str:
    """Download a web page and return its text.

    Args:
        url: the address of the page
    """
    if "slow" in url:
        release.wait()  # stands in for a server that never answers
    return "<html>" + "lorem ipsum " * 5_000 + "</html>"


pages = miniagent.ToolRegistry([fetch_page], max_output_chars=300)
for url in ("https://slow.example", "https://big.example"):
    result = pages.run({"type": "tool_use", "id": "toolu_demo", "name": "fetch_page", "input": {"url": url}})
    print(f"{url}: {len(result['content'])} chars, error={result.get('is_error', False)}\n{result['content']}\n")
release.set()

# %% [markdown]
# ## A calculator must not use `eval`
#
# The article's demo has a `calculate` tool, and warns against the obvious
# implementation. Here is why: the model's arguments are text that anyone who can
# talk to your agent can influence (a web page it reads, a document it summarises).
# `eval` runs that text as Python.

# %%
payload = "__import__('os').getcwd()"  # could as well be os.system('rm -rf ~')
print("eval ran code, and returned:", type(eval(payload)).__name__)

# %% [markdown]
# `miniagent.builtin_tools.safe_eval` parses the expression into a syntax tree and
# walks it, allowing only numbers, `+ - * / // % **` and parentheses. Anything else
# is refused before anything runs. Powers are checked before they are computed, so
# `9**9**9` (a number with 370 million digits) is refused at once instead of freezing
# the machine.

# %%
from miniagent.builtin_tools import CalculatorError, safe_eval

slowest = 0.0
for expression in ["(1024 + 768) * 2", "2 ** 0.5", payload, "().__class__", "9**9**9", "1/0"]:
    started = time.perf_counter()
    try:
        outcome = safe_eval(expression)
    except CalculatorError as err:
        outcome = f"refused: {err}"
    slowest = max(slowest, time.perf_counter() - started)
    print(f"{expression:28} -> {outcome}")
print(f"slowest answer: {slowest * 1000:.2f} ms")

# %% [markdown]
# ## Now from the package
#
# `miniagent/tools.py` holds `Tool`, `@tool`, the argument validator and the
# registry; `miniagent/builtin_tools.py` the weather, clock and safe calculator that
# the following notebooks use. The registry's answer for our first call is the one we
# built by hand:

# %%
import inspect

import miniagent.builtin_tools
import miniagent.tools

for module in (miniagent.tools, miniagent.builtin_tools):
    print(f"{module.__name__.replace('.', '/')}.py: about {round(len(inspect.getsource(module).splitlines()), -2)} lines")
print(miniagent.default_tools())
print(tools.run(tool_use) == {**tool_result, "content": real_weather("Paris")})

# %% [markdown]
# ## Summary
# - A tool is a name, a description and a JSON Schema for the model, and a function for you.
#   The model asks with a `tool_use` block; you answer with a `tool_result` carrying the same id.
# - The description decides whether the model uses the tool at all.
# - Failures go back to the model as error results, never as exceptions; arguments are
#   checked first; slow and huge outputs are bounded. Never `eval` model output.
#
# ## Exercises
#
# Each exercise has a cell for your answer, a check cell that says where you stand, and
# then the reference solution: try first.
#
# **Exercise 1.** The tool below has a name and a description that say nothing. Rename it
# and describe it so that the model picks it for "What time is it in Tokyo?" from among
# the weather and calculator tools, and does *not* pick it for a question it cannot
# answer. The check asks `llm` both.

# %% tags=["exercise"]
@tool
def tool_a(city: str) -> str:
    """Your description here.

    Args:
        city: ...
    """
    return "12:00"


time_tool = tool_a  # exercise 1: if you rename the function, use its new name here too

# %% tags=["check"]
miniagent.exercises.check_02_1(time_tool, llm)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
@tool(name="get_local_time")
def reference_clock(city: str) -> str:
    """Get the current local time in a city.

    Args:
        city: the city, e.g. Tokyo or 东京
    """
    return "12:00"


miniagent.exercises.check_02_1(reference_clock, llm)

# %% [markdown]
# **Exercise 2.** Write `run_safely(fn, tool_use)`, the heart of the registry: call `fn`
# with the block's `input` as keyword arguments, and return the `tool_result` block that
# answers it, with the output as text in its `content`. If `fn` raises, return instead a
# result with `is_error: True` whose content gives the exception's message, so that the
# model can read what went wrong. Nothing may escape. The check tries it on tools you
# have not seen.

# %% tags=["exercise"]
def run_safely(fn, tool_use):
    """Exercise 2: the tool_result answering tool_use: fn's output, or its error with is_error."""
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_02_2(run_safely)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_run_safely(fn, tool_use):
    try:
        output = fn(**tool_use["input"])
    except Exception as err:  # the tool boundary: the model reads the error and can try again
        return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": f"Error: {err}", "is_error": True}
    return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": str(output)}


miniagent.exercises.check_02_2(reference_run_safely)

# %% [markdown]
# **Exercise 3.** Find an expression, as a string, that `safe_eval` accepts but Python
# computes differently (or refuses). Hint: what does `^` mean in Python, and in
# `safe_eval`'s docstring?

# %% tags=["exercise"]
my_expression = None  # exercise 3: an expression, as a string, such as "1 + 1"

# %% tags=["check"]
miniagent.exercises.check_02_3(my_expression)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
reference_expression = "2 ^ 10"
print(f"safe_eval: {safe_eval(reference_expression)}, Python: {2 ^ 10} (^ is bitwise XOR in Python)")
miniagent.exercises.check_02_3(reference_expression)

# %% [markdown]
# **Next: [03 · The ReAct loop](03_react_loop.ipynb)** — let the model call tools again
# and again until it decides it is done.
