"""An MCP server written by us: any `Tool`s, offered over stdio JSON-RPC.

The other side of `miniagent/mcp/__init__.py`: it reads one JSON-RPC message a line from stdin
and writes one a line to stdout, nothing else (a tool that prints is sent to stderr, so
it cannot corrupt the protocol). It speaks both eras of the specification:

- modern (2026-07-28): no handshake; each request carries its protocol version in
  `_meta`, and `server/discover` says which versions, capabilities and identity we have.
  A request in a version we do not speak gets error -32022 naming the ones we do.
- legacy (2025-11-25 and earlier): `initialize` first; we answer with the version the
  client asked for if we speak it, else our newest legacy one.

Tool calls run through `ToolRegistry.run`, the same code the agent loop uses, so bad
arguments, a tool that raises and a tool that hangs give the same error texts here as
in an agent. Each call runs on a thread of its own, so a slow tool does not hold up the
others, and a call the client cancels gets no answer (the spec says MUST NOT).

Whatever a line holds, the server answers it or ignores it, and serves on: a line that
is not JSON, or not a request, gets the JSON-RPC error, with `"id": null` where the id
is not a string or a number (JSON-RPC 2.0); a notification gets nothing. What it keeps
is bounded: at most MAX_PENDING_CALLS calls at once (more are answered "busy"), and a
cancellation is kept only for a call still running.

    python -m miniagent.mcp.server [--tools get_weather,calculate] [--clock 2026-05-09T06:23:11Z]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any, Iterable

from miniagent.mcp import LEGACY_VERSIONS, MAX_LINE_BYTES, MODERN_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION, encode_line
from miniagent.tools import Tool, ToolRegistry

SERVER_INFO = {"name": "miniagent", "version": "0.1.0"}
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
SERVER_BUSY = -32000  # JSON-RPC leaves -32000 to -32099 to the server: ours for "too many calls at once"
MAX_PENDING_CALLS = 256  # tools/call running or waiting for a thread; more are refused until one ends


class Server:
    """The protocol, with no pipes: `handle(message)` gives the response (None for a notification).

    Separate from `serve`, so a test or a notebook can send it messages directly.
    """

    def __init__(self, tools: Iterable[Tool], *, info: dict | None = None, modern: bool = True) -> None:
        self.registry = ToolRegistry(tools, max_output_chars=None)  # the client decides how much to keep
        self.info = info or SERVER_INFO
        self.modern = modern  # False: a server as written before 2026, which knows only the handshake
        self.legacy_version: str | None = None  # set by `initialize`: this process then speaks legacy too

    def handle(self, message: Any) -> dict | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return _error(_reply_id(message), INVALID_REQUEST,
                          "Invalid Request: expected a JSON-RPC 2.0 object with a method")
        method, request_id = message["method"], message.get("id")
        params = message.get("params", {})
        if "id" not in message:
            return None  # a notification (initialized, cancelled): no response, ever
        if not _is_id(request_id):
            return _error(_reply_id(message), INVALID_REQUEST, "Invalid Request: the id must be a string or an integer")
        if not isinstance(params, dict):
            return _error(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
        try:
            return {"jsonrpc": "2.0", "id": request_id, "result": self._answer(method, params)}
        except _Refusal as refusal:
            return _error(request_id, refusal.code, str(refusal), refusal.data)

    def _answer(self, method: str, params: dict) -> dict:
        if method == "initialize":  # legacy: the handshake
            asked = params.get("protocolVersion")
            self.legacy_version = asked if asked in LEGACY_VERSIONS else LEGACY_VERSIONS[0]
            return {"protocolVersion": self.legacy_version, "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": self.info}
        if method == "server/discover" and not self.modern:  # a legacy server has never heard of it
            raise _Refusal(METHOD_NOT_FOUND, f"Method not found: {method}")
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        version = meta.get(VERSION_KEY) if self.modern else None  # a legacy server never looks at _meta
        modern = version is not None
        if modern and version not in MODERN_VERSIONS:
            raise _Refusal(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                           {"supported": [*MODERN_VERSIONS, *LEGACY_VERSIONS], "requested": str(version)[:100]})
        if not modern and self.legacy_version is None:
            raise _Refusal(INVALID_PARAMS, f"Invalid params: {method} needs _meta[{VERSION_KEY!r}] "
                                           "(or an initialize handshake first)" if self.modern else
                           f"Invalid request: {method} before initialize")
        if method == "server/discover":
            result = {"supportedVersions": [*MODERN_VERSIONS, *LEGACY_VERSIONS],
                      "capabilities": {"tools": {"listChanged": False}}}
        elif method == "ping" and not modern:  # removed from the modern revision
            result = {}
        elif method == "tools/list":  # every tool on one page: there are a handful
            result = {"tools": [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                                for t in self.registry]}
            if modern:  # cacheable: the list does not change while we run
                result |= {"ttlMs": 3_600_000, "cacheScope": "public"}
        elif method == "tools/call":
            result = self._call(params)
        else:
            raise _Refusal(METHOD_NOT_FOUND, f"Method not found: {method}")
        if modern:
            result |= {"resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": self.info}}
        return result

    def _call(self, params: dict) -> dict:
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str) or name not in self.registry:
            raise _Refusal(INVALID_PARAMS, f"Unknown tool: {str(name)[:100]}")
        if not isinstance(arguments, dict):
            raise _Refusal(INVALID_PARAMS, "Invalid params: arguments must be an object")
        answer = self.registry.run({"type": "tool_use", "id": "mcp_call", "name": name, "input": arguments})
        return {"content": [{"type": "text", "text": answer["content"]}], "isError": bool(answer.get("is_error"))}


class _Refusal(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.data = code, data


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict:
    error = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _is_id(value: Any) -> bool:
    """An id a request may have in MCP: a string or an integer (never a bool, a float or null)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _reply_id(message: Any) -> Any:
    """The id an error answer carries: the request's, if a string or a number; else null (JSON-RPC 2.0)."""
    value = message.get("id") if isinstance(message, dict) else None
    if isinstance(value, float) and math.isfinite(value):
        return value  # a number, though MCP wants integers: echoed, so the client can tell which request
    return value if _is_id(value) else None


def run(tools: Iterable[Tool] | Server, *, info: dict | None = None) -> None:
    """Serve tools (or a Server) on this process's stdin and stdout until stdin ends: a server in one line.

        # my_server.py, started by a host as `python my_server.py`
        from miniagent.mcp.server import run
        run([my_tool, my_other_tool])
    """
    server = tools if isinstance(tools, Server) else Server(tools, info=info)
    protocol = sys.stdout.buffer
    sys.stdout = sys.stderr  # a tool's print() goes to the log, not into the protocol stream
    serve(server, sys.stdin.buffer, protocol)


def serve(server: Server, stdin: IO[bytes], stdout: IO[bytes], max_workers: int = 8,
          max_pending: int = MAX_PENDING_CALLS) -> None:
    """Read requests until stdin ends; answer each. tools/call runs on a pool thread.

    `running` maps the id of each call not yet answered to whether the client cancelled it:
    a cancellation for any other id (finished, never sent, not an id at all) is dropped, so
    what we keep is bounded by `max_pending`, and a late one cannot silence a later call.
    """
    lock = threading.Lock()  # one line at a time on stdout, and guards `running`
    running: dict[str | int, bool] = {}

    def send(response: dict | None, call_id: str | int | None = None) -> None:
        data = encode_line(response) if response is not None else b""
        with lock:
            cancelled = running.pop(call_id, False) if call_id is not None else False  # its place is free
            if data and not cancelled:  # cancelled: no answer (spec: MUST NOT send)
                stdout.write(data)
                stdout.flush()

    def answer(message: dict, call_id: str | int) -> None:
        response = None
        try:
            response = server.handle(message)
        finally:  # even if handle failed, the call is over: it must not keep its place in `running`
            send(response, call_id)

    def cancel(params: Any) -> None:
        call_id = params.get("requestId") if isinstance(params, dict) else None
        with lock:
            if _is_id(call_id) and call_id in running:
                running[call_id] = True

    def start_call(message: dict) -> None:
        call_id = message["id"]
        with lock:
            busy, duplicate = len(running) >= max_pending, call_id in running
            if not (busy or duplicate):
                running[call_id] = False
        if busy:
            send(_error(call_id, SERVER_BUSY, f"Server busy: {max_pending} tool calls are already running; "
                                              "try again when one has finished"))
        elif duplicate:
            send(_error(call_id, INVALID_REQUEST, "Invalid Request: a call with this id is still running"))
        else:
            pool.submit(answer, message, call_id)

    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="mcp-tool") as pool:
        while line := stdin.readline(MAX_LINE_BYTES + 1):
            if len(line) > MAX_LINE_BYTES:
                send(_error(None, PARSE_ERROR, f"Parse error: a message longer than {MAX_LINE_BYTES} bytes"))
                while line and not line.endswith(b"\n"):  # skip the rest of it
                    line = stdin.readline(MAX_LINE_BYTES)
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's parser goes
                send(_error(None, PARSE_ERROR, "Parse error: not JSON (or nested too deeply)"))
                continue
            method = message.get("method") if isinstance(message, dict) else None
            if method == "notifications/cancelled":
                cancel(message.get("params"))
            elif method == "tools/call" and _is_id(message.get("id")):
                start_call(message)
            else:  # anything else, a tools/call without a usable id too, is answered (or ignored) at once
                send(server.handle(message))


def parse_args(argv: list[str] | None = None, prog: str = "python -m miniagent.mcp.server",
               legacy_option: bool = True) -> tuple[list[Tool], bool]:
    """The command line both servers share: which built-in tools, an optional fixed clock, which eras."""
    from miniagent import builtin_tools

    known = {t.name: t for t in builtin_tools.default_tools()}
    parser = argparse.ArgumentParser(prog=prog, description="miniagent's built-in tools as an MCP server on stdio.")
    parser.add_argument("--tools", default=",".join(known),
                        help=f"comma-separated tool names (default: all of {', '.join(known)})")
    parser.add_argument("--clock", help="a fixed ISO time for get_current_time, e.g. 2026-05-09T06:23:11Z")
    if legacy_option:
        parser.add_argument("--legacy-only", action="store_true",
                            help="speak only the handshake of 2025-11-25 and before, as older servers do")
    args = parser.parse_args(argv)
    names = [name.strip() for name in args.tools.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        parser.error(f"--tools: unknown {unknown or 'empty list'}; the built-in tools are {', '.join(known)}")
    if args.clock:
        try:
            fixed = builtin_tools.parse_clock(args.clock, "--clock")
        except ValueError as error:
            parser.error(str(error))
        builtin_tools.now = lambda: fixed
    return [known[name] for name in dict.fromkeys(names)], not getattr(args, "legacy_only", False)


def main(argv: list[str] | None = None) -> int:
    tools, modern = parse_args(argv)
    run(Server(tools, modern=modern))
    return 0


if __name__ == "__main__":
    sys.exit(main())
