"""JSON from strangers: parse a request body without letting its shape hurt the mock.

`json.loads`, and everything that walks its result afterwards (validation, the
brain, `copy.deepcopy`, `json.dumps`), goes one call deeper per level of nesting,
so a body of 100,000 `[` would end in a RecursionError somewhere. A real request
nests a handful of levels (body > messages > message > content > block > input,
plus whatever a tool's input or schema adds), so the mock refuses anything deeper
than `MAX_JSON_DEPTH` before parsing it, with a scan that does not recurse.

It also refuses what Python's `json` accepts but JSON does not: `NaN`, `Infinity`.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

# serde_json's default limit. No request needs a tenth of it, and at 128 levels the
# recursive walks above stay a few hundred frames below Python's recursion limit.
MAX_JSON_DEPTH = 128

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # a string literal (brackets inside do not nest)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [0] * 256
_STEP[ord("[")] = _STEP[ord("{")] = 1
_STEP[ord("]")] = _STEP[ord("}")] = -1


def nesting_depth(raw: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest, without parsing it.

    Strings are cut out, everything but brackets is deleted (both in C), and the
    depth is the highest running count of the brackets left.
    """
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets), initial=0))


def loads(raw: bytes) -> Any:
    """A request body parsed, or ValueError with the message the client should read."""
    openers = raw.count(b"[") + raw.count(b"{")  # at most the depth: most bodies need no scan
    depth = nesting_depth(raw) if openers > MAX_JSON_DEPTH else 0
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"The request body nests arrays and objects {depth} levels deep; the mock "
                         f"accepts at most {MAX_JSON_DEPTH}, far more than any request needs")
    try:
        return json.loads(raw, parse_constant=_not_json)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of over 4300 digits
        raise ValueError(f"The request body is not valid JSON ({exc}); send a JSON object "
                         "with content-type: application/json") from None


def loads_text(text: str) -> Any:
    """`loads` for JSON that arrived inside a string (a tool call's `arguments`): the same bounds.
    A lone surrogate in it is kept as the JSON escape it came in as would have been."""
    return loads(text.encode("utf-8", "surrogatepass"))


def too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a Python value nests lists, tuples and dicts more than `limit` deep (iteratively)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")
