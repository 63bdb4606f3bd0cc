"""Features clients rely on (issue #11): structured outputs, extended thinking, prompt caching.

- Structured outputs: `output_config.format` (and the beta `output_format`) answers JSON that
  parses and validates against the schema, for random schemas from a small generator; a
  prompt that gives a schema and asks for JSON gets the same; a forced tool choice fills the
  tool's arguments from the question, sensibly; unsupported schemas are the API's 400.
- Thinking: the signed block first, streamed as thinking deltas and one signature delta; the
  rules the API applies to thinking sent back; a thinking + tool round trip through run_loop.
- Caching: creation, then reads, of the exact prefix; lifetimes on an injected clock; usage
  that adds up to count_tokens; the breakpoint limit.

Schemas are checked with `jsonschema` (already in the environment, as nbformat needs it),
independently of the mock's own checks.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import miniagent
from miniagent import DEFAULT_MODEL
from miniagent.builtin_tools import default_tools
from miniagent.mock import MockAPI, structured, thinking
from miniagent.mock.caching import PromptCache, minimum_tokens
from miniagent.mock.validate import validate_request
from miniagent.tokens import estimate_text
from test_mock_stream import accumulate, check_sequence, ordered, parse_sse

HEADERS = {"x-api-key": "sk-mock-features", "anthropic-version": "2023-06-01"}
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
WEATHER = {"name": "get_weather", "description": "Get the current weather for a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def body(text: str = "Hello", **extra) -> dict:
    return {"model": DEFAULT_MODEL, "max_tokens": 2048, "messages": [{"role": "user", "content": text}], **extra}


def post(mock: MockAPI, request: dict, path: str = "/v1/messages", headers: dict | None = None):
    """(status, parsed body) of one request; a stream's body is its list of events."""
    reply = mock.handle("POST", path, {**HEADERS, **(headers or {})}, json.dumps(request).encode())
    return reply.status, (parse_sse(reply.sent) if reply.events is not None else json.loads(reply.body))


def ok(request: dict, mock: MockAPI | None = None, **kwargs) -> dict:
    status, answer = post(mock or MockAPI(), request, **kwargs)
    assert status == 200, answer
    return answer


def error(request: dict, mock: MockAPI | None = None, **kwargs) -> str:
    status, answer = post(mock or MockAPI(), request, **kwargs)
    assert status == 400 and answer["error"]["type"] == "invalid_request_error", answer
    return answer["error"]["message"]


def valid(value, schema: dict) -> None:
    validator = jsonschema.Draft202012Validator
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(value)


def closed(props: dict, required: list[str] | None = None) -> dict:
    """An object schema as structured outputs want it (additionalProperties false)."""
    return {"type": "object", "properties": props, "required": list(props) if required is None else required,
            "additionalProperties": False}


def output_config(schema: dict) -> dict:
    return {"output_config": {"format": {"type": "json_schema", "schema": schema}}}


# --- structured outputs: answers ------------------------------------------------------------------------

EMAIL = ("Extract the key information from this email: John Smith (john@example.com) is interested in our "
         "Enterprise plan and wants to schedule a demo for next Tuesday at 2pm.")
LEAD = closed({"name": {"type": "string"}, "email": {"type": "string", "format": "email"},
               "plan_interest": {"type": "string", "enum": ["Starter", "Pro", "Enterprise"]},
               "demo_requested": {"type": "boolean"}, "notes": {"type": "string"}},
              ["name", "email", "plan_interest", "demo_requested"])


def test_output_config_gets_json_for_the_schema_filled_from_the_question():
    answer = ok(body(EMAIL, **output_config(LEAD)))
    assert [b["type"] for b in answer["content"]] == ["text"] and answer["stop_reason"] == "end_turn"
    assert answer["content"][0]["text"] == ('{"name":"John Smith","email":"john@example.com",'
                                            '"plan_interest":"Enterprise","demo_requested":true}')


def test_required_first_and_defaults_for_what_the_question_does_not_say():
    schema = closed({"summary": {"type": "string"}, "city": {"type": "string"}, "age": {"type": "integer"},
                     "tags": {"type": "array", "items": {"type": "string"}}, "title": {"type": "string"},
                     "urgent": {"type": "boolean"}}, ["tags", "age", "city", "title", "summary"])
    question = "Hello there, please file this."
    data = json.loads(ok(body(question, **output_config(schema)))["content"][0]["text"])
    assert list(data) == ["tags", "age", "city", "title", "summary"]  # the required ones, in their order
    assert data["age"] == 0 and data["city"] == "unknown" and "urgent" not in data
    assert data["summary"].startswith("(mock) ")  # the brain's own answer goes in one answer-like field
    strings = [v for v in data.values() if isinstance(v, str)] + data["tags"]
    assert sum(question.rstrip(".") in s for s in strings) <= 1  # never the question pasted everywhere


def test_values_come_from_the_question_and_from_tool_results():
    schema = closed({"cities": {"type": "array", "items": {"type": "string"}},
                     "celsius": {"type": "number"}, "sky": {"type": "string", "enum": ["sunny", "cloudy", "rainy"]}})
    question = "What's the weather like in Paris and London today?"
    first = ok(body(question, tools=[WEATHER], **output_config(schema)))
    assert [b["type"] for b in first["content"]] == ["text", "tool_use", "tool_use"]  # tools first, JSON last
    results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "cloudy, celsius: 18"}
               for b in first["content"] if b["type"] == "tool_use"]
    request = body(question, tools=[WEATHER], **output_config(schema))
    request["messages"] += [{"role": "assistant", "content": first["content"]}, {"role": "user", "content": results}]
    final = json.loads(ok(request)["content"][0]["text"])
    assert final == {"cities": ["Paris", "London"], "celsius": 18, "sky": "cloudy"}


def test_the_beta_output_format_with_its_header():
    request = {**body(EMAIL), "output_format": {"type": "json_schema", "schema": LEAD}}
    beta = {"anthropic-beta": "structured-outputs-2025-11-13"}
    assert json.loads(ok(request, headers=beta)["content"][0]["text"])["name"] == "John Smith"
    assert error(request).startswith("output_format")  # without the header it is no field of the API
    both = {**request, **output_config(LEAD)}
    assert error(both, headers=beta).startswith("output_format: cannot be used together with output_config.format")


def test_a_streamed_json_answer_is_the_same_text_in_text_deltas():
    request = body(EMAIL, **output_config(LEAD))
    plain = ok(request)
    events = ok({**request, "stream": True})
    check_sequence(events)
    assert ordered(accumulate(events)) == ordered(plain)
    deltas = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
    assert len(deltas) > 3 and all(e["delta"]["type"] == "text_delta" for e in events if "delta" in e and
                                   e["type"] == "content_block_delta")


NAMES = ["name", "age", "email", "city", "cities", "tags", "title", "summary", "answer", "count", "price", "date",
         "website", "sentiment", "language", "is_urgent", "demo_requested", "notes", "x", "value", "address",
         "score", "phone", "id", "created_at", "unit", "query", "items", "first_name", "category"]
PATTERNS = [r"^[A-Z]{3}-\d{4}$", r"^\d{5}$", r"^[a-z]+(?:-[a-z]+)*$", r"^(?:yes|no)$", r"^#[0-9a-f]{6}$"]
FORMATS = ["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"]
LEAVES = st.one_of(
    st.sampled_from([{"type": t} for t in ("string", "integer", "number", "boolean", "null")]),
    st.sampled_from([{"type": "string", "format": f} for f in FORMATS]),
    st.sampled_from([{"type": "string", "pattern": p} for p in PATTERNS]),
    st.lists(st.sampled_from(["red", "green", "C", "F", "positive", "negative", "neutral", "Paris", "Enterprise"]),
             min_size=1, max_size=4, unique=True).map(lambda e: {"type": "string", "enum": e}),
    st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True).map(lambda e: {"enum": e}),
    st.sampled_from(["fixed", 3, True, None]).map(lambda c: {"const": c}),
)


def _objects(children, min_size=0):
    def with_required(props):
        return st.lists(st.sampled_from(sorted(props)), unique=True).map(lambda req: closed(props, req)) \
            if props else st.just(closed({}))
    return st.dictionaries(st.sampled_from(NAMES), children, min_size=min_size, max_size=4).flatmap(with_required)


def _extend(children):
    arrays = st.builds(lambda items, lo: {"type": "array", "items": items, **({} if lo is None else {"minItems": lo})},
                       children, st.sampled_from([None, 0, 1]))
    return st.one_of(_objects(children), arrays, children.map(lambda c: {"anyOf": [c, {"type": "null"}]}))


SCHEMAS = st.recursive(LEAVES, _extend, max_leaves=8)


@st.composite
def root_schemas(draw):
    """An object schema for a JSON answer; sometimes one of its properties is a `$ref` to `$defs`."""
    schema = draw(_objects(SCHEMAS, min_size=1))
    if draw(st.booleans()):
        schema = {**schema, "$defs": {"Thing": draw(_objects(LEAVES, min_size=1))}}
        schema["properties"] = {**schema["properties"], "thing": {"$ref": "#/$defs/Thing"}}
        if draw(st.booleans()):
            schema["required"] = [*schema["required"], "thing"]
    return schema


QUESTIONS = st.lists(st.sampled_from([
    EMAIL, "Ada Lovelace is 36 years old and lives in London.", "北京和上海的天气怎么样？", "Hello", "Convert 100 F to C",
    'Title: "The Hobbit", price 12.5, category fantasy', "I love this phone, the battery is great!",
    "Meet me on 2026-05-09 at 14:30, see https://example.org/a", "score = 7, id ABC-1234", "", "?"]),
    min_size=1, max_size=3).map(" ".join)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(root_schemas(), QUESTIONS)
def test_any_schema_gets_json_that_validates(schema, question):
    problem = structured.schema_problem(schema, "output_config.format.schema")
    if problem is not None:  # the generator can pass the documented limits (optional properties, union types)
        assert problem == structured.TOO_COMPLEX, problem  # and then that is the API's only complaint
        return
    answer = ok(body(question.strip() or "?", **output_config(schema)))
    valid(json.loads(answer["content"][0]["text"]), schema)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(root_schemas(), QUESTIONS)
def test_a_forced_tool_call_fills_any_schema_validly(schema, question):
    tool = {"name": "record", "description": "Record the details.", "input_schema": schema}
    answer = ok(body(question.strip() or "?", tools=[tool], tool_choice={"type": "any"}))
    # one call, or one per city (parallel calls, as the API may make): no sentence before them, each fits
    assert {b["type"] for b in answer["content"]} == {"tool_use"} and answer["stop_reason"] == "tool_use"
    for call in answer["content"]:
        valid(call["input"], schema)


# --- structured outputs: the schema as the API checks it ------------------------------------------------

SCHEMA_ERRORS = [  # (schema, the message after "output_config.format.schema: ")
    ({"type": "object", "properties": {"a": {"type": "string"}}},
     "For 'object' type, 'additionalProperties' must be explicitly set to false"),
    ({**closed({"a": {"type": "string"}}), "additionalProperties": True},
     "For 'object' type, 'additionalProperties: true' is not supported. Please set 'additionalProperties' to false"),
    (closed({"a": {"type": "string", "minLength": 2}}), "For 'string' type, property 'minLength' is not supported"),
    (closed({"a": {"type": "integer", "minimum": 0}}), "For 'integer' type, property 'minimum' is not supported"),
    (closed({"a": {"type": "array", "items": {"type": "string"}, "maxItems": 3}}),
     "For 'array' type, property 'maxItems' is not supported"),
    (closed({"a": {"type": "array", "items": {"type": "string"}, "minItems": 2}}),
     "For 'array' type, 'minItems' values other than 0 or 1 are not supported"),
    (closed({"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}), "Property 'oneOf' is not supported; use 'anyOf'"),
    (closed({"a": {"type": "string", "format": "phone"}}), 'For \'string\' type, format "phone" is not supported'),
    (closed({"a": {"enum": [{"x": 1}]}}), "Enum values must be strings, numbers, booleans or null"),
    (closed({"a": {"$ref": "https://example.com/schema.json"}}), "External references are not supported"),
    ({"$defs": {"Node": closed({"child": {"$ref": "#/$defs/Node"}}, [])}, "$ref": "#/$defs/Node"},
     "Recursive schemas are not supported"),
    (closed({"a": {"type": "string", "pattern": r"(a)\1"}}), "For 'string' type, pattern"),
]


@pytest.mark.parametrize("schema, message", SCHEMA_ERRORS)
def test_unsupported_schemas_are_the_apis_400(schema, message):
    assert error(body(**output_config(schema))).startswith(f"output_config.format.schema: {message}")


def test_schema_limits_and_strict_tools():
    many = closed({f"p{i}": {"type": "string"} for i in range(25)}, [])  # 25 optional properties > 24
    assert error(body(**output_config(many))) == "Schema is too complex for compilation."
    loose = {**WEATHER, "strict": True}
    assert error(body(tools=[loose])) == \
        "tools.0.custom: For 'object' type, 'additionalProperties' must be explicitly set to false"
    strict = {**WEATHER, "strict": True, "input_schema": {**WEATHER["input_schema"], "additionalProperties": False}}
    assert ok(body("Weather in Paris?", tools=[strict]))["stop_reason"] == "tool_use"
    assert ok(body(tools=[WEATHER]))  # a tool that is not strict keeps any JSON schema


# --- JSON asked for in the prompt ----------------------------------------------------------------------

PERSON = {"properties": {"name": {"title": "Name", "type": "string"}, "age": {"title": "Age", "type": "integer"},
                         "email": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}},
          "required": ["name", "age"], "title": "Person", "type": "object"}


def test_json_mode_from_a_system_prompt_with_a_schema():
    system = ("As a genius expert, your task is to understand the content and provide the parsed objects in json "
              f"that match the following json_schema:\n\n{json.dumps(PERSON, indent=2)}\n\n"
              "Make sure to return an instance of the JSON, not the schema itself")
    answer = ok(body("Ada Lovelace is 36 years old.", system=system))
    assert json.loads(answer["content"][0]["text"]) == {"name": "Ada Lovelace", "age": 36}  # no email: left out


def test_json_mode_takes_the_last_schema_of_format_instructions():
    example = '{"properties": {"foo": {"title": "Foo", "description": "a list of strings", "type": "array", ' \
              '"items": {"type": "string"}}}, "required": ["foo"]}'
    schema = {k: v for k, v in PERSON.items() if k not in ("title", "type")}  # as LangChain's parser trims it
    prompt = ("Who is described here? Bob Stone, aged 41, bob@example.com\n"
              "The output should be formatted as a JSON instance that conforms to the JSON schema below.\n\n"
              f"As an example, for the schema {example}\nthe object {{\"foo\": [\"bar\", \"baz\"]}} is a "
              f"well-formatted instance of the schema.\n\nHere is the output schema:\n```\n{json.dumps(schema)}\n```")
    data = json.loads(ok(body(prompt))["content"][0]["text"])
    assert data == {"name": "Bob Stone", "age": 41, "email": "bob@example.com"}
    valid(data, schema)


def test_no_json_mode_without_a_schema_or_without_asking_for_json():
    assert not ok(body('Reply in JSON please: what is {"a": 1}?'))["content"][0]["text"].startswith("{")
    assert not ok(body(f"What does this schema mean? {json.dumps(PERSON)}"))["content"][0]["text"].startswith("{")


# --- forced tool choice ------------------------------------------------------------------------------------

PERSON_TOOL = {"name": "record_person", "description": "Record a person in the address book.",
               "input_schema": {"type": "object", "required": ["name", "age", "email", "tags", "address"], "properties": {
                   "name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                               "required": ["city"]}}}}


def test_a_forced_tool_gets_arguments_from_the_question_and_no_preamble():
    question = "Ada Lovelace is 36 years old, lives in London, email ada@example.com"
    for choice in ({"type": "any"}, {"type": "tool", "name": "record_person"}):
        answer = ok(body(question, tools=[PERSON_TOOL, WEATHER], tool_choice=choice))
        [call] = answer["content"]  # the API prefills a forced turn: no sentence before the call
        assert call["name"] == "record_person"
        assert call["input"] == {"name": "Ada Lovelace", "age": 36, "email": "ada@example.com",
                                 "tags": ["lovelace", "year", "live"], "address": {"city": "London"}}


def test_a_forced_tool_with_nothing_to_go_on_gets_neutral_values_not_the_question_everywhere():
    question = "Hello there, how are you doing today?"
    [call] = ok(body(question, tools=[PERSON_TOOL], tool_choice={"type": "any"}))["content"]
    assert call["input"] == {"name": "unknown", "age": 0, "email": "user@example.com", "tags": [],
                             "address": {"city": "unknown"}}
    two = {"name": "send_note", "description": "Send a note.", "input_schema": {
        "type": "object", "properties": {"subject": {"type": "string"}, "body": {"type": "string"}, "to": {"type": "string"}},
        "required": ["subject", "body", "to"]}}
    [call] = ok(body("Remind the team that the build is green", tools=[two], tool_choice={"type": "any"}))["content"]
    assert call["input"] == {"subject": "Remind the team that the build is green",
                             "body": "Remind the team that the build is green", "to": "unknown"}


OUTPUT_TOOL = {"name": "final_result", "description": "The final response which ends this conversation",
               "input_schema": closed({"city": {"type": "string"}, "days": {"type": "integer"}}, ["city", "days"])}


def test_an_output_tool_takes_the_answer_instead_of_text():
    """pydantic-ai's ToolOutput without a docstring: nothing forces the call, but a model answers through it."""
    [call] = ok(body("Plan a 3-day trip to Paris.", tools=[OUTPUT_TOOL]))["content"]
    assert (call["type"], call["name"], call["input"]) == ("tool_use", "final_result", {"city": "Paris", "days": 3})
    [text] = ok(body("Plan a 3-day trip to Paris.", tools=[OUTPUT_TOOL], tool_choice={"type": "none"}))["content"]
    assert text["type"] == "text"  # tool_choice none: no call, whatever the tools say
    plain = {**OUTPUT_TOOL, "name": "record_trip", "description": "Store a trip in the database."}
    assert ok(body("Hello", tools=[plain]))["content"][0]["type"] == "text"  # an ordinary tool: not an output tool


def test_after_tool_results_the_answer_goes_through_the_output_tool_once():
    question = {"role": "user", "content": "What's the weather in Paris? Plan a 2-day trip there."}
    mock = MockAPI()  # one conversation: its ids never repeat
    first = ok(body(tools=[WEATHER, OUTPUT_TOOL]) | {"messages": [question]}, mock)
    [call] = [b for b in first["content"] if b["type"] == "tool_use"]
    assert call["name"] == "get_weather"
    history = [question, {"role": "assistant", "content": first["content"]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "18 C"}]}]
    [final] = ok(body(tools=[WEATHER, OUTPUT_TOOL]) | {"messages": history}, mock)["content"]
    assert (final["name"], final["input"]) == ("final_result", {"city": "Paris", "days": 2})
    # a client that sends the output tool's result back gets a text answer, not another call
    history += [{"role": "assistant", "content": [final]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": final["id"], "content": "ok"}]}]
    assert ok(body(tools=[WEATHER, OUTPUT_TOOL]) | {"messages": history}, mock)["stop_reason"] == "end_turn"


# --- thinking: the block ---------------------------------------------------------------------------------

ENABLED = {"type": "enabled", "budget_tokens": 1024}


def test_thinking_comes_first_signed_and_billed():
    answer = ok(body("What's the weather in Paris?", tools=[WEATHER], thinking=ENABLED))
    first, *rest = answer["content"]
    assert list(first) == ["type", "thinking", "signature"] and thinking.verify(first)
    assert first["thinking"] == '(mock) The user asks: "What\'s the weather in Paris?". I\'ll call get_weather(city="Paris").'
    assert [b["type"] for b in rest] == ["text", "tool_use"] and answer["stop_reason"] == "tool_use"
    plain = ok(body("What's the weather in Paris?", tools=[WEATHER]))
    assert answer["usage"]["output_tokens"] == plain["usage"]["output_tokens"] + estimate_text(first["thinking"])


def test_thinking_display_omitted_and_adaptive():
    summarized = ok(body(thinking=ENABLED))
    omitted = ok(body(thinking={**ENABLED, "display": "omitted"}))
    adaptive = ok(body(thinking={"type": "adaptive"}))
    assert omitted["content"][0]["thinking"] == "" and thinking.verify(omitted["content"][0])
    assert omitted["content"][0]["signature"] != summarized["content"][0]["signature"]
    assert omitted["usage"]["output_tokens"] == summarized["usage"]["output_tokens"]  # hidden, still billed
    assert adaptive["content"] == summarized["content"]
    assert ok(body(thinking={"type": "disabled"}))["content"][0]["type"] == "text"


@pytest.mark.parametrize("config", [ENABLED, {**ENABLED, "display": "omitted"}])
def test_thinking_streams_as_thinking_deltas_then_one_signature_delta(config):
    request = body("What's the weather in Paris?", tools=[WEATHER], thinking=config)
    plain, events = ok(request), ok({**request, "stream": True})
    check_sequence(events)
    assert ordered(accumulate(events)) == ordered(plain)
    block0 = [e for e in events if e.get("index") == 0]
    assert block0[0]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
    deltas = [e["delta"]["type"] for e in block0 if e["type"] == "content_block_delta"]
    assert deltas[-1] == "signature_delta" and deltas.count("signature_delta") == 1
    assert block0[-1]["type"] == "content_block_stop"
    assert set(deltas[:-1]) == ({"thinking_delta"} if config.get("display") != "omitted" else set())


def test_max_tokens_cuts_the_thinking_too():
    answer = ok(body("What is the capital of France?", thinking={"type": "adaptive"}, max_tokens=12))
    assert answer["stop_reason"] == "max_tokens" and [b["type"] for b in answer["content"]] == ["thinking"]
    assert thinking.verify(answer["content"][0]) and answer["usage"]["output_tokens"] <= 12


# --- thinking: the rules -----------------------------------------------------------------------------------


def thinking_turn(**extra) -> list[dict]:
    """A question, the mock's thinking + tool call, and the tool's result: a turn to continue."""
    first = ok(body("What's the weather in Paris?", tools=[WEATHER], thinking=ENABLED, **extra))
    call = first["content"][-1]
    return [{"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": first["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "Paris: 18°C"}]}]


def continued(messages: list[dict], **extra) -> dict:
    return {**body(tools=[WEATHER], thinking=ENABLED, **extra), "messages": messages}


LONG = ("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is "
        "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
        "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
        "this requirement, disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def test_thinking_sent_back_unchanged_is_accepted_and_changed_is_not():
    messages = thinking_turn()
    final = ok(continued(messages))
    assert [b["type"] for b in final["content"]] == ["thinking", "text"] and "18°C" in final["content"][1]["text"]
    changed = copy.deepcopy(messages)
    changed[1]["content"][0]["thinking"] += " (edited)"
    assert error(continued(changed)) == "messages.1.content.0: Invalid `signature` in `thinking` block"
    forged = copy.deepcopy(messages)
    forged[1]["content"][0]["signature"] = "c2lnbmF0dXJl"
    assert error(continued(forged)) == "messages.1.content.0: Invalid `signature` in `thinking` block"
    dropped = copy.deepcopy(messages)
    del dropped[1]["content"][0]
    assert error(continued(dropped)) == LONG
    redacted = copy.deepcopy(messages)
    redacted[1]["content"][0] = {"type": "redacted_thinking", "data": "opaque"}
    assert ok(continued(redacted))["stop_reason"] == "end_turn"


def test_thinking_blocks_when_thinking_is_off_and_at_the_end():
    messages = thinking_turn()
    plain = {**body(tools=[WEATHER]), "messages": messages}
    assert ok(plain)["stop_reason"] == "end_turn"  # earlier thinking, thinking now off: accepted
    prefill = {**body(tools=[WEATHER]), "messages": messages[:1] + [{"role": "assistant", "content": messages[1]["content"][:2]}]}
    assert error(prefill) == ("When thinking is disabled, an `assistant` message in the final position cannot contain "
                              "`thinking`. To use thinking blocks, enable `thinking` in your request.")
    alone = {**body(thinking=ENABLED), "messages": messages[:1] + [{"role": "assistant", "content": messages[1]["content"][:1]}]}
    assert error(alone) == "messages.1: The final block in an assistant message cannot be `thinking`."


def test_thinking_settings_rules():
    assert error(body(thinking={"type": "enabled", "budget_tokens": 1000})) == \
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    assert error(body(thinking={"type": "enabled", "budget_tokens": 2048}, max_tokens=2048)) == (
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size")
    for choice in ({"type": "any"}, {"type": "tool", "name": "get_weather"}):
        assert error(body(tools=[WEATHER], tool_choice=choice, thinking={"type": "adaptive"})) == \
            "Thinking may not be enabled when tool_choice forces tool use."
    counted = {k: v for k, v in body(thinking=ENABLED).items() if k != "max_tokens"}
    assert validate_request(counted, version="2023-06-01", count_tokens=True) is None


@pytest.mark.parametrize("stream", [False, True])
def test_a_thinking_tool_round_trip_through_run_loop(stream):
    llm = miniagent.connect(offline=True, quiet=True)
    result = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=default_tools(), thinking=ENABLED,
                                max_tokens=4096, stream=stream)
    assert result.stop == "end_turn" and result.iterations == 2, result.reason
    turns = [m for m in result.messages if m["role"] == "assistant"]
    assert all(m["content"][0]["type"] == "thinking" and thinking.verify(m["content"][0]) for m in turns)
    assert "3584" in result.text and "北京" in result.text
    more = miniagent.run_loop(llm, result.messages + [miniagent.user("谢谢！再算一下 2 * 21")], tools=default_tools(),
                              thinking=ENABLED, max_tokens=4096, stream=stream)
    assert more.stop == "end_turn" and "42" in more.text


# --- prompt caching -----------------------------------------------------------------------------------

BIG = "You are the assistant of a small bookshop. Answer briefly and kindly. " * 60  # about 1,050 tokens


def cached_body(question: str, **extra) -> dict:
    return body(question, system=[{"type": "text", "text": "Be brief."},
                                  {"type": "text", "text": BIG, "cache_control": {"type": "ephemeral"}}], **extra)


def counted(mock: MockAPI, request: dict) -> int:
    status, answer = post(mock, {k: v for k, v in request.items() if k != "max_tokens"}, "/v1/messages/count_tokens")
    assert status == 200
    return answer["input_tokens"]


def adds_up(mock: MockAPI, request: dict) -> dict:
    usage = ok(request, mock)["usage"]
    total = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    assert total == counted(mock, request)  # caching never changes what count_tokens says
    assert usage["cache_creation_input_tokens"] == sum(usage["cache_creation"].values())
    return usage


def test_the_first_call_writes_the_prefix_and_the_next_reads_it():
    mock = MockAPI()
    first = adds_up(mock, cached_body("Hello"))
    assert first["cache_creation_input_tokens"] > minimum_tokens(DEFAULT_MODEL) and first["cache_read_input_tokens"] == 0
    assert first["cache_creation"] == {"ephemeral_5m_input_tokens": first["cache_creation_input_tokens"],
                                       "ephemeral_1h_input_tokens": 0}
    second = adds_up(mock, cached_body("Do you sell maps?"))
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0 and second["input_tokens"] < 20
    assert list(second) == ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                            "cache_creation", "service_tier"]
    assert list(ok(body(), mock)["usage"]) == ["input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                "cache_read_input_tokens", "service_tier"]  # no breakpoint: as ever


def test_the_prefix_must_match_exactly_in_the_apis_order():
    mock = MockAPI()
    tools = [{**WEATHER, "description": BIG, "cache_control": {"type": "ephemeral"}}]
    first = adds_up(mock, cached_body("Hello", tools=tools))
    assert first["cache_creation_input_tokens"] > 2000  # two breakpoints: tools, then tools + system
    changed = cached_body("Hello", tools=tools)
    changed["system"][0]["text"] = "Be very brief."
    second = adds_up(mock, changed)  # the tools' prefix is still cached; the system's is new
    tools_part = second["cache_read_input_tokens"]
    assert 0 < tools_part < first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == first["cache_creation_input_tokens"] - tools_part + 1
    assert adds_up(mock, cached_body("Hello", tools=tools, thinking=ENABLED))["cache_read_input_tokens"] == \
        first["cache_creation_input_tokens"]  # thinking settings touch the messages' prefix only


def test_too_short_a_prefix_is_not_cached_and_no_error():
    mock = MockAPI()
    short = body("Hello", system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
    for _ in range(2):
        usage = adds_up(mock, short)
        assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0
        assert usage["cache_creation"] == {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
    assert minimum_tokens("claude-opus-5") == 512 and minimum_tokens("claude-haiku-4-5-20251001") == 4096


def test_lifetimes_on_an_injected_clock():
    now = [1000.0]
    mock = MockAPI(clock=lambda: now[0])
    adds_up(mock, cached_body("Hello"))
    now[0] += 299
    assert adds_up(mock, cached_body("Hi"))["cache_read_input_tokens"] > 0  # and the use refreshes it
    now[0] += 299
    assert adds_up(mock, cached_body("Hi"))["cache_read_input_tokens"] > 0
    now[0] += 301
    assert adds_up(mock, cached_body("Hi"))["cache_read_input_tokens"] == 0  # expired: written again
    mock.reset()  # empties the cache: the same prefix is written anew, for an hour this time
    hour = cached_body("Hello")
    hour["system"][1]["cache_control"]["ttl"] = "1h"
    written = adds_up(mock, hour)
    assert written["cache_creation"]["ephemeral_1h_input_tokens"] == written["cache_creation_input_tokens"] > 0
    now[0] += 3599
    assert adds_up(mock, hour)["cache_read_input_tokens"] > 0
    now[0] += 3601
    assert adds_up(mock, hour)["cache_read_input_tokens"] == 0


def test_automatic_caching_follows_a_growing_conversation():
    mock = MockAPI()
    messages = [{"role": "user", "content": BIG + "What's the weather in Paris?"}]
    request = {**body(tools=[WEATHER], cache_control={"type": "ephemeral"}), "messages": messages}
    first = adds_up(mock, request)
    assert first["cache_creation_input_tokens"] == counted(mock, request) - 3  # all but the request's overhead
    answer = ok(request, MockAPI())
    messages += [{"role": "assistant", "content": answer["content"]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": answer["content"][-1]["id"],
                                               "content": "Paris: 18°C"}]}]
    second = adds_up(mock, {**request, "messages": messages})
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]  # found by the lookback
    assert second["cache_creation_input_tokens"] > 0 and second["input_tokens"] == 3


def test_at_most_four_breakpoints():
    control = {"type": "ephemeral"}
    system = [{"type": "text", "text": f"Rule {i}.", "cache_control": control} for i in range(4)]
    assert ok(body(system=system))
    assert error(body(system=system, cache_control=control)) == \
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    five = body(system=system, tools=[{**WEATHER, "cache_control": control}])
    assert error(five) == "A maximum of 4 blocks with cache_control may be provided. Found 5."


def test_the_cache_is_bounded():
    cache = PromptCache(max_entries=2)
    for n in range(5):
        cache.account(body(f"question {n}", system=[{"type": "text", "text": f"{n} " + BIG,
                                                      "cache_control": {"type": "ephemeral"}}]))
    assert len(cache) == 2


def test_a_streamed_answer_reports_the_cache_in_message_start():
    mock = MockAPI()
    ok(cached_body("Hello"), mock)
    events = ok({**cached_body("Hello"), "stream": True}, mock)
    usage = events[0]["message"]["usage"]
    assert usage["cache_read_input_tokens"] > 0 and usage["cache_creation"]["ephemeral_5m_input_tokens"] == 0
