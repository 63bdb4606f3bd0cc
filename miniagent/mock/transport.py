"""The mock API in-process: httpx transports that answer without a socket.

`httpx.Client(transport=mock.transport())` sends every request straight to
`MockAPI.handle()`. A slow or dropped reply behaves as it would over a network: a
delay longer than the request's read timeout raises `httpx.ReadTimeout` after
waiting that long, and a drop raises `httpx.RemoteProtocolError`, so client code
meets the same exceptions offline as live.

A stream (or a body a fault cuts short) comes back as an httpx byte stream: its
headers at once, then each chunk when it is due, the wait between two chunks bounded
by the read timeout as above; a broken answer raises `httpx.RemoteProtocolError`
after its last chunk, as httpx does when a server closes a connection mid-body.
The sync and async transports differ only in how they read the body and sleep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, AsyncIterator, Awaitable, Callable, Iterator

import httpx

if TYPE_CHECKING:
    from miniagent.mock.api import MockAPI, MockReply


class Transport(httpx.BaseTransport):
    def __init__(self, mock: MockAPI, sleep: Callable[[float], None]) -> None:
        self.mock, self.sleep = mock, sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        reply = self.mock.handle(request.method, _target(request), request.headers, request.read())
        if reply.delay:
            self.sleep(_wait(reply.delay, request))
        _check_arrival(reply, request)
        if reply.events is None and not reply.broken:
            return _response(reply, request, content=reply.body)
        return _response(reply, request, stream=_SyncBody(reply, request, self.sleep))


class AsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, mock: MockAPI, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.mock, self.sleep = mock, sleep

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        reply = self.mock.handle(request.method, _target(request), request.headers, await request.aread())
        if reply.delay:
            await self.sleep(_wait(reply.delay, request))
        _check_arrival(reply, request)
        if reply.events is None and not reply.broken:
            return _response(reply, request, content=reply.body)
        return _response(reply, request, stream=_AsyncBody(reply, request, self.sleep))


class _SyncBody(httpx.SyncByteStream):
    """A streamed or broken body, chunk by chunk, each after its wait."""

    def __init__(self, reply: MockReply, request: httpx.Request, sleep: Callable[[float], None]) -> None:
        self.reply, self.request, self.sleep = reply, request, sleep

    def __iter__(self) -> Iterator[bytes]:
        for wait, chunk in _chunks(self.reply):
            if wait:
                self.sleep(_wait(wait, self.request))
                _check_gap(wait, self.request)
            yield chunk
        if self.reply.broken:
            raise _cut_off(self.reply, self.request)


class _AsyncBody(httpx.AsyncByteStream):
    def __init__(self, reply: MockReply, request: httpx.Request, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.reply, self.request, self.sleep = reply, request, sleep

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for wait, chunk in _chunks(self.reply):
            if wait:
                await self.sleep(_wait(wait, self.request))
                _check_gap(wait, self.request)
            yield chunk
        if self.reply.broken:
            raise _cut_off(self.reply, self.request)


def _target(request: httpx.Request) -> str:
    """The request target as a server reads it: the path as sent (percent-encoded) and its query."""
    return request.url.raw_path.decode("ascii", "replace")


def _chunks(reply: MockReply) -> list[tuple[float, bytes]]:
    return reply.events if reply.events is not None else [(0.0, reply.body)]


def _read_timeout(request: httpx.Request) -> float | None:
    return (request.extensions.get("timeout") or {}).get("read")


def _wait(delay: float, request: httpx.Request) -> float:
    """Seconds to wait: the delay, but no longer than the read timeout."""
    limit = _read_timeout(request)
    return delay if limit is None else min(delay, limit)


def _check_gap(delay: float, request: httpx.Request) -> None:
    """After waiting: the error a real client gets when the next bytes come later than its read timeout."""
    limit = _read_timeout(request)
    if limit is not None and delay > limit:
        raise httpx.ReadTimeout(f"timed out: the mock's next bytes were {delay:g} s away, longer than the "
                                f"read timeout of {limit:g} s", request=request)


def _check_arrival(reply: MockReply, request: httpx.Request) -> None:
    """The error a real client would get after waiting for the headers, if any."""
    limit = _read_timeout(request)
    if limit is not None and reply.delay > limit:
        raise httpx.ReadTimeout(f"timed out: the mock delayed its answer {reply.delay:g} s, longer than the "
                                f"read timeout of {limit:g} s", request=request)
    if reply.drop:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)


def _cut_off(reply: MockReply, request: httpx.Request) -> httpx.RemoteProtocolError:
    """What httpx says when a server closes the connection before the body's end (its own words)."""
    if reply.events is not None:
        why = "incomplete chunked read"
    else:
        why = f"received {len(reply.body)} bytes, expected {reply.headers.get('content-length')}"
    return httpx.RemoteProtocolError(f"peer closed connection without sending complete message body: {why}",
                                     request=request)


def _response(reply: MockReply, request: httpx.Request, **body: object) -> httpx.Response:
    return httpx.Response(reply.status, headers=reply.headers, request=request, **body)  # type: ignore[arg-type]
