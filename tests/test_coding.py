"""Notebook 14's coding tools (the editor in the text-editor tool's shape) and permission rules."""

from __future__ import annotations

import os

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
