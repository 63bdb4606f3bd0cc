"""One test body, both clients: `@both` runs a client test against Client and AsyncClient.

The two clients share every decision (clientcore.py), so they must pass the same
assertions. Rather than a second copy of each test, a test marked `@both` runs twice;
in its AsyncClient run, the test module's `Client` and `connect` stand for `Blocking`
and `blocking_connect`: an AsyncClient behind the blocking client's methods. Each call
is run on an event loop kept for that client (`asyncio.Runner`, which is `asyncio.run`
for several calls), and a stream is read one event per run, so the test's own code
runs between two events exactly as it does with the blocking client.

Test doubles made for the blocking client are translated on the way in: an
`httpx2.MockTransport` whose responses have a plain generator as their body gets the
same body as an async stream, the mock's `transport()` becomes its `async_transport()`,
and a plain `sleep` function becomes an async one.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

import httpx2
import pytest

from miniagent.aclient import AsyncClient, AsyncMessageStream, connect_async
from miniagent.mock.transport import Transport as MockAPITransport

DRIVERS = ["Client", "AsyncClient"]


def both(test: Callable) -> Callable:
    """Run `test` once with Client and once with AsyncClient (see the module's docstring)."""
    test = pytest.mark.parametrize("driver", DRIVERS, indirect=True)(test)
    return pytest.mark.usefixtures("driver")(test)


@pytest.fixture
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The client a `@both` test runs against; for AsyncClient, the module's names are swapped."""
    name = getattr(request, "param", "Client")
    opened: list[Blocking] = []
    if name == "AsyncClient":
        monkeypatch.setattr(Blocking, "opened", opened)
        for attr, stand_in in (("Client", Blocking), ("connect", blocking_connect)):
            if hasattr(request.module, attr):
                monkeypatch.setattr(request.module, attr, stand_in)
    yield name
    for client in opened:
        client.close()


class Blocking:
    """An AsyncClient with Client's blocking methods: `create`, `stream`, `count_tokens`."""

    opened: list[Blocking] = []

    def __init__(self, *, transport: Any = None, sleep: Callable[[float], Any] | None = None, **settings: Any):
        if sleep is not None:
            settings["sleep"] = _async(sleep)
        self._wrap(AsyncClient(transport=_async_transport(transport), **settings))

    @classmethod
    def around(cls, client: AsyncClient) -> Blocking:
        blocking = cls.__new__(cls)
        blocking._wrap(client)
        return blocking

    def _wrap(self, client: AsyncClient) -> None:
        self.__dict__.update(inner=client, runner=asyncio.Runner())
        self.opened.append(self)

    def create(self, *args: Any, **kwargs: Any) -> dict:
        return self.runner.run(self.inner.create(*args, **kwargs))

    def count_tokens(self, *args: Any, **kwargs: Any) -> int:
        return self.runner.run(self.inner.count_tokens(*args, **kwargs))

    def stream(self, *args: Any, **kwargs: Any) -> BlockingStream:
        return BlockingStream(self.runner, self.inner.stream(*args, **kwargs))

    def close(self) -> None:
        self.runner.run(self.inner.aclose())
        self.runner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["inner"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.inner, name, _async(value) if name == "sleep" else value)

    def __repr__(self) -> str:
        return repr(self.inner)


class BlockingStream:
    """An AsyncMessageStream with MessageStream's `with` and `for`; one event per run of the loop."""

    def __init__(self, runner: asyncio.Runner, stream: AsyncMessageStream) -> None:
        self.runner, self.inner = runner, stream

    def __enter__(self) -> BlockingStream:
        self.runner.run(self.inner.open())
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.runner.run(self.inner.aclose())

    def __iter__(self):
        events = aiter(self.inner)
        end = object()

        async def step() -> Any:
            return await anext(events, end)
        try:
            while (event := self.runner.run(step())) is not end:
                yield event
        finally:
            self.runner.run(events.aclose())

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def blocking_connect(**kwargs: Any) -> Blocking:
    return Blocking.around(connect_async(**kwargs))


# --- test doubles, translated ----------------------------------------------------------------


def _async(sleep: Callable[[float], Any]) -> Callable[[float], Any]:
    """A plain sleep function (`waits.append`, `lambda s: None`) as the async one AsyncClient awaits."""
    if sleep is time.sleep:
        return asyncio.sleep

    async def asleep(seconds: float) -> None:
        sleep(seconds)
    return asleep


def _async_transport(transport: Any) -> Any:
    if isinstance(transport, MockAPITransport):
        return transport.mock.async_transport(sleep=_async(transport.sleep))
    if isinstance(transport, httpx2.MockTransport):
        handler = transport.handler
        return httpx2.MockTransport(lambda request: _async_body(handler(request)))
    return transport


def _async_body(response: httpx2.Response) -> httpx2.Response:
    if not isinstance(response.stream, httpx2.AsyncByteStream):
        response.stream = AsyncBody(response.stream)
    return response


class AsyncBody(httpx2.AsyncByteStream):
    """A body given as a plain iterator, read by async code; an exception in it breaks the body there."""

    def __init__(self, chunks: Any) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aiter__(self):
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True
