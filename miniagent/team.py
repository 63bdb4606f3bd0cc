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
it, so the parent's `usage` is the whole bill; a specialist that fails (an API error, a
budget, a depth limit) comes back to the parent as an error result, never as an
exception; and delegation depth is bounded (`max_depth`), so an agent that can call
itself, directly or not, stops instead of recursing forever.

And one budget bounds the whole tree. Each specialist runs on a share of its parent's
`Ledger`: capped at its own `token_budget` and at what the parent had left
when the round began (never more), and drawing on the parent's ledger, which draws on
its own parent's, up to the run that was asked. Every model call anywhere in the tree is
admitted by all of them first, under one lock, from threads and coroutines alike. So for
the run that was asked, whatever the fan-out and the depth:

    everything spent on its behalf <= its token_budget + the largest single model call

(exact offline; live, up to the token estimate's error on each call's input). Giving each
specialist the parent's whole remainder, as before, let spending grow with
fan-out^depth: `token_budget=1000`, fan-out 3 and the default depth spent 13,400 tokens.
"""

from __future__ import annotations

import inspect
import threading
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable

from miniagent import tracing
from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent, arun_loop
from miniagent.client import Usage
from miniagent.i18n import say
from miniagent.loop import LoopResult, current_run, run_loop
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
_GIVING_LEDGERS = threading.Lock()  # two specialists of a round may start at once: one ledger for their parent


class DelegationError(Exception):
    """A specialist could not give an answer; the registry turns this into an error result for the parent."""


# --- one budget for a tree of agents ------------------------------------------------------------


class Ledger:
    """A token budget that every run working for one question draws on, in any thread or coroutine.

    A lone run needs no more than "stop when the budget is spent": its calls come one after
    another, so it overshoots by its last call at most. Sub-agents break that: specialists
    asked in one round run at the same time, each with its own loop. So the run that first
    delegates gets a ledger (`Loop.ledger`), each sub-agent runs on a `share()` of it (its
    own cap, drawing on the parent's ledger, which draws on its parent's...), and every
    model call of the tree goes through it, under one lock (`Loop.steps` asks it):

    - before the call, `admit(reservation)`: the call's worst case, its estimated input
      (`tokens.estimate_request`, what the mock bills) plus its `max_tokens`. It is admitted
      if that fits in what is neither spent nor held by calls still running, at every level;
      or, when it does not fit, on credit, if nothing else is running at that level and
      something is left. Otherwise it is refused, with the reason (`str`), and the run stops
      with `token_budget`;
    - after the call (answered, failed or cancelled), `settle(reservation, actual)`: the
      reservation is given back and what the call really cost is spent.

    The bound, for every level (the run's own `token_budget` included):

        spent <= limit + the largest single model call

    A call that fits cannot take spending past the limit, since it costs at most what it
    reserved; only a call on credit can, and it runs alone, starting below the limit. This
    is exact offline (the mock bills by the same estimate). Live, the estimate of a call's
    input can be short of what the API counts, and each call that fitted can add that error.
    Which of several parallel specialists gets the last tokens depends on which asks first;
    the bound holds whatever the order. A run that never delegates never gets a ledger.
    """

    def __init__(self, limit: int | None, parent: "Ledger | None" = None, spent: int = 0) -> None:
        self.limit, self.parent = limit, parent
        self.spent = spent  # tokens charged here and below
        self.held = 0       # tokens reserved by calls running here and below
        self.running = 0    # calls admitted here and below, not settled yet
        self._lock: threading.Lock = parent._lock if parent is not None else threading.Lock()

    def share(self, limit: int | None) -> "Ledger":
        """A sub-agent's ledger: at most `limit` of its own (None: no cap but this one's), drawing on this one."""
        return Ledger(limit, self)

    @property
    def left(self) -> int | None:
        """Of this level's limit, what is not spent yet (None without a limit)."""
        return None if self.limit is None else self.limit - self.spent

    def _levels(self) -> list["Ledger"]:
        levels, level = [], self
        while level is not None:
            levels.append(level)
            level = level.parent
        return levels

    def _refusal(self, reservation: int) -> str | None:
        """Why this level cannot admit a call that may cost `reservation`, or None (the lock is held)."""
        if self.limit is None:
            return None
        if self.spent >= self.limit:
            return say("why_spent", spent=f"{self.spent:,}", limit=f"{self.limit:,}")
        if self.spent + self.held + reservation <= self.limit or self.running == 0:  # fits, or on credit alone
            return None
        why = say("why_held", spent=f"{self.spent:,}", held=f"{self.held:,}", limit=f"{self.limit:,}")
        return why + (say("why_no_room", n=f"{reservation:,}") if reservation else "")

    def _why_not(self, levels: list["Ledger"], reservation: int) -> str | None:
        for n, level in enumerate(levels):
            why = level._refusal(reservation)
            if why is not None:
                return why if n == 0 else say("why_parent", why=why)
        return None

    def refusal(self) -> str | None:
        """Why no call at all could be admitted now (the budget is spent or held), else None."""
        with self._lock:
            return self._why_not(self._levels(), 0)

    def admit(self, reservation: int) -> str | None:
        """Reserve `reservation` tokens for one model call: None if admitted, else why not."""
        with self._lock:
            levels = self._levels()
            why = self._why_not(levels, reservation)
            if why is None:
                for level in levels:
                    level.held += reservation
                    level.running += 1
            return why

    def settle(self, reservation: int, actual: int) -> None:
        """A call admitted with `reservation` is over and cost `actual` tokens (0 if it failed)."""
        with self._lock:
            for level in self._levels():
                level.held -= reservation
                level.running -= 1
                level.spent += actual


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
    if parent is not None and (parent.token_budget is not None or parent.ledger is not None):
        # its cap: what was left when this round's calls began, not now, so parallel specialists get the
        # same cap whatever order they start in; the parent's ledger then bounds what they spend together
        left = parent.tokens_left
        if left is not None and left <= 0:
            raise DelegationError(f"{name} was not asked: this run's token budget "
                                  f"({parent.token_budget:,}) is spent.")
        own = sub.token_budget
        sub.token_budget = _ledger(parent).share(left if own is None else own if left is None else min(own, left))
    return sub, parent, _DEPTH.set(depth + 1)


def _ledger(run: Any) -> Ledger:
    """The ledger `run`'s sub-agents draw on: its own, or a new one holding what it spent so far."""
    with _GIVING_LEDGERS:
        if run.ledger is None:
            run.ledger = Ledger(run.token_budget, spent=run.usage.total_tokens)
        return run.ledger


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
        return {**agent.loop_options(), "tools": ToolRegistry([*agent.tools, *transfers]),
                "handoff_tools": {t.name for t in transfers} if self.left > 0 else set(), "on_event": on_event}

    def after(self, result: LoopResult) -> None:
        """Take a run's result: the next agent if it handed over, else the end."""
        self.result, self.messages = result, result.messages
        self.usage.merge(result.usage)
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
