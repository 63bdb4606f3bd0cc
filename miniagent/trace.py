"""A trace: every step the agent took, as plain dicts you can print, save and reload.

When an agent misbehaves in production, the question is always "what did it see and
what did it do?". The loop already announces each step through `on_event` (request,
response, tool_call, tool_result, error, stop); the agent adds `question` and `usage`.
A `Trace` stamps each event with the wall-clock time (`t`, ISO-8601 UTC) and the
seconds since the first event (`elapsed`), keeps them in order, and writes them as
JSON Lines: one object per line, the format log shippers and `jq` read.

Events hold only what the loop put in them: messages, tool inputs and outputs, token
counts. Never an API key: the client keeps its key to itself, so nothing here can leak it.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

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
        """Store a copy of `event` with `t` and `elapsed` added; return the stored copy."""
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise ValueError(f"an event is a dict with a string 'type', got {event!r:.80}")
        tick = self._clock()
        if self._start is None:  # the clock starts with the first event (a loaded trace: where it ended)
            self._start = tick - (self.events[-1].get("elapsed", 0.0) if self.events else 0.0)
        stamped = {"type": event["type"], "t": self._now().isoformat(timespec="milliseconds"),
                   "elapsed": round(tick - self._start, 6)}
        stamped.update((k, v) for k, v in event.items() if k != "type")
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
        """Write one JSON object per line; returns the path. Non-JSON values become strings."""
        path = Path(path)
        with path.open("w", encoding="utf-8") as f:
            for event in self.events:
                f.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        return path

    @classmethod
    def from_jsonl(cls, path: str | Path) -> "Trace":
        """Read a trace written by `to_jsonl` (blank lines are skipped)."""
        events = []
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}, line {n}: not JSON ({exc.msg}); expected one event object per line") from None
            if not isinstance(event, dict) or "type" not in event:
                raise ValueError(f"{path}, line {n}: expected an object with a 'type', got {line[:80]!r}")
            events.append(event)
        return cls(events)

    # --- reading ----------------------------------------------------------------------

    def of_type(self, kind: str) -> list[Event]:
        return [e for e in self.events if e["type"] == kind]

    def summary(self) -> dict[str, Any]:
        """The numbers to look at first: model calls, tool calls, failures, tokens, wall time."""
        usage = self.of_type("usage")
        tokens_in = sum(e.get("input_tokens", 0) for e in usage)
        tokens_out = sum(e.get("output_tokens", 0) for e in usage)
        return {
            "model_calls": len(self.of_type("request")),
            "tool_calls": len(self.of_type("tool_call")),
            "tool_errors": sum(1 for e in self.of_type("tool_result") if e.get("is_error")),
            "api_errors": len(self.of_type("error")),
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
            "wall_seconds": self.events[-1]["elapsed"] if self.events else 0.0,
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
        lines = [f"{'#':>3}  {'elapsed':>9}  {'type':<11}  what"]
        lines += [f"{n:>3}  {elapsed:>7.3f} s  {kind:<11}  {what}" for n, elapsed, kind, what in self.rows(width)]
        return "\n".join(lines)


def _reading_order(events: list[Event]) -> list[Event]:
    """Events in recorded order, except that each run of tool_results follows call order."""
    position: dict[str, int] = {}
    ordered: list[Event] = []
    burst: list[Event] = []
    for event in events + [{"type": "_end"}]:
        if event["type"] == "tool_result":
            burst.append(event)
            continue
        ordered += sorted(burst, key=lambda e: position.get(e.get("id"), len(position)))
        burst = []
        if event["type"] == "tool_call":
            position[event.get("id")] = len(position)
        if event["type"] != "_end":
            ordered.append(event)
    return ordered


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _args(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def describe(event: Event) -> str:
    """One human line for an event (used by the table, the CLI and the widgets)."""
    kind = event["type"]
    if kind == "question":
        return event.get("text", "")
    if kind == "request":
        return f"round {event.get('iteration')}: {event.get('sent')} of {event.get('messages')} messages sent"
    if kind == "response":
        content = event.get("content") or []
        calls = sum(1 for b in content if b.get("type") == "tool_use")
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        return f"stop_reason={event.get('stop_reason')}" + (f", {calls} tool_use" if calls else "") \
            + (f": {text}" if text else "")
    if kind == "tool_call":
        return f"{event.get('name')}({_args(event.get('input', {}))})"
    if kind == "tool_result":
        flag = "error " if event.get("is_error") else ""
        content = event.get("content")
        text = content if isinstance(content, str) else _args(content)
        return f"{event.get('name')} -> {flag}{text}"
    if kind == "usage":
        return f"{event.get('input_tokens', 0):,} in, {event.get('output_tokens', 0):,} out"
    if kind == "error":
        return str(event.get("error", ""))
    if kind == "stop":
        return f"{event.get('stop')}: {event.get('reason')}"
    return _args({k: v for k, v in event.items() if k not in ("type", "t", "elapsed")})
