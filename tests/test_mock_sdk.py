"""The official `anthropic` SDK (2.x) against `python -m miniagent.mock` in a subprocess.

If the SDK can talk to the mock, the mock speaks the real wire format: auth
headers, versions, response shape, error bodies and the headers that drive the
SDK's retries; and streams, whose events the SDK assembles into the very message
the mock answers without streaming.
"""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from miniagent.mock import serve_in_subprocess

anthropic = pytest.importorskip("anthropic")

pytestmark = pytest.mark.sdk

KEY = "sk-mock-sdk-key-789"
MODEL = "claude-sonnet-5-5"  # a model the mock serves (models.py); any other name is the API's 404
HELLO = [{"role": "user", "content": "Hello"}]
WEATHER = {"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
ROOT = Path(__file__).resolve().parents[1]
CONTROL = {"x-api-key": KEY}  # with --api-key, the control endpoints need the key too


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(base_url, path of the server's stderr log) for one mock server process."""
    log_path = tmp_path_factory.mktemp("mock") / "stderr.log"
    with open(log_path, "w") as log:
        proc, base_url = serve_in_subprocess("--api-key", KEY, stderr=log, cwd=ROOT)
    try:
        yield base_url, log_path
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.fixture
def base_url(server):
    url, _ = server
    httpx2.post(f"{url}/_mock/reset", headers=CONTROL).raise_for_status()
    return url


def sdk(base_url, **kwargs):
    kwargs.setdefault("api_key", KEY)
    kwargs.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=base_url, **kwargs)


def records(base_url):
    return httpx2.get(f"{base_url}/_mock/requests", headers=CONTROL).json()


def test_a_plain_create(base_url):
    message = sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO)
    assert message.id == "msg_mock_0001" and message.model == MODEL and message.role == "assistant"
    assert message.content[0].type == "text" and message.content[0].text
    assert message.usage.input_tokens > 0 and message.stop_reason in ("end_turn", "max_tokens")
    assert message._request_id == "req_mock_0001"
    [record] = records(base_url)
    assert record["headers"]["anthropic-version"] == "2026-10-21"
    assert record["headers"]["authorization"] == "<redacted>"


def test_create_pinned_to_the_old_version(base_url):
    client = sdk(base_url, default_headers={"anthropic-version": "2023-06-01"})
    message = client.messages.create(model=MODEL, max_tokens=300, messages=HELLO, extra_body={"temperature": 0.2})
    assert message.id == "msg_mock_0001"
    assert records(base_url)[0]["headers"]["anthropic-version"] == "2023-06-01"


def test_a_tool_round_trip_from_a_script(base_url):
    scripted = [{"content": [{"type": "text", "text": "Checking."},
                             {"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}]},
                {"content": "It is 15 C in Paris."}]
    httpx2.post(f"{base_url}/_mock/script", json=scripted, headers=CONTROL).raise_for_status()
    client = sdk(base_url)
    question = {"role": "user", "content": "Weather in Paris?"}
    first = client.messages.create(model=MODEL, max_tokens=300, messages=[question], tools=[WEATHER])
    assert first.stop_reason == "tool_use"
    call = first.content[1]
    assert (call.type, call.id, call.name, call.input) == ("tool_use", "toolu_mock_0001", "get_weather",
                                                           {"city": "Paris"})
    history = [question, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "15 C"}]}]
    final = client.messages.create(model=MODEL, max_tokens=300, messages=history, tools=[WEATHER])
    assert final.stop_reason == "end_turn" and final.content[0].text == "It is 15 C in Paris."


@pytest.mark.parametrize("carry", ["objects", "model_dump"])
def test_the_brains_tool_call_goes_back_as_the_sdk_carries_it(base_url, carry):
    """The usual ways to put a response back in the history: the SDK's own objects, or its
    model_dump(), which writes every field, `caller` too (the mock says who called, as the API does)."""
    client = sdk(base_url)
    question = {"role": "user", "content": "Weather in Paris?"}
    first = client.messages.create(model=MODEL, max_tokens=300, messages=[question], tools=[WEATHER])
    call = first.content[-1]
    assert call.type == "tool_use" and call.caller.type == "direct"
    content = first.content if carry == "objects" else [b.model_dump() for b in first.content]
    history = [question, {"role": "assistant", "content": content},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "15 C"}]}]
    final = client.messages.create(model=MODEL, max_tokens=300, messages=history, tools=[WEATHER])
    assert final.stop_reason == "end_turn" and "15 C" in final.content[0].text


def test_bad_request_error(base_url):
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO, extra_body={"temperature": 0.2})
    error = caught.value
    assert error.status_code == 400 and error.request_id == "req_mock_0001"
    assert error.body["error"] == {"type": "invalid_request_error",
                                   "message": "temperature: Extra inputs are not permitted"}


def test_authentication_error_with_another_key(base_url):
    with pytest.raises(anthropic.AuthenticationError) as caught:
        sdk(base_url, api_key="sk-not-the-right-one").messages.create(model=MODEL, max_tokens=300, messages=HELLO)
    assert caught.value.status_code == 401
    assert caught.value.body["error"]["message"] == "invalid x-api-key"
    assert "sk-not-the-right-one" not in str(caught.value)


def test_rate_limit_error(base_url):
    with pytest.raises(anthropic.RateLimitError) as caught:
        sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO,
                                      extra_headers={"x-mock-fault": "429"})
    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after-ms"] == "50"


def test_overloaded_error(base_url):
    with pytest.raises(anthropic.OverloadedError) as caught:
        sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO,
                                      extra_headers={"x-mock-fault": "529"})
    assert caught.value.status_code == 529 and caught.value.body["error"]["type"] == "overloaded_error"


def test_the_sdk_retries_once_after_a_429(base_url):
    httpx2.post(f"{base_url}/_mock/fault", json={"status": 429, "times": 1}, headers=CONTROL).raise_for_status()
    message = sdk(base_url, max_retries=2).messages.create(model=MODEL, max_tokens=300, messages=HELLO)
    assert message.id == "msg_mock_0001"
    attempts = records(base_url)
    assert [r["status"] for r in attempts] == [429, 200]
    assert [r["headers"]["x-stainless-retry-count"] for r in attempts] == ["0", "1"]


def test_count_tokens(base_url):
    counted = sdk(base_url).messages.count_tokens(model=MODEL, messages=HELLO, tools=[WEATHER])
    message = sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO, tools=[WEATHER])
    assert counted.input_tokens == message.usage.input_tokens > 0


def test_the_server_logs_one_line_per_request_and_no_key(server, base_url):
    sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO)
    _, log_path = server
    log = log_path.read_text()
    assert "POST /v1/messages 200" in log.splitlines()
    assert KEY not in log


# --- streaming (issue #10) -----------------------------------------------------------------------------

from miniagent.builtin_tools import default_tools  # noqa: E402
from test_mock_stream import accumulate  # noqa: E402  (the tests' own accumulator, independent of the SDK's)

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
SCRIPTED = {"content": [{"type": "text", "text": "Checking the weather in two cities."},
                        {"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}},
                        {"type": "tool_use", "name": "get_weather", "input": {"city": "北京"}}]}
CASES = {
    "plain_text": (dict(messages=HELLO), None),
    "parallel_tools": (dict(messages=[{"role": "user", "content": DEMO}], tools=default_tools().schemas()), None),
    "scripted": (dict(messages=[{"role": "user", "content": "Weather?"}], tools=[WEATHER]), SCRIPTED),
}


def comparable(message) -> dict:
    """A message as a dict; the stream helper sets `stop_details` to None where a plain answer has none."""
    data = message.to_dict()
    if data.get("stop_details", "absent") is None:
        del data["stop_details"]
    return data


def plain_then_streamed(base_url, case):
    """The plain answer to a request, on a freshly reset mock; then reset again (same ids next time)."""
    kwargs, script = CASES[case]
    if script:
        httpx2.post(f"{base_url}/_mock/script", json=[script], headers=CONTROL).raise_for_status()
    plain = sdk(base_url).messages.create(model=MODEL, max_tokens=600, **kwargs)
    httpx2.post(f"{base_url}/_mock/reset", headers=CONTROL).raise_for_status()
    if script:
        httpx2.post(f"{base_url}/_mock/script", json=[script], headers=CONTROL).raise_for_status()
    return plain, kwargs


@pytest.mark.parametrize("case", list(CASES))
def test_the_stream_helper_gives_the_plain_message(base_url, case):
    plain, kwargs = plain_then_streamed(base_url, case)
    with sdk(base_url).messages.stream(model=MODEL, max_tokens=600, **kwargs) as stream:
        texts = list(stream.text_stream)
        final = stream.get_final_message()
    assert comparable(final) == comparable(plain)
    assert "".join(texts) == "".join(b.text for b in plain.content if b.type == "text")
    if case != "plain_text":
        assert sum(b.type == "tool_use" for b in final.content) >= 2  # parallel calls, assembled per index


@pytest.mark.parametrize("case", list(CASES))
def test_create_with_stream_true_gives_the_plain_message(base_url, case):
    plain, kwargs = plain_then_streamed(base_url, case)
    events = [event.to_dict() for event in
              sdk(base_url).messages.create(model=MODEL, max_tokens=600, stream=True, **kwargs)]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert "ping" not in [e["type"] for e in events]  # the SDK never surfaces pings
    assert accumulate(events) == plain.to_dict()
    [record] = records(base_url)
    assert record["body"]["stream"] is True and record["response"][2] == {"type": "ping"}


def test_a_mid_stream_error_event_raises_api_status_error(base_url):
    seen = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        for event in sdk(base_url).messages.create(model=MODEL, max_tokens=300, messages=HELLO, stream=True,
                                                   extra_headers={"x-mock-fault": "error-after=4"}):
            seen.append(event.type)
    error = caught.value
    assert not isinstance(error, anthropic.OverloadedError)  # after the 200: not the 529 class
    assert (error.status_code, error.type, error.request_id) == (200, "overloaded_error", "req_mock_0001")
    assert error.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert seen == ["message_start", "content_block_start", "content_block_delta"]  # the ping is not surfaced


def test_a_cut_stream_raises_a_connection_error(server, base_url):
    with pytest.raises(Exception) as caught:
        with sdk(base_url).messages.stream(model=MODEL, max_tokens=300, messages=HELLO,
                                           extra_headers={"x-mock-fault": "cut=5"}) as stream:
            stream.get_final_message()
    error = caught.value
    # anthropic 2.x reads with its own httpx2 fork and lets its transport error through mid-stream
    assert isinstance(error, anthropic.APIConnectionError) or type(error).__name__ == "RemoteProtocolError", error
    assert "incomplete chunked read" in str(error)
    _, log_path = server
    assert "POST /v1/messages 200 (stream of 5 events, cut by a fault)" in log_path.read_text().splitlines()


# --- thinking, structured outputs, prompt caching (issue #11) --------------------------------------------

from miniagent.mock import thinking as mock_thinking  # noqa: E402

THINKING = {"type": "enabled", "budget_tokens": 1024}


def test_the_stream_helper_accumulates_a_thinking_answer(base_url):
    kwargs = dict(model=MODEL, max_tokens=2048, messages=[{"role": "user", "content": "Weather in Paris?"}],
                  tools=[WEATHER], thinking=THINKING)
    plain = sdk(base_url).messages.create(**kwargs)
    httpx2.post(f"{base_url}/_mock/reset", headers=CONTROL).raise_for_status()
    with sdk(base_url).messages.stream(**kwargs) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert comparable(final) == comparable(plain)
    block = final.content[0]
    assert block.type == "thinking" and block.thinking.startswith("(mock) ") and block.signature
    assert mock_thinking.verify(block.model_dump()) and [b.type for b in final.content[1:]] == ["text", "tool_use"]
    assert "thinking" in kinds and "signature" in kinds  # the helper's own events for the two deltas
    call = final.content[-1]
    history = [kwargs["messages"][0], {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Paris: 18°C"}]}]
    answer = sdk(base_url).messages.create(**{**kwargs, "messages": history})
    assert [b.type for b in answer.content] == ["thinking", "text"] and "18°C" in answer.content[1].text


def test_parse_with_a_pydantic_output_format(base_url):
    pydantic = pytest.importorskip("pydantic")

    class Lead(pydantic.BaseModel):
        name: str
        email: str
        plan_interest: str
        demo_requested: bool

    message = sdk(base_url).messages.parse(
        model=MODEL, max_tokens=1024, output_format=Lead,
        messages=[{"role": "user", "content": "John Smith (john@example.com) wants the Enterprise plan and a demo."}])
    lead = message.parsed_output
    assert isinstance(lead, Lead) and (lead.name, lead.email, lead.demo_requested) == \
        ("John Smith", "john@example.com", True)
    assert records(base_url)[0]["body"]["output_config"]["format"]["schema"]["additionalProperties"] is False


def test_prompt_caching_over_http(base_url):
    system = [{"type": "text", "text": "You answer questions about a small bookshop. " * 100,
               "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    client = sdk(base_url)
    first, second = (client.messages.create(model=MODEL, max_tokens=300, system=system,
                                            messages=[{"role": "user", "content": question}])
                     for question in ("Hello", "Do you sell maps?"))
    assert first.usage.cache_creation_input_tokens > 1024 and first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    counted = client.messages.count_tokens(model=MODEL, system=system,
                                           messages=[{"role": "user", "content": "Do you sell maps?"}])
    assert counted.input_tokens == second.usage.input_tokens + second.usage.cache_read_input_tokens
