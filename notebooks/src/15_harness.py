# %% [markdown]
# # 15 · A long-running harness — skills, plans, sessions, hooks and background work
#
# Notebook 14's agent fixes one bug in six calls. Real tasks take hundreds of calls, more
# than one context window, and more than one sitting. What keeps such an agent working is
# not the model but the harness around it: instructions it loads only when needed, state
# kept in files instead of in the context, a session that survives a restart, your own code
# around every tool call, and commands that run while the conversation goes on.
#
# **You will be able to**
# - give an agent skills that cost one line each until used, and measure the saving;
# - keep a task's plan and session on disk, resume it in a new process, and compact a long session;
# - run your code before and after each tool call and at the end of a turn, and run commands in the background.
#
# **You need** notebook 14 (the coding agent), and 04 (context policies). Offline is fine.
# Commands run in notebook 14's jail when bubblewrap is installed.

# %%
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
%matplotlib inline

import miniagent
from miniagent import Agent
from miniagent.coding import Workspace
from miniagent.context import Summarize
from miniagent.hooks import Hooks
from miniagent.mock import coding
from miniagent.mock.scripts import text, tool_call
from miniagent.planning import Plan
from miniagent.sandbox import Limits, Sandbox, bwrap
from miniagent.skills import Skills
from miniagent.tools import ToolRegistry

llm = miniagent.connect()
if llm.mode == "live":
    llm.max_tokens = 300  # a small local model rambles to max_tokens: keep each live answer short
ISOLATION = "bwrap" if bwrap() else "none"
print("commands run in:", "a bubblewrap jail" if ISOLATION == "bwrap" else "NO JAIL (no bubblewrap, or it cannot run here)")
if llm.mode == "offline":
    llm.mock.script(coding.model(), repeat=True)  # notebook 14's scripted coding model (a recipe, not a model)


def failing_repository():
    """Notebook 14's task: calc.add is wrong, and test_calc says so."""
    folder = Path(tempfile.mkdtemp(prefix="nb15-"))
    (folder / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (folder / "test_calc.py").write_text("import unittest\n\nfrom calc import add\n\n\nclass TestCalc(unittest.TestCase):\n"
                                         "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
                                         encoding="utf-8")
    return folder


def workspace(folder, seconds=20):
    return Workspace(folder, Sandbox(folder, Limits(seconds=seconds), isolation=ISOLATION))

# %% [markdown]
# ## 1. Skills: instructions loaded when they are needed
#
# A team's agent collects instructions: how we write commit messages, how we fix a failing
# test, how we report on a CSV. Putting all of them in the system prompt costs tokens on
# every call, used or not. A **skill** is a folder with a `SKILL.md`: a short front matter
# (a name, and one line saying when to use it) and the instructions. The model is told only
# the names and the lines; it reads the instructions with a tool when a task needs them.
#
# The package ships three example skills. One of them, as a file:

# %%
SKILLS = Path(miniagent.__file__).parent / "data" / "skills"
print((SKILLS / "python-tests" / "SKILL.md").read_text(encoding="utf-8")[:600], "…")

# %% [markdown]
# Reading the front matter is a few lines: the block between the two `---` lines holds
# `key: value` pairs, and the rest is the body.

# %%
def front_matter(text):
    lines = text.splitlines()
    end = lines.index("---", 1)
    fields = dict(line.split(": ", 1) for line in lines[1:end])
    return fields, "\n".join(lines[end + 1:])


fields, body = front_matter((SKILLS / "python-tests" / "SKILL.md").read_text(encoding="utf-8"))
print(fields["name"], "·", fields["description"])
print(f"the body: {len(body.splitlines())} lines, read only when the model asks for it")

# %% [markdown]
# `miniagent.skills.Skills` does that for a folder of skills (checking each name and
# description), writes the system prompt's list, and gives the model a `load_skill` tool.
# This is all the model sees up front:

# %%
skills = Skills(SKILLS)
print(skills.system_prompt())

# %% [markdown]
# What does that save? The system prompt's tokens with the list, against every skill's
# instructions in it, for these three skills and for thirty (the three copied under other
# names, as a team's collection grows):

# %%
def many_skills(n):
    folder = Path(tempfile.mkdtemp(prefix="skills-"))
    originals = list(skills.skills.values())
    for i in range(n):
        skill = originals[i % len(originals)]
        name = f"{skill.name}-{i + 1:02d}"
        (folder / name).mkdir()
        (folder / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {skill.description}\n---\n"
                                                f"{skill.body}", encoding="utf-8")
    return Skills(folder)


for collection in (skills, many_skills(30)):
    tokens = collection.tokens()
    print(f"{len(collection):2} skills: {tokens['on_demand']:6,} tokens on demand, {tokens['everything']:6,} with "
          f"everything in the prompt ({tokens['everything'] / tokens['on_demand']:.1f} times as many)")

# %% [markdown]
# (Tokens by the package's estimate, notebook 04.) The saving is paid back per call: an
# agent that makes 100 calls sends the system prompt 100 times. The cost is one call to
# `load_skill` when a skill is needed. Here the coding agent is told about the skills; the
# scripted model sees that `python-tests` covers the task and loads it first:

# %%
repo = failing_repository()
tools = ToolRegistry([*workspace(repo).tools(), skills.tool()])
agent = Agent(llm, tools, system=skills.system_prompt(), max_iterations=12)
result = agent.run("The tests fail. Make them pass.")
print(result.text)
print("skills loaded:", skills.loaded, "·", [e["name"] for e in agent.trace.of_type("tool_call")])

# %% [markdown]
# ## 2. A plan in a file
#
# A long task outlives what the model can hold in mind. Coding agents keep a **todo list**:
# the model writes its plan first and checks steps off as it goes (notebook 10's
# `update_plan`). With a path, `Plan` also writes every update to a file, whole or not at
# all (a temporary file renamed over the old one), so that you, or the next session, can
# read where the work stands:

# %%
repo = failing_repository()
plan = Plan(repo / "PLAN.md")
tools = ToolRegistry([*workspace(repo).tools(), plan.tool])
result = Agent(llm, tools, max_iterations=12).run("The tests fail. Make them pass.")
print(result.text, "\n")


def show_plan(path):
    print(path.read_text(encoding="utf-8") if path.exists() else "(no plan file: the model never called update_plan)")


show_plan(repo / "PLAN.md")

# %% [markdown]
# ## 3. A session that outlives its process
#
# A kernel restarts, a laptop sleeps, a CI job times out. `miniagent.session.Session` saves
# the conversation, the plan and what it cost to one JSON file after every turn (again
# written whole, then renamed), and `Session.open` loads it back into a fresh agent.
#
# To show that nothing lives only in memory, the harness is a script of its own, run as a
# new Python process for each turn. Each turn gets at most 3 model calls, so the first one
# stops mid-task:

# %%
TURN = '''
import sys
import miniagent
from miniagent import Agent
from miniagent.coding import Workspace
from miniagent.mock import coding
from miniagent.planning import Plan
from miniagent.sandbox import Limits, Sandbox
from miniagent.session import Session
from miniagent.tools import ToolRegistry

folder, isolation, question = sys.argv[1], sys.argv[2], sys.argv[3]
llm = miniagent.connect(quiet=True)
if llm.mode == "offline":
    llm.mock.script(coding.model(), repeat=True)
plan = Plan(f"{folder}/PLAN.md")
tools = ToolRegistry([*Workspace(folder, Sandbox(folder, Limits(seconds=20), isolation=isolation)).tools(), plan.tool])
session = Session.open(f"{folder}/session.json", Agent(llm, tools, max_iterations=3), plan)
result = session.ask(question)
print(f"turn {session.turns}: stopped by {result.stop}; plan {plan.done} of {len(plan.steps)} done;",
      f"{len(session.agent.history)} messages saved")
'''
harness = Path(tempfile.mkdtemp(prefix="harness-")) / "turn.py"
harness.write_text(TURN, encoding="utf-8")


def turn(folder, question):
    done = subprocess.run([sys.executable, str(harness), str(folder), ISOLATION, question],
                          capture_output=True, text=True, timeout=120)
    print(done.stdout.strip() or done.stderr.strip()[-600:])


repo = failing_repository()
turn(repo, "The tests fail. Make them pass.")

# %% [markdown]
# That process is gone. What it left is two files; the session holds the whole
# conversation, and what it cost:

# %%
saved = json.loads((repo / "session.json").read_text(encoding="utf-8"))
print({key: saved[key] for key in ("version", "turns", "tokens")})
for message in saved["history"]:
    blocks = message["content"] if isinstance(message["content"], list) else [{"type": "text"}]
    print(f"  {message['role']:9}", ", ".join(b.get("name", b["type"]) for b in blocks))

# %% [markdown]
# The next process opens the same session and is told only "Go on.", and so is the one after
# it. Everything they know about the task comes from the file:

# %%
turn(repo, "Go on.")
turn(repo, "Go on.")
show_plan(repo / "PLAN.md")
print((repo / "calc.py").read_text(encoding="utf-8").splitlines()[1])

# %% [markdown]
# ## 4. Compaction: a session longer than the window
#
# Saving a session keeps it; it does not make it fit. A long session re-sends every tool
# result it ever saw (notebook 14's figure, over hundreds of calls). Two ways out:
# - **on the client**, notebook 04's `Summarize` policy: older turns become one summary the
#   model writes (a model call each time), recent turns stay verbatim;
# - **on the server**, the API's context editing (beta `context-management-2025-06-27`):
#   the request says when to clear old tool results, and the server replaces them with a
#   placeholder before the model reads it. The client still sends its whole history.
#
# The mock serves the second as well, so the same session can be measured three ways. The
# session: a model that reads twelve long log files, one call each, then answers. This cell
# uses mock clients of its own even live (the reading is scripted).

# %%
logs = Path(tempfile.mkdtemp(prefix="logs-"))
for i in range(1, 13):
    lines = [f"2026-05-0{1 + i % 9} 06:{m:02d} worker-{i} step {m} ok, queue depth {m * i % 17}" for m in range(60)]
    (logs / f"app-{i:02d}.log").write_text("\n".join(lines) + "\n", encoding="utf-8")


def reader(body):
    """Read the logs one by one, then answer (a script, not a model)."""
    read = sum(1 for m in body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result")
    if read < 12:
        return tool_call("str_replace_based_edit_tool", {"command": "view", "path": f"app-{read + 1:02d}.log"})
    return text("Read 12 logs: every step ok, no errors.")

# %% [markdown]
# The three configurations, each measured by the input tokens of every call it made
# (server-side, `usage` reports what was left after clearing):

# %%
EDITS = {"edits": [{"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 6000},
                    "keep": {"type": "tool_uses", "value": 3}}]}


def session_tokens(policy=None, server_side=False):
    client = miniagent.connect(offline=True, quiet=True)
    client.mock.script(reader, repeat=True)
    options = {}
    if server_side:
        client.betas = ["context-management-2025-06-27"]
        options = {"context_management": EDITS}
    agent = Agent(client, Workspace(logs).tools(shell=False), policy=policy, max_iterations=20, create=options)
    result = agent.run("Read every log file and tell me if anything failed.")
    return result, [e["usage"]["input_tokens"] for e in agent.trace.of_type("response")], agent


plain, plain_sizes, _ = session_tokens()
summarizer = Summarize(miniagent.connect(offline=True, quiet=True), trigger_tokens=6000, keep_recent_tokens=2500)
summarised, summary_sizes, _ = session_tokens(policy=summarizer)
cleared, cleared_sizes, cleared_agent = session_tokens(server_side=True)
for name, sizes, extra in [("everything re-sent", plain_sizes, 0),
                           ("client-side summary", summary_sizes, summarizer.summary_tokens),
                           ("server-side clearing", cleared_sizes, 0)]:
    print(f"{name:21} {len(sizes)} calls, {sum(sizes):7,} input tokens, largest request {max(sizes):6,}"
          + (f" (+{extra:,} tokens for {summarizer.summaries_made} summaries)" if extra else ""))

# %%
fig, ax = plt.subplots(figsize=(6.5, 3))
for name, sizes in [("everything re-sent", plain_sizes), ("client-side summary (Summarize)", summary_sizes),
                    ("server-side clearing (context editing)", cleared_sizes)]:
    ax.plot(range(1, len(sizes) + 1), sizes, marker="o", markersize=3, label=name)
ax.axhline(6000, color="grey", linestyle=":", linewidth=1)
ax.set_xlabel("model call")
ax.set_ylabel("input tokens")
ax.set_title("A session reading twelve long files")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Both keep the session near the 6,000-token trigger (the dotted line) instead of growing
# with every file. They differ in what the model still has. A summary keeps what the model
# thought mattered, and costs a call to write; clearing costs nothing but leaves a
# placeholder where a result was. What the server reported on the last call:

# %%
last = cleared_agent.client.exchanges[-1]
print(json.dumps(last.response.get("context_management"), indent=1))
results = [b for m in cleared_agent.history if isinstance(m["content"], list) for b in m["content"]
           if b.get("type") == "tool_result"]
print(f"the client's history: {len(results)} tool results, {sum('cleared' in b['content'] for b in results)} cleared")

# %% [markdown]
# The client's history still holds every result whole: the server edits its copy of each
# request, so a session saved to disk loses nothing. And clearing changes the prompt from
# the first cleared result on, so prompt caching (notebook 13) finds no hit past that point
# on the next call: an edit's `clear_at_least` (not set here) makes each clearing free
# enough tokens to be worth that.
#
# ## 5. Hooks: your code around every call
#
# A harness needs places to put its own rules: never touch `.env`, log every command, tell
# the model how many tests still fail after each run, refuse to stop while they fail.
# `miniagent.hooks.Hooks` gives four places, and the rules are written down in its
# docstring and tested:
# 1. **before** a tool call, in the order added: one that returns a reason (a string) or
#    `False` blocks the call, and the model reads why; one that raises blocks it too;
# 2. the tool runs;
# 3. **after** it, in order: a string returned is added to what the model reads; one that
#    raises changes nothing (the tool has run), and is recorded;
# 4. **at the end of a turn**: observers; **until done**: a string sends the agent back to work.

# %%
hooks = Hooks()
log = []


def no_env_files(name, arguments):
    if ".env" in json.dumps(arguments):
        return "the .env file holds secrets; it is not the agent's to read"


def test_summary(name, arguments, output):
    if name == "bash" and "unittest" in arguments.get("command", ""):
        return output.strip().splitlines()[-2] if "FAILED" in output else "all tests pass"


hooks.before("no_env_files", no_env_files)
hooks.before("log", lambda name, arguments: log.append(f"{name} {arguments.get('command', '')}"))
hooks.after("tests", test_summary)
hooks.at_turn_end("count", lambda event: log.append(f"turn ended: {event['stop']}"))

# %% [markdown]
# Try them on the tools directly, as the model would call them:

# %%
repo = failing_repository()
(repo / ".env").write_text("API_KEY=sk-not-for-agents\n", encoding="utf-8")
hooked = hooks.wrap(workspace(repo).tools())
for name, arguments in [("str_replace_based_edit_tool", {"command": "view", "path": ".env"}),
                        ("bash", {"command": "python3 -m unittest 2>&1"})]:
    result = hooked.run({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})
    print(f"{name} → error={result.get('is_error', False)}:", result["content"].strip().splitlines()[-1])
print("log:", log, "· blocked:", hooks.blocked)

# %% [markdown]
# The blocked call never reached the log hook: a block stops the hooks after it. The test
# run came back with the line `[tests] FAILED (failures=1)` added for the model.
#
# **Until done.** A model can say "done" early, or run out of the calls you give it per
# turn. An `until_done` hook checks the work itself, here by running the tests in the jail,
# and sends the agent back with what it found. With 3 calls per turn, the agent needs two:

# %%
repo = failing_repository()
box = workspace(repo)


def tests_pass(result):
    ran = box.sandbox.run("python3 -m unittest 2>&1")
    return None if ran.exit_code == 0 else "the tests still fail: " + ran.stdout.strip().splitlines()[-1]


hooks.until_done("tests", tests_pass)
log.clear()
agent = Agent(llm, hooks.wrap(box.tools()), max_iterations=3, on_step=hooks.on_step)
result = hooks.run(agent, "The tests fail. Make them pass.", max_rounds=3)
print(result.text)
told = [b["text"] for m in agent.history if m["role"] == "user"
        for b in ([{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"])
        if b["type"] == "text"]
print("the agent was told:", told)
print("log:", *log, sep="\n  ")

# %% [markdown]
# ## 6. Background work
#
# A test suite can take minutes. Waiting for it blocks the conversation; a timeout loses
# it. The shell tool takes `background: true`: the command starts in the jail, the tool
# returns a job id at once, and `bash_job` reads the output so far, waits for the result,
# or cancels it. Here the (scripted) model starts a slow test run, reads the code while it
# runs, then collects the result:

# %%
repo = failing_repository()
SLOW = "sleep 2; python3 -m unittest 2>&1"
steps = [tool_call("bash", {"command": SLOW, "background": True}, text="The tests are slow; I'll start them."),
         tool_call("str_replace_based_edit_tool", {"command": "view", "path": "calc.py"},
                   text="While they run, I'll read the code."),
         tool_call("bash_job", {"job_id": "job-1", "wait": 15}, text="Now the test result."),
         text("The tests ran in the background while I read calc.py: add subtracts, so test_add fails.")]
client = miniagent.connect(offline=True, quiet=True)
client.mock.script(*steps)
calls = []
def gist(output):
    lines = [line for line in str(output).splitlines() if line.strip()] or ["(no output)"]
    return ([line for line in lines if not line.startswith("[")] or lines)[-1][:60]


agent = Agent(client, workspace(repo).tools(), on_step=lambda e: e["type"] == "tool_result" and calls.append(
    (e["name"], round(time.perf_counter() - started, 1), gist(e["content"]))))
started = time.perf_counter()
result = agent.run("Run the tests (they are slow) and tell me what is wrong.")
for name, at, said in calls:
    print(f"{at:4.1f} s  {name:28} {said}")
print(result.text)

# %% [markdown]
# The view came back while the tests were still running; the wait was the only time the
# conversation stood still. A job that should not finish is cancelled with everything it
# started (its jail's processes are killed together):

# %%
jobs = workspace(repo)
tools = jobs.tools()


def use(name, **arguments):
    return tools.run({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})["content"]


print(use("bash", command="for i in $(seq 1000); do echo tick $i; sleep 0.2; done", background=True))
print(use("bash_job", job_id="job-1", wait=0.5).splitlines()[0])
print(use("bash_job", job_id="job-1", cancel=True).splitlines()[-1])
print("jobs still running:", sum(job.running() for job in jobs.jobs.values()))

# %% [markdown]
# ## Now from the package
#
# Five short modules hold this notebook's harness:

# %%
import inspect

import miniagent.hooks
import miniagent.mock.context_editing
import miniagent.session
import miniagent.skills

for module in (miniagent.skills, miniagent.planning, miniagent.session, miniagent.hooks,
               miniagent.mock.context_editing):
    print(f"{module.__name__:31} {len(inspect.getsource(module).splitlines()):4} lines  "
          f"{inspect.getdoc(module).splitlines()[0][:70]}")

# %% [markdown]
# ## Summary
#
# - Skills cost one line each in the prompt until the model loads one; the saving grows
#   with the collection and is paid back on every call.
# - A plan and a session in files, written whole, let the work survive the process; a
#   summary on the client, or clearing on the server, lets it survive the window.
# - Hooks put your rules around every call (block, add context, log) and at the end of a
#   turn (send it back until the tests pass); background jobs keep slow commands from
#   stopping the conversation.
#
# ## Exercises
#
# **Exercise 1.** Write `front_matter_of(text)` for a `SKILL.md`: return
# `{"name": ..., "description": ..., "body": ...}`. The file opens with a `---` line; the
# block ends at the next `---` line; each line in it is `key: value` (a value may contain
# `: ` itself, and may be in quotes, which are not part of it); the body is everything
# after the block, without its leading blank lines. Raise `ValueError` when there is no
# block. The inline version above fails several of the check's files.

# %% tags=["exercise"]
def front_matter_of(text):
    """Exercise 1: {"name", "description", "body"} of a SKILL.md."""
    fields, body = front_matter(text)
    return {"name": fields["name"], "description": fields["description"], "body": body}


# %% tags=["check"]
miniagent.exercises.check_15_1(front_matter_of)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_front_matter_of(text):
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("a SKILL.md opens with a --- line")
    ends = [i for i in range(1, len(lines)) if lines[i].strip() == "---"]
    if not ends:
        raise ValueError("the front matter block has no closing --- line")
    fields = {}
    for line in lines[1:ends[0]]:
        if line.strip():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip().strip("\"'")
    return {"name": fields.get("name"), "description": fields.get("description"),
            "body": "\n".join(lines[ends[0] + 1:]).lstrip("\n")}


miniagent.exercises.check_15_1(reference_front_matter_of)

# %% [markdown]
# **Exercise 2.** Write the server's clearing yourself, on the client:
# `clear_old_results(messages, keep)` returns a new list of messages in which the content
# of every `tool_result` block but the last `keep` is `"[cleared]"`. Everything else stays
# as it was: the ids (so every `tool_use` still has its result, or the API refuses the
# request), `is_error`, the other blocks and messages. Do not change `messages` itself: it
# is the session's record.

# %% tags=["exercise"]
def clear_old_results(messages, keep):
    """Exercise 2: the messages with all but the last `keep` tool results cleared."""
    return [m for m in messages if not (isinstance(m["content"], list)
                                        and any(b.get("type") == "tool_result" for b in m["content"]))][:]


# %% tags=["check"]
miniagent.exercises.check_15_2(clear_old_results)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
import copy


def reference_clear_old_results(messages, keep):
    cleared = copy.deepcopy(messages)
    results = [b for m in cleared if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    for block in results[:max(0, len(results) - keep)]:
        block["content"] = "[cleared]"
    return cleared


miniagent.exercises.check_15_2(reference_clear_old_results)

# %% [markdown]
# **Exercise 3.** Write a `before` hook, `no_secrets(name, arguments)`, that blocks any call
# touching a file named `.env`: the editor's `path` (`.env`, `config/.env`, `./.env`,
# `/work/.env`), or a word of a shell command (`cat .env`, `cp config/.env /tmp`). Return a
# reason (a string) to block, `None` to let the call go on. `.env.example` and `.envrc`
# are other files, and are allowed.

# %% tags=["exercise"]
def no_secrets(name, arguments):
    """Exercise 3: a reason when the call touches a .env file, else None."""
    if arguments.get("path") == ".env":
        return "no .env"


# %% tags=["check"]
miniagent.exercises.check_15_3(no_secrets)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
import posixpath
import shlex


def reference_no_secrets(name, arguments):
    paths = [arguments["path"]] if isinstance(arguments.get("path"), str) else []
    if isinstance(arguments.get("command"), str) and name == "bash":
        try:
            paths += shlex.split(arguments["command"])
        except ValueError:  # an unbalanced quote: judge the words as they are
            paths += arguments["command"].split()
    for path in paths:
        if posixpath.basename(posixpath.normpath(path.strip(";|&<>"))) == ".env":
            return f"{path} is a secrets file: the agent may not touch it"
    return None


miniagent.exercises.check_15_3(reference_no_secrets)

# %% [markdown]
# A hook like this is one more layer, not the wall: `cat .e''nv` gets past it, as it would
# past any rule that reads the command's text. The jail (notebook 14) is what holds when
# the rules are fooled: give the agent a folder without secrets in it.
#
# ## Next
#
# This is the last notebook. You have built, from one HTTP call up, what the agents you
# use are made of: a loop, tools, context policies, streaming, memory, several agents,
# traces, MCP, the production checklist, and now a coding agent with its harness. Read
# the package's modules (`miniagent/__init__.py` lists them); the next framework you
# adopt will do all of this, and you know what to look for in it.
