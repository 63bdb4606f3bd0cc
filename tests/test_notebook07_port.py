"""Notebook 07's service starts whatever holds a port: `miniagent.serve.serve_in_thread`.

The notebook used to start uvicorn on port 8707 in a thread and wait `while not
server.started`. With the port taken (the cell run twice, a second kernel, two learners
on one JupyterHub host) uvicorn's thread ended on the failed bind and the loop waited for
ever. Here the port is held by another socket: the helper on port 0 still serves, the
helper on the held port fails at once saying what to do, and the notebook's own serving
cells, run in a subprocess with the old ports held, finish within a bound (the
subprocess's timeout, not a sleep).
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx2
import pytest

pytest.importorskip("fastapi")  # an optional extra of the package (the course environment has it)

from miniagent.serve import PortInUseError, create_app, serve_in_thread  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "src" / "07_async_serving.py"
BOUND = 60  # seconds: what the notebook's cells may take in the subprocess; a hang is caught here


def held(port: int = 0) -> socket.socket | None:
    """A socket listening on `port` of 127.0.0.1, as another server would; None if something already has it."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None  # taken already: held all the same
    sock.listen()
    return sock


def test_a_free_port_serves_beside_a_held_one():
    holder = held()
    try:
        server, base = serve_in_thread(create_app())
        try:
            assert base.startswith("http://127.0.0.1:") and int(base.rsplit(":", 1)[1]) != holder.getsockname()[1]
            assert server.started
            assert httpx2.post(base + "/chat", json={"message": "Hello"}, timeout=10).status_code == 200
        finally:
            server.should_exit = True
    finally:
        holder.close()


def test_a_held_port_fails_at_once_and_says_what_to_do():
    holder = held()
    port = holder.getsockname()[1]
    try:
        started = time.perf_counter()
        with pytest.raises(PortInUseError) as caught:
            serve_in_thread(create_app(), port=port)
        assert time.perf_counter() - started < 2  # at once, not after a wait
        message = str(caught.value)
        assert f"port {port}" in message and "port=0" in message and "should_exit" in message
        assert isinstance(caught.value, OSError)
    finally:
        holder.close()


def test_a_server_that_stops_while_starting_is_an_error_not_a_wait():
    async def refuses(scope, receive, send):  # an app whose lifespan startup fails: uvicorn ends its thread
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.failed", "message": "no"})

    with pytest.raises(RuntimeError, match="stopped while starting"):
        serve_in_thread(refuses, lifespan="on", log_level="critical", timeout=30)


def serving_cells() -> str:
    """The notebook's set-up cell, then its cells from the one that starts its service to the one that
    starts its second (slow) service: one program, as a kernel would run them."""
    parts = NOTEBOOK.read_text().split("# %%")[1:]
    code = [part.split("\n", 1)[1] for part in parts if not part.startswith(" [markdown]")]
    first = next(i for i, cell in enumerate(code) if "create_app(agent_factory=new_agent)" in cell)
    last = next(i for i, cell in enumerate(code) if "slow_app = create_app(" in cell)
    return "\n".join([code[0], *code[first:last + 1]])


RUNNER = textwrap.dedent('''
    import ast, asyncio, sys
    source = sys.stdin.read()
    code = compile(source, "notebook 07", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace = {}

    async def main():
        made = eval(code, namespace)
        if made is not None:
            await made
        print("started:", namespace["server"].started, namespace["slow"].started)
        namespace["server"].should_exit = namespace["slow"].should_exit = True

    asyncio.run(main())
''')


def test_the_notebooks_serving_cells_start_with_its_old_ports_held():
    """8707 and 8708 were the notebook's ports: held, the old cells waited for ever; these must start."""
    holders = [held(8707), held(8708)]
    try:
        env = {**os.environ, "MINIAGENT_OFFLINE": "1"}
        try:
            run = subprocess.run([sys.executable, "-c", RUNNER], input=serving_cells(), capture_output=True,
                                 text=True, env=env, cwd=ROOT / "notebooks", timeout=BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail(f"notebook 07's serving cells still waited after {BOUND} s with ports 8707 and 8708 held")
        assert run.returncode == 0, run.stderr[-2000:]
        assert "started: True True" in run.stdout, run.stdout
    finally:
        for holder in holders:
            if holder is not None:
                holder.close()

