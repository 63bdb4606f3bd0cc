"""The mock API in-process: httpx transports that answer without a socket.

`httpx.Client(transport=mock.transport())` sends every request straight to
`MockAPI.handle()`. A slow or dropped reply behaves as it would over a network: a
delay longer than the request's read timeout raises `httpx.ReadTimeout` after
waiting that long, and a drop raises `httpx.RemoteProtocolError`, so client code
meets the same exceptions offline as live. The sync and async transports differ only
in how they read the body and sleep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

import httpx

if TYPE_CHECKING:
    from miniagent.mock.api import MockAPI, MockReply


class Transport(httpx.BaseTransport):
    def __init__(self, mock: MockAPI, sleep: Callable[[float], None]) -> None:
        self.mock, self.sleep = mock, sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        reply = self.mock.handle(request.method, request.url.path, request.headers, request.read())
        if reply.delay:
            self.sleep(_wait(reply, request))
        return _to_response(reply, request)


class AsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, mock: MockAPI, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.mock, self.sleep = mock, sleep

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        reply = self.mock.handle(request.method, request.url.path, request.headers, await request.aread())
        if reply.delay:
            await self.sleep(_wait(reply, request))
        return _to_response(reply, request)


def _read_timeout(request: httpx.Request) -> float | None:
    return (request.extensions.get("timeout") or {}).get("read")


def _wait(reply: MockReply, request: httpx.Request) -> float:
    """Seconds to wait before answering: the reply's delay, but no longer than the read timeout."""
    limit = _read_timeout(request)
    return reply.delay if limit is None else min(reply.delay, limit)


def _to_response(reply: MockReply, request: httpx.Request) -> httpx.Response:
    """The reply as httpx sees it, or the error a real client would get after waiting."""
    limit = _read_timeout(request)
    if limit is not None and reply.delay > limit:
        raise httpx.ReadTimeout(f"timed out: the mock delayed its answer {reply.delay:g} s, longer than the "
                                f"read timeout of {limit:g} s", request=request)
    if reply.drop:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
    return httpx.Response(reply.status, headers=reply.headers, content=reply.body, request=request)
