"""The mock's Responses API (`/v1/responses`, issue 28): the third wire format, from the same brain.

In-process, through `mock.transport()`: the request shape generated from the pinned
`openai` SDK (and current), the translation both ways, function calls and their outputs,
tool_choice, parallel calls, structured output, the stream's events (in the API's order,
accumulating to the plain answer), usage, `previous_response_id` and `store` (a bounded
store, per key, nothing kept for a failed or unauthenticated request), retrieve and
delete, faults, scripts, and every rule with its words. The official SDK and the OpenAI
Agents SDK are in test_mock_responses_sdk.py and tests/clients (make test-clients).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent.builtin_tools import default_tools
from miniagent.mock import MockAPI, openai_responses
from miniagent.mock.openai_responses import ResponseStore, to_canonical
from miniagent.mock.openai_responses_stream import response_events
from miniagent.mock.openai_shapes import SHAPES_FILE, shapes_data

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-mock-responses-test-2468"
BEARER = {"authorization": f"Bearer {KEY}"}
MODEL = "gpt-5.6-luna"
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
TOOLS = [{"type": "function", "name": t["name"], "description": t["description"], "parameters": t["input_schema"],
          "strict": False} for t in default_tools().schemas()]
WEATHER = [TOOLS[0]]
PARIS = "What's the weather in Paris?"


@pytest.fixture
def mock():
    return MockAPI()


def post(mock, body, headers=BEARER, raw=None, path="/v1/responses"):
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        return client.post(path, headers=headers, content=raw if raw is not None else json.dumps(body))


def create(mock, headers=BEARER, **body) -> dict:
    reply = post(mock, {"model": MODEL, **body}, headers)
    assert reply.status_code == 200, reply.text
    return reply.json()


def error_of(reply) -> tuple[int, str, str | None, str | None]:
    """(status, message, param, code), after checking OpenAI's error shape."""
    data = reply.json()
    assert set(data) == {"error"} and set(data["error"]) == {"message", "type", "param", "code"}, data
    assert reply.headers["x-request-id"].startswith("req_mock_")
    return reply.status_code, data["error"]["message"], data["error"]["param"], data["error"]["code"]


def calls_of(response: dict) -> list[dict]:
    return [item for item in response["output"] if item["type"] == "function_call"]


def outputs_for(response: dict, result: str = "sunny, 22°C") -> list[dict]:
    return [{"type": "function_call_output", "call_id": c["call_id"], "output": result} for c in calls_of(response)]


def text_of(response: dict) -> str:
    return "".join(part["text"] for item in response["output"] if item["type"] == "message"
                   for part in item["content"] if part["type"] == "output_text")


# --- the shape, from the SDK ----------------------------------------------------------------------


def test_the_shapes_file_is_what_the_generator_writes_from_the_pinned_sdk():
    """Raising the pin shows what changed: re-run `python scripts/gen_mock_responses_schema.py` and read the diff."""
    spec = importlib.util.spec_from_file_location("gen_mock_responses_schema",
                                                  ROOT / "scripts" / "gen_mock_responses_schema.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert SHAPES_FILE.read_text() == generator.render(), \
        "responses_shapes.json is stale: run `python scripts/gen_mock_responses_schema.py`"
    assert shapes_data()["sdk_version"] == openai.__version__


def test_every_parameter_the_sdk_sends_is_in_the_shape():
    root = shapes_data()["shapes"][shapes_data()["root"]]["fields"]
    for name in ("input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text", "stream",
                 "store", "previous_response_id", "max_output_tokens", "reasoning", "include", "metadata"):
        assert name in root, name


# --- a plain answer, and the translation -----------------------------------------------------------


def test_a_string_input_gets_a_response_in_the_apis_shape(mock):
    response = create(mock, input="Hello", instructions="Be brief.")
    assert response["id"] == "resp_mock_0001" and response["object"] == "response"
    assert response["status"] == "completed" and response["model"] == MODEL
    assert response["instructions"] == "Be brief." and response["store"] is True
    [message] = response["output"]
    assert message["type"] == "message" and message["role"] == "assistant" and message["status"] == "completed"
    assert message["content"][0]["type"] == "output_text" and message["content"][0]["text"].startswith("(mock) ")
    usage = response["usage"]
    assert usage["input_tokens"] > 0 and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    assert usage["input_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}


def test_input_items_and_instructions_read_as_the_canonical_messages_request():
    body = {"model": MODEL, "instructions": "Be brief.", "tools": WEATHER, "max_output_tokens": 500,
            "parallel_tool_calls": False, "tool_choice": "required"}
    items = [
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": [{"type": "input_text", "text": PARIS},
                                     {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Sunny."}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},  # context the brain does not read
        {"role": "user", "content": "Thanks"},
    ]
    canonical = to_canonical(body, items)
    assert canonical["system"] == "Be brief.\n\nAnswer in French." and canonical["max_tokens"] == 500
    assert [m["role"] for m in canonical["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert canonical["messages"][0]["content"][1] == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    assert canonical["messages"][1]["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}]
    assert canonical["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}]
    assert canonical["tools"][0]["input_schema"] == WEATHER[0]["parameters"]
    assert canonical["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}


@pytest.mark.parametrize("choice, expected", [
    ("auto", {"type": "auto"}), ("none", {"type": "none"}), ("required", {"type": "any"}),
    ({"type": "function", "name": "calculate"}, {"type": "tool", "name": "calculate"}),
    ({"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "calculate"}]},
     {"type": "any"}),
])
def test_tool_choice_reads_as_the_messages_api_one(choice, expected):
    canonical = to_canonical({"model": MODEL, "tools": TOOLS, "tool_choice": choice}, [])
    assert canonical["tool_choice"] == expected
    if isinstance(choice, dict) and choice["type"] == "allowed_tools":
        assert [t["name"] for t in canonical["tools"]] == ["calculate"]


# --- tools -----------------------------------------------------------------------------------------


def test_a_tool_round_trip_with_the_items_sent_back(mock):
    first = create(mock, input=PARIS, tools=WEATHER, store=False)
    [call] = calls_of(first)
    assert call == {"arguments": '{"city":"Paris"}', "call_id": "call_mock_0001", "name": "get_weather",
                    "type": "function_call", "id": "fc_mock_0001", "status": "completed"}
    items = [{"role": "user", "content": PARIS}, *first["output"], *outputs_for(first, "rainy, 9°C")]
    second = create(mock, input=items, tools=WEATHER, store=False)
    assert not calls_of(second) and "rainy" in text_of(second)


def test_parallel_calls_the_same_four_as_on_chat_completions(mock):
    response = create(mock, input=DEMO, tools=TOOLS)
    assert [c["name"] for c in calls_of(response)] == ["get_current_time", "calculate", "get_weather", "get_weather"]
    assert len({c["call_id"] for c in calls_of(response)}) == 4
    one = create(mock, input=DEMO, tools=TOOLS, parallel_tool_calls=False)
    assert len(calls_of(one)) == 1 and one["parallel_tool_calls"] is False


def test_tool_choice_none_and_a_named_function(mock):
    assert not calls_of(create(mock, input=PARIS, tools=TOOLS, tool_choice="none"))
    named = create(mock, input=PARIS, tools=TOOLS, tool_choice={"type": "function", "name": "calculate"})
    assert [c["name"] for c in calls_of(named)] == ["calculate"]


def test_hosted_tools_are_taken_and_never_called(mock):
    response = create(mock, input=PARIS, tools=[{"type": "web_search"}])
    assert not calls_of(response) and response["tools"] == [{"type": "web_search"}]


def test_a_call_cut_off_by_max_output_tokens_is_incomplete_and_cannot_be_sent_back(mock):
    question = "Weather in Paris and in San Francisco?"
    response = create(mock, input=question, tools=WEATHER, max_output_tokens=27)
    assert response["status"] == "incomplete" and response["incomplete_details"] == {"reason": "max_output_tokens"}
    [call] = calls_of(response)
    assert call["arguments"] == '{"city":"Pari' and call["status"] == "incomplete"
    back = post(mock, {"model": MODEL, "tools": WEATHER, "store": False,
                       "input": [{"role": "user", "content": question}, *response["output"], *outputs_for(response)]})
    status, message, param, code = error_of(back)
    assert (status, param, code) == (400, "input[2].arguments", "invalid_value")
    assert message.startswith("Invalid 'input[2].arguments': the arguments are not valid JSON")


# --- structured output -----------------------------------------------------------------------------

TRIP = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"], "additionalProperties": False}


def test_a_json_schema_format_answers_json_that_fits(mock):
    fmt = {"type": "json_schema", "name": "Trip", "schema": TRIP, "strict": True}
    response = create(mock, input="Plan a 3-day trip to Rome", text={"format": fmt})
    assert json.loads(text_of(response)) == {"city": "Rome", "days": 3}
    assert response["text"]["format"] == fmt


def test_json_mode_answers_a_json_object(mock):
    response = create(mock, input="Say hello, as json", text={"format": {"type": "json_object"}})
    assert isinstance(json.loads(text_of(response)), dict)
    reply = post(mock, {"model": MODEL, "input": "Say hello", "text": {"format": {"type": "json_object"}}})
    assert error_of(reply)[1] == openai_responses.JSON_WORD


# --- streaming -------------------------------------------------------------------------------------


def events_of(reply) -> list[dict]:
    assert reply.headers["content-type"].startswith("text/event-stream")
    out = []
    for block in reply.text.strip().split("\n\n"):
        head, data = block.split("\n", 1)
        event = json.loads(data.removeprefix("data: "))
        assert head == f"event: {event['type']}"
        out.append(event)
    return out


def accumulate(events: list[dict]) -> list[dict]:
    """The output as a client assembles it from the deltas (each item's final form from its `done`)."""
    items: dict[int, dict] = {}
    for e in events:
        if e["type"] == "response.output_item.added":
            items[e["output_index"]] = json.loads(json.dumps(e["item"]))
        elif e["type"] == "response.content_part.added":
            items[e["output_index"]]["content"].append(dict(e["part"]))
        elif e["type"] == "response.output_text.delta":
            items[e["output_index"]]["content"][e["content_index"]]["text"] += e["delta"]
        elif e["type"] == "response.function_call_arguments.delta":
            items[e["output_index"]]["arguments"] += e["delta"]
        elif e["type"] == "response.output_item.done":
            items[e["output_index"]]["status"] = e["item"]["status"]
    return [items[i] for i in sorted(items)]


def test_the_stream_follows_the_apis_event_order(mock):
    events = events_of(post(mock, {"model": MODEL, "input": PARIS, "tools": WEATHER, "stream": True}))
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed" and [e["sequence_number"] for e in events] == list(range(len(events)))
    text_at, call_at = kinds.index("response.output_text.delta"), kinds.index("response.function_call_arguments.delta")
    assert kinds[text_at - 1] == "response.content_part.added" and text_at < call_at
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == 2
    assert "response.function_call_arguments.done" in kinds and "response.output_text.done" in kinds
    created = events[0]["response"]
    assert created["status"] == "in_progress" and created["output"] == [] and created["usage"] is None


def test_a_stream_accumulates_to_the_plain_answer(mock):
    streamed = events_of(post(mock, {"model": MODEL, "input": DEMO, "tools": TOOLS, "stream": True}))
    mock.reset()
    plain = create(mock, input=DEMO, tools=TOOLS, stream=False)
    assert accumulate(streamed) == plain["output"] == streamed[-1]["response"]["output"]
    assert streamed[-1]["response"]["usage"] == plain["usage"]


def test_a_stream_broken_midway_ends_with_the_apis_error_event(mock):
    reply = post(mock, {"model": MODEL, "input": PARIS, "stream": True}, {**BEARER, "x-mock-fault": "error-after=3"})
    events = events_of(reply)
    assert len(events) == 4 and events[-1]["type"] == "error" and events[-1]["sequence_number"] == 3
    assert events[-1]["code"] == "server_error"


def test_the_events_for_any_answer_keep_every_item():
    response = {"status": "completed", "output": [
        {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "a b c d e f g h"}]},
        {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "c", "name": "f",
         "arguments": '{"x": "a long argument string"}'}]}
    assert accumulate(response_events(response)) == response["output"]


# --- previous_response_id and store ----------------------------------------------------------------


def test_a_previous_response_id_chain_carries_the_conversation(mock):
    seen = []
    first = create(mock, input=PARIS, tools=WEATHER, instructions="Be brief.")
    mock.script(lambda body: seen.append(body) or {"content": "It is sunny."})
    second = create(mock, previous_response_id=first["id"], input=outputs_for(first), tools=WEATHER)
    assert second["previous_response_id"] == first["id"] and text_of(second) == "It is sunny."
    [body] = seen  # what the brain read: the stored turns, then the new one; the instructions not inherited
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == [{"type": "text", "text": PARIS}]
    assert body["messages"][2]["content"][0]["type"] == "tool_result" and "system" not in body
    third = create(mock, previous_response_id=second["id"], input="And tomorrow?", tools=WEATHER)
    assert third["usage"]["input_tokens"] > second["usage"]["input_tokens"]


def test_the_calls_of_a_previous_response_must_be_answered(mock):
    first = create(mock, input=PARIS, tools=WEATHER)
    status, message, param, code = error_of(post(mock, {"model": MODEL, "previous_response_id": first["id"],
                                                        "input": "Never mind", "tools": WEATHER}))
    assert (status, param, code) == (400, "input", None)
    assert message == f"No tool output found for function call {calls_of(first)[0]['call_id']}."


def test_store_false_keeps_nothing(mock):
    response = create(mock, input="Hello", store=False)
    assert response["store"] is False and len(mock.responses) == 0
    status, message, param, code = error_of(post(mock, {"model": MODEL, "input": "Hi",
                                                        "previous_response_id": response["id"]}))
    assert (status, param, code) == (400, "previous_response_id", "previous_response_not_found")
    assert message == f"Previous response with id '{response['id']}' not found."


def test_retrieve_and_delete(mock):
    response = create(mock, input="Hello")
    with httpx2.Client(transport=mock.transport(), base_url="http://mock", headers=BEARER) as client:
        assert client.get(f"/v1/responses/{response['id']}").json() == response
        assert client.get(f"/v1/responses/{response['id']}", headers={"authorization": "Bearer sk-other"}
                          ).status_code == 404  # another key's responses are not there for it
        assert client.delete(f"/v1/responses/{response['id']}").json() == {
            "id": response["id"], "object": "response", "deleted": True}
        gone = client.get(f"/v1/responses/{response['id']}")
        assert error_of(gone) == (404, f"Response with id '{response['id']}' not found.", None, None)
        assert client.delete(f"/v1/responses/{response['id']}").status_code == 404


def test_another_key_cannot_continue_a_response(mock):
    response = create(mock, input="Hello")
    reply = post(mock, {"model": MODEL, "input": "Hi", "previous_response_id": response["id"]},
                 {"authorization": "Bearer sk-someone-else"})
    assert error_of(reply)[3] == "previous_response_not_found"


def test_nothing_is_kept_for_a_failed_or_unauthenticated_request():
    mock = MockAPI(api_keys={KEY})
    assert post(mock, {"model": MODEL, "input": "Hello"}, {"authorization": "Bearer sk-wrong"}).status_code == 401
    assert post(mock, {"model": MODEL, "input": "Hello"}, {}).status_code == 401
    assert post(mock, {"model": MODEL, "input": "Hello", "temperature": 9}).status_code == 400
    mock.fault(429)
    assert post(mock, {"model": MODEL, "input": "Hello"}).status_code == 429
    assert len(mock.responses) == 0 and mock.responses.bytes == 0
    create(mock, input="Hello")
    assert len(mock.responses) == 1
    mock.reset()
    assert len(mock.responses) == 0


def test_the_store_is_bounded_by_count_and_bytes_oldest_first():
    store = ResponseStore(max_count=3, max_bytes=2_000)
    for i in range(5):
        assert store.put({"id": f"resp_{i}", "output": []}, [{"role": "user", "content": "x" * 100}], "me")
    assert len(store) == 3 and store.get("resp_0", "me") is None and store.get("resp_4", "me") is not None
    assert store.get("resp_4", "you") is None
    assert store.put({"id": "resp_big", "output": []}, [{"content": "x" * 600}], "me")
    assert store.bytes <= 2_000 and store.get("resp_2", "me") is None  # evicted to make room
    assert not store.put({"id": "resp_huge", "output": []}, [{"content": "x" * 3_000}], "me")  # alone over the cap
    assert store.get("resp_huge", "me") is None and store.get("resp_big", "me") is not None


def test_the_mocks_store_evicts_and_an_evicted_id_is_not_found(mock):
    mock.responses = ResponseStore(max_count=2)
    ids = [create(mock, input=f"Hello {i}")["id"] for i in range(3)]
    assert len(mock.responses) == 2
    assert error_of(post(mock, {"model": MODEL, "input": "Hi", "previous_response_id": ids[0]}))[3] == \
        "previous_response_not_found"
    assert create(mock, input="Hi", previous_response_id=ids[2])["previous_response_id"] == ids[2]


# --- faults, scripts, records ----------------------------------------------------------------------


def test_a_queued_fault_and_a_scripted_error_in_openai_s_shape(mock):
    mock.fault(429, retry_after=2)
    reply = post(mock, {"model": MODEL, "input": "Hello"})
    assert error_of(reply)[0] == 429 and reply.headers["retry-after"] == "2"
    mock.script({"status": 500})
    assert error_of(post(mock, {"model": MODEL, "input": "Hello"}))[0] == 500
    assert [r["path"] for r in mock.records] == ["/v1/responses"] * 2


def test_a_scripted_answer_comes_out_as_output_items(mock):
    mock.script({"content": [{"type": "text", "text": "Let me check."},
                             {"type": "tool_use", "name": "get_weather", "input": {"city": "Oslo"}}]})
    response = create(mock, input=PARIS, tools=WEATHER)
    assert [item["type"] for item in response["output"]] == ["message", "function_call"]
    assert calls_of(response)[0]["arguments"] == '{"city":"Oslo"}'


# --- the rules, in the API's words ----------------------------------------------------------------

RULES = [
    ({"input": "x"}, 400, "Missing required parameter: 'model'.", "model", "missing_required_parameter"),
    ({"model": MODEL, "input": "x", "foo": 1}, 400, "Unknown parameter: 'foo'.", "foo", "unknown_parameter"),
    ({"model": MODEL, "input": [{"role": "user", "content": "x", "phase": 1}]}, 400,
     "Invalid type for 'input[0].phase': expected a string, but got an integer instead.", "input[0].phase",
     "invalid_type"),
    ({"model": MODEL, "input": [{"role": "bot", "content": "x"}]}, 400,
     "Invalid value: 'bot'. Supported values are: 'user', 'assistant', 'system', and 'developer'.", "input[0].role",
     "invalid_value"),
    ({"model": MODEL, "input": 5}, 400,
     "Invalid type for 'input': expected one of a string or array of objects, but got an integer instead.", "input",
     "invalid_type"),
    ({"model": MODEL, "input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, 400,
     "Missing required parameter: 'input[0].arguments'.", "input[0].arguments", "missing_required_parameter"),
    ({"model": MODEL, "input": [{"type": "function_call_output", "call_id": "call_x", "output": "1"}]}, 400,
     "No tool call found for function call output with call_id call_x.", "input", None),
    ({"model": MODEL, "input": [{"type": "function_call", "call_id": "call_y", "name": "f", "arguments": "{}"}]},
     400, "No tool output found for function call call_y.", "input", None),
    ({"model": MODEL, "input": "x", "max_output_tokens": 8}, 400,
     "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 8 instead.",
     "max_output_tokens", "integer_below_min_value"),
    ({"model": MODEL, "input": "x", "temperature": 3}, 400,
     "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
     "temperature", "decimal_above_max_value"),
    ({"model": MODEL, "input": "x", "tools": [{"type": "function", "name": "get weather"}]}, 400,
     "Invalid 'tools[0].name': string does not match pattern. Expected a string that matches the pattern "
     "'^[a-zA-Z0-9_-]+$'.", "tools[0].name", "invalid_value"),
    ({"model": MODEL, "input": "x", "tools": [{"type": "teleport"}]}, 400, None, "tools[0].type", "invalid_value"),
    ({"model": MODEL, "input": "x", "tool_choice": "required"}, 400, None, "tool_choice", None),
    ({"model": MODEL, "input": "x", "text": {"format": {"type": "json_schema", "name": "T"}}}, 400,
     "Missing required parameter: 'text.format.schema'.", "text.format.schema", "missing_required_parameter"),
    ({"model": MODEL, "input": "x", "stream_options": {"include_obfuscation": False}}, 400, None, "stream_options",
     None),
    ({"model": MODEL, "input": "x", "previous_response_id": "resp_nope", "conversation": "conv_1"}, 400,
     openai_responses.BOTH_STATES, "previous_response_id", None),
    ({"model": MODEL, "input": "x", "conversation": "conv_1"}, 404, None, "conversation", "not_found"),
    ({"model": MODEL, "input": "x", "metadata": {f"k{i}": "v" for i in range(17)}}, 400, None, "metadata",
     "object_above_max_properties"),
]


@pytest.mark.parametrize("body, status, message, param, code", RULES, ids=[str(i) for i in range(len(RULES))])
def test_each_rule_is_an_error_in_the_apis_words(mock, body, status, message, param, code):
    got = error_of(post(mock, body))
    assert got[0] == status and got[2:] == (param, code), got
    if message is not None:
        assert got[1] == message


def test_what_the_api_takes_is_taken(mock):
    """Shapes real clients send: items sent back as the SDK dumps them, nulls for optional fields, hosted tools."""
    create(mock, input=[{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": "Hi", "annotations": [], "logprobs": []}]},
                        {"role": "user", "content": [{"type": "input_text", "text": "Hello"}]}],
           tools=None, temperature=None, reasoning={"effort": "low"}, include=["reasoning.encrypted_content"],
           truncation="auto", metadata={"k": "v"}, stream=False, background=False, top_logprobs=0)
    create(mock, input=[{"role": "user", "content": "x"}, {"type": "item_reference", "id": "msg_1"}])


def test_a_body_that_is_not_json_or_not_an_object(mock):
    assert error_of(post(mock, None, raw=b"{nope"))[0] == 400
    assert error_of(post(mock, None, raw=b"[1, 2]"))[0] == 400


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["model", "input", "tools", "tool_choice", "text", "instructions", "store",
                                        "previous_response_id", "stream", "max_output_tokens", "include"]),
                       st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                                    lambda inner: st.lists(inner, max_size=3)
                                    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)))
def test_garbage_in_any_field_is_never_a_500(body):
    reply = post(MockAPI(), {"model": MODEL, **body})
    assert reply.status_code in (200, 400, 404), reply.text
