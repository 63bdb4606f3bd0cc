"""A `chat.completion` as the stream of chunks OpenAI would have sent for it (wire-format.md §2.5).

`completion_chunks(completion)` is the inverse of the SDK's accumulator (which joins
every string it meets, per choice and per `tool_calls[].index`): accumulating its
chunks gives back the completion's choices, so a streamed answer and a plain one
always agree. Per choice:

    {"role": "assistant", "content": "" (text follows) or null, "refusal": null}   once, first
    {"content": "a few tokens"}                                                     the text, in pieces
    {"tool_calls": [{"index": k, "id", "type": "function",
                     "function": {"name", "arguments": ""}}]}                       a call's first chunk
    {"tool_calls": [{"index": k, "function": {"arguments": "fragment"}}]}           then only fragments
    {} with finish_reason                                                           the last
  then, with `stream_options.include_usage`, a chunk with `choices: []` and the usage
  (every other chunk then carries `"usage": null`, as the SDK's docs say), then `data: [DONE]`.

The role is never repeated and an id or a name never sent twice: the SDK's helper joins
strings, so a repeat would read "assistantassistant". Several calls come one after
the other, each under its own index, which is what a client must keep apart.

Framing is data-only: `data: <json>` and a blank line, no `event:` lines. The pieces
are cut as the Messages stream's are (stream.pieces), so the same request gives the
same bytes; pacing (pacing.schedule) waits before the chunks that carry content. A
mid-stream error is OpenAI's: a chunk `{"error": {...}}` after the 200 (ERROR).
"""

from __future__ import annotations

import json
from typing import Any

from miniagent.mock.pacing import Pacing, schedule
from miniagent.mock.stream import JSON_DELTA_TOKENS, TEXT_DELTA_TOKENS, pieces
from miniagent.tokens import estimate_text

DONE = "[DONE]"  # the last data line; not JSON
# [recalled] the overload's words; the shape is wire-format §2.5's.
ERROR = {"error": {"message": "The server is overloaded or not ready yet.", "type": "server_error", "param": None,
                   "code": None}}
CONTENT_TYPE = "text/event-stream; charset=utf-8"


def completion_chunks(completion: dict, include_usage: bool = False) -> list[Any]:
    """The chunks (dicts, then DONE) that stream `completion`."""
    head = {"id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"], "system_fingerprint": completion.get("system_fingerprint")}
    tail = {"usage": None} if include_usage else {}

    def chunk(index: int, delta: dict, finish: str | None = None) -> dict:
        return {**head, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
                **tail}

    out: list[Any] = []
    for choice in completion["choices"]:
        index, message = choice["index"], choice["message"]
        text = message.get("content")
        out.append(chunk(index, {"role": "assistant", "content": None if text is None else "", "refusal": None}))
        out += [chunk(index, {"content": piece}) for piece in pieces(text or "", TEXT_DELTA_TOKENS)]
        for k, call in enumerate(message.get("tool_calls") or []):
            function = call["function"]
            out.append(chunk(index, {"tool_calls": [{"index": k, "id": call["id"], "type": "function",
                                                     "function": {"name": function["name"], "arguments": ""}}]}))
            out += [chunk(index, {"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
                    for piece in pieces(function["arguments"], JSON_DELTA_TOKENS)]
        out.append(chunk(index, {}, choice["finish_reason"]))
    if include_usage:
        out.append({**head, "choices": [], "usage": completion["usage"]})
    out.append(DONE)
    return out


def waits(chunks: list[Any], pacing: Pacing) -> list[float]:
    """Seconds before each chunk: `first` before the first that carries content, then its tokens / rate."""
    carried = [_carried(item) for item in chunks]
    deltas = [i for i, piece in enumerate(carried) if piece is not None]
    end = next((i for i, item in enumerate(chunks) if _finish(item)), len(chunks) - 1)
    return schedule([estimate_text(p) if p else 0 for p in carried], deltas, end, pacing)


def _delta(item: Any) -> dict:
    return item["choices"][0]["delta"] if isinstance(item, dict) and item.get("choices") else {}


def _carried(item: Any) -> str | None:
    """The text or arguments a chunk adds (None for the role, the finish, the usage and DONE)."""
    delta = _delta(item)
    if delta.get("tool_calls"):
        return delta["tool_calls"][0]["function"]["arguments"]
    return delta["content"] if "content" in delta and "role" not in delta else None


def _finish(item: Any) -> bool:
    return isinstance(item, dict) and bool(item.get("choices")) and item["choices"][0]["finish_reason"] is not None


def frame(item: Any) -> bytes:
    """One chunk on the wire. A lone surrogate (echoed from a request) goes out as the JSON escape it
    came in as, as the plain answers do."""
    data = item if item == DONE else json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return f"data: {data}\n\n".encode("utf-8", "backslashreplace")
