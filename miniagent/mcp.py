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

`tools(client)` turns the server's tools into ordinary `Tool`s, so the registry and
the loop do not change: an MCP result with `isError: true` raises `MCPToolError`, which
the registry answers as an error tool_result. Its options are the host's defences: an
allow-list of tools, pinned definitions (a tool that changes after you reviewed it is
refused), approval before each call, and descriptions cleaned of invisible characters.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import subprocess
import threading
import unicodedata
from typing import Any, Iterable

from .tools import Tool

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
    """A request got no response in time (it was cancelled with notifications/cancelled)."""


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
        self._lock = threading.Lock()  # guards _pending and _broken
        self._write_lock = threading.Lock()  # one message at a time on stdin
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
            return self.initialize()
        except MCPError as err:
            if err.code != UNSUPPORTED_PROTOCOL_VERSION:
                if self._broken:  # it exited or broke the protocol: no point in a handshake
                    raise
                return self.initialize()
            supported = (err.data or {}).get("supported") if isinstance(err.data, dict) else None
            return self._choose(supported if isinstance(supported, list) else [], found=None)
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
        """Send a request and wait for its response: the result, or MCPError."""
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
        return _result(method, slot["response"])

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
            if "id" in message:  # a request from the server: we answer ping, and refuse the rest
                answer = ({"result": {}} if message["method"] == "ping" else
                          {"error": {"code": -32601, "message": f"method not found: {message['method']}"}})
                try:
                    self._send({"jsonrpc": "2.0", "id": message["id"], **answer})
                except MCPError:
                    pass
            return  # a notification (log message, progress, list changed): the wire log shows it
        request_id = message.get("id")
        if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
            return  # not an id we could have sent (a list, a float, null): nobody waits for it
        with self._lock:
            slot = self._pending.pop(request_id, None)
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
    text = "".join(c if c.isprintable() else " " for c in text[: limit * 2])
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


def clean_description(text: Any) -> str:
    """A tool description as the model will read it, and as a person reviewing it sees it.

    Control and format characters go (zero-width spaces, bidirectional overrides, the
    invisible Unicode "tag" characters that can spell out hidden instructions), and so
    does anything past MAX_DESCRIPTION_CHARS. This does not make a description safe; it
    makes it visible: what you review is exactly what the model gets.
    """
    text = text if isinstance(text, str) else ""
    kept = "".join(c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Co", "Cs", "Cn"))
    return kept if len(kept) <= MAX_DESCRIPTION_CHARS else kept[:MAX_DESCRIPTION_CHARS] + " [description cut]"


def fingerprint(spec: dict) -> str:
    """A short hash of what the model is told about a tool: its name, description and schema.

    Pin it when you review a server's tools; a server that later changes a description
    (a "rug pull") no longer matches, and `tools(..., pins=...)` refuses it.
    """
    told = {"name": spec.get("name"), "description": spec.get("description", ""),
            "inputSchema": spec.get("inputSchema")}
    canonical = json.dumps(told, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def tools(client: MCPClient, *, allow: Iterable[str] | None = None, pins: dict[str, str] | None = None,
          approve: bool = False, prefix: str = "") -> list[Tool]:
    """The server's tools as `Tool`s: their schemas passed through, each call a `tools/call`.

    The host's defences, all off by default except the cleaning of descriptions:
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
    offered = set(names)
    if len(offered) < len(names):
        raise MCPError(f"the MCP server lists a tool name twice: {sorted({str(n) for n in names if names.count(n) > 1})}")
    wanted = set(allow) if allow is not None else None
    if wanted is not None and wanted - offered:
        raise MCPError(f"allowed tools the MCP server does not offer: {sorted(wanted - offered)}; "
                       f"it offers {sorted(map(str, offered))}")
    chosen = [spec for spec in listed if isinstance(spec, dict) and (wanted is None or spec.get("name") in wanted)]
    if pins is not None:
        changed = [str(spec.get("name")) for spec in chosen if pins.get(spec.get("name")) != fingerprint(spec)]
        if changed:
            raise MCPError(f"MCP tools not pinned, or changed since they were pinned: {changed}; "
                           "review their definitions again before you pin them")

    def make(spec: dict) -> Tool:
        name = spec.get("name")

        def call(**arguments: Any) -> str:
            result = client.call_tool(name, arguments)
            text = result_text(result)
            if result.get("isError"):
                raise MCPToolError(text or "the tool failed without saying why")
            return text

        try:
            return Tool(f"{prefix}{name}", clean_description(spec.get("description")),
                        spec.get("inputSchema") or {"type": "object"}, call,
                        timeout=client.timeout + 1.0, needs_approval=approve)
        except (TypeError, ValueError) as err:
            raise MCPError(f"the MCP server's tool {_clean(name, 80)} cannot be offered to the model: {err}") from None

    return [make(spec) for spec in chosen]
