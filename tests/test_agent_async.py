"""AsyncAgent: the sync agent's behaviour, awaited; many at once; cancelled cleanly.

The rules live in one place (loop.Loop), so an AsyncAgent must record the same trace
and keep the same history as an Agent on the same question; several must run at the
same time in one event loop; and a cancelled run must cancel its tools and leave the
history as it was before the question (the async form of Ctrl-C).
"""

from __future__ import annotations

import asyncio

import pytest

from miniagent import connect
from miniagent.aclient import connect_async
from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent
from miniagent.builtin_tools import default_tools
from miniagent.messages import conversation_error
from miniagent.tools import ToolRegistry, tool

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
WAIT = 5.0  # a bound that is never reached when the code is right


def steps(agent) -> list[tuple]:
    """The trace without its clock: what happened, in order (tool results of one round in any order:
    they run at the same time and are recorded as they finish)."""
    out: list[tuple] = []
    for e in agent.trace.events:
        out.append((e["type"], e.get("name"), e.get("stop")))
        k = len(out) - 1  # insertion sort within the round's run of tool results
        while k > 0 and out[k][0] == out[k - 1][0] == "tool_result" and out[k] < out[k - 1]:
            out[k], out[k - 1] = out[k - 1], out[k]
            k -= 1
    return out


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_the_same_run_as_the_sync_agent(stream):
    sync = Agent(connect(offline=True, quiet=True), stream=stream)
    asynchronous = AsyncAgent(connect_async(offline=True, quiet=True), stream=stream)
    texts: list[str] = []
    expected = sync.run(DEMO)
    result = asyncio.run(asynchronous.run(DEMO, on_text=texts.append) if stream else asynchronous.run(DEMO))
    assert (result.stop, result.iterations) == (expected.stop, expected.iterations) == ("end_turn", 2)
    assert steps(asynchronous) == steps(sync)
    assert [m["role"] for m in asynchronous.history] == [m["role"] for m in sync.history]
    assert asynchronous.usage.total_tokens == sync.usage.total_tokens
    if stream:
        assert "".join(texts).endswith(result.text)


def test_chat_and_follow_ups_keep_the_conversation():
    agent = AsyncAgent(connect_async(offline=True, quiet=True))

    async def talk():
        first = await agent.chat("My name is Ada.")
        second = await agent.chat("What is my name?")
        return first, second

    _, second = asyncio.run(talk())
    assert "Ada" in second and len(agent.history) == 4 and conversation_error(agent.history) is None


def test_many_agents_run_at_the_same_time():
    """Each run's tool waits until every run has reached its tool: only concurrent runs get there."""
    n = 8
    arrived = 0

    @tool
    async def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: the city name
        """
        nonlocal arrived
        arrived += 1
        while arrived < n:
            await asyncio.sleep(0)
        return f"{city}: sunny"

    async def main():
        client = connect_async(offline=True, quiet=True)
        agents = [AsyncAgent(client, [get_weather]) for _ in range(n)]
        return await asyncio.gather(*(a.run("What's the weather in Paris?") for a in agents))

    results = asyncio.run(asyncio.wait_for(main(), WAIT))
    assert all(r.ok and "sunny" in r.text for r in results) and arrived == n


def test_cancelling_a_run_cancels_its_tool_and_keeps_the_history():
    cancelled: list[str] = []
    state: dict = {}

    @tool
    async def get_weather(city: str) -> str:
        """Get the current weather for a city.

        Args:
            city: the city name
        """
        state["started"].set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(city)
            raise
        return "never"

    agent = AsyncAgent(connect_async(offline=True, quiet=True), ToolRegistry([get_weather]))

    async def main():
        await agent.run("My name is Ada.")
        before = list(agent.history)
        state["started"] = asyncio.Event()
        task = asyncio.create_task(agent.run("What's the weather in Paris?"))
        await asyncio.wait_for(state["started"].wait(), WAIT)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return before

    before = asyncio.run(main())
    assert cancelled == ["Paris"]
    assert agent.history == before  # the question and the tool call were dropped with the run
    assert conversation_error(agent.history) is None
    # and the agent goes on: the next question is answered from the kept history
    assert "Ada" in asyncio.run(agent.chat("What is my name?"))


def test_a_sync_client_is_refused_with_a_clear_message():
    agent = AsyncAgent(connect(offline=True, quiet=True), default_tools())
    with pytest.raises(TypeError, match="needs an async client"):
        asyncio.run(agent.run("Hello"))


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_runs_own_on_step_sees_that_run_only_after_the_agents_own(kind):
    seen: list[tuple[str, str]] = []
    mine = lambda event: seen.append(("agent", event["type"]))  # noqa: E731
    theirs = lambda event: seen.append(("run", event["type"]))  # noqa: E731
    if kind == "sync":
        agent = Agent(connect(offline=True, quiet=True), on_step=mine)
        agent.run("Hello", on_step=theirs)
        first = len(seen)
        agent.run("Hello again")
    else:
        agent = AsyncAgent(connect_async(offline=True, quiet=True), on_step=mine)

        async def two():
            await agent.run("Hello", on_step=theirs)
            first = len(seen)
            await agent.run("Hello again")
            return first
        first = asyncio.run(two())
    one, two_ = seen[:first], seen[first:]
    assert one[0::2] == [("agent", t) for _, t in one[1::2]] and one[1::2] == [("run", t) for _, t in one[0::2]]
    assert one[1][1] == "question" and all(who == "agent" for who, _ in two_) and two_
