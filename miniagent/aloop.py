"""The same agent from asyncio (notebook 07): tools, the loop and the agent, every wait awaited.

Nothing here decides anything new. The loop's rules are `Loop.steps()` (loop.py), the
tools' boundary is `ToolRegistry` (tools.py), the agent's bookkeeping is `Agent` (agent.py);
this module only performs their I/O with `await`, so one process can hold many
conversations at once, each waiting on its own model calls and tools without blocking the
others (`miniagent.serve`).

- `arun_all`: a round's tool calls as tasks of one TaskGroup. A coroutine tool is awaited
  (and cancelled on a timeout); a plain function runs in a daemon thread of its own, which
  can only be abandoned: `still_running()` tells a caller that cancelled a run which calls
  went on regardless.
- `arun_loop`: `run_loop`'s driver with `await`.
- `AsyncAgent`: `Agent` whose `run` is awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from miniagent import tracing
from miniagent.agent import Agent, _answer_of
from miniagent.client import APIError
from miniagent.loop import (Effect, Loop, LoopResult, ModelCall, PolicyView, TextCallback, ToolCalls,
                            ToolUseCallback, _advance, _running)
from miniagent.messages import safe_str, tool_result
from miniagent.browser import THREADS
from miniagent.tools import ToolRegistry, _answer, _is_async, call_here
from miniagent.events import Event

# --- tools ---------------------------------------------------------------------------------


async def arun_all(registry: ToolRegistry, tool_uses: list[dict], parallel: bool = True,
                   on_result: Callable[[dict, dict, float], Any] | None = None,
                   approve: Callable[[dict], Any] | None = None,
                   on_approval: Callable[[dict], Any] | None = None) -> list[dict]:
    """`ToolRegistry.run_all` for asyncio: the same results in the same order, every wait awaited.

    With `parallel`, the calls run as tasks of one TaskGroup, so cancelling the caller
    cancels them all: coroutine tools get CancelledError; a plain tool's thread cannot be
    stopped and runs on (`still_running()` names such calls).
    `approve` may be a coroutine function (a web page waiting for a click).
    """
    for block in tool_uses:
        registry._check_block(block)
    refused = {}
    if asking := registry._asking(tool_uses):  # notebook 10's hook, as in run_all
        from miniagent import approval
        refused = await approval.arefusals(asking, approve, on_approval)
    results: list[Any] = [None] * len(tool_uses)
    together = parallel and len(tool_uses) > 1
    spans = registry._spans(tool_uses) if together else [None] * len(tool_uses)  # else each as it starts

    async def one(i: int, block: dict) -> None:
        tracing.activate(spans[i])
        start = time.perf_counter()
        is_error, text = (refused[i]["is_error"], refused[i]["content"]) if i in refused \
            else await _outcome(registry, block)
        results[i] = tool_result(block["id"], text, is_error=is_error)
        tracing.end_tool(spans[i], results[i])
        if on_result:
            on_result(block, results[i], time.perf_counter() - start)

    if not together:
        for i, block in enumerate(tool_uses):
            spans[i] = registry._spans([block])[0]
            await asyncio.create_task(one(i, block), context=contextvars.copy_context())
    else:
        async with asyncio.TaskGroup() as group:
            for i, block in enumerate(tool_uses):
                group.create_task(one(i, block), context=contextvars.copy_context())
    return results


async def _outcome(registry: ToolRegistry, tool_use: dict) -> tuple[bool, str]:
    """`ToolRegistry._outcome` for asyncio: a coroutine tool is awaited, a plain one runs in its own thread.

    On a timeout the coroutine is cancelled (a thread can only be abandoned). When the
    run itself is cancelled, CancelledError goes through: it is not the tool's failure.
    """
    name = tool_use.get("name")
    try:
        chosen, args, refusal = registry._prepare(name, tool_use)
        if refusal is not None:
            return registry._finish(refusal)
        thread: list[asyncio.Future] = []  # a plain tool's thread, once started
        deadline = time.monotonic() + chosen.timeout
        try:
            ok, value = await asyncio.wait_for(_awaited(chosen.fn, args, thread), chosen.timeout)
        except TimeoutError:  # wait_for cancelled the coroutine; a thread can only be abandoned
            how = "was abandoned" if not _is_async(chosen.fn) else "was cancelled"
            ok, value = None, f"did not finish within {chosen.timeout:g} s and {how}"
        except asyncio.CancelledError:  # the run was cancelled: a thread goes on regardless
            if thread:
                _left_running(registry, tool_use, thread[0], deadline)
            raise
        return registry._finish(_answer(name, ok, value))
    except Exception as exc:  # noqa: BLE001 - the tool boundary
        return registry._failed(name, exc)

def _left_running(registry: ToolRegistry, tool_use: dict, thread: asyncio.Future, deadline: float) -> None:
    """Note a plain tool's call whose run was cancelled, in the `still_running()` block around it, if any."""
    watch = _STILL_RUNNING.get()
    if watch is None:
        return
    name, outcome = tool_use.get("name"), thread.get_loop().create_future()

    def ended(finished: asyncio.Future) -> None:  # on the event loop, when the thread's outcome arrives
        try:
            outcome.set_result(registry._finish(_answer(name, *finished.result())))
        except Exception as exc:  # noqa: BLE001 - the tool boundary, as in _outcome
            outcome.set_result(registry._failed(name, exc))

    thread.add_done_callback(ended)
    watch[tool_use["id"]] = StillRunning(tool_use["id"], safe_str(name), deadline, outcome)


async def _off_the_loop(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) in a thread, so that the event loop goes on meanwhile; on this thread where none can start."""
    return await asyncio.to_thread(fn, *args) if THREADS else fn(*args)


async def _awaited(fn: Callable[..., Any], kwargs: dict, thread: list | None = None) -> tuple[bool, Any]:
    """(True, value) or (False, exception) from fn(**kwargs), awaited; a plain fn runs in a daemon thread.

    Not `asyncio.to_thread`: its pool's threads are joined at interpreter exit, so a tool
    that hangs would keep the process alive; a daemon thread is abandoned, as in `call_with_timeout`.
    The future the thread settles goes into `thread`: cancelling this wait leaves it alone, so
    whoever cancelled can still learn how the call ended (`still_running`).
    """
    if _is_async(fn):
        try:
            return True, await fn(**kwargs)
        except asyncio.CancelledError:
            raise  # the run was cancelled (or the tool timed out): not the tool's own failure
        except BaseException as exc:  # noqa: BLE001 - the tool boundary
            return False, exc
    if not THREADS:  # a browser tab: the plain tool blocks the loop while it runs (see tools.THREADS)
        return call_here(fn, kwargs)
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        future.set_result(outcome)  # never cancelled: the wait below is shielded

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(**kwargs))
        except BaseException as exc:  # noqa: BLE001 - the tool boundary
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the event loop has closed: the answer has nowhere to go
            pass

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(target,), daemon=True,
                     name=f"tool-{getattr(fn, '__name__', 'call')}").start()
    if thread is not None:
        thread.append(future)
    return await asyncio.shield(future)


# --- plain tools a cancelled run leaves running ---------------------------------------------


@dataclass
class StillRunning:
    """A plain tool's call that was running in its thread when its run was cancelled.

    Python cannot stop a thread, so the call goes on, effects and all. `outcome` resolves,
    on the event loop, to the (is_error, text) the model would have been given; `deadline`
    is the `time.monotonic()` at which the registry would have given up on it (its timeout).
    """
    id: str
    name: str
    deadline: float
    outcome: asyncio.Future


_STILL_RUNNING: contextvars.ContextVar[dict[str, StillRunning] | None] = \
    contextvars.ContextVar("miniagent_still_running", default=None)


@contextlib.contextmanager
def still_running() -> Iterator[dict[str, StillRunning]]:
    """Within this block, each plain tool's call that a cancelled `arun_all` leaves running is noted
    in the dict it yields, by tool_use id.

    Only coroutine tools can be cancelled. A caller that cancels a run (a web service whose
    client went away) learns here which calls went on regardless, so it can wait for them,
    each until its deadline, and tell the model what is known.
    """
    calls: dict[str, StillRunning] = {}
    token = _STILL_RUNNING.set(calls)
    try:
        yield calls
    finally:
        _STILL_RUNNING.reset(token)


# --- the loop and the agent -----------------------------------------------------------------


async def arun_loop(client: Any, messages: list[dict], **options: Any) -> LoopResult:
    """`run_loop` for asyncio: the same arguments, rules and result, with every wait awaited.

    `client` is an async client (`AsyncClient`, `connect_async()`). Tools run as
    `ToolRegistry.arun_all` runs them: coroutine tools awaited, plain functions in
    threads, so one run's waits never block another's. A context policy's hooks are
    plain functions that may call the model (Summarize): they run in a thread too.
    Cancelling the task cancels the model call and the tools; `messages` is unchanged,
    as always, and what the run had appended is discarded with it.
    """
    if not inspect.iscoroutinefunction(getattr(client, "create", None)):
        raise TypeError(f"arun_loop needs an async client (AsyncClient, connect_async()); "
                        f"{type(client).__name__}.create is not a coroutine function: use run_loop")
    loop = Loop(messages, **options)
    loop.max_output = getattr(client, "max_tokens", None)

    async def perform(effect: Effect) -> Any:
        if isinstance(effect, ModelCall):
            streaming = {"stream": True, "on_event": effect.watcher} if effect.watcher is not None else {}
            with tracing.model_span(client, loop.request, effect.messages, effect.watcher is not None) as span:
                response = await client.create(effect.messages, **loop.request, **streaming)
                tracing.end_model(span, response, getattr(effect.watcher, "first_token", None))
                return response
        if isinstance(effect, ToolCalls):
            with _running(loop):
                return await loop.registry.arun_all(effect.calls, parallel=loop.parallel, on_result=effect.on_result,
                                                    approve=effect.approve, on_approval=effect.on_approval)
        if isinstance(effect, PolicyView):
            return await _off_the_loop(loop.policy.view, effect.history)
        return await _off_the_loop(loop.policy.on_tool_results, effect.results)

    steps, outcome, error = loop.steps(), None, None
    try:
        while True:
            finished, effect = _advance(steps, outcome, error)
            if finished:
                return effect
            try:
                outcome, error = await perform(effect), None
            except APIError as err:
                outcome, error = None, err
    finally:
        steps.close()


class AsyncAgent(Agent):
    """`Agent` for asyncio: `await agent.run(question)`; the same settings, trace and history rules.

    One process can then hold many conversations at once, each waiting on its own model
    calls and tools without blocking the others (notebook 07, `miniagent.serve`).
    `client` defaults to `connect_async()`. Cancelling the task that awaits `run` cancels
    its model call and its coroutine tools (a plain tool's thread cannot be stopped), and the
    history stays as before the question (as with Ctrl-C). Callbacks are plain functions, called inline:
    keep them quick.
    """

    def __init__(self, client: Any = None, tools: ToolRegistry | list | None = None, **settings: Any) -> None:
        if client is None:
            from miniagent.aclient import connect_async  # here, so that passing a client never reads the environment
            client = connect_async()
        super().__init__(client, tools, **settings)

    async def run(self, question: str, *, stream: bool | None = None,  # type: ignore[override]
                  on_text: TextCallback | None = None, on_tool_use: ToolUseCallback | None = None,
                  on_step: Callable[[Event], None] | None = None,
                  approve: Callable[[dict], Any] | None = None) -> LoopResult:
        """Ask one question (see `Agent.run`)."""
        messages, options, printer = self._start(question, stream, on_text, on_tool_use, on_step, approve)
        with tracing.agent_span(self) as span:
            result = await arun_loop(self.client, messages, **options)
            tracing.end_agent(span, result)
        return self._end(result, printer)

    async def chat(self, question: str) -> str:  # type: ignore[override]
        """`run()`, returning just the answer (and why, if the agent stopped early)."""
        return _answer_of(await self.run(question))
