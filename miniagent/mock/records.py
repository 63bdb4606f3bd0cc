"""What the mock was sent: a bounded log of the API requests it answered.

A notebook cell shows what went over the wire by reading `MockAPI.records`. In a
workshop the server runs for hours and hears from thirty people, so the log keeps
only the newest requests: at most `max_records` of them and `max_bytes` of bodies and
headers; the oldest go first. It stores the bytes as they arrived (cheaper than the
parsed JSON, and exactly what was sent) and parses them when a record is read, so
every reader gets its own copy.

A record's `response` is what went back: the JSON answer parsed; for a stream, the
list of events sent, in order (what a client accumulates; a broken stream's list
ends where it broke; an OpenAI stream's chunks, without its `[DONE]`); for a body cut
short by a fault, the text that was sent.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from miniagent.mock import safejson
from miniagent.mock.stream import parse_sse

MAX_RECORDS = 1_000                  # a long workshop's worth of lesson calls
MAX_RECORD_BYTES = 64 * 1024 * 1024  # two requests of the API's maximum size (32 MB)
REDACTED = "<redacted>"
AUTH_HEADERS = ("x-api-key", "authorization")


@dataclass
class _Record:
    n: int
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes | None
    status: int | None
    response: bytes | None
    size: int


class RecordLog:
    """The newest records, within `max_records` and `max_bytes` (oldest evicted first).

    A record alone larger than `max_bytes` keeps only its number, method, path and status.
    """

    def __init__(self, max_records: int = MAX_RECORDS, max_bytes: int = MAX_RECORD_BYTES) -> None:
        for name, value in (("max_records", max_records), ("max_record_bytes", max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive whole number, got {value!r}")
        self.max_records, self.max_bytes = max_records, max_bytes
        self._records: deque[_Record] = deque()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._records)

    def add(self, n: int, method: str, path: str, headers: dict[str, str], raw: bytes,
            status: int | None, response: bytes | None) -> None:
        """Store one request (its key redacted) and its answer (None: the connection was dropped)."""
        headers = redacted(headers)
        size = len(method) + len(path) + len(raw) + len(response or b"")
        size += sum(len(k) + len(v) for k, v in headers.items())
        if size > self.max_bytes:
            headers, raw, response, size = {}, None, None, len(method) + len(path)
        self._records.append(_Record(n, method, path, headers, raw, status, response, size))
        self.bytes += size
        while len(self._records) > self.max_records or self.bytes > self.max_bytes:
            self.bytes -= self._records.popleft().size

    def clear(self) -> int:
        """Forget every record; returns how many there were."""
        count = len(self._records)
        self._records.clear()
        self.bytes = 0
        return count

    def views(self, path: str | None = None) -> list[dict]:
        """Every record (or those for `path`) as a fresh dict, oldest first."""
        return [_view(r) for r in self._records if path is None or r.path == path]

    def last(self, path: str) -> dict | None:
        for record in reversed(self._records):
            if record.path == path:
                return _view(record)
        return None


def redacted(headers: dict[str, str]) -> dict[str, str]:
    """Headers (lower-case names) with the auth headers replaced by "<redacted>", and the key
    they carry cut out of every other header too (a key pasted into the wrong one)."""
    keys = [headers.get("x-api-key", "").strip(), headers.get("authorization", "").strip().partition(" ")[2].strip()]
    keys = [key for key in keys if len(key) >= 8]  # shorter, a "key" is a word, not a secret
    clean = {}
    for name, value in headers.items():
        if name in AUTH_HEADERS:
            value = REDACTED
        for key in keys:
            value = value.replace(key, REDACTED)
        clean[name] = value
    return clean


def _view(record: _Record) -> dict[str, Any]:
    return {"n": record.n, "method": record.method, "path": record.path, "headers": dict(record.headers),
            "body": _parsed(record.raw), "raw": None if record.raw is None else record.raw.decode("utf-8", "replace"),
            "status": record.status, "response": _response(record.response)}


def _parsed(raw: bytes | None) -> Any:
    try:
        return safejson.loads(raw) if raw else None
    except ValueError:
        return None


def _response(raw: bytes | None) -> Any:
    """An answer as a reader wants it: JSON parsed, a stream as its events, anything else as text."""
    if not raw:
        return None
    if raw.startswith((b"event: ", b"data: ")):  # a stream (the Messages API's, or OpenAI's): a JSON body never starts so
        return parse_sse(raw)
    try:
        return safejson.loads(raw)
    except ValueError:  # a body cut short by a fault
        return raw.decode("utf-8", "replace")
