"""The contract between the mock and the real Messages API: one list of probes.

Each probe sends one request (or a short exchange) and *observes* the answer: the
status, the error's type and message, and the response's shape (its keys and the
types of their values, never the model's words). `scripts/contract.py` runs every
probe against the mock, and, when ANTHROPIC_API_KEY is set, against the real API too,
and prints where they differ (with `--llamacpp`, also llama.cpp's server, whose known
differences are listed in the runner's LLAMACPP_KNOWN):

    make contract                      # offline: the mock against what each probe expects
    python scripts/contract.py --live  # also the real API (asks first; it costs a few cents)

`expect` is what the real API answers, as far as we know it; `evidence` says how we
know (wire-format.md's sections and tags: [S] seen in real responses, [P] the docs or
the official SDK, "ours" where nothing is documented and the value is the mock's own
choice). Offline, the mock must match `expect`. Live, the mock and the real API must
match each other, and `expect` is checked against the real API too, so an expectation
that has gone stale shows up.

Two marks keep the offline run green without hiding anything:
- `known`: {observed key: why} where the mock differs from the real API on purpose (its
  message adds a hint, say). A difference there is printed as "known", never counted
  as a failure; a difference anywhere else still is;
- `pending`: the mock does not have the feature yet (another change is adding it). The
  probe is written as the real API behaves and is not weakened; it is printed as
  "pending" while it fails, and as "now passes: drop the mark" once it does.

A probe's `billed` is (input tokens, output tokens) at most that the live run may be
charged for it; requests the API refuses are not billed. The runner adds them up and
says what a live run will cost before it starts.

Bodies name the model "$MODEL"; the runner puts in the model it runs with (default
miniagent.DEFAULT_MODEL).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

MODEL = "$MODEL"
HELLO = [{"role": "user", "content": "Say hello in one word."}]
WEATHER = {"name": "get_weather", "description": "Get the current weather for a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                            "required": ["city"]}}
ASK_WEATHER = [{"role": "user", "content": "What is the weather in Paris right now? Use the get_weather tool."}]
BROWSER_ORIGIN = "http://localhost:8000"
BROWSER_HEADER = "anthropic-dangerous-direct-browser-access"
CORS_REFUSED = "CORS requests must set 'anthropic-dangerous-direct-browser-access' header"
UNKNOWN_MODEL = "claude-nonexistent-0"
RETIRED_MODEL = "claude-sonnet-4-5"  # end of life 2026-11-30 (the official SDK's deprecation table)


class Reply(Protocol):
    status: int
    headers: Any  # case-insensitive mapping

    def json(self) -> Any: ...

    @property
    def events(self) -> list[dict]: ...


class Api(Protocol):
    """One target: the mock in-process or the real API. Bodies and paths get "$MODEL" filled in."""

    model: str
    run_id: str  # differs from run to run (the caching probe must not find an older run's cache)

    def send(self, method: str, path: str, body: Any = None, headers: dict[str, str | None] | None = None,
             auth: bool = True) -> Reply:
        """`headers` are added to the defaults (key, version, content type); None removes one."""


@dataclass
class Probe:
    name: str
    run: Callable[[Api], dict[str, Any]]
    expect: dict[str, Any]
    evidence: str
    billed: tuple[int, int] = (0, 0)
    known: dict[str, str] = field(default_factory=dict)
    pending: str = ""
    group: str = "validation"
    openai: bool = False  # a probe of OpenAI's API: the live run (Anthropic's API) checks it on the mock only

    def why_known(self, key: str) -> str:
        """Why a difference at `key` (or under it) is known, or ""."""
        return next((why for k, why in self.known.items() if key == k or key.startswith(k + ".")), "")


# --- what a probe observes ------------------------------------------------------------------


def shape(value: Any) -> Any:
    """Keys and types, not values: {"id": "string", "content": [{"type": "text", "text": "string"}]}.

    A `type` or `role` keeps its value (it says what the object is). A list becomes the
    distinct shapes of its items, in order of first appearance, so two text blocks and
    one read the same."""
    if isinstance(value, dict):
        return {k: (v if k in ("type", "role") and isinstance(v, str) else shape(v)) for k, v in value.items()}
    if isinstance(value, list):
        seen: list[Any] = []
        for item in value:
            s = shape(item)
            if s not in seen:
                seen.append(s)
        return seen
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def error(reply: Reply) -> dict[str, Any]:
    """Status, error type and message (a success: the status alone)."""
    if reply.status < 400:
        return {"status": reply.status}
    try:
        body = reply.json()
        return {"status": reply.status, "type": body["error"]["type"], "message": body["error"]["message"]}
    except (ValueError, KeyError, TypeError):
        return {"status": reply.status, "type": None, "message": None}


def block_types(message: dict) -> list[str]:
    return [b.get("type") for b in message.get("content") or []]


def sequence(events: list[dict]) -> list[str]:
    """A stream's event types, pings left out and runs of the same delta kind collapsed:
    message_start, content_block_start:text, content_block_delta:text_delta, ... message_stop."""
    out: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "ping":
            continue
        if kind == "content_block_start":
            kind += ":" + str(event.get("content_block", {}).get("type"))
        elif kind == "content_block_delta":
            kind += ":" + str(event.get("delta", {}).get("type"))
        if not out or out[-1] != kind:
            out.append(kind)
    return out


# --- validation: one probe per rule ------------------------------------------------------------

BASE = {"model": MODEL, "max_tokens": 64, "messages": HELLO}


def bad(name: str, message: str, evidence: str, *, body: Any = None, path: str = "/v1/messages",
        headers: dict[str, str | None] | None = None, auth: bool = True, status: int = 400,
        type_: str = "invalid_request_error", method: str = "POST", prefix: bool = False, deviation: str = "",
        pending: str = "") -> Probe:
    """A request the API refuses: the probe observes status, error type and message (with `prefix`,
    only as much of the message as `message` gives: the rest is a parser's detail)."""
    def run(api: Api) -> dict[str, Any]:
        seen = error(api.send(method, path, BASE if body is None else body, headers, auth=auth))
        if prefix and isinstance(seen.get("message"), str):
            seen["message"] = seen["message"][:len(message)]
        return seen
    return Probe(name, run, {"status": status, "type": type_, "message": message}, evidence,
                 known={"message": deviation} if deviation else {}, pending=pending)


def _with(**changes: Any) -> dict:
    return {**BASE, **changes}


def _without(key: str) -> dict:
    return {k: v for k, v in BASE.items() if k != key}


def _tool_turns(result_id: str = "toolu_01A", extra_user: list | None = None) -> list[dict]:
    use = {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}}
    result = {"type": "tool_result", "tool_use_id": result_id, "content": "15 degrees"}
    return [ASK_WEATHER[0], {"role": "assistant", "content": [use]},
            {"role": "user", "content": (extra_user or []) + [result]}]


TOOL_PAIRING = ("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. "
                "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")

VALIDATION = [
    bad("missing max_tokens", "max_tokens: Field required", "§5.A [S]", body=_without("max_tokens")),
    bad("missing messages", "messages: Field required", "§5.A [S]", body=_without("messages")),
    bad("missing model", "model: Field required", "§5.A [S]", body=_without("model")),
    bad("empty messages", "messages: at least one message is required", "§5.A [S]", body=_with(messages=[])),
    bad("unknown top-level field", "response_format: Extra inputs are not permitted", "§1.2 [S]",
        body=_with(response_format={"type": "json"})),
    bad("unknown field in a block", "messages.1.content.0.tool_use.text: Extra inputs are not permitted",
        "§5.A [S] (the path names the block's type)",
        body=_with(messages=[ASK_WEATHER[0], {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {}, "text": "x"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "ok"}]}],
            tools=[WEATHER])),
    bad("max_tokens over the model's limit",
        "max_tokens: 128001 > 128000, which is the maximum allowed number of output tokens for $MODEL",
        "§1.4 [S] (the limit: the model's page)", body=_with(max_tokens=128_001)),
    bad("negative max_tokens", "max_tokens: Input should be greater than or equal to 0", "pydantic's words (ours)",
        body=_with(max_tokens=-1)),
    bad("message with empty content",
        "messages.0: all messages must have non-empty content except for the optional final assistant message",
        "§5.A [S]", body=_with(messages=[{"role": "user", "content": []}])),
    bad("empty text block", "messages: text content blocks must be non-empty", "§5.A [S]",
        body=_with(messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}])),
    bad("whitespace-only text", "messages: text content blocks must contain non-whitespace text", "§5.A [S]",
        body=_with(messages=[{"role": "user", "content": [{"type": "text", "text": "  "}]}])),
    bad("unanswered tool_use", TOOL_PAIRING, "§5.A [S] (which index it names is unresolved)",
        body=_with(messages=_tool_turns()[:2] + [{"role": "user", "content": "and?"}], tools=[WEATHER])),
    bad("tool_result for an unknown id",
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01B. Each "
        "`tool_result` block must have a corresponding `tool_use` block in the previous message.", "§5.A [S]",
        body=_with(messages=_tool_turns("toolu_01B"), tools=[WEATHER])),
    bad("tool_result after text", "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this "
        "message. Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
        "§1.4 [S]", body=_with(messages=_tool_turns(extra_user=[{"type": "text", "text": "Here:"}]),
                               tools=[WEATHER])),
    bad("duplicate tool names", "tools: Tool names must be unique.", "§1.4 [S]", body=_with(tools=[WEATHER, WEATHER])),
    bad("bad tool name", "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", "§5.A [S]",
        body=_with(tools=[{**WEATHER, "name": "get weather"}])),
    bad("tool name too long", "tools.0.custom.name: String should have at most 128 characters", "§5.A [S]",
        body=_with(tools=[{**WEATHER, "name": "t" * 129}])),
    bad("tool_choice names no tool", "Tool 'get_time' not found in provided tools", "§5.A [S]",
        body=_with(tools=[WEATHER], tool_choice={"type": "tool", "name": "get_time"}),
        deviation="the mock's own words, which say where: `tool_choice.tool.name: no tool named ...`"),
    bad("temperature above 1", "temperature: Input should be less than or equal to 1", "§5.A [S]",
        body=_with(temperature=1.5)),
    bad("temperature and top_p", "`temperature` and `top_p` cannot both be specified for this model. Please use "
        "only one.", "§5.A [S]", body=_with(temperature=0.5, top_p=0.5)),
    bad("temperature on 2026-10-21", "temperature: Extra inputs are not permitted", "§0 [OBS]",
        body=_with(temperature=0.5), headers={"anthropic-version": "2026-10-21"}),
    bad("count_tokens with max_tokens", "max_tokens: Extra inputs are not permitted", "§5.H [S]",
        body=BASE, path="/v1/messages/count_tokens"),
    bad("invalid JSON", "The request body is not valid JSON: ", "§5.A [S] (what follows is the parser's detail)",
        body=b"{not json", prefix=True,
        deviation="the mock's own words: `... not valid JSON (<the parser's detail>); send a JSON object ...`"),
    # headers and auth
    bad("missing anthropic-version", "anthropic-version: header is required", "§5.A [S]",
        headers={"anthropic-version": None}),
    bad("unknown anthropic-version", 'anthropic-version: "2023-10-01" is not a valid version', "§5.A [S]",
        headers={"anthropic-version": "2023-10-01"},
        deviation="the mock adds the versions it takes: `... is not a supported version; use ...`"),
    bad("unknown anthropic-beta", "Unexpected value(s) `no-such-beta-2099-01-01` for the `anthropic-beta` header. "
        "Please consult our documentation at docs.claude.com or try again without the header.", "§5.A [S]",
        headers={"anthropic-beta": "no-such-beta-2099-01-01"}),
    bad("no API key", "x-api-key header is required", "§5.A [S]", auth=False, status=401,
        type_="authentication_error"),
    bad("wrong API key", "invalid x-api-key", "§5.A [S]", headers={"x-api-key": "sk-ant-contract-not-a-key"},
        status=401, type_="authentication_error"),
    # models
    bad("unknown model", f"model: {UNKNOWN_MODEL}", "§5.A [S]", body=_with(model=UNKNOWN_MODEL), status=404,
        type_="not_found_error"),
    bad("retired model", f"model: {RETIRED_MODEL}", "§5.A [S] (the 404), the SDK's end-of-life table (the date)",
        body=_with(model=RETIRED_MODEL), status=404, type_="not_found_error",
        deviation="the mock adds when the model retired: `model: ... (retired on 2026-11-30; ...)`"),
    bad("unknown model, count_tokens", f"model: {UNKNOWN_MODEL}", "§5.A [S]", path="/v1/messages/count_tokens",
        body={"model": UNKNOWN_MODEL, "messages": HELLO}, status=404, type_="not_found_error"),
    bad("unknown path", "Not Found", "§5.A [S]", path="/v1/nothing-here", status=404, type_="not_found_error",
        deviation="the mock adds the routes it serves: `Not Found: the mock has no ...`"),
]
for _probe in VALIDATION:
    _probe.group = "validation"


# --- answers: shapes ------------------------------------------------------------------------------


def _message(api: Api) -> dict[str, Any]:
    reply = api.send("POST", "/v1/messages", {"model": MODEL, "max_tokens": 256, "messages": HELLO})
    seen = error(reply)
    if reply.status == 200:
        body = reply.json()
        seen.update(shape=shape(body), stop_reason=body.get("stop_reason"), model=body.get("model") == api.model)
    return seen


MESSAGE_SHAPE = {
    "id": "string", "type": "message", "role": "assistant", "model": "string",
    "content": [{"type": "text", "text": "string"}], "stop_reason": "string", "stop_sequence": "null",
    "usage": {"input_tokens": "integer", "output_tokens": "integer", "cache_creation_input_tokens": "integer",
              "cache_read_input_tokens": "integer", "service_tier": "string"},
}


def _tool_round_trip(api: Api) -> dict[str, Any]:
    body = {"model": MODEL, "max_tokens": 512, "messages": ASK_WEATHER, "tools": [WEATHER]}
    first = api.send("POST", "/v1/messages", body)
    seen = {f"1. {k}": v for k, v in error(first).items()}
    if first.status != 200:
        return seen
    message = first.json()
    calls = [b for b in message["content"] if b.get("type") == "tool_use"]
    seen.update({"1. stop_reason": message.get("stop_reason"),
                 "1. calls": [[c.get("name"), sorted(c.get("input") or {})] for c in calls],
                 "1. tool_use shape": shape(calls[0]) if calls else None})
    if not calls:
        return seen
    results = [{"type": "tool_result", "tool_use_id": c["id"], "content": "15 degrees Celsius, sunny"} for c in calls]
    history = [*ASK_WEATHER, {"role": "assistant", "content": message["content"]}, {"role": "user", "content": results}]
    second = api.send("POST", "/v1/messages", {**body, "messages": history})
    seen.update({f"2. {k}": v for k, v in error(second).items()})
    if second.status == 200:
        answer = second.json()
        seen.update({"2. stop_reason": answer.get("stop_reason"), "2. text blocks": "text" in block_types(answer)})
    return seen


def _stream(api: Api, body: dict) -> dict[str, Any]:
    reply = api.send("POST", "/v1/messages", {**body, "stream": True})
    seen = error(reply)
    if reply.status != 200:
        return seen
    events = reply.events
    seen["content-type"] = reply.headers.get("content-type", "").split(";")[0]
    seen["events"] = sequence(events)
    start = next((e for e in events if e.get("type") == "message_start"), {})
    delta = next((e for e in events if e.get("type") == "message_delta"), {})
    seen["message_start shape"] = shape(start)
    seen["message_delta shape"] = shape(delta)
    return seen


def _stream_text(api: Api) -> dict[str, Any]:
    return _stream(api, {"model": MODEL, "max_tokens": 256, "messages": HELLO})


def _stream_tool(api: Api) -> dict[str, Any]:
    seen = _stream(api, {"model": MODEL, "max_tokens": 512, "messages": ASK_WEATHER, "tools": [WEATHER],
                         "tool_choice": {"type": "auto"}})
    if "events" in seen:
        reply_events = seen.pop("events")
        seen["events (tool part)"] = [e for e in reply_events if "tool_use" in e or "input_json" in e]
        seen["ends"] = reply_events[-2:]
    return seen


def _first_json_delta(api: Api) -> dict[str, Any]:
    """The SDK's fixture: a tool_use block's first input_json_delta carries "" (§5.B)."""
    reply = api.send("POST", "/v1/messages", {"model": MODEL, "max_tokens": 512, "messages": ASK_WEATHER,
                                              "tools": [WEATHER], "stream": True})
    seen = error(reply)
    if reply.status == 200:
        deltas = [e["delta"] for e in reply.events if e.get("type") == "content_block_delta"
                  and (e.get("delta") or {}).get("type") == "input_json_delta"]
        seen["first partial_json"] = deltas[0].get("partial_json") if deltas else None
    return seen


CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
               "required": ["city", "country"], "additionalProperties": False}


def _structured(api: Api) -> dict[str, Any]:
    body = {"model": MODEL, "max_tokens": 512,
            "messages": [{"role": "user", "content": "Name the capital of France and its country."}],
            "output_config": {"format": {"type": "json_schema", "schema": CITY_SCHEMA}}}
    reply = api.send("POST", "/v1/messages", body)
    seen = error(reply)
    if reply.status == 200:
        message = reply.json()
        texts = [b.get("text", "") for b in message["content"] if b.get("type") == "text"]
        try:
            data = json.loads(texts[-1]) if texts else None
        except ValueError:
            data = None
        seen["stop_reason"] = message.get("stop_reason")
        seen["answer is JSON"] = isinstance(data, dict)
        seen["answer's keys and types"] = shape(data) if isinstance(data, dict) else None
    return seen


def _caching(api: Api) -> dict[str, Any]:
    """The same long, cache-marked system prompt twice: the first call writes the cache, the second reads it."""
    system = [{"type": "text", "text": f"Run {api.run_id}. " + LONG_SYSTEM, "cache_control": {"type": "ephemeral"}}]
    body = {"model": MODEL, "max_tokens": 32, "system": system, "messages": HELLO}
    seen: dict[str, Any] = {}
    for step in ("1", "2"):
        reply = api.send("POST", "/v1/messages", body)
        seen.update({f"{step}. {k}": v for k, v in error(reply).items()})
        if reply.status != 200:
            return seen
        usage = reply.json().get("usage") or {}
        seen[f"{step}. cache written"] = (usage.get("cache_creation_input_tokens") or 0) > 0
        seen[f"{step}. cache read"] = (usage.get("cache_read_input_tokens") or 0) > 0
        seen[f"{step}. usage shape"] = shape(usage)
    return seen


# Long enough to be cached by every current model (the largest minimum is 4096 tokens, §5.E).
LONG_SYSTEM = " ".join(f"Rule {i}: answer briefly, plainly and politely, and never invent a fact." for i in range(420))

CACHED_USAGE = {"input_tokens": "integer", "output_tokens": "integer", "cache_creation_input_tokens": "integer",
                "cache_read_input_tokens": "integer",
                "cache_creation": {"ephemeral_5m_input_tokens": "integer", "ephemeral_1h_input_tokens": "integer"},
                "service_tier": "string"}


def _thinking(api: Api) -> dict[str, Any]:
    body = {"model": MODEL, "max_tokens": 2048, "thinking": {"type": "adaptive"},
            "messages": [{"role": "user", "content": "Is 1001 a prime number? Think it through, then answer."}]}
    reply = api.send("POST", "/v1/messages", body)
    seen = error(reply)
    if reply.status == 200:
        message = reply.json()
        kinds = block_types(message)
        seen["first block"] = kinds[0] if kinds else None
        seen["ends with text"] = bool(kinds) and kinds[-1] == "text"
        thinking = next((b for b in message["content"] if b.get("type") == "thinking"), None)
        seen["thinking block shape"] = shape(thinking) if thinking else None
    return seen


def _count_tokens(api: Api) -> dict[str, Any]:
    reply = api.send("POST", "/v1/messages/count_tokens", {"model": MODEL, "messages": HELLO, "tools": [WEATHER]})
    seen = error(reply)
    if reply.status == 200:
        seen["shape"] = shape(reply.json())
    return seen


STREAM_USAGE = "the real API may add cumulative input and cache counts to message_delta.usage (§5.B)"

ANSWERS = [
    Probe("a plain message", _message, {"status": 200, "shape": MESSAGE_SHAPE, "stop_reason": "end_turn",
                                        "model": True}, "§1.5 [P][S]", billed=(20, 256), group="answers"),
    Probe("a tool round trip", _tool_round_trip,
          {"1. status": 200, "1. stop_reason": "tool_use", "1. calls": [["get_weather", ["city"]]],
           "1. tool_use shape": {"type": "tool_use", "id": "string", "name": "string", "caller": {"type": "direct"},
                                 "input": {"city": "string"}},
           "2. status": 200, "2. stop_reason": "end_turn", "2. text blocks": True},
          "§1.3, §1.5 [P]", billed=(700, 1024), group="answers"),
    Probe("the streaming event sequence", _stream_text,
          {"status": 200, "content-type": "text/event-stream",
           "events": ["message_start", "content_block_start:text", "content_block_delta:text_delta",
                      "content_block_stop", "message_delta", "message_stop"],
           "message_start shape": {"type": "message_start", "message": {
               **MESSAGE_SHAPE, "content": [], "stop_reason": "null", "stop_sequence": "null"}},
           "message_delta shape": {"type": "message_delta", "delta": {"stop_reason": "string",
                                                                      "stop_sequence": "null"},
                                   "usage": {"output_tokens": "integer"}}},
          "§1.7, §5.B [P]", billed=(20, 256), group="answers", known={"message_delta shape.usage": STREAM_USAGE}),
    Probe("a streamed tool call", _stream_tool,
          {"status": 200, "content-type": "text/event-stream",
           "events (tool part)": ["content_block_start:tool_use", "content_block_delta:input_json_delta"],
           "ends": ["message_delta", "message_stop"],
           "message_start shape": {"type": "message_start", "message": {
               **MESSAGE_SHAPE, "content": [], "stop_reason": "null", "stop_sequence": "null"}},
           "message_delta shape": {"type": "message_delta", "delta": {"stop_reason": "string",
                                                                      "stop_sequence": "null"},
                                   "usage": {"output_tokens": "integer"}}},
          "§1.7, §5.B [P] (the SDK's fixture)", billed=(350, 512), group="answers",
          known={"message_delta shape.usage": STREAM_USAGE}),
    Probe("a tool call's first JSON delta", _first_json_delta, {"status": 200, "first partial_json": ""},
          "§5.B [P] (the SDK's fixture)", billed=(350, 512), group="answers"),
    Probe("counting tokens", _count_tokens, {"status": 200, "shape": {"input_tokens": "integer"}}, "§1.8 [P]",
          group="answers"),
    Probe("structured output", _structured,
          {"status": 200, "stop_reason": "end_turn", "answer is JSON": True,
           "answer's keys and types": {"city": "string", "country": "string"}},
          "§5.C [P]", billed=(120, 512), group="answers"),
    Probe("prompt caching usage", _caching,
          {"1. status": 200, "1. cache written": True, "1. cache read": False, "1. usage shape": CACHED_USAGE,
           "2. status": 200, "2. cache written": False, "2. cache read": True, "2. usage shape": CACHED_USAGE},
          "§5.E [P]", billed=(2 * 5_000, 64), group="answers"),
    Probe("adaptive thinking", _thinking,
          {"status": 200, "first block": "thinking", "ends with text": True,
           "thinking block shape": {"type": "thinking", "thinking": "string", "signature": "string"}},
          "§5.D [P]", billed=(40, 2048), group="answers"),
]


# --- tool_choice, request ids, a stream in Chinese -------------------------------------------------

CLOCK = {"name": "get_time", "description": "Get the current local time in a city.",
         "input_schema": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                          "required": ["city"]}}
ASK_TWO_CITIES = [{"role": "user", "content": "What is the weather in Paris and in London right now? "
                                              "Use the get_weather tool once for each city."}]
# The course's demo question: llama.cpp's server answered it in a stream without message_start 3 times of 3
ASK_IN_CHINESE = [{"role": "user",
                   "content": "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"}]


def _calls(api: Api, messages: list, tools: list, choice: dict) -> dict[str, Any]:
    """One answer under a tool_choice: its stop reason, the tools it called, whether text came first."""
    reply = api.send("POST", "/v1/messages", {"model": MODEL, "max_tokens": 256, "messages": messages,
                                              "tools": tools, "tool_choice": choice})
    seen = error(reply)
    if reply.status == 200:
        message = reply.json()
        kinds = block_types(message)
        names = [b.get("name") for b in message["content"] if b.get("type") == "tool_use"]
        seen.update({"stop_reason": message.get("stop_reason"), "tools called": sorted(set(names)),
                     "calls": len(names), "text before the call": bool(kinds) and kinds[0] == "text"})
    return seen


def _request_id(api: Api) -> dict[str, Any]:
    reply = api.send("POST", "/v1/messages", {"model": MODEL, "max_tokens": 16, "messages": HELLO})
    seen = error(reply)
    rid = reply.headers.get("request-id")
    seen["request-id"] = "req_..." if isinstance(rid, str) and rid.startswith("req_") else rid
    return seen


def _stream_in_chinese(api: Api) -> dict[str, Any]:
    reply = api.send("POST", "/v1/messages", {"model": MODEL, "max_tokens": 32, "messages": ASK_IN_CHINESE,
                                              "stream": True})
    seen = error(reply)
    if reply.status == 200:
        kinds = [e.get("type") for e in reply.events if e.get("type") != "ping"]
        seen.update({"first event": kinds[0] if kinds else None, "last event": kinds[-1] if kinds else None})
    return seen


TOOL_CHOICE = [
    Probe("tool_choice tool forces that tool", lambda api: _calls(
              api, ASK_WEATHER, [WEATHER, CLOCK], {"type": "tool", "name": "get_time"}),
          {"status": 200, "stop_reason": "tool_use", "tools called": ["get_time"], "text before the call": False},
          "§1.3 [P] (a forced choice prefills the turn: no text before the call)", billed=(450, 256)),
    Probe("tool_choice any forces a call", lambda api: _calls(api, HELLO, [WEATHER], {"type": "any"}),
          {"status": 200, "stop_reason": "tool_use", "tools called": ["get_weather"], "text before the call": False},
          "§1.3 [P]", billed=(400, 256)),
    Probe("tool_choice none forbids a call", lambda api: _calls(api, ASK_WEATHER, [WEATHER], {"type": "none"}),
          {"status": 200, "tools called": [], "calls": 0}, "§1.3 [P]", billed=(400, 256)),
    Probe("disable_parallel_tool_use", lambda api: _calls(
              api, ASK_TWO_CITIES, [WEATHER], {"type": "any", "disable_parallel_tool_use": True}),
          {"status": 200, "stop_reason": "tool_use", "calls": 1}, "§1.3 [P] (with any: exactly one tool_use)",
          billed=(400, 256)),
    Probe("a request-id header", _request_id, {"status": 200, "request-id": "req_..."}, "§1.5, §1.6 [PROBE]",
          billed=(20, 16)),
    Probe("a streamed answer in Chinese", _stream_in_chinese,
          {"status": 200, "first event": "message_start", "last event": "message_stop"}, "§1.7 [P]",
          billed=(30, 32)),
]
for _probe in TOOL_CHOICE:
    _probe.group = "tool choice, request ids, streams in Chinese"


# --- models ---------------------------------------------------------------------------------------

MODEL_INFO = {"type": "model", "id": "string", "display_name": "string", "created_at": "string"}


def _info_shape(info: dict) -> dict:
    """The ModelInfo keys the docs promise (§5.F); the newer optional ones are compared by `_extra_keys`."""
    return {k: v for k, v in shape(info).items() if k in MODEL_INFO}


def _list_models(api: Api) -> dict[str, Any]:
    reply = api.send("GET", "/v1/models?limit=2")
    seen = error(reply)
    if reply.status == 200:
        page = reply.json()
        data = page.get("data") or []
        seen.update({"page keys": sorted(page), "items": len(data), "has_more": page.get("has_more"),
                     "first_id is data[0]": bool(data) and page.get("first_id") == data[0].get("id"),
                     "item shape": _info_shape(data[0]) if data else None})
        if data and page.get("has_more"):
            after = api.send("GET", f"/v1/models?limit=2&after_id={page['last_id']}").json().get("data") or []
            seen["next page continues"] = bool(after) and after[0].get("id") not in {m.get("id") for m in data}
    return seen


def _all_models(api: Api) -> dict[str, Any]:
    reply = api.send("GET", "/v1/models?limit=1000")
    seen = error(reply)
    if reply.status == 200:
        data = reply.json().get("data") or []
        ids = [m.get("id") for m in data]
        seen["the model used is listed"] = api.model in ids
        seen["newest first"] = [m.get("created_at") for m in data] == sorted((m.get("created_at") for m in data),
                                                                            reverse=True)
        seen["retired listed"] = any(m.get("lifecycle") == "retired" for m in data)
    return seen


def _one_model(api: Api) -> dict[str, Any]:
    reply = api.send("GET", "/v1/models/$MODEL")
    seen = error(reply)
    if reply.status == 200:
        info = reply.json()
        seen.update({"shape": _info_shape(info), "id": info.get("id") == api.model,
                     "limits known": isinstance(info.get("max_tokens"), int)})
    return seen


MODELS = [
    Probe("listing models", _list_models,
          {"status": 200, "page keys": ["data", "first_id", "has_more", "last_id"], "items": 2, "has_more": True,
           "first_id is data[0]": True, "item shape": MODEL_INFO, "next page continues": True},
          "§5.F [P]", group="models"),
    Probe("the full list", _all_models,
          {"status": 200, "the model used is listed": True, "newest first": True, "retired listed": False},
          "§5.F [P], the SDK (retired models only when asked for)", group="models"),
    Probe("one model", _one_model, {"status": 200, "shape": MODEL_INFO, "id": True, "limits known": True},
          "§5.F [P]", group="models"),
    bad("an unknown model's info", f"model: {UNKNOWN_MODEL}", "ours (the real text is not documented)",
        method="GET", path=f"/v1/models/{UNKNOWN_MODEL}", status=404, type_="not_found_error"),
]
for _probe in MODELS:
    _probe.group = "models"


# --- browsers (CORS) ------------------------------------------------------------------------------


def _cors(api: Api, *, allowed: bool) -> dict[str, Any]:
    headers = {"origin": BROWSER_ORIGIN, **({BROWSER_HEADER: "true"} if allowed else {})}
    reply = api.send("POST", "/v1/messages/count_tokens", {"model": MODEL, "messages": HELLO}, headers)
    seen = error(reply)
    seen["access-control-allow-origin"] = reply.headers.get("access-control-allow-origin")
    seen["access-control-expose-headers"] = reply.headers.get("access-control-expose-headers")
    return seen


def _preflight(api: Api) -> dict[str, Any]:
    asked = ["content-type", "x-api-key", "anthropic-version", BROWSER_HEADER]
    reply = api.send("OPTIONS", "/v1/messages", None, {
        "origin": BROWSER_ORIGIN, "access-control-request-method": "POST",
        "access-control-request-headers": ",".join(asked)}, auth=False)
    allow = {h.strip().lower() for h in reply.headers.get("access-control-allow-headers", "").split(",")}
    methods = {m.strip().upper() for m in reply.headers.get("access-control-allow-methods", "").split(",")}
    return {"status": reply.status, "access-control-allow-origin": reply.headers.get("access-control-allow-origin"),
            "allows the headers asked": "*" in allow or set(asked) <= allow, "allows POST": "POST" in methods}


BROWSERS = [
    Probe("a browser's request, allowed", lambda api: _cors(api, allowed=True),
          {"status": 200, "access-control-allow-origin": "*", "access-control-expose-headers": "*"}, "§5.G [S]",
          group="browsers"),
    Probe("a browser's request, not allowed", lambda api: _cors(api, allowed=False),
          {"status": 401, "type": "authentication_error", "message": CORS_REFUSED,
           "access-control-allow-origin": None, "access-control-expose-headers": None}, "§5.G [S]",
          group="browsers"),
    Probe("a preflight", _preflight,
          {"status": 204, "access-control-allow-origin": "*", "allows the headers asked": True, "allows POST": True},
          "ours (§5.G: the real preflight is not documented; a live run shows it)", group="browsers"),
]

# --- message threads (beta) -----------------------------------------------------------------------

THREADS_BETA = {"anthropic-beta": "message-threads-2026-08-12"}
THREAD_EVIDENCE = ("the SDK [P] (anthropic 2.14.0: lib/threads, types/thread_*_error.py): the codes in "
                   "error.details.error_code and when they come; the messages are ours, not compared")


def _error_code(reply: Reply) -> Any:
    try:
        return reply.json()["error"]["details"]["error_code"]
    except (ValueError, KeyError, TypeError):
        return None


def _thread_reply(reply: Reply, step: str) -> dict[str, Any]:
    seen = error(reply)
    seen.pop("message", None)
    if reply.status >= 400:
        seen["error_code"] = _error_code(reply)
    return {f"{step}. {k}": v for k, v in seen.items()}


def _thread(api: Api) -> dict[str, Any]:
    """A tool round on a thread: a create with the question and the tools, a continue with the result
    only; then the same continue again (each answer is continued once) and one from an id never held."""
    body = {"model": MODEL, "max_tokens": 512, "messages": ASK_WEATHER, "tools": [WEATHER],
            "thread": {"type": "create"}}
    first = api.send("POST", "/v1/messages", body, THREADS_BETA)
    seen = _thread_reply(first, "1")
    calls = [b for b in first.json()["content"] if b.get("type") == "tool_use"] if first.status == 200 else []
    seen["1. calls"] = [c.get("name") for c in calls]
    if not calls:
        return seen
    results = [{"type": "tool_result", "tool_use_id": c["id"], "content": "15 degrees Celsius, sunny"} for c in calls]
    turn = {"model": MODEL, "max_tokens": 512, "messages": [{"role": "user", "content": results}],
            "thread": {"type": "continue", "previous_message_id": first.json()["id"]}}
    second = api.send("POST", "/v1/messages", turn, THREADS_BETA)
    seen.update(_thread_reply(second, "2"))
    if second.status == 200:
        answer = second.json()
        seen.update({"2. stop_reason": answer.get("stop_reason"), "2. text blocks": "text" in block_types(answer)})
    seen.update(_thread_reply(api.send("POST", "/v1/messages", turn, THREADS_BETA), "3"))
    lost = {**turn, "thread": {"type": "continue", "previous_message_id": "msg_contract_never_held"}}
    seen.update(_thread_reply(api.send("POST", "/v1/messages", lost, THREADS_BETA), "4"))
    return seen


def _thread_with_thinking(api: Api) -> dict[str, Any]:
    body = {"model": MODEL, "max_tokens": 2048, "messages": HELLO, "thread": {"type": "create"},
            "thinking": {"type": "enabled", "budget_tokens": 1024}}
    reply = api.send("POST", "/v1/messages", body, THREADS_BETA)
    seen = _thread_reply(reply, "1")
    try:
        seen["1. unsupported"] = reply.json()["error"]["details"].get("unsupported")
    except (ValueError, KeyError, TypeError, AttributeError):
        seen["1. unsupported"] = None
    return seen


THREADS = [
    Probe("a tool round on a message thread", _thread,
          {"1. status": 200, "1. calls": ["get_weather"], "2. status": 200, "2. stop_reason": "end_turn",
           "2. text blocks": True, "3. status": 400, "3. type": "invalid_request_error",
           "3. error_code": "thread_already_continued", "4. status": 404, "4. type": "not_found_error",
           "4. error_code": "thread_not_found"},
          THREAD_EVIDENCE, billed=(1_400, 1_024), group="message threads"),
    Probe("a thread with thinking", _thread_with_thinking,
          {"1. status": 400, "1. type": "invalid_request_error", "1. error_code": "thread_unsupported_request",
           "1. unsupported": ["thinking"]},
          THREAD_EVIDENCE + " (ThreadUnsupportedFeatureName)", group="message threads"),
]

# --- OpenAI's Responses API (/v1/responses) -------------------------------------------------------
# The mock serves it beside the Messages API (miniagent/mock/openai_responses.py). These probes say what
# the real OpenAI API answers (the pinned `openai` SDK's types, and its 400s as clients quote them); the
# live run is Anthropic's API, so there too they check the mock against `expect` (`openai=True`).

RESPONSES = "/v1/responses"
NOT_ANTHROPIC = {"anthropic-version": None}  # an OpenAI request: a key, and nothing of Anthropic's
WEATHER_FUNCTION = {"type": "function", "name": WEATHER["name"], "description": WEATHER["description"],
                    "parameters": WEATHER["input_schema"], "strict": False}
RESPONSE_KEYS = ["id", "object", "created_at", "status", "model", "output", "usage", "tools", "tool_choice",
                 "parallel_tool_calls", "store", "text", "previous_response_id", "instructions"]


def openai_error(reply: Reply) -> dict[str, Any]:
    """Status, and OpenAI's error fields (a success: the status alone)."""
    if reply.status < 400:
        return {"status": reply.status}
    try:
        body = reply.json()["error"]
        return {"status": reply.status, "message": body["message"], "param": body["param"], "code": body["code"]}
    except (ValueError, KeyError, TypeError):
        return {"status": reply.status, "message": None, "param": None, "code": None}


def _response(api: Api) -> dict[str, Any]:
    reply = api.send("POST", RESPONSES, {"model": MODEL, "input": "Say hello in one word.", "max_output_tokens": 256},
                     NOT_ANTHROPIC)
    seen = openai_error(reply)
    if reply.status == 200:
        body = reply.json()
        seen.update({"has the keys": all(k in body for k in RESPONSE_KEYS), "object": body.get("object"),
                     "response status": body.get("status"), "output": shape(body.get("output")),
                     "usage": shape(body.get("usage"))})
    return seen


def _responses_round_trip(api: Api) -> dict[str, Any]:
    body = {"model": MODEL, "input": ASK_WEATHER[0]["content"], "tools": [WEATHER_FUNCTION], "max_output_tokens": 256}
    first = api.send("POST", RESPONSES, body, NOT_ANTHROPIC)
    seen = {f"1. {k}": v for k, v in openai_error(first).items()}
    if first.status != 200:
        return seen
    calls = [item for item in first.json()["output"] if item.get("type") == "function_call"]
    seen["1. function_call shape"] = shape(calls[0]) if calls else None
    outputs = [{"type": "function_call_output", "call_id": c["call_id"], "output": "15 degrees Celsius, sunny"}
               for c in calls]
    second = api.send("POST", RESPONSES, {**body, "previous_response_id": first.json()["id"], "input": outputs},
                      NOT_ANTHROPIC)
    seen.update({f"2. {k}": v for k, v in openai_error(second).items()})
    if second.status == 200:
        answer = second.json()
        seen["2. output types"] = [item.get("type") for item in answer["output"]]
        seen["2. previous_response_id"] = answer.get("previous_response_id") == first.json()["id"]
    return seen


def _responses_stream(api: Api) -> dict[str, Any]:
    reply = api.send("POST", RESPONSES, {"model": MODEL, "input": ASK_WEATHER[0]["content"], "stream": True,
                                         "tools": [WEATHER_FUNCTION], "max_output_tokens": 256}, NOT_ANTHROPIC)
    seen = openai_error(reply)
    if reply.status == 200:
        kinds: list[str] = []
        for event in reply.events:
            if not kinds or kinds[-1] != event.get("type"):
                kinds.append(event.get("type"))
        seen["first and last"] = [kinds[0], kinds[-1]] if kinds else []
        seen["has"] = sorted({k for k in kinds if k in (
            "response.in_progress", "response.output_item.added", "response.function_call_arguments.delta",
            "response.function_call_arguments.done", "response.output_item.done")})
    return seen


def bad_response(name: str, body: dict, message: str | None, param: str | None, code: str | None, evidence: str,
                 status: int = 400) -> Probe:
    def run(api: Api) -> dict[str, Any]:
        seen = openai_error(api.send("POST", RESPONSES, body, NOT_ANTHROPIC))
        if message is None:
            seen.pop("message", None)
        return seen
    expect = {"status": status, **({"message": message} if message is not None else {}), "param": param, "code": code}
    return Probe(name, run, expect, evidence, group="responses (OpenAI)", openai=True)


FUNCTION_CALL = {"type": "function_call", "call_id": "call_probe_1", "name": "get_weather", "arguments": "{}"}
RESPONSES_PROBES = [
    Probe("a response", _response,
          {"status": 200, "has the keys": True, "object": "response", "response status": "completed",
           "output": [{"id": "string", "type": "message", "status": "string",
                       "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "string"}],
                       "role": "assistant"}],
           "usage": {"input_tokens": "integer", "input_tokens_details": {"cached_tokens": "integer",
                                                                        "cache_write_tokens": "integer"},
                     "output_tokens": "integer", "output_tokens_details": {"reasoning_tokens": "integer"},
                     "total_tokens": "integer"}},
          "the openai SDK's Response and ResponseUsage types [P]"),
    Probe("a function call and its output, by previous_response_id", _responses_round_trip,
          {"1. status": 200, "1. function_call shape": {"arguments": "string", "call_id": "string",
                                                       "name": "string", "type": "function_call", "id": "string",
                                                       "status": "string"},
           "2. status": 200, "2. output types": ["message"], "2. previous_response_id": True},
          "the openai SDK's ResponseFunctionToolCall; OpenAI's function-calling guide [P]"),
    Probe("a streamed function call", _responses_stream,
          {"status": 200, "first and last": ["response.created", "response.completed"],
           "has": ["response.function_call_arguments.delta", "response.function_call_arguments.done",
                   "response.in_progress", "response.output_item.added", "response.output_item.done"]},
          "the openai SDK's ResponseStreamEvent types and its stream accumulator [P]"),
    bad_response("responses: an unknown parameter", {"model": MODEL, "input": "x", "foo": 1},
                 "Unknown parameter: 'foo'.", "foo", "unknown_parameter", "clients' quoted 400s [S]"),
    bad_response("responses: an output with no call", {"model": MODEL, "input": [
        {"type": "function_call_output", "call_id": "call_probe_1", "output": "x"}]},
        "No tool call found for function call output with call_id call_probe_1.", "input", None,
        "clients' quoted 400s [S]"),
    bad_response("responses: a call with no output", {"model": MODEL, "input": [FUNCTION_CALL]},
                 "No tool output found for function call call_probe_1.", "input", None, "clients' quoted 400s [S]"),
    bad_response("responses: an unknown previous_response_id",
                 {"model": MODEL, "input": "x", "previous_response_id": "resp_probe_missing"},
                 "Previous response with id 'resp_probe_missing' not found.", "previous_response_id",
                 "previous_response_not_found", "clients' quoted 400s [S]"),
]
for _probe in RESPONSES_PROBES:
    _probe.group, _probe.openai = "responses (OpenAI)", True


PROBES: list[Probe] = [*VALIDATION, *ANSWERS, *TOOL_CHOICE, *MODELS, *BROWSERS, *THREADS, *RESPONSES_PROBES]


@dataclass
class Difference:
    key: str
    left: Any
    right: Any


def differences(left: dict[str, Any], right: dict[str, Any], keys: list[str] | None = None) -> list[Difference]:
    """Where two observations differ (only `keys`, if given), nested shapes compared key by key."""
    out: list[Difference] = []
    for key in keys if keys is not None else list(dict.fromkeys([*left, *right])):
        _diff(key, left.get(key, "<absent>"), right.get(key, "<absent>"), out)
    return out


def _diff(path: str, a: Any, b: Any, out: list[Difference]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in dict.fromkeys([*a, *b]):
            _diff(f"{path}.{key}", a.get(key, "<absent>"), b.get(key, "<absent>"), out)
    elif a != b:
        out.append(Difference(path, a, b))
