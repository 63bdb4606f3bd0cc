"""Message threads in the mock (threads.py): create, continue, what a continue inherits, the API's
errors, and a store that stays bounded, private and empty for requests that fail."""

from __future__ import annotations

import json

import pytest

from miniagent import DEFAULT_MODEL
from miniagent.mock import MockAPI, scripts
from miniagent.mock.stream import parse_sse
from miniagent.mock.threads import THREAD_TTL, THREADS_BETA, ThreadStore

KEY = "sk-mock-threads-1"
MODEL = DEFAULT_MODEL
OTHER_MODEL = "claude-haiku-5-5"  # another model the mock serves
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "anthropic-beta": THREADS_BETA,
           "content-type": "application/json"}
WEATHER = {"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
CREATE = {"type": "create"}


def user(text):
    return {"role": "user", "content": text}


def body(messages, thread=CREATE, **fields):
    return {"model": MODEL, "max_tokens": 300, "messages": messages, "thread": thread, **fields}


def cont(previous):
    return {"type": "continue", "previous_message_id": previous}


def send(mock, payload, headers=None, **more):
    """(status, parsed answer: the JSON body, or a stream's events)."""
    reply = mock.handle("POST", "/v1/messages", {**HEADERS, **(headers or {}), **more}, json.dumps(payload).encode())
    if reply.events is not None:
        return reply.status, parse_sse(reply.sent)
    return reply.status, json.loads(reply.body)


class Seen:
    """A brain that records what it was asked and says how many messages it saw."""

    def __init__(self):
        self.bodies = []

    def __call__(self, request):
        self.bodies.append(request)
        return {"content": [{"type": "text", "text": f"{len(request['messages'])} message(s) seen."}],
                "stop_reason": "end_turn", "stop_sequence": None}


@pytest.fixture
def seen():
    return Seen()


@pytest.fixture
def mock(seen):
    return MockAPI(brain=seen)


def test_a_continue_sends_the_new_turn_and_the_brain_sees_the_whole_conversation(mock, seen):
    status, first = send(mock, body([user("My name is Ada.")]))
    assert status == 200 and first["id"] == "msg_mock_0001"
    status, second = send(mock, body([user("What's my name?")], cont(first["id"])))
    assert status == 200 and second["content"][0]["text"] == "3 message(s) seen."
    assert [m["role"] for m in seen.bodies[1]["messages"]] == ["user", "assistant", "user"]
    assert seen.bodies[1]["messages"][1]["content"] == first["content"]
    sent = [r["body"]["messages"] for r in mock.requests]
    assert sent == [[user("My name is Ada.")], [user("What's my name?")]]  # on the wire: the new turn only
    assert second["usage"]["input_tokens"] > first["usage"]["input_tokens"]  # the model read it all
    held = mock.threads.conversation(second["id"], KEY)
    assert [m["role"] for m in held] == ["user", "assistant", "user", "assistant"]
    assert mock.threads.conversation(first["id"], KEY) is None and len(mock.threads) == 1


def test_the_real_brain_remembers_across_a_continue():
    mock = MockAPI()
    _, first = send(mock, body([user("My name is Ada.")]))
    _, second = send(mock, body([user("What's my name?")], cont(first["id"])))
    assert "Ada" in second["content"][0]["text"]
    _, forgot = send(mock, body([user("What's my name?")], None))  # no thread: nothing held
    assert "Ada" not in forgot["content"][0]["text"]


def test_a_continue_inherits_system_and_tools_so_a_tool_round_works():
    mock = MockAPI()
    status, first = send(mock, body([user("What is the weather in Paris?")], system="Be brief.", tools=[WEATHER]))
    assert status == 200 and first["stop_reason"] == "tool_use"
    [call] = [b for b in first["content"] if b["type"] == "tool_use"]
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "15°C"}]}
    status, second = send(mock, body([result], cont(first["id"]), tool_choice={"type": "auto"}))
    assert status == 200, second
    assert second["stop_reason"] == "end_turn" and "15" in second["content"][0]["text"]


def test_what_a_continue_gets_from_the_thread_and_what_it_may_change(mock, seen):
    _, first = send(mock, body([user("Hi")], system="Be brief.", tools=[WEATHER]))
    status, second = send(mock, {**body([user("And?")], cont(first["id"])), "model": OTHER_MODEL,
                                 "max_tokens": 50, "stop_sequences": ["END"]})
    assert status == 200 and second["model"] == OTHER_MODEL
    asked = seen.bodies[1]
    assert asked["system"] == "Be brief." and asked["tools"] == [WEATHER]
    assert asked["max_tokens"] == 50 and asked["stop_sequences"] == ["END"]


@pytest.mark.parametrize("field,value", [("system", "Be brief."), ("tools", [WEATHER])])
def test_a_continue_that_sends_a_create_only_field_is_refused_and_consumes_nothing(mock, field, value):
    _, first = send(mock, body([user("Hi")], system="Be brief.", tools=[WEATHER]))
    status, error = send(mock, body([user("And?")], cont(first["id"]), **{field: value}))
    assert status == 400 and error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith(f"{field}: cannot be sent with")
    assert "details" not in error["error"]
    assert send(mock, body([user("And?")], cont(first["id"])))[0] == 200


def test_an_unknown_previous_id_is_the_apis_404(mock):
    status, error = send(mock, body([user("Hi")], cont("msg_nothing_here")))
    assert status == 404
    assert set(error) == {"type", "error", "request_id"} and error["type"] == "error"
    assert error["error"]["type"] == "not_found_error"
    assert error["error"]["details"] == {"error_code": "thread_not_found"}
    assert "`msg_nothing_here`" in error["error"]["message"]
    assert len(mock.threads) == 0


def test_an_id_that_is_not_a_message_id_is_not_quoted_back(mock):
    status, error = send(mock, body([user("Hi")], cont("sk-ant-pasted-by-mistake")))
    assert status == 404 and "sk-ant" not in error["error"]["message"]


def test_an_answer_without_a_thread_cannot_be_continued(mock):
    _, plain = send(mock, body([user("Hi")], None))
    status, error = send(mock, body([user("And?")], cont(plain["id"])))
    assert status == 404 and error["error"]["details"]["error_code"] == "thread_not_found"


def test_another_key_finds_no_thread(mock):
    _, first = send(mock, body([user("My name is Ada.")]))
    status, error = send(mock, body([user("What's my name?")], cont(first["id"])), {"x-api-key": "sk-someone-else"})
    assert status == 404 and error["error"]["details"]["error_code"] == "thread_not_found"
    bearer = {"x-api-key": "", "authorization": f"Bearer {KEY}"}  # the same key, sent the other way
    assert send(mock, body([user("What's my name?")], cont(first["id"])), bearer)[0] == 200


def test_each_answer_can_be_continued_once(mock):
    _, first = send(mock, body([user("Hi")]))
    assert send(mock, body([user("One")], cont(first["id"])))[0] == 200
    status, error = send(mock, body([user("Two")], cont(first["id"])))
    assert status == 400 and error["error"]["type"] == "invalid_request_error"
    assert error["error"]["details"] == {"error_code": "thread_already_continued"}


@pytest.mark.parametrize("field,value", [
    ("thinking", {"type": "enabled", "budget_tokens": 1024}), ("cache_control", {"type": "ephemeral"}),
    ("context_management", {"edits": [{"type": "clear_tool_uses_20250919"}]}), ("fallbacks", "default")])
def test_fields_threads_do_not_support_are_named(mock, field, value):
    payload = body([user("Hi")], max_tokens=2000, **{field: value})
    status, error = send(mock, payload)
    assert status == 400, error
    assert error["error"]["details"] == {"error_code": "thread_unsupported_request", "unsupported": [field]}
    assert len(mock.threads) == 0
    assert send(mock, {**payload, "thread": None})[0] == 200  # without a thread the same request is fine


def test_thinking_turned_off_is_no_thinking(mock):
    assert send(mock, body([user("Hi")], thinking={"type": "disabled"}))[0] == 200


def test_a_thread_without_a_beta_header_is_an_extra_input(mock):
    status, error = send(mock, body([user("Hi")]), {"anthropic-beta": ""})
    assert status == 400 and error["error"]["message"] == "thread: Extra inputs are not permitted"


def test_a_malformed_thread_gets_the_schemas_error(mock):
    status, error = send(mock, body([user("Hi")], {"type": "continue"}))
    assert status == 400 and error["error"]["message"] == "thread.continue.previous_message_id: Field required"


def test_a_bad_new_turn_is_refused_and_the_thread_stays_continuable():
    mock = MockAPI()
    _, first = send(mock, body([user("Weather in Paris?")], tools=[WEATHER]))
    orphan = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_other", "content": "x"}]}
    status, error = send(mock, body([orphan], cont(first["id"])))
    assert status == 400 and "unexpected `tool_use_id`" in error["error"]["message"]
    assert len(mock.threads) == 1 and mock.threads.conversation(first["id"], KEY) is not None


def test_nothing_is_stored_for_a_request_that_fails(mock):
    assert send(mock, body([user("Hi")]), {"x-api-key": ""})[0] == 401
    assert send(mock, {k: v for k, v in body([user("Hi")]).items() if k != "max_tokens"})[0] == 400
    assert send(mock, body([user("Hi")]), {"x-mock-fault": "529"})[0] == 529
    assert send(mock, {**body([user("Hi")]), "stream": True}, {"x-mock-fault": "cut=3"})[0] == 200
    assert send(mock, {**body([user("Hi")]), "stream": True}, {"x-mock-fault": "error-after=3"})[0] == 200
    mock.script({"status": 429})
    assert send(mock, body([user("Hi")]))[0] == 429
    assert len(mock.threads) == 0 and mock.threads.bytes == 0


def test_a_streamed_continue(mock, seen):
    _, first = send(mock, body([user("Hi")]))
    status, events = send(mock, {**body([user("And?")], cont(first["id"])), "stream": True})
    assert status == 200 and events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    assert text == "3 message(s) seen."
    streamed_id = events[0]["message"]["id"]
    status, third = send(mock, body([user("More?")], cont(streamed_id)))
    assert status == 200 and third["content"][0]["text"] == "5 message(s) seen."


def test_after_pause_turn_an_empty_continue_resumes_the_turn(mock, seen):
    mock.script(scripts.pause_turn())
    _, first = send(mock, body([user("Search for it.")]))
    assert first["stop_reason"] == "pause_turn"
    status, second = send(mock, body([], cont(first["id"])))
    assert status == 200 and seen.bodies[-1]["messages"][-1]["role"] == "assistant"  # the held turn, resumed


def test_an_empty_create_is_still_the_apis_400(mock):
    status, error = send(mock, body([]))
    assert status == 400 and error["error"]["message"] == "messages: at least one message is required"


def test_a_thread_expires_on_the_mocks_clock(seen):
    now = [1000.0]
    mock = MockAPI(brain=seen, clock=lambda: now[0])
    _, first = send(mock, body([user("Hi")]))
    now[0] += THREAD_TTL - 1
    _, second = send(mock, body([user("And?")], cont(first["id"])))
    assert second["type"] == "message"
    now[0] += THREAD_TTL
    status, error = send(mock, body([user("Still there?")], cont(second["id"])))
    assert status == 404 and error["error"]["details"]["error_code"] == "thread_not_found"
    assert len(mock.threads) == 0 and mock.threads.bytes == 0


def test_the_store_keeps_the_newest_threads_within_its_caps(mock):
    mock.threads = ThreadStore(max_threads=2)
    ids = [send(mock, body([user(f"Thread {n}")]))[1]["id"] for n in range(3)]
    assert len(mock.threads) == 2
    assert send(mock, body([user("And?")], cont(ids[0])))[0] == 404  # the oldest went first
    assert send(mock, body([user("And?")], cont(ids[2])))[0] == 200
    mock.threads = ThreadStore(max_bytes=400)
    ids = [send(mock, body([user(f"Thread {n} " + "x" * 100)]))[1]["id"] for n in range(4)]
    assert mock.threads.bytes <= 400 and 1 <= len(mock.threads) < 4
    assert send(mock, body([user("And?")], cont(ids[-1])))[0] == 200
    _, big = send(mock, body([user("y" * 1000)]))  # larger than the whole store: not held at all
    assert mock.threads.conversation(big["id"], KEY) is None and mock.threads.bytes <= 400


def test_a_long_thread_holds_one_conversation_and_its_size(mock):
    _, answer = send(mock, body([user("Turn 0")]))
    for n in range(1, 20):
        _, answer = send(mock, body([user(f"Turn {n}")], cont(answer["id"])))
    assert answer["content"][0]["text"] == "39 message(s) seen."
    assert len(mock.threads) == 1
    held = mock.threads.conversation(answer["id"], KEY)
    assert len(held) == 40
    assert mock.threads.bytes >= len(json.dumps(held, separators=(",", ":")))


def test_the_same_requests_give_the_same_bytes():
    def run():
        mock = MockAPI()
        out = []
        _, first = send(mock, body([user("What is the weather in Paris?")], tools=[WEATHER]))
        [call] = [b for b in first["content"] if b["type"] == "tool_use"]
        out.append(first)
        result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "15°C"}]}
        out.append(send(mock, body([result], cont(first["id"])))[1])
        out.append(send(mock, body([user("Hi")], cont("msg_gone")))[1])
        return json.dumps(out)
    assert run() == run()


def test_reset_forgets_the_threads(mock):
    _, first = send(mock, body([user("Hi")]))
    mock.reset()
    assert len(mock.threads) == 0
    assert send(mock, body([user("And?")], cont(first["id"])))[0] == 404


def test_count_tokens_takes_no_thread(mock):
    reply = mock.handle("POST", "/v1/messages/count_tokens", HEADERS,
                        json.dumps({"model": MODEL, "messages": [user("Hi")], "thread": CREATE}).encode())
    assert reply.status == 400 and json.loads(reply.body)["error"]["message"] == "thread: Extra inputs are not permitted"
