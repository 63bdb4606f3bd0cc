"""What crosses the wire, checked at the border: the request's bytes, the response's shape.

The client trusts neither side blindly. Going out, a body must be real JSON: a NaN,
a lone surrogate ("\\ud800", which Python strings allow and UTF-8 does not) or a
set would make httpx2 fail deep inside with an error naming nothing, so `encode_body`
fails first and names the value. Coming in, a 200 from a broken proxy can hold
anything; `message_problem` says what is wrong with it before the loop trips over
a missing `content` or a `tool_use` without an `id`. `bounded_copy` keeps the
client's records of exchanges small whatever went through them.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Any, AsyncIterable, AsyncIterator, Iterable, Iterator

MAX_RECORD_DEPTH = 40  # deeper structures are recorded as a placeholder


def encode_body(body: Any) -> bytes:
    """The request body as compact UTF-8 JSON; ValueError naming the first value that is not JSON."""
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        raise ValueError(unencodable(body) or "the body cannot be written as JSON") from None


def unencodable(value: Any, path: str = "") -> str | None:
    """Where and why `value` is not JSON, e.g. "messages.0.content: a lone surrogate (\\ud800) at character 3"."""
    stack = [(value, path, 0)]
    seen: set[int] = set()
    while stack:
        item, where, depth = stack.pop()
        here = (where if len(where) <= 100 else where[:100] + "…") or "the body"
        if depth > 500:
            return f"{here}: nested more than 500 levels deep"
        if isinstance(item, str):
            bad = next((i for i, c in enumerate(item) if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                return (f"{here}: a lone surrogate ({item[bad].encode('unicode_escape').decode()}) at character "
                        f"{bad + 1}, which is not valid Unicode text")
        elif isinstance(item, float) and not math.isfinite(item):
            return f"{here}: {item!r} is not a JSON number"
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                return f"{here}: refers to itself (a circular structure)"
            seen.add(id(item))
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in reversed(list(pairs)):
                if isinstance(item, dict) and not (key is None or isinstance(key, (str, int, float, bool))):
                    return f"{here}: the key {key!r} is not a string"
                stack.append((child, f"{where}.{key}" if where else str(key), depth + 1))
        elif not (item is None or isinstance(item, (bool, int, float))):
            return f"{here}: a {type(item).__name__} is not JSON (use str, int, float, bool, None, list or dict)"
    return None


def decompressed(chunks: Iterable[bytes], encoding: str, step: int = 65_536) -> Iterator[bytes]:
    """A body's bytes decompressed at most `step` bytes at a time.

    A 200 kB gzip body can expand to 200 MB; decompressing a chunk in one go (what
    httpx2 does) holds all of it in memory before anyone can count it. Pieces of
    `step` bytes let the reader stop at its size limit. ValueError for an encoding
    that was not asked for (the client asks for gzip and deflate) or a corrupt body.
    """
    decoder = Decompressor(encoding, step)
    for chunk in chunks:
        yield from decoder.feed(chunk)
    yield decoder.flush()


async def adecompressed(chunks: AsyncIterable[bytes], encoding: str, step: int = 65_536) -> AsyncIterator[bytes]:
    """`decompressed` for a body that arrives by `async for`: the same pieces, the same bound."""
    decoder = Decompressor(encoding, step)
    async for chunk in chunks:
        for piece in decoder.feed(chunk):
            yield piece
    yield decoder.flush()


class Decompressor:
    """The state of one body's decompression, fed a chunk at a time (no I/O, so sync and async share it)."""

    def __init__(self, encoding: str, step: int = 65_536) -> None:
        self.encoding, self.step = encoding.strip().lower(), step
        self._decoder = None
        if self.encoding in ("", "identity"):
            return
        if self.encoding not in ("gzip", "x-gzip", "deflate"):
            raise ValueError(f"the body is encoded as {self.encoding!r}, which the client did not ask for")
        self._decoder = zlib.decompressobj(zlib.MAX_WBITS | 16 if "gzip" in self.encoding else zlib.MAX_WBITS)
        self._first = True

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """`chunk` decompressed, `step` bytes at a time: the reader may stop between two pieces."""
        if self._decoder is None:
            yield chunk
            return
        while chunk:
            try:
                piece = self._decoder.decompress(chunk, self.step)
            except zlib.error as exc:
                if not (self._first and self.encoding == "deflate"):
                    raise ValueError(f"the {self.encoding} body is corrupt ({exc})") from None
                self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # some servers send raw deflate
                self._first = False
                continue
            self._first = False
            yield piece
            chunk = self._decoder.unconsumed_tail

    def flush(self) -> bytes:
        return b"" if self._decoder is None else self._decoder.flush()


def decode_json(data: bytes) -> Any:
    """Parsed JSON, or None if the bytes are not JSON (too deep counts as not JSON)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


# --- the shape of a response --------------------------------------------------------


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def message_problem(data: Any) -> str | None:
    """What makes `data` not a Messages API response (wire-format §1.5), or None.

    Checks what a caller relies on: the fields the official SDK requires, the blocks
    the loop reads (text, tool_use), and usage. Unknown keys and block types pass:
    the API adds fields over time.
    """
    if not isinstance(data, dict):
        return f"expected a JSON object, got {_kind(data)}"
    if data.get("type") != "message":
        return f"'type' should be \"message\", got {_short(data.get('type'))}"
    if data.get("role") != "assistant":
        return f"'role' should be \"assistant\", got {_short(data.get('role'))}"
    for key in ("id", "model"):
        if not isinstance(data.get(key), str):
            return f"'{key}' should be a string, got {_kind(data.get(key))}"
    if not (data.get("stop_reason") is None or isinstance(data["stop_reason"], str)):
        return f"'stop_reason' should be a string or null, got {_kind(data['stop_reason'])}"
    content = data.get("content")
    if not isinstance(content, list):
        return f"'content' should be a list of blocks, got {_kind(content)}"
    for i, block in enumerate(content):
        problem = block_problem(block)
        if problem:
            return f"content.{i}: {problem}"
    return usage_problem(data.get("usage"))


def block_problem(block: Any) -> str | None:
    """What makes `block` not a content block the loop can read (text, tool_use), or None."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return f"a block should be an object with a string 'type', got {_short(block)}"
    needs = {"text": {"text": str}, "tool_use": {"id": str, "name": str, "input": dict}}.get(block["type"], {})
    for key, kind in needs.items():
        if not isinstance(block.get(key), kind):
            return f"a {block['type']} block's '{key}' should be {_NAMES[kind]}, got {_kind(block.get(key))}"
    return None


def usage_problem(usage: Any) -> str | None:
    if not isinstance(usage, dict):
        return f"'usage' should be an object, got {_kind(usage)}"
    for key in ("input_tokens", "output_tokens"):
        if not _is_count(usage.get(key)):
            return f"usage.{key} should be a whole number >= 0, got {_short(usage.get(key))}"
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if usage.get(key) is not None and not _is_count(usage[key]):
            return f"usage.{key} should be a whole number >= 0 or null, got {_short(usage[key])}"
    return None


def count_problem(data: Any) -> str | None:
    """What makes `data` not a count_tokens response, or None."""
    if not isinstance(data, dict) or not _is_count(data.get("input_tokens")):
        return f"expected {{\"input_tokens\": <whole number>}}, got {_short(data)}"
    return None


_NAMES = {str: "a string", dict: "an object"}


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null or missing)"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}")


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= limit else text[:limit] + "…"


# --- records ------------------------------------------------------------------------


def bounded_copy(value: Any, max_chars: int, depth: int = 0) -> Any:
    """A copy of JSON-like `value` for a record: long strings clipped, deep nesting cut.

    A record is for reading, so a 5 MB tool result becomes its first `max_chars`
    characters and a note of how many more there were; the caller's data is not touched.
    """
    if isinstance(value, str):
        return value if len(value) <= max_chars else value[:max_chars] + f"... [{len(value) - max_chars:,} more characters]"
    if isinstance(value, (dict, list)) and depth >= MAX_RECORD_DEPTH:
        return f"[... nested more than {MAX_RECORD_DEPTH} levels deep, not recorded]"
    if isinstance(value, dict):
        return {k: bounded_copy(v, max_chars, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [bounded_copy(v, max_chars, depth + 1) for v in value]
    return value
