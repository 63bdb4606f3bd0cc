"""Prompt caching (wire-format §5.E): what a request's `cache_control` breakpoints save.

The API reads a request in one order, tools, then system, then messages, and a
*breakpoint* (a block with `cache_control`; or, with a top-level `cache_control`, the
last cacheable block) closes a prefix of it. A prefix seen for the first time is
written to the cache (`cache_creation_input_tokens`, split by lifetime in
`usage.cache_creation`); a later request with exactly the same prefix reads it
(`cache_read_input_tokens`) for as long as it lives: 5 minutes, or an hour with
`"ttl": "1h"`, counted again from every use. A breakpoint also finds a prefix cached
at any of the 20 blocks before it (the API's lookback). A prefix shorter than the
model's minimum is not cached, and that is no error. What the request's tool_choice
and thinking settings are is part of the messages' prefix (changing them invalidates
cached messages, not tools or system), as the API's docs say.

`input_tokens` then counts only what was neither read nor written, so
`input_tokens + cache_creation_input_tokens + cache_read_input_tokens` always equals the
uncached `input_tokens` (what `count_tokens` says, which caching never changes). The
three-token request overhead of `miniagent.tokens` is never cached.

The cache belongs to one MockAPI (bounded, emptied by `reset()`), so it works the same
in-process and over HTTP. Its clock is injectable, so a test can let an hour pass at once.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from miniagent.tokens import MESSAGE_OVERHEAD, estimate_block, estimate_request, estimate_text

MAX_BREAKPOINTS = 4         # "up to 4 cache breakpoints"
LOOKBACK_BLOCKS = 20        # a breakpoint finds a prefix cached up to 20 blocks before it
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
MAX_ENTRIES = 10_000        # prefixes kept; the least recently used go first
UNCACHEABLE = ("thinking", "redacted_thinking")  # blocks that cannot carry cache_control

# Minimum cacheable prefix by model, first match wins. wire-format §5.E (third-party copies
# of the docs' table, approximate); the Claude 5 rows from a third-party article of 2026;
# the default (a model none of them names) is ours.
MINIMUM_TOKENS = [
    (r"claude-(?:opus|fable|mythos)-5", 512),
    (r"claude-opus-4-[5-7]|claude-haiku-4-5", 4096),
    (r"claude-sonnet-4-6|claude-3(?:-5)?-haiku|claude-haiku-3", 2048),
    (r"claude-sonnet-4|claude-opus-4|claude-3-7-sonnet|claude-sonnet-5", 1024),
]
DEFAULT_MINIMUM_TOKENS = 1024


def minimum_tokens(model: Any) -> int:
    """The shortest prefix (in tokens) the model caches; shorter ones are simply not cached."""
    for pattern, tokens in MINIMUM_TOKENS:
        if isinstance(model, str) and re.match(pattern, model):
            return tokens
    return DEFAULT_MINIMUM_TOKENS


# --- the request as positions --------------------------------------------------------------------


@dataclass
class _Position:
    """One block of the request in the API's order: the digest of everything up to and including
    it, its cache_control (if it is a breakpoint), and how to count the tokens up to it."""

    digest: bytes
    control: dict | None
    tokens: int | None      # tokens up to and including this block (None: a tool, counted on demand)
    tool: int = -1          # for a tool, its index


def _control(block: Any) -> dict | None:
    """A block's cache_control, or (for a tool_result) that of a block inside its content."""
    if not isinstance(block, dict):
        return None
    if isinstance(block.get("cache_control"), dict):
        return block["cache_control"]
    content = block.get("content") if block.get("type") == "tool_result" else None
    inner = [b["cache_control"] for b in content if isinstance(b, dict) and isinstance(b.get("cache_control"), dict)] \
        if isinstance(content, list) else []
    return inner[-1] if inner else None


def _explicit(block: Any) -> int:
    """How many cache_control markers a block carries (a tool_result's content counts too)."""
    if not isinstance(block, dict):
        return 0
    count = int(isinstance(block.get("cache_control"), dict))
    content = block.get("content") if block.get("type") == "tool_result" else None
    if isinstance(content, list):
        count += sum(isinstance(b, dict) and isinstance(b.get("cache_control"), dict) for b in content)
    return count


def _plain(block: Any) -> Any:
    """A block without its cache_control markers: what the cache compares (the markers are not content)."""
    if not isinstance(block, dict):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if out.get("type") == "tool_result" and isinstance(out.get("content"), list):
        out["content"] = [_plain(b) for b in out["content"]]
    return out


def _chain(digest: bytes, tag: bytes, obj: Any) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(digest + tag + data.encode("utf-8", "surrogatepass")).digest()


def _system_blocks(system: Any) -> list:
    if not system:
        return []
    return [{"type": "text", "text": system}] if isinstance(system, str) else list(system) if isinstance(system, list) else []


def _message_blocks(content: Any) -> list:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _has_breakpoint(body: dict) -> bool:
    """Whether any block _walk reads carries a cache_control, or the request one at the top level."""
    if isinstance(body.get("cache_control"), dict):
        return True
    blocks = [*(body.get("tools") or []), *_system_blocks(body.get("system"))]
    blocks += [b for m in body.get("messages") or [] if isinstance(m, dict) for b in _message_blocks(m.get("content"))]
    return any(_control(block) is not None for block in blocks)


def _walk(body: dict) -> list[_Position]:
    """Every block of the request in the API's order, with its prefix's digest, breakpoint and tokens."""
    digest = hashlib.sha256(b"model:" + str(body.get("model")).encode("utf-8", "surrogatepass")).digest()
    out: list[_Position] = []
    tools = body.get("tools") or []
    for k, tool in enumerate(tools):
        digest = _chain(digest, b"tool", _plain(tool))
        out.append(_Position(digest, _control(tool), None, k))
    running = estimate_text(_compact(tools)) if tools else 0
    for block in _system_blocks(body.get("system")):
        digest = _chain(digest, b"system", _plain(block))
        running += estimate_block(block) if isinstance(block, dict) else 0
        out.append(_Position(digest, _control(block), running))
    # settings that invalidate cached messages, but not cached tools or system
    digest = _chain(digest, b"settings", {"tool_choice": body.get("tool_choice"), "thinking": body.get("thinking")})
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        digest = _chain(digest, b"role", message.get("role"))
        running += MESSAGE_OVERHEAD
        for block in _message_blocks(message.get("content")):
            digest = _chain(digest, b"block", _plain(block))
            running += estimate_block(block) if isinstance(block, dict) else 0
            out.append(_Position(digest, _control(block), running))
    automatic = body.get("cache_control")
    if isinstance(automatic, dict) and out:
        target = _automatic_target(body, out)
        if out[target].control is None:
            out[target].control = automatic
    return out


def _automatic_target(body: dict, positions: list[_Position]) -> int:
    """The position a top-level cache_control marks: the last cacheable block (no thinking)."""
    kinds = [b.get("type") if isinstance(b, dict) else None
             for m in body.get("messages") or [] if isinstance(m, dict) for b in _message_blocks(m.get("content"))]
    first_message = len(positions) - len(kinds)
    for n in range(len(kinds) - 1, -1, -1):
        if kinds[n] not in UNCACHEABLE:
            return first_message + n
    return max(first_message - 1, 0)


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)  # as tokens.py counts tools


def count_breakpoints(body: dict) -> int:
    """The blocks with cache_control, counted as the API's limit counts them (a top-level
    cache_control is one more, unless the block it marks has its own)."""
    explicit = sum(_explicit(t) for t in body.get("tools") or [])
    system = body.get("system")
    explicit += sum(_explicit(b) for b in system) if isinstance(system, list) else 0
    last = None
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            for block in _message_blocks(message.get("content")):
                explicit += _explicit(block)
                if not (isinstance(block, dict) and block.get("type") in UNCACHEABLE):
                    last = block
    if isinstance(body.get("cache_control"), dict) and not _explicit(last):
        explicit += 1
    return explicit


# --- the cache ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheUsage:
    """What caching did for one request, in tokens."""

    read: int
    created_5m: int
    created_1h: int

    @property
    def created(self) -> int:
        return self.created_5m + self.created_1h


class PromptCache:
    """The prefixes one MockAPI has cached, each with the moment it expires."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_entries: int = MAX_ENTRIES) -> None:
        self.clock = clock
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, tuple[float, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def account(self, body: dict) -> CacheUsage | None:
        """Read and write the request's prefixes; None when it has no breakpoint at all (its usage
        then shows no cache fields beyond the two zeros every response has)."""
        if not _has_breakpoint(body):  # most requests: no hashing of every block's prefix to find none
            return None
        positions = _walk(body)
        breakpoints = [i for i, p in enumerate(positions) if p.control is not None]
        if not breakpoints:
            return None
        now = self.clock()
        tools_tokens = _ToolsTokens(body.get("tools") or [])

        def tokens(i: int) -> int:
            p = positions[i]
            return tools_tokens(p.tool) if p.tokens is None else p.tokens

        hit = -1
        for b in breakpoints:
            for q in range(b, max(b - LOOKBACK_BLOCKS, -1), -1):
                if q <= hit:
                    break
                if self._live(positions[q].digest, now):
                    hit = q
                    break
        read = tokens(hit) if hit >= 0 else 0
        created = {"5m": 0, "1h": 0}
        done, minimum = read, minimum_tokens(body.get("model"))
        for b in breakpoints:
            upto = tokens(b)
            if b <= hit or upto < minimum or upto <= done:
                continue
            ttl = positions[b].control.get("ttl") if positions[b].control.get("ttl") in TTL_SECONDS else "5m"
            created[ttl] += upto - done
            done = upto
            self._store(positions[b].digest, now, ttl)
        if hit >= 0:
            self._store(positions[hit].digest, now, self._entries[positions[hit].digest][1])  # a use refreshes it
        total = estimate_request(body)
        if read + created["5m"] + created["1h"] > total:  # cannot happen (tokens never exceed the total)
            raise AssertionError("cached more tokens than the request holds")
        return CacheUsage(read, created["5m"], created["1h"])

    def _live(self, digest: bytes, now: float) -> bool:
        entry = self._entries.get(digest)
        if entry is None:
            return False
        if entry[0] <= now:
            del self._entries[digest]
            return False
        return True

    def _store(self, digest: bytes, now: float, ttl: str) -> None:
        self._entries[digest] = (now + TTL_SECONDS[ttl], ttl)
        self._entries.move_to_end(digest)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


class _ToolsTokens:
    """Tokens of the tools up to and including tool k, as tokens.py counts the whole list (its compact
    JSON): computed only for the positions asked about, so many tools cost little."""

    def __init__(self, tools: list) -> None:
        self.tools = tools
        self.memo: dict[int, int] = {}

    def __call__(self, k: int) -> int:
        if k not in self.memo:
            self.memo[k] = estimate_text(_compact(self.tools[:k + 1]))
        return self.memo[k]
