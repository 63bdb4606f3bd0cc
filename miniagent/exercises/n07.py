"""Checks for notebook 07 · Async and serving."""

from __future__ import annotations

import asyncio
import inspect
import threading
from types import SimpleNamespace
from typing import Any

from miniagent.exercises._core import _check_callable, _exercise, _kind, _run, _show, not_yet, wrong_kind

BLOCKED_AFTER = 0.5  # seconds a blocking function waits for the event loop before it calls itself blocked


def _awaited(fn: Any, *args: Any, name: str, case: str, **kwargs: Any) -> Any:
    """await fn(*args, **kwargs) on an event loop of the check's own (in `_run`'s thread)."""

    def run() -> Any:
        made = fn(*args, **kwargs)
        if not inspect.isawaitable(made):
            return SimpleNamespace(not_awaitable=made)
        return asyncio.run(_as_coroutine(made))

    return _run(run, name=name, case=case)


async def _as_coroutine(awaitable: Any) -> Any:
    return await awaitable


class _Meter:
    """Counts the runs in flight, and the most there ever were."""

    def __init__(self) -> None:
        self.now = self.most = self.agents = 0


class _SlowAgent:
    """A stand-in for AsyncAgent: `await run(question)` answers after some turns of the event loop,
    fewer for later questions, so the answers finish in a different order than they started."""

    def __init__(self, meter: _Meter, total: int) -> None:
        meter.agents += 1
        self.meter, self.total, self.asked = meter, total, []

    async def run(self, question: str) -> SimpleNamespace:
        self.asked.append(question)
        meter = self.meter
        meter.now += 1
        meter.most = max(meter.most, meter.now)
        try:
            index = int(question.rsplit(" ", 1)[-1])
            for _ in range(3 * (self.total - index) + 3):
                await asyncio.sleep(0)
        finally:
            meter.now -= 1
        return SimpleNamespace(text=f"answer {index}", ok=True, stop="end_turn")


@_exercise("07", 1)
def check_07_1(ask_all: Any) -> None:
    """`await ask_all(questions, make_agent, limit)`: each question to an agent of its own, at most
    `limit` at once (and as many as that), the answers' texts in the order of the questions."""
    _check_callable(ask_all, "ask_all", "async def ask_all(questions, make_agent, limit) returns the answers")
    for n, limit in ((6, 2), (3, 10), (5, 1), (8, 3)):
        questions = [f"question {i}" for i in range(n)]
        meter = _Meter()
        case = f"on {n} questions with limit={limit}"
        got = _awaited(ask_all, list(questions), lambda: _SlowAgent(meter, n), limit, name="ask_all", case=case)
        if isinstance(got, SimpleNamespace) and hasattr(got, "not_awaitable"):
            wrong_kind(f"ask_all(...) returned {_kind(got.not_awaitable)}, not something to await: "
                       "define it with `async def`")
        want = [f"answer {i}" for i in range(n)]
        if got == want:
            pass
        elif isinstance(got, list) and got and all(hasattr(r, "text") for r in got):
            wrong_kind("ask_all returned the results; return each result's .text")
        elif isinstance(got, list) and sorted(map(str, got)) == sorted(want):
            not_yet(f"{case}: the answers came back in the order they finished, {_show(got, 60)}; "
                    "return them in the order of the questions (asyncio.gather keeps it)")
        else:
            not_yet(f"{case}: expected {_show(want, 60)}, got {_show(got, 60)}")
        if meter.agents != n:
            not_yet(f"{case}: {meter.agents} agent(s) for {n} questions; each question is its own conversation, "
                    "so call make_agent() once per question")
        expected_most = min(n, limit)
        if meter.most > limit:
            not_yet(f"{case}: {meter.most} runs were in flight at once, over the limit: hold an "
                    "asyncio.Semaphore(limit) around each run")
        if meter.most < expected_most:
            not_yet(f"{case}: at most {meter.most} run(s) in flight at once where {expected_most} could be: "
                    "start them all together (asyncio.gather) and let the semaphore hold back the rest")


@_exercise("07", 2)
def check_07_2(make_async: Any) -> None:
    """`make_async(fn)`: an async function that runs the blocking `fn` with the same arguments and
    gives its result (or raises its exception), without blocking the event loop meanwhile."""
    _check_callable(make_async, "make_async", "make_async(fn) returns an async function")

    def lookup(city: str, *, unit: str = "C") -> str:
        """Blocks until the event loop shows it is alive (it sets `alive`), or gives up."""
        return f"{city}: 20°{unit}" if lookup.alive.wait(BLOCKED_AFTER) else "blocked"

    def broken(city: str) -> str:
        raise ValueError(f"no weather for {city}")

    async def scenario(wrapped: Any) -> Any:
        lookup.alive = threading.Event()

        async def heartbeat() -> None:
            for _ in range(3):  # a few turns of the loop, then say it is alive
                await asyncio.sleep(0)
            lookup.alive.set()

        beat = asyncio.create_task(heartbeat())
        made = wrapped("Paris", unit="F")
        if not inspect.isawaitable(made):
            beat.cancel()
            return SimpleNamespace(not_awaitable=made)
        result = await made
        await beat
        return result

    wrapped = _run(make_async, lookup, name="make_async", case="on a blocking lookup(city, unit=...)")
    if not callable(wrapped):
        wrong_kind(f"make_async returned {_kind(wrapped)}; return a function (an `async def` inside it)")
    got = _run(lambda: asyncio.run(scenario(wrapped)), name="the function make_async returned")
    if isinstance(got, SimpleNamespace):
        wrong_kind(f"calling what make_async returned gave {_kind(got.not_awaitable)}, not something to await: "
                   "return an `async def` function")
    if got == "blocked":
        not_yet("the event loop stood still while the blocking function ran: nothing else could run. "
                "Run fn in a thread and await it (asyncio.to_thread)")
    if got != "Paris: 20°F":
        not_yet(f"expected the function's own result 'Paris: 20°F' (passing city and unit=... through), "
                f"got {_show(got)}")
    failing = _run(make_async, broken, name="make_async")

    async def raised() -> str:
        try:
            await failing("Atlantis")
        except ValueError as exc:
            return str(exc)
        return "nothing raised"

    outcome = _run(lambda: asyncio.run(raised()), name="the function make_async returned")
    if outcome != "no weather for Atlantis":
        not_yet(f"when fn raises ValueError, awaiting your function must raise it too; it gave {_show(outcome)}")


@_exercise("07", 3)
def check_07_3(sse_frame: Any) -> None:
    """`sse_frame(event, text)`: one Server-Sent Event whose data is `text`, any text, read back exactly
    by a standard parser; an event name that would break the framing is refused with ValueError."""
    from miniagent.streaming import SSEParser

    _check_callable(sse_frame, "sse_frame", "sse_frame(event, text) returns the event as a str")
    texts = ["Hello", "北京：晴 ☀️", "two\nlines", "windows\r\nline ends", "an old\rMac line end",
             "ends with a newline\n", "", "data: looks like a field", " leading space", "\n\nblank lines\n\n"]
    for text in texts:
        frame = _run(sse_frame, "text", text, name="sse_frame", case=f"on {text!r}")
        if isinstance(frame, bytes):
            frame = frame.decode("utf-8", "replace")
        if not isinstance(frame, str):
            wrong_kind(f"sse_frame returned {_kind(frame)}; return the event as a str")
        parser = SSEParser()
        events = parser.feed(frame.encode("utf-8"))
        if len(events) != 1:
            not_yet(f"on {text!r}: a parser read {len(events)} events from {_show(frame, 50)}; one event ends "
                    "with a blank line (\\n\\n), and a line break inside the text must not make one")
        event = events[0]
        if event.event != "text":
            not_yet(f"on {text!r}: the event's name came out as {event.event!r}; start with an `event: text` line")
        if event.data != text.replace("\r\n", "\n").replace("\r", "\n"):
            not_yet(f"on {text!r}: the data came out as {event.data!r}. A data line cannot hold a line break: "
                    "split the text at every line end (\\n, \\r\\n, \\r) and send each line as its own `data:` line")
    for bad in ("bad\nname", "bad\rname"):
        def attempt(bad: str = bad) -> Any:
            try:
                return sse_frame(bad, "x")
            except ValueError:
                return _REFUSED

        frame = _run(attempt, name="sse_frame", case=f"on the event name {bad!r} (raise ValueError)")
        if frame is not _REFUSED:
            not_yet(f"on the event name {bad!r}: a line break in the name would end the `event:` line and let the "
                    f"rest be read as another field; raise ValueError instead of returning {_show(frame, 40)}")


_REFUSED = object()
