"""Fuzzing both sides of MCP over real pipes: our server's stdin, and our client against a hostile server.

Server: a fixed seed draws lines from a grammar that is mostly right and often wrong (random
bytes, JSON that is no request, ids and requestIds of every type, lone surrogates, NaN, lines
nested deep or longer than the limit, valid requests). Every answer must be a JSON-RPC
message, every valid request must get exactly one answer, and the server must never exit
until its stdin ends.

Client: a server that, on each request, answers, or writes a random frame, floods us with
pings, stalls, stops reading its stdin, writes half a line, or exits. Every call must end
within its timeout (and a little scheduling slack), `close()` within a few seconds, and no
thread of the client and no child process may be left behind.

The everyday suite has a short deterministic version of each hostile case (test_mcp.py,
test_mcp_server.py); these long random runs are for `make test-props`.
"""

from __future__ import annotations

import json
import queue
import random
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from miniagent.mcp import MCPClient, MCPError, MCPTimeoutError
from test_mcp import CALL_SLACK, gone, within

pytestmark = pytest.mark.fuzz  # run by make test-props (CI), not by the everyday make test

SEED = 20_261_124
META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}
METHODS = ["tools/call", "tools/list", "server/discover", "initialize", "ping", "notifications/cancelled",
           "notifications/initialized", "resources/list", "", "tools/call\u0000", "\ud800"]
ODD_IDS = [None, True, False, 1.5, -0.0, [], [1], {}, {"a": 1}, "", "\ud800", 2**70, -1, 0, "fuzz-x"]


# --- the server's stdin ---------------------------------------------------------------------


def junk_json(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False, 0, -1, 2**63, 1e308, 0.5])
    if kind == 2:
        return "".join(rng.choice("ab\u200b\ud800\U000e0041\n\"\\{}") for _ in range(rng.randrange(6)))
    if kind == 3:
        return rng.choice(ODD_IDS)
    if kind == 4:
        return rng.choice(METHODS)
    if kind == 5:
        return [junk_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["jsonrpc", "id", "method", "params", "name", "arguments", "requestId", "_meta", "x"]):
            junk_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def valid_request(rng: random.Random, request_id: str) -> dict:
    method = rng.choice(["tools/call", "tools/list", "server/discover", "resources/list"])
    params = dict(META)
    if method == "tools/call":
        params |= rng.choice([{"name": "calculate", "arguments": {"expression": f"{rng.randrange(99)} * 3"}},
                              {"name": "calculate", "arguments": {"expression": junk_json(rng)}},
                              {"name": "get_weather", "arguments": {"city": "北京"}},
                              {"name": "nope", "arguments": {}}, {"name": "calculate", "arguments": []}])
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def hostile_line(rng: random.Random) -> bytes:
    kind = rng.randrange(9)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(200))).replace(b"\n", b" ")
    if kind == 1:
        return json.dumps(junk_json(rng)).encode()
    if kind == 2:
        return rng.choice([b"[" * 5000, b"{" * 100_000, b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
                           b'{"jsonrpc": "2.0", "id": Infinity, "method": "tools/list"}', b"\xef\xbb\xbf{}",
                           b'{"jsonrpc": "2.0", "id": 1' + b"0" * 5000 + b', "method": "x"}', b"\x00", b"\r"])
    if kind == 3:
        return json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": rng.choice([{"requestId": junk_json(rng)}, junk_json(rng)])}).encode()
    if kind == 4:  # a request with one part wrong
        message = {"jsonrpc": "2.0", "id": rng.choice(ODD_IDS), "method": rng.choice(METHODS),
                   "params": rng.choice([META, junk_json(rng)])}
        for key in rng.sample(list(message), rng.randrange(3)):
            message[key] = junk_json(rng)
        return json.dumps(message).encode()
    if kind == 5:
        return json.dumps({"jsonrpc": rng.choice(["2.0", "1.0", 2, None]), "id": rng.choice(ODD_IDS),
                           "method": "tools/call", "params": {**META, "name": junk_json(rng),
                                                             "arguments": junk_json(rng)}}).encode()
    if kind == 6:
        return json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]).encode()  # a batch: not in MCP
    if kind == 7:
        return b" " * rng.randrange(3) + b"\t"
    return json.dumps(junk_json(rng), ensure_ascii=False).encode("utf-8", "surrogatepass")


def read_lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def test_our_server_answers_or_ignores_every_line_and_never_exits():
    rng = random.Random(SEED)
    proc = subprocess.Popen([sys.executable, "-m", "miniagent.mcp.server"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    answers: queue.Queue = queue.Queue()
    threading.Thread(target=read_lines, args=(proc.stdout, answers), daemon=True).start()
    expected: set[str] = set()
    seen: dict = {}
    started = time.monotonic()
    try:
        for batch in range(20):
            lines = []
            for n in range(100):
                if rng.random() < 0.25:
                    request_id = f"fuzz-{batch}-{n}"
                    expected.add(request_id)
                    lines.append(json.dumps(valid_request(rng, request_id)).encode())
                else:
                    lines.append(hostile_line(rng))
            if batch % 10 == 5:
                lines.append(b"x" * 1_000_100)  # beyond the line limit
            lines.append(json.dumps({"jsonrpc": "2.0", "id": f"sentinel-{batch}", "method": "tools/list",
                                     "params": META}).encode())
            proc.stdin.write(b"".join(line + b"\n" for line in lines))
            proc.stdin.flush()
            while f"sentinel-{batch}" not in seen:  # every line before it has been read
                line = answers.get(timeout=10)
                assert line is not None, f"the server exited ({proc.wait(5)}) in batch {batch}"
                answer = json.loads(line)
                assert answer["jsonrpc"] == "2.0" and ("result" in answer) != ("error" in answer), answer
                assert answer["id"] is None or type(answer["id"]) in (str, int, float), answer
                if "error" in answer:
                    assert isinstance(answer["error"]["code"], int) and answer["error"]["message"]
                key = answer["id"] if isinstance(answer["id"], str) else None
                seen[key] = seen.get(key, 0) + 1
            assert proc.poll() is None
        # tools/call answers come from pool threads, maybe after the sentinel: wait for the last ones
        deadline = time.monotonic() + 10
        while not expected <= seen.keys() and time.monotonic() < deadline:
            line = answers.get(timeout=max(0.01, deadline - time.monotonic()))
            assert line is not None
            answer = json.loads(line)
            seen[answer["id"]] = seen.get(answer["id"], 0) + 1
        assert expected <= seen.keys(), sorted(expected - seen.keys())[:5]
        assert all(seen[request_id] == 1 for request_id in expected)  # exactly one answer each
        proc.stdin.close()
        assert proc.wait(10) == 0  # and it exits only at the end of its stdin, cleanly
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - started < 60


# --- the client against a hostile server ----------------------------------------------------

CHAOS = textwrap.dedent('''
    """A server that, at random, answers, breaks, floods, stalls, stops reading or exits."""
    import json, os, random, sys, threading, time

    rng = random.Random(int(sys.argv[1]))
    out = sys.stdout.buffer
    lock = threading.Lock()

    def raw(data):
        with lock:
            out.write(data)
            out.flush()

    def send(message):
        raw(json.dumps(message).encode() + b"\\n")

    def answer(request_id, delay=0.0):
        time.sleep(delay)
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "ok"}]}})

    def act(request_id):
        kind = rng.choice(["answer"] * 6 + ["late", "frame", "not-object", "odd-id", "flood", "stall", "deaf",
                                             "half", "exit", "close-stdout", "huge", "notify", "thread"])
        if kind == "answer":
            answer(request_id)
        elif kind == "late":
            answer(request_id, rng.uniform(0, 0.6))
        elif kind == "frame":
            raw(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))).replace(b"\\n", b"") + b"\\n")
        elif kind == "not-object":
            raw(rng.choice([b"[1, 2]\\n", b"null\\n", b'"hi"\\n', b"[" * 50_000 + b"\\n"]))
        elif kind == "odd-id":
            send({"jsonrpc": "2.0", "id": rng.choice([None, [request_id], {"id": request_id}, 1.5, True, 10**6]),
                  "result": {}})
            answer(request_id)
        elif kind == "flood":
            for n in range(rng.randrange(100, 30_000)):
                send({"jsonrpc": "2.0", "id": rng.choice([n, f"p{n}", [n]]), "method": rng.choice(["ping", "x"])})
            if rng.random() < 0.5:
                answer(request_id)
        elif kind == "stall":
            time.sleep(rng.uniform(0, 1.0))
        elif kind == "deaf":
            threading.Event().wait()
        elif kind == "half":
            raw(b'{"jsonrpc": "2.0", "id": ')
            time.sleep(rng.uniform(0, 1.0))
        elif kind == "exit":
            os._exit(rng.choice([0, 1, 3]))
        elif kind == "close-stdout":
            os.close(1)
        elif kind == "huge":
            raw(b"x" * 1_500_000 + b"\\n")
        elif kind == "notify":
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 1000}})
            answer(request_id)
        else:
            threading.Thread(target=answer, args=(request_id, rng.uniform(0, 0.4)), daemon=True).start()

    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        method, request_id = message["method"], message["id"]
        if method in ("server/discover", "initialize") and rng.random() < 0.85:
            if method == "server/discover":
                send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})
            else:
                send({"jsonrpc": "2.0", "id": request_id, "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "chaos"}}})
        else:
            act(request_id)
''')
TIMEOUT, PROBE, GRACE = 0.3, 0.3, 0.3
BIG = {"expression": "1+" * 150_000 + "1"}


def mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp-")]


def calls(client: MCPClient, rng: random.Random, overruns: list) -> None:
    """A few calls, each timed against its own timeout; any error is fine, a late return is not."""
    for _ in range(rng.randrange(1, 5)):
        arguments = BIG if rng.random() < 0.3 else {"expression": "1+1"}
        started = time.monotonic()
        try:
            client.call_tool("calculate", arguments)
        except MCPError:
            pass
        took = time.monotonic() - started
        if took > TIMEOUT + CALL_SLACK:
            overruns.append(took)


@pytest.mark.parametrize("case", range(40))
def test_the_client_against_a_hostile_server_always_ends_in_time(case, tmp_path):
    assert mcp_threads() == []
    script = tmp_path / "chaos.py"
    script.write_text(CHAOS)
    rng = random.Random(SEED + case)
    client = MCPClient([sys.executable, str(script), str(SEED + case)], timeout=TIMEOUT, probe_timeout=PROBE,
                       shutdown_grace=GRACE)
    overruns: list = []
    try:
        started = time.monotonic()
        try:
            within(10, client.proc.kill, client.connect)
            connected = True
        except (MCPError, MCPTimeoutError):
            connected = False
        assert time.monotonic() - started < PROBE + 2 * TIMEOUT + CALL_SLACK  # the probe, initialize, initialized
        if connected:
            workers = [threading.Thread(target=calls, args=(client, random.Random(rng.random()), overruns))
                       for _ in range(2)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(15)
            if any(worker.is_alive() for worker in workers):
                client.proc.kill()
                pytest.fail("a call did not return")
    finally:
        started = time.monotonic()
        within(10, client.proc.kill, client.close)
        closing = time.monotonic() - started
    assert overruns == [], f"calls took {overruns} s with a timeout of {TIMEOUT} s"
    assert closing < 3.0, f"close() took {closing:.1f} s"
    assert client.proc.returncode is not None and gone(client)
    assert mcp_threads() == []
