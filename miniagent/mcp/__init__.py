"""An MCP client written by us: JSON-RPC 2.0 over stdio to a tool server.

The Model Context Protocol (MCP) lets a program outside ours offer tools. The stdio
transport is the simplest: we start the server as a child process and exchange
JSON-RPC messages with it, one JSON object per line (UTF-8, no embedded newlines) on
its stdin and stdout; its stderr is a log.

The current revision of the specification, 2026-07-28, is stateless: there is no
handshake, and every request says in its `_meta` which protocol version it speaks.
Servers written for the earlier revisions (2025-11-25 and before, still most of those
in use) expect an `initialize` handshake first. So we connect as the spec advises a
client that talks to both ("dual-era"), by probing:

    -> {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
          "io.modelcontextprotocol/protocolVersion": "2026-07-28", ...}}}
    <- {"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2026-07-28"], ...}}   modern
    <- {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, ...}}                           legacy:
    -> {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-11-25", ...}}
    <- {"jsonrpc": "2.0", "id": 2, "result": {"protocolVersion": "2025-11-25", ...}}
    -> {"jsonrpc": "2.0", "method": "notifications/initialized"}

and then, in either era,

    -> {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {...}}
    -> {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": ..., "arguments": {...}}}

A request has an `id` and gets exactly one response with that id (a `result` or an
`error`); a notification has no id and gets none. Responses may come back in any
order, so one reader thread reads every line and hands each response to the thread
waiting for its id: the loop runs tools in parallel, so several calls share one pipe.

A server is someone else's program, so every failure is bounded and ends in an
exception, never a hang: a line too long or not JSON, a server that exits, a request
that takes too long (then we send `notifications/cancelled`, as the spec asks), a
protocol version we do not speak. The child gets a minimal environment (never our API
keys) unless you pass more. `close()` follows the spec's shutdown: close the server's
stdin, wait, SIGTERM, SIGKILL.

A server may also stop reading its stdin, and a pipe holds only some 64 KB: a write
beyond that waits for the reader, for ever if it never reads. So no caller writes to the
pipe itself. One writer thread does, from a queue; a request waits for its message to be
written only until its own timeout (the same deadline as for its answer), and one still
queued then is taken back unsent. The reader thread never waits for the writer: it
queues its answers to the server's requests (`ping`), a bounded number of them, and
drops the rest. And `close()` kills a server whose stdin cannot take the end-of-file
(a write stuck for CLOSE_WRITE_GRACE) instead of waiting on it.

`tools(client)` turns the server's tools into ordinary `Tool`s, so the registry and
the loop do not change: an MCP result with `isError: true` raises `MCPToolError`, which
the registry answers as an error tool_result. Its options are the host's defences: an
allow-list of tools, pinned definitions (a tool that changes after you reviewed it is
refused), approval before each call, and descriptions cleaned of invisible characters.

What you review is exactly what the model gets, for every string it is sent: the prose
(every `description` and `title`, in the tool and anywhere in its schema) is cleaned;
the strings the model must send back as they are (property names, enum and const values,
defaults, examples, patterns: any other string) cannot be cleaned without changing what
the server receives, so a tool with an invisible character in one of them is refused.
`clean_tool` gives what the model gets, and `fingerprint` (the pin) is its hash.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import re
import subprocess
import threading
import time
import unicodedata
from typing import Any, Iterable

from miniagent.tools import Tool

MODERN_VERSIONS = ("2026-07-28",)  # stateless: the version travels in every request's _meta
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # the initialize handshake
PROTOCOL_VERSION = MODERN_VERSIONS[0]
LEGACY_PROTOCOL_VERSION = LEGACY_VERSIONS[0]
UNSUPPORTED_PROTOCOL_VERSION = -32022  # the modern error naming the versions a server speaks
CLIENT_INFO = {"name": "miniagent", "version": "0.1.0"}
MAX_LINE_BYTES = 1_000_000  # one message; a server that sends more is broken (or hostile)
STDERR_LINES = 20  # the server's last stderr lines kept, to explain a crash
STDERR_LINE_CHARS = 500
MAX_DESCRIPTION_CHARS = 2_000  # a tool description longer than this is cut: it is prompt text we pay for
MAX_SCHEMA_DEPTH = 32  # an inputSchema nested deeper is refused (real ones are a few levels deep)
MAX_UNAWAITED = 32  # queued messages nobody waits for (answers to a server's pings, cancellations); more are dropped
CLOSE_WRITE_GRACE = 0.5  # close(): how long a write in progress may go on before the server is killed
# What a server process inherits from us unless told otherwise: enough to run, no secrets.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR",
                 "SYSTEMROOT", "TEMP", "TMP")


def default_env() -> dict[str, str]:
    """The environment a server starts with: the few variables a program needs to run.

    Not ours in full: our environment holds API keys, and a server is someone else's code.
    """
    return {name: os.environ[name] for name in INHERITED_ENV if name in os.environ}


def meta(version: str = PROTOCOL_VERSION) -> dict:
    """The `_meta` every modern request carries: its protocol version, our capabilities (none), who we are."""
    return {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO}


class MCPError(Exception):
    """The server answered with a JSON-RPC error, broke the protocol, exited, or timed out."""

    def __init__(self, message: str, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data


class MCPTimeoutError(MCPError):
    """A request got no response in time (it was cancelled with notifications/cancelled), or the
    server read nothing in that time (it was never sent)."""


class MCPToolError(MCPError):
    """A tool ran and failed (`isError: true`): its text is meant for the model."""


class MCPClient:
    """One MCP server process and the JSON-RPC session with it.

    Use it as a context manager so the child process never outlives us:

        with MCPClient.start([sys.executable, "server.py"]) as client:
            print(client.call_tool("calculate", {"expression": "1+1"}))

    `env`: variables added to `default_env()` for the child (say, the one token this
    server needs); nothing else of ours reaches it. `timeout`: seconds per request.
    `probe_timeout`: how long `connect` waits for `server/discover` before deciding the
    server is legacy. `wire`: a list to which every message sent (`("->", message)`) and
    received (`("<-", message)`) is appended, to show the protocol in a notebook.

    After `connect`: `era` is "modern" or "legacy", `protocol_version` the version
    spoken, `server_info` what the server said about itself (discover or initialize result).
    """

    def __init__(self, command: list[str], *, env: dict | None = None, timeout: float = 10.0,
                 probe_timeout: float = 3.0, wire: list | None = None, shutdown_grace: float = 2.0) -> None:
        self.command, self.timeout, self.wire, self.shutdown_grace = list(command), timeout, wire, shutdown_grace
        self.probe_timeout = probe_timeout
        self.server_info: dict = {}
        self.era: str | None = None  # None while probing: requests carry modern _meta
        self.protocol_version: str = PROTOCOL_VERSION
        self._ids = itertools.count(1)
        self._pending: dict[int, dict] = {}  # id -> {"done": Event, "response"/"error": ...}
        self._lock = threading.Lock()  # guards _pending, _broken and the outbox
        self._outbox: collections.deque[_Outgoing] = collections.deque()  # for the writer thread, in order
        self._wake_writer = threading.Condition(self._lock)
        self._writing: _Outgoing | None = None  # the message the writer is writing now
        self._writing_since = 0.0  # since when (time.monotonic())
        self._unawaited = 0  # how many messages in the outbox nobody waits for (at most MAX_UNAWAITED)
        self._broken: str | None = None  # why the session is over, once it is
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        try:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env={**default_env(), **(env or {})})
        except (OSError, ValueError) as exc:  # no such program, not executable, a NUL in an argument
            raise MCPError(f"cannot start the MCP server {_clean(self.command[:1], 200)}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True, name="mcp-stderr")
        self._stderr_reader.start()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True, name="mcp-reader")
        self._reader.start()
        self._writer = threading.Thread(target=self._write_stdin, daemon=True, name="mcp-writer")
        self._writer.start()

    @classmethod
    def start(cls, command: list[str], **options: Any) -> "MCPClient":
        """Start the server and `connect`: a client ready for `list_tools` and `call_tool`."""
        client = cls(command, **options)
        try:
            client.connect()
        except BaseException:
            client.close()
            raise
        return client

    def __enter__(self) -> "MCPClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- the protocol ---------------------------------------------------------------

    def connect(self) -> dict:
        """Find out which era the server speaks, as the spec's stdio transport says (dual-era client).

        `server/discover` answered with a version we speak: modern. A modern error naming the
        versions the server speaks: one of them, or refuse. Any other error, or silence: a legacy
        server, so the `initialize` handshake.
        """
        try:
            found = self.request("server/discover", {}, timeout=self.probe_timeout)
        except MCPTimeoutError:
            return self._initialize_after_silence()
        except MCPError as err:
            if err.code != UNSUPPORTED_PROTOCOL_VERSION:
                if self._broken:  # it exited or broke the protocol: no point in a handshake
                    raise
                return self.initialize()
            supported = (err.data or {}).get("supported") if isinstance(err.data, dict) else None
            return self._choose(supported if isinstance(supported, list) else [], found=None)
        versions = found.get("supportedVersions")
        return self._choose(versions if isinstance(versions, list) else [], found=found)

    def _initialize_after_silence(self) -> dict:
        """The handshake, for a server that did not answer the probe in time. A modern server that was
        only slow (starting up on a busy machine) refuses it, naming the versions it speaks: then ask
        it again, with the request's own timeout."""
        try:
            return self.initialize()
        except MCPError as err:
            supported = (err.data or {}).get("supported") if isinstance(err.data, dict) else None
            if err.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(supported, list) \
                    or not any(v in MODERN_VERSIONS for v in supported):
                raise
        self.era, self.protocol_version = None, PROTOCOL_VERSION  # probing again: the request carries _meta
        found = self.request("server/discover", {})
        versions = found.get("supportedVersions")
        return self._choose(versions if isinstance(versions, list) else [], found=found)

    def _choose(self, supported: list, found: dict | None) -> dict:
        """Speak the newest modern version the server supports, else its handshake, else refuse."""
        modern = [v for v in MODERN_VERSIONS if v in supported]
        if modern and found is not None:
            self.era, self.protocol_version, self.server_info = "modern", modern[0], found
            return found
        if any(v in LEGACY_VERSIONS for v in supported):  # a dual-era server without our modern version
            return self.initialize()
        raise MCPError(f"the MCP server speaks protocol versions {_clean(supported, 200)}; this client speaks "
                       f"{list(MODERN_VERSIONS + LEGACY_VERSIONS)!r}", code=UNSUPPORTED_PROTOCOL_VERSION)

    def initialize(self) -> dict:
        """The legacy handshake: our version and capabilities, the server's answer, then `initialized`.

        The server answers with the version it will speak; one we do not speak ends the session
        (spec 2025-11-25, lifecycle: the client SHOULD disconnect).
        """
        self.era, self.protocol_version = "legacy", LEGACY_PROTOCOL_VERSION
        result = self.request("initialize", {"protocolVersion": LEGACY_PROTOCOL_VERSION, "capabilities": {},
                                             "clientInfo": CLIENT_INFO})
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise MCPError(f"the MCP server wants protocol version {str(version)[:40]!r}; this client speaks "
                           f"{list(MODERN_VERSIONS + LEGACY_VERSIONS)!r}", code=UNSUPPORTED_PROTOCOL_VERSION)
        self.protocol_version, self.server_info = version, result
        self.notify("notifications/initialized")
        return result

    def list_tools(self) -> list[dict]:
        """Every tool of the server, following `nextCursor` from page to page."""
        tools: list[dict] = []
        cursor = None
        for _ in range(1000):  # a server that always answers with a cursor must not loop forever
            result = self.request("tools/list", {"cursor": cursor} if cursor else {})
            page = result.get("tools", [])
            if not isinstance(page, list) or len(tools) + len(page) > 10_000:
                raise MCPError("tools/list: the MCP server's tools are not a list of at most 10,000 tools")
            tools.extend(page)
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
        raise MCPError("tools/list: more than 1000 pages")

    def call_tool(self, name: str, arguments: dict | None = None, *, timeout: float | None = None) -> dict:
        """The raw result of `tools/call`: {"content": [blocks], "isError": bool, ...}."""
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout)

    # --- JSON-RPC -------------------------------------------------------------------

    def request(self, method: str, params: dict | None = None, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its response: the result, or MCPError.

        `timeout` (default: the client's) bounds the whole request, writing it included: a
        server that stops reading its stdin makes it an MCPTimeoutError like any other silence.
        """
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        request_id = next(self._ids)
        slot: dict = {"done": threading.Event()}
        with self._lock:
            if self._broken:
                raise MCPError(self._broken)
            self._pending[request_id] = slot
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if self.era != "legacy":  # modern (or probing): every request says which version it speaks
            params = {**(params or {}), "_meta": meta(self.protocol_version)}
        if params is not None:
            message["params"] = params
        try:
            sent = self._send(message, deadline)
        except MCPError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise
        if sent != "written" or not slot["done"].wait(max(0.0, deadline - time.monotonic())):
            with self._lock:
                self._pending.pop(request_id, None)
            if not slot["done"].is_set():  # the answer may have arrived just now
                if sent == "unsent":  # taken back from the queue: the server never saw it
                    raise MCPTimeoutError(f"{method}: the MCP server read nothing from its stdin for {limit:g} s "
                                          "(it has stopped reading), so the request was not sent")
                # Tell the server to stop working on it (spec: basic/utilities/cancellation).
                self._send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": request_id, "reason": "timeout"}})
                stuck = " (it stopped reading its stdin in the middle of the request)" if sent == "partly" else ""
                raise MCPTimeoutError(f"{method}: no response from the MCP server within {limit:g} s{stuck}")
        if "error" in slot:
            raise MCPError(slot["error"])
        return _result(method, slot["response"])

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification (no id, and no response), waiting at most `timeout` for it to be written."""
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        if self._send(message, time.monotonic() + self.timeout) != "written":
            raise MCPTimeoutError(f"{method}: the MCP server read nothing from its stdin for {self.timeout:g} s")

    def _send(self, message: dict, deadline: float | None = None) -> str:
        """Queue one message for the writer thread.

        With a deadline, wait until it is written: "written", or at the deadline "unsent" (taken
        back from the queue) or "partly" (the writer is in the middle of it, stuck on a full pipe).
        Without one (an answer or a notification nobody waits for): "queued", or "dropped" when
        MAX_UNAWAITED are already waiting, so a server that floods us and reads nothing
        costs a bounded queue, and the caller (the reader thread) never waits.
        """
        item = _Outgoing(message, encode_line(message), unawaited=deadline is None)
        with self._lock:
            if self._broken:
                if item.unawaited:
                    return "dropped"
                raise MCPError(self._broken)
            if item.unawaited:
                if self._unawaited >= MAX_UNAWAITED:
                    return "dropped"
                self._unawaited += 1
            self._outbox.append(item)
            self._wake_writer.notify()
        if deadline is None:
            return "queued"
        if not item.done.wait(max(0.0, deadline - time.monotonic())):
            with self._lock:
                if item in self._outbox:
                    self._outbox.remove(item)
                    return "unsent"
                if not item.done.is_set():
                    return "partly"
        if item.error:
            raise MCPError(item.error)
        return "written"

    # --- the writer thread ----------------------------------------------------------

    def _write_stdin(self) -> None:
        """Write the outbox to the server's stdin, one message at a time, until the session ends.

        The only code that touches stdin, so a write stuck on a full pipe blocks this thread
        alone. At the end it closes stdin: the server reads end-of-file (spec: shutdown).
        """
        stdin = self.proc.stdin
        while True:
            with self._lock:
                while not self._outbox and not self._broken:
                    self._wake_writer.wait()
                if self._broken:
                    break
                item = self._writing = self._outbox.popleft()
                self._writing_since = time.monotonic()
                self._unawaited -= item.unawaited
            if self.wire is not None:
                self.wire.append(("->", item.message))
            try:
                stdin.write(item.data)
                stdin.flush()
            except (OSError, ValueError) as exc:  # BrokenPipeError: the server is gone, or closed its stdin
                self._fail(f"cannot write to the MCP server: {exc}")
                item.finish(self._broken)
                break
            with self._lock:
                self._writing = None
            item.finish()
        try:
            stdin.close()
        except OSError:  # a broken pipe, still holding the bytes it could not write
            pass

    # --- the reader threads ---------------------------------------------------------

    def _read_stdout(self) -> None:
        """Read one message a line, and route each response to its waiting request."""
        stdout = self.proc.stdout
        while True:
            line = stdout.readline(MAX_LINE_BYTES + 1)
            if not line:  # end of stdout: the server exited (or closed it, which ends the session too)
                try:
                    how = f"exited with code {self.proc.wait(1.0)}"
                except subprocess.TimeoutExpired:
                    how = "closed its stdout"
                self._stderr_reader.join(1.0)  # its last words, which explain the exit, may still be in the pipe
                return self._fail(f"the MCP server {how}{self._stderr_tail()}")
            if len(line) > MAX_LINE_BYTES:
                return self._broke(f"protocol error: the MCP server sent a line longer than {MAX_LINE_BYTES} bytes")
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's parser goes
                return self._broke(f"protocol error: the MCP server wrote something that is not a JSON-RPC "
                                  f"message to stdout: {line[:200]!r}")
            if self.wire is not None:
                self.wire.append(("<-", message))
            self._dispatch(message)

    def _broke(self, reason: str) -> None:
        """A protocol error: fail every call, then read and discard the rest, so the server is not
        stuck writing to a full pipe and can exit when `close` closes its stdin."""
        self._fail(reason)
        while self.proc.stdout.read(65_536):
            pass

    def _dispatch(self, message: dict) -> None:
        if "method" in message:
            if _is_id(message.get("id")):  # a request from the server: we answer ping, and refuse the rest
                answer = ({"result": {}} if message["method"] == "ping" else
                          {"error": {"code": -32601, "message": f"method not found: {_clean(message['method'], 100)}"}})
                self._send({"jsonrpc": "2.0", "id": message["id"], **answer})  # queued, or dropped: never waits
            return  # a notification (log message, progress, list changed): the wire log shows it
        request_id = message.get("id")
        if not _is_id(request_id):
            return  # not an id we could have sent (a list, a float, null): nobody waits for it
        with self._lock:
            slot = self._pending.pop(request_id, None)
        if slot is not None:  # a response nobody waits for any more (timed out) is dropped
            slot["response"] = message
            slot["done"].set()

    def _fail(self, reason: str) -> None:
        """The session is over: every pending request and every later one fails with `reason`.

        Messages still queued are dropped (and whoever waits for one told why), and the writer
        thread, woken, closes the server's stdin, unless it is stuck in a write: see `close`.
        """
        with self._lock:
            self._broken = self._broken or reason
            pending, self._pending = self._pending, {}
            unsent = list(self._outbox) + ([self._writing] if self._writing else [])
            self._outbox.clear()
            self._unawaited = 0
            self._wake_writer.notify()
        for slot in pending.values():
            slot["error"] = reason
            slot["done"].set()
        for item in unsent:
            item.finish(self._broken)

    def _read_stderr(self) -> None:
        """Keep the last lines of the server's log; reading it all means a chatty server never blocks."""
        while line := self.proc.stderr.readline(64_000):
            self._stderr.append(line.decode(errors="replace").rstrip()[:STDERR_LINE_CHARS])

    def _stderr_tail(self) -> str:
        lines = list(self._stderr)
        return "; its stderr ended with:\n" + "\n".join(lines) if lines else ""

    # --- shutdown -------------------------------------------------------------------

    def close(self) -> None:
        """Stop the server (spec, lifecycle/shutdown): close its stdin, wait, then SIGTERM, then SIGKILL.

        A server that has stopped reading cannot be told: the writer is stuck in a write to its
        full stdin, which therefore cannot be closed. Once that write has been stuck for
        CLOSE_WRITE_GRACE, the server is killed, without the polite steps (its pipe then
        breaks, and the writer thread ends). So close returns within about a second.
        """
        with self._lock:
            stuck_for = time.monotonic() - self._writing_since if self._writing else 0.0
        self._fail("the MCP client is closed")  # the writer drops the rest and closes stdin
        self._writer.join(max(0.0, min(CLOSE_WRITE_GRACE, self.shutdown_grace) - stuck_for))
        stops = (self.proc.kill,) if self._writer.is_alive() else (None, self.proc.terminate, self.proc.kill)
        for stop in stops:
            if stop is not None:
                stop()
            try:
                self.proc.wait(self.shutdown_grace)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc.wait()
        for thread in (self._writer, self._reader, self._stderr_reader):
            thread.join(1.0)  # each ends at the pipe's end, which the server's exit brought
        for pipe, reader in ((self.proc.stdout, self._reader), (self.proc.stderr, self._stderr_reader)):
            if not reader.is_alive():  # (one a grandchild still holds open is left to its daemon thread)
                pipe.close()


class _Outgoing:
    """One message in the writer's queue, and how its writing ended (`done`; `error`, if it failed)."""

    __slots__ = ("message", "data", "unawaited", "done", "error")

    def __init__(self, message: dict, data: bytes, unawaited: bool) -> None:
        self.message, self.data, self.unawaited = message, data, unawaited
        self.done, self.error = threading.Event(), None

    def finish(self, error: str | None = None) -> None:
        if not self.done.is_set():
            self.error = error
            self.done.set()


def encode_line(message: dict) -> bytes:
    """A JSON-RPC message as one line of UTF-8 (json.dumps never writes a raw newline).

    Text that cannot be UTF-8 (a lone surrogate, which JSON's \\ud800 escape can carry in)
    is written as JSON escapes instead: the line stays valid, and nothing is lost.
    """
    try:
        return json.dumps(message, ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(message).encode() + b"\n"


def _is_id(value: Any) -> bool:
    """A JSON-RPC id as MCP has them: a string or an integer (never a bool, a float or null)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _result(method: str, response: dict) -> dict:
    """The `result` of a response, or MCPError: its error, or a result we cannot use."""
    if "error" in response:
        error = response["error"] if isinstance(response["error"], dict) else {}
        code = error.get("code") if isinstance(error.get("code"), int) else None
        raise MCPError(f"{method}: the MCP server answered with error {code}: {_clean(error.get('message'), 500)}",
                       code=code, data=error.get("data"))
    result = response.get("result")
    if not isinstance(result, dict):
        raise MCPError(f"{method}: the MCP server's result is not a JSON object: {_clean(result, 200)}")
    kind = result.get("resultType", "complete")  # absent: an earlier revision's server, so complete
    if kind == "input_required":  # multi round-trip requests: the server wants us to ask the user
        wanted = ", ".join(map(str, result.get("inputRequests") or {})) or "?"
        raise MCPError(f"{method}: the MCP server needs more input ({_clean(wanted, 200)}), "
                       "which this client does not provide")
    if kind != "complete":
        raise MCPError(f"{method}: the MCP server's result has resultType {_clean(kind, 40)}, "
                       "which this client does not know")
    return result


def _clean(value: Any, limit: int) -> str:
    """Server text for an error message: one line of printable characters, bounded."""
    text = value if isinstance(value, str) else repr(value)
    text = "".join(c if c.isprintable() and not INVISIBLE.match(c) else " " for c in text[: limit * 2])
    return text[:limit] + ("…" if len(text) > limit else "")


def _describe(block: dict) -> str:
    """One content block as text: text as is, anything else named briefly."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"[{kind}: {block.get('mimeType', '?')}, {len(block.get('data', ''))} base64 characters]"
    if kind == "resource":
        resource = block.get("resource", {})
        return resource.get("text") or f"[resource: {resource.get('uri', '?')}]"
    if kind == "resource_link":
        return f"[resource link: {block.get('uri', '?')}]"
    return f"[{kind} content]"


def result_text(result: dict) -> str:
    """The text of a tools/call result (its structuredContent as JSON when there is no content)."""
    content = result.get("content") or []
    if not content and "structuredContent" in result:
        return json.dumps(result["structuredContent"], ensure_ascii=False)
    return "\n".join(_describe(block) for block in content if isinstance(block, dict))


# Characters that print as nothing and are not control or format characters (those go by
# category): the rest of Unicode's Default_Ignorable_Code_Point (variation selectors, which
# can spell out a hidden sentence one byte each, the combining grapheme joiner, the Hangul
# fillers, the Mongolian and Khmer ones, the reserved U+E0000 block), and blanks that are
# letters or symbols: U+2800 (braille blank), U+1D159 (a null notehead).
INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
                       "\ufff0-\ufff8\U0001d159\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
HIDDEN_CATEGORIES = ("Cc", "Cf", "Co", "Cs", "Cn")  # control, format, private use, surrogate, unassigned
PROSE = ("description", "title")  # in a schema: text for the model to read, so cleaned
VALUES = ("enum", "const", "default", "examples")  # in a schema: values the model may send back as they are
NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")  # name -> schema


def _hidden(char: str) -> bool:
    if char in "\n\t":
        return False
    return unicodedata.category(char) in HIDDEN_CATEGORIES or INVISIBLE.match(char) is not None


def clean_description(text: Any) -> str:
    """A tool description as the model will read it, and as a person reviewing it sees it.

    Control and format characters go (zero-width spaces, bidirectional overrides, the
    invisible Unicode "tag" characters that can spell out hidden instructions), so do the
    other characters that print as nothing (`INVISIBLE`: variation selectors, fillers,
    blanks), and so does anything past MAX_DESCRIPTION_CHARS. This does not make a
    description safe; it makes it visible: what you review is exactly what the model gets.
    """
    text = text if isinstance(text, str) else ""
    kept = "".join(c for c in text if not _hidden(c))
    return kept if len(kept) <= MAX_DESCRIPTION_CHARS else kept[:MAX_DESCRIPTION_CHARS] + " [description cut]"


def clean_tool(spec: dict) -> dict:
    """What the model is told about an MCP tool: its name, description and inputSchema, cleaned.

    Prose is cleaned as descriptions are: the description and every `description` and
    `title` in the schema, however deep. Every other string (the name, property names, enum
    and const values, defaults, examples, patterns) is sent as it is, because the model may
    send it back and the server must recognise it: one holding an invisible character makes
    the tool refused (MCPError), rather than offered with a hidden message or changed behind
    the server's back. So every string the model gets is one a person reviewing can see.
    """
    name = spec.get("name")
    try:
        if isinstance(name, str):
            _refuse_hidden(name, "its name")
        schema = spec.get("inputSchema")
        told = {"name": name, "description": clean_description(spec.get("description")),
                "inputSchema": _clean_schema(schema, "inputSchema", 0) if schema is not None else None}
    except ValueError as err:
        raise MCPError(f"the MCP server's tool {_clean(name, 80)!r} is refused: {err}; leave it out with allow=..., "
                       "or ask its author to remove the character") from None
    return told


def _clean_schema(node: Any, where: str, depth: int) -> Any:
    """A schema with its prose cleaned; ValueError where another string hides a character."""
    if depth > MAX_SCHEMA_DEPTH:
        raise ValueError(f"{where} is nested more than {MAX_SCHEMA_DEPTH} levels deep")
    if isinstance(node, list):
        return [_clean_schema(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return _values(node, where, depth)  # a string, a number, true, false, null
    cleaned = {}
    for key, value in node.items():
        at = f"{where}.{key}"
        _refuse_hidden(key, f"a key of {where}")
        if key in PROSE and isinstance(value, str):
            cleaned[key] = clean_description(value)
        elif key in VALUES:
            cleaned[key] = _values(value, at, depth + 1)
        elif key in NAMED and isinstance(value, dict):
            for name in value:
                _refuse_hidden(name, f"a name in {at}")
            cleaned[key] = {name: _clean_schema(sub, f"{at}.{name}", depth + 2) for name, sub in value.items()}
        else:
            cleaned[key] = _clean_schema(value, at, depth + 1)
    return cleaned


def _values(value: Any, where: str, depth: int) -> Any:
    """Data in a schema (an enum's values, a default): checked, never changed."""
    if depth > MAX_SCHEMA_DEPTH:
        raise ValueError(f"{where} is nested more than {MAX_SCHEMA_DEPTH} levels deep")
    if isinstance(value, str):
        _refuse_hidden(value, where)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _values(item, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_hidden(key, f"a key of {where}")
            _values(item, f"{where}.{key}", depth + 1)
    return value


def _refuse_hidden(text: str, where: str) -> None:
    hidden = next((c for c in text if _hidden(c)), None)
    if hidden is not None:
        raise ValueError(f"{_clean(where, 200)} holds an invisible character (U+{ord(hidden):04X} "
                         f"{unicodedata.name(hidden, 'unnamed')}), which cleaning would remove from what "
                         "the model sends back to the server")


def fingerprint(spec: dict) -> str:
    """A short hash of what the model is told about a tool: `clean_tool(spec)`.

    Pin it when you review a server's tools; a server that later changes a description
    or anything in the schema (a "rug pull") no longer matches, and `tools(..., pins=...)`
    refuses it. Because it is the hash of the cleaned text, it changes exactly when what
    the model reads changes: invisible characters, which the model never gets, do not
    move it, and a tool that `clean_tool` refuses cannot be pinned (MCPError).
    """
    canonical = json.dumps(clean_tool(spec), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def tools(client: MCPClient, *, allow: Iterable[str] | None = None, pins: dict[str, str] | None = None,
          approve: bool = False, prefix: str = "") -> list[Tool]:
    """The server's tools as `Tool`s, as `clean_tool` gives them, each call a `tools/call`.

    The host's defences, all off by default except the cleaning of what the model reads
    (`clean_tool`: prose cleaned, a tool hiding characters elsewhere refused):
    - `allow`: only these tools (by the server's names); one the server does not offer is an error.
    - `pins`: {name: fingerprint(spec)} from when you reviewed the tools; a tool whose definition
      changed since, or one not pinned, is refused with an MCPError before the model sees it.
    - `approve`: each call needs a person's yes (`Tool.needs_approval`; see `Agent(approve=...)`).
    - `prefix`: put before each name, so two servers' tools cannot clash ("weather_get_forecast").

    The Tool's timeout is a little longer than the client's, so our own timeout fires
    first and the server hears `notifications/cancelled`.
    """
    listed = client.list_tools()
    names = [spec.get("name") for spec in listed if isinstance(spec, dict)]
    if not all(isinstance(name, str) for name in names):
        raise MCPError(f"the MCP server lists a tool whose name is not a string: "
                       f"{_clean(next(n for n in names if not isinstance(n, str)), 80)}")
    offered = set(names)
    if len(offered) < len(names):
        raise MCPError(f"the MCP server lists a tool name twice: {sorted({str(n) for n in names if names.count(n) > 1})}")
    wanted = set(allow) if allow is not None else None
    if wanted is not None and wanted - offered:
        raise MCPError(f"allowed tools the MCP server does not offer: {sorted(wanted - offered)}; "
                       f"it offers {sorted(map(str, offered))}")
    chosen = [spec for spec in listed if isinstance(spec, dict) and (wanted is None or spec.get("name") in wanted)]
    told = [clean_tool(spec) for spec in chosen]
    if pins is not None:
        changed = [str(spec.get("name")) for spec in chosen if pins.get(spec.get("name")) != fingerprint(spec)]
        if changed:
            raise MCPError(f"MCP tools not pinned, or changed since they were pinned: {changed}; "
                           "review their definitions again before you pin them")

    def make(spec: dict) -> Tool:
        name = spec["name"]

        def call(**arguments: Any) -> str:
            result = client.call_tool(name, arguments)
            text = result_text(result)
            if result.get("isError"):
                raise MCPToolError(text or "the tool failed without saying why")
            return text

        try:
            return Tool(f"{prefix}{name}", spec["description"], spec["inputSchema"] or {"type": "object"}, call,
                        timeout=client.timeout + 1.0, needs_approval=approve)
        except (TypeError, ValueError) as err:
            raise MCPError(f"the MCP server's tool {_clean(name, 80)} cannot be offered to the model: {err}") from None

    return [make(spec) for spec in told]
