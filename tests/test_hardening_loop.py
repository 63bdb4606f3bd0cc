"""The loop and the agent under hostile responses, failing context policies and Ctrl-C.

The rule for responses: whatever one holds, the next request is valid (the strict mock
answers it, `conversation_error` finds nothing, every tool_use id is unique and matches
the real API's pattern). Defects the mock cannot send over its wire (lone surrogates,
NaN, a missing id) are put in by a client that tampers with the response it received.
"""

from __future__ import annotations

import _thread
import copy
import json
import re
import threading
import time
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent import connect
from miniagent.agent import Agent
from miniagent.context import Summarize, SummarizeToolResults
from miniagent.loop import run_loop
from miniagent.messages import (
    RESPONSE_BLOCK_TYPES,
    conversation_error,
    storable_content,
    tool_results,
    tool_use_ids,
)
from miniagent.tools import Tool, tool

API_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
from test_loop import Q, get_weather  # noqa: E402 - the same question and tool as the loop's own tests


def call(id: Any = ..., city: str = "Paris", **extra: Any) -> dict:
    block = {"type": "tool_use", "name": "get_weather", "input": {"city": city}, **extra}
    if id is not ...:
        block["id"] = id
    return block


def text(t: str, stop: str = "end_turn") -> dict:
    return {"content": [{"type": "text", "text": t}], "stop_reason": stop}


class Tampered:
    """A client that alters each response after it arrived: what no mock can send over JSON."""

    def __init__(self, client: Any, tamper: Callable[[dict, int], None]) -> None:
        self.client, self.tamper, self.calls = client, tamper, 0

    def create(self, messages: list[dict], **kwargs: Any) -> dict:
        response = self.client.create(messages, **kwargs)
        self.calls += 1
        self.tamper(response, self.calls)
        return response


def assert_sendable(llm: Any, history: list[dict]) -> None:
    """Every request reached the model (no 400) and the history can be sent as it is."""
    statuses = [(r["status"], (r["response"] or {}).get("error")) for r in llm.mock.requests]
    assert all(status == 200 for status, _ in statuses), statuses
    assert conversation_error(history) is None
    json.dumps(history, ensure_ascii=False, allow_nan=False).encode("utf-8")
    for request in llm.mock.requests:
        ids = [b["id"] for m in request["body"]["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_use"]
        assert all(isinstance(i, str) and API_ID.fullmatch(i) for i in ids), ids
        assert len(ids) == len(set(ids)), ids
    ids = [b["id"] for m in history if isinstance(m["content"], list) for b in m["content"]
           if b.get("type") == "tool_use"]
    assert all(API_ID.fullmatch(i) for i in ids) and len(ids) == len(set(ids)), ids


# --- storable_content itself -----------------------------------------------------------------


def test_storable_content_repairs_a_copy_and_leaves_the_response_alone():
    content = [
        {"type": "text", "text": ""},
        {"type": "text", "text": " \n"},
        {"type": "text", "text": "caf\udce9"},
        call("toolu_A"), call("toolu_A", city="Rome"), call("bad id!"), call(), call(7), call("toolu_old"),
        {"type": "mystery", "x": 1}, {"type": "tool_result", "tool_use_id": "toolu_A", "content": "x"},
        {"type": ["unhashable"]}, {"type": None}, {"text": "no type"},
        {"type": "image", "source": {"type": "url", "url": "http://x.invalid/a.png"}}, "not a block", None,
        {"type": "tool_use", "id": "toolu_B", "name": "get_weather", "input": "not an object"},
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "redacted_thinking", "data": "abc"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
        {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "search", "server_name": "s", "input": {}},
        {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": []},
    ]
    original = copy.deepcopy(content)
    used = {"toolu_old"}
    stored = storable_content(content, used)
    assert content == original  # the response is untouched
    assert [b["type"] for b in stored] == ["text", "tool_use", "tool_use", "tool_use", "tool_use", "tool_use",
                                           "tool_use", "thinking", "redacted_thinking", "server_tool_use",
                                           "web_search_tool_result", "code_execution_tool_result",
                                           "mcp_tool_use", "mcp_tool_result"]
    assert stored[0]["text"] == "caf\ufffd"
    ids = [b["id"] for b in stored if b["type"] == "tool_use"]
    assert ids[0] == "toolu_A" and len(set(ids)) == 6 and all(API_ID.fullmatch(i) for i in ids)
    assert "toolu_old" not in ids and set(ids) <= used
    assert [b["input"]["city"] for b in stored if b["type"] == "tool_use"] == ["Paris", "Rome"] + ["Paris"] * 4
    assert stored[7] == original[-7]  # thinking goes back exactly as it came
    stored[1]["input"]["city"] = "changed"
    assert content[3]["input"]["city"] == "Paris"  # a deep copy


def test_storable_content_cleans_what_json_and_utf8_cannot_carry():
    stored = storable_content([call("t1", city="\ud800x", extra_field=[float("nan"), float("inf")])], set())
    assert stored[0]["input"]["city"] == "\ufffdx" and stored[0]["extra_field"] == [None, None]
    json.dumps(stored, allow_nan=False).encode("utf-8")


@pytest.mark.parametrize("content, expected", [
    ([{"type": "text", "text": "Working on it \n"}], [{"type": "text", "text": "Working on it"}]),
    ([{"type": "text", "text": "a"}, {"type": "text", "text": "  "}], [{"type": "text", "text": "a"}]),
    ([{"type": "text", "text": "a "}, {"type": "text", "text": "b\t"}],
     [{"type": "text", "text": "a "}, {"type": "text", "text": "b"}]),
    ([{"type": "text", "text": "\n"}], []),
])
def test_stored_content_does_not_end_in_whitespace(content, expected):
    """The history may end with it, and after pause_turn it is sent back: a prefill must not end in whitespace."""
    assert storable_content(content, set()) == expected


def test_the_kept_types_are_the_sdk_response_types_and_nothing_user_side():
    assert {"text", "tool_use", "thinking", "redacted_thinking", "server_tool_use",
            "web_search_tool_result"} <= RESPONSE_BLOCK_TYPES
    assert not {"tool_result", "image", "document"} & RESPONSE_BLOCK_TYPES


# --- the loop and the agent after any response ---------------------------------------------


def test_empty_and_whitespace_text_blocks_do_not_poison_the_next_call():
    llm = connect(offline=True, quiet=True)
    llm.mock.script({"content": [{"type": "text", "text": ""}, {"type": "text", "text": "  "}, call()]},
                    text("Sunny."))
    result = run_loop(llm, Q, tools=[get_weather])
    assert result.stop == "end_turn" and result.iterations == 2
    assert_sendable(llm, result.messages)


def test_duplicate_and_invalid_ids_get_fresh_ones_the_results_and_trace_answer():
    llm = connect(offline=True, quiet=True)
    agent = Agent(llm, [get_weather])
    llm.mock.script({"content": [call("toolu_X", city="Rome")]}, text("Rome is sunny."))
    agent.run("Rome?")
    llm.mock.script({"content": [call("toolu_X"), call("toolu_X", city="Oslo"), call("not valid!", city="Lima"),
                                 call("", city="Kyiv")]}, text("All sunny."))
    result = agent.run("Paris, Oslo, Lima and Kyiv?")
    assert result.ok
    assert_sendable(llm, agent.history)
    asked = [b["id"] for b in agent.history[5]["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for b in tool_results(agent.history[6])]
    assert asked == answered and "toolu_X" not in asked
    second_question = [i for i, e in enumerate(agent.trace.events) if e["type"] == "question"][1]
    round2 = [e for e in agent.trace.events[second_question:] if e["type"] in ("tool_call", "tool_result")]
    assert {e["id"] for e in round2 if e["type"] == "tool_call"} == set(asked)
    assert {e["id"] for e in round2 if e["type"] == "tool_result"} == set(asked)


def test_pause_turn_ending_in_whitespace_is_continued_validly():
    llm = connect(offline=True, quiet=True)
    llm.mock.script(text("Working on it \n", stop="pause_turn"), text("Done."))
    result = run_loop(llm, Q, tools=[get_weather])
    assert (result.stop, result.iterations) == ("end_turn", 2)
    assert llm.mock.requests[1]["body"]["messages"][-1] == {"role": "assistant",
                                                            "content": [{"type": "text", "text": "Working on it"}]}
    assert_sendable(llm, result.messages)


def test_an_empty_or_blank_pause_turn_appends_nothing():
    llm = connect(offline=True, quiet=True)
    llm.mock.script({"content": [{"type": "text", "text": " "}], "stop_reason": "pause_turn"}, text("Done."))
    result = run_loop(llm, Q, tools=[get_weather])
    assert result.ok and llm.mock.requests[1]["body"]["messages"] == Q
    assert_sendable(llm, result.messages)


def test_a_final_answer_with_a_tool_call_leaves_a_history_the_next_question_can_use():
    llm = connect(offline=True, quiet=True)
    agent = Agent(llm, [get_weather])
    llm.mock.script({"content": [{"type": "text", "text": "Sunny."}, call()], "stop_reason": "end_turn"},
                    text("Anything else?"))
    assert agent.run("Paris?").ok
    assert agent.run("Thanks").ok
    assert_sendable(llm, agent.history)


@pytest.mark.parametrize("name, tamper", [
    ("a tool_use without an id", lambda r, n: n == 1 and r["content"][1].pop("id")),
    ("a tool_use id that is not a string", lambda r, n: n == 1 and r["content"][1].update(id=12)),
    ("a lone surrogate in the text", lambda r, n: r["content"][0].update(text="caf\udce9 ")),
    ("a lone surrogate in the arguments", lambda r, n: n == 1 and r["content"][1]["input"].update(city="\ud800")),
    ("NaN in the arguments", lambda r, n: n == 1 and r["content"][1]["input"].update(days=float("nan"))),
    ("a block that is not a dict", lambda r, n: r["content"].append("stray")),
    ("a tool_use whose input is not an object", lambda r, n: n == 1 and r["content"].append(
        {"type": "tool_use", "id": "toolu_zz", "name": "get_weather", "input": [1]})),
])
def test_what_no_mock_can_send_does_not_poison_the_history_either(name, tamper):
    llm = connect(offline=True, quiet=True)
    llm.mock.script({"content": [{"type": "text", "text": "Looking."}, call()]}, text("Sunny."), text("Bye."))
    agent = Agent(Tampered(llm, tamper), [get_weather])
    assert agent.run("Paris?").ok, agent.last_result.reason
    assert agent.run("Thanks").ok, agent.last_result.reason
    assert_sendable(llm, agent.history)


# Blocks a scripted response can hold: every defect the mock lets through its wire.
_texts = st.sampled_from(["", " ", "\n\t", "Let me check. ", "Sunny.", "  both  "]).map(
    lambda t: {"type": "text", "text": t})
_ids = st.sampled_from([..., "toolu_hist", "dup", "dup", "bad id!", "", "id\n", "ü", "x" * 300, "toolu_ok"])
_calls = st.builds(lambda i, city: call(i, city=city), _ids, st.sampled_from(["Paris", "Rome"]))
_strays = st.sampled_from([
    {"type": "mystery"},
    {"type": "tool_result", "tool_use_id": "toolu_hist", "content": "stray"},
    {"type": "image", "source": {"type": "url", "url": "http://x.invalid/a.png"}},
])
_responses = st.fixed_dictionaries({
    "content": st.lists(st.one_of(_texts, _calls, _strays), max_size=6),
    "stop_reason": st.sampled_from(["tool_use", "end_turn", "pause_turn", "max_tokens", "refusal",
                                    "stop_sequence", "something_new"]),
})


@settings(deadline=None)
@given(response=_responses, then=_responses, parallel=st.booleans())
def test_after_any_response_the_next_request_is_valid(response, then, parallel):
    llm = connect(offline=True, quiet=True)
    agent = Agent(llm, [get_weather], max_iterations=4, parallel=parallel)
    llm.mock.script({"content": [call("toolu_hist", city="Oslo")]}, text("Oslo is sunny."))
    agent.run("Oslo?")  # a history holding the id "toolu_hist"
    llm.mock.script(response, then, text("Fine."), text("Fine again."))
    agent.run("Paris and Rome?")
    agent.run("Thanks!")
    assert_sendable(llm, agent.history)
    result = agent.last_result
    assert result.stop != "api_error", result.reason


# --- a failing context policy --------------------------------------------------------------------


def failing_summarizer(status: int = 529) -> Any:
    """A client for the policy whose calls fail even after its retries."""
    client = connect(offline=True, quiet=True, max_retries=2, sleep=lambda seconds: None)
    client.mock.fault(status, times=3)
    return client


def test_summarize_failing_in_view_ends_the_run_as_an_api_error():
    llm = connect(offline=True, quiet=True)
    llm.mock.script({"content": [call()]}, {"content": [call(city="Rome")]}, text("Sunny."))
    summarizer = failing_summarizer()
    policy = Summarize(summarizer, trigger_tokens=5, keep_recent_tokens=1)  # summarises once it can cut
    events: list[dict] = []
    result = run_loop(llm, Q, tools=[get_weather], policy=policy, on_event=events.append)
    assert result.stop == "api_error" and result.error is not None and result.error.status == 529
    assert len(summarizer.mock.requests) == 3  # the summary call was retried, then gave up
    assert "context policy" in result.reason and result.iterations == 2
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert conversation_error(result.messages) is None  # both tool rounds are kept
    assert [e["type"] for e in events][-2:] == ["error", "stop"]
    assert len(llm.mock.requests) == 2  # the loop's own third call was never made


def test_summarize_tool_results_failing_keeps_the_unshortened_results():
    @tool
    def long_report(topic: str) -> str:
        """A long report on a topic.

        Args:
            topic: the topic
        """
        return f"{topic}: " + "data " * 50

    llm = connect(offline=True, quiet=True)
    llm.mock.script({"content": [{"type": "tool_use", "name": "long_report", "input": {"topic": "rain"}}]},
                    text("ok"))
    result = run_loop(llm, Q, tools=[long_report], policy=SummarizeToolResults(failing_summarizer(), max_chars=20))
    assert result.stop == "api_error" and result.error.status == 529
    assert tool_results(result.messages[-1])[0]["content"] == "rain: " + "data " * 50
    assert conversation_error(result.messages) is None


def test_the_agent_reverts_its_history_when_a_policy_call_fails():
    llm = connect(offline=True, quiet=True)
    summarizer = connect(offline=True, quiet=True, max_retries=0)
    agent = Agent(llm, [get_weather], policy=Summarize(summarizer, trigger_tokens=5, keep_recent_tokens=1))
    llm.mock.script(text("Hello!"))
    agent.run("Hi")
    before = copy.deepcopy(agent.history)
    summarizer.mock.fault(500)
    llm.mock.script({"content": [call()]}, text("Sunny."))
    result = agent.run("Paris?")
    assert result.stop == "api_error" and agent.history == before
    assert len(agent.last_result.messages) == len(before) + 1  # the question; the summary failed before any call
    assert conversation_error(agent.last_result.messages) is None
    assert agent.trace.summary()["api_errors"] == 1


# --- Ctrl-C during a round of tools ---------------------------------------------------------------


@pytest.mark.parametrize("parallel", [True, False])
def test_ctrl_c_during_a_tool_round_stops_at_once_and_keeps_the_history(parallel):
    started, release = threading.Event(), threading.Event()

    def slow(city: str) -> str:
        started.set()
        release.wait(10)
        return "late"

    slow_tool = Tool("get_weather", "Get the weather.", get_weather.input_schema, slow, timeout=3)
    llm = connect(offline=True, quiet=True)
    agent = Agent(llm, [slow_tool], parallel=parallel)
    llm.mock.script(text("Hello!"))
    agent.run("Hi")
    before = copy.deepcopy(agent.history)
    llm.mock.script({"content": [call(city="Paris"), call(city="Rome")]}, text("Sunny."))

    def interrupt() -> None:
        if started.wait(5):
            time.sleep(0.1)
            _thread.interrupt_main()

    threading.Thread(target=interrupt, daemon=True).start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            agent.run("Paris and Rome?")
        elapsed = time.monotonic() - start
    finally:
        release.set()
    assert elapsed < 1.0, f"Ctrl-C took {elapsed:.2f} s to stop the run"
    assert agent.history == before and conversation_error(agent.history) is None
    assert tool_use_ids(agent.history) == set()
    assert len(agent.trace.of_type("tool_call")) == 2
