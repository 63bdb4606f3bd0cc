"""A run's events, in order: every step the agent took, as plain dicts you can print, save and reload.

(Notebook 05's `Trace`. Not to be confused with notebook 11's `tracing.py`, whose spans say
when each step began and ended, and which step it was part of.)

When an agent misbehaves in production, the question is always "what did it see and
what did it do?". The loop already announces each step through `on_event` (request,
response, tool_call, tool_result, error, stop); the agent adds `question` and `usage`.
A `Trace` stamps each event with the wall-clock time (`t`, ISO-8601 UTC) and the
seconds since the first event (`elapsed`), keeps them in order, and writes them as
JSON Lines: one object per line, the format log shippers and `jq` read.

Events hold only what the loop put in them: messages, tool inputs and outputs, token
counts. The client keeps its key to itself; a key that reaches an event anyway (a tool
that prints its configuration) stays in memory as it came, but `to_jsonl` writes it as
<redacted>, by the rule at the end of this module (`tracing.py` applies it to spans).

A trace is read long after it was written, by code that trusts it: every event it
holds (recorded or loaded) is one that `summary()`, `table()` and a later `record()`
can use, and `to_jsonl` writes any event content as a file `from_jsonl` reads back.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from miniagent.i18n import say
from miniagent.messages import SURROGATE, safe_str

Event = dict[str, Any]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Trace:
    """An ordered list of event dicts, each stamped with `t` and `elapsed`.

    `clock` (seconds, monotonic) and `now` (an aware datetime) are parameters so that
    tests can control time instead of sleeping.
    """

    def __init__(self, events: list[Event] | None = None, *, clock: Callable[[], float] = time.monotonic,
                 now: Callable[[], datetime] = _utc_now) -> None:
        self.events: list[Event] = list(events or [])
        self._clock = clock
        self._now = now
        self._start: float | None = None

    def record(self, event: Event) -> Event:
        """Store a copy of `event` stamped with `t` and `elapsed` (replacing any it had); return the copy."""
        problem = event_problem(event)
        if problem:
            raise ValueError(f"{problem}, got {safe_str(event):.80}")
        tick = self._clock()
        if self._start is None:  # the clock starts with the first event (a loaded trace: where it ended)
            self._start = tick - (self.events[-1].get("elapsed", 0.0) if self.events else 0.0)
        stamped = {"type": event["type"], "t": self._now().isoformat(timespec="milliseconds"),
                   "elapsed": round(tick - self._start, 6)}
        stamped.update((k, v) for k, v in event.items() if k not in ("type", "t", "elapsed"))
        self.events.append(stamped)
        return stamped

    def clear(self) -> None:
        self.events.clear()
        self._start = None

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.events)

    def __getitem__(self, index: int) -> Event:
        return self.events[index]

    def __repr__(self) -> str:
        return f"Trace({len(self.events)} events)"

    # --- saving and loading ---------------------------------------------------------

    def to_jsonl(self, path: str | Path) -> Path:
        """Write one JSON object per line, in UTF-8; returns the path.

        Whatever an event holds, the line is standard JSON: a value JSON cannot carry
        (an object, NaN, a circular list) is written as its text, and a lone surrogate as
        its `\\udXXX` escape (UTF-8 cannot encode it raw), so `from_jsonl` reads it back.
        """
        path = Path(path)
        lines = [_json_line(event) for event in self.events]  # before opening: a failure truncates nothing
        with path.open("w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)
        return path

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "Trace":
        """Read a trace written by `to_jsonl` (blank lines are skipped).

        A file it cannot use raises ValueError naming the file and the line, here rather
        than as a TypeError deep inside `summary()` or `table()` later.
        """
        events = []
        for n, raw in enumerate(_read(Path(path)).split(b"\n"), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}, line {n}: not UTF-8 text (byte {exc.start + 1} of the line); "
                                 "a trace file is UTF-8 JSON Lines") from None
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, an int too long, nesting too deep
                raise ValueError(f"{path}, line {n}: not JSON ({getattr(exc, 'msg', exc)}); "
                                 "expected one event object per line") from None
            problem = _loaded_problem(event)
            if problem:
                raise ValueError(f"{path}, line {n}: {problem}, got {line[:80]!r}")
            events.append(event)
        return cls(events)

    # --- reading ----------------------------------------------------------------------

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e["type"] == kind]

    def summary(self) -> dict[str, Any]:
        """The numbers to look at first: model calls, tool calls, failures, tokens, wall time."""
        usage = self.of_type("usage")
        tokens_in = sum(e.get("input_tokens", 0) for e in usage)  # cached input included (clientcore.input_billed)
        tokens_out = sum(e.get("output_tokens", 0) for e in usage)
        cached = {key: sum(e.get(key, 0) for e in usage) for key in CACHED}
        return {
            "model_calls": len(self.of_type("request")),
            "tool_calls": len(self.of_type("tool_call")),
            "tool_errors": sum(1 for e in self.of_type("tool_result") if e.get("is_error")),
            "api_errors": len(self.of_type("error")),
            "input_tokens": tokens_in,
            **{key: count for key, count in cached.items() if count},  # the part of input_tokens that was cached
            "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
            "wall_seconds": self.events[-1].get("elapsed", 0.0) if self.events else 0.0,
        }

    def rows(self, width: int = 70) -> list[tuple[int, float, str, str]]:
        """(number, elapsed, type, one-line description) per event, in reading order.

        Tool calls of one round run concurrently, so their results arrive in whatever
        order the tools finish. For reading, each burst of results is listed in the
        order of the calls; `elapsed` still says when each one really arrived.
        """
        return [(n, event.get("elapsed", 0.0), event["type"], _clip(describe(event), width))
                for n, event in enumerate(_reading_order(self.events), 1)]

    def table(self, width: int = 70) -> str:
        """The events as a plain-text table, one line each (see `rows`)."""
        lines = [say("trace_head")]  # f"{'#':>3}  {'elapsed':>9}  {'type':<11}  what", in the learner's language
        lines += [f"{n:>3}  {elapsed:>7.3f} s  {kind:<11}  {what}" for n, elapsed, kind, what in self.rows(width)]
        return "\n".join(lines)


# A usage event's input_tokens counts every input token; these say how many of them the prompt cache
# served (read) or stored (written), when any were.
CACHED = ("cache_read_input_tokens", "cache_creation_input_tokens")


# --- what a trace may hold ------------------------------------------------------------


def event_problem(event: Any) -> str | None:
    """Why `event` cannot go into a trace (summary, table or record would fail on it), or None."""
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return "an event is a dict with a string 'type'"
    if event["type"] == "usage":
        for key in ("input_tokens", "output_tokens", *CACHED):
            count = event.get(key, 0)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                return f"a usage event's {key!r} must be a whole number >= 0"
    if event["type"] in ("tool_call", "tool_result") and not isinstance(event.get("id", ""), str):
        return f"a {event['type']} event's 'id' must be a string"
    return None


def _loaded_problem(event: Any) -> str | None:
    """event_problem, plus the stamps `record` adds: the table prints them, record counts on from `elapsed`."""
    if not isinstance(event, dict) or "type" not in event:
        return "expected an object with a 'type'"
    problem = event_problem(event)
    if problem:
        return problem
    if not isinstance(event.get("t", ""), str):
        return "'t' must be the time as an ISO-8601 string"
    elapsed = event.get("elapsed", 0.0)
    if isinstance(elapsed, bool) or not isinstance(elapsed, (int, float)) or not math.isfinite(elapsed):
        return "'elapsed' must be a finite number of seconds"
    return None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a folder, not a trace file") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the trace file ({exc.strerror or exc})") from None


_JSON = {"ensure_ascii": False, "allow_nan": False, "default": safe_str}


def _json_line(event: Event) -> str:
    """One event as a line of standard JSON, whatever it holds, with any API key the environment
    holds redacted (a tool that prints its configuration must not put a key in a file)."""
    try:
        line = json.dumps(event, **_JSON)
    except (TypeError, ValueError, RecursionError):  # circular, NaN, a key JSON cannot have, a huge int
        line = json.dumps({safe_str(k): _jsonable(v) for k, v in event.items()}, **_JSON)
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", _redacted(line))


def _redacted(line: str) -> str:
    """The line with each secret of the environment (`env_secrets`) replaced, as JSON text."""
    for secret in env_secrets():
        encoded = json.dumps(secret, ensure_ascii=False)[1:-1]  # as the secret appears inside a JSON string
        line = line.replace(encoded, "<redacted>")
    return line


def _jsonable(value: Any) -> Any:
    """`value` if JSON can carry it, else its text."""
    try:
        json.dumps(value, **_JSON)
    except (TypeError, ValueError, RecursionError):
        return safe_str(value)
    return value


# --- reading order and descriptions ------------------------------------------------------


def _reading_order(events: list[Event]) -> list[Event]:
    """Events in recorded order, except that each run of tool_results follows call order."""
    position: dict[str, int] = {}
    ordered: list[Event] = []
    burst: list[Event] = []
    for event in [*events, None]:  # None: the end, which closes the last burst
        if event is not None and event["type"] == "tool_result":
            burst.append(event)
            continue
        ordered += sorted(burst, key=lambda e: position.get(e.get("id"), len(position)))
        burst = []
        if event is not None:
            if event["type"] == "tool_call":
                position[event.get("id")] = len(position)
            ordered.append(event)
    return ordered


def _clip(text: str, width: int) -> str:
    text = " ".join(safe_str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _args(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=safe_str)
    except (TypeError, ValueError, RecursionError):  # a table must show any event, even a strange one
        return safe_str(value)


def describe(event: Event) -> str:
    """One human line for an event (used by the table, the CLI and the widgets)."""
    kind = event["type"]
    if kind == "question":
        return event.get("text", "")
    if kind == "request":
        return say("trace_request", n=event.get("iteration"), sent=event.get("sent"), messages=event.get("messages"))
    if kind == "response":
        content = event.get("content")
        content = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        calls = sum(1 for b in content if b.get("type") == "tool_use")
        text = "".join(b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str))
        return f"stop_reason={event.get('stop_reason')}" + (say("trace_calls", n=calls) if calls else "") \
            + (say("trace_text", text=text) if text else "")
    if kind == "tool_call":
        return f"{event.get('name')}({_args(event.get('input', {}))})"
    if kind == "tool_result":
        flag = say("trace_error") if event.get("is_error") else ""
        content = event.get("content")
        text = content if isinstance(content, str) else _args(content)
        return f"{event.get('name')} -> {flag}{text}"
    if kind == "usage":
        read = event.get("cache_read_input_tokens", 0)
        cached = say("trace_cached", read=f"{read:,}") if isinstance(read, int) and read else ""
        return say("trace_usage", input=f"{event.get('input_tokens', 0):,}", cached=cached,
                   output=f"{event.get('output_tokens', 0):,}")
    if kind == "error":
        return str(event.get("error", ""))
    if kind == "stop":
        return f"{event.get('stop')}: {event.get('reason')}"
    return _args({k: v for k, v in event.items() if k not in ("type", "t", "elapsed")})


# --- secrets: what no record may hold (the spans of tracing.py use the same rule) ---------------


SECRET_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD)$")  # ANTHROPIC_API_KEY, AWS_SECRET_ACCESS_KEY, GH_TOKEN...


@functools.lru_cache(maxsize=4096)
def _names_a_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(name.upper()))


def env_secrets(environ: Any = None) -> list[str]:
    """Every secret this process can see: the values (8+ characters) of variables whose names end in
    KEY, TOKEN, SECRET or PASSWORD, any case; longest first, so a key that contains another is removed whole.

    Read again at every call (a key set after the tracer began is still redacted); each name is
    judged once, since every span asks (see benchmarks/bench_team.py for what a span costs).
    """
    environ = os.environ if environ is None else environ
    found = {v for k, v in environ.items() if len(v) >= 8 and _names_a_secret(k)}
    return sorted(found, key=len, reverse=True)



def scrub(text: str, secrets: list[str] | None = None) -> str:
    """`text` with every API key the environment holds replaced by <redacted>."""
    for secret in env_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, "<redacted>")
    return text
