# %% [markdown]
# # 10 · Several agents — delegation, hand-offs, a plan, and a person in the loop
#
# One agent with ten tools and a long history gets slow, expensive and confused. The
# frameworks' answer is several agents: specialists with a prompt, tools and a context
# of their own, and a coordinator that asks them. Underneath it is the same loop as
# notebook 03: a specialist is just a tool whose function runs another loop.
#
# **You will be able to**
# - make an agent another agent's tool, and measure what that keeps out of the parent's context;
# - hand a conversation to another agent, and keep budgets, failures and recursion under control;
# - let the model keep a plan, and make a risky tool wait for a person's approval.
#
# **You need** notebooks 02, 03 and 05. Offline is fine.

# %%
import inspect
import json
import re
import time

import miniagent
from miniagent import Agent, tool
from miniagent.builtin_tools import default_tools
from miniagent.clientcore import input_billed
from miniagent.loop import run_loop
from miniagent.messages import tool_results, tool_uses, user
from miniagent.tokens import estimate_messages

llm = miniagent.connect()
if llm.mode == "live":
    llm.max_tokens = 300  # a small local model rambles to max_tokens: keep each live answer short
TOOLS = {t.name: t for t in default_tools()}
QUESTION = "What is the weather in Paris and Tokyo, and what is 1299 * 0.85?"

# %% [markdown]
# ```mermaid
# flowchart LR
#     U([user]) --> O[orchestrator]
#     O -- "task: weather in Paris and Tokyo" --> W[weather_expert]
#     O -- "task: 1299 * 0.85" --> M[math_expert]
#     W --> GW[[get_weather ×2]]
#     M --> C[[calculate]]
#     W -- short answer --> O
#     M -- short answer --> O
#     O --> A([answer])
# ```
#
# ## A specialist is a tool that runs a loop
#
# The weather specialist is a loop with its own system prompt and one tool. As a tool
# of another agent it takes a `task` (a sentence the parent's model writes) and returns
# only the specialist's final answer. Its history starts empty on every call: it sees
# the task, nothing of the parent's conversation.

# %%
WEATHER_SYSTEM = "You are a weather specialist. Answer briefly, one line per city."
transcripts = []  # what each specialist run did, kept here only so we can measure it below


@tool
def weather_expert(task: str) -> str:
    """A weather specialist: knows the current weather and temperature of any city.

    task: The task, self-contained: the specialist sees nothing else of this conversation.
    """
    result = run_loop(llm, [user(task)], tools=[TOOLS["get_weather"]], system=WEATHER_SYSTEM)
    transcripts.append(result.messages)
    return result.text


print(weather_expert("What is the weather in Paris and Tokyo?"))

# %% [markdown]
# The math specialist is the same with a calculator. The parent gets both as ordinary
# tools; the loop runs tools of one round in parallel, so both specialists work at once.

# %%
@tool
def math_expert(task: str) -> str:
    """A math specialist: calculates arithmetic, percentages and totals exactly.

    task: The task, self-contained: the specialist sees nothing else of this conversation.
    """
    result = run_loop(llm, [user(task)], tools=[TOOLS["calculate"]], system="You are a math specialist. Be brief.")
    transcripts.append(result.messages)
    return result.text


transcripts.clear()
parent = run_loop(llm, [user(QUESTION)], tools=[weather_expert, math_expert])
for block in parent.messages[1]["content"]:
    print(json.dumps(block, ensure_ascii=False) if block["type"] == "tool_use" else f"text: {block['text']}")
if not tool_uses(parent.messages[1]):  # live, a small model may not delegate at all
    print("(the model asked no specialist: it answered on its own)")
print("\nanswer:", parent.text)

# %% [markdown]
# The model split the question into two self-contained tasks, one per specialist, in
# one turn. Now the reason to do this at all: what ends up in each context. It shows
# best with a specialist that reads a lot to say a little, such as one that searches
# the staff handbook of notebook 09:

# %%
from pathlib import Path

from miniagent import retrieval

handbook = retrieval.build(Path(retrieval.__file__).parent / "data" / "docs" / "en")  # keyword index


@tool
def hr_expert(task: str) -> str:
    """An HR specialist: answers questions about the staff handbook (leave, sick days, expenses, payroll).

    task: The task, self-contained: the specialist sees nothing else of this conversation.
    """
    result = run_loop(llm, [user(task)], tools=[retrieval.search_tool(handbook, method="keyword")],
                      system="You answer from the staff handbook and cite it.")
    transcripts.append(result.messages)
    return result.text


transcripts.clear()
asked = run_loop(llm, [user("How many days of annual leave do I get each year?")], tools=[hr_expert])
print(asked.text)

# %%
if not transcripts:  # live, the model may answer without asking
    print(f"the model answered without asking the specialist: nothing to measure. It said {asked.text[:60]!r}")
else:
    specialist, found = transcripts[0], [m for m in transcripts[0] if tool_results(m)]
    print(f"the specialist's transcript: {len(specialist)} messages, about {estimate_messages(specialist):,} tokens "
          + (f"(the search results alone: {estimate_messages(found):,})" if found else "(it searched nothing)"))
    print(f"the parent's history:        {len(asked.messages)} messages, "
          f"about {estimate_messages(asked.messages):,} tokens")

# %% [markdown]
# The parent holds the task and the one sentence that answers it. The search results,
# most of the tokens, stayed in the specialist's transcript, which is thrown away. With
# real specialists (a researcher reading ten web pages) that difference is the whole
# point: the coordinator's context stays small however much work happens below it, and
# every later call of the coordinator is cheaper for it.
#
# ## Now from the package
#
# `miniagent.team.agent_tool` does what the cell above did, and the rules that make it
# safe to leave running: each call runs in a `fork()` of the agent (a fresh
# conversation, so two calls at once never share a history), the answer is cut to
# `max_result_chars`, a specialist's tokens are charged to the parent's run, and a
# failure comes back as an error result. `orchestrator()` builds the coordinating agent.

# %%
from miniagent import team

weather = Agent(llm, [TOOLS["get_weather"]], name="weather_expert", system=WEATHER_SYSTEM,
                description="A weather specialist: knows the current weather and temperature of any city.")
math = Agent(llm, [TOOLS["calculate"]], name="math_expert", system="You are a math specialist. Be brief.",
             description="A math specialist: calculates arithmetic, percentages and totals exactly.")
boss = team.orchestrator(llm, [weather, math])
result = boss.run(QUESTION)
print(result.text)
print("\nsame answer as the inline version:", result.text == parent.text)  # live, a model words it anew each time
print(f"miniagent/team.py: about {round(len(inspect.getsource(team).splitlines()), -2)} lines")

# %% [markdown]
# Specialists asked in the same round run at the same time, because the loop runs one
# round's tool calls in parallel (notebook 03). Give every tool a 0.2 s wait, as a real
# weather service would have, and compare the orchestrator with `parallel=False`:

# %%
def slow(t, seconds=0.2):
    """The same tool, answering after `seconds`."""
    def run(**arguments):
        time.sleep(seconds)
        return t.fn(**arguments)
    return miniagent.Tool(t.name, t.description, t.input_schema, run)


timings, called = {}, {}
for parallel in (False, True):
    specialists = [Agent(llm, [slow(TOOLS["get_weather"])], name="weather_expert", description=weather.description),
                   Agent(llm, [slow(TOOLS["calculate"])], name="math_expert", description=math.description)]
    started = time.perf_counter()
    coordinator = team.orchestrator(llm, specialists, parallel=parallel)
    coordinator.run(QUESTION)
    timings[parallel] = time.perf_counter() - started
    called[parallel] = len(coordinator.trace.of_type("tool_call"))
if min(called.values()) < 2:  # live, a small model may ask one specialist, or none
    print(f"the model asked {called[False]} and {called[True]} specialists: too few to compare one after another "
          f"with at the same time ({timings[False]:.2f} s and {timings[True]:.2f} s)")
else:
    print(f"specialists one after another: {timings[False]:.2f} s, at the same time: {timings[True]:.2f} s, "
          f"{timings[False] / timings[True]:.1f}x faster")

# %% [markdown]
# ## Budgets cover the specialists too
#
# A specialist's tokens are real tokens. `agent_tool` charges them to the run that called
# it (through `current_run()`, which the loop sets while its tools run), so the parent's
# `usage` is the whole bill, and its `token_budget` counts everything spent on its behalf:

# %%
own = sum(e["input_tokens"] + e["output_tokens"] for e in boss.trace.of_type("usage") if "source" not in e)
for e in sorted(boss.trace.of_type("usage"), key=lambda e: e.get("source", "")):  # they finish in any order
    if "source" in e:
        print(f"charged by {e['source']}: {e['input_tokens'] + e['output_tokens']:,} tokens in {e['calls']} calls")
print(f"the orchestrator's own calls: {own:,} tokens")
print(f"result.usage: {result.usage.total_tokens:,} tokens in {result.usage.calls} calls (everything)")

# %% [markdown]
# A budget smaller than the whole job stops it, and it must stop the whole job: the
# orchestrator's calls and every specialist's, however many run at once and however deep
# they delegate. Telling each specialist what the parent has left is not enough: two
# specialists asked together would each take that remainder as theirs, and so would each
# of theirs, so spending would grow with fan-out^depth. So every run of the tree draws on
# one ledger (`miniagent.team.Ledger`). Before each model call, the call reserves its worst
# case: its estimated input plus `max_tokens`. It runs if that fits in what is neither
# spent nor reserved by calls still running; if it does not fit, it runs only alone, on
# credit, while something is left. A call that fits cannot pass the budget, and the one on
# credit starts below it, so:
#
# **spent ≤ `token_budget` + the largest single model call**
#
# exactly so offline, where the mock bills by the same estimate; live, the estimate of a
# call's input can fall a little short. Here the specialists go one after another
# (`parallel=False`), so that the printout is the same on every run:

# %%
tight = team.orchestrator(llm, [weather, math], token_budget=400, parallel=False)
stopped = tight.run(QUESTION)
print(stopped.stop, "|", stopped.reason)
for e in tight.trace.of_type("tool_result"):
    why = re.search(r"stopped before answering.*?(?=[.] If)", e["content"])  # live, a specialist may answer in time
    print(f"  {e['name']}: {why.group() if why else e['content'][:90]}")
if not tight.trace.of_type("tool_result"):  # live, a small model may answer alone
    print("  (the model asked no specialist)")
made = [e for e in llm.exchanges if e.status == 200][-stopped.usage.calls:]  # this run's model calls
sizes = [input_billed(e.usage) + e.usage["output_tokens"] for e in made]
print(f"spent {stopped.usage.total_tokens:,} tokens in {len(sizes)} calls ({sizes}); the largest call: {max(sizes):,}")
print(f"over the budget by {max(0, stopped.usage.total_tokens - 400):,}; the bound allows up to {max(sizes):,} over")
print("spent <= 400 + the largest call:", stopped.usage.total_tokens <= 400 + max(sizes))

# %% [markdown]
# The run ends above its budget, at about 480 tokens of 400, and that is the rule at
# work, not a leak. A budget is checked *before* each model call, never during one: what
# a call costs is known only when it answers, so a call let in below the budget is billed
# in full. Here the orchestrator's first call (about 320) left about 80 of the 400. The
# weather specialist, capped at those 80 (what was left when the round began), could not
# reserve its worst case, so it made one call alone, on credit (about 160), which took
# the run past 400; the check before its second call found the budget spent, and it
# stopped. The math specialist was refused before any call, and the orchestrator, back
# with two error results, was refused its next call. Over by about 80, less than the
# largest call: the bound above. In parallel, which specialist gets the last call
# depends on which asks first; the bound is the same.
#
# The bound does not depend on the shape of the tree either. Three research specialists
# that may each ask all three (themselves too), under an orchestrator that asks all three:
# with the default `max_depth` of 3, that is 1 + 3 + 9 + 27 agents, asked in parallel.
# The same question without a budget, then with `token_budget=1000`:

# %%
team_llm = miniagent.connect(quiet=True, history=500)  # a client of their own: it records only these runs


def research_team(budget=None):
    experts = [Agent(team_llm, [], name=f"{n}_expert",
                     description=f"A research specialist ({n}): researches any topic and reports.")
               for n in ("alpha", "beta", "gamma")]
    for expert in experts:
        for other in experts:
            expert.tools.register(team.agent_tool(other))
    return team.orchestrator(team_llm, experts, token_budget=budget)


for budget in (None, 1_000) if llm.mode == "offline" else (1_000,):  # live, only the budgeted tree: 40 agents is slow
    team_llm.exchanges.clear()
    run = research_team(budget).run("Research the topic of solar power, please.")
    sizes = [input_billed(e.usage) + e.usage["output_tokens"]
             for e in team_llm.exchanges if e.status == 200]
    print(f"token_budget={budget}: {sum(sizes):,} tokens in {len(sizes)} calls, the largest {max(sizes):,}; "
          f"stop: {run.stop}")
print("spent <= 1000 + the largest call:", sum(sizes) <= 1_000 + max(sizes))

# %% [markdown]
# Without a budget, the tree costs what fan-out^depth says. With one, no call fitted beside
# another, so each ran alone, on credit, until the budget was spent; every agent still
# waiting to call its model got an error result instead, and the whole tree stopped less
# than one call past the budget (about 1,260 of 1,000, its largest call about 440): again
# over, and by no more than the bound allows.

# %% [markdown]
# ## When a specialist fails
#
# A specialist can fail like any agent: its API call errors, it hits its own budget. The
# parent must hear about it as a tool result it can reason about, never as an exception
# that ends the whole run. Here the math specialist talks to an API that answers 500
# every time:

# %%
broken_api = miniagent.connect(offline=True, quiet=True, max_retries=0)  # the mock, even live: broken on purpose
broken_api.mock.fault(500, times=100)
broken_math = Agent(broken_api, [TOOLS["calculate"]], name="math_expert",
                    description="A math specialist: calculates arithmetic, percentages and totals exactly.")
guarded = team.orchestrator(llm, [weather, broken_math])
survived = guarded.run(QUESTION)
print(survived.stop)
if "math_expert" not in [e["name"] for e in guarded.trace.of_type("tool_call")]:  # live, a model may not ask it
    print("(the model never asked math_expert, so its broken API was never called)")
print(survived.text)

# %% [markdown]
# The weather half of the answer arrived; the math half says what went wrong. And an
# agent that can call itself, directly or through others, is stopped by depth
# (`max_depth`, default 3), not by Python's recursion limit:

# %%
echo = Agent(llm, [], name="math_helper", description="A math specialist: calculates arithmetic exactly.")
echo.tools.register(team.agent_tool(echo))  # it may ask itself, which asks itself, ...
looped = echo.run("What is 12 * 12?")
print(looped.stop)
refused = re.search(r"was not asked: [^.]*", looped.text)
print(refused.group() if refused else f"the model asked itself {len(echo.trace.of_type('tool_call'))} times "
      f"and answered: {looped.text[:80]!r}")

# %% [markdown]
# ## Hand-off: passing the conversation on
#
# Delegation keeps the coordinator in charge. A hand-off gives the conversation away: a
# triage agent picks who should answer, and that agent continues from the same history
# with its own prompt and tools, answering the user directly. Each agent gets a
# `transfer_to_<name>` tool per other agent; calling one ends its run (the loop's
# `handoff_tools`), and `team.handoff` starts the chosen agent:

# %%
desk_llm = miniagent.connect(quiet=True)  # a client of their own, so what it sent is only this conversation
triage = Agent(desk_llm, [], name="triage", system="You route the user's question to the right desk.",
               description="Routes questions to the right desk.")
weather_desk = Agent(desk_llm, [TOOLS["get_weather"]], name="weather_desk", system=WEATHER_SYSTEM,
                     description="answers questions about the weather in any city")
math_desk = Agent(desk_llm, [TOOLS["calculate"]], name="math_desk", system="You do arithmetic.",
                  description="does arithmetic and calculations")
handed = team.handoff([triage, weather_desk, math_desk], "What is the weather in Tokyo?")
print(" -> ".join(handed.path), "|", handed.result.stop)
if len(handed.path) == 1:  # live, a small model may not transfer
    print("(the triage agent answered itself: it transferred to no desk)")
print(handed.text)

# %% [markdown]
# The second request came from another agent: same messages, different system prompt
# and tools. The client's record of what it sent shows it (no transfer to itself, so
# no ping-pong):

# %%
for exchange in [e for e in desk_llm.exchanges if e.status == 200]:
    body = exchange.request["body"]  # as sent: in Chat Completions' shape under such a preset (notebook 08)
    system = body.get("system") or next((m["content"] for m in body["messages"] if m["role"] == "system"), None)
    print(f"system: {system!r:60.60} tools: {[t.get('name') or t['function']['name'] for t in body.get('tools', [])]}")

# %% [markdown]
# ## A plan the model keeps
#
# Coding agents keep a todo list: the model writes its steps first, then checks them off.
# Here the plan is a tool, `update_plan(steps)`, and `Plan` keeps its latest version.
# The same task, with and without a plan:

# %%
from miniagent.planning import Plan

TASK = "Get the weather in Paris, Tokyo and London, and work out 1299 * 0.85."


def attempt(with_plan: bool) -> dict:
    plan = Plan()
    tools = [TOOLS["get_weather"], TOOLS["calculate"]] + ([plan.tool] if with_plan else [])
    agent = Agent(llm, tools)
    run = agent.run(TASK)
    answered = all(word in run.text for word in ("Paris", "Tokyo", "London", "1104.15"))
    row = {"with a plan": with_plan, "model calls": run.iterations, "tokens": run.usage.total_tokens,
           "answer has all four": answered, "plan complete": plan.complete if with_plan else "-"}
    return row, plan


(without, _), (planned, plan) = attempt(False), attempt(True)
print(without)
print(planned)
if not plan.updates:  # live, the model may never write a plan
    print("the model never called update_plan, so there is no plan to weigh")
else:
    print(f"the plan cost {planned['model calls'] - without['model calls']} more model calls and "
          f"{planned['tokens'] / without['tokens'] - 1:.0%} more tokens")

# %% [markdown]
# The plan as the model left it:

# %%
print(plan)

# %% [markdown]
# Offline, the plan only costs: two more model calls and the tokens measured above,
# because the mock model never forgets a step. A real model on a long task does, and
# that is what the plan is for: its latest version sits near the end of the context,
# where the model reads it before each step, and an incomplete plan tells *you* the
# task is not done whatever the last message says. Run this cell live to count
# successes on your model; make the task longer to see the difference grow.
#
# ## A person in the loop
#
# Some tools must not run on the model's word alone: deleting files, sending email,
# paying. Mark such a tool `needs_approval=True`; before it runs, the loop asks an
# `approve(call)` callback. Only `True` runs it. `False`, or a reason, goes back to the
# model as an error result, and the model carries on.

# %%
deleted = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file from the workspace.

    path: The file's path.
    """
    deleted.append(path)
    return f"deleted {path}"


def approve(call):
    print(f"  asked: {call['name']}({json.dumps(call['input'])})")
    return "not that one, it holds my notes" if call["input"].get("path") == "notes.txt" else True


careful = Agent(llm, [delete_file], approve=approve)
for question in ("Delete the file notes.txt", "Delete the file old.log"):
    answer = careful.run(question)
    print(f"{question!r}: {answer.text}")
print("deleted:", deleted)

# %% [markdown]
# `notes.txt` was never touched: the refusal is a tool result, so the model read it and
# told the user. Every answer is in the trace, so an audit can see who approved what:

# %%
for e in careful.trace.of_type("approval"):
    print({k: e[k] for k in ("name", "input", "approved", "reason")})
if not careful.trace.of_type("approval"):  # live, a small model may not call the tool
    print("the model never called delete_file, so nobody was asked")

# %% [markdown]
# With no `approve` callback at all, a tool that needs approval never runs: safe by
# default. In a notebook, `ChatView` shows **Approve** and **Deny** buttons for each such
# call (run the next cell and ask it to delete a file); in code, pass `approve=`:

# %%
from miniagent.widgets import ChatView

chat = ChatView(Agent(llm, [delete_file]))
chat

# %% [markdown]
# ## Summary
#
# - A specialist is a tool whose function runs another loop with its own prompt, tools
#   and empty history; only its short answer reaches the parent's context.
# - The package's `agent_tool` adds the rules: a fresh fork per call, tokens charged to the
#   parent, one budget for the whole tree (spent ≤ budget + the largest single call),
#   failures as error results, bounded depth; `handoff` moves the conversation on instead.
# - A plan is a tool the model keeps; approval is a callback before a risky tool, and a
#   refusal is just another tool result.
#
# ## Exercises

# %% [markdown]
# **Exercise 1.** Write `specialist_tool(client, tools, system)` that returns a `@tool`
# function `specialist(task: str) -> str` (with a docstring, so it has a description).
# Each call must run a fresh loop over `[user(task)]` with `tools` and `system`, and return
# only the final text; if the run does not finish (`result.ok` is false), raise an
# exception saying why, so the parent's model gets an error result.

# %% tags=["exercise"]
def specialist_tool(client, tools, system):
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_10_1(specialist_tool)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_specialist_tool(client, tools, system):
    @tool
    def specialist(task: str) -> str:
        """A specialist agent: give it one self-contained task.

        task: The task, self-contained.
        """
        result = run_loop(client, [user(task)], tools=tools, system=system)
        if not result.ok:
            raise RuntimeError(f"the specialist stopped early ({result.stop}): {result.reason}")
        return result.text
    return specialist


miniagent.exercises.check_10_1(reference_specialist_tool)

# %% [markdown]
# **Exercise 2.** Write an approval policy `approve_email(call)` for a `send_email` tool
# (input: `to`, `subject`, `body`). `to` may name several recipients, separated by commas
# or semicolons, each an address (`ada@example.com`) or a name and an address
# (`Ada Lovelace <ada@example.com>`). Approve only when every recipient is at
# `example.com` (exactly that domain, any case). Refuse everything else, a list with one
# outside address or text you cannot read as such a list included, with a reason that
# names the outside address. Return `True` to approve, or the reason as a string.

# %% tags=["exercise"]
def approve_email(call):
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_10_2(approve_email)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_approve_email(call):
    to = str(call["input"].get("to", ""))
    recipients = [r.strip() for r in re.split(r"[,;]", to) if r.strip()]
    outside = []
    for recipient in recipients:
        named = re.fullmatch(r"[^<>@]*<([^<>]*)>", recipient)  # "Ada Lovelace <ada@example.com>"
        address = named.group(1).strip() if named else recipient
        if not re.fullmatch(r"[^@\s<>\"]+@example\.com", address, re.IGNORECASE):
            outside.append(recipient)  # outside example.com, or not an address at all
    if recipients and not outside:
        return True
    return f"mail to {', '.join(outside) or repr(to)} is not allowed: only addresses at example.com"


miniagent.exercises.check_10_2(reference_approve_email)

# %% [markdown]
# **Exercise 3.** The plan lives in the messages. Write `open_steps(messages)`: find the
# latest `update_plan` call in the history (a `tool_use` block in an assistant message's
# content list) and return the text of its steps that are not done, in order; `[]` if
# there is no plan. The call's input is what `Plan`'s tool takes (its
# `plan.tool.input_schema`): a list of steps, each a dict with its text under `"step"` and
# a bool under `"done"`:
#
# ```json
# {"type": "tool_use", "id": "toolu_1", "name": "update_plan",
#  "input": {"steps": [{"step": "Get the weather in Paris", "done": true},
#                      {"step": "Work out 1299 * 0.85", "done": false}]}}
# ```
#
# Here `open_steps` returns `["Work out 1299 * 0.85"]`.

# %% tags=["exercise"]
def open_steps(messages):
    ...  # your code here


# %% tags=["check"]
miniagent.exercises.check_10_3(open_steps)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_open_steps(messages):
    for message in reversed(messages):
        if message["role"] != "assistant" or not isinstance(message["content"], list):
            continue
        for block in reversed(message["content"]):
            if block.get("type") == "tool_use" and block.get("name") == "update_plan":
                return [s["step"] for s in block["input"].get("steps", []) if not s.get("done")]
    return []


miniagent.exercises.check_10_3(reference_open_steps)

# %% [markdown]
# ## Next
#
# Notebook 11 records every model call, tool call and sub-agent run as a span, so that a
# run like the orchestrator's above can be read as a tree and a timeline, and sent to
# any OpenTelemetry backend.
