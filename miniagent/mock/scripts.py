"""Exact responses for lessons that need the model to misbehave on cue.

The brain answers plausibly; some lessons need a specific bad answer instead: a
model that never stops calling tools, a tool call cut off by `max_tokens`, a
refusal. Each factory here returns what `MockAPI.script(...)` accepts: a partial
message dict, or a callable that takes the request body and returns one. The
callables are meant for `MockAPI.script(fn, repeat=True)`, which answers every
later call with them, e.g.

    api.script(scripts.runaway("get_weather", {"city": "北京"}), repeat=True)

Streaming lessons need answers that break on their way: `cut_tool_call` (the
connection drops inside a tool call's arguments), `overloaded_midway` (an `error`
event after some text), and `with_fault` for any other response.
"""

from __future__ import annotations

import copy
from typing import Callable

Response = dict
Script = Callable[[dict], dict]


def text(answer: str, stop_reason: str = "end_turn") -> Response:
    """A plain text answer with the given stop reason."""
    return {"content": [{"type": "text", "text": answer}], "stop_reason": stop_reason, "stop_sequence": None}


def tool_call(name: str, input: dict, text: str | None = None) -> Response:
    """One tool call (optionally after a short text), stop_reason "tool_use"; MockAPI adds the id."""
    content = [{"type": "text", "text": text}] if text else []
    content.append({"type": "tool_use", "name": name, "input": copy.deepcopy(input)})
    return {"content": content, "stop_reason": "tool_use", "stop_sequence": None}


def runaway(name: str, input: dict) -> Script:
    """A model that never stops: whatever it is sent, it asks for the same tool with the same input."""
    def respond(body: dict) -> Response:
        return tool_call(name, input, text=f"Let me call {name} again.")
    return respond


def runaway_varied(name: str, make_input: Callable[[int], dict]) -> Script:
    """A model that never stops, with a new input each call: `make_input(len(body["messages"]))`.

    Deriving the variation from the request keeps it deterministic and stateless,
    like everything else in the mock; it defeats a "same call twice" detector.
    """
    def respond(body: dict) -> Response:
        return tool_call(name, make_input(len(body.get("messages") or [])), text=f"Let me try {name} once more.")
    return respond


def truncated_tool_call(name: str, partial_input: dict | None = None) -> Response:
    """A tool call cut off by max_tokens: text, then a tool_use whose input is partial. Never run it."""
    response = tool_call(name, partial_input or {}, text=f"I'll call {name}.")
    response["stop_reason"] = "max_tokens"
    return response


def refusal() -> Response:
    """The model declines to answer: stop_reason "refusal"."""
    return text("(mock) I can't help with that request.", stop_reason="refusal")


def pause_turn() -> Response:
    """A long turn paused by the API: stop_reason "pause_turn"; send the conversation back to continue."""
    return text("(mock) I'm pausing this turn here; send the conversation back to let me continue.",
                stop_reason="pause_turn")


# --- answers that break on their way (for streaming lessons) --------------------------------------


def with_fault(response: Response, **fault: float) -> Response:
    """`response` that breaks on its way: `cut=N` (the connection drops after N events of a
    stream, N bytes of a plain body), `error_after=N` (a stream's N events, then an `error`
    event; plain, a 529), and/or `delay=S`. See `MockAPI.fault()`."""
    from miniagent.mock.faults import script_fault
    script_fault(fault)
    return {**copy.deepcopy(response), "fault": dict(fault)}


def cut_tool_call(name: str, input: dict, text: str | None = None) -> Response:
    """A tool call whose stream breaks inside its arguments: the connection drops right after the
    first piece of its JSON, so a streaming client holds half-formed arguments and no
    `message_stop`. It must not run the call (nor keep the partial turn), only retry or report."""
    response = tool_call(name, input, text=text)
    fragments = [i for i, e in enumerate(_events_of(response))
                 if e["type"] == "content_block_delta" and "partial_json" in e["delta"]]
    at = fragments[1] if len(fragments) > 2 else fragments[0]  # fragments[0] is the opening ""
    return with_fault(response, cut=at + 1)


def overloaded_midway(answer: str, deltas: int = 2) -> Response:
    """A text answer whose stream stops after `deltas` pieces of text with an `error` event
    (overloaded_error), after the 200: a streaming client must discard the partial text and
    retry. Non-streamed, the request is answered 529."""
    if isinstance(deltas, bool) or not isinstance(deltas, int) or deltas < 1:
        raise ValueError(f"deltas must be a whole number from 1, got {deltas!r}")
    response = text(answer)
    texts = [i for i, e in enumerate(_events_of(response)) if e["type"] == "content_block_delta"]
    return with_fault(response, error_after=texts[min(deltas, len(texts)) - 1] + 1 if texts else 3)


def _events_of(response: Response) -> list[dict]:
    """The events a response streams as (ids and usage do not change how many there are)."""
    from miniagent.mock.stream import message_events
    return message_events({"content": response["content"], "stop_reason": response.get("stop_reason"),
                           "stop_sequence": None, "usage": {"output_tokens": 0}})
