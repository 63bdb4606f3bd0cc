"""Our MCP client (miniagent/mcp.py) against the stdio servers of tests/mcp_servers.py."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from miniagent import Agent, connect
from miniagent.mcp import PROTOCOL_VERSION, MCPClient, MCPError, MCPTimeoutError, tools
from miniagent.tools import ToolRegistry

SERVER = str(Path(__file__).with_name("mcp_servers.py"))
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def server(mode: str, **options) -> MCPClient:
    return MCPClient.start([sys.executable, SERVER, mode], **options)


def gone(client: MCPClient) -> bool:
    """The child has exited and been reaped: no process with its pid is left."""
    if client.proc.poll() is None:
        return False
    try:
        os.kill(client.proc.pid, 0)
    except ProcessLookupError:
        return True
    return False


def run_call(registry: ToolRegistry, name: str, arguments: dict) -> dict:
    return registry.run({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})


def test_handshake_on_the_wire():
    wire: list = []
    with server("weather", wire=wire) as client:
        assert client.server_info["serverInfo"]["name"] == "test-weather"
    (d1, init), (d2, answer), (d3, initialized) = wire[:3]
    assert (d1, d2, d3) == ("->", "<-", "->")
    assert init == {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                               "clientInfo": {"name": "miniagent", "version": "0.1.0"}}}
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == PROTOCOL_VERSION
    assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert gone(client)


def test_list_and_call_with_schemas_passed_through():
    from miniagent import builtin_tools
    wire: list = []
    with server("weather", wire=wire) as client:
        listed = client.list_tools()
        assert [t["name"] for t in listed] == ["get_weather", "get_current_time"]
        assert listed[0]["inputSchema"] == builtin_tools.get_weather.input_schema
        result = client.call_tool("get_weather", {"city": "北京"})
        assert result["isError"] is False
        assert result["content"] == [{"type": "text", "text": builtin_tools.get_weather("北京")}]
        registry = ToolRegistry(tools(client))
        assert registry.schemas()[0] == builtin_tools.get_weather.schema()
        answer = run_call(registry, "get_weather", {"city": "上海"})
        assert not answer.get("is_error") and answer["content"] == builtin_tools.get_weather("上海")
    assert any(m.get("method") == "notifications/message" for d, m in wire if d == "<-")  # logged, ignored
    assert gone(client)


def test_pagination_follows_next_cursor():
    wire: list = []
    with server("paged", wire=wire) as client:
        assert [t["name"] for t in client.list_tools()] == ["get_weather", "calculate"]
    lists = [m for d, m in wire if d == "->" and m.get("method") == "tools/list"]
    assert [m["params"] for m in lists] == [{}, {"cursor": "page-2"}]


def test_is_error_becomes_an_error_tool_result():
    with server("error") as client:
        registry = ToolRegistry(tools(client))
        answer = run_call(registry, "fail", {})
        assert answer["is_error"] is True and "the disk is on fire" in answer["content"]
        assert "MCPToolError" in answer["content"]


def test_unknown_tool_is_a_json_rpc_error():
    with server("error") as client:
        with pytest.raises(MCPError, match=r"error -32602: Unknown tool: nope") as caught:
            client.call_tool("nope", {})
        assert caught.value.code == -32602
        assert client.call_tool("calculate", {"expression": "2+3"})["content"][0]["text"] == "5"  # still usable


@pytest.mark.parametrize("mode, message", [
    ("crash", r"exited with code 3.*out of cheese"),
    ("hang", r"no response from the MCP server within 0.3 s"),
    ("garbage", r"not a JSON-RPC message.*this is not JSON"),
    ("flood", r"line longer than 1000000 bytes"),
])
def test_a_broken_server_ends_the_call_with_an_error_and_leaves_no_child(mode, message):
    wire: list = []
    client = server(mode, timeout=0.3, shutdown_grace=0.2, wire=wire)
    try:
        registry = ToolRegistry(tools(client))
        start = time.monotonic()
        answer = run_call(registry, "calculate", {"expression": "1+1"})
        assert time.monotonic() - start < 2.5
        assert answer["is_error"] is True and re.search(message, answer["content"], re.S), answer["content"]
        if mode == "hang":  # the spec: a request that timed out is cancelled
            call = next(m for d, m in wire if m.get("method") == "tools/call")
            cancelled = [m for d, m in wire if m.get("method") == "notifications/cancelled"]
            assert cancelled[0]["params"] == {"requestId": call["id"], "reason": "timeout"}
        with pytest.raises(MCPTimeoutError if mode == "hang" else MCPError):  # a later call fails too
            client.call_tool("calculate", {"expression": "1+1"}, timeout=0.3)
    finally:
        client.close()
    assert client.proc.poll() is not None and gone(client)
    if mode == "hang":  # it ignored the end of its stdin, so close() had to send SIGTERM
        assert client.proc.returncode == -signal.SIGTERM


def test_concurrent_calls_get_their_own_answers():
    with server("math") as client:
        answers: dict = {}

        def ask(i: int) -> None:
            answers[i] = client.call_tool("calculate", {"expression": f"{i} * 1000 + 7"})["content"][0]["text"]

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(5)
        assert answers == {i: str(i * 1000 + 7) for i in range(20)}


def test_an_agent_whose_tools_all_come_from_two_mcp_servers_answers_the_demo():
    with server("weather") as weather, server("math") as math:
        registry = ToolRegistry(tools(weather) + tools(math))
        assert registry.names == ["get_weather", "get_current_time", "calculate"]
        result = Agent(connect(offline=True, quiet=True), registry).run(DEMO)
    assert result.ok
    assert "3584" in result.text and "北京" in result.text and "上海" in result.text
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", result.text)
    assert gone(weather) and gone(math)
