"""A `response` as the stream of events the Responses API would have sent for it.

`response_events(response)` is the inverse of the SDK's accumulator
(openai/lib/streaming/responses): accumulating its events gives back the response's
output, so a streamed answer and a plain one always agree. In order, each event with
its `type` and a `sequence_number` counting from 0:

    response.created, response.in_progress     the response, status "in_progress", no output, no usage
    per output item (output_index 0, 1, ...):
      response.output_item.added               the item, status "in_progress" (a message with no
                                               content yet; a function_call with arguments "")
      a message, per part (content_index):
        response.content_part.added            the part with text ""
        response.output_text.delta             the text, a few tokens at a time
        response.output_text.done              the whole text
        response.content_part.done             the whole part
      a function_call:
        response.function_call_arguments.delta the arguments' JSON in fragments
        response.function_call_arguments.done  the whole arguments, and the name
      response.output_item.done                the whole item
    response.completed                         the whole response (response.incomplete when cut off)

Framing is `event: <type>` then `data: <json>` and a blank line; no `[DONE]`. The pieces
are cut as the other surfaces' are (stream.pieces), so the same request gives the same
bytes; pacing (pacing.schedule) waits before the events that carry text or arguments. A
mid-stream error is this API's `error` event (`error_event`), after which nothing comes.
"""

from __future__ import annotations

import json
from typing import Any

from miniagent.mock.pacing import Pacing, schedule
from miniagent.mock.stream import JSON_DELTA_TOKENS, TEXT_DELTA_TOKENS, pieces
from miniagent.tokens import estimate_text

CONTENT_TYPE = "text/event-stream; charset=utf-8"
DELTAS = ("response.output_text.delta", "response.function_call_arguments.delta")


def response_events(response: dict) -> list[dict]:
    """The events that stream `response` (a whole one, from openai_responses.response_object)."""
    opening = {**response, "status": "in_progress", "output": [], "usage": None, "completed_at": None,
               "incomplete_details": None}
    out: list[dict] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append({"type": kind, **fields, "sequence_number": len(out)})

    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
            for k, part in enumerate(item["content"]):
                emit("response.content_part.added", **where, content_index=k, part={**part, "text": ""})
                for piece in pieces(part["text"], TEXT_DELTA_TOKENS):
                    emit("response.output_text.delta", **where, content_index=k, delta=piece, logprobs=[])
                emit("response.output_text.done", **where, content_index=k, text=part["text"], logprobs=[])
                emit("response.content_part.done", **where, content_index=k, part=part)
        else:  # a function_call
            emit("response.output_item.added", output_index=index,
                 item={**item, "arguments": "", "status": "in_progress"})
            for piece in pieces(item["arguments"], JSON_DELTA_TOKENS):
                emit("response.function_call_arguments.delta", **where, delta=piece)
            emit("response.function_call_arguments.done", **where, name=item["name"], arguments=item["arguments"])
        emit("response.output_item.done", output_index=index, item=item)
    emit("response.incomplete" if response["status"] == "incomplete" else "response.completed", response=response)
    return out


def error_event(events: list[dict], error_after: int) -> dict:
    """The `error` event a stream broken after `error_after` events ends with. [recalled] the overload's words."""
    return {"type": "error", "code": "server_error", "message": "The server is overloaded or not ready yet.",
            "param": None, "sequence_number": min(error_after, len(events) - 1)}


def waits(events: list[dict], pacing: Pacing) -> list[float]:
    """Seconds before each event: `first` before the first that carries text or arguments, then tokens / rate."""
    deltas = [i for i, e in enumerate(events) if e["type"] in DELTAS]
    tokens = [estimate_text(e["delta"]) if e["type"] in DELTAS else 0 for e in events]
    return schedule(tokens, deltas, len(events) - 1, pacing)


def frame(event: dict) -> bytes:
    """One event on the wire. A lone surrogate (echoed from a request) goes out as the JSON escape it came in as."""
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode("utf-8", "backslashreplace")
