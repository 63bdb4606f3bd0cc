"""Structured outputs (wire-format §5.C): JSON answers that follow a JSON schema.

A request asks the mock for JSON in one of three ways, and the brain answers each one
from the question, the way it fills a tool's arguments (reading.py):
- `output_config: {"format": {"type": "json_schema", "schema": {...}}}`, or the older
  top-level `output_format` (beta header `structured-outputs-2025-11-13`): the answer's
  `content[0].text` is JSON valid for the schema;
- a prompt that gives a JSON schema and asks for JSON, as many clients' "JSON modes" do
  (instructor, LangChain's format instructions): the same answer, but nothing was
  guaranteed, so the API checks nothing about that schema either;
- a forced tool call (`tool_choice` any or tool) whose arguments the question does not
  all give: the rest are filled from the tool's `input_schema` here too.

`schema_problem()` checks a schema as the API does before it compiles it into a grammar:
only a subset of JSON Schema is supported, every object needs `"additionalProperties":
false`, and anything else is "a 400 error with details". Texts marked [API] were seen in
real API responses (wire-format §5.C and public issue threads); the others are ours,
written in the same style.

`instance()` builds the JSON: required properties first (as the API emits them), each
from the question (cities, numbers, expressions, quoted strings, the enum option it
names, a value it gives by name, an email or a date it contains) or else a neutral
default, and optional ones only when the question gives them. One free-text property may
carry the question's phrase, one answer-like property the brain's answer; never the whole
question pasted into every string.
"""

from __future__ import annotations

import json
import math
import re
import re._parser as sre_parse  # the standard library's regex parser, to write a string a pattern matches
from typing import Any

from miniagent.mock.reading import (FORMAT_EXAMPLES, STRING_FORMATS, Ask, find_cities, json_type, kind, language,
                                    numbers, placeholder, quoted, system_text, values_for)

# --- which schema a request asks for ----------------------------------------------------------------


def requested(body: dict) -> tuple[str, Any] | None:
    """(path, schema) of the JSON format the request asks for: output_config.format, else output_format."""
    config = body.get("output_config")
    fmt = config.get("format") if isinstance(config, dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and "schema" in fmt:
        return "output_config.format.schema", fmt["schema"]
    fmt = body.get("output_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and "schema" in fmt:
        return "output_format.schema", fmt["schema"]
    return None


def both_formats(body: dict) -> bool:
    """Whether the request sets both `output_format` and `output_config.format`."""
    config = body.get("output_config")
    return body.get("output_format") is not None and isinstance(config, dict) and config.get("format") is not None


_JSON_WORD = re.compile(r"json", re.I)
_MAX_SCAN = 200_000  # characters of a prompt searched for a schema
_MAX_TRIES = 200     # "{" positions tried as the start of one


def prompt_schema(body: dict, question: str) -> dict | None:
    """The JSON schema a prompt gives when it also asks for JSON (a client's "JSON mode"), else None.

    The question is read first, then the system prompt; in each, the last schema wins
    (LangChain's instructions show an example schema before the real one).
    """
    for text in (question, system_text(body)):
        if text and _JSON_WORD.search(text):
            found = _schemas_in(text[:_MAX_SCAN])
            if found:
                return found[-1]
    return None


def _schemas_in(text: str) -> list[dict]:
    decoder, found, pos, tries = json.JSONDecoder(), [], 0, 0
    while tries < _MAX_TRIES and (pos := text.find("{", pos)) >= 0:
        tries += 1
        try:
            obj, end = decoder.raw_decode(text, pos)
        except ValueError:
            pos += 1
            continue
        if _schema_like(obj):
            found.append(obj)
        pos = end
    return found


def _schema_like(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    return isinstance(obj.get("properties"), dict) or (isinstance(obj.get("$ref"), str) and (
        "$defs" in obj or "definitions" in obj)) or (obj.get("type") == "array" and isinstance(obj.get("items"), dict))


# --- checking a schema as the API does ----------------------------------------------------------------

TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
_ANNOTATIONS = {"title", "description", "default", "examples", "$schema", "$id", "$comment", "$anchor",
                "deprecated", "readOnly", "writeOnly"}
_SUPPORTED = {"type", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions",
              "properties", "required", "additionalProperties", "items", "minItems", "format", "pattern"} | _ANNOTATIONS
# Known JSON Schema keywords the API does not support, and the type each belongs to (for the message).
_UNSUPPORTED = {
    "minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number",
    "multipleOf": "number", "minLength": "string", "maxLength": "string", "contentEncoding": "string",
    "contentMediaType": "string", "contentSchema": "string", "maxItems": "array", "uniqueItems": "array",
    "contains": "array", "minContains": "array", "maxContains": "array", "prefixItems": "array",
    "additionalItems": "array", "unevaluatedItems": "array", "patternProperties": "object",
    "propertyNames": "object", "minProperties": "object", "maxProperties": "object",
    "dependentRequired": "object", "dependentSchemas": "object", "dependencies": "object",
    "unevaluatedProperties": "object", "oneOf": None, "not": None, "if": None, "then": None, "else": None,
    "$dynamicRef": None, "$dynamicAnchor": None, "$recursiveRef": None, "$recursiveAnchor": None,
}
# The documented limits of what one request's strict schemas may hold (wire-format §5.C).
MAX_OPTIONAL_PROPERTIES = 24
MAX_UNION_TYPES = 16
MAX_STRICT_TOOLS = 20
TOO_COMPLEX = "Schema is too complex for compilation."  # [API] (the docs' text)


class SchemaProblem(Exception):
    """Raised by the check at the first unsupported feature; its text is the 400's message."""


class Complexity:
    """Optional properties and union types counted across every strict schema of one request."""

    def __init__(self) -> None:
        self.optional = 0
        self.unions = 0

    def too_complex(self) -> bool:
        return self.optional > MAX_OPTIONAL_PROPERTIES or self.unions > MAX_UNION_TYPES


def schema_problem(schema: Any, path: str, complexity: Complexity | None = None) -> str | None:
    """The API's 400 message for a schema it cannot compile, or None. `path` prefixes the message
    (`output_config.format.schema`, `tools.0.custom`); like the API's, it does not say where inside."""
    counted = complexity or Complexity()
    try:
        _Checker(schema, counted).node(schema, ())
    except SchemaProblem as problem:
        return f"{path}: {problem}"
    if complexity is None and counted.too_complex():
        return TOO_COMPLEX
    return None


def _node_types(s: dict) -> list[str]:
    kinds = s.get("type")
    if isinstance(kinds, str):
        return [kinds]
    if isinstance(kinds, list):
        return [k for k in kinds if isinstance(k, str)]
    if "properties" in s:
        return ["object"]
    if "items" in s:
        return ["array"]
    return []


def _primitive(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


class _Checker:
    def __init__(self, root: Any, complexity: Complexity) -> None:
        self.root = root
        self.complexity = complexity
        self.done: set[str] = set()  # references checked all the way down (a DAG is walked once)

    def node(self, s: Any, refs: tuple[str, ...]) -> None:
        if not isinstance(s, dict):
            raise SchemaProblem("JSON schema is invalid: every schema in it must be a JSON object, "
                                f"found {type(s).__name__} {json.dumps(s)[:40]}")  # ours
        types = _node_types(s)
        for key in s:
            if key in _UNSUPPORTED:
                owner = next((t for t in types if t != "null"), None) or _UNSUPPORTED[key]
                hint = "; use 'anyOf'" if key == "oneOf" else ""
                # [API] pattern, e.g. "For 'array' type, property 'maxItems' is not supported"
                where = f"For '{owner}' type, property" if owner else "Property"
                raise SchemaProblem(f"{where} '{key}' is not supported{hint}")
        bad = [t for t in (s["type"] if isinstance(s.get("type"), list) else [s.get("type")])
               if "type" in s and t not in TYPES]
        if bad:
            raise SchemaProblem(f"Type {json.dumps(bad[0])} is not supported; use one of {', '.join(TYPES)}")  # ours
        if isinstance(s.get("type"), list) and len(s["type"]) > 1:
            self.complexity.unions += 1
        self.literals(s)
        for defs in ("$defs", "definitions"):
            if defs in s:
                if not isinstance(s[defs], dict):
                    raise SchemaProblem(f"'{defs}' must be an object of schemas")  # ours
                for name in s[defs]:
                    if s is self.root:
                        self.ref(f"#/{defs}/{_escape(name)}", refs)
                    else:
                        self.node(s[defs][name], refs)
        if "$ref" in s:
            self.ref(s["$ref"], refs)
        for combiner in ("anyOf", "allOf"):
            if combiner in s:
                parts = s[combiner]
                if not isinstance(parts, list) or not parts:
                    raise SchemaProblem(f"'{combiner}' must be a non-empty list of schemas")  # ours
                if combiner == "allOf" and any(isinstance(p, dict) and "$ref" in p for p in parts):
                    raise SchemaProblem("'allOf' combined with '$ref' is not supported")  # ours (docs: not supported)
                if combiner == "anyOf":
                    self.complexity.unions += 1
                for part in parts:
                    self.node(part, refs)
        if "object" in types:
            self.object(s, refs)
        if "array" in types:
            self.array(s, refs)
        if "string" in types:
            self.string(s)

    def literals(self, s: dict) -> None:
        if "enum" in s:
            if not isinstance(s["enum"], list) or not s["enum"]:
                raise SchemaProblem("'enum' must be a non-empty list")  # ours
            if not all(_primitive(v) for v in s["enum"]):
                raise SchemaProblem("Enum values must be strings, numbers, booleans or null: "
                                    "complex types in 'enum' are not supported")  # ours (docs: "complex enums")
        if "const" in s and not _primitive(s["const"]):
            raise SchemaProblem("'const' must be a string, number, boolean or null")  # ours

    def object(self, s: dict, refs: tuple[str, ...]) -> None:
        extra = s.get("additionalProperties", "missing")
        if extra == "missing":
            raise SchemaProblem("For 'object' type, 'additionalProperties' must be explicitly set to false")  # [API]
        if extra is True:
            raise SchemaProblem("For 'object' type, 'additionalProperties: true' is not supported. "
                                "Please set 'additionalProperties' to false")  # [API]
        if extra is not False:
            raise SchemaProblem("For 'object' type, 'additionalProperties' must be false: "
                                "a schema for additional properties is not supported")  # ours
        props = s.get("properties", {})
        if not isinstance(props, dict):
            raise SchemaProblem("'properties' must be an object of schemas")  # ours
        required = s.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaProblem("'required' must be a list of property names")  # ours
        missing = [r for r in required if r not in props]
        if missing:
            raise SchemaProblem(f"Required property '{missing[0]}' is not defined in 'properties' "
                                "(with additionalProperties false it could never be given)")  # ours
        self.complexity.optional += len(set(props) - set(required))
        for prop in props.values():
            self.node(prop, refs)

    def array(self, s: dict, refs: tuple[str, ...]) -> None:
        if "minItems" in s and (isinstance(s["minItems"], bool) or s["minItems"] not in (0, 1)):
            raise SchemaProblem("For 'array' type, 'minItems' values other than 0 or 1 are not supported")  # [API]
        if "items" in s:
            self.node(s["items"], refs)

    def string(self, s: dict) -> None:
        fmt = s.get("format")
        if fmt is not None and fmt not in STRING_FORMATS:
            raise SchemaProblem(f"For 'string' type, format {json.dumps(fmt)[:60]} is not supported; "
                                f"supported formats: {', '.join(STRING_FORMATS)}")  # ours
        if "pattern" in s:
            pattern = s["pattern"]
            if not isinstance(pattern, str):
                raise SchemaProblem("For 'string' type, 'pattern' must be a string")  # ours
            if re.search(r"\(\?<?[=!]|\\[1-9]|\\k<|\(\?P[=>]", pattern):
                raise SchemaProblem(f"For 'string' type, pattern {json.dumps(pattern)[:80]} is not supported: "
                                    "lookaround and backreferences are not available")  # ours
            try:
                re.compile(pattern)
            except (re.error, RecursionError, OverflowError):
                raise SchemaProblem(f"For 'string' type, pattern {json.dumps(pattern)[:80]} "
                                    "is not a valid regular expression") from None  # ours

    def ref(self, ref: Any, refs: tuple[str, ...]) -> None:
        if not isinstance(ref, str):
            raise SchemaProblem("'$ref' must be a string")  # ours
        if not ref.startswith("#"):
            raise SchemaProblem(f"External references are not supported ('$ref': {json.dumps(ref)[:80]}); "
                                "put the definition in '$defs' and refer to it as '#/$defs/...'")  # ours
        if ref in refs:
            raise SchemaProblem(f"Recursive schemas are not supported ('$ref': {json.dumps(ref)[:80]} "
                                "refers back to a schema that contains it)")  # ours (docs: not supported)
        if ref in self.done:
            return
        target = pointer(self.root, ref)
        if target is _MISSING:
            raise SchemaProblem(f"'$ref' {json.dumps(ref)[:80]} does not point to a definition in this schema")  # ours
        self.node(target, refs + (ref,))
        self.done.add(ref)


_MISSING = object()


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def pointer(root: Any, ref: str) -> Any:
    """The part of `root` a local `$ref` ("#", "#/$defs/Name") points to, or _MISSING."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return _MISSING
    node = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


# --- building an instance ------------------------------------------------------------------------------

MAX_DEPTH = 12       # deeper than this (a recursive prompt schema), only the least a value needs
MAX_NODES = 2_000    # values built; beyond, only the least each needs
MAX_ITEMS = 20       # items read from the question for one array
MAX_PADDING = 100    # items added to reach a (prompt schema's) minItems


def answer_ask(question: str, context: str, answer: str, known: dict[str, str]) -> Ask:
    """What a JSON answer is filled from: the question's values, the tool results as context,
    the brain's own answer for one answer-like property, and the facts the conversation states."""
    cities = [c for _, c in find_cities(question)]
    return Ask(question, cities, cities, numbers(question), quoted(question), [], context=context,
               answer=answer, known=dict(known))


def instance(schema: Any, ask: Ask, name: str = "answer") -> Any:
    """A JSON value valid for `schema` (any schema `schema_problem` accepts; a best effort for
    others), filled from `ask`. `name` is what the root value is called (a root string says the answer)."""
    return _Filler(schema, ask).value(schema, name, 0)


def given(schema: dict, ask: Ask, name: str = "answer") -> dict:
    """The properties of an object schema that the question gives values for, each read as the
    brain reads a required one (`instance`), and none of those it would only get a placeholder for.

    For a forced call of a tool whose properties are all optional (instructor's `create_iterable`
    sends `tasks: list[User]` with a default): what a placeholder is depends on nothing but the
    schema and the question's language, so a property that comes out the same from a question
    that says nothing (of that language) was not given. {} when the question gives nothing.
    Values are compared as JSON, written out no further than `MAX_GIVEN` characters: one whose
    references fan out is far larger written out than in memory, and one that large is left out."""
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    every = {**schema, "required": list(props)}
    filled = instance(every, ask, name)
    blank = instance(every, Ask(_BLANK[language(ask.question)], [], [], [], []), name)
    if not isinstance(filled, dict) or not isinstance(blank, dict):
        return {}
    out = {}
    for k, v in filled.items():
        said = dumps(v, MAX_GIVEN)
        if said[1] and (k not in blank or dumps(blank[k], MAX_GIVEN) != said):
            out[k] = v
    return out


_BLANK = {"en": "", "zh": "的"}  # a question that offers nothing, in each language (的 is no content word)
MAX_GIVEN = 100_000  # characters of JSON one property given this way may take


def _singular(name: str) -> str:
    if name.endswith("ies") and len(name) > 4:
        return name[:-3] + "y"
    if name.endswith("s") and not name.endswith("ss") and len(name) > 3:
        return name[:-1]
    return name


class _Filler:
    def __init__(self, root: Any, ask: Ask) -> None:
        self.root = root
        self.ask = ask
        self.nodes = 0
        self.least: dict[Any, tuple[Any, Any]] = {}  # per $ref (or schema): the least value, once the budget is spent

    def resolve(self, schema: Any) -> dict:
        """The schema with its `$ref`s followed and its `allOf` merged into one."""
        s = schema if isinstance(schema, dict) else {}
        for _ in range(32):
            ref = s.get("$ref")
            if not isinstance(ref, str):
                break
            target = pointer(self.root, ref)
            rest = {k: v for k, v in s.items() if k != "$ref"}
            s = {**target, **rest} if isinstance(target, dict) else rest
        parts = s.get("allOf")
        if isinstance(parts, list) and parts:
            merged = {k: v for k, v in s.items() if k != "allOf"}
            for part in parts:
                merged = _merge(merged, self.resolve(part))
            s = merged
        return s

    def value(self, schema: Any, name: str, depth: int) -> Any:
        s = self.resolve(schema)
        self.nodes += 1
        if "const" in s:
            return s["const"]
        if isinstance(s.get("enum"), list) and s["enum"]:
            return self.leaf(s, name)
        branches = s.get("anyOf")
        if isinstance(branches, list) and branches:
            resolved = [self.resolve(b) for b in branches]
            real = [b for b in resolved if "const" in b or "enum" in b or _type(b) != ("null", False)]
            if not real:
                return None
            if len(real) < len(resolved) and _is_leaf(real[0]):  # nullable: null unless the question says
                found = self.found(real[0], name, required=False)
                return None if found is _MISSING else found
            return self.value(real[0], name, depth + 1)
        t, nullable = _type(s)
        if t == "null":
            return None
        if nullable and _is_leaf(s):
            found = self.found(s, name, required=False)
            return None if found is _MISSING else found
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            return self.least_of(schema, depth)
        if t == "object":
            return self.object(s, depth)
        if t == "array":
            return self.array(s, name, depth)
        return self.leaf(s, name)

    def object(self, s: dict, depth: int) -> dict:
        props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
        required = [r for r in dict.fromkeys(s.get("required") or []) if isinstance(r, str) and r in props]
        out = {k: self.value(props[k], k, depth + 1) for k in required}  # required first, as the API emits
        for k, prop in props.items():
            if k not in out:
                found = self.optional(prop, k, depth + 1)
                if found is not _MISSING:
                    out[k] = found
        return out

    def optional(self, prop: Any, name: str, depth: int) -> Any:
        """An optional property's value when the question gives one, else _MISSING (left out)."""
        s = self.resolve(prop)
        if isinstance(s.get("anyOf"), list):  # e.g. Optional[str]: its first branch that is not null
            real = [b for b in map(self.resolve, s["anyOf"]) if "const" in b or "enum" in b or _type(b)[0] != "null"]
            s = real[0] if real else {"const": None}
        if "const" in s:
            return _MISSING
        t, _ = _type(s)
        if t == "array":
            items = self.resolve(s.get("items", {}))
            found = self.collect(items, _singular(name)) if _is_leaf(items) else []
            hi = s.get("maxItems")
            return found[:hi] if found and (not isinstance(hi, int) or hi > 0) else _MISSING
        if _is_leaf(s):
            return self.found(s, name, required=False)
        return _MISSING

    def array(self, s: dict, name: str, depth: int) -> list:
        items = self.resolve(s.get("items", {}))
        lo, hi = _bound(s.get("minItems"), 0), _bound(s.get("maxItems"), None)
        if hi == 0:
            return []
        single = _singular(name)
        if _is_leaf(items):
            out = self.collect(items, single)
            if not out and kind(single, items) in ("topic", "answer", "string", "sentiment", "language"):
                out = [self.leaf(items, single)]
        else:
            out = [self.value(items, single, depth + 1)]
        while len(out) < min(lo, MAX_PADDING):
            out.append(self.value(items, single, depth + 1))
        return out[:hi] if hi is not None else out

    def collect(self, items: dict, name: str) -> list:
        """Every value the question offers for the items of an array (cities, numbers, quoted strings...)."""
        out: list = []
        if isinstance(items.get("enum"), list):
            return [o for o in items["enum"] if values_for(name, {"enum": [o]}, self.ask, False)][:MAX_ITEMS]
        t, _ = _type(items)
        for _ in range(MAX_ITEMS):
            new = [v for v in (_coerce(v, t) for v in values_for(name, items, self.ask, False))
                   if _leaf_ok(v, items) and not any(_same(v, o) for o in out)]
            if not new:
                break
            out += new
        return out[:MAX_ITEMS]

    def found(self, s: dict, name: str, required: bool) -> Any:
        """The first value the question offers that fits the leaf schema, or _MISSING."""
        t, _ = _type(s)
        for v in values_for(name, s, self.ask, required):
            v = _coerce(v, t)
            if _leaf_ok(v, s):
                return v
        return _MISSING

    def leaf(self, s: dict, name: str) -> Any:
        """A value for a string, number, boolean or enum: from the question, else a default; always valid."""
        found = self.found(s, name, required=True)
        if found is not _MISSING:
            return found
        t, _ = _type(s)
        v = _coerce(placeholder(name, s, self.ask), t)
        return v if _leaf_ok(v, s) else _safe(s, t)

    def least_of(self, schema: Any, depth: int) -> Any:
        """The least valid value (no optional properties, the fewest items), memoised per `$ref` and per
        schema, its repeats shared: a schema whose references fan out costs little to build however it
        is made (writing its JSON out may still be huge: see `dumps`)."""
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        key: Any = ref if isinstance(ref, str) else id(schema)
        if key in self.least and (isinstance(key, str) or self.least[key][0] is schema):
            return self.least[key][1]
        s = self.resolve(schema)
        if "const" in s:
            value: Any = s["const"]
        elif isinstance(s.get("enum"), list) and s["enum"]:
            value = s["enum"][0]
        elif isinstance(s.get("anyOf"), list) and s["anyOf"]:
            value = self.least_of(s["anyOf"][0], depth + 1) if depth < 64 else None
        else:
            t, nullable = _type(s)
            props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
            if nullable or t == "null":
                value = None
            elif t == "object":
                value = {k: self.least_of(props[k], depth + 1) if depth < 64 else None
                         for k in dict.fromkeys(s.get("required") or []) if isinstance(k, str) and k in props}
            elif t == "array":
                lo = min(_bound(s.get("minItems"), 0) or 0, MAX_PADDING)
                value = [self.least_of(s.get("items", {}), depth + 1)] * lo if depth < 64 else []  # shared
            else:
                value = _safe(s, t)
        self.least[key] = (schema, value)  # the schema kept too, so its id cannot be reused meanwhile
        return value


def dumps(value: Any, limit: int) -> tuple[str, bool]:
    """(compact JSON of the value, True), or (its first `limit` characters or so, False) when it is
    longer: an instance built from a schema whose references fan out can be far larger written out
    than it is in memory, where its repeats are shared. The API would stop at max_tokens; so does the mock."""
    parts: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            piece = item.text
        elif isinstance(item, dict):
            stack.append(_Raw("}"))
            for n, (k, v) in enumerate(reversed(list(item.items()))):
                stack += [v, _Raw(json.dumps(str(k), ensure_ascii=False) + ":")]
                if n < len(item) - 1:
                    stack.append(_Raw(","))
            piece = "{"
        elif isinstance(item, list):
            stack.append(_Raw("]"))
            for n, v in enumerate(reversed(item)):
                stack.append(v)
                if n < len(item) - 1:
                    stack.append(_Raw(","))
            piece = "["
        else:
            piece = json.dumps(item, ensure_ascii=False)
        parts.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(parts)[:limit], False
    return "".join(parts), True


class _Raw:
    """Text `dumps` writes as it is (punctuation between the values)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def fits(value: Any, schema: Any, root: Any = None, depth: int = 0) -> bool:
    """Whether a value is valid for a schema (the subset `schema_problem` accepts, plus the bounds
    a prompt's or a tool's schema may add): a check of the brain's own answers, not a full validator."""
    root = schema if root is None else root
    if depth > 64:
        return False
    s = schema if isinstance(schema, dict) else {}
    if isinstance(s.get("$ref"), str):
        target = pointer(root, s["$ref"])
        if isinstance(target, dict) and not fits(value, target, root, depth + 1):
            return False
    if isinstance(s.get("allOf"), list) and not all(fits(value, part, root, depth + 1) for part in s["allOf"]):
        return False
    if isinstance(s.get("anyOf"), list) and not any(fits(value, part, root, depth + 1) for part in s["anyOf"]):
        return False
    if not _leaf_ok(value, s):
        return False
    if isinstance(value, dict):
        props = s.get("properties") if isinstance(s.get("properties"), dict) else {}
        if any(r not in value for r in s.get("required") or [] if isinstance(r, str)):
            return False
        if s.get("additionalProperties") is False and any(k not in props for k in value):
            return False
        return all(fits(v, props[k], root, depth + 1) for k, v in value.items() if k in props)
    if isinstance(value, list):
        if not _within(len(value), s.get("minItems"), s.get("maxItems")):
            return False
        return all(fits(v, s.get("items", {}), root, depth + 1) for v in value)
    return True


def _merge(a: dict, b: dict) -> dict:
    """Two schemas that must both hold (allOf), as one: properties and required joined."""
    out = {**b, **a}
    if isinstance(a.get("properties"), dict) or isinstance(b.get("properties"), dict):
        out["properties"] = {**(b.get("properties") or {}), **(a.get("properties") or {})}
    if a.get("required") or b.get("required"):
        out["required"] = list(dict.fromkeys([*(a.get("required") or []), *(b.get("required") or [])]))
    return out


def _type(s: dict) -> tuple[str | None, bool]:
    """(the type a value takes, whether null is allowed too)."""
    kinds = s.get("type")
    if isinstance(kinds, list):
        return json_type(s), "null" in kinds and json_type(s) != "null"
    if isinstance(kinds, str):
        return kinds, False
    if isinstance(s.get("properties"), dict):
        return "object", False
    if "items" in s:
        return "array", False
    return None, False


def _is_leaf(s: dict) -> bool:
    return _type(s)[0] not in ("object", "array") and not isinstance(s.get("anyOf"), list)


def _bound(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b)


def _coerce(v: Any, t: str | None) -> Any:
    """A value read from the text, in the type the schema wants (36.0 -> 36 for an integer)."""
    if t == "integer" and isinstance(v, float) and math.isfinite(v):
        return round(v)
    if t == "string" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    return v


_FORMAT_CHECKS = {
    "date-time": r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})",
    "date": r"\d{4}-\d{2}-\d{2}", "time": r"\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})",
    "duration": r"P(?!$)(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+S)?)?",
    "email": r"[^@\s]+@[^@\s]+\.[^@\s]+", "hostname": r"(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+",
    "uri": r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*", "ipv4": r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)",
    "ipv6": r"[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}


def _leaf_ok(v: Any, s: dict) -> bool:
    """Whether a value fits a leaf schema: enum, const, type, format, pattern, and (in a prompt's
    schema, which nothing checked) length and numeric bounds."""
    if isinstance(s.get("enum"), list) and not any(_same(v, o) or _both_numbers(v, o) and v == o for o in s["enum"]):
        return False
    if "const" in s and not (_same(v, s["const"]) or _both_numbers(v, s["const"]) and v == s["const"]):
        return False
    kinds = s.get("type")
    allowed = kinds if isinstance(kinds, list) else [kinds] if isinstance(kinds, str) else None
    if allowed is not None and not any(_is_type(v, k) for k in allowed):
        return False
    if isinstance(v, str):
        fmt, pattern = s.get("format"), s.get("pattern")
        if fmt in _FORMAT_CHECKS and not re.fullmatch(_FORMAT_CHECKS[fmt], v):
            return False
        try:
            if isinstance(pattern, str) and not re.search(pattern, v):
                return False
        except re.error:
            pass
        if not _within(len(v), s.get("minLength"), s.get("maxLength")):
            return False
    if _both_numbers(v, 0):
        if not _within(v, s.get("minimum"), s.get("maximum")):
            return False
        low, high = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        if _both_numbers(low, 0) and v <= low or _both_numbers(high, 0) and v >= high:
            return False
        step = s.get("multipleOf")
        if _both_numbers(step, 0) and step > 0 and not math.isclose(v / step, round(v / step), abs_tol=1e-9):
            return False
    return True


def _both_numbers(a: Any, b: Any) -> bool:
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))


def _within(n: Any, lo: Any, hi: Any) -> bool:
    return not (_both_numbers(lo, 0) and n < lo) and not (_both_numbers(hi, 0) and n > hi)


def _is_type(v: Any, t: Any) -> bool:
    checks = {"string": lambda: isinstance(v, str), "boolean": lambda: isinstance(v, bool), "null": lambda: v is None,
              "integer": lambda: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda: isinstance(v, (int, float)) and not isinstance(v, bool),
              "object": lambda: isinstance(v, dict), "array": lambda: isinstance(v, list)}
    return checks.get(t, lambda: True)()


def _safe(s: dict, t: str | None) -> Any:
    """The last resort: a value built to fit the leaf schema, whatever the question says."""
    if isinstance(s.get("enum"), list) and s["enum"]:
        return s["enum"][0]
    if "const" in s:
        return s["const"]
    if t in ("integer", "number"):
        return _number_within(s, t)
    if t == "boolean":
        return False
    if t == "null":
        return None
    if isinstance(s.get("pattern"), str):
        made = pattern_example(s["pattern"])
        if made is not None:
            return made
    if s.get("format") in _FORMAT_CHECKS:
        return FORMAT_EXAMPLES[s["format"]]
    lo, hi = _bound(s.get("minLength"), 0) or 0, _bound(s.get("maxLength"), None)
    text = "unknown" + "x" * max(0, lo - 7)
    return text[:hi] if hi is not None else text


def _number_within(s: dict, t: str) -> int | float:
    v: float = 0
    lo, hi, xlo, xhi = (s.get(k) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"))
    if _both_numbers(lo, 0):
        v = max(v, lo)
    if _both_numbers(xlo, 0) and v <= xlo:
        v = xlo + (1 if t == "integer" else 0.5)
    if _both_numbers(hi, 0):
        v = min(v, hi)
    if _both_numbers(xhi, 0) and v >= xhi:
        v = xhi - (1 if t == "integer" else 0.5)
    step = s.get("multipleOf")
    if _both_numbers(step, 0) and step > 0:
        v = math.ceil(v / step) * step
    return math.ceil(v) if t == "integer" else v


# --- a string a pattern matches -------------------------------------------------------------------------

_CATEGORY_CHARS = {"CATEGORY_DIGIT": "0", "CATEGORY_WORD": "a", "CATEGORY_SPACE": " ", "CATEGORY_NOT_DIGIT": "a",
                   "CATEGORY_NOT_WORD": "-", "CATEGORY_NOT_SPACE": "a", "CATEGORY_LINEBREAK": "\n",
                   "CATEGORY_NOT_LINEBREAK": "a"}


def pattern_example(pattern: str) -> str | None:
    """A short string the (simple) regular expression matches, or None: each repeat taken the fewest
    times, each alternative and each character class at its first choice. Checked before it is returned."""
    try:
        made = _emit(sre_parse.parse(pattern), 0)
        return made if made is not None and re.search(pattern, made) else None
    except (re.error, RecursionError, OverflowError, ValueError, TypeError, IndexError):
        return None


def _emit(items: Any, depth: int) -> str | None:
    if depth > 50:
        return None
    out = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(av))
        elif name == "NOT_LITERAL":
            out.append("a" if av != ord("a") else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            char = _class_char(av)
            if char is None:
                return None
            out.append(char)
        elif name == "CATEGORY":
            out.append(_CATEGORY_CHARS.get(str(av), "a"))
        elif name == "BRANCH":
            part = _emit(av[1][0], depth + 1)
            if part is None:
                return None
            out.append(part)
        elif name == "SUBPATTERN":
            part = _emit(av[-1], depth + 1)
            if part is None:
                return None
            out.append(part)
        elif name == "ATOMIC_GROUP":
            part = _emit(av, depth + 1)
            if part is None:
                return None
            out.append(part)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = av
            if low > 1000:
                return None
            part = _emit(item, depth + 1) if low else ""
            if part is None:
                return None
            out.append(part * low)
        elif name == "AT":
            continue
        else:  # backreferences, lookaround: not for the mock to imitate
            return None
    return "".join(out)


def _class_char(av: list) -> str | None:
    """The first character a character class `[...]` accepts."""
    if av and str(av[0][0]) == "NEGATE":
        excluded = av[1:]
        for char in "a0_ -xZ.":
            if not any(_class_has(part, char) for part in excluded):
                return char
        return None
    for op, value in av:
        name = str(op)
        if name == "LITERAL":
            return chr(value)
        if name == "RANGE":
            return chr(value[0])
        if name == "CATEGORY":
            return _CATEGORY_CHARS.get(str(value), "a")
    return None


def _class_has(part: tuple, char: str) -> bool:
    op, value = part
    name = str(op)
    if name == "LITERAL":
        return chr(value) == char
    if name == "RANGE":
        return value[0] <= ord(char) <= value[1]
    if name == "CATEGORY":
        return bool(re.fullmatch(_CATEGORY_RX.get(str(value), "."), char))
    return False


_CATEGORY_RX = {"CATEGORY_DIGIT": r"\d", "CATEGORY_WORD": r"\w", "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_DIGIT": r"\D",
                "CATEGORY_NOT_WORD": r"\W", "CATEGORY_NOT_SPACE": r"\S"}
