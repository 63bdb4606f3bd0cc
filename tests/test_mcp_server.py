"""miniagent's own MCP server (miniagent/mcp/server.py): the protocol in-process, then over a pipe."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

from hypothesis import given
from hypothesis import strategies as st

from miniagent import builtin_tools
from miniagent.mcp.server import Server, serve
from miniagent.tools import tool

META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}


def ask(server: Server, method: str, params: dict | None = None, request_id=1) -> dict:
    return server.handle({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**META, **(params or {})}})


def test_discover_list_and_call_in_the_modern_revision():
    server = Server(builtin_tools.default_tools())
    found = ask(server, "server/discover")["result"]
    assert found["supportedVersions"][:2] == ["2026-07-28", "2025-11-25"] and found["resultType"] == "complete"
    listed = ask(server, "tools/list")["result"]
    assert [t["name"] for t in listed["tools"]] == ["get_weather", "get_current_time", "calculate"]
    assert listed["tools"][2]["inputSchema"] == builtin_tools.calculate.input_schema
    assert (listed["ttlMs"], listed["cacheScope"]) == (3_600_000, "public")
    called = ask(server, "tools/call", {"name": "calculate", "arguments": {"expression": "(1024 + 768) * 2"}})
    assert called == {"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": "3584"}], "isError": False, "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "miniagent", "version": "0.1.0"}}}}


def test_tool_failures_are_results_and_protocol_mistakes_are_errors():
    server = Server(builtin_tools.default_tools())
    refused = ask(server, "tools/call", {"name": "calculate", "arguments": {"expression": "__import__('os')"}})
    assert refused["result"]["isError"] is True and "calculate" in refused["result"]["content"][0]["text"]
    bad = ask(server, "tools/call", {"name": "calculate", "arguments": {"expresion": "1"}})
    assert bad["result"]["isError"] is True and "expression" in bad["result"]["content"][0]["text"]
    assert ask(server, "tools/call", {"name": "rm_rf"})["error"]["code"] == -32602
    assert ask(server, "tools/call", {"name": "calculate", "arguments": [1]})["error"]["code"] == -32602
    assert ask(server, "resources/list")["error"] == {"code": -32601, "message": "Method not found: resources/list"}
    assert ask(server, "ping")["error"]["code"] == -32601  # removed from the modern revision


def test_versions_without_a_handshake_and_with_one():
    server = Server(builtin_tools.default_tools())
    wrong = server.handle({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "1900-01-01"}}})
    assert wrong["error"]["code"] == -32022
    assert wrong["error"]["data"] == {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"], "requested": "1900-01-01"}
    bare = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}
    assert server.handle(bare)["error"]["code"] == -32602  # no version, no handshake: which era?
    old = server.handle({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}})
    assert old["result"]["protocolVersion"] == "2025-06-18"  # a version we speak is echoed
    assert "resultType" not in server.handle(bare)["result"]  # legacy results as they were
    newer = server.handle({"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {"protocolVersion": "2099"}})
    assert newer["result"]["protocolVersion"] == "2025-11-25"  # otherwise our newest legacy one
    assert server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20)


@given(message=JSON | st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": JSON, "method": st.sampled_from(
    ["tools/call", "tools/list", "server/discover", "initialize", "ping", "x"]), "params": JSON}))
def test_any_json_gets_a_json_rpc_answer_or_none_and_never_an_exception(message):
    response = Server([builtin_tools.calculate]).handle(message)
    if response is not None:
        assert response["jsonrpc"] == "2.0" and ("result" in response) != ("error" in response)
        json.dumps(response)  # it can go on the wire
        if "error" in response:
            assert isinstance(response["error"]["code"], int) and response["error"]["message"]


def test_the_pipe_survives_garbage_and_answers_in_order_of_lines():
    lines = [b"not json\n", b"[1, 2]\n", b"\n", b'{"jsonrpc": "2.0", "id": 1, "method": "server/discover", '
             b'"params": ' + json.dumps(META).encode() + b"}\n", b"x" * 1_000_050 + b"\n",
             b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": ' + json.dumps(META).encode() + b"}\n"]
    out = io.BytesIO()
    serve(Server([builtin_tools.calculate]), io.BytesIO(b"".join(lines)), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a.get("id") for a in answers] == [None, None, 1, None, 2]
    assert [a["error"]["code"] for a in answers if "error" in a] == [-32700, -32600, -32700]
    assert answers[-1]["result"]["tools"][0]["name"] == "calculate"


SCRIPT = textwrap.dedent('''
    import threading, time
    from miniagent.mcp.server import run
    from miniagent.tools import tool
    release = threading.Event()

    @tool
    def chatty(word: str) -> str:
        """Prints while it works."""
        print("debug output that must not reach the protocol stream")
        return word.upper()

    @tool
    def slow() -> str:
        """Waits to be released."""
        release.wait(5)
        return "late"

    @tool
    def release_slow() -> str:
        """Releases slow."""
        release.set()
        return "released"

    run([chatty, slow, release_slow])
''')


def test_a_printing_tool_and_a_cancelled_call_over_a_real_pipe(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SCRIPT)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**META, "name": "chatty", "arguments": {"word": "hi"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**META, "name": "slow", "arguments": {}}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "timeout"}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {**META, "name": "release_slow", "arguments": {}}},
    ]
    proc = subprocess.run([sys.executable, str(script)], input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, timeout=20)
    answers = [json.loads(line) for line in proc.stdout.splitlines()]  # every stdout line is JSON-RPC
    assert sorted(a["id"] for a in answers) == [1, 3]  # the cancelled call is never answered
    assert {a["id"]: a["result"]["content"][0]["text"] for a in answers} == {1: "HI", 3: "released"}
    assert "debug output" in proc.stderr and proc.returncode == 0


def test_json_nested_too_deeply_is_a_parse_error_not_a_dead_server():
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    ok = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": ' + json.dumps(META).encode() + b"}\n"
    out = io.BytesIO()
    serve(Server([builtin_tools.calculate]), io.BytesIO(deep + ok), out)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["error"]["code"] == -32700 and "nested too deeply" in first["error"]["message"]
    assert second["id"] == 2 and second["result"]["tools"][0]["name"] == "calculate"


def served(*lines: bytes, **options) -> list[dict]:
    """The answers `serve` writes for these lines (one message a line), in order."""
    out = io.BytesIO()
    serve(Server([builtin_tools.calculate]), io.BytesIO(b"".join(line + b"\n" for line in lines)), out, **options)
    return [json.loads(line) for line in out.getvalue().splitlines()]


LISTING = b'{"jsonrpc": "2.0", "id": "last", "method": "tools/list", "params": ' + json.dumps(META).encode() + b"}"


def test_garbage_ids_get_the_json_rpc_error_with_id_null_and_the_server_serves_on():
    answers = served(
        b'{"jsonrpc": "2.0", "id": {"a": 1}}',  # no method, and an id that is an object
        b'{"jsonrpc": "2.0", "id": [1, 2], "method": 5}',
        b'{"jsonrpc": "2.0", "id": [1], "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/call", "params": {"name": "calculate"}}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1, 2]}}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}}',
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}',
        b'{"jsonrpc": "2.0", "id": NaN, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}',  # a number: JSON-RPC echoes it
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "nope\\udfff", "params": {}}',  # lone surrogates
        LISTING)
    assert [a["id"] for a in answers] == [None, None, None, None, None, None, 1.5, "\ud800", "last"]
    assert [a["error"]["code"] for a in answers[:-1]] == [-32600] * 7 + [-32602]
    assert answers[-1]["result"]["tools"][0]["name"] == "calculate"


def test_a_cancel_for_a_call_not_running_is_forgotten_not_kept_for_a_later_call():
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {**META, "name": "calculate", "arguments": {"expression": "6*7"}}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    stale = [json.dumps({**cancel, "params": {"requestId": n}}).encode() for n in range(10_000)]
    answers = served(*stale, json.dumps(call).encode())
    assert [(a["id"], a["result"]["content"][0]["text"]) for a in answers] == [(7, "42")]


def test_calls_beyond_the_bound_are_refused_as_busy(tmp_path):
    import threading
    release = threading.Event()

    @tool
    def wait() -> str:
        """Waits until the test lets it go."""
        release.wait(5)
        return "done"

    class Out(io.BytesIO):  # the busy answer lets the waiting calls go, so serve can end
        def write(self, data: bytes) -> int:
            if b"busy" in data:
                release.set()
            return super().write(data)

    calls = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                         "params": {**META, "name": "wait", "arguments": {}}}).encode() + b"\n" for n in range(3)]
    out = Out()
    serve(Server([wait]), io.BytesIO(b"".join(calls)), out, max_workers=1, max_pending=2)
    answers = {a["id"]: a for a in map(json.loads, out.getvalue().splitlines())}
    busy = answers[2]["error"]
    assert busy["code"] == -32000 and "2 tool calls are already running" in busy["message"]
    assert [answers[n]["result"]["content"][0]["text"] for n in (0, 1)] == ["done", "done"]


LINES = st.one_of(
    st.binary(max_size=40),
    JSON.map(lambda value: json.dumps(value).encode()),
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": JSON, "method": st.sampled_from(
        ["tools/call", "tools/list", "notifications/cancelled", "initialize", "x"]), "params": JSON}).map(
        lambda value: json.dumps(value).encode()),
    st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "method": st.just("notifications/cancelled"),
                           "params": st.fixed_dictionaries({"requestId": JSON})}).map(
        lambda value: json.dumps(value).encode()),
)


@given(lines=st.lists(LINES.filter(lambda line: b"\n" not in line), max_size=8))
def test_any_lines_get_json_rpc_answers_and_the_server_serves_on(lines):
    answers = served(*lines, LISTING)
    for answer in answers:
        assert answer["jsonrpc"] == "2.0" and ("result" in answer) != ("error" in answer)
        assert answer["id"] is None or type(answer["id"]) in (str, int, float)  # never a list, an object, a bool
    last = [answer for answer in answers if answer["id"] == "last"]  # (a tools/call's answer may come after it)
    assert len(last) == 1 and "result" in last[0]
