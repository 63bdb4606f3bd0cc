"""The Chat Completions surface: would OpenAI accept this request, and the brain's answer in its shape.

`read_request(body)` checks a `POST /v1/chat/completions` body as the API does
(wire-format.md §2.2, §2.3) and returns the same conversation in the canonical form
the brain reads, the Messages API's (system text apart, tool calls as `tool_use`
blocks, tool answers as `tool_result` blocks in a user turn); a problem raises
`Refuse` with OpenAI's error. `completion()` turns the brain's answer back into a
`chat.completion` (§2.4); openai_stream.py streams it. So one brain, one script queue
and one token estimate serve both APIs, and the same question gets the same tool calls
on either.

The translation, both ways:
    system / developer messages       -> `system` (joined by a blank line, wherever they stand)
    assistant `tool_calls`            -> `tool_use` blocks (`arguments`, a JSON string, parsed)
    `tool` messages                   -> `tool_result` blocks; consecutive turns of one role merged
    tools[].function {name, description, parameters} -> tools {name, description, input_schema}
    tool_choice auto / none / required / {function: {name}} -> auto / none / any / {tool, name}
    parallel_tool_calls: false        -> disable_parallel_tool_use: true
    max_completion_tokens, max_tokens -> max_tokens (the first given; default DEFAULT_MAX_TOKENS)
    stop (a string or up to 4)        -> stop_sequences
    response_format json_schema       -> output_config.format (the brain fills the schema)
    response_format json_object       -> the prompt's schema if it gives one, else {"answer": ...}
  and back:
    text blocks -> message.content (null when there are none); tool_use -> tool_calls
    (`call_mock_0001`, arguments as compact JSON; a call cut off by max_tokens carries the
    arguments cut where the budget ran out, as a real cut-off does, finish_reason "length")
    stop_reason end_turn, stop_sequence, pause_turn -> "stop"; max_tokens,
    model_context_window_exceeded -> "length"; tool_use -> "tool_calls"; refusal -> "content_filter"
    usage input/output tokens -> prompt_tokens / completion_tokens / total_tokens

Deliberate differences from the real API:
- any non-empty model name is served and echoed back: OpenAI-compatible servers each have their
  own list, and the mock stands in for all of them;
- unknown top-level fields are ignored, as OpenAI-compatible servers take their own extras (the
  real OpenAI API refuses them, in words not checked here);
- a final assistant message is context, not a prefill: the answer is a new turn (the Messages
  API would continue it);
- the deprecated `functions`, `function_call` and role `function`, `custom` tool calls and an
  `allowed_tools` tool_choice are refused, with a message that names what to use (a mock
  limitation; `custom` tools themselves are taken, and never called);
- `arguments` sent back must be a JSON object (or ""): the canonical `tool_use.input` is one.
  Whether the real API refuses other strings is not known [UNVERIFIED]; a call cut off by
  max_tokens must not be sent back anyway.
- `n` above 1 repeats the one deterministic answer in every choice; `logprobs` is always null.
"""

from __future__ import annotations

import json
import re
from typing import Any

from miniagent.mock import brain, safejson
from miniagent.mock.openai_wire import (bad_pattern, echo, empty_array, invalid_type, invalid_value, missing,
                                        out_of_range, refuse, too_long)
from miniagent.mock.validate import MAX_TOKENS_CAP
from miniagent.tokens import estimate_request

ROLES = ("system", "assistant", "user", "function", "tool", "developer")  # [recalled] the API's order
USER_PARTS = ("text", "image_url", "input_audio", "file")
TEXT_PARTS = ("text",)
ASSISTANT_PARTS = ("text", "refusal")
TOOL_TYPES = ("function", "custom")
CHOICES = ("none", "auto", "required")
FORMATS = ("text", "json_object", "json_schema")
NAME_PATTERN = "^[a-zA-Z0-9_-]+$"  # [OBS] tools[].function.name and tool_calls[].function.name
_NAME = re.compile(r"[a-zA-Z0-9_-]+")  # used with fullmatch
MAX_NAME = 64           # [SDK docstring] a function name's length
MAX_DESCRIPTION = 1024  # [OBS via a proxy] a function description's length
MAX_TOOLS = 128         # [recalled]
MAX_STOP = 4            # [SDK docstring] "Up to 4 sequences"
MAX_N = 128             # [recalled]
MAX_MESSAGES = 100_000  # ours: a bound, far beyond any real conversation
MAX_CONTEXT = 128_000   # the mock's context window on this surface (tokens by miniagent.tokens)
DEFAULT_MAX_TOKENS = 4096
RANGES = {"temperature": (0, 2), "top_p": (0, 1), "presence_penalty": (-2, 2), "frequency_penalty": (-2, 2)}

CREATED = 1_767_225_600  # 2026-01-01T00:00:00Z: `created` is the same in every run, so saved outputs are too
FINGERPRINT = "fp_mock"
FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
                  "model_context_window_exceeded": "length", "tool_use": "tool_calls", "refusal": "content_filter"}
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                 "additionalProperties": False}

# [OBS] the API's words (wire-format §2.3, §5.J); "preceeding" is its spelling.
ORPHAN_TOOL = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
               "'tool_calls'.")
NO_TOOL_CALL_ID = "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'."
UNANSWERED = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
              "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}")
STREAM_OPTIONS = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
NO_MODEL = "you must provide a model parameter"
CONTEXT = ("This model's maximum context length is {cap} tokens. However, your messages resulted in {n} tokens. "
           "Please reduce the length of the messages.")
# [recalled]
UNKNOWN_CALL_ID = "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
NO_CONTENT = "Invalid value for 'content': expected a string, got null."
CHOICE_WITHOUT_TOOLS = "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
PARALLEL_WITHOUT_TOOLS = ("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when "
                          "'tools' are specified.")
JSON_WORD = "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
TOO_MANY_TOKENS = ("{name} is too large: {n}. This model supports at most {cap} completion tokens, whereas you "
                   "provided {n}.")


# --- reading a request ----------------------------------------------------------------------------


def read_request(body: Any) -> dict:
    """The canonical (Messages API) request for a valid Chat Completions body; `Refuse` otherwise.

    The checks run in the order a reader meets the fields: the model, each message, the
    tools and tool_choice, the other settings, then the rules across messages (tool calls
    answered), then the context window."""
    if not isinstance(body, dict):
        raise refuse(f"The request body must be a JSON object, not {echo(type(body).__name__)}; "
                     'send e.g. {"model": "...", "messages": [...]}')  # ours
    model = body.get("model")
    if model is None or model == "":
        raise refuse(NO_MODEL)
    if not isinstance(model, str):
        raise invalid_type("model", "a string", model)
    messages = _check_messages(body)
    names = _check_tools(body.get("tools"))
    _check_tool_choice(body, names)
    _check_settings(body)
    _check_pairs(messages)
    canonical = to_canonical(body)
    tokens = estimate_request(canonical)
    if tokens > MAX_CONTEXT:
        raise refuse(CONTEXT.format(cap=MAX_CONTEXT, n=tokens), "messages", "context_length_exceeded")
    return canonical


def _check_messages(body: dict) -> list[dict]:
    messages = body.get("messages")
    if messages is None:
        raise missing("messages")
    if not isinstance(messages, list):
        raise invalid_type("messages", "an array of objects", messages)
    if not messages:
        raise empty_array("messages")
    if len(messages) > MAX_MESSAGES:
        raise too_long("messages", MAX_MESSAGES, len(messages), "array")
    for i, message in enumerate(messages):
        _check_message(message, i)
    return messages


def _check_message(message: Any, i: int) -> None:
    at = f"messages[{i}]"
    if not isinstance(message, dict):
        raise invalid_type(at, "an object", message)
    role = _required(message, "role", at)
    if not isinstance(role, str):
        raise invalid_type(f"{at}.role", "a string", role)
    if role not in ROLES:
        raise invalid_value(f"{at}.role", role, ROLES)
    if role == "function" or message.get("function_call") is not None:
        raise refuse(f"{at}: the deprecated role 'function' and 'function_call' are not served by the mock; "
                     "use 'tool_calls' and messages with role 'tool'", f"{at}.role", "invalid_value")  # ours
    if message.get("name") is not None and not isinstance(message["name"], str):
        raise invalid_type(f"{at}.name", "a string", message["name"])
    content = message.get("content")
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise invalid_type(f"{at}.tool_calls", "an array of objects", calls)
            if not calls:
                raise empty_array(f"{at}.tool_calls")  # [recalled]
            for j, call in enumerate(calls):
                _check_call(call, f"{at}.tool_calls[{j}]")
        elif content is None:
            raise refuse(NO_CONTENT, f"messages.[{i}].content")
        _check_content(content, at, ASSISTANT_PARTS)
        return
    if "content" not in message or content is None:
        raise missing(f"{at}.content")
    if role == "tool":
        if message.get("tool_call_id") is None:
            raise refuse(NO_TOOL_CALL_ID, f"messages.[{i}].tool_call_id")
        if not isinstance(message["tool_call_id"], str):
            raise invalid_type(f"{at}.tool_call_id", "a string", message["tool_call_id"])
    _check_content(content, at, USER_PARTS if role == "user" else TEXT_PARTS)


def _check_content(content: Any, at: str, parts: tuple[str, ...]) -> None:
    """A string, or an array of parts of the kinds this role may send (null only where the caller allows it)."""
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid_type(f"{at}.content", "one of a string or array of objects", content)
    if not content:
        raise empty_array(f"{at}.content")
    for j, part in enumerate(content):
        where = f"{at}.content[{j}]"
        if not isinstance(part, dict):
            raise invalid_type(where, "an object", part)
        kind = _required(part, "type", where)
        if kind not in parts:
            raise invalid_value(f"{where}.type", kind, parts)
        if kind in ("text", "refusal"):
            _string(part, kind, where)
        elif kind in ("image_url", "input_audio", "file"):
            inner = _required(part, kind, where)
            if not isinstance(inner, dict):
                raise invalid_type(f"{where}.{kind}", "an object", inner)
            if kind == "image_url":
                _string(inner, "url", f"{where}.image_url")


def _check_call(call: Any, at: str) -> None:
    if not isinstance(call, dict):
        raise invalid_type(at, "an object", call)
    _string(call, "id", at)
    kind = _required(call, "type", at)
    if kind != "function":  # a `custom` call: refused here (a mock limitation, see the docstring)
        raise invalid_value(f"{at}.type", kind, ("function",))
    function = _required(call, "function", at)
    if not isinstance(function, dict):
        raise invalid_type(f"{at}.function", "an object", function)
    _check_name(function, f"{at}.function")
    arguments = _string(function, "arguments", f"{at}.function")
    parse_arguments(arguments, f"{at}.function.arguments")


def parse_arguments(arguments: str, at: str = "arguments") -> dict:
    """A call's `arguments` as the canonical `input`: a JSON object ("" reads as {}); else `Refuse` (ours)."""
    if not arguments.strip():
        return {}
    try:
        value = safejson.loads_text(arguments)
    except ValueError as exc:
        reason = str(exc).replace("The request body", "The string")
        raise refuse(f"Invalid '{at}': the arguments are not valid JSON ({reason}). Send back the arguments "
                     "exactly as the model gave them; a call cut off by max_tokens (finish_reason 'length') "
                     "must not be sent back at all.", at, "invalid_value") from None
    if not isinstance(value, dict):
        raise refuse(f"Invalid '{at}': the arguments must be a JSON object, not {type(value).__name__}.",
                     at, "invalid_value")
    return value


def _check_tools(tools: Any) -> list[str]:
    """The function tools' names (custom tools are taken, and never called)."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise invalid_type("tools", "an array of objects", tools)
    if not tools:
        raise empty_array("tools")  # [recalled]
    if len(tools) > MAX_TOOLS:
        raise too_long("tools", MAX_TOOLS, len(tools), "array")
    names = []
    for i, tool in enumerate(tools):
        at = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise invalid_type(at, "an object", tool)
        kind = _required(tool, "type", at)
        if kind not in TOOL_TYPES:
            raise invalid_value(f"{at}.type", kind, TOOL_TYPES)
        if kind == "custom":
            if not isinstance(_required(tool, "custom", at), dict):
                raise invalid_type(f"{at}.custom", "an object", tool["custom"])
            continue
        function = _required(tool, "function", at)
        if not isinstance(function, dict):
            raise invalid_type(f"{at}.function", "an object", function)
        names.append(_check_name(function, f"{at}.function"))
        description = function.get("description")
        if description is not None:
            if not isinstance(description, str):
                raise invalid_type(f"{at}.function.description", "a string", description)
            if len(description) > MAX_DESCRIPTION:
                raise too_long(f"{at}.function.description", MAX_DESCRIPTION, len(description))
        if function.get("parameters") is not None and not isinstance(function["parameters"], dict):
            raise invalid_type(f"{at}.function.parameters", "an object", function["parameters"])
        if function.get("strict") is not None and not isinstance(function["strict"], bool):
            raise invalid_type(f"{at}.function.strict", "a boolean", function["strict"])
    return names


def _check_name(function: dict, at: str) -> str:
    name = _string(function, "name", at)
    if not _NAME.fullmatch(name):
        raise bad_pattern(f"{at}.name", NAME_PATTERN)
    if len(name) > MAX_NAME:
        raise too_long(f"{at}.name", MAX_NAME, len(name))
    return name


def _check_tool_choice(body: dict, names: list[str]) -> None:
    choice = body.get("tool_choice")
    if isinstance(choice, str):
        if choice not in CHOICES:
            raise invalid_value("tool_choice", choice, CHOICES)
    elif isinstance(choice, dict):
        kind = _required(choice, "type", "tool_choice")
        if kind != "function":  # `allowed_tools` and `custom` choices: not served (a mock limitation)
            raise invalid_value("tool_choice.type", kind, ("function",))
        function = _required(choice, "function", "tool_choice")
        if not isinstance(function, dict):
            raise invalid_type("tool_choice.function", "an object", function)
        _string(function, "name", "tool_choice.function")
    elif choice is not None:
        raise invalid_type("tool_choice", "one of a string or object", choice)
    if (choice == "required" or isinstance(choice, dict)) and body.get("tools") is None:
        raise refuse(CHOICE_WITHOUT_TOOLS, "tool_choice")
    if isinstance(choice, dict) and choice["function"]["name"] not in names:
        raise refuse(f"Invalid value for 'tool_choice': no function named '{echo(choice['function']['name'])}' in "
                     f"'tools' (defined: {', '.join(names) or 'none'}).", "tool_choice", "invalid_value")  # ours
    parallel = body.get("parallel_tool_calls")
    if parallel is not None:
        if not isinstance(parallel, bool):
            raise invalid_type("parallel_tool_calls", "a boolean", parallel)
        if body.get("tools") is None:
            raise refuse(PARALLEL_WITHOUT_TOOLS, "parallel_tool_calls")


def _check_settings(body: dict) -> None:
    """The other fields the mock reads, or the API bounds. Unknown fields are ignored (see the docstring)."""
    for name in ("functions", "function_call"):
        if body.get(name) is not None:
            raise refuse(f"'{name}' is deprecated and not served by the mock; use 'tools' and 'tool_choice'",
                         name, "invalid_value")  # ours
    for name in ("max_tokens", "max_completion_tokens"):
        value = _integer(body, name, low=1)
        if value is not None and value > MAX_TOKENS_CAP:
            raise refuse(TOO_MANY_TOKENS.format(name=name, n=value, cap=MAX_TOKENS_CAP), name, "invalid_value")
    _integer(body, "n", low=1, high=MAX_N)
    _integer(body, "seed")
    _integer(body, "top_logprobs", low=0, high=20)
    for name, (low, high) in RANGES.items():
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise invalid_type(name, "a number", value)
        if not low <= value <= high:
            raise out_of_range(name, value, low=low, high=high, number="decimal")
    for name in ("stream", "logprobs", "store"):
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise invalid_type(name, "a boolean", body[name])
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise invalid_type("stream_options", "an object", options)
        if body.get("stream") is not True:
            raise refuse(STREAM_OPTIONS, "stream_options")
        if options.get("include_usage") is not None and not isinstance(options["include_usage"], bool):
            raise invalid_type("stream_options.include_usage", "a boolean", options["include_usage"])
    stop = body.get("stop")
    if isinstance(stop, list):
        if len(stop) > MAX_STOP:
            raise too_long("stop", MAX_STOP, len(stop), "array")
        for k, item in enumerate(stop):
            if not isinstance(item, str):
                raise invalid_type(f"stop[{k}]", "a string", item)
    elif stop is not None and not isinstance(stop, str):
        raise invalid_type("stop", "one of a string or array of strings", stop)
    if body.get("user") is not None and not isinstance(body["user"], str):
        raise invalid_type("user", "a string", body["user"])
    _check_format(body)


def _check_format(body: dict) -> None:
    fmt = body.get("response_format")
    if fmt is None:
        return
    if not isinstance(fmt, dict):
        raise invalid_type("response_format", "an object", fmt)
    kind = _required(fmt, "type", "response_format")
    if kind not in FORMATS:
        raise invalid_value("response_format.type", kind, FORMATS)
    if kind == "json_schema":
        spec = _required(fmt, "json_schema", "response_format")
        if not isinstance(spec, dict):
            raise invalid_type("response_format.json_schema", "an object", spec)
        _check_name(spec, "response_format.json_schema")
        if spec.get("schema") is not None and not isinstance(spec["schema"], dict):
            raise invalid_type("response_format.json_schema.schema", "an object", spec["schema"])
    if kind == "json_object" and not any("json" in _text(m.get("content")).lower() for m in body["messages"]):
        raise refuse(JSON_WORD, "messages")


def _check_pairs(messages: list[dict]) -> None:
    """Each assistant message with `tool_calls` is followed by one `tool` message per call id, before
    anything else; a `tool` message answers a call of that assistant message (wire-format §2.3)."""
    open_at, expected, answered = None, [], set()
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if open_at is None:
                raise refuse(ORPHAN_TOOL, f"messages.[{i}].role")
            if message["tool_call_id"] not in expected:
                raise refuse(UNKNOWN_CALL_ID.format(id=echo(message["tool_call_id"])), f"messages.[{i}].tool_call_id")
            answered.add(message["tool_call_id"])
            continue
        _check_answered(open_at, expected, answered)
        open_at = None
        if message["role"] == "assistant" and message.get("tool_calls"):
            open_at, expected, answered = i, [call["id"] for call in message["tool_calls"]], set()
    _check_answered(open_at, expected, answered)


def _check_answered(open_at: int | None, expected: list[str], answered: set[str]) -> None:
    """The message index the error names is the assistant message's [UNVERIFIED: wire-format §5.J]."""
    left = [call_id for call_id in dict.fromkeys(expected) if call_id not in answered]
    if open_at is not None and left:
        raise refuse(UNANSWERED.format(ids=", ".join(echo(c) for c in left[:20])), f"messages.[{open_at}].role")


def _required(obj: dict, key: str, at: str) -> Any:
    if obj.get(key) is None:
        raise missing(f"{at}.{key}")
    return obj[key]


def _string(obj: dict, key: str, at: str) -> str:
    value = _required(obj, key, at)
    if not isinstance(value, str):
        raise invalid_type(f"{at}.{key}", "a string", value)
    return value


def _integer(body: dict, name: str, low: int | None = None, high: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid_type(name, "an integer", value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise out_of_range(name, value, low=low, high=high)
    return value


# --- to the canonical form ------------------------------------------------------------------------


def to_canonical(body: dict) -> dict:
    """The Messages API request the brain reads (wire-format §1.2), from a valid Chat Completions body."""
    system: list[str] = []
    turns: list[dict] = []

    def add(role: str, blocks: list[dict]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in body["messages"]:
        role, content = message["role"], message.get("content")
        if role in ("system", "developer"):
            if _text(content):
                system.append(_text(content))
        elif role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": _text(content)}])
        elif role == "user":
            add("user", _user_blocks(content))
        else:
            calls = [{"type": "tool_use", "id": call["id"], "name": call["function"]["name"],
                      "input": parse_arguments(call["function"]["arguments"])}
                     for call in message.get("tool_calls") or []]
            text = _text(content)
            add("assistant", ([{"type": "text", "text": text}] if text else []) + calls)
    canonical: dict[str, Any] = {"model": body["model"], "max_tokens": _max_tokens(body), "messages": turns}
    if system:
        canonical["system"] = "\n\n".join(system)
    tools = [tool["function"] for tool in body.get("tools") or [] if tool["type"] == "function"]
    if body.get("tools") is not None:
        canonical["tools"] = [{"name": f["name"], **({"description": f["description"]} if f.get("description") else {}),
                               "input_schema": f.get("parameters") or {"type": "object", "properties": {}}}
                              for f in tools]
        choice = _tool_choice(body.get("tool_choice"), body.get("parallel_tool_calls"))
        if choice:
            canonical["tool_choice"] = choice
    stop = body.get("stop")
    if stop:
        canonical["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    _json_format(body, canonical)
    return canonical


def brain_view(canonical: dict) -> dict:
    """What the brain answers: the request without a final assistant turn, which OpenAI does not
    continue (the Messages API would, as a prefill); the answer is a new turn."""
    messages = canonical["messages"]
    if messages and messages[-1]["role"] == "assistant":
        messages = messages[:-1]
    return {**canonical, "messages": messages, "_surface": "openai"}  # the brain says how to go live from here


def _max_tokens(body: dict) -> int:
    for name in ("max_completion_tokens", "max_tokens"):
        if body.get(name) is not None:
            return body[name]
    return DEFAULT_MAX_TOKENS


def _tool_choice(choice: Any, parallel: Any) -> dict | None:
    mapped = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}.get(choice) \
        if isinstance(choice, str) else {"type": "tool", "name": choice["function"]["name"]} if choice else None
    if parallel is False and (mapped is None or mapped["type"] != "none"):
        mapped = {**(mapped or {"type": "auto"}), "disable_parallel_tool_use": True}
    return mapped


def _json_format(body: dict, canonical: dict) -> None:
    """A JSON format, as the brain's structured output reads it (structured.py)."""
    fmt = body.get("response_format") or {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = fmt["json_schema"].get("schema") or {"type": "object"}
    elif fmt.get("type") == "json_object" and brain.json_schema_for(canonical, canonical["messages"]) is None:
        schema = ANSWER_SCHEMA  # JSON mode with no schema in the prompt: the answer, as a JSON object
    if schema is not None:
        canonical["output_config"] = {"format": {"type": "json_schema", "schema": schema}}


def _text(content: Any) -> str:
    """The text of a string or of text (and refusal) parts, joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(p.get("text") or p.get("refusal") or "" for p in content if isinstance(p, dict)
                   and isinstance(p.get("text") or p.get("refusal") or "", str))


def _user_blocks(content: Any) -> list[dict]:
    """Text and images as Messages API blocks; audio and files carry nothing the brain reads."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out = []
    for part in content:
        if part["type"] == "text" and part["text"]:
            out.append({"type": "text", "text": part["text"]})
        elif part["type"] == "image_url":
            url = part["image_url"]["url"]
            head, _, data = url.partition(",")
            media = re.fullmatch(r"data:(image/[a-z0-9.+-]+);base64", head)
            source = {"type": "base64", "media_type": media.group(1), "data": data} if media else \
                {"type": "url", "url": url}
            out.append({"type": "image", "source": source})
    return out


# --- the answer, in OpenAI's shape ----------------------------------------------------------------


def completion(message: dict, body: dict, cut_json: str | None = None) -> dict:
    """A `chat.completion` (wire-format §2.4) from the mock's full Messages API answer: every choice
    the same (the brain is deterministic), usage counted once per choice."""
    reply = assistant_message(message, cut_json)
    finish = FINISH_REASONS.get(message.get("stop_reason"), "stop")
    n = body.get("n") or 1
    usage = message["usage"]
    prompt, output = usage.get("input_tokens", 0), usage.get("output_tokens", 0) * n
    return {
        "id": "chatcmpl-" + str(message["id"]).removeprefix("msg_"),
        "object": "chat.completion",
        "created": CREATED,
        "model": body["model"],
        "choices": [{"index": i, "message": dict(reply), "logprobs": None, "finish_reason": finish} for i in range(n)],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output,
                  "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def assistant_message(message: dict, cut_json: str | None = None) -> dict:
    """`choices[0].message`: the text (null when none) and the tool calls. Other blocks (thinking, from a
    script) have no place in this API and are left out."""
    content = message.get("content") or []
    texts = [b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str)]
    calls = [b for b in content if b.get("type") == "tool_use"]
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None, "refusal": None}
    if calls:
        out["tool_calls"] = []
        for k, call in enumerate(calls):
            cut = cut_json is not None and k == len(calls) - 1 and call.get("input") == {} \
                and message.get("stop_reason") == "max_tokens"
            arguments = cut_json if cut else json.dumps(call.get("input", {}), ensure_ascii=False,
                                                        separators=(",", ":"))
            out["tool_calls"].append({"id": call.get("id"), "type": "function",
                                      "function": {"name": call.get("name"), "arguments": arguments}})
    out["annotations"] = []
    return out
