"""Notebook 14's coding tools (the editor in the text-editor tool's shape) and permission rules."""

from __future__ import annotations

import json
import os
import shutil
from unittest import mock

import pytest

import miniagent
from miniagent.coding import EDITOR, Workspace
from miniagent.permissions import Permissions, Rule, shell_parts


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
                                              encoding="utf-8")
    (tmp_path / ".git").mkdir()
    return Workspace(tmp_path)


def call(registry, **input):
    return registry.run({"type": "tool_use", "id": "t1", "name": EDITOR, "input": input})


# --- the editor ---------------------------------------------------------------------


def test_view_numbers_lines_and_lists_folders_without_hidden_ones(ws):
    assert ws.view("src/calc.py", [1, 2]) == "1: def add(a, b):\n2:     return a - b"
    assert ws.view("src/calc.py", [5, -1]).splitlines()[0] == "5: def sub(a, b):"
    assert ws.view(".") == "src/\nsrc/calc.py"
    assert ws.view("/work/src/calc.py", [1, 1]) == "1: def add(a, b):"  # the sandbox's name for the folder


def test_str_replace_must_match_exactly_once(ws):
    with pytest.raises(ValueError, match="occurs 2 times in src/calc.py, at lines 2, 6"):
        ws.str_replace("src/calc.py", "return a - b", "return a + b")
    with pytest.raises(ValueError, match="does not occur"):
        ws.str_replace("src/calc.py", "return a  - b", "x")
    assert ws.str_replace("src/calc.py", "add(a, b):\n    return a - b", "add(a, b):\n    return a + b") == \
        "Replaced 1 occurrence in src/calc.py (line 1)."
    assert "return a + b" in (ws.folder / "src" / "calc.py").read_text(encoding="utf-8")


def test_create_and_insert(ws):
    assert ws.create("tests/test_calc.py", "import unittest\n") == "Created tests/test_calc.py (1 lines)."
    assert ws.insert("tests/test_calc.py", 0, "# tests") == "Inserted 1 line(s) after line 0 of tests/test_calc.py."
    assert ws.view("tests/test_calc.py") == "1: # tests\n2: import unittest"
    with pytest.raises(ValueError, match="from 0 .* to 2"):
        ws.insert("tests/test_calc.py", 9, "x")


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../x", "", "a\0b"])
def test_paths_outside_the_folder_are_refused(ws, path):
    with pytest.raises(ValueError):
        ws.resolve(path)


def test_a_symlink_pointing_out_is_refused(ws, tmp_path_factory):
    secret = tmp_path_factory.mktemp("secret") / "key.txt"
    secret.write_text("sk-secret", encoding="utf-8")
    os.symlink(secret, ws.folder / "key.txt")
    with pytest.raises(ValueError, match="outside the task folder"):
        ws.view("key.txt")


def test_through_the_registry_a_mistake_is_advice_to_the_model(ws):
    tools = ws.tools(shell=False)
    result = call(tools, command="str_replace", path="src/calc.py", old_str="return a - b", new_str="x")
    assert result["is_error"] and "add the lines around it" in result["content"]
    result = call(tools, command="delete", path="src/calc.py")
    assert result["is_error"] and "expected one of" in result["content"]  # the schema's enum, checked first
    result = call(tools, command="create", path="notes.md")
    assert result["is_error"] and "create takes path, file_text" in result["content"]
    assert call(tools, command="view", path="src/calc.py", view_range=[1, 1])["content"] == "1: def add(a, b):"


# --- permission rules ---------------------------------------------------------------


RULES_ALLOW = ["bash(python3 -m unittest*)", "bash(ls*)", f"{EDITOR}(view *)"]
RULES_ASK = [f"{EDITOR}(create *)"]
RULES_DENY = ["bash(rm *)", "bash(curl *)", f"{EDITOR}(* .env)"]


@pytest.mark.parametrize("name,arguments,effect", [
    ("bash", {"command": "python3 -m unittest -v"}, "allow"),       # allow rule with a pattern
    (EDITOR, {"command": "view", "path": "src/calc.py"}, "allow"),   # an editor command and path
    (EDITOR, {"command": "create", "path": "x.py"}, "ask"),          # ask rule
    (EDITOR, {"command": "str_replace", "path": "x.py"}, "ask"),     # no rule: the default
    (EDITOR, {"command": "view", "path": ".env"}, "deny"),           # deny wins over a matching allow
    (EDITOR, {"command": "view", "path": "./src/../.env"}, "deny"),  # the path as the workspace reads it
    (EDITOR, {"command": "view", "path": "/work/.env"}, "deny"),
    ("bash", {"command": "rm -rf /"}, "deny"),
    ("bash", {"command": "ls; rm -rf ~"}, "deny"),                   # a denied part denies the whole
    ("bash", {"command": "ls && curl evil.example"}, "deny"),
    ("bash", {"command": "python3 -m unittest | tee log"}, "ask"),   # one part not allowed: not allowed
    ("bash", {"command": "ls $(rm x)"}, "ask"),                      # a hidden command: never allowed by rule
    ("bash", {"command": "ls `whoami`"}, "ask"),
    ("get_weather", {"city": "Paris"}, "ask"),                       # any other tool: its JSON, the default
])
def test_a_decision_per_rule_form(name, arguments, effect):
    assert Permissions(allow=RULES_ALLOW, ask=RULES_ASK, deny=RULES_DENY).decide(name, arguments).effect == effect


def test_a_bare_tool_rule_and_the_star_rule():
    assert Permissions(allow=["bash"]).decide("bash", {"command": "anything"}).effect == "allow"
    assert Permissions(deny=["*"], allow=["bash"]).decide("bash", {"command": "ls"}).effect == "deny"
    assert Permissions(allow=["get_weather({\"city\":\"Paris\"})"]).decide("get_weather", {"city": "Paris"}).effect == "allow"


def test_bad_rules_and_defaults_are_refused_clearly():
    with pytest.raises(ValueError, match=r"Tool or Tool\(pattern\)"):
        Rule.parse("allow", "bash(ls")
    with pytest.raises(ValueError, match="default is one of"):
        Permissions(default="maybe")


def test_a_hidden_command_under_a_deny_default_is_denied():
    assert Permissions(allow=["bash(ls*)"], default="deny").decide("bash", {"command": "ls $(id)"}).effect == "deny"


def test_shell_parts():
    assert shell_parts("a; b && c || d | e & f\ng") == ["a", "b", "c", "d", "e", "f", "g"]
    assert shell_parts("python3 -m unittest 2>&1 &> log; x <&3") == ["python3 -m unittest 2>&1 &> log", "x <&3"]


def test_rules_reach_the_model_through_the_approval_path(ws):
    asked = []
    rules = Permissions(allow=[f"{EDITOR}(view *)"], deny=[f"{EDITOR}(create *)"])
    tools = ws.tools(shell=False, needs_approval=True)
    calls = [{"type": "tool_use", "id": f"t{i}", "name": EDITOR, "input": input} for i, input in enumerate([
        {"command": "view", "path": "src/calc.py", "view_range": [1, 1]},
        {"command": "create", "path": "evil.py", "file_text": "x"},
        {"command": "insert", "path": "src/calc.py", "insert_line": 0, "new_str": "# hi"}])]
    results = tools.run_all(calls, approve=rules.approver(lambda call: asked.append(call["input"]["command"]) or "not now"))
    assert results[0]["content"] == "1: def add(a, b):"
    assert results[1]["is_error"] and "deny by the rule deny str_replace_based_edit_tool(create *)" in results[1]["content"]
    assert results[2]["is_error"] and "not now" in results[2]["content"] and asked == ["insert"]
    assert not (ws.folder / "evil.py").exists()
    assert [d.effect for d in rules.decisions] == ["allow", "deny", "ask"] and len(rules.stopped()) == 1


def test_no_person_to_ask_refuses_and_says_why(ws):
    approve = Permissions().approver()
    assert "nobody was there to ask" in approve({"name": "bash", "input": {"command": "ls"}})


def test_the_agent_runs_with_the_rules(ws):
    rules = Permissions(allow=[f"{EDITOR}(view *)"])
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True), ws.tools(shell=False, needs_approval=True),
                            approve=rules.approver())
    result = agent.run("What is the weather in Paris?")  # the mock asks for a tool we do not have: handled
    assert result.stop == "end_turn"


# --- the harness around them (notebook 15), and the sandbox where bubblewrap is not ------------


posix_only = pytest.mark.skipif(os.name != "posix", reason="the sandbox runs /bin/sh (use WSL on Windows)")


@posix_only
def test_the_scripted_coding_model_loads_its_skill_keeps_a_plan_and_hooks_send_it_back(failing_repo):
    from miniagent.coding import Workspace
    from miniagent.hooks import Hooks
    from miniagent.mock import coding
    from miniagent.planning import Plan
    from miniagent.sandbox import Limits, Sandbox
    from miniagent.skills import Skills
    from miniagent.tools import ToolRegistry

    repo = failing_repo
    llm = miniagent.connect(offline=True, quiet=True)
    llm.mock.script(coding.model(), repeat=True)
    skills = Skills(os.path.join(os.path.dirname(miniagent.__file__), "data", "skills"))
    plan = Plan(repo / "PLAN.md")
    box = Sandbox(repo, Limits(seconds=20), isolation="none")
    tools = ToolRegistry([*Workspace(repo, box).tools(), skills.tool(), plan.tool])
    hooks = Hooks()
    hooks.until_done("tests", lambda r: None if box.run("python3 -m unittest").exit_code == 0 else "still failing")
    agent = miniagent.Agent(llm, hooks.wrap(tools), system=skills.system_prompt(), max_iterations=5)
    result = hooks.run(agent, "The tests fail. Make them pass.")
    assert skills.loaded == ["python-tests"] and plan.complete and result.stop == "end_turn"
    assert [e["name"] for e in agent.trace.of_type("tool_call")][:3] == ["load_skill", "update_plan", "bash"]
    assert "[tests] still failing" in json.dumps(agent.history)  # the first turn ran out of iterations mid-task
    assert Plan.load(repo / "PLAN.md").steps == plan.steps


@posix_only
def test_bash_job_waits_for_a_job_up_to_the_time_asked(tmp_path):
    from miniagent.coding import Workspace
    from miniagent.sandbox import Limits, Sandbox

    tools = Workspace(tmp_path, Sandbox(tmp_path, Limits(seconds=10), isolation="none")).tools()

    def use(name, **input):
        return tools.run({"type": "tool_use", "id": "toolu_1", "name": name, "input": input})["content"]

    use("bash", command="sleep 0.3; echo finished", background=True)
    assert use("bash_job", job_id="job-1", wait=5) == "finished"
    use("bash", command="sleep 30", background=True)
    assert "job-2 is still running" in use("bash_job", job_id="job-2", wait=0.2)
    assert "[cancelled]" in use("bash_job", job_id="job-2", cancel=True)


@posix_only
def test_without_prlimit_the_shell_sets_the_limits(tmp_path):
    from miniagent.sandbox import Limits, Sandbox

    real = shutil.which
    with mock.patch("miniagent.sandbox.shutil.which", lambda name: None if name == "prlimit" else real(name)):
        box = Sandbox(tmp_path, Limits(seconds=5, file_mb=1, processes=40), isolation="none")
        assert box.argv("true")[0] == "/bin/sh"
        ran = box.run("head -c 3000000 /dev/zero > big; ulimit -f")
    assert (tmp_path / "big").stat().st_size <= 2**20 and ran.stdout.split()[-1] == "2048"


@posix_only
def test_bwrap_that_cannot_start_is_no_bwrap(monkeypatch):
    from miniagent import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "denied")))
    assert sandbox.bwrap() is None
    with pytest.raises(RuntimeError, match="apt-get install bubblewrap"):
        sandbox.Sandbox(".")
