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

Streaming (`stream=True`) changes only how each answer arrives: the client assembles
the stream into the same message dict, so every rule above holds unchanged, while
`on_text` and `on_tool_use` show the answer forming (`StreamWatcher`). A stream that
breaks is an API error like any other: nothing of it enters the history, and a tool
call it cut short is never run.

Async (`arun_loop`) changes only who waits: the rules above are written once, in
`Loop.steps()`, a generator that yields each piece of I/O it needs; `run_loop` performs
them with plain calls and `arun_loop` with `await` (see "the decisions, once" below).

Notebook 10 adds three things a run can meet. A tool that needs a person's approval
runs only if `approve(call)` says so (`ToolRegistry.run_all`); each answer becomes an
`approval` event. A tool that is itself an agent (`team.py`) charges its tokens to the
run that called it (`current_run().charge(...)`), and its model calls draw on that run's
ledger (`Loop.ledger`, a `team.Ledger`), so one budget bounds a tree of agents in parallel.
And a tool named in `handoff_tools` ends the run once its result is in the history,
with `stop` "handoff": another agent takes the conversation from there.
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterator, Union

from miniagent import tracing
from miniagent.client import APIError, Usage
from miniagent.messages import assistant, storable_content, text_of, tool_result, tool_use_ids, user
from miniagent.tokens import estimate_request
from miniagent.tools import ToolRegistry

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


def call_signature(block: dict) -> str:
    """A tool call's identity for repeat detection: its name and canonical arguments."""
    return block["name"] + json.dumps(block.get("input", {}), sort_keys=True, ensure_ascii=False)


def _not_executed(blocks: list[dict], why: str) -> list[dict]:
    """Error results for calls the loop refuses to run, so the history stays valid."""
    return [tool_result(b["id"], f"Error: not executed: {why}", is_error=True) for b in blocks]


class StreamWatcher:
    """One streamed response's events in, the loop's streaming callbacks out.

    Given to `client.create(..., stream=True, on_event=watcher)`, it sees each event as
    it arrives, after the client has checked it (order, indexes, shapes). It calls
    `on_text(delta)` for each piece of text and `on_tool_use(call)` for each tool call:
    when its block starts (name and id known, `partial_json` ""), at each piece of its
    arguments (`partial_json` growing), and when its block stops (`done`, and `input`
    the parsed arguments, or None if they never became complete JSON). State is kept
    per block index, because the calls of one response stream one after another and
    their fragments must never be joined across calls.

    `done` means the call's arguments are complete, not that it will run: the stream
    can still break, or stop with `max_tokens`, and then the loop runs nothing. What
    runs is what the `tool_call` trace events say.

    It also times the response (`first_token`: seconds from the request to the first
    content delta; `first_text`: to the first text delta) and counts its events, for
    the `stream` summary the loop adds to the response's trace event: a few numbers per
    response, never an event per token.
    """

    def __init__(self, iteration: int, started: float, on_text: TextCallback | None = None,
                 on_tool_use: ToolUseCallback | None = None) -> None:
        self.iteration, self.started = iteration, started
        self.on_text, self.on_tool_use = on_text, on_tool_use
        self.events = 0
        self.first_token: float | None = None
        self.first_text: float | None = None
        self.calls: dict[int, dict] = {}  # block index -> {"id", "name", "input" (the start's), "parts"}
        self.done_calls = 0

    def __call__(self, event: dict) -> None:
        self.events += 1
        kind = event.get("type")
        if kind == "content_block_start":
            self._start(event["index"], event["content_block"])
        elif kind == "content_block_delta":
            self._delta(event["index"], event["delta"])
        elif kind == "content_block_stop" and event["index"] in self.calls:
            self._stop(event["index"])

    def _start(self, index: int, block: dict) -> None:
        if block.get("type") == "text" and block.get("text"):  # text may come with the start itself
            self._text(block["text"])
        elif block.get("type") == "tool_use":
            self.calls[index] = {"id": block.get("id"), "name": block.get("name"),
                                 "input": block.get("input"), "parts": []}
            self._tool_use(index, done=False)

    def _delta(self, index: int, delta: dict) -> None:
        if self.first_token is None:
            self.first_token = time.perf_counter() - self.started
        if delta.get("type") == "text_delta":
            self._text(delta["text"])
        elif delta.get("type") == "input_json_delta" and index in self.calls and delta["partial_json"]:
            self.calls[index]["parts"].append(delta["partial_json"])
            self._tool_use(index, done=False)

    def _stop(self, index: int) -> None:
        call = self.calls[index]
        text = "".join(call["parts"])
        if not text.strip():  # no arguments streamed: the input the block started with (a tool without any)
            arguments = copy.deepcopy(call["input"]) if isinstance(call["input"], dict) else None
        else:
            try:
                arguments = json.loads(text)
            except (ValueError, RecursionError):  # cut off mid-arguments: never a call to run
                arguments = None
        self.done_calls += 1
        self._tool_use(index, done=True, arguments=arguments if isinstance(arguments, dict) else None)

    def _text(self, delta: str) -> None:
        if self.first_text is None:
            self.first_text = time.perf_counter() - self.started
        if self.on_text is not None and delta:
            self.on_text(delta)

    def _tool_use(self, index: int, *, done: bool, arguments: dict | None = None) -> None:
        if self.on_tool_use is None:
            return
        call = self.calls[index]
        self.on_tool_use({"index": index, "id": call["id"], "name": call["name"],
                          "partial_json": "".join(call["parts"]), "done": done, "input": arguments,
                          "iteration": self.iteration})

    @property
    def calls_seen(self) -> int:
        """Tool calls this response had begun so far, complete or not."""
        return len(self.calls)

    def summary(self) -> dict:
        """What the trace keeps of a stream: its size and its first-token times, in seconds."""
        def rounded(seconds: float | None) -> float | None:
            return None if seconds is None else round(seconds, 6)
        return {"events": self.events, "first_token": rounded(self.first_token),
                "first_text": rounded(self.first_text)}


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
    """One run's settings and state; `steps()` is the run, as a generator of Effects."""

    def __init__(self, messages: list[dict], *, tools: ToolRegistry | list | None = None,
                 system: str | list | None = None, max_iterations: int = 10, token_budget: Any = None,
                 max_repeats: int = 2, parallel: bool = True, policy: Any = None,
                 on_event: Callable[[Event], None] | None = None, stream: bool = False,
                 on_text: TextCallback | None = None, on_tool_use: ToolUseCallback | None = None,
                 approve: Callable[[dict], Any] | None = None, handoff_tools: Any = (),
                 **create_kwargs: Any) -> None:
        if not stream and (on_text is not None or on_tool_use is not None):
            raise TypeError("on_text and on_tool_use are called as a streamed answer arrives: pass stream=True as well")
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
            self.usage.input_tokens += usage.input_tokens
            self.usage.output_tokens += usage.output_tokens
            self.usage.calls += usage.calls
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
                return self.finish("max_iterations", f"stopped after {self.iterations} model calls "
                                   f"(max_iterations={self.max_iterations})")
            if self.ledger is not None and (why := self.ledger.refusal()) is not None:  # not even a summary
                return self.finish("token_budget", f"stopped: {why}")
            if self.ledger is None and self.token_budget is not None and usage.total_tokens >= self.token_budget:
                return self.finish("token_budget", f"stopped: {usage.total_tokens:,} tokens used, "
                                   f"budget {self.token_budget:,}")
            try:
                view = (yield PolicyView(history)) if self.policy else history
            except APIError as err:  # e.g. Summarize's own model call: nothing was appended
                return self.failed(err, "the context policy's API call", self.iterations + 1)
            reservation = self.reservation(view)
            if self.ledger is not None and (why := self.ledger.admit(reservation)) is not None:
                return self.finish("token_budget", f"stopped: {why}")
            self.iterations += 1
            iteration = self.iterations
            emit({"type": "request", "iteration": iteration, "messages": len(history), "sent": len(view)})
            started = time.perf_counter()
            watcher = StreamWatcher(iteration, started, self.on_text, self.on_tool_use) if self.stream else None
            before = usage.total_tokens
            try:
                response = yield ModelCall(view, watcher)
                usage.add(response.get("usage") or {})
            except APIError as err:  # nothing was appended for this call: the history is as it was
                return self.failed(err, "the API call", iteration, watcher)
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
                stop, why = _stopped(stop_reason)
                if calls:  # e.g. a tool call cut mid-arguments: never run it, but answer it
                    cut = stop_reason not in DONE
                    history.append(user(_not_executed(calls, f"{why}; " + ("the call was incomplete" if cut
                                                                           else "the model ended its turn"))))
                    why += f"; {len(calls)} {'incomplete ' if cut else ''}tool call(s) were not executed"
                return self.finish(stop, why, text)

            if not calls:
                return self.finish("unknown_stop_reason",
                                   "stop_reason was tool_use but the response holds no tool_use block", text)
            repeated = [b for b in calls if seen.get(call_signature(b), 0) >= self.max_repeats]
            if repeated:
                history.append(user(_not_executed(calls, "the same call was already made with the same arguments")))
                return self.finish("repeated_call", f"the model asked for {repeated[0]['name']} with the same "
                                   f"arguments {self.max_repeats + 1} times; stopped instead of looping")
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
                    return self.failed(err, "the context policy's API call", iteration)
            history.append(user(results))
            handoff = next((b for b, r in zip(calls, results) if b["name"] in self.handoff_tools
                            and not r.get("is_error")), None)
            if handoff is not None:  # another agent carries on from this history
                return self.finish("handoff", f"handed off with {handoff['name']}", text)

    def finish(self, stop: str, reason: str, text: str = "", error: APIError | None = None) -> LoopResult:
        self.emit({"type": "stop", "stop": stop, "reason": reason})
        return LoopResult(stop, reason, text, self.history, self.iterations, self.usage, error)

    def failed(self, err: APIError, what: str, iteration: int, watcher: StreamWatcher | None = None) -> LoopResult:
        first_line = str(err).splitlines()[0]
        event: Event = {"type": "error", "iteration": iteration, "error": first_line}
        reason = f"{what} failed: {first_line}"
        if watcher is not None:  # a stream that broke (or never began): what of it had arrived
            event["stream"] = watcher.summary()
            if watcher.calls_seen:
                reason += (f"; {watcher.calls_seen} tool call(s) of the broken response were not executed "
                           f"({watcher.done_calls} of them complete)")
        self.emit(event)
        return self.finish("api_error", reason, error=err)


# --- the drivers ------------------------------------------------------------------------------------


def run_loop(client: Any, messages: list[dict], *, tools: ToolRegistry | list | None = None,
             system: str | list | None = None, max_iterations: int = 10, token_budget: Any = None,
             max_repeats: int = 2, parallel: bool = True, policy: Any = None,
             on_event: Callable[[Event], None] | None = None, stream: bool = False,
             on_text: TextCallback | None = None, on_tool_use: ToolUseCallback | None = None,
             approve: Callable[[dict], Any] | None = None, handoff_tools: Any = (),
             **create_kwargs: Any) -> LoopResult:
    """Run the agent loop from `messages` (ending with the user's turn) until it stops.

    `messages` is not modified; `result.messages` is the history with this run's turns
    appended. `policy` (see `miniagent.context`) chooses what part of the history each
    call sends and may shorten tool output before it enters the history; an APIError
    in either hook ends the run as `api_error`, like a failed call of the loop's own.
    `on_event` is called with a dict for every step (request, response, tool_call,
    tool_result, error, stop); a response event's `content` is the content as stored
    in the history (see `storable_content`; `client.last` has the raw response).

    `stream=True` streams each model call (`client.create(..., stream=True,
    on_event=...)`); the loop still works on the final message, so the run, its history
    and its budgets are what they would be unstreamed. Meanwhile `on_text(delta)` gets
    each piece of text as it arrives and `on_tool_use(call)` each tool call as it forms
    and when it is complete (see `StreamWatcher` for the dict). A response event then
    carries `stream`: `{"events", "first_token", "first_text"}` (seconds from the
    request). A stream that breaks (StreamError, or an `error` event's typed error)
    ends the run as `api_error`, nothing of it kept and none of its tool calls run.

    `approve(call)` is asked before a tool that needs approval runs (see
    `ToolRegistry.run_all`); `handoff_tools` names tools whose call ends the run with
    stop "handoff" (see `team.handoff`). `token_budget` is a number of tokens, or a ledger
    shared with other runs (`team.Ledger`: each sub-agent draws on its parent's), which
    must admit each call first. With a tracer active (`tracing.py`), each model
    call is a `chat` span and each tool call an `execute_tool` span.
    """
    if inspect.iscoroutinefunction(getattr(client, "create", None)):  # e.g. handoff() given AsyncAgents
        raise TypeError(f"run_loop needs a blocking client (Client, connect()); {type(client).__name__}.create "
                        "is a coroutine function: use arun_loop (AsyncAgent, ahandoff)")
    loop = Loop(messages, tools=tools, system=system, max_iterations=max_iterations, token_budget=token_budget,
                max_repeats=max_repeats, parallel=parallel, policy=policy, on_event=on_event, stream=stream,
                on_text=on_text, on_tool_use=on_tool_use, approve=approve, handoff_tools=handoff_tools,
                **create_kwargs)
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


def _stopped(stop_reason: Any) -> tuple[str, str]:
    """(stop, reason) for a response that ends the run."""
    if stop_reason in DONE:
        return stop_reason, "the model finished its answer"
    if stop_reason == "max_tokens":
        return "max_tokens", "the answer was cut off by max_tokens"
    if stop_reason == "refusal":
        return "refusal", "the model declined to answer"
    return "unknown_stop_reason", f"unexpected stop_reason {stop_reason!r}"
