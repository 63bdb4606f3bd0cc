"""miniagent's built-in tools as an MCP server, built with the official MCP Python SDK.

`miniagent/mcp/server.py` writes the protocol by hand, to show what is on the wire. This
module does the same job with the SDK (`pip install mcp`, or `pip install 'miniagent[mcp]'`),
to show what using it looks like, and so that any MCP host (Claude Desktop, an IDE, another
agent) can call get_weather, get_current_time and calculate:

    python -m miniagent.mcp.sdk [--tools get_weather,calculate] [--clock 2026-05-09T06:23:11Z]

We use the SDK's low-level `Server`, not its decorator API (`MCPServer`, the former FastMCP):
the decorator API builds a JSON Schema from a function's signature and checks the arguments
itself, while we already have both. So tools/list sends each `Tool`'s name, description and
input_schema unchanged, and tools/call goes through `ToolRegistry.run`, the same code the
agent loop uses: bad arguments and a tool that raises get the same error texts as in an
agent, sent back as `isError: true` so the calling model can read them. An unknown tool is
a JSON-RPC error (-32602), as the spec says and as `server.py` answers it.

The SDK answers both eras of the protocol for us: the modern one (2026-07-28, `server/discover`
and a protocol version in each request's `_meta`) and the legacy `initialize` handshake.

Only this module imports the SDK; `import miniagent` does not.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable

from miniagent.tools import Tool, ToolRegistry

INSTALL_HINT = "miniagent.mcp.sdk needs the MCP SDK: pip install mcp (or: pip install 'miniagent[mcp]')"


def build_server(tools: Iterable[Tool], name: str = "miniagent") -> Any:
    """An SDK server (`mcp.server.lowlevel.Server`) offering `tools`, in their order."""
    import anyio
    import mcp_types as types  # the SDK's protocol types (pydantic models)
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    # No truncation here (max_output_chars=None): the client decides how much of a result to keep.
    registry = ToolRegistry(tools, max_output_chars=None)
    # Our schemas, passed through verbatim. The SDK's Tool model has snake_case fields
    # (input_schema) and writes them camelCase on the wire (inputSchema).
    listing = [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
               for t in registry]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)  # all in one page, in registration order

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in registry:  # the spec: a protocol error, not a tool result
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name[:100]}")
        # A tool_use block, exactly as the model would send it to the agent loop.
        tool_use = {"type": "tool_use", "id": f"mcp-{ctx.request_id}", "name": params.name,
                    "input": params.arguments if params.arguments is not None else {}}
        # ToolRegistry.run blocks (the tool runs on a thread, with a timeout), so it runs on a
        # worker thread here: the event loop stays free to serve other requests meanwhile.
        result = await anyio.to_thread.run_sync(registry.run, tool_use)
        text = result["content"]  # never raises: failures are results with is_error
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    is_error=bool(result.get("is_error")))

    return Server(name, version=_version(), on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(server: Any) -> None:
    """Serve `server` on this process's stdin and stdout until stdin closes."""
    from mcp.server.stdio import stdio_server

    # While it runs, stdio_server points fd 1 at stderr, so a stray print cannot corrupt the wire.
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("miniagent")
    except Exception:  # noqa: BLE001 - not installed as a distribution (run from a checkout)
        return "0"


# --- the command line ------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    """The same command line as `python -m miniagent.mcp.server` (without --legacy-only: the SDK speaks both eras)."""
    from miniagent.mcp.server import parse_args

    tools, _ = parse_args(argv, prog="python -m miniagent.mcp.sdk", legacy_option=False)
    try:
        import anyio
        server = build_server(tools)
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        raise SystemExit(2) from None
    anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
