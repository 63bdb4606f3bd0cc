"""Message threads (the beta `message-threads-2026-08-12`): the conversation kept on the server.

Without a thread, every request carries the whole conversation. With one, the server keeps it:

- `"thread": {"type": "create"}` sends the whole conversation, as any request does, and asks the
  server to hold it, with the answer, under the answer's `id`;
- `"thread": {"type": "continue", "previous_message_id": "msg_..."}` sends only the new turn.
  The server puts the conversation it holds in front of it, and answers as if the whole of it had
  been sent. The answer's `id` names the longer conversation, for the next continue.

What a continue inherits, what it may change and how it fails, as the pinned SDK (anthropic 2.14.0:
`lib/threads/_thread_state.py`, `types/thread_*_error.py`) describes the API:

- it inherits `system` and `tools`, the create-only fields: the server takes them from the thread, and
  a continue that sends either is refused (the SDK leaves them out of every continue). Every other field
  (`model`, `max_tokens`, `tool_choice`, `stop_sequences`, `output_config`...) is the request's own and
  may change from turn to turn; `model` and `max_tokens` are required on every turn, as always;
- `messages` holds the new turn only, and may be empty: after a `pause_turn` the server resumes the
  unfinished turn it holds;
- a `previous_message_id` the server holds no state for (never threaded, expired, evicted, or another
  key's) is a 404 whose `error.details.error_code` is `thread_not_found`; the SDK answers it by
  replaying the whole conversation under a new thread (`create`);
- each answer can be continued once: a second continue from it is a 400 `thread_already_continued`
  (the SDK replays too);
- `thinking`, top-level `cache_control`, `context_management` and `fallbacks` are request fields
  that threads do not support (`ThreadUnsupportedFeatureName`): a 400 `thread_unsupported_request`
  naming them in `unsupported`. The SDK's tool runner then goes on without a thread.

The conversation rules (alternation, every `tool_result` answering the `tool_use` before it) are
checked on the whole conversation, the held part and the new turn together, so an error's path
(`messages.4...`) counts the held messages too. The brain, and a scripted callable, read the whole
conversation as well: a tool round works on a continue as on a full request.

Not modelled, because the SDK does not say when the API sends them: `thread_fingerprint_mismatch`
(which fields must stay the same is not documented) and `thread_continue_in_flight` (the mock answers
one request at a time, so a second continue from the same answer finds it continued).

The store is bounded, deterministic and private (`ThreadStore`): one per `MockAPI`, at most
`MAX_THREADS` conversations and `MAX_THREAD_BYTES` of them (the oldest go first), each for
`THREAD_TTL` seconds of the mock's clock. A conversation is found only with the API key that created
it (the store keeps a hash of the key, never the key): a workshop server's ids are counters, and one
learner must not continue another's thread. A request that is refused, unauthenticated, faulted or
broken midway stores nothing, and leaves the answer it continued from continuable.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from miniagent.mock.openai_responses import owner_of
from miniagent.mock.schema import Reject, check_schema
from miniagent.mock.validate import ApiError

THREADS_BETA = "message-threads-2026-08-12"
CREATE_ONLY = ("system", "tools")  # the SDK's CREATE_ONLY_FIELDS
UNSUPPORTED = ("cache_control", "context_management", "fallbacks", "thinking")  # the request fields of
# ThreadUnsupportedFeatureName ("hipaa" and "inference_hooks" are organization settings)
MAX_THREADS = 1_000                  # conversations held at once, all keys together
MAX_THREAD_BYTES = 64 * 1024 * 1024  # their JSON, all together (as records.py's cap)
MAX_CONTINUED = 10_000               # answers remembered as continued (ids only)
THREAD_TTL = 30 * 24 * 3600          # ours: the SDK gives no lifetime (OpenAI keeps a stored response 30 days)
_MESSAGE_ID = re.compile(r"msg_[A-Za-z0-9_]{1,100}")


@dataclass(frozen=True)
class ThreadError(ApiError):
    """An ApiError with the API's `error.details` (`{"error_code": "thread_not_found"}`)."""

    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Turn:
    """A threaded request, resolved: `body` is the whole conversation to validate and answer."""

    body: dict
    owner: str
    previous: str | None
    chunks: tuple[bytes, ...]  # the held conversation as stored, and the new turn's messages


@dataclass(frozen=True)
class _Held:
    chunks: tuple[bytes, ...]  # JSON lists of messages, oldest first: the conversation, the answer last
    fields: bytes              # JSON of the create-only fields the thread was created with
    size: int
    expires: float


class ThreadStore:
    """The conversations held for `continue`, bounded (see the module's docstring).

    `resolve()` reads a request's `thread` field before validation; `store()` keeps the answer
    after a request was answered in full. `clock`: the seconds that lifetimes are read from
    (`MockAPI`'s clock, so a test can let a month pass at once).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, max_threads: int = MAX_THREADS,
                 max_bytes: int = MAX_THREAD_BYTES, ttl: float = THREAD_TTL) -> None:
        self.clock, self.max_threads, self.max_bytes, self.ttl = clock, max_threads, max_bytes, ttl
        self._held: OrderedDict[tuple[str, str], _Held] = OrderedDict()  # oldest first (never moved)
        self._continued: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._continued.clear()
            self.bytes = 0

    def conversation(self, message_id: str, api_key: str) -> list[dict] | None:
        """The messages held under `message_id` for `api_key` (its answer last), or None."""
        held = self._live((owner_of({"x-api-key": api_key}), message_id))
        return None if held is None else _messages(held.chunks)

    def resolve(self, body: Any, headers: Mapping[str, str], version: str, beta: bool) -> Turn | ApiError | None:
        """None for a request without a thread, or one whose schema is wrong (the validator reports
        that, as for any request); the API's error for a thread it refuses; else the `Turn`."""
        if not isinstance(body, dict) or body.get("thread") is None:
            return None
        try:
            check_schema(body, version, False, beta=beta)
        except Reject:
            return None
        thread, delta = body["thread"], _dump(body["messages"])
        unsupported = [name for name in UNSUPPORTED if _used(name, body.get(name))]
        if unsupported:  # the message is ours; the details are the API's
            return ThreadError(400, "invalid_request_error", "thread: message threads do not support "
                               f"{', '.join(f'`{n}`' for n in unsupported)}; send the full conversation "
                               "without `thread`, or leave that field out",
                               {"error_code": "thread_unsupported_request", "unsupported": unsupported})
        owner = owner_of(headers)  # a hash of the key, as the Responses API's store keeps it
        if thread["type"] == "create":
            return Turn(body, owner, None, (delta,))
        repeated = [name for name in CREATE_ONLY if name in body]
        if repeated:  # ours: the SDK says only that the API refuses them on a continue
            return ApiError(400, "invalid_request_error", f"{repeated[0]}: cannot be sent with "
                            '`thread: {"type": "continue"}`: the thread keeps the one it was created with; '
                            'to change it, replay the full conversation with `thread: {"type": "create"}`')
        previous = thread["previous_message_id"]
        named = f"`{previous}`" if _MESSAGE_ID.fullmatch(previous) else "the `previous_message_id` sent"
        if (owner, previous) in self._continued:  # ours, after the SDK's description of the error
            return ThreadError(400, "invalid_request_error", f"thread.previous_message_id: {named} has already "
                               "been continued, and each response can be continued only once; continue from "
                               "the thread's most recent response `id`",
                               {"error_code": "thread_already_continued"})
        held = self._live((owner, previous))
        if held is None:  # ours, after the SDK's description of the error
            return ThreadError(404, "not_found_error", f"thread.previous_message_id: no thread state was found "
                               f"for {named}; replay the full conversation with "
                               '`thread: {"type": "create"}` to start a new thread',
                               {"error_code": "thread_not_found"})
        whole = {**body, **json.loads(held.fields), "messages": [*_messages(held.chunks), *body["messages"]]}
        return Turn(whole, owner, previous, (*held.chunks, delta))

    def store(self, turn: Turn, message: dict) -> None:
        """Hold the conversation of `turn` with its answer under the answer's id; the answer it
        continued from counts as continued from now on."""
        fields = _dump({name: turn.body[name] for name in CREATE_ONLY if name in turn.body})
        chunks = (*turn.chunks, _dump([{"role": "assistant", "content": message["content"]}]))
        size = sum(map(len, chunks)) + len(fields)
        now = self.clock()
        with self._lock:
            if turn.previous is not None:
                self._forget((turn.owner, turn.previous))
                self._continued[(turn.owner, turn.previous)] = None
                while len(self._continued) > MAX_CONTINUED:
                    self._continued.popitem(last=False)
            if size > self.max_bytes:  # not held: the next continue is a thread_not_found, and the SDK replays
                return
            while self._held and (len(self._held) >= self.max_threads or self.bytes + size > self.max_bytes
                                  or next(iter(self._held.values())).expires <= now):
                self._forget(next(iter(self._held)))
            self._held[(turn.owner, message["id"])] = _Held(chunks, fields, size, now + self.ttl)
            self.bytes += size

    def _live(self, key: tuple[str, str]) -> _Held | None:
        with self._lock:
            held = self._held.get(key)
            if held is not None and held.expires <= self.clock():
                self._forget(key)
                return None
            return held

    def _forget(self, key: tuple[str, str]) -> None:
        gone = self._held.pop(key, None)
        if gone is not None:
            self.bytes -= gone.size


def _used(name: str, value: Any) -> bool:
    """Whether a request field asks for something threads do not support (`null`, an empty list
    or object, and `thinking: {"type": "disabled"}` ask for nothing: never stricter than the API)."""
    if value is None or value in ({}, []):
        return False
    return not (name == "thinking" and isinstance(value, dict) and value.get("type") == "disabled")


def _dump(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _messages(chunks: tuple[bytes, ...]) -> list[dict]:
    return [m for chunk in chunks for m in json.loads(chunk.decode("utf-8", "surrogatepass"))]
