"""Retrieval on PostgreSQL: `retrieval.Index`'s search (keyword, vector, hybrid) in a database many processes share.

`PostgresIndex(dsn, embed)` is a `retrieval.Index` whose chunks live in a PostgreSQL
table. Everything but storage is `retrieval`'s own: `split` makes the chunks, `terms`
what is indexed and searched (Chinese as overlapping character pairs), `rrf` fuses the
two rankings for "hybrid", `search_tool` and `evaluate` take either index.

- "keyword": a `tsvector` column built from the chunk's terms with the `english`
  configuration (stemmed, as SQLite's porter tokenizer: "flights" finds "flight"; CJK
  pairs pass through as they are), a GIN index, and the query's terms as an OR of
  `plainto_tsquery`s (no operator a user types is read as syntax), ranked by `ts_rank`.
  `ts_rank` weighs how often the terms occur, but not how rare they are in the table
  (BM25 does). Measured on the handbook (recall@3, tests/test_postgres.py): English 0.870
  as FTS5's BM25; Chinese 0.913 against 0.957; hybrid 0.957 in both, as on SQLite.
- "vector": with the pgvector extension (`CREATE EXTENSION vector` succeeds: PostgreSQL
  17 in Debian 13 has the package `postgresql-17-pgvector`), embeddings are a `vector`
  column and the database ranks by cosine distance (`<=>`). Debian 12 does not package
  pgvector for its PostgreSQL 15; there the embeddings are float32 bytes (`bytea`) and
  `retrieval.nearest` ranks them with numpy in this process, as `Index` does without
  sqlite-vec. `vector_engine` says which one runs.

Each index is one table, `chunks` by default: `table` names another, so one database
can hold several indexes. A table name is the one thing that cannot be a bound parameter,
so it must be a plain lower-case identifier, and goes into SQL quoted by psycopg's
`sql.Identifier`; every value is a bound parameter.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Iterable

from miniagent import retrieval
from miniagent.memory.pg import _psycopg, create_schema, describe
from miniagent.retrieval import Chunk, Embedder, _blobs, _indexed_text, nearest, normalised_matrix, terms, unique_terms

_TABLE = re.compile(r"[a-z_][a-z0-9_]{0,40}")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS {table} (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, source text NOT NULL, start integer NOT NULL,
        "end" integer NOT NULL, line_start integer NOT NULL, line_end integer NOT NULL, text text NOT NULL,
        title text NOT NULL, terms tsvector NOT NULL, embedding {vector_type})""",
    "CREATE INDEX IF NOT EXISTS {words_index} ON {table} USING gin (terms)",
)


class PostgresIndex(retrieval.Index):
    """Chunks in a PostgreSQL table, searchable by keyword, by vector and by both (see the module docstring)."""

    def __init__(self, dsn: str, embed: Embedder | None = None, *, table: str = "chunks",
                 pgvector: bool | None = None) -> None:
        if not isinstance(table, str) or not _TABLE.fullmatch(table):
            raise ValueError(f"table must be a lower-case name of letters, digits and _ (at most 41), got {table!r}")
        psycopg = _psycopg()
        from psycopg import sql
        self.db = psycopg.connect(dsn, autocommit=True)
        self._lock = threading.RLock()
        self.embed = embed
        self._matrix: Any = None
        self._sql = {"table": sql.Identifier(table), "words_index": sql.Identifier(f"{table}_terms")}
        try:
            if pgvector is not False:
                pgvector = _create_pgvector(self.db)
            self.vector_engine = "pgvector" if pgvector else "numpy"
            create_schema(self.db, [sql.SQL(s).format(vector_type=sql.SQL("vector" if pgvector else "bytea"),
                                                      **self._sql) for s in _SCHEMA])
        except BaseException:
            self.db.close()
            raise

    def _q(self, statement: str) -> Any:
        from psycopg import sql
        return sql.SQL(statement).format(**self._sql)

    def _add(self, chunks: list[Chunk], batch: int) -> None:
        insert = self._q('INSERT INTO {table} (source, start, "end", line_start, line_end, text, title, terms, '
                         "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s, to_tsvector('english', %s), "
                         + ("%s::vector)" if self.vector_engine == "pgvector" else "%s)"))
        with self.db.transaction():
            for first in range(0, len(chunks), batch):
                group = chunks[first:first + batch]
                vectors = self.embed([_indexed_text(c) for c in group]) if self.embed else [None] * len(group)
                values = [None if v is None else _vector_text(v) if self.vector_engine == "pgvector"
                          else _blobs([v])[0] for v in vectors]
                with self.db.cursor() as cursor:
                    cursor.executemany(insert, [
                        (c.source, c.start, c.end, c.line_start, c.line_end, c.text, c.title,
                         " ".join(terms(_indexed_text(c))), value) for c, value in zip(group, values)])
        self._matrix = None

    def __len__(self) -> int:
        with self._lock:
            return self.db.execute(self._q("SELECT count(*) FROM {table}")).fetchone()[0]

    def _keyword(self, query: str, k: int) -> list[tuple[int, float]]:
        words = unique_terms(query)
        if not words:
            return []
        rows = self.db.execute(self._q(
            "SELECT c.id, ts_rank(c.terms, q.query) AS score FROM {table} AS c, "
            "(SELECT string_agg('(' || p::text || ')', ' | ')::tsquery AS query "
            " FROM unnest(%s::text[]) AS w, plainto_tsquery('english', w) AS p WHERE numnode(p) > 0) AS q "
            "WHERE c.terms @@ q.query ORDER BY score DESC, c.id LIMIT %s"), (words, k)).fetchall()
        return [(rowid, float(score)) for rowid, score in rows]

    def _vector(self, query: str, k: int) -> list[tuple[int, float]]:
        if self.embed is None:
            raise ValueError("this index has no embedder: create it with PostgresIndex(dsn, embed=local_embedder()) "
                             "or api_embedder() for vector or hybrid search")
        if not query.strip():
            return []
        vector = self.embed([query[:retrieval.MAX_QUERY_CHARS]])[0]
        if self.vector_engine == "pgvector":
            rows = self.db.execute(self._q(
                "SELECT id, embedding <=> %s::vector AS d FROM {table} WHERE embedding IS NOT NULL "
                "ORDER BY d, id LIMIT %s"), (_vector_text(vector), k)).fetchall()
            return [(rowid, 1.0 - float(distance)) for rowid, distance in rows]
        if self._matrix is None:
            self._matrix = normalised_matrix([(i, bytes(b)) for i, b in self.db.execute(self._q(
                "SELECT id, embedding FROM {table} WHERE embedding IS NOT NULL ORDER BY id")).fetchall()])
        return nearest(self._matrix, _blobs([vector])[0], k)

    def titles(self) -> list[str]:
        with self._lock:
            rows = self.db.execute(self._q("SELECT title FROM {table} GROUP BY title ORDER BY min(id)")).fetchall()
        return [title for (title,) in rows if title]

    def _chunk(self, rowid: int) -> Chunk:
        row = self.db.execute(self._q('SELECT source, start, "end", line_start, line_end, text, title '
                                      "FROM {table} WHERE id = %s"), (rowid,)).fetchone()
        return Chunk(*row)

    def __repr__(self) -> str:
        return f"PostgresIndex({describe(self.db)!r}, vector_engine={self.vector_engine!r})"


def build(dsn: str, folder: Any, embed: Embedder | None = None, size: int = 500, overlap: int = 100,
          table: str = "chunks") -> PostgresIndex:
    """`retrieval.build` into a PostgreSQL table (emptied first, so building twice does not index twice)."""
    index = PostgresIndex(dsn, embed, table=table)
    with index._lock:
        index.db.execute(index._q("TRUNCATE {table}"))
    for document in retrieval.load(folder):
        index.add(retrieval.split(document, size, overlap))
    return index


def _create_pgvector(db: Any) -> bool:
    """True if pgvector's `vector` type can be used here: the extension is installed on the server and
    created in this database (now, if it was not), in a schema on this connection's search_path."""
    import psycopg
    try:
        with db.transaction():
            db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error:   # not installed on the server, or not allowed to create it
        return False
    return db.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()[0]


def _vector_text(vector: Iterable[float]) -> str:
    """A vector as pgvector's text input, '[0.1,0.2,...]' (passed as a parameter, cast with ::vector)."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"
