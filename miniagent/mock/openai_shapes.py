"""The Responses API's request schema, checked in OpenAI's words: the first problem, as the API reports it.

What `POST /v1/responses` accepts is not written here by hand: responses_shapes.json
holds the request body the pinned `openai` SDK can send (every parameter, input item,
content part, tool and tool_choice type), generated from the SDK's `ResponseCreateParams`
by scripts/gen_mock_responses_schema.py (with the few keys the SDK calls required that the
API takes without; its docstring says which and why), and a test checks it is current. The
types are written as in the Messages API's request_shapes.json (scripts/gen_mock_schema.py
says how); this module reads them with OpenAI's validation messages (openai_wire.py) and
paths (`input[2].content[0].type`):

    a key the shape does not have     Unknown parameter: 'input[0].foo'.          [OBS]
    a required key missing            Missing required parameter: 'input[1].call_id'.
    a value of the wrong kind         Invalid type for 'max_output_tokens': expected an integer, but got a string instead.
    a literal not among the allowed   Invalid value: 'bot'. Supported values are: 'user', 'assistant', ...
    an unknown tag (`type`)           the same, with the param at `<path>.type`

A union of shapes that no single key tells apart (an input item: three kinds of message
share `type: "message"`) takes the shapes whose literal keys the value matches (its
`type`, its `role`), tried in the SDK's order; the first one's problem is the one reported.
Read once, on the first request, so `import miniagent` stays light.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from miniagent.mock.openai_wire import OpenAIError, Refuse, invalid_type, invalid_value, missing

SHAPES_FILE = Path(__file__).with_name("responses_shapes.json")


@lru_cache(maxsize=1)
def shapes_data() -> dict:
    """responses_shapes.json, read once."""
    return json.loads(SHAPES_FILE.read_text(encoding="utf-8"))


def check_body(body: dict) -> None:
    """Raise `Refuse` for the first problem of a Responses API body (a dict) against the SDK's shape."""
    data = shapes_data()
    _Checker(data["shapes"]).shape(body, data["root"], "")


def unknown(param: str) -> Refuse:
    """[OBS] `Unknown parameter: 'input[3].status'.` (code unknown_parameter)"""
    return Refuse(OpenAIError(400, f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter"))


_WORDS = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "a boolean"}
_KINDS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "any": lambda v: True,
}


class _Checker:
    def __init__(self, shapes: dict) -> None:
        self.shapes = shapes

    def check(self, value: Any, t: Any, path: str) -> None:
        if isinstance(t, str):
            if t in _KINDS:
                if not _KINDS[t](value):
                    raise invalid_type(path, self.words(t), value)
            else:
                self.shape(value, t, path)
        elif "enum" in t:
            if not any(type(value) is type(v) and value == v for v in t["enum"]):
                if not any(type(v) is type(value) for v in t["enum"]):
                    raise invalid_type(path, self.words(t), value)
                raise invalid_value(path, value, tuple(str(v) for v in t["enum"]))
        elif "list" in t:
            if not isinstance(value, list):
                raise invalid_type(path, self.words(t), value)
            for i, item in enumerate(value):
                self.check(item, t["list"], f"{path}[{i}]")
        elif "dict" in t:
            if not isinstance(value, dict):
                raise invalid_type(path, "an object", value)
            for key, item in value.items():
                self.check(item, t["dict"], _join(path, str(key)))
        elif "tagged" in t:
            self.tagged(value, t, path)
        else:
            self.any_of(value, t["anyOf"], path)

    def shape(self, value: Any, name: str, path: str) -> None:
        shape = self.shapes[name]
        if not isinstance(value, dict):
            raise invalid_type(path or "body", "an object", value)
        fields = shape["fields"]
        if shape.get("extra") != "allow":
            for key in value:
                if key not in fields:
                    raise unknown(_join(path, str(key)))
        for key in shape["required"]:
            if key not in value or (value[key] is None and "null" not in _members(fields[key])):
                raise missing(_join(path, key))
        for key, t in fields.items():
            if key in value and not (value[key] is None and key not in shape["required"]):
                self.check(value[key], t, _join(path, key))

    def tagged(self, value: Any, t: dict, path: str) -> None:
        key, by = t["tagged"], t["by"]
        if not isinstance(value, dict):
            raise invalid_type(path, "an object", value)
        tag = value.get(key, t.get("default"))
        if tag is None:
            raise missing(_join(path, key))
        if not isinstance(tag, str) or tag not in by:
            raise invalid_value(_join(path, key), tag, tuple(by))
        self.shape(value, by[tag], path)

    def any_of(self, value: Any, options: list, path: str) -> None:
        fitting = [o for o in options if self.kind_fits(o, value)]
        if not fitting:
            raise invalid_type(path, self.words({"anyOf": options}), value)
        shapes = [o for o in fitting if isinstance(o, str) and o not in _KINDS]
        if len(shapes) > 1:  # shapes no one key tells apart: the ones this value can be
            tags = tuple(dict.fromkeys(v for o in shapes for v in self.literal(o, "type")))
            if "type" in value and value["type"] not in tags:
                raise invalid_value(_join(path, "type"), value["type"], tags)
            having = [o for o in shapes if set(value) <= set(self.shapes[o]["fields"])]
            matching = [o for o in having if self.literals_match(o, value)]
            chosen = matching or having[:1] or [o for o in shapes if self.literals_match(o, value)][:1] or shapes[:1]
            fitting = [o for o in fitting if o not in shapes or o in chosen]
        first: Refuse | None = None
        for option in fitting:
            try:
                self.check(value, option, path)
                return
            except Refuse as refused:
                first = first or refused
        raise first  # type: ignore[misc]

    def literal(self, name: str, key: str) -> list:
        """The values a key of the shape may take, if it is a literal (or a literal or null)."""
        return [v for m in _members(self.shapes[name]["fields"].get(key)) if isinstance(m, dict) and "enum" in m
                for v in m["enum"]]

    def literals_match(self, name: str, value: dict) -> bool:
        """Whether every literal key of the shape is absent (and optional) or one of its values."""
        shape = self.shapes[name]
        for key in shape["fields"]:
            values = self.literal(name, key)
            if values and ((key in value and value[key] is not None and value[key] not in values)
                           or (key not in value and key in shape["required"])):
                return False
        return True

    def kind_fits(self, t: Any, value: Any) -> bool:
        """Whether a value of this JSON kind can be of type `t` at all."""
        if isinstance(t, str):
            return _KINDS[t](value) if t in _KINDS else isinstance(value, dict)
        if "enum" in t:
            return any(type(v) is type(value) for v in t["enum"])
        if "list" in t:
            return isinstance(value, list)
        if "anyOf" in t:
            return any(self.kind_fits(o, value) for o in t["anyOf"])
        return isinstance(value, dict)

    def words(self, t: Any) -> str:
        """The kind a type expects, as the API's "expected ..." names it."""
        if isinstance(t, str):
            return _WORDS.get(t, "an object")
        if "enum" in t:
            return _WORDS.get({str: "string", int: "integer", float: "number", bool: "boolean"}.get(
                type(t["enum"][0]), ""), "a string")
        if "list" in t:
            item = self.words(t["list"]).split(" ", 1)[-1]
            return f"an array of {item}s" if not item.startswith("one of") else "an array"
        if "anyOf" in t:
            kinds = list(dict.fromkeys(self.words(o) for o in t["anyOf"] if o != "null"))
            if len(kinds) == 1:
                return kinds[0]
            # "one of a string or array of objects", as the API lists a union's kinds
            return "one of " + " or ".join([kinds[0]] + [k.split(" ", 1)[-1] for k in kinds[1:]])
        return "an object"


def _members(t: Any) -> list:
    return t["anyOf"] if isinstance(t, dict) and "anyOf" in t else [t]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
