"""The mock API in-process: httpx2 transports that answer without a socket.

`httpx2.Client(transport=mock.transport())` sends every request straight to
`MockAPI.handle()`. A slow or dropped reply behaves as it would over a network: a
delay longer than the request's read timeout raises `httpx2.ReadTimeout` after
waiting that long, and a drop raises `httpx2.RemoteProtocolError`, so client code
meets the same exceptions offline as live.

A stream (or a body a fault cuts short) comes back as an httpx2 byte stream: its
headers at once, then each chunk when it is due, the wait between two chunks bounded
by the read timeout as above; a broken answer raises `httpx2.RemoteProtocolError`
after its last chunk, as httpx2 does when a server closes a connection mid-body.
The sync and async transports differ only in how they read the body and sleep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AsyncIterator, Awaitable, Callable, Iterator

import httpx2

if TYPE_CHECKING:
    from miniagent.mock.api import MockAPI, MockReply


class Transport(httpx2.BaseTransport):
    def __init__(self, mock: MockAPI, sleep: Callable[[float], None]) -> None:
        self.mock, self.sleep = mock, sleep

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        reply = self.mock.handle(request.method, _target(request), request.headers, request.read())
        if reply.delay:
            self.sleep(_wait(reply.delay, request))
        _check_arrival(reply, request)
        if reply.events is None and not reply.broken:
            return _response(reply, request, content=reply.body)
        return _response(reply, request, stream=_SyncBody(reply, request, self.sleep))


class AsyncTransport(httpx2.AsyncBaseTransport):
    def __init__(self, mock: MockAPI, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.mock, self.sleep = mock, sleep

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        reply = self.mock.handle(request.method, _target(request), request.headers, await request.aread())
        if reply.delay:
            await self.sleep(_wait(reply.delay, request))
        _check_arrival(reply, request)
        if reply.events is None and not reply.broken:
            return _response(reply, request, content=reply.body)
        return _response(reply, request, stream=_AsyncBody(reply, request, self.sleep))


class _SyncBody(httpx2.SyncByteStream):
    """A streamed or broken body, chunk by chunk, each after its wait."""

    def __init__(self, reply: MockReply, request: httpx2.Request, sleep: Callable[[float], None]) -> None:
        self.reply, self.request, self.sleep = reply, request, sleep

    def __iter__(self) -> Iterator[bytes]:
        for wait, chunk in _chunks(self.reply):
            if wait:
                self.sleep(_wait(wait, self.request))
                _check_gap(wait, self.request)
            yield chunk
        if self.reply.broken:
            raise _cut_off(self.reply, self.request)


class _AsyncBody(httpx2.AsyncByteStream):
    def __init__(self, reply: MockReply, request: httpx2.Request, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.reply, self.request, self.sleep = reply, request, sleep

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for wait, chunk in _chunks(self.reply):
            if wait:
                await self.sleep(_wait(wait, self.request))
                _check_gap(wait, self.request)
            yield chunk
        if self.reply.broken:
            raise _cut_off(self.reply, self.request)


def _target(request: httpx2.Request) -> str:
    """The request target as a server reads it: the path as sent (percent-encoded) and its query."""
    return request.url.raw_path.decode("ascii", "replace")


def _chunks(reply: MockReply) -> list[tuple[float, bytes]]:
    return reply.events if reply.events is not None else [(0.0, reply.body)]


def _read_timeout(request: httpx2.Request) -> float | None:
    return (request.extensions.get("timeout") or {}).get("read")


def _wait(delay: float, request: httpx2.Request) -> float:
    """Seconds to wait: the delay, but no longer than the read timeout."""
    limit = _read_timeout(request)
    return delay if limit is None else min(delay, limit)


def _check_gap(delay: float, request: httpx2.Request) -> None:
    """After waiting: the error a real client gets when the next bytes come later than its read timeout."""
    limit = _read_timeout(request)
    if limit is not None and delay > limit:
        raise httpx2.ReadTimeout(f"timed out: the mock's next bytes were {delay:g} s away, longer than the "
                                f"read timeout of {limit:g} s", request=request)


def _check_arrival(reply: MockReply, request: httpx2.Request) -> None:
    """The error a real client would get after waiting for the headers, if any."""
    limit = _read_timeout(request)
    if limit is not None and reply.delay > limit:
        raise httpx2.ReadTimeout(f"timed out: the mock delayed its answer {reply.delay:g} s, longer than the "
                                f"read timeout of {limit:g} s", request=request)
    if reply.drop:
        raise httpx2.RemoteProtocolError("Server disconnected without sending a response.", request=request)


def _cut_off(reply: MockReply, request: httpx2.Request) -> httpx2.RemoteProtocolError:
    """What httpx2 says when a server closes the connection before the body's end (its own words)."""
    if reply.events is not None:
        why = "incomplete chunked read"
    else:
        why = f"received {len(reply.body)} bytes, expected {reply.headers.get('content-length')}"
    return httpx2.RemoteProtocolError(f"peer closed connection without sending complete message body: {why}",
                                     request=request)


def _response(reply: MockReply, request: httpx2.Request, **body: object) -> httpx2.Response:
    return httpx2.Response(reply.status, headers=reply.headers, request=request, **body)  # type: ignore[arg-type]
