"""An MCP client written by us: JSON-RPC 2.0 over stdio to a tool server.

The Model Context Protocol (MCP, specification revision 2025-11-25) lets a program
outside ours offer tools. The stdio transport is the simplest: we start the server
as a child process and exchange JSON-RPC messages with it, one JSON object per line
(UTF-8, no embedded newlines) on its stdin and stdout; its stderr is a log.

    -> {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {...}}
    <- {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": ..., "capabilities": ...}}
    -> {"jsonrpc": "2.0", "method": "notifications/initialized"}
    -> {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    -> {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": ..., "arguments": {...}}}

A request has an `id` and gets exactly one response with that id (a `result` or an
`error`); a notification has no id and gets none. Responses may come back in any
order, so one reader thread reads every line and hands each response to the thread
waiting for its id: the loop runs tools in parallel, so several calls share one pipe.

A server is someone else's program, so every failure is bounded and ends in an
exception, never a hang: a line too long or not JSON, a server that exits, a request
that takes too long (then we send `notifications/cancelled`, as the spec asks).
`close()` follows the spec's shutdown: close the server's stdin, wait, SIGTERM, SIGKILL.

`tools(client)` turns the server's tools into ordinary `Tool`s, so the registry and
the loop do not change: an MCP result with `isError: true` raises `MCPToolError`, which
the registry answers as an error tool_result.
"""

from __future__ import annotations

import collections
import itertools
import json
import subprocess
import threading
from typing import Any

from .tools import Tool

PROTOCOL_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "miniagent", "version": "0.1.0"}
MAX_LINE_BYTES = 1_000_000  # one message; a server that sends more is broken (or hostile)
STDERR_LINES = 20  # the server's last stderr lines kept, to explain a crash
STDERR_LINE_CHARS = 500


class MCPError(Exception):
    """The server answered with a JSON-RPC error, broke the protocol, exited, or timed out."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class MCPTimeoutError(MCPError):
    """A request got no response in time (it was cancelled with notifications/cancelled)."""


class MCPToolError(MCPError):
    """A tool ran and failed (`isError: true`): its text is meant for the model."""


class MCPClient:
    """One MCP server process and the JSON-RPC session with it.

    Use it as a context manager so the child process never outlives us:

        with MCPClient([sys.executable, "server.py"]) as client:
            client.initialize()
            print(client.call_tool("calculate", {"expression": "1+1"}))

    `wire`: a list to which every message sent (`("->", message)`) and received
    (`("<-", message)`) is appended, to show the protocol in a notebook.
    """

    def __init__(self, command: list[str], *, env: dict | None = None, timeout: float = 10.0,
                 wire: list | None = None, shutdown_grace: float = 2.0) -> None:
        self.command, self.timeout, self.wire, self.shutdown_grace = list(command), timeout, wire, shutdown_grace
        self.server_info: dict = {}
        self._ids = itertools.count(1)
        self._pending: dict[int, dict] = {}  # id -> {"done": Event, "response"/"error": ...}
        self._lock = threading.Lock()  # guards _pending and _broken
        self._write_lock = threading.Lock()  # one message at a time on stdin
        self._broken: str | None = None  # why the session is over, once it is
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True, name="mcp-stderr")
        self._stderr_reader.start()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True, name="mcp-reader")
        self._reader.start()

    @classmethod
    def start(cls, command: list[str], **options: Any) -> "MCPClient":
        """Start the server and do the handshake: a client ready for `list_tools` and `call_tool`."""
        client = cls(command, **options)
        try:
            client.initialize()
        except BaseException:
            client.close()
            raise
        return client

    def __enter__(self) -> "MCPClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- the protocol ---------------------------------------------------------------

    def initialize(self) -> dict:
        """The handshake: our version and capabilities, the server's answer, then `initialized`."""
        result = self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                             "clientInfo": CLIENT_INFO})
        if not isinstance(result, dict) or "protocolVersion" not in result:
            raise MCPError(f"the server's initialize result has no protocolVersion: {result!r}")
        self.server_info = result
        self.notify("notifications/initialized")
        return result

    def list_tools(self) -> list[dict]:
        """Every tool of the server, following `nextCursor` from page to page."""
        tools: list[dict] = []
        cursor = None
        for _ in range(1000):  # a server that always answers with a cursor must not loop forever
            result = self.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
        raise MCPError("tools/list: more than 1000 pages")

    def call_tool(self, name: str, arguments: dict | None = None, *, timeout: float | None = None) -> dict:
        """The raw result of `tools/call`: {"content": [blocks], "isError": bool, ...}."""
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout)

    # --- JSON-RPC -------------------------------------------------------------------

    def request(self, method: str, params: dict | None = None, *, timeout: float | None = None) -> Any:
        """Send a request and wait for its response: the result, or MCPError."""
        request_id = next(self._ids)
        slot: dict = {"done": threading.Event()}
        with self._lock:
            if self._broken:
                raise MCPError(self._broken)
            self._pending[request_id] = slot
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send(message)
        except MCPError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise
        limit = self.timeout if timeout is None else timeout
        if not slot["done"].wait(limit):
            with self._lock:
                self._pending.pop(request_id, None)
            if not slot["done"].is_set():  # the answer may have arrived just now
                try:  # tell the server to stop working on it (spec: basic/utilities/cancellation)
                    self.notify("notifications/cancelled", {"requestId": request_id, "reason": "timeout"})
                except MCPError:
                    pass
                raise MCPTimeoutError(f"{method}: no response from the MCP server within {limit:g} s")
        if "error" in slot:
            raise MCPError(slot["error"])
        response = slot["response"]
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            raise MCPError(f"{method}: the MCP server answered with error {error.get('code')}: "
                           f"{error.get('message')}", code=error.get("code"))
        return response.get("result")

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification: no id, and no response."""
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def _send(self, message: dict) -> None:
        data = json.dumps(message, ensure_ascii=False).encode() + b"\n"  # dumps never writes a raw newline
        with self._write_lock:
            if self.wire is not None:
                self.wire.append(("->", message))
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as exc:
                raise MCPError(self._broken or f"cannot write to the MCP server: {exc}") from None

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
            except ValueError:
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
            if "id" in message:  # a request from the server: we answer ping, and refuse the rest
                answer = ({"result": {}} if message["method"] == "ping" else
                          {"error": {"code": -32601, "message": f"method not found: {message['method']}"}})
                try:
                    self._send({"jsonrpc": "2.0", "id": message["id"], **answer})
                except MCPError:
                    pass
            return  # a notification (log message, progress, list changed): the wire log shows it
        with self._lock:
            slot = self._pending.pop(message.get("id"), None)
        if slot is not None:  # a response nobody waits for any more (timed out) is dropped
            slot["response"] = message
            slot["done"].set()

    def _fail(self, reason: str) -> None:
        """The session is over: every pending request and every later one fails with `reason`."""
        with self._lock:
            self._broken = self._broken or reason
            pending, self._pending = self._pending, {}
        for slot in pending.values():
            slot["error"] = reason
            slot["done"].set()

    def _read_stderr(self) -> None:
        """Keep the last lines of the server's log; reading it all means a chatty server never blocks."""
        while line := self.proc.stderr.readline(64_000):
            self._stderr.append(line.decode(errors="replace").rstrip()[:STDERR_LINE_CHARS])

    def _stderr_tail(self) -> str:
        lines = list(self._stderr)
        return "; its stderr ended with:\n" + "\n".join(lines) if lines else ""

    # --- shutdown -------------------------------------------------------------------

    def close(self) -> None:
        """Stop the server (spec, lifecycle/shutdown): close its stdin, wait, then SIGTERM, then SIGKILL."""
        self._fail("the MCP client is closed")
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for stop in (None, self.proc.terminate, self.proc.kill):
            if stop is not None:
                stop()
            try:
                self.proc.wait(self.shutdown_grace)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc.wait()
        self._reader.join(1.0)
        for pipe in (self.proc.stdout, self.proc.stderr):
            pipe.close()


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


def tools(client: MCPClient) -> list[Tool]:
    """The server's tools as `Tool`s: their schemas passed through, each call a `tools/call`.

    The Tool's timeout is a little longer than the client's, so our own timeout fires
    first and the server hears `notifications/cancelled`.
    """

    def make(spec: dict) -> Tool:
        name = spec["name"]

        def call(**arguments: Any) -> str:
            result = client.call_tool(name, arguments)
            text = result_text(result)
            if result.get("isError"):
                raise MCPToolError(text or "the tool failed without saying why")
            return text

        return Tool(name, spec.get("description", ""), spec.get("inputSchema") or {"type": "object"},
                    call, timeout=client.timeout + 1.0)

    return [make(spec) for spec in client.list_tools()]
