"""The official `openai` SDK's Responses API against `python -m miniagent.mock` in a subprocess.

The calls a learner copies from OpenAI's docs: `responses.create` plain, with function
tools and a round trip, streamed (the SDK's `responses.stream` accumulator and the raw
`stream=True` events), `responses.parse` with a pydantic model, a `previous_response_id`
chain, `retrieve` and `delete`, the SDK's error classes, and the async client.
"""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mock_server import server_fixture
from pydantic import BaseModel


openai = pytest.importorskip("openai")

pytestmark = pytest.mark.sdk

KEY = "sk-mock-responses-sdk-key-135"
MODEL = "gpt-5.6-luna"
CONTROL = {"authorization": f"Bearer {KEY}"}
WEATHER = [{"type": "function", "name": "get_weather", "description": "Get the current weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "strict": True}]
QUESTION = "What's the weather in Paris and Tokyo?"


class Trip(BaseModel):
    city: str
    days: int


server = server_fixture(KEY)


@pytest.fixture
def client(server):
    httpx2.post(f"{server}/_mock/reset", headers=CONTROL).raise_for_status()
    return openai.OpenAI(base_url=f"{server}/v1", api_key=KEY, max_retries=0)


def records(client):
    return httpx2.get(f"{str(client.base_url).removesuffix('/v1/')}/_mock/requests", headers=CONTROL).json()


def calls(response):
    return [item for item in response.output if item.type == "function_call"]


def test_a_plain_create(client):
    response = client.responses.create(model=MODEL, instructions="Be brief.", input="Hello")
    assert response.id == "resp_mock_0001" and response.status == "completed" and response.model == MODEL
    assert response.output_text.startswith("(mock) Hello!") and response._request_id == "req_mock_0001"
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    [record] = records(client)
    assert record["path"] == "/v1/responses" and record["headers"]["authorization"] == "<redacted>"
    assert record["body"] == {"model": MODEL, "instructions": "Be brief.", "input": "Hello"}


def test_function_tools_with_a_round_trip(client):
    first = client.responses.create(model=MODEL, input=QUESTION, tools=WEATHER, store=False)
    assert [(c.name, c.arguments) for c in calls(first)] == [("get_weather", '{"city":"Paris"}'),
                                                            ("get_weather", '{"city":"Tokyo"}')]
    history = [{"role": "user", "content": QUESTION}, *first.output]  # the SDK's own objects, sent back
    history += [{"type": "function_call_output", "call_id": c.call_id, "output": "sunny, 22°C"} for c in calls(first)]
    final = client.responses.create(model=MODEL, input=history, tools=WEATHER, store=False)
    assert not calls(final) and final.output_text.count("sunny") == 2


def test_a_streamed_response_accumulates_to_the_plain_one(client):
    with client.responses.stream(model=MODEL, input=QUESTION, tools=WEATHER) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds and "response.function_call_arguments.delta" in kinds
    plain = client.responses.create(model=MODEL, input=QUESTION, tools=WEATHER)
    assert [c.arguments for c in calls(streamed)] == [c.arguments for c in calls(plain)]
    assert streamed.output_text == plain.output_text
    raw = client.responses.create(model=MODEL, input="Hello", stream=True)
    events = list(raw)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta").startswith("(mock) Hello!")


def test_parse_with_a_pydantic_model(client):
    response = client.responses.parse(model=MODEL, input="Plan a 3-day trip to Rome", text_format=Trip)
    assert response.output_parsed == Trip(city="Rome", days=3)
    [record] = records(client)
    fmt = record["body"]["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "Trip" and fmt["strict"] is True


def test_a_previous_response_id_chain(client):
    first = client.responses.create(model=MODEL, input=QUESTION, tools=WEATHER)
    outputs = [{"type": "function_call_output", "call_id": c.call_id, "output": "rainy, 9°C"} for c in calls(first)]
    second = client.responses.create(model=MODEL, previous_response_id=first.id, input=outputs, tools=WEATHER)
    assert second.previous_response_id == first.id and second.output_text.count("rainy") == 2
    third = client.responses.create(model=MODEL, previous_response_id=second.id, input="Thanks!", tools=WEATHER)
    assert third.usage.input_tokens > second.usage.input_tokens > first.usage.input_tokens
    assert client.responses.retrieve(second.id).output_text == second.output_text
    client.responses.delete(second.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(second.id)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, previous_response_id=second.id, input="Again")
    assert caught.value.code == "previous_response_not_found" and caught.value.param == "previous_response_id"


def test_errors_are_the_sdks_classes(client):
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model=MODEL, input="x", temperature=5)
    assert caught.value.param == "temperature"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=str(client.base_url), api_key="sk-wrong", max_retries=0).responses.create(
            model=MODEL, input="x")


def test_the_async_client(client):
    async def main():
        async with openai.AsyncOpenAI(base_url=str(client.base_url), api_key=KEY, max_retries=0) as aclient:
            plain = await aclient.responses.create(model=MODEL, input="Hello")
            async with aclient.responses.stream(model=MODEL, input=QUESTION, tools=WEATHER) as stream:
                streamed = await stream.get_final_response()
            return plain, streamed

    plain, streamed = asyncio.run(main())
    assert plain.output_text.startswith("(mock) Hello!") and len(calls(streamed)) == 2
