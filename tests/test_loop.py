"""The ReAct loop: every stop_reason, the budgets, parallel tools, and a history that stays valid.

Every test runs four times: with both drivers of the loop's one set of rules (`run_loop`,
and `arun_loop` on an AsyncClient of the same mock), each with plain calls and streamed,
since the loop must behave the same however its answers arrive and whoever waits for them.
"""

import asyncio
import threading

import pytest

from miniagent import connect
from miniagent.aclient import AsyncClient
from miniagent.clientcore import OFFLINE_API_KEY
from miniagent.aloop import arun_loop
from miniagent.loop import run_loop
from miniagent.messages import conversation_error, tool_results
from miniagent.tools import ToolRegistry, tool

Q = [{"role": "user", "content": "What's the weather in Paris?"}]


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: the city name
    """
    return f"{city}: sunny, 20°C"


TOOLS = ToolRegistry([get_weather])


def call(name="get_weather", **input):
    return {"type": "tool_use", "name": name, "input": input or {"city": "Paris"}}


def text(t, stop="end_turn"):
    return {"content": [{"type": "text", "text": t}], "stop_reason": stop}


@pytest.fixture
def llm():
    """An offline client; afterwards, no request the loop sent may have been rejected by the mock."""
    client = connect(offline=True, quiet=True)
    yield client
    rejected = [r for r in client.mock.records if r["status"] == 400 and r["response"]["error"]["message"] != "boom"]
    assert not rejected, f"the strict mock rejected a request the loop sent: {rejected[0]['response']}"


@pytest.fixture(params=["plain", "streamed", "async plain", "async streamed"])
def loop(request, llm):
    """run_loop or arun_loop, plain or streamed; afterwards, every request was sent the way the test says.

    The async driver gets an AsyncClient of the same mock, so `llm.mock` sees its requests.
    """
    stream = request.param.endswith("streamed")

    def run(client, messages, **options):
        if not request.param.startswith("async"):
            return run_loop(client, messages, stream=stream, **options)
        aclient = AsyncClient(api_key=OFFLINE_API_KEY, base_url=client.base_url, model=client.model, mode="offline",
                              transport=client.mock.async_transport(), mock=client.mock)
        return asyncio.run(arun_loop(aclient, messages, stream=stream, **options))

    yield run
    assert [bool(r["body"].get("stream")) for r in llm.mock.requests] == [stream] * len(llm.mock.requests)


def all_accepted(llm):
    """No request the loop sent was rejected by the strict mock."""
    return [r["status"] for r in llm.mock.records] == [200] * len(llm.mock.records)


def test_tool_round_then_answer(loop, llm):
    llm.mock.script({"content": [call()]}, text("Sunny in Paris."))
    result = loop(llm, Q, tools=TOOLS)
    assert (result.stop, result.text, result.iterations) == ("end_turn", "Sunny in Paris.", 2)
    assert [m["role"] for m in result.messages] == ["user", "assistant", "user", "assistant"]
    assert tool_results(result.messages[2])[0]["content"] == "Paris: sunny, 20°C"
    assert conversation_error(result.messages) is None and all_accepted(llm)


def test_input_messages_are_not_modified(loop, llm):
    llm.mock.script(text("hi"))
    messages = list(Q)
    loop(llm, messages, tools=TOOLS)
    assert messages == Q


def test_stop_sequence_finishes(loop, llm):
    llm.mock.script({"content": [{"type": "text", "text": "one"}], "stop_reason": "stop_sequence", "stop_sequence": "##"})
    result = loop(llm, Q, tools=TOOLS)
    assert result.stop == "stop_sequence" and result.ok


def test_parallel_calls_answer_in_one_message_in_call_order(loop, llm):
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def slow_echo(word: str) -> str:
        """Echo a word after all three calls have started.

        Args:
            word: the word
        """
        barrier.wait()  # only passes if the three calls run at the same time
        return word

    llm.mock.script({"content": [call("slow_echo", word=w) for w in ("a", "b", "c")]}, text("done"))
    result = loop(llm, Q, tools=[slow_echo])
    results = tool_results(result.messages[2])
    assert [r["content"] for r in results] == ["a", "b", "c"]
    ids = [b["id"] for b in result.messages[1]["content"]]
    assert [r["tool_use_id"] for r in results] == ids and all_accepted(llm)


def test_tool_errors_go_back_to_the_model(loop, llm):
    llm.mock.script({"content": [call("no_such_tool", x=1)]}, text("Sorry."))
    result = loop(llm, Q, tools=TOOLS)
    r = tool_results(result.messages[2])[0]
    assert r["is_error"] and "no_such_tool" in r["content"] and result.stop == "end_turn"


def test_max_iterations_stops_a_runaway_model(loop, llm):
    llm.mock.script(*[{"content": [call(city=f"c{i}")]} for i in range(10)])
    result = loop(llm, Q, tools=TOOLS, max_iterations=3)
    assert (result.stop, result.iterations) == ("max_iterations", 3)
    assert conversation_error(result.messages) is None and all_accepted(llm)


def test_token_budget_stops_before_the_next_call(loop, llm):
    llm.mock.script(*[{"content": [call(city=f"c{i}")]} for i in range(10)])
    result = loop(llm, Q, tools=TOOLS, token_budget=300)
    assert result.stop == "token_budget" and result.usage.total_tokens >= 300
    assert result.iterations < 10 and "budget 300" in result.reason


def test_repeated_identical_call_is_detected(loop, llm):
    llm.mock.script(*[{"content": [call(city="Paris")]} for _ in range(10)])
    result = loop(llm, Q, tools=TOOLS, max_repeats=2)
    assert result.stop == "repeated_call" and result.iterations == 3
    last = tool_results(result.messages[-1])[0]
    assert last["is_error"] and "not executed" in last["content"]
    assert conversation_error(result.messages) is None


def test_truncated_tool_call_is_never_executed(loop, llm):
    ran = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file.

        Args:
            path: the path
        """
        ran.append(path)
        return "deleted"

    llm.mock.script({"content": [{"type": "text", "text": "Deleting"}, {"type": "tool_use", "name": "delete_file",
                                                                      "input": {}}], "stop_reason": "max_tokens"})
    result = loop(llm, Q, tools=[delete_file])
    assert ran == [] and result.stop == "max_tokens"
    assert "not executed" in tool_results(result.messages[-1])[0]["content"]
    assert conversation_error(result.messages) is None


def test_max_tokens_in_text_stops_with_the_partial_answer(loop, llm):
    llm.mock.script(text("The answer is cut", stop="max_tokens"))
    result = loop(llm, Q, tools=TOOLS)
    assert (result.stop, result.text) == ("max_tokens", "The answer is cut")
    assert result.messages[-1]["role"] == "assistant"


def test_refusal_and_unknown_stop_reasons_stop_with_a_reason(loop, llm):
    llm.mock.script({"content": [], "stop_reason": "refusal"})
    result = loop(llm, Q, tools=TOOLS)
    assert result.stop == "refusal" and result.messages == Q
    llm.mock.script(text("hm", stop="model_context_window_exceeded"))
    result = loop(llm, Q, tools=TOOLS)
    assert result.stop == "unknown_stop_reason" and "model_context_window_exceeded" in result.reason


def test_pause_turn_continues(loop, llm):
    llm.mock.script(text("Working on it", stop="pause_turn"), text("Done."))
    result = loop(llm, Q, tools=TOOLS)
    assert (result.stop, result.iterations) == ("end_turn", 2)


def test_failed_api_call_leaves_history_as_it_was(loop, llm):
    llm.mock.script({"content": [call()]}, {"status": 400, "error": {"type": "invalid_request_error", "message": "boom"}})
    result = loop(llm, Q, tools=TOOLS)
    assert result.stop == "api_error" and result.error.status == 400
    assert len(result.messages) == 3 and result.messages[-1]["role"] == "user"  # the tool turn, nothing after it
    assert conversation_error(result.messages) is None


def test_events_describe_every_step(loop, llm):
    llm.mock.script({"content": [call()]}, text("ok"))
    events = []
    loop(llm, Q, tools=TOOLS, on_event=events.append)
    assert [e["type"] for e in events] == ["request", "response", "tool_call", "tool_result", "request", "response",
                                           "stop"]
