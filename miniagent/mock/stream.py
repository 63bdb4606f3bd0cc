"""A final message as the stream of events the API would have sent for it.

`message_events(message)` is the inverse of a client's accumulator: accumulating
the events it returns (append a block on `content_block_start`, add each delta to
`content[index]`, take `stop_reason`, `stop_sequence` and `usage.output_tokens` from
`message_delta`) gives back exactly `message`, same keys in the same order. So every
answer the mock can give, the brain's or a script's, can also be streamed, and the
streamed and plain answers to the same request always agree (wire-format.md §1.7):

    message_start        the message with content [], stop_reason null, usage with the
                         real input_tokens and a small output_tokens
    content_block_start  per block: text starts with "text": "", tool_use with "input": {}
    ping                 once, after the first block starts (as the real API sends it)
    content_block_delta  text_delta pieces of a few tokens; input_json_delta pieces whose
                         concatenation is the input's JSON, the first one ""
    content_block_stop
    message_delta        stop_reason, stop_sequence, the cumulative usage.output_tokens
    message_stop

The pieces are cut deterministically (words grouped up to a few tokens by
`miniagent.tokens`' estimate; tool JSON in smaller fragments, so a broken stream
shows half-formed arguments), so the same request gives the same bytes.

A tool call cut off by `max_tokens` is answered with `"input": {}`: its arguments
never completed. Streamed, the client sees the JSON fragments that fitted and then
the block stops mid-JSON (`cut_json`), which is what a real cut-off looks like, and
what a client's accumulator must turn into `{}`, never into a call to run.

Framing is `miniagent.streaming.encode_event`, shared with the client's parser.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Iterable

from miniagent.streaming import encode_event
from miniagent.tokens import estimate_text

TEXT_DELTA_TOKENS = 4          # a text_delta carries about this many tokens
JSON_DELTA_TOKENS = 2          # an input_json_delta fragment: smaller, as the real API's are
MAX_DELTAS_PER_BLOCK = 4_096   # a huge (scripted) block gets bigger pieces, not more events
LARGE_TEXT = 65_536            # characters: beyond this, pieces are plain slices (linear time)
TOOL_BLOCKS = ("tool_use", "server_tool_use")  # their input streams as input_json_delta
PING = {"type": "ping"}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

_UNITS = re.compile(r"\S+\s*|\s+")  # a word and the spaces after it (or leading spaces): covers every character


def message_events(message: dict, cut_json: str | None = None) -> list[dict]:
    """The events that stream `message`; `cut_json`: the JSON fragments of its last block, a
    tool call cut off by max_tokens (its input is {}), that were sent before the cut."""
    usage = dict(message.get("usage") or {})
    total = usage.get("output_tokens", 0)
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": min(1, total) if isinstance(total, int) else total}}
    events: list[dict] = [{"type": "message_start", "message": start}]
    content = message.get("content") or []
    for index, block in enumerate(content):
        last_cut = cut_json if index == len(content) - 1 else None
        first, deltas = block_parts(block, last_cut)
        events.append({"type": "content_block_start", "index": index, "content_block": first})
        if index == 0:
            events.append(dict(PING))
        events += [{"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas]
        events.append({"type": "content_block_stop", "index": index})
    if not content:
        events.append(dict(PING))
    events.append({"type": "message_delta",
                   "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")},
                   "usage": {"output_tokens": total}})
    if "context_management" in message:  # beta context editing: what the server cleared (context_editing.py)
        events[-1]["context_management"] = message["context_management"]
    events.append({"type": "message_stop"})
    return events


def block_parts(block: dict, cut_json: str | None = None) -> tuple[dict, list[dict]]:
    """A block's `content_block_start` form (its growing fields emptied, in place, so the keys keep
    their order) and its deltas. A block of a kind that does not grow starts whole, with no deltas."""
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {**block, "text": ""}, [{"type": "text_delta", "text": p}
                                       for p in pieces(block["text"], TEXT_DELTA_TOKENS)]
    if kind in TOOL_BLOCKS and isinstance(block.get("input"), dict):
        if cut_json is not None and block["input"] == {}:
            text = cut_json
        else:
            text = json.dumps(block["input"], ensure_ascii=False, separators=(",", ":")) if block["input"] else ""
        return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": p}
                                        for p in ["", *pieces(text, JSON_DELTA_TOKENS)]]
    if kind == "thinking" and isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str):
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"], TEXT_DELTA_TOKENS)]
        return {**block, "thinking": "", "signature": ""}, deltas + [{"type": "signature_delta",
                                                                        "signature": block["signature"]}]
    return dict(block), []


def pieces(text: str, tokens: int) -> list[str]:
    """`text` cut into pieces of about `tokens` tokens each (whole words where they fit), in order:
    `"".join(pieces(text, n)) == text` always. Deterministic, and linear in the text's length."""
    if not text:
        return []
    if len(text) > LARGE_TEXT:  # a huge scripted text: equal slices, at most MAX_DELTAS_PER_BLOCK of them
        size = math.ceil(len(text) / MAX_DELTAS_PER_BLOCK)
        return [text[i:i + size] for i in range(0, len(text), size)]
    tokens = max(tokens, math.ceil(estimate_text(text) / MAX_DELTAS_PER_BLOCK))
    out, current, cost = [], "", 0
    for unit in _units(text, tokens):
        unit_cost = estimate_text(unit)
        if current and cost + unit_cost > tokens:
            out.append(current)
            current, cost = "", 0
        current += unit
        cost += unit_cost
    out.append(current)
    return out


def _units(text: str, tokens: int) -> Iterable[str]:
    """Words with their trailing spaces; a word longer than `tokens` (a long name, a CJK sentence,
    compact JSON) is cut into the longest starts that fit."""
    for word in _UNITS.findall(text):
        # estimate_text counts at least 1 token per 4 characters, so a longer word cannot fit:
        # test the length first, and only short words pay for an estimate
        while len(word) > 4 * tokens or estimate_text(word) > tokens:
            n = _longest_fit(word, tokens)
            yield word[:n]
            word = word[n:]
        yield word


def _longest_fit(word: str, tokens: int) -> int:
    """The length of the longest start of `word` (at least one character) within `tokens`."""
    lo, hi = 1, min(len(word), 4 * tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if estimate_text(word[:mid]) <= tokens else (lo, mid - 1)
    return lo


def encode(event: dict) -> bytes:
    """One event's bytes on the wire, framed by `encode_event` (which writes a lone surrogate,
    echoed back from a request, as the JSON escape it came in as, as the plain answers do)."""
    return encode_event(event)


def chunks(events: list, waits: list[float], framing: Callable[[Any], bytes] = encode) -> list[tuple[float, bytes]]:
    """The events as (seconds to wait first, bytes) chunks: events due at the same moment share
    one chunk, so an unpaced stream leaves in one write and a paced one in one write per delta.
    `framing`: how one event goes on the wire (this API's; openai_stream.frame for OpenAI's)."""
    out: list[tuple[float, list[bytes]]] = []
    for event, wait in zip(events, waits):
        if out and wait <= 0:
            out[-1][1].append(framing(event))
        else:
            out.append((max(0.0, wait), [framing(event)]))
    return [(wait, b"".join(parts)) for wait, parts in out]


def parse_sse(raw: bytes) -> list[dict]:
    """The events in bytes the mock wrote (its own framing: one `data:` line per event), e.g. for a record.
    An OpenAI stream reads the same way, up to its `data: [DONE]`."""
    events = []
    for line in raw.decode("utf-8", "replace").split("\n"):
        if line.startswith("data: "):
            try:
                events.append(json.loads(line[6:]))
            except ValueError:  # a stream cut mid-line by a fault: the last event is not whole
                break
    return events
