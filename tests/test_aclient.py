"""AsyncClient: the same outcomes as Client, and what only asyncio has (cancellation).

Most of what the two clients share is checked by the client tests themselves: each
test there marked `@both` runs against Client and AsyncClient (drivers.py). The
scenarios here add the in-process mock's faults (every error status, slow answers,
streams broken midway) for both clients, then the async client's own: `async with`,
awaited callbacks, connect_async, and a task cancelled mid-call or mid-stream.
Async code runs with asyncio.run in plain test functions.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import tracemalloc

import httpx2
import pytest

import miniagent
from drivers import both
from miniagent import aclient
from miniagent.aclient import AsyncClient, AsyncMessageStream, connect_async
from miniagent.client import (APITimeoutError, AuthenticationError, BadRequestError, Client, InternalServerError,
                              NotFoundError, OverloadedError, PermissionDeniedError, RateLimitError,
                              RequestTooLargeError, ResponseTooLargeError, StreamError, connect)
from miniagent.mock import MockAPI
from miniagent.streaming import encode_event

KEY = "sk-ant-api03-async-canary-0123456789abcdef"
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
SSE = {"content-type": "text/event-stream", "request-id": "req_async"}


def offline(**kwargs):
    """A client of a fresh mock whose waits (its own and the client's back-off) take no time; the waits."""
    mock, waits = MockAPI(), []
    client = Client(api_key=KEY, base_url="http://mock.invalid", transport=mock.transport(sleep=lambda s: None),
                    sleep=waits.append, **kwargs)
    return client, mock, waits


def without_id(message: dict) -> dict:
    return {k: v for k, v in message.items() if k != "id"}


# --- both clients, against the mock ----------------------------------------------------------


@both
def test_a_plain_call_and_a_stream_give_the_same_message():
    client, mock, _ = offline()
    plain = client.create(QUESTION)
    events = []
    with client.stream(QUESTION) as s:
        for event in s:
            events.append(event)
    assert without_id(s.message) == without_id(plain) and s.usage == plain["usage"]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert [r.stream for r in client.exchanges][0] is None and client.last.stream["complete"]
    assert client.usage.calls == 2 and len(mock.records) == 2


@pytest.mark.parametrize("status,cls,retried", [
    (400, BadRequestError, False), (401, AuthenticationError, False), (403, PermissionDeniedError, False),
    (404, NotFoundError, False), (413, RequestTooLargeError, False), (429, RateLimitError, True),
    (500, InternalServerError, True), (529, OverloadedError, True)])
@both
def test_every_error_status_is_its_type_and_retried_only_when_that_can_help(status, cls, retried):
    client, mock, waits = offline()
    mock.fault(status, retry_after=1.5)
    if retried:
        assert client.create(QUESTION)["type"] == "message"
        assert [e.status for e in client.exchanges] == [status, 200]
        assert waits == [1.5] if status == 429 else 0.375 <= waits[0] <= 0.5  # retry-after, else backoff
    else:
        with pytest.raises(cls) as info:
            client.create(QUESTION)
        assert info.value.status == status and len(mock.records) == 1 and waits == []


@both
def test_a_slow_answer_is_a_timeout_retried_then_raised():
    client, mock, waits = offline(timeout=0.05)
    mock.fault(delay=5, times=3)
    with pytest.raises(APITimeoutError, match="within the timeout of 0.05 s"):
        client.create(QUESTION)
    assert len(mock.records) == 3 and len(waits) == 2 and client.last.error.startswith("timeout")


@pytest.mark.parametrize("fault,error", [({"cut": 5}, StreamError), ({"error_after": 5}, OverloadedError)])
@both
def test_a_stream_broken_midway_is_not_retried_and_keeps_the_partial_message(fault, error):
    client, mock, waits = offline()
    mock.fault(**fault)
    events = []
    with pytest.raises(error) as info:
        client.create(QUESTION, stream=True, on_event=events.append)
    assert info.value.partial is not None and info.value.partial["content"]
    assert len(events) == 5 and len(mock.records) == 1 and waits == []
    assert client.last.stream["complete"] is False and client.usage.calls == 0


@functools.cache
def bomb() -> bytes:
    """20 MB of zeros as about 20 kB of gzip."""
    return gzip.compress(b"0" * 20_000_000)


@both
def test_a_decompression_bomb_is_refused_while_it_is_read():
    """Read as it arrives (not handed over whole), it goes through wire.decompressed, a bounded piece at a time."""
    pieces = [bomb()[i:i + 4096] for i in range(0, len(bomb()), 4096)]

    def handler(request):
        return httpx2.Response(200, content=iter(pieces), headers={"content-type": "application/json",
                                                           "content-encoding": "gzip"})

    client = Client(api_key=KEY, base_url="https://api.test", transport=httpx2.MockTransport(handler),
                    max_response_bytes=1_000_000, max_retries=0)
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLargeError, match="larger than max_response_bytes=1,000,000"):
            client.create(QUESTION)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8_000_000, f"peak {peak:,} bytes"


# --- the async client's own ----------------------------------------------------------------------


def test_exports_and_the_async_client_as_a_context_manager():
    assert (miniagent.AsyncClient, miniagent.connect_async, miniagent.AsyncMessageStream) == \
        (AsyncClient, connect_async, AsyncMessageStream)

    async def main():
        mock = MockAPI()
        async with AsyncClient(api_key=KEY, base_url="http://mock.invalid", transport=mock.async_transport()) as c:
            answers = await asyncio.gather(*(c.create(QUESTION) for _ in range(3)))  # one client, three calls at once
            tokens = await c.count_tokens(QUESTION)
        return c, answers, tokens

    client, answers, tokens = asyncio.run(main())
    assert client.http.is_closed and len({a["id"] for a in answers}) == 3 and tokens > 0
    assert repr(client).startswith("AsyncClient(") and client.usage.calls == 3 and len(client.exchanges) == 4


def test_an_async_on_event_is_awaited_before_the_next_event():
    async def main():
        client = connect_async(offline=True, quiet=True)
        seen = []

        async def on_event(event):
            await asyncio.sleep(0)
            seen.append(event["type"])

        message = await client.create(QUESTION, stream=True, on_event=on_event)
        return message, seen

    message, seen = asyncio.run(main())
    assert seen[0] == "message_start" and seen[-1] == "message_stop" and message["type"] == "message"


def test_connect_async_follows_connect(monkeypatch, capsys):
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    client, line = connect_async(max_retries=5), capsys.readouterr().out
    assert line == (connect(), capsys.readouterr().out)[1] and line.startswith("offline (mock API) · model ")
    assert isinstance(client, AsyncClient) and client.mode == "offline" and client.max_retries == 5
    assert asyncio.run(client.create(QUESTION))["id"].startswith("msg_mock_") and client.mock.records


# --- cancellation: asyncio's Ctrl-C ---------------------------------------------------------


class Hanging(httpx2.AsyncByteStream):
    """A body that sends `first`, sets `sent`, then sends nothing until it is closed; it notes that it was."""

    def __init__(self, first: bytes, sent: asyncio.Event) -> None:
        self.first, self.sent, self.closed = first, sent, False

    async def __aiter__(self):
        yield self.first
        self.sent.set()
        await asyncio.Event().wait()  # only a cancellation ends this

    async def aclose(self) -> None:
        self.closed = True


def hanging_client(first: bytes, headers: dict):
    """An AsyncClient whose server hangs after `first`; its bodies, and an event set when `first` is read."""
    bodies, sent = [], asyncio.Event()

    def handler(request):
        bodies.append(Hanging(first, sent))
        return httpx2.Response(200, stream=bodies[-1], headers=headers)

    return AsyncClient(api_key=KEY, base_url="https://api.test", transport=httpx2.MockTransport(handler)), bodies, sent


async def cancelled(coroutine, started: asyncio.Event) -> BaseException:
    """Run `coroutine` as a task, cancel it once `started` is set; what it raised."""
    task = asyncio.create_task(coroutine)
    await started.wait()
    task.cancel()
    try:
        await task
    except BaseException as exc:  # noqa: BLE001 - the test looks at it
        return exc
    raise AssertionError("the task finished instead of being cancelled")


def test_a_call_cancelled_mid_body_closes_the_response_and_is_not_retried():
    async def main():
        client, bodies, sent = hanging_client(b'{"id": "msg_', {"content-type": "application/json"})
        return await cancelled(client.create(QUESTION), sent), client, bodies

    raised, client, bodies = asyncio.run(main())
    assert isinstance(raised, asyncio.CancelledError)
    assert len(bodies) == 1 and bodies[0].closed and client.last.error == "cancelled"


def test_a_stream_cancelled_midway_closes_the_response_and_records_how_far_it_got():
    first = b"".join(encode_event(e) for e in [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                              "content": [], "stop_reason": None, "stop_sequence": None,
                                              "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny"}}])

    async def main():
        client, bodies, _ = hanging_client(first, SSE)
        three, seen = asyncio.Event(), []

        async def read():
            async with client.stream(QUESTION) as s:
                async for event in s:
                    seen.append(event)
                    if len(seen) == 3:
                        three.set()
        return await cancelled(read(), three), client, bodies

    raised, client, bodies = asyncio.run(main())
    assert isinstance(raised, asyncio.CancelledError) and len(bodies) == 1 and bodies[0].closed
    assert client.last.error == "closed by the caller after 3 events, before message_stop"
    assert client.last.response["content"] == [{"type": "text", "text": "Sunny"}] and client.usage.calls == 0


def test_a_call_cancelled_while_waiting_to_retry_sends_nothing_more():
    async def main():
        mock, waiting = MockAPI(), asyncio.Event()

        async def sleep(seconds):
            waiting.set()
            await asyncio.Event().wait()

        mock.fault(529)
        client = AsyncClient(api_key=KEY, base_url="http://mock.invalid", transport=mock.async_transport(),
                             sleep=sleep)
        return await cancelled(client.create(QUESTION, stream=True), waiting), mock

    raised, mock = asyncio.run(main())
    assert isinstance(raised, asyncio.CancelledError) and len(mock.records) == 1


def test_a_trickling_body_is_cut_at_the_timeout_by_asyncio_and_closed():
    """httpx2's per-read timeout never fires on a byte every 10 ms; the attempt's deadline does."""
    closed = []

    class Trickle(httpx2.AsyncByteStream):
        async def __aiter__(self):
            for byte in json.dumps({"type": "message", "padding": "x" * 1000}).encode():
                await asyncio.sleep(0.01)
                yield bytes([byte])

        async def aclose(self):
            closed.append(True)

    client = AsyncClient(api_key=KEY, base_url="https://api.test", timeout=0.1, max_retries=0,
                         transport=httpx2.MockTransport(lambda r: httpx2.Response(200, stream=Trickle())))
    with pytest.raises(APITimeoutError, match="no complete response within the timeout of 0.1 s"):
        asyncio.run(client.create(QUESTION))
    assert closed and aclient.AsyncClient is AsyncClient
