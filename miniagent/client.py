"""One LLM call over HTTP: the Anthropic Messages API with httpx, and nothing hidden.

`Client.create(messages, ...)` builds the JSON body, sends it with the API key and
version headers, and returns the response as the plain dict the API sent. Around
that one call sit the things a real program needs:

- typed errors, one class per HTTP status, carrying the API's own message, its
  request id and a hint of what to do (they live in `errors.py`, with the retry rules);
- retries with exponential backoff and jitter for 429 / 5xx / 529 / dropped
  connections / timeouts, honouring `retry-after`, and never for 400/401/403/404
  (sending the same bad request again gives the same answer);
- running usage totals;
- `client.exchanges`: every attempt's request and response JSON, with the key redacted;
- streaming (`client.stream(...)`, or `create(..., stream=True)`): the same message dict
  at the end, events as they arrive, retries only before the first byte (after it a
  retry would repeat what the caller has already seen), and a time bound per read and
  per whole stream;
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

import json
import os
import random
import re
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:
    from miniagent.streaming import MessageAccumulator, SSEParser

import httpx

from miniagent import deadline, wire
from miniagent.errors import (MAX_RETRY_AFTER, STATUS_OF_TYPE, APIConnectionError, APIError, APIKeyError,  # noqa: F401
                              APITimeoutError, AuthenticationError, BadRequestError, InternalServerError,
                              InvalidAPIKeyError, MalformedResponseError, MissingAPIKeyError, NotFoundError,
                              OverloadedError, PermissionDeniedError, RateLimitError, RequestEncodingError,
                              RequestTooLargeError, ResponseTooLargeError, StreamError, error_class,
                              error_for_type, is_retryable, retry_after_seconds)

DEFAULT_MODEL = "claude-sonnet-5-5"  # MINIAGENT_MODEL overrides it
DEFAULT_BASE_URL = "https://api.anthropic.com"
OFFLINE_BASE_URL = "http://miniagent-mock.invalid"  # .invalid: nothing leaves the machine
OFFLINE_API_KEY = "mock-key"
API_VERSION = "2023-06-01"
REDACTED = "<redacted>"
MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # far above any real answer (128k tokens of text is ~0.5 MB)
RECORD_STRING_CHARS = 20_000  # strings longer than this are clipped in client.exchanges
STREAM_TIMEOUT = 600.0  # a whole stream; the official SDK's default timeout is 600 s too

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
    stream: dict | None = None  # a streamed attempt: {"events": n, "bytes": n, "complete": bool}

    def to_dict(self) -> dict:
        record = {"attempt": self.attempt, "request": self.request, "status": self.status,
                  "response": self.response, "error": self.error, "seconds": round(self.seconds, 4),
                  "waited": round(self.waited, 4)}
        return record if self.stream is None else {**record, "stream": self.stream}


# --- the client -----------------------------------------------------------------


class Client:
    """Calls the Messages API. `create()` is the whole idea; the rest is error handling.

    `timeout` bounds each attempt as a whole, connecting and reading included (a
    server that trickles one byte a second cannot hold a call past it);
    `max_response_bytes` bounds what one response may hold, checked while reading.
    A stream is bounded differently, since a long answer takes long by design:
    `timeout` bounds the start (connecting, up to the first byte) and every wait for
    more bytes, and `stream_timeout` the whole stream.
    """

    def __init__(self, *, api_key: str | None, base_url: str = DEFAULT_BASE_URL,
                 model: str = DEFAULT_MODEL, max_tokens: int = 1024, api_version: str = API_VERSION,
                 timeout: float = 60.0, max_retries: int = 2, max_retry_wait: float = 60.0,
                 max_response_bytes: int = MAX_RESPONSE_BYTES, stream_timeout: float = STREAM_TIMEOUT,
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
        self.stream_timeout = stream_timeout
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

    def create(self, messages: list[dict], *, stream: bool = False,
               on_event: Callable[[dict], None] | None = None, **kwargs: Any) -> dict:
        """Send one Messages API request; return the response message as a dict.

        Keyword arguments: system, tools, tool_choice, max_tokens, stop_sequences,
        model, and any other API field (temperature, metadata, ...).

        `stream=True` streams the answer under the hood, calling `on_event(event)` for
        each event as it arrives, and returns the same dict: callers (the loop, the agent)
        need not know whether an answer was streamed.
        """
        if stream:
            with self.stream(messages, **kwargs) as events:
                for event in events:
                    if on_event is not None:
                        on_event(event)
            assert events.message is not None  # the iteration ends at message_stop, or raises
            return events.message
        if on_event is not None:
            raise TypeError("on_event is called for the events of a stream: pass stream=True as well")
        response = self._post("/v1/messages", self.body(messages, **kwargs), wire.message_problem)
        self.usage.add(response["usage"])
        return response

    def stream(self, messages: list[dict], **kwargs: Any) -> MessageStream:
        """A streamed request (the same keyword arguments as `create`):

            with client.stream(messages, tools=schemas) as s:
                for event in s:      # each event dict as it arrives, pings included
                    ...
            s.message                # the final message, equal to what create() returns

        Entering the `with` sends the request (retrying as create does, until the stream's
        first byte); iterating reads it. See `MessageStream`.
        """
        kwargs.pop("stream", None)
        return MessageStream(self, {**self.body(messages, **kwargs), "stream": True})

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
        return self._attempts(path, body, lambda url, content, record: self._exchange(url, content, record, problem))

    def _attempts(self, path: str, body: dict, attempt: Callable[[str, bytes, Exchange], Any]) -> Any:
        """Call `attempt(url, content, record)` until it succeeds: the one retry loop of every call.

        `attempt` returns its result, or raises `_Retryable(err, response)` for a failure
        that another attempt may cure (`_retry_wait` decides); any other error ends the
        call at once. Each attempt gets its own record in `exchanges`.
        """
        url = self.base_url + path
        try:
            content = wire.encode_body(body)
        except ValueError as exc:
            raise RequestEncodingError(f"the request cannot be sent: {exc}", type="request_encoding") from None
        request = self._redacted_request(url, body)  # one snapshot, shared by the attempts (they send the same)
        for number in range(1, self.max_retries + 2):
            record = Exchange(request=request, attempt=number)
            self.exchanges.append(record)
            started = time.perf_counter()
            try:
                return attempt(url, content, record)
            except _Retryable as failed:
                err, response = failed.error, failed.response
            finally:
                record.seconds = time.perf_counter() - started
            record.error = str(err).splitlines()[0]
            wait = self._retry_wait(err, response, number)
            if wait is None:
                raise err
            record.waited = wait
            self.sleep(wait)
        raise AssertionError("unreachable")

    def _exchange(self, url: str, content: bytes, record: Exchange, problem: Callable[[Any], str | None]) -> Any:
        """One plain (not streamed) attempt: the checked payload, or `_Retryable`."""
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
            record.status, record.error = exc.status, str(exc).splitlines()[0]
            raise
        else:
            payload = wire.decode_json(raw)
            record.status = response.status_code
            if response.is_success:
                record.response = self._record_of(payload, raw, secret=False)
                return self._checked(payload, raw, response, problem)
            record.response = self._record_of(payload, raw, secret=True)
            err = self._error_from(response, payload, raw)
        raise _Retryable(err, response)

    def _send(self, url: str, content: bytes) -> tuple[httpx.Response, bytes]:
        """One attempt, all of it (connecting, sending, reading) within `timeout`."""
        with deadline.within(self.timeout):
            response = self._start(url, content)
            try:
                return response, self._read_body(response)
            finally:
                response.close()

    def _start(self, url: str, content: bytes) -> httpx.Response:
        """Send the request; the response as soon as its headers are in, its body still to read."""
        headers = {**self.headers(), "accept-encoding": "gzip, deflate"}  # what wire.decompressed reads
        return self.http.send(self.http.build_request("POST", url, headers=headers, content=content), stream=True)

    def _read_body(self, response: httpx.Response) -> bytes:
        """The body, decompressed, counted and timed as it arrives: never more than `max_response_bytes`."""
        chunks, size = [], 0
        try:
            for chunk in self._pieces(response):
                size += len(chunk)
                if size > self.max_response_bytes:
                    raise self._too_big(response, "it was not read further")
                if deadline.remaining() == 0:
                    raise httpx.ReadTimeout("the attempt's deadline passed while reading", request=response.request)
                chunks.append(chunk)
        except ValueError as exc:  # from wire.decompressed: a corrupt body, or an encoding not asked for
            raise self._malformed(response, f"the body cannot be read: {exc}") from None
        return b"".join(chunks)

    def _pieces(self, response: httpx.Response) -> Iterator[bytes]:
        """The body's bytes, decompressed, as they arrive; refused at once if it declares too many."""
        declared = response.headers.get("content-length", "")
        encoded = "content-encoding" in response.headers  # then the length says nothing of the decoded size
        if declared.isdigit() and int(declared) > self.max_response_bytes and not encoded:
            raise self._too_big(response, f"it declares {int(declared):,} bytes")
        if response.is_stream_consumed:  # an in-memory transport (the mock) handed over the body whole
            return iter([response.content])
        return wire.decompressed(response.iter_raw(), response.headers.get("content-encoding", ""))

    def _too_big(self, response: httpx.Response, detail: str) -> MalformedResponseError:
        return self._malformed(response, f"the response is larger than max_response_bytes="
                                         f"{self.max_response_bytes:,}: {detail}", ResponseTooLargeError)

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


class _Retryable(Exception):
    """Raised by one attempt for a failure that another attempt may cure; `_attempts` decides."""

    def __init__(self, error: APIError, response: httpx.Response | None):
        super().__init__(str(error))
        self.error, self.response = error, response


# --- streaming ------------------------------------------------------------------------


class MessageStream:
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

    def __init__(self, client: Client, body: dict) -> None:
        from miniagent import streaming  # loaded with the first stream: plain calls never need it

        self.client, self.body = client, body
        self.parser: SSEParser = streaming.SSEParser()
        self.accumulator: MessageAccumulator = streaming.MessageAccumulator()
        self._decode = streaming.decode_event
        self.message: dict | None = None
        self._state = "new"  # new -> open -> done | failed | closed
        self._response: httpx.Response | None = None
        self._pieces: Iterator[bytes] = iter(())
        self._first = b""  # the first bytes, read while opening (so that a failure before them is retried)
        self._record: Exchange | None = None
        self._size = 0
        self._began = 0.0  # perf_counter() at the start of the attempt, for the record
        self._ends = 0.0  # the whole stream's deadline, a time.monotonic() value

    def __repr__(self) -> str:
        return f"MessageStream({self._state}, {self.accumulator.events} events)"

    def __enter__(self) -> MessageStream:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def usage(self) -> dict | None:
        """The final message's usage (already added to `client.usage`); None before the end."""
        return self.message["usage"] if self.message is not None else None

    @property
    def partial(self) -> dict | None:
        """The message so far (open blocks with what they have), or None before message_start."""
        return self.accumulator.snapshot()

    # Opening: retried like create(), up to the first byte -------------------------------

    def open(self) -> None:
        """Send the request and wait for the stream's first byte, retrying as create() does."""
        if self._state != "new":
            return
        self._state = "opening"
        try:
            self.client._attempts("/v1/messages", self.body, self._attempt)
        except BaseException:
            self._state = "failed"
            raise
        self._state = "open"

    def _attempt(self, url: str, content: bytes, record: Exchange) -> None:
        """One attempt to start the stream: returns once its first byte is in, else raises `_Retryable`."""
        client = self.client
        self._record, self._size, self._began = record, 0, time.perf_counter()
        record.stream = {"events": 0, "bytes": 0, "complete": False}
        started = time.monotonic()
        self._ends = started + client.stream_timeout
        response = None
        try:
            with deadline.until(min(started + client.timeout, self._ends)):
                response = client._start(url, content)
                record.status = response.status_code
                if response.is_success:
                    self._begin(response)
                    return
                raw = client._read_body(response)
        except httpx.TimeoutException as exc:
            err: APIError = APITimeoutError(f"no stream began within the timeout of {client.timeout:g} s "
                                            f"({type(exc).__name__})", type="timeout")
        except httpx.TransportError as exc:
            err = APIConnectionError(f"{type(exc).__name__}: {client._scrub(str(exc))}", type="connection_error")
        except MalformedResponseError as exc:  # too large, not a stream, unreadable: not retried
            record.error = str(exc).splitlines()[0]
            self._close_response(response)
            raise
        else:
            payload = wire.decode_json(raw)
            record.response = client._record_of(payload, raw, secret=True)
            err = client._error_from(response, payload, raw)
        self._close_response(response)
        raise _Retryable(err, response if response is not None and not response.is_success else None)

    def _begin(self, response: httpx.Response) -> None:
        """Check that a 2xx answer is a stream, and wait for its first byte."""
        kind = response.headers.get("content-type", "")
        if kind and not kind.lower().startswith("text/event-stream"):
            seen = self.client._read_body(response)[:300].decode("utf-8", "replace")
            raise self.client._malformed(response, f"a stream was asked for, but the answer is {kind!r}, not "
                                                   f"'text/event-stream'; the body began: {seen!r}")
        self._response = response
        self._pieces = self.client._pieces(response)
        self._first = self._read()
        if not self._first:
            raise httpx.RemoteProtocolError("the stream ended before its first byte", request=response.request)

    # Reading: events as they arrive, never retried --------------------------------------

    def __iter__(self) -> Iterator[dict]:
        """Each event as it arrives; the iteration ends after `message_stop`, or raises (see the class)."""
        if self._state == "new":
            self.open()
        while self._state == "open":
            chunk, self._first = self._first or self._next_chunk(), b""
            if not chunk:
                self.parser.close()
                ended = "ended before message_stop" + (", in the middle of an event" if self.parser.unfinished else "")
                raise self._broken(self._stream_error("stream_incomplete", ended))
            for sse in self.parser.feed(chunk):
                yield self._take(sse)
                if self._state != "open":  # message_stop came: whatever follows is not read
                    return

    def _next_chunk(self) -> bytes:
        """The next bytes (b"" at the end); the stream's deadline holds for this read only, never
        between two events, where the caller's own code runs."""
        try:
            with deadline.until(self._ends):
                return self._read()
        except httpx.TimeoutException:
            if time.monotonic() >= self._ends:
                why = f"did not finish within stream_timeout={self.client.stream_timeout:g} s"
            else:
                why = f"stalled: no bytes for {self.client.timeout:g} s (the timeout)"
            raise self._broken(self._stream_error("stream_timeout", why)) from None
        except httpx.TransportError as exc:
            why = f"was cut ({type(exc).__name__}: {exc})"
            raise self._broken(self._stream_error("stream_interrupted", why)) from None
        except MalformedResponseError as exc:
            raise self._broken(exc) from None

    def _read(self) -> bytes:
        """The next bytes of the body (b"" at its end), counted against the size bound and timed."""
        client, response = self.client, self._response
        assert response is not None
        waited = 0.0  # time spent waiting in this read; the caller's own time between reads is not counted
        while True:
            before = time.monotonic()
            try:
                piece = next(self._pieces, None)
            except ValueError as exc:  # from wire.decompressed: a corrupt body
                raise client._malformed(response, f"the stream cannot be read: {exc}, "
                                                  f"{self.accumulator.progress()}") from None
            now = time.monotonic()
            waited += now - before
            # Sockets obey both bounds as they read; an in-process transport cannot be
            # interrupted, so its lateness is caught here, after the fact.
            if now > self._ends or waited > client.timeout:
                raise httpx.ReadTimeout("the stream's deadline passed while reading", request=response.request)
            if piece is None:
                return b""
            if piece:
                self._size += len(piece)
                if self._size > client.max_response_bytes:
                    raise client._too_big(response, f"the stream was not read further, {self.accumulator.progress()}")
                return piece

    def _take(self, sse: Any) -> dict:
        """One parsed SSE event into the accumulator; the event dict for the caller."""
        try:
            event = self._decode(sse)
        except MalformedResponseError as exc:
            raise self._broken(MalformedResponseError(f"{exc.message}, {self.accumulator.progress()}",
                                                      type=exc.type)) from None
        try:
            self.accumulator.add(event)
        except APIError as exc:
            raise self._broken(exc) from None
        if self.accumulator.done:
            self._finish()
        return event

    # Ending ------------------------------------------------------------------------

    def _finish(self) -> None:
        message = self.accumulator.message
        assert message is not None
        self.message, self._state = message, "done"
        self.client.usage.add(message["usage"])
        self._update_record(response=self.client._record_of(message, b"", secret=False), complete=True)
        self._close_response()

    def _stream_error(self, kind: str, why: str) -> StreamError:
        return StreamError(f"the stream {why}, {self.accumulator.progress()}", type=kind,
                           events=self.accumulator.events)

    def _broken(self, err: APIError) -> APIError:
        """`err` made ready for the caller (request id, the message so far, no key), and recorded."""
        client, response = self.client, self._response
        err.message = client._scrub(err.message)
        err.args = (err.message,)
        if err.partial is None:
            err.partial = self.accumulator.snapshot()
        if response is not None:
            err.request_id = err.request_id or response.headers.get("request-id")
            if isinstance(err, MalformedResponseError):
                err.status = response.status_code
        partial = None if err.partial is None else client._record_of(err.partial, b"", secret=True)
        self._update_record(response=partial, error=str(err).splitlines()[0])
        self._state = "failed"
        self._close_response()
        return err

    def close(self) -> None:
        """Stop reading and let the connection go. Closing before `message_stop` is recorded as such."""
        if self._state in ("new", "open"):
            if self._state == "open":
                partial = self.accumulator.snapshot()
                recorded = None if partial is None else self.client._record_of(partial, b"", secret=True)
                self._update_record(response=recorded, error=f"closed by the caller after "
                                                             f"{self.accumulator.events} events, before message_stop")
            self._state = "closed"
        self._close_response()

    def _update_record(self, *, response: Any, error: str | None = None, complete: bool = False) -> None:
        record = self._record
        if record is None:
            return
        record.response, record.seconds = response, time.perf_counter() - self._began
        if error is not None:
            record.error = error
        record.stream = {"events": self.accumulator.events, "bytes": self._size, "complete": complete}

    def _close_response(self, response: httpx.Response | None = None) -> None:
        for each in (response, self._response):
            if each is not None:
                each.close()
        self._response = None


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
