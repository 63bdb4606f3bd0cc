"""The mock Messages API: one object that answers HTTP requests as the real API would.

`MockAPI.handle()` turns a request (method, path, headers, body bytes) into a
`MockReply`; `transport.py` plugs it into httpx2 in-process and `server.py` puts it
behind a socket, so notebooks, tests and curl all meet exactly the same behaviour.

A request passes the real API's gates in its order: size (the real 413 comes from the
proxy in front of the API, before anything else), CORS (cors.py: a browser's preflight
is answered, a browser's request without `anthropic-dangerous-direct-browser-access:
true` refused), route, authentication, `anthropic-version` (and `anthropic-beta`: a name
the mock does not know is the API's 400; known ones let in the beta fields), JSON, validation (the
schema, then the model: one the catalog in models.py does not serve is the API's 404,
then the rules). Two mock-only steps serve lessons: an injected
*fault* (429, 529, 500, slow, dropped; or a random one in flaky mode) comes before
validation, to show retries; a *script* of exact answers comes after it, so a broken
conversation still fails as it would live.

Every answer can also be streamed: with `"stream": true` the same message goes out as
the API's server-sent events (stream.py), paced if asked (pacing.py), and possibly
broken midway by a fault (`cut`, `error_after`: faults.py). An error decided before
the stream starts (validation, a fault's status, a scripted error) is plain JSON with
its status, as the real API's are.

Everything is deterministic: ids come from counters (`msg_mock_0001`, `toolu_mock_0001`,
`req_mock_0001`), usage from `miniagent.tokens`, flakiness from a seeded generator, and
a stream's pieces from the same estimate, so the same requests give the same bytes.

`GET /v1/models` and `GET /v1/models/{model_id}` answer from the same catalog
(models.py); `MockAPI(models=...)` replaces it.

The mock speaks OpenAI's API too, with the same brain: `POST /v1/chat/completions`
(openai_chat.py translates the request to the canonical Messages form and the answer
back, openai_stream.py streams it), `POST /v1/embeddings` (embeddings.py), and
`GET /v1/models` in OpenAI's list shape when the request comes from an OpenAI client
(`Authorization: Bearer` and no `anthropic-version`; openai_wire.py). Its errors have
OpenAI's shape; scripts, faults, pacing and records work there as here (a script is
written once, in the Messages form, and comes out translated). `POST /v1/responses`, the
Responses API, is served the same way (openai_responses.py, openai_responses_stream.py),
with the responses it stores (`mock.responses`, bounded) behind `previous_response_id`
and `GET`/`DELETE /v1/responses/{id}`. On `POST /v1/messages`, a `thread` (the beta message
threads) keeps the conversation on the server, bounded (`mock.threads`, threads.py).

Control endpoints (mock-only, never recorded, no request id used): `POST /_mock/script`,
`POST /_mock/fault`, `POST /_mock/pace`, `GET /_mock/requests`, `DELETE /_mock/requests`,
`POST /_mock/reset`.
They need the same key as the API when the mock has `api_keys` (a workshop server
listens on the room's network, and the records hold everyone's requests), and none
otherwise.

Nothing a client sends can make `handle()` raise, or make the mock's memory grow
without bound: records, scripts and faults are all capped (see records.py, faults.py).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable, Iterable, Mapping
from urllib.parse import urlsplit

import httpx2

from miniagent.mock import brain as _brain
from miniagent.mock import context_editing, cors, embeddings, openai_chat, openai_stream, openai_wire, safejson, stream
from miniagent.mock import openai_responses, openai_responses_stream
from miniagent.mock.caching import PromptCache
from miniagent.mock.thinking import output_tokens
from miniagent.mock.faults import (DEFAULT_RETRY_AFTER, MAX_RETRY_AFTER, Fault, FaultQueue, Flaky, is_error_status,
                                   make_fault, parse_fault_header, script_fault, seconds)
from miniagent.mock.models import MODELS_PATH, Catalog, catalog_from
from miniagent.mock.openai_wire import CHAT_PATH, EMBEDDINGS_PATH, OpenAIError, Refuse
from miniagent.mock.openai_responses import RESPONSES_PATH, ResponseStore
from miniagent.mock.pacing import Pacing, pacing_from, parse_pace_header, waits
from miniagent.mock.records import MAX_RECORD_BYTES, MAX_RECORDS, REDACTED, RecordLog
from miniagent.mock.threads import ThreadStore, Turn
from miniagent.mock.validate import SUPPORTED_VERSIONS, ApiError, parse_betas, validate_request
from miniagent.tokens import estimate_request

__all__ = ["MockAPI", "MockReply", "error_reply", "parse_fault_header", "DEFAULT_RETRY_AFTER", "REDACTED",
           "MAX_BODY_BYTES"]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
MAX_BODY_BYTES = 32 * 1024 * 1024  # the real limit for Messages and token counting
MAX_SCRIPT = 1_000                  # scripted responses waiting
MAX_SCRIPT_BYTES = MAX_BODY_BYTES   # their total size as JSON
NO_RETRY_STATUSES = (400, 401, 403, 404, 413)
API_ROUTES = (("POST", MESSAGES_PATH), ("POST", COUNT_TOKENS_PATH), ("GET", MODELS_PATH),
              ("GET", MODELS_PATH + "/{model_id}"), ("POST", CHAT_PATH), ("POST", EMBEDDINGS_PATH),
              ("POST", RESPONSES_PATH), ("GET", RESPONSES_PATH + "/{response_id}"),
              ("DELETE", RESPONSES_PATH + "/{response_id}"))
MODEL_CALLS = (MESSAGES_PATH, CHAT_PATH, RESPONSES_PATH)  # the calls a model answers: scripts, queued faults, pacing
CONTROL_ROUTES = (("POST", "/_mock/script"), ("POST", "/_mock/fault"), ("POST", "/_mock/pace"),
                  ("GET", "/_mock/requests"), ("DELETE", "/_mock/requests"), ("POST", "/_mock/reset"))
STREAM_CONTENT_TYPE = "text/event-stream; charset=utf-8"
INTERNAL_ERROR = "Internal error in the mock itself (a bug in the mock, not in your request)"
CONTROL_REQUEST_ID = "req_mock_control"
HTTP_REQUEST_ID = "req_mock_http"  # errors the server decides before the API sees the request

ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 408: "timeout_error", 413: "request_too_large",
    429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error",
}
# "Overloaded" is the real API's text; the other two are ours (the real ones are not documented).
_FAULT_MESSAGES = {
    429: "Rate limited: too many requests (fault injected by the mock). Retry after the retry-after delay.",
    500: "Internal server error",
    529: "Overloaded",
}
_FLAKY_MESSAGES = {
    429: "Rate limited: too many requests (the mock's flaky mode). Retry after the retry-after delay.",
    529: "Overloaded",
}


@dataclass
class MockReply:
    """What the server sends back. `delay` seconds pass before it is sent; `drop`
    means the connection closes with no response at all.

    A stream has `events`: (seconds to wait, bytes) chunks, written one by one as they
    become due, and `event_count` events in all. `broken`: the answer ends with a dropped
    connection instead of its proper end (a stream's last chunk, or the rest of a body
    whose `content-length` header promised more than `body`).
    """

    status: int
    headers: dict[str, str]
    body: bytes
    delay: float = 0.0
    drop: bool = False
    events: list[tuple[float, bytes]] | None = None
    event_count: int = 0
    broken: bool = False

    @property
    def sent(self) -> bytes:
        """The body bytes that go out (a stream's events joined): what a record keeps."""
        return self.body if self.events is None else b"".join(chunk for _, chunk in self.events)


@dataclass
class _Answer:
    """A model's answer, before it is sent plain or streamed."""

    message: dict
    cut_json: str | None = None
    fault: Fault | None = None
    thread: Turn | None = None  # a threaded request's turn, held once its answer has gone out whole


@dataclass
class _Scripted:
    item: dict | Callable[[dict], dict]
    repeat: bool = False
    size: int = 0


class MockAPI:
    """The state of one mock API: keys, script queue, faults, counters, records.

    `api_keys`: the keys accepted (None: any non-empty key); they guard the control
    endpoints too. `strict_alternation`: reject consecutive same-role messages instead
    of merging them (the older rule). `brain`: `(body) -> partial message`, the default
    answerer when nothing is scripted. `flaky`: the probability (0 to below 1) that a
    call fails with a 429 or a 529, drawn from `random.Random(seed)`; never more than
    two such failures in a row. `max_records` / `max_record_bytes`: how many requests,
    and how many bytes of them, `records` keeps (the oldest go first). `pacing`:
    `{"first": seconds, "rate": tokens per second}` (or a `Pacing`), how fast answers
    arrive (see pacing.py; default: at once). `models`: the models the mock answers as
    (models.py), names or dicts, or a `Catalog`; any other model name is the API's 404.
    Default: the catalog generated from the official SDK; for one more name, e.g.
    `MockAPI(models=[*miniagent.mock.models.MODELS, "workshop-model"])`. `clock`: the
    seconds the prompt cache (caching.py) reads its lifetimes from (default
    `time.monotonic`; a test can pass its own and let an hour pass at once).
    """

    def __init__(self, *, api_keys: set[str] | None = None, strict_alternation: bool = False,
                 brain: Callable[[dict], dict] | None = None, flaky: float = 0.0, seed: int = 0,
                 max_records: int = MAX_RECORDS, max_record_bytes: int = MAX_RECORD_BYTES,
                 pacing: Pacing | Mapping[str, Any] | None = None,
                 models: Catalog | Iterable[str | Mapping[str, Any]] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if api_keys is not None and not all(isinstance(k, str) and k for k in api_keys):
            raise ValueError("api_keys must be a set of non-empty strings, or None to accept any key")
        self.api_keys = set(api_keys) if api_keys is not None else None
        self.strict_alternation = strict_alternation
        self.models = catalog_from(models)
        self._brain = brain
        self._default_pacing = pacing_from(pacing)
        self._flaky = Flaky(flaky, seed)
        self._records = RecordLog(max_records, max_record_bytes)
        self._lock = threading.RLock()  # re-entrant: a scripted callable may read mock.records
        self._cache = PromptCache(clock)  # the prompts cached by cache_control (caching.py)
        self.threads = ThreadStore(clock)  # the conversations held for message threads (threads.py)
        self.responses = ResponseStore()  # the Responses API's stored responses (openai_responses.py)
        self.reset()

    # --- state --------------------------------------------------------------------

    def reset(self) -> None:
        """Forget records, scripted responses, pending faults, cached prompts and any `pace()`; restart
        the id counters and the flaky pattern. (The pacing goes back to the one given to the constructor.)"""
        with self._lock:
            self._records.clear()
            self._cache.clear()
            self.responses.clear()
            self.threads.clear()
            self._script: deque[_Scripted] = deque()
            self._faults = FaultQueue()
            self._flaky.reset()
            self._counters = {"req": 0, "msg": 0, "toolu": 0}
            self._pacing = self._default_pacing

    @property
    def pacing(self) -> Pacing:
        """How fast answers arrive (see `pace()`); may be set to a Pacing, a dict or None."""
        return self._pacing

    @pacing.setter
    def pacing(self, value: Pacing | Mapping[str, Any] | None) -> None:
        checked = pacing_from(value)
        with self._lock:
            self._pacing = checked

    def pace(self, first: float = 0.0, rate: float | None = None) -> Pacing:
        """How fast the next answers arrive: `first` seconds to the first token, then `rate` tokens
        per second (None: the rest at once); `pace()` alone turns pacing off. The `x-mock-pace`
        header overrides it for one request. Bounds in pacing.py (ValueError beyond them)."""
        self.pacing = Pacing(first, rate)
        return self._pacing

    def clear_records(self) -> int:
        """Forget the records only (scripts, faults and counters stay); returns how many there were."""
        with self._lock:
            return self._records.clear()

    @property
    def records(self) -> list[dict]:
        """The API requests received that passed authentication, oldest first (control endpoints excluded).

        Each is {"n", "method", "path", "headers", "body", "raw", "status", "response"},
        with the auth headers replaced by "<redacted>"; `raw` is the body exactly as it
        arrived (text), `body` the same parsed; `response` the answer parsed (for a
        stream, the list of events sent, up to where a fault broke it; for a body a fault
        cut short, the text sent); `status`/`response` are None for a dropped connection.
        Only the newest `max_records` requests are kept, within `max_record_bytes`; a
        request alone larger than that keeps no headers or bodies.
        Each read returns fresh copies.
        """
        with self._lock:
            return self._records.views()

    @property
    def requests(self) -> list[dict]:
        """The records of `POST /v1/messages` calls only."""
        with self._lock:
            return self._records.views(MESSAGES_PATH)

    @property
    def last_request(self) -> dict | None:
        """The record of the latest `POST /v1/messages` call, or None."""
        with self._lock:
            return self._records.last(MESSAGES_PATH)

    def script(self, *responses: dict | Callable[[dict], dict], repeat: bool = False) -> None:
        """Queue exact answers for the next model calls that pass validation: `POST /v1/messages`,
        and `POST /v1/chat/completions`, which gets the same answer in OpenAI's shape (its
        tool_use blocks become tool_calls, its stop_reason a finish_reason, a scripted error
        OpenAI's error body), as does `POST /v1/responses` (tool_use blocks as function_call
        items). A callable is given the request in the Messages form.

        Each response is one of:
        - a partial message `{"content": [...] or "text", "stop_reason": ..., "stop_sequence": ...}`
          (stop_reason defaults to "tool_use" if there is a tool_use block, else "end_turn";
          tool_use blocks without an "id" get one);
        - an error `{"status": 429, "error": {"type": ..., "message": ...}}` (type and
          message default from the status; add "retry_after": seconds for a 429);
        - a callable `(body) -> one of the above`, called with the request body.
        A partial message may carry `"fault": {"cut": N}` (or `{"error_after": N}`, and/or
        `{"delay": S}`): its answer breaks on the way, unless the request brings a fault of
        its own (see `fault()`; `scripts.cut_tool_call` is a ready-made one).
        With `repeat=True` (one response only) the response is used for every later
        call until `reset()`: e.g. a model that never stops calling tools. At most
        `MAX_SCRIPT` responses, `MAX_SCRIPT_BYTES` of JSON in all, wait at once.
        """
        if repeat and len(responses) != 1:
            raise ValueError("script(..., repeat=True) takes exactly one response (it repeats forever)")
        entries = [_Scripted(item, repeat, 0 if callable(item) else _checked_size(item)) for item in responses]
        with self._lock:
            if self._script and self._script[-1].repeat:
                raise ValueError("the script already ends with a repeating response, so anything queued "
                                 "after it would never be used; call reset() first")
            if len(self._script) + len(entries) > MAX_SCRIPT or \
                    sum(e.size for e in self._script) + sum(e.size for e in entries) > MAX_SCRIPT_BYTES:
                raise ValueError(f"the script queue holds at most {MAX_SCRIPT} responses and {MAX_SCRIPT_BYTES} "
                                 "bytes of JSON; let the queued ones be used, or call reset() first")
            self._script.extend(entries)

    def script_json(self, payload: Any) -> None:
        """`script()` from JSON, as the control endpoint and `--script FILE` receive it:
        a list of responses, or `{"responses": [...], "repeat": true}`."""
        if isinstance(payload, dict) and isinstance(payload.get("responses"), list):
            self.script(*payload["responses"], repeat=bool(payload.get("repeat", False)))
        elif isinstance(payload, list):
            self.script(*payload)
        else:
            raise ValueError('a script must be a JSON list of responses, or {"responses": [...], "repeat": true}')

    def fault(self, status: int | None = None, *, times: int = 1, retry_after: float = DEFAULT_RETRY_AFTER,
              delay: float = 0.0, drop: bool = False, message: str | None = None, cut: int | None = None,
              error_after: int | None = None) -> None:
        """Make the next `times` model calls (`POST /v1/messages`, `/v1/chat/completions`, `/v1/responses`) fail.

        `status` 429 answers `rate_limit_error` with `retry-after` (seconds) and
        `retry-after-ms` headers; 529 `overloaded_error`; 500 `api_error`; any other
        4xx/5xx the matching type. `delay` seconds pass before the answer (alone: a
        slow success). `drop=True` closes the connection without any response.
        `cut=N`: the answer breaks off, the connection dropped, after N events of a stream
        (N bytes of a plain body). `error_after=N`: a stream sends N events, then an
        `error` event (overloaded_error); a plain answer is a 529 instead. (faults.py.)
        Bounds (ValueError beyond them): `delay` at most 60 s, `retry_after` at most a day
        (a header only), `cut`/`error_after` at most 1,000,000, `times` at most 1,000,000,
        1,000 fault() calls waiting.
        """
        made = make_fault(status, retry_after=retry_after, delay=delay, drop=drop, message=message, cut=cut,
                          error_after=error_after)
        with self._lock:
            self._faults.add(made, times)

    # --- the one entry point ----------------------------------------------------------

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> MockReply:
        """Answer one HTTP request. Never raises: bad input gets the API's error reply, and
        a bug in the mock a 500 `api_error` that says so. `path` is the request target,
        with its query string (`GET /v1/models?limit=5`)."""
        lowered: dict[str, str] = {}
        try:
            lowered = {str(k).lower(): str(v) for k, v in headers.items()}
            target = str(path)
            reply = self._handle(str(method).upper(), _route_path(target), lowered, bytes(body), _query(target))
        except Exception as exc:  # the last resort: even a bug here must be an HTTP answer
            where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            at = f" at {where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else ""
            # the type and place only: an exception's text could quote a header, and so a key
            reply = error_reply(500, f"{INTERNAL_ERROR}: {type(exc).__name__}{at}", "req_mock_error")
        # a page may read every answer, if it said so (an OpenAI client need not: see _handle)
        if "origin" in lowered and openai_wire.speaks_openai(_route_path(str(path)), lowered):
            reply.headers.update(cors.EXPOSED)
        else:
            reply.headers.update(cors.answer_headers(lowered))
        return reply

    def _handle(self, method: str, path: str, headers: dict[str, str], body: bytes, query: str = "") -> MockReply:
        if len(body) > MAX_BODY_BYTES:
            return error_reply(413, f"Request exceeds the maximum size of {MAX_BODY_BYTES} bytes")
        if method == "OPTIONS":  # a browser's preflight: no key, no record, no request id (cors.py)
            return MockReply(204, cors.preflight_headers(headers), b"")
        openai = openai_wire.speaks_openai(path, headers)
        # The browser header is the Messages API's rule; OpenAI's API serves pages without it
        # [UNVERIFIED: its exact CORS headers], so an OpenAI client is never refused here.
        if cors.refused(headers) and not openai:
            return error_reply(401, cors.REFUSED)
        if path.startswith("/_mock/"):
            return self._control(method, path, headers, body)
        with self._lock:
            self._counters["req"] += 1
            n = self._counters["req"]
            rid = f"req_mock_{n:04d}"
            if not _api_route(method, path):
                if openai:
                    return _openai_error(openai_wire.not_found(method, path, _served()), rid)
                return _error(_not_found(method, path), rid)
            problem = openai_wire.check_auth(headers, self.api_keys) if openai else _check_auth(headers, self.api_keys)
            if problem:  # not recorded: a stranger's request stores nothing
                return _openai_error(problem, rid) if openai else _error(problem, rid)
            if path.startswith(MODELS_PATH):
                reply = self._openai_models(path, rid) if openai else self._models(path, query, headers, rid)
            elif path.startswith(RESPONSES_PATH + "/"):
                reply = _stored_response(method, path, self.responses, headers, rid)
            elif openai:
                reply = self._openai_call(path, headers, body, rid)
            else:
                reply = self._answer(path, headers, body, rid)
            self._records.add(n, method, path, headers, body, None if reply.drop else reply.status,
                              None if reply.drop else reply.sent)
        return reply

    def _models(self, path: str, query: str, headers: dict[str, str], rid: str) -> MockReply:
        """`GET /v1/models` (a page) and `GET /v1/models/{model_id}`, from the catalog (models.py).
        No faults or pacing here: those serve the lessons about calling a model."""
        problem = _check_version(headers)
        if problem:
            return _error(problem, rid)
        answer = self.models.listing(query) if path == MODELS_PATH else \
            self.models.retrieve(path[len(MODELS_PATH) + 1:])
        return _error(answer, rid) if isinstance(answer, ApiError) else _json_reply(200, answer, rid)

    def _openai_models(self, path: str, rid: str) -> MockReply:
        """OpenAI's `GET /v1/models` and `GET /v1/models/{model}`: the same catalog, in OpenAI's shape."""
        answer = self.models.openai_listing() if path == MODELS_PATH else \
            self.models.openai_retrieve(path[len(MODELS_PATH) + 1:])
        return _openai_json(200, answer, rid)

    def _answer(self, path: str, headers: dict[str, str], raw: bytes, rid: str) -> MockReply:
        problem = _check_version(headers) or parse_betas(headers.get("anthropic-beta"))[1]
        if problem:
            return _error(problem, rid)
        try:
            body = safejson.loads(raw)
            fault = self._take_fault(headers.get("x-mock-fault"), path)
            pacing = self._pacing_for(headers.get("x-mock-pace"), path)
        except ValueError as exc:
            return _error(_invalid(str(exc)), rid)
        streamed = path == MESSAGES_PATH and isinstance(body, dict) and body.get("stream") is True
        if fault and fault.error_after is not None and not streamed:  # no "after the 200": the 529 comes first
            fault = replace(fault, status=529, error_after=None)
        if fault and fault.drop:
            return MockReply(0, {}, b"", delay=fault.delay, drop=True)
        if fault and fault.status:
            reply = _status_error(fault.status, rid, message=fault.message, retry_after=fault.retry_after,
                                  source="Mock fault")
        else:
            outcome = self._valid_answer(path, headers, body, rid)
            if isinstance(outcome, _Answer):
                fault = fault or outcome.fault  # the request's own fault wins over a scripted one
                reply = _deliver(outcome, rid, streamed=streamed, pacing=pacing, fault=fault)
                if outcome.thread and not reply.broken and not (fault and fault.error_after is not None):
                    self.threads.store(outcome.thread, outcome.message)
            else:
                reply = outcome
        return _with_fault(reply, fault)

    # --- the OpenAI surfaces (openai_wire.py, openai_chat.py, embeddings.py) -------------------------

    def _openai_call(self, path: str, headers: dict[str, str], raw: bytes, rid: str) -> MockReply:
        """`POST /v1/chat/completions`, `/v1/responses` and `/v1/embeddings`, through the same gates as `_answer`:
        JSON, a fault (before validation), validation, a script or the brain, delivery."""
        try:
            body = safejson.loads(raw)
        except ValueError as exc:  # the API's words, then the mock's reason (too deep, NaN...)
            return _openai_error(OpenAIError(400, f"{openai_wire.NOT_JSON} {exc}"), rid)
        try:
            fault = self._take_fault(headers.get("x-mock-fault"), path, openai=True)
            pacing = self._pacing_for(headers.get("x-mock-pace"), path)
        except ValueError as exc:
            return _openai_error(OpenAIError(400, str(exc)), rid)
        streamed = path in (CHAT_PATH, RESPONSES_PATH) and isinstance(body, dict) and body.get("stream") is True
        if fault and fault.error_after is not None and not streamed:  # no "after the 200": the overload comes first
            fault = replace(fault, status=openai_wire.OVERLOADED_STATUS, error_after=None)
        if fault and fault.drop:
            return MockReply(0, {}, b"", delay=fault.delay, drop=True)
        if fault and fault.status:
            error = openai_wire.status_error(fault.status, message=fault.message, retry_after=fault.retry_after)
            reply = _openai_error(error, rid, _retry_headers(fault.status, fault.retry_after))
        elif path == EMBEDDINGS_PATH:
            try:
                reply = _openai_json(200, embeddings.create(body), rid)
            except Refuse as refused:
                reply = _openai_error(refused.error, rid)
        else:
            try:  # Chat Completions, or the Responses API (which also reads and keeps stored responses)
                request = openai_responses.read_request(body, self.responses, headers) \
                    if path == RESPONSES_PATH else None
                outcome = self._chat_answer(request.canonical if request else openai_chat.read_request(body), rid)
            except Refuse as refused:
                outcome = _openai_error(refused.error, rid)
            if isinstance(outcome, MockReply):
                reply = outcome
            else:
                fault = fault or outcome.fault  # the request's own fault wins over a scripted one
                reply = _deliver_chat(body, outcome, rid, streamed=streamed, pacing=pacing, fault=fault, request=request)
        return _with_fault(reply, fault)

    def _chat_answer(self, canonical: dict, rid: str) -> MockReply | _Answer:
        """An error as a reply, or the answer in the Messages form, to deliver in OpenAI's."""
        try:
            partial = self._next_partial(canonical, openai_chat.brain_view(canonical))
        except Exception as exc:  # a bug in the brain or a scripted callable: report it as a 500
            return _openai_error(OpenAIError(500, f"the mock failed to answer: {type(exc).__name__}: {exc} (a bug "
                                                  "in the mock's brain or in a scripted callable)", "server_error"), rid)
        if "status" in partial:
            error = partial.get("error") or {}
            retry_after = partial.get("retry_after", DEFAULT_RETRY_AFTER)
            problem = openai_wire.status_error(partial["status"], message=error.get("message"),
                                               type_=error.get("type"), retry_after=retry_after)
            return _openai_error(problem, rid, _retry_headers(partial["status"], retry_after))
        cut_json = partial.get("cut_json")
        fault = script_fault(partial["fault"]) if partial.get("fault") is not None else None
        message = self._message(canonical, partial, tool_prefix="call_mock_")
        return _Answer(message, cut_json if isinstance(cut_json, str) else None, fault)

    def _valid_answer(self, path: str, headers: dict[str, str], body: Any, rid: str) -> MockReply | _Answer:
        """An error or a token count as a reply; a model's answer as an `_Answer` (to send plain or streamed)."""
        counting = path == COUNT_TOKENS_PATH
        betas = parse_betas(headers.get("anthropic-beta"))[0]
        turn = None if counting else self.threads.resolve(body, headers, headers["anthropic-version"], bool(betas))
        if isinstance(turn, ApiError):
            return _error(turn, rid)
        body = turn.body if turn else body  # a continue: the held conversation and the new turn (threads.py)
        problem = validate_request(body, version=headers["anthropic-version"], count_tokens=counting,
                                   strict_alternation=self.strict_alternation, models=self.models, betas=betas)
        if problem:
            return _error(problem, rid)
        if counting:
            return _json_reply(200, {"input_tokens": estimate_request(body)}, rid)
        body, applied = context_editing.apply(body, betas)  # the server's own edits, before the model reads it
        try:
            partial = self._next_partial(body)
        except Exception as exc:  # a bug in the brain or a scripted callable: report it as a 500
            return _error(ApiError(500, "api_error", f"the mock failed to answer: {type(exc).__name__}: "
                                   f"{exc} (a bug in the mock's brain or in a scripted callable)"), rid)
        if "status" in partial:
            error = partial.get("error") or {}
            return _status_error(partial["status"], rid, type_=error.get("type"), message=error.get("message"),
                                 retry_after=partial.get("retry_after", DEFAULT_RETRY_AFTER), source="Scripted error")
        cut_json = partial.get("cut_json")
        fault = script_fault(partial["fault"]) if partial.get("fault") is not None else None
        message = self._message(body, partial)
        if applied is not None:
            message["context_management"] = {"applied_edits": applied}
        return _Answer(message, cut_json if isinstance(cut_json, str) else None, fault, turn)

    def _pacing_for(self, header: str | None, path: str) -> Pacing:
        """The `x-mock-pace` header's pacing, else the mock's; token counts and embeddings are never paced."""
        if path not in MODEL_CALLS:
            return Pacing()
        return parse_pace_header(header) if header is not None else self.pacing

    def _take_fault(self, header: str | None, path: str, openai: bool = False) -> Fault | None:
        """The fault for this request: the `x-mock-fault` header first, then the queue
        (queued faults apply to the model calls only), then flakiness (on the OpenAI
        surfaces, its 529 is OpenAI's 503, in OpenAI's words)."""
        if header is not None:
            return parse_fault_header(header)
        if path in MODEL_CALLS:
            queued = self._faults.take()
            if queued:
                return queued
        status = self._flaky.next_status()
        if status and openai:
            status = openai_wire.OVERLOADED_STATUS if status == 529 else status
            return Fault(status, message=openai_wire.status_error(status, flaky=True,
                                                                  retry_after=DEFAULT_RETRY_AFTER).message)
        return Fault(status, message=_FLAKY_MESSAGES[status]) if status else None

    def _next_partial(self, body: dict, view: dict | None = None) -> dict:
        """The next scripted answer, else the brain's (which reads `view`, if given, instead of the
        request). Each gets its own copy."""
        if not self._script:
            return (self._brain or _brain.respond)(copy.deepcopy(view if view is not None else body))
        entry = self._script[0] if self._script[0].repeat else self._script.popleft()
        item = entry.item
        if callable(item):
            item = item(copy.deepcopy(body))
            _checked_size(item)
        return copy.deepcopy(item)

    def _message(self, body: dict, partial: dict, tool_prefix: str = "toolu_mock_") -> dict:
        """A full Message (wire-format §1.5) from a partial one: ids, model, usage (`_usage`).
        `tool_prefix`: the tool call ids' (OpenAI's look like `call_...`)."""
        content = _content_blocks(partial.get("content", []))
        for k, block in enumerate(content):
            if block.get("type") == "tool_use" and "id" not in block:
                self._counters["toolu"] += 1
                # id right after type, where the real API puts it: printed wire reads the same
                content[k] = block = {"type": "tool_use", "id": f"{tool_prefix}{self._counters['toolu']:04d}", **block}
            if block.get("type") == "tool_use" and "caller" not in block:
                # who made the call: the real API always says (the model itself: "direct"), after the
                # name (wire-format §5.B), so an SDK's model_dump() holds a caller it may send back
                head = {key: value for key, value in block.items() if key != "input"}
                content[k] = {**head, "caller": {"type": "direct"}, **({"input": block["input"]} if "input" in block else {})}
        self._counters["msg"] += 1
        uses_tools = any(b.get("type") == "tool_use" for b in content)
        _log_answer(body, content)
        return {
            "id": f"msg_mock_{self._counters['msg']:04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": partial.get("stop_reason") or ("tool_use" if uses_tools else "end_turn"),
            "stop_sequence": partial.get("stop_sequence"),
            "usage": self._usage(body, content),
        }

    def _usage(self, body: dict, content: list[dict]) -> dict:
        """Usage from the token estimate: output counts thinking too, shown or not (thinking.py); with
        cache_control breakpoints, the input splits into read, written and the rest (caching.py), which
        add up to the uncached input_tokens. Without breakpoints, the same keys as ever, in the same order."""
        usage = {"input_tokens": estimate_request(body), "output_tokens": output_tokens(content),
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        cached = self._cache.account(body)
        if cached is not None:
            usage["input_tokens"] -= cached.read + cached.created
            usage["cache_creation_input_tokens"] = cached.created
            usage["cache_read_input_tokens"] = cached.read
            usage["cache_creation"] = {"ephemeral_5m_input_tokens": cached.created_5m,
                                       "ephemeral_1h_input_tokens": cached.created_1h}
        usage["service_tier"] = "standard"
        return usage

    # --- control endpoints ------------------------------------------------------------

    def _control(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> MockReply:
        """The mock's own endpoints, so any HTTP client can script it and read its records."""
        rid = CONTROL_REQUEST_ID
        problem = _check_auth(headers, self.api_keys) if self.api_keys is not None else None
        if problem:
            return _error(problem, rid)
        try:
            if (method, path) == ("GET", "/_mock/requests"):
                return _json_reply(200, self.records, rid)
            if (method, path) == ("DELETE", "/_mock/requests"):
                return _json_reply(200, {"cleared": self.clear_records()}, rid)
            if (method, path) == ("POST", "/_mock/reset"):
                self.reset()
                return _json_reply(200, {"reset": True}, rid)
            if (method, path) == ("POST", "/_mock/script"):
                self.script_json(safejson.loads(raw or b"null"))
                return _json_reply(200, {"queued": len(self._script)}, rid)
            if (method, path) == ("POST", "/_mock/fault"):
                kwargs = safejson.loads(raw or b"{}")
                if not isinstance(kwargs, dict):
                    raise ValueError('send a JSON object of fault() arguments, e.g. {"status": 429, "times": 2}')
                self.fault(**kwargs)
                return _json_reply(200, {"pending_faults": self._faults.pending}, rid)
            if (method, path) == ("POST", "/_mock/pace"):
                kwargs = safejson.loads(raw or b"{}")
                if not isinstance(kwargs, dict):
                    raise ValueError('send a JSON object of pace() arguments, e.g. {"first": 0.2, "rate": 40}, '
                                     "or {} to turn pacing off")
                return _json_reply(200, {"pacing": self.pace(**kwargs).as_dict()}, rid)
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            return _error(_invalid(f"{path}: {exc}"), rid)
        return _error(_not_found(method, path), rid)

    # --- ways in ----------------------------------------------------------------------

    def transport(self, *, sleep: Callable[[float], None] = time.sleep) -> httpx2.BaseTransport:
        """An httpx2 transport that answers in-process: `httpx2.Client(transport=mock.transport())`.

        Delays honour the request's read timeout (a delay longer than it sleeps for the
        timeout and raises `httpx2.ReadTimeout`). `sleep` is injectable for tests.
        """
        from miniagent.mock.transport import Transport
        return Transport(self, sleep)

    def async_transport(self, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
                        ) -> httpx2.AsyncBaseTransport:
        """The same for `httpx2.AsyncClient`."""
        from miniagent.mock.transport import AsyncTransport
        return AsyncTransport(self, sleep)


# --- checks ---------------------------------------------------------------------------


def _log_answer(body: dict, content: list[dict]) -> None:
    """With MINIAGENT_CALL_LOG set (scripts/nbtools.py sets it while it runs a notebook), one line per
    answer, appended to that file: the tools called, each with the numbers in its arguments, and
    whether each tool result in the request was an error. Both editions of a notebook must log the
    same lines: a translated question that takes the mock down another path shows here."""
    path = os.environ.get("MINIAGENT_CALL_LOG")
    if not path:
        return
    last = (body.get("messages") or [{}])[-1]
    sent = last.get("content") if isinstance(last, dict) and last.get("role") == "user" else None
    results = ["error" if b.get("is_error") else "ok" for b in (sent if isinstance(sent, list) else [])
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    calls = [f"{b.get('name')}({','.join(re.findall(r'-?[0-9]+(?:[.][0-9]+)?', json.dumps(b.get('input'), ensure_ascii=False)))})"
             for b in content if b.get("type") == "tool_use"]
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"calls": calls, "results": results}) + "\n")


def _check_auth(headers: dict[str, str], keys: set[str] | None) -> ApiError | None:
    """`x-api-key` wins over `Authorization: Bearer` when both are sent. Keys never appear in messages;
    the texts are the real API's, except the one about a malformed Authorization header."""
    key = headers.get("x-api-key")
    if not key and "authorization" in headers:
        scheme, _, token = headers["authorization"].strip().partition(" ")
        if scheme.lower() != "bearer":
            return ApiError(401, "authentication_error",
                            "invalid authorization header: expected 'Authorization: Bearer <API key>'")
        key = token.strip()
    if not key:
        return ApiError(401, "authentication_error", "x-api-key header is required")
    if keys is not None and key not in keys:
        return ApiError(401, "authentication_error", "invalid x-api-key")
    return None


def _check_version(headers: dict[str, str]) -> ApiError | None:
    version = headers.get("anthropic-version")
    if not version:
        return _invalid("anthropic-version: header is required")
    if version not in SUPPORTED_VERSIONS:
        # quoted back only if it looks like a date: a key pasted here by mistake must not be
        sent = repr(version) if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", version) else "the value sent"
        return _invalid(f"anthropic-version: {sent} is not a supported version; "
                        f"use {' or '.join(repr(v) for v in SUPPORTED_VERSIONS)}")
    return None


def _route_path(target: str) -> str:
    """The path to route on: no query string, and the absolute form a proxy sends
    (`POST http://host/v1/messages`) reduced to its path, as HTTP/1.1 servers must."""
    if target[:8].lower().startswith(("http://", "https://")):
        try:
            return urlsplit(target).path or "/"
        except ValueError:  # e.g. "http://[::1/": not a URL, so no route either
            return target
    return target.split("?", 1)[0]


def _query(target: str) -> str:
    """The query string of a request target (either form, as `_route_path` takes them)."""
    if target[:8].lower().startswith(("http://", "https://")):
        try:
            return urlsplit(target).query
        except ValueError:
            return ""
    return target.partition("?")[2]


def _api_route(method: str, path: str) -> bool:
    """One of the API's routes (`GET /v1/models/{model_id}` for any id)."""
    return (method, path) in API_ROUTES or (method == "GET" and path.startswith(MODELS_PATH + "/")
                                            and len(path) > len(MODELS_PATH) + 1) or \
        (method in ("GET", "DELETE") and path.startswith(RESPONSES_PATH + "/") and len(path) > len(RESPONSES_PATH) + 1)


def _not_found(method: str, path: str) -> ApiError:
    """The real API says only "Not Found"; the mock adds what it does serve."""
    served = ", ".join(f"{m} {p}" for m, p in API_ROUTES)
    control = ", ".join(f"{m} {p}" for m, p in CONTROL_ROUTES)
    return ApiError(404, "not_found_error", f"Not Found: the mock has no {method[:20]} {path[:200]}; it serves "
                                            f"{served}, and its control endpoints {control}")


def _checked_size(item: Any) -> int:
    """Check a scripted response (fail at script() time, with a clear message, rather than
    mid-lesson) and return its size as JSON."""
    _check_scripted(item)
    if safejson.too_deep(item):
        raise ValueError(f"a scripted response nests more than {safejson.MAX_JSON_DEPTH} levels deep")
    try:
        return len(json.dumps(item, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a scripted response must be JSON data (dicts, lists, strings, numbers): {exc}") from None


def _check_scripted(item: Any) -> None:
    if not isinstance(item, dict):
        raise ValueError(f"a scripted response must be a dict or a callable, got {type(item).__name__}")
    if "status" in item:
        if not is_error_status(item["status"]):
            raise ValueError(f"a scripted error needs an HTTP error status from 400 to 599, got {item['status']!r}")
        if not isinstance(item.get("error", {}), dict):
            raise ValueError('a scripted error\'s "error" must be {"type": ..., "message": ...}')
        seconds('a scripted error\'s "retry_after"', item.get("retry_after", 0), MAX_RETRY_AFTER)
        return
    content = item.get("content")
    if not isinstance(content, (str, list)) or not all(isinstance(b, dict) and "type" in b
                                                       for b in _content_blocks(content)):
        raise ValueError('a scripted response needs "content": a string or a list of blocks such as '
                         '{"type": "text", "text": "..."}; an error needs "status"')
    unknown = set(item) - {"content", "stop_reason", "stop_sequence", "fault"}
    if unknown:
        raise ValueError(f"a scripted response has unknown keys {sorted(map(str, unknown))}; "
                         "use content, stop_reason, stop_sequence, fault")
    if item.get("fault") is not None:
        script_fault(item["fault"])


def _content_blocks(content: str | list) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


# --- building replies -------------------------------------------------------------------


def _deliver(answer: _Answer, rid: str, *, streamed: bool, pacing: Pacing, fault: Fault | None) -> MockReply:
    """A model's answer as it goes out: plain JSON, or streamed; paced; broken if a fault says so."""
    if fault and fault.error_after is not None and not streamed:  # a scripted one: no "after the 200" either
        return _status_error(529, rid, retry_after=DEFAULT_RETRY_AFTER, source="Mock fault")
    if not streamed and not pacing.active:
        return _json_reply(200, answer.message, rid)
    events = stream.message_events(answer.message, answer.cut_json)
    due = waits(events, pacing)
    if not streamed:  # answered when the whole stream would have ended
        reply = _json_reply(200, answer.message, rid)
        reply.delay = sum(due)
        return reply
    headers = {"content-type": STREAM_CONTENT_TYPE, "request-id": rid}
    return _stream_reply(events, due, fault, dict(stream.OVERLOADED), stream.encode, headers)


def _deliver_chat(body: dict, answer: _Answer, rid: str, *, streamed: bool, pacing: Pacing,
                  fault: Fault | None, request: openai_responses.Request | None = None) -> MockReply:
    """`_deliver` for Chat Completions: the answer as a `chat.completion`, or its chunks (openai_stream.py);
    with a Responses API `request`, as a `response` (kept if asked), or its events (openai_responses_stream.py)."""
    if fault and fault.error_after is not None and not streamed:  # a scripted one: no "after the 200" either
        error = openai_wire.status_error(openai_wire.OVERLOADED_STATUS)
        return _openai_error(error, rid)
    surface: Any = openai_stream if request is None else openai_responses_stream
    if request is None:
        completion = openai_chat.completion(answer.message, body, answer.cut_json)
    else:
        completion = request.answer(answer.message, answer.cut_json)
    if not streamed and not pacing.active:
        return _openai_json(200, completion, rid)
    if request is None:
        options = body.get("stream_options") or {}
        chunks = openai_stream.completion_chunks(completion, include_usage=options.get("include_usage") is True)
        error_event = dict(openai_stream.ERROR)
    else:
        chunks = openai_responses_stream.response_events(completion)
        error_event = openai_responses_stream.error_event(chunks, fault.error_after if fault and fault.error_after else 0)
    due = surface.waits(chunks, pacing)
    if not streamed:  # answered when the whole stream would have ended
        reply = _openai_json(200, completion, rid)
        reply.delay = sum(due)
        return reply
    headers = {"content-type": surface.CONTENT_TYPE, "x-request-id": rid}
    return _stream_reply(chunks, due, fault, error_event, surface.frame, headers)


def _stored_response(method: str, path: str, store: ResponseStore, headers: dict[str, str], rid: str) -> MockReply:
    """`GET` and `DELETE /v1/responses/{id}` (openai_responses.stored)."""
    try:
        return _openai_json(200, openai_responses.stored(method, path, store, headers), rid)
    except Refuse as refused:
        return _openai_error(refused.error, rid)


def _stream_reply(events: list, due: list[float], fault: Fault | None, error_event: dict,
                  framing: Callable[[Any], bytes], headers: dict[str, str]) -> MockReply:
    """A stream as it goes out, whole or broken by a fault: `cut` drops the connection after N events,
    `error_after` sends N events and then the API's error event. Either way its proper end is never sent."""
    broken, ending = False, []
    if fault and fault.cut is not None:
        keep, broken = min(fault.cut, len(events) - 1), True
    elif fault and fault.error_after is not None:
        keep, ending = min(fault.error_after, len(events) - 1), [error_event]
    else:
        keep = len(events)
    sent = events[:keep] + ending
    return MockReply(200, headers, b"", events=stream.chunks(sent, due[:keep] + [0.0] * len(ending), framing),
                     event_count=len(sent), broken=broken)


def _with_fault(reply: MockReply, fault: Fault | None) -> MockReply:
    """A fault's delay, and its cut of a plain body (a stream's cut is made as it is built)."""
    if fault:
        reply.delay += fault.delay
        if fault.cut is not None and reply.events is None:
            reply = _cut_body(reply, fault.cut)
    return reply


def _cut_body(reply: MockReply, count: int) -> MockReply:
    """A plain answer that breaks off after `count` bytes (at most all but one): its content-length
    still announces the whole body, so the client sees the connection close too early."""
    if not reply.body:
        return reply
    whole = len(reply.body)
    headers = {**reply.headers, "content-length": str(whole)}
    return MockReply(reply.status, headers, reply.body[:min(count, whole - 1)], delay=reply.delay, broken=True)


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def error_reply(status: int, message: str, rid: str = HTTP_REQUEST_ID) -> MockReply:
    """An error in the API's shape for any status, typed as the API would type it."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return _error(ApiError(status, kind, message), rid)


def _json_reply(status: int, obj: Any, rid: str, extra: dict[str, str] | None = None) -> MockReply:
    headers = {"content-type": "application/json", "request-id": rid, **(extra or {})}
    # A lone surrogate ("\ud800" in the request, echoed back) cannot be UTF-8: it goes out as
    # the same JSON escape it came in as, and only a surrogate can need it.
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")
    return MockReply(status, headers, body)


def _error(error: ApiError, rid: str, extra: dict[str, str] | None = None) -> MockReply:
    headers = dict(extra or {})
    if error.status in NO_RETRY_STATUSES:
        headers["x-should-retry"] = "false"
    body = {"type": "error", "error": {"type": error.type, "message": error.message}, "request_id": rid}
    if getattr(error, "details", None):  # the API's `error.details` (`error_code`: threads.py)
        body["error"]["details"] = error.details
    return _json_reply(error.status, body, rid, headers)


def _status_error(status: int, rid: str, *, retry_after: float, source: str,
                  type_: str | None = None, message: str | None = None) -> MockReply:
    """An injected fault or a scripted error: type and message default from the status,
    and a 429 says when to retry, in seconds and in milliseconds as the real API does."""
    if not type_:
        type_ = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if not message:
        message = _FAULT_MESSAGES.get(status, f"{source}: HTTP {status}")
    return _error(ApiError(status, type_, message), rid, _retry_headers(status, retry_after))


def _openai_json(status: int, obj: Any, rid: str, extra: dict[str, str] | None = None) -> MockReply:
    """A JSON answer as OpenAI sends it: its request id in `x-request-id`."""
    reply = _json_reply(status, obj, rid, extra)
    del reply.headers["request-id"]
    reply.headers["x-request-id"] = rid
    return reply


def _openai_error(error: OpenAIError, rid: str, extra: dict[str, str] | None = None) -> MockReply:
    return _openai_json(error.status, error.body(), rid, extra)


def _retry_headers(status: int, retry_after: float) -> dict[str, str]:
    """When to retry a 429, in seconds and in milliseconds (the SDKs read both)."""
    if status != 429:
        return {}
    return {"retry-after": f"{retry_after:g}", "retry-after-ms": f"{retry_after * 1000:g}"}


def _served() -> str:
    return ", ".join(f"{m} {p}" for m, p in API_ROUTES)
