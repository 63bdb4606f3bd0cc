"""miniagent.serve, hardened (issue 24, items 5-7).

A stopped run whose plain (thread) tool runs on keeps its conversation busy until the call
ends or its timeout passes, and the history says what is known of it; every JSON answer is
encoded as the stream encodes its events (a lone surrogate cannot make a 500); a slow client
cannot hold more connections than the cap, nor one for longer than the deadlines, while others
are still served. Offline, over a real uvicorn server where a connection matters.
"""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

pytest.importorskip("fastapi")  # an optional extra of the package (the course environment has it)

from test_serve import KEY, WAIT, agents, blocking_tool, events_of, parse_lines, run, serving, wait_until  # noqa: E402

from miniagent.messages import conversation_error  # noqa: E402
from miniagent.mock import MockAPI  # noqa: E402
from miniagent.serve import CANCELLED, STILL_RUNNING, ServiceError, create_app  # noqa: E402
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
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=WAIT) as http:
            async with http.stream("POST", "/chat/stream", json={"message": "Pay 10."}) as response:
                async for name in parse_lines(response):
                    if name == "tool_use_done":
                        break
                await asyncio.wait_for(started.wait(), WAIT)
                await wait_until(pay_started.is_set)
            await asyncio.wait_for(cancelled.wait(), WAIT)  # the service noticed, and stopped the run
            [conversation] = service.conversations
            meanwhile = await http.post("/chat", json={"message": "Pay 10.", "conversation_id": conversation.id})
            busy_while_paying = service.running == 1 and not paid
            release.set()
            await wait_until(lambda: service.running == 0)
            history = list(conversation.agent.history)
            again = await http.post("/chat", json={"message": "Did you pay?", "conversation_id": conversation.id})
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
        conversation = service.reserve(None)
        run = asyncio.create_task(service.run(conversation, "Pay 5.", lambda name, data: None))
        await wait_until(pay_started.is_set)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, WAIT)
        service.release(conversation)
        history, unpaid = list(conversation.agent.history), list(paid)
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
        conversation = service.reserve(None)
        run = asyncio.create_task(service.run(conversation, "What is 2 + 2?", lambda name, data: None))
        await wait_until(lambda: len(mock.requests) == 1)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, WAIT)
        mock.pace()
        return conversation.agent.history

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
