"""A deadline for a whole HTTP attempt, not just for the gap between two bytes.

httpx2's timeouts bound each socket operation: connect, one write, one read. A server
that sends one byte a second never trips a 60-second read timeout, so a call could
hang for hours. The fix is at the socket: every connect, read and write gets at most
the time left before the attempt's deadline, whatever httpx2 asked for.

`within(seconds)` sets the deadline for the code in its block (a context variable,
so each thread and each task has its own); `deadline_transport()` is an httpx2
transport whose sockets obey it. Outside a `within` block the sockets behave exactly
as httpx2's own.

`until(when)` is the same with a fixed end (a `time.monotonic()` value), for a deadline
that spans many blocks: a stream has one deadline for all of it, but is read a chunk at a
time between events that the caller handles. Enter `until` around each read, never
around a `yield`: a generator that sets a context variable and then yields leaves it set
in the caller's code until the generator resumes, so the caller's own requests would
inherit the stream's deadline.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Any, Iterator

import httpcore2
import httpx2

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("miniagent_deadline", default=None)


@contextlib.contextmanager
def until(when: float) -> Iterator[None]:
    """Every socket operation of a `deadline_transport` in this block ends by `when` (a
    `time.monotonic()` value), or by an earlier deadline already in force: an inner block
    can shorten the time left, never lengthen it."""
    outer = _DEADLINE.get()
    token = _DEADLINE.set(when if outer is None else min(when, outer))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def within(seconds: float) -> contextlib.AbstractContextManager[None]:
    """Every socket operation of a `deadline_transport` in this block ends by `seconds` from now."""
    return until(time.monotonic() + seconds)


def remaining() -> float | None:
    """Seconds left before the current deadline (never negative), or None when there is none."""
    deadline = _DEADLINE.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _bounded(timeout: float | None, expired: type[Exception]) -> float | None:
    """The smaller of httpx2's timeout and the time left; raises `expired` when none is left."""
    left = remaining()
    if left is None:
        return timeout
    if left <= 0:
        raise expired("the attempt's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore2.NetworkStream):
    """A socket stream whose every read and write ends by the deadline."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore2.NetworkBackend):
    """httpcore2's own sockets, wrapped so that they obey the deadline."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self.inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _Stream(self.inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def deadline_transport() -> httpx2.BaseTransport:
    """httpx2's standard transport, with sockets that obey `within()`.

    httpx2 has no public switch for the socket layer, so this wraps the network
    backend of the transport's connection pool (httpcore2's documented extension
    point). If a future httpx2 moves it, the plain transport is returned: per-read
    timeouts still apply, and the client still checks the deadline between chunks.
    """
    transport = httpx2.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore2.NetworkBackend):
        pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    return transport
