"""The official `anthropic` SDK's message threads against `python -m miniagent.mock` in a subprocess.

The SDK's tool runner threads by default (`thread: {"type": "create"}`, then each turn a `continue`
with only the new messages), so the tool runner in all four forms and `beta.messages.thread()` pass
only if the mock holds the conversation as the API does. The last tests break the thread on purpose:
the SDK must recover as it does from the real API (a 404 `thread_not_found`: it replays the whole
conversation; a `thread_unsupported_request`: the runner goes on without a thread).
"""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mock_server import server_fixture


anthropic = pytest.importorskip("anthropic")

pytestmark = pytest.mark.sdk

KEY = "sk-mock-threads-sdk-1"
MODEL = "claude-sonnet-5-5"
CONTROL = {"x-api-key": KEY}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
CALLS: list[str] = []


@anthropic.beta_tool
def get_weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: The city's name.
    """
    CALLS.append(city)
    return f"{city}: 15°C, light rain"


@anthropic.beta_async_tool
async def get_weather_async(city: str) -> str:
    """Weather for a city.

    Args:
        city: The city's name.
    """
    CALLS.append(city)
    return f"{city}: 15°C, light rain"


server = server_fixture(KEY)


@pytest.fixture
def base_url(server):
    httpx2.post(f"{server}/_mock/reset", headers=CONTROL).raise_for_status()
    CALLS.clear()
    return server


def sdk(base_url, cls=None):
    return (cls or anthropic.Anthropic)(base_url=base_url, api_key=KEY, max_retries=0)


def sent(base_url):
    """(status, request body) of each /v1/messages call, oldest first."""
    records = httpx2.get(f"{base_url}/_mock/requests", headers=CONTROL).json()
    return [(r["status"], r["body"]) for r in records if r["path"] == "/v1/messages"]


def assert_threaded_tool_round(base_url, final, tool="get_weather"):
    """Two requests: a create with the question and the tools, then a continue with the result only."""
    assert CALLS == ["Paris"]
    assert final.stop_reason == "end_turn" and "15" in final.content[0].text
    (status1, first), (status2, second) = sent(base_url)
    assert status1 == status2 == 200
    assert first["thread"] == {"type": "create"} and first["messages"] == ASK and first["system"] == "Be brief."
    assert [t["name"] for t in first["tools"]] == [tool]
    assert second["thread"]["type"] == "continue" and second["thread"]["previous_message_id"].startswith("msg_")
    assert "tools" not in second and "system" not in second
    [turn] = second["messages"]
    assert turn["role"] == "user" and [b["type"] for b in turn["content"]] == ["tool_result"]


def runner(client, tool=get_weather, **kwargs):
    kwargs.setdefault("max_tokens", 500)
    return client.beta.messages.tool_runner(model=MODEL, system="Be brief.", messages=ASK, tools=[tool], **kwargs)


def test_the_tool_runner(base_url):
    messages = list(runner(sdk(base_url)))
    assert [m.stop_reason for m in messages] == ["tool_use", "end_turn"]
    assert_threaded_tool_round(base_url, messages[-1])


def test_the_tool_runner_until_done(base_url):
    assert_threaded_tool_round(base_url, runner(sdk(base_url)).until_done())


def test_the_streamed_tool_runner(base_url):
    finals, texts = [], []
    for stream in runner(sdk(base_url), stream=True):
        texts.append("".join(e.delta.text for e in stream if e.type == "content_block_delta"
                             and e.delta.type == "text_delta"))
        finals.append(stream.get_final_message())
    assert [m.stop_reason for m in finals] == ["tool_use", "end_turn"]
    assert texts[-1] == finals[-1].content[0].text
    assert all(body.get("stream") is True for _, body in sent(base_url))
    assert_threaded_tool_round(base_url, finals[-1])


def test_the_async_tool_runner(base_url):
    async def run():
        async with sdk(base_url, anthropic.AsyncAnthropic) as client:
            return await runner(client, get_weather_async).until_done()
    assert_threaded_tool_round(base_url, asyncio.run(run()), tool="get_weather_async")


def test_a_thread_sends_only_the_new_turn_and_the_server_remembers(base_url):
    thread = sdk(base_url).beta.messages.thread(model=MODEL, max_tokens=300, system="Be brief.")
    thread.send({"role": "user", "content": "My name is Ada."})
    answer = thread.send({"role": "user", "content": "What's my name?"})
    assert "Ada" in answer.content[0].text
    assert thread.previous_message_id == answer.id and len(thread.messages) == 4
    (_, first), (_, second) = sent(base_url)
    assert first["thread"] == {"type": "create"} and len(first["messages"]) == 1
    assert second["messages"] == [{"role": "user", "content": "What's my name?"}] and "system" not in second


def test_a_thread_streams_a_turn(base_url):
    thread = sdk(base_url).beta.messages.thread(model=MODEL, max_tokens=300)
    thread.send({"role": "user", "content": "My name is Ada."})
    with thread.stream({"role": "user", "content": "What's my name?"}) as stream:
        text = "".join(stream.text_stream)
    assert "Ada" in text and thread.previous_message_id == stream.get_final_message().id


def test_a_lost_thread_is_replayed_whole(base_url):
    thread = sdk(base_url).beta.messages.thread(model=MODEL, max_tokens=300)
    thread.send({"role": "user", "content": "My name is Ada."})
    httpx2.post(f"{base_url}/_mock/reset", headers=CONTROL).raise_for_status()  # the server forgets the thread
    answer = thread.send({"role": "user", "content": "What's my name?"})
    assert "Ada" in answer.content[0].text
    (lost, continued), (status, replayed) = sent(base_url)
    assert lost == 404 and continued["thread"]["type"] == "continue"
    assert status == 200 and replayed["thread"] == {"type": "create"} and len(replayed["messages"]) == 3


def test_a_field_threads_do_not_support(base_url):
    thread = sdk(base_url).beta.messages.thread(model=MODEL, max_tokens=2000,
                                                thinking={"type": "enabled", "budget_tokens": 1024})
    with pytest.raises(anthropic.types.ThreadUnsupportedRequestError) as raised:
        thread.send({"role": "user", "content": "Hi"})
    assert raised.value.status_code == 400 and raised.value.details.unsupported == ["thinking"]
    final = runner(sdk(base_url), max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024}).until_done()
    assert final.stop_reason == "end_turn"  # the runner went on without a thread
    statuses = [(status, "thread" in body) for status, body in sent(base_url)]
    assert statuses == [(400, True), (400, True), (200, False), (200, False)]
