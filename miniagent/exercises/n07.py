"""Checks for notebook 07 · Async and serving."""

from __future__ import annotations

import asyncio
import inspect
import threading
from types import SimpleNamespace
from typing import Any

from miniagent.exercises._core import _check_callable, _exercise, _kind, _run, _show, not_yet, wrong_kind

BLOCKED_AFTER = 0.5  # seconds a blocking function waits for the event loop before it calls itself blocked


def _awaited(fn: Any, *args: Any, name: str, case: str, case_zh: str | None = None, **kwargs: Any) -> Any:
    """await fn(*args, **kwargs) on an event loop of the check's own (in `_run`'s thread)."""

    def run() -> Any:
        made = fn(*args, **kwargs)
        if not inspect.isawaitable(made):
            return SimpleNamespace(not_awaitable=made)
        return asyncio.run(_as_coroutine(made))

    return _run(run, name=name, case=case, case_zh=case_zh)


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
    _check_callable(ask_all, "ask_all", "async def ask_all(questions, make_agent, limit) returns the answers",
                    zh="async def ask_all(questions, make_agent, limit) 返回各个回答")
    for n, limit in ((6, 2), (3, 10), (5, 1), (8, 3)):
        questions = [f"question {i}" for i in range(n)]
        meter = _Meter()
        case = f"on {n} questions with limit={limit}"
        case_zh = f"{n} 个问题、limit={limit} 时"
        got = _awaited(ask_all, list(questions), lambda: _SlowAgent(meter, n), limit, name="ask_all", case=case,
                       case_zh=case_zh)
        if isinstance(got, SimpleNamespace) and hasattr(got, "not_awaitable"):
            wrong_kind(f"ask_all(...) returned {_kind(got.not_awaitable)}, not something to await: "
                       "define it with `async def`",
                       zh=f"ask_all(...) 返回的是{_kind(got.not_awaitable)}，不是可以 await 的对象："
                          "用 `async def` 来定义它")
        want = [f"answer {i}" for i in range(n)]
        if got == want:
            pass
        elif isinstance(got, list) and got and all(hasattr(r, "text") for r in got):
            wrong_kind("ask_all returned the results; return each result's .text",
                       zh="ask_all 返回的是 result 对象；应该返回每个 result 的 .text")
        elif isinstance(got, list) and sorted(map(str, got)) == sorted(want):
            not_yet(f"{case}: the answers came back in the order they finished, {_show(got, 60)}; "
                    "return them in the order of the questions (asyncio.gather keeps it)",
                    zh=f"{case_zh}：回答是按完成的先后返回的，{_show(got, 60)}；"
                       "要按问题的顺序返回（asyncio.gather 会保持这个顺序）")
        else:
            not_yet(f"{case}: expected {_show(want, 60)}, got {_show(got, 60)}",
                    zh=f"{case_zh}：应该是 {_show(want, 60)}，实际是 {_show(got, 60)}")
        if meter.agents != n:
            not_yet(f"{case}: {meter.agents} agent(s) for {n} questions; each question is its own conversation, "
                    "so call make_agent() once per question",
                    zh=f"{case_zh}：{n} 个问题用了 {meter.agents} 个 Agent；每个问题都是一段单独的对话，"
                       "所以每个问题调用一次 make_agent()")
        expected_most = min(n, limit)
        if meter.most > limit:
            not_yet(f"{case}: {meter.most} runs were in flight at once, over the limit: hold an "
                    "asyncio.Semaphore(limit) around each run",
                    zh=f"{case_zh}：同一时刻有 {meter.most} 个在运行，超过了 limit："
                       "用 asyncio.Semaphore(limit) 把每次运行包起来")
        if meter.most < expected_most:
            not_yet(f"{case}: at most {meter.most} run(s) in flight at once where {expected_most} could be: "
                    "start them all together (asyncio.gather) and let the semaphore hold back the rest",
                    zh=f"{case_zh}：同一时刻最多只有 {meter.most} 个在运行，本来可以有 {expected_most} 个："
                       "把它们一起启动（asyncio.gather），让 semaphore 挡住多出来的")


@_exercise("07", 2)
def check_07_2(make_async: Any) -> None:
    """`make_async(fn)`: an async function that runs the blocking `fn` with the same arguments and
    gives its result (or raises its exception), without blocking the event loop meanwhile."""
    _check_callable(make_async, "make_async", "make_async(fn) returns an async function",
                    zh="make_async(fn) 返回一个 async 函数")

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

    wrapped = _run(make_async, lookup, name="make_async", case="on a blocking lookup(city, unit=...)",
                   case_zh="在一个阻塞的 lookup(city, unit=...) 上")
    if not callable(wrapped):
        wrong_kind(f"make_async returned {_kind(wrapped)}; return a function (an `async def` inside it)",
                   zh=f"make_async 返回的是{_kind(wrapped)}；应该返回一个函数（在里面定义一个 `async def`）")
    got = _run(lambda: asyncio.run(scenario(wrapped)), name="the function make_async returned")
    if isinstance(got, SimpleNamespace):
        wrong_kind(f"calling what make_async returned gave {_kind(got.not_awaitable)}, not something to await: "
                   "return an `async def` function",
                   zh=f"调用 make_async 返回的东西，得到的是{_kind(got.not_awaitable)}，不是可以 await 的对象："
                      "应该返回一个 `async def` 函数")
    if got == "blocked":
        not_yet("the event loop stood still while the blocking function ran: nothing else could run. "
                "Run fn in a thread and await it (asyncio.to_thread)",
                zh="阻塞函数运行期间，事件循环停住了，别的任务都没法运行。"
                   "把 fn 放到线程里运行，再 await 它（asyncio.to_thread）")
    if got != "Paris: 20°F":
        not_yet(f"expected the function's own result 'Paris: 20°F' (passing city and unit=... through), "
                f"got {_show(got)}",
                zh=f"应该得到函数本身的结果 'Paris: 20°F'（city 和 unit=... 都要原样传进去），实际是 {_show(got)}")
    failing = _run(make_async, broken, name="make_async")

    async def raised() -> str:
        try:
            await failing("Atlantis")
        except ValueError as exc:
            return str(exc)
        return "nothing raised"

    outcome = _run(lambda: asyncio.run(raised()), name="the function make_async returned")
    if outcome != "no weather for Atlantis":
        not_yet(f"when fn raises ValueError, awaiting your function must raise it too; it gave {_show(outcome)}",
                zh=f"fn 抛出 ValueError 时，await 你的函数也必须抛出它；实际得到的是 {_show(outcome)}")


@_exercise("07", 3)
def check_07_3(sse_frame: Any) -> None:
    """`sse_frame(event, text)`: one Server-Sent Event whose data is `text`, any text, read back exactly
    by a standard parser; an event name that would break the framing is refused with ValueError."""
    from miniagent.streaming import SSEParser

    _check_callable(sse_frame, "sse_frame", "sse_frame(event, text) returns the event as a str",
                    zh="sse_frame(event, text) 以 str 返回这个事件")
    texts = ["Hello", "北京：晴 ☀️", "two\nlines", "windows\r\nline ends", "an old\rMac line end",
             "ends with a newline\n", "", "data: looks like a field", " leading space", "\n\nblank lines\n\n"]
    for text in texts:
        frame = _run(sse_frame, "text", text, name="sse_frame", case=f"on {text!r}", case_zh=f"text 为 {text!r} 时")
        if isinstance(frame, bytes):
            frame = frame.decode("utf-8", "replace")
        if not isinstance(frame, str):
            wrong_kind(f"sse_frame returned {_kind(frame)}; return the event as a str",
                       zh=f"sse_frame 返回的是{_kind(frame)}；应该以 str 返回这个事件")
        parser = SSEParser()
        events = parser.feed(frame.encode("utf-8"))
        if len(events) != 1:
            not_yet(f"on {text!r}: a parser read {len(events)} events from {_show(frame, 50)}; one event ends "
                    "with a blank line (\\n\\n), and a line break inside the text must not make one",
                    zh=f"text 为 {text!r} 时：解析器从 {_show(frame, 50)} 读出了 {len(events)} 个事件；"
                       "一个事件以空行（\\n\\n）结束，text 里的换行不能变成空行")
        event = events[0]
        if event.event != "text":
            not_yet(f"on {text!r}: the event's name came out as {event.event!r}; start with an `event: text` line",
                    zh=f"text 为 {text!r} 时：解析出的事件名是 {event.event!r}；第一行应该是 `event: text`")
        if event.data != text.replace("\r\n", "\n").replace("\r", "\n"):
            not_yet(f"on {text!r}: the data came out as {event.data!r}. A data line cannot hold a line break: "
                    "split the text at every line end (\\n, \\r\\n, \\r) and send each line as its own `data:` line",
                    zh=f"text 为 {text!r} 时：解析出的 data 是 {event.data!r}。一行 data 里放不下换行："
                       "在每个行尾（\\n、\\r\\n、\\r）把 text 切开，每一行单独作为一行 `data:` 发送")
    for bad in ("bad\nname", "bad\rname"):
        def attempt(bad: str = bad) -> Any:
            try:
                return sse_frame(bad, "x")
            except ValueError:
                return _REFUSED

        frame = _run(attempt, name="sse_frame", case=f"on the event name {bad!r} (raise ValueError)",
                     case_zh=f"事件名为 {bad!r} 时，应该抛出 ValueError")
        if frame is not _REFUSED:
            not_yet(f"on the event name {bad!r}: a line break in the name would end the `event:` line and let the "
                    f"rest be read as another field; raise ValueError instead of returning {_show(frame, 40)}",
                    zh=f"事件名为 {bad!r} 时：名字里的换行会提前结束 `event:` 这一行，剩下的部分就成了另一个字段；"
                       f"应该抛出 ValueError，而不是返回 {_show(frame, 40)}")


_REFUSED = object()
