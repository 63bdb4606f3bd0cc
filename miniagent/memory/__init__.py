"""Long-term memory: facts kept in SQLite, found again by search, offered to the model as tools.

A conversation forgets everything when it ends; a memory outlives it. `Memory` keeps
short texts ("favourite colour: green") in a SQLite database (the standard library's
`sqlite3`; a file, or ":memory:" for a throwaway one) and finds them again:

- `search="like"`: `text LIKE '%' || ? || '%'`, a plain substring test. Simple, and it
  knows only "contains" or "does not": no ranking, and a question ("what is my
  favourite colour?") is not a substring of the fact that answers it.
- `search="fts5"` (the default): SQLite's full-text index, ranked by BM25. The query
  is split into words that are OR-ed, so the fact sharing the most (and the rarest)
  words comes first. The index uses the `trigram` tokenizer: the default tokenizer
  (`unicode61`) splits text at spaces and punctuation, and Chinese has neither between
  words, so "我住在北京市" is one token and "北京市" is never found in it. Trigram
  indexes every run of three characters, so any substring of three or more characters
  matches, in any language (a shorter query falls back to LIKE). Pass
  `tokenizer="unicode61"` to see the failure.

Three rules hold throughout, because whatever a user or a model writes is data:
every value reaches SQL as a bound parameter (`?`), never formatted into the SQL;
LIKE's wildcards (`%`, `_`) in a query are escaped, so they match themselves; and a
query becomes an FTS5 expression only as quoted strings, so FTS5's own syntax (`OR`,
`NEAR`, `*`, `"`, `:`) in it is literal text too.

Several threads and several processes may write at once: the database runs in WAL
mode (readers do not block the writer), a busy writer is waited for (`timeout`), and
within a process one lock serialises the use of the one connection. Nothing is lost.

`memory_tools(memory)` makes remember / recall / forget tools an `Agent` can call.
The storage sits behind the five methods of `Store`; a PostgreSQL backend for many
machines (`pg.py` in this folder) implements the same five, and the tools work with either.
`StructuredMemory` (`structured.py`) is memory within one conversation: a context policy
that keeps the facts a tight window would drop.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sqlite3
import threading
from dataclasses import dataclass
from typing import Iterable, Literal, Protocol

from miniagent.memory.structured import StructuredMemory  # noqa: F401 (exported here)
from miniagent.tools import Tool, tool

# --- bounds ------------------------------------------------------------------------

MAX_TEXT_CHARS = 10_000  # one memory: a fact or a note, not a document
MAX_QUERY_CHARS = 1_000
MAX_SUBJECT_CHARS = 200
MAX_TAGS, MAX_TAG_CHARS = 20, 50
MAX_LIMIT = 100  # results per recall
MAX_TERMS = 32  # OR-ed terms in one FTS5 query, so a long question stays cheap
DEFAULT_TIMEOUT = 10.0  # seconds to wait for another writer before giving up

TRIGRAM_MIN_CHARS = 3  # trigram can only match a term of at least three characters
TRIGRAM_SINCE = (3, 34, 0)  # SQLite 3.34.0 (December 2020) added the trigram tokenizer
# The tokenizer is the one value that must be written into SQL (a CREATE statement
# takes no parameters), so only these exact names are accepted.
TOKENIZERS = ("trigram", "unicode61")


# --- what comes back ------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One memory. `score` ranks a recall (higher is better): the negated BM25 of FTS5;
    None when it came from LIKE, which only knows "matches", or from `all()`."""

    id: int
    text: str
    subject: str | None
    tags: tuple[str, ...]
    created: str  # UTC, ISO 8601, set by the database
    score: float | None = None


class Store(Protocol):
    """What a memory backend offers; `memory_tools` needs nothing more.

    `Memory` (SQLite, below) is one; a PostgreSQL backend is another with the same methods.
    """

    def remember(self, text: str, *, subject: str | None = None, tags: Iterable[str] = ()) -> int: ...
    def recall(self, query: str, *, limit: int = 5, subject: str | None = None) -> list[Record]: ...
    def forget(self, memory_id: int) -> bool: ...
    def all(self) -> list[Record]: ...
    def close(self) -> None: ...


# --- checking input (shared by every backend) -----------------------------------------------


def check_text(value: object, what: str = "text", *, limit: int = MAX_TEXT_CHARS) -> str:
    """`value` if it is a non-blank string SQLite can store whole; else a ValueError saying why."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{what} is empty; give some text")
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value):,} characters long; the limit is {limit:,}")
    if "\x00" in value:  # SQLite's text functions (and FTS5's query parser) stop at a NUL
        raise ValueError(f"{what} contains a NUL character (\\x00); remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} is not valid Unicode (it contains a lone surrogate)") from None
    return value


def check_subject(value: object) -> str | None:
    return None if value is None else check_text(value, "subject", limit=MAX_SUBJECT_CHARS)


def check_tags(tags: object) -> tuple[str, ...]:
    if isinstance(tags, str) or not isinstance(tags, Iterable):
        raise ValueError(f"tags must be a list of strings, got {type(tags).__name__}")
    tags = tuple(tags)
    if len(tags) > MAX_TAGS:
        raise ValueError(f"{len(tags)} tags; the limit is {MAX_TAGS}")
    return tuple(check_text(t, "a tag", limit=MAX_TAG_CHARS) for t in tags)


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def check_id(memory_id: object) -> int:
    if isinstance(memory_id, bool) or not isinstance(memory_id, int):
        raise ValueError(f"a memory id is an integer, got {memory_id!r}")
    return memory_id


# --- queries: user text in, safe SQL parameters out -------------------------------------------


def like_pattern(query: str) -> str:
    r"""The query with LIKE's wildcards escaped, for `LIKE '%' || ? || '%' ESCAPE '\'`.

    Unescaped, "50%" would match "50 euros" and "a_b" would match "axb". The escape
    character itself is escaped first, so "C:\new" stays C:\new.
    """
    return query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def fts5_string(term: str) -> str:
    """A term as an FTS5 string: in double quotes, with each `"` doubled.

    Inside a string FTS5 reads nothing as syntax, so OR, NEAR, `*`, `:` and `(` in a
    query are matched as the text they are, and a quote cannot end the string early.
    """
    return '"' + term.replace('"', '""') + '"'


_WORD = re.compile(r"\w+")
# Scripts written without spaces between words: kana, CJK ideographs.
_NO_SPACES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def query_terms(query: str, *, min_chars: int = 1) -> list[str]:
    """The terms a query is searched by: the whole query, then its words.

    The whole query first, so a memory containing it exactly ranks highest. Then each
    word, so "what is my favourite colour" also finds "favourite colour: green". Chinese
    or Japanese has no spaces, so a run of it is cut into overlapping pieces of three
    characters ("我最喜欢的" -> 我最喜, 最喜欢, 喜欢的), each of which trigram can match.
    Terms shorter than `min_chars` are dropped, repeats too, and at most MAX_TERMS are kept.
    """
    words: list[str] = []
    for word in _WORD.findall(query):
        if _NO_SPACES.search(word) and len(word) > TRIGRAM_MIN_CHARS:
            words += [word[i : i + TRIGRAM_MIN_CHARS] for i in range(len(word) - TRIGRAM_MIN_CHARS + 1)]
        else:
            words.append(word)
    terms, seen = [], set()
    for term in [query.strip(), *words]:
        if len(term) >= min_chars and term.casefold() not in seen:
            seen.add(term.casefold())
            terms.append(term)
    return terms[:MAX_TERMS]


def fts5_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression: the terms as quoted strings, OR-ed (any term may match)."""
    return " OR ".join(fts5_string(t) for t in terms)


# --- the SQLite memory -------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: a forgotten id is never reused
    text    TEXT NOT NULL,
    subject TEXT,
    tags    TEXT NOT NULL DEFAULT '[]',         -- a JSON array of strings
    created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
"""

# An external-content FTS5 table: an index of text and subject (what LIKE searches too);
# the text itself stays in `memories`. The triggers keep the two in step, whichever
# program (or process) writes.
_FTS_SCHEMA = (
    """CREATE VIRTUAL TABLE memories_fts USING fts5(
        text, subject, content='memories', content_rowid='id', tokenize='{tokenizer}')""",
    """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, text, subject) VALUES (new.id, new.text, new.subject);
    END""",
    """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text, subject)
        VALUES ('delete', old.id, old.text, old.subject);
    END""",
    """CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text, subject)
        VALUES ('delete', old.id, old.text, old.subject);
        INSERT INTO memories_fts(rowid, text, subject) VALUES (new.id, new.text, new.subject);
    END""",
)

_COLUMNS = "m.id, m.text, m.subject, m.tags, m.created"


class Memory:
    """Facts in a SQLite database, found again with LIKE or with FTS5 (BM25, trigram).

    `path` is a file (shared by every process that opens it) or ":memory:" (private to
    this object, gone when it closes). `search` picks how `recall` finds memories;
    `tokenizer` is FTS5's ("trigram", or "unicode61" to show why trigram is needed).
    A file's index keeps the tokenizer it was created with. `timeout` is how long a
    write waits for another process's write to finish.

        with Memory("memory.db") as memory:
            memory.remember("favourite colour: green", subject="user")
            memory.recall("what is my favourite colour?")[0].text   # 'favourite colour: green'
    """

    def __init__(self, path: str | os.PathLike = ":memory:", *, search: Literal["fts5", "like"] = "fts5",
                 tokenizer: str = "trigram", timeout: float = DEFAULT_TIMEOUT) -> None:
        if search not in ("fts5", "like"):
            raise ValueError(f"search must be 'fts5' or 'like', got {search!r}")
        if tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {tokenizer!r}")
        if not isinstance(path, (str, os.PathLike)):
            raise ValueError(f"path must be a file path or ':memory:', got {type(path).__name__}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise ValueError(f"timeout must be a number of seconds (0 or more), got {timeout!r}")
        if search == "fts5":
            _check_sqlite(tokenizer)
        self.path, self.search, self.tokenizer = os.fspath(path), search, tokenizer
        # One connection, used under one lock: safe from any thread (the tool registry runs
        # tools in threads of their own). isolation_level=None: every statement is its own
        # transaction, unless we say BEGIN; `timeout` is SQLite's busy_timeout.
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.OperationalError as exc:
            raise sqlite3.OperationalError(f"cannot open the memory at {self.path!r}: {exc} (does its folder "
                                           "exist, and may this program write there?)") from None
        self._lock = threading.Lock()
        try:
            self._db.execute("PRAGMA journal_mode=WAL")  # readers and one writer at the same time
            self._db.execute("PRAGMA synchronous=NORMAL")  # safe in WAL; no fsync on every commit
            self._create_schema()
        except BaseException:
            self._db.close()
            raise

    def _create_schema(self) -> None:
        # BEGIN IMMEDIATE takes the write lock first, so two processes opening a new file at
        # once create the schema one after the other. The connection as a context manager
        # commits at the end, or rolls back if anything raised.
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(_SCHEMA)
            if self.search != "fts5":
                return
            row = self._db.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_fts'").fetchone()
            if row is None:
                for statement in _FTS_SCHEMA:
                    self._db.execute(statement.format(tokenizer=self.tokenizer))
                # Index what is already there (written before there was an index).
                self._db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
            elif f"tokenize='{self.tokenizer}'" not in row[0]:
                raise ValueError(f"{self.path} already has a full-text index with another tokenizer "
                                 f"({row[0].split('tokenize=')[-1].rstrip(')')}); open it with that "
                                 "tokenizer, or use a new file")

    # -- writing --

    def remember(self, text: str, *, subject: str | None = None, tags: Iterable[str] = ()) -> int:
        """Store `text` and return its id. `subject` is searched with the text; `tags` are kept
        with it as labels for your own use (recall does not search them)."""
        text, subject, tags = check_text(text), check_subject(subject), check_tags(tags)
        with self._lock:
            cursor = self._db.execute("INSERT INTO memories (text, subject, tags) VALUES (?, ?, ?)",
                                      (text, subject, json.dumps(tags, ensure_ascii=False)))
        return cursor.lastrowid

    def forget(self, memory_id: int) -> bool:
        """Delete memory `memory_id`; False if there was none."""
        with self._lock:
            cursor = self._db.execute("DELETE FROM memories WHERE id = ?", (check_id(memory_id),))
        return cursor.rowcount > 0

    # -- reading --

    def recall(self, query: str, *, limit: int = 5, subject: str | None = None) -> list[Record]:
        """The memories matching `query`, best first, at most `limit`; only `subject`'s if given.

        With `search="fts5"` the query's terms (see `query_terms`) are OR-ed and ranked by
        BM25. Trigram matches only terms of three or more characters: a query with none
        ("北京", "ok") falls back to LIKE, and its records have score None.
        """
        query = check_text(query, "query", limit=MAX_QUERY_CHARS).strip()
        limit, subject = check_limit(limit), check_subject(subject)
        if self.search == "fts5":
            terms = query_terms(query, min_chars=TRIGRAM_MIN_CHARS if self.tokenizer == "trigram" else 1)
            if terms:
                return self._recall_fts5(fts5_query(terms), limit, subject)
        return self._recall_like(query, limit, subject)

    def _recall_like(self, query: str, limit: int, subject: str | None) -> list[Record]:
        # LIKE has no relevance, so the newest come first. It ignores case for ASCII only.
        sql = (f"SELECT {_COLUMNS}, NULL FROM memories AS m "
               r"WHERE (m.text LIKE '%' || ? || '%' ESCAPE '\' OR m.subject LIKE '%' || ? || '%' ESCAPE '\')"
               " AND (? IS NULL OR m.subject = ?) ORDER BY m.id DESC LIMIT ?")
        pattern = like_pattern(query)
        return self._select(sql, (pattern, pattern, subject, subject, limit))

    def _recall_fts5(self, expression: str, limit: int, subject: str | None) -> list[Record]:
        # bm25() is lower for a better match, so the score is its negation.
        sql = (f"SELECT {_COLUMNS}, -bm25(memories_fts) AS score "
               "FROM memories_fts JOIN memories AS m ON m.id = memories_fts.rowid "
               "WHERE memories_fts MATCH ? AND (? IS NULL OR m.subject = ?) "
               "ORDER BY score DESC, m.id DESC LIMIT ?")
        return self._select(sql, (expression, subject, subject, limit))

    def all(self) -> list[Record]:
        """Every memory, oldest first."""
        return self._select(f"SELECT {_COLUMNS}, NULL FROM memories AS m ORDER BY m.id", ())

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM memories").fetchone()[0]

    def _select(self, sql: str, parameters: tuple) -> list[Record]:
        with self._lock:
            rows = self._db.execute(sql, parameters).fetchall()
        return [Record(id, text, subject, tuple(json.loads(tags)), created, score)
                for id, text, subject, tags, created, score in rows]

    # -- the connection --

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        index = f"fts5, {self.tokenizer}" if self.search == "fts5" else "like"
        return f"Memory({self.path!r}, search={index!r})"


def _check_sqlite(tokenizer: str) -> None:
    """Fail early, and say what to do, when this Python's SQLite cannot index with `tokenizer`."""
    if tokenizer == "trigram" and sqlite3.sqlite_version_info < TRIGRAM_SINCE:
        raise RuntimeError(
            f"this Python's SQLite is {sqlite3.sqlite_version}; the trigram tokenizer needs 3.34 or later. "
            "Use Memory(..., search='like'), or Memory(..., tokenizer='unicode61') (no Chinese substrings), "
            "or a newer Python (its sqlite3 module brings its own SQLite).")
    problem = _fts5_problem(tokenizer)
    if problem:
        raise RuntimeError(f"this Python's SQLite ({sqlite3.sqlite_version}) cannot build an FTS5 index "
                           f"({problem}); use Memory(..., search='like')")


@functools.lru_cache(maxsize=None)
def _fts5_problem(tokenizer: str) -> str | None:
    """Why an FTS5 table with `tokenizer` cannot be made here (SQLite built without FTS5), or None."""
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute(f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='{tokenizer}')")
    except sqlite3.OperationalError as exc:
        return str(exc)
    finally:
        probe.close()
    return None


# --- the tools -----------------------------------------------------------------------------------


def _line(record: Record) -> str:
    subject = f"[{record.subject}] " if record.subject else ""
    return f"#{record.id} {subject}{record.text}"


def memory_tools(memory: Store) -> list[Tool]:
    """remember, recall and forget as tools on `memory`, for `Agent(tools=[..., *memory_tools(m)])`.

    Each answers with short text that names the ids, so the model can forget a memory it recalled.
    """

    @tool
    def remember(text: str, subject: str | None = None) -> str:
        """Save a fact to long-term memory, to be recalled in later conversations. Use it when the
        user tells you something worth keeping (a name, a preference, a decision) or asks you to
        remember something. Save one short, self-contained fact per call.

        Args:
            text: The fact, written so it makes sense on its own, e.g. "The user's favourite colour is green."
            subject: Optional short label for what the fact is about, e.g. "user" or "project".
        """
        return f"Remembered as #{memory.remember(text, subject=subject)}."

    @tool
    def recall(query: str, limit: int = 5) -> str:
        """Search long-term memory for facts saved in earlier conversations, best match first.
        Use it before answering a question about the user or about earlier work.

        Args:
            query: Words to search for, e.g. "favourite colour" or a whole question.
            limit: The most memories to return (1 to 100).
        """
        found = memory.recall(query, limit=limit)
        if not found:
            return f"No memory matches {query!r}."
        return f"{len(found)} found:\n" + "\n".join(_line(r) for r in found)

    @tool
    def forget(memory_id: int) -> str:
        """Delete one memory by its id (the #number that recall shows). Use it when the user asks
        you to forget something or a saved fact is wrong.

        Args:
            memory_id: The id of the memory, e.g. 3 for #3.
        """
        if not memory.forget(memory_id):
            raise LookupError(f"there is no memory #{memory_id}; recall first to see the ids")
        return f"Forgot #{memory_id}."

    return [remember, recall, forget]
