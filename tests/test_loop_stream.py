"""The loop and the agent, streamed: the same runs as unstreamed, callbacks per block, broken streams run nothing.

No timing is asserted here (the benchmark measures it): the mock is unpaced, and the
tests look only at what arrived and in which order.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timezone

import pytest

from miniagent import builtin_tools, connect
from miniagent.agent import Agent
from miniagent.builtin_tools import default_tools
from miniagent.errors import OverloadedError, StreamError
from miniagent.loop import run_loop
from miniagent.messages import conversation_error, text_of, tool_results
from miniagent.mock import scripts
from miniagent.tools import Tool, ToolRegistry, tool

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
Q = [{"role": "user", "content": "What's the weather in Paris?"}]
FIXED = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: FIXED)


def spied(registry: ToolRegistry) -> tuple[ToolRegistry, list[tuple[str, dict]]]:
    """The same tools, each recording its calls: proof of what ran (and what did not)."""
    ran: list[tuple[str, dict]] = []

    def wrap(t: Tool) -> Tool:
        def fn(**arguments):
            ran.append((t.name, arguments))
            return t.fn(**arguments)
        return Tool(t.name, t.description, t.input_schema, fn)

    return ToolRegistry([wrap(t) for t in registry]), ran


@tool
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: the path
    """
    return f"deleted {path}"


def without_timing(events: list[dict]) -> list[dict]:
    """Loop events with what differs between two runs of the same thing left out: durations, the stream
    summary, and the order in which parallel tools finished (each burst of results is put in id order)."""
    out: list[dict] = []
    burst: list[dict] = []
    for event in [*events, None]:
        if event is not None:
            event = {k: v for k, v in event.items() if k not in ("seconds", "stream")}
            if event["type"] == "tool_result":
                burst.append(event)
                continue
        out += sorted(burst, key=lambda e: e["id"])
        burst = []
        if event is not None:
            out.append(event)
    return out


def both_ways(script: list, question: list[dict] = Q, tools=None, **kwargs) -> tuple:
    """The same scripted run, plain and streamed, each on a fresh mock (so ids agree): (plain, streamed) pairs
    of (result, events)."""
    runs = []
    for stream in (False, True):
        llm = connect(offline=True, quiet=True)
        llm.mock.script(*copy.deepcopy(script))
        events: list[dict] = []
        result = run_loop(llm, question, tools=tools, on_event=events.append, stream=stream, **kwargs)
        assert [bool(r["body"].get("stream")) for r in llm.mock.requests] == [stream] * len(llm.mock.requests)
        runs.append((result, events))
    return runs[0], runs[1]


# --- the same run, streamed or not ----------------------------------------------------------------


@pytest.mark.parametrize("max_tokens", [None, 50], ids=["demo", "demo-cut-by-max_tokens"])
def test_the_demo_streamed_is_the_demo_unstreamed(max_tokens):
    """Four parallel calls then an answer (and, cut by max_tokens mid-arguments, nothing run): the same either way."""
    runs = []
    for stream in (False, True):
        tools, ran = spied(default_tools())
        llm = connect(offline=True, quiet=True)
        events: list[dict] = []
        extra = {"max_tokens": max_tokens} if max_tokens else {}
        result = run_loop(llm, [{"role": "user", "content": DEMO}], tools=tools, on_event=events.append,
                          stream=stream, **extra)
        runs.append((result, without_timing(events), sorted(ran, key=json.dumps)))
    (plain, plain_events, plain_ran), (streamed, streamed_events, streamed_ran) = runs
    assert streamed.messages == plain.messages and conversation_error(streamed.messages) is None
    assert (streamed.stop, streamed.reason, streamed.text, streamed.iterations) == \
        (plain.stop, plain.reason, plain.text, plain.iterations)
    assert streamed.usage == plain.usage and streamed_events == plain_events and streamed_ran == plain_ran
    if max_tokens:
        assert streamed.stop == "max_tokens" and streamed_ran == []
    else:
        assert streamed.stop == "end_turn" and "3584" in streamed.text and len(streamed_ran) == 4


SCRIPTS = {
    "tool round then answer": [{"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}]},
                               scripts.text("Sunny in Paris.")],
    "three parallel calls, one tool": [{"content": [{"type": "text", "text": "Checking three cities."}] + [
        {"type": "tool_use", "name": "get_weather", "input": {"city": c}} for c in ("Paris", "巴黎", "Rome")]},
        scripts.text("All sunny.")],
    "truncated tool call": [scripts.truncated_tool_call("delete_file")],
    "text cut by max_tokens": [scripts.text("The answer is cut", stop_reason="max_tokens")],
    "refusal": [scripts.refusal()],
    "pause_turn": [scripts.pause_turn(), scripts.text("Done.")],
    "stop_sequence": [{"content": [{"type": "text", "text": "one"}], "stop_reason": "stop_sequence",
                       "stop_sequence": "##"}],
    "unknown tool": [{"content": [{"type": "tool_use", "name": "no_such_tool", "input": {"x": 1}}]},
                     scripts.text("Sorry.")],
    "runaway": [scripts.runaway("get_weather", {"city": "Paris"})] * 5,
    "empty answer": [{"content": [], "stop_reason": "end_turn"}],
    "thinking": [{"content": [{"type": "thinking", "thinking": "Let me think.", "signature": "c2ln"},
                              {"type": "text", "text": "Thought it through."}]}],
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripted_runs_streamed_are_the_runs_unstreamed(name):
    tools = ToolRegistry([builtin_tools.get_weather, delete_file])
    (plain, plain_events), (streamed, streamed_events) = both_ways(SCRIPTS[name], tools=tools, max_iterations=4)
    assert streamed.messages == plain.messages
    assert (streamed.stop, streamed.reason, streamed.text, streamed.iterations, streamed.usage) == \
        (plain.stop, plain.reason, plain.text, plain.iterations, plain.usage)
    assert without_timing(streamed_events) == without_timing(plain_events)
    assert conversation_error(streamed.messages) is None


def test_the_budgets_hold_streamed():
    runaway = [{"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": f"c{i}"}}]} for i in range(9)]
    (plain, _), (streamed, _) = both_ways(runaway, tools=[builtin_tools.get_weather], token_budget=1500)
    assert streamed.stop == plain.stop == "token_budget" and streamed.iterations == plain.iterations < 9
    (plain, _), (streamed, _) = both_ways([scripts.runaway("get_weather", {"city": "Paris"})] * 9,
                                          tools=[builtin_tools.get_weather], max_repeats=2)
    assert streamed.stop == plain.stop == "repeated_call" and streamed.messages == plain.messages


# --- the callbacks ---------------------------------------------------------------------------------


def test_text_deltas_add_up_to_each_responses_text():
    llm = connect(offline=True, quiet=True)
    pieces: list[str] = []
    responses: list[str] = []

    def on_event(event):
        if event["type"] == "response":  # the pieces since the last response are this response's text
            responses.append("".join(pieces))
            pieces.clear()

    result = run_loop(llm, [{"role": "user", "content": DEMO}], tools=default_tools(), stream=True,
                      on_text=pieces.append, on_event=on_event)
    assert responses == [text_of(m) for m in result.messages if m["role"] == "assistant"]
    assert responses[-1] == result.text and "3584" in result.text
    assert len(llm.mock.requests[-1]["response"]) > 5  # the answer came in many events, not one


def test_tool_calls_form_per_block_index_in_order():
    llm = connect(offline=True, quiet=True)
    seen: list[dict] = []
    result = run_loop(llm, [{"role": "user", "content": DEMO}], tools=default_tools(), stream=True,
                      on_tool_use=seen.append)
    blocks = result.messages[1]["content"]
    calls = {i: b for i, b in enumerate(blocks) if b["type"] == "tool_use"}
    assert sorted({s["index"] for s in seen}) == sorted(calls) and len(calls) == 4
    order = [s["index"] for s in seen]
    assert order == sorted(order)  # one block after another: never a fragment of a call between another's
    for index, block in calls.items():
        mine = [s for s in seen if s["index"] == index]
        assert all((s["id"], s["name"], s["iteration"]) == (block["id"], block["name"], 1) for s in mine)
        assert mine[0]["partial_json"] == "" and not mine[0]["done"] and mine[0]["input"] is None
        growing = [s["partial_json"] for s in mine]
        assert all(later.startswith(earlier) for earlier, later in zip(growing, growing[1:]))
        assert [s["done"] for s in mine] == [False] * (len(mine) - 1) + [True]
        assert mine[-1]["input"] == block["input"]  # its own arguments: the two get_weather calls are not merged
        if block["input"]:
            assert json.loads(mine[-1]["partial_json"]) == block["input"] and len(mine) > 3  # it grew in steps
    assert [s["input"]["city"] for s in seen if s["done"] and s["name"] == "get_weather"] == ["北京", "上海"]


def test_callbacks_need_a_stream():
    llm = connect(offline=True, quiet=True)
    with pytest.raises(TypeError, match="pass stream=True"):
        run_loop(llm, Q, on_text=print)
    with pytest.raises(TypeError, match="pass stream=True"):
        Agent(llm, on_tool_use=print)
    with pytest.raises(TypeError, match="pass stream=True"):
        Agent(llm).run("Hi", on_text=print)
    assert llm.mock.requests == []


def test_the_trace_gets_a_summary_per_response_not_an_event_per_token():
    plain, streamed = Agent(connect(offline=True, quiet=True)), Agent(connect(offline=True, quiet=True), stream=True)
    plain.run(DEMO)
    streamed.run(DEMO)
    assert [e["type"] for e in streamed.trace] == [e["type"] for e in plain.trace]  # same events, same count
    for event in streamed.trace.of_type("response"):
        summary = event["stream"]
        assert set(summary) == {"events", "first_token", "first_text"} and summary["events"] > 5
        assert 0 <= summary["first_token"] <= summary["first_text"] <= event["seconds"]
    assert all("stream" not in e for e in plain.trace.of_type("response"))


# --- broken streams: nothing runs, nothing is kept ----------------------------------------------------


def test_a_stream_cut_inside_a_tool_call_runs_nothing_and_keeps_nothing():
    tools, ran = spied(ToolRegistry([delete_file]))
    llm = connect(offline=True, quiet=True)
    agent = Agent(llm, tools, stream=True)
    llm.mock.script(scripts.text("Hello!"))
    agent.run("Hi")
    before = copy.deepcopy(agent.history)
    forming: list[dict] = []
    llm.mock.script(scripts.cut_tool_call("delete_file", {"path": "/home/ada/thesis.tex"}, text="Deleting it."))
    result = agent.run("Delete my thesis", on_tool_use=forming.append)
    assert result.stop == "api_error" and isinstance(result.error, StreamError) and ran == []
    assert agent.history == before and conversation_error(result.messages) is None
    assert result.messages == before + [{"role": "user", "content": "Delete my thesis"}]  # the question, nothing after
    assert forming and not any(call["done"] for call in forming)  # it was seen forming, never complete
    assert "delete_file" in result.reason and "was forming" in result.reason and "not executed" in result.reason
    assert agent.trace.of_type("tool_call") == [] and agent.trace.summary()["api_errors"] == 1
    assert agent.trace.of_type("error")[0]["stream"]["events"] > 0
    assert len(llm.mock.requests) == 2  # a broken stream is not retried
    assert agent.run("Hi again").ok and conversation_error(agent.history) is None


@pytest.mark.parametrize("how", ["scripted", "fault"])
def test_an_error_event_mid_stream_ends_the_run_with_the_typed_error(how):
    llm = connect(offline=True, quiet=True)
    answer = "The quick brown fox jumps over the lazy dog, and then it runs far away into the woods."
    if how == "scripted":
        llm.mock.script(scripts.overloaded_midway(answer, deltas=2))
    else:
        llm.mock.script(scripts.text(answer))
        llm.mock.fault(error_after=6)
    pieces: list[str] = []
    result = run_loop(llm, Q, stream=True, on_text=pieces.append)
    assert result.stop == "api_error" and isinstance(result.error, OverloadedError) and result.error.status == 529
    assert "error event in the middle of the stream" in result.reason and result.messages == Q
    assert pieces and answer.startswith("".join(pieces)) and "".join(pieces) != answer


def test_max_tokens_in_the_middle_of_a_tool_calls_json_never_runs_it_streamed():
    tools, ran = spied(default_tools())
    llm = connect(offline=True, quiet=True)
    seen: list[dict] = []
    result = run_loop(llm, [{"role": "user", "content": DEMO}], tools=tools, stream=True, max_tokens=50,
                      on_tool_use=seen.append)
    cut = [s for s in seen if s["done"] and s["input"] is None]
    assert len(cut) == 1 and cut[0]["name"] == "calculate" and cut[0]["partial_json"]
    with pytest.raises(ValueError):
        json.loads(cut[0]["partial_json"])  # what arrived was half a JSON object
    assert result.stop == "max_tokens" and ran == []
    assert all(r["content"].startswith("Error: not executed") for r in tool_results(result.messages[-1]))
    assert conversation_error(result.messages) is None


def test_ctrl_c_in_the_middle_of_a_stream_leaves_the_agent_as_it_was():
    llm = connect(offline=True, quiet=True)
    agent = Agent(llm, stream=True)
    agent.run("Hi")
    before = copy.deepcopy(agent.history)

    def interrupt(delta):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        agent.run("What is the weather in Paris?", on_text=interrupt)
    assert agent.history == before
    assert "closed by the caller" in (llm.last.error or "")  # the stream was closed, not left open
    assert agent.run("What is the weather in Paris?").ok


# --- the agent --------------------------------------------------------------------------------------


def test_agent_passes_the_callbacks_through_and_a_run_adds_its_own():
    order: list[str] = []
    agent = Agent(connect(offline=True, quiet=True), stream=True, on_text=lambda d: order.append("agent"),
                  on_tool_use=lambda c: order.append("agent-tool"))
    agent.run(DEMO, on_text=lambda d: order.append("run"), on_tool_use=lambda c: order.append("run-tool"))
    texts = [o for o in order if o in ("agent", "run")]
    calls = [o for o in order if o.endswith("-tool")]
    assert texts and texts == ["agent", "run"] * (len(texts) // 2)  # each piece: the agent's callback, then the run's
    assert calls and calls == ["agent-tool", "run-tool"] * (len(calls) // 2)
    plain = Agent(connect(offline=True, quiet=True))
    pieces: list[str] = []
    result = plain.run("Hi", stream=True, on_text=pieces.append)  # one streamed run of an unstreamed agent
    assert "".join(pieces) == result.text and plain.client.mock.requests[-1]["body"]["stream"] is True


def test_verbose_streamed_prints_the_text_as_it_arrives_and_once(capsys):
    agent = Agent(connect(offline=True, quiet=True), verbose=True, stream=True)
    agent.run(DEMO)
    out = capsys.readouterr().out
    narration, answer = (text_of(m) for m in agent.history if m["role"] == "assistant")
    assert out.count(narration) == 1 and out.count(answer) == 1 and "Final answer" not in out
    round1, round2 = out.split("--- round 1 ---\n", 1)[1].split("\n--- round 2 ---\n")
    assert round1.startswith(f"model: {narration}\ntool call: get_current_time({{}})")
    assert round1.count("tool call:") == 4 and round2 == f"model: {answer}\n"


def test_verbose_streamed_says_why_it_stopped_on_a_line_of_its_own(capsys):
    llm = connect(offline=True, quiet=True)
    llm.mock.script(scripts.overloaded_midway("Some words that will not all arrive here.", deltas=1))
    Agent(llm, verbose=True, stream=True).run("Hi")
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("model: Some") and lines[-2] != "model: Some words that will not all arrive here."
    assert lines[-1].startswith("Stopped (api_error): the API call failed: 529")
