"""Fake model clients for the several-agents tests (team, approval, tracing, planning).

A `Fake` answers each `create()` with whatever `respond(request)` returns, so a test
decides exactly what every agent's model says and how many tokens it reports, with no
dependence on the mock brain's wording. `AsyncFake` is the same behind `async def create`.
Every request is recorded (a deep copy), in arrival order, under a lock: tools run in
threads, and so do sub-agents.

`SYNC_ASYNC` parametrizes a test over the two drivers: `make(kind, ...)` builds an
`Agent` on a `Fake` or an `AsyncAgent` on an `AsyncFake`, and `ask(agent, question)`
runs either one and returns the LoopResult.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any, Callable

from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent

SYNC_ASYNC = ["sync", "async"]
USAGE = {"input_tokens": 10, "output_tokens": 5}


def say(text: str, usage: dict | None = None) -> dict:
    """A final text answer."""
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": dict(usage or USAGE)}


def use(*calls: tuple[str, dict], usage: dict | None = None) -> dict:
    """One response asking for the given (name, input) tool calls, in order."""
    return {"content": [{"type": "tool_use", "name": n, "input": copy.deepcopy(i)} for n, i in calls],
            "stop_reason": "tool_use", "usage": dict(usage or USAGE)}


def results_in(request: dict) -> list[dict]:
    """The tool_result blocks of the request's last (user) message."""
    content = request["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
        if isinstance(content, list) else []


def script(*responses: dict | Callable[[dict], dict]) -> Callable[[dict], dict]:
    """A respond() that gives `responses` in order (a callable is called with the request); then fails."""
    queue = list(responses)
    lock = threading.Lock()

    def respond(request: dict) -> dict:
        with lock:
            if not queue:
                raise AssertionError(f"an unexpected extra model call: {request['messages'][-1]}")
            item = queue.pop(0)
        return item(request) if callable(item) else item
    return respond


class Fake:
    """A blocking client whose answers come from `respond(request)`; a raised exception is the call's error."""

    provider = "anthropic"
    base_url = "https://fake.test:8443"
    max_tokens = 1024

    def __init__(self, respond: Callable[[dict], Any], model: str = "fake-model") -> None:
        self.respond, self.model = respond, model
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._n = 0

    def _answer(self, messages: list[dict], kwargs: dict) -> dict:
        request = copy.deepcopy({"messages": messages, **{k: v for k, v in kwargs.items() if k != "on_event"}})
        with self._lock:
            self.requests.append(request)
            self._n += 1
            n = self._n
        answer = self.respond(request)
        if isinstance(answer, BaseException):
            raise answer
        answer = copy.deepcopy(answer)
        answer.setdefault("id", f"msg_fake_{n}")
        answer.setdefault("model", self.model)
        answer.setdefault("usage", dict(USAGE))
        answer.setdefault("stop_reason", "end_turn")
        return answer

    def create(self, messages: list[dict], **kwargs: Any) -> dict:
        return self._answer(messages, kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model})"


class AsyncFake(Fake):
    async def create(self, messages: list[dict], **kwargs: Any) -> dict:  # type: ignore[override]
        await asyncio.sleep(0)
        return self._answer(messages, kwargs)


def make(kind: str, respond: Callable[[dict], Any], tools: Any = (), **settings: Any) -> Agent:
    """An Agent on a Fake ("sync") or an AsyncAgent on an AsyncFake ("async")."""
    if kind == "sync":
        return Agent(Fake(respond), tools, **settings)
    return AsyncAgent(AsyncFake(respond), tools, **settings)


def ask(agent: Agent, question: str, **options: Any) -> Any:
    """agent.run(question), awaited if the agent is an AsyncAgent."""
    if isinstance(agent, AsyncAgent):
        return asyncio.run(agent.run(question, **options))
    return agent.run(question, **options)


def deleting_tool(deleted: list) -> Any:
    """`delete_file(path)`, a tool that needs approval and appends each path it really deleted to `deleted`.

    The mock calls it for "Delete the file notes.txt" (notebook 10, the approval tests and pages).
    """
    from miniagent.tools import tool

    @tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file from the workspace.

        Args:
            path: the file to delete
        """
        deleted.append(path)
        return f"deleted {path}"

    return delete_file

