"""What llama.cpp's server does that the real API never does, as it reaches the client: its own bytes, replayed.

The contract (scripts/contract.py --llamacpp, its table LLAMACPP_KNOWN) lists every difference;
these are the ones a miniagent client meets, and what it does with each (the stream without
message_start is tests/test_client_stream.py's):
- a forced tool_choice answered in text: accepted, the loop and the agent end on the answer as
  they would on any answer without a tool call (the run's stop and reason say how it ended);
- tool_choice none answered with a tool call (llama.cpp drops `none`): accepted, the call is one
  of the caller's own tools and runs like any other; its id is not toolu_-shaped, and goes back
  as it came;
- a 500 when the server cannot parse what the model wrote: retried like any 500 (the next
  sample may parse), then an InternalServerError in the server's own words;
- usage without cache_creation_input_tokens or service_tier, most input counted as a cache read,
  and no request-id header: accepted, input counted as billed.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from miniagent.agent import Agent
from miniagent.client import Client, InternalServerError
from miniagent.clientcore import input_billed
from miniagent.loop import run_loop
from miniagent.tools import tool

DATA = Path(__file__).parent / "data"
NOT_FORCED = (DATA / "llamacpp-tool-choice-not-forced.json").read_bytes()  # tool_choice tool get_time, answered in text
CALLED_ANYWAY = (DATA / "llamacpp-tool-choice-none-called-a-tool.json").read_bytes()  # tool_choice none
UNPARSED = (DATA / "llamacpp-500-unparsed-output.json").read_bytes()
HEADERS = {"server": "llama.cpp", "content-type": "application/json; charset=utf-8"}  # as it sends them: no request-id
ASK = [{"role": "user", "content": "What is the weather in Paris right now? Use the get_weather tool."}]
FORCED = {"type": "tool", "name": "get_time"}


ASKED: list[str] = []


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    ASKED.append(city)
    return "15 degrees Celsius, sunny"


@tool
def get_time(city: str) -> str:
    """Get the current local time in a city."""
    raise AssertionError("no tool is called: the answer has no tool_use")


def client_of(*replies: tuple[int, bytes], **settings) -> tuple[Client, list[dict], list[float]]:
    sent, sleeps, queue = [], [], list(replies)

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        status, body = queue.pop(0)
        return httpx2.Response(status, content=body, headers=HEADERS)

    client = Client(api_key="sk-llamacpp-unused", base_url="http://127.0.0.1:8090", model="smollm2-135m-instruct",
                    transport=httpx2.MockTransport(handler), sleep=sleeps.append, **settings)
    return client, sent, sleeps


def test_the_saved_answer_is_a_forced_choice_answered_in_text():
    answer = json.loads(NOT_FORCED)
    assert [b["type"] for b in answer["content"]] == ["text"] and answer["stop_reason"] == "max_tokens"


def test_a_forced_tool_choice_answered_in_text_is_the_message():
    client, sent, _ = client_of((200, NOT_FORCED))
    message = client.create(ASK, tools=[get_weather.schema(), get_time.schema()], tool_choice=FORCED, max_tokens=256)
    assert sent[0]["tool_choice"] == FORCED
    assert message["content"] == json.loads(NOT_FORCED)["content"] and message["stop_reason"] == "max_tokens"
    usage = message["usage"]
    assert "cache_creation_input_tokens" not in usage and "service_tier" not in usage
    assert input_billed(usage) == usage["input_tokens"] + usage["cache_read_input_tokens"] == 137 + 105
    assert client.last.status == 200 and client.last.error is None


def test_the_loop_ends_on_it_without_running_a_tool():
    client, sent, _ = client_of((200, NOT_FORCED))
    result = run_loop(client, ASK, tools=[get_weather, get_time], tool_choice=FORCED, max_tokens=256)
    assert (result.stop, result.reason) == ("max_tokens", "the answer was cut off by max_tokens")
    assert result.iterations == 1 and len(sent) == 1 and result.error is None
    assert result.text == json.loads(NOT_FORCED)["content"][0]["text"].strip()
    assert not any(b.get("type") == "tool_use" for m in result.messages for b in m["content"]
                   if isinstance(m["content"], list))


def test_the_agent_answers_with_it():
    client, sent, _ = client_of((200, NOT_FORCED))
    agent = Agent(client, [get_weather, get_time], create={"tool_choice": FORCED})
    result = agent.run(ASK[0]["content"])
    assert sent[0]["tool_choice"] == FORCED
    assert result.stop == "max_tokens" and result.text.startswith("You can use the get_weather tool")
    assert agent.trace.of_type("tool_call") == []


def test_tool_choice_none_answered_with_a_call_runs_the_call():
    answer = json.loads(CALLED_ANYWAY)
    call = answer["content"][-1]
    assert call["type"] == "tool_use" and not call["id"].startswith("toolu_") and "caller" not in call
    ASKED.clear()
    client, sent, _ = client_of((200, CALLED_ANYWAY), (200, NOT_FORCED))
    result = run_loop(client, ASK, tools=[get_weather], tool_choice={"type": "none"}, max_tokens=256)
    assert ASKED == ["Paris"] and result.iterations == 2 and result.stop == "max_tokens"
    assert sent[0]["tool_choice"] == {"type": "none"}
    returned = sent[1]["messages"][-1]["content"][0]
    assert returned["type"] == "tool_result" and returned["tool_use_id"] == call["id"]


def test_a_500_for_output_it_cannot_parse_is_retried_and_the_next_sample_answers():
    client, sent, sleeps = client_of((500, UNPARSED), (200, NOT_FORCED))
    message = client.create(ASK, tools=[get_weather.schema()], max_tokens=256)
    assert message["stop_reason"] == "max_tokens" and len(sent) == 2 and len(sleeps) == 1


def test_a_500_for_output_it_cannot_parse_names_what_the_server_said():
    client, _, _ = client_of(*[(500, UNPARSED)] * 3, max_retries=2)
    with pytest.raises(InternalServerError) as info:
        client.create(ASK, tools=[get_weather.schema()], max_tokens=256)
    err = info.value
    assert err.status == 500 and err.type == "server_error" and err.request_id is None
    assert "The model produced output that does not match the expected peg-native format" in str(err)
