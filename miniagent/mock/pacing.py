"""Pacing: how long a streamed answer takes to arrive, so latency can be felt offline.

A real model sends its first token after a pause (the time to first token) and the
rest at some rate. A lesson that compares a streamed call with a plain one needs
both, and the mock sends neither by default (tests and notebooks stay fast):

- `MockAPI(pacing={"first": 0.2, "rate": 40})`, `MockAPI.pace(...)` or
  `POST /_mock/pace`: the mock's default for every `POST /v1/messages`;
- `x-mock-pace: first=0.2,rate=40` on one request (or `off`), replacing the default;
- `python -m miniagent.mock --first-token 0.2 --tokens-per-second 40`.

`first` is the seconds before the first content delta (before `message_delta` when
there is none); after it each delta waits its own tokens (by `miniagent.tokens`'
estimate) divided by `rate`. The events before the first delta (`message_start`,
the first `content_block_start`, `ping`) go out at once, as the real API's do. A
non-streamed request with the same pacing is answered after the time the whole
stream would have taken, so a comparison between the two is fair.

Bounded like every fault: `first` at most 60 s, `rate` from above 0 to 1,000,000
tokens per second, and a whole paced answer never takes longer than 60 s (beyond
that, the rate is raised to fit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from miniagent.mock.faults import MAX_FAULT_DELAY, seconds
from miniagent.tokens import estimate_text

MAX_RATE = 1_000_000.0              # tokens per second: beyond this, nothing to feel
MAX_PACED_SECONDS = MAX_FAULT_DELAY  # a whole paced answer, first token included


@dataclass(frozen=True)
class Pacing:
    """`first`: seconds to the first delta; `rate`: tokens per second after it (None: all at once)."""

    first: float = 0.0
    rate: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "first", seconds("first", self.first, MAX_FAULT_DELAY))
        rate = self.rate
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, (int, float))
                                 or not math.isfinite(rate) or not 0 < rate <= MAX_RATE):
            raise ValueError(f"rate must be a number of tokens per second above 0 and at most {MAX_RATE:g}, "
                             f"or None (no pacing after the first token); got {rate!r}")
        object.__setattr__(self, "rate", None if rate is None else float(rate))

    @property
    def active(self) -> bool:
        return self.first > 0 or self.rate is not None

    def as_dict(self) -> dict[str, Any]:
        return {"first": self.first, "rate": self.rate}


NO_PACING = Pacing()


def pacing_from(value: Pacing | Mapping[str, Any] | None) -> Pacing:
    """A Pacing from what a caller may give: a Pacing, a dict `{"first": s, "rate": n}`, or None (none)."""
    if value is None:
        return NO_PACING
    if isinstance(value, Pacing):
        return value
    if isinstance(value, Mapping) and set(value) <= {"first", "rate"}:
        return Pacing(**value)
    raise ValueError('pacing must be a Pacing, a dict like {"first": 0.2, "rate": 40}, or None')


def parse_pace_header(value: str) -> Pacing:
    """`x-mock-pace: first=0.2,rate=40` (either may be left out), or `off`."""
    if value.strip().lower() in ("off", "none", "0"):
        return NO_PACING
    given: dict[str, float] = {}
    for token in value.replace(",", " ").split():
        key, _, arg = token.partition("=")
        key = key.lower().replace("_", "-")
        key = {"first-token": "first", "tokens-per-second": "rate"}.get(key, key)
        try:
            if key not in ("first", "rate") or key in given:
                raise ValueError
            given[key] = float(arg)
        except ValueError:
            shown = repr(token) if len(token) <= 16 else f"a {len(token)}-character token"  # not a pasted key
            raise ValueError(f"x-mock-pace: cannot use {shown}; write e.g. 'first=0.2,rate=40' (first: seconds "
                             f"to the first token, at most {MAX_FAULT_DELAY:g}; rate: tokens per second, above 0 "
                             f"and at most {MAX_RATE:g}) or 'off'") from None
    if not given:
        raise ValueError("x-mock-pace: give first=SECONDS and/or rate=TOKENS_PER_SECOND, or 'off'")
    try:
        return Pacing(**given)
    except ValueError as exc:
        raise ValueError(f"x-mock-pace: {exc}") from None


def delta_tokens(event: dict) -> int:
    """The tokens a content delta carries (by the estimate); 0 for every other event."""
    if event.get("type") != "content_block_delta":
        return 0
    delta = event.get("delta") or {}
    for field in ("text", "partial_json", "thinking"):
        if isinstance(delta.get(field), str):
            return estimate_text(delta[field])
    return 0


def waits(events: list[dict], pacing: Pacing) -> list[float]:
    """Seconds to wait before each event: `first` before the first delta, then tokens / rate per delta."""
    deltas = [i for i, e in enumerate(events) if e.get("type") == "content_block_delta"]
    end = next((i for i, e in enumerate(events) if e.get("type") == "message_delta"), len(events) - 1)
    return schedule([delta_tokens(e) for e in events], deltas, end, pacing)


def schedule(tokens: list[int], deltas: list[int], end: int, pacing: Pacing) -> list[float]:
    """The waits for any surface's stream: `tokens[i]` carried by event i, `deltas` the indices of the
    events that carry content, `end` the one that gets the first-token wait when none does."""
    out = [0.0] * len(tokens)
    if not pacing.active or not tokens:
        return out
    first_at = deltas[0] if deltas else end
    if pacing.rate:
        for i in deltas[1:]:
            out[i] = tokens[i] / pacing.rate
    rest, room = sum(out), MAX_PACED_SECONDS - pacing.first
    if rest > room:  # bounded: the rate is raised so that the whole answer fits
        out = [w * room / rest for w in out]
    out[first_at] += pacing.first
    return out
