"""Where the web service keeps its conversations: in its own memory, or in a database its workers share.

One process (the notebook, `python -m miniagent serve`) keeps them in memory: `MemoryStore`,
the default. Several workers (`--workers 4`) each have a memory of their own, and the next
request of a conversation may reach any of them, so they share a store instead:
`SQLiteStore` (a file: the workers of one machine) or `PostgresStore` (a server: workers on
several machines). `open_store(url)` opens one from "memory", "sqlite:///conversations.db"
(a path relative to the current folder; four slashes for an absolute one) or
"postgresql://user@host/db". The three keep the same things by the same rules:

- each conversation's history, by an unguessable id; at most `limit` conversations: when
  full, a new one takes the place of the least recently used one that nobody is running;
- a lease: the worker that runs a question in a conversation holds it (an owner and an
  expiry), taken by compare-and-set, so that one conversation is never run by two workers
  at once. The runner renews it while it runs; a worker that dies mid-run stops renewing,
  and the lease expires (after `lease` seconds), so the conversation is never locked for
  ever. Its history stays as it was before that question;
- the approvals a run waits for: asked by the worker running it, answered by whichever
  worker the person's answer reaches, and closed when the run stops waiting.

Every method that a request awaits is a coroutine. The database stores run each
statement in a thread, on one connection per process under a lock; a lease's expiry is
reckoned by the database's clock, so the workers' clocks need not agree. The few plain
methods (`len`, `ids`, `history`, `leased`, `waiting_approvals`) are for tests and
monitoring. Every value is a bound parameter; no text from a user is formatted into SQL.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sqlite3
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

APPROVAL_POLL_SECONDS = 0.1  # how often a run waiting in a database store looks for its answer
SQLITE_TIMEOUT_SECONDS = 5.0  # how long a statement waits for another process's write (SQLite's busy timeout)
SERVE_LOCK = 7_340_015  # PostgreSQL: the advisory lock that makes workers creating conversations take turns


class ConversationNotFound(LookupError):
    """No conversation has this id (never made, or forgotten to make room)."""


class ConversationBusy(Exception):
    """Another run holds the conversation's lease."""


class ApprovalNotFound(LookupError):
    """No approval of this conversation has this id."""


class ApprovalClosed(Exception):
    """The approval is not waiting any more: it was answered (`answered`), or nobody waits for it."""

    def __init__(self, answered: bool) -> None:
        super().__init__("answered already" if answered else "no longer waiting")
        self.answered = answered


Answer = tuple[bool, "str | None"]  # (approved, the person's reason)


def new_id() -> str:
    return secrets.token_urlsafe(18)  # 144 random bits: not guessable


# --- one process -----------------------------------------------------------------------------


@dataclass(eq=False)
class _Kept:
    history: list[dict]
    owner: str | None = None
    lease_until: float = 0.0  # time.monotonic()
    approvals: dict[str, asyncio.Future] = field(default_factory=dict)  # resolved with the answer, or cancelled


class MemoryStore:
    """The conversations in this process's memory: the default, for one process.

    Nothing here awaits between a check and the change it guards, so on one event loop
    no lock is needed. An approval is a Future that the answer resolves.
    """

    shared = False  # other processes never see it

    def __init__(self, limit: int = 100) -> None:
        self.limit = _positive(limit, "limit")
        self._by_id: OrderedDict[str, _Kept] = OrderedDict()  # the least recently used first

    async def create(self, owner: str, lease: float) -> str | None:
        """A new conversation, leased to `owner`; None when every one kept is running."""
        if len(self._by_id) >= self.limit:
            idle = next((cid for cid, kept in self._by_id.items() if not self._leased(kept)), None)
            if idle is None:
                return None
            self._close(self._by_id.pop(idle))
        cid = new_id()
        self._by_id[cid] = _Kept([], owner, time.monotonic() + lease)
        return cid

    async def acquire(self, cid: str, owner: str, lease: float) -> list[dict]:
        """Lease the conversation to `owner` and return its history; its earlier approvals are forgotten."""
        kept = self._get(cid)
        if self._leased(kept):
            raise ConversationBusy(cid)
        kept.owner, kept.lease_until = owner, time.monotonic() + lease
        self._close(kept)
        kept.approvals.clear()
        self._by_id.move_to_end(cid)
        return list(kept.history)

    async def renew(self, cid: str, owner: str, lease: float) -> bool:
        kept = self._by_id.get(cid)
        if kept is None or kept.owner != owner:
            return False
        kept.lease_until = time.monotonic() + lease
        return True

    async def release(self, cid: str, owner: str, history: list[dict] | None) -> bool:
        """Give the lease back, storing `history` (None: keep the stored one); False if the lease was lost."""
        kept = self._by_id.get(cid)
        if kept is None or kept.owner != owner:
            return False
        if history is not None:
            kept.history = list(history)
        kept.owner = None
        self._close(kept)
        return True

    async def ask(self, cid: str, approval_id: str) -> None:
        self._get(cid).approvals[approval_id] = asyncio.get_running_loop().create_future()

    async def wait_answer(self, cid: str, approval_id: str, timeout: float) -> Answer | None:
        """The answer, or None if none came within `timeout` seconds (the approval is then closed)."""
        try:  # wait_for cancels the future when time is up, or when the run is cancelled: it is closed
            return await asyncio.wait_for(self._get(cid).approvals[approval_id], timeout)
        except TimeoutError:
            return None

    async def answer(self, cid: str, approval_id: str, approved: bool, reason: str | None) -> None:
        kept = self._by_id.get(cid)
        future = kept.approvals.get(approval_id) if kept is not None else None
        if future is None:
            raise ApprovalNotFound(approval_id)
        if future.done():
            raise ApprovalClosed(answered=not future.cancelled())
        future.set_result((approved, reason))

    async def close_approvals(self, cid: str) -> None:
        """Nobody waits for the conversation's approvals any more: a late answer is refused."""
        kept = self._by_id.get(cid)
        if kept is not None:
            self._close(kept)

    def close(self) -> None:
        pass

    # -- for tests and monitoring --

    def __len__(self) -> int:
        return len(self._by_id)

    def ids(self) -> list[str]:
        """The conversations' ids, the least recently used first."""
        return list(self._by_id)

    def history(self, cid: str) -> list[dict] | None:
        kept = self._by_id.get(cid)
        return None if kept is None else list(kept.history)

    def leased(self, cid: str) -> bool:
        kept = self._by_id.get(cid)
        return kept is not None and self._leased(kept)

    def waiting_approvals(self) -> list[tuple[str, str]]:
        """(conversation id, approval id) of every approval waiting for an answer."""
        return [(cid, aid) for cid, kept in self._by_id.items() for aid, f in kept.approvals.items() if not f.done()]

    # -- inside --

    def _get(self, cid: str) -> _Kept:
        kept = self._by_id.get(cid)
        if kept is None:
            raise ConversationNotFound(cid)
        return kept

    @staticmethod
    def _leased(kept: _Kept) -> bool:
        return kept.owner is not None and kept.lease_until > time.monotonic()

    @staticmethod
    def _close(kept: _Kept) -> None:
        for future in kept.approvals.values():
            future.cancel()


# --- a database every worker shares -------------------------------------------------------------

SCHEMA = (  # the same text for SQLite and PostgreSQL
    """CREATE TABLE IF NOT EXISTS serve_conversations (
        id          text PRIMARY KEY,
        history     text NOT NULL,     -- JSON, ASCII only (a lone surrogate as its escape)
        owner       text,              -- the worker running a question in it, or NULL
        lease_until double precision,  -- when that lease expires: seconds since 1970, the database's clock
        used        bigint NOT NULL    -- when last run, as a count of runs: the least recently used goes first
    )""",
    "CREATE INDEX IF NOT EXISTS serve_conversations_used ON serve_conversations (used)",
    """CREATE TABLE IF NOT EXISTS serve_approvals (
        conversation_id text NOT NULL,
        id              text NOT NULL,
        state           text NOT NULL,  -- waiting, answered or closed (nobody waits: timed out, run over)
        approved        boolean,
        reason          text,
        PRIMARY KEY (conversation_id, id)
    )""",
)


class _DatabaseStore:
    """The rules of `MemoryStore` in SQL; a subclass says how to connect, bind and read the clock."""

    shared = True
    P = "?"     # the parameter marker
    NOW = ""    # the database's clock, in seconds since 1970

    def __init__(self, limit: int) -> None:
        self.limit = _positive(limit, "limit")
        self._lock = threading.Lock()
        sql = {"p": self.P, "now": self.NOW, "next_use": NEXT_USE}
        self._sql: dict[str, str] = {name: text.format(**sql) for name, text in _STATEMENTS.items()}

    # -- what the service awaits: each in a thread --

    async def create(self, owner: str, lease: float) -> str | None:
        return await self._call(self._create, owner, lease)

    async def acquire(self, cid: str, owner: str, lease: float) -> list[dict]:
        return await self._call(self._acquire, cid, owner, lease)

    async def renew(self, cid: str, owner: str, lease: float) -> bool:
        return await self._call(lambda: self._run("renew", (lease, cid, owner)) == 1)

    async def release(self, cid: str, owner: str, history: list[dict] | None) -> bool:
        return await self._call(self._release, cid, owner, None if history is None else _dump(history))

    async def ask(self, cid: str, approval_id: str) -> None:
        await self._call(self._run, "ask", (cid, approval_id))

    async def wait_answer(self, cid: str, approval_id: str, timeout: float) -> Answer | None:
        """Look for the answer every APPROVAL_POLL_SECONDS; when time is up, close the approval by
        compare-and-set (an answer that came in the meantime wins)."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                answer = await self._call(self._answer_of, cid, approval_id)
                if answer is not None:
                    return answer
                left = deadline - time.monotonic()
                if left <= 0:
                    closed = await self._call(self._run, "close_one", (cid, approval_id))
                    return None if closed else await self._call(self._answer_of, cid, approval_id)
                await asyncio.sleep(min(APPROVAL_POLL_SECONDS, left))
        except (ApprovalNotFound, ApprovalClosed):  # closed (or forgotten) under the run: no answer will come
            return None

    async def answer(self, cid: str, approval_id: str, approved: bool, reason: str | None) -> None:
        await self._call(self._answer, cid, approval_id, approved, reason)

    async def close_approvals(self, cid: str) -> None:
        await self._call(self._run, "close_all", (cid,))

    # -- for tests and monitoring --

    def __len__(self) -> int:
        return self._locked(lambda: self._rows("count", ())[0][0])

    def ids(self) -> list[str]:
        return [row[0] for row in self._locked(self._rows, "ids", ())]

    def history(self, cid: str) -> list[dict] | None:
        rows = self._locked(self._rows, "history", (cid,))
        return json.loads(rows[0][0]) if rows else None

    def leased(self, cid: str) -> bool:
        return bool(self._locked(self._rows, "leased", (cid,)))

    def waiting_approvals(self) -> list[tuple[str, str]]:
        return [tuple(row) for row in self._locked(self._rows, "waiting", ())]

    # -- the statements, under the lock, in a thread --

    def _create(self, owner: str, lease: float) -> str | None:
        with self._transaction(exclusive=True):  # count, forget, insert: one worker at a time
            if self._rows("count", ())[0][0] >= self.limit:
                idle = self._rows("idle", ())
                if not idle:
                    return None
                self._run("forget_approvals", (idle[0][0],))
                self._run("forget", (idle[0][0],))
            cid = new_id()
            self._run("create", (cid, owner, lease))
            return cid

    def _acquire(self, cid: str, owner: str, lease: float) -> list[dict]:
        with self._transaction():
            rows = self._rows("acquire", (owner, lease, cid))
            if not rows:
                raise ConversationBusy(cid) if self._rows("exists", (cid,)) else ConversationNotFound(cid)
            self._run("forget_approvals", (cid,))
            return json.loads(rows[0][0])

    def _release(self, cid: str, owner: str, history: str | None) -> bool:
        with self._transaction():
            if self._run("release", (history, cid, owner)) != 1:
                return False
            self._run("close_all", (cid,))
            return True

    def _answer_of(self, cid: str, approval_id: str) -> Answer | None:
        rows = self._rows("approval", (cid, approval_id))
        if not rows:
            raise ApprovalNotFound(approval_id)
        state, approved, reason = rows[0]
        if state == "answered":
            return bool(approved), reason
        if state == "closed":
            raise ApprovalClosed(answered=False)
        return None

    def _answer(self, cid: str, approval_id: str, approved: bool, reason: str | None) -> None:
        if self._run("answer", (approved, reason, cid, approval_id)) == 1:
            return
        rows = self._rows("approval", (cid, approval_id))
        if not rows:
            raise ApprovalNotFound(approval_id)
        raise ApprovalClosed(answered=rows[0][0] == "answered")

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return asyncio.to_thread(self._locked, fn, *args)

    def _locked(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            return fn(*args)

    # -- what a database says differently --

    @contextmanager
    def _transaction(self, exclusive: bool = False) -> Iterator[None]:
        """Its statements at once or not at all; `exclusive`: no other worker's in the meantime."""
        raise NotImplementedError

    def _run(self, name: str, parameters: tuple) -> int:
        """Run a statement; the number of rows it changed."""
        raise NotImplementedError

    def _rows(self, name: str, parameters: tuple) -> list[tuple]:
        raise NotImplementedError


# A count, not a clock: two uses in the same millisecond are still told apart (the index makes it cheap).
NEXT_USE = "(SELECT coalesce(max(used), 0) + 1 FROM serve_conversations)"

_STATEMENTS = {
    "count": "SELECT count(*) FROM serve_conversations",
    "ids": "SELECT id FROM serve_conversations ORDER BY used, id",
    "idle": "SELECT id FROM serve_conversations WHERE owner IS NULL OR lease_until < {now} ORDER BY used LIMIT 1",
    "forget": "DELETE FROM serve_conversations WHERE id = {p}",
    "forget_approvals": "DELETE FROM serve_approvals WHERE conversation_id = {p}",
    "create": "INSERT INTO serve_conversations (id, history, owner, lease_until, used) "
              "VALUES ({p}, '[]', {p}, {now} + {p}, {next_use})",
    # The compare-and-set: the lease is taken only if nobody holds it, or its holder's has expired.
    "acquire": "UPDATE serve_conversations SET owner = {p}, lease_until = {now} + {p}, used = {next_use} "
               "WHERE id = {p} AND (owner IS NULL OR lease_until < {now}) RETURNING history",
    "exists": "SELECT 1 FROM serve_conversations WHERE id = {p}",
    "renew": "UPDATE serve_conversations SET lease_until = {now} + {p} WHERE id = {p} AND owner = {p}",
    "release": "UPDATE serve_conversations SET owner = NULL, lease_until = NULL, used = {next_use}, "
               "history = COALESCE({p}, history) WHERE id = {p} AND owner = {p}",
    "history": "SELECT history FROM serve_conversations WHERE id = {p}",
    "leased": "SELECT 1 FROM serve_conversations WHERE id = {p} AND owner IS NOT NULL AND lease_until >= {now}",
    "ask": "INSERT INTO serve_approvals (conversation_id, id, state) VALUES ({p}, {p}, 'waiting')",
    "approval": "SELECT state, approved, reason FROM serve_approvals WHERE conversation_id = {p} AND id = {p}",
    "answer": "UPDATE serve_approvals SET state = 'answered', approved = {p}, reason = {p} "
              "WHERE conversation_id = {p} AND id = {p} AND state = 'waiting'",
    "close_one": "UPDATE serve_approvals SET state = 'closed' WHERE conversation_id = {p} AND id = {p} "
                 "AND state = 'waiting'",
    "close_all": "UPDATE serve_approvals SET state = 'closed' WHERE conversation_id = {p} AND state = 'waiting'",
    "waiting": "SELECT conversation_id, id FROM serve_approvals WHERE state = 'waiting' ORDER BY conversation_id, id",
}


class SQLiteStore(_DatabaseStore):
    """The conversations in a SQLite file, shared by every process of one machine that opens it.

    WAL, so readers never wait for the writer; BEGIN IMMEDIATE around each change of
    several rows, so two workers take turns; a writer waits up to SQLITE_TIMEOUT_SECONDS
    for another's write. Not on a network file system (SQLite's locks do not hold there):
    for several machines, `PostgresStore`.
    """

    NOW = "((julianday('now') - 2440587.5) * 86400.0)"

    def __init__(self, path: str | os.PathLike, *, limit: int = 100) -> None:
        super().__init__(limit)
        self.path = os.fspath(path)
        try:
            self._db = sqlite3.connect(self.path, timeout=SQLITE_TIMEOUT_SECONDS, isolation_level=None,
                                       check_same_thread=False)
        except sqlite3.OperationalError as exc:
            raise sqlite3.OperationalError(f"cannot open the conversation store {self.path!r}: {exc} (does its "
                                           "folder exist, and may this program write there?)") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # safe in WAL; no fsync on every commit
            with self._lock, self._transaction():
                for statement in SCHEMA:
                    self._db.execute(statement)
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _transaction(self, exclusive: bool = False) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")  # the write lock first (SQLite has one): always exclusive
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _run(self, name: str, parameters: tuple) -> int:
        return self._db.execute(self._sql[name], parameters).rowcount

    def _rows(self, name: str, parameters: tuple) -> list[tuple]:
        return self._db.execute(self._sql[name], parameters).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"


class PostgresStore(_DatabaseStore):
    """The conversations in a PostgreSQL database: for workers on several machines.

    One connection per process (autocommit, each change of several rows in a transaction);
    new conversations are made under an advisory lock, so that the count stays within the
    limit whichever workers make them at once. psycopg (`requirements-postgres.txt`) is
    imported when a store is opened, never by `import miniagent`.
    """

    P = "%s"
    NOW = "extract(epoch from clock_timestamp())::double precision"

    def __init__(self, dsn: str, *, limit: int = 100, connect_timeout: float = 10.0) -> None:
        from miniagent.memory.pg import _psycopg, create_schema

        super().__init__(limit)
        if not isinstance(dsn, str) or not dsn.strip():
            raise ValueError("dsn must be a PostgreSQL connection string, e.g. 'postgresql://user@host/db'")
        self._db = _psycopg().connect(dsn, autocommit=True, connect_timeout=max(1, round(connect_timeout)))
        try:
            create_schema(self._db, SCHEMA)
        except BaseException:
            self._db.close()
            raise

    @contextmanager
    def _transaction(self, exclusive: bool = False) -> Iterator[None]:
        with self._db.transaction():
            if exclusive:
                self._db.execute("SELECT pg_advisory_xact_lock(%s)", (SERVE_LOCK,))
            yield

    def _run(self, name: str, parameters: tuple) -> int:
        return self._db.execute(self._sql[name], parameters).rowcount

    def _rows(self, name: str, parameters: tuple) -> list[tuple]:
        cursor = self._db.execute(self._sql[name], parameters)
        return cursor.fetchall() if cursor.description is not None else []

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        from miniagent.memory.pg import describe
        return f"PostgresStore({describe(self._db)!r})"


# --- choosing one ---------------------------------------------------------------------------------

STORE_URLS = "'memory', 'sqlite:///FILE' or 'postgresql://user@host/db'"


def open_store(url: str, *, limit: int = 100) -> MemoryStore | SQLiteStore | PostgresStore:
    """The store a URL names: "memory", "sqlite:///relative/path.db", "sqlite:////absolute/path.db",
    or a PostgreSQL URL ("postgresql://..." or "postgres://...", passed to the driver as it is)."""
    if not isinstance(url, str):
        raise ValueError(f"a conversation store is named by a URL ({STORE_URLS}), got {type(url).__name__}")
    if url == "memory":
        return MemoryStore(limit)
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return SQLiteStore(url[len("sqlite:///"):], limit=limit)
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url, limit=limit)
    raise ValueError(f"unknown conversation store {url[:80]!r}: use {STORE_URLS}")


def _dump(history: list[dict]) -> str:
    return json.dumps(history, separators=(",", ":"))  # ASCII: a lone surrogate or a NUL travels as its escape


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer of at least 1, got {value!r}")
    return value
