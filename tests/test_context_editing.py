"""The mock's server-side context editing (beta context-management-2025-06-27, notebook 15), and the
harness pieces notebook 15 added: the client's betas, the scripted coding model's skill and plan,
Hooks.run after a turn's last iteration, bash_job's wait, and the sandbox's limits without prlimit."""

from __future__ import annotations

import json
import os
import shutil
from unittest import mock

import pytest

import miniagent
from miniagent.errors import APIError
from miniagent.mock.context_editing import BETA, PLACEHOLDER

TOOLS = [{"name": "view", "description": "View a file.", "input_schema": {"type": "object", "properties": {
    "path": {"type": "string"}}}}, {"name": "update_plan", "description": "Keep a plan.", "input_schema": {
        "type": "object", "properties": {"steps": {"type": "array"}}}}]


def session(n, size=2000, name="view"):
    messages = [{"role": "user", "content": "Read the logs."}]
    for i in range(n):
        tool = name if i != 1 else "update_plan"
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i:02d}", "name": tool, "input": {"path": f"log-{i}"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": f"log {i} " + "ok " * size}]})
    return messages


def edits(**options):
    return {"edits": [{"type": "clear_tool_uses_20250919", **options}]}


@pytest.fixture
def llm():
    client = miniagent.connect(offline=True, quiet=True)
    client.betas = [BETA]
    client.mock.script(lambda body: {"content": [{"type": "text", "text": json.dumps(
        [b["content"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
         if b.get("type") == "tool_result"])}]}, repeat=True)
    return client


def seen(response):
    """The tool results as the (scripted) model read them."""
    return json.loads(response["content"][0]["text"])


def test_without_the_beta_header_the_field_is_refused():
    client = miniagent.connect(offline=True, quiet=True)
    with pytest.raises(APIError, match="context_management: Extra inputs are not permitted"):
        client.create(session(2), tools=TOOLS, context_management=edits())
    assert client.exchanges[-1].request["headers"].get("anthropic-beta") is None


def test_the_client_sends_its_betas(llm):
    llm.create(session(1), tools=TOOLS)
    assert llm.exchanges[-1].request["headers"]["anthropic-beta"] == BETA


def test_below_the_trigger_nothing_is_cleared(llm):
    response = llm.create(session(6), tools=TOOLS, context_management=edits())  # default trigger: 100,000 tokens
    assert response["context_management"] == {"applied_edits": []}
    assert PLACEHOLDER not in seen(response)


def test_past_the_trigger_all_but_the_last_keep_are_cleared_and_usage_counts_what_is_left(llm):
    whole = llm.create(session(6), tools=TOOLS)["usage"]["input_tokens"]
    response = llm.create(session(6), tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 3000}, keep={"type": "tool_uses", "value": 2}))
    results = seen(response)
    assert results[:4] == [PLACEHOLDER] * 4 and PLACEHOLDER not in results[4:]
    applied = response["context_management"]["applied_edits"]
    assert applied[0]["type"] == "clear_tool_uses_20250919" and applied[0]["cleared_tool_uses"] == 4
    assert response["usage"]["input_tokens"] == whole - applied[0]["cleared_input_tokens"]


def test_excluded_tools_are_kept_and_clear_at_least_can_veto(llm):
    response = llm.create(session(6), tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 3000}, keep={"type": "tool_uses", "value": 1},
        exclude_tools=["update_plan"]))
    results = seen(response)
    assert PLACEHOLDER not in results[1] and results.count(PLACEHOLDER) == 4  # update_plan's result is kept
    vetoed = llm.create(session(6), tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 3000}, clear_at_least={"type": "input_tokens", "value": 10**6}))
    assert vetoed["context_management"] == {"applied_edits": []} and PLACEHOLDER not in seen(vetoed)


def test_clear_tool_inputs_and_the_clients_history_is_untouched(llm):
    messages = session(5)
    kept = json.dumps(messages)
    llm.mock.reset()
    llm.mock.script(lambda body: {"content": [{"type": "text", "text": json.dumps(
        [b["input"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
         if b.get("type") == "tool_use"])}]}, repeat=True)
    response = llm.create(messages, tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 100}, keep={"type": "tool_uses", "value": 2}, clear_tool_inputs=True))
    assert json.loads(response["content"][0]["text"]) == [{}, {}, {}, {"path": "log-3"}, {"path": "log-4"}]
    assert json.dumps(messages) == kept


def test_a_streamed_answer_says_what_was_cleared(llm):
    with llm.stream(session(4), tools=TOOLS, context_management=edits(
            trigger={"type": "input_tokens", "value": 100}, keep={"type": "tool_uses", "value": 1})) as events:
        kinds = [e for e in events if e["type"] == "message_delta"]
    assert kinds[0]["context_management"]["applied_edits"][0]["cleared_tool_uses"] == 3
    assert events.message["context_management"]["applied_edits"][0]["cleared_tool_uses"] == 3


def test_thinking_of_older_turns_is_cleared(llm):
    from miniagent.mock.thinking import draft, seal

    messages = [{"role": "user", "content": "Think."}]
    for i in range(3):
        messages += [{"role": "assistant", "content": [seal(draft("hm " * 300 + str(i), "summarized")),
                                                       {"type": "text", "text": f"answer {i}"}]},
                     {"role": "user", "content": "More."}]
    llm.mock.reset()
    llm.mock.script(lambda body: {"content": [{"type": "text", "text": str(sum(
        b.get("type") == "thinking" for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]))}]},
        repeat=True)
    response = llm.create(messages, thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2048,
                          context_management={"edits": [{"type": "clear_thinking_20251015"}]})
    assert response["content"][0]["text"] == "1"
    assert response["context_management"]["applied_edits"][0]["cleared_thinking_turns"] == 2


# --- the harness ----------------------------------------------------------------------------------


def failing_repo(folder):
    (folder / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (folder / "test_calc.py").write_text("import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
                                         "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
                                         encoding="utf-8")
    return folder


posix_only = pytest.mark.skipif(os.name != "posix", reason="the sandbox runs /bin/sh (use WSL on Windows)")


@posix_only
def test_the_scripted_coding_model_loads_its_skill_keeps_a_plan_and_hooks_send_it_back(tmp_path):
    from miniagent.coding import Workspace
    from miniagent.hooks import Hooks
    from miniagent.mock import coding
    from miniagent.planning import Plan
    from miniagent.sandbox import Limits, Sandbox
    from miniagent.skills import Skills
    from miniagent.tools import ToolRegistry

    repo = failing_repo(tmp_path)
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


def test_bwrap_that_cannot_start_is_no_bwrap(monkeypatch):
    from miniagent import sandbox

    monkeypatch.setattr(sandbox.shutil, "which", lambda name: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(PermissionError(13, "denied")))
    assert sandbox.bwrap() is None
    with pytest.raises(RuntimeError, match="apt-get install bubblewrap"):
        sandbox.Sandbox(".")
