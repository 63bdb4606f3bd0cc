"""An OpenAI-compatible server in a few functions, for tests: a canonical message in OpenAI's shapes.

`completion(message)` is the `chat.completion` a server would send for a canonical
(Messages API) message, `chunks(message)` its stream, `sse(chunks)` the bytes on the
wire. They are the inverse of `providers.from_openai_response` and `ChunkTranslator`,
written independently of them, so a round trip through both checks both.
`handler(...)` makes an `httpx2.MockTransport` answer with a given list of replies.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import httpx2

from miniagent.providers import FINISH_REASONS

CREATED = 1_767_225_600


def usage_of(usage: dict) -> dict:
    cached = usage.get("cache_read_input_tokens") or 0
    out = {"prompt_tokens": usage["input_tokens"] + cached, "completion_tokens": usage["output_tokens"],
           "total_tokens": usage["input_tokens"] + cached + usage["output_tokens"]}
    if cached:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    return out


def completion(message: dict) -> dict:
    """The non-streamed Chat Completions response for a canonical message."""
    blocks = message["content"]
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None, "refusal": None}
    thinking = "".join(b["thinking"] for b in blocks if b["type"] == "thinking")
    if thinking:
        reply["reasoning_content"] = thinking
    calls = [{"id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
             for b in blocks if b["type"] == "tool_use"]
    if calls:
        reply["tool_calls"] = calls
    return {"id": message["id"], "object": "chat.completion", "created": CREATED, "model": message["model"],
            "choices": [{"index": 0, "message": reply, "logprobs": None,
                         "finish_reason": FINISH_REASONS[message["stop_reason"]]}],
            "usage": usage_of(message["usage"]), "system_fingerprint": "fp_test"}


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def chunks(message: dict, *, size: int = 3, interleave: bool = False, usage: bool = True,
           arguments: dict[int, str] | None = None) -> list[dict]:
    """The stream of a canonical message: role chunk, reasoning, text, tool-call fragments per index,
    finish, usage. `interleave`: the calls' argument fragments alternate between calls.
    `arguments`: raw argument text for some calls (by position), e.g. broken JSON."""
    base = {"id": message["id"], "object": "chat.completion.chunk", "created": CREATED, "model": message["model"]}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    for block in message["content"]:
        if block["type"] == "thinking":
            out += [chunk({"reasoning_content": p}) for p in pieces(block["thinking"], size) if p]
        elif block["type"] == "text":
            out += [chunk({"content": p}) for p in pieces(block["text"], size) if p]
    calls = [b for b in message["content"] if b["type"] == "tool_use"]
    fragments = []
    for i, call in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": call["name"], "arguments": ""}}]}))
        text = (arguments or {}).get(i, json.dumps(call["input"], ensure_ascii=False))
        fragments.append([chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                          for p in pieces(text, size)])
    if interleave:
        while any(fragments):
            for queue in fragments:
                if queue:
                    out.append(queue.pop(0))
    else:
        out += [c for queue in fragments for c in queue]
    out.append(chunk({}, FINISH_REASONS[message["stop_reason"]]))
    if usage:
        out.append({**base, "choices": [], "usage": usage_of(message["usage"])})
    return out


def sse(chunks: list[dict], *, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def reply(status: int = 200, payload: Any = None, *, stream: bytes | None = None,
          headers: dict[str, str] | None = None) -> httpx2.Response:
    if stream is not None:
        return httpx2.Response(status, headers={"content-type": "text/event-stream", **(headers or {})},
                              content=stream)
    return httpx2.Response(status, json=payload, headers=headers or {})


def handler(replies: list[httpx2.Response | Exception | Callable[[httpx2.Request], httpx2.Response]],
            seen: list[httpx2.Request]) -> Callable[[httpx2.Request], httpx2.Response]:
    """A MockTransport handler answering with `replies` in order (the last one repeats); `seen` gets each request."""
    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        item = replies[min(len(seen), len(replies)) - 1]
        if isinstance(item, Exception):
            raise item
        return item(request) if callable(item) else item
    return handle


def error(status: int, message: str, kind: str, code: str | None = None, **headers: str) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"message": message, "type": kind, "param": None, "code": code}},
                          headers={"x-request-id": "req_openai_1", **headers})
