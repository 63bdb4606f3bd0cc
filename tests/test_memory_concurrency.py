"""Concurrent writers lose nothing: ten threads x 1,000 memories, and two processes at once.

Marked `memory` (a few seconds): `make test-memory` runs it, `make test` does not.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from miniagent.memory import MAX_LIMIT, Memory

pytestmark = pytest.mark.memory

THREADS, EACH = 10, 1_000


def write_from_threads(target) -> None:
    """Run target(k) in THREADS threads started together; re-raise the first failure."""
    start = threading.Barrier(THREADS)
    failures: list[BaseException] = []

    def run(k: int) -> None:
        try:
            start.wait()
            target(k)
        except BaseException as exc:  # noqa: BLE001 - reported below, on the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


def check_all_there(memory: Memory) -> None:
    records = memory.all()
    assert len(memory) == len(records) == THREADS * EACH
    assert {r.text for r in records} == {f"thread {k} memory {i} of {EACH}" for k in range(THREADS) for i in range(EACH)}
    assert len({r.id for r in records}) == THREADS * EACH
    assert memory.recall("thread 7 memory 999 of")[0].text == f"thread 7 memory 999 of {EACH}"
    assert len(memory.recall("memory 5", limit=MAX_LIMIT)) == MAX_LIMIT


@pytest.mark.parametrize("search", ["fts5", "like"])
def test_ten_threads_sharing_one_memory_lose_nothing(tmp_path, search):
    path = tmp_path / "memory.db"
    with Memory(path, search=search) as memory:
        ids: list[int] = []

        def write(k: int) -> None:
            for i in range(EACH):
                ids.append(memory.remember(f"thread {k} memory {i} of {EACH}"))

        write_from_threads(write)
        assert sorted(ids) == list(range(1, THREADS * EACH + 1))
    with Memory(path) as memory:  # and it is all in the file
        check_all_there(memory)


def test_ten_threads_each_with_its_own_connection_lose_nothing(tmp_path):
    """Ten connections to one file: SQLite's own locking (WAL, busy_timeout) keeps them apart."""
    path = tmp_path / "memory.db"
    Memory(path).close()  # the schema first, so the threads measure writing only

    def write(k: int) -> None:
        with Memory(path) as memory:
            for i in range(EACH):
                memory.remember(f"thread {k} memory {i} of {EACH}")

    write_from_threads(write)
    with Memory(path) as memory:
        check_all_there(memory)


def test_readers_see_whole_memories_while_writers_write(tmp_path):
    path = tmp_path / "memory.db"
    with Memory(path) as writer, Memory(path) as reader:
        done = threading.Event()
        seen: list[int] = []

        def write() -> None:
            for i in range(2_000):
                writer.remember(f"note {i} about the weather")
            done.set()

        thread = threading.Thread(target=write)
        thread.start()
        while not done.is_set():
            found = reader.recall("about the weather", limit=MAX_LIMIT)
            assert all(r.text.endswith("about the weather") for r in found)
            seen.append(len(reader))
        thread.join()
        assert seen == sorted(seen)  # the count only grows
        assert len(reader) == 2_000


WRITER = """
import pathlib, sys, time
from miniagent.memory import Memory
path, name, go = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
with Memory(path) as memory:
    while not go.exists():
        time.sleep(0.005)
    for i in range(1000):
        memory.remember(f"process {name} memory {i}")
"""


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path, go = tmp_path / "memory.db", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(go)], stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    time.sleep(0.3)  # both have opened the file (and raced to create its schema)
    go.touch()
    for proc in procs:
        _, errors = proc.communicate(timeout=120)
        assert proc.returncode == 0, errors
    with Memory(path) as memory:
        assert {r.text for r in memory.all()} == {f"process {n} memory {i}" for n in "ab" for i in range(1000)}
        assert memory.recall("process b memory 999")[0].text == "process b memory 999"
