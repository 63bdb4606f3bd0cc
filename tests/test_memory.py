"""Tests for miniagent.memory: remember / recall / forget in SQLite, LIKE and FTS5, as tools.

The long suites (ten threads writing 10,000 memories, two processes at once) are in
test_memory_concurrency.py, marked `memory` (make test-memory).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from miniagent import memory as memory_module
from miniagent.memory import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    MAX_TEXT_CHARS,
    Memory,
    Record,
    fts5_query,
    fts5_string,
    like_pattern,
    memory_tools,
    query_terms,
)
from miniagent.tools import ToolRegistry

FACTS = ["favourite colour: green", "I like what I see", "my dog is called Rex", "我住在北京市",
         "我最喜欢的颜色是绿色", "50% off everything", "a_b", "axb", "500 euros"]
MODES = [{"search": "fts5"}, {"search": "like"}]


def filled(**kwargs) -> Memory:
    memory = Memory(**kwargs)
    for fact in FACTS:
        memory.remember(fact)
    return memory


def texts(records: list[Record]) -> list[str]:
    return [r.text for r in records]


def schema(memory: Memory) -> list[tuple]:
    return memory._db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


# --- remember, recall, forget -----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES, ids=["fts5", "like"])
def test_remember_returns_ids_and_all_lists_them_oldest_first(mode):
    with Memory(**mode) as memory:
        first = memory.remember("favourite colour: green", subject="user", tags=["preference", "颜色"])
        second = memory.remember("the project is called miniagent")
        assert second == first + 1
        records = memory.all()
        assert texts(records) == ["favourite colour: green", "the project is called miniagent"]
        assert records[0] == Record(first, "favourite colour: green", "user", ("preference", "颜色"),
                                    records[0].created, None)
        assert records[1].subject is None and records[1].tags == ()
        assert records[0].created.endswith("Z") and records[0].created[4] == "-"  # 2026-11-30T15:53:00Z
        assert len(memory) == 2


@pytest.mark.parametrize("mode", MODES, ids=["fts5", "like"])
def test_forget_removes_it_from_recall_and_says_whether_it_existed(mode):
    with Memory(**mode) as memory:
        keep = memory.remember("favourite colour: green")
        gone = memory.remember("favourite food: noodles")
        assert set(texts(memory.recall("favourite"))) == {"favourite food: noodles", "favourite colour: green"}
        assert memory.forget(gone) is True
        assert memory.forget(gone) is False
        assert texts(memory.recall("favourite")) == ["favourite colour: green"]
        assert texts(memory.recall("noodles")) == []
        # AUTOINCREMENT: the id of a forgotten memory is never given to a new one.
        assert memory.remember("favourite drink: tea") == gone + 1
        assert [r.id for r in memory.all()] == [keep, gone + 1]


def test_recall_by_subject_and_limit():
    with Memory() as memory:
        for i in range(8):
            memory.remember(f"note number {i} about the garden", subject="garden" if i % 2 else "house")
        assert len(memory.recall("garden", limit=3)) == 3
        found = memory.recall("note number", subject="house", limit=MAX_LIMIT)
        assert {r.subject for r in found} == {"house"} and len(found) == 4


def test_subject_is_searched_too():
    with Memory() as memory:
        memory.remember("green", subject="favourite colour")
        assert texts(memory.recall("favourite colour")) == ["green"]


# --- LIKE and FTS5 ---------------------------------------------------------------------------


def test_like_finds_substrings_but_not_a_question():
    with filled(search="like") as memory:
        assert texts(memory.recall("favourite colour")) == ["favourite colour: green"]
        assert memory.recall("what is my favourite colour?") == []
        assert all(r.score is None for r in memory.recall("e"))
        # No relevance in LIKE: the newest match comes first.
        assert texts(memory.recall("e"))[:2] == ["500 euros", "50% off everything"]


def test_fts5_or_of_words_ranks_the_answer_to_a_question_first():
    with filled() as memory:
        found = memory.recall("what is my favourite colour?")
        assert found[0].text == "favourite colour: green"
        assert "I like what I see" in texts(found)  # shares "what": found, but ranked lower
        assert found[0].score > found[1].score > 0
        assert [r.score for r in found] == sorted((r.score for r in found), reverse=True)


def test_fts5_ranks_the_rarer_and_repeated_word_higher():
    with Memory() as memory:
        for text in ["the cat sat", "the dog sat", "a dog and a dog", "a dog and a cat", "the sun", "the moon"]:
            memory.remember(text)
        assert texts(memory.recall("the cat"))[0] == "the cat sat"  # "cat" is rarer than "the"
        assert texts(memory.recall("dog"))[0] == "a dog and a dog"  # twice, in a text as long
        assert texts(memory.recall("the dog sat"))[0] == "the dog sat"  # the whole query


@pytest.mark.parametrize("mode", MODES, ids=["fts5", "like"])
def test_like_wildcards_in_a_query_match_themselves(mode):
    with filled(**mode) as memory:
        assert texts(memory.recall("50%")) == ["50% off everything"]  # not "500 euros"
        assert texts(memory.recall("a_b")) == ["a_b"]  # not "axb"
        assert texts(memory.recall("%")) == ["50% off everything"]
        assert texts(memory.recall("_")) == ["a_b"]


def test_like_pattern_and_fts5_string_escape_what_they_must():
    assert like_pattern(r"50%_\x") == r"50\%\_\\x"
    assert fts5_string('say "hi"') == '"say ""hi"""'
    assert fts5_query(["a b", 'NEAR("x")']) == '"a b" OR "NEAR(""x"")"'


def test_query_terms():
    assert query_terms("what is my favourite colour?", min_chars=3) == [
        "what is my favourite colour?", "what", "favourite", "colour"]
    assert query_terms("what is my favourite colour?") == [
        "what is my favourite colour?", "what", "is", "my", "favourite", "colour"]
    assert query_terms("Colour colour COLOUR") == ["Colour colour COLOUR", "Colour"]  # repeats once
    assert query_terms("北京", min_chars=3) == []
    # Chinese has no spaces: a run is cut into overlapping three-character pieces.
    assert query_terms("我最喜欢的", min_chars=3) == ["我最喜欢的", "我最喜", "最喜欢", "喜欢的"]
    assert query_terms("我住在北京市吗", min_chars=3)[1:] == ["我住在", "住在北", "在北京", "北京市", "京市吗"]
    assert len(query_terms(" ".join(f"word{i}" for i in range(100)))) == MAX_TERMS


# --- Chinese: unicode61 fails, trigram works ---------------------------------------------------------


def test_the_default_tokenizer_cannot_find_chinese_inside_a_sentence():
    with filled(tokenizer="unicode61") as memory:
        # unicode61 splits at spaces and punctuation; Chinese has none, so the sentence is one token.
        assert memory.recall("北京市") == []
        assert memory.recall("北京") == []
        assert memory.recall("我最喜欢什么颜色") == []
        assert texts(memory.recall("我住在北京市")) == ["我住在北京市"]  # only the whole token matches


def test_trigram_finds_chinese_substrings_and_questions():
    with filled() as memory:
        found = memory.recall("北京市")
        assert texts(found) == ["我住在北京市"] and found[0].score > 0  # from the index
        assert texts(memory.recall("我住在哪里")) == ["我住在北京市"]  # shares 我住在
        assert texts(memory.recall("我最喜欢什么颜色？"))[0] == "我最喜欢的颜色是绿色"


def test_trigram_falls_back_to_like_below_three_characters():
    with filled() as memory:
        found = memory.recall("北京")
        assert texts(found) == ["我住在北京市"] and found[0].score is None  # LIKE, not the index
        assert texts(memory.recall("Re")) == ["my dog is called Rex", "favourite colour: green"]  # ASCII case ignored


def test_trigram_finds_english_substrings():
    with filled() as memory:
        assert texts(memory.recall("olou")) == ["favourite colour: green"]
        assert texts(memory.recall("FAVOURITE")) == ["favourite colour: green"]


def test_a_file_keeps_its_tokenizer(tmp_path):
    path = tmp_path / "m.db"
    Memory(path).close()
    with pytest.raises(ValueError, match="another tokenizer.*trigram"):
        Memory(path, tokenizer="unicode61")
    Memory(path, search="like").close()  # LIKE needs no index


def test_an_index_made_later_covers_what_was_written_before(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path, search="like") as memory:
        memory.remember("favourite colour: green")
    with Memory(path) as memory:  # creates the FTS5 table now, and fills it
        assert memory.recall("colour")[0].score is not None
        memory.remember("favourite food: noodles")
    with Memory(path, search="like") as memory:  # the triggers keep the index up to date meanwhile
        memory.remember("favourite drink: tea")
    with Memory(path) as memory:
        assert texts(memory.recall("favourite drink"))[0] == "favourite drink: tea"


def test_the_triggers_keep_the_index_in_step_with_any_writer(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path) as memory:
        one = memory.remember("favourite colour: green")
        other = sqlite3.connect(path)  # another program, writing SQL directly
        other.execute("UPDATE memories SET text = ? WHERE id = ?", ("favourite colour: blue", one))
        other.commit()
        other.close()
        assert texts(memory.recall("blue")) == ["favourite colour: blue"]
        assert memory.recall("green") == []


def test_an_old_sqlite_without_trigram_is_explained(monkeypatch):
    monkeypatch.setattr(memory_module.sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(memory_module.sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(RuntimeError, match=r"SQLite is 3\.31\.1; the trigram tokenizer needs 3\.34.*search='like'"):
        Memory()
    Memory(search="like").close()
    Memory(tokenizer="unicode61").close()


def test_this_machines_sqlite_has_fts5_and_trigram():
    assert sqlite3.sqlite_version_info >= (3, 34, 0)
    assert memory_module._fts5_problem("trigram") is None


# --- injection: whatever is written is data ----------------------------------------------------------

PAYLOADS = ["'", "''", '"', '""', "%", "_", ";", "*", "-", ":", "(", ")", "\\", "NEAR", "OR", "AND", "NOT",
            "DROP TABLE memories", "'; --", "'; DROP TABLE memories; --", "\"; DROP TABLE memories_fts; --",
            'NEAR("a" "b", 2)', "colour*", "text:green", "-green", "^green", "a OR b", "a AND NOT b",
            "(x OR y)", "{text subject}: green", "100% _sure_", "\\%\\_", "' OR '1'='1", "1; SELECT * FROM memories",
            "Robert'); DROP TABLE memories;--"]


@pytest.mark.parametrize("mode", MODES, ids=["fts5", "like"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_injection_is_stored_and_found_literally(mode, payload):
    with filled(**mode) as memory:
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


def test_nothing_else_changes_after_hostile_queries():
    with filled() as memory:
        before, records = schema(memory), memory.all()
        for payload in PAYLOADS:
            for mode in ("fts5", "like"):
                memory.search = mode
                memory.recall(payload)
        assert schema(memory) == before and memory.all() == records


_VALID = st.text(min_size=1, max_size=80).filter(lambda t: t.strip() and "\x00" not in t)
_shared = {mode["search"]: filled(**mode) for mode in MODES}
_shared_schema = schema(_shared["fts5"])


@given(text=_VALID, data=st.data())
def test_any_text_is_recalled_by_any_substring_of_it(text, data):
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    part = text[start:end]
    if not part.strip():
        part = text
    for mode, memory in _shared.items():
        wanted = memory.remember(text)
        try:
            assert wanted in [r.id for r in memory.recall(part, limit=MAX_LIMIT)], (mode, part)
            assert memory.all()[-1].text == text
        finally:
            memory.forget(wanted)


@given(query=st.text(max_size=120))
def test_no_query_raises_anything_but_a_clear_value_error(query):
    for memory in _shared.values():
        try:
            found = memory.recall(query)
        except ValueError as exc:
            assert "query" in str(exc)
            assert not query.strip() or "\x00" in query
        else:
            assert all(isinstance(r, Record) for r in found)
        assert len(memory) == len(FACTS)
    assert schema(_shared["fts5"]) == _shared_schema


# --- persistence across processes --------------------------------------------------------------------


def test_a_fact_remembered_in_one_process_is_recalled_in_another(tmp_path):
    path = tmp_path / "memory.db"
    code = ("import sys\nfrom miniagent.memory import Memory\n"
            "with Memory(sys.argv[1]) as m:\n"
            "    print(m.remember('the user lives in 北京市 and likes green tea', subject='user'))")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    memory_id = int(proc.stdout)
    with Memory(path) as memory:
        found = memory.recall("where does the user live? 北京")
        assert [(r.id, r.text, r.subject) for r in found] == [
            (memory_id, "the user lives in 北京市 and likes green tea", "user")]
    with Memory(str(path), search="like") as memory:
        assert texts(memory.recall("green tea")) == ["the user lives in 北京市 and likes green tea"]


# --- bounds and errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("", "text is empty"), ("  \n\t", "text is empty"), (None, "text must be a string, got NoneType"),
    (42, "text must be a string, got int"), (b"bytes", "text must be a string, got bytes"),
    ("x" * (MAX_TEXT_CHARS + 1), "text is 10,001 characters long; the limit is 10,000"),
    ("a\x00b", "NUL character"), ("a\ud800b", "lone surrogate"),
])
def test_bad_text_is_refused_with_a_clear_message(text, message):
    with Memory() as memory:
        with pytest.raises(ValueError, match=message):
            memory.remember(text)
        assert len(memory) == 0


def test_a_long_text_within_the_limit_is_kept_whole():
    with Memory() as memory:
        memory.remember("x" * MAX_TEXT_CHARS)
        assert memory.all()[0].text == "x" * MAX_TEXT_CHARS


@pytest.mark.parametrize("kwargs, message", [
    ({"subject": ""}, "subject is empty"), ({"subject": 3}, "subject must be a string"),
    ({"subject": "s" * 201}, "subject is 201 characters"), ({"tags": "one"}, "tags must be a list"),
    ({"tags": [1]}, "a tag must be a string"), ({"tags": ["t"] * 21}, "21 tags; the limit is 20"),
    ({"tags": ["t" * 51]}, "a tag is 51 characters"),
])
def test_bad_subject_and_tags_are_refused(kwargs, message):
    with Memory() as memory, pytest.raises(ValueError, match=message):
        memory.remember("fact", **kwargs)


@pytest.mark.parametrize("limit", [0, -1, MAX_LIMIT + 1, True, 2.0, "5", None])
def test_bad_limits_are_refused(limit):
    with Memory() as memory, pytest.raises(ValueError, match="limit must be an integer from 1 to 100"):
        memory.recall("fact", limit=limit)


@pytest.mark.parametrize("query, message", [
    ("", "query is empty"), (" ", "query is empty"), (None, "query must be a string"),
    ("q" * (MAX_QUERY_CHARS + 1), "query is 1,001 characters long"), ("a\x00", "NUL"),
])
def test_bad_queries_are_refused(query, message):
    with Memory() as memory, pytest.raises(ValueError, match=message):
        memory.recall(query)


@pytest.mark.parametrize("memory_id", ["1", 1.0, True, None])
def test_forget_wants_an_integer_id(memory_id):
    with Memory() as memory, pytest.raises(ValueError, match="a memory id is an integer"):
        memory.forget(memory_id)


@pytest.mark.parametrize("kwargs, message", [
    ({"search": "vector"}, "search must be 'fts5' or 'like'"),
    ({"tokenizer": "porter'); DROP TABLE x; --"}, "tokenizer must be one of trigram, unicode61"),
    ({"path": 3}, "path must be a file path or ':memory:'"),
    ({"timeout": -1}, "timeout must be a number of seconds"), ({"timeout": "5"}, "timeout must be a number"),
])
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Memory(**kwargs)


def test_a_path_that_cannot_be_opened_is_explained(tmp_path):
    with pytest.raises(sqlite3.OperationalError, match="cannot open the memory at .*does its folder exist"):
        Memory(tmp_path / "no such folder" / "memory.db")


def test_closed_memory_and_repr(tmp_path):
    memory = Memory(tmp_path / "m.db")
    assert repr(memory) == f"Memory({str(tmp_path / 'm.db')!r}, search='fts5, trigram')"
    assert repr(Memory(search="like")) == "Memory(':memory:', search='like')"
    with memory:
        pass
    with pytest.raises(sqlite3.ProgrammingError):
        memory.recall("x")


def test_threads_share_one_memory():
    """A small version of test_memory_concurrency.py: tools run in threads of their own."""
    with Memory() as memory:
        def write(k: int) -> None:
            for i in range(50):
                memory.remember(f"thread {k} note {i}")
        threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(memory) == 200 and len({r.text for r in memory.all()}) == 200


# --- as tools ------------------------------------------------------------------------------------------


def call(registry: ToolRegistry, name: str, **arguments) -> tuple[bool, str]:
    result = registry.run({"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments})
    return result.get("is_error", False), result["content"] if isinstance(result["content"], str) \
        else result["content"][0]["text"]


def test_memory_tools_remember_recall_forget():
    with Memory() as memory:
        registry = ToolRegistry(memory_tools(memory))
        assert registry.names == ["remember", "recall", "forget"]
        assert all(len(t.description) > 80 for t in registry)
        assert call(registry, "remember", text="The user's favourite colour is green.", subject="user") == \
            (False, "Remembered as #1.")
        call(registry, "remember", text="The project is called miniagent.")
        assert call(registry, "recall", query="what is my favourite colour") == \
            (False, "1 found:\n#1 [user] The user's favourite colour is green.")
        assert call(registry, "recall", query="nothing like this") == (False, "No memory matches 'nothing like this'.")
        assert call(registry, "forget", memory_id=1) == (False, "Forgot #1.")
        error, text = call(registry, "forget", memory_id=1)
        assert error and "there is no memory #1; recall first to see the ids" in text
        error, text = call(registry, "recall", query="x", limit=0)
        assert error and "limit must be an integer from 1 to 100" in text
        error, text = call(registry, "remember", text="")
        assert error and "text is empty" in text
        assert [r.text for r in memory.all()] == ["The project is called miniagent."]


def test_an_agent_can_use_memory_tools_with_the_defaults():
    from miniagent import Agent, connect, default_tools
    with Memory() as memory:
        agent = Agent(connect(offline=True, quiet=True), tools=[*default_tools(), *memory_tools(memory)])
        assert agent.tools.names == ["get_weather", "get_current_time", "calculate", "remember", "recall", "forget"]
        result = agent.run("Please remember that my favourite colour is green.")
        assert result.ok
        assert "green" in memory.all()[0].text
