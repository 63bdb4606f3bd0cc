"""A scripted coding model, for notebook 14's task family: make a failing unittest pass.

Not a model: a recipe, read off the conversation at every call (stateless, like the rest of the
mock), which is what notebook 14 needs offline and says it is. Given the editor
(`str_replace_based_edit_tool`) and `bash`, it

0. when it has a `load_skill` tool (notebook 15) and the system prompt lists a skill for failing
   tests, loads it first; when it has `update_plan`, writes its plan (four steps) next;
1. runs the tests (`python3 -m unittest 2>&1`);
2. on a failure, views the failing test's file (named in the traceback);
3. views the module the test imports the failing function from;
4. tries the arithmetic operators in that function's `return` line until one gives the value
   the assertion expects for the arguments it passes, and makes that edit with `str_replace`;
5. runs the tests again, and answers when they pass (checking off its plan first, if it wrote one).

A refused call (a permission rule, a hook, a person) ends it with an answer saying what was
refused. A failure it has no recipe for (anything but one wrong operator in a return line) ends
it with an answer saying so: a real model, live, is what goes further.

    api.script(coding.model(), repeat=True)
"""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Callable

from miniagent.mock.scripts import Response, text, tool_call

EDITOR = "str_replace_based_edit_tool"
RUN_TESTS = "python3 -m unittest 2>&1"
ASSERTION = re.compile(r"assertEqual\((\w+)\(([^()]*)\),\s*([^)]+)\)")  # assertEqual(f(args), expected)
PLAN = ["Run the tests and read the failure", "Read the failing test and the code it calls", "Fix the code",
        "Run the tests again"]
OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def model() -> Callable[[dict], Response]:
    """The script: answers each request from the conversation so far."""
    return respond


def respond(body: dict) -> Response:
    calls = _calls(body.get("messages") or [])
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    made = {c[0] for c in calls}
    if calls and calls[-1][3]:
        name, input, result, _ = calls[-1]
        return text(f"I stopped: my last step ({name} {_subject(input)}) was refused: {result}")
    if "load_skill" in offered and "load_skill" not in made and (skill := _skill_for(body.get("system"))):
        return tool_call("load_skill", {"name": skill}, text=f"The {skill} skill covers this task; I'll read it first.")
    if "update_plan" in offered and "update_plan" not in made:
        return tool_call("update_plan", _plan(done=False), text="My plan for this task:")
    work = [c for c in calls if c[0] in ("bash", EDITOR)]
    if not work:
        return tool_call("bash", {"command": RUN_TESTS}, text="First I'll run the tests to see what fails.")
    if calls[-1][0] == "update_plan" and len(work) > 1:  # the plan checked off at the end: the answer
        return text(_finished(calls))
    name, input, result, _ = work[-1]
    if name == "bash":
        if re.search(r"^OK\b", result, re.M) and "FAILED" not in result:
            if "update_plan" in made:
                return tool_call("update_plan", _plan(done=True), text="The tests pass; every step of my plan is done.")
            return text(_finished(calls))
        where = re.search(r'File "(?:/work/)?([^"]+\.py)", line (\d+), in (test\w*)', result)
        if where is None:
            return text("The tests did not run as I expected, and this scripted model has no recipe for that:\n"
                        + result[-500:])
        path = where[1].rsplit("/", 1)[-1] if where[1].startswith("/") else where[1]  # run unjailed: a full path
        return tool_call(EDITOR, {"command": "view", "path": path},
                         text=f"{where[3]} fails at line {where[2]} of {path}; I'll read the test.")
    if name == EDITOR and input.get("command") == "view":
        source = _numbered_source(result)
        test = ASSERTION.search(source)
        imported = re.search(r"from (\w+) import ([\w, ]+)", source)
        if test and imported and input["path"].startswith("test"):
            return tool_call(EDITOR, {"command": "view", "path": f"{imported[1]}.py"},
                             text=f"The test calls {test[1]}({test[2]}) and expects {test[3]}; I'll read {imported[1]}.py.")
        failing = _failing_call(calls)
        if failing is None:
            return text("I could not find the failing assertion in the test, so I have no fix to propose.")
        fix = _fix(source, *failing)
        if fix is None:
            return text(f"No single operator in {failing[0]}'s return line gives {failing[2]}: "
                        "this scripted model has no other recipe.")
        old, new = fix
        return tool_call(EDITOR, {"command": "str_replace", "path": input["path"], "old_str": old, "new_str": new},
                         text=f"`{old.strip()}` gives the wrong value; `{new.strip()}` gives {failing[2]}.")
    if name == EDITOR and input.get("command") == "str_replace":
        return tool_call("bash", {"command": RUN_TESTS}, text="Now I'll run the tests again.")
    return text("I have done what my recipe covers.")


def _plan(done: bool) -> dict:
    return {"steps": [{"step": step, "done": done} for step in PLAN]}


def _finished(calls: list[tuple[str, dict, str, bool]]) -> str:
    edits = [i for n, i, _, _ in calls if n == EDITOR and i.get("command") == "str_replace"]
    done = f" I changed `{edits[-1]['old_str']}` to `{edits[-1]['new_str']}` in {edits[-1]['path']}." if edits else ""
    return f"All tests pass.{done}"


def _skill_for(system: Any) -> str | None:
    """The skill the system prompt lists ("- name: description") for failing tests, if any."""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    for name, description in re.findall(r"^- ([a-z0-9-]+): (.+)$", str(system or ""), re.M):
        if "test" in description.lower() and "fail" in description.lower():
            return name
    return None


def _calls(messages: list[dict]) -> list[tuple[str, dict, str, bool]]:
    """(tool name, input, result text, is_error) for each call so far, in order."""
    results = {}
    for message in messages:
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    if isinstance(content, list):
                        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
                    results[block.get("tool_use_id")] = (str(content or ""), bool(block.get("is_error")))
    calls = []
    for message in messages:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_use" and block.get("id") in results:
                    result, error = results[block["id"]]
                    refused = error and ("declined" in result or "refused" in result or "blocked by" in result)
                    calls.append((block.get("name"), block.get("input") or {}, result, refused))
    return calls


def _numbered_source(viewed: str) -> str:
    """The file's text from the editor's view ("12: text" lines)."""
    return "\n".join(re.sub(r"^\d+: ?", "", line) for line in viewed.splitlines())


def _failing_call(calls: list[tuple[str, dict, str, bool]]) -> tuple[str, list[Any], Any] | None:
    """(function, arguments, expected) from the test file the model viewed."""
    for name, input, result, _ in calls:
        if name == EDITOR and input.get("command") == "view" and input.get("path", "").startswith("test"):
            found = ASSERTION.search(_numbered_source(result))
            if found:
                try:
                    args = list(ast.literal_eval(f"({found[2]},)"))
                    return found[1], args, ast.literal_eval(found[3].strip())
                except (ValueError, SyntaxError):
                    return None
    return None


def _fix(source: str, function: str, args: list[Any], expected: Any) -> tuple[str, str] | None:
    """(old line, new line): the return line of `function` with the one operator that gives `expected`."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            params = [a.arg for a in node.args.args]
            for statement in node.body:
                if isinstance(statement, ast.Return) and isinstance(statement.value, ast.BinOp):
                    line = source.splitlines()[statement.lineno - 1]
                    left, right = (ast.unparse(statement.value.left), ast.unparse(statement.value.right))
                    values = dict(zip(params, args))
                    if left not in values or right not in values:
                        return None
                    for symbol, op in OPERATORS.items():
                        try:
                            if op(values[left], values[right]) == expected:
                                new = line.replace(ast.unparse(statement.value), f"{left} {symbol} {right}")
                                return (line, new) if new != line else None
                        except ZeroDivisionError:
                            continue
    return None


def _subject(input: dict) -> str:
    return str(input.get("command", "")) + (f" {input['path']}" if "path" in input else "")
