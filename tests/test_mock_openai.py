"""The mock's OpenAI surfaces (issue 13): Chat Completions, embeddings, the model list.

In-process, through `mock.transport()`: the translation both ways, every validation
rule with its exact words, the stream's chunks (assembled as the SDK's helper does, they
give the plain answer), embeddings, faults, scripts and records, and hostile bodies.
The official `openai` SDK itself is in test_mock_openai_sdk.py (make test-clients).
"""

from __future__ import annotations

import base64
import json
import struct

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniagent.builtin_tools import default_tools
from miniagent.mock import MockAPI
from miniagent.mock import openai_chat, openai_stream
from miniagent.mock.embeddings import cosine

KEY = "sk-mock-openai-test-9876"
BEARER = {"authorization": f"Bearer {KEY}"}
HELLO = [{"role": "user", "content": "Hello"}]
BODY = {"model": "gpt-4o-mini", "messages": HELLO}
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
SCHEMAS = default_tools().schemas()
TOOLS = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                           "parameters": t["input_schema"]}} for t in SCHEMAS]
WEATHER = [TOOLS[0]]
CALL = {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}


@pytest.fixture
def mock():
    return MockAPI()


def post(mock, path, body, headers=BEARER, raw=None):
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        return client.post(path, headers=headers, content=raw if raw is not None else json.dumps(body))


def chat(mock, body, headers=BEARER, **extra):
    return post(mock, "/v1/chat/completions", {**body, **extra}, headers)


def error_of(response) -> tuple[int, str, str | None, str | None]:
    """(status, message, param, code), after checking OpenAI's error shape."""
    data = response.json()
    assert set(data) == {"error"} and set(data["error"]) == {"message", "type", "param", "code"}, data
    assert response.headers["x-request-id"].startswith("req_mock_") and "request-id" not in response.headers
    return response.status_code, data["error"]["message"], data["error"]["param"], data["error"]["code"]


def chunks_of(response) -> list:
    """The data lines of a stream: dicts, then "[DONE]"."""
    lines = [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def merge(into: dict, delta: dict) -> None:
    """The SDK's rule (lib/streaming/_deltas.py): strings are joined, lists merged by `index`."""
    for key, value in delta.items():
        if isinstance(value, list):
            into.setdefault(key, [])
            for item in value:
                index = item["index"]
                while len(into[key]) <= index:
                    into[key].append({})
                merge(into[key][index], {k: v for k, v in item.items() if k != "index"})
        elif key not in into or into[key] is None:
            into[key] = json.loads(json.dumps(value))
        elif isinstance(value, str):
            into[key] += value
        elif isinstance(value, dict):
            merge(into[key], value)


def assemble(chunks: list) -> dict:
    """A completion from its chunks, as the SDK's stream helper builds one."""
    out = {"choices": {}}
    for chunk in chunks[:-1]:
        for key in ("id", "object", "created", "model", "system_fingerprint"):
            out[key] = chunk[key]
        if chunk.get("usage"):
            out["usage"] = chunk["usage"]
        for choice in chunk["choices"]:
            slot = out["choices"].setdefault(choice["index"], {"index": choice["index"], "message": {}})
            merge(slot["message"], choice["delta"])
            slot["finish_reason"] = choice["finish_reason"]
    out["choices"] = [out["choices"][i] for i in sorted(out["choices"])]
    return out


def plain_shape(completion: dict) -> dict:
    """The parts of a plain completion a stream carries."""
    out = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
    out["choices"] = [{"index": c["index"], "finish_reason": c["finish_reason"],
                       "message": {k: v for k, v in c["message"].items() if k != "annotations"}}
                      for c in completion["choices"]]
    return out


# --- translation, both ways --------------------------------------------------------------------


def test_a_conversation_reads_as_the_canonical_messages_request():
    body = {"model": "m", "max_completion_tokens": 50, "max_tokens": 999, "stop": "END", "tools": WEATHER,
            "parallel_tool_calls": False,
            "messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
                         {"role": "assistant", "content": None, "tool_calls": [CALL, {**CALL, "id": "call_b"}]},
                         {"role": "tool", "tool_call_id": "call_a", "content": "15 C"},
                         {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "16 C"}]},
                         {"role": "developer", "content": "Use Celsius."},
                         {"role": "user", "content": "Thanks"}]}
    canonical = openai_chat.read_request(body)
    assert canonical["system"] == "Be brief.\n\nUse Celsius."
    assert canonical["max_tokens"] == 50 and canonical["stop_sequences"] == ["END"]
    assert canonical["tools"] == [{"name": "get_weather", "description": SCHEMAS[0]["description"],
                                   "input_schema": SCHEMAS[0]["input_schema"]}]
    assert canonical["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert canonical["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather?"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                  "data": "AAAA"}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_a", "name": "get_weather",
                                           "input": {"city": "Paris"}},
                                          {"type": "tool_use", "id": "call_b", "name": "get_weather",
                                           "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a", "content": "15 C"},
                                     {"type": "tool_result", "tool_use_id": "call_b", "content": "16 C"},
                                     {"type": "text", "text": "Thanks"}]}]


@pytest.mark.parametrize("choice, parallel, expected", [
    ("auto", None, {"type": "auto"}), ("none", None, {"type": "none"}), ("required", None, {"type": "any"}),
    ({"type": "function", "function": {"name": "get_weather"}}, None, {"type": "tool", "name": "get_weather"}),
    ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
    (None, None, None), ("none", False, {"type": "none"}),
])
def test_tool_choice_reads_as_the_messages_api_one(choice, parallel, expected):
    body = {**BODY, "tools": WEATHER, "tool_choice": choice, "parallel_tool_calls": parallel}
    assert openai_chat.read_request(body).get("tool_choice") == expected


def test_a_plain_answer_in_openai_shape(mock):
    data = chat(mock, BODY).json()
    assert list(data) == ["id", "object", "created", "model", "choices", "usage", "service_tier",
                          "system_fingerprint"]
    assert (data["id"], data["object"], data["created"], data["model"]) == \
        ("chatcmpl-mock_0001", "chat.completion", openai_chat.CREATED, "gpt-4o-mini")
    [choice] = data["choices"]
    assert choice["finish_reason"] == "stop" and choice["logprobs"] is None
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"].startswith("(mock) ")
    assert "tool_calls" not in choice["message"]
    usage = data["usage"]
    assert usage["prompt_tokens"] > 0 and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_the_demo_question_makes_the_same_four_calls_on_both_apis(mock):
    anthropic = post(mock, "/v1/messages", {"model": "claude-sonnet-5-5", "max_tokens": 1024, "tools": SCHEMAS,
                                            "messages": [{"role": "user", "content": DEMO}]},
                     {"x-api-key": KEY, "anthropic-version": "2023-06-01"}).json()
    openai = chat(mock, {"model": "gpt-4o", "tools": TOOLS, "messages": [{"role": "user", "content": DEMO}]}).json()
    message = openai["choices"][0]["message"]
    expected = [(b["name"], b["input"]) for b in anthropic["content"] if b["type"] == "tool_use"]
    assert expected == [("get_current_time", {}), ("calculate", {"expression": "(1024 + 768) * 2"}),
                        ("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"]] == expected
    assert [c["id"] for c in message["tool_calls"]] == ["call_mock_0005", "call_mock_0006", "call_mock_0007",
                                                        "call_mock_0008"]
    assert message["content"] == "".join(b["text"] for b in anthropic["content"] if b["type"] == "text")
    assert openai["choices"][0]["finish_reason"] == "tool_calls"


def test_a_tool_round_trip_and_the_final_answer(mock):
    first = chat(mock, {**BODY, "tools": TOOLS, "messages": [{"role": "user", "content": DEMO}]}).json()
    message = first["choices"][0]["message"]
    results = {"get_current_time": "2026-05-09 14:23:11", "calculate": "3584"}
    history = [{"role": "user", "content": DEMO}, message] + [
        {"role": "tool", "tool_call_id": c["id"], "content": results.get(c["function"]["name"], "sunny")}
        for c in message["tool_calls"]]
    final = chat(mock, {**BODY, "tools": TOOLS, "messages": history}).json()["choices"][0]
    assert final["finish_reason"] == "stop" and "3584" in final["message"]["content"]


def test_a_call_cut_off_by_max_tokens_carries_cut_arguments_and_cannot_be_sent_back(mock):
    question = {"role": "user", "content": "Weather in Paris and in San Francisco?"}
    data = chat(mock, {**BODY, "tools": WEATHER, "max_tokens": 27, "messages": [question]}).json()
    choice = data["choices"][0]
    assert choice["finish_reason"] == "length"
    [call] = choice["message"]["tool_calls"]
    assert call["function"]["arguments"] == '{"city":"Pari'
    back = chat(mock, {**BODY, "tools": WEATHER, "messages": [question, choice["message"],
                                                              {"role": "tool", "tool_call_id": call["id"], "content": "?"}]})
    status, message, param, code = error_of(back)
    assert (status, param, code) == (400, "messages[1].tool_calls[0].function.arguments", "invalid_value")
    assert message.startswith("Invalid 'messages[1].tool_calls[0].function.arguments': the arguments are not valid JSON")


def test_a_final_assistant_message_is_context_not_a_prefill(mock):
    messages = [{"role": "user", "content": "My name is Ann."}, {"role": "assistant", "content": "Noted"}]
    text = chat(mock, {**BODY, "messages": messages}).json()["choices"][0]["message"]["content"]
    assert text.startswith("(mock) ") and "Ann" in text


def test_json_formats_answer_json(mock):
    asked = [{"role": "user", "content": "Weather in Paris, as JSON please"}]
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    given_schema = chat(mock, {**BODY, "messages": asked, "response_format": {
        "type": "json_schema", "json_schema": {"name": "weather", "schema": schema}}}).json()
    assert json.loads(given_schema["choices"][0]["message"]["content"]) == {"city": "Paris"}
    json_mode = chat(mock, {**BODY, "messages": asked, "response_format": {"type": "json_object"}}).json()
    assert set(json.loads(json_mode["choices"][0]["message"]["content"])) == {"answer"}


def test_n_choices_repeat_the_answer(mock):
    data = chat(mock, {**BODY, "n": 3}).json()
    assert [c["index"] for c in data["choices"]] == [0, 1, 2]
    assert len({json.dumps(c["message"]) for c in data["choices"]}) == 1
    one = chat(MockAPI(), BODY).json()
    assert data["usage"]["completion_tokens"] == 3 * one["usage"]["completion_tokens"]


# --- validation: each rule, in the API's words -----------------------------------------------------

ASK = {"role": "user", "content": "Weather?"}
CALLED = {"role": "assistant", "content": None, "tool_calls": [CALL, {**CALL, "id": "call_b"}]}
RULES = {
    "no model": ({"messages": HELLO}, "you must provide a model parameter", None, None),
    "model not a string": ({**BODY, "model": 5},
                           "Invalid type for 'model': expected a string, but got an integer instead.",
                           "model", "invalid_type"),
    "no messages": ({"model": "m"}, "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"),
    "empty messages": ({**BODY, "messages": []}, "Invalid 'messages': empty array. Expected an array with minimum "
                       "length 1, but got an empty array instead.", "messages", "empty_array"),
    "unknown role": ({**BODY, "messages": [{"role": "bot", "content": "x"}]},
                     "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', "
                     "and 'developer'.", "messages[0].role", "invalid_value"),
    "no content": ({**BODY, "messages": [{"role": "user"}]}, "Missing required parameter: 'messages[0].content'.",
                   "messages[0].content", "missing_required_parameter"),
    "content of a wrong type": ({**BODY, "messages": [{"role": "user", "content": 7}]},
                                "Invalid type for 'messages[0].content': expected one of a string or array of "
                                "objects, but got an integer instead.", "messages[0].content", "invalid_type"),
    "unknown part": ({**BODY, "messages": [{"role": "user", "content": [{"type": "video"}]}]},
                     "Invalid value: 'video'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.",
                     "messages[0].content[0].type", "invalid_value"),
    "a tool message with no tool_calls before it": (
        {**BODY, "messages": [ASK, {"role": "tool", "tool_call_id": "call_a", "content": "15 C"}]},
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        "messages.[1].role", None),
    "a tool message without tool_call_id": (
        {**BODY, "messages": [ASK, CALLED, {"role": "tool", "content": "15 C"}]},
        "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
        "messages.[2].tool_call_id", None),
    "tool calls left unanswered": (
        {**BODY, "messages": [ASK, CALLED, {"role": "tool", "tool_call_id": "call_a", "content": "15 C"}, ASK]},
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: call_b", "messages.[1].role", None),
    "tool calls at the end": (
        {**BODY, "messages": [ASK, CALLED]},
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: call_a, call_b",
        "messages.[1].role", None),
    "an answer to a call never made": (
        {**BODY, "messages": [ASK, CALLED, {"role": "tool", "tool_call_id": "call_zzz", "content": "?"}]},
        "Invalid parameter: 'tool_call_id' of 'call_zzz' not found in 'tool_calls' of previous message.",
        "messages.[2].tool_call_id", None),
    "an assistant message with nothing": (
        {**BODY, "messages": [ASK, {"role": "assistant", "content": None}, ASK]},
        "Invalid value for 'content': expected a string, got null.", "messages.[1].content", None),
    "empty tool_calls": ({**BODY, "messages": [ASK, {"role": "assistant", "tool_calls": []}]},
                         "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, "
                         "but got an empty array instead.", "messages[1].tool_calls", "empty_array"),
    "a bad tool name": (
        {**BODY, "tools": [{"type": "function", "function": {"name": "get weather"}}]},
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.", "tools[0].function.name", "invalid_value"),
    "a bad name in a call sent back": (
        {**BODY, "messages": [ASK, {"role": "assistant", "tool_calls": [
            {**CALL, "function": {"name": "get.weather", "arguments": "{}"}}]}]},
        "Invalid 'messages[1].tool_calls[0].function.name': string does not match pattern. Expected a string that "
        "matches the pattern '^[a-zA-Z0-9_-]+$'.", "messages[1].tool_calls[0].function.name", "invalid_value"),
    "a tool name too long": (
        {**BODY, "tools": [{"type": "function", "function": {"name": "x" * 65}}]},
        "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a "
        "string with length 65 instead.", "tools[0].function.name", "string_above_max_length"),
    "a description too long": (
        {**BODY, "tools": [{"type": "function", "function": {"name": "f", "description": "d" * 1025}}]},
        "Invalid 'tools[0].function.description': string too long. Expected a string with maximum length 1024, but "
        "got a string with length 1025 instead.", "tools[0].function.description", "string_above_max_length"),
    "no tool type": ({**BODY, "tools": [{"function": {"name": "f"}}]}, "Missing required parameter: 'tools[0].type'.",
                     "tools[0].type", "missing_required_parameter"),
    "empty tools": ({**BODY, "tools": []}, "Invalid 'tools': empty array. Expected an array with minimum length 1, "
                    "but got an empty array instead.", "tools", "empty_array"),
    "arguments not JSON": (
        {**BODY, "messages": [ASK, {"role": "assistant", "tool_calls": [
            {**CALL, "function": {"name": "f", "arguments": "{\"city\": "}}]}]},
        None, "messages[1].tool_calls[0].function.arguments", "invalid_value"),
    "arguments not an object": (
        {**BODY, "messages": [ASK, {"role": "assistant", "tool_calls": [
            {**CALL, "function": {"name": "f", "arguments": "[1, 2]"}}]}]},
        "Invalid 'messages[1].tool_calls[0].function.arguments': the arguments must be a JSON object, not list.",
        "messages[1].tool_calls[0].function.arguments", "invalid_value"),
    "stream_options without stream": ({**BODY, "stream_options": {"include_usage": True}},
                                      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                                      "stream_options", None),
    "a forced tool without tools": ({**BODY, "tool_choice": "required"},
                                    "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                                    "specified.", "tool_choice", None),
    "parallel_tool_calls without tools": ({**BODY, "parallel_tool_calls": False},
                                          "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only "
                                          "allowed when 'tools' are specified.", "parallel_tool_calls", None),
    "an unknown tool_choice": ({**BODY, "tools": WEATHER, "tool_choice": "always"},
                               "Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.",
                               "tool_choice", "invalid_value"),
    "a forced function not among the tools": (
        {**BODY, "tools": WEATHER, "tool_choice": {"type": "function", "function": {"name": "fly"}}},
        "Invalid value for 'tool_choice': no function named 'fly' in 'tools' (defined: get_weather).",
        "tool_choice", "invalid_value"),
    "temperature too high": ({**BODY, "temperature": 3}, "Invalid 'temperature': decimal above maximum value. "
                             "Expected a value <= 2, but got 3 instead.", "temperature", "decimal_above_max_value"),
    "max_tokens below 1": ({**BODY, "max_tokens": 0}, "Invalid 'max_tokens': integer below minimum value. Expected "
                           "a value >= 1, but got 0 instead.", "max_tokens", "integer_below_min_value"),
    "max_tokens a string": ({**BODY, "max_tokens": "100"}, "Invalid type for 'max_tokens': expected an integer, "
                            "but got a string instead.", "max_tokens", "invalid_type"),
    "max_completion_tokens too large": (
        {**BODY, "max_completion_tokens": 200_000}, "max_completion_tokens is too large: 200000. This model supports "
        "at most 128000 completion tokens, whereas you provided 200000.", "max_completion_tokens", "invalid_value"),
    "five stop sequences": ({**BODY, "stop": ["a", "b", "c", "d", "e"]}, "Invalid 'stop': array too long. Expected "
                            "an array with maximum length 4, but got an array with length 5 instead.", "stop",
                            "array_above_max_length"),
    "json mode without the word": ({**BODY, "response_format": {"type": "json_object"}},
                                   "'messages' must contain the word 'json' in some form, to use 'response_format' "
                                   "of type 'json_object'.", "messages", None),
    "a schema without a name": ({**BODY, "response_format": {"type": "json_schema", "json_schema": {}}},
                                "Missing required parameter: 'response_format.json_schema.name'.",
                                "response_format.json_schema.name", "missing_required_parameter"),
    "the deprecated functions": ({**BODY, "functions": [{"name": "f"}]}, None, "functions", "invalid_value"),
    "a body that is a list": ([], None, None, None),
}


@pytest.mark.parametrize("case", list(RULES))
def test_each_rule_is_a_400_in_the_apis_words(mock, case):
    body, message, param, code = RULES[case]
    status, said, said_param, said_code = error_of(post(mock, "/v1/chat/completions", body))
    assert (status, said_param, said_code) == (400, param, code), said
    if message is not None:
        assert said == message


def test_the_context_window(mock):
    status, message, param, code = error_of(chat(mock, {**BODY, "messages": [{"role": "user", "content": "字" * 130_000}]}))
    assert (status, param, code) == (400, "messages", "context_length_exceeded")
    assert message.startswith("This model's maximum context length is 128000 tokens. However, your messages resulted "
                              "in 130")


@pytest.mark.parametrize("raw", [b"{not json", b"[" * 5_000, b'{"model": NaN}', b"\xff\xfe"])
def test_a_body_that_is_not_json(mock, raw):
    status, message, param, code = error_of(post(mock, "/v1/chat/completions", None, raw=raw))
    assert status == 400 and message.startswith("We could not parse the JSON body of your request.")


def test_what_the_api_accepts_is_accepted(mock):
    """Lenient where the API (or OpenAI-compatible servers) are: unknown fields, any model name, an assistant
    message first, a tool message answering a call, custom tools, empty arguments, settings of every kind."""
    body = {"model": "deepseek-chat", "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "assistant", "content": "Hi! How can I help?", "name": "bot"}, ASK,
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."}], "tool_calls": [
            {**CALL, "function": {"name": "get_weather", "arguments": ""}}], "refusal": None, "audio": None},
        {"role": "tool", "tool_call_id": "call_a", "content": "15 C"}],
        "tools": [*WEATHER, {"type": "custom", "custom": {"name": "grammar"}}], "tool_choice": "auto",
        "temperature": 0.2, "top_p": 1, "seed": 7, "user": "u1", "logprobs": False, "store": False,
        "presence_penalty": 0, "frequency_penalty": 0, "metadata": {"a": "b"}, "enable_thinking": False,
        "reasoning_effort": "low", "stream": False, "stop": None, "n": 1}
    response = chat(mock, body)
    assert response.status_code == 200, response.text
    assert response.json()["model"] == "deepseek-chat"


# --- streaming ---------------------------------------------------------------------------------------

STREAMS = {
    "text": dict(BODY),
    "parallel tool calls": {**BODY, "tools": TOOLS, "messages": [{"role": "user", "content": DEMO}]},
    "a cut-off call": {**BODY, "tools": WEATHER, "max_tokens": 27,
                       "messages": [{"role": "user", "content": "Weather in Paris and in San Francisco?"}]},
    "two choices": {**BODY, "n": 2},
}


@pytest.mark.parametrize("case", list(STREAMS))
def test_a_stream_assembles_to_the_plain_answer(case):
    plain = chat(MockAPI(), STREAMS[case]).json()
    response = chat(MockAPI(), STREAMS[case], stream=True, stream_options={"include_usage": True})
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    chunks = chunks_of(response)
    assert chunks[-1] == "[DONE]" and chunks[-2]["choices"] == [] and chunks[-2]["usage"] == plain["usage"]
    assert all(c["usage"] is None for c in chunks[:-2])
    assembled = assemble(chunks)
    assert assembled["usage"] == plain["usage"]
    del assembled["usage"], assembled["object"]
    assert assembled == plain_shape(plain)


def test_the_chunks_follow_the_apis_sequence(mock):
    chunks = chunks_of(chat(mock, STREAMS["parallel tool calls"], stream=True))
    deltas = [c["choices"][0]["delta"] for c in chunks[:-1]]
    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    assert all("role" not in d for d in deltas[1:])
    assert all(c["object"] == "chat.completion.chunk" and "usage" not in c for c in chunks[:-1])
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    firsts = [c for c in calls if "id" in c]
    assert [c["index"] for c in firsts] == [0, 1, 2, 3]
    assert all(c["type"] == "function" and c["function"]["arguments"] == "" and c["function"]["name"] for c in firsts)
    rest = [c for c in calls if "id" not in c]
    assert rest and all(set(c) == {"index", "function"} and set(c["function"]) == {"arguments"} for c in rest)
    indices = [c["index"] for c in calls]
    assert indices == sorted(indices)  # one call after the other
    assert deltas[-1] == {} and chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-2])


def test_a_tool_only_answer_starts_with_null_content(mock):
    mock.script({"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}]})
    chunks = chunks_of(chat(mock, {**BODY, "tools": WEATHER}, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None, "refusal": None}
    assert assemble(chunks)["choices"][0]["message"]["content"] is None


def test_stream_faults_cut_and_error(mock):
    with pytest.raises(httpx2.RemoteProtocolError):
        chat(mock, BODY, stream=True, headers={**BEARER, "x-mock-fault": "cut=3"})
    [record] = mock.records
    assert len(record["response"]) == 3  # the chunks sent before the connection dropped
    whole = chunks_of(chat(MockAPI(), BODY, stream=True))
    broken = chunks_of(chat(mock, BODY, stream=True, headers={**BEARER, "x-mock-fault": "error-after=2"}))
    assert broken[:2] == [{**c, "id": "chatcmpl-mock_0002"} for c in whole[:2]]
    assert broken[2:] == [openai_stream.ERROR]  # and no [DONE]
    plain = chat(mock, BODY, headers={**BEARER, "x-mock-fault": "error-after=2"})
    assert error_of(plain)[:2] == (503, "The server is overloaded or not ready yet.")


def test_pacing_waits_before_the_chunks_that_carry_content(mock):
    reply = mock.handle("POST", "/v1/chat/completions", {**BEARER, "x-mock-pace": "first=0.25,rate=1000"},
                        json.dumps({**BODY, "stream": True}).encode())
    waits = [wait for wait, _ in reply.events]
    assert waits[0] == 0.0 and waits[1] >= 0.25 and 0.25 < sum(waits) < 0.3
    plain = mock.handle("POST", "/v1/chat/completions", {**BEARER, "x-mock-pace": "first=0.25,rate=1000"},
                        json.dumps(BODY).encode())
    assert plain.delay == pytest.approx(sum(waits))


# --- embeddings ------------------------------------------------------------------------------------------


def embed(mock, headers=BEARER, **body):
    return post(mock, "/v1/embeddings", {"model": "text-embedding-3-small", **body}, headers)


def vectors(mock, texts, **body):
    return [d["embedding"] for d in embed(mock, input=texts, **body).json()["data"]]


def test_embeddings_shape_and_usage(mock):
    data = embed(mock, input=["hello world", "天气"]).json()
    assert list(data) == ["object", "data", "model", "usage"] and data["object"] == "list"
    assert [(d["object"], d["index"], len(d["embedding"])) for d in data["data"]] == [("embedding", 0, 1536),
                                                                                      ("embedding", 1, 1536)]
    assert data["usage"] == {"prompt_tokens": 3 + 2, "total_tokens": 5} and data["model"] == "text-embedding-3-small"
    assert len(vectors(mock, "x", model="my-embedder")[0]) == 256
    assert len(vectors(mock, "x", dimensions=8)[0]) == 8
    [tokens] = embed(mock, input=[[1, 2, 3]]).json()["data"]
    assert len(tokens["embedding"]) == 1536


def test_embeddings_are_deterministic_unit_vectors(mock):
    [a] = vectors(mock, "The weather in Beijing")
    [b] = vectors(MockAPI(), ["The weather in Beijing"])
    assert a == b and sum(x * x for x in a) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("query, near, far", [
    ("What is the weather in Beijing today?", "Beijing weather forecast for today", "A recipe for apple pie"),
    ("北京今天的天气怎么样？", "北京天气预报", "苹果派的做法"),
    ("How do I reset my password?", "Resetting a forgotten password", "The history of the Roman empire"),
])
def test_texts_sharing_words_are_closer(mock, query, near, far):
    q, n, f = vectors(mock, [query, near, far])
    assert cosine(q, n) > cosine(q, f) + 0.2


def test_base64_is_little_endian_float32(mock):
    floats = vectors(mock, ["hello"], dimensions=16)[0]
    encoded = vectors(mock, ["hello"], dimensions=16, encoding_format="base64")[0]
    decoded = struct.unpack("<16f", base64.b64decode(encoded))
    assert decoded == pytest.approx(floats, abs=1e-7)


@pytest.mark.parametrize("body, message, param, code", [
    ({"input": "x", "model": None}, "you must provide a model parameter", None, None),
    ({}, "Missing required parameter: 'input'.", "input", "missing_required_parameter"),
    ({"input": ""}, "'$.input' is invalid. Please check the API reference: "
                    "https://platform.openai.com/docs/api-reference.", None, None),
    ({"input": []}, None, None, None),
    ({"input": ["a", 5]}, None, None, None),
    ({"input": [[1, -2]]}, None, None, None),
    ({"input": ["a"] * 2049}, "Invalid 'input': array too long. Expected an array with maximum length 2048, but got "
                              "an array with length 2049 instead.", "input", "array_above_max_length"),
    ({"input": "a", "encoding_format": "hex"}, "Invalid value: 'hex'. Supported values are: 'float' and 'base64'.",
     "encoding_format", "invalid_value"),
    ({"input": "a", "dimensions": 0}, "Invalid 'dimensions': integer below minimum value. Expected a value >= 1, "
                                      "but got 0 instead.", "dimensions", "integer_below_min_value"),
    ({"input": "a", "dimensions": 2000}, None, "dimensions", "integer_above_max_value"),
    ({"input": "a", "model": "text-embedding-ada-002", "dimensions": 8},
     "This model does not support specifying dimensions.", "dimensions", None),
    ({"input": "字" * 8193}, "This model's maximum context length is 8192 tokens, however you requested 8193 tokens "
                             "(8193 in your prompt; 0 for the completion). Please reduce your prompt; or completion "
                             "length.", None, None),
    ({"input": ["字" * 8000] * 40}, "Requested 320000 tokens, max 300000 tokens per request", None,
     "max_tokens_per_request"),
])
def test_embedding_errors(mock, body, message, param, code):
    status, said, said_param, said_code = error_of(post(mock, "/v1/embeddings", {"model": "text-embedding-3-small",
                                                                                  **body}))
    assert (status, said_param, said_code) == (400, param, code), said
    assert message is None or said == message
    if message is None and param is None:
        assert said.startswith("'$.input' is invalid")


# --- models ------------------------------------------------------------------------------------------------


def test_an_openai_client_gets_openai_s_model_list(mock):
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        listed = client.get("/v1/models", headers=BEARER).json()
        one = client.get("/v1/models/gpt-4o", headers=BEARER).json()
        anthropic = client.get("/v1/models", headers={**BEARER, "anthropic-version": "2026-10-21"}).json()
    assert set(listed) == {"object", "data"} and listed["object"] == "list" and listed["data"]
    assert all(set(m) == {"id", "object", "created", "owned_by"} and m["object"] == "model" for m in listed["data"])
    assert listed["data"][0]["id"] == mock.models.models[0].id and listed["data"][0]["created"] > 1.7e9
    assert one == {"id": "gpt-4o", "object": "model", "created": 0, "owned_by": "miniagent-mock"}
    assert set(anthropic) == {"data", "has_more", "first_id", "last_id"}  # with anthropic-version: unchanged


# --- faults, scripts, records, auth ----------------------------------------------------------------------


def test_a_queued_fault_is_a_rate_limit_in_openai_s_shape(mock):
    mock.fault(429, retry_after=0.02)
    response = chat(mock, BODY)
    status, message, param, code = error_of(response)
    assert (status, code, response.json()["error"]["type"]) == (429, "rate_limit_exceeded", "requests")
    assert message.startswith("Rate limit reached") and "0.02s" in message
    assert response.headers["retry-after"] == "0.02" and response.headers["retry-after-ms"] == "20"
    assert chat(mock, BODY).status_code == 200


def test_faults_by_header(mock):
    assert error_of(chat(mock, BODY, headers={**BEARER, "x-mock-fault": "500"}))[:2] == (
        500, "The server had an error while processing your request. Sorry about that!")
    assert error_of(embed(mock, input="x", headers={**BEARER, "x-mock-fault": "529"}))[0] == 529
    with pytest.raises(httpx2.RemoteProtocolError):
        chat(mock, BODY, headers={**BEARER, "x-mock-fault": "drop"})
    status, message, _, _ = error_of(chat(mock, BODY, headers={**BEARER, "x-mock-fault": "sometimes"}))
    assert status == 400 and message.startswith("x-mock-fault: cannot use 'sometimes'")


def test_flaky_mode_fails_in_openai_s_terms():
    mock = MockAPI(flaky=0.6, seed=3)
    statuses = [chat(mock, BODY).status_code for _ in range(30)]
    assert {429, 503, 200} == set(statuses)
    mock.reset()
    failed = next(r for r in (chat(mock, BODY) for _ in range(30)) if r.status_code == 503)
    assert error_of(failed)[1] == "The server is overloaded or not ready yet."


@pytest.mark.parametrize("stop_reason, finish", [("end_turn", "stop"), ("stop_sequence", "stop"),
                                                 ("max_tokens", "length"), ("tool_use", "tool_calls"),
                                                 ("refusal", "content_filter"), ("pause_turn", "stop")])
def test_a_scripted_answer_comes_out_translated(mock, stop_reason, finish):
    mock.script({"content": [{"type": "text", "text": "Checking."},
                             {"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}],
                 "stop_reason": stop_reason})
    choice = chat(mock, {**BODY, "tools": WEATHER}).json()["choices"][0]
    assert choice["finish_reason"] == finish and choice["message"]["content"] == "Checking."
    assert choice["message"]["tool_calls"] == [{"id": "call_mock_0001", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city":"Paris"}'}}]


def test_a_scripted_error_and_a_scripted_callable(mock):
    seen = []
    mock.script({"status": 429, "error": {"type": "rate_limit_error", "message": "Slow down"}},
                lambda body: seen.append(body) or {"content": "ok"})
    response = chat(mock, BODY)
    assert error_of(response) == (429, "Slow down", None, "rate_limit_exceeded")
    assert response.json()["error"]["type"] == "requests"
    conversation = [ASK, CALLED, *({"role": "tool", "tool_call_id": i, "content": "15 C"} for i in ("call_a", "call_b"))]
    assert chat(mock, {**BODY, "tools": WEATHER, "messages": conversation}).json()["choices"][0]["message"]["content"] == "ok"
    [body] = seen  # the callable reads the request in the Messages form
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "tool_result"]


def test_records_keep_the_request_and_the_stream(mock):
    chat(mock, BODY, stream=True)
    [record] = mock.records
    assert record["path"] == "/v1/chat/completions" and record["status"] == 200
    assert record["headers"]["authorization"] == "<redacted>" and KEY not in json.dumps(record)
    assert record["body"] == {**BODY, "stream": True}
    assert record["response"][0]["object"] == "chat.completion.chunk"
    assert record["response"][-1]["choices"][0]["finish_reason"] == "stop"  # [DONE] is not an event


def test_auth_and_unknown_paths_in_openai_s_words():
    mock = MockAPI(api_keys={KEY})
    assert error_of(chat(mock, BODY, headers={}))[:2] == (401, (
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer "
        "auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from "
        "https://platform.openai.com/account/api-keys."))
    wrong = chat(mock, BODY, headers={"authorization": "Bearer sk-wrong-key-123456"})
    assert error_of(wrong)[0::3] == (401, "invalid_api_key") and "sk-wrong" not in wrong.text
    assert not mock.records  # a stranger's request stores nothing
    status, message, _, _ = error_of(post(mock, "/chat/completions", BODY))
    assert status == 404 and message.startswith("Invalid URL (POST /chat/completions); the base_url must end in /v1")
    assert error_of(post(mock, "/v1/completions", BODY))[0] == 404


def test_the_messages_api_stays_itself_whatever_the_auth_header(mock):
    """Only OpenAI's paths, and shared ones asked with OpenAI's headers, answer in OpenAI's shape."""
    response = post(mock, "/v1/messages", {"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": HELLO})
    assert response.status_code == 400 and response.json()["error"] == {
        "type": "invalid_request_error", "message": "anthropic-version: header is required"}
    assert post(mock, "/nowhere", {}, headers={"x-api-key": KEY}).json()["type"] == "error"
    assert set(post(mock, "/nowhere", {}).json()) == {"error"}  # Bearer and no anthropic-version: an OpenAI client


def test_a_web_page_may_call_the_openai_surface(mock):
    response = chat(mock, BODY, headers={**BEARER, "origin": "http://localhost:8000"})
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == "*"


# --- hostile bodies: a 4xx in OpenAI's shape, never a 500 ------------------------------------------------

JUNK = st.recursive(st.none() | st.booleans() | st.integers(-2, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=8) | st.sampled_from(["user", "assistant", "tool", "system", "function", "text",
                                                             "call_a", "{}", "{\"a\":", "auto", "required", ""]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
                        ["role", "content", "tool_calls", "tool_call_id", "type", "function", "name", "arguments",
                         "parameters", "text", "image_url", "url", "id", "schema", "json_schema", "include_usage"]),
                        inner, max_size=4), max_leaves=12)
FIELDS = ["model", "messages", "tools", "tool_choice", "parallel_tool_calls", "max_tokens", "stream", "stream_options",
          "stop", "n", "response_format", "temperature", "input", "dimensions", "encoding_format"]


@given(field=st.sampled_from(FIELDS), value=JUNK, path=st.sampled_from(["/v1/chat/completions", "/v1/embeddings"]))
def test_garbage_in_any_field_is_never_a_500(field, value, path):
    good = {"model": "m", "messages": [ASK, CALLED, {"role": "tool", "tool_call_id": "call_a", "content": "1"},
                                       {"role": "tool", "tool_call_id": "call_b", "content": "2"}],
            "tools": WEATHER, "input": "hello"}
    reply = MockAPI().handle("POST", path, BEARER, json.dumps({**good, field: value}).encode())
    assert reply.status < 500, reply.body
    if reply.status >= 400:
        assert set(json.loads(reply.body)["error"]) == {"message", "type", "param", "code"}


@given(message=JUNK)
def test_garbage_in_a_message_is_never_a_500(message):
    reply = MockAPI().handle("POST", "/v1/chat/completions", BEARER,
                             json.dumps({"model": "m", "messages": [ASK, message]}).encode())
    assert reply.status < 500, reply.body


@given(arguments=st.text(max_size=30) | st.sampled_from(['{"a": NaN}', "[" * 300, '"\\ud800"', "{\"a\": 1}x", "1e999"]))
def test_any_arguments_string_is_never_a_500(arguments):
    messages = [ASK, {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "f", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": "call_a", "content": "ok"}]
    reply = MockAPI().handle("POST", "/v1/chat/completions", BEARER,
                             json.dumps({"model": "m", "messages": messages}).encode())
    assert reply.status in (200, 400), reply.body


@pytest.mark.parametrize("question, words", [("Who won the 1998 World Cup?", "point your client at the provider's own base URL"),
                                             ("1998 年世界杯谁赢了？", "请把客户端指向服务商自己的 base URL")])
def test_the_mock_says_how_to_go_live_from_where_the_client_is(mock, question, words):
    """An OpenAI client is told to use its provider's URL and key; the Messages API's text names Anthropic's."""
    reply = chat(mock, {"model": "deepseek-flash", "messages": [{"role": "user", "content": question}]})
    text = reply.json()["choices"][0]["message"]["content"]
    assert words in text and "ANTHROPIC" not in text
    anthropic = mock.handle("POST", "/v1/messages", {"x-api-key": "k", "anthropic-version": "2023-06-01",
                                                     "content-type": "application/json"},
                            json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 300,
                                        "messages": [{"role": "user", "content": question}]}).encode())
    assert "ANTHROPIC_API_KEY" in json.loads(anthropic.body)["content"][0]["text"]
