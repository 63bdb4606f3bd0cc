"""Tools under asyncio: coroutine tools awaited, plain ones in threads, timeouts, cancellation.

`ToolRegistry.arun_all` must give the results `run_all` gives (same texts, same order),
never block the event loop on a plain function, and, when the run is cancelled, cancel
its coroutine tools rather than leave them running.
"""

from __future__ import annotations

import asyncio
import enum
import threading

import pytest

from miniagent.tools import ToolRegistry, tool

WAIT = 5.0  # seconds: a bound on waits that must never be reached when the code is right


def use(name: str, n: int = 0, **input) -> dict:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": input}


@tool
async def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: what to echo
    """
    await asyncio.sleep(0)
    return text.upper()


@tool
def plain_echo(text: str) -> str:
    """Echo the text back, from a plain function.

    Args:
        text: what to echo
    """
    return text.upper()


@tool
async def broken(text: str) -> str:
    """Always fails.

    Args:
        text: ignored
    """
    raise ValueError("no such thing")


class Unit(enum.Enum):
    C = "C"
    F = "F"


@tool
async def convert(value: float, unit: Unit) -> str:
    """Convert a temperature.

    Args:
        value: the temperature
        unit: the unit to convert to
    """
    return f"{value} -> {unit.name}"  # unit arrives as the Enum member, awaited through the wrapper


def test_the_same_results_as_run_all_in_the_same_order():
    registry = ToolRegistry([echo, plain_echo, broken, convert])
    calls = [use("echo", 0, text="a"), use("plain_echo", 1, text="b"), use("broken", 2, text="c"),
             use("convert", 3, value=20, unit="F"), use("nope", 4), use("echo", 5)]
    awaited = asyncio.run(registry.arun_all(calls))
    assert awaited == registry.run_all(calls)  # the sync registry runs coroutine tools too
    assert [r["tool_use_id"] for r in awaited] == [c["id"] for c in calls]
    assert awaited[0]["content"] == "A" and awaited[1]["content"] == "B" and awaited[3]["content"] == "20 -> F"
    assert awaited[2]["is_error"] and awaited[2]["content"].startswith("Error: broken raised ValueError: no such thing")
    assert awaited[4]["content"].startswith("Error: unknown tool 'nope'")
    assert awaited[5]["content"].startswith("Error: invalid arguments for echo")


def test_plain_tools_run_in_threads_at_the_same_time():
    """Each waits for all the others: this finishes only if they all run at once, off the event loop."""
    n = 5
    barrier = threading.Barrier(n, timeout=WAIT)
    ticked = threading.Event()  # set by the event loop: the tools wait for it, so it must keep running

    @tool
    def meet(k: int) -> str:
        """Wait for the others.

        Args:
            k: which one
        """
        barrier.wait()
        ticked.wait(WAIT)  # a tool run on the loop itself would block it, and this would time out
        return f"met {k}"

    async def main():
        ticks = 0

        async def ticker():  # the event loop stays free while the threads wait
            nonlocal ticks
            while True:
                ticks += 1
                if ticks >= 3:
                    ticked.set()
                await asyncio.sleep(0.001)

        beat = asyncio.create_task(ticker())
        results = await ToolRegistry([meet]).arun_all([use("meet", k, k=k) for k in range(n)])
        beat.cancel()
        return results, ticks

    results, ticks = asyncio.run(main())
    assert [r["content"] for r in results] == [f"met {k}" for k in range(n)]
    assert ticks >= 3 and ticked.is_set()


def test_coroutine_tools_run_at_the_same_time():
    n = 4
    arrived = 0

    @tool
    async def gather_up(k: int) -> str:
        """Wait for the others.

        Args:
            k: which one
        """
        nonlocal arrived
        arrived += 1
        while arrived < n:
            await asyncio.sleep(0)
        return str(k)

    results = asyncio.run(asyncio.wait_for(ToolRegistry([gather_up]).arun_all(
        [use("gather_up", k, k=k) for k in range(n)]), WAIT))
    assert [r["content"] for r in results] == ["0", "1", "2", "3"]


def test_a_coroutine_tool_that_hangs_times_out_and_is_cancelled():
    state = {}

    @tool(timeout=0.05)
    async def hang(text: str) -> str:
        """Never answers.

        Args:
            text: ignored
        """
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            state["cancelled"] = True
            raise
        return "never"

    [result] = asyncio.run(ToolRegistry([hang]).arun_all([use("hang", text="x")]))
    assert result["is_error"] and result["content"].startswith("Error: hang did not finish within 0.05 s")
    assert state == {"cancelled": True}  # cancelled, not left running


def test_a_plain_tool_that_hangs_is_abandoned_after_its_timeout():
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck(text: str) -> str:
        """Blocks until released.

        Args:
            text: ignored
        """
        release.wait(WAIT)
        return "late"

    try:
        [result] = asyncio.run(ToolRegistry([stuck]).arun_all([use("stuck", text="x")]))
    finally:
        release.set()
    assert result["is_error"] and "did not finish within 0.05 s" in result["content"]


def test_cancelling_the_run_cancels_every_running_tool():
    started, cancelled = [], []

    @tool
    async def wait_forever(k: int) -> str:
        """Waits until cancelled.

        Args:
            k: which one
        """
        started.append(k)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(k)
            raise
        return "never"

    async def main():
        task = asyncio.create_task(ToolRegistry([wait_forever]).arun_all([use("wait_forever", k, k=k) for k in range(3)]))
        while len(started) < 3:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(main(), WAIT))
    assert sorted(cancelled) == [0, 1, 2]


def test_sequential_when_not_parallel():
    order = []

    @tool
    async def step(k: int) -> str:
        """Record the order.

        Args:
            k: which one
        """
        order.append(("start", k))
        await asyncio.sleep(0)
        order.append(("end", k))
        return str(k)

    asyncio.run(ToolRegistry([step]).arun_all([use("step", k, k=k) for k in range(3)], parallel=False))
    assert order == [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2)]
