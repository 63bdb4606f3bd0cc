"""The web service as several worker processes on one shared store, as notebook 07 tells a reader to run it.

Marked `workers` (a few seconds: four processes start on two cores): `make test-workers` runs
these; `make test` leaves them out. The command is read from the saved output of notebook 07
and run as printed (with `--port 0` added, in a folder of its own), offline, with leases of one
second so that a dead worker's expire quickly. Each answer names the worker that gave it
(`x-miniagent-worker`), which shows the requests really reach different processes.

- follow-ups land on whichever worker takes them, and continue the conversation;
- one conversation is never run by two workers at once: questions sent together to one
  conversation are each answered (200) or refused (409), and the stored history holds
  exactly the answered ones, none lost, none twice;
- a worker killed (SIGKILL) loses nothing: its conversations are still there, and the
  supervisor starts another worker;
- approvals land wherever: a run waiting at one worker is approved through another
  (`uvicorn ... --factory` with an agent that has a tool needing approval, as a reader
  would serve their own agent); a worker killed while its run waits leaves the
  conversation locked for its lease only, with the question never recorded;
- `uvicorn miniagent.serve:app --workers 4`, the issue's command, loads and serves.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

pytest.importorskip("fastapi")  # an optional extra of the package (the course environment has it)

from test_serve import DELETE  # noqa: E402

from miniagent.serve.store import SQLiteStore  # noqa: E402

pytestmark = pytest.mark.workers

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "07_async_serving.ipynb"
START = 30.0  # seconds for four workers to start on a loaded 2-core machine: a bound, rarely approached
WAIT = 10.0
NAMES = ["Ada", "Grace", "Linus", "Barbara"]
WORKER = "x-miniagent-worker"


def printed_command(start: str) -> str:
    """The line of notebook 07's saved outputs that starts with `start` (a command it tells the reader to run)."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    printed = "".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                      for o in c.get("outputs", []))
    [command] = [line.strip() for line in printed.splitlines() if line.strip().startswith(start)]
    return command


class Served:
    """A server started from a command line, in `folder`; stopped (SIGINT, then killed) on exit."""

    def __init__(self, argv: list[str], folder: Path, port: int | None = None, **env: str) -> None:
        self.port = port
        environment = {**os.environ, "MINIAGENT_OFFLINE": "1", "MINIAGENT_SERVE_LEASE_SECONDS": "1",
                       "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]), **env}
        self.process = subprocess.Popen(argv, cwd=folder, env=environment, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)

    def __enter__(self) -> "Served":
        if self.port is None:  # our command line prints its address (the mode, then the address)
            lines = [self.process.stdout.readline() for _ in range(2)]
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", lines[1])
            assert found, f"no address in {lines!r}: {self.process.stderr.read() if self.process.poll() else ''}"
            self.port = int(found.group(1))
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + START
        while True:  # every worker takes connections once it has started: wait for the first answer
            assert self.process.poll() is None, self.process.stderr.read()
            try:
                httpx2.get(self.url + "/", timeout=1)
                return self
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "the server did not answer in time"
                time.sleep(0.05)

    def __exit__(self, *exc_info: object) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(WAIT)
        finally:
            self.process.kill()
            self.process.wait(WAIT)

    def workers(self) -> set[int]:
        """The worker processes alive now (the supervisor's children that are not its resource tracker)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return {int(pid) for pid in children
                if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")}


def post(url: str, path: str, body: dict) -> httpx2.Response:
    """One request on a connection of its own, so that any worker may take it."""
    return httpx2.post(url + path, json=body, timeout=WAIT, headers={"connection": "close"})


def pid_of(response: httpx2.Response) -> int:
    return int(response.headers[WORKER].split(".")[0])


def user_questions(history: list[dict]) -> list[str]:
    return [m["content"] for m in history if m["role"] == "user" and isinstance(m["content"], str)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_printed_command_serves_one_set_of_conversations_from_four_workers(tmp_path):
    command = printed_command("python -m miniagent serve --workers 4 ")
    assert "--store sqlite:///" in command
    store = tmp_path / command.split("sqlite:///")[1].split()[0]
    argv = [sys.executable, *command.split()[1:], "--port", "0"]  # `python` is this interpreter; a free port
    one_set_of_conversations(argv, tmp_path, lambda: SQLiteStore(store))


@pytest.mark.postgres
def test_the_same_on_postgresql(tmp_path):
    """As above, with the store on a PostgreSQL server (make test-postgres starts one): workers on any machine."""
    if not os.environ.get("MINIAGENT_PG_DSN"):
        pytest.skip("no PostgreSQL: set MINIAGENT_PG_DSN (make test-postgres starts a throwaway server and sets it)")
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict
    from test_postgres import new_schema

    from miniagent.serve.store import PostgresStore
    _, dsn = new_schema(os.environ["MINIAGENT_PG_DSN"])
    parts = conninfo_to_dict(dsn)
    url = f"postgresql://{parts['user']}@{parts['host']}:{parts['port']}/{parts['dbname']}?options=" + \
        quote(parts["options"])
    argv = [sys.executable, "-m", "miniagent", "serve", "--workers", "4", "--store", url, "--port", "0"]
    one_set_of_conversations(argv, tmp_path, lambda: PostgresStore(dsn))


def one_set_of_conversations(argv: list[str], folder: Path, open_store) -> None:
    """Four workers on one store: follow-ups anywhere, one run at a time per conversation, a worker killed."""
    with Served(argv, folder) as served:
        store = open_store()
        conversations, seen = {}, set()
        for name in NAMES:  # a conversation each, then follow-ups, each on a connection of its own
            first = post(served.url, "/chat", {"message": f"Hi, my name is {name}."})
            conversations[first.json()["conversation_id"]] = name
            seen.add(pid_of(first))
        follow_ups = [post(served.url, "/chat", {"message": "What is my name?", "conversation_id": cid})
                      for cid in conversations for _ in range(2)]
        seen |= {pid_of(r) for r in follow_ups}

        busy = next(iter(conversations))  # eight questions to one conversation at once
        async def together():
            async def one(n):
                async with httpx2.AsyncClient(timeout=WAIT) as http:
                    return await http.post(served.url + "/chat", json={"message": f"What is {n} + {n}?",
                                                                       "conversation_id": busy})
            return await asyncio.gather(*(one(n) for n in range(8)))
        burst = asyncio.run(together())

        victim = pid_of(follow_ups[0])
        before = served.workers()
        os.kill(victim, signal.SIGKILL)  # a worker dies: what it served must still be there
        after_kill = [post(served.url, "/chat", {"message": "What is my name?", "conversation_id": cid})
                      for cid in conversations]
        deadline = time.monotonic() + START
        while len(served.workers() - (before - {victim})) < 1 or victim in served.workers():
            assert time.monotonic() < deadline, "no worker replaced the one that died"
            time.sleep(0.05)
        histories = {cid: store.history(cid) for cid in conversations}
        store.close()

    assert len(seen) >= 2, f"every request reached the same worker ({seen}): the test proves nothing"
    assert all(r.status_code == 200 for r in follow_ups + after_kill)
    for response, (cid, name) in zip(follow_ups[::2], conversations.items()):
        assert response.json()["conversation_id"] == cid and name in response.json()["text"]
    for response, name in zip(after_kill, conversations.values()):
        assert name in response.json()["text"]  # nothing lost with the worker
    assert {r.status_code for r in burst} <= {200, 409} and any(r.status_code == 200 for r in burst)
    answered = sorted(r.json()["text"] for r in burst if r.status_code == 200)
    asked = [q for q in user_questions(histories[busy]) if "+" in q]
    assert len(asked) == len(answered) and len(set(asked)) == len(asked)  # each answered one kept, once
    for cid, name in conversations.items():
        questions = user_questions(histories[cid])
        assert questions[:3] == [f"Hi, my name is {name}.", "What is my name?", "What is my name?"]
        assert questions[-1] == "What is my name?" and len(questions) == 4 + (len(asked) if cid == busy else 0)


class FileList(list):
    """A list whose appends are also written to a file: what a tool in a worker process did, seen by the test."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def append(self, item: str) -> None:
        super().append(item)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(item + "\n")


def approval_app():
    """What `uvicorn test_serve_workers:approval_app --factory` serves: the default service, plus a tool
    that needs approval (it records each real call in deleted.txt, in the server's folder)."""
    from agent_fakes import deleting_tool

    from miniagent.aclient import connect_async
    from miniagent.aloop import AsyncAgent
    from miniagent.builtin_tools import default_tools
    from miniagent.serve import create_app

    tools = default_tools()
    tools.register(deleting_tool(FileList(Path("deleted.txt"))))
    client = connect_async(quiet=True)
    return create_app(agent_factory=lambda: AsyncAgent(client=client, tools=tools, stream=True))


def uvicorn_command(app: str, port: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "uvicorn", app, "--workers", "4", "--port", str(port), "--log-level", "warning",
            "--http", "miniagent.serve:GuardedH11Protocol", *extra]


class Stream:
    """A streamed question read event by event, over a connection of its own (closed with `close`)."""

    def __init__(self, url: str, body: dict) -> None:
        self.http = httpx2.Client(timeout=WAIT)
        self.response = self.http.send(self.http.build_request("POST", url + "/chat/stream", json=body), stream=True)
        self.lines = self.response.iter_lines()

    def until(self, wanted: str) -> dict:
        """The data of the next `wanted` event (skipping the others)."""
        name = None
        for line in self.lines:
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: ") and name == wanted:
                return json.loads(line[len("data: "):])
        raise AssertionError(f"the stream ended without an {wanted!r} event")

    def close(self) -> None:
        self.response.close()
        self.http.close()


def test_approvals_land_on_whichever_worker_and_a_dead_runner_frees_its_conversation(tmp_path):
    store_url = "sqlite:///conversations.db"
    port = free_port()
    with Served(uvicorn_command("test_serve_workers:approval_app", port, "--factory"), tmp_path, port,
                MINIAGENT_SERVE_STORE=store_url) as served:
        crossed, rounds = 0, 0
        while not crossed:  # until an answer has reached another worker than the one waiting for it
            rounds += 1
            assert rounds <= 12, "every answer reached the worker that waited for it: the test proves nothing"
            stream = Stream(served.url, {"message": DELETE})
            asking, runner = stream.until("approval"), pid_of(stream.response)
            answer = post(served.url, "/chat/approve", {"conversation_id": asking["conversation_id"],
                                                        "approval_id": asking["approval_id"], "approved": True})
            assert answer.status_code == 200, answer.text
            crossed += pid_of(answer) != runner
            done = stream.until("done")
            assert done["ok"] and "deleted notes.txt" in done["text"], done
            stream.close()

        stream = Stream(served.url, {"message": DELETE})  # then the worker whose run waits dies
        asking, runner = stream.until("approval"), pid_of(stream.response)
        cid = asking["conversation_id"]
        os.kill(runner, signal.SIGKILL)
        stream.close()
        late = post(served.url, "/chat/approve", {"conversation_id": cid, "approval_id": asking["approval_id"],
                                                  "approved": True})
        deadline, statuses = time.monotonic() + WAIT, []
        while True:  # locked until the dead worker's lease (1 s) runs out, then free
            again = post(served.url, "/chat", {"message": "What is 2 + 2?", "conversation_id": cid})
            statuses.append(again.status_code)
            if again.status_code != 409:
                break
            assert time.monotonic() < deadline, "the dead worker's conversation stayed locked"
            time.sleep(0.1)
        history = SQLiteStore(tmp_path / "conversations.db").history(cid)

    deleted = (tmp_path / "deleted.txt").read_text().split()
    assert deleted == ["notes.txt"] * rounds  # each approved call ran once, wherever it was approved
    assert again.status_code == 200 and "4" in again.json()["text"]
    assert late.status_code in (200, 409)  # answered into the store, or closed: never run (see deleted)
    assert user_questions(history) == ["What is 2 + 2?"]  # the dead run's question was never recorded


def test_uvicorns_own_command_line_loads_the_module_app_with_four_workers(tmp_path):
    """The notebook's other command, as printed: `NAME=value uvicorn miniagent.serve:app --workers 4 ...`."""
    assignment, *command = printed_command("MINIAGENT_SERVE_STORE=").split()
    assert command[:4] == ["uvicorn", "miniagent.serve:app", "--workers", "4"]
    name, _, value = assignment.partition("=")
    port = free_port()
    with Served([sys.executable, "-m", *command, "--port", str(port), "--log-level", "warning"], tmp_path, port,
                **{name: value}) as served:
        first = post(served.url, "/chat", {"message": "Hi, my name is Ada."})
        replies = [post(served.url, "/chat", {"message": "What is my name?",
                                              "conversation_id": first.json()["conversation_id"]}) for _ in range(6)]
    assert first.status_code == 200 and all(r.status_code == 200 and "Ada" in r.json()["text"] for r in replies)
    assert len({pid_of(r) for r in [first, *replies]}) >= 2
