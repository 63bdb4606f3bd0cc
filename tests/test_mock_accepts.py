"""The mock accepts what the API accepts: every request shape the pinned official SDK can send.

The requests are derived from the SDK's own types (anthropic's TypedDicts, read here
through `typing`, independently of the mock's request_shapes.json), so raising the pin
extends this test by itself. For every place a shape can go (a parameter, a block in a
message, a block in a tool_result, a tool in `tools`, a source in a document ...) a
minimal instance, and one with every optional field filled, is put in a valid request
and sent through `MockAPI.handle`: the answer must be a 200 (not a 400, and not the 500
that says the mock has a bug). A block the model writes (one of the SDK's response block
types) goes in an assistant turn, any other in a user turn, and the conversation around
it is completed as the API's rules want (a tool_result after a tool_use, a user turn last).

The only rejections expected are the API's own rules, listed in EXPECTED_REJECTIONS with
the reason and the words. The mock accepts server tools and Anthropic-defined client tools
(bash, text editor, memory, computer...) but never runs or calls them: its model only calls
the tools it was given a schema for (see brain.py).

Also here: the data file is what the generator writes from the pinned SDK; the
`anthropic-beta` header through `MockAPI.handle`; and the model never calling the tools it
cannot run. (The rules schema.py adds by hand have their tests in test_mock_validate.py.)
"""

from __future__ import annotations

import importlib.util
import json
import typing
from pathlib import Path
from typing import Any

import httpx2
import pytest
import typing_extensions as te

import anthropic
from miniagent import DEFAULT_MODEL
from miniagent.mock import MockAPI
from miniagent.mock import thinking as mock_thinking
from miniagent.mock.schema import SHAPES_FILE, shapes_data

ROOT = Path(__file__).resolve().parents[1]
OLD, NEW = "2023-06-01", "2026-10-21"
NONE = type(None)
MODEL = DEFAULT_MODEL
BETA = str(te.get_args(te.get_args(anthropic.types.AnthropicBetaParam)[1])[0])  # a beta name the SDK knows


# --- reading the SDK's types ------------------------------------------------------------------------


def _hints(td: type) -> dict[str, Any]:
    return te.get_type_hints(td, include_extras=True)


def _unwrap(hint: Any) -> Any:
    while te.get_origin(hint) in (te.Required, te.NotRequired, typing.Annotated):
        hint = te.get_args(hint)[0]
    return hint


def _alternatives(hint: Any) -> list:
    """A union's members (flattened), without None and without the response models the SDK
    also lets through (the API reads the param shape with the same tag)."""
    hint = _unwrap(hint)
    if te.get_origin(hint) is typing.Union:
        return [a for member in te.get_args(hint) for a in _alternatives(member)]
    if hint is NONE or (isinstance(hint, type) and hasattr(hint, "model_fields")):
        return []
    return [hint]


def _required(hint: Any) -> bool:
    """Every param TypedDict of the SDK is total=False and marks its required keys."""
    while te.get_origin(hint) is typing.Annotated:
        hint = te.get_args(hint)[0]
    return te.get_origin(hint) is te.Required


def _container(hint: Any) -> str | None:
    """How a TypedDict sits in this slot: 'list' (in a list), 'dict' (a dict's values), or None (itself)."""
    origin = te.get_origin(hint)
    if origin is not None and getattr(origin, "__name__", "") in ("Iterable", "list", "Sequence", "SequenceNotStr"):
        return "list"
    if origin in (dict, typing.Dict) or getattr(origin, "__name__", "") in ("dict", "Mapping"):
        return "dict"
    return None


def _slots(hint: Any) -> list[tuple[str | None, type]]:
    """(container, TypedDict) for each TypedDict a key's value can be or hold."""
    out = []
    for a in _alternatives(hint):
        if te.is_typeddict(a):
            out.append((None, a))
        elif (cont := _container(a)) is not None:
            inner = te.get_args(a)[-1] if te.get_args(a) else Any
            out += [(cont, td) for c, td in _slots(inner) if c is None]
    return out


def _tag(td: type) -> str | None:
    hint = _hints(td).get("type")
    values = [v for a in _alternatives(hint) if te.get_origin(a) is te.Literal for v in te.get_args(a)] if hint else []
    return values[0] if values else None


def _response_tags(union: Any) -> set[str]:
    """The `type` of every block the SDK's response union holds: the blocks a model writes."""
    members = te.get_args(te.get_args(union)[0]) if te.get_origin(union) is typing.Annotated else te.get_args(union)
    return {te.get_args(m.model_fields["type"].annotation)[0] for m in members}


RESPONSE_TAGS = _response_tags(anthropic.types.ContentBlock) | _response_tags(anthropic.types.beta.BetaContentBlock)

# Values a field needs to pass the API's rules beyond its type (by key), so that a shape is
# tried in a request the API would serve.
STRICT_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                 "additionalProperties": False}  # what structured outputs compile (wire-format §5.C)
BY_KEY = {"schema": STRICT_SCHEMA, "input_schema": STRICT_SCHEMA, "budget_tokens": 1024}


class Builder:
    """Minimal and full instances of the SDK's TypedDicts, and the requests that hold them."""

    def value(self, hint: Any, key: str, full: bool) -> Any:
        if key in BY_KEY:
            return json.loads(json.dumps(BY_KEY[key]))
        alts = _alternatives(hint)
        if not alts:
            return None
        a = alts[0]
        origin = te.get_origin(a)
        if te.is_typeddict(a):
            return self.instance(a, full=False)
        if origin is te.Literal:
            values = te.get_args(a)
            return values[-1] if full else values[0]
        if _container(a) == "list":
            item = te.get_args(a)[0] if te.get_args(a) else Any
            return [self.value(item, key, False)]
        if _container(a) == "dict" or a in (dict, object) or a is typing.Any:
            return {}
        if a is bool:
            return False
        if a is int:
            return 1024
        if a is float:
            return 0.5
        return "x1"  # str, and a file the SDK would send as base64 text

    def instance(self, td: type, full: bool) -> dict:
        """The required keys (every key if `full`), each with a minimal value."""
        out = {}
        for key, hint in _hints(td).items():
            if full or _required(hint):
                out[key] = self.value(hint, key, full and key == "type")
        if _tag(td) is not None:
            out["type"] = _tag(td)  # the first tag (a shape may have several)
        return out


def edges(root: type) -> tuple[list[tuple[type, str, str | None, type]], dict[type, tuple]]:
    """Every (parent, key, container, child) slot reachable from `root`, and for each TypedDict
    the first slot that reaches it (breadth first: the shortest way there)."""
    found, first = [], {root: None}
    queue = [root]
    while queue:
        parent = queue.pop(0)
        for key, hint in _hints(parent).items():
            for container, child in _slots(hint):
                found.append((parent, key, container, child))
                if child not in first:
                    first[child] = (parent, key, container)
                    queue.append(child)
    return found, first


def _wrap(value: Any, container: str | None) -> Any:
    return [value] if container == "list" else {"k": value} if container == "dict" else value


def embed(builder: Builder, first: dict, root: type, parent: type, key: str, container: str | None,
          value: dict) -> dict:
    """A request body that holds `value` at `parent.key`, every shape on the way minimal."""
    value = _wrap(value, container)
    while parent is not root:
        holder = builder.instance(parent, full=False)
        holder[key] = value
        parent, key, container = first[parent]
        value = _wrap(holder, container)
    body = {"model": MODEL, "max_tokens": 4096, "messages": [{"role": "user", "content": "Hello"}]}
    body[key] = value
    return body


# --- a valid conversation around the shape under test --------------------------------------------------


def _blocks(message: dict) -> list:
    content = message.get("content")
    return content if isinstance(content, list) else []


def complete(body: dict) -> dict:
    """The request made valid by the API's conversation rules, without changing the shape under test."""
    messages = []
    for message in body["messages"]:
        tags = {b.get("type") for b in _blocks(message)}
        if message["role"] in ("user", "assistant"):
            message["role"] = "assistant" if tags & RESPONSE_TAGS else "user"
        messages.append(message)
    done: list[dict] = []
    for message in messages:
        results = [b for b in _blocks(message) if b.get("type") == "tool_result"]
        if results and not (done and done[-1]["role"] == "assistant"):
            done.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": b["tool_use_id"], "name": "x1", "input": {}} for b in results]})
        done.append(message)
        uses = [b for b in _blocks(message) if b.get("type") == "tool_use"]
        if uses:
            done.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b["id"], "content": "done"} for b in uses]})
    if done[0]["role"] != "user":
        done.insert(0, {"role": "user", "content": "Hello"})
    if done[-1]["role"] != "user":
        done.append({"role": "user", "content": "Thanks"})
    body["messages"] = done
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        name = choice.get("name", "x1")
        tools = body.setdefault("tools", [])
        if not any(t.get("name") == name for t in tools):
            tools.append({"name": name, "description": "A tool", "input_schema": STRICT_SCHEMA})
    _sign_thinking(body)
    return body


def _sign_thinking(value: Any) -> None:
    """Thinking blocks as the mock signed them: the API takes back only blocks it signed, the mock too."""
    if isinstance(value, dict):
        if value.get("type") == "thinking" and isinstance(value.get("thinking"), str) and "signature" in value:
            value["signature"] = mock_thinking.sign(value["thinking"], value["thinking"], "summarized")
        for v in value.values():
            _sign_thinking(v)
    elif isinstance(value, list):
        for v in value:
            _sign_thinking(v)


# --- what the SDK puts in the body ---------------------------------------------------------------------


def body_keys(create, root: type, **extra) -> set[str]:
    """The top-level keys the SDK sends in the body (it sends some parameters as headers):
    every parameter given, the request captured on its way out."""
    builder, seen = Builder(), []
    params = {key: builder.value(hint, key, False) for key, hint in _hints(root).items() if key != "stream"}
    params.update(extra)

    def capture(request):
        seen.append(json.loads(request.content))
        return httpx2.Response(400, json={"type": "error", "error": {"type": "invalid_request_error",
                                                                     "message": "captured"}})
    client = anthropic.Anthropic(api_key="k", max_retries=0,
                                 http_client=httpx2.Client(transport=httpx2.MockTransport(capture)))
    with pytest.raises(anthropic.BadRequestError):
        create(client)(**params)
    return set(seen[0])


GA_CREATE = anthropic.types.message_create_params.MessageCreateParamsNonStreaming
GA_COUNT = anthropic.types.message_count_tokens_params.MessageCountTokensParams
BETA_CREATE = anthropic.types.beta.message_create_params.MessageCreateParamsNonStreaming
BETA_COUNT = anthropic.types.beta.message_count_tokens_params.MessageCountTokensParams
ROOTS = {  # root: (path, how to call the SDK, beta?)
    GA_CREATE: ("/v1/messages", lambda c: c.messages.create, False),
    GA_COUNT: ("/v1/messages/count_tokens", lambda c: c.messages.count_tokens, False),
    BETA_CREATE: ("/v1/messages", lambda c: c.beta.messages.create, True),
    BETA_COUNT: ("/v1/messages/count_tokens", lambda c: c.beta.messages.count_tokens, True),
}


def requests_for(root: type, depth_one: bool = False) -> list[tuple[str, dict]]:
    """(what is tried, body) for every slot reachable from `root`: a minimal and a full instance of
    the shape there, and the body itself minimal and with every top-level parameter."""
    builder = Builder()
    path, create, _ = ROOTS[root]
    sent = body_keys(create, root)
    found, first = edges(root)
    out = []
    base = {"model": MODEL, "max_tokens": 4096, "messages": [{"role": "user", "content": "Hello"}]}
    if path.endswith("count_tokens"):
        del base["max_tokens"]
    full_root = {**base, **{k: builder.value(h, k, False) for k, h in _hints(root).items()
                            if k in sent and k not in base and k != "stream"}}
    out += [("the minimal body", dict(base)), ("every top-level parameter", full_root)]
    for parent, key, container, child in found:
        if depth_one and parent is not root:
            continue
        if parent is root and key not in sent:
            continue  # a header parameter
        for full in (False, True):
            body = embed(builder, first, root, parent, key, container, builder.instance(child, full))
            if path.endswith("count_tokens"):
                body.pop("max_tokens", None)
            what = f"{parent.__name__}.{key}: {child.__name__} ({'full' if full else 'minimal'})"
            out.append((what, body))
    unique: dict[str, tuple[str, dict]] = {}
    for what, body in out:
        unique.setdefault(json.dumps(complete(body), sort_keys=True), (what, body))
    return list(unique.values())


# The API's own rules that some shapes, in the request built around them, run into:
# {root: {what is tried: (why, the 400's message)}}.
_SYSTEM_EMPTY = ("the SDK: a system message \"with neither content nor output_config fields is rejected\" "
                 "(our words: the API's are not known)",
                 "messages.1: a `system` message needs `content` or `output_config`")
_THREAD_UNSUPPORTED = ("message threads: the SDK's tool runner drops the thread when the API answers "
                       "thread_unsupported_request for these fields (our words)",
                       "thread: message threads do not support `cache_control`, `fallbacks`, `thinking`; send the "
                       "full conversation without `thread`, or leave that field out")
_THREAD_NOT_FOUND = ("message threads: a continue of an answer the server never stored is thread_not_found, a 404 "
                     "the SDK answers by resending the history (our words)",
                     "thread.previous_message_id: no thread state was found for the `previous_message_id` sent; "
                     "replay the full conversation with `thread: {\"type\": \"create\"}` to start a new thread", 404)
EXPECTED_REJECTIONS: dict[type, dict[str, tuple]] = {  # (why, the message, the status if not 400)
    BETA_CREATE: {
        "MessageCreateParamsNonStreaming.messages: BetaSystemMessageParam (minimal)": _SYSTEM_EMPTY,
        "BetaSystemMessageParam.output_config: BetaSystemMessageOutputConfigParam (minimal)": _SYSTEM_EMPTY,
        "every top-level parameter": _THREAD_UNSUPPORTED,
        "MessageCreateParamsNonStreaming.thread: BetaThreadContinueParams (minimal)": _THREAD_NOT_FOUND,
    },
    BETA_COUNT: {
        "MessageCountTokensParams.messages: BetaSystemMessageParam (minimal)": _SYSTEM_EMPTY,
    },
}


def send(mock: MockAPI, path: str, body: dict, version: str, beta: bool) -> tuple[int, dict]:
    headers = {"x-api-key": "sk-test", "anthropic-version": version, "content-type": "application/json"}
    if beta:
        headers["anthropic-beta"] = BETA
    reply = mock.handle("POST", path, headers, json.dumps(body).encode())
    return reply.status, json.loads(reply.body) if reply.body else {}


def failures(root: type, version: str, depth_one: bool = False) -> list[str]:
    """What the mock answered other than a 200 (or other than the expected 400), one line each."""
    path, _, beta = ROOTS[root]
    mock = MockAPI()
    expected = EXPECTED_REJECTIONS.get(root, {})
    bad = []
    for what, body in requests_for(root, depth_one):
        status, answer = send(mock, path, body, version, beta)
        message = answer.get("error", {}).get("message")
        if what in expected:
            wanted = expected[what][2] if len(expected[what]) > 2 else 400
            if (status, message) != (wanted, expected[what][1]):
                bad.append(f"{what}: expected the {wanted} {expected[what][1]!r}, got {status} {message!r}")
        elif status != 200:
            bad.append(f"{what}: {status} {message}\n    {json.dumps(body)[:600]}")
    return bad


# --- the tests ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [NEW, OLD])
def test_every_shape_the_sdk_can_send_is_accepted(version):
    bad = failures(GA_CREATE, version)
    assert not bad, f"{len(bad)} rejected:\n" + "\n".join(bad)


def test_every_beta_shape_is_accepted_with_a_beta_header():
    bad = failures(BETA_CREATE, NEW)
    assert not bad, f"{len(bad)} rejected:\n" + "\n".join(bad)


@pytest.mark.parametrize("root", [GA_COUNT, BETA_COUNT], ids=["ga", "beta"])
def test_count_tokens_accepts_every_parameter(root):
    bad = failures(root, NEW, depth_one=True)
    assert not bad, f"{len(bad)} rejected:\n" + "\n".join(bad)


def test_the_data_file_is_what_the_generator_writes_from_the_pinned_sdk():
    """Raising the pin shows what changed: re-run `python scripts/gen_mock_schema.py` and read the diff."""
    spec = importlib.util.spec_from_file_location("gen_mock_schema", ROOT / "scripts" / "gen_mock_schema.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert SHAPES_FILE.read_text() == generator.render(), \
        "request_shapes.json is stale: run `python scripts/gen_mock_schema.py`"
    assert shapes_data()["sdk_version"] == anthropic.__version__


# --- the anthropic-beta header, through MockAPI.handle -------------------------------------------------

HELLO = {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": "Hello"}]}
UNEXPECTED = ("Unexpected value(s) {} for the `anthropic-beta` header. Please consult our documentation at "
              "docs.claude.com or try again without the header.")


def post(body: dict, beta: str | None = None, path: str = "/v1/messages") -> tuple[int, dict]:
    headers = {"x-api-key": "sk-test", "anthropic-version": NEW, "content-type": "application/json"}
    if beta is not None:
        headers["anthropic-beta"] = beta
    reply = MockAPI().handle("POST", path, headers, json.dumps(body).encode())
    return reply.status, json.loads(reply.body)


def test_an_unknown_beta_name_is_a_400_in_the_apis_words():
    assert post(HELLO, "no-such-beta-2025-01-01") == (400, {
        "type": "error", "error": {"type": "invalid_request_error",
                                   "message": UNEXPECTED.format("`no-such-beta-2025-01-01`")},
        "request_id": "req_mock_0001"})
    status, answer = post(HELLO, f"{BETA}, prompt-caching-scope-2026-01-05,structured-outputs-2025-12-15")
    assert status == 400 and answer["error"]["message"] == UNEXPECTED.format(
        "`prompt-caching-scope-2026-01-05`, `structured-outputs-2025-12-15`")  # as the API lists several
    status, answer = post({"model": MODEL, "messages": HELLO["messages"]}, "nope-2025-01-01",
                          path="/v1/messages/count_tokens")
    assert status == 400 and answer["error"]["message"] == UNEXPECTED.format("`nope-2025-01-01`")


def test_a_value_that_is_not_a_beta_name_is_not_quoted_back():
    """A key pasted into the wrong header must not come back in an error (or a record)."""
    status, answer = post(HELLO, "sk-ant-api03-SECRET")
    assert status == 400 and "SECRET" not in json.dumps(answer)
    assert answer["error"]["message"] == UNEXPECTED.format("(a value that is not a beta name)")


def test_known_beta_names_are_accepted_and_let_the_beta_fields_in():
    assert post(HELLO, BETA)[0] == 200
    assert post(HELLO, "advanced-tool-use-2025-11-20,web-fetch-2025-09-10")[0] == 200  # sent by langchain-anthropic
    assert post(HELLO, "")[0] == 200  # an empty header names no beta
    mcp = {**HELLO, "mcp_servers": [{"type": "url", "url": "https://example.com/mcp", "name": "docs"}],
           "tools": [{"type": "mcp_toolset", "mcp_server_name": "docs"}]}
    assert post(mcp, "mcp-client-2025-11-20")[0] == 200
    status, answer = post({**mcp, "tools": []})
    assert (status, answer["error"]["message"]) == (400, "mcp_servers: Extra inputs are not permitted")
    status, answer = post({**HELLO, "tools": mcp["tools"]})
    assert status == 400 and answer["error"]["message"].startswith(
        "tools.0: Input tag 'mcp_toolset' found using 'type'")


# --- the model never calls a tool it cannot run -------------------------------------------------------

WEATHER = {"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
SERVER_AND_DEFINED = [{"type": "web_search_20260318", "name": "web_search"},
                      {"type": "bash_20250124", "name": "bash"},
                      {"type": "web_fetch_20260318", "name": "web_fetch"},
                      {"type": "memory_20250818", "name": "memory"}]


def ask(question: str, tools: list, **fields) -> dict:
    status, answer = post({**HELLO, "messages": [{"role": "user", "content": question}], "tools": tools, **fields})
    assert status == 200, answer
    return answer


def test_server_and_anthropic_defined_tools_are_accepted_but_never_called():
    answer = ask("Search the web for the weather in Paris, then run bash to list the files.",
                 [*SERVER_AND_DEFINED, WEATHER])
    assert [b["name"] for b in answer["content"] if b["type"] == "tool_use"] == ["get_weather"]
    answer = ask("Search the web for cats and fetch https://example.com with bash.", SERVER_AND_DEFINED)
    assert answer["stop_reason"] == "end_turn" and [b["type"] for b in answer["content"]] == ["text"]


def test_a_tool_choice_that_forces_a_tool_the_mock_cannot_run_gets_a_text_answer():
    for choice in ({"type": "tool", "name": "web_search"}, {"type": "any"}):
        answer = ask("Search the web for cats.", SERVER_AND_DEFINED, tool_choice=choice)
        assert [b["type"] for b in answer["content"]] == ["text"]
