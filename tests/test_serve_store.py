"""miniagent.serve.store: where the web service keeps conversations, held to one set of rules.

The same cases run on the in-memory store, on SQLite (two stores on one file: two workers)
and, under the `postgres` marker (make test-postgres), on PostgreSQL: a history stored and
read back whatever it holds, a lease taken by compare-and-set (one winner among workers that
ask at once; a holder that dies lets it expire; only the holder renews or releases it), the
least recently used idle conversation forgotten when full, and approvals asked by one worker
and answered at another, once. Then the service itself on a shared store: two apps on one
database (two workers) continue each other's conversations and answer each other's approvals.
"""

from __future__ import annotations

import asyncio
import os
import time

import httpx2
import pytest

pytest.importorskip("fastapi")  # an optional extra of the package (the course environment has it)

from test_serve import BASE, DELETE, WAIT, agents, deleting, events_of  # noqa: E402

from miniagent.serve import create_app  # noqa: E402
from miniagent.serve.store import (  # noqa: E402
    ApprovalClosed,
    ApprovalNotFound,
    ConversationBusy,
    ConversationNotFound,
    MemoryStore,
    SQLiteStore,
    open_store,
)

ODD = [{"role": "user", "content": "名字 \ud800 \x00 end"},  # Chinese, a lone surrogate, a NUL
       {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
LEASE = 30.0


def stores(kind: str, tmp_path, limit: int = 100):
    """Two handles on one store, as two workers have: the same object for memory (one process only)."""
    if kind == "memory":
        store = MemoryStore(limit)
        return store, store
    if kind == "sqlite":
        path = tmp_path / "conversations.db"
        return SQLiteStore(path, limit=limit), SQLiteStore(path, limit=limit)
    from test_postgres import new_schema  # a schema of its own, dropped with the test's server
    from miniagent.serve.store import PostgresStore
    _, dsn = new_schema(os.environ["MINIAGENT_PG_DSN"])
    return PostgresStore(dsn, limit=limit), PostgresStore(dsn, limit=limit)


KINDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _available(request):
    if request.param == "postgres" and not os.environ.get("MINIAGENT_PG_DSN"):
        if os.environ.get("MINIAGENT_PG_REQUIRED") == "1":
            pytest.fail("MINIAGENT_PG_DSN is not set, but make test-postgres should have started a server and set it")
        pytest.skip("no PostgreSQL: set MINIAGENT_PG_DSN (make test-postgres starts a throwaway server and sets it)")
    return request.param


@pytest.fixture(params=KINDS)
def kind(request):
    return _available(request)


@pytest.fixture(params=KINDS[1:])
def shared(request):
    """The stores that several workers can share."""
    return _available(request)


def closing(*handles):
    for handle in dict.fromkeys(handles):
        handle.close()


def test_a_history_is_kept_under_a_lease_that_only_its_holder_gives_back(kind, tmp_path):
    a, b = stores(kind, tmp_path)

    async def scenario():
        cid = await a.create("worker-a", LEASE)
        with pytest.raises(ConversationBusy):
            await b.acquire(cid, "worker-b", LEASE)  # leased to a from the start
        assert not await b.renew(cid, "worker-b", LEASE) and not await b.release(cid, "worker-b", [])
        assert await a.renew(cid, "worker-a", LEASE) and b.leased(cid)
        assert await a.release(cid, "worker-a", ODD)
        assert not a.leased(cid) and b.history(cid) == ODD
        assert await b.acquire(cid, "worker-b", LEASE) == ODD  # another worker continues it
        assert not await a.release(cid, "worker-a", [])  # a no longer holds it: nothing written
        assert await b.release(cid, "worker-b", None) and a.history(cid) == ODD  # None keeps what is stored
        with pytest.raises(ConversationNotFound):
            await b.acquire("no-such-id", "worker-b", LEASE)
        return cid

    try:
        cid = asyncio.run(scenario())
        assert len(a) == 1 and a.ids() == [cid] and len(cid) >= 22
    finally:
        closing(a, b)


def test_workers_asking_at_once_get_one_lease_and_a_dead_holders_expires(kind, tmp_path):
    a, b = stores(kind, tmp_path)

    async def scenario():
        cid = await a.create("first", LEASE)
        await a.release(cid, "first", [])
        tries = [(a if n % 2 else b).acquire(cid, f"worker-{n}", LEASE) for n in range(8)]
        outcomes = await asyncio.gather(*tries, return_exceptions=True)
        winners = [o for o in outcomes if not isinstance(o, BaseException)]
        assert len(winners) == 1 and all(isinstance(o, ConversationBusy) for o in outcomes if o not in winners)

        dead = await a.create("dies", 0.05)  # its holder never renews nor releases it
        deadline = time.monotonic() + WAIT
        while True:
            try:
                return await b.acquire(dead, "survivor", LEASE)
            except ConversationBusy:
                assert time.monotonic() < deadline, "the dead worker's lease never expired"
                await asyncio.sleep(0.01)

    try:
        assert asyncio.run(scenario()) == []
    finally:
        closing(a, b)


def test_when_full_the_least_recently_used_idle_conversation_goes(kind, tmp_path):
    a, b = stores(kind, tmp_path, limit=2)

    async def scenario():
        first = await a.create("w", LEASE)
        second = await b.create("w", LEASE)
        assert await a.create("w", LEASE) is None  # both are running: nothing may go
        await a.release(first, "w", [])
        await a.release(second, "w", [])
        await a.release(first, "w", [])
        await b.acquire(first, "w", LEASE)
        await b.release(first, "w", [])  # first is now the more recently used
        third = await a.create("w", LEASE)
        return first, second, third

    try:
        first, second, third = asyncio.run(scenario())
        assert len(a) == 2 and set(a.ids()) == {first, third} and b.history(second) is None
    finally:
        closing(a, b)


def test_an_approval_asked_by_one_worker_is_answered_at_another_once(kind, tmp_path):
    a, b = stores(kind, tmp_path)

    async def scenario():
        cid = await a.create("runner", LEASE)
        await a.ask(cid, "ap1")
        assert b.waiting_approvals() == [(cid, "ap1")]
        waiting = asyncio.create_task(a.wait_answer(cid, "ap1", WAIT))
        await b.answer(cid, "ap1", False, "not now")
        got = await asyncio.wait_for(waiting, WAIT)
        with pytest.raises(ApprovalClosed) as twice:
            await b.answer(cid, "ap1", True, None)
        assert twice.value.answered

        await a.ask(cid, "ap2")
        timed_out = await a.wait_answer(cid, "ap2", 0.05)  # nobody answers in time: closed
        with pytest.raises(ApprovalClosed) as late:
            await b.answer(cid, "ap2", True, None)
        assert not late.value.answered

        await a.ask(cid, "ap3")
        await a.close_approvals(cid)  # the run is over (or stopped): nobody waits
        with pytest.raises(ApprovalClosed):
            await b.answer(cid, "ap3", True, None)
        with pytest.raises(ApprovalNotFound):
            await b.answer(cid, "made-up", True, None)
        await a.release(cid, "runner", [])
        await b.acquire(cid, "next-run", LEASE)  # a new run forgets the last one's approvals
        with pytest.raises(ApprovalNotFound):
            await a.answer(cid, "ap1", True, None)
        return got, timed_out

    try:
        got, timed_out = asyncio.run(scenario())
        assert got == (False, "not now") and timed_out is None and a.waiting_approvals() == []
    finally:
        closing(a, b)


def test_store_urls():
    assert isinstance(open_store("memory"), MemoryStore)
    for bad in ("redis://localhost", "sqlite://", "sqlite:///", "", 7):
        with pytest.raises(ValueError, match="memory', 'sqlite:///FILE' or 'postgresql://"):
            open_store(bad)
    with pytest.raises(ValueError, match="limit must be an integer of at least 1"):
        open_store("memory", limit=0)


# --- the service on a shared store: two apps on one file, as two workers --------------------------


def test_two_workers_on_one_store_continue_each_others_conversations_and_approvals(shared, tmp_path):
    delete_file, deleted = deleting()
    handles = stores(shared, tmp_path)
    apps = [create_app(agent_factory=agents(tools=[delete_file]), store=handle) for handle in handles]

    async def scenario():
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=apps[0]), base_url=BASE) as one, \
                httpx2.AsyncClient(transport=httpx2.ASGITransport(app=apps[1]), base_url=BASE) as two:
            first = (await one.post("/chat", json={"message": "Hi, my name is Ada."})).json()
            cid = first["conversation_id"]
            follow_up = await two.post("/chat", json={"message": "What is my name?", "conversation_id": cid})
            stream = asyncio.create_task(one.post("/chat/stream", json={"message": DELETE, "conversation_id": cid}))
            store = apps[1].state.service.conversations
            deadline = time.monotonic() + WAIT
            while not store.waiting_approvals():
                assert time.monotonic() < deadline and not stream.done(), "no approval was asked"
                await asyncio.sleep(0.01)
            busy = await two.post("/chat", json={"message": "And now?", "conversation_id": cid})
            [(_, approval_id)] = store.waiting_approvals()
            answered = await two.post("/chat/approve", json={"conversation_id": cid, "approval_id": approval_id,
                                                             "approved": True})
            events = events_of((await asyncio.wait_for(stream, WAIT)).content)
            return follow_up, busy, answered, events, cid

    try:
        follow_up, busy, answered, events, cid = asyncio.run(scenario())
        history = handles[0].history(cid)
    finally:
        closing(*handles)
    workers = {app.state.service.owner for app in apps}
    assert len(workers) == 2 and follow_up.headers["x-miniagent-worker"] == apps[1].state.service.owner
    assert follow_up.status_code == 200 and "Ada" in follow_up.json()["text"]
    assert busy.status_code == 409 and answered.status_code == 200
    assert deleted == ["notes.txt"] and events[-1][0] == "done" and events[-1][1]["ok"]
    assert [m["content"] for m in history if m["role"] == "user" and isinstance(m["content"], str)] == \
        ["Hi, my name is Ada.", "What is my name?", DELETE]
    results = [b for m in history if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
    assert [r["content"] for r in results] == ["deleted notes.txt"]  # run once, where it was approved


def test_the_module_app_is_made_on_first_use_from_the_environment(monkeypatch, tmp_path):
    """`uvicorn miniagent.serve:app` loads it; importing the module alone builds nothing (and needs no key)."""
    import miniagent.serve as serve

    monkeypatch.delitem(vars(serve), "app", raising=False)
    monkeypatch.setenv("MINIAGENT_SERVE_STORE", f"sqlite:///{tmp_path / 'conversations.db'}")
    assert "app" not in vars(serve)
    app = serve.app
    try:
        assert serve.app is app and isinstance(app.state.service.conversations, SQLiteStore)
    finally:
        app.state.service.conversations.close()
        monkeypatch.delitem(vars(serve), "app")
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        serve.nope  # noqa: B018


def test_the_command_line_refuses_workers_without_a_shared_store(capsys):
    from miniagent.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--offline", "--workers", "2"])
    assert exit_.value.code == 2 and "--store sqlite:///conversations.db" in capsys.readouterr().err
    assert main(["serve", "--offline", "--port", "0", "--store", "redis://localhost"]) == 2
    assert "unknown conversation store 'redis://localhost'" in capsys.readouterr().err
