"""The ReAct loop: call the model, run the tools it asks for, repeat until it is done.

The whole idea fits in a few lines (notebook 03 writes them inline):

    while True:
        response = client.create(messages, tools=...)
        messages.append(assistant(response["content"]))
        if response["stop_reason"] != "tool_use":
            return response
        messages.append(user(run_all_tools(response)))

What makes it safe to leave running is the rest of this module: every `stop_reason`
is handled (none spins without appending), all `tool_use` blocks of one response run
concurrently and answer in one user message in call order, a truncated tool call is
never executed, and three budgets stop a runaway model: iterations, cumulative
tokens, and the same call repeated with the same arguments. A failed API call
leaves the history exactly as it was before the call, whether it was the loop's own
call or one a context policy made (a summary); results of tools that already ran
are kept. Nothing a response holds can make the next request invalid: what enters
the history is `storable_content(response)`, never the response as it came.

The rules are written once, in `Loop.steps()`, a generator that yields each piece of I/O
it needs; `run_loop` performs them with plain calls (see "the decisions, once" below), and
notebook 07's `arun_loop` (`aloop.py`) with `await`. Later notebooks reach in through small
hooks, each named where it is: a stream's callbacks (06, `streaming.StreamWatcher`), a
person's approval (10, `approval.py`), a sub-agent's tokens charged to the run that called
it and one token ledger for a tree of agents (10, `team.py`: `current_run`, `Loop.ledger`),
a hand-off that ends the run (10), and spans (11, `tracing.py`).
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator, Union

from miniagent import tracing
from miniagent.client import APIError, Usage
from miniagent.i18n import say
from miniagent.messages import assistant, storable_content, text_of, tool_result, tool_use_ids, user
from miniagent.tokens import estimate_request
from miniagent.tools import ToolRegistry

if TYPE_CHECKING:
    from miniagent.streaming import StreamWatcher

Event = dict[str, Any]
TextCallback = Callable[[str], None]
ToolUseCallback = Callable[[dict], None]

# Why the loop stopped: a stop_reason the model gave, or a limit the loop enforced.
DONE = ("end_turn", "stop_sequence")
# What a call's answer may cost when neither the request nor the client says (its max_tokens): for a ledger
DEFAULT_MAX_OUTPUT = 4096


@dataclass
class LoopResult:
    stop: str            # end_turn, stop_sequence, max_tokens, refusal, max_iterations,
                         # token_budget, repeated_call, api_error, handoff, or unknown_stop_reason
    reason: str          # one sentence a person can read
    text: str            # the final answer (the last response's text)
    messages: list[dict]  # the full history, including what this run appended
    iterations: int      # model calls made
    usage: Usage = field(default_factory=Usage)
    error: APIError | None = None

    @property
    def ok(self) -> bool:
        return self.stop in DONE


def needs_stream(stream: Any, on_text: Any, on_tool_use: Any) -> None:
    """The one check that streaming callbacks come with `stream=True` (Loop, Agent and each run ask it)."""
    if not stream and (on_text is not None or on_tool_use is not None):
        raise TypeError("on_text and on_tool_use are called as a streamed answer arrives: pass stream=True as well")


def call_signature(block: dict) -> str:
    """A tool call's identity for repeat detection: its name and canonical arguments."""
    return block["name"] + json.dumps(block.get("input", {}), sort_keys=True, ensure_ascii=False)


def _not_executed(blocks: list[dict], why: str) -> list[dict]:
    """Error results for calls the loop refuses to run, so the history stays valid."""
    return [tool_result(b["id"], f"Error: not executed: {why}", is_error=True) for b in blocks]


# --- the decisions, once: a generator that asks its driver to do the I/O --------------------------
#
# The loop's rules (budgets, stop reasons, repeat detection, what enters the history) do not
# depend on whether the model call blocks or is awaited. So they are written once, as a
# generator that *yields* each piece of I/O it needs (a model call, running the tools, a
# context policy's hook) and gets the outcome back from `yield`. A driver performs them:
# `run_loop` with plain calls, `arun_loop` with `await`. If the I/O fails with an APIError,
# the driver throws it back in at the `yield`, where the rules handle it like any other
# outcome. Nothing else differs between the two.


@dataclass
class ModelCall:
    """Call the model with `messages` (streamed through `watcher` when there is one)."""
    messages: list[dict]
    watcher: StreamWatcher | None


@dataclass
class ToolCalls:
    """Run these tool_use blocks; `on_result(block, result, seconds)` as each finishes; ask `approve` first."""
    calls: list[dict]
    on_result: Callable[[dict, dict, float], None]
    approve: Callable[[dict], Any] | None = None
    on_approval: Callable[[dict], Any] | None = None


@dataclass
class PolicyView:
    """Ask the context policy what part of `history` to send."""
    history: list[dict]


@dataclass
class PolicyResults:
    """Let the context policy shorten tool results before they enter the history."""
    results: list[dict]


Effect = Union[ModelCall, ToolCalls, PolicyView, PolicyResults]

_RUN: ContextVar["Loop | None"] = ContextVar("miniagent_run", default=None)


def current_run() -> "Loop | None":
    """The run whose tools are running here (a sub-agent charges its tokens to it), or None."""
    return _RUN.get()


@contextmanager
def _running(loop: "Loop") -> Iterator[None]:
    """`loop` as the current run while its tools run (copied into each tool's thread)."""
    token = _RUN.set(loop)
    try:
        yield
    finally:
        _RUN.reset(token)


class Loop:
    """One run's settings and state; `steps()` is the run, as a generator of Effects.

    The options, stated here once (`run_loop`, `arun_loop` and `Agent` pass them on):
    `tools` a ToolRegistry or a list; `system` the system prompt; `max_iterations` model
    calls; `token_budget` a number of tokens, or a ledger shared with other runs
    (`team.Ledger`, which must admit each call first); `max_repeats` times the same call
    may repeat; `parallel` runs a round's tools at once. `policy` (see `miniagent.context`)
    chooses what part of the history each call sends and may shorten tool output before it
    enters the history; an APIError in either hook ends the run as `api_error`, like a
    failed call of the loop's own. `on_event` gets a dict for every step (request,
    response, tool_call, tool_result, approval, usage, error, stop); a response event's
    `content` is the content as stored (`storable_content`; `client.last` has the raw one).

    `stream=True` streams each call; the run, its history and its budgets are what they
    would be unstreamed, while `on_text(delta)` gets each piece of text and `on_tool_use(call)`
    each tool call as it forms (see `streaming.StreamWatcher`), and a response event carries
    `stream`: `{"events", "first_token", "first_text"}`. A stream that breaks ends the run as
    `api_error`: nothing of it is kept and none of its tool calls run. `approve(call)` is asked
    before a tool that needs approval runs (`approval.py`); `handoff_tools` names tools whose
    call ends the run with stop "handoff" (`team.handoff`). Any other keyword is a request
    field for every call. With a tracer active (`tracing.py`), each model call is a `chat`
    span and each tool call an `execute_tool` span.
    """

    def __init__(self, messages: list[dict], *, tools: ToolRegistry | list | None = None,
                 system: str | list | None = None, max_iterations: int = 10, token_budget: Any = None,
                 max_repeats: int = 2, parallel: bool = True, policy: Any = None,
                 on_event: Callable[[Event], None] | None = None, stream: bool = False,
                 on_text: TextCallback | None = None, on_tool_use: ToolUseCallback | None = None,
                 approve: Callable[[dict], Any] | None = None, handoff_tools: Any = (),
                 **create_kwargs: Any) -> None:
        needs_stream(stream, on_text, on_tool_use)
        self.registry = tools if isinstance(tools, ToolRegistry) or tools is None else ToolRegistry(tools)
        self.request = {"system": system, "tools": self.registry.schemas() if self.registry else None,
                        **create_kwargs}
        self.history = list(messages)
        # a number of tokens, or a ledger shared with other runs (team.Ledger); team.py gives a run one
        # when it first delegates, so that its sub-agents, running in parallel, draw on one budget
        self.ledger: Any = None if token_budget is None or isinstance(token_budget, (int, float)) else token_budget
        self.token_budget = token_budget if self.ledger is None else self.ledger.limit
        self.max_iterations, self.max_repeats = max_iterations, max_repeats
        self.max_output: int | None = None  # the client's max_tokens, set by the driver: a call's worst case
        self.parallel, self.policy, self.stream = parallel, policy, stream
        self.on_text, self.on_tool_use = on_text, on_tool_use
        self.emit = on_event or (lambda event: None)
        self.approve, self.handoff_tools = approve, frozenset(handoff_tools)
        self.usage = Usage()
        self.iterations = 0
        self.tokens_left: int | None = None  # of token_budget, when this round's tool calls began
        self._charging = threading.Lock()

    def charge(self, usage: Usage, source: str) -> None:
        """Add tokens spent on this run's behalf (a sub-agent's), from any thread; the budget counts them."""
        with self._charging:  # the event too: Agent adds it to its own usage, and two specialists may end at once
            self.usage.merge(usage)
            self.emit({"type": "usage", "source": source, "input_tokens": usage.input_tokens,
                       "output_tokens": usage.output_tokens, "calls": usage.calls})

    def reservation(self, view: list[dict]) -> int:
        """What the next call may cost at most, for the ledger: its estimated input and its max_tokens."""
        if self.ledger is None:
            return 0
        body = {"messages": view, "system": self.request["system"], "tools": self.request["tools"]}
        output = self.request.get("max_tokens") or self.max_output
        if isinstance(output, bool) or not isinstance(output, int) or output < 1:
            output = DEFAULT_MAX_OUTPUT
        return estimate_request(body) + output

    def steps(self) -> Generator[Effect, Any, LoopResult]:
        """The run: yields what it needs done, returns the LoopResult."""
        history, usage, emit = self.history, self.usage, self.emit
        seen: dict[str, int] = {}
        used_ids = tool_use_ids(history)
        while True:
            if self.iterations >= self.max_iterations:
                return self.finish("max_iterations", say("why_max_iterations", n=self.iterations,
                                                         limit=self.max_iterations))
            if self.ledger is not None and (why := self.ledger.refusal()) is not None:  # not even a summary
                return self.finish("token_budget", say("why_budget", why=why))
            if self.ledger is None and self.token_budget is not None and usage.total_tokens >= self.token_budget:
                return self.finish("token_budget", say("why_budget", why=say(
                    "why_spent", spent=f"{usage.total_tokens:,}", limit=f"{self.token_budget:,}")))
            try:
                view = (yield PolicyView(history)) if self.policy else history
            except APIError as err:  # e.g. Summarize's own model call: nothing was appended
                return self.failed(err, "why_policy_api", self.iterations + 1)
            reservation = self.reservation(view)
            if self.ledger is not None and (why := self.ledger.admit(reservation)) is not None:
                return self.finish("token_budget", say("why_budget", why=why))
            self.iterations += 1
            iteration = self.iterations
            emit({"type": "request", "iteration": iteration, "messages": len(history), "sent": len(view)})
            started = time.perf_counter()
            watcher = None
            if self.stream:  # notebook 06's hook: the callbacks see the answer as it arrives
                from miniagent.streaming import StreamWatcher
                watcher = StreamWatcher(iteration, started, self.on_text, self.on_tool_use)
            before = usage.total_tokens
            try:
                response = yield ModelCall(view, watcher)
                usage.add(response.get("usage") or {})
            except APIError as err:  # nothing was appended for this call: the history is as it was
                return self.failed(err, "why_api", iteration, watcher)
            finally:  # answered, failed or cancelled: the reservation goes back, the cost is spent
                if self.ledger is not None:
                    self.ledger.settle(reservation, usage.total_tokens - before)
            stop_reason = response.get("stop_reason")
            content = storable_content(response.get("content"), used_ids)
            event: Event = {"type": "response", "iteration": iteration, "stop_reason": stop_reason,
                            "content": content, "usage": response.get("usage"),
                            "seconds": time.perf_counter() - started}
            if watcher is not None:
                event["stream"] = watcher.summary()
            emit(event)
            calls = [b for b in content if b["type"] == "tool_use"]
            if content:
                history.append(assistant(content))
            text = text_of({"content": content})

            if stop_reason == "pause_turn" and not calls:  # a long server-side turn paused: send it back
                continue
            if stop_reason not in ("tool_use", "pause_turn"):
                stop, key, values = _stopped(stop_reason)
                why = say(key, **values)
                if calls:  # e.g. a tool call cut mid-arguments: never run it, but answer it
                    cut = stop_reason not in DONE
                    told = say(key, "en", **values)  # in English: the model reads it, as every tool result
                    history.append(user(_not_executed(calls, told + ("; the call was incomplete" if cut
                                                                     else "; the model ended its turn"))))
                    why += say("why_not_run_cut" if cut else "why_not_run", n=len(calls))
                return self.finish(stop, why, text)

            if not calls:
                return self.finish("unknown_stop_reason", say("why_no_block"), text)
            repeated = [b for b in calls if seen.get(call_signature(b), 0) >= self.max_repeats]
            if repeated:
                history.append(user(_not_executed(calls, "the same call was already made with the same arguments")))
                return self.finish("repeated_call", say("why_repeated", name=repeated[0]["name"],
                                                        n=self.max_repeats + 1))
            for b in calls:
                signature = call_signature(b)
                seen[signature] = seen.get(signature, 0) + 1
                emit({"type": "tool_call", "iteration": iteration, "id": b["id"], "name": b["name"],
                      "input": b.get("input", {})})

            def traced(block: dict, result: dict, seconds: float, iteration: int = iteration) -> None:
                emit({"type": "tool_result", "iteration": iteration, "id": block["id"], "name": block["name"],
                      "is_error": bool(result.get("is_error")), "content": result.get("content"), "seconds": seconds})

            if self.registry is None:
                results = _not_executed(calls, "no tools are available")
            else:
                # what a sub-agent of this round may spend: the same for each, whichever starts first
                self.tokens_left = None if self.token_budget is None else self.token_budget - usage.total_tokens
                results = yield ToolCalls(calls, traced, self.approve, emit)
            if self.policy is not None:
                try:
                    results = yield PolicyResults(results)
                except APIError as err:  # keep the results, unshortened: the history stays a valid conversation
                    history.append(user(results))
                    return self.failed(err, "why_policy_api", iteration)
            history.append(user(results))
            handoff = next((b for b, r in zip(calls, results) if b["name"] in self.handoff_tools
                            and not r.get("is_error")), None)
            if handoff is not None:  # another agent carries on from this history
                return self.finish("handoff", say("why_handoff", name=handoff["name"]), text)

    def finish(self, stop: str, reason: str, text: str = "", error: APIError | None = None) -> LoopResult:
        self.emit({"type": "stop", "stop": stop, "reason": reason})
        return LoopResult(stop, reason, text, self.history, self.iterations, self.usage, error)

    def failed(self, err: APIError, key: str, iteration: int, watcher: StreamWatcher | None = None) -> LoopResult:
        first_line = str(err).splitlines()[0]
        event: Event = {"type": "error", "iteration": iteration, "error": first_line}
        reason = say(key, error=first_line)  # key: why_api, or why_policy_api (a summary's call)
        if watcher is not None:  # a stream that broke (or never began): what of it had arrived
            event["stream"] = watcher.summary()
            if watcher.calls_seen:
                reason += say("why_broken_calls", n=watcher.calls_seen, done=watcher.done_calls)
        self.emit(event)
        return self.finish("api_error", reason, error=err)


# --- the drivers ------------------------------------------------------------------------------------


def run_loop(client: Any, messages: list[dict], **options: Any) -> LoopResult:
    """Run the agent loop from `messages` (ending with the user's turn) until it stops.

    `messages` is not modified; `result.messages` is the history with this run's turns
    appended. The options are `Loop`'s (tools, system, budgets, policy, callbacks), and
    anything else is a request field for every call (e.g. `tool_choice`).
    """
    if inspect.iscoroutinefunction(getattr(client, "create", None)):  # e.g. handoff() given AsyncAgents
        raise TypeError(f"run_loop needs a blocking client (Client, connect()); {type(client).__name__}.create "
                        "is a coroutine function: use arun_loop (AsyncAgent, ahandoff)")
    loop = Loop(messages, **options)
    loop.max_output = getattr(client, "max_tokens", None)

    def perform(effect: Effect) -> Any:
        if isinstance(effect, ModelCall):
            streaming = {"stream": True, "on_event": effect.watcher} if effect.watcher is not None else {}
            with tracing.model_span(client, loop.request, effect.messages, effect.watcher is not None) as span:
                response = client.create(effect.messages, **loop.request, **streaming)
                tracing.end_model(span, response, getattr(effect.watcher, "first_token", None))
                return response
        if isinstance(effect, ToolCalls):
            with _running(loop):
                return loop.registry.run_all(effect.calls, parallel=loop.parallel, on_result=effect.on_result,
                                             approve=effect.approve, on_approval=effect.on_approval)
        if isinstance(effect, PolicyView):
            return loop.policy.view(effect.history)
        return loop.policy.on_tool_results(effect.results)

    steps, outcome, error = loop.steps(), None, None
    try:
        while True:
            finished, effect = _advance(steps, outcome, error)
            if finished:
                return effect
            try:
                outcome, error = perform(effect), None
            except APIError as err:
                outcome, error = None, err
    finally:
        steps.close()


def _advance(steps: Generator[Effect, Any, LoopResult], outcome: Any, error: APIError | None) -> tuple[bool, Any]:
    """Resume the rules with the last effect's outcome (or its error, thrown in at the `yield`):
    (False, the next effect), or (True, the LoopResult) once they return."""
    try:
        return False, steps.throw(error) if error is not None else steps.send(outcome)
    except StopIteration as done:
        return True, done.value


def _stopped(stop_reason: Any) -> tuple[str, str, dict]:
    """(stop, the reason's message key, its values) for a response that ends the run."""
    if stop_reason in DONE:
        return stop_reason, "why_done", {}
    if stop_reason == "max_tokens":
        return "max_tokens", "why_cut", {}
    if stop_reason == "refusal":
        return "refusal", "why_refusal", {}
    return "unknown_stop_reason", "why_unknown", {"value": repr(stop_reason)}
