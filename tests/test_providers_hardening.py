"""The OpenAI adapter under answers of the wrong JSON types: every field of a stream chunk and of a
non-streamed completion, given each JSON type it should not have, ends as the one typed
MalformedResponseError (never a bare TypeError, never a message quietly missing what was sent), and
an agent's run that meets one ends as `api_error` with its history intact."""

from __future__ import annotations

import asyncio
import copy
import re

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

import openai_fakes as fake
from drivers import both
from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent
from miniagent.aclient import AsyncClient
from miniagent.client import Client
from miniagent.errors import APIError, MalformedResponseError
from miniagent.messages import conversation_error
from miniagent.providers import OpenAIFormat
from miniagent.tools import tool
from miniagent.wire import message_problem

HELLO = [{"role": "user", "content": "hello"}]
KEY = "sk-test-0123456789abcdef"

# One value of each JSON type (ints both ways: a count may not be negative).
WRONG = {"null": None, "bool": True, "int": 5, "negative": -1, "float": 2.5, "str": "x", "list": [1],
         "empty list": [], "object": {"a": 1}}


ANY = None  # a field the adapter does not read: any value will do
COUNT = {"int", "null"}
USAGE = {"usage": {"object", "null"}, "usage.prompt_tokens": COUNT, "usage.completion_tokens": COUNT,
         "usage.total_tokens": ANY, "usage.prompt_tokens_details": {"object", "null"},
         "usage.prompt_tokens_details.cached_tokens": COUNT}
CALL = {"id": {"str", "null"}, "type": ANY, "function.name": {"str", "null"},
        "function.arguments": {"str", "object", "null"}}
TEXT = {"str", "null"}

# What each field a chunk can hold may be (paths with list positions written as #).
CHUNK = {"id": ANY, "object": ANY, "created": ANY, "model": ANY, "system_fingerprint": ANY,
         "choices": {"list", "empty list", "null"}, "choices.#": {"object"},
         "choices.#.index": {"int", "negative", "null"}, "choices.#.logprobs": ANY,
         "choices.#.finish_reason": TEXT, "choices.#.delta": {"object", "null"},
         "choices.#.delta.role": ANY, "choices.#.delta.content": TEXT, "choices.#.delta.refusal": TEXT,
         "choices.#.delta.reasoning_content": TEXT, "choices.#.delta.tool_calls": {"list", "empty list", "null"},
         "choices.#.delta.tool_calls.#": {"object"}, "choices.#.delta.tool_calls.#.index": {"int", "negative"},
         "choices.#.delta.tool_calls.#.function": {"object", "null"},
         **{f"choices.#.delta.tool_calls.#.{k}": v for k, v in CALL.items()}, **USAGE}

# And each field of a non-streamed completion.
COMPLETION = {"id": ANY, "object": ANY, "created": ANY, "model": ANY, "system_fingerprint": ANY,
              "choices": {"list"}, "choices.#": {"object"}, "choices.#.index": ANY, "choices.#.logprobs": ANY,
              "choices.#.finish_reason": TEXT, "choices.#.message": {"object"}, "choices.#.message.role": ANY,
              "choices.#.message.content": {"str", "list", "empty list", "null"},
              "choices.#.message.refusal": TEXT, "choices.#.message.reasoning_content": TEXT,
              "choices.#.message.tool_calls": {"list", "empty list", "null"},
              "choices.#.message.tool_calls.#": {"object"}, "choices.#.message.tool_calls.#.function": {"object"},
              **{f"choices.#.message.tool_calls.#.{k}": v for k, v in CALL.items()},
              "choices.#.message.tool_calls.#.function.name": {"str"}, **USAGE}

MESSAGE = {"id": "chatcmpl-1", "type": "message", "role": "assistant", "model": "m",
           "content": [{"type": "thinking", "thinking": "let me see"}, {"type": "text", "text": "Paris:"},
                       {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}],
           "stop_reason": "tool_use", "stop_sequence": None,
           "usage": {"input_tokens": 12, "output_tokens": 5, "cache_read_input_tokens": 2}}


def fields(value, path=()):
    """Every (path, value) inside a JSON value, outermost first."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        yield path + (key,), inner
        yield from fields(inner, path + (key,))


def pattern(path) -> str:
    return ".".join("#" if isinstance(p, int) else p for p in path)


def replaced(value, path, new):
    out = copy.deepcopy(value)
    inner = out
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = new
    return out


def cases(document, rules):
    """(path, name of the wrong type, the document with that field replaced, whether it must be refused)."""
    for path, _ in fields(document):
        allowed = rules[pattern(path)]  # a KeyError here: a field the table has forgotten
        for name, wrong in WRONG.items():
            yield path, name, replaced(document, path, wrong), allowed is not ANY and name not in allowed


def make(reply, client_class=Client):
    return client_class(api_key=KEY, base_url="https://api.test/v1", format=OpenAIFormat(), max_retries=0,
                        transport=httpx2.MockTransport(lambda request: reply))


def outcome(call):
    """"ok", "malformed" or another APIError's class name; anything else (a TypeError) propagates."""
    try:
        message = call()
    except MalformedResponseError:
        return "malformed"
    except APIError as err:
        return type(err).__name__
    assert message_problem(message) is None, message  # the Messages API's own shape, as the loop expects
    return "ok"


def test_the_field_tables_cover_every_field_of_the_fakes():
    chunk_fields = {pattern(p) for c in fake.chunks(MESSAGE) for p, _ in fields(c)}
    completion_fields = {pattern(p) for p, _ in fields(fake.completion(MESSAGE))}
    assert chunk_fields - set(CHUNK) == set() and completion_fields - set(COMPLETION) == set()
    assert {"choices", "choices.#.delta.tool_calls", "choices.#.delta.tool_calls.#.function.arguments",
            "usage.prompt_tokens"} <= chunk_fields


class Server:
    """One client for many cases: the server answers with whatever `reply` is set to."""

    def __init__(self) -> None:
        self.reply: httpx2.Response | None = None
        self.client = Client(api_key=KEY, base_url="https://api.test/v1", format=OpenAIFormat(), max_retries=0,
                             transport=httpx2.MockTransport(lambda request: self.reply))

    def stream(self, body: bytes) -> dict:
        self.reply = fake.reply(stream=body)
        return self.client.create(HELLO, stream=True)

    def create(self, payload: dict) -> dict:
        self.reply = fake.reply(200, payload)
        return self.client.create(HELLO)


def test_every_chunk_field_of_a_wrong_type_is_a_malformed_response():
    chunks, wrong, loose, server = fake.chunks(MESSAGE, size=64), [], [], Server()  # one chunk per kind
    for i in range(len(chunks)):
        for path, name, changed, refuse in cases(chunks[i], CHUNK):
            body = fake.sse([*chunks[:i], changed, *chunks[i + 1:]])
            got = outcome(lambda: server.stream(body))
            if refuse and got != "malformed":
                wrong.append(f"chunk {i} {pattern(path)}={name}: {got}")
            loose.append(got)
    assert wrong == []
    assert "malformed" in loose and "ok" in loose  # both kinds of field were tried


def test_every_completion_field_of_a_wrong_type_is_a_malformed_response():
    completion, wrong, server = fake.completion(MESSAGE), [], Server()
    for path, name, changed, refuse in cases(completion, COMPLETION):
        got = outcome(lambda: server.create(changed))
        if refuse and got != "malformed":
            wrong.append(f"{pattern(path)}={name}: {got}")
    assert wrong == []


@both
@pytest.mark.parametrize("change", [{"choices": 5}, {"choices": [{"index": 0, "delta": {"tool_calls": 7}}]},
                                    {"choices": [7]}, {"usage": "many"},
                                    {"choices": [{"index": 0, "delta": {"content": ["hi"]}}]}])
def test_the_examples_of_the_issue_on_both_drivers(change):
    chunks = fake.chunks(MESSAGE)
    chunks[1] = {**chunks[1], **change}
    c = make(fake.reply(stream=fake.sse(chunks)))
    with pytest.raises(MalformedResponseError, match="not a valid|should be") as caught:
        c.create(HELLO, stream=True)
    assert caught.value.type == "malformed_response" and caught.value.partial is not None
    assert KEY not in str(caught.value)


def test_the_message_names_the_field_and_its_type():
    chunks = fake.chunks(MESSAGE)
    chunks[3]["choices"][0]["delta"]["tool_calls"] = 7
    with pytest.raises(MalformedResponseError, match=r"choices\.0\.delta\.tool_calls should be a list or null, "
                                                     r"got a number"):
        make(fake.reply(stream=fake.sse(chunks))).create(HELLO, stream=True)


@given(st.data())
def test_any_chunk_of_wrong_types_is_a_message_or_a_typed_error(data):
    """Property: any field of any chunk replaced by any JSON value: the client returns a message that makes
    a valid next request, or raises an APIError; nothing else."""
    json_values = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False)
                               | st.text(max_size=3), lambda inner: st.lists(inner, max_size=3)
                               | st.dictionaries(st.sampled_from(["index", "delta", "content", "tool_calls",
                                                                  "function", "arguments", "name", "id"]), inner,
                                                 max_size=3), max_leaves=6)
    chunks = fake.chunks(MESSAGE, size=4)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(chunks) - 1))
        paths = [p for p, _ in fields(chunks[i])]
        if not paths:
            continue
        value = data.draw(st.sampled_from(list(WRONG.values())) | json_values)
        chunks[i] = replaced(chunks[i], data.draw(st.sampled_from(paths)), value)
    assert outcome(lambda: Server().stream(fake.sse(chunks))) is not None


# --- an agent's run: api_error, the history intact ------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 18°C, sunny"


def first_then(bad_reply, stream):
    """A server whose first answer asks for the weather and whose second is `bad_reply`."""
    first = fake.reply(stream=fake.sse(fake.chunks(MESSAGE))) if stream else fake.reply(200, fake.completion(MESSAGE))
    replies = [first, bad_reply]
    seen: list = []
    return httpx2.MockTransport(fake.handler(replies, seen)), seen


BAD_CHUNKS = [c if i != 1 else {**c, "choices": [{"index": 0, "delta": {"tool_calls": 7}}]}
              for i, c in enumerate(fake.chunks({**MESSAGE, "content": [{"type": "text", "text": "hi"}],
                                                 "stop_reason": "end_turn"}))]
BAD = {False: lambda: fake.reply(200, {**fake.completion(MESSAGE), "choices": 5}),
       True: lambda: fake.reply(stream=fake.sse(BAD_CHUNKS))}


def check_run(result, agent, stream):
    assert result.stop == "api_error" and isinstance(result.error, MalformedResponseError)
    assert re.search("should be", result.reason)
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "user"], roles  # the question, the call, its result: nothing of the bad one
    assert result.messages[2]["content"][0]["content"] == "Paris: 18°C, sunny"
    assert conversation_error(result.messages) is None


@pytest.mark.parametrize("stream", [False, True])
def test_an_agent_run_ends_as_api_error_with_its_history_intact(stream):
    transport, seen = first_then(BAD[stream](), stream)
    client = Client(api_key=KEY, base_url="https://api.test/v1", format=OpenAIFormat(), transport=transport,
                    max_retries=0)
    agent = Agent(client, [get_weather], stream=stream)
    result = agent.run("What is the weather in Paris?")
    check_run(result, agent, stream)
    assert len(seen) == 2  # not retried: the same answer would come again


@pytest.mark.parametrize("stream", [False, True])
def test_an_async_agent_run_ends_as_api_error_with_its_history_intact(stream):
    async def main():
        transport, _ = first_then(BAD[stream](), stream)
        client = AsyncClient(api_key=KEY, base_url="https://api.test/v1", format=OpenAIFormat(),
                             transport=transport, max_retries=0)
        agent = AsyncAgent(client, [get_weather], stream=stream)
        try:
            return await agent.run("What is the weather in Paris?"), agent
        finally:
            await client.aclose()

    result, agent = asyncio.run(main())
    check_run(result, agent, stream)

