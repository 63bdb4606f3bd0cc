"""Streaming: Server-Sent Events on the wire, and the message they add up to.

With `"stream": true` the Messages API answers `200` with `content-type:
text/event-stream` and then writes the answer a piece at a time, as events:

    event: content_block_delta
    data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

Three layers turn those bytes back into the one message dict a non-streamed call
returns, so that nothing above the client knows whether an answer was streamed:

1. `encode_event`: the writer's side of the framing (the mock writes with it), so that
   both ends agree on it.
2. `SSEParser`: bytes in, `ServerSentEvent`s out, following the WHATWG rules for
   `text/event-stream`. It is incremental because the network splits bytes wherever it
   likes: in the middle of a line, between the CR and the LF of one line break, or
   inside a multi-byte UTF-8 character.
3. `MessageAccumulator`: Messages API events (the parsed JSON of each event's data) in,
   the final message out: text deltas appended, a tool call's JSON fragments joined and
   parsed when its block stops, stop reason and usage from `message_delta`. It checks the
   order of events, because the classic streaming bug is assembling deltas into the wrong
   block, and it can say at any moment how far the stream got.

None of the three does I/O: a notebook can feed them a byte string. The fourth part
is one streamed call over HTTP, which `client.stream(...)` returns:

4. `StreamCore`: a streamed call's decisions, without I/O (events into the accumulator,
   how far a broken stream got, its record), shared with the asyncio twin
   (`aclient.AsyncMessageStream`, notebook 07); `MessageStream`: the blocking driver,
   which opens (retrying as `create()` does, up to the first byte), reads and closes.
"""

from __future__ import annotations

import codecs
import copy
import json
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import httpx2

from miniagent import deadline, wire
from miniagent.errors import APIError, MalformedResponseError, StreamError, error_for_type

if TYPE_CHECKING:
    from miniagent.client import Client
    from miniagent.clientcore import ClientCore, Exchange

# --- 1. writing ---------------------------------------------------------------------


def encode_event(event: dict[str, Any]) -> bytes:
    """One Messages API event as the API frames it: `event: <type>`, `data: <json>`, a blank line.

    The event name always equals `data.type`; the JSON is on one line (JSON never needs
    a raw newline), so one `data:` line carries it.
    """
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    # A lone surrogate ("\ud800", echoed from a request) has no UTF-8 form; backslashreplace
    # writes it as the JSON escape it came in as, so the line is still valid JSON.
    return f"event: {event['type']}\ndata: {data}\n\n".encode("utf-8", "backslashreplace")


# --- 2. parsing: bytes -> events (text/event-stream) ---------------------------------------

_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event. `event` is "message" when the stream named none (the spec's default).

    `id` is the stream's last event id at this event (the spec carries an id over to later
    events until a new one is set); `retry` is the reconnection time in milliseconds if this
    event's lines set one.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


class SSEParser:
    """An incremental `text/event-stream` parser: `feed(bytes)` returns the events completed so far.

    The rules (html.spec.whatwg.org, "Parsing an event stream"), each of which real
    streams exercise:
    - bytes are UTF-8; one byte order mark at the very start is skipped; invalid bytes become
      U+FFFD replacement characters (what the spec's decoder does; no error is raised);
    - a line ends with CRLF, LF or CR. A CR at the end of one chunk and an LF at the start of
      the next are one line break, so a lone CR ends the line at once and a following LF is
      then skipped;
    - `field: value` lines; one space after the colon is removed; a line without a colon is a
      field with an empty value; a line starting with ":" is a comment (servers send them to
      keep a connection alive); unknown fields are ignored;
    - `data` lines accumulate, joined with "\\n"; `event` names the event; `id` sets the last
      event id (unless it contains NUL); `retry` must be ASCII digits;
    - a blank line dispatches the event, but only if it has at least one `data` line;
    - at the end of the stream an unfinished event is discarded (`close()` says whether there
      was one): an answer cut off mid-event is not an event.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")  # -sig: skips the BOM
        self._line: list[str] = []  # pieces of the line being read (no line end seen yet)
        self._after_cr = False  # the last text ended with a CR line end: a leading LF is its second half
        self._event = ""
        self._data: list[str] = []
        self._retry: int | None = None
        self.last_event_id = ""
        self.retry: int | None = None  # the stream's reconnection time (ms), as last set
        self.unfinished = False  # set by close(): the stream ended in the middle of an event
        self.closed = False

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """The events that `data` completes (often none, sometimes several)."""
        if self.closed:
            raise ValueError("feed() after close(): the stream has ended")
        events = []
        for line in self._lines(self._decoder.decode(data)):
            event = self._take(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> None:
        """The stream has ended: whatever is pending is discarded; `unfinished` says if anything was."""
        tail = self._decoder.decode(b"", final=True)  # a cut multi-byte character, as U+FFFD
        self.unfinished = bool(tail or any(self._line) or self._data)
        self._line, self._data, self.closed = [], [], True

    def _lines(self, text: str) -> Iterator[str]:
        """Complete lines in `text`, given what came before; keeps the unfinished end for later."""
        if not text:
            return
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        start = 0
        for match in _LINE_END.finditer(text):
            self._line.append(text[start:match.start()])
            line, self._line = "".join(self._line), []
            start = match.end()
            yield line
        if start < len(text):
            self._line.append(text[start:])
        # A CR that is the very last character might be the first half of a CRLF split across chunks.
        self._after_cr = start == len(text) and text.endswith("\r")

    def _take(self, line: str) -> ServerSentEvent | None:
        """Process one line; the event it dispatches, if it is a blank line ending one."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = self.retry = int(value)
        return None

    def _dispatch(self) -> ServerSentEvent | None:
        data, name, retry = self._data, self._event, self._retry
        self._data, self._event, self._retry = [], "", None
        if not data:
            return None
        return ServerSentEvent(name or "message", "\n".join(data), self.last_event_id, retry)


def parse(chunks: Iterable[bytes]) -> Iterator[ServerSentEvent]:
    """Every event in a stream given as chunks of bytes (a convenience around `SSEParser`)."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    parser.close()


def decode_event(sse: ServerSentEvent) -> dict[str, Any]:
    """The Messages API event an SSE event carries: its data as a JSON object with a string `type`.

    The API names each event after its type (`event: ping` carries `{"type": "ping"}`); when
    a name is given it must agree. An event without a name (the spec's default "message")
    is read by its type, so that a proxy which drops `event:` lines loses nothing.
    MalformedResponseError for anything else.
    """
    try:
        event = json.loads(sse.data)
    except (ValueError, RecursionError):
        raise MalformedResponseError(f"an event's data is not JSON: {_clip(sse.data)!r}",
                                     type="malformed_response") from None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise MalformedResponseError(f"an event's data should be an object with a string 'type', got "
                                     f"{_clip(sse.data)!r}", type="malformed_response")
    if sse.event != "message" and sse.event != event["type"]:
        raise MalformedResponseError(f"an event named {_clip(sse.event)!r} carries data of type "
                                     f"{_clip(event['type'])!r}; they should be the same",
                                     type="malformed_response")
    return event


# --- 3. accumulating: events -> the message ---------------------------------------------

# Stop reasons that mean the model was cut off: a tool call's JSON may then be unfinished.
CUT_OFF = frozenset({"max_tokens", "model_context_window_exceeded", "refusal"})


@dataclass
class _OpenBlock:
    """A content block between its start and its stop: the pieces of the one field its deltas build.

    Pieces are joined once, at the stop: appending to a string thousands of times would
    copy the text so far each time.
    """

    builds: str | None  # "text", "thinking", "input" (JSON text), or None for blocks without deltas
    parts: list[str] = field(default_factory=list)


def _field_of(block: dict) -> str | None:
    if block["type"] in ("text", "thinking"):
        return block["type"]
    return "input" if isinstance(block.get("input"), dict) else None  # tool_use, server_tool_use, ...


_DELTA_FIELD = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking"),
                "input_json_delta": ("input", "partial_json")}  # delta type -> (field it builds, its key)


# A stream whose very first event is a content_block_start: llama.cpp's server (build 11434) sends no
# message_start when the answer's first token is not a whole UTF-8 character (most Chinese answers).
# Everything after it is in order, so the message is kept, with what message_start would have said
# unknown: no id, no model, no input token count (0).
NO_MESSAGE_START = "the stream began without message_start (its id, model and input token count are unknown)"
# A tool_use block whose content_block_start has no 'input' (llama.cpp's server, build 11434): the API
# starts every tool_use with "input": {} and sends the arguments in input_json_delta events, as this
# server then does too. The block starts with {} and is built from its deltas as usual.
NO_START_INPUT = "a tool_use block started without 'input' (its arguments came in its deltas, as usual)"
UNSTARTED = {"id": "msg_unknown", "type": "message", "role": "assistant", "content": [], "model": "unknown",
             "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}


class MessageAccumulator:
    """Messages API events in, the message out: exactly the dict a non-streamed call returns.

        acc = MessageAccumulator()
        for event in events:
            acc.add(event)
        acc.message        # None until message_stop, then the message

    The order is checked (wire-format §1.7): `message_start` first; each block's
    `content_block_start` (its index the next position in `content`) before its deltas and
    its `content_block_stop`; `message_delta` after the blocks; `message_stop` last. Events
    out of order or of the wrong shape raise MalformedResponseError; an `error` event raises
    the typed error a non-streamed call would (OverloadedError for `overloaded_error`, ...).
    `ping` and event or delta types this code does not know are ignored, as the API asks.
    Two deviations of a real server are accepted and listed in `deviations`: a stream that
    begins with `content_block_start`, without `message_start` (llama.cpp's, see UNSTARTED),
    and a `tool_use` block started without `input` (llama.cpp's too, see NO_START_INPUT).

    A tool call whose JSON never completed (cut off by `max_tokens`) gets `input: {}`, as a
    non-streamed answer gives it, and is listed in `incomplete`, so the caller can say so
    rather than run a call with half its arguments. Unfinished JSON is accepted only when
    the stop reason says the answer was cut off (`CUT_OFF`); with `tool_use` it would be a
    call to run with arguments nobody sent, so it is malformed.

    How far it got, at any moment: `events`, `text`, `forming` (tool calls whose arguments
    are arriving), `snapshot()` (the message so far) and `progress()` (all that, in words).
    Every error raised here says it, and carries the message so far as `err.partial`.
    """

    def __init__(self) -> None:
        self.events = 0  # events added, pings and unknown ones included
        self.done = False  # message_stop has arrived
        self.incomplete: list[dict] = []  # {"index", "id", "name", "partial_json"} per unfinished tool call
        self._message: dict | None = None
        self._open: dict[int, _OpenBlock] = {}
        self._delta_seen = False  # message_delta has arrived: no more blocks
        self.deviations: list[str] = []  # what the server did that the API never does, and was accepted

    # The events ---------------------------------------------------------------------------

    def add(self, event: dict) -> dict | None:
        """Take one event; the final message once `message_stop` has arrived, else None."""
        self.events += 1
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(kind, str):
            raise self._malformed(f"an event should be an object with a string 'type', got {_short(event)}")
        if kind == "error":
            raise self._error_event(event)
        handler = self._HANDLERS.get(kind)
        if handler is None:  # ping, or an event type added to the API after this was written
            return None
        if self.done:
            raise self._malformed(f"{kind} after message_stop")
        if self._message is None and kind == "content_block_start" and self.events == 1:
            self._message = copy.deepcopy(UNSTARTED)  # llama.cpp's server leaves message_start out at times
            self.deviations.append(NO_MESSAGE_START)
        elif self._message is None and kind != "message_start":
            raise self._malformed(f"{kind} before message_start")
        handler(self, event)
        return self.message

    def _message_start(self, event: dict) -> None:
        if self._message is not None:
            raise self._malformed("a second message_start")
        problem = wire.message_problem(event.get("message"))
        if problem:
            raise self._malformed(f"message_start: its message is not a message: {problem}")
        self._message = copy.deepcopy(event["message"])  # our own: the caller's event dicts stay as they came

    def _block_start(self, event: dict) -> None:
        content = self._content("content_block_start")
        index, block = event.get("index"), event.get("content_block")
        if index != len(content) or not _is_index(index):
            raise self._malformed(f"content_block_start for block {_short(index)} where block {len(content)} "
                                  f"was expected (blocks start in order, from 0)")
        if isinstance(block, dict) and block.get("type") == "tool_use" and "input" not in block:
            block = {**block, "input": {}}  # llama.cpp's server leaves it out; its deltas bring the arguments
            if NO_START_INPUT not in self.deviations:
                self.deviations.append(NO_START_INPUT)
        problem = wire.block_problem(block)
        if problem:
            raise self._malformed(f"content_block_start for block {index}: {problem}")
        content.append(copy.deepcopy(block))
        self._open[index] = _OpenBlock(_field_of(block))

    def _block_delta(self, event: dict) -> None:
        index = self._open_index(event, "content_block_delta")
        block, state, delta = self._content("")[index], self._open[index], event.get("delta")
        if not isinstance(delta, dict) or not isinstance(delta.get("type"), str):
            raise self._malformed(f"content_block_delta for block {index}: 'delta' should be an object with a "
                                  f"string 'type', got {_short(delta)}")
        kind = delta["type"]
        if kind in _DELTA_FIELD:
            builds, key = _DELTA_FIELD[kind]
            if state.builds != builds:
                raise self._malformed(f"{_a(kind)} for block {index}, which is {_a(block['type'])} block")
            state.parts.append(self._string(delta, key, kind))
        elif kind == "signature_delta" and block["type"] == "thinking":
            block["signature"] = self._string(delta, "signature", kind)  # sent once, whole, before the stop
        elif kind == "citations_delta" and block["type"] == "text":
            if not isinstance(delta.get("citation"), dict):
                raise self._malformed(f"a citations_delta's 'citation' should be an object, got "
                                      f"{_short(delta.get('citation'))}")
            block["citations"] = (block.get("citations") or []) + [delta["citation"]]
        elif kind in ("signature_delta", "citations_delta"):
            raise self._malformed(f"a {kind} for block {index}, which is {_a(block['type'])} block")
        # else: a delta type added to the API after this was written; ignored

    def _block_stop(self, event: dict) -> None:
        self._finish(self._open_index(event, "content_block_stop"))

    def _message_delta(self, event: dict) -> None:
        self._content("message_delta")
        delta, usage = event.get("delta"), event.get("usage")
        if not isinstance(delta, dict) or not (usage is None or isinstance(usage, dict)):
            raise self._malformed(f"message_delta: 'delta' should be an object and 'usage' an object, got "
                                  f"{_short(delta)} and {_short(usage)}")
        if not (delta.get("stop_reason") is None or isinstance(delta["stop_reason"], str)):
            raise self._malformed(f"message_delta: 'stop_reason' should be a string, got "
                                  f"{_short(delta['stop_reason'])}")
        message = self._message
        assert message is not None
        for key, value in delta.items():  # stop_reason, stop_sequence, and fields added later (stop_details, ...)
            if key not in ("id", "type", "role", "model", "content", "usage"):
                message[key] = value
        for key, value in (usage or {}).items():  # cumulative counts: they replace, never add
            if value is not None:
                message["usage"][key] = value
        problem = wire.usage_problem(message["usage"])
        if problem:
            raise self._malformed(f"message_delta: {problem}")
        self._delta_seen = True

    def _message_stop(self, event: dict) -> None:
        if not self._delta_seen:
            raise self._malformed("message_stop before any message_delta: the stream never said why it stopped")
        for index in sorted(self._open):  # a block never stopped: what arrived is all there is
            self._finish(index)
        stop_reason = self._message["stop_reason"] if self._message else None
        if self.incomplete and stop_reason not in CUT_OFF:
            call = self.incomplete[0]
            raise self._malformed(f"tool call {call['name']!r} (block {call['index']}) has arguments that are not "
                                  f"complete JSON ({_clip(call['partial_json'])!r}), yet the stop reason is "
                                  f"{stop_reason!r}, not a cut-off")
        problem = wire.message_problem(self._message)
        if problem:
            raise self._malformed(f"the message assembled from the stream is not a message: {problem}")
        self.done = True

    _HANDLERS = {"message_start": _message_start, "content_block_start": _block_start,
                 "content_block_delta": _block_delta, "content_block_stop": _block_stop,
                 "message_delta": _message_delta, "message_stop": _message_stop}

    # Closing a block --------------------------------------------------------------------

    def _finish(self, index: int) -> None:
        """Join the block's pieces into its field; a tool call's JSON is parsed here, and only here."""
        state = self._open.pop(index)
        block = self._content("")[index]
        joined = "".join(state.parts)
        if state.builds == "input":
            if joined.strip():  # no fragments, or only "": the input the block started with ({})
                block["input"] = self._arguments(block, index, joined)
        elif state.builds is not None:
            block[state.builds] = block.get(state.builds, "") + joined

    def _arguments(self, block: dict, index: int, text: str) -> dict:
        try:
            value = json.loads(text)
        except ValueError:  # cut off mid-arguments (or garbled); message_stop decides which
            self.incomplete.append({"index": index, "id": block.get("id"), "name": block.get("name"),
                                    "partial_json": text})
            return {}
        except RecursionError:
            raise self._malformed(f"tool call {block.get('name')!r}: its arguments are nested too deeply") from None
        if not isinstance(value, dict):
            raise self._malformed(f"tool call {block.get('name')!r}: its arguments should be a JSON object, "
                                  f"got {_clip(text)!r}")
        return value

    # Checks --------------------------------------------------------------------------

    def _content(self, kind: str) -> list[dict]:
        """The content list; for a block event, also that no message_delta has come yet."""
        if kind.startswith("content_block") and self._delta_seen:
            raise self._malformed(f"{kind} after message_delta (blocks come before it)")
        assert self._message is not None
        return self._message["content"]

    def _open_index(self, event: dict, kind: str) -> int:
        index = event.get("index")
        content = self._content(kind)
        if _is_index(index) and index in self._open:
            return index
        if not _is_index(index):
            why = f"its 'index' should be a whole number, got {_short(index)}"
        elif index >= len(content):
            why = "before that block's content_block_start"
        else:
            why = "after that block's content_block_stop"
        raise self._malformed(f"{kind} for block {_short(index)}: {why}")

    def _string(self, delta: dict, key: str, kind: str) -> str:
        if not isinstance(delta.get(key), str):
            raise self._malformed(f"a {kind}'s '{key}' should be a string, got {_short(delta.get(key))}")
        return delta[key]

    # How far it got ----------------------------------------------------------------------

    @property
    def message(self) -> dict | None:
        """The final message, once `message_stop` has arrived; None before."""
        return self._message if self.done else None

    @property
    def text(self) -> str:
        """The text so far, all text blocks together (the final text once done)."""
        if self._message is None:
            return ""
        pieces = []
        for index, block in enumerate(self._message["content"]):
            if block.get("type") == "text":
                pieces.append(block.get("text", ""))
                if index in self._open:
                    pieces.extend(self._open[index].parts)
        return "".join(pieces)

    @property
    def forming(self) -> list[dict]:
        """Tool calls whose arguments are still arriving: index, id, name, and the JSON so far."""
        content = self._message["content"] if self._message else []
        return [{"index": index, "id": content[index].get("id"), "name": content[index].get("name"),
                 "partial_json": "".join(state.parts)}
                for index, state in sorted(self._open.items()) if state.builds == "input"]

    def snapshot(self) -> dict | None:
        """A copy of the message so far: open blocks with what they have (tool inputs `{}` until complete)."""
        if self._message is None:
            return None
        snapshot = copy.deepcopy(self._message)
        for index, state in self._open.items():
            if state.builds in ("text", "thinking"):
                block = snapshot["content"][index]
                block[state.builds] = block.get(state.builds, "") + "".join(state.parts)
        return snapshot

    def progress(self) -> str:
        """How far the stream got, in words, e.g. for an error that ends it."""
        parts = [f"{len(self.text):,} characters of text"]
        if self._message is not None:
            done = [b.get("name") for i, b in enumerate(self._message["content"])
                    if isinstance(b.get("input"), dict) and i not in self._open]
            if done:
                parts.append(f"{len(done)} tool call{'s' if len(done) != 1 else ''} complete "
                             f"({', '.join(map(str, done))})")
        for call in self.forming:
            parts.append(f"tool call {call['name']!r} ({call['id']}) was forming, its arguments so far: "
                         f"{_clip(call['partial_json'], 200)!r}")
        return f"after {self.events} event{'s' if self.events != 1 else ''} ({'; '.join(parts)})"

    # Errors ---------------------------------------------------------------------------

    def _malformed(self, why: str) -> MalformedResponseError:
        err = MalformedResponseError(f"not a valid Messages API stream: {why}, {self.progress()}",
                                     type="malformed_response")
        err.partial = self.snapshot()
        return err

    def _error_event(self, event: dict) -> APIError:
        """The typed error an `error` event stands for, as a non-streamed call would raise it."""
        error = event.get("error")
        error = error if isinstance(error, dict) else {}
        kind, message = _clip(str(error.get("type") or "error"), 100), _clip(str(error.get("message", "")), 2000)
        err = error_for_type(kind)(f"{message} (an error event in the middle of the stream, {self.progress()}; "
                                   f"the HTTP status had been 200)", type=kind)
        meaning = err.hint.split(". ")[0].rstrip(".")  # "The API is overloaded right now"; its retry advice does not apply
        err.hint = (f"{meaning}. The error came after the stream had begun, so it was not retried (a retry would "
                    "repeat what already arrived). `err.partial` holds the message so far; call again to start over.")
        err.partial = self.snapshot()
        return err


def _a(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more characters]"


def _short(value: Any) -> str:
    try:
        return _clip(json.dumps(value, ensure_ascii=False), 120)
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


# --- 4. one streamed call over HTTP: its decisions, and the blocking driver ---------------------


class StreamCore:
    """One streamed call's state and rules; `MessageStream` and `AsyncMessageStream` do its I/O.

    The driver opens (retrying up to the first byte), reads chunks, and hands each to
    `_events`; everything it meets on the way (a timeout, a cut, a corrupt or oversized
    body, the end of the bytes) it turns into the caller's error with the methods here,
    which also keep the record and say how far the stream got.
    """

    def __init__(self, client: ClientCore, body: dict) -> None:
        self.client, self.body = client, body
        self.parser = SSEParser()
        self.accumulator = MessageAccumulator()
        self._translator = client.format.translator()  # SSE events -> Messages API events (see providers.py)
        self.message: dict | None = None
        self._state = "new"  # new -> opening -> open -> done | failed | closed
        self._response: httpx2.Response | None = None
        self._pieces: Any = iter(())  # the body's bytes, decompressed: an iterator, or an async one
        self._first = b""  # the first bytes, read while opening (so that a failure before them is retried)
        self._record: Exchange | None = None
        self._size = 0
        self._began = 0.0  # perf_counter() at the start of the attempt, for the record
        self._ends = 0.0  # the whole stream's deadline, a time.monotonic() value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._state}, {self.accumulator.events} events)"

    @property
    def usage(self) -> dict | None:
        """The final message's usage (already added to `client.usage`); None before the end."""
        return self.message["usage"] if self.message is not None else None

    @property
    def partial(self) -> dict | None:
        """The message so far (open blocks with what they have), or None before message_start."""
        return self.accumulator.snapshot()

    # Opening ---------------------------------------------------------------------------

    def _new_attempt(self, record: Exchange) -> float:
        """Fresh bookkeeping for one attempt to start; the time (monotonic) its first byte must come by."""
        self._record, self._size, self._began = record, 0, time.perf_counter()
        record.stream = {"events": 0, "bytes": 0, "complete": False}
        started = time.monotonic()
        self._ends = started + self.client.stream_timeout
        return min(started + self.client.timeout, self._ends)

    def _refusal(self) -> httpx2.Response | None:
        """The response whose headers (retry-after, x-should-retry) rule on a retry: an error answer's."""
        response = self._response
        return response if response is not None and not response.is_success else None

    @staticmethod
    def _is_stream(response: httpx2.Response) -> bool:
        kind = response.headers.get("content-type", "")
        return not kind or kind.lower().startswith("text/event-stream")

    def _not_a_stream(self, response: httpx2.Response, raw: bytes) -> MalformedResponseError:
        seen = raw[:300].decode("utf-8", "replace")
        kind = response.headers.get("content-type", "")
        return self.client._malformed(response, f"a stream was asked for, but the answer is {kind!r}, not "
                                                f"'text/event-stream'; the body began: {seen!r}")

    @staticmethod
    def _no_first_byte(response: httpx2.Response) -> httpx2.RemoteProtocolError:
        return httpx2.RemoteProtocolError("the stream ended before its first byte", request=response.request)

    # Reading -----------------------------------------------------------------------------

    def _arrived(self, piece: bytes | None, waited: float) -> bytes | None:
        """Check one piece of the body as it arrives: the bytes to hand on, b"" at the end, None for none yet.

        Sockets obey both time bounds as they read; an in-process transport cannot be
        interrupted, so its lateness is caught here, after the fact.
        """
        response = self._response
        assert response is not None
        if time.monotonic() > self._ends or waited > self.client.timeout:
            raise httpx2.ReadTimeout("the stream's deadline passed while reading", request=response.request)
        if piece is None:
            return b""
        if not piece:
            return None
        self._size += len(piece)
        if self._size > self.client.max_response_bytes:
            raise self.client._too_big(response, f"the stream was not read further, {self.accumulator.progress()}")
        return piece

    def _corrupt(self, exc: ValueError) -> MalformedResponseError:
        """A body that wire.decompressed cannot read."""
        assert self._response is not None
        return self.client._malformed(self._response, f"the stream cannot be read: {exc}, "
                                                      f"{self.accumulator.progress()}")

    def _read_failed(self, exc: Exception) -> APIError:
        """A failed read after the first byte, as the caller's error: never retried (see the drivers)."""
        if isinstance(exc, httpx2.TimeoutException):
            if time.monotonic() >= self._ends - 0.001:  # asyncio may fire a deadline a hair early
                why = f"did not finish within stream_timeout={self.client.stream_timeout:g} s"
            else:
                why = f"stalled: no bytes for {self.client.timeout:g} s (the timeout)"
            return self._broken(self._stream_error("stream_timeout", why))
        if isinstance(exc, httpx2.TransportError):
            return self._broken(self._stream_error("stream_interrupted", f"was cut ({type(exc).__name__}: {exc})"))
        assert isinstance(exc, APIError)
        return self._broken(exc)

    def _events(self, chunk: bytes) -> Iterator[dict]:
        """The events `chunk` completes, each taken into the accumulator as it is handed out; b"" is the end."""
        if not chunk:
            self.parser.close()
            for event in self._translated(self._translator.end):  # an OpenAI stream may end without [DONE]
                yield self._take(event)
            if self._state != "open":
                return
            ended = "ended before message_stop" + (", in the middle of an event" if self.parser.unfinished else "")
            raise self._broken(self._stream_error("stream_incomplete", ended))
        for sse in self.parser.feed(chunk):
            for event in self._translated(self._translator.events, sse):
                yield self._take(event)
                if self._state != "open":  # message_stop came: whatever follows is not read
                    return

    def _translated(self, step: Callable[..., list[dict]], *sse: Any) -> list[dict]:
        """The Messages API events an SSE event stands for (one, for the Messages API itself)."""
        try:
            return step(*sse)
        except MalformedResponseError as exc:
            raise self._broken(MalformedResponseError(f"{exc.message}, {self.accumulator.progress()}",
                                                      type=exc.type)) from None

    def _take(self, event: dict) -> dict:
        """One event into the accumulator; the event dict for the caller."""
        try:
            self.accumulator.add(event)
        except APIError as exc:
            raise self._broken(exc) from None
        if self.accumulator.done:
            self._finish()
        return event

    # Ending: the state and the record (the driver lets the connection go) -----------------

    def _finish(self) -> None:
        message = self.accumulator.message
        assert message is not None
        self.message, self._state = message, "done"
        self.client.usage.add(message["usage"])
        self._update_record(response=self.client._record_of(message, b"", secret=False), complete=True)
        if self._record is not None:
            self._record.usage = message["usage"]

    def _stream_error(self, kind: str, why: str) -> StreamError:
        return StreamError(f"the stream {why}, {self.accumulator.progress()}", type=kind,
                           events=self.accumulator.events)

    def _broken(self, err: APIError) -> APIError:
        """`err` made ready for the caller (request id, the message so far, no key), and recorded."""
        client, response = self.client, self._response
        client._hinted(err)
        err.message = client._scrub(err.message)
        err.args = (err.message,)
        if err.partial is None:
            err.partial = self.accumulator.snapshot()
        if response is not None:
            err.request_id = err.request_id or response.headers.get(client.format.request_id_header)
            if isinstance(err, MalformedResponseError):
                err.status = response.status_code
        partial = None if err.partial is None else client._record_of(err.partial, b"", secret=True)
        self._update_record(response=partial, error=str(err).splitlines()[0])
        self._state = "failed"
        return err

    def _closing(self) -> None:
        """The caller closes: before `message_stop`, that is recorded as such."""
        if self._state in ("new", "open"):
            if self._state == "open":
                partial = self.accumulator.snapshot()
                recorded = None if partial is None else self.client._record_of(partial, b"", secret=True)
                self._update_record(response=recorded, error=f"closed by the caller after "
                                                             f"{self.accumulator.events} events, before message_stop")
            self._state = "closed"

    def _update_record(self, *, response: Any, error: str | None = None, complete: bool = False) -> None:
        record = self._record
        if record is None:
            return
        record.response, record.seconds = response, time.perf_counter() - self._began
        if error is not None:
            record.error = error
        record.stream = {"events": self.accumulator.events, "bytes": self._size, "complete": complete}
        if self.accumulator.deviations:  # what the server did that the API never does (streaming.UNSTARTED)
            record.stream["deviations"] = list(self.accumulator.deviations)


class MessageStream(StreamCore):
    """One streamed Messages API call: a context manager, and an iterator of its events.

        with client.stream(messages) as s:
            for event in s:      # dicts, as the API sent them; pings included
                ...
        s.message                # the final message: what create() would have returned

    Entering sends the request. Until the stream's first byte, failures are handled as
    create() handles them: 429, 529, 5xx, dropped connections and timeouts are retried
    with the same backoff and `retry-after` rules; 4xx are raised. From the first byte on
    nothing is retried, since the events already handed out would come a second time: a
    cut, a stall or an early end raises StreamError, an `error` event the typed error it
    names (OverloadedError, ...), a broken event MalformedResponseError. Each says how
    far the stream got and carries the message so far as `.partial`.

    Bounds: the start (connecting, up to the first byte) within `timeout`; then each wait
    for more bytes within `timeout` and the whole stream within `stream_timeout`;
    `max_response_bytes` over the whole stream. `accumulator` shows the progress at any
    moment (`.text`, `.forming`, `.progress()`).
    """

    client: Client

    def __enter__(self) -> MessageStream:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # Opening: retried like create(), up to the first byte -------------------------------

    def open(self) -> None:
        """Send the request and wait for the stream's first byte, retrying as create() does."""
        if self._state != "new":
            return
        self._state = "opening"
        try:
            self.client._attempts(self.client.format.path, self.body, self._attempt)
        except BaseException:
            self._state = "failed"
            self._close_response()
            raise
        self._state = "open"

    def _attempt(self, url: str, content: bytes, record: Exchange) -> None:
        """One attempt to start the stream: returns once its first byte is in, else raises."""
        client = self.client
        try:
            with deadline.until(self._new_attempt(record)):
                self._response = response = client._start(url, content)
                record.status = response.status_code
                if not response.is_success:
                    raise client._refused(record, response, client._read_body(response))
                if not self._is_stream(response):
                    raise self._not_a_stream(response, client._read_body(response))
                self._pieces = client._pieces(response)
                self._first = self._read()
                if not self._first:
                    raise self._no_first_byte(response)
        except httpx2.TransportError as exc:
            retry = client._lost(exc, "no stream began", self._refusal())
            self._close_response()
            raise retry from None
        except BaseException:
            self._close_response()
            raise

    # Reading: events as they arrive, never retried --------------------------------------

    def __iter__(self) -> Iterator[dict]:
        """Each event as it arrives; the iteration ends after `message_stop`, or raises (see the class)."""
        if self._state == "new":
            self.open()
        try:
            while self._state == "open":
                chunk, self._first = self._first or self._next_chunk(), b""
                for event in self._events(chunk):
                    if self._state != "open":
                        self._close_response()  # message_stop: the connection goes before the caller sees it
                    yield event
        except BaseException:
            self._close_response()
            raise

    def _next_chunk(self) -> bytes:
        """The next bytes (b"" at the end); the stream's deadline holds for this read only, never
        between two events, where the caller's own code runs."""
        try:
            with deadline.until(self._ends):
                return self._read()
        except (httpx2.TransportError, MalformedResponseError) as exc:
            raise self._read_failed(exc) from None

    def _read(self) -> bytes:
        """The next bytes of the body (b"" at its end), counted against the size bound and timed."""
        waited = 0.0  # time spent waiting in this read; the caller's own time between reads is not counted
        while True:
            before = time.monotonic()
            try:
                piece = next(self._pieces, None)
            except ValueError as exc:  # from wire.decompressed: a corrupt body
                raise self._corrupt(exc) from None
            waited += time.monotonic() - before
            got = self._arrived(piece, waited)
            if got is not None:
                return got

    # Ending ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop reading and let the connection go. Closing before `message_stop` is recorded as such."""
        self._closing()
        self._close_response()

    def _close_response(self) -> None:
        response, self._response = self._response, None
        if response is not None:
            response.close()


# --- the loop's view of a stream: text and tool calls as they form ------------------------------


class StreamWatcher:
    """One streamed response's events in, the loop's streaming callbacks out.

    Given to `client.create(..., stream=True, on_event=watcher)`, it sees each event as
    it arrives, after the client has checked it (order, indexes, shapes). It calls
    `on_text(delta)` for each piece of text and `on_tool_use(call)` for each tool call:
    when its block starts (name and id known, `partial_json` ""), at each piece of its
    arguments (`partial_json` growing), and when its block stops (`done`, and `input`
    the parsed arguments, or None if they never became complete JSON). State is kept
    per block index, because the calls of one response stream one after another and
    their fragments must never be joined across calls.

    `done` means the call's arguments are complete, not that it will run: the stream
    can still break, or stop with `max_tokens`, and then the loop runs nothing. What
    runs is what the `tool_call` trace events say.

    It also times the response (`first_token`: seconds from the request to the first
    content delta; `first_text`: to the first text delta) and counts its events, for
    the `stream` summary the loop adds to the response's trace event: a few numbers per
    response, never an event per token.
    """

    def __init__(self, iteration: int, started: float, on_text: Callable[[str], None] | None = None,
                 on_tool_use: Callable[[dict], None] | None = None) -> None:
        self.iteration, self.started = iteration, started
        self.on_text, self.on_tool_use = on_text, on_tool_use
        self.events = 0
        self.first_token: float | None = None
        self.first_text: float | None = None
        self.calls: dict[int, dict] = {}  # block index -> {"id", "name", "input" (the start's), "parts"}
        self.done_calls = 0

    def __call__(self, event: dict) -> None:
        self.events += 1
        kind = event.get("type")
        if kind == "content_block_start":
            self._start(event["index"], event["content_block"])
        elif kind == "content_block_delta":
            self._delta(event["index"], event["delta"])
        elif kind == "content_block_stop" and event["index"] in self.calls:
            self._stop(event["index"])

    def _start(self, index: int, block: dict) -> None:
        if block.get("type") == "text" and block.get("text"):  # text may come with the start itself
            self._text(block["text"])
        elif block.get("type") == "tool_use":
            self.calls[index] = {"id": block.get("id"), "name": block.get("name"),
                                 "input": block.get("input"), "parts": []}
            self._tool_use(index, done=False)

    def _delta(self, index: int, delta: dict) -> None:
        if self.first_token is None:
            self.first_token = time.perf_counter() - self.started
        if delta.get("type") == "text_delta":
            self._text(delta["text"])
        elif delta.get("type") == "input_json_delta" and index in self.calls and delta["partial_json"]:
            self.calls[index]["parts"].append(delta["partial_json"])
            self._tool_use(index, done=False)

    def _stop(self, index: int) -> None:
        call = self.calls[index]
        text = "".join(call["parts"])
        if not text.strip():  # no arguments streamed: the input the block started with (a tool without any)
            arguments = copy.deepcopy(call["input"]) if isinstance(call["input"], dict) else None
        else:
            try:
                arguments = json.loads(text)
            except (ValueError, RecursionError):  # cut off mid-arguments: never a call to run
                arguments = None
        self.done_calls += 1
        self._tool_use(index, done=True, arguments=arguments if isinstance(arguments, dict) else None)

    def _text(self, delta: str) -> None:
        if self.first_text is None:
            self.first_text = time.perf_counter() - self.started
        if self.on_text is not None and delta:
            self.on_text(delta)

    def _tool_use(self, index: int, *, done: bool, arguments: dict | None = None) -> None:
        if self.on_tool_use is None:
            return
        call = self.calls[index]
        self.on_tool_use({"index": index, "id": call["id"], "name": call["name"],
                          "partial_json": "".join(call["parts"]), "done": done, "input": arguments,
                          "iteration": self.iteration})

    @property
    def calls_seen(self) -> int:
        """Tool calls this response had begun so far, complete or not."""
        return len(self.calls)

    def summary(self) -> dict:
        """What the trace keeps of a stream: its size and its first-token times, in seconds."""
        def rounded(seconds: float | None) -> float | None:
            return None if seconds is None else round(seconds, 6)
        return {"events": self.events, "first_token": rounded(self.first_token),
                "first_text": rounded(self.first_text)}
