"""Checks for notebook 07 · Async and serving."""

from __future__ import annotations

import asyncio
import inspect
import json
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
            not_yet(f"{case}: {meter.most} runs were in flight at once, over the limit: make one "
                    "asyncio.Semaphore(limit), shared by all the runs, and hold it around each run (a semaphore "
                    "made for each question, or held around the whole gather, limits nothing)",
                    zh=f"{case_zh}：同一时刻有 {meter.most} 个在运行，超过了 limit：只创建一个 asyncio.Semaphore(limit)，"
                       "让所有运行共用，并用它把每次运行包起来（每个问题各建一个 semaphore，或者把整个 gather 包起来，"
                       "都限制不住）")
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
             "ends with a newline\n", "", "data: looks like a field", " leading space", "\n\nblank lines\n\n",
             "a form\x0cfeed and a\u2028line separator: no line ends in SSE"]
    for text in texts:
        frame = _run(sse_frame, "text", text, name="sse_frame", case=f"on {text!r}", case_zh=f"text 为 {text!r} 时")
        if isinstance(frame, bytes):
            frame = frame.decode("utf-8", "replace")
        if not isinstance(frame, str):
            wrong_kind(f"sse_frame returned {_kind(frame)}; return the event as a str",
                       zh=f"sse_frame 返回的是{_kind(frame)}；应该以 str 返回这个事件")
        parser = SSEParser()
        events = parser.feed(frame.encode("utf-8"))
        if not events and not any(line.startswith("data") for line in frame.splitlines()):
            not_yet(f"on {text!r}: {_show(frame, 50)} has no data: line, and a parser dispatches no event without "
                    "one: even an empty text needs its `data:` line",
                    zh=f"text 为 {text!r} 时：{_show(frame, 50)} 里没有 data: 行，而没有 data 的事件解析器根本不会分发："
                       "即使 text 是空的，也要有一行 `data:`")
        if len(events) != 1:
            not_yet(f"on {text!r}: a parser read {len(events)} events from {_show(frame, 50)}; one event ends "
                    "with a blank line (\\n\\n), and a line break inside the text must not make one",
                    zh=f"text 为 {text!r} 时：解析器从 {_show(frame, 50)} 读出了 {len(events)} 个事件；"
                       "一个事件以空行（\\n\\n）结束，text 里的换行不能变成空行")
        event = events[0]
        if event.event != "text":
            not_yet(f"on {text!r}: the event's name came out as {event.event!r}; start with an `event: text` line",
                    zh=f"text 为 {text!r} 时：解析出的事件名是 {event.event!r}；第一行应该是 `event: text`")
        want = text.replace("\r\n", "\n").replace("\r", "\n")
        if event.data != want:
            _explain_data(text, want, event.data)
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


def _explain_data(text: str, want: str, data: str) -> None:
    """A hint for a data that came out wrong in a way with a name: a lost leading space, splitlines, JSON."""
    if data == "\n".join(line[1:] if line.startswith(" ") else line for line in want.split("\n")):
        not_yet(f"on {text!r}: the data came out as {_show(data, 50)}, without the text's leading space. A parser removes "
                "one space after `data:`, so write `data: ` (colon, then a space) before every line, and the line "
                "as it is: `data:` straight before a line that starts with a space loses that space (so does "
                "stripping the text)",
                zh=f"text 为 {text!r} 时：解析出的 data 是 {_show(data, 50)}，text 开头的空格没了。解析器会去掉 `data:` 后面的"
                   "一个空格，所以每一行前面都写 `data: `（冒号，再加一个空格），后面接原样的这一行：`data:` 后面直接跟"
                   "一个以空格开头的行，这个空格就会被吃掉（把 text strip 掉也一样）")
    if data != want and data in (want.rstrip("\n"), want.strip("\n")):
        not_yet(f"on {text!r}: the data came out as {_show(data, 50)}, without the empty lines at its end (or start). Every "
                "line counts, an empty one too: str.splitlines() drops a last empty line, strip() all of them. "
                "Turn every line end into \\n, then split('\\n')",
                zh=f"text 为 {text!r} 时：解析出的 data 是 {_show(data, 50)}，结尾（或开头）的空行没了。每一行都算数，空行也是："
                   "str.splitlines() 会丢掉最后一个空行，strip() 会把它们全丢掉。先把所有行尾都换成 \\n，再 split('\\n')")
    if data == "\n".join(text.splitlines()) and any(c in text for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"):
        not_yet(f"on {text!r}: the data came out as {_show(data, 50)}: str.splitlines() also splits at characters that end "
                "no line in SSE (\\x0c, \\u2028 and more). Split at \\n, \\r\\n and \\r only (turn "
                "\\r\\n and \\r into \\n, then split('\\n'))",
                zh=f"text 为 {text!r} 时：解析出的 data 是 {_show(data, 50)}：str.splitlines() 还会在 SSE 里不算行尾的字符处切开"
                   "（\\x0c、\\u2028 等）。只在 \\n、\\r\\n 和 \\r 处切分（先把后两种换成 \\n，再 split('\\n')）")
    try:
        decoded = json.loads(data)
    except ValueError:
        return
    if decoded == text or decoded == want:
        not_yet(f"on {text!r}: the data came out as {_show(data, 50)}, your text as JSON. Here the data is the text "
                "itself, any text, each of its lines on a `data:` line of its own",
                zh=f"text 为 {text!r} 时：解析出的 data 是 {_show(data, 50)}，也就是把 text 编码成了 JSON。"
                   "这里的 data 就是 text 本身，不管什么文本，每一行单独放一行 `data:`")
