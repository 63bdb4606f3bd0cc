"""One LLM call over HTTP: the Anthropic Messages API with httpx, and nothing hidden.

`Client.create(messages, ...)` builds the JSON body, sends it with the API key and
version headers, and returns the response as the plain dict the API sent. Around
that one call sit the things a real program needs:

- typed errors, one class per HTTP status, carrying the API's own message, its
  request id and a hint of what to do;
- retries with exponential backoff and jitter for 429 / 5xx / 529 / dropped
  connections / timeouts, honouring `retry-after`, and never for 400/401/403/404
  (sending the same bad request again gives the same answer);
- running usage totals;
- `client.exchanges`: every attempt's request and response JSON, with the key redacted;
- bounds on everything a broken server controls: the time of a whole attempt (not
  only between two bytes), the size of a response, the wait a `retry-after` asks for,
  and the shape of what comes back (anything but a Messages API response is one
  typed error, never a `KeyError` three calls later).

Secrets are redacted where secrets can be (headers, error text, records), never in
the data: a response reaches the caller exactly as the server sent it.

`connect()` at the bottom picks offline (the bundled mock API) or live from the
environment and says which it picked.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import re
import time
from collections import deque
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Callable, Iterable

import httpx

from miniagent import deadline, wire

DEFAULT_MODEL = "claude-sonnet-5-5"  # MINIAGENT_MODEL overrides it
DEFAULT_BASE_URL = "https://api.anthropic.com"
OFFLINE_BASE_URL = "http://miniagent-mock.invalid"  # .invalid: nothing leaves the machine
OFFLINE_API_KEY = "mock-key"
API_VERSION = "2023-06-01"
REDACTED = "<redacted>"
MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # far above any real answer (128k tokens of text is ~0.5 MB)
MAX_RETRY_AFTER = 24 * 3600.0  # a longer retry-after is absurd; it is read as a day
RECORD_STRING_CHARS = 20_000  # strings longer than this are clipped in client.exchanges

# --- errors ---------------------------------------------------------------------


class APIError(Exception):
    """A failed call. `str(err)` says what happened and what to do; never the key."""

    status: int | None = None
    hint = "See the message above."

    def __init__(self, message: str, *, type: str = "", request_id: str | None = None,
                 status: int | None = None, hint: str | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.type = type
        self.request_id = request_id
        self.retry_after = retry_after
        if status is not None:
            self.status = status
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:
        head = f"{self.status} {self.type}: " if self.status else (f"{self.type}: " if self.type else "")
        rid = f" (request {self.request_id})" if self.request_id else ""
        return f"{head}{self.message}{rid}\nHint: {self.hint}"


class BadRequestError(APIError):
    status = 400
    hint = "The request itself is wrong; the message names the field. Retrying sends the same bytes, so it is not retried."


class AuthenticationError(APIError):
    status = 401
    hint = "Check ANTHROPIC_API_KEY (set, complete, not revoked), or run offline with MINIAGENT_OFFLINE=1."


class PermissionDeniedError(APIError):
    status = 403
    hint = "Your key may not use this model or feature; check its workspace and permissions."


class NotFoundError(APIError):
    status = 404
    hint = "Check the model name (MINIAGENT_MODEL) and ANTHROPIC_BASE_URL (it must not end in /v1)."


class RequestTooLargeError(APIError):
    status = 413
    hint = "The request is over 32 MB; shorten the conversation or the tool output."


class RateLimitError(APIError):
    status = 429
    hint = "Too many requests or tokens per minute. The client waits as `retry-after` says; lower concurrency if it persists."


class InternalServerError(APIError):
    status = 500
    hint = "A server-side failure. Retried with backoff; if it persists, try again later."


class OverloadedError(APIError):
    status = 529
    hint = "The API is overloaded right now. Retried with backoff; if it persists, try again later."


class APIConnectionError(APIError):
    hint = "Could not reach the API. Check your network and ANTHROPIC_BASE_URL."


class APITimeoutError(APIConnectionError):
    hint = "No answer within the timeout. Retried; raise `timeout=` for long answers."


class MalformedResponseError(APIError):
    hint = ("The server answered with something that is not a Messages API response. "
            "Is ANTHROPIC_BASE_URL right? A proxy in between may be rewriting answers.")


class ResponseTooLargeError(MalformedResponseError):
    hint = ("No real answer is this large; the server or a proxy is misbehaving. "
            "Raise max_response_bytes= only if you know the answer is meant to be this big.")


class RequestEncodingError(APIError):
    hint = ("Everything in a request must be JSON: strings of valid Unicode, finite numbers, "
            "lists and dicts with string keys. The message names the first value that is not.")


class APIKeyError(APIError):
    """The key is missing or cannot be a key. Raised before any request; never shows the key."""

    hint = ("Set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-... before `make lab`, or "
            "os.environ['ANTHROPIC_API_KEY'] = ... in a cell), or work offline with MINIAGENT_OFFLINE=1.")


class MissingAPIKeyError(APIKeyError):
    pass


class InvalidAPIKeyError(APIKeyError):
    hint = ("Copy the key again from the console as one line (no spaces or line breaks inside), "
            "or work offline with MINIAGENT_OFFLINE=1.")


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError,
              404: NotFoundError, 413: RequestTooLargeError, 429: RateLimitError, 529: OverloadedError}


def error_class(status: int) -> type[APIError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return InternalServerError if status >= 500 else APIError


def is_retryable(err: APIError, response: httpx.Response | None = None) -> bool:
    """Retry what may succeed next time: overload, rate limits, server faults, lost connections."""
    if response is not None and response.headers.get("x-should-retry") in ("true", "false"):
        return response.headers["x-should-retry"] == "true"
    if isinstance(err, APIConnectionError):
        return True
    return err.status in (408, 409, 429) or (err.status or 0) >= 500


def retry_after_seconds(headers: httpx.Headers) -> float | None:
    """The wait the server asked for, in seconds, or None if it asked for none we can read.

    `retry-after-ms` first, then `retry-after` (seconds, or an HTTP date). Whatever the
    header holds, this never raises: garbage, NaN and infinity are unreadable (None),
    a negative wait or a date in the past is 0, and anything over a day is a day.
    """
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        seconds = None if value is None else _wait_from(value.strip(), scale)
        if seconds is not None:
            return min(max(seconds, 0.0), MAX_RETRY_AFTER)
    return None


def _wait_from(text: str, scale: float) -> float | None:
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        return number / scale if math.isfinite(number) else None
    if scale != 1.0:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp() - time.time()


# --- the key ----------------------------------------------------------------------


def checked_key(key: Any, name: str = "the API key") -> str:
    """The key with surrounding whitespace removed; an error if it cannot be a key.

    A key read from a file keeps its final newline, so the ends are stripped. Inside,
    a key is one line of printable ASCII: a space, a line break (a key pasted from a
    chat can carry a `\\r\\n` in the middle), a control or non-ASCII character means
    the copy went wrong, and sending it would fail anyway (httpx refuses such a header,
    and its error would quote the key). The error says what and where, never the key.
    """
    if not isinstance(key, str) or not key.strip():
        raise MissingAPIKeyError("no API key: live mode needs ANTHROPIC_API_KEY", type="missing_api_key")
    key = key.strip()
    for i, char in enumerate(key):
        if not "!" <= char <= "~":
            raise InvalidAPIKeyError(f"{name} has {_describe_char(char)} inside it (character {i + 1} of "
                                     f"{len(key)}); a key is one line of letters, digits and dashes",
                                     type="invalid_api_key")
    return key


def _describe_char(char: str) -> str:
    if char in "\r\n":
        return "a line break"
    if char.isspace():
        return "a space" if char == " " else "a whitespace character"
    if ord(char) < 32 or ord(char) == 127:
        return "a control character"
    return "a non-ASCII character"


# --- bookkeeping ----------------------------------------------------------------


@dataclass
class Usage:
    """Tokens spent so far, summed over every successful call."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    def add(self, usage: dict) -> None:
        self.input_tokens += (usage.get("input_tokens") or 0) + (usage.get("cache_read_input_tokens") or 0) \
            + (usage.get("cache_creation_input_tokens") or 0)
        self.output_tokens += usage.get("output_tokens") or 0
        self.calls += 1

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Exchange:
    """One HTTP attempt, as it went over the wire, with secrets redacted."""

    request: dict
    status: int | None = None
    response: Any = None
    error: str | None = None
    seconds: float = 0.0
    waited: float = 0.0  # the back-off before the next attempt, if there was one
    attempt: int = 1

    def to_dict(self) -> dict:
        return {"attempt": self.attempt, "request": self.request, "status": self.status,
                "response": self.response, "error": self.error, "seconds": round(self.seconds, 4),
                "waited": round(self.waited, 4)}


# --- the client -----------------------------------------------------------------


class Client:
    """Calls the Messages API. `create()` is the whole idea; the rest is error handling.

    `timeout` bounds each attempt as a whole, connecting and reading included (a
    server that trickles one byte a second cannot hold a call past it);
    `max_response_bytes` bounds what one response may hold, checked while reading.
    """

    def __init__(self, *, api_key: str | None, base_url: str = DEFAULT_BASE_URL,
                 model: str = DEFAULT_MODEL, max_tokens: int = 1024, api_version: str = API_VERSION,
                 timeout: float = 60.0, max_retries: int = 2, max_retry_wait: float = 60.0,
                 max_response_bytes: int = MAX_RESPONSE_BYTES,
                 transport: httpx.BaseTransport | None = None, sleep: Callable[[float], None] = time.sleep,
                 mode: str = "live", mock: Any = None, history: int = 50):
        self._api_key = checked_key(api_key)
        self._key_pattern = re.compile(rf"(?<![\w-]){re.escape(self._api_key)}(?![\w-])")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        self.api_version = api_version
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.max_response_bytes = max_response_bytes
        self.sleep = sleep
        self.mode = mode
        self.mock = mock  # the MockAPI behind an offline client, for scripts and faults
        self.usage = Usage()
        self.exchanges: deque[Exchange] = deque(maxlen=history)
        self.http = httpx.Client(transport=transport or deadline.deadline_transport(),
                                 timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)))

    def __repr__(self) -> str:
        return f"Client(mode={self.mode!r}, base_url={self.base_url!r}, model={self.model!r})"

    # The request ------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key, "anthropic-version": self.api_version,
                "content-type": "application/json"}

    def body(self, messages: list[dict], *, system: str | list | None = None, tools: list[dict] | None = None,
             tool_choice: dict | None = None, max_tokens: int | None = None,
             stop_sequences: list[str] | None = None, model: str | None = None, **extra: Any) -> dict:
        """The JSON body of a Messages API request. Optional fields are left out when unset."""
        body: dict[str, Any] = {"model": model or self.model, "max_tokens": max_tokens or self.max_tokens,
                                "messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        if tool_choice:
            body["tool_choice"] = tool_choice
        if stop_sequences:
            body["stop_sequences"] = stop_sequences
        body.update({k: v for k, v in extra.items() if v is not None})
        return body

    def create(self, messages: list[dict], **kwargs: Any) -> dict:
        """Send one Messages API request; return the response message as a dict.

        Keyword arguments: system, tools, tool_choice, max_tokens, stop_sequences,
        model, and any other API field (temperature, metadata, ...).
        """
        response = self._post("/v1/messages", self.body(messages, **kwargs), wire.message_problem)
        self.usage.add(response["usage"])
        return response

    def count_tokens(self, messages: list[dict], *, system: Any = None, tools: list[dict] | None = None) -> int:
        """Input tokens this conversation would cost (the API's /v1/messages/count_tokens)."""
        body = self.body(messages, system=system, tools=tools)
        body.pop("max_tokens")
        return self._post("/v1/messages/count_tokens", body, wire.count_problem)["input_tokens"]

    @property
    def last(self) -> Exchange | None:
        """The most recent attempt: `client.last.request`, `client.last.response`."""
        return self.exchanges[-1] if self.exchanges else None

    # Sending, with retries --------------------------------------------------------

    def _post(self, path: str, body: dict, problem: Callable[[Any], str | None]) -> Any:
        """POST `body`; the parsed 2xx payload, checked by `problem`, or a typed error."""
        url = self.base_url + path
        try:
            content = wire.encode_body(body)
        except ValueError as exc:
            raise RequestEncodingError(f"the request cannot be sent: {exc}", type="request_encoding") from None
        request = self._redacted_request(url, body)  # one snapshot, shared by the attempts (they send the same)
        for attempt in range(1, self.max_retries + 2):
            record = Exchange(request=request, attempt=attempt)
            self.exchanges.append(record)
            started = time.perf_counter()
            response = None
            try:
                response, raw = self._send(url, content)
            except httpx.TimeoutException as exc:
                err: APIError = APITimeoutError(
                    f"no complete response within the timeout of {self.timeout:g} s ({type(exc).__name__})",
                    type="timeout")
            except httpx.TransportError as exc:
                err = APIConnectionError(f"{type(exc).__name__}: {self._scrub(str(exc))}", type="connection_error")
            except MalformedResponseError as exc:  # too large, or an unreadable encoding: not retried
                record.seconds, record.status = time.perf_counter() - started, exc.status
                record.error = str(exc).splitlines()[0]
                raise
            else:
                payload = wire.decode_json(raw)
                record.status = response.status_code
                if response.is_success:
                    record.seconds = time.perf_counter() - started
                    record.response = self._record_of(payload, raw, secret=False)
                    return self._checked(payload, raw, response, problem)
                record.response = self._record_of(payload, raw, secret=True)
                err = self._error_from(response, payload, raw)
            record.seconds = time.perf_counter() - started
            record.error = str(err).splitlines()[0]
            wait = self._retry_wait(err, response, attempt)
            if wait is None:
                raise err
            record.waited = wait
            self.sleep(wait)
        raise AssertionError("unreachable")

    def _send(self, url: str, content: bytes) -> tuple[httpx.Response, bytes]:
        """One attempt, all of it (connecting, sending, reading) within `timeout`."""
        headers = {**self.headers(), "accept-encoding": "gzip, deflate"}  # what wire.decompressed reads
        with deadline.within(self.timeout):
            response = self.http.send(self.http.build_request("POST", url, headers=headers, content=content),
                                      stream=True)
            try:
                return response, self._read_body(response)
            finally:
                response.close()

    def _read_body(self, response: httpx.Response) -> bytes:
        """The body, decompressed, counted and timed as it arrives: never more than `max_response_bytes`."""
        too_big = f"the response is larger than max_response_bytes={self.max_response_bytes:,}"
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes and "content-encoding" not in response.headers:
            raise self._malformed(response, f"{too_big}: it declares {int(declared):,} bytes", ResponseTooLargeError)
        if response.is_stream_consumed:  # an in-memory transport (the mock) handed over the body whole
            pieces: Iterable[bytes] = [response.content]
        else:
            pieces = wire.decompressed(response.iter_raw(), response.headers.get("content-encoding", ""))
        chunks, size = [], 0
        try:
            for chunk in pieces:
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise self._malformed(response, f"{too_big}: it was not read further", ResponseTooLargeError)
                if deadline.remaining() == 0:
                    raise httpx.ReadTimeout("the attempt's deadline passed while reading", request=response.request)
                chunks.append(chunk)
        except ValueError as exc:  # from wire.decompressed: a corrupt body, or an encoding not asked for
            raise self._malformed(response, f"the body cannot be read: {exc}") from None
        return b"".join(chunks)

    def _checked(self, payload: Any, raw: bytes, response: httpx.Response,
                 problem: Callable[[Any], str | None]) -> Any:
        """The payload if it has the documented shape, else MalformedResponseError (not retried)."""
        why = "the body is not JSON" if payload is None and raw.strip() != b"null" else problem(payload)
        if why is None:
            return payload
        seen = raw[:300].decode("utf-8", "replace")
        raise self._malformed(response, f"not a Messages API response: {why}; the body began: {seen!r}")

    def _malformed(self, response: httpx.Response, why: str,
                   cls: type[MalformedResponseError] = MalformedResponseError) -> MalformedResponseError:
        kind = "response_too_large" if cls is ResponseTooLargeError else "malformed_response"
        return cls(self._scrub(why), type=kind, status=response.status_code,
                   request_id=response.headers.get("request-id"))

    def _retry_wait(self, err: APIError, response: httpx.Response | None, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up now."""
        if attempt > self.max_retries or not is_retryable(err, response):
            return None
        asked = retry_after_seconds(response.headers) if response is not None else None
        if asked is not None and asked > self.max_retry_wait:
            err.hint += f" The server asked to wait {asked:.0f} s, more than max_retry_wait; not retried."
            return None
        if asked is not None and asked > 0:
            return asked
        backoff = min(0.5 * 2 ** (attempt - 1), 8.0)
        return backoff * (1 - 0.25 * random.random())  # jitter: many clients don't retry in step

    def _error_from(self, response: httpx.Response, payload: Any, raw: bytes) -> APIError:
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            message, kind = _clip(str(error.get("message", "")), 2000), _clip(str(error.get("type", "")), 100)
        else:
            text = raw[:300].decode("utf-8", "replace")
            message, kind = f"HTTP {response.status_code}: {_clip(text)}", "http_error"
        cls = error_class(response.status_code)
        return cls(self._scrub(message), type=kind, status=response.status_code,
                   request_id=response.headers.get("request-id"),
                   retry_after=retry_after_seconds(response.headers))

    # Secrets: redacted where they can be (headers, error text, records of errors) -----

    def _scrub(self, text: str) -> str:
        """`text` with the key replaced wherever it stands as a whole token.

        Whole tokens only: with a short key such as "anything" (fine against the mock),
        a plain replace would also rewrite every "anything" in a sentence.
        """
        return self._key_pattern.sub(REDACTED, text)

    def _record_of(self, payload: Any, raw: bytes, *, secret: bool) -> Any:
        """A response as recorded: bounded in size; an error's text scrubbed of any echo of the key."""
        if payload is None:
            payload = raw[:RECORD_STRING_CHARS].decode("utf-8", "replace")
        record = wire.bounded_copy(payload, RECORD_STRING_CHARS)
        if secret and self._api_key in json.dumps(record, ensure_ascii=False):
            record = json.loads(self._scrub(json.dumps(record, ensure_ascii=False)))
        return record

    def _redacted_request(self, url: str, body: dict) -> dict:
        headers = {k: (REDACTED if k in ("x-api-key", "authorization") else v) for k, v in self.headers().items()}
        return {"method": "POST", "url": url, "headers": headers,
                "body": wire.bounded_copy(body, RECORD_STRING_CHARS)}


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


# --- offline or live --------------------------------------------------------------


def connect(*, offline: bool | None = None, model: str | None = None, quiet: bool = False, **kwargs: Any) -> Client:
    """A Client for the mock API or the real one, chosen from the environment.

    - `MINIAGENT_OFFLINE=1` (or `offline=True`): the bundled mock, whatever keys are set;
    - else `ANTHROPIC_API_KEY` set: live, at `ANTHROPIC_BASE_URL` if set (so pointing it
      at `python -m miniagent.mock` runs the live code path against the mock over HTTP);
    - else: the mock, with a note saying how to go live.
    `MINIAGENT_MODEL` picks the model. Prints one line saying which it picked.
    """
    env_offline = os.environ.get("MINIAGENT_OFFLINE", "").lower() in ("1", "true", "yes")
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    model = model or os.environ.get("MINIAGENT_MODEL") or DEFAULT_MODEL
    if offline is None:
        offline = env_offline or not key
    if offline:
        from miniagent.mock import MockAPI  # imported here: live use never loads the mock

        mock = MockAPI()
        client = Client(api_key=OFFLINE_API_KEY, base_url=OFFLINE_BASE_URL, model=model, mode="offline",
                        transport=mock.transport(), mock=mock, **kwargs)
        why = "" if env_offline or key else " (no ANTHROPIC_API_KEY set; set one to go live)"
        if not quiet:
            print(f"offline (mock API) · model {model}{why}")
        return client
    if not key:
        raise MissingAPIKeyError("live mode needs an API key, and ANTHROPIC_API_KEY is not set",
                                 type="missing_api_key")
    key = checked_key(key, "ANTHROPIC_API_KEY")
    base_url = os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    client = Client(api_key=key, base_url=base_url, model=model, mode="live", **kwargs)
    if not quiet:
        where = "" if base_url == DEFAULT_BASE_URL else f" at {base_url}"
        print(f"live{where} · model {model}")
    return client
