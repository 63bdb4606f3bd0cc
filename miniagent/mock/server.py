"""The mock API behind a real socket, so curl and the official SDKs can use it.

Only the standard library: `http.server` parses the request line and headers,
`httpread` reads the body, `MockAPI.handle()` decides the answer, and the handler
writes it. Whatever a client sends, it gets an HTTP answer in the API's JSON error
shape, and the server stays within fixed bounds:

- what http.server itself refuses (a bad request line, 414, 431, HTTP/0.9...) is
  answered in JSON too: `send_error` is overridden;
- bad body framing is a 400, a body over 32 MB a 413 decided before reading it;
- at most `max_connections` connections are served at once, a thread each; the next
  `MAX_REFUSING` get a 529 `overloaded_error` and are closed, and any beyond those
  are closed at once;
- a connection may idle `idle_timeout` seconds between requests, and each request
  must arrive whole within `request_timeout` seconds, so trickling bytes
  (slowloris) cannot hold a thread for longer than that;
- each answer goes out in one write with Nagle's algorithm off: headers and body
  written apart meet the client's delayed ACK, which costs ~40 ms a request.

Two reply kinds need care: a delayed one (the handler sleeps first, so the client's
own timeout decides what happens) and a dropped one (the handler closes the socket
without writing anything, which clients report as a disconnect).

A stream goes out with `transfer-encoding: chunked` (no content-length), one chunk
per event as it becomes due (events due together share a write), and ends with the
last, empty chunk, after which the connection serves its next request (keep-alive).
A stream broken by a fault ends without that last chunk and the connection closes,
which clients report as an incomplete read. While a paced stream waits between two
events, the handler watches the socket: a client that closes its connection frees the
thread at once, not when the stream's time is up. (A client that only half-closes is
taken to be gone too: HTTP clients do not half-close while they read an answer.)
`server.connections` counts the connections being served.
"""

from __future__ import annotations

import io
import os
import selectors
import socket
import subprocess
import sys
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TextIO

from miniagent.mock.api import INTERNAL_ERROR, MAX_BODY_BYTES, MockAPI, MockReply, error_reply
from miniagent.mock.httpread import BodyError, DeadlineReader, framing, read_body

MAX_CONNECTIONS = 256   # served at once; a workshop of 30 SDK clients uses a few each
MAX_REFUSING = 16       # more connections answered 529 at once; beyond, closed unanswered
IDLE_TIMEOUT = 30.0     # seconds a keep-alive connection may wait for its next request (httpx2 drops its own at 5)
REQUEST_TIMEOUT = 60.0  # seconds for a whole request to arrive (32 MB at ~0.5 MB/s), and for an answer to leave
MAX_LINE = 65536        # bytes in the request line (http.server's own limit for each header line)
LINGER = 2.0            # seconds to drain unread input before closing (see _linger)
CRLF = b"\r\n"
LAST_CHUNK = b"0\r\n\r\n"  # the end of a chunked body


class MockHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server holding one `MockAPI` (`server.mock`).

    `shutdown()` stops serving and also closes the listening socket, so one call
    is enough to clean up. Open connections end on their own timeouts.
    """

    daemon_threads = True
    block_on_close = False    # shutdown() must not wait for idle keep-alive connections
    request_queue_size = 256  # the listen backlog: a burst of clients waits instead of being turned away

    def __init__(self, address: tuple[str, int], mock: MockAPI, log: TextIO | None = None, *,
                 max_connections: int = MAX_CONNECTIONS, idle_timeout: float = IDLE_TIMEOUT,
                 request_timeout: float = REQUEST_TIMEOUT) -> None:
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a positive whole number, got {max_connections!r}")
        for name, value in (("idle_timeout", idle_timeout), ("request_timeout", request_timeout)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        self.mock, self.log, self.max_connections = mock, log, max_connections
        self.idle_timeout, self.request_timeout = float(idle_timeout), float(request_timeout)
        self._serving = threading.BoundedSemaphore(self.max_connections)
        self._refusing = threading.BoundedSemaphore(MAX_REFUSING)
        self._count_lock = threading.Lock()
        self._connections = 0
        super().__init__(address, _Handler)

    @property
    def connections(self) -> int:
        """How many connections are being served right now (their threads still running)."""
        with self._count_lock:
            return self._connections

    def _count(self, step: int) -> None:
        with self._count_lock:
            self._connections += step

    def shutdown(self) -> None:
        super().shutdown()
        self.server_close()

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def say(self, line: str) -> None:
        """A line to the log, if any. A log that fails (a closed pipe) must not stop the serving."""
        if self.log is not None:
            try:
                print(line, file=self.log, flush=True)
            except (OSError, ValueError):
                pass

    def process_request(self, request: socket.socket, client_address: tuple) -> None:  # type: ignore[override]
        """A thread per connection while a slot is free; a 529 while a refusing slot is; else a close."""
        for slots, work in ((self._serving, self._serve), (self._refusing, self._turn_away)):
            if slots.acquire(blocking=False):
                try:
                    threading.Thread(target=work, args=(request, client_address, slots), daemon=True).start()
                except RuntimeError:  # the system cannot start another thread
                    slots.release()
                    break
                return
        self.say("mock: too many connections: one closed unanswered")
        self.shutdown_request(request)

    def _serve(self, request: socket.socket, client_address: tuple, slots: threading.BoundedSemaphore) -> None:
        self._count(1)
        try:
            self.process_request_thread(request, client_address)
        finally:
            self._count(-1)
            slots.release()

    def _turn_away(self, request: socket.socket, client_address: tuple, slots: threading.BoundedSemaphore) -> None:
        """Answer a connection over the limit with a 529, which clients retry, and close it."""
        reply = error_reply(529, f"Overloaded: the mock server is already serving its maximum of "
                                 f"{self.max_connections} connections; retry in a moment")
        try:
            request.settimeout(LINGER)
            request.sendall(_response_bytes(reply, close=True))
            _linger(request, LINGER)
        except OSError:
            pass
        finally:
            self.say("- - 529 (too many connections)")
            self.shutdown_request(request)
            slots.release()

    def handle_error(self, request: object, client_address: tuple) -> None:
        """One log line, not socketserver's traceback on stderr. The handler catches all it
        can, so beyond a client that vanished (an OSError) this is reached only by a bug."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            self.say(f"mock: BUG: a connection failed: {type(exc).__name__}")


class _Handler(BaseHTTPRequestHandler):
    server: MockHTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    disable_nagle_algorithm = True

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain socket file; reads go through deadlines instead
        self.reader = DeadlineReader(self.connection, self.server.idle_timeout, self.server.request_timeout)
        self.rfile = io.BufferedReader(self.reader)
        self.unread = False  # an answer went out before the request was read to its end

    def handle_one_request(self) -> None:
        """http.server's loop step, plus: blank lines before a request are skipped; every
        refusal is JSON; a time-out or a vanished client ends the connection quietly
        (with a 408 if a request had begun); and a bug still gets an answer."""
        self.reader.next_request()
        self.command, self.path, self.raw_requestline, self.answered = "", "", b"", False
        try:
            line = self.rfile.readline(MAX_LINE + 1)
            for _ in range(8):  # RFC 9112 §2.2: ignore empty lines before a request line
                if line not in (b"\r\n", b"\n"):
                    break
                line = self.rfile.readline(MAX_LINE + 1)
            self.raw_requestline = line
            if not line:
                self.close_connection = True
            elif len(line) > MAX_LINE:
                self.send_error(414, f"the request line is longer than {MAX_LINE} bytes")
            elif self.parse_request():
                self._answer()
        except TimeoutError:
            self.close_connection = True
            if self.reader.started and not self.answered:
                self._reply_and_close(error_reply(408, f"the request did not arrive whole within "
                                              f"{self.server.request_timeout:g} s"))
        except OSError:  # the client went away: nobody to answer
            self.close_connection = True
        except Exception as exc:  # a bug in the server: still an answer if one can go out
            self.server.say(f"mock: BUG: {type(exc).__name__} while serving {self._where()}")
            if not self.answered:
                self._reply_and_close(error_reply(500, f"{INTERNAL_ERROR}: {type(exc).__name__} in the server"))
            self.close_connection = True

    def parse_request(self) -> bool:
        words = str(self.raw_requestline, "iso-8859-1").split()
        if len(words) < 3:  # nothing, a bare word, or HTTP/0.9 ("GET /": no version, no headers)
            self.send_error(400, "the request line must be METHOD PATH HTTP/1.1 (HTTP/0.9 is not supported)")
            return False
        return super().parse_request()

    def handle_expect_100(self) -> bool:
        """Refuse a body the server would refuse anyway before the client sends it (curl waits for this)."""
        try:
            framing(self.headers, MAX_BODY_BYTES)
        except BodyError as exc:
            self._reply_and_close(error_reply(exc.status, exc.message))
            return False
        return super().handle_expect_100()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals, as the API's JSON error instead of its HTML page."""
        text = message or self.responses.get(code, ("Bad request",))[0]
        if explain:
            text = f"{text} ({explain})"
        self._reply_and_close(error_reply(code, text[:300]))

    def _answer(self) -> None:
        try:
            frame = framing(self.headers, MAX_BODY_BYTES)
            body = read_body(self.rfile, frame, MAX_BODY_BYTES)
        except BodyError as exc:
            self._reply_and_close(error_reply(exc.status, exc.message))
            return
        if frame.ambiguous:  # both content-length and chunked: answer, then close (RFC 9112 §6.3)
            self.close_connection = True
        reply = self.server.mock.handle(self.command, self.path, dict(self.headers.items()), body)
        if reply.events is not None:
            self._stream(reply)
            return
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            self._log("dropped (no response)")
            self.close_connection = True
            return
        if reply.broken:  # a fault cuts the body short: the connection ends before the rest
            self.close_connection = True
        self._write(reply, " (cut short by a fault)" if reply.broken else "")

    def _stream(self, reply: MockReply) -> None:
        """Write a stream event by event as each becomes due; stop early if the client has gone."""
        self.answered = True
        if reply.delay:  # a slow fault: before the headers, as for a plain answer
            time.sleep(reply.delay)
        self.connection.settimeout(self.server.request_timeout)
        pending = _response_bytes(reply, close=self.close_connection)
        due = time.monotonic()  # waits add up on one schedule: a late wake-up is not carried into the next
        for wait, chunk in reply.events or []:
            if wait > 0:
                due += wait
                if pending:
                    self.wfile.write(pending)  # flushed: the socket file is unbuffered
                    pending = b""
                if _client_left(self.connection, max(0.0, due - time.monotonic())):
                    self._log(f"{reply.status} (stream: the client left midway)")
                    self.close_connection = True
                    return
            pending += b"%x" % len(chunk) + CRLF + chunk + CRLF
        if reply.broken:  # a fault: no last chunk, and the connection closes
            self.wfile.write(pending)
            self.close_connection = True
            self._log(f"{reply.status} (stream of {reply.event_count} events, cut by a fault)")
            return
        self.wfile.write(pending + LAST_CHUNK)
        self._log(f"{reply.status} (stream of {reply.event_count} events)")

    def _reply_and_close(self, reply: MockReply) -> None:
        """Answer an error decided before the request was read whole, and close the connection."""
        self.close_connection = self.unread = True
        self._write(reply)

    def _write(self, reply: MockReply, note: str = "") -> None:
        self.answered = True
        self.connection.settimeout(self.server.request_timeout)
        # a HEAD gets no body, even when its request line was refused before `command` was set
        head = (self.command or str(self.raw_requestline[:5], "latin-1").split(" ")[0].strip()) == "HEAD"
        self.wfile.write(_response_bytes(reply, close=self.close_connection, head_only=head))
        self._log(f"{reply.status}{note}")

    def finish(self) -> None:
        if self.unread:
            _linger(self.connection, LINGER)
        super().finish()

    def log_message(self, format: str, *args: object) -> None:
        """Anything http.server itself logs goes to the server's log, not to stderr."""
        self.server.say("mock: " + _printable(format % args))

    def _where(self) -> str:
        return _printable(f"{self.command or '-'} {(self.path or '-').split('?', 1)[0]}")

    def _log(self, outcome: str) -> None:
        """One short line per request: method, path, status. Never headers or the query, so never a key."""
        self.server.say(f"{self._where()} {outcome}")


def _response_bytes(reply: MockReply, *, close: bool, head_only: bool = False) -> bytes:
    """The whole HTTP response as one buffer, so it leaves in one send (a stream: its head only).

    A body a fault cuts short keeps the content-length of the whole body: the lie is the fault."""
    reason = "Overloaded" if reply.status == 529 else _Handler.responses.get(reply.status, ("Error",))[0]
    lines = [f"HTTP/1.1 {reply.status} {reason}", f"date: {formatdate(usegmt=True)}", "server: miniagent-mock",
             *(f"{name}: {value}" for name, value in reply.headers.items())]
    if reply.events is not None:
        lines.append("transfer-encoding: chunked")
    elif "content-length" not in reply.headers and reply.status != 204:  # a 204 has no body, nor a length
        lines.append(f"content-length: {len(reply.body)}")
    if close:
        lines.append("connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + reply.body


def _linger(sock: socket.socket, seconds: float) -> None:
    """Close gently after answering a request that was not read to its end: stop writing,
    then read and discard what the client still sends, for at most `seconds`. Closing a
    socket with unread input makes the kernel reset the connection, and the reset can
    destroy the answer before the client has read it."""
    deadline = time.monotonic() + seconds
    try:
        sock.shutdown(socket.SHUT_WR)
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                return
    except OSError:  # the client is gone, or out of time: either way, done
        return


def _client_left(sock: socket.socket, seconds: float) -> bool:
    """Wait `seconds`, or less if the client goes: True if it closed (or reset) its connection.

    The socket turns readable when the client closes it; bytes waiting there instead
    (a pipelined request) cannot tell, so then the wait is simply slept out.
    """
    deadline = time.monotonic() + seconds
    timeout = sock.gettimeout()
    sock.settimeout(0)  # the peek below must never wait
    try:
        with selectors.DefaultSelector() as watch:
            watch.register(sock, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not watch.select(left):
                    continue
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return True
                except BlockingIOError:  # a spurious wake-up: nothing to read after all
                    continue
                except OSError:  # reset by the client
                    return True
                time.sleep(max(0.0, deadline - time.monotonic()))
                return False
        return False
    finally:
        sock.settimeout(timeout)


def _printable(text: str, limit: int = 200) -> str:
    """A client-chosen string made safe for a log line: printable ASCII only, bounded length."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:limit])


def serve_in_thread(mock: MockAPI | None = None, port: int = 0, host: str = "127.0.0.1",
                    log: TextIO | None = None, *, max_connections: int = MAX_CONNECTIONS,
                    idle_timeout: float = IDLE_TIMEOUT, request_timeout: float = REQUEST_TIMEOUT
                    ) -> tuple[MockHTTPServer, str]:
    """Start the mock HTTP server on a background thread; returns (server, base_url).

    Port 0 picks a free port. Stop it with `server.shutdown()`. Silent unless `log`
    is given (a notebook does not want a line per request).
    """
    server = MockHTTPServer((host, port), mock or MockAPI(), log, max_connections=max_connections,
                            idle_timeout=idle_timeout, request_timeout=request_timeout)
    # A short poll interval makes shutdown() return quickly (it waits for the next poll).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="miniagent-mock", daemon=True)
    thread.start()
    return server, server.base_url


LISTENING = "miniagent mock API listening on "  # the first line `python -m miniagent.mock` prints


def serve_in_subprocess(*args: str, stderr: Any = subprocess.DEVNULL, cwd: Any = None,
                        timeout: float = 15.0) -> tuple[subprocess.Popen, str]:
    """`python -m miniagent.mock --port 0 ARGS` in a process of its own, offline; (process, base_url).

    The port is read from the first line the server prints, waiting at most `timeout`
    seconds for it. Stop it with `process.terminate()`. A second process keeps the
    mock's work off the caller's GIL (benchmarks) and tests the command line itself.
    """
    env = {**os.environ, "MINIAGENT_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "miniagent.mock", "--port", "0", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=stderr, text=True)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        line = proc.stdout.readline().strip() if sel.select(timeout) else ""
    if not line.startswith(LISTENING):
        proc.kill()
        proc.wait(timeout=10)
        raise RuntimeError(f"the mock server did not start: {line or f'nothing printed within {timeout:g} s'!r}")
    return proc, line[len(LISTENING):]
