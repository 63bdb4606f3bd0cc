"""miniagent/mcp/sdk.py (our tools served with the official MCP SDK), checked with the SDK's own client.

Each test starts a real child process over stdio. The SDK's client negotiates the era itself:
it probes `server/discover` (2026-07-28) and falls back to `initialize` (2025-11-25) when the
server does not know that method, as tests/mcp_servers.py does not.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")  # the optional extra miniagent[mcp]

# Each test starts a server that imports the SDK (about 0.7 s): `make test-clients` runs them.
# `make test` keeps the four pairings of clients and servers through notebook 12, which shows them.
pytestmark = pytest.mark.sdk

from mcp import Client, StdioServerParameters  # noqa: E402

from miniagent import builtin_tools  # noqa: E402
from miniagent.mcp import sdk as mcp_sdk  # noqa: E402
from miniagent.tools import ToolRegistry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LEGACY_SERVER = str(Path(__file__).with_name("mcp_servers.py"))
# A minimal environment: the child imports the repository's miniagent, whatever is installed.
ENV = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", str(ROOT)), "PYTHONPATH": str(ROOT),
       "PYTHONIOENCODING": "utf-8"}
CLOCK = "2026-05-09T06:23:11Z"


def params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=list(args), env=ENV, cwd=str(ROOT))


def ours(*args: str) -> StdioServerParameters:
    return params("-m", "miniagent.mcp.sdk", *args)


@asynccontextmanager
async def connected(server: StdioServerParameters, **options):
    async with Client(server, read_timeout_seconds=15, **options) as client:
        yield client


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def expected(name: str, arguments: dict, registry: ToolRegistry | None = None) -> dict:
    """What the agent loop's own code gives for this call, in this process."""
    registry = registry or builtin_tools.default_tools()
    return registry.run({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})


def text_of(result) -> str:
    assert [block.type for block in result.content] == ["text"]
    return result.content[0].text


def children() -> set[int]:
    """The pids of this process's children (Linux /proc); empty where /proc is missing."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        if int(fields[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


# --- our SDK server, as the SDK client sees it ----------------------------------------------


def test_tools_list_is_our_definitions_verbatim_in_order():
    async def main():
        async with connected(ours()) as client:
            return client.protocol_version, (await client.list_tools()).tools

    version, listed = run(main())
    assert version == "2026-07-28"  # the discover probe succeeded: no initialize handshake
    ours_ = list(builtin_tools.default_tools())
    assert [t.name for t in listed] == [t.name for t in ours_] == ["get_weather", "get_current_time", "calculate"]
    for sdk_tool, tool in zip(listed, ours_):
        assert sdk_tool.description == tool.description
        assert sdk_tool.input_schema == tool.input_schema
        # Verbatim down to the order of the keys (the legacy era reorders them, see below).
        assert json.dumps(sdk_tool.input_schema) == json.dumps(tool.input_schema)
        assert sdk_tool.model_dump(by_alias=True, exclude_none=True) == {
            "name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


def test_calls_give_what_the_builtin_tools_give_in_process():
    async def main():
        async with connected(ours()) as client:
            weather = await client.call_tool("get_weather", {"city": "北京"})
            total = await client.call_tool("calculate", {"expression": "(1024 + 768) * 2"})
            return weather, total

    weather, total = run(main())
    assert (text_of(weather), weather.is_error) == (builtin_tools.get_weather("北京"), False)
    assert weather.content[0].text.startswith("北京：")
    assert (text_of(total), total.is_error) == ("3584", False)
    assert text_of(total) == builtin_tools.calculate("(1024 + 768) * 2")


def test_errors_are_is_error_results_with_the_agents_own_texts():
    calls = [
        ("get_weather", {"city": 5, "country": "CN"}),  # wrong type and an unknown field: our validator
        ("get_weather", {}),  # a missing required field
        ("calculate", {"expression": "__import__('os').system('true')"}),  # the calculator refuses
        ("get_weather", {"city": "Atlantis"}),  # the tool raises
    ]

    async def main():
        async with connected(ours()) as client:
            return await asyncio.gather(*(client.call_tool(name, args) for name, args in calls))

    results = run(main())
    for (name, args), result in zip(calls, results):
        want = expected(name, args)
        assert want["is_error"] is True
        assert result.is_error is True, (name, args)
        assert text_of(result) == want["content"], (name, args)
    assert text_of(results[0]).startswith("Error: invalid arguments for get_weather:\n- city: expected a string")
    assert "unexpected field 'country'" in text_of(results[0])
    assert "function calls are not allowed" in text_of(results[2])
    assert "unknown city 'Atlantis'" in text_of(results[3])


def test_an_unknown_tool_is_a_json_rpc_error_as_the_spec_says():
    async def main():
        async with connected(ours()) as client:
            with pytest.raises(mcp.MCPError) as caught:
                await client.call_tool("no_such_tool", {"x": 1})
            return caught.value, text_of(await client.call_tool("calculate", {"expression": "2+3"}))

    error, still_usable = run(main())
    assert (error.code, error.message) == (-32602, "Unknown tool: no_such_tool")
    assert still_usable == "5"


def test_clock_and_tools_options_and_the_legacy_era_of_our_server():
    async def main():
        async with connected(ours("--tools", "get_current_time,calculate", "--clock", CLOCK),
                             mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            shanghai = await client.call_tool("get_current_time", {})
            london = await client.call_tool("get_current_time", {"timezone": "Europe/London"})
            with pytest.raises(mcp.MCPError) as hidden:
                await client.call_tool("get_weather", {"city": "北京"})
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            return client.protocol_version, names, shanghai, london, hidden, schemas

    version, names, shanghai, london, hidden, schemas = run(main())
    assert version == "2025-11-25"  # mode="legacy": the initialize handshake, which the SDK server also speaks
    assert names == ["get_current_time", "calculate"]
    assert text_of(shanghai) == "2026-05-09 14:23:11 (Asia/Shanghai), Saturday"
    assert text_of(london) == "2026-05-09 07:23:11 (Europe/London), Saturday"  # BST, UTC+1
    assert hidden.value.code == -32602  # not offered by this server
    # Equal as JSON, though on this era the SDK writes "type" after "properties" and "required".
    assert schemas == {"get_current_time": builtin_tools.get_current_time.input_schema,
                       "calculate": builtin_tools.calculate.input_schema}


def test_no_server_process_is_left_behind():
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to list child processes")
    before = children()

    async def main():
        async with connected(ours("--tools", "calculate")) as client:
            during = children() - before
            return during, text_of(await client.call_tool("calculate", {"expression": "6*7"}))

    during, answer = run(main())
    assert answer == "42"
    assert len(during) == 1  # the check can see the server (it is not vacuous)
    assert children() & during == set()


# --- the SDK client against a hand-written legacy-only server -----------------------------------


def test_sdk_client_falls_back_to_initialize_with_a_legacy_only_server():
    logs = []

    async def log(params):
        logs.append(params.data)

    async def main():
        async with connected(params(LEGACY_SERVER, "weather"), logging_callback=log) as client:
            listed = (await client.list_tools()).tools
            weather = await client.call_tool("get_weather", {"city": "Shanghai"})
            return client.protocol_version, client.server_info.name, listed, weather

    version, server_name, listed, weather = run(main())
    assert (version, server_name) == ("2025-11-25", "test-weather")  # server/discover got "method not found"
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (t.name, t.description, t.input_schema) for t in (builtin_tools.get_weather, builtin_tools.get_current_time)]
    assert (text_of(weather), weather.is_error) == (builtin_tools.get_weather("Shanghai"), False)
    assert logs == ["calling get_weather"]  # a legacy server's log notification reaches the callback


# --- the command line, in process ---------------------------------------------------------------


def test_unknown_tool_name_is_an_argparse_error_listing_the_known_ones(capsys):
    with pytest.raises(SystemExit) as exit_info:
        mcp_sdk.main(["--tools", "get_weather,teleport"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--tools: unknown ['teleport']" in err
    assert "the built-in tools are get_weather, get_current_time, calculate" in err


def test_a_bad_clock_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        mcp_sdk.main(["--clock", "yesterday"])
    assert exit_info.value.code == 2
    assert "--clock: 'yesterday' is not an ISO time" in capsys.readouterr().err


def test_without_the_sdk_main_says_pip_install_mcp(monkeypatch, capsys):
    for name in ("mcp", "mcp.server", "mcp.server.lowlevel", "mcp_types"):
        monkeypatch.setitem(sys.modules, name, None)  # `import mcp...` now raises ImportError
    with pytest.raises(SystemExit) as exit_info:
        mcp_sdk.main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install mcp" in err




# --- the acceptance: our client and the SDK's, our server and the SDK's, all agree ---------------

CALLS = [("get_weather", {"city": "北京"}), ("calculate", {"expression": "(1024 + 768) * 2"}),
         ("get_current_time", {"timezone": "Europe/London"}), ("calculate", {"expression": "2 ** 99999"}),
         ("get_weather", {"city": 5})]
SERVERS = {"our server": ["-m", "miniagent.mcp.server", "--clock", CLOCK],
           "SDK server": ["-m", "miniagent.mcp.sdk", "--clock", CLOCK],
           "legacy test server": [LEGACY_SERVER, "weather"]}


def with_our_client(args: list[str]) -> tuple[str, list, list]:
    from miniagent.mcp import MCPClient

    with MCPClient.start([sys.executable, *args], env={"PYTHONPATH": str(ROOT)}) as client:
        listed = [(t["name"], t["description"], t["inputSchema"]) for t in client.list_tools()]
        names = {name for name, _, _ in listed}
        results = [(r["content"][0]["text"], r["isError"]) for r in
                   (client.call_tool(name, args) for name, args in CALLS if name in names)]
        return client.protocol_version, listed, results


def with_the_sdk_client(args: list[str]) -> tuple[str, list, list]:
    async def main():
        async with connected(params(*args)) as client:
            listed = [(t.name, t.description, t.input_schema) for t in (await client.list_tools()).tools]
            names = {name for name, _, _ in listed}
            results = [(text_of(r), r.is_error) for r in
                       [await client.call_tool(name, args) for name, args in CALLS if name in names]]
            return client.protocol_version, listed, results

    return run(main())


@pytest.mark.parametrize("server", list(SERVERS))
def test_our_client_and_the_sdk_client_see_the_same_tools_and_results(server):
    ours_version, ours_listed, ours_results = with_our_client(SERVERS[server])
    sdk_version, sdk_listed, sdk_results = with_the_sdk_client(SERVERS[server])
    assert ours_listed == sdk_listed and len(ours_listed) >= 2
    assert ours_results == sdk_results
    assert ours_version == sdk_version == ("2025-11-25" if server == "legacy test server" else "2026-07-28")
    if server != "legacy test server":  # the SDK's server and ours agree with each other too
        assert (ours_listed, ours_results) == with_our_client(SERVERS["our server"])[1:]
        assert ours_results[0] == (builtin_tools.get_weather("北京"), False)
        assert ours_results[2] == ("2026-05-09 07:23:11 (Europe/London), Saturday", False)
        assert ours_results[3][1] is True and ours_results[4][1] is True  # a refusal, bad arguments


def test_our_client_speaks_modern_to_the_sdk_server_even_when_its_probe_times_out():
    # On a busy machine the SDK's server starts after the probe gave up: our client then tries the
    # handshake, which the server refuses, and asks again. That second question must carry the
    # protocol's _meta as the first did (it once did not: "params._meta must be an object ...").
    from miniagent.mcp import MCPClient

    with MCPClient.start([sys.executable, "-m", "miniagent.mcp.sdk", "--clock", CLOCK], env=ENV,
                         probe_timeout=0.01) as client:
        assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
        assert [t["name"] for t in client.list_tools()] == ["get_weather", "get_current_time", "calculate"]
