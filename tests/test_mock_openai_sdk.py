"""The official `openai` SDK against `python -m miniagent.mock` in a subprocess.

If the SDK can talk to the mock, the mock speaks OpenAI's wire format: the base_url
with /v1, Bearer auth, the completion's shape, a stream the SDK's helper assembles
into the plain answer (parallel tool calls kept apart by index), its error classes
by status, embeddings in the base64 form the SDK asks for, and the model list.
"""

from __future__ import annotations


import httpx2
import pytest
from mock_server import server_fixture

from miniagent.builtin_tools import default_tools

openai = pytest.importorskip("openai")

pytestmark = pytest.mark.sdk

KEY = "sk-mock-openai-sdk-key-321"
MODEL = "gpt-4o-mini"  # any name: the Chat Completions surface serves every model name
HELLO = [{"role": "user", "content": "Hello"}]
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
TOOLS = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                           "parameters": t["input_schema"]}} for t in default_tools().schemas()]
RESULTS = {"get_current_time": "2026-05-09 14:23:11 (Asia/Shanghai), Saturday", "calculate": "3584"}
CONTROL = {"authorization": f"Bearer {KEY}"}


server = server_fixture(KEY)


@pytest.fixture
def base_url(server):
    httpx2.post(f"{server}/_mock/reset", headers=CONTROL).raise_for_status()
    return server


def client(base_url, **kwargs):
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=f"{base_url}/v1", **kwargs)


def records(base_url):
    return httpx2.get(f"{base_url}/_mock/requests", headers=CONTROL).json()


def result_of(call) -> str:
    name = call.function.name
    return RESULTS.get(name) or f"{call.function.arguments}: sunny, 22°C"


def test_a_plain_completion(base_url):
    completion = client(base_url).chat.completions.create(model=MODEL, messages=HELLO)
    assert completion.id == "chatcmpl-mock_0001" and completion.object == "chat.completion"
    assert completion.model == MODEL and completion._request_id == "req_mock_0001"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    assert choice.message.content.startswith("(mock) ") and choice.message.tool_calls is None
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    [record] = records(base_url)
    assert record["path"] == "/v1/chat/completions" and record["headers"]["authorization"] == "<redacted>"


@pytest.mark.parametrize("carry", ["object", "model_dump"])
def test_a_parallel_tool_call_round_trip(base_url, carry):
    """The demo question: four calls in one answer; their results back as tool messages; a final answer."""
    sdk = client(base_url)
    question = {"role": "user", "content": DEMO}
    first = sdk.chat.completions.create(model=MODEL, messages=[question], tools=TOOLS)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("get_current_time", "{}"), ("calculate", '{"expression":"(1024 + 768) * 2"}'),
        ("get_weather", '{"city":"北京"}'), ("get_weather", '{"city":"上海"}')]
    assert [c.id for c in message.tool_calls] == [f"call_mock_000{i}" for i in range(1, 5)]
    sent = message if carry == "object" else message.model_dump(exclude_none=True)
    history = [question, sent] + [{"role": "tool", "tool_call_id": c.id, "content": result_of(c)}
                                  for c in message.tool_calls]
    final = sdk.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)
    assert final.choices[0].finish_reason == "stop" and final.choices[0].message.tool_calls is None
    answer = final.choices[0].message.content
    assert "3584" in answer and "北京" in answer and "上海" in answer and "14:23:11" in answer


def test_the_stream_helper_separates_the_tool_calls(base_url):
    kwargs = dict(model=MODEL, messages=[{"role": "user", "content": DEMO}], tools=TOOLS)
    plain = client(base_url).chat.completions.create(**kwargs)
    httpx2.post(f"{base_url}/_mock/reset", headers=CONTROL).raise_for_status()
    with client(base_url).chat.completions.stream(**kwargs, stream_options={"include_usage": True}) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    assert "tool_calls.function.arguments.done" in kinds and "content.done" in kinds
    calls = final.choices[0].message.tool_calls
    assert [(c.id, c.type, c.function.name, c.function.arguments) for c in calls] == \
        [(c.id, c.type, c.function.name, c.function.arguments) for c in plain.choices[0].message.tool_calls]
    assert final.choices[0].message.content == plain.choices[0].message.content
    assert final.choices[0].finish_reason == "tool_calls" and final.usage.total_tokens == plain.usage.total_tokens
    assert final.id == plain.id and final.model == MODEL


def test_create_with_stream_true_yields_chunks(base_url):
    chunks = list(client(base_url).chat.completions.create(model=MODEL, messages=HELLO, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.choices[0].delta.role is None for c in chunks[1:])
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage is None
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.startswith("(mock) ")


def test_a_mid_stream_error_raises_api_error(base_url):
    with pytest.raises(openai.APIError) as caught:
        for _ in client(base_url).chat.completions.create(model=MODEL, messages=HELLO, stream=True,
                                                          extra_headers={"x-mock-fault": "error-after=3"}):
            pass
    assert not isinstance(caught.value, openai.APIStatusError)  # after the 200: no status to speak of
    assert caught.value.type == "server_error" and "overloaded" in caught.value.message


def test_bad_request_error(base_url):
    orphan = [*HELLO, {"role": "tool", "tool_call_id": "call_x", "content": "15 C"}]
    with pytest.raises(openai.BadRequestError) as caught:
        client(base_url).chat.completions.create(model=MODEL, messages=orphan)
    error = caught.value
    assert error.status_code == 400 and error.request_id == "req_mock_0001"
    assert (error.type, error.param, error.code) == ("invalid_request_error", "messages.[1].role", None)
    assert error.body["message"].startswith("Invalid parameter: messages with role 'tool' must be a response")


def test_authentication_error_with_another_key(base_url):
    with pytest.raises(openai.AuthenticationError) as caught:
        client(base_url, api_key="sk-not-the-right-one").chat.completions.create(model=MODEL, messages=HELLO)
    assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
    assert "sk-not-the-right-one" not in str(caught.value)


def test_rate_limit_error(base_url):
    with pytest.raises(openai.RateLimitError) as caught:
        client(base_url).chat.completions.create(model=MODEL, messages=HELLO, extra_headers={"x-mock-fault": "429"})
    error = caught.value
    assert (error.status_code, error.type, error.code) == (429, "requests", "rate_limit_exceeded")
    assert error.response.headers["retry-after-ms"] == "50"


def test_the_sdk_retries_after_a_queued_429_and_an_overload(base_url):
    for status in (429, 503):
        httpx2.post(f"{base_url}/_mock/fault", json={"status": status}, headers=CONTROL).raise_for_status()
    completion = client(base_url, max_retries=2).chat.completions.create(model=MODEL, messages=HELLO)
    assert completion.choices[0].finish_reason == "stop"
    attempts = records(base_url)
    assert [r["status"] for r in attempts] == [429, 503, 200]
    assert [r["headers"]["x-stainless-retry-count"] for r in attempts] == ["0", "1", "2"]


def test_a_scripted_answer_comes_out_translated(base_url):
    script = [{"content": [{"type": "text", "text": "Checking."},
                           {"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}]}]
    httpx2.post(f"{base_url}/_mock/script", json=script, headers=CONTROL).raise_for_status()
    completion = client(base_url).chat.completions.create(model=MODEL, messages=HELLO, tools=TOOLS)
    message = completion.choices[0].message
    assert message.content == "Checking." and completion.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls[0].function.arguments == '{"city":"Paris"}'


def test_embeddings(base_url):
    sdk = client(base_url)
    texts = ["The weather in Beijing today", "Beijing weather forecast", "A recipe for apple pie"]
    given = sdk.embeddings.create(model="text-embedding-3-small", input=texts)  # the SDK asks for base64
    floats = sdk.embeddings.create(model="text-embedding-3-small", input=texts, encoding_format="float")
    assert [len(d.embedding) for d in given.data] == [1536] * 3 and given.usage.prompt_tokens > 0
    for a, b in zip(given.data, floats.data):
        assert a.embedding == pytest.approx(b.embedding, abs=1e-6)
    [weather, forecast, pie] = (d.embedding for d in floats.data)
    dot = lambda u, v: sum(x * y for x, y in zip(u, v))  # noqa: E731  unit vectors
    assert dot(weather, forecast) > dot(weather, pie)
    small = sdk.embeddings.create(model="my-embedder", input="hello", dimensions=64)
    assert len(small.data[0].embedding) == 64 and small.model == "my-embedder"


def test_models(base_url):
    listed = client(base_url).models.list()
    ids = [m.id for m in listed]
    assert ids and all(m.object == "model" and m.owned_by == "miniagent-mock" for m in listed)
    assert client(base_url).models.retrieve(MODEL).id == MODEL
