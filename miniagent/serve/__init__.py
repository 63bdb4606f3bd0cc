"""The agent as a web service: a JSON endpoint, a streamed one, and a page that uses them.

    python -m miniagent serve          (or: make serve), then open http://127.0.0.1:8000/

Four routes do the work:

- `POST /chat` takes `{"message": "...", "conversation_id": "..."}` and answers with JSON
  when the run is over: `conversation_id`, `text`, `stop`, `reason`, `usage`, `tool_calls`.
  Without a `conversation_id` a new conversation starts; its id comes back in the answer.
- `POST /chat/stream` takes the same and answers with Server-Sent Events while the run
  goes on: `conversation` (the id) first, then `text` (a piece of the answer), `tool_use`
  (a call as it begins, and again when complete), `tool_result`, `usage` (per model
  call), and last `done` (stop, reason, text) or `error`.
- `POST /chat/approve` answers a question the stream asked. When the model calls a tool
  that needs a person's approval (`Tool(needs_approval=True)`), the stream sends
  `approval` (`conversation_id`, `approval_id`, `tool_use_id`, `name`, `input`) and the
  run waits; `{"conversation_id", "approval_id", "approved": true|false, "reason": "..."}`
  answers it (the reason, optional, is shown to the model). The stream then sends
  `approval_result` (`approval_id`, `tool_use_id`, `name`, `approved`, `reason`). With no
  answer within `approval_timeout_seconds` (default 300), the call is denied; so it is
  when the client goes away. An unknown id is a 404, a second answer a 409.
  `POST /chat` answers only at the end, so it cannot ask anyone: there, such a tool is
  never run and the model hears that no one was asked (each of `tool_calls` has
  `approval`: null, or `approved` and `reason` for a tool that needed it).
- `GET /` is the page (`miniagent/serve/web/`): plain HTML and JavaScript that streams answers.

The rest is what makes it safe to leave running:

- every bound is explicit: body size, message length, runs at once, conversations kept
  (when full, the least recently used idle one is forgotten), and each conversation's
  history (cut with `SlidingWindow`, so never between a tool_use and its tool_result);
- so are the connections' (`GuardedH11Protocol`, which `main` gives uvicorn): a request's
  headers must arrive within 10 s and its body within 10 more (else 408, and the connection
  closes), and at most 100 connections are open at once, 16 from one address (else 503 at
  once), so a client that sends a byte now and then cannot hold the service;
- every refused request gets a 4xx (or 5xx) with one JSON shape, `{"error": {"type",
  "message"}}`, and the service carries on;
- a client that goes away (mid-stream, or before a JSON answer) cancels its run: the model call and
  coroutine tools (`async def`) are cancelled with it. Only coroutine tools can be cancelled: a plain
  function runs in a thread, which Python cannot stop, so its call goes on, effects and all. The
  conversation then stays busy (409 to a next question) until each such call has ended or its own
  timeout has passed, and keeps in its history what is known: the run as far as it went, every
  call answered with its result, or "still running when the run was stopped; its result is
  unknown". A stopped run in which no tool took effect leaves the history as it was before the
  question (the agent guarantees that);
- the API key stays here: the browser talks to this service, never to the API. The
  service listens on 127.0.0.1, answers only requests addressed to a local host name (so
  a web page elsewhere cannot reach it by DNS rebinding), and takes only JSON posts (which
  a page elsewhere cannot send without a CORS permission this service never gives).

Several processes serve one address when one is not enough:

    python -m miniagent serve --workers 4 --store sqlite:///conversations.db
    MINIAGENT_SERVE_STORE=sqlite:///conversations.db uvicorn miniagent.serve:app --workers 4 \
        --http miniagent.serve:GuardedH11Protocol --limit-concurrency 100

Whichever worker is free takes the next connection, so the conversations live in a store
every worker shares (`miniagent.serve.store`): a SQLite file on one machine, PostgreSQL
("postgresql://...") across several; the default, memory, is for one process. A run holds
its conversation's lease (an owner and an expiry, compare-and-set in the store, renewed
while it runs), so a conversation is never run by two workers at once and a worker that
dies mid-run frees it within `lease_seconds` (30); an approval waits in the store, so its
answer may reach any worker. Every answer names its worker (`x-miniagent-worker`).
`miniagent.serve:app` is made on first use (importing this module builds nothing and
needs no key), from $MINIAGENT_SERVE_STORE.

FastAPI and uvicorn are optional dependencies (`pip install 'miniagent[serve]'`); the
notebooks' environment has them.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import errno
import json
import logging
import os
import re
import secrets
import socket
import sqlite3
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any, AsyncIterator, Callable, Iterable

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException
from uvicorn.protocols.http.h11_impl import H11Protocol

from miniagent.context import SlidingWindow
from miniagent.i18n import add_connection_options, argument_parser, language, t
from miniagent.messages import assistant, clean_text, conversation_error, tool_result, user
from miniagent.serve.store import ApprovalClosed, ApprovalNotFound, ConversationBusy, ConversationNotFound, open_store
from miniagent.approval import NotAsked
from miniagent.aloop import StillRunning, still_running

log = logging.getLogger("miniagent.serve")

LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MAX_REASON_CHARS = 500  # a person's reason for a denial: a sentence, not a document
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")  # line breaks, escapes, bells: none in a reason
Emit = Callable[[str, dict], None]  # (event name, data): how a run reports what happens in it
# The connections' bounds (see GuardedH11Protocol): a slow or greedy client holds little, briefly.
HEADER_TIMEOUT_SECONDS = 10.0  # from a connection (or its previous answer) to a request's complete headers
BODY_TIMEOUT_SECONDS = 10.0    # from a request's headers to its complete body (create_app's body_timeout_seconds)
KEEP_ALIVE_SECONDS = 5         # an idle connection between requests (uvicorn's timeout_keep_alive)
MAX_CONNECTIONS = 100          # open at once, all clients together (uvicorn's limit_concurrency)
MAX_CONNECTIONS_PER_CLIENT = 16  # open at once from one address (a browser opens 6 to a host)

# The page may run its own script and talk to this service, nothing else (no external resources).
PAGE_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; "
                               "connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


# --- errors: one shape for every refusal ---------------------------------------------


class ServiceError(Exception):
    """A request the service refuses: the HTTP status, and the error the client reads."""

    def __init__(self, status: int, type: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.headers = status, type, message, headers


def json_bytes(data: Any) -> bytes:
    """JSON as every answer of this service is written, streamed or not: UTF-8, compact.

    A lone surrogate (a tool call's input can hold one: JSON escapes it, and Python decodes
    the escape) cannot be encoded in UTF-8; it is written as the JSON escape it came from,
    so the answer stays valid JSON instead of becoming a 500.
    """
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


class JSONAnswer(JSONResponse):
    """A JSON response encoded by `json_bytes`: the class of every JSON answer, refusals included."""

    def render(self, content: Any) -> bytes:
        return json_bytes(content)


def error_response(status: int, type: str, message: str, headers: dict[str, str] | None = None) -> JSONAnswer:
    return JSONAnswer({"error": {"type": type, "message": message}}, status_code=status, headers=headers)


HTTP_ERROR_TYPES = {404: "not_found", 405: "method_not_allowed"}


def _add_error_handlers(app: FastAPI) -> None:
    async def refused(request: Request, err: ServiceError) -> JSONAnswer:
        return error_response(err.status, err.type, err.message, err.headers)

    async def http_error(request: Request, err: HTTPException) -> JSONAnswer:  # unknown path, wrong method
        kind = HTTP_ERROR_TYPES.get(err.status_code, "http_error")
        return error_response(err.status_code, kind, f"{err.detail}: {request.method} {request.url.path}",
                              getattr(err, "headers", None))

    async def crashed(request: Request, err: Exception) -> JSONAnswer:  # a bug: Starlette re-raises it for the log
        return error_response(500, "internal_error", "the service failed unexpectedly; the server log says why")

    app.add_exception_handler(ServiceError, refused)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, crashed)


# --- reading a request -----------------------------------------------------------------


def host_guard(allowed_hosts: tuple[str, ...] | None) -> Callable[[Request], None]:
    """A check that the request was addressed to this machine by name (None: any host).

    A page on another site can make its own domain name point at 127.0.0.1 (DNS rebinding)
    and then talk to a local service as if it were its own origin; its requests still
    carry its domain name in `Host`, which is how they are told apart.
    """
    def check_host(request: Request) -> None:
        if allowed_hosts is None:
            return
        host = re.sub(r":\d+$", "", request.headers.get("host", "")).lower()
        if host not in allowed_hosts:
            raise ServiceError(400, "invalid_host", f"this service answers requests to {', '.join(allowed_hosts)} "
                                                    "only (start it with --host to serve another name)")
    return check_host


async def read_body(request: Request, limit: int, timeout: float = BODY_TIMEOUT_SECONDS) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed `limit` (never read whole), and
    with 408 when it has not all arrived within `timeout` seconds (a client that sends a byte now
    and then would otherwise hold its connection for ever)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ServiceError(413, "request_too_large", f"the body is {declared} bytes; the limit is {limit}")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise ServiceError(413, "request_too_large", f"the body is over the limit of {limit} bytes")
    except TimeoutError:
        raise ServiceError(408, "request_timeout", f"the body did not arrive within {timeout:g} s "
                           f"({len(body):,} bytes came)", headers={"connection": "close"}) from None
    return bytes(body)


def invalid(message: str) -> ServiceError:
    return ServiceError(422, "invalid_request", message)


async def read_json(request: Request, max_body_bytes: int, example: str, timeout: float = BODY_TIMEOUT_SECONDS) -> dict:
    """The JSON object a request holds, or the ServiceError that says what is wrong with it."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ServiceError(415, "unsupported_media_type",
                           "send the request as JSON with content-type: application/json "
                           f"(got {media_type or 'none'!r})")
    body = await read_body(request, max_body_bytes, timeout)
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as err:  # ValueError covers bytes that are not UTF-8 too
        raise ServiceError(400, "invalid_json", f"the body is not valid JSON ({str(err)[:100]})") from None
    if not isinstance(payload, dict):
        raise invalid(f"the body must be a JSON object like {example}, got {type(payload).__name__}")
    return payload


async def read_question(request: Request, max_body_bytes: int, max_chars: int,
                        timeout: float = BODY_TIMEOUT_SECONDS) -> tuple[str, str | None]:
    """(message, conversation_id) from a chat request, or the ServiceError that says what is wrong."""
    payload = await read_json(request, max_body_bytes, '{"message": "..."}', timeout)
    unknown = sorted(set(payload) - {"message", "conversation_id"})
    if unknown:
        raise invalid(f"unknown field(s) {', '.join(map(repr, unknown))[:200]}; "
                      "the fields are 'message' and 'conversation_id'")
    message, conversation_id = payload.get("message"), payload.get("conversation_id")
    if "message" not in payload:
        raise invalid("the field 'message' is missing: the question to ask")
    if not isinstance(message, str):
        raise invalid(f"'message' must be a string, got {type(message).__name__}")
    if not message.strip():
        raise invalid("'message' is empty; write a question")
    if len(message) > max_chars:
        raise invalid(f"'message' is {len(message):,} characters; the limit is {max_chars:,}")
    if conversation_id is not None and not isinstance(conversation_id, str):
        raise invalid("'conversation_id' must be a string from an earlier answer, "
                      f"got {type(conversation_id).__name__}")
    return clean_text(message), conversation_id


APPROVAL_FIELDS = ("conversation_id", "approval_id", "approved", "reason")


async def read_answer(request: Request, max_body_bytes: int,
                      timeout: float = BODY_TIMEOUT_SECONDS) -> tuple[str, str, bool, str | None]:
    """(conversation_id, approval_id, approved, reason) from an approval's answer, or the ServiceError."""
    payload = await read_json(request, max_body_bytes, '{"conversation_id": "...", "approval_id": "...", '
                                                       '"approved": true}', timeout)
    unknown = sorted(set(payload) - set(APPROVAL_FIELDS))
    if unknown:
        raise invalid(f"unknown field(s) {', '.join(map(repr, unknown))[:200]}; "
                      f"the fields are {', '.join(map(repr, APPROVAL_FIELDS))}")
    for name in ("conversation_id", "approval_id"):
        if not isinstance(payload.get(name), str):
            raise invalid(f"'{name}' must be the string from the approval event, "
                          f"got {type(payload.get(name)).__name__}")
    approved, reason = payload.get("approved"), payload.get("reason")
    if not isinstance(approved, bool):
        raise invalid(f"'approved' must be true or false, got {type(approved).__name__}")
    if reason is not None:
        if not isinstance(reason, str):
            raise invalid(f"'reason' must be a string, got {type(reason).__name__}")
        if len(reason) > MAX_REASON_CHARS:
            raise invalid(f"'reason' is {len(reason):,} characters; the limit is {MAX_REASON_CHARS}")
        reason = " ".join(CONTROL.sub(" ", clean_text(reason)).split()) or None
    return payload["conversation_id"], payload["approval_id"], approved, reason


# --- conversations and runs ------------------------------------------------------------

LEASE_SECONDS = 30.0  # a run's hold on its conversation, renewed every third of it: what a dead worker blocks


@dataclass(eq=False)
class Reservation:
    """A run's hold on its conversation: the id, the history the run starts from, and whether it was given back."""
    id: str
    history: list[dict]
    released: bool = False


def overloaded(why: str) -> ServiceError:
    return ServiceError(503, "overloaded", f"{why}; retry in a moment", headers={"retry-after": "1"})


class ChatService:
    """Runs questions in conversations, within the limits: what both chat routes share.

    The conversations live in `conversations`, a store (`miniagent.serve.store`): this
    process's memory, or a database every worker shares. `reserve` takes a conversation's
    lease in the store (compare-and-set: a conversation is never run by two workers at once)
    and counts the run against `max_concurrent_runs` (runs at once in this process); `run`
    gives it back when the run is over, with the history to keep. While a run goes on, its
    lease is renewed; the agent is made for the run (`agent_factory()`) and given the stored
    history, so any worker can run any conversation's next question.
    """

    def __init__(self, agent_factory: Callable[[], Any], store: Any, *, max_history_messages: int,
                 max_concurrent_runs: int, approval_timeout: float = 300.0,
                 lease_seconds: float = LEASE_SECONDS) -> None:
        self.agent_factory, self.conversations = agent_factory, store
        self.window = SlidingWindow(max_history_messages)
        self.max_concurrent_runs = max_concurrent_runs
        self.approval_timeout, self.lease_seconds = approval_timeout, lease_seconds
        self.owner = f"{os.getpid()}.{secrets.token_hex(4)}"  # this worker, as the store's leases name it
        self.running = 0

    async def reserve(self, conversation_id: str | None) -> Reservation:
        """The conversation this run goes into, leased to it; or the ServiceError refusing it."""
        if conversation_id is None:
            self._count_run()
            try:
                conversation_id = await self.conversations.create(self.owner, self.lease_seconds)
            finally:
                if conversation_id is None:  # full, or failed: the run never begins
                    self.running -= 1
            if conversation_id is None:
                raise overloaded(f"all {self.conversations.limit} conversations kept are answering questions")
            return Reservation(conversation_id, [])
        try:
            history = await self.conversations.acquire(conversation_id, self.owner, self.lease_seconds)
        except ConversationNotFound:
            raise ServiceError(404, "conversation_not_found", "no conversation has this id (it may have been "
                               "forgotten to make room); leave conversation_id out to start a new one") from None
        except ConversationBusy:
            raise ServiceError(409, "conversation_busy", "this conversation is answering a question; "
                               "wait for that answer before asking the next") from None
        try:
            self._count_run()
        except ServiceError:
            await self.conversations.release(conversation_id, self.owner, None)
            raise
        return Reservation(conversation_id, history)

    def _count_run(self) -> None:
        """One more run in this process, or the 503 when it already runs its most (no await: atomic on the loop)."""
        if self.running >= self.max_concurrent_runs:
            raise overloaded(f"{self.running} questions are being answered, the most this service runs at once")
        self.running += 1

    async def release(self, reservation: Reservation, history: list[dict] | None = None) -> None:
        """Give the conversation back, keeping `history` (None: the stored one); once, however often called."""
        if reservation.released:
            return
        reservation.released = True
        self.running -= 1
        if not await self.conversations.release(reservation.id, self.owner, history):
            log.warning("conversation %s: its lease ran out during the run and another run took it; this "
                        "run's history was not kept", reservation.id)

    def release_soon(self, reservation: Reservation) -> None:
        """`release`, from a callback (a run cancelled before it began, so its own `finally` never ran)."""
        if not reservation.released:
            asyncio.get_running_loop().create_task(self.release(reservation))

    async def run(self, reservation: Reservation, message: str, emit: Emit, ask: bool = True) -> Any:
        """Ask `message` in the reserved conversation; `emit(name, data)` hears each step as it happens.

        With `ask`, a tool call that needs approval is put to the client (an `approval`
        event, answered by `answer`, at this worker or another); without, no one can be asked
        and it is denied. However the run ends, the conversation is released, with the
        history to keep: the run's on success, what is known when stopped (see `_stopped`).
        """
        keeping = asyncio.create_task(self._keep_lease(reservation))
        history = None
        try:
            agent = self.agent_factory()
            agent.history = list(reservation.history)
            asked: dict[str, str] = {}  # tool_use id -> approval id, for the approval_result event
            try:
                with still_running() as left_running:
                    result = await agent.run(message, stream=True, on_text=lambda delta: emit("text", {"text": delta}),
                                             on_tool_use=tool_uses_to(emit), on_step=steps_to(emit, asked),
                                             approve=self._approver(reservation, emit, asked) if ask else not_asked)
            except asyncio.CancelledError:  # stopped: the conversation stays busy while its threads run on
                await self.conversations.close_approvals(reservation.id)
                history = await self._stopped(agent, reservation.history, message, left_running)
                raise
            history = self.window.view(agent.history)
            return result
        finally:  # however the run ended, no question is left waiting for an answer, and the lease goes back
            keeping.cancel()
            await self.release(reservation, history)

    async def _keep_lease(self, reservation: Reservation) -> None:
        """Renew the run's lease every third of its length, so it never runs out while the run goes on."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if not await self.conversations.renew(reservation.id, self.owner, self.lease_seconds):
                log.warning("conversation %s: its lease could not be renewed", reservation.id)
                return

    async def _stopped(self, agent: Any, before: list[dict], question: str,
                       left_running: dict[str, StillRunning]) -> list[dict] | None:
        """After a run was stopped: wait for the plain tools it left running; the history to keep (None: as before).

        Only coroutine tools are cancelled with the run; a plain tool's thread runs on, and
        its effect (a payment, a deleted file) happens whether or not anyone hears of it.
        So the run waits here, with the conversation still busy, for each such call until
        it ends or its own timeout passes (when the registry would have given up on it
        anyway). Then, if any tool of the run finished or may still be running, the history
        keeps the run as far as it went, every call answered with what is known
        (`stopped_history`), so the model will not unknowingly run it again. A second
        cancellation (the server stopping) cuts the wait short; what is known is kept.
        """
        try:
            await until_ended(left_running.values())
        finally:
            history = stopped_history(before, question, agent.trace.events, left_running)
        return None if history is None else self.window.view(history)

    def _approver(self, reservation: Reservation, emit: Emit, asked: dict[str, str]) -> Callable[[dict], Any]:
        """The run's approver: an `approval` event, then the answer `answer` gives (or a denial on timeout)."""
        async def approve(call: dict) -> Any:
            approval_id = secrets.token_urlsafe(12)
            await self.conversations.ask(reservation.id, approval_id)
            asked[call["id"]] = approval_id
            emit("approval", {"conversation_id": reservation.id, "approval_id": approval_id,
                              "tool_use_id": call["id"], "name": call["name"], "input": call["input"]})
            answer = await self.conversations.wait_answer(reservation.id, approval_id, self.approval_timeout)
            if answer is None:
                return f"no answer within {self.approval_timeout:g} s"
            approved, reason = answer
            return True if approved else (reason or False)
        return approve

    async def answer(self, conversation_id: str, approval_id: str, approved: bool, reason: str | None) -> None:
        """Give a waiting approval its answer, or raise the ServiceError saying why it cannot be."""
        try:
            await self.conversations.answer(conversation_id, approval_id, approved, reason)
        except (ApprovalNotFound, ConversationNotFound):
            raise ServiceError(404, "approval_not_found", "no approval of this conversation has this id "
                               "(the conversation may have asked another question since)") from None
        except ApprovalClosed as closed:
            why = "it was answered already" if closed.answered else \
                "it is no longer waiting (no answer came in time, or the client went away), so it was denied"
            raise ServiceError(409, "approval_answered", why) from None

    def pending_approvals(self) -> int:
        """How many approvals wait for an answer, in all conversations."""
        return len(self.conversations.waiting_approvals())


def not_asked(call: dict) -> NotAsked:
    """The approver of a run that cannot ask anyone (POST /chat): the call is denied, and the model hears why."""
    return NotAsked("POST /chat cannot ask a person; /chat/stream can")


def tool_uses_to(emit: Emit) -> Callable[[dict], None]:
    """The stream's tool calls as `tool_use` events: when each begins and when it is complete."""
    def on_tool_use(call: dict) -> None:
        if call["done"] or not call["partial_json"]:  # the pieces in between would only be noise
            emit("tool_use", {"id": call["id"], "name": call["name"], "input": call["input"], "done": call["done"]})
    return on_tool_use


def steps_to(emit: Emit, asked: dict[str, str] | None = None) -> Callable[[dict], None]:
    """The agent's trace events that a client wants: approvals given, tool results and each call's usage."""
    def on_step(event: dict) -> None:
        if event["type"] == "approval":
            emit("approval_result", {"approval_id": (asked or {}).get(event.get("id")), "tool_use_id": event.get("id"),
                                     "name": event.get("name"), "approved": event.get("approved"),
                                     "reason": event.get("reason")})
        elif event["type"] == "tool_result":
            emit("tool_result", {key: event.get(key) for key in ("id", "name", "is_error", "content")}
                 | {"seconds": round(event.get("seconds") or 0.0, 3)})
        elif event["type"] == "usage":
            emit("usage", {key: event.get(key) for key in ("iteration", "input_tokens", "output_tokens")})
    return on_step


async def until_disconnected(request: Request, run: Any, every: float = 0.25) -> Any:
    """Await `run`, unless the client disconnects first: then cancel it (tools included) and return None.

    A JSON answer is written only at the end, so nothing tells the server the client left;
    it asks `request.is_disconnected()` a few times a second while the run goes on.
    """
    task = asyncio.ensure_future(run)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            if await request.is_disconnected():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                return None
    finally:
        if not task.done():  # this request's own task was cancelled (the server is stopping)
            task.cancel()


# --- a run that was stopped ------------------------------------------------------------

STILL_RUNNING = ("Error: this call was still running when the run was stopped; its result is unknown (it may have "
                 "taken effect, or may yet). Check before calling it again.")
CANCELLED = "Error: this call was cancelled when the run was stopped; it did not finish."


async def until_ended(calls: Iterable[StillRunning]) -> None:
    """Wait until every call has ended or passed its deadline: the longest wait is the latest deadline."""
    while True:
        now = time.monotonic()
        waiting = [call for call in calls if not call.outcome.done() and call.deadline > now]
        if not waiting:
            return
        await asyncio.wait({call.outcome for call in waiting}, timeout=min(c.deadline for c in waiting) - now,
                           return_when=asyncio.FIRST_COMPLETED)


def stopped_history(before: list[dict], question: str, events: list[dict],
                    left_running: dict[str, StillRunning]) -> list[dict] | None:
    """The history a stopped run leaves, rebuilt from its trace; None if no tool of it took effect.

    None means the question never happened: the history stays `before` (the agent keeps it so).
    Otherwise it is `before`, the question, and each round as the loop would have stored it
    (the model's turn, then its calls' results in call order), the last round answered with
    what is known of each call: its result if it finished (a plain tool that finished after
    the stop included), else that it was cancelled, or that it was still running and its
    result is unknown. Every tool_use is answered, so the API accepts the history.
    """
    results = {e["id"]: (e["is_error"], e["content"]) for e in events if e.get("type") == "tool_result"}
    results |= {id: call.outcome.result() for id, call in left_running.items() if call.outcome.done()}
    if not results and not left_running:
        return None

    def answered(calls: list[dict]) -> dict:
        blocks = []
        for call in calls:
            is_error, text = results.get(call["id"], (True, STILL_RUNNING if call["id"] in left_running else CANCELLED))
            blocks.append(tool_result(call["id"], text, is_error=is_error))
        return user(blocks)

    history, calls = [*before, user(question)], []
    for event in events:
        if event.get("type") == "request" and calls:  # the round before this model call ended with its results
            history.append(answered(calls))
            calls = []
        elif event.get("type") == "response" and event.get("content"):
            content = copy.deepcopy(event["content"])
            history.append(assistant(content))
            calls = [block for block in content if block.get("type") == "tool_use"]
    if calls:
        history.append(answered(calls))
    problem = conversation_error(history)
    if problem is not None:  # a bug here must not make the conversation unusable: forget the run instead
        log.error("the history of a stopped run would be invalid (%s); it is not kept", problem)
        return None
    return history


def usage_of(result: Any) -> dict:
    return asdict(result.usage)


def finished(result: Any) -> tuple[str, dict]:
    """The last event of a run: `done`, or `error` when the API call failed."""
    if result.stop == "api_error":  # the client has redacted the message: no key in it
        return "error", {"type": "api_error", "message": result.reason}
    return "done", {"stop": result.stop, "reason": result.reason, "ok": result.ok, "text": result.text,
                    "usage": usage_of(result)}


# --- Server-Sent Events ----------------------------------------------------------------


def sse(name: str, data: dict) -> bytes:
    """One event: an `event: NAME` line, a `data: JSON` line, a blank line.

    JSON never needs a raw line break, so one data line holds it; it is encoded as every
    JSON answer is (`json_bytes`: a lone surrogate as the JSON escape it came from).
    """
    return f"event: {name}\ndata: ".encode() + json_bytes(data) + b"\n\n"


async def event_stream(conversation_id: str, queue: asyncio.Queue, heartbeat: float) -> AsyncIterator[bytes]:
    """The events of one run as they come, ended by None; a comment line when it is quiet.

    The comment keeps proxies from closing an idle connection, and it is a write, which
    is how a server notices a client that has gone.
    """
    yield sse("conversation", {"conversation_id": conversation_id})
    while True:
        try:
            item = await asyncio.wait_for(queue.get(), heartbeat)
        except TimeoutError:
            yield b": keep-alive\n\n"
            continue
        if item is None:
            return
        yield sse(*item)


class EventStream(StreamingResponse):
    """A stream of events tied to the run that produces them: however it ends, the run ends.

    When the client disconnects, Starlette stops the response (it cancels the sending);
    the `finally` then cancels the run, and the cancellation reaches the model call and
    the tools. A run that has already finished ignores it.
    """

    media_type = "text/event-stream"

    def __init__(self, events: AsyncIterator[bytes], run: asyncio.Task) -> None:
        super().__init__(events, headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        self.run = run

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.run.cancel()


# --- the app -------------------------------------------------------------------------


def default_agent_factory(*, offline: bool | None = None, model: str | None = None, quiet: bool = True,
                          **agent_options: Any) -> Callable[[], Any]:
    """One client for the whole service, and a new streaming agent (its own history) per conversation."""
    from miniagent.aclient import connect_async
    from miniagent.aloop import AsyncAgent

    client = connect_async(offline=offline, model=model, quiet=quiet)
    return lambda: AsyncAgent(client=client, stream=True, **agent_options)


class WorkerHeader:
    """Adds `x-miniagent-worker` (this process's id, as the store's leases name it) to every answer: with
    several workers behind one address, it says which one answered."""

    def __init__(self, app: Any, worker: str) -> None:
        self.app, self.header = app, (b"x-miniagent-worker", worker.encode())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_with_header(message: dict) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), self.header]
            await send(message)
        await self.app(scope, receive, send_with_header if scope["type"] == "http" else send)


def _seconds_from_environment(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"${name} must be a number of seconds, got {text[:40]!r}") from None


def _page(name: str) -> str:
    text = (resources.files("miniagent.serve") / "web" / name).read_text(encoding="utf-8")
    if name == "index.html" and language() == "zh":  # chat.js writes every text in the page's language
        text = text.replace('<html lang="en">', '<html lang="zh-CN">', 1)
    return text


def create_app(*, agent_factory: Callable[[], Any] | None = None, store: Any = None, max_conversations: int = 100,
               max_history_messages: int = 50, max_concurrent_runs: int = 32, max_body_bytes: int = 64 * 1024,
               max_question_chars: int = 20_000, allowed_hosts: tuple[str, ...] | None = LOCAL_HOSTS,
               heartbeat_seconds: float = 15.0, approval_timeout_seconds: float = 300.0,
               body_timeout_seconds: float = BODY_TIMEOUT_SECONDS, lease_seconds: float | None = None) -> FastAPI:
    """The service as an ASGI app (run it with uvicorn; test it with httpx2's ASGITransport).

    `agent_factory()` makes the agent of each run (default: `AsyncAgent` on `connect_async()`,
    offline unless a key is set), which is given its conversation's stored history. `store`
    keeps the conversations: "memory" (this process only), "sqlite:///FILE" (the workers of one
    machine), "postgresql://..." (of several), or a store object (`miniagent.serve.store`);
    None reads $MINIAGENT_SERVE_STORE, else memory. A store opened here holds at most
    `max_conversations`. `lease_seconds` (None: $MINIAGENT_SERVE_LEASE_SECONDS, else 30): how
    long a conversation stays locked to a worker that died while running it. The other limits
    are described above; `allowed_hosts=None` accepts any Host header (for a service
    deliberately on a network). `approval_timeout_seconds`: how long a streamed run waits for
    a person to approve a tool call; `body_timeout_seconds`: how long a request's body may take
    to arrive (then 408). The bounds of the connections themselves are the server's: see
    `GuardedH11Protocol` and `main`. Every answer says which worker gave it (`x-miniagent-worker`).
    """
    limits = [("max_conversations", max_conversations, 1), ("max_concurrent_runs", max_concurrent_runs, 1),
              ("max_history_messages", max_history_messages, 2),  # at least a question and its answer
              ("max_body_bytes", max_body_bytes, 1), ("max_question_chars", max_question_chars, 1)]
    for name, value, least in limits:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}")
    if lease_seconds is None:
        lease_seconds = _seconds_from_environment("MINIAGENT_SERVE_LEASE_SECONDS", LEASE_SECONDS)
    for name, seconds in (("approval_timeout_seconds", approval_timeout_seconds),
                          ("body_timeout_seconds", body_timeout_seconds), ("lease_seconds", lease_seconds)):
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
            raise ValueError(f"{name} must be a positive number, got {seconds!r}")
    opened = store is None or isinstance(store, str)  # opened here, so closed here when the app stops
    if opened:
        store = open_store(store or os.environ.get("MINIAGENT_SERVE_STORE") or "memory", limit=max_conversations)
    service = ChatService(agent_factory or default_agent_factory(), store,
                          max_history_messages=max_history_messages, max_concurrent_runs=max_concurrent_runs,
                          approval_timeout=approval_timeout_seconds, lease_seconds=lease_seconds)
    page, script = _page("index.html"), _page("chat.js")

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if opened:
            store.close()

    # No /docs: they load scripts from a CDN, and this service stays offline.
    app = FastAPI(title="miniagent", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan,
                  default_response_class=JSONAnswer, dependencies=[Depends(host_guard(allowed_hosts))])
    app.state.service = service
    app.add_middleware(WorkerHeader, worker=service.owner)
    _add_error_handlers(app)

    @app.get("/")
    async def index() -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)

    @app.get("/chat.js")
    async def chat_js() -> Response:
        return Response(script, media_type="text/javascript; charset=utf-8", headers=PAGE_HEADERS)

    @app.post("/chat")
    async def chat(request: Request) -> Response:
        message, conversation_id = await read_question(request, max_body_bytes, max_question_chars,
                                                       body_timeout_seconds)
        reservation = await service.reserve(conversation_id)
        calls: dict[str, dict] = {}

        def collect(name: str, data: dict) -> None:  # the tool calls, each with its result
            if name == "tool_use" and data["done"]:
                calls[data["id"]] = {"id": data["id"], "name": data["name"], "input": data["input"],
                                     "result": None, "is_error": None, "approval": None}
            elif name == "approval_result" and data["tool_use_id"] in calls:  # a tool that needs approval
                calls[data["tool_use_id"]]["approval"] = {"approved": data["approved"], "reason": data["reason"]}
            elif name == "tool_result" and data["id"] in calls:
                calls[data["id"]].update(result=data["content"], is_error=data["is_error"])

        run = asyncio.ensure_future(service.run(reservation, message, collect, ask=False))
        run.add_done_callback(lambda _: service.release_soon(reservation))  # a run cancelled before it began
        result = await until_disconnected(request, run)
        if result is None:  # the client went away: its run was cancelled, and nobody reads an answer
            return Response(status_code=499)
        if result.stop == "api_error":
            raise ServiceError(502, "api_error", result.reason)
        return JSONAnswer({"conversation_id": reservation.id, "text": result.text, "stop": result.stop,
                           "reason": result.reason, "usage": usage_of(result), "tool_calls": list(calls.values())})

    @app.post("/chat/stream")
    async def chat_stream(request: Request) -> EventStream:
        message, conversation_id = await read_question(request, max_body_bytes, max_question_chars,
                                                       body_timeout_seconds)
        reservation = await service.reserve(conversation_id)
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def emit(name: str, data: dict) -> None:  # callbacks may come from a tool's thread
            loop.call_soon_threadsafe(queue.put_nowait, (name, data))

        async def run() -> None:
            try:
                emit(*finished(await service.run(reservation, message, emit)))
            except Exception:  # noqa: BLE001 - a bug: the client hears that it failed, the log hears why
                log.exception("the run failed unexpectedly")
                emit("error", {"type": "internal_error", "message": "the run failed unexpectedly; "
                                                                    "the server log says why"})

        def ended(task: asyncio.Task) -> None:  # called however the run ends, cancelled before it began too
            service.release_soon(reservation)
            loop.call_soon_threadsafe(queue.put_nowait, None)

        task = asyncio.create_task(run())
        task.add_done_callback(ended)
        return EventStream(event_stream(reservation.id, queue, heartbeat_seconds), task)

    @app.post("/chat/approve")
    async def chat_approve(request: Request) -> JSONAnswer:
        conversation_id, approval_id, approved, reason = await read_answer(request, max_body_bytes,
                                                                           body_timeout_seconds)
        await service.answer(conversation_id, approval_id, approved, reason)
        return JSONAnswer({"conversation_id": conversation_id, "approval_id": approval_id, "approved": approved,
                           "reason": None if approved else reason})

    return app


# --- the connections: bounds uvicorn does not set ---------------------------------------



def _raw_answer(status: int, reason: str, type: str, message: str, extra: str = "") -> bytes:
    """A whole HTTP answer in our JSON error shape, for a connection that never got as far as the app."""
    body = json_bytes({"error": {"type": type, "message": message}})
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"{extra}connection: close\r\n\r\n").encode() + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the bounds it lacks, for a service that strangers can reach.

    uvicorn waits for a request's headers for ever (a client sending a byte every few
    seconds keeps its connection, a "slowloris"), and its `limit_concurrency` refuses
    requests only once their headers are complete, so slow connections fill it and then
    everyone else gets its 503. This class closes a connection whose request headers are
    not complete `header_timeout` seconds after it opened (or after its previous answer),
    with a 408, and refuses a new connection at once, with a 503, when its address already
    has `max_per_client` open or the server `limit_concurrency`. A slow client then holds at
    most `max_per_client` connections, each for at most `header_timeout` seconds, and the
    others are served meanwhile. (Behind a proxy every client has the proxy's address:
    let the proxy bound them, and raise `max_per_client`.) The body's own deadline is the
    app's (`create_app(body_timeout_seconds=...)`), which reads every body.

    Run with `uvicorn.Config(app, http=GuardedH11Protocol, limit_concurrency=...)`, or on the
    command line `--http miniagent.serve:GuardedH11Protocol`; for other bounds, a subclass.
    """

    header_timeout: float = HEADER_TIMEOUT_SECONDS
    max_per_client: int = MAX_CONNECTIONS_PER_CLIENT

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_since: Any = None  # the request cycle that was current when the deadline was set
        super().connection_made(transport)
        address = self.client[0] if self.client else None
        from_there = sum(1 for other in self.connections if getattr(other, "client", None)
                         and other.client[0] == address)
        if from_there > self.max_per_client:
            self._refuse(f"this address has {self.max_per_client} connections open, the most it may")
        elif self.limit_concurrency is not None and len(self.connections) > self.limit_concurrency:
            self._refuse(f"{self.limit_concurrency} connections are open, the most this service takes")
        else:
            self._await_headers()

    def _refuse(self, why: str) -> None:
        self.transport.write(_raw_answer(503, "Service Unavailable", "overloaded", f"{why}; retry in a moment",
                                         "retry-after: 1\r\n"))
        self.transport.close()

    def _await_headers(self) -> None:
        """Give the next request `header_timeout` seconds to bring its headers (a new cycle means they came)."""
        self._cancel_deadline()
        self._waiting_since = self.cycle
        self._deadline = self.loop.call_later(self.header_timeout, self._too_slow)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.write(_raw_answer(408, "Request Timeout", "request_timeout",
                                             f"the request's headers did not arrive within {self.header_timeout:g} s"))
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not self._waiting_since:  # a request's headers are complete: the app has it now
            self._cancel_deadline()

    def on_response_complete(self) -> None:
        answered = self.cycle
        super().on_response_complete()
        if self.cycle is answered and not self.transport.is_closing():  # no pipelined request began: wait for one
            self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)


# What `main` gives uvicorn (and a test or a notebook may too): the bounds above, in uvicorn's words.
SERVER_OPTIONS: dict[str, Any] = {"http": GuardedH11Protocol, "limit_concurrency": MAX_CONNECTIONS,
                                  "timeout_keep_alive": KEEP_ALIVE_SECONDS}


class PortInUseError(OSError):
    """The port asked for is taken: by an earlier run of the same cell, another kernel, another program."""


def listen(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening socket on `host`:`port` (0: a free port the system picks); a taken port is PortInUseError at once."""
    try:
        return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as err:
        reason = os.strerror(err.errno) if err.errno else str(err)  # without create_server's long addition
        if err.errno != errno.EADDRINUSE:
            raise OSError(err.errno, f"cannot listen on {host} port {port}: {reason}") from err
        raise PortInUseError(err.errno, f"cannot listen on {host} port {port} ({reason}): something else serves "
                             "there, perhaps an earlier run of this cell or another notebook. Stop that one "
                             "(server.should_exit = True) or pass port=0, which takes a free port") from err


def serve_in_thread(app: Any, *, host: str = "127.0.0.1", port: int = 0, timeout: float = 10.0,
                    **options: Any) -> tuple[Any, str]:
    """Serve `app` with uvicorn on a thread of this process; (server, base URL) once it accepts connections.

    Port 0, the default, takes a free port, so a re-run cell, a second kernel or a neighbour
    on a shared machine never collide. A given port that is taken raises PortInUseError at
    once: the socket is bound here, before the thread starts, so there is never a wait for a
    server that cannot start (uvicorn, failing to bind in a thread, only ends that thread).
    A server that stops while starting, or is not up within `timeout` seconds, is a
    RuntimeError. `options` go to `uvicorn.Config`. Stop it with `server.should_exit = True`.
    """
    import threading

    import uvicorn

    sock = listen(host, port)
    bound = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, **{"log_level": "warning", **options}))

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except SystemExit:  # uvicorn's way to say it could not start (it logged why): raised below, as an error
            pass

    thread = threading.Thread(target=run, name="miniagent-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            why = "stopped while starting (its log says why)" if not thread.is_alive() else \
                f"was not up within {timeout:g} s"
            raise RuntimeError(f"the server on {host} port {bound} {why}")
        time.sleep(0.01)
    shown = f"[{host}]" if ":" in host else host
    return server, f"http://{shown}:{bound}"


# --- the command line ------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


def build_parser() -> argparse.ArgumentParser:
    description = t("Serve the agent over HTTP: a web page at /, POST /chat (JSON), POST /chat/stream "
                    "(Server-Sent Events) and POST /chat/approve (a person's answer to a tool call).",
                    "把 Agent 作为 HTTP 服务提供：/ 是网页，POST /chat 返回 JSON，POST /chat/stream 返回 "
                    "Server-Sent Events，POST /chat/approve 提交人对一次工具调用的审批。")
    parser = argument_parser(prog="python -m miniagent serve", description=description)
    parser.add_argument("--host", default="127.0.0.1",
                        help=t("address to listen on (default: 127.0.0.1, this machine only)",
                               "监听的地址（默认：127.0.0.1，只有本机能访问）"))
    parser.add_argument("--port", type=int, default=8000, help=t("port (default: 8000; 0 picks a free one)",
                                                                 "端口（默认：8000；0 表示随便挑一个空闲端口）"))
    add_connection_options(parser)
    parser.add_argument("--store", default=os.environ.get("MINIAGENT_SERVE_STORE") or "memory",
                        help=t("where conversations are kept: memory (default, this process only; or "
                               "$MINIAGENT_SERVE_STORE), sqlite:///FILE (the workers of one machine) or "
                               "postgresql://user@host/db (of several)",
                               "对话存在哪里：memory（默认，只在这个进程里；或者用 $MINIAGENT_SERVE_STORE 指定），"
                               "sqlite:///FILE（同一台机器上的多个 worker 共用）或 postgresql://user@host/db（多台机器共用）"))
    parser.add_argument("--workers", type=int, default=1,
                        help=t("processes serving at once (default: 1); more than one needs a shared --store",
                               "同时提供服务的进程数（默认：1）；多于一个时需要共享的 --store"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python -m miniagent serve`: serve until Ctrl-C. Exit status 2 for a bad command line or key."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(t(f"--workers must be at least 1, got {args.workers}", f"--workers 至少是 1，收到的是 {args.workers}"))
    if args.workers > 1 and args.store == "memory":
        parser.error(t("with --workers, every worker must see every conversation: give them a shared store, "
                       "e.g. --store sqlite:///conversations.db",
                       "用了 --workers，每个 worker 都得看到所有对话：给它们一个共享的存储，"
                       "例如 --store sqlite:///conversations.db"))
    import uvicorn

    from miniagent.client import APIKeyError, MissingAPIKeyError

    try:
        factory = default_agent_factory(offline=True if args.offline else False if args.live else None,
                                model=args.model, quiet=False)
    except MissingAPIKeyError as err:  # names the chosen provider's variable (MINIAGENT_PROVIDER)
        missing = getattr(err, "message", "") or t("an API key is missing", "缺少 API key")
        print(t(f"miniagent serve: {missing}; export it, or drop --live to serve offline",
                f"miniagent serve：{missing}；请 export 它，或者去掉 --live，离线提供服务"), file=sys.stderr)
        return 2
    except ValueError as err:  # an unknown MINIAGENT_PROVIDER: the message lists the known ones
        print(f"miniagent serve: {err}", file=sys.stderr)
        return 2
    except APIKeyError as err:  # the message never shows the key
        print(f"miniagent serve: {err}", file=sys.stderr)
        return 2
    local = is_loopback(args.host)
    if not local:
        print(t(f"warning: listening on {args.host}: anyone who can reach this machine can use the agent, "
                "and your API key with it",
                f"警告：正在监听 {args.host}：任何能访问这台机器的人都能使用这个 Agent，连同你的 API key"),
              file=sys.stderr)
    settings = {"offline": True if args.offline else False if args.live else None, "model": args.model,
                "store": args.store, "allowed_hosts": LOCAL_HOSTS if local else None}
    try:  # opened once here: a store that cannot be opened is a clear message before serving
        open_store(args.store).close()
    except Exception as err:  # noqa: BLE001 - only the store's own failures are reported; the rest re-raised
        if not isinstance(err, (ValueError, ImportError, OSError, sqlite3.Error)) \
                and not type(err).__module__.startswith("psycopg"):
            raise
        print(t(f"miniagent serve: cannot open the conversation store: {err}",
                f"miniagent serve：打不开对话存储：{err}"), file=sys.stderr)
        return 2
    try:  # bound here, so a port in use is a clear message and port 0 prints the port it got
        sock = socket.create_server((args.host, args.port), family=socket.AF_INET6 if ":" in args.host
                                    else socket.AF_INET)
    except OSError as err:
        print(t(f"miniagent serve: cannot listen on {args.host} port {args.port} ({err.strerror or err}); "
                "pick another with --port",
                f"miniagent serve：无法在 {args.host} 的端口 {args.port} 上监听（{err.strerror or err}）；"
                "用 --port 换一个"), file=sys.stderr)
        return 2
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{sock.getsockname()[1]}/"
    workers = t(f" with {args.workers} workers", f"，{args.workers} 个 worker") if args.workers > 1 else ""
    print(t(f"miniagent: serving at {url}{workers} (Ctrl-C to stop)", f"miniagent：服务地址 {url}{workers}（按 Ctrl-C 停止）"),
          flush=True)
    options = dict(log_level="warning", timeout_graceful_shutdown=3, **SERVER_OPTIONS)
    if args.workers > 1:  # each worker is a new process that builds the app from these settings (worker_app)
        os.environ[WORKER_SETTINGS] = json.dumps(settings)
        from uvicorn.supervisors import Multiprocess
        config = uvicorn.Config("miniagent.serve:worker_app", factory=True, workers=args.workers, **options)
        Multiprocess(config, sockets=[sock]).run()  # restarts a worker that dies; Ctrl-C stops them all
        return 0
    app = create_app(agent_factory=factory, store=args.store, allowed_hosts=settings["allowed_hosts"])
    server = uvicorn.Server(uvicorn.Config(app, **options))
    try:  # on Ctrl-C, answers being streamed get 3 s to finish, then their runs are cancelled
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn stops cleanly, then raises the Ctrl-C it caught
        pass
    return 0


# --- what uvicorn loads: `uvicorn miniagent.serve:app`, and the workers of `--workers` ----------------

WORKER_SETTINGS = "MINIAGENT_SERVE_WORKER"  # how `main` hands its command line to its workers (JSON)


def worker_app() -> FastAPI:
    """The app of one worker of `python -m miniagent serve --workers N` (uvicorn calls it in each process)."""
    settings = json.loads(os.environ[WORKER_SETTINGS])
    hosts = settings["allowed_hosts"]
    factory = default_agent_factory(offline=settings["offline"], model=settings["model"])
    return create_app(agent_factory=factory, store=settings["store"],
                      allowed_hosts=None if hosts is None else tuple(hosts))


app: FastAPI  # declared here, made by __getattr__ below on first use (importing this module builds nothing)


def __getattr__(name: str) -> Any:
    """`app`, made on first use: what `uvicorn miniagent.serve:app` loads, in each worker.

    It is the default service: offline unless a key is set (as `connect_async()` decides),
    its conversations in $MINIAGENT_SERVE_STORE (memory if unset: then run one worker only).
    Made on first use rather than at import, so that importing this module stays cheap and
    never needs a key.
    """
    if name == "app":
        made = globals()["app"] = create_app()
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

