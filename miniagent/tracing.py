"""Spans: what took how long, inside what.

The event trace (`events.py`) says what happened, in order. A span says when something
began and ended and what it was part of: an agent's run contains its model calls and
its tool calls, and a tool that is itself an agent contains that agent's run. That
nesting is what you need to find the slow step or the tokens a sub-agent spent.

    tracer = Tracer()
    agent = Agent(client, tools, tracer=tracer)   # or: with tracer: agent.run(...)
    agent.run("What is the weather in Paris?")
    print(tracer.tree())

Three places make spans, each around the wait it measures: `Agent.run` (one
`invoke_agent` span per run), the loop's drivers (one `chat` span per model call) and
the tool registry (one `execute_tool` span per call). They find the span they belong
in through a context variable, the way OpenTelemetry does: the registry copies the
caller's context into each tool's thread, so a sub-agent started inside a tool nests
under that tool's span, on any thread and in asyncio tasks. With no tracer active, each
of those places costs one context-variable lookup.

A span's attributes use the names of the OpenTelemetry semantic conventions for
generative AI (`gen_ai.operation.name`, `gen_ai.usage.input_tokens`, ...), so that
`miniagent.otel` can hand spans to any OpenTelemetry exporter unchanged. Message
contents (prompts, answers, tool arguments and results) are recorded only with
`Tracer(capture_content=True)`: by default a span holds sizes and counts, never what a
user said, and an error span only the error's type and a fixed description (`NOT_CAPTURED`):
an exception's text, a tool's error or an API's message, often quotes the user. API keys
are never recorded: no span holds a header, and text a span does hold passes through
`scrub`, which removes any key the process knows about.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from miniagent.i18n import chinese_font, clip, pad, say, width as columns
from miniagent.messages import safe_str
from miniagent.events import env_secrets, scrub  # the one rule for what is a secret (notebook 05's events.py)

KINDS = ("agent", "model", "tool")
_SPAN: ContextVar["Span | None"] = ContextVar("miniagent_span", default=None)
_TRACER: ContextVar["Tracer | None"] = ContextVar("miniagent_tracer", default=None)
CONTENT_CHARS = 4_000  # the longest text a captured-content attribute keeps
# An error's description without capture_content: its type, then this. Exceptions and API errors
# routinely quote what the user wrote (a city, a file name, a card number), so their text is content too.
NOT_CAPTURED = "details not recorded (Tracer(capture_content=True) records them)"
OTHER_ERROR = "_OTHER"  # the conventions' error.type when nothing names one


@dataclass
class Span:
    """One timed step. `start` and `end` are seconds since the tracer began."""

    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start: float
    start_ns: int
    end: float | None = None
    end_ns: int | None = None
    status: str = "unset"  # "ok" or "error" once finished
    error: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return 0.0 if self.end is None else self.end - self.start

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "trace_id": self.trace_id, "span_id": self.span_id,
                "parent_id": self.parent_id, "start": self.start, "end": self.end, "start_ns": self.start_ns,
                "end_ns": self.end_ns, "status": self.status, "error": self.error, "attributes": self.attributes}

    def __repr__(self) -> str:
        return f"Span({self.name!r}, {self.seconds * 1000:.1f} ms, {self.status})"


class Tracer:
    """Collects the spans of every run made while it is active, from any thread.

    `capture_content=True` records message contents too (see the module docstring).
    `on_end(span)` callbacks see each span as it finishes (`miniagent.otel.OTelSink`
    exports them to a collector). `seed` makes the ids repeatable (tests); `clock`
    (seconds) and `wall_ns` (Unix nanoseconds) can be replaced so that tests control time.
    """

    def __init__(self, *, capture_content: bool = False, on_end: Callable[[Span], Any] | list | None = None,
                 seed: int | None = None, clock: Callable[[], float] = time.perf_counter,
                 wall_ns: Callable[[], int] = time.time_ns) -> None:
        self.capture_content = capture_content
        self.on_end = [] if on_end is None else list(on_end) if isinstance(on_end, (list, tuple)) else [on_end]
        self.spans: list[Span] = []
        self._clock, self._t0, self._epoch_ns = clock, clock(), wall_ns()
        self._random = random.Random(seed) if seed is not None else None
        self._lock = threading.Lock()
        self._tokens: list = []
        self.on_end_errors, self.last_on_end_error = 0, None  # callbacks that raised (their spans are kept)

    # --- making spans ---------------------------------------------------------------------

    def _hex(self, nbytes: int) -> str:
        if self._random is not None:
            return f"{self._random.getrandbits(nbytes * 8):0{nbytes * 2}x}"
        return os.urandom(nbytes).hex()

    def _now(self) -> tuple[float, int]:
        offset = self._clock() - self._t0
        return round(offset, 6), self._epoch_ns + int(offset * 1e9)

    def start(self, name: str, kind: str, attributes: dict | None = None, parent: Span | None = None) -> Span:
        """Begin a span (a child of `parent`, or the root of a new trace)."""
        if kind not in KINDS:
            raise ValueError(f"a span's kind is one of {', '.join(KINDS)}, got {kind!r}")
        with self._lock:
            start, start_ns = self._now()
            trace_id = parent.trace_id if parent is not None else self._hex(16)
            span = Span(scrub(name), kind, trace_id, self._hex(8), parent.span_id if parent is not None else None,
                        start, start_ns, attributes=_scrubbed(attributes or {}))
            self.spans.append(span)
        return span

    def finish(self, span: Span, error: BaseException | str | None = None, **attributes: Any) -> Span:
        """End a span, `ok` or (with `error`) `error`; extra attributes are added first."""
        span.attributes.update(_scrubbed(attributes))
        if error is not None:
            span.status = "error"
            if not isinstance(error, str):
                span.attributes.setdefault("error.type", type(error).__name__)
            span.error = scrub(self._described(span, error))
        elif span.status == "unset":
            span.status = "ok"
        span.end, span.end_ns = self._now()
        for callback in self.on_end:
            try:
                callback(span)
            except Exception as exc:  # noqa: BLE001 - a broken exporter (a collector down) never breaks the run
                with self._lock:
                    self.on_end_errors += 1
                    self.last_on_end_error = scrub(_error_text(exc))
        return span

    def _described(self, span: Span, error: BaseException | str) -> str:
        """The error as the span keeps it: its text with capture_content; else only its type (the
        exception's class, or the `error.type` the caller gave with a text) and NOT_CAPTURED."""
        if self.capture_content:
            return error if isinstance(error, str) else _error_text(error)
        kind = span.attributes.setdefault("error.type", OTHER_ERROR)
        return f"{kind if isinstance(kind, str) else OTHER_ERROR}: {NOT_CAPTURED}"

    def __enter__(self) -> "Tracer":
        """`with tracer:` traces every agent run inside the block (in this thread and what it starts)."""
        self._tokens.append(_TRACER.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _TRACER.reset(self._tokens.pop())

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()

    def __len__(self) -> int:
        return len(self.spans)

    def __bool__(self) -> bool:  # a tracer with no spans yet is still a tracer (`active_tracer() or ...`)
        return True

    def __repr__(self) -> str:
        return f"Tracer({len(self.spans)} spans)"

    # --- reading -------------------------------------------------------------------------------

    def children(self, span: Span | None) -> list[Span]:
        """The spans directly inside `span` (None: the roots), in the order they began."""
        parent = None if span is None else span.span_id
        ids = {s.span_id for s in self.spans}
        return [s for s in self.spans if s.parent_id == parent or parent is None and s.parent_id not in ids]

    def walk(self) -> Iterator[tuple[int, Span]]:
        """(depth, span) for every span, each followed by what it contains."""
        return self._descend(self.children(None))

    def _descend(self, tops: list[Span]) -> Iterator[tuple[int, Span]]:
        """`tops` and what each contains, depth first, without recursion and each span once: a file read
        back may hold thousands of nested spans, a span that is its own parent, or repeated ids."""
        inside: dict[str, list[Span]] = {}
        for s in list(self.spans):
            if s.parent_id is not None:
                inside.setdefault(s.parent_id, []).append(s)
        seen: set[int] = set()
        stack = [(0, top) for top in reversed(tops)]
        while stack:
            depth, span = stack.pop()
            if id(span) in seen:
                continue
            seen.add(id(span))
            yield depth, span
            stack.extend((depth + 1, child) for child in reversed(inside.get(span.span_id, [])))

    def of_kind(self, kind: str) -> list[Span]:
        return [s for s in self.spans if s.kind == kind]

    def summary(self) -> dict[str, Any]:
        """Counts, tokens (model calls only, so nothing is counted twice), errors and wall time."""
        models = self.of_kind("model")
        tokens_in = sum(_count(s.attributes.get("gen_ai.usage.input_tokens")) for s in models)
        tokens_out = sum(_count(s.attributes.get("gen_ai.usage.output_tokens")) for s in models)
        ends = [s.end for s in self.spans if s.end is not None]
        return {"agent_runs": len(self.of_kind("agent")), "model_calls": len(models),
                "tool_calls": len(self.of_kind("tool")), "errors": sum(s.status == "error" for s in self.spans),
                "input_tokens": tokens_in, "output_tokens": tokens_out,
                "wall_seconds": round(max(ends) - min(s.start for s in self.spans), 6) if ends else 0.0}

    def tree(self, width: int = 100) -> str:
        """Every span as an indented line: name, duration, status, and what it did."""
        lines = []
        for depth, span in self.walk():
            label = clip("  " * depth + _printable(span.name), 44)
            status = "ok" if span.status == "ok" else _printable(span.status.upper())
            line = f"{pad(label, 44)} {span.seconds * 1000:>8.1f} ms  {status:<5} {_printable(_detail(span))}".rstrip()
            lines.append(line if columns(line) <= width else clip(line, width - 1) + "…")  # CJK: 2 columns each
        return "\n".join(lines)

    def table(self, width: int = 100) -> str:
        return self.tree(width)

    def slowest(self, kind: str | None = None, n: int = 3) -> list[Span]:
        """The `n` longest spans (of one kind, if given), longest first."""
        pool = [s for s in self.spans if s.end is not None and (kind is None or s.kind == kind)]
        return sorted(pool, key=lambda s: -s.seconds)[:n]

    def cost(self, span: Span | None = None) -> float | None:
        """US dollars spent by `span` and everything inside it (None: the whole tracer), from `prices.py`.

        Only model calls cost money; a model with no known price makes the sum None
        (unknown), never a guess.
        """
        from miniagent.prices import cost  # the dated price table

        inside = self.spans if span is None else [s for _, s in self._subtree(span)]
        total = 0.0
        for s in inside:
            if s.kind != "model":
                continue
            a = s.attributes
            cached = a.get("gen_ai.usage.cache_read.input_tokens", 0) + a.get("gen_ai.usage.cache_creation.input_tokens", 0)
            spent = cost(a.get("gen_ai.response.model") or a.get("gen_ai.request.model", ""), {
                "input_tokens": a.get("gen_ai.usage.input_tokens", 0) - cached,  # the conventions' count includes them
                "output_tokens": a.get("gen_ai.usage.output_tokens", 0),
                "cache_read_input_tokens": a.get("gen_ai.usage.cache_read.input_tokens", 0),
                "cache_creation_input_tokens": a.get("gen_ai.usage.cache_creation.input_tokens", 0)})
            if spent is None:
                return None
            total += spent
        return total

    def _subtree(self, span: Span) -> Iterator[tuple[int, Span]]:
        return self._descend([span])

    def timeline(self, ax: Any = None, title: str | None = None) -> Any:
        """A Gantt chart of the spans: one bar per span, indented like `tree()`, coloured by kind.

        Parallel tool calls show as bars that overlap in time; a sub-agent's bars sit
        inside its tool's bar. Returns the matplotlib Figure (imported only here).
        """
        import matplotlib.pyplot as plt

        rows = list(self.walk())
        if ax is None:
            _, ax = plt.subplots(figsize=(9, 0.32 * len(rows) + 1.2))
        colours = {"agent": "#8c6bb1", "model": "#4c72b0", "tool": "#55a868"}
        for y, (depth, span) in enumerate(rows):
            end = span.end if span.end is not None else span.start
            ax.barh(y, max((end - span.start) * 1000, 0.05), left=span.start * 1000, height=0.6,
                    color=colours[span.kind], edgecolor="#c44e52" if span.status == "error" else "none",
                    linewidth=2)
        ax.set_yticks(range(len(rows)), ["  " * d + s.name for d, s in rows], fontsize=8, family="monospace")
        ax.invert_yaxis()
        chinese = chinese_font()  # under MINIAGENT_LANG=zh with a font that has Chinese (else English, not empty boxes)
        ax.set_xlabel(say("timeline_x") if chinese else "milliseconds since the tracer began", fontfamily=chinese or None)
        ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()],
                  labels=list(colours), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)  # never over a bar
        ax.set_title(title or (say("timeline_title", n=len(rows)) if chinese else f"{len(rows)} spans"), fontfamily=chinese or None)
        ax.figure.tight_layout()
        return ax.figure

    # --- saving and loading -------------------------------------------------------------------

    def to_jsonl(self, path: str | Path) -> Path:
        """One span per line (JSON Lines), in the order they began."""
        path = Path(path)
        lines = [json.dumps(s.to_dict(), ensure_ascii=False, default=safe_str) for s in list(self.spans)]
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return path

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "Tracer":
        """Read spans written by `to_jsonl`; a line that is not one raises ValueError naming the line."""
        tracer = cls()
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: cannot read the span file ({safe_str(exc)})") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                tracer.spans.append(span_from_dict(json.loads(line)))
            except (ValueError, RecursionError, TypeError) as exc:
                raise ValueError(f"{path}, line {n}: not a span ({safe_str(exc)[:120]})") from None
        return tracer


def span_from_dict(data: Any) -> Span:
    """A Span from `Span.to_dict()`'s form, checked: a file read back must not break `tree()` later."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    for key in ("name", "kind", "trace_id", "span_id", "status"):
        if not isinstance(data.get(key), str):
            raise ValueError(f"{key!r} must be a string")
    if data["kind"] not in KINDS:
        raise ValueError(f"'kind' must be one of {', '.join(KINDS)}")
    for key in ("start", "end"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise ValueError(f"{key!r} must be a finite number of seconds")
    if data.get("start") is None or not isinstance(data.get("attributes", {}), dict):
        raise ValueError("'start' is required and 'attributes' must be an object")
    if data.get("parent_id") is not None and not isinstance(data["parent_id"], str):
        raise ValueError("'parent_id' must be a string or null")
    for key in ("start_ns", "end_ns"):  # an exporter hands these on as they are
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{key!r} must be a whole number of nanoseconds or null")
    if data.get("error") is not None and not isinstance(data["error"], str):
        raise ValueError("'error' must be a string or null")
    return Span(data["name"], data["kind"], data["trace_id"], data["span_id"], data.get("parent_id"),
                data["start"], int(data.get("start_ns") or 0), data.get("end"), data.get("end_ns"),
                data["status"], data.get("error"), dict(data.get("attributes") or {}))


# --- the current span -----------------------------------------------------------------------------


def current_span() -> Span | None:
    return _SPAN.get()


def active_tracer() -> Tracer | None:
    """The tracer new spans go to: the current span's, else the one a `with tracer:` block set."""
    span = _SPAN.get()
    return getattr(span, "_tracer", None) or _TRACER.get()


@contextmanager
def span(name: str, kind: str, attributes: dict | Callable[[], dict] | None = None,
         tracer: Tracer | None = None) -> Iterator[Span | None]:
    """A span around the block, current inside it; yields None (and costs nothing) when no tracer is active.

    `attributes` may be a function that makes them, called only when there is a span to hold them.

    The block may `finish` the span itself (with the attributes only known at the end); an
    exception that leaves the block finishes it as an error and goes on.
    """
    tracer = active_tracer() or tracer
    if tracer is None:
        yield None
        return
    opened = open_span(tracer, name, kind, attributes() if callable(attributes) else attributes)
    token = _SPAN.set(opened)
    try:
        yield opened
    except BaseException as exc:
        if opened.end is None:
            tracer.finish(opened, exc)
        raise
    finally:
        _SPAN.reset(token)
    if opened.end is None:
        tracer.finish(opened)


def open_span(tracer: Tracer, name: str, kind: str, attributes: dict | None = None) -> Span:
    """A span begun under the current one, not yet current (`activate` makes it so, in any thread)."""
    opened = tracer.start(name, kind, attributes, parent=_SPAN.get())
    opened._tracer = tracer  # type: ignore[attr-defined]  # so code running inside it finds the tracer
    return opened


def activate(opened: Span | None) -> None:
    """Make `opened` the current span of this context (used inside `contextvars.Context.run`)."""
    if opened is not None:
        _SPAN.set(opened)


def finish(opened: Span | None, error: BaseException | str | None = None, **attributes: Any) -> None:
    """`Tracer.finish` for a span that may be None (no tracer active): then nothing happens."""
    if opened is not None and opened.end is None:
        opened._tracer.finish(opened, error, **attributes)  # type: ignore[attr-defined]


# --- the attributes: OpenTelemetry's GenAI semantic conventions --------------------------------------


def capturing() -> bool:
    tracer = active_tracer()
    return bool(tracer and tracer.capture_content)


def provider_name(client: Any) -> str:
    """The provider as the conventions name it: a preset's company ("qwen-cn" and "deepseek-anthropic"
    are Qwen and DeepSeek, whatever the region or the wire format)."""
    preset = getattr(client, "provider", None) or "anthropic"
    return re.sub(r"-(?:cn|anthropic)$", "", preset)


def model_attributes(client: Any, request: dict, messages: list[dict], stream: bool = False) -> dict[str, Any]:
    """What is known before a model call: the operation, the provider, the model, the limits, the server."""
    model = request.get("model") or getattr(client, "model", None) or "unknown"
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_name(client),
                                  "gen_ai.request.model": model,
                                  "miniagent.request.messages": len(messages)}
    max_tokens = request.get("max_tokens") or getattr(client, "max_tokens", None)
    if max_tokens:
        attributes["gen_ai.request.max_tokens"] = max_tokens
    if stream:
        attributes["gen_ai.request.stream"] = True
    address, port = _server(getattr(client, "base_url", ""))
    if address:
        attributes["server.address"], attributes["server.port"] = address, port
    if capturing():
        attributes["gen_ai.input.messages"] = _content(genai_messages(messages))
        if request.get("system"):
            system = request["system"]
            parts = [{"type": "text", "content": system}] if isinstance(system, str) else \
                [{"type": "text", "content": b.get("text", "")} for b in system if isinstance(b, dict)]
            attributes["gen_ai.system_instructions"] = _content(parts)
    return attributes


def genai_messages(messages: list[dict], finish_reason: str | None = None) -> list[dict]:
    """Messages in the conventions' own shape: {"role", "parts": [...]}, tool results under role "tool"."""
    out = []
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        parts, results = [], []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text":
                parts.append({"type": "text", "content": b.get("text", "")})
            elif b.get("type") == "tool_use":
                parts.append({"type": "tool_call", "id": b.get("id"), "name": b.get("name"),
                              "arguments": b.get("input")})
            elif b.get("type") == "tool_result":
                results.append({"type": "tool_call_response", "id": b.get("tool_use_id"), "result": b.get("content")})
        if parts:
            out.append({"role": message.get("role"), "parts": parts})
        if results:
            out.append({"role": "tool", "parts": results})
    if finish_reason is not None:
        for message in out:
            message["finish_reason"] = finish_reason
    return out


def response_attributes(response: dict) -> dict[str, Any]:
    """What a model call returned: its id, model, why it stopped, and the tokens it used."""
    usage = response.get("usage") or {}
    cached = _count(usage.get("cache_read_input_tokens")) + _count(usage.get("cache_creation_input_tokens"))
    attributes: dict[str, Any] = {"gen_ai.response.id": safe_str(response.get("id", "")),
                                  "gen_ai.response.model": safe_str(response.get("model", "")),
                                  # the conventions count every input token, cached or not (Anthropic's
                                  # input_tokens leaves the cached ones out)
                                  "gen_ai.usage.input_tokens": _count(usage.get("input_tokens")) + cached,
                                  "gen_ai.usage.output_tokens": _count(usage.get("output_tokens"))}
    if response.get("stop_reason") is not None:
        attributes["gen_ai.response.finish_reasons"] = [safe_str(response["stop_reason"])]
    for ours, theirs in (("cache_read_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
                         ("cache_creation_input_tokens", "gen_ai.usage.cache_creation.input_tokens")):
        if usage.get(ours):
            attributes[theirs] = _count(usage[ours])
    if capturing():
        attributes["gen_ai.output.messages"] = _content(genai_messages(
            [{"role": "assistant", "content": response.get("content")}], safe_str(response.get("stop_reason"))))
    return attributes


def tool_attributes(block: dict, description: str | None = None) -> dict[str, Any]:
    """A tool call about to run: which tool, which call, how big its arguments are."""
    arguments = json.dumps(block.get("input", {}), ensure_ascii=False, default=safe_str)
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": safe_str(block.get("name")),
                                  "gen_ai.tool.call.id": safe_str(block.get("id")), "gen_ai.tool.type": "function",
                                  "miniagent.tool.input_chars": len(arguments)}
    if description:
        attributes["gen_ai.tool.description"] = description
    if capturing():
        attributes["gen_ai.tool.call.arguments"] = _clip(scrub(arguments))
    return attributes


def end_tool(opened: Span | None, result: dict) -> None:
    """Finish a tool's span from its tool_result: an error result is an error span."""
    if opened is None:
        return
    content = result.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=safe_str)
    attributes: dict[str, Any] = {"miniagent.tool.output_chars": len(text)}
    if opened._tracer.capture_content:  # type: ignore[attr-defined]
        attributes["gen_ai.tool.call.result"] = _clip(scrub(text))
    error = None
    if result.get("is_error"):
        error = text.splitlines()[0][:200] if text else "error"
        attributes["error.type"] = "tool_error"
    finish(opened, error, **attributes)


# --- the hooks the core calls (loop.py, tools.py, agent.py): plain values in, a span or None out ---------


def model_span(client: Any, request: dict, messages: list[dict], stream: bool = False) -> Any:
    """The `chat` span around one model call (a no-op without an active tracer)."""
    if active_tracer() is None:
        return span("", "model")  # yields None at once
    attributes = model_attributes(client, request, messages, stream=stream)
    return span(f"chat {attributes['gen_ai.request.model']}", "model", attributes)


def end_model(opened: Span | None, response: dict, first_token: float | None = None) -> None:
    """Finish a model call's span from its response (and, streamed, the seconds to its first chunk)."""
    if opened is None:  # no tracer, no work
        return
    attributes = response_attributes(response)
    if first_token is not None:
        attributes["gen_ai.response.time_to_first_chunk"] = round(first_token, 6)
    finish(opened, **attributes)


def tool_spans(tool_uses: list[dict], describe: Callable[[Any], str | None]) -> list[Span | None]:
    """An `execute_tool` span per call when a tracer is active (else None each), opened in call order,
    so that a trace reads in call order; `activate` makes each current in its call's context.
    `describe(name)` is the tool's description, or None."""
    tracer = active_tracer()
    if tracer is None:
        return [None] * len(tool_uses)
    return [open_span(tracer, f"execute_tool {safe_str(b.get('name'))}", "tool",
                      tool_attributes(b, describe(b.get("name")))) for b in tool_uses]


def agent_attributes(agent: Any) -> dict[str, Any]:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.name,
                  "gen_ai.provider.name": provider_name(agent.client),
                  "gen_ai.request.model": getattr(agent.client, "model", None) or "unknown"}
    if agent.description:
        attributes["gen_ai.agent.description"] = agent.description
    return attributes


def agent_span(agent: Any) -> Any:
    """The `invoke_agent` span around one run of `agent` (Agent.run, and each agent of a hand-off)."""
    return span(f"invoke_agent {agent.name}", "agent", lambda: agent_attributes(agent), tracer=agent.tracer)


def end_agent(opened: Span | None, result: Any) -> None:
    """Finish a run's span: its tokens (sub-agents' included) and why it stopped."""
    if opened is None:
        return
    usage = result.usage
    attributes = {"gen_ai.usage.input_tokens": usage.input_tokens, "gen_ai.usage.output_tokens": usage.output_tokens,
                  "miniagent.stop": result.stop}
    error = None
    if not (result.ok or result.stop == "handoff"):
        error = f"{result.stop}: {result.reason}"  # the reason may quote an API error: content
        attributes["error.type"] = result.stop
    finish(opened, error, **attributes)


# --- secrets and sizes -----------------------------------------------------------------------------


def _scrubbed(attributes: dict) -> dict:
    """The attributes with `scrub` applied to every text value: a tool name or a call id is the
    model's text too, and a model repeats whatever key it was shown."""
    secrets = env_secrets()
    return {k: scrub(v, secrets) if isinstance(v, str) else [scrub(x, secrets) if isinstance(x, str) else x for x in v]
            if isinstance(v, list) else v for k, v in attributes.items()}


def _error_text(error: BaseException) -> str:
    message = safe_str(error).splitlines()[0] if safe_str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _content(value: Any) -> str:
    return _clip(scrub(json.dumps(value, ensure_ascii=False, default=safe_str)))


def _clip(text: str) -> str:
    return text if len(text) <= CONTENT_CHARS else text[: CONTENT_CHARS - 1] + "…"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _server(base_url: str) -> tuple[str, int]:
    """(host, port) of a base URL; the port the scheme implies when the URL names none."""
    match = re.match(r"^([a-z]+)://([^/:]+)(?::(\d+))?", base_url or "")
    if not match:
        return "", 0
    return match.group(2), int(match.group(3)) if match.group(3) else (443 if match.group(1) == "https" else 80)


def _printable(text: str) -> str:
    """One line a terminal shows as it is: a tool name or an error is the model's text, and may hold a
    newline (a fake line) or an escape sequence (that drives the terminal)."""
    return _UNPRINTABLE.sub(" ", text)


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _detail(span: Span) -> str:
    a = span.attributes  # read back from a file, any of these may be any JSON value
    tokens = {key: f"{_count(a.get(f'gen_ai.usage.{key}_tokens')):,}" for key in ("input", "output")}
    if span.kind == "model":
        reasons = a.get("gen_ai.response.finish_reasons")
        reasons = ",".join(map(safe_str, reasons)) if isinstance(reasons, list) else safe_str(reasons or "")
        return say("span_model", reasons=reasons or "-", **tokens)
    if span.kind == "tool":
        text = say("span_tool", input=a.get("miniagent.tool.input_chars", 0), output=a.get("miniagent.tool.output_chars", 0))
        return text + (say("span_error", error=span.error) if span.error else "")
    if span.kind == "agent":
        return say("span_agent", **tokens) + (say("span_stop", stop=a["miniagent.stop"]) if "miniagent.stop" in a else "")
    return ""
