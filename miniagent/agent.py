"""The assembled agent: a client, tools, the loop, a context policy and a trace.

Everything hard already lives elsewhere: the call in `client.py`, the tools in
`tools.py`, the ReAct loop in `loop.py`, what to send in `context.py`. An agent
adds only what turns one run into a conversation:

- it keeps the history between questions (`run_loop` itself never mutates a list);
- a run that fails (an API error, a context policy's too, or Ctrl-C) leaves that
  history exactly as it was, so asking the same question again is a clean retry;
- every step goes into a `Trace`, and optionally to your `on_step` callback and to a
  round-by-round printout (`verbose=True`);
- streamed (`stream=True`), it passes the loop's `on_text` and `on_tool_use` callbacks
  through, and the printout shows the text as it arrives instead of after the answer.

Notebook 10 gives an agent a `name` and a `description`, so that another agent can
call it as a tool (`team.py`); `approve`, a callback asked before a tool that needs a
person's approval runs; and `tracer` (`tracing.py`): each run is then an
`invoke_agent` span around its model and tool spans.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any, Callable

from miniagent import tracing
from miniagent.client import Usage
from miniagent.clientcore import input_billed
from miniagent.loop import LoopResult, TextCallback, ToolUseCallback, needs_stream, run_loop
from miniagent.messages import user
from miniagent.tools import ToolRegistry
from miniagent.events import CACHED, Event, Trace
from miniagent.i18n import say

DEFAULT_SYSTEM = ("You are a helpful assistant. When a tool can answer part of the question, call it; "
                  "call independent tools together. Answer in the language of the question.")


class Agent:
    """A conversation with a tool-using model. `run()` one question at a time.

    `client` defaults to `connect()` and `tools` to `default_tools()`. `policy` (see
    `miniagent.context`) shortens what each call sends, never what the agent keeps.
    `max_iterations` and `token_budget` bound each run. `on_step(event)` sees every
    trace event as it is recorded; `verbose=True` prints each run round by round.
    `stream=True` streams every model call: `on_text(delta)` and `on_tool_use(call)`
    then see the answer as it arrives (see `run_loop`), and so does the printout.
    `name` and `description` say who it is when another agent calls it as a tool;
    `approve(call)` is asked before a tool with `needs_approval` runs (see
    `ToolRegistry.run_all`); `tracer` records each run as spans (see `tracing.py`).
    `create` holds extra request fields for every call (e.g. `tool_choice`).
    """

    def __init__(self, client: Any = None, tools: ToolRegistry | list | None = None, *,
                 system: str | list | None = DEFAULT_SYSTEM, policy: Any = None, max_iterations: int = 10,
                 token_budget: int | None = None, parallel: bool = True, verbose: bool = False,
                 on_step: Callable[[Event], None] | None = None, stream: bool = False,
                 on_text: TextCallback | None = None, on_tool_use: ToolUseCallback | None = None,
                 name: str = "assistant", description: str | None = None,
                 approve: Callable[[dict], Any] | None = None, tracer: "tracing.Tracer | None" = None,
                 create: dict | None = None) -> None:
        needs_stream(stream, on_text, on_tool_use)
        if client is None:
            from miniagent.client import connect  # here, so that passing a client never reads the environment
            client = connect()
        if tools is None:
            from miniagent.builtin_tools import default_tools
            tools = default_tools()
        if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) or max_iterations < 1:
            raise ValueError(f"max_iterations must be a positive integer, got {max_iterations!r}")
        self.client = client
        self.tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.system = system
        self.policy = policy
        self.max_iterations = max_iterations
        self.token_budget = token_budget
        self.parallel = parallel
        self.verbose = verbose
        self.on_step = on_step
        self.stream = stream
        self.on_text = on_text
        self.on_tool_use = on_tool_use
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"an agent's name is a non-empty string, got {name!r}")
        self.name, self.description = name, description
        self.approve, self.tracer = approve, tracer
        self.create = dict(create or {})
        self.history: list[dict] = []
        self.trace = Trace()
        self.usage = Usage()  # cumulative over the agent's life: tokens spent stay spent after reset()
        self.last_result: LoopResult | None = None

    def __repr__(self) -> str:
        named = f"name={self.name!r}, " if self.name != "assistant" else ""
        return (f"{type(self).__name__}({named}tools=[{', '.join(self.tools.names)}], "
                f"messages={len(self.history)}, max_iterations={self.max_iterations}, client={self.client!r})")

    def fork(self) -> "Agent":
        """A new conversation with the same settings: no history, trace or usage of this one's.

        A sub-agent runs each task in a fork, so tasks never see each other and several can
        run at once. The client, the tools and the context policy are shared, not copied.
        """
        clone = copy.copy(self)
        clone.history, clone.trace, clone.usage, clone.last_result = [], Trace(), Usage(), None
        clone.create = dict(self.create)
        return clone

    def loop_options(self, approve: Callable[[dict], Any] | None = None) -> dict:
        """This agent's settings as `Loop`'s options (its runs, and a hand-off to it, start from them)."""
        return dict(tools=self.tools or None, system=self.system, policy=self.policy,
                    max_iterations=self.max_iterations, token_budget=self.token_budget,
                    parallel=self.parallel, approve=approve or self.approve, **self.create)

    def run(self, question: str, *, stream: bool | None = None, on_text: TextCallback | None = None,
            on_tool_use: ToolUseCallback | None = None, on_step: Callable[[Event], None] | None = None,
            approve: Callable[[dict], Any] | None = None) -> LoopResult:
        """Ask one question; the model may call tools for several rounds before it answers.

        `stream` overrides the agent's setting for this run; `on_text`, `on_tool_use` and
        `on_step` are called for this run after the agent's own (a chat view or a web service
        uses them to show the answer as it arrives, without taking the agent's callbacks away).
        `approve` replaces the agent's approver for this run.
        """
        messages, options, printer = self._start(question, stream, on_text, on_tool_use, on_step, approve)
        with tracing.agent_span(self) as span:
            result = run_loop(self.client, messages, **options)
            tracing.end_agent(span, result)
        return self._end(result, printer)

    def _start(self, question: str, stream: bool | None, on_text: TextCallback | None,
               on_tool_use: ToolUseCallback | None, on_step: Callable[[Event], None] | None = None,
               approve: Callable[[dict], Any] | None = None) -> tuple[list[dict], dict, "RoundPrinter | None"]:
        """Everything before the loop runs: checks, callbacks, the trace's question; (messages, options, printer)."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"the question must be a non-empty string, got {question!r}")
        streamed = self.stream if stream is None else bool(stream)
        needs_stream(streamed, on_text, on_tool_use)
        printer = RoundPrinter(streamed=streamed) if self.verbose else None
        text_callbacks = [f for f in (printer and printer.text, self.on_text, on_text) if f is not None]
        tool_callbacks = [f for f in (self.on_tool_use, on_tool_use) if f is not None]
        step = _each([f for f in (printer, self.on_step, on_step) if f is not None])
        streaming: dict[str, Any] = {}
        if streamed:
            streaming = {"stream": True, "on_text": _each(text_callbacks), "on_tool_use": _each(tool_callbacks)}

        def on_event(event: Event) -> None:
            self._step(event, step)
            if event["type"] == "usage":  # a sub-agent's tokens, charged to this run
                self.usage.merge(Usage(event["input_tokens"], event["output_tokens"], event.get("calls", 0)))
            elif event["type"] == "response":
                usage = event.get("usage") or {}
                self.usage.add(usage)
                self._step({"type": "usage", "iteration": event.get("iteration"),  # input: cached included
                            "input_tokens": input_billed(usage), "output_tokens": usage.get("output_tokens", 0),
                            **{k: usage[k] for k in CACHED if usage.get(k)}}, step)

        self._step({"type": "question", "text": question}, step)
        options = dict(**self.loop_options(approve or self.approve), on_event=on_event, **streaming)
        return self.history + [user(question)], options, printer

    def _end(self, result: LoopResult, printer: "RoundPrinter | None") -> LoopResult:
        """After the loop: keep the history unless the run failed, print the ending."""
        if result.stop != "api_error":  # on an API error, keep the history as it was before the question
            self.history = result.messages
        self.last_result = result
        if printer:
            printer.finish(result)
        return result

    def chat(self, question: str) -> str:
        """`run()`, returning just the answer (and why, if the agent stopped early)."""
        return _answer_of(self.run(question))

    def reset(self) -> None:
        """Forget the conversation and the trace (the model itself never remembered anything)."""
        self.history = []
        self.trace.clear()
        self.last_result = None

    def _step(self, event: Event, step: Callable[[Event], None] | None) -> None:
        """Record the event in the trace, then show it to the printer and the on_step callbacks."""
        stamped = self.trace.record(event)
        if step is not None:
            step(stamped)


def _answer_of(result: LoopResult) -> str:
    """The answer, and why the agent stopped if it stopped early."""
    if result.ok:
        return result.text
    return (result.text + "\n\n" if result.text else "") + f"[stopped: {result.reason}]"


def _each(callbacks: list[Callable[[Any], None]]) -> Callable[[Any], None] | None:
    """One callback that calls each of `callbacks` in turn (None when there are none)."""
    if not callbacks:
        return None
    if len(callbacks) == 1:
        return callbacks[0]

    def call_each(value: Any) -> None:
        for callback in callbacks:
            callback(value)
    return call_each


# --- verbose output --------------------------------------------------------------------


def _preview(text: Any, limit: int = 100) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()  # a pipe is block-buffered: without this, "as it arrives" would be "at the end"


class RoundPrinter:
    """Prints a run round by round, like the article's sample output.

    Tools of one round run concurrently and finish in any order; the printer holds
    their results until the round's last one arrives, then prints each call with its
    result in the order the model asked, so the same run always prints the same way.

    `streamed=True`: the model's text is written as it arrives (`text(delta)`, through
    `write_fn`, after a "model: " label), in its round, and not again at the end; the
    answer is then the last text printed, so there is no "Final answer:" block.
    What it prints follows MINIAGENT_LANG (i18n.say): `--- 第 1 轮 ---`, `调用工具`, `最终答案` in Chinese.
    """

    def __init__(self, print_fn: Callable[[str], None] = print, *, streamed: bool = False,
                 write_fn: Callable[[str], None] | None = None) -> None:
        self.print = print_fn
        self.write = write_fn or _write_stdout
        self.streamed = streamed
        self.calls: list[Event] = []
        self.results: dict[str, Event] = {}
        self._line_open = False  # streamed text has been written, and its line not ended yet
        self._labelled = False   # this round's "model: " label is out

    def text(self, delta: str) -> None:
        """A piece of the model's text, written at once (streamed runs)."""
        if not self._labelled:
            self.write(say("model_says"))
            self._labelled = True
        self.write(delta)
        self._line_open = not delta.endswith("\n")

    def _end_line(self) -> None:
        if self._line_open:
            self.write("\n")
            self._line_open = False

    def __call__(self, event: Event) -> None:
        kind = event["type"]
        if kind in ("response", "error", "stop"):
            self._end_line()
        if kind == "request":
            self._flush()
            self._labelled = False
            self.print(say("round", n=event["iteration"]))
        elif kind == "response" and event.get("stop_reason") == "tool_use" and not self.streamed:
            text = "".join(b.get("text", "") for b in event.get("content") or [] if b.get("type") == "text")
            if text.strip():
                self.print(say("model_says") + _preview(text))
        elif kind == "tool_call":
            self.calls.append(event)
        elif kind == "tool_result":
            self.results[event["id"]] = event
            if len(self.results) >= len(self.calls):
                self._flush()

    def _flush(self) -> None:
        for call in self.calls:
            self.print(say("tool_call", call=f"{call['name']}({json.dumps(call.get('input', {}), ensure_ascii=False)})"))
            result = self.results.get(call["id"])
            if result is not None:
                key = "tool_error" if result.get("is_error") else "tool_result"
                self.print(say(key, text=_preview(result.get("content", ""))))
        self.calls, self.results = [], {}

    def finish(self, result: LoopResult) -> None:
        self._end_line()
        self._flush()
        if result.ok:
            if not self.streamed:  # streamed, the answer is already on screen, in its round
                self.print(say("final_answer", text=result.text))
        else:
            self.print(say("stopped", stop=result.stop, reason=result.reason))
            if result.text and not self.streamed:
                self.print(say("last_text", text=result.text))
