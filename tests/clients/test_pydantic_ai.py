"""pydantic-ai's `Agent` with its Anthropic model (pydantic-ai-slim[anthropic]) against the mock server.

The same five behaviours as for LangChain, the pydantic-ai way: `run_sync`, a tool
registered with `@agent.tool_plain` that the agent runs itself, `run_stream`,
`output_type=PydanticModel` (the default for this model, `output_config.format`; and
`ToolOutput`, a `final_result` tool), and the SDK's retries getting through two 529s.
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
def pydantic_ai():
    return pytest.importorskip("pydantic_ai")


@pytest.fixture
def model(base_url, api_key, pydantic_ai):
    """An AnthropicModel for DEFAULT_MODEL on the mock, one per test (its HTTP client belongs to one event loop)."""
    anthropic_models = pytest.importorskip("pydantic_ai.models.anthropic")
    providers = pytest.importorskip("pydantic_ai.providers.anthropic")
    return anthropic_models.AnthropicModel(
        DEFAULT_MODEL, provider=providers.AnthropicProvider(api_key=api_key, base_url=base_url))


NO_RETRIES = {"max_retries": 0}  # a failure shows at once, in one record


def test_a_plain_call(pydantic_ai, model, mock):
    result = pydantic_ai.Agent(model, model_settings=NO_RETRIES).run_sync("Hello")
    assert result.output.startswith("(mock) Hello!")
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.response.model_name == DEFAULT_MODEL
    [record] = mock.records
    assert record["status"] == 200  # so the key was sent as the API expects (the mock requires it)
    assert record["body"]["model"] == DEFAULT_MODEL
    assert record["body"]["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]


def test_a_tool_round_trip(pydantic_ai, model, mock):
    agent = pydantic_ai.Agent(model, model_settings=NO_RETRIES)
    ran = []

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        ran.append(city)
        return f"Sunny, 21 C in {city}"

    result = agent.run_sync(WEATHER_QUESTION)
    assert ran == ["Paris"]
    assert "Sunny, 21 C in Paris" in result.output
    first_request, second_request = mock.records
    assert [t["name"] for t in first_request["body"]["tools"]] == ["get_weather"]
    *_, assistant, results = second_request["body"]["messages"]  # the call sent back, then its result
    [call] = [b for b in assistant["content"] if b["type"] == "tool_use"]
    [result_block] = results["content"]
    assert (call["name"], call["input"]) == ("get_weather", {"city": "Paris"})
    assert (result_block["type"], result_block["tool_use_id"]) == ("tool_result", call["id"])
    assert result_block["content"] == [{"type": "text", "text": "Sunny, 21 C in Paris"}]


def test_streaming(pydantic_ai, model, mock):
    plain = pydantic_ai.Agent(model, model_settings=NO_RETRIES).run_sync("Hello").output
    mock.reset()

    async def collect():
        async with pydantic_ai.Agent(model, model_settings=NO_RETRIES).run_stream("Hello") as result:
            # debounce_by=None: every delta as it arrives (the default groups those within 0.1 s)
            return [piece async for piece in result.stream_text(delta=True, debounce_by=None)]

    pieces = asyncio.run(collect())
    assert len(pieces) > 1, pieces
    assert "".join(pieces) == plain
    [record] = mock.records
    assert record["body"]["stream"] is True


class BareTrip(BaseModel):
    city: str
    days: int


# ToolOutput offers the schema as a tool named `final_result`, not forced (claude-sonnet-5-5 takes
# no forced tool_choice): described by Trip's docstring, or, for a model without one, as "The final
# response which ends this conversation". A model answers through it either way.
@pytest.mark.parametrize("how", ["default", "ToolOutput", "ToolOutput without a docstring"])
def test_structured_output(pydantic_ai, model, mock, how):
    output_type = {"default": Trip, "ToolOutput": pydantic_ai.ToolOutput(Trip),
                   "ToolOutput without a docstring": pydantic_ai.ToolOutput(BareTrip)}[how]
    result = pydantic_ai.Agent(model, output_type=output_type, model_settings=NO_RETRIES) \
        .run_sync("Plan a 3-day trip to Paris.")
    trip = result.output
    assert isinstance(trip, BareTrip if "docstring" in how else Trip)
    assert (trip.city, trip.days) == ("Paris", 3)
    first = mock.records[0]["body"]
    if how == "default":  # for this model pydantic-ai picks the API's own structured output
        assert first["output_config"]["format"]["type"] == "json_schema"
    else:
        assert [t["name"] for t in first["tools"]] == ["final_result"]


def test_recovery_from_two_overloaded_answers(pydantic_ai, model, mock):
    mock.fault(529, times=2)
    # the SDK's default is 2 retries as well; said here on purpose
    result = pydantic_ai.Agent(model, model_settings={"max_retries": 2}).run_sync("Hello")
    assert result.output.startswith("(mock) Hello!")
    attempts = mock.records
    assert [r["status"] for r in attempts] == [529, 529, 200]
    assert [r["headers"]["x-stainless-retry-count"] for r in attempts] == ["0", "1", "2"]
