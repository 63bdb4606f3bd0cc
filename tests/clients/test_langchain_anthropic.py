"""LangChain's `ChatAnthropic` (langchain-anthropic) against the mock server.

A learner who already writes LangChain should be able to point it at the mock and
see the same behaviour as live: a plain call, a `@tool` bound with `bind_tools` and
run by hand, `.stream()`/`.astream()`, `with_structured_output(PydanticModel)` by both
of its methods (a tool; `output_config.format`), and the client's own retries getting
through two overloaded answers.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, Field

from miniagent import DEFAULT_MODEL

pytestmark = pytest.mark.sdk

WEATHER_QUESTION = "What's the weather in Paris?"


class Trip(BaseModel):
    """A trip: where to and for how many days."""

    city: str = Field(description="the city to visit")
    days: int = Field(description="how many days the trip lasts")


@pytest.fixture
def chat(base_url, api_key):
    """`chat(**settings)`: a ChatAnthropic on the mock, no retries unless asked (a failure shows at once)."""
    langchain_anthropic = pytest.importorskip("langchain_anthropic")

    def make(**settings):
        settings.setdefault("max_retries", 0)
        return langchain_anthropic.ChatAnthropic(model=DEFAULT_MODEL, api_key=api_key, base_url=base_url, **settings)

    return make


@pytest.fixture
def weather_tool():
    """(a LangChain `@tool` get_weather, the cities it was called with)."""
    tools = pytest.importorskip("langchain_core.tools")
    ran = []

    @tools.tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        ran.append(city)
        return f"Sunny, 21 C in {city}"

    return get_weather, ran


def test_a_plain_call(chat, mock):
    answer = chat().invoke("Hello")
    assert answer.text.startswith("(mock) Hello!")
    assert answer.response_metadata["model"] == DEFAULT_MODEL
    assert answer.response_metadata["stop_reason"] == "end_turn"
    assert answer.usage_metadata["input_tokens"] > 0 and answer.usage_metadata["output_tokens"] > 0
    [record] = mock.records
    assert record["status"] == 200  # so the key was sent as the API expects (the mock requires it)
    assert record["body"]["model"] == DEFAULT_MODEL
    assert record["body"]["messages"] == [{"role": "user", "content": "Hello"}]


def test_a_tool_round_trip(chat, mock, weather_tool):
    messages_module = pytest.importorskip("langchain_core.messages")
    get_weather, ran = weather_tool
    model = chat().bind_tools([get_weather])
    history = [messages_module.HumanMessage(WEATHER_QUESTION)]
    first = model.invoke(history)
    assert [(c["name"], c["args"]) for c in first.tool_calls] == [("get_weather", {"city": "Paris"})]
    history.append(first)
    history += [get_weather.invoke(call) for call in first.tool_calls]  # ToolMessages with the results
    assert ran == ["Paris"]
    final = model.invoke(history)
    assert not final.tool_calls and "Sunny, 21 C in Paris" in final.text
    first_request, second_request = mock.records
    assert first_request["body"]["tools"][0]["name"] == "get_weather"
    [result] = second_request["body"]["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == first.tool_calls[0]["id"]


def test_streaming(chat, mock):
    plain = chat().invoke("Hello").text
    mock.reset()
    chunks = list(chat().stream("Hello"))
    texts = [c.text for c in chunks if c.text]
    assert len(texts) > 1, texts
    assert "".join(texts) == plain
    [record] = mock.records
    assert record["body"]["stream"] is True


def test_a_streamed_tool_call_is_assembled(chat, mock, weather_tool):
    get_weather, _ = weather_tool
    model = chat().bind_tools([get_weather])

    async def collect():
        return [chunk async for chunk in model.astream(WEATHER_QUESTION)]

    chunks = asyncio.run(collect())
    assert len(chunks) > 1
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole = whole + chunk
    assert [(c["name"], c["args"]) for c in whole.tool_calls] == [("get_weather", {"city": "Paris"})]


# With DEFAULT_MODEL (claude-sonnet-5-5), which takes no forced tool_choice, "function_calling" offers
# the schema as an ordinary tool and LangChain warns that the model may not call it.
@pytest.mark.filterwarnings("ignore:You are attempting to use structured output via forced tool calling")
@pytest.mark.parametrize("method", ["function_calling", "json_schema"])
def test_structured_output(chat, mock, method):
    trip = chat().with_structured_output(Trip, method=method).invoke("Plan a 3-day trip to Paris.")
    assert isinstance(trip, Trip)
    assert (trip.city, trip.days) == ("Paris", 3)
    [record] = mock.records
    if method == "json_schema":
        assert record["body"]["output_config"]["format"]["type"] == "json_schema"
    else:
        assert [t["name"] for t in record["body"]["tools"]] == ["Trip"]


def test_recovery_from_two_overloaded_answers(chat, mock):
    mock.fault(529, times=2)
    answer = chat(max_retries=2).invoke("Hello")  # LangChain's default is 2 as well; said here on purpose
    assert answer.text.startswith("(mock) Hello!")
    attempts = mock.records
    assert [r["status"] for r in attempts] == [529, 529, 200]
    assert [r["headers"]["x-stainless-retry-count"] for r in attempts] == ["0", "1", "2"]
