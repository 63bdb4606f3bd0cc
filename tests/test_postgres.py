"""The memory and retrieval behaviours again, on PostgreSQL (miniagent.memory.pg, miniagent.retrieval.pg).

Marked `postgres`: `make test-postgres` starts a throwaway server (scripts/with_postgres.sh),
exports MINIAGENT_PG_DSN and runs these; `make test` leaves them out. Without the variable
they skip and say why, except under `make test-postgres` (MINIAGENT_PG_REQUIRED=1), where
a missing server is a failure. Each test gets a schema of its own, dropped afterwards.

Most memory tests run on both backends (the `backend` fixture), so the two are held to
the same behaviour by the same lines, and the cases (FACTS, PAYLOADS, the thread writer)
are imported from the SQLite tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagent import retrieval
from miniagent.memory import MAX_LIMIT, Memory, Record, memory_tools
from miniagent.tools import ToolRegistry
from test_memory import FACTS, PAYLOADS, call, texts
from test_memory_concurrency import EACH, THREADS, check_all_there, write_from_threads
from test_retrieval import DOCS, bag_embed

pytestmark = pytest.mark.postgres

DSN = os.environ.get("MINIAGENT_PG_DSN")
REQUIRED = os.environ.get("MINIAGENT_PG_REQUIRED") == "1"


@pytest.fixture(scope="session")
def server() -> str:
    if not DSN:
        if REQUIRED:
            pytest.fail("MINIAGENT_PG_DSN is not set, but make test-postgres should have started a server and set it")
        pytest.skip("no PostgreSQL: set MINIAGENT_PG_DSN (make test-postgres starts a throwaway server and sets it)")
    import psycopg
    with psycopg.connect(DSN, autocommit=True) as db:   # pgvector, if the server has it, once in public for all
        if db.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone()[0]:
            try:
                db.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            except psycopg.errors.UniqueViolation:   # the other xdist worker made it at the same moment
                pass
    return DSN


def new_schema(server: str) -> tuple[str, str]:
    """A fresh schema, and a DSN whose connections use it (search_path), so tests never see each other's tables."""
    import psycopg
    from psycopg.conninfo import make_conninfo
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {name}")   # a name we made, not input
    return name, make_conninfo(server, options=f"-c search_path={name},public")


def drop_schema(server: str, name: str) -> None:
    import psycopg
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.fixture
def pg(server: str):
    """A DSN on a schema of this test's own."""
    name, dsn = new_schema(server)
    yield dsn
    drop_schema(server, name)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path):
    """A factory of memories of one backend, all in the same store: make(search="words"|"like")."""
    if request.param == "sqlite":
        path = tmp_path / "memory.db"
        yield lambda search="words": Memory(path, search={"words": "fts5", "like": "like"}[search])
        return
    from miniagent.memory.pg import PostgresMemory
    dsn = request.getfixturevalue("pg")
    yield lambda search="words": PostgresMemory(dsn, search={"words": "fts", "like": "like"}[search])


MODES = ["words", "like"]


def filled(make, search="words"):
    memory = make(search)
    for fact in FACTS:
        memory.remember(fact)
    return memory


def schema(memory) -> list[tuple]:
    """The tables, indexes and columns of the store: unchanged by anything a user writes."""
    if isinstance(memory, Memory):
        return memory._db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    with memory._lock:
        return memory._db.execute(
            "SELECT c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace AND n.nspname = current_schema() "
            "LEFT JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 ORDER BY 1, 3").fetchall()


# --- remember, recall, forget: the same tests on both backends ----------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_remember_returns_ids_and_all_lists_them_oldest_first(backend, mode):
    with backend(mode) as memory:
        first = memory.remember("favourite colour: green", subject="user", tags=["preference", "颜色"])
        second = memory.remember("the project is called miniagent")
        assert second == first + 1
        records = memory.all()
        assert texts(records) == ["favourite colour: green", "the project is called miniagent"]
        assert records[0] == Record(first, "favourite colour: green", "user", ("preference", "颜色"),
                                    records[0].created, None)
        assert records[1].subject is None and records[1].tags == ()
        assert records[0].created.endswith("Z") and records[0].created[4] == "-" and len(records[0].created) == 20
        assert len(memory) == 2


@pytest.mark.parametrize("mode", MODES)
def test_forget_removes_it_and_its_id_is_never_reused(backend, mode):
    with backend(mode) as memory:
        keep = memory.remember("favourite colour: green")
        gone = memory.remember("favourite food: noodles")
        assert set(texts(memory.recall("favourite"))) == {"favourite food: noodles", "favourite colour: green"}
        assert memory.forget(gone) is True and memory.forget(gone) is False
        assert texts(memory.recall("favourite")) == ["favourite colour: green"]
        assert texts(memory.recall("noodles")) == []
        assert memory.remember("favourite drink: tea") == gone + 1
        assert [r.id for r in memory.all()] == [keep, gone + 1]


def test_recall_by_subject_and_limit_and_the_subject_is_searched(backend):
    with backend() as memory:
        for i in range(8):
            memory.remember(f"note number {i} about the garden", subject="garden" if i % 2 else "house")
        assert len(memory.recall("garden", limit=3)) == 3
        found = memory.recall("note number", subject="house", limit=MAX_LIMIT)
        assert {r.subject for r in found} == {"house"} and len(found) == 4
        memory.remember("green", subject="favourite colour")
        assert texts(memory.recall("favourite colour")) == ["green"]


def test_like_finds_substrings_but_not_a_question(backend):
    with filled(backend, "like") as memory:
        assert texts(memory.recall("favourite colour")) == ["favourite colour: green"]
        assert memory.recall("what is my favourite colour?") == []
        assert all(r.score is None for r in memory.recall("e"))
        assert texts(memory.recall("e"))[:2] == ["500 euros", "50% off everything"]  # newest first


def test_full_text_ranks_the_answer_to_a_question_first(backend):
    with filled(backend) as memory:
        found = memory.recall("what is my favourite colour?")
        assert found[0].text == "favourite colour: green"
        assert "I like what I see" in texts(found)  # shares "what": found, but ranked lower
        assert found[0].score > found[1].score > 0
        assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)


def test_full_text_ranks_the_more_matching_and_repeated_word_higher(backend):
    with backend() as memory:
        for text in ["the cat sat", "the dog sat", "a dog and a dog", "a dog and a cat", "the sun", "the moon"]:
            memory.remember(text)
        assert texts(memory.recall("the cat"))[0] == "the cat sat"
        assert texts(memory.recall("dog"))[0] == "a dog and a dog"
        assert texts(memory.recall("the dog sat"))[0] == "the dog sat"


@pytest.mark.parametrize("mode", MODES)
def test_like_wildcards_in_a_query_match_themselves(backend, mode):
    with filled(backend, mode) as memory:
        assert texts(memory.recall("50%")) == ["50% off everything"]
        assert texts(memory.recall("a_b")) == ["a_b"]
        assert texts(memory.recall("%")) == ["50% off everything"]
        assert texts(memory.recall("_")) == ["a_b"]


def test_chinese_substrings_and_questions_are_found(backend):
    with filled(backend) as memory:
        assert texts(memory.recall("北京市")) == ["我住在北京市"]
        assert texts(memory.recall("北京")) == ["我住在北京市"]   # two characters: a substring test on both
        assert texts(memory.recall("我住在哪里")) == ["我住在北京市"]  # shares 我住在
        assert texts(memory.recall("我最喜欢什么颜色？"))[0] == "我最喜欢的颜色是绿色"


def test_english_substrings_are_found_whatever_the_case(backend):
    with filled(backend) as memory:
        assert texts(memory.recall("olou")) == ["favourite colour: green"]
        assert texts(memory.recall("FAVOURITE")) == ["favourite colour: green"]
        assert texts(memory.recall("Re")) == ["my dog is called Rex", "favourite colour: green"]


def test_postgres_simple_config_sees_a_chinese_sentence_as_one_word(pg):
    """Why the substring pieces are needed: PostgreSQL's parser cuts only at spaces and punctuation."""
    from miniagent.memory.pg import PostgresMemory
    with PostgresMemory(pg) as memory:
        assert memory.lexemes("我住在北京市, my dog") == ["dog", "my", "我住在北京市"]
        memory.remember("我住在北京市")
        words_only = memory._db.execute("SELECT count(*) FROM memories WHERE words @@ plainto_tsquery('simple', %s)",
                                        ("北京市",)).fetchone()[0]
        assert words_only == 0 and texts(memory.recall("北京市")) == ["我住在北京市"]


# --- injection -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("payload", PAYLOADS)
def test_injection_is_stored_and_found_literally(backend, mode, payload):
    with filled(backend, mode) as memory:
        before, count = schema(memory), len(memory)
        alone = memory.remember(payload, subject=payload, tags=[payload])
        inside = memory.remember(f"the note says {payload} and ends")
        assert memory.all()[-2] == Record(alone, payload, payload, (payload,), memory.all()[-2].created)
        assert memory.all()[-1].text == f"the note says {payload} and ends"
        found = memory.recall(payload, limit=MAX_LIMIT)
        assert {alone, inside} <= {r.id for r in found}
        assert found[0].id in (alone, inside)
        if found[0].score is None:  # LIKE: every result contains the payload itself
            assert all(payload.casefold() in (r.text + (r.subject or "")).casefold() for r in found)
        assert memory.forget(inside) is True
        assert schema(memory) == before and len(memory) == count + 1


def test_nothing_else_changes_after_hostile_queries(backend):
    with filled(backend) as words, backend("like") as like:
        before, records = schema(words), words.all()
        for payload in PAYLOADS + ["!", "|", "&", ":*", "a:*", "!a & b", "<->", "'a' | 'b'", "\\x27"]:
            words.recall(payload)
            like.recall(payload)
        assert schema(words) == before and words.all() == records


@pytest.fixture(scope="module")
def shared_pg(server):
    from miniagent.memory.pg import PostgresMemory
    name, dsn = new_schema(server)
    memory = PostgresMemory(dsn)
    for fact in FACTS:
        memory.remember(fact)
    yield memory
    memory.close()
    drop_schema(server, name)


_VALID = st.text(min_size=1, max_size=80).filter(lambda t: t.strip() and "\x00" not in t)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_VALID, data=st.data())
def test_any_text_is_recalled_by_any_substring_of_it(shared_pg, text, data):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    part = text[start:end] if text[start:end].strip() else text
    wanted = shared_pg.remember(text)
    try:
        assert wanted in [r.id for r in shared_pg.recall(part, limit=MAX_LIMIT)], part
        assert shared_pg.all()[-1].text == text
    finally:
        shared_pg.forget(wanted)


# --- one process remembers, another recalls (the acceptance of issue 14, part 4) ------------------------------

REMEMBER = """
import sys
from miniagent.memory import Memory
from miniagent.memory.pg import PostgresMemory
backend, where = sys.argv[1], sys.argv[2]
with (Memory(where) if backend == "sqlite" else PostgresMemory(where)) as m:
    print(m.remember("the user lives in 北京市 and likes green tea", subject="user"))
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_fact_remembered_in_one_process_is_recalled_by_a_new_process(kind, tmp_path, request):
    where = str(tmp_path / "memory.db") if kind == "sqlite" else request.getfixturevalue("pg")
    proc = subprocess.run([sys.executable, "-c", REMEMBER, kind, where], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    memory_id = int(proc.stdout)
    if kind == "sqlite":
        memory = Memory(where)
    else:
        from miniagent.memory.pg import PostgresMemory
        memory = PostgresMemory(where)
    with memory:
        found = memory.recall("where does the user live? 北京")
        assert [(r.id, r.text, r.subject) for r in found] == [
            (memory_id, "the user lives in 北京市 and likes green tea", "user")]


# --- bounds, errors, tools -------------------------------------------------------------------------------


@pytest.mark.parametrize("call_it, message", [
    (lambda m: m.remember(""), "text is empty"), (lambda m: m.remember("a\x00b"), "NUL character"),
    (lambda m: m.remember("a\ud800b"), "lone surrogate"),
    (lambda m: m.remember("x", tags="one"), "tags must be a list"),
    (lambda m: m.recall("x", limit=0), "limit must be an integer from 1 to 100"),
    (lambda m: m.recall(" "), "query is empty"), (lambda m: m.forget("1"), "a memory id is an integer"),
])
def test_bad_input_is_refused_with_the_same_message(backend, call_it, message):
    with backend() as memory:
        with pytest.raises(ValueError, match=message):
            call_it(memory)
        assert len(memory) == 0


def test_postgres_options_and_repr_never_show_a_password(pg):
    from miniagent.memory.pg import PostgresMemory
    with pytest.raises(ValueError, match="search must be 'fts' or 'like'"):
        PostgresMemory(pg, search="fts5")
    with pytest.raises(ValueError, match="dsn must be a PostgreSQL connection string"):
        PostgresMemory("")
    with PostgresMemory(pg + " password=hunter2") as memory:
        assert "hunter2" not in repr(memory) and repr(memory).startswith("PostgresMemory('miniagent@")
    import psycopg
    with pytest.raises(psycopg.OperationalError):
        memory.recall("x")


def test_memory_tools_work_unchanged(backend):
    with backend() as memory:
        registry = ToolRegistry(memory_tools(memory))
        assert call(registry, "remember", text="The user's favourite colour is green.", subject="user") == \
            (False, "Remembered as #1.")
        call(registry, "remember", text="The project is called miniagent.")
        assert call(registry, "recall", query="what is my favourite colour") == \
            (False, "1 found:\n#1 [user] The user's favourite colour is green.")
        assert call(registry, "forget", memory_id=1) == (False, "Forgot #1.")
        error, text = call(registry, "forget", memory_id=1)
        assert error and "there is no memory #1" in text
        assert [r.text for r in memory.all()] == ["The project is called miniagent."]


# --- many writers ---------------------------------------------------------------------------------------


def test_ten_threads_sharing_one_memory_lose_nothing(pg):
    from miniagent.memory.pg import PostgresMemory
    with PostgresMemory(pg) as memory:
        ids: list[int] = []

        def write(k: int) -> None:
            for i in range(EACH):
                ids.append(memory.remember(f"thread {k} memory {i} of {EACH}"))

        write_from_threads(write)
        assert sorted(ids) == list(range(1, THREADS * EACH + 1))
    with PostgresMemory(pg) as memory:
        check_all_there(memory)


def test_ten_threads_each_with_its_own_connection_lose_nothing(pg):
    """Ten connections at once: the server, not a lock in this process, keeps them apart."""
    from miniagent.memory.pg import PostgresMemory

    def write(k: int) -> None:
        with PostgresMemory(pg) as memory:  # ten processes racing to create the schema, in effect
            for i in range(EACH):
                memory.remember(f"thread {k} memory {i} of {EACH}")

    write_from_threads(write)
    with PostgresMemory(pg) as memory:
        check_all_there(memory)


WRITER = """
import pathlib, sys, time
from miniagent.memory.pg import PostgresMemory
dsn, name, go = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
with PostgresMemory(dsn) as memory:
    while not go.exists():
        time.sleep(0.005)
    for i in range(1000):
        memory.remember(f"process {name} memory {i}")
"""


def test_two_processes_writing_at_once_lose_nothing(pg, tmp_path):
    from miniagent.memory.pg import PostgresMemory
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg, name, str(go)], stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    time.sleep(0.5)
    go.touch()
    for proc in procs:
        _, errors = proc.communicate(timeout=120)
        assert proc.returncode == 0, errors
    with PostgresMemory(pg) as memory:
        assert {r.text for r in memory.all()} == {f"process {n} memory {i}" for n in "ab" for i in range(1000)}
        assert memory.recall("process b memory 999")[0].text == "process b memory 999"


# --- retrieval -------------------------------------------------------------------------------------------


@pytest.fixture
def index(pg):
    from miniagent.retrieval.pg import PostgresIndex
    idx = PostgresIndex(pg, embed=bag_embed)
    for doc in DOCS:
        idx.add(retrieval.split(doc, size=200, overlap=40))
    yield idx
    idx.close()


def test_postgres_index_searches_like_the_sqlite_one(index):
    assert index.vector_engine in ("pgvector", "numpy")
    assert len(index) == sum(len(retrieval.split(d, size=200, overlap=40)) for d in DOCS)
    assert index.search("holiday flight booking", 1, "keyword")[0].source == "kb/travel.md"   # flights ~ flight
    assert index.search("HR-7", 1, "keyword")[0].source == "kb/leave.md"
    assert index.search("年假有几天？", 1, "keyword")[0].source == "kb/zh.md"
    assert index.search("zzz qqq", 3, "keyword") == []
    assert len(index.search("zzz qqq", 3, "vector")) == 3
    results = index.search("pension salary paid", 2, "vector")
    assert results[0].source == "kb/pay.md" and results[0].score >= results[1].score
    assert index.search("leave days", 3, "hybrid")[0].source == "kb/leave.md"
    assert index.titles() == ["Annual leave", "Travel", "Salary", "年假"]
    tool = retrieval.search_tool(index, k=2)
    assert tool(query="How many days of leave? HR-7").startswith("[kb/leave.md:")


@pytest.mark.parametrize("query", [
    'NEAR(leave days)', '"unbalanced quote', "leave' OR 1=1; DROP TABLE chunks; --", "leave*", "terms:leave",
    "^leave", "AND OR NOT", "(((", "-leave", "leave + days", '""', "\x00leave", "a" * 5000, "年假\"* OR",
    "leave:* & !days", "leave <-> days", "'leave' | 'x'", "!!!"])
def test_hostile_queries_are_searched_as_text(index, query):
    for method in retrieval.METHODS:
        assert all(isinstance(r, retrieval.Result) for r in index.search(query, 3, method))
    assert index.search("leave", 1, "keyword")[0].source == "kb/leave.md", "the index is intact"


def test_postgres_index_refuses_a_table_name_that_is_not_a_plain_name(pg):
    from miniagent.retrieval.pg import PostgresIndex
    with pytest.raises(ValueError, match="table must be a lower-case name"):
        PostgresIndex(pg, table='chunks"; DROP TABLE x; --')


@pytest.mark.parametrize("language", ["en", "zh"])
def test_hybrid_is_at_least_the_best_single_method_on_postgres(pg, language):
    from miniagent.retrieval.pg import build
    index = build(pg, retrieval.DATA / language, retrieval.local_embedder())
    report = retrieval.evaluate(index, retrieval.questions(language), 3)
    scores = {m: report[m]["recall"] for m in retrieval.METHODS}
    print(language, index.vector_engine, scores)
    assert scores["hybrid"] >= max(scores["keyword"], scores["vector"]), scores
    assert scores["hybrid"] >= 0.85
    again = build(pg, retrieval.DATA / language, retrieval.local_embedder())   # rebuilt, not doubled
    assert len(again) == len(index)
    index.close()
    again.close()


def test_a_new_process_searches_the_index_another_built(pg):
    from miniagent.retrieval.pg import build
    build(pg, retrieval.DATA / "en", retrieval.local_embedder()).close()
    code = ("import sys\nfrom miniagent import retrieval\nfrom miniagent.retrieval.pg import PostgresIndex\n"
            "index = PostgresIndex(sys.argv[1], retrieval.local_embedder())\n"
            "print(index.search('HR-7', 1, 'hybrid')[0].source)")
    proc = subprocess.run([sys.executable, "-c", code, pg], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "en/leave.md"
