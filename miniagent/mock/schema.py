"""Pass 1 of request validation: the schema, as the real API's pydantic models check it.

Every field present, of the right type, no unknown keys at any depth; the first
problem found is reported with the API's path style (`messages.3.content.1.tool_use.input:
Input should be a valid dictionary`) and pydantic's words. `validate.py` runs this
pass, then the rules the schema cannot express.

What the API accepts is not written here by hand: `request_shapes.json` describes every
request body the pinned official SDK can send (each parameter, content block, tool type
and beta name; GA and beta), and this module reads it generically. The file is generated
from the SDK by `scripts/gen_mock_schema.py` (its docstring says how types are written),
and a test checks it is current, so raising the SDK pin shows what the API gained. It is
read the first time a request is checked, so `import miniagent` stays light.

How the file's types read as pydantic does:
- a shape is a model: `<path>.<key>: Field required`, `<path>.<key>: Extra inputs are not
  permitted` (unless the SDK lets it carry keys of its own, like a tool's `input_schema`);
- a union told apart by `type` is a discriminated union: the tag joins the path
  (`tools.0.custom.name`, `tool_choice.tool.name`), an unknown tag is `Input tag 'x' found
  using 'type' does not match any of the expected tags: ...`, and a union with a default
  (a tool without `type` is a `custom` one) takes it when the tag is missing;
- messages (told apart by `role`) read as one model: `messages.0.role: Input should be
  'user', 'assistant' or 'system'`, and no tag in the path (`messages.65.content.1...`);
- any other union takes the first member that fits; a value of a kind none of them takes
  is `Input should be a valid string or a valid list` (our wording: pydantic lists one
  error per member).

What the SDK's types cannot say is checked by hand (`_BY_HAND`, `_SAMPLING`, `_check_messages`):
a tool name's pattern and length, a tool_use id's pattern, a non-empty model name; the
sampling parameters of `2023-06-01` (the SDK that speaks `2026-10-21` has none); what
`2026-10-21` no longer allows in messages; a system message with nothing in it.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

TOOL_NAME_PATTERN = "^[a-zA-Z0-9_-]{1,128}$"
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)  # used with fullmatch: `$` alone would accept a final "\n"
TOOL_USE_ID_PATTERN = "^[a-zA-Z0-9_-]+$"
_TOOL_USE_ID = re.compile(TOOL_USE_ID_PATTERN)  # fullmatch too

SHAPES_FILE = Path(__file__).with_name("request_shapes.json")

# Beta names the API accepts that the pinned SDK's `AnthropicBetaParam` does not list. The
# SDK's type is `str` or its literals, so its list is a suggestion, not the API's; these are
# sent by clients the project pins (requirements-clients.txt) for documented features.
ALSO_KNOWN_BETAS = frozenset({
    "advanced-tool-use-2025-11-20",  # tool search tools, defer_loading (langchain-anthropic 1.7.10; docs)
    "web-fetch-2025-09-10",          # web_fetch_20250910 (langchain-anthropic 1.7.10)
})


class Reject(Exception):
    """Raised deep inside the checks to stop at the first problem, as the API does."""


@lru_cache(maxsize=1)
def shapes_data() -> dict:
    """request_shapes.json, read once."""
    return json.loads(SHAPES_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def known_betas() -> frozenset[str]:
    """The `anthropic-beta` names the mock accepts: the SDK's, and `ALSO_KNOWN_BETAS`."""
    return frozenset(shapes_data()["betas"]) | ALSO_KNOWN_BETAS


def check_schema(body: Any, version: str, count_tokens: bool, beta: bool = False) -> None:
    """Raise `Reject` with the API's message for the first schema problem of `body`.

    `beta`: the request sent known `anthropic-beta` names, so the beta shapes apply
    (they are the GA ones and more); without it a beta-only field is an extra input.
    """
    if not isinstance(body, dict):
        raise Reject("Input should be a valid dictionary (the request body must be a JSON object)")
    data = shapes_data()
    root = data["roots"][("beta_" if beta else "") + ("count_tokens" if count_tokens else "messages")]
    more = _SAMPLING if version == "2023-06-01" and not count_tokens else {}
    _Checker(data["shapes"]).shape(body, root, "", hand=_ROOT, more=more)
    _check_messages(body["messages"], version)


# --- reading the shapes -----------------------------------------------------------------

_ROOT = "<body>"
_WORDS = {"string": "a valid string", "integer": "a valid integer", "number": "a valid number",
          "boolean": "a valid boolean", "list": "a valid list", "dict": "a valid dictionary"}


class _Checker:
    """Checks a value against a type of request_shapes.json, raising `Reject` at the first problem."""

    def __init__(self, shapes: dict) -> None:
        self.shapes = shapes

    def check(self, value: Any, t: Any, path: str) -> None:
        if isinstance(t, str):
            simple = _SIMPLE.get(t)
            if simple:
                simple(value, path)
            else:
                self.shape(value, t, path)
        elif "enum" in t:
            if not any(type(value) is type(v) and value == v for v in t["enum"]):
                raise Reject(f"{path}: Input should be {_either([repr(v) for v in t['enum']])}")
        elif "list" in t:
            _list(value, path)
            for i, item in enumerate(value):
                self.check(item, t["list"], f"{path}.{i}")
        elif "dict" in t:
            _dict(value, path)
            if t["dict"] != "any":
                for key, item in value.items():
                    self.check(item, t["dict"], f"{path}.{key}")
        elif "tagged" in t:
            self.tagged(value, t, path)
        else:
            self.any_of(value, t["anyOf"], path)

    def shape(self, value: Any, name: str, path: str, hand: str | None = None,
              more: dict[str, Callable[[Any, str], None]] | None = None) -> None:
        """A model: required fields, each field's type (then any check by hand), no unknown keys.
        `hand`: the tag (or `_ROOT`) that `_BY_HAND` knows the shape by; `more`: extra fields."""
        shape = self.shapes[name]
        _dict(value, path)
        fields = shape["fields"]
        for key in shape["required"]:
            if key not in value:
                raise Reject(f"{_join(path, key)}: Field required")
        for key, t in fields.items():
            if key in value:
                where = _join(path, key)
                self.check(value[key], t, where)
                by_hand = _BY_HAND.get((hand, key))
                if by_hand:
                    by_hand(value[key], where)
        for key, check in (more or {}).items():
            if key in value:
                check(value[key], _join(path, key))
        if shape.get("extra") != "allow":
            for key in value:
                if key not in fields and key not in (more or {}):
                    raise Reject(f"{_join(path, str(key))}: Extra inputs are not permitted")

    def tagged(self, value: Any, t: dict, path: str) -> None:
        """A union told apart by the literal value of one key."""
        key, by = t["tagged"], t["by"]
        _dict(value, path)
        tag = value.get(key)
        if tag is None and "default" in t:
            tag = t["default"]
        if key != "type":  # messages: one model whose `role` is a literal
            if key not in value:
                raise Reject(f"{path}.{key}: Field required")
            if not isinstance(tag, str) or tag not in by:
                raise Reject(f"{path}.{key}: Input should be {_either([repr(v) for v in by])}")
            self.shape(value, by[tag], path)
            return
        if not isinstance(tag, str):
            raise Reject(f"{path}: Unable to extract tag using discriminator 'type'")
        if tag not in by:
            expected = ", ".join(f"'{v}'" for v in by)
            raise Reject(f"{path}: Input tag '{tag}' found using 'type' does not match any of the "
                         f"expected tags: {expected}")
        self.shape(value, by[tag], f"{path}.{tag}", hand=tag)

    def any_of(self, value: Any, options: list, path: str) -> None:
        """The first member that takes the value; among those of its kind, the first one's error."""
        fitting = [o for o in options if self.takes_kind(o, value)]
        if not fitting:
            words = list(dict.fromkeys(self.words(o) for o in options if o != "null"))
            raise Reject(f"{path}: Input should be {_either(words) if words else 'None'}")
        first: Reject | None = None
        for option in fitting:
            try:
                self.check(value, option, path)
                return
            except Reject as reject:
                first = first or reject
        raise first  # type: ignore[misc]

    def takes_kind(self, t: Any, value: Any) -> bool:
        """Whether values of this JSON kind can be of type `t` at all."""
        if isinstance(t, str):
            if t in _SIMPLE:
                return t == "any" or _KINDS[t](value)
            return isinstance(value, dict)
        if "enum" in t:
            return any(type(value) is type(v) for v in t["enum"])
        if "list" in t:
            return isinstance(value, list)
        if "anyOf" in t:
            return any(self.takes_kind(o, value) for o in t["anyOf"])
        return isinstance(value, dict)  # dict, tagged

    def words(self, t: Any) -> str:
        if isinstance(t, str):
            return _WORDS.get(t, "a valid dictionary") if t != "any" else "any value"
        if "enum" in t:
            return ", ".join(repr(v) for v in t["enum"])
        if "list" in t:
            return _WORDS["list"]
        if "anyOf" in t:
            return " or ".join(self.words(o) for o in t["anyOf"] if o != "null")
        return _WORDS["dict"]


def _either(words: list[str]) -> str:
    """'a', 'b' or 'c', as pydantic lists the values a literal allows."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


# --- small pydantic-style checks ------------------------------------------------------
# Each raises Reject with the text pydantic would give for `path`.


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


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


def _null(value: Any, path: str) -> None:
    if value is not None:
        raise Reject(f"{path}: Input should be None")


def _list(value: Any, path: str) -> None:
    if not isinstance(value, list):
        raise Reject(f"{path}: Input should be a valid list")


def _dict(value: Any, path: str) -> None:
    if not isinstance(value, dict):
        raise Reject(f"{path}: Input should be a valid dictionary")


def _anything(value: Any, path: str) -> None:
    """`object` in the SDK: any JSON value (a JSON schema, a server tool's echoed field)."""


_SIMPLE: dict[str, Callable[[Any, str], None]] = {
    "string": _string, "integer": _integer, "number": _number, "boolean": _boolean, "null": _null,
    "any": _anything,
}
_KINDS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


# --- by hand: what the SDK's types cannot say ---------------------------------------------


def _model_name(value: str, path: str) -> None:
    if not value:
        raise Reject(f"{path}: String should have at least 1 character")


def _tool_name(value: str, path: str) -> None:
    """A client tool's name (an Anthropic-defined tool's is a literal of the SDK's)."""
    if len(value) > 128:
        raise Reject(f"{path}: String should have at most 128 characters")
    if not _TOOL_NAME.fullmatch(value):
        raise Reject(f"{path}: String should match pattern '{TOOL_NAME_PATTERN}'")


def _tool_use_id(value: str, path: str) -> None:
    """The API checks the ids it is sent back: `toolu_01A...` passes, `call 1` or `id\\n` does not."""
    if not _TOOL_USE_ID.fullmatch(value):
        raise Reject(f"{path}: String should match pattern '{TOOL_USE_ID_PATTERN}'")


# (tag of the shape, or _ROOT for the body; field) -> the check after the field's type is right
_BY_HAND: dict[tuple[str, str], Callable[[Any, str], None]] = {
    (_ROOT, "model"): _model_name,
    ("custom", "name"): _tool_name,
    ("tool_use", "id"): _tool_use_id,
}


def _unit_interval(value: Any, path: str) -> None:
    _number(value, path)
    if value < 0:
        raise Reject(f"{path}: Input should be greater than or equal to 0")
    if value > 1:
        raise Reject(f"{path}: Input should be less than or equal to 1")


def _top_k(value: Any, path: str) -> None:
    _integer(value, path)
    if value < 0:
        raise Reject(f"{path}: Input should be greater than or equal to 0")


# Version 2023-06-01 also takes the sampling parameters (not count_tokens); 2026-10-21 does
# not, so there they are extra inputs like any unknown key. temperature and top_p are 0 to 1.
_SAMPLING: dict[str, Callable[[Any, str], None]] = {
    "temperature": _unit_interval, "top_p": _unit_interval, "top_k": _top_k,
}


def _check_messages(messages: list, version: str) -> None:
    """What the shapes allow but the API does not, message by message (after the schema pass)."""
    for i, message in enumerate(messages):
        role = message["role"]
        if role == "system" and "content" not in message and not message.get("output_config"):
            # the SDK: "a message with neither content nor output_config fields is rejected" (our words)
            raise Reject(f"messages.{i}: a `system` message needs `content` or `output_config`")
        content = message.get("content")
        if version == "2026-10-21" and isinstance(content, list):
            for j, block in enumerate(content):
                _check_2026_block(block, f"messages.{i}.content.{j}", role)


def _check_2026_block(block: dict, path: str, role: str) -> None:
    """What version 2026-10-21 no longer allows in a message's own blocks (our wording)."""
    if block["type"] == "document" and role == "assistant":
        raise Reject(f"{path}: `document` blocks are not allowed in assistant messages "
                     "on anthropic-version 2026-10-21; move the document to a user message")
    if block["type"] == "text" and role == "user" and block.get("citations"):
        raise Reject(f"{path}: `text` blocks with citations are not allowed in user messages "
                     "on anthropic-version 2026-10-21; remove the citations")
