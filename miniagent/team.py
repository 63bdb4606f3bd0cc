"""Several agents: an agent as another agent's tool, an orchestrator, and a hand-off.

An agent is a loop with a system prompt, tools and a history. Two ways to combine them:

- **Delegation** (`agent_tool`): a specialist agent becomes a tool of another agent.
  The parent's model writes a task; the specialist runs it in a fresh conversation of
  its own (its own prompt, tools and budget) and only its short answer comes back as
  the tool result. The specialist's transcript, with all its tool calls and results,
  never enters the parent's context: that is the point. An orchestrator is simply an
  agent whose tools are specialists; because the loop runs one round's tool calls in
  parallel, specialists asked in the same round work at the same time.
- **Hand-off** (`handoff`): one agent passes the whole conversation to another, which
  answers the user itself. A triage agent gets a `transfer_to_<name>` tool per other
  agent; calling one ends its run (the loop's `handoff_tools`), and the chosen agent
  carries on from the same history with its own prompt and tools.

The rules that keep it safe: a specialist's tokens are charged to the run that called
it, so the parent's `usage` and `token_budget` cover everything spent on its behalf
(and a specialist never gets more budget than the parent has left); a specialist that
fails (an API error, a budget, a depth limit) comes back to the parent as an error
result, never as an exception; and delegation depth is bounded (`max_depth`), so an
agent that can call itself, directly or not, stops instead of recursing forever.
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable

from miniagent import tracing
from miniagent.agent import Agent, AsyncAgent
from miniagent.client import Usage
from miniagent.loop import LoopResult, arun_loop, current_run, run_loop
from miniagent.messages import tool_use_ids, user
from miniagent.tools import Tool, ToolRegistry, truncate_text

MAX_DEPTH = 3  # an agent calling an agent calling an agent: deeper is almost always a loop
TASK_SCHEMA = {"type": "object", "properties": {"task": {
    "type": "string", "description": "The task, self-contained: the specialist sees nothing else of this conversation."}},
    "required": ["task"]}
ORCHESTRATOR_SYSTEM = ("You coordinate specialists. Split the user's question into self-contained tasks, give each "
                       "to the specialist that fits (call independent ones together), then combine their answers "
                       "into one short reply. Answer in the language of the question.")

_DEPTH: ContextVar[int] = ContextVar("miniagent_delegation_depth", default=0)


class DelegationError(Exception):
    """A specialist could not give an answer; the registry turns this into an error result for the parent."""


# --- delegation: an agent as a tool -------------------------------------------------------------


def agent_tool(agent: Agent, *, name: str | None = None, description: str | None = None,
               max_depth: int = MAX_DEPTH, max_result_chars: int = 2_000, timeout: float = 300.0) -> Tool:
    """`agent` as a tool that takes one `task` and returns the agent's answer to it.

    Each call runs in `agent.fork()`: a new conversation, so calls never see each other
    and several can run at once. The answer is cut to `max_result_chars` (the parent's
    context is the thing this protects). An `AsyncAgent` gives a coroutine tool.
    """
    name = name or agent.name
    description = description or agent.description
    if not description:
        raise ValueError(f"agent {name!r} needs a description (Agent(description=...) or description=...): "
                         "it is all the parent's model knows about when to ask it")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive integer, got {max_depth!r}")
    text = f"{description.rstrip()} Give it one self-contained task; it answers with a short result."

    if isinstance(agent, AsyncAgent):
        async def delegate_async(task: str) -> str:
            sub, parent, token = _begin(agent, name, max_depth)
            try:
                result = await sub.run(task)
            finally:
                _end(sub, parent, name, token)
            return _answer(name, result, max_result_chars)
        return Tool(name, text, TASK_SCHEMA, delegate_async, timeout=timeout)

    def delegate(task: str) -> str:
        sub, parent, token = _begin(agent, name, max_depth)
        try:
            result = sub.run(task)
        finally:
            _end(sub, parent, name, token)
        return _answer(name, result, max_result_chars)
    return Tool(name, text, TASK_SCHEMA, delegate, timeout=timeout)


def _begin(agent: Agent, name: str, max_depth: int) -> tuple[Agent, Any, Any]:
    """Check depth and budget, and fork the specialist: (sub-agent, the parent run or None, depth token)."""
    depth = _DEPTH.get()
    if depth >= max_depth:
        raise DelegationError(f"{name} was not asked: delegation is already {depth} agents deep "
                              f"(max_depth={max_depth}). Do this part yourself or answer without it.")
    parent = current_run()
    sub = agent.fork()
    if parent is not None and parent.token_budget is not None:
        # what was left when this round's calls began, not now: parallel specialists each get the same
        # share whatever order their threads start in (a run is repeatable); the parent stops at its
        # next check if together they overspend it
        left = parent.tokens_left if parent.tokens_left is not None else \
            parent.token_budget - parent.usage.total_tokens
        if left <= 0:
            raise DelegationError(f"{name} was not asked: this run's token budget "
                                  f"({parent.token_budget:,}) is spent.")
        sub.token_budget = left if sub.token_budget is None else min(sub.token_budget, left)
    return sub, parent, _DEPTH.set(depth + 1)


def _end(sub: Agent, parent: Any, name: str, token: Any) -> None:
    _DEPTH.reset(token)
    if parent is not None:  # spent is spent, answer or not
        parent.charge(sub.usage, name)


def _answer(name: str, result: LoopResult, max_chars: int) -> str:
    if not result.ok:
        raise DelegationError(f"{name} stopped before answering ({result.stop}): {result.reason}")
    return truncate_text(result.text, max_chars)


def orchestrator(client: Any, specialists: list[Agent], **settings: Any) -> Agent:
    """An agent whose tools are `specialists` (each through `agent_tool`), with a coordinator's prompt."""
    settings.setdefault("system", ORCHESTRATOR_SYSTEM)
    settings.setdefault("name", "orchestrator")
    if client is not None:  # the client decides how the orchestrator waits; any specialist works under either
        cls = AsyncAgent if inspect.iscoroutinefunction(getattr(client, "create", None)) else Agent
    else:
        cls = AsyncAgent if specialists and all(isinstance(s, AsyncAgent) for s in specialists) else Agent
    return cls(client, [agent_tool(s) for s in specialists], **settings)


# --- hand-off: the conversation moves to another agent ------------------------------------------

TRANSFER_PREFIX = "transfer_to_"


class NoMoreHandoffs(Exception):
    """A transfer asked for after the conversation's last allowed hand-off."""


def transfer_tool(agent: Agent, *, closed: bool = False) -> Tool:
    """The tool that hands the conversation to `agent` (its result only confirms the hand-off).

    `closed`: the same tool, refusing (an error result): offered after the last allowed hand-off,
    so that a request whose history holds transfer calls still defines tools (the API wants
    tools defined whenever the messages hold tool_use blocks) while the agent must answer itself.
    """
    if not agent.description:
        raise ValueError(f"agent {agent.name!r} needs a description: the other agents choose whom to hand "
                         "the conversation to from it")

    def transfer(reason: str = "") -> str:
        if closed:
            raise NoMoreHandoffs("no more hand-offs in this conversation; answer the user yourself")
        return f"Transferred to {agent.name}; it answers from here."

    return Tool(f"{TRANSFER_PREFIX}{agent.name}",
                f"Hand the conversation to {agent.name}: {agent.description.rstrip('.')}. Call this when the "
                f"user's question is about that; {agent.name} then answers the user directly.",
                {"type": "object", "properties": {"reason": {"type": "string", "description": "Why, in a few words."}}},
                transfer)


@dataclass
class HandoffResult:
    """How a conversation went between agents: the last run's result, who answered, in order, and the tokens."""

    result: LoopResult
    path: list[str]
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        return self.result.text

    @property
    def messages(self) -> list[dict]:
        return self.result.messages


def handoff(agents: list[Agent], question: str, *, start: Agent | None = None, history: list[dict] | None = None,
            max_handoffs: int = 3, on_event: Callable[[dict], None] | None = None) -> HandoffResult:
    """Ask `question`, starting with `start` (default: the first agent); each agent may hand over to another.

    Every agent sees the same history and its own tools plus a transfer tool to each
    other agent. After `max_handoffs` transfers the agent holding the conversation gets no
    transfer tools (or, if it has no tools of its own, ones that refuse), so it must answer:
    two agents can never pass a question back and forth for ever. Each run is an `invoke_agent` span when a tracer is active.
    """
    relay = _Relay(agents, question, start, history, max_handoffs)
    while relay.current is not None:
        agent, options = relay.current, relay.options(on_event)
        with tracing.agent_span(agent) as span:
            result = run_loop(agent.client, relay.messages, **options)
            tracing.end_agent(span, result)
        relay.after(result)
    return relay.outcome()


async def ahandoff(agents: list[AsyncAgent], question: str, *, start: AsyncAgent | None = None,
                   history: list[dict] | None = None, max_handoffs: int = 3,
                   on_event: Callable[[dict], None] | None = None) -> HandoffResult:
    """`handoff` for AsyncAgents: the same rules, every model call and tool awaited."""
    relay = _Relay(agents, question, start, history, max_handoffs)
    while relay.current is not None:
        agent, options = relay.current, relay.options(on_event)
        with tracing.agent_span(agent) as span:
            result = await arun_loop(agent.client, relay.messages, **options)
            tracing.end_agent(span, result)
        relay.after(result)
    return relay.outcome()


class _Relay:
    """A hand-off's state between runs, the same for both drivers: who holds the conversation, and the history."""

    def __init__(self, agents: list, question: str, start: Any, history: list[dict] | None, max_handoffs: int) -> None:
        self.agents = list(agents)
        if not self.agents:
            raise ValueError("a hand-off needs at least one agent")
        names = [a.name for a in self.agents]
        if len(set(names)) != len(names):
            raise ValueError(f"agent names must be unique for a hand-off, got {names}")
        if isinstance(max_handoffs, bool) or not isinstance(max_handoffs, int) or max_handoffs < 0:
            raise ValueError(f"max_handoffs must be a whole number >= 0, got {max_handoffs!r}")
        self.current = start or self.agents[0]
        if self.current not in self.agents:
            raise ValueError(f"start={self.current.name!r} is not one of the agents")
        self.messages = [*(history or []), user(question)]
        self.path, self.usage, self.left = [self.current.name], Usage(), max_handoffs
        self.result: LoopResult | None = None

    def options(self, on_event: Callable[[dict], None] | None) -> dict:
        """The loop's arguments for the agent holding the conversation: its settings, plus transfer tools."""
        agent = self.current
        others = [a for a in self.agents if a is not agent]
        if self.left > 0:
            transfers = [transfer_tool(a) for a in others]
        elif len(agent.tools) == 0 and tool_use_ids(self.messages):  # the API wants tools defined: refusing ones
            transfers = [transfer_tool(a, closed=True) for a in others]
        else:
            transfers = []
        return dict(tools=ToolRegistry([*agent.tools, *transfers]), system=agent.system, policy=agent.policy,
                    max_iterations=agent.max_iterations, token_budget=agent.token_budget, parallel=agent.parallel,
                    approve=agent.approve, handoff_tools={t.name for t in transfers} if self.left > 0 else set(),
                    on_event=on_event, **agent.create)

    def after(self, result: LoopResult) -> None:
        """Take a run's result: the next agent if it handed over, else the end."""
        self.result, self.messages = result, result.messages
        self.usage.input_tokens += result.usage.input_tokens
        self.usage.output_tokens += result.usage.output_tokens
        self.usage.calls += result.usage.calls
        if result.stop != "handoff":
            self.current = None
            return
        offered = {f"{TRANSFER_PREFIX}{a.name}" for a in self.agents if a is not self.current}
        wanted = _last_transfer(result.messages, offered)
        self.current = next(a for a in self.agents if f"{TRANSFER_PREFIX}{a.name}" == wanted)
        self.path.append(self.current.name)
        self.left -= 1

    def outcome(self) -> HandoffResult:
        assert self.result is not None
        return HandoffResult(self.result, self.path, self.usage)


def _last_transfer(messages: list[dict], offered: set[str]) -> str:
    """The transfer the run handed off with, chosen as the loop chose it: the last assistant turn's
    first call of an `offered` transfer tool whose result is not an error (an earlier call of the
    same turn may have failed: an unknown agent, bad arguments)."""
    results = messages[-1]["content"] if isinstance(messages[-1]["content"], list) else []
    failed = {r.get("tool_use_id") for r in results if isinstance(r, dict) and r.get("is_error")}
    for message in reversed(messages):
        if message["role"] == "assistant" and isinstance(message["content"], list):
            return next(b["name"] for b in message["content"] if b.get("type") == "tool_use"
                        and b["name"] in offered and b.get("id") not in failed)
    raise ValueError("no transfer in the history")
