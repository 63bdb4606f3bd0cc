"""One LLM call over HTTP: the Anthropic Messages API with httpx2, and nothing hidden.

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

The decisions (the body, what a response means, retries, redaction, records) live in
`clientcore.py`, shared with the async client (`aclient.py`); this module is the
blocking driver: it sends, reads and sleeps, and asks the core what to make of it.
The stream `client.stream()` returns, `MessageStream`, is notebook 06's (`streaming.py`).

`connect()` at the bottom picks offline (the bundled mock API) or live from the
environment and says which it picked.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

import httpx2

from miniagent import deadline, wire
from miniagent.clientcore import (API_VERSION, DEFAULT_BASE_URL, DEFAULT_MODEL, MAX_RESPONSE_BYTES,  # noqa: F401
                                  OFFLINE_API_KEY, OFFLINE_BASE_URL, RECORD_STRING_CHARS, REDACTED, STREAM_TIMEOUT,
                                  ClientCore, Exchange, Usage, _Retryable, checked_key, from_environment)
from miniagent.errors import (MAX_RETRY_AFTER, STATUS_OF_TYPE, APIConnectionError, APIError, APIKeyError,  # noqa: F401
                              APITimeoutError, AuthenticationError, BadRequestError, InternalServerError,
                              InvalidAPIKeyError, MalformedResponseError, MissingAPIKeyError, NotFoundError,
                              OverloadedError, PermissionDeniedError, RateLimitError, RequestEncodingError,
                              RequestTooLargeError, ResponseTooLargeError, StreamError, error_class,
                              error_for_type, is_retryable, retry_after_seconds)

if TYPE_CHECKING:
    from miniagent.streaming import MessageStream

# --- the client -----------------------------------------------------------------


class Client(ClientCore):
    """Calls the Messages API. `create()` is the whole idea; the rest is error handling.

    The settings (api_key, base_url, model, max_tokens, timeout, max_retries,
    max_retry_wait, max_response_bytes, stream_timeout, ...) and what they bound are
    `ClientCore`'s. `transport` replaces httpx2's (the mock's, or a test's), `sleep`
    the wait between attempts.
    """

    def __init__(self, *, transport: httpx2.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep, **settings: Any):
        super().__init__(sleep=sleep, **settings)
        self.http = httpx2.Client(transport=transport or deadline.deadline_transport(), timeout=self._http_timeout())

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
        payload = self._post(self.format.path, self._plain_body(messages, on_event, kwargs), self.format.problem)
        response = self.format.message(payload)  # the Messages API's own, or translated (providers.py)
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
        from miniagent.streaming import MessageStream  # notebook 06: the stream itself, loaded with the first one

        return MessageStream(self, self._stream_body(messages, kwargs))

    def count_tokens(self, messages: list[dict], *, system: Any = None, tools: list[dict] | None = None) -> int:
        """Input tokens this conversation would cost (the API's /v1/messages/count_tokens)."""
        body = self._count_body(messages, system, tools)
        return self._post(self.format.count_path, body, wire.count_problem)["input_tokens"]

    # Sending, with retries --------------------------------------------------------

    def _post(self, path: str, body: dict, problem: Callable[[Any], str | None]) -> Any:
        """POST `body`; the parsed 2xx payload, checked by `problem`, or a typed error."""
        return self._attempts(path, body, lambda url, content, record: self._exchange(url, content, record, problem))

    def _attempts(self, path: str, body: dict, attempt: Callable[[str, bytes, Exchange], Any]) -> Any:
        """Call `attempt(url, content, record)` until it succeeds: the one retry loop of every call.

        `attempt` returns its result, or raises `_Retryable(err, response)` for a failure
        that another attempt may cure (`_wait_after` decides); any other error ends the
        call at once. Each attempt gets its own record in `exchanges`.
        """
        url, content, request = self._prepare(path, body)
        for number in range(1, self.max_retries + 2):
            record = self._new_record(request, number)
            started = time.perf_counter()
            try:
                return attempt(url, content, record)
            except _Retryable as failed:
                retry = failed
            except MalformedResponseError as err:
                self._not_retried(record, err)
                raise
            finally:
                record.seconds = time.perf_counter() - started
            self.sleep(self._wait_after(retry, record, number))
        raise AssertionError("unreachable")

    def _exchange(self, url: str, content: bytes, record: Exchange, problem: Callable[[Any], str | None]) -> Any:
        """One plain (not streamed) attempt: the checked payload, or `_Retryable`."""
        try:
            response, raw = self._send(url, content)
        except httpx2.TransportError as exc:
            raise self._lost(exc, "no complete response") from None
        return self._answer(record, response, raw, problem)

    def _send(self, url: str, content: bytes) -> tuple[httpx2.Response, bytes]:
        """One attempt, all of it (connecting, sending, reading) within `timeout`."""
        with deadline.within(self.timeout):
            response = self._start(url, content)
            try:
                return response, self._read_body(response)
            finally:
                response.close()

    def _start(self, url: str, content: bytes) -> httpx2.Response:
        """Send the request; the response as soon as its headers are in, its body still to read."""
        request = self.http.build_request("POST", url, headers=self._send_headers(), content=content)
        return self.http.send(request, stream=True)

    def _read_body(self, response: httpx2.Response) -> bytes:
        """The body, decompressed, counted and timed as it arrives: never more than `max_response_bytes`."""
        chunks, size = [], 0
        try:
            for chunk in self._pieces(response):
                size += len(chunk)
                self._body_so_far(response, size)
                chunks.append(chunk)
        except ValueError as exc:  # from wire.decompressed
            raise self._unreadable(response, exc) from None
        return b"".join(chunks)

    def _pieces(self, response: httpx2.Response) -> Iterator[bytes]:
        """The body's bytes, decompressed, as they arrive; refused at once if it declares too many."""
        self._check_declared(response)
        if response.is_stream_consumed:  # an in-memory transport (the mock) handed over the body whole
            return iter([response.content])
        return wire.decompressed(response.iter_raw(), response.headers.get("content-encoding", ""))


# --- offline or live --------------------------------------------------------------


def connect(*, offline: bool | None = None, model: str | None = None, quiet: bool = False,
            provider: str | None = None, **kwargs: Any) -> Client:
    """A Client for the mock API or the real one, chosen from the environment.

    - `MINIAGENT_OFFLINE=1` (or `offline=True`): the bundled mock, whatever keys are set;
    - else `ANTHROPIC_API_KEY` set: live, at `ANTHROPIC_BASE_URL` if set (so pointing it
      at `python -m miniagent.mock` runs the live code path against the mock over HTTP);
    - else: the mock, with a note saying how to go live.
    `MINIAGENT_MODEL` picks the model. Prints one line saying which it picked.
    `api_key=...` and `base_url=...` given here take the place of the environment's.
    Live, `MINIAGENT_BASE_URL` moves any provider's address (a local server on another
    port), and `MINIAGENT_TIMEOUT` / `MINIAGENT_STREAM_TIMEOUT` give each attempt / each
    stream more seconds (a local model's first token can be slow). `offline=True` in code
    is a lesson's own mock: it answers as a model it serves, whatever MINIAGENT_MODEL names.

    `provider="deepseek"` (or `MINIAGENT_PROVIDER=deepseek`) picks another provider from
    `providers.PRESETS`: its key variable (DEEPSEEK_API_KEY) replaces ANTHROPIC_API_KEY
    above, and its base URL, default model and format (OpenAI Chat Completions or the
    Messages API) come with it. Local servers (ollama, vllm) need no key.
    """
    return from_environment(Client, lambda mock: mock.transport(), offline=offline, model=model, quiet=quiet,
                            provider=provider, **kwargs)
