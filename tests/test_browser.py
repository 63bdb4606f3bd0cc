"""Where no thread can start (Pyodide, the browser edition): everything a learner runs still works.

Each test here makes `threading.Thread.start` raise as Pyodide's does ("can't start new
thread") and sets the package's THREADS flags false, as `sys.platform == "emscripten"` does
there. make test-lite runs the notebooks themselves in a real browser.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading

import pytest

import miniagent
import miniagent.aloop
import miniagent.browser
import miniagent.exercises._core
import miniagent.tiny
import miniagent.tools
from miniagent.browser import SerialExecutor, serial_thread_pool
from miniagent.tools import ToolRegistry, tool

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


@pytest.fixture
def no_threads(monkeypatch):
    """A Python that cannot start a thread, as in a browser tab."""
    def refuse(self, *args, **kwargs):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    for module in (miniagent.tools, miniagent.aloop, miniagent.exercises._core, miniagent.tiny):
        monkeypatch.setattr(module, "THREADS", False)


def use(name: str, id: str, **input: object) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def test_the_fixture_refuses_threads_as_pyodide_does(no_threads):
    with pytest.raises(RuntimeError, match="can't start new thread"):
        threading.Thread(target=print).start()


def test_a_round_runs_on_this_thread_in_call_order(no_threads):
    order, threads = [], set()

    @tool
    def note(word: str) -> str:
        """Note a word.

        Args:
            word: the word
        """
        order.append(word)
        threads.add(threading.get_ident())
        return word.upper()

    results = ToolRegistry([note]).run_all([use("note", f"t{i}", word=w) for i, w in enumerate("abc")], parallel=True)
    assert [r["content"] for r in results] == ["A", "B", "C"]
    assert order == ["a", "b", "c"] and threads == {threading.get_ident()}


def test_a_tool_that_raises_or_exits_is_answered_not_raised(no_threads):
    @tool
    def bad(kind: str) -> str:
        """Fail.

        Args:
            kind: how
        """
        if kind == "exit":
            sys.exit(3)
        raise ValueError("no such city")

    registry = ToolRegistry([bad])
    raised, exited = registry.run_all([use("bad", "t1", kind="raise"), use("bad", "t2", kind="exit")])
    assert raised["is_error"] and "ValueError: no such city" in raised["content"]
    assert exited["is_error"] and "SystemExit" in exited["content"]


def test_ctrl_c_in_a_tool_reaches_the_caller(no_threads):
    """On the caller's thread, a KeyboardInterrupt (the kernel's stop button) is the person's, not the tool's."""
    @tool
    def hang() -> str:
        """Hang."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ToolRegistry([hang]).run(use("hang", "t1"))


def test_the_agent_answers_the_demo_question(no_threads):
    agent = miniagent.Agent(miniagent.connect(offline=True, quiet=True))
    result = agent.run(DEMO)
    assert result.stop == "end_turn" and "3584" in result.text
    assert len(agent.trace.of_type("tool_result")) >= 4  # the mock's parallel round, run one by one


def test_the_async_agent_runs_plain_tools_without_a_thread(no_threads):
    from miniagent.aclient import connect_async

    result = asyncio.run(miniagent.aloop.AsyncAgent(connect_async(offline=True, quiet=True)).run(DEMO))
    assert "3584" in result.text


def test_an_exercise_check_runs_the_learners_code_here(no_threads):
    seen = []
    value = miniagent.exercises._core._run(lambda: seen.append(threading.get_ident()) or 42, name="f")
    assert value == 42 and seen == [threading.get_ident()]


def test_tiny_runs_its_tools_here(no_threads):
    def double(n: int) -> str:
        """Twice n."""
        return str(2 * n)

    tools = miniagent.tiny.Tools([miniagent.tiny.tool(double)])
    results = tools.run_all([{"id": "a", "name": "double", "input": {"n": 1}},
                             {"id": "b", "name": "double", "input": {"n": 3}}])
    assert [r["content"] for r in results] == ["2", "6"]


def test_serial_executor_keeps_order_and_failures():
    with SerialExecutor(max_workers=4) as pool:
        assert list(pool.map(lambda x: x * 2, [1, 2, 3])) == [2, 4, 6]
        failed = pool.submit(lambda: 1 / 0)
    assert isinstance(failed.exception(), ZeroDivisionError)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(print)


def test_serial_thread_pool_changes_nothing_outside_a_browser(monkeypatch):
    assert serial_thread_pool() is False and concurrent.futures.ThreadPoolExecutor is not SerialExecutor
    monkeypatch.setattr(concurrent.futures, "ThreadPoolExecutor", concurrent.futures.ThreadPoolExecutor)
    monkeypatch.setattr(miniagent.browser, "IN_BROWSER", True)
    assert serial_thread_pool() is True
    from concurrent.futures import ThreadPoolExecutor  # what notebook 03 imports after the browser's first cell
    assert ThreadPoolExecutor is SerialExecutor
