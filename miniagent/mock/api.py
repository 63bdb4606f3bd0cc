"""The mock Messages API: one object that answers HTTP requests as the real API would.

`MockAPI.handle()` turns a request (method, path, headers, body bytes) into a
`MockReply`; `transport.py` plugs it into httpx in-process and `server.py` puts it
behind a socket, so notebooks, tests and curl all meet exactly the same behaviour.

A request passes the real API's gates in its order: route, authentication,
`anthropic-version`, size, JSON, validation. Two mock-only steps serve lessons: an
injected *fault* (429, 529, 500, slow, dropped) comes before validation, to show
retries; a *script* of exact answers comes after it, so a broken conversation still
fails as it would live.

Everything is deterministic: ids come from counters (`msg_mock_0001`, `toolu_mock_0001`,
`req_mock_0001`) and usage from `miniagent.tokens`, so the same requests give the same bytes.

Control endpoints (mock-only, no authentication, not recorded, no request id used):
`POST /_mock/script`, `POST /_mock/fault`, `GET /_mock/requests`, `POST /_mock/reset`.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

import httpx

from miniagent.mock import brain as _brain
from miniagent.mock.validate import SUPPORTED_VERSIONS, ApiError, validate_request
from miniagent.tokens import estimate_content, estimate_request

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
MAX_BODY_BYTES = 32 * 1024 * 1024  # the real limit for Messages and token counting
DEFAULT_RETRY_AFTER = 0.05  # seconds: small, so notebooks that show retries stay fast
NO_RETRY_STATUSES = (400, 401, 403, 404, 413)
REDACTED = "<redacted>"
_AUTH_HEADERS = ("x-api-key", "authorization")

ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
    403: "permission_error", 404: "not_found_error", 413: "request_too_large",
    429: "rate_limit_error", 500: "api_error", 504: "timeout_error", 529: "overloaded_error",
}
# "Overloaded" is the real API's text; the other two are ours (the real ones are not documented).
_FAULT_MESSAGES = {
    429: "Rate limited: too many requests (fault injected by the offline mock). Retry after the retry-after delay.",
    500: "Internal server error",
    529: "Overloaded",
}


@dataclass
class MockReply:
    """What the server sends back. `delay` seconds pass before it is sent; `drop`
    means the connection closes with no response at all."""

    status: int
    headers: dict[str, str]
    body: bytes
    delay: float = 0.0
    drop: bool = False


@dataclass(frozen=True)
class _Fault:
    status: int | None
    retry_after: float
    delay: float
    drop: bool
    message: str | None = None


@dataclass
class _Scripted:
    item: dict | Callable[[dict], dict]
    repeat: bool = False


class MockAPI:
    """The state of one mock API: keys, script queue, faults, counters, records.

    `api_keys`: the keys accepted (None: any non-empty key). `strict_alternation`:
    reject consecutive same-role messages instead of merging them (the older rule).
    `brain`: `(body) -> partial message`, the default answerer when nothing is scripted.
    """

    def __init__(self, *, api_keys: set[str] | None = None, strict_alternation: bool = False,
                 brain: Callable[[dict], dict] | None = None) -> None:
        if api_keys is not None and not all(isinstance(k, str) and k for k in api_keys):
            raise ValueError("api_keys must be a set of non-empty strings, or None to accept any key")
        self.api_keys = set(api_keys) if api_keys is not None else None
        self.strict_alternation = strict_alternation
        self._brain = brain
        self._lock = threading.RLock()  # re-entrant: a scripted callable may read mock.records
        self.reset()

    # --- state --------------------------------------------------------------------

    def reset(self) -> None:
        """Forget records, scripted responses, pending faults, and restart the id counters."""
        with self._lock:
            self._records: list[dict] = []
            self._script: deque[_Scripted] = deque()
            self._faults: deque[_Fault] = deque()
            self._counters = {"req": 0, "msg": 0, "toolu": 0}

    @property
    def records(self) -> list[dict]:
        """Every API request received (control endpoints excluded), oldest first.

        Each is {"n", "method", "path", "headers", "body", "raw", "status", "response"},
        with the auth headers replaced by "<redacted>"; `raw` is the body exactly as it
        arrived (text), `body` the same parsed; `status`/`response` are None for a
        dropped connection.
        """
        with self._lock:
            return copy.deepcopy(self._records)

    @property
    def requests(self) -> list[dict]:
        """The records of `POST /v1/messages` calls only."""
        return [r for r in self.records if r["path"] == MESSAGES_PATH]

    @property
    def last_request(self) -> dict | None:
        """The record of the latest `POST /v1/messages` call, or None."""
        found = self.requests
        return found[-1] if found else None

    def script(self, *responses: dict | Callable[[dict], dict], repeat: bool = False) -> None:
        """Queue exact answers for the next `POST /v1/messages` calls that pass validation.

        Each response is one of:
        - a partial message `{"content": [...] or "text", "stop_reason": ..., "stop_sequence": ...}`
          (stop_reason defaults to "tool_use" if there is a tool_use block, else "end_turn";
          tool_use blocks without an "id" get one);
        - an error `{"status": 429, "error": {"type": ..., "message": ...}}` (type and
          message default from the status; add "retry_after": seconds for a 429);
        - a callable `(body) -> one of the above`, called with the request body.
        With `repeat=True` (one response only) the response is used for every later
        call until `reset()`: e.g. a model that never stops calling tools.
        """
        if repeat and len(responses) != 1:
            raise ValueError("script(..., repeat=True) takes exactly one response (it repeats forever)")
        for item in responses:
            if not callable(item):
                _check_scripted(item)
        with self._lock:
            if self._script and self._script[-1].repeat:
                raise ValueError("the script already ends with a repeating response, so anything queued "
                                 "after it would never be used; call reset() first")
            self._script.extend(_Scripted(item, repeat) for item in responses)

    def script_json(self, payload: Any) -> None:
        """`script()` from JSON, as the control endpoint and `--script FILE` receive it:
        a list of responses, or `{"responses": [...], "repeat": true}`."""
        if isinstance(payload, dict) and "responses" in payload:
            self.script(*payload["responses"], repeat=bool(payload.get("repeat", False)))
        elif isinstance(payload, list):
            self.script(*payload)
        else:
            raise ValueError('a script must be a JSON list of responses, or {"responses": [...], "repeat": true}')

    def fault(self, status: int | None = None, *, times: int = 1, retry_after: float = DEFAULT_RETRY_AFTER,
              delay: float = 0.0, drop: bool = False, message: str | None = None) -> None:
        """Make the next `times` `POST /v1/messages` calls fail.

        `status` 429 answers `rate_limit_error` with `retry-after` (seconds) and
        `retry-after-ms` headers; 529 `overloaded_error`; 500 `api_error`; any other
        4xx/5xx the matching type. `delay` seconds pass before the answer (alone: a
        slow success). `drop=True` closes the connection without any response.
        """
        if status is not None and not _is_error_status(status):
            raise ValueError(f"fault status must be an HTTP error status from 400 to 599, got {status!r}")
        if status is None and not delay and not drop:
            raise ValueError("fault() needs a status (e.g. 429), a delay (e.g. delay=0.3) or drop=True")
        if isinstance(times, bool) or not isinstance(times, int) or times < 1:
            raise ValueError(f"times must be a positive integer, got {times!r}")
        for name, value in (("retry_after", retry_after), ("delay", delay)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        with self._lock:
            self._faults.extend([_Fault(status, float(retry_after), float(delay), bool(drop), message)] * times)

    # --- the one entry point ----------------------------------------------------------

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> MockReply:
        """Answer one HTTP request. Never raises for bad input: bad input gets an error reply."""
        path = path.split("?", 1)[0]
        method = method.upper()
        if path.startswith("/_mock/"):
            return self._control(method, path, body)
        lower = {k.lower(): v for k, v in headers.items()}
        with self._lock:
            self._counters["req"] += 1
            n = self._counters["req"]
            record: dict[str, Any] = {
                "n": n, "method": method, "path": path,
                "headers": {k: (REDACTED if k in _AUTH_HEADERS else v) for k, v in lower.items()},
                "body": _parse_or_none(body), "raw": body.decode("utf-8", "replace"),
                "status": None, "response": None,
            }
            reply = self._answer(method, path, lower, body, f"req_mock_{n:04d}")
            if not reply.drop:
                record["status"] = reply.status
                record["response"] = _parse_or_none(reply.body)
            self._records.append(record)
        return reply

    def _answer(self, method: str, path: str, headers: dict[str, str], raw: bytes, rid: str) -> MockReply:
        if (method, path) not in (("POST", MESSAGES_PATH), ("POST", COUNT_TOKENS_PATH)):
            return _error(ApiError(404, "not_found_error", "Not Found"), rid)
        problem = _check_auth(headers, self.api_keys) or _check_version(headers)
        if problem:
            return _error(problem, rid)
        if len(raw) > MAX_BODY_BYTES:
            return _error(ApiError(413, "request_too_large",
                                   f"Request exceeds the maximum size of {MAX_BODY_BYTES} bytes"), rid)
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(_invalid(f"The request body is not valid JSON ({exc}); send a JSON object "
                                   "with content-type: application/json"), rid)
        try:
            fault = self._take_fault(headers.get("x-mock-fault"), path)
        except ValueError as exc:
            return _error(_invalid(str(exc)), rid)
        if fault and fault.drop:
            return MockReply(0, {}, b"", delay=fault.delay, drop=True)
        if fault and fault.status:
            reply = _status_error(fault.status, rid, message=fault.message, retry_after=fault.retry_after,
                                  source="Mock fault")
        else:
            reply = self._valid_answer(path, headers, body, rid)
        if fault:
            reply.delay = fault.delay
        return reply

    def _valid_answer(self, path: str, headers: dict[str, str], body: Any, rid: str) -> MockReply:
        counting = path == COUNT_TOKENS_PATH
        problem = validate_request(body, version=headers["anthropic-version"], count_tokens=counting,
                                   strict_alternation=self.strict_alternation)
        if problem:
            return _error(problem, rid)
        if counting:
            return _json_reply(200, {"input_tokens": estimate_request(body)}, rid)
        if body.get("stream"):
            return _error(_invalid("stream: streaming is not supported by this mock yet; "
                                   "send the request without \"stream\": true"), rid)
        try:
            partial = self._next_partial(body)
        except Exception as exc:  # a bug in the brain or a scripted callable: report it as a 500
            return _error(ApiError(500, "api_error", f"the mock failed to answer: {type(exc).__name__}: "
                                   f"{exc} (a bug in the mock's brain or in a scripted callable)"), rid)
        if "status" in partial:
            error = partial.get("error") or {}
            return _status_error(partial["status"], rid, type_=error.get("type"), message=error.get("message"),
                                 retry_after=partial.get("retry_after", DEFAULT_RETRY_AFTER), source="Scripted error")
        return _json_reply(200, self._message(body, partial), rid)

    def _take_fault(self, header: str | None, path: str) -> _Fault | None:
        """The fault for this request: the `x-mock-fault` header first, else the queue
        (queued faults apply to `POST /v1/messages` only)."""
        if header is not None:
            return parse_fault_header(header)
        if path == MESSAGES_PATH and self._faults:
            return self._faults.popleft()
        return None

    def _next_partial(self, body: dict) -> dict:
        """The next scripted answer, else the brain's. Each gets its own copy of the body."""
        if not self._script:
            return (self._brain or _brain.respond)(copy.deepcopy(body))
        entry = self._script[0] if self._script[0].repeat else self._script.popleft()
        item = entry.item
        if callable(item):
            item = item(copy.deepcopy(body))
            _check_scripted(item)
        return copy.deepcopy(item)

    def _message(self, body: dict, partial: dict) -> dict:
        """A full Message (wire-format §1.5) from a partial one: ids, model, usage."""
        content = _content_blocks(partial.get("content", []))
        for k, block in enumerate(content):
            if block.get("type") == "tool_use" and "id" not in block:
                self._counters["toolu"] += 1
                # id right after type, where the real API puts it: printed wire reads the same
                content[k] = {"type": "tool_use", "id": f"toolu_mock_{self._counters['toolu']:04d}", **block}
        self._counters["msg"] += 1
        uses_tools = any(b.get("type") == "tool_use" for b in content)
        return {
            "id": f"msg_mock_{self._counters['msg']:04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": partial.get("stop_reason") or ("tool_use" if uses_tools else "end_turn"),
            "stop_sequence": partial.get("stop_sequence"),
            "usage": {
                "input_tokens": estimate_request(body),
                "output_tokens": estimate_content(content),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "service_tier": "standard",
            },
        }

    # --- control endpoints ------------------------------------------------------------

    def _control(self, method: str, path: str, raw: bytes) -> MockReply:
        """The mock's own endpoints, so any HTTP client can script it and read its records."""
        rid = "req_mock_control"
        try:
            if (method, path) == ("GET", "/_mock/requests"):
                return _json_reply(200, self.records, rid)
            if (method, path) == ("POST", "/_mock/reset"):
                self.reset()
                return _json_reply(200, {"reset": True}, rid)
            if (method, path) == ("POST", "/_mock/script"):
                self.script_json(json.loads(raw or b"null"))
                return _json_reply(200, {"queued": len(self._script)}, rid)
            if (method, path) == ("POST", "/_mock/fault"):
                kwargs = json.loads(raw or b"{}")
                if not isinstance(kwargs, dict):
                    raise ValueError('send a JSON object of fault() arguments, e.g. {"status": 429, "times": 2}')
                self.fault(**kwargs)
                return _json_reply(200, {"pending_faults": len(self._faults)}, rid)
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
            return _error(_invalid(f"{path}: {exc}"), rid)
        return _error(ApiError(404, "not_found_error", f"Not Found: the mock has no {method} {path}; "
                               "use POST /_mock/script, POST /_mock/fault, GET /_mock/requests "
                               "or POST /_mock/reset"), rid)

    # --- ways in ----------------------------------------------------------------------

    def transport(self, *, sleep: Callable[[float], None] = time.sleep) -> httpx.BaseTransport:
        """An httpx transport that answers in-process: `httpx.Client(transport=mock.transport())`.

        Delays honour the request's read timeout (a delay longer than it sleeps for the
        timeout and raises `httpx.ReadTimeout`). `sleep` is injectable for tests.
        """
        from miniagent.mock.transport import Transport
        return Transport(self, sleep)

    def async_transport(self, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
                        ) -> httpx.AsyncBaseTransport:
        """The same for `httpx.AsyncClient`."""
        from miniagent.mock.transport import AsyncTransport
        return AsyncTransport(self, sleep)


# --- faults from a header -------------------------------------------------------------


def parse_fault_header(value: str) -> _Fault:
    """`x-mock-fault: 429`, `529`, `500`, `429 retry-after=0.05`, `slow=0.3`, `drop`."""
    status, retry_after, delay, drop = None, DEFAULT_RETRY_AFTER, 0.0, False
    for token in value.replace(",", " ").split():
        key, _, arg = token.partition("=")
        key = key.lower()
        try:
            if token.isdigit() and 400 <= int(token) <= 599:
                status = int(token)
            elif key == "drop" and not arg:
                drop = True
            elif key in ("retry-after", "retry_after") and float(arg) >= 0:
                retry_after = float(arg)
            elif key in ("slow", "delay") and float(arg) >= 0:
                delay = float(arg)
            else:
                raise ValueError
        except ValueError:
            raise ValueError(f"x-mock-fault: cannot use {token!r}; write e.g. '429', '529', '500', "
                             "'429 retry-after=0.05', 'slow=0.3' or 'drop'") from None
    if status is None and not delay and not drop:
        raise ValueError("x-mock-fault: give a status (e.g. '429'), 'slow=SECONDS' or 'drop'")
    return _Fault(status, retry_after, delay, drop)


# --- checks ---------------------------------------------------------------------------


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
        return _invalid(f"anthropic-version: {version!r} is not a supported version; "
                        f"use {' or '.join(repr(v) for v in SUPPORTED_VERSIONS)}")
    return None


def _is_error_status(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and 400 <= value <= 599


def _check_scripted(item: Any) -> None:
    """Fail at script() time, with a clear message, rather than mid-lesson."""
    if not isinstance(item, dict):
        raise ValueError(f"a scripted response must be a dict or a callable, got {type(item).__name__}")
    if "status" in item:
        if not _is_error_status(item["status"]):
            raise ValueError(f"a scripted error needs an HTTP error status from 400 to 599, got {item['status']!r}")
        if not isinstance(item.get("error", {}), dict):
            raise ValueError('a scripted error\'s "error" must be {"type": ..., "message": ...}')
        wait = item.get("retry_after", 0)
        if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
            raise ValueError(f'a scripted error\'s "retry_after" must be a number of seconds >= 0, got {wait!r}')
        return
    content = item.get("content")
    if not isinstance(content, (str, list)) or not all(isinstance(b, dict) and "type" in b
                                                       for b in _content_blocks(content)):
        raise ValueError('a scripted response needs "content": a string or a list of blocks such as '
                         '{"type": "text", "text": "..."}; an error needs "status"')
    unknown = set(item) - {"content", "stop_reason", "stop_sequence"}
    if unknown:
        raise ValueError(f"a scripted response has unknown keys {sorted(unknown)}; "
                         "use content, stop_reason, stop_sequence")


def _content_blocks(content: str | list) -> list[dict]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


# --- building replies -------------------------------------------------------------------


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def _parse_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _json_reply(status: int, obj: Any, rid: str, extra: dict[str, str] | None = None) -> MockReply:
    headers = {"content-type": "application/json", "request-id": rid, **(extra or {})}
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return MockReply(status, headers, body)


def _error(error: ApiError, rid: str, extra: dict[str, str] | None = None) -> MockReply:
    headers = dict(extra or {})
    if error.status in NO_RETRY_STATUSES:
        headers["x-should-retry"] = "false"
    body = {"type": "error", "error": {"type": error.type, "message": error.message}, "request_id": rid}
    return _json_reply(error.status, body, rid, headers)


def _status_error(status: int, rid: str, *, retry_after: float, source: str,
                  type_: str | None = None, message: str | None = None) -> MockReply:
    """An injected fault or a scripted error: type and message default from the status,
    and a 429 says when to retry, in seconds and in milliseconds as the real API does."""
    if not type_:
        type_ = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if not message:
        message = _FAULT_MESSAGES.get(status, f"{source}: HTTP {status}")
    retry = {}
    if status == 429:
        retry = {"retry-after": f"{retry_after:g}", "retry-after-ms": f"{retry_after * 1000:g}"}
    return _error(ApiError(status, type_, message), rid, retry)
