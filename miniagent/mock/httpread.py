"""Reading a request off a socket when the client may be broken or hostile.

`http.server` parses the request line and the headers; the body, and the clock, are
ours. A client decides what arrives: a `content-length` that is not a number (or two
different ones), a chunked body, a body larger than the API accepts, or a byte a
minute. Each becomes a `BodyError` (the status and message of the JSON error the
server answers) or a `TimeoutError`, never a crash, a hang or an unbounded read:

- the framing is decided from the headers alone, so a body that is too large is
  refused (413) before a byte of it is read;
- a chunked body is refused as soon as its running total passes the limit;
- `DeadlineReader` gives a connection `idle` seconds to start a request and then
  `whole` seconds for all of it, however slowly the bytes trickle in.
"""

from __future__ import annotations

import io
import re
import socket
import time
from dataclasses import dataclass
from email.message import Message

MAX_CHUNK_LINE = 4096  # a chunk-size line (hex digits and extensions) or a trailer line
MAX_TRAILER_LINES = 32
_DIGITS = re.compile(r"[0-9]{1,15}")  # 15 digits: far above any limit, far below int()'s
_HEX = re.compile(rb"[0-9a-fA-F]{1,15}")


class BodyError(Exception):
    """A request body the server refuses: `status` and `message` for the JSON error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


@dataclass(frozen=True)
class Framing:
    """How the body is delimited: `length` bytes, or chunks. `ambiguous`: both were announced."""

    length: int = 0
    chunked: bool = False
    ambiguous: bool = False


def too_large(limit: int) -> BodyError:
    return BodyError(413, f"Request exceeds the maximum size of {limit} bytes")


def framing(headers: Message, limit: int) -> Framing:
    """The body's framing from the headers alone, or BodyError (400 malformed, 413 too large).

    Header values are never quoted back: they are the client's, and could be anything.
    """
    codings = [c.strip().lower() for value in headers.get_all("transfer-encoding") or []
               for c in value.split(",") if c.strip()]
    lengths = {v.strip() for value in headers.get_all("content-length") or [] for v in value.split(",")}
    if codings:
        if codings != ["chunked"]:
            raise BodyError(400, "transfer-encoding: only 'chunked' is supported; send the body with "
                                 "content-length or transfer-encoding: chunked")
        # RFC 9112 §6.3: chunked wins over a content-length, and the connection closes afterwards.
        return Framing(chunked=True, ambiguous=bool(lengths))
    if not lengths:
        return Framing()
    if len(lengths) > 1:
        raise BodyError(400, "content-length: the request gives different values; send exactly one")
    value = lengths.pop()
    if not value.isascii() or not value.isdigit():
        raise BodyError(400, "content-length: must be a whole number of bytes (digits only)")
    if not _DIGITS.fullmatch(value) or int(value) > limit:
        raise too_large(limit)
    return Framing(length=int(value))


def read_body(rfile: io.BufferedIOBase, frame: Framing, limit: int) -> bytes:
    """Read the body `frame` describes, or raise BodyError (truncated, malformed, too large)."""
    if not frame.chunked:
        body = rfile.read(frame.length) if frame.length else b""
        if len(body) < frame.length:
            raise BodyError(400, f"the request body ended after {len(body)} of the {frame.length} bytes "
                                 "its content-length announced")
        return body
    parts, total = [], 0
    while True:
        size = _chunk_size(rfile.readline(MAX_CHUNK_LINE + 1))
        if size == 0:
            break
        total += size
        if total > limit:
            raise too_large(limit)
        chunk = rfile.read(size)
        if len(chunk) < size or rfile.readline(3) not in (b"\r\n", b"\n"):
            raise BodyError(400, "chunked body: a chunk is shorter than its size, or not followed by CRLF")
        parts.append(chunk)
    for _ in range(MAX_TRAILER_LINES):
        line = rfile.readline(MAX_CHUNK_LINE + 1)
        if line in (b"\r\n", b"\n"):
            return b"".join(parts)
        if not line.endswith(b"\n"):
            break
    raise BodyError(400, f"chunked body: the trailer section after the last chunk is cut off, or has lines "
                         f"over {MAX_CHUNK_LINE} bytes or more than {MAX_TRAILER_LINES} lines")


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip()  # a chunk extension (";name=value") is allowed and ignored
    if not line.endswith(b"\n") or not _HEX.fullmatch(size):
        raise BodyError(400, "chunked body: each chunk must start with its size in hexadecimal digits "
                             "and CRLF, and the body must end with a chunk of size 0")
    return int(size, 16)


class DeadlineReader(io.RawIOBase):
    """The socket as a raw stream that gives up in time.

    Waiting for a request to start, each read may wait `idle` seconds. Once its first
    byte has arrived the whole request gets `whole` seconds, however it trickles in:
    a per-read timeout alone lets a client that sends one byte a minute hold a thread
    forever. A read that is out of time raises TimeoutError.
    """

    def __init__(self, sock: socket.socket, idle: float, whole: float) -> None:
        super().__init__()
        self.sock, self.idle, self.whole = sock, idle, whole
        self.deadline: float | None = None

    def next_request(self) -> None:
        """Back to waiting for a request (keep-alive): the idle timeout applies again."""
        self.deadline = None

    @property
    def started(self) -> bool:
        """Whether some of a request has arrived (so the client is owed an answer)."""
        return self.deadline is not None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.deadline is None:
            self.sock.settimeout(self.idle)
        else:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the request did not arrive within {self.whole:g} s")
            self.sock.settimeout(left)
        count = self.sock.recv_into(buffer)
        if count and self.deadline is None:
            self.deadline = time.monotonic() + self.whole
        return count
