"""Failures on cue: injected faults, and the flaky mode.

A lesson about retries needs the API to fail when it says so: `MockAPI.fault()`
queues failures for the next calls, the `x-mock-fault` header fails one request, and
`MockAPI(flaky=RATE, seed=N)` fails calls at random, reproducibly, the way a busy
API does in a live workshop.

Two faults break an answer that has already begun, as a network or an overloaded
API does mid-stream (a lesson about streaming needs both):
- `cut=N`: a stream stops after N events and the connection drops (no `message_stop`,
  no end of the chunked body); any other answer (a plain message, a token count, an
  error) breaks off after N bytes of its body (its content-length promised more).
  Either way the client reads an incomplete body, and must not use what it got as if
  it were whole.
- `error_after=N`: a stream sends N events and then an `error` event
  (`overloaded_error`, "Overloaded"), as the real API does after its 200. A
  non-streamed request (a token count too) has no "after the 200": it gets what the
  API sends when the overload comes first, a 529 `overloaded_error`, before
  validation like any status fault.
N is capped at the stream's length minus one (a body's length minus one), so the
fault always takes effect: a broken stream never ends with `message_stop`.

Every number here comes from a client, so every number is bounded: a fault cannot
make the server sleep for more than `MAX_FAULT_DELAY`, and `times` is a count, not a
list of copies, so `times=10**6` costs what `times=1` does.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

DEFAULT_RETRY_AFTER = 0.05  # seconds: small, so notebooks that show retries stay fast
MAX_FAULT_DELAY = 60.0      # a slow answer longer than this teaches nothing a shorter one does not
MAX_RETRY_AFTER = 86_400.0  # only a header (the server does not wait): a lesson may ask for an hour
MAX_FAULT_TIMES = 1_000_000
MAX_PENDING_FAULTS = 1_000  # fault() calls waiting in the queue (each with its own count)
MAX_FAULT_MESSAGE = 1_000   # characters
MAX_FLAKY_IN_A_ROW = 2      # so a client with the SDKs' default 2 retries always gets through
MAX_FAULT_COUNT = 1_000_000  # events or bytes before a cut or a mid-stream error


@dataclass(frozen=True)
class Fault:
    """One injected failure: an error `status` (None: succeed), after `delay` seconds, or a `drop`;
    or an answer broken midway: `cut` after N events (bytes), an `error_after` N events."""

    status: int | None = None
    retry_after: float = DEFAULT_RETRY_AFTER
    delay: float = 0.0
    drop: bool = False
    message: str | None = None
    cut: int | None = None
    error_after: int | None = None

    @property
    def breaks_midway(self) -> bool:
        return self.cut is not None or self.error_after is not None


def is_error_status(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and 400 <= value <= 599


def seconds(name: str, value: Any, cap: float) -> float:
    """A client-given duration, checked: a finite number from 0 to `cap` (no NaN, no inf)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= cap:
        raise ValueError(f"{name} must be a number of seconds from 0 to {cap:g}, got {value!r}")
    return float(value)


def count(name: str, value: Any) -> int | None:
    """A client-given count of events or bytes (None: not given), checked: 0 to `MAX_FAULT_COUNT`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FAULT_COUNT:
        raise ValueError(f"{name} must be a whole number from 0 to {MAX_FAULT_COUNT}, got {value!r}")
    return value


def make_fault(status: int | None = None, *, retry_after: float = DEFAULT_RETRY_AFTER, delay: float = 0.0,
               drop: bool = False, message: str | None = None, cut: int | None = None,
               error_after: int | None = None) -> Fault:
    """A Fault from `MockAPI.fault()`'s arguments, each checked, with the reason when one is wrong."""
    if status is not None and not is_error_status(status):
        raise ValueError(f"fault status must be an HTTP error status from 400 to 599, got {status!r}")
    if not isinstance(drop, bool):
        raise ValueError(f"drop must be true or false, got {drop!r}")
    if message is not None and (not isinstance(message, str) or len(message) > MAX_FAULT_MESSAGE):
        raise ValueError(f"message must be a string of at most {MAX_FAULT_MESSAGE} characters")
    fault = Fault(status, seconds("retry_after", retry_after, MAX_RETRY_AFTER),
                  seconds("delay", delay, MAX_FAULT_DELAY), drop, message,
                  count("cut", cut), count("error_after", error_after))
    _check_one_kind(fault)
    if status is None and not fault.delay and not drop and not fault.breaks_midway:
        raise ValueError("fault() needs a status (e.g. 429), a delay (e.g. delay=0.3), drop=True, "
                         "cut=N or error_after=N")
    return fault


def _check_one_kind(fault: Fault) -> None:
    """An answer broken midway is an answer: no error status, no drop, and one way of breaking
    (a delay goes with any of them)."""
    if not fault.breaks_midway:
        return
    kinds = [name for name, given in (("a status", fault.status is not None), ("drop", fault.drop),
                                      ("cut", fault.cut is not None), ("error_after", fault.error_after is not None))
             if given]
    if len(kinds) > 1:
        raise ValueError(f"a fault breaks an answer one way, but this one has {' and '.join(kinds)}; "
                         "queue two faults instead")


SCRIPT_FAULT_KEYS = ("delay", "cut", "error_after")


def script_fault(spec: Any) -> Fault:
    """The `"fault"` of a scripted response: `{"cut": N}`, `{"error_after": N}` and/or `{"delay": S}`,
    so a lesson can script an answer that breaks on its way (an error status is a scripted error)."""
    if not isinstance(spec, dict) or not spec or set(spec) - set(SCRIPT_FAULT_KEYS):
        raise ValueError(f'a scripted response\'s "fault" must be an object with {", ".join(SCRIPT_FAULT_KEYS)}, '
                         'e.g. {"cut": 7}; an error status is a scripted error ({"status": 529})')
    return make_fault(**spec)


def parse_fault_header(value: str) -> Fault:
    """`x-mock-fault: 429`, `529`, `500`, `429 retry-after=0.05`, `slow=0.3`, `drop`, `cut=5`, `error-after=5`."""
    status, retry_after, delay, drop, cut, error_after = None, DEFAULT_RETRY_AFTER, 0.0, False, None, None
    for token in value.replace(",", " ").split():
        key, _, arg = token.partition("=")
        key = key.lower()
        try:
            if token.isascii() and token.isdigit() and 400 <= int(token) <= 599:
                status = int(token)
            elif key == "drop" and not arg:
                drop = True
            elif key in ("retry-after", "retry_after"):
                retry_after = seconds("retry-after", float(arg), MAX_RETRY_AFTER)
            elif key in ("slow", "delay"):
                delay = seconds("slow", float(arg), MAX_FAULT_DELAY)
            elif key == "cut" and arg.isascii() and arg.isdigit():
                cut = count("cut", int(arg))
            elif key in ("error-after", "error_after") and arg.isascii() and arg.isdigit():
                error_after = count("error-after", int(arg))
            else:
                raise ValueError
        except ValueError:
            shown = repr(token) if len(token) <= 16 else f"a {len(token)}-character token"  # not a pasted key
            raise ValueError(f"x-mock-fault: cannot use {shown}; write e.g. '429', '529', '500', "
                             f"'429 retry-after=0.05', 'slow=0.3', 'drop', 'cut=5' or 'error-after=5' "
                             f"(seconds at most {MAX_FAULT_DELAY:g}, counts at most {MAX_FAULT_COUNT})") from None
    fault = Fault(status, retry_after, delay, drop, None, cut, error_after)
    try:
        _check_one_kind(fault)
    except ValueError as exc:
        raise ValueError(f"x-mock-fault: {exc}") from None
    if status is None and not delay and not drop and not fault.breaks_midway:
        raise ValueError("x-mock-fault: give a status (e.g. '429'), 'slow=SECONDS', 'drop', 'cut=N' or 'error-after=N'")
    return fault


class FaultQueue:
    """Faults waiting for the next calls, each with how many calls it still fails."""

    def __init__(self) -> None:
        self._queue: deque[list] = deque()  # [fault, calls left]

    def add(self, fault: Fault, times: int) -> None:
        if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= MAX_FAULT_TIMES:
            raise ValueError(f"times must be a whole number from 1 to {MAX_FAULT_TIMES}, got {times!r}")
        if len(self._queue) >= MAX_PENDING_FAULTS:
            raise ValueError(f"{MAX_PENDING_FAULTS} faults are already waiting; reset the mock first")
        self._queue.append([fault, times])

    def take(self) -> Fault | None:
        if not self._queue:
            return None
        entry = self._queue[0]
        entry[1] -= 1
        if not entry[1]:
            self._queue.popleft()
        return entry[0]

    @property
    def pending(self) -> int:
        """How many calls will still fail."""
        return sum(left for _, left in self._queue)


class Flaky:
    """A reproducibly unreliable API: each call fails with probability `rate`, 429 or 529.

    The draws come from `random.Random(seed)`, two per call whatever the outcome, so
    call k meets the same fate in every run. Never more than `MAX_FLAKY_IN_A_ROW`
    failures follow one another (counted over all the calls the server receives).
    """

    def __init__(self, rate: float, seed: int) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"flaky must be a failure rate from 0 (never) to below 1, got {rate!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be a whole number, got {seed!r}")
        self.rate, self.seed = float(rate), seed
        self.reset()

    def reset(self) -> None:
        self._random = random.Random(self.seed)
        self._in_a_row = 0

    def next_status(self) -> int | None:
        """The status this call fails with, or None when it goes through."""
        fails = self._random.random() < self.rate
        status = 429 if self._random.random() < 0.5 else 529
        if fails and self._in_a_row < MAX_FLAKY_IN_A_ROW:
            self._in_a_row += 1
            return status
        self._in_a_row = 0
        return None
