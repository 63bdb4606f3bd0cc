"""miniagent.serve, hardened (issue 24, items 5-7).

A stopped run whose plain (thread) tool runs on keeps its conversation busy until the call
ends or its timeout passes, and the history says what is known of it; every JSON answer is
encoded as the stream encodes its events (a lone surrogate cannot make a 500); a slow client
cannot hold more connections than the cap, nor one for longer than the deadlines, while others
are still served. Offline, over a real uvicorn server where a connection matters.
"""

from __future__ import annotations

import asyncio
import select
import socket
import threading
import time
from contextlib import asynccontextmanager

import httpx2
import pytest

pytest.importorskip("fastapi")  # an optional extra of the package (the course environment has it)

import uvicorn  # noqa: E402
from test_serve import KEY, WAIT, agents, blocking_tool, events_of, parse_lines, run, serving, wait_until  # noqa: E402

from miniagent.messages import conversation_error  # noqa: E402
from miniagent.mock import MockAPI  # noqa: E402
from miniagent.serve import CANCELLED, STILL_RUNNING, GuardedH11Protocol, create_app  # noqa: E402
from portable import second_loopback_address  # noqa: E402
from miniagent.tools import tool  # noqa: E402


def paying(timeout: float = 10.0):
    """A plain (thread) tool with an effect: (tool, started, release, paid). It pays once released."""
    started, release, paid = threading.Event(), threading.Event(), []

    @tool(timeout=timeout)
    def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: how much
        """
        started.set()
        release.wait(WAIT)  # bounded: a test that fails never leaves it waiting for ever
        paid.append(amount)
        return f"paid {amount}"
    return pay, started, release, paid


def pay_and_wait():
    """A model turn calling both tools at once: the thread tool and the coroutine one."""
    return {"content": [{"type": "text", "text": "Paying."},
                        {"type": "tool_use", "name": "pay", "input": {"amount": 10}},
                        {"type": "tool_use", "name": "wait_for_release", "input": {"what": "x"}}],
            "stop_reason": "tool_use"}


def results_of(history: list[dict]) -> dict[str, tuple[bool, str]]:
    """{tool name: (is_error, text)} of the last round of tool calls in `history`."""
    calls = {b["id"]: b["name"] for m in history if m["role"] == "assistant" and isinstance(m["content"], list)
             for b in m["content"] if b["type"] == "tool_use"}
    last = next(m for m in reversed(history) if m["role"] == "user" and isinstance(m["content"], list))
    return {calls[b["tool_use_id"]]: (b.get("is_error", False), b["content"]) for b in last["content"]}


# --- 5. a plain tool that a stop cannot stop ----------------------------------------------


def test_a_thread_tool_left_running_keeps_the_conversation_busy_and_its_result_is_recorded():
    """The client goes away while `pay` (a thread) and a coroutine tool run: the coroutine is
    cancelled, the thread runs on. A second question meanwhile is a 409, not a second run;
    when `pay` ends, its result is in the history, so the model hears that it paid."""
    async def scenario():
        pay, pay_started, release, paid = paying()
        wait_tool, started, _, cancelled = blocking_tool()
        mock = MockAPI(api_keys={KEY})
        mock.script(pay_and_wait())
        app = create_app(agent_factory=agents(mock, [pay, wait_tool]))
        service = app.state.service
        async with serving(app) as url, httpx2.AsyncClient(base_url=url, timeout=WAIT) as http:
            async with http.stream("POST", "/chat/stream", json={"message": "Pay 10."}) as response:
                async for name in parse_lines(response):
                    if name == "tool_use_done":
                        break
                await asyncio.wait_for(started.wait(), WAIT)
                await wait_until(pay_started.is_set)
            await asyncio.wait_for(cancelled.wait(), WAIT)  # the service noticed, and stopped the run
            [cid] = service.conversations.ids()
            meanwhile = await http.post("/chat", json={"message": "Pay 10.", "conversation_id": cid})
            busy_while_paying = service.running == 1 and not paid
            release.set()
            await wait_until(lambda: service.running == 0)
            history = service.conversations.history(cid)
            again = await http.post("/chat", json={"message": "Did you pay?", "conversation_id": cid})
            return meanwhile, busy_while_paying, paid, history, again, mock.last_request

    meanwhile, busy_while_paying, paid, history, again, last = asyncio.run(scenario())
    assert meanwhile.status_code == 409 and meanwhile.json()["error"]["type"] == "conversation_busy"
    assert busy_while_paying and paid == [10]  # paid once, after the stop
    assert [m["role"] for m in history] == ["user", "assistant", "user"] and history[0]["content"] == "Pay 10."
    assert conversation_error(history) is None  # every tool_use answered
    assert results_of(history) == {"pay": (False, "paid 10"), "wait_for_release": (True, CANCELLED)}
    assert again.status_code == 200
    assert "paid 10" in str(last["body"]["messages"])  # the model is told what happened


def test_a_thread_tool_still_running_at_its_timeout_is_given_up_and_said_to_be_unknown():
    """Stopped directly (no HTTP): the wait ends at the call's own timeout, and the history says
    its result is unknown; a stop before any tool ran leaves the history as it was."""
    async def scenario():
        pay, pay_started, release, paid = paying(timeout=0.2)
        mock = MockAPI(api_keys={KEY})
        mock.script({"content": [{"type": "tool_use", "name": "pay", "input": {"amount": 5}}]})
        app = create_app(agent_factory=agents(mock, [pay]))
        service = app.state.service
        reservation = await service.reserve(None)
        run = asyncio.create_task(service.run(reservation, "Pay 5.", lambda name, data: None))
        await wait_until(pay_started.is_set)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, WAIT)
        history, unpaid = service.conversations.history(reservation.id), list(paid)
        release.set()
        return history, unpaid

    history, unpaid = asyncio.run(scenario())
    assert unpaid == [] and conversation_error(history) is None
    assert results_of(history) == {"pay": (True, STILL_RUNNING)}
    assert "its result is unknown" in STILL_RUNNING


def test_a_run_stopped_before_any_tool_ran_leaves_the_history_as_it_was():
    async def scenario():
        mock = MockAPI(api_keys={KEY}, pacing={"first": 30.0})  # the model's first token would take 30 s
        service = create_app(agent_factory=agents(mock)).state.service
        reservation = await service.reserve(None)
        run = asyncio.create_task(service.run(reservation, "What is 2 + 2?", lambda name, data: None))
        await wait_until(lambda: len(mock.requests) == 1)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, WAIT)
        mock.pace()
        return service.conversations.history(reservation.id)

    assert asyncio.run(scenario()) == []


# --- 6. every JSON answer encoded as the stream encodes its events -----------------------------


def test_a_lone_surrogate_in_a_tool_call_is_answered_by_post_chat_as_by_the_stream():
    """UTF-8 cannot encode U+D800 alone: the answer carries the JSON escape it came as, not a 500."""
    odd = {"expression": "1 + 1 \ud800"}
    mock = MockAPI(api_keys={KEY})
    app = create_app(agent_factory=agents(mock))

    async def scenario(http):
        answers = []
        for path in ("/chat", "/chat/stream"):
            mock.script({"content": [{"type": "tool_use", "name": "calculate", "input": odd}]})
            answers.append(await http.post(path, json={"message": "Calculate."}))
        return answers

    chat, stream = run(app, scenario)
    assert chat.status_code == 200, chat.text
    assert chat.headers["content-type"] == "application/json"
    assert b"\\ud800" in chat.content and chat.json()["tool_calls"][0]["input"] == odd
    streamed = [data for name, data in events_of(stream.content) if name == "tool_use" and data["done"]]
    assert streamed[0]["input"] == odd  # the stream coped already: the two now agree


# --- 7. slow clients: deadlines for headers and bodies, caps on connections ----------------------

SLOW = "127.0.0.2"  # Linux routes all of 127/8 to loopback: the slow client has an address of its own
PARTIAL = b"POST /chat HTTP/1.1\r\nhost: 127.0.0.1\r\n"  # a request whose headers never end


@asynccontextmanager
async def guarded(app, header_timeout: float, max_per_client: int, limit_concurrency: int):
    """`app` on uvicorn with GuardedH11Protocol at small bounds, on a free port; yields (host, port)."""
    protocol = type("Guarded", (GuardedH11Protocol,), {"header_timeout": header_timeout,
                                                       "max_per_client": max_per_client})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="error", lifespan="off", http=protocol,
                            limit_concurrency=limit_concurrency, timeout_keep_alive=5)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started or task.done())
        yield sock.getsockname()
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)
        sock.close()


def connect_from(address: str, server) -> socket.socket:
    conn = socket.socket()
    conn.bind((address, 0))
    conn.connect(server)
    conn.setblocking(False)
    return conn


async def answer_of(conn: socket.socket, dribble: bytes = b"") -> tuple[bytes, float]:
    """What the server writes before it closes `conn`, and the seconds it took; `dribble` is sent a
    byte every 50 ms meanwhile (activity must not extend a deadline). Fails after WAIT."""
    loop, started, got = asyncio.get_running_loop(), time.monotonic(), b""
    while time.monotonic() - started < WAIT:
        if dribble:
            try:
                conn.send(dribble[:1])
                dribble = dribble[1:]
            except OSError:  # closed by the server: read what it said
                dribble = b""
        try:
            chunk = await asyncio.wait_for(loop.sock_recv(conn, 4096), 0.05)
        except TimeoutError:
            continue
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return got, time.monotonic() - started
        got += chunk
    raise AssertionError(f"the connection was still open after {WAIT} s, having sent {got[:80]!r}")


def nothing_yet(conn: socket.socket) -> bool:
    """True if the server has neither written to `conn` nor closed it."""
    return not select.select([conn], [], [], 0)[0]


@second_loopback_address
def test_a_slow_client_holds_no_more_than_its_cap_and_others_are_served_meanwhile():
    async def scenario():
        app = create_app(agent_factory=agents())
        async with guarded(app, header_timeout=30.0, max_per_client=3, limit_concurrency=8) as server:
            slow = [connect_from(SLOW, server) for _ in range(10)]
            for conn in slow:
                conn.send(PARTIAL)
            await wait_until(lambda: sum(not nothing_yet(c) for c in slow) == 7)
            refused = [await answer_of(c) for c in slow if not nothing_yet(c)]
            held = [c for c in slow if nothing_yet(c)]
            async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{server[1]}", timeout=WAIT) as http:
                served = await http.post("/chat", json={"message": "What is 2 + 2?"})
            still_held = sum(nothing_yet(c) for c in held)
            others = [connect_from("127.0.0.3", server) for _ in range(3)]  # with the 3 held: past the cap of 8?
            crowd = [connect_from(f"127.0.0.{4 + n}", server) for n in range(3)]
            await wait_until(lambda: sum(not nothing_yet(c) for c in others + crowd) >= 1)
            over = [await answer_of(c) for c in others + crowd if not nothing_yet(c)]
            for conn in slow + others + crowd:
                conn.close()
            return refused, len(held), served, still_held, over

    refused, held, served, still_held, over = asyncio.run(scenario())
    assert held == 3 and still_held == 3  # the slow client's cap, kept while another was served
    for answer, seconds in refused:  # the rest refused at once, in the service's JSON shape
        assert answer.startswith(b"HTTP/1.1 503 ") and b"retry-after: 1" in answer and seconds < 1.0
        assert b'"type":"overloaded"' in answer and b"this address has 3 connections open" in answer
    assert served.status_code == 200 and "4" in served.json()["text"]
    assert over and all(b"8 connections are open" in answer for answer, _ in over)  # the cap of all clients


def test_headers_and_bodies_that_come_too_slowly_get_408_and_their_connection_closed():
    async def scenario():
        app = create_app(agent_factory=agents(), body_timeout_seconds=0.2)
        async with guarded(app, header_timeout=0.2, max_per_client=8, limit_concurrency=16) as server:
            headers = connect_from(SLOW, server)
            headers_late = await answer_of(headers, dribble=b"POST /chat HTTP/1.1\r\nhost: 127.0.0.1\r\n" * 3)
            body = connect_from(SLOW, server)
            body.send(b"POST /chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                      b"content-length: 1000\r\n\r\n")
            body_late = await answer_of(body, dribble=b'{"message": "' + b"x" * 100)
            again = connect_from(SLOW, server)  # a kept-alive connection: its next request has a deadline too
            again.send(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            next_late = await answer_of(again, dribble=b"GET / HTTP/1.1\r\n" * 10)
            for conn in (headers, body, again):
                conn.close()
            return headers_late, body_late, next_late

    (headers, h_seconds), (body, b_seconds), (next_request, n_seconds) = asyncio.run(scenario())
    assert headers.startswith(b"HTTP/1.1 408 ") and b'"type":"request_timeout"' in headers
    assert b"headers did not arrive within 0.2 s" in headers and 0.2 <= h_seconds < 2.0
    assert b" 408 " in body.split(b"\r\n")[0] and b"the body did not arrive within 0.2 s" in body
    assert 0.2 <= b_seconds < 2.0
    first, _, rest = next_request.partition(b"HTTP/1.1 408 ")
    assert first.startswith(b"HTTP/1.1 200 ") and b"headers did not arrive" in rest and n_seconds < 2.0
