"""The OpenAI Agents SDK (`openai-agents`) against the mock server, with its default model class.

The SDK's default is the Responses API: a `RunConfig` with an `OpenAIProvider` on the
mock's base_url resolves an agent without a model to an `OpenAIResponsesModel`, which
posts to `/v1/responses`. An agent with a function tool runs its whole loop on the mock:
the first response calls the tool, the SDK runs it and sends back the `function_call`
and its `function_call_output` items, the second response answers in words. Tracing is
off (it would export to OpenAI's servers).
"""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.sdk

QUESTION = "What's the weather in Paris?"


@pytest.fixture
def agents():
    return pytest.importorskip("agents")


@pytest.fixture
def run_config(agents, base_url, api_key):
    """The SDK's default provider and model class, on the mock (one client per test: one event loop each)."""
    openai = pytest.importorskip("openai")
    client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0)
    provider = agents.OpenAIProvider(openai_client=client)
    return agents.RunConfig(model_provider=provider, tracing_disabled=True)


def weather_agent(agents, ran: list):
    @agents.function_tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: the city's name, e.g. Paris
        """
        ran.append(city)
        return f"{city}: sunny, 22°C"

    return agents.Agent(name="forecaster", instructions="You answer questions about the weather.",
                        tools=[get_weather])


def test_the_default_model_class_is_the_responses_one(agents, run_config):
    model = run_config.model_provider.get_model(None)
    assert type(model).__name__ == "OpenAIResponsesModel"


def test_an_agent_with_a_function_tool_runs_its_loop_on_the_mock(agents, run_config, mock):
    ran: list = []
    result = agents.Runner.run_sync(weather_agent(agents, ran), QUESTION, run_config=run_config)
    assert ran == ["Paris"]
    assert "Paris" in result.final_output and "sunny" in result.final_output
    first, second = mock.records
    assert first["path"] == second["path"] == "/v1/responses"
    assert first["status"] == second["status"] == 200  # the key went where the API expects it
    assert first["body"]["instructions"] == "You answer questions about the weather."
    assert [t["name"] for t in first["body"]["tools"]] == ["get_weather"]
    call = next(item for item in first["response"]["output"] if item["type"] == "function_call")
    sent = second["body"]["input"]
    kinds = [item.get("type", "message") for item in sent]
    assert kinds[-2:] == ["function_call", "function_call_output"], kinds
    assert sent[-1]["call_id"] == call["call_id"] and "sunny" in sent[-1]["output"]


def test_a_streamed_run(agents, run_config, mock):
    ran: list = []

    async def main():
        result = agents.Runner.run_streamed(weather_agent(agents, ran), QUESTION, run_config=run_config)
        kinds = [event.type async for event in result.stream_events()]
        return result, kinds

    result, kinds = asyncio.run(main())
    assert ran == ["Paris"] and "sunny" in result.final_output
    assert "raw_response_event" in kinds and "run_item_stream_event" in kinds
    assert [r["body"].get("stream") for r in mock.records] == [True, True]
