"""Pass 1 of request validation: the schema, as the real API's pydantic models check it.

Every field present, of the right type, no unknown keys at any depth; the first
problem found is reported with the API's path style (`messages.3.content.1.tool_use.input:
Input should be a valid dictionary`) and pydantic's words. `validate.py` runs this
pass, then the rules the schema cannot express.
"""

from __future__ import annotations

import re
from typing import Any, Callable

TOOL_NAME_PATTERN = "^[a-zA-Z0-9_-]{1,128}$"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)  # used with fullmatch: `$` alone would accept a final "\n"
TOOL_USE_ID_PATTERN = "^[a-zA-Z0-9_-]+$"
_TOOL_USE_ID = re.compile(TOOL_USE_ID_PATTERN)  # fullmatch too

# Known top-level fields the mock accepts but does not act on (it has no thinking,
# no caching, no containers). Rejecting them would fail requests the real API serves.
_IGNORED_FIELDS = {"thinking", "service_tier", "cache_control", "output_config", "container", "inference_geo"}
_SAMPLING_FIELDS = {"temperature", "top_p", "top_k"}
_MESSAGES_FIELDS = {"model", "max_tokens", "messages", "system", "stop_sequences", "stream",
                    "metadata", "tools", "tool_choice"} | _IGNORED_FIELDS
_COUNT_TOKENS_FIELDS = {"model", "messages", "system", "tools", "tool_choice",
                        "thinking", "output_config", "cache_control"}


class Reject(Exception):
    """Raised deep inside the checks to stop at the first problem, as the API does."""


def check_schema(body: Any, version: str, count_tokens: bool) -> None:
    """Raise `Reject` with the API's message for the first schema problem of `body`."""
    _check_schema(body, version, count_tokens)


# --- small pydantic-style checks ------------------------------------------------------
# Each raises Reject with the text pydantic would give for `path`.


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _require(obj: dict, key: str, path: str) -> None:
    if key not in obj:
        raise Reject(f"{_join(path, key)}: Field required")


def _no_extras(obj: dict, allowed: set[str], path: str) -> None:
    for key in obj:
        if key not in allowed:
            raise Reject(f"{_join(path, str(key))}: Extra inputs are not permitted")


def _tag(value: Any, path: str, allowed: tuple[str, ...]) -> str:
    """The `type` of a tagged object (a block, a source, a tool_choice), checked against `allowed`."""
    _dict(value, path)
    kind = value.get("type")
    if not isinstance(kind, str):
        raise Reject(f"{path}: Unable to extract tag using discriminator 'type'")
    if kind not in allowed:
        expected = ", ".join(f"'{a}'" for a in allowed)
        raise Reject(f"{path}: Input tag '{kind}' found using 'type' does not match any of the "
                      f"expected tags: {expected}")
    return kind


def _string(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise Reject(f"{path}: Input should be a valid string")


def _integer(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Reject(f"{path}: Input should be a valid integer")


def _number(value: Any, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Reject(f"{path}: Input should be a valid number")


def _boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise Reject(f"{path}: Input should be a valid boolean")


def _list(value: Any, path: str) -> None:
    if not isinstance(value, list):
        raise Reject(f"{path}: Input should be a valid list")


def _dict(value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise Reject(f"{path}: Input should be a valid dictionary")


def _optional_string(value: Any, path: str) -> None:
    if value is not None:
        _string(value, path)


def _optional_list(value: Any, path: str) -> None:
    if value is not None:
        _list(value, path)


def _any(value: Any, path: str) -> None:
    """Accepted as given (documents' citations settings)."""


# --- pass 1: the schema -----------------------------------------------------------


def _check_schema(body: Any, version: str, count_tokens: bool) -> None:
    if not isinstance(body, dict):
        raise Reject("Input should be a valid dictionary (the request body must be a JSON object)")
    required = ("model", "messages") if count_tokens else ("model", "max_tokens", "messages")
    for name in required:
        _require(body, name, "")
    allowed = _COUNT_TOKENS_FIELDS if count_tokens else _MESSAGES_FIELDS
    if version == "2023-06-01" and not count_tokens:
        allowed = allowed | _SAMPLING_FIELDS
    for name, check in _TOP_LEVEL_CHECKS.items():  # the ignored fields have no check
        if name in body and name in allowed:
            check(body[name], name, version)
    _no_extras(body, allowed, "")


def _check_model(value: Any, path: str, version: str) -> None:
    _string(value, path)
    if not value:
        raise Reject(f"{path}: String should have at least 1 character")


def _check_max_tokens(value: Any, path: str, version: str) -> None:
    _integer(value, path)  # its limits are rules of pass 2


def _check_messages(value: Any, path: str, version: str) -> None:
    _list(value, path)
    for i, message in enumerate(value):
        p = f"{path}.{i}"
        _dict(message, p)
        _require(message, "role", p)
        _require(message, "content", p)
        role, content = message["role"], message["content"]
        if role not in ("user", "assistant"):
            raise Reject(f"{p}.role: Input should be 'user' or 'assistant'")
        if isinstance(content, list):
            for j, block in enumerate(content):
                _check_block(block, f"{p}.content.{j}", _MESSAGE_BLOCKS)
                if version == "2026-10-21":
                    _check_2026_block(block, f"{p}.content.{j}", role)
        elif not isinstance(content, str):
            raise Reject(f"{p}.content: Input should be a valid string or a list of content blocks")
        _no_extras(message, {"role", "content"}, p)


def _check_system(value: Any, path: str, version: str) -> None:
    _check_content(value, path, ("text",), "text blocks")


def _check_stop_sequences(value: Any, path: str, version: str) -> None:
    _list(value, path)
    for i, item in enumerate(value):
        _string(item, f"{path}.{i}")


def _check_stream(value: Any, path: str, version: str) -> None:
    _boolean(value, path)


def _check_metadata(value: Any, path: str, version: str) -> None:
    _dict(value, path)
    if value.get("user_id") is not None:
        _string(value["user_id"], f"{path}.user_id")
    _no_extras(value, {"user_id"}, path)


def _check_unit_interval(value: Any, path: str, version: str) -> None:
    _number(value, path)
    if value < 0:
        raise Reject(f"{path}: Input should be greater than or equal to 0")
    if value > 1:
        raise Reject(f"{path}: Input should be less than or equal to 1")


def _check_top_k(value: Any, path: str, version: str) -> None:
    _integer(value, path)
    if value < 0:
        raise Reject(f"{path}: Input should be greater than or equal to 0")


def _check_tools(value: Any, path: str, version: str) -> None:
    _list(value, path)
    for i, tool in enumerate(value):
        _check_tool(tool, f"{path}.{i}")


def _check_tool(tool: Any, path: str) -> None:
    _dict(tool, path)
    kind = tool.get("type", "custom")
    if kind != "custom":
        raise Reject(f"{path}.type: server tools such as {kind!r} are not supported by the mock; "
                      "define a client tool with name, description and input_schema instead")
    p = f"{path}.custom"
    _require(tool, "name", p)
    _require(tool, "input_schema", p)
    name = tool["name"]
    _string(name, f"{p}.name")
    if len(name) > 128:
        raise Reject(f"{p}.name: String should have at most 128 characters")
    if not _TOOL_NAME.fullmatch(name):
        raise Reject(f"{p}.name: String should match pattern '{TOOL_NAME_PATTERN}'")
    if "description" in tool:
        _string(tool["description"], f"{p}.description")
    schema = tool["input_schema"]
    _dict(schema, f"{p}.input_schema")
    _require(schema, "type", f"{p}.input_schema")
    if schema["type"] != "object":
        raise Reject(f"{p}.input_schema.type: Input should be 'object'")
    for key, check in _TOOL_OPTIONS.items():
        if key in tool:
            check(tool[key], f"{p}.{key}")
    _no_extras(tool, {"type", "name", "description", "input_schema", *_TOOL_OPTIONS}, p)


def _check_tool_choice(value: Any, path: str, version: str) -> None:
    kind = _tag(value, path, ("auto", "any", "tool", "none"))
    p = f"{path}.{kind}"
    allowed = {"type"}
    if kind == "tool":
        _require(value, "name", p)
        _string(value["name"], f"{p}.name")
        allowed.add("name")
    if kind != "none":
        allowed.add("disable_parallel_tool_use")
        if "disable_parallel_tool_use" in value:
            _boolean(value["disable_parallel_tool_use"], f"{p}.disable_parallel_tool_use")
    _no_extras(value, allowed, p)


# In the order the API checks them. temperature and top_p are numbers from 0 to 1.
_TOP_LEVEL_CHECKS: dict[str, Callable[[Any, str, str], None]] = {
    "model": _check_model,
    "max_tokens": _check_max_tokens,
    "messages": _check_messages,
    "system": _check_system,
    "stop_sequences": _check_stop_sequences,
    "stream": _check_stream,
    "metadata": _check_metadata,
    "temperature": _check_unit_interval,
    "top_p": _check_unit_interval,
    "top_k": _check_top_k,
    "tools": _check_tools,
    "tool_choice": _check_tool_choice,
}


# --- content blocks -----------------------------------------------------------------

_MESSAGE_BLOCKS = ("text", "image", "document", "tool_use", "tool_result")
_RESULT_BLOCKS = ("text", "image", "document")
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _check_content(value: Any, path: str, allowed: tuple[str, ...], what: str) -> None:
    """A string, or a list of blocks of the `allowed` types."""
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        raise Reject(f"{path}: Input should be a valid string or a list of {what}")
    for j, block in enumerate(value):
        _check_block(block, f"{path}.{j}", allowed)


def _check_block(block: Any, path: str, allowed: tuple[str, ...]) -> None:
    """One content block: a known `type`, its required fields, no unknown keys.

    Errors inside a block name the block type in the path
    (`messages.3.content.1.tool_use.input`), as the real API's do.
    """
    kind = _tag(block, path, allowed)
    p = f"{path}.{kind}"
    required, optional = _BLOCK_FIELDS[kind]
    for name in required:
        _require(block, name, p)
    for name, check in {**required, **optional}.items():
        if name in block:
            check(block[name], f"{p}.{name}")
    _no_extras(block, {"type", *required, *optional}, p)


def _check_2026_block(block: dict, path: str, role: str) -> None:
    """What version 2026-10-21 no longer allows in a message's own blocks (our wording)."""
    if block["type"] == "document" and role == "assistant":
        raise Reject(f"{path}: `document` blocks are not allowed in assistant messages "
                      "on anthropic-version 2026-10-21; move the document to a user message")
    if block["type"] == "text" and role == "user" and block.get("citations"):
        raise Reject(f"{path}: `text` blocks with citations are not allowed in user messages "
                      "on anthropic-version 2026-10-21; remove the citations")


def _image_source(value: Any, path: str) -> None:
    kind = _tag(value, path, ("base64", "url", "file"))
    p = f"{path}.{kind}"
    fields = {"base64": ("media_type", "data"), "url": ("url",), "file": ("file_id",)}[kind]
    for name in fields:
        _require(value, name, p)
        _string(value[name], f"{p}.{name}")
    if kind == "base64" and value["media_type"] not in _IMAGE_TYPES:
        quoted = [f"'{t}'" for t in _IMAGE_TYPES]
        raise Reject(f"{p}.media_type: Input should be {', '.join(quoted[:-1])} or {quoted[-1]}")
    _no_extras(value, {"type", *fields}, p)


def _document_source(value: Any, path: str) -> None:
    """Documents have many source kinds; the mock checks only that there is one."""
    _dict(value, path)
    _require(value, "type", path)


def _result_content(value: Any, path: str) -> None:
    _check_content(value, path, _RESULT_BLOCKS, "content blocks")


def _tool_use_id(value: Any, path: str) -> None:
    """The API checks the ids it is sent back: `toolu_01A...` passes, `call 1` or `id\\n` does not."""
    _string(value, path)
    if not _TOOL_USE_ID.fullmatch(value):
        raise Reject(f"{path}: String should match pattern '{TOOL_USE_ID_PATTERN}'")


def _cache_control(value: Any, path: str) -> None:
    kind = _tag(value, path, ("ephemeral",))
    if "ttl" in value and value["ttl"] not in ("5m", "1h"):
        raise Reject(f"{path}.{kind}.ttl: Input should be '5m' or '1h'")
    _no_extras(value, {"type", "ttl"}, f"{path}.{kind}")


_Check = Callable[[Any, str], None]

# type: ({required field: check}, {optional field: check})
_BLOCK_FIELDS: dict[str, tuple[dict[str, _Check], dict[str, _Check]]] = {
    "text": ({"text": _string}, {"cache_control": _cache_control, "citations": _optional_list}),
    "image": ({"source": _image_source}, {"cache_control": _cache_control}),
    "document": ({"source": _document_source},
                 {"cache_control": _cache_control, "citations": _any, "context": _optional_string,
                  "title": _optional_string}),
    "tool_use": ({"id": _tool_use_id, "name": _string, "input": _dict}, {"cache_control": _cache_control}),
    "tool_result": ({"tool_use_id": _string},
                    {"content": _result_content, "is_error": _boolean, "cache_control": _cache_control}),
}

# A client tool's optional fields besides its description.
_TOOL_OPTIONS: dict[str, _Check] = {
    "cache_control": _cache_control, "strict": _boolean, "input_examples": _list,
    "defer_loading": _boolean, "eager_input_streaming": _boolean, "allowed_callers": _list,
}
