"""The decisions of one API call, without its I/O: what `Client` and `AsyncClient` share.

A call is the same whether it blocks or is awaited: the body and headers it sends,
what a response means (a message, a typed error, something malformed), whether a
failure is worth another attempt and how long to wait first, what goes into the
records and what is redacted there. All of that is here, once. `client.py` and
`aclient.py` are the two drivers: each sends, reads and sleeps its own way (plain
calls or `await`) and asks this module what to make of what happened.

This is the sans-I/O pattern (h11 and others): the part worth testing has no I/O, so
both drivers get exactly the same rules, and the test suite runs every scenario
against both.

- `AnthropicFormat`: the Messages API's wire format (its path, its headers, and nothing
  to translate), the `format` object everything here asks.
- `ClientCore`: settings, the request, response checks, error mapping, retry waits,
  redaction and records; the base class of both clients.
- `from_environment`: `connect()` and `connect_async()`'s choice of offline or live, and of
  the provider (`providers.PRESETS`, notebook 08).

What differs between the Messages API and OpenAI-compatible APIs (the path, the auth
header, the translation of requests, responses, stream chunks and errors) is that one
`format` object: notebook 08's `providers.OpenAIFormat` answers the same questions, and
everything here stays the same. A streamed call's own decisions are notebook 06's
(`streaming.StreamCore`).
"""

from __future__ import annotations

import json
import os
import random
import re
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import httpx2

from miniagent import deadline, wire
from miniagent.i18n import say
from miniagent.errors import (APIConnectionError, APIError, APITimeoutError, AuthenticationError, InvalidAPIKeyError,
                              MalformedResponseError, MissingAPIKeyError, NotFoundError, RequestEncodingError,
                              ResponseTooLargeError, error_class, is_retryable, retry_after_seconds)

DEFAULT_MODEL = "claude-sonnet-5-5"  # MINIAGENT_MODEL overrides it
DEFAULT_BASE_URL = "https://api.anthropic.com"
OFFLINE_BASE_URL = "http://miniagent-mock.invalid"  # .invalid: nothing leaves the machine
OFFLINE_API_KEY = "mock-key"
NO_KEY = "no-key"  # local servers (Ollama, vLLM) need no key, but the header must hold something
API_VERSION = "2023-06-01"
REDACTED = "<redacted>"
MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # far above any real answer (128k tokens of text is ~0.5 MB)
RECORD_STRING_CHARS = 20_000  # strings longer than this are clipped in client.exchanges
STREAM_TIMEOUT = 600.0  # a whole stream; the official SDK's default timeout is 600 s too
ON_EVENT_NEEDS_STREAM = "on_event is called for the events of a stream: pass stream=True as well"

# --- the key ----------------------------------------------------------------------


def checked_key(key: Any, name: str = "the API key") -> str:
    """The key with surrounding whitespace removed; an error if it cannot be a key.

    A key read from a file keeps its final newline, so the ends are stripped. Inside,
    a key is one line of printable ASCII: a space, a line break (a key pasted from a
    chat can carry a `\\r\\n` in the middle), a control or non-ASCII character means
    the copy went wrong, and sending it would fail anyway (httpx2 refuses such a header,
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


def input_billed(usage: dict) -> int:
    """Every input token of one answer's `usage`: the API's `input_tokens` counts only those not read
    from or written to the prompt cache, which come in `cache_read_input_tokens` and
    `cache_creation_input_tokens` (a server that caches the prompt, llama.cpp's included, reports most
    of a long conversation there). Summing `input_tokens` alone makes a growing prompt look flat."""
    return sum(usage.get(key) or 0 for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


@dataclass
class Usage:
    """Tokens spent so far, summed over every successful call."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0

    def add(self, usage: dict) -> None:
        self.input_tokens += input_billed(usage)
        self.output_tokens += usage.get("output_tokens") or 0
        self.calls += 1

    def merge(self, other: "Usage") -> None:
        """Add what another spent on this one's behalf (a sub-agent's tokens, charged to its caller)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls

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
    usage: dict | None = None  # an answer's usage in the Messages API's terms, whatever the wire format

    def to_dict(self) -> dict:
        record = {"attempt": self.attempt, "request": self.request, "status": self.status,
                  "response": self.response, "error": self.error, "seconds": round(self.seconds, 4),
                  "waited": round(self.waited, 4)}
        return record if self.stream is None else {**record, "stream": self.stream}


class _Retryable(Exception):
    """Raised by one attempt for a failure that another attempt may cure; `ClientCore._wait_after` decides."""

    def __init__(self, error: APIError, response: httpx2.Response | None):
        super().__init__(str(error))
        self.error, self.response = error, response


# --- the wire format: what the client asks of the API it speaks --------------------------


class AnthropicFormat:
    """The Messages API, the canonical format: nothing to translate."""

    name, api_name, path, count_path = "anthropic", "Messages API", "/v1/messages", "/v1/messages/count_tokens"
    request_id_header = "request-id"

    def __init__(self, auth: str = "x-api-key") -> None:
        self.auth = auth

    def headers(self, key: str, version: str) -> dict[str, str]:
        auth = {"x-api-key": key} if self.auth == "x-api-key" else {"authorization": f"Bearer {key}"}
        return {**auth, "anthropic-version": version, "content-type": "application/json"}

    def request(self, body: dict) -> dict:
        return body

    def usage(self, usage: dict) -> dict:
        return usage

    def problem(self, payload: Any) -> str | None:
        return wire.message_problem(payload)

    def message(self, payload: dict) -> dict:
        return payload

    def translator(self) -> _EventsAsTheyCome:
        return _EventsAsTheyCome()

    def error_fields(self, payload: Any) -> tuple[str, str] | None:
        error = payload.get("error") if isinstance(payload, dict) else None
        return (str(error.get("message", "")), str(error.get("type", ""))) if isinstance(error, dict) else None


class _EventsAsTheyCome:
    """The Messages API's own stream: each SSE event is one event (`streaming.decode_event`)."""

    def events(self, sse: Any) -> list[dict]:
        from miniagent.streaming import decode_event  # notebook 06: a stream's events, read as they come
        return [decode_event(sse)]

    def end(self) -> list[dict]:
        return []


# --- the client's decisions -----------------------------------------------------------


class ClientCore:
    """Everything a client decides; the subclasses only send, read and sleep.

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
                 sleep: Callable[[float], Any], mode: str = "live", mock: Any = None, history: int = 50,
                 format: Any = None, provider: str = "anthropic", key_env: str = "ANTHROPIC_API_KEY",
                 betas: tuple[str, ...] | list[str] = ()):
        self._api_key = checked_key(api_key)
        self.format = format or AnthropicFormat()  # the wire format: Messages API, or Chat Completions (08)
        self.provider, self.key_env = provider, key_env  # for messages: which preset, which variable holds the key
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
        # Beta features asked for by name, sent as `anthropic-beta` (Messages API only), e.g.
        # ["context-management-2025-06-27"] for server-side context editing (notebook 15).
        self.betas = list(betas)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mode={self.mode!r}, base_url={self.base_url!r}, model={self.model!r})"

    def _http_timeout(self) -> httpx2.Timeout:
        """httpx2's own per-operation timeouts; the whole attempt is bounded by the driver on top."""
        return httpx2.Timeout(self.timeout, connect=min(10.0, self.timeout))

    # The request ------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        headers = self.format.headers(self._api_key, self.api_version)
        if self.betas and "anthropic-version" in headers:
            headers["anthropic-beta"] = ",".join(self.betas)
        return headers

    def endpoint(self) -> tuple[str, dict[str, str]]:
        """(URL, headers) for a call written by hand: this connection's chat endpoint (its base URL and
        its format's path: /v1/messages, or /chat/completions for Chat Completions) and the headers
        the client itself sends (the preset's auth header with its key, the version, the type)."""
        return self.base_url + self.format.path, self.headers()

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

    def _stream_body(self, messages: list[dict], kwargs: dict) -> dict:
        kwargs.pop("stream", None)
        return {**self.body(messages, **kwargs), "stream": True}

    def _plain_body(self, messages: list[dict], on_event: Any, kwargs: dict) -> dict:
        """The body of a call that is not streamed; an `on_event` there would never be called."""
        if on_event is not None:
            raise TypeError(ON_EVENT_NEEDS_STREAM)
        return self.body(messages, **kwargs)

    def _count_body(self, messages: list[dict], system: Any, tools: list[dict] | None) -> dict:
        if self.format.count_path is None:
            raise TypeError(f"count_tokens is the Messages API's {AnthropicFormat.count_path}; the "
                            f"{self.format.api_name} API has no such endpoint (miniagent.tokens estimates offline)")
        body = self.body(messages, system=system, tools=tools)
        body.pop("max_tokens")
        return body

    def _send_headers(self) -> dict[str, str]:
        return {**self.headers(), "accept-encoding": "gzip, deflate"}  # what wire.decompressed reads

    @property
    def last(self) -> Exchange | None:
        """The most recent attempt: `client.last.request`, `client.last.response`."""
        return self.exchanges[-1] if self.exchanges else None

    # Attempts and retries: the loop itself is the driver's, the decisions are here ---

    def _prepare(self, path: str, body: dict) -> tuple[str, bytes, dict]:
        """The URL, the bytes to send, and the redacted snapshot every attempt's record shares."""
        url = self.base_url + path
        try:
            body = self.format.request(body)  # translated at the edge (the Messages API's is the body itself)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RequestEncodingError(f"the request cannot be put in the {self.format.api_name} format: "
                                       f"{exc!r}", type="request_encoding",
                                       hint="The request is valid for the Messages API, but this provider's format "
                                            "has no form for a part of it: the message names which, and what to "
                                            "do instead.") from None
        try:
            content = wire.encode_body(body)
        except ValueError as exc:
            raise RequestEncodingError(f"the request cannot be sent: {exc}", type="request_encoding") from None
        return url, content, self._redacted_request(url, body)

    def _new_record(self, request: dict, number: int) -> Exchange:
        record = Exchange(request=request, attempt=number)
        self.exchanges.append(record)
        return record

    def _not_retried(self, record: Exchange, err: MalformedResponseError) -> None:
        """A response that cannot be read (too large, not a stream, a bad encoding): recorded, never retried."""
        record.status, record.error = err.status, str(err).splitlines()[0]

    def _wait_after(self, failed: _Retryable, record: Exchange, number: int) -> float:
        """Record a failed attempt; the seconds to wait before the next one, or its error raised."""
        err, response = failed.error, failed.response
        record.error = str(err).splitlines()[0]
        wait = self._retry_wait(err, response, number)
        if wait is None:
            raise err
        record.waited = wait
        return wait

    def _retry_wait(self, err: APIError, response: httpx2.Response | None, attempt: int) -> float | None:
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

    def _lost(self, exc: httpx2.TransportError, what: str, response: httpx2.Response | None = None) -> _Retryable:
        """A transport failure as a typed error: a timeout (`what` did not happen in time), or a lost connection."""
        if isinstance(exc, httpx2.TimeoutException):
            err: APIError = APITimeoutError(f"{what} within the timeout of {self.timeout:g} s "
                                            f"({type(exc).__name__})", type="timeout")
        else:
            err = APIConnectionError(f"{type(exc).__name__}: {self._scrub(str(exc))}", type="connection_error")
        return _Retryable(self._hinted(err), response)

    # Responses --------------------------------------------------------------------

    def _answer(self, record: Exchange, response: httpx2.Response, raw: bytes,
                problem: Callable[[Any], str | None]) -> Any:
        """A whole response: the checked payload of a 2xx, else `_Retryable` with its typed error."""
        record.status = response.status_code
        if not response.is_success:
            raise self._refused(record, response, raw)
        payload = wire.decode_json(raw)
        record.response = self._record_of(payload, raw, secret=False)  # as it came: the wire's own shape
        checked = self._checked(payload, raw, response, problem)
        if isinstance(checked, dict) and isinstance(checked.get("usage"), dict):
            record.usage = self.format.usage(checked["usage"])
        return checked

    def _refused(self, record: Exchange, response: httpx2.Response, raw: bytes) -> _Retryable:
        """An error response (4xx, 5xx), recorded, as the typed error (`_wait_after` decides on a retry)."""
        payload = wire.decode_json(raw)
        record.response = self._record_of(payload, raw, secret=True)
        return _Retryable(self._error_from(response, payload, raw), response)

    def _check_declared(self, response: httpx2.Response) -> None:
        """Refuse at once a body that declares more than max_response_bytes."""
        declared = response.headers.get("content-length", "")
        encoded = "content-encoding" in response.headers  # then the length says nothing of the decoded size
        if declared.isdigit() and int(declared) > self.max_response_bytes and not encoded:
            raise self._too_big(response, f"it declares {int(declared):,} bytes")

    def _body_so_far(self, response: httpx2.Response, size: int) -> None:
        """The checks after each piece of a body: its size within the bound, the attempt's deadline not past."""
        if size > self.max_response_bytes:
            raise self._too_big(response, "it was not read further")
        if deadline.remaining() == 0:
            raise httpx2.ReadTimeout("the attempt's deadline passed while reading", request=response.request)

    def _unreadable(self, response: httpx2.Response, exc: ValueError) -> MalformedResponseError:
        """A corrupt body, or an encoding not asked for (from wire.decompressed)."""
        return self._malformed(response, f"the body cannot be read: {exc}")

    def _too_big(self, response: httpx2.Response, detail: str) -> MalformedResponseError:
        return self._malformed(response, f"the response is larger than max_response_bytes="
                                         f"{self.max_response_bytes:,}: {detail}", ResponseTooLargeError)

    def _checked(self, payload: Any, raw: bytes, response: httpx2.Response,
                 problem: Callable[[Any], str | None]) -> Any:
        """The payload if it has the documented shape, else MalformedResponseError (not retried)."""
        why = "the body is not JSON" if payload is None and raw.strip() != b"null" else problem(payload)
        if why is None:
            return payload
        seen = raw[:300].decode("utf-8", "replace")
        raise self._malformed(response, f"not a {self.format.api_name} response: {why}; the body began: {seen!r}")

    def _malformed(self, response: httpx2.Response, why: str,
                   cls: type[MalformedResponseError] = MalformedResponseError) -> MalformedResponseError:
        kind = "response_too_large" if cls is ResponseTooLargeError else "malformed_response"
        return self._hinted(cls(self._scrub(why), type=kind, status=response.status_code,
                                request_id=response.headers.get(self.format.request_id_header)))

    def _error_from(self, response: httpx2.Response, payload: Any, raw: bytes) -> APIError:
        fields = self.format.error_fields(payload)  # (message, type), read where this API puts them
        if fields is not None:
            message, kind = _clip(fields[0], 2000), _clip(fields[1], 100)
        else:
            text = raw[:300].decode("utf-8", "replace")
            message, kind = f"HTTP {response.status_code}: {_clip(text)}", "http_error"
        cls = error_class(response.status_code)
        return self._hinted(cls(self._scrub(message), type=kind, status=response.status_code,
                                request_id=response.headers.get(self.format.request_id_header),
                                retry_after=retry_after_seconds(response.headers)))

    def _hinted(self, err: APIError) -> APIError:
        """`err` with a hint that names this provider's variables (the hints are written for Anthropic's)."""
        if self.format.name == "openai":
            err.hint = self.format.hint_404 if isinstance(err, NotFoundError) else \
                err.hint.replace("Messages API", self.format.api_name)
        if self.key_env != "ANTHROPIC_API_KEY":
            err.hint = err.hint.replace("ANTHROPIC_API_KEY", self.key_env).replace("ANTHROPIC_BASE_URL", "the base URL")
        if isinstance(err, AuthenticationError):
            err.hint += region_hint(self.provider, self.base_url)
        return err

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


def region_hint(provider: str, base_url: str) -> str:
    """For a 401 from a provider whose keys are per region (its preset names the twin): which preset a
    key from the other region needs. Empty for any other preset, or a base URL not the preset's own."""
    from miniagent.providers import preset as named  # here: providers imports this module

    try:
        preset = named(provider)
    except ValueError:  # not a preset: nothing to say
        return ""
    if not (preset.region and preset.twin) or preset.base_url != base_url.rstrip("/"):
        return ""
    return (f" This preset ({provider}, {preset.base_url}) takes a key made in {preset.region}; a key made in "
            f"{named(preset.twin).region} needs preset {preset.twin} (MINIAGENT_PROVIDER={preset.twin}).")


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


# --- offline or live --------------------------------------------------------------


def from_environment(client_class: Callable[..., Any], mock_transport: Callable[[Any], Any], *,
                     offline: bool | None, model: str | None, quiet: bool, provider: str | None = None,
                     **kwargs: Any) -> Any:
    """A client for the mock API or the real one, chosen from the environment (see `client.connect`).

    `client_class` is Client or AsyncClient, and `mock_transport(mock)` the matching
    in-process transport of the mock. `provider` (else MINIAGENT_PROVIDER, else
    "anthropic") names a preset in `providers.PRESETS`: base URL, key variable, default
    model and format. Offline, the mock answers on the same format's endpoint.
    """
    from miniagent import providers  # notebook 08: a provider's preset (address, key variable, model, format)

    name = provider or os.environ.get("MINIAGENT_PROVIDER", "").strip() or "anthropic"
    preset = providers.preset(name)
    env_offline = os.environ.get("MINIAGENT_OFFLINE", "").lower() in ("1", "true", "yes")
    key_env, needs_key = preset.key_env or "", not preset.key_optional
    given = kwargs.pop("api_key", None)  # a key passed in code wins over the environment's
    key = str(given).strip() if given is not None else os.environ.get(key_env, "").strip() if key_env else ""
    chosen = model  # a model the code asked for by name; the environment's is for live use
    model = model or os.environ.get("MINIAGENT_MODEL") or preset.model or DEFAULT_MODEL
    base_url = kwargs.pop("base_url", None)
    settings = {"format": preset.wire_format(), "provider": name, "key_env": key_env or f"the {name} server's key", **kwargs}
    label = "" if name == "anthropic" else f" · {name}"
    asked_offline = offline is True  # a cell's own mock (a lesson that needs a scripted model), even live
    if offline is None:
        offline = env_offline or (needs_key and not key)
    if offline:
        if asked_offline and chosen is None and not _mock_serves(name, model):
            model = preset.model or DEFAULT_MODEL  # MINIAGENT_MODEL names a live model this mock does not serve
        mock = _mock_for(name, model)
        where = OFFLINE_BASE_URL + ("/v1" if preset.format == "openai" else "")  # the mock's /v1/chat/completions
        client = client_class(api_key=OFFLINE_API_KEY, base_url=where, model=model, mode="offline",
                              transport=mock_transport(mock), mock=mock, **settings)
        # a key would not make a lesson's own mock live: no hint to set one
        why = "" if asked_offline or env_offline or key or not needs_key else say("offline_why", key_env=key_env)
        if not quiet:
            print(say("offline", label=label, model=model, why=why))
        return client
    if needs_key and not key:
        if name == "anthropic":
            raise MissingAPIKeyError("live mode needs an API key, and ANTHROPIC_API_KEY is not set",
                                     type="missing_api_key")
        raise MissingAPIKeyError(f"live mode with {name} needs an API key, and {key_env} is not set",
                                 type="missing_api_key",
                                 hint=f"Set {key_env} (export {key_env}=... before `make lab`, or "
                                      f"os.environ['{key_env}'] = ... in a cell), or work offline with MINIAGENT_OFFLINE=1.")
    key = checked_key(key, key_env if given is None else "the api_key passed to connect()") if key else NO_KEY
    base_url = (base_url or os.environ.get("MINIAGENT_BASE_URL", "").strip()
                or (os.environ.get(preset.base_env) if preset.base_env else None) or preset.base_url)
    for setting, variable in (("timeout", "MINIAGENT_TIMEOUT"), ("stream_timeout", "MINIAGENT_STREAM_TIMEOUT")):
        if setting not in settings and os.environ.get(variable, "").strip():
            settings[setting] = _seconds(variable)
    client = client_class(api_key=key, base_url=base_url, model=model, mode="live", **settings)
    if not quiet:
        where = "" if base_url == preset.base_url else say("live_where", base_url=base_url)
        print(say("live", where=where, label=label, model=model))
    return client


def _seconds(variable: str) -> float:
    """A positive number of seconds from the environment, or a ValueError that names the variable."""
    text = os.environ[variable].strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{variable} must be a positive number of seconds, got {text[:40]!r}")
    return seconds


def _mock_serves(provider: str, model: str) -> bool:
    """Whether the offline mock of `provider` answers for `model` (another provider's mock serves any name)."""
    from miniagent.mock import models  # imported here: live use never loads the mock

    return provider != "anthropic" or model in models.Catalog()


def _mock_for(provider: str, model: str) -> Any:
    """The mock API for an offline client. Its Messages API serves the catalog's Claude models only
    (a typo is a 404, as live); another provider's Anthropic-compatible endpoint serves that
    provider's names, so its mock serves `model` too."""
    from miniagent.mock import MockAPI, models  # imported here: live use never loads the mock

    if provider != "anthropic":
        try:
            return MockAPI(models=[*models.MODELS, model])
        except ValueError:  # the catalog has that name already
            pass
    return MockAPI()
