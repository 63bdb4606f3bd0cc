"""The async client: `Client`'s twin on `httpx2.AsyncClient`, for asyncio programs.

    async with AsyncClient(api_key=...) as llm:        # or connect_async()
        message = await llm.create(messages)
        async with llm.stream(messages) as s:
            async for event in s:
                ...
        s.message                                       # what create() returns

Every decision is `clientcore.py`'s, shared with `client.py`: the body and headers,
what a response means, the typed errors, which failures are retried and how long to
wait, redaction, the records, the size bounds. Only the waiting differs:

- an attempt is bounded as a whole by `asyncio.timeout` (connecting, sending and
  reading, as `deadline.within` bounds the blocking client's sockets): at the
  deadline the event loop cancels whatever is pending, a slow in-process transport too;
- cancelling the task (asyncio's Ctrl-C) closes the response at once, is never
  retried, and lets CancelledError through, as asyncio code expects.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from typing import Any, AsyncIterator, Awaitable, Callable

import httpx2

from miniagent import deadline, wire
from miniagent.clientcore import ClientCore, Exchange, _Retryable, from_environment
from miniagent.errors import MalformedResponseError
from miniagent.streaming import StreamCore


@contextlib.asynccontextmanager
async def _deadline(when: float) -> AsyncIterator[None]:
    """`deadline.until` for asyncio: the block is cancelled at `when` (a `time.monotonic()` value).

    The timeout comes out as httpx2's own, so the shared rules read it as they read a
    socket's. Only this block's deadline becomes a timeout: a cancellation from outside
    stays a CancelledError. `deadline.until` is set too (each task has its own), so the
    shared checks between two chunks also catch a transport too busy to be cancelled.
    """
    loop = asyncio.get_running_loop()
    try:
        with deadline.until(when):
            async with asyncio.timeout_at(loop.time() + (when - time.monotonic())):
                yield
    except TimeoutError:
        raise httpx2.ReadTimeout("the attempt's deadline passed") from None


async def _whole(content: bytes) -> AsyncIterator[bytes]:
    yield content


class AsyncClient(ClientCore):
    """Calls the Messages API from asyncio: `await client.create(...)`.

    The same settings, rules and records as `Client` (see `ClientCore`); `transport` is
    an `httpx2.AsyncBaseTransport` (the mock's `async_transport()`, or a test's) and
    `sleep` an async function (`asyncio.sleep`). Close it with `await client.aclose()`,
    or use it as `async with AsyncClient(...) as client:`.
    """

    def __init__(self, *, transport: httpx2.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep, **settings: Any):
        super().__init__(sleep=sleep, **settings)
        self.http = httpx2.AsyncClient(transport=transport or httpx2.AsyncHTTPTransport(),
                                      timeout=self._http_timeout())

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.http.aclose()

    async def create(self, messages: list[dict], *, stream: bool = False,
                     on_event: Callable[[dict], Any] | None = None, **kwargs: Any) -> dict:
        """`Client.create`, awaited: the same arguments and the same message dict.

        With `stream=True`, `on_event(event)` is called for each event; if it returns an
        awaitable (an `async def` callback), that is awaited before the next event.
        """
        if stream:
            async with self.stream(messages, **kwargs) as events:
                async for event in events:
                    if on_event is not None and inspect.isawaitable(done := on_event(event)):
                        await done
            assert events.message is not None  # the iteration ends at message_stop, or raises
            return events.message
        payload = await self._post(self.format.path, self._plain_body(messages, on_event, kwargs), self.format.problem)
        response = self.format.message(payload)  # the Messages API's own, or translated (providers.py)
        self.usage.add(response["usage"])
        return response

    def stream(self, messages: list[dict], **kwargs: Any) -> AsyncMessageStream:
        """A streamed request, used as `async with client.stream(...) as s: async for event in s: ...`."""
        return AsyncMessageStream(self, self._stream_body(messages, kwargs))

    async def count_tokens(self, messages: list[dict], *, system: Any = None,
                           tools: list[dict] | None = None) -> int:
        """Input tokens this conversation would cost (the API's /v1/messages/count_tokens)."""
        body = self._count_body(messages, system, tools)
        return (await self._post(self.format.count_path, body, wire.count_problem))["input_tokens"]

    # Sending, with retries --------------------------------------------------------

    async def _post(self, path: str, body: dict, problem: Callable[[Any], str | None]) -> Any:
        async def attempt(url: str, content: bytes, record: Exchange) -> Any:
            return await self._exchange(url, content, record, problem)
        return await self._attempts(path, body, attempt)

    async def _attempts(self, path: str, body: dict, attempt: Callable[[str, bytes, Exchange], Awaitable[Any]]) -> Any:
        """`Client._attempts`, awaited. A cancelled attempt is recorded as such and not retried."""
        url, content, request = self._prepare(path, body)
        for number in range(1, self.max_retries + 2):
            record = self._new_record(request, number)
            started = time.perf_counter()
            try:
                return await attempt(url, content, record)
            except _Retryable as failed:
                retry = failed
            except MalformedResponseError as err:
                self._not_retried(record, err)
                raise
            except asyncio.CancelledError:
                record.error = record.error or "cancelled"
                raise
            finally:
                record.seconds = time.perf_counter() - started
            await self.sleep(self._wait_after(retry, record, number))
        raise AssertionError("unreachable")

    async def _exchange(self, url: str, content: bytes, record: Exchange,
                        problem: Callable[[Any], str | None]) -> Any:
        try:
            response, raw = await self._send(url, content)
        except httpx2.TransportError as exc:
            raise self._lost(exc, "no complete response") from None
        return self._answer(record, response, raw, problem)

    async def _send(self, url: str, content: bytes) -> tuple[httpx2.Response, bytes]:
        """One attempt, all of it (connecting, sending, reading) within `timeout`; the response always closed."""
        async with _deadline(time.monotonic() + self.timeout):
            response = await self._start(url, content)
            try:
                return response, await self._read_body(response)
            finally:
                await response.aclose()

    async def _start(self, url: str, content: bytes) -> httpx2.Response:
        request = self.http.build_request("POST", url, headers=self._send_headers(), content=content)
        return await self.http.send(request, stream=True)

    async def _read_body(self, response: httpx2.Response) -> bytes:
        """The body, decompressed and counted as it arrives (`Client._read_body`)."""
        chunks, size = [], 0
        try:
            async with contextlib.aclosing(self._pieces(response)) as pieces:
                async for chunk in pieces:
                    size += len(chunk)
                    self._body_so_far(response, size)
                    chunks.append(chunk)
        except ValueError as exc:  # from wire.adecompressed
            raise self._unreadable(response, exc) from None
        return b"".join(chunks)

    def _pieces(self, response: httpx2.Response) -> AsyncIterator[bytes]:
        self._check_declared(response)
        if response.is_stream_consumed:  # an in-memory transport (the mock) handed over the body whole
            return _whole(response.content)
        return wire.adecompressed(response.aiter_raw(), response.headers.get("content-encoding", ""))


class AsyncMessageStream(StreamCore):
    """One streamed call from asyncio; `MessageStream`'s rules, bounds and errors, awaited.

        async with client.stream(messages) as s:
            async for event in s:
                ...
        s.message, s.usage       # s.partial while it runs, or after it broke

    Cancelling the task that reads it closes the response and records the stream as
    closed by the caller; nothing is retried.
    """

    client: AsyncClient

    async def __aenter__(self) -> AsyncMessageStream:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def open(self) -> None:
        """Send the request and wait for the stream's first byte, retrying as create() does."""
        if self._state != "new":
            return
        self._state = "opening"
        try:
            await self.client._attempts(self.client.format.path, self.body, self._attempt)
        except BaseException:
            self._state = "failed"
            await self._close_response()
            raise
        self._state = "open"

    async def _attempt(self, url: str, content: bytes, record: Exchange) -> None:
        client = self.client
        try:
            async with _deadline(self._new_attempt(record)):
                self._response = response = await client._start(url, content)
                record.status = response.status_code
                if not response.is_success:
                    raise client._refused(record, response, await client._read_body(response))
                if not self._is_stream(response):
                    raise self._not_a_stream(response, await client._read_body(response))
                self._pieces = client._pieces(response)
                self._first = await self._read()
                if not self._first:
                    raise self._no_first_byte(response)
        except httpx2.TransportError as exc:
            retry = client._lost(exc, "no stream began", self._refusal())
            await self._close_response()
            raise retry from None
        except BaseException:
            await self._close_response()
            raise

    async def __aiter__(self) -> AsyncIterator[dict]:
        """Each event as it arrives; the iteration ends after `message_stop`, or raises (see MessageStream)."""
        if self._state == "new":
            await self.open()
        try:
            while self._state == "open":
                chunk, self._first = self._first or await self._next_chunk(), b""
                for event in self._events(chunk):
                    if self._state != "open":
                        await self._close_response()  # message_stop: the connection goes before the caller sees it
                    yield event
        except BaseException:  # a broken stream, or the task cancelled: let the connection go now
            await self._close_response()
            raise

    async def _next_chunk(self) -> bytes:
        """The next bytes (b"" at the end), within `timeout` and the whole stream's deadline."""
        try:
            async with _deadline(min(self._ends, time.monotonic() + self.client.timeout)):
                return await self._read()
        except (httpx2.TransportError, MalformedResponseError) as exc:
            raise self._read_failed(exc) from None

    async def _read(self) -> bytes:
        waited = 0.0
        while True:
            before = time.monotonic()
            try:
                piece = await anext(self._pieces, None)
            except ValueError as exc:  # from wire.adecompressed: a corrupt body
                raise self._corrupt(exc) from None
            waited += time.monotonic() - before
            got = self._arrived(piece, waited)
            if got is not None:
                return got

    async def aclose(self) -> None:
        """Stop reading and let the connection go. Closing before `message_stop` is recorded as such."""
        self._closing()
        await self._close_response()

    async def _close_response(self) -> None:
        response, self._response = self._response, None
        pieces, self._pieces = self._pieces, iter(())
        if hasattr(pieces, "aclose"):
            with contextlib.suppress(RuntimeError):  # already running: another task is reading it
                await pieces.aclose()
        if response is not None:
            await response.aclose()


def connect_async(*, offline: bool | None = None, model: str | None = None, quiet: bool = False,
                  provider: str | None = None, **kwargs: Any) -> AsyncClient:
    """`connect()` for asyncio: the same environment rules, providers and line printed, an AsyncClient.

    Offline, it talks to the mock in-process through `MockAPI().async_transport()`.
    """
    return from_environment(AsyncClient, lambda mock: mock.async_transport(), offline=offline, model=model,
                            quiet=quiet, provider=provider, **kwargs)
