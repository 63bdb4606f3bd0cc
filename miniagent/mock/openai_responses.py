"""The Responses API surface (`POST /v1/responses`): would OpenAI accept this request, and the brain's answer in its shape.

The third wire format the mock speaks, beside the Messages API and Chat Completions,
with the same brain: `read_request(body, store, headers)` checks a body as the API does
(first the SDK's shape, openai_shapes.py; then the rules across fields and items) and
gives the conversation in the canonical form the brain reads (the Messages API's);
`Request.answer(message)` turns the brain's answer into a `response` object (and keeps
it, if asked); openai_responses_stream.py streams it. A problem raises `Refuse` with
OpenAI's error.

What moves where, from the Messages API:
    instructions, system/developer messages -> `system` (instructions first; joined by a blank line)
    input: a string, or a list of items      -> messages (consecutive items of one role merged)
    message items (role user / assistant)     -> text and image blocks
    function_call items {call_id, name, arguments} -> assistant `tool_use` blocks (arguments parsed)
    function_call_output {call_id, output}    -> `tool_result` blocks in a user turn
    tools [{type: function, name, description, parameters}] -> tools {name, description, input_schema}
    tool_choice auto / none / required / {type: function, name} / {type: allowed_tools, mode, tools}
                                              -> auto / none / any / {tool, name} / (those tools, auto or any)
    parallel_tool_calls: false                -> disable_parallel_tool_use: true
    max_output_tokens                         -> max_tokens (default DEFAULT_MAX_TOKENS)
    text.format json_schema / json_object     -> output_config.format (the brain fills the schema)
  and back: the answer's blocks in order as `output` items: text as a `message` item
  (`output_text` parts), each tool_use as a `function_call` item (`call_id` the call's id,
  `arguments` compact JSON); stop_reason max_tokens -> status "incomplete"
  (`incomplete_details.reason` max_output_tokens); usage input/output/total tokens.

State on the server: with `store` (the default) a response is kept, so the next request
can send only what is new with `previous_response_id`: the stored conversation (its input
items and its output) comes first, then the new input. What a continuation does not
inherit: `instructions` (the API's docs say so), and tools, tool_choice and text.format,
which every request sends again. The store (ResponseStore) is bounded: at most
MAX_STORED responses and MAX_STORED_BYTES of them as JSON, the oldest evicted first (an
evicted id reads as one never stored: the API's `previous_response_not_found`); each
response is kept under a hash of the API key that made it, so another key cannot read or
continue it; nothing is kept for a request that failed, or before authentication passed.
`GET /v1/responses/{id}` and `DELETE /v1/responses/{id}` read and forget a stored one.

Deliberate differences from the real API:
- any non-empty model name is served and echoed back (as on Chat Completions);
- only function tools are ever called; the other tool types (web search, file search,
  MCP, shell, custom...) pass validation and are never called; input items of kinds the
  brain cannot read (reasoning, item_reference, computer calls...) are context it ignores;
- `background` answers at once (status "completed"); `prompt` templates and
  `conversation`s are not served: the mock stores neither (it says so in the error);
- `truncation: "auto"` drops the oldest turns until the input fits the mock's window.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Mapping

from miniagent.mock import brain, openai_shapes
from miniagent.mock.openai_chat import (ANSWER_SCHEMA, CHOICE_WITHOUT_TOOLS, CREATED, DEFAULT_MAX_TOKENS,
                                        MAX_CONTEXT, NAME_PATTERN, STREAM_OPTIONS, TOO_MANY_TOKENS, brain_view,
                                        parse_arguments)
from miniagent.mock.openai_wire import api_key, bad_pattern, echo, missing, out_of_range, refuse, too_long
from miniagent.mock.validate import MAX_TOKENS_CAP
from miniagent.tokens import estimate_request

RESPONSES_PATH = "/v1/responses"
MAX_STORED = 1_000                 # ours: responses kept at once
MAX_STORED_BYTES = 32 * 1024 * 1024  # ours: and their size as JSON
MAX_NAME = 64                      # [SDK docstring] a function's and a json_schema format's name
MIN_OUTPUT_TOKENS = 16             # [recalled] max_output_tokens' minimum on this API
MAX_METADATA = 16                  # [SDK docstring] "Set of 16 key-value pairs"
MAX_METADATA_KEY, MAX_METADATA_VALUE = 64, 512  # [SDK docstring]
RANGES = {"temperature": (0, 2), "top_p": (0, 1)}
_NAME = re.compile(r"[a-zA-Z0-9_-]+")  # NAME_PATTERN, used with fullmatch

# [OBS] the API's words (its 400s as clients quote them; param "input", code null)
NO_TOOL_CALL = "No tool call found for function call output with call_id {id}."
NO_TOOL_OUTPUT = "No tool output found for function call {id}."
PREVIOUS_NOT_FOUND = "Previous response with id '{id}' not found."  # param previous_response_id
# [recalled]
NOT_FOUND = "Response with id '{id}' not found."
CONTEXT = "Your input exceeds the context window of this model. Please adjust your input and try again."
JSON_WORD = ("Response input messages must contain the word 'json' in some form to use 'text.format' of type "
             "'json_object'.")
BOTH_STATES = ("Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or "
               "'conversation'.")
# ours
NO_PROMPTS = ("The mock stores no prompt templates, so 'prompt' cannot be served; send 'instructions' and 'input' "
              "instead (and a 'model').")
NO_CONVERSATIONS = ("Conversation with id '{id}' not found. (The mock serves no Conversations API; chain responses "
                    "with 'previous_response_id' instead.)")
UNKNOWN_CHOICE = "Invalid value for 'tool_choice': no function named '{name}' in 'tools' (defined: {names})."


# --- the store ------------------------------------------------------------------------------------


@dataclass
class _Stored:
    owner: str
    data: bytes  # {"response": ..., "items": [...]} as JSON: its size is what it costs


class ResponseStore:
    """Stored responses, bounded: `max_count` of them and `max_bytes` of JSON, the oldest evicted first.
    Each is kept under its owner (a hash of the API key); another owner finds nothing."""

    def __init__(self, max_count: int = MAX_STORED, max_bytes: int = MAX_STORED_BYTES) -> None:
        self.max_count, self.max_bytes = max_count, max_bytes
        self._items: OrderedDict[str, _Stored] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def put(self, response: dict, items: list, owner: str) -> bool:
        """Keep a response and the conversation that led to it; False if it alone is over the byte cap."""
        data = json.dumps({"response": response, "items": items}, ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8", "surrogatepass")
        if len(data) > self.max_bytes:
            return False
        with self._lock:
            self._forget(response["id"])
            self._items[response["id"]] = _Stored(owner, data)
            self.bytes += len(data)
            while len(self._items) > self.max_count or self.bytes > self.max_bytes:
                self._forget(next(iter(self._items)))
        return True

    def get(self, response_id: str, owner: str) -> dict | None:
        """{"response", "items"} (a fresh copy), or None if not stored, evicted, or someone else's."""
        with self._lock:
            stored = self._items.get(response_id)
        if stored is None or stored.owner != owner:
            return None
        return json.loads(stored.data.decode("utf-8", "surrogatepass"))

    def delete(self, response_id: str, owner: str) -> bool:
        with self._lock:
            stored = self._items.get(response_id)
            if stored is None or stored.owner != owner:
                return False
            self._forget(response_id)
            return True

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def _forget(self, response_id: str) -> None:
        stored = self._items.pop(response_id, None)
        if stored is not None:
            self.bytes -= len(stored.data)


def owner_of(headers: Mapping[str, str]) -> str:
    """Whose responses these are: a hash of the API key (the key itself is never kept)."""
    return hashlib.sha256(api_key(headers).encode("utf-8", "surrogatepass")).hexdigest()[:32]


# --- reading a request ----------------------------------------------------------------------------


@dataclass
class Request:
    """A valid Responses API request: the canonical form the brain reads, and what the answer needs."""

    body: dict
    canonical: dict
    items: list  # the whole conversation's input items: the stored chain's, then this request's
    store: ResponseStore
    owner: str
    keep: bool = field(default=True)

    def answer(self, message: dict, cut_json: str | None = None) -> dict:
        """The `response` object for the mock's full Messages API answer; kept in the store if asked."""
        response = response_object(message, self.body, cut_json)
        if self.keep:
            self.store.put(response, self.items, self.owner)
        return response


def read_request(body: Any, store: ResponseStore, headers: Mapping[str, str]) -> Request:
    """The request as the brain reads it, for a valid body; `Refuse` with the API's error otherwise."""
    if not isinstance(body, dict):
        raise refuse(f"The request body must be a JSON object, not {echo(type(body).__name__)}; "
                     'send e.g. {"model": "...", "input": "Hello"}')  # ours
    openai_shapes.check_body(body)
    if body.get("prompt") is not None:
        raise refuse(NO_PROMPTS, "prompt", "invalid_value")
    model = body.get("model")
    if model is None:
        raise missing("model")
    if not model:
        raise refuse("you must provide a model parameter")  # [OBS] Chat Completions' words
    _check_settings(body)
    names = _check_tools(body)
    _check_tool_choice(body, names)
    owner = owner_of(headers)
    prior = _previous_items(body, store, owner)
    items = prior + _input_items(body.get("input"))
    _check_calls(items, len(prior))
    canonical = to_canonical(body, items)
    if (body.get("text") or {}).get("format", {}).get("type") == "json_object" and \
            not any("json" in _text(item.get("content")).lower() for item in items if _is_message(item)):
        raise refuse(JSON_WORD, "input")
    if estimate_request(canonical) > MAX_CONTEXT:
        if body.get("truncation") != "auto":
            raise refuse(CONTEXT, "input", "context_length_exceeded")
        _truncate(canonical)
    return Request(body, canonical, items, store, owner, keep=body.get("store") is not False)


def _check_settings(body: dict) -> None:
    if body.get("previous_response_id") is not None and body.get("conversation") is not None:
        raise refuse(BOTH_STATES, "previous_response_id")
    conversation = body.get("conversation")
    if conversation is not None:
        conversation_id = conversation if isinstance(conversation, str) else conversation.get("id")
        raise refuse(NO_CONVERSATIONS.format(id=echo(conversation_id)), "conversation", "not_found", status=404)
    value = body.get("max_output_tokens")
    if value is not None:
        if value < MIN_OUTPUT_TOKENS:
            raise out_of_range("max_output_tokens", value, low=MIN_OUTPUT_TOKENS)
        if value > MAX_TOKENS_CAP:
            raise refuse(TOO_MANY_TOKENS.format(name="max_output_tokens", n=value, cap=MAX_TOKENS_CAP),
                         "max_output_tokens", "invalid_value")
    for name, (low, high) in RANGES.items():
        value = body.get(name)
        if value is not None and not low <= value <= high:
            raise out_of_range(name, value, low=low, high=high, number="decimal")
    value = body.get("top_logprobs")
    if value is not None and not 0 <= value <= 20:
        raise out_of_range("top_logprobs", value, low=0, high=20)
    if body.get("stream_options") is not None and body.get("stream") is not True:
        raise refuse(STREAM_OPTIONS, "stream_options")
    metadata = body.get("metadata") or {}
    if len(metadata) > MAX_METADATA:
        raise refuse(f"Invalid 'metadata': too many properties. Expected an object with at most {MAX_METADATA} "
                     f"properties, but got an object with {len(metadata)} properties instead.", "metadata",
                     "object_above_max_properties")  # [recalled] the API's pattern
    for key, text in metadata.items():
        if len(key) > MAX_METADATA_KEY:
            raise too_long(f"metadata.{echo(key)}", MAX_METADATA_KEY, len(key))
        if len(text) > MAX_METADATA_VALUE:
            raise too_long(f"metadata.{echo(key)}", MAX_METADATA_VALUE, len(text))
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        _check_name(fmt["name"], "text.format.name")


def _check_name(name: str, at: str) -> str:
    if not _NAME.fullmatch(name):
        raise bad_pattern(at, NAME_PATTERN)
    if len(name) > MAX_NAME:
        raise too_long(at, MAX_NAME, len(name))
    return name


def _check_tools(body: dict) -> list[str]:
    """The function tools' names (the shape has checked each tool)."""
    return [_check_name(tool["name"], f"tools[{i}].name") for i, tool in enumerate(body.get("tools") or [])
            if tool.get("type") == "function"]


def _check_tool_choice(body: dict, names: list[str]) -> None:
    choice = body.get("tool_choice")
    if choice is None or choice in ("auto", "none"):
        return
    if not body.get("tools"):
        raise refuse(CHOICE_WITHOUT_TOOLS, "tool_choice")
    wanted = [choice["name"]] if isinstance(choice, dict) and choice.get("type") == "function" else \
        [t["name"] for t in choice["tools"] if t.get("type") == "function" and isinstance(t.get("name"), str)] \
        if isinstance(choice, dict) and choice.get("type") == "allowed_tools" else []
    for name in wanted:
        if name not in names:
            raise refuse(UNKNOWN_CHOICE.format(name=echo(name), names=", ".join(names) or "none"),
                         "tool_choice", "invalid_value")  # ours


def _previous_items(body: dict, store: ResponseStore, owner: str) -> list:
    previous = body.get("previous_response_id")
    if previous is None:
        return []
    stored = store.get(previous, owner)
    if stored is None:
        raise refuse(PREVIOUS_NOT_FOUND.format(id=echo(previous)), "previous_response_id",
                     "previous_response_not_found")
    return stored["items"] + stored["response"]["output"]


def _input_items(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return copy.deepcopy(value)


def _is_message(item: dict) -> bool:
    return item.get("type", "message") == "message" and "role" in item


def _check_calls(items: list, prior: int) -> None:
    """Each function_call_output answers a function_call before it; each function_call is answered.
    (`prior`: how many of the items came from the stored chain.)"""
    calls: dict[str, bool] = {}
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            parse_arguments(item["arguments"], f"input[{i - prior}].arguments")  # a JSON object, as the brain reads it
            calls.setdefault(item["call_id"], False)
        elif kind == "function_call_output":
            call_id = item.get("call_id")
            if call_id is None:
                raise missing(f"input[{i - prior}].call_id")  # [recalled]
            if call_id not in calls:
                raise refuse(NO_TOOL_CALL.format(id=echo(call_id)), "input")
            calls[call_id] = True
    for call_id, answered in calls.items():
        if not answered:
            raise refuse(NO_TOOL_OUTPUT.format(id=echo(call_id)), "input")


# --- to the canonical form ------------------------------------------------------------------------


def to_canonical(body: dict, items: list) -> dict:
    """The Messages API request the brain reads (wire-format §1.2), from a valid body and its conversation."""
    system: list[str] = [body["instructions"]] if body.get("instructions") else []
    turns: list[dict] = []

    def add(role: str, blocks: list[dict]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ("system", "developer"):
            if _text(item.get("content")):
                system.append(_text(item.get("content")))
        elif kind == "message":
            add("assistant" if item["role"] == "assistant" else "user", _blocks(item.get("content")))
        elif kind == "function_call":
            add("assistant", [{"type": "tool_use", "id": item["call_id"], "name": item["name"],
                               "input": parse_arguments(item["arguments"], "arguments")}])
        elif kind == "function_call_output":
            add("user", [{"type": "tool_result", "tool_use_id": item["call_id"], "content": _text(item["output"])}])
    canonical: dict[str, Any] = {"model": body["model"], "max_tokens": body.get("max_output_tokens")
                                 or DEFAULT_MAX_TOKENS, "messages": turns}
    if system:
        canonical["system"] = "\n\n".join(system)
    tools = [t for t in body.get("tools") or [] if t["type"] == "function"]
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        allowed = {t.get("name") for t in choice["tools"]}
        tools = [t for t in tools if t["name"] in allowed]
    if tools:
        canonical["tools"] = [{"name": t["name"], **({"description": t["description"]} if t.get("description") else {}),
                               "input_schema": t.get("parameters") or {"type": "object", "properties": {}}}
                              for t in tools]
        mapped = _tool_choice(choice, body.get("parallel_tool_calls"))
        if mapped:
            canonical["tool_choice"] = mapped
    _json_format(body, canonical)
    return canonical


def _tool_choice(choice: Any, parallel: Any) -> dict | None:
    if isinstance(choice, str):
        mapped: dict | None = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}[choice]
    elif isinstance(choice, dict) and choice.get("type") == "function":
        mapped = {"type": "tool", "name": choice["name"]}
    elif isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        mapped = {"type": "any" if choice["mode"] == "required" else "auto"}
    else:
        mapped = None  # a hosted tool's choice: the mock calls none of them
    if parallel is False and (mapped is None or mapped["type"] != "none"):
        mapped = {**(mapped or {"type": "auto"}), "disable_parallel_tool_use": True}
    return mapped


def _json_format(body: dict, canonical: dict) -> None:
    """A JSON format, as the brain's structured output reads it (structured.py)."""
    fmt = (body.get("text") or {}).get("format") or {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = fmt.get("schema") or {"type": "object"}
    elif fmt.get("type") == "json_object" and brain.json_schema_for(canonical, canonical["messages"]) is None:
        schema = ANSWER_SCHEMA
    if schema is not None:
        canonical["output_config"] = {"format": {"type": "json_schema", "schema": schema}}


def _truncate(canonical: dict) -> None:
    """`truncation: "auto"`: the oldest turns go until the input fits (a turn that would then open with
    tool results, or with the assistant, goes too)."""
    messages = canonical["messages"]
    while len(messages) > 1 and estimate_request(canonical) > MAX_CONTEXT:
        del messages[0]
        while messages and (messages[0]["role"] == "assistant"
                            or all(b.get("type") == "tool_result" for b in messages[0]["content"])):
            del messages[0]
    if estimate_request(canonical) > MAX_CONTEXT:
        raise refuse(CONTEXT, "input", "context_length_exceeded")


def _text(content: Any) -> str:
    """The text of a string or of content parts (input_text, output_text, refusal), joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    out = []
    for part in content:
        if isinstance(part, dict):
            text = part.get("text") if part.get("type") != "refusal" else part.get("refusal")
            out.append(text if isinstance(text, str) else "")
    return "".join(out)


def _blocks(content: Any) -> list[dict]:
    """A message's content as Messages API blocks: text, and images sent by URL; files carry nothing the brain reads."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out = []
    for part in content or []:
        kind = part.get("type")
        if kind in ("input_text", "output_text", "refusal") and _text([part]):
            out.append({"type": "text", "text": _text([part])})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            url = part["image_url"]
            head, _, data = url.partition(",")
            media = re.fullmatch(r"data:(image/[a-z0-9.+-]+);base64", head)
            out.append({"type": "image", "source": {"type": "base64", "media_type": media.group(1), "data": data}
                        if media else {"type": "url", "url": url}})
    return out


# --- the answer, in the Responses API's shape -----------------------------------------------------


def response_object(message: dict, body: dict, cut_json: str | None = None, status: str | None = None) -> dict:
    """A `response` object from the mock's full Messages API answer. `status`: in_progress for the one a
    stream opens with (no output, no usage yet)."""
    output = output_items(message, cut_json)
    incomplete = message.get("stop_reason") in ("max_tokens", "model_context_window_exceeded", "refusal")
    reason = "content_filter" if message.get("stop_reason") == "refusal" else "max_output_tokens"
    usage = message["usage"]
    prompt, completion = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    text = body.get("text") or {}
    final = status is None
    return {
        "id": "resp_" + str(message["id"]).removeprefix("msg_"),
        "object": "response",
        "created_at": CREATED,
        "status": status or ("incomplete" if incomplete else "completed"),
        "background": bool(body.get("background")),
        "completed_at": CREATED if final and not incomplete else None,
        "error": None,
        "incomplete_details": {"reason": reason} if final and incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "model": body["model"],
        "output": output if final else [],
        "parallel_tool_calls": body.get("parallel_tool_calls") is not False,
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": "default",
        "store": body.get("store") is not False,
        "temperature": body.get("temperature") if body.get("temperature") is not None else 1.0,
        "text": {"format": text.get("format") or {"type": "text"}, "verbosity": text.get("verbosity") or "medium"},
        "tool_choice": body.get("tool_choice") if body.get("tool_choice") is not None else "auto",
        "tools": [_echo_tool(t) for t in body.get("tools") or []],
        "top_logprobs": body.get("top_logprobs") or 0,
        "top_p": body.get("top_p") if body.get("top_p") is not None else 1.0,
        "truncation": body.get("truncation") or "disabled",
        "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens": completion, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": prompt + completion} if final else None,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }


def _echo_tool(tool: dict) -> dict:
    """A tool as the response echoes it: a function tool with its defaults filled in."""
    if tool.get("type") != "function":
        return tool
    return {"type": "function", "name": tool["name"], "description": tool.get("description"),
            "parameters": tool.get("parameters"), "strict": tool.get("strict") is not False,
            **{k: v for k, v in tool.items() if k not in ("type", "name", "description", "parameters", "strict")}}


def output_items(message: dict, cut_json: str | None = None) -> list[dict]:
    """The answer's blocks as output items, in order: each run of text blocks one `message` item, each
    tool_use a `function_call` item. Other blocks (thinking, from a script) are left out."""
    items: list[dict] = []
    content = message.get("content") or []
    cut_off = message.get("stop_reason") == "max_tokens"
    calls = [b for b in content if b.get("type") == "tool_use"]
    for block in content:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": block["text"]}
            if items and items[-1]["type"] == "message":
                items[-1]["content"].append(part)
            else:
                items.append({"id": message["id"], "type": "message", "status": "completed",
                              "content": [part], "role": "assistant"})
        elif block.get("type") == "tool_use":
            cut = cut_json is not None and cut_off and block is calls[-1] and block.get("input") == {}
            call_id = str(block.get("id"))
            items.append({"arguments": cut_json if cut else json.dumps(block.get("input", {}), ensure_ascii=False,
                                                                       separators=(",", ":")),
                          "call_id": call_id, "name": block.get("name"), "type": "function_call",
                          "id": "fc_" + call_id.removeprefix("call_"), "status": "incomplete" if cut else "completed"})
    if cut_off and items and items[-1]["type"] == "message":  # the text was being written when the budget ran out
        items[-1]["status"] = "incomplete"
    return items


def stored(method: str, path: str, store: ResponseStore, headers: Mapping[str, str]) -> dict:
    """`GET /v1/responses/{id}`: the stored response; `DELETE`: forget it (`{"id", "object", "deleted"}`).
    `Refuse` with a 404 if it is not stored, was evicted, or is another key's."""
    response_id = path[len(RESPONSES_PATH) + 1:]
    owner = owner_of(headers)
    if method == "GET":
        found = store.get(response_id, owner)
        if found is not None:
            return found["response"]
    elif store.delete(response_id, owner):
        return {"id": response_id, "object": "response", "deleted": True}  # [recalled]
    raise refuse(NOT_FOUND.format(id=echo(response_id)), status=404)
