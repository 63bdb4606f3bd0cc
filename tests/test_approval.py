"""Human approval: a tool with `needs_approval` runs only on an explicit True from `approve(call)`.

Everything else (False, a reason, None, an exception, a coroutine the sync driver cannot
await, no approver at all, a truthy non-True) refuses: the tool function is never
called, the model gets an error result saying why, and the run carries on to an answer.
Approvals are asked one at a time in call order, before any tool of the round starts,
only about calls that would really run, and on a copy the approver cannot use to change
what runs. Both drivers (Agent/run_loop and AsyncAgent/arun_loop) behave the same.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings

import pytest

from agent_fakes import SYNC_ASYNC, ask, make, results_in, say, script, use
from miniagent.aloop import AsyncAgent
from miniagent.messages import tool_results
from miniagent.tools import Tool, ToolRegistry

WAIT = 5.0


def deleter(ran: list):
    """A dangerous tool that needs approval; `ran` records each call it really got."""
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"
    return Tool("delete_file", "Delete a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                                    "required": ["path"]}, delete_file, needs_approval=True)


def one_call_then_answer():
    """The model asks for delete_file once, then answers whatever it was told (the result's text)."""
    return script(use(("delete_file", {"path": "/etc/passwd"})),
                  lambda req: say(f"Done: {results_in(req)[0]['content'][:40]}"))


@pytest.fixture(params=SYNC_ASYNC)
def kind(request):
    return request.param


def _raise(call):
    raise RuntimeError("approver broke")


async def _async_no(call):
    return False


@pytest.mark.parametrize("approver, words", [
    (lambda call: False, "they declined"),
    (lambda call: "  too risky  ", "they said: too risky"),
    (lambda call: None, "they declined"),
    (lambda call: 1, "they declined"),           # truthy is not True
    (lambda call: "yes", "they said: yes"),      # a string is a reason, never a yes
    (_raise, "the approve callback raised RuntimeError"),
    (None, "no approve callback was given"),
], ids=["false", "reason", "none", "truthy-int", "string-yes", "raises", "no-approver"])
def test_a_refused_call_never_runs_and_the_model_carries_on(kind, approver, words):
    ran: list = []
    agent = make(kind, one_call_then_answer(), [deleter(ran)], approve=approver)
    result = ask(agent, "Delete /etc/passwd")
    assert ran == []
    result_block = tool_results(result.messages[2])[0]
    assert result_block["is_error"] is True
    assert "did not approve this call to delete_file" in result_block["content"] and words in result_block["content"]
    sent = agent.client.requests[1]  # the model was told, and answered
    assert results_in(sent)[0]["content"] == result_block["content"]
    assert result.stop == "end_turn" and result.text.startswith("Done: Error: the user did not approve")
    events = [(e["approved"], e["reason"]) for e in agent.trace.of_type("approval")]
    if approver is None or approver is _raise:  # no one could be asked: the event says why
        assert len(events) == 1 and events[0][0] is False
        assert events[0][1].startswith("no one was asked (") and words in events[0][1]
    else:
        assert events == [(False, words.removeprefix("they said: ") if "said" in words else None)]


def test_an_async_approver_in_the_sync_driver_refuses_without_an_unawaited_warning():
    ran: list = []
    agent = make("sync", one_call_then_answer(), [deleter(ran)], approve=_async_no)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ask(agent, "Delete /etc/passwd")
        gc.collect()
    assert ran == []
    content = tool_results(result.messages[2])[0]["content"]
    assert "coroutine function; use AsyncAgent" in content
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert [e["approved"] for e in agent.trace.of_type("approval")] == [False]


def _yes(call):
    return True


async def _async_yes(call):
    await asyncio.sleep(0)
    return True


@pytest.mark.parametrize("kind, approver", [("sync", _yes), ("async", _yes), ("async", _async_yes)],
                         ids=["sync", "async", "async-approver"])
def test_an_approved_call_runs(kind, approver):
    ran: list = []
    agent = make(kind, one_call_then_answer(), [deleter(ran)], approve=approver)
    result = ask(agent, "Delete /etc/passwd")
    assert ran == ["/etc/passwd"]
    block = tool_results(result.messages[2])[0]
    assert not block.get("is_error") and block["content"] == "deleted /etc/passwd"
    assert [(e["name"], e["approved"], e["reason"]) for e in agent.trace.of_type("approval")] == \
        [("delete_file", True, None)]


def test_an_async_approver_that_raises_refuses(kind="async"):
    async def approver(call):
        raise PermissionError("no")
    ran: list = []
    agent = make(kind, one_call_then_answer(), [deleter(ran)], approve=approver)
    result = ask(agent, "Delete /etc/passwd")
    assert ran == [] and "the approve callback raised PermissionError" in tool_results(result.messages[2])[0]["content"]


def test_approval_events_say_what_was_answered(kind):
    answers = iter([True, "not that one", False])
    ran: list = []
    agent = make(kind, script(use(("delete_file", {"path": "a"}), ("delete_file", {"path": "b"}),
                                  ("delete_file", {"path": "c"})), say("ok")),
                 [deleter(ran)], approve=lambda call: next(answers))
    ask(agent, "Delete a, b and c")
    assert sorted(ran) == ["a"]
    events = agent.trace.of_type("approval")
    assert [(e["input"]["path"], e["approved"], e["reason"]) for e in events] == \
        [("a", True, None), ("b", False, "not that one"), ("c", False, None)]
    assert [e["id"] for e in events] == [e["id"] for e in agent.trace.of_type("tool_call")]


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
def test_approvals_are_asked_in_call_order_before_any_tool_of_the_round_starts(kind, parallel):
    started = threading.Event()
    ran: list = []

    def harmless(x: str) -> str:
        started.set()
        return x

    tools = [deleter(ran), Tool("harmless", "Echo.", {"type": "object", "properties": {"x": {"type": "string"}},
                                                       "required": ["x"]}, harmless)]
    asked: list = []

    def approver(call):
        asked.append((call["input"]["path"], started.is_set()))
        return True

    agent = make(kind, script(use(("delete_file", {"path": "first"}), ("harmless", {"x": "h"}),
                                  ("delete_file", {"path": "second"})), say("ok")),
                 tools, approve=approver, parallel=parallel)
    result = ask(agent, "go")
    assert asked == [("first", False), ("second", False)]  # the harmless tool had not started
    assert started.is_set() and sorted(ran) == ["first", "second"] and result.ok


def test_only_calls_that_would_run_are_asked_about(kind):
    ran: list = []
    asked: list = []
    agent = make(kind, script(use(("delete_file", {}), ("delete_file", {"path": 7}), ("no_such_tool", {"path": "x"}),
                                  ("delete_file", {"path": "ok"})), say("done")),
                 [deleter(ran)], approve=lambda call: asked.append(call["input"]) or True)
    result = ask(agent, "go")
    assert asked == [{"path": "ok"}] and ran == ["ok"]
    contents = [r["content"] for r in tool_results(result.messages[2])]
    assert "invalid arguments" in contents[0] and "invalid arguments" in contents[1]
    assert "unknown tool 'no_such_tool'" in contents[2] and contents[3] == "deleted ok"


def test_a_call_whose_arguments_were_not_json_is_not_asked_about():
    from miniagent.tools import UNPARSED_ARGUMENTS
    ran, asked = [], []
    lenient = Tool("wipe", "Wipe.", {"type": "object", "properties": {"disk": {"type": "string"}}},
                   lambda disk="": ran.append(disk) or "wiped", needs_approval=True)
    block = {"type": "tool_use", "id": "t1", "name": "wipe", "input": {UNPARSED_ARGUMENTS: '{"disk": "sd'}}
    for out in (ToolRegistry([lenient]).run_all([block], approve=lambda c: asked.append(c) or True),
                asyncio.run(ToolRegistry([lenient]).arun_all([block], approve=lambda c: asked.append(c) or True))):
        assert out[0]["is_error"] and "not valid JSON" in out[0]["content"]
    assert asked == [] and ran == []


def test_the_approver_gets_a_copy(kind):
    ran: list = []

    def approver(call):
        call["input"]["path"] = "/"  # an approver (or a UI) that edits what it was shown
        call["input"]["extra"] = 1
        call["name"] = "something_else"
        return True

    agent = make(kind, one_call_then_answer(), [deleter(ran)], approve=approver)
    result = ask(agent, "Delete /etc/passwd")
    assert ran == ["/etc/passwd"]
    assert result.messages[1]["content"][0]["input"] == {"path": "/etc/passwd"}
    assert agent.client.requests[1]["messages"][1]["content"][0]["input"] == {"path": "/etc/passwd"}
    assert [e["input"] for e in agent.trace.of_type("tool_call")] == [{"path": "/etc/passwd"}]
    # the audit trail says what was really approved (and run), not what the approver scribbled on
    assert [(e["name"], e["input"]) for e in agent.trace.of_type("approval")] == [("delete_file", {"path": "/etc/passwd"})]


def test_the_run_approver_replaces_the_agents_for_that_run_only(kind):
    ran: list = []
    respond = script(use(("delete_file", {"path": "1"})), say("a"), use(("delete_file", {"path": "2"})), say("b"))
    agent = make(kind, respond, [deleter(ran)], approve=lambda call: False)
    ask(agent, "first", approve=lambda call: True)
    assert ran == ["1"]
    result = ask(agent, "second")
    assert ran == ["1"] and tool_results(result.messages[-2])[0]["is_error"]


def test_an_approver_is_not_asked_about_tools_that_need_no_approval(kind):
    asked: list = []
    tool = Tool("echo", "Echo.", {"type": "object", "properties": {"x": {"type": "string"}}}, lambda x="": x)
    agent = make(kind, script(use(("echo", {"x": "hi"})), say("ok")), [tool], approve=asked.append)
    assert ask(agent, "go").ok and asked == [] and agent.trace.of_type("approval") == []


def test_the_registry_refuses_without_a_loop():
    """run_all/arun_all on their own: the same rule, no approver means no run."""
    ran: list = []
    registry = ToolRegistry([deleter(ran)])
    block = {"type": "tool_use", "id": "toolu_1", "name": "delete_file", "input": {"path": "x"}}
    assert registry.run_all([block])[0]["is_error"] and ran == []
    assert asyncio.run(registry.arun_all([block]))[0]["is_error"] and ran == []
    assert registry.run_all([block], approve=lambda c: True)[0]["content"] == "deleted x" and ran == ["x"]


def test_needs_approval_from_the_decorator():
    from miniagent.tools import tool

    @tool(needs_approval=True)
    def wipe(disk: str) -> str:
        """Wipe a disk.

        Args:
            disk: which one
        """
        raise AssertionError("must not run")

    assert wipe.needs_approval is True
    out = ToolRegistry([wipe]).run_all([{"type": "tool_use", "id": "t1", "name": "wipe", "input": {"disk": "sda"}}],
                                       approve=lambda c: False)
    assert out[0]["is_error"] and "they declined" in out[0]["content"]


def test_async_agent_awaits_the_approver_before_the_tools():
    order: list = []

    async def approver(call):
        await asyncio.sleep(0)
        order.append("approved")
        return True

    async def harmless(x: str) -> str:
        order.append("harmless ran")
        return x

    ran: list = []
    tools = [deleter(ran), Tool("harmless", "Echo.", {"type": "object", "properties": {"x": {"type": "string"}}},
                                harmless)]
    agent = make("async", script(use(("harmless", {"x": "h"}), ("delete_file", {"path": "p"})), say("ok")),
                 tools, approve=approver)
    assert isinstance(agent, AsyncAgent)
    assert ask(agent, "go").ok
    assert order == ["approved", "harmless ran"] and ran == ["p"]
