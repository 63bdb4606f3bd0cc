"""Providers: the OpenAI Chat Completions translation rule by rule, round trips, streams, errors, presets,
and the article's demo on the OpenAI-compatible path (offline, against the mock's /v1/chat/completions)."""

import asyncio
import json
import re

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

import openai_fakes as fake
from drivers import both
from miniagent import builtin_tools, providers
from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent
from miniagent.aclient import connect_async
from miniagent.client import (APIError, AuthenticationError, BadRequestError, Client, InternalServerError,
                              MalformedResponseError, MissingAPIKeyError, NotFoundError, RateLimitError, StreamError,
                              connect)
from miniagent.messages import conversation_error
from miniagent.providers import (PRESETS, AnthropicFormat, ChunkTranslator, OpenAIFormat, from_openai_messages,
                                 from_openai_response, from_openai_tool_choice, from_openai_tools, parse_arguments,
                                 to_openai_messages, to_openai_request, to_openai_tool_choice, to_openai_tools)
from miniagent.streaming import MessageAccumulator, SSEParser
from miniagent.tools import UNPARSED_ARGUMENTS, ToolRegistry, tool

CANARY = "sk-canary-0123456789abcdefDONOTLEAK"
HELLO = [{"role": "user", "content": "hello"}]
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def answer(*blocks, stop="end_turn", usage=None):
    return {"id": "chatcmpl-1", "type": "message", "role": "assistant", "model": "m", "content": list(blocks),
            "stop_reason": stop, "stop_sequence": None, "usage": usage or {"input_tokens": 12, "output_tokens": 5}}


def text(t):
    return {"type": "text", "text": t}


def call(id, name, input):
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def result(id, content, is_error=False):
    return {"type": "tool_result", "tool_use_id": id, "content": content, **({"is_error": True} if is_error else {})}


def make(replies, **settings):
    """A client on the OpenAI format whose server answers with `replies` in order."""
    seen, sleeps = [], []
    c = Client(api_key=CANARY, base_url="https://api.test/v1", format=OpenAIFormat(), provider="deepseek",
               key_env="DEEPSEEK_API_KEY", transport=httpx2.MockTransport(fake.handler(replies, seen)),
               sleep=sleeps.append, **settings)
    return c, seen, sleeps


# --- 1. the rules, one by one --------------------------------------------------------------


def test_system_user_and_assistant_text():
    assert to_openai_messages([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [text("yo")]}],
                              system="be brief") == [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"}]
    assert to_openai_messages(HELLO, [text("a"), text("b")])[0] == {"role": "system", "content": "a\nb"}


def test_tool_calls_carry_arguments_as_a_json_string():
    sent = to_openai_messages([{"role": "assistant", "content": [
        text("Let me check."), call("call_1", "get_weather", {"city": "北京"}), call("call_2", "get_current_time", {})]}])
    assert sent == [{"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "北京"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "get_current_time", "arguments": "{}"}}]}]
    only_calls = to_openai_messages([{"role": "assistant", "content": [call("c", "f", {})]}])[0]
    assert only_calls["content"] is None  # the format's null content beside tool_calls


def test_one_user_turn_of_results_becomes_one_tool_message_each_then_the_text():
    sent = to_openai_messages([{"role": "user", "content": [
        result("call_1", "25°C"), result("call_2", "Error: unknown city", is_error=True), text("And Paris?")]}])
    assert sent == [{"role": "tool", "tool_call_id": "call_1", "content": "25°C"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "Error: unknown city"},
                    {"role": "user", "content": "And Paris?"}]


def test_an_error_result_says_so_in_its_text():
    sent = to_openai_messages([{"role": "user", "content": [result("c", "boom", is_error=True)]}])
    assert sent[0]["content"] == "Error: boom"
    assert from_openai_messages(sent)[1][0]["content"] == [result("c", "Error: boom", is_error=True)]


def test_images_become_image_url_parts_and_back():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
    linked = {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    sent = to_openai_messages([{"role": "user", "content": [text("what is it?"), image, linked]}])
    assert sent[0]["content"][1:] == [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                                      {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]
    assert from_openai_messages(sent)[1][0]["content"] == [text("what is it?"), image, linked]


def test_thinking_goes_back_as_reasoning_content_without_its_signature():
    sent = to_openai_messages([{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "weather first", "signature": "sig"}, call("c", "f", {"a": 1})]}])[0]
    assert sent["reasoning_content"] == "weather first" and "signature" not in json.dumps(sent)


def test_tools_and_tool_choice():
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": schema, "cache_control": {"type": "x"}}]
    assert to_openai_tools(tools) == [{"type": "function", "function": {
        "name": "get_weather", "description": "Weather", "parameters": schema}}]
    assert from_openai_tools(to_openai_tools(tools)) == [{"name": "get_weather", "description": "Weather",
                                                          "input_schema": schema}]
    cases = [({"type": "auto"}, {"tool_choice": "auto"}), ({"type": "any"}, {"tool_choice": "required"}),
             ({"type": "none"}, {"tool_choice": "none"}),
             ({"type": "tool", "name": "f"}, {"tool_choice": {"type": "function", "function": {"name": "f"}}}),
             ({"type": "auto", "disable_parallel_tool_use": True}, {"tool_choice": "auto", "parallel_tool_calls": False})]
    for canonical, openai in cases:
        assert to_openai_tool_choice(canonical) == openai
        assert from_openai_tool_choice(openai["tool_choice"], openai.get("parallel_tool_calls")) == canonical
    with pytest.raises(ValueError, match="server tool"):
        to_openai_tools([{"type": "web_search_20250305", "name": "web_search"}])


def test_the_request_body():
    body = {"model": "deepseek-flash", "max_tokens": 100, "messages": HELLO, "system": "s", "stop_sequences": ["END"],
            "metadata": {"user_id": "u1"}, "stream": True, "temperature": 0.2, "reasoning_effort": "high"}
    assert to_openai_request(body) == {
        "model": "deepseek-flash", "messages": [{"role": "system", "content": "s"}, *HELLO], "max_tokens": 100,
        "stop": ["END"], "user": "u1", "stream": True, "stream_options": {"include_usage": True},
        "temperature": 0.2, "reasoning_effort": "high"}  # an extra the provider knows passes through
    assert "max_completion_tokens" in to_openai_request(body, max_tokens_field="max_completion_tokens")


def test_a_response_becomes_the_canonical_message():
    payload = {"id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "deepseek-flash",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                   "role": "assistant", "content": "Checking.", "reasoning_content": "Beijing first.",
                   "tool_calls": [{"id": "call_a", "type": "function",
                                   "function": {"name": "get_weather", "arguments": "{\"city\":\"北京\"}"}}]}}],
               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                         "prompt_tokens_details": {"cached_tokens": 64}}}
    assert from_openai_response(payload) == {
        "id": "chatcmpl-9", "type": "message", "role": "assistant", "model": "deepseek-flash",
        "content": [{"type": "thinking", "thinking": "Beijing first."}, text("Checking."),
                    call("call_a", "get_weather", {"city": "北京"})],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 36, "output_tokens": 20, "cache_read_input_tokens": 64}}


@pytest.mark.parametrize("finish,stop", [("stop", "end_turn"), ("length", "max_tokens"), ("tool_calls", "tool_use"),
                                         ("content_filter", "refusal"), ("insufficient_system_resource",
                                                                         "insufficient_system_resource")])
def test_finish_reasons(finish, stop):
    payload = fake.completion(answer(text("x")))
    payload["choices"][0]["finish_reason"] = finish
    assert from_openai_response(payload)["stop_reason"] == stop


def test_deepseek_cache_hits_count_as_cache_reads():
    usage = {"prompt_tokens": 50, "completion_tokens": 7, "prompt_cache_hit_tokens": 30, "prompt_cache_miss_tokens": 20}
    assert providers.from_openai_usage(usage) == {"input_tokens": 20, "output_tokens": 7, "cache_read_input_tokens": 30}


# --- 2. round trips --------------------------------------------------------------------------

words = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
plain = words.filter(lambda t: not t.startswith(providers.ERROR_PREFIX))
scalars = st.none() | st.booleans() | st.integers(-10**9, 10**9) | words \
    | st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(words, inner, max_size=3),
                      max_leaves=6)
inputs = st.dictionaries(words, values, max_size=3) | st.builds(lambda t: {UNPARSED_ARGUMENTS: t}, words)


@st.composite
def user_content(draw):
    kind = draw(st.sampled_from(["string", "texts", "image"]))
    if kind == "string":
        return draw(words)
    if kind == "texts":
        return [text(t) for t in draw(st.lists(words, min_size=2, max_size=3))]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
    return [text(draw(words)), image]


@st.composite
def conversations(draw):
    """Every message shape the agent produces: user text, assistant thinking + text + several tool calls,
    one user turn of results (errors included, some with text after them), a system prompt."""
    system = draw(st.none() | words)
    messages, n = [{"role": "user", "content": draw(user_content())}], 0
    for _ in range(draw(st.integers(0, 3))):
        blocks = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(words)})
        if draw(st.booleans()):
            blocks.append(text(draw(words)))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n += 1
            calls.append(call(f"call_{n}", draw(st.from_regex(r"[a-z_]{1,10}", fullmatch=True)), draw(inputs)))
        messages.append({"role": "assistant", "content": blocks + calls or [text(draw(words))]})
        if calls:
            results = []
            for c in calls:
                failed = draw(st.booleans())
                content = providers.ERROR_PREFIX + draw(words) if failed else draw(plain)
                if draw(st.booleans()):
                    content = [text(content), text(draw(words))]
                results.append(result(c["id"], content, is_error=failed))
            after = [text(t) for t in draw(st.lists(words, max_size=2))]
            messages.append({"role": "user", "content": results + after})
        else:
            messages.append({"role": "user", "content": draw(user_content())})
    return system, messages


@given(conversations())
def test_round_trip_is_lossless_for_every_shape_the_agent_produces(conversation):
    system, messages = conversation
    assert from_openai_messages(to_openai_messages(messages, system)) == (system, messages)


@given(conversations(), st.booleans())
def test_what_the_round_trip_normalises_the_openai_side_keeps(conversation, error_without_prefix):
    """Shapes outside the agent's own (a single text block, a string for an assistant, an error result
    without the prefix) come back normalised, and the OpenAI form is then stable: translating again
    sends the same bytes."""
    system, messages = conversation
    messages = messages + [{"role": "assistant", "content": "a string"},
                           {"role": "user", "content": [text("one block")]}]
    if error_without_prefix:
        messages += [{"role": "assistant", "content": [call("call_x", "f", {})]},
                     {"role": "user", "content": [result("call_x", "no prefix", is_error=True)]}]
    sent = to_openai_messages(messages, system)
    again = from_openai_messages(sent)
    assert to_openai_messages(again[1], again[0]) == sent
    assert again[1][len(conversation[1])] == {"role": "assistant", "content": [text("a string")]}
    assert again[1][len(conversation[1]) + 1] == {"role": "user", "content": "one block"}


@st.composite
def responses(draw):
    blocks = []
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": draw(words)})
    if draw(st.booleans()):
        blocks.append(text(draw(words)))
    calls = [call(f"call_{i}", draw(st.from_regex(r"[a-z_]{1,8}", fullmatch=True)), draw(inputs))
             for i in range(draw(st.integers(0, 3)))]
    stop = draw(st.sampled_from(["tool_use", "max_tokens"] if calls else ["end_turn", "max_tokens", "refusal"]))
    usage = {"input_tokens": draw(st.integers(0, 10**6)), "output_tokens": draw(st.integers(0, 10**5))}
    if draw(st.booleans()):
        usage["cache_read_input_tokens"] = draw(st.integers(1, 10**5))
    return answer(*blocks, *calls, stop=stop, usage=usage)


def assembled(body: bytes, *, step: int = 7) -> tuple[dict | None, list[dict]]:
    """What the client makes of a stream's bytes: the message, and the events it handed out."""
    parser, translator, accumulator, events = SSEParser(), ChunkTranslator(), MessageAccumulator(), []
    for i in range(0, len(body), step):
        for sse in parser.feed(body[i:i + step]):
            for event in translator.events(sse):
                events.append(event)
                accumulator.add(event)
    for event in translator.end():
        events.append(event)
        accumulator.add(event)
    return accumulator.message, events


@given(responses(), st.integers(1, 5), st.booleans())
def test_responses_round_trip_streamed_or_not(message, size, interleave):
    assert from_openai_response(fake.completion(message)) == message
    streamed, _ = assembled(fake.sse(fake.chunks(message, size=size, interleave=interleave)))
    assert streamed == message


# --- 3. arguments that are not JSON -----------------------------------------------------------


@pytest.mark.parametrize("arguments,expected", [('{"city": "Paris"}', {"city": "Paris"}), ("", {}), ("  ", {}),
                                                ('{"city": "Par', {UNPARSED_ARGUMENTS: '{"city": "Par'}),
                                                ("[1, 2]", {UNPARSED_ARGUMENTS: "[1, 2]"}),
                                                ("null", {UNPARSED_ARGUMENTS: "null"}), ({"a": 1}, {"a": 1})])
def test_arguments(arguments, expected):
    assert parse_arguments(arguments) == expected


def test_broken_arguments_become_a_call_the_registry_answers_with_an_error():
    payload = fake.completion(answer(call("call_1", "get_weather", {}), stop="tool_use"))
    payload["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"city": 北京'
    message = from_openai_response(payload)
    block = message["content"][0]
    assert block == call("call_1", "get_weather", {UNPARSED_ARGUMENTS: '{"city": 北京'})

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        raise AssertionError("never run with broken arguments")

    answered = ToolRegistry([get_weather]).run(block)
    assert answered["is_error"] and "were not valid JSON" in answered["content"] and "北京" in answered["content"]
    history = [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": [block]},
               {"role": "user", "content": [answered]}]
    assert conversation_error(history) is None  # the history stays valid, for both formats
    assert json.loads(to_openai_messages(history)[1]["tool_calls"][0]["function"]["arguments"]) == block["input"]


def test_the_loop_answers_broken_arguments_and_the_model_tries_again():
    from miniagent.builtin_tools import default_tools
    from miniagent.loop import run_loop
    broken = fake.completion(answer(call("call_1", "calculate", {}), stop="tool_use"))
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = '{"expression": "(1024 + 768) * 2"'
    c, seen, _ = make([fake.reply(200, broken), fake.reply(200, fake.completion(answer(text("3584"))))])
    result = run_loop(c, [{"role": "user", "content": "(1024 + 768) * 2?"}], tools=default_tools())
    assert result.ok and result.text == "3584"
    tool_message = json.loads(seen[1].content)["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("Error: the arguments for calculate "
                                                                                 "were not valid JSON")


def test_a_server_that_says_stop_while_calling_tools_is_calling_tools():
    payload = fake.completion(answer(call("call_1", "f", {}), stop="tool_use"))
    payload["choices"][0]["finish_reason"] = "stop"  # older Ollama
    assert from_openai_response(payload)["stop_reason"] == "tool_use"


def test_broken_arguments_in_a_stream_too():
    message = answer(call("call_1", "get_weather", {}), call("call_2", "get_current_time", {}), stop="tool_use")
    streamed, _ = assembled(fake.sse(fake.chunks(message, arguments={0: '{"city": "Bei'}, interleave=True)))
    assert [b["input"] for b in streamed["content"]] == [{UNPARSED_ARGUMENTS: '{"city": "Bei'}, {}]


# --- 4. streams ----------------------------------------------------------------------------------


def shape(events):
    """An event sequence with the parts that legitimately differ between two streams of one message left out:
    pings, how text is cut into deltas, usage before the end."""
    out = []
    for e in events:
        if e["type"] == "ping" or (e["type"] == "content_block_delta" and out and out[-1][0] == "delta"
                                   and out[-1][1] == e["index"]):
            continue
        if e["type"] == "content_block_start":
            out.append(("start", e["index"], e["content_block"]["type"]))
        elif e["type"] == "content_block_delta":
            out.append(("delta", e["index"], e["delta"]["type"]))
        elif e["type"] == "content_block_stop":
            out.append(("stop", e["index"]))
        elif e["type"] == "message_delta":
            out.append(("message_delta", e["delta"]["stop_reason"]))
        else:
            out.append((e["type"],))
    return out


def test_a_stream_gives_the_events_an_anthropic_stream_of_the_same_message_gives():
    from miniagent.mock.stream import message_events
    message = answer(text("北京和上海："), call("call_1", "get_weather", {"city": "北京"}),
                     call("call_2", "get_weather", {"city": "上海"}), stop="tool_use")
    streamed, events = assembled(fake.sse(fake.chunks(message, interleave=True)))
    assert streamed == message
    assert shape(events) == shape(message_events(message))


def test_several_calls_interleaved_by_index_are_never_mixed():
    message = answer(call("call_a", "calculate", {"expression": "(1024 + 768) * 2"}),
                     call("call_b", "get_weather", {"city": "上海"}), call("call_c", "get_current_time", {}),
                     stop="tool_use")
    chunks = fake.chunks(message, size=2, interleave=True)
    fragments = [c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in chunks
                 if c["choices"] and "tool_calls" in c["choices"][0]["delta"]]
    assert fragments != sorted(fragments)  # they really alternate: 0, 1, 2, 0, 1, ...
    assert assembled(fake.sse(chunks))[0] == message


def test_usage_comes_last_and_done_ends_the_message():
    message = answer(text("hi"), usage={"input_tokens": 9, "output_tokens": 2})
    chunks = fake.chunks(message)
    body = fake.sse(chunks) + b"data: {\"never\": \"read\"}\n\n"
    streamed, events = assembled(body)
    assert streamed["usage"] == {"input_tokens": 9, "output_tokens": 2}
    assert events[-2]["type"] == "message_delta" and events[-1] == {"type": "message_stop"}
    without_usage, _ = assembled(fake.sse(fake.chunks(message, usage=False)))
    assert without_usage["usage"] == {"input_tokens": 0, "output_tokens": 0}


def test_done_before_the_finish_is_malformed():
    chunks = fake.chunks(answer(text("hello there")))[:2]
    with pytest.raises(MalformedResponseError, match=r"\[DONE\] came before"):
        assembled(fake.sse(chunks))


def test_a_tool_call_delta_without_an_index_is_malformed():
    chunks = fake.chunks(answer(call("c", "f", {"a": 1}), stop="tool_use"))
    del chunks[1]["choices"][0]["delta"]["tool_calls"][0]["index"]
    with pytest.raises(MalformedResponseError, match="index"):
        assembled(fake.sse(chunks))


# --- 5. the client on the OpenAI format: request, response, errors, retries (both drivers) ---------


@both
def test_the_request_on_the_wire():
    c, seen, _ = make([fake.reply(200, fake.completion(answer(text("hi"))))], model="deepseek-flash")
    message = c.create(HELLO, system="be brief", tools=[{"name": "f", "description": "d",
                                                         "input_schema": {"type": "object"}}])
    request = seen[0]
    assert request.url == "https://api.test/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {CANARY}" and "x-api-key" not in request.headers
    assert json.loads(request.content) == {
        "model": "deepseek-flash", "messages": [{"role": "system", "content": "be brief"}, *HELLO],
        "max_tokens": 1024, "tools": [{"type": "function", "function": {
            "name": "f", "description": "d", "parameters": {"type": "object"}}}]}
    assert message == answer(text("hi"))
    assert c.usage.input_tokens == 12 and c.usage.calls == 1
    assert c.last.request["headers"]["authorization"] == "<redacted>"
    assert c.last.request["body"]["messages"][0]["role"] == "system"  # the record shows what went over the wire


@both
def test_a_stream_through_the_client():
    message = answer(text("北京晴。"), call("call_1", "get_weather", {"city": "北京"}), stop="tool_use")
    c, seen, _ = make([fake.reply(stream=fake.sse(fake.chunks(message, interleave=True)))])
    events = []
    assert c.create(HELLO, stream=True, on_event=events.append) == message
    assert json.loads(seen[0].content)["stream_options"] == {"include_usage": True}
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert c.last.stream["complete"]


@both
def test_a_stream_without_done_ends_at_the_end_of_the_body_if_it_finished():
    message = answer(text("hi"))
    c, _, _ = make([fake.reply(stream=fake.sse(fake.chunks(message), done=False))])
    assert c.create(HELLO, stream=True) == message
    cut = fake.sse(fake.chunks(message)[:2], done=False)
    c, _, _ = make([fake.reply(stream=cut)])
    with pytest.raises(StreamError, match="ended before message_stop") as caught:
        c.create(HELLO, stream=True)
    assert caught.value.partial["content"] == [text("hi")]


@both
def test_an_error_chunk_in_a_stream_is_the_typed_error():
    chunks = fake.chunks(answer(text("hello")))[:2] + [
        {"error": {"message": "The server had an error", "type": "server_error", "param": None, "code": None}}]
    c, _, _ = make([fake.reply(stream=fake.sse(chunks, done=False))])
    with pytest.raises(InternalServerError, match="The server had an error") as caught:
        c.create(HELLO, stream=True)
    assert caught.value.partial["content"] == [text("hel")]


@both
@pytest.mark.parametrize("status,kind,code,cls", [(400, "invalid_request_error", "invalid_value", BadRequestError),
                                                  (401, "invalid_request_error", "invalid_api_key", AuthenticationError),
                                                  (404, "invalid_request_error", "model_not_found", NotFoundError)])
def test_client_errors_are_typed_and_not_retried(status, kind, code, cls):
    c, seen, _ = make([fake.error(status, "Incorrect API key provided: sk-****LEAK", kind, code)])
    with pytest.raises(cls) as caught:
        c.create(HELLO)
    err = caught.value
    assert len(seen) == 1 and err.status == status and err.type == code and err.request_id == "req_openai_1"
    assert "ANTHROPIC" not in err.hint
    if cls is AuthenticationError:
        assert "DEEPSEEK_API_KEY" in err.hint
    if cls is NotFoundError:
        assert "/v1" in err.hint


@both
def test_rate_limits_and_server_errors_are_retried_with_retry_after():
    c, seen, sleeps = make([fake.error(429, "Rate limit reached", "requests", "rate_limit_exceeded", **{"retry-after": "0.25"}),
                            fake.error(500, "The server had an error", "server_error"),
                            fake.reply(200, fake.completion(answer(text("ok"))))])
    assert c.create(HELLO)["content"] == [text("ok")]
    assert len(seen) == 3 and sleeps[0] == 0.25 and 0 < sleeps[1] <= 1.0


@both
def test_gives_up_with_the_typed_error():
    c, seen, _ = make([fake.error(429, "quota", "insufficient_quota", "insufficient_quota", **{"retry-after-ms": "1"})],
                      max_retries=2)
    with pytest.raises(RateLimitError, match="quota"):
        c.create(HELLO)
    assert len(seen) == 3


@pytest.mark.parametrize("body,expected", [({"error": "model 'llama9' not found"}, "model 'llama9' not found"),
                                           ({"object": "error", "message": "bad", "type": "BadRequestError"}, "bad")])
def test_other_error_bodies_of_compatible_servers(body, expected):
    c, _, _ = make([httpx2.Response(400, json=body)])
    with pytest.raises(BadRequestError, match=expected):
        c.create(HELLO)


def test_a_response_that_is_not_a_completion_is_malformed():
    c, _, _ = make([fake.reply(200, {"type": "message", "content": []})])
    with pytest.raises(MalformedResponseError, match="not a Chat Completions response: 'choices'"):
        c.create(HELLO)


def test_what_cannot_be_translated_fails_before_sending():
    c, seen, _ = make([])
    with pytest.raises(APIError, match="Chat Completions format.*document"):
        c.create([{"role": "user", "content": [{"type": "document", "source": {}}]}])
    with pytest.raises(TypeError, match="count_tokens"):
        c.count_tokens(HELLO)
    assert seen == []


def test_the_key_never_appears_in_records_or_errors():
    echo = httpx2.Response(401, json={"error": {"message": f"Incorrect API key provided: {CANARY}",
                                               "type": "invalid_request_error", "code": "invalid_api_key"}})
    c, _, _ = make([echo])
    with pytest.raises(AuthenticationError) as caught:
        c.create(HELLO)
    everything = str(caught.value) + caught.value.hint + json.dumps([e.to_dict() for e in c.exchanges])
    assert CANARY not in everything and "<redacted>" in everything


def test_the_anthropic_format_is_unchanged():
    assert AnthropicFormat().headers("k", "2023-06-01") == {"x-api-key": "k", "anthropic-version": "2023-06-01",
                                                            "content-type": "application/json"}
    assert AnthropicFormat(auth="bearer").headers("k", "v")["authorization"] == "Bearer k"
    body = {"model": "m", "max_tokens": 1, "messages": HELLO}
    assert AnthropicFormat().request(body) is body


# --- 6. presets and connect() ------------------------------------------------------------------


def test_every_preset_names_its_source_and_its_facts():
    for name, preset in PRESETS.items():
        assert re.match(r"https://\S+", preset.docs), name
        assert preset.format in ("openai", "anthropic") and preset.base_url.startswith(("https://", "http://localhost", "http://127.0.0.1"))
        assert preset.key_env is None or re.fullmatch(r"[A-Z_]+_API_KEY", preset.key_env), name
        assert not preset.base_url.endswith("/"), name
    assert {"openai", "deepseek", "qwen", "kimi", "glm", "ollama", "vllm"} <= set(PRESETS)
    assert {n for n, p in PRESETS.items() if p.format == "anthropic"} >= {"deepseek-anthropic", "kimi-anthropic",
                                                                        "glm-anthropic"}


CHINA_FIRST = {  # issue 29: the presets a Chinese classroom can reach, each with its base URL and key variable
    "ark": ("https://ark.cn-beijing.volces.com/api/v3", "ARK_API_KEY", "openai"),
    "siliconflow": ("https://api.siliconflow.cn/v1", "SILICONFLOW_API_KEY", "openai"),
    "siliconflow-intl": ("https://api.siliconflow.com/v1", "SILICONFLOW_API_KEY", "openai"),
    "minimax": ("https://api.minimax.io/v1", "MINIMAX_API_KEY", "openai"),
    "minimax-cn": ("https://api.minimaxi.com/v1", "MINIMAX_API_KEY", "openai"),
    "minimax-anthropic": ("https://api.minimax.io/anthropic", "MINIMAX_API_KEY", "anthropic"),
    "minimax-cn-anthropic": ("https://api.minimaxi.com/anthropic", "MINIMAX_API_KEY", "anthropic"),
    "qianfan": ("https://qianfan.baidubce.com/v2", "QIANFAN_API_KEY", "openai"),
    "qianfan-anthropic": ("https://qianfan.baidubce.com/anthropic", "QIANFAN_API_KEY", "anthropic"),
    "qwen-anthropic": ("https://dashscope-intl.aliyuncs.com/apps/anthropic", "DASHSCOPE_API_KEY", "anthropic"),
    "qwen-cn-anthropic": ("https://dashscope.aliyuncs.com/apps/anthropic", "DASHSCOPE_API_KEY", "anthropic"),
    "kimi-cn-anthropic": ("https://api.moonshot.cn/anthropic", "MOONSHOT_API_KEY", "anthropic"),
}


def test_the_china_first_presets_and_the_region_of_each_key():
    for name, (base_url, key_env, wire) in CHINA_FIRST.items():
        preset = PRESETS[name]
        assert (preset.base_url, preset.key_env, preset.format) == (base_url, key_env, wire), name
        assert preset.model and preset.region, name
        assert wire == "openai" or preset.auth in ("x-api-key", "bearer"), name
    assert PRESETS["glm"].model == PRESETS["glm-anthropic"].model == "glm-4.7-flash"  # free: a classroom pays nothing
    twins = {name: p.twin for name, p in PRESETS.items() if p.twin}
    assert {"qwen", "kimi", "glm", "siliconflow", "minimax", "qwen-anthropic", "kimi-anthropic"} <= set(twins)
    for name, twin in twins.items():  # the other region's preset: same provider and format, the other region
        other = PRESETS[twin]
        assert other.twin == name and other.format == PRESETS[name].format, name
        assert other.region != PRESETS[name].region and other.base_url != PRESETS[name].base_url, name
        assert PRESETS[name].region.split(" (")[0] in (providers.CN, providers.INTL), name


def test_glm_gets_tool_choice_auto_only_and_is_told_so_before_sending():
    glm, deepseek = PRESETS["glm"].wire_format(), PRESETS["deepseek"].wire_format()
    tools = [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}]
    body = {"model": "glm-4.7-flash", "max_tokens": 10, "messages": HELLO, "tools": tools}
    for kind in ({"type": "any"}, {"type": "tool", "name": "get_weather"}, {"type": "none"}):
        with pytest.raises(ValueError, match=r"accepts 'auto' only") as caught:
            glm.request({**body, "tool_choice": kind})
        assert repr(kind["type"]) in str(caught.value)
        assert deepseek.request({**body, "tool_choice": kind})["tool_choice"]  # others send every kind
    sent = glm.request({**body, "tool_choice": {"type": "auto", "disable_parallel_tool_use": True}})
    assert "tool_choice" not in sent and sent["parallel_tool_calls"] is False and sent["tools"]  # auto: the default
    assert glm.request({**body, "stream": True})["stream_options"] == {"include_usage": True}
    assert PRESETS["zai"].tool_choices == ("auto",) and PRESETS["openai"].tool_choices is None


def test_a_refused_tool_choice_reaches_the_caller_with_a_hint_about_the_format(clean_env):
    from miniagent.errors import RequestEncodingError

    glm = connect(provider="glm", offline=True, quiet=True)
    with pytest.raises(RequestEncodingError) as caught:
        glm.create(HELLO, tools=[{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
                   tool_choice={"type": "any"})
    assert "accepts 'auto' only" in str(caught.value) and "must be JSON" not in str(caught.value)
    assert "this provider's format has no form" in caught.value.hint


def test_glm_runs_the_agent_with_tool_choice_auto(clean_env):
    """Notebook 03's exercise asks for one call at a time: on GLM that is parallel_tool_calls, tool_choice left out."""
    agent = Agent(connect(provider="glm", offline=True, quiet=True),
                  create={"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}})
    assert agent.run("现在几点了？").ok
    sent = agent.client.last.request["body"]
    assert "tool_choice" not in sent and sent["parallel_tool_calls"] is False


def test_a_401_names_the_preset_a_key_from_the_other_region_needs():
    def refused(provider, base_url):
        preset = PRESETS[provider]
        c = Client(api_key=CANARY, base_url=base_url, format=preset.wire_format(), provider=provider,
                   key_env=preset.key_env, max_retries=0, sleep=lambda s: None,
                   transport=httpx2.MockTransport(fake.handler([fake.error(401, "Incorrect API key provided",
                                                                           "invalid_request_error",
                                                                           "invalid_api_key")], [])))
        with pytest.raises(AuthenticationError) as caught:
            c.create(messages=HELLO)
        return caught.value.hint
    hint = refused("qwen", PRESETS["qwen"].base_url)
    assert "DASHSCOPE_API_KEY" in hint and "a key made in mainland China (Beijing) needs preset qwen-cn" in hint
    assert "MINIAGENT_PROVIDER=qwen-cn" in hint and CANARY not in hint
    assert "needs preset kimi-anthropic" in refused("kimi-cn-anthropic", PRESETS["kimi-cn-anthropic"].base_url)
    assert "needs preset" not in refused("deepseek", PRESETS["deepseek"].base_url)  # one platform, any region
    assert "needs preset" not in refused("qwen", "https://proxy.test/v1")  # not the preset's own address


@pytest.fixture
def clean_env(monkeypatch):
    for var in ["MINIAGENT_OFFLINE", "MINIAGENT_PROVIDER", "MINIAGENT_MODEL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                "MINIAGENT_BASE_URL", "MINIAGENT_TIMEOUT", "MINIAGENT_STREAM_TIMEOUT",
                *{p.key_env for p in PRESETS.values() if p.key_env}]:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_connect_offline_to_a_provider(clean_env, capsys):
    c = connect(provider="deepseek")
    assert capsys.readouterr().out == ("offline (mock API) · deepseek · model deepseek-flash "
                                       "(no DEEPSEEK_API_KEY set; set one to go live)\n")
    assert c.mode == "offline" and c.format.name == "openai" and c.base_url.endswith("/v1")
    clean_env.setenv("MINIAGENT_PROVIDER", "kimi-anthropic")
    clean_env.setenv("MINIAGENT_OFFLINE", "1")
    c = connect()
    assert capsys.readouterr().out == "offline (mock API) · kimi-anthropic · model kimi-k2.6\n"
    assert c.format.name == "anthropic" and c.headers()["authorization"] == "Bearer mock-key"


def test_a_lessons_own_mock_says_no_key_would_make_it_live(clean_env, capsys):
    """`offline=True` in code stays offline whatever keys are set: its line must not say "set one to go live"."""
    c = connect(provider="deepseek", offline=True)
    assert capsys.readouterr().out == "offline (mock API) · deepseek · model deepseek-flash\n"
    assert c.mode == "offline"


def test_connect_live_to_a_provider(clean_env, capsys):
    clean_env.setenv("DEEPSEEK_API_KEY", CANARY)
    c = connect(provider="deepseek")
    assert capsys.readouterr().out == "live · deepseek · model deepseek-flash\n"
    assert (c.mode, c.base_url, c.format.path) == ("live", "https://api.deepseek.com", "/chat/completions")
    clean_env.setenv("OPENAI_API_KEY", CANARY)
    clean_env.setenv("OPENAI_BASE_URL", "https://proxy.test/v1")
    c = connect(provider="openai", model="gpt-x")
    assert capsys.readouterr().out == "live at https://proxy.test/v1 · openai · model gpt-x\n"
    assert c.format.request({"model": "m", "max_tokens": 5, "messages": HELLO})["max_completion_tokens"] == 5
    assert CANARY not in repr(c)


def test_local_servers_need_no_key(clean_env, capsys):
    c = connect(provider="ollama")
    assert capsys.readouterr().out == "live · ollama · model gpt-oss:20b\n"
    assert c.base_url == "http://localhost:11434/v1" and c.headers()["authorization"] == "Bearer no-key"
    c = connect(provider="vllm", base_url="http://gpu.test:8000/v1", model="Qwen/Qwen3-8B", quiet=True)
    assert c.base_url == "http://gpu.test:8000/v1"


def test_a_missing_key_names_the_variable_to_set(clean_env):
    with pytest.raises(MissingAPIKeyError, match="DEEPSEEK_API_KEY is not set") as caught:
        connect(provider="deepseek", offline=False, quiet=True)
    assert "export DEEPSEEK_API_KEY=" in caught.value.hint
    with pytest.raises(ValueError, match="unknown provider 'deepsek'; choose one of: anthropic, openai"):
        connect(provider="deepsek")


def test_connect_async_takes_a_provider_too(clean_env, capsys):
    client = connect_async(provider="qwen", offline=True)
    assert capsys.readouterr().out.startswith("offline (mock API) · qwen · model qwen-plus")
    assert client.format.name == "openai"
    asyncio.run(client.aclose())


# --- 7. the article's demo, the same on both paths -------------------------------------------


@pytest.fixture
def fixed_clock(monkeypatch):
    from datetime import datetime, timezone
    monkeypatch.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc))


def run_demo(provider, stream):
    agent = Agent(connect(provider=provider, offline=True, quiet=True), stream=stream)
    result = agent.run(DEMO)
    return result, [(e["name"], e["input"]) for e in agent.trace.of_type("tool_call")], agent


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("provider", ["deepseek", "kimi-anthropic"])
def test_the_demo_gives_the_same_calls_and_facts_on_both_paths(fixed_clock, stream, provider):
    anthropic, calls, _ = run_demo("anthropic", stream)
    openai, openai_calls, agent = run_demo(provider, stream)
    assert openai_calls == calls == [("get_current_time", {}), ("calculate", {"expression": "(1024 + 768) * 2"}),
                                     ("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]
    assert openai.ok and openai.iterations == anthropic.iterations == 2
    for fact in ("3584", "北京", "上海", "2026-05-09 14:23:11"):
        assert fact in openai.text and fact in anthropic.text
    assert conversation_error(agent.history) is None
    sent = agent.client.last.request
    if provider == "deepseek":
        assert sent["url"].endswith("/v1/chat/completions") and [m["role"] for m in sent["body"]["messages"]] == [
            "system", "user", "assistant", "tool", "tool", "tool", "tool"]
    else:  # an Anthropic-compatible endpoint: only the URL (and here the auth header) differ
        assert sent["url"].endswith("/v1/messages") and sent["body"]["messages"] == agent.history[:3]


@pytest.mark.parametrize("stream", [False, True])
def test_the_demo_async_on_the_openai_path(fixed_clock, stream):
    async def main():
        agent = AsyncAgent(connect_async(provider="deepseek", offline=True, quiet=True), stream=stream)
        result = await agent.run(DEMO)
        await agent.client.aclose()
        return result, [(e["name"], e["input"]) for e in agent.trace.of_type("tool_call")]
    result, calls = asyncio.run(main())
    assert result.ok and [name for name, _ in calls] == ["get_current_time", "calculate", "get_weather", "get_weather"]
    assert "3584" in result.text and "2026-05-09 14:23:11" in result.text
