"""miniagent.retrieval, fast: splitting, FTS5 safety, RRF, citations, recall@k, the shipped data.

No real embedding model here (tests/test_retrieval_eval.py runs WordLlama on the whole set):
vectors come from a tiny deterministic bag of terms, enough to exercise the plumbing.
"""

from __future__ import annotations

import json
import re
import time
import zlib

import pytest

from miniagent import retrieval
from miniagent.retrieval import Chunk, Document, Index, Result, evaluate, fts_query, rrf, split, terms
from miniagent.tools import ToolRegistry

DIMS = 64


def bag_embed(texts: list[str]) -> list[list[float]]:
    """A stand-in embedder: counts of terms hashed (crc32, stable across runs) into DIMS slots."""
    out = []
    for text in texts:
        vector = [0.0] * DIMS
        for term in terms(text):
            vector[zlib.crc32(term.encode()) % DIMS] += 1.0
        out.append(vector)
    return out


DOCS = [
    Document("kb/leave.md", "# Annual leave\n\nEveryone gets 26 days of paid leave.\n\nForm HR-7 requests leave.\n"),
    Document("kb/travel.md", "# Travel\n\nBook trains and flights through Compass Desk.\n\n"
                             "Hotels cost up to 140 euros.\n"),
    Document("kb/pay.md", "# Salary\n\nSalaries are paid on the 25th.\n\nThe pension match is 6 percent.\n"),
    Document("kb/zh.md", "# 年假\n\n每位员工每年享有二十六天带薪年假。\n\n结转的天数在三月底失效。\n"),
]


@pytest.fixture
def index() -> Index:
    idx = Index(embed=bag_embed)
    for doc in DOCS:
        idx.add(split(doc, size=200, overlap=40))
    return idx


# --- split ------------------------------------------------------------------------------------------


def check_positions(doc: Document, chunks: list[Chunk], size: int) -> None:
    lines = doc.text.split("\n")
    for chunk in chunks:
        assert chunk.text == doc.text[chunk.start:chunk.end]
        assert chunk.text.strip() == chunk.text and chunk.text, "no empty or padded chunk"
        assert len(chunk.text) <= size
        assert chunk.line_start == doc.text.count("\n", 0, chunk.start) + 1
        assert chunk.line_end == doc.text.count("\n", 0, chunk.end) + 1
        cited = "\n".join(lines[chunk.line_start - 1:chunk.line_end])
        assert chunk.text in cited, "the cited lines hold the whole chunk"


def test_split_positions_are_exact_and_cover_the_text() -> None:
    text = "# Title\n\n" + "\n\n".join(f"Paragraph {i}. It has two sentences, number {i}." for i in range(30))
    doc = Document("d.md", text)
    chunks = split(doc, size=120, overlap=0)
    check_positions(doc, chunks, 120)
    words = re.findall(r"\S+", text)
    assert re.findall(r"\S+", " ".join(c.text for c in chunks)) == words, "without overlap: every word once, in order"
    assert all(a.end <= b.start for a, b in zip(chunks, chunks[1:]))


@pytest.mark.parametrize("text", [
    "Version 3.5 is out. Write to it@tidewater.example today! Really? Yes... fine.\nNext line " * 20,
    "一句话。又一句话！问句？「引号。」" * 30 + "\n\n" + "没有标点的长句子" * 40,
    "word " * 400, " \n" * 300 + "x" + "\n \n" * 300, "a.b.c." * 200])
def test_split_never_loses_text(text: str) -> None:
    doc = Document("d.md", text)
    for size, overlap in [(30, 0), (64, 16), (500, 100)]:
        chunks = split(doc, size=size, overlap=overlap)
        check_positions(doc, chunks, size)
        covered = set()
        for chunk in chunks:
            covered.update(range(chunk.start, chunk.end))
        assert all(i in covered for i, char in enumerate(text) if not char.isspace())


def test_split_overlap_repeats_the_end_of_the_previous_chunk() -> None:
    doc = Document("d.md", " ".join(f"Sentence number {i} is here." for i in range(60)))
    chunks = split(doc, size=100, overlap=40)
    check_positions(doc, chunks, 100)
    assert len(chunks) > 3
    for a, b in zip(chunks, chunks[1:]):
        assert a.start < b.start < a.end, "the next chunk starts inside the previous one and moves forward"
        assert a.end - b.start <= 40
    assert chunks[-1].end == len(doc.text.rstrip())


def test_split_cuts_chinese_at_sentence_marks() -> None:
    text = "".join(f"第{i}条规定说明了一件事情。" for i in range(40))   # one paragraph, no spaces
    doc = Document("zh.md", text)
    chunks = split(doc, size=50, overlap=0)
    check_positions(doc, chunks, 50)
    assert all(c.text.endswith("。") for c in chunks), "cut after 。, never inside a sentence"


def test_split_never_returns_empty_chunks() -> None:
    assert split(Document("e.md", " \n\n \t\n")) == []
    assert split(Document("e.md", "")) == []
    chunks = split(Document("d.md", "\n\n\nOne.\n\n\n\n   \n\nTwo.\n\n"), size=3, overlap=0)
    assert [c.text for c in chunks] == ["One", ".", "Two", "."]


def test_split_huge_input_without_boundaries_is_bounded() -> None:
    doc = Document("big.txt", "x" * 1_000_000)
    started = time.perf_counter()
    chunks = split(doc, size=1000, overlap=100)
    assert time.perf_counter() - started < 2.0   # about 0.1 s: linear, however long the input
    assert len(chunks) == 1000 and all(len(c.text) == 1000 for c in chunks)
    assert chunks[-1].end == 1_000_000


@pytest.mark.parametrize("size, overlap", [(0, 0), (10, 10), (10, -1), (10, 20), ("5", 0), (10, 1.5)])
def test_split_rejects_bad_sizes(size, overlap) -> None:
    with pytest.raises(ValueError):
        split(Document("d.md", "text"), size=size, overlap=overlap)


def test_load_reads_text_files_and_skips_the_rest(tmp_path) -> None:
    root = tmp_path / "kb"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("# A\n\nalpha", encoding="utf-8")
    (root / "sub" / "b.txt").write_bytes(b"bad \xff byte\r\nline two")
    (root / "c.py").write_text("print()", encoding="utf-8")
    (root / "empty.md").write_text("  \n", encoding="utf-8")
    (root / "huge.md").write_bytes(b"a" * (retrieval.MAX_FILE_BYTES + 1))
    docs = retrieval.load(root)
    assert [d.source for d in docs] == ["kb/a.md", "kb/sub/b.txt"]
    assert docs[1].text == "bad \ufffd byte\nline two"
    assert docs[0].title == "A" and docs[1].title == "b"
    with pytest.raises(FileNotFoundError, match="no such folder"):
        retrieval.load(tmp_path / "missing")


# --- keyword search and FTS5 safety -----------------------------------------------------------------


def test_terms_pair_chinese_characters_and_drop_stop_words() -> None:
    assert terms("What is form HR-7 for?") == ["form", "hr-7"]
    assert terms("带薪年假") == ["带薪", "薪年", "年假"]
    assert terms("年假是什么") == ["年假"], "cut at stop characters: no 假是, 是什, 什么"


@pytest.mark.parametrize("query", [
    'NEAR(leave days)', '"unbalanced quote', "leave' OR 1=1; DROP TABLE chunks; --", "leave*", "terms:leave",
    "^leave", "AND OR NOT", "(((", "-leave", "leave + days", '""', "\x00leave", "a" * 5000, "年假\"* OR"])
def test_hostile_queries_are_searched_as_text(index: Index, query: str) -> None:
    for method in retrieval.METHODS:
        results = index.search(query, 3, method)
        assert all(isinstance(r, Result) for r in results)
    assert len(index) == sum(len(split(d, size=200, overlap=40)) for d in DOCS)
    assert index.search("leave", 1, "keyword")[0].source == "kb/leave.md", "the index is intact"


def test_fts_query_quotes_every_term() -> None:
    assert fts_query('say "hi" NEAR x*') == '"say" OR "hi" OR "near" OR "x"'
    assert fts_query("   ") == "" and fts_query("the of") == ""
    assert len(fts_query(" ".join(f"w{i}" for i in range(1000))).split(" OR ")) == retrieval.MAX_QUERY_TERMS


def test_keyword_search_finds_stems_codes_and_chinese_words(index: Index) -> None:
    assert index.search("holiday flight booking", 1, "keyword")[0].source == "kb/travel.md"   # flights ~ flight
    assert index.search("HR-7", 1, "keyword")[0].source == "kb/leave.md"
    assert index.search("年假有几天？", 1, "keyword")[0].source == "kb/zh.md"
    assert index.search("zzz qqq", 3, "keyword") == []
    assert len(index.search("zzz qqq", 3, "vector")) == 3, "a vector search always has nearest neighbours"


def test_search_checks_its_arguments(index: Index) -> None:
    with pytest.raises(ValueError, match="method"):
        index.search("leave", 3, "fuzzy")
    with pytest.raises(ValueError, match="k must"):
        index.search("leave", 0)
    with pytest.raises(TypeError):
        index.search(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no embedder"):
        Index().search("leave", 3, "vector")
    index.embed = lambda texts: [[1.0, 0.0]] * len(texts)
    with pytest.raises(ValueError, match="vectors of 64 numbers but the embedder gives 2"):
        index.search("leave", 3, "vector")


def test_vector_search_ranks_by_cosine(index: Index) -> None:
    results = index.search("pension salary paid", 2, "vector")
    assert results[0].source == "kb/pay.md"
    assert results[0].score >= results[1].score
    assert index.vector_engine in ("numpy", "sqlite-vec")


# --- reciprocal rank fusion -------------------------------------------------------------------------


def test_rrf_on_hand_made_rankings() -> None:
    fused = rrf([["a", "b", "c"], ["c", "b", "d"]], k=60)
    scores = dict(fused)
    assert scores["b"] == pytest.approx(2 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61) and scores["d"] == pytest.approx(1 / 63)
    assert [item for item, _ in fused] == ["c", "b", "a", "d"], "agreement beats one first place"


def test_rrf_ties_keep_first_seen_order_and_small_k_favours_the_top() -> None:
    assert [i for i, _ in rrf([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert [i for i, _ in rrf([["a", "b", "c"], ["c", "b", "a"]], k=0)] == ["a", "c", "b"]
    assert rrf([]) == [] and rrf([[], []]) == []


def test_hybrid_fuses_both_rankings(index: Index) -> None:
    results = index.search("leave days", 3, "hybrid")
    assert results[0].source == "kb/leave.md" and results[0].method == "hybrid"


# --- the tool and its citations ---------------------------------------------------------------------


def test_search_tool_returns_passages_with_citations(index: Index) -> None:
    tool = retrieval.search_tool(index, k=2)
    assert "Annual leave" in tool.description and "Travel" in tool.description
    text = tool(query="How many days of leave? HR-7")
    first = text.split("\n")[0]
    assert re.fullmatch(r"\[kb/leave\.md:\d+-\d+\]", first)
    start, end = map(int, first[len("[kb/leave.md:"):-1].split("-"))
    lines = DOCS[0].text.split("\n")[start - 1:end]
    assert text.split("\n", 1)[1].split("\n\n[")[0] in "\n".join(lines)
    assert "No passage matches" in retrieval.search_tool(index, method="keyword")(query="zzz qqq")


def test_search_tool_runs_in_a_registry_thread(index: Index) -> None:
    registry = ToolRegistry([retrieval.search_tool(index)])
    blocks = [{"type": "tool_use", "id": f"t{i}", "name": "search_documents", "input": {"query": q}}
              for i, q in enumerate(["leave", "pension", "hotel", "年假"])]
    results = registry.run_all(blocks)
    assert [r.get("is_error", False) for r in results] == [False] * 4
    assert "[kb/zh.md:" in str(results[3]["content"])


def test_search_tool_without_embedder_falls_back_to_keywords() -> None:
    idx = Index()
    idx.add(split(DOCS[1]))
    assert "[kb/travel.md:" in retrieval.search_tool(idx)(query="Compass Desk")


# --- evaluation -------------------------------------------------------------------------------------


def test_recall_at_k_on_a_tiny_set(index: Index) -> None:
    chunk = Chunk("kb/a.md", 0, 1, 1, 1, "a")
    found = [Result(chunk, 1.0, "keyword"), Result(Chunk("kb/b.md", 0, 1, 1, 1, "b"), 0.5, "keyword")]
    assert retrieval.recall_at_k(found, ["kb/a.md"]) == 1.0
    assert retrieval.recall_at_k(found, ["kb/a.md", "kb/c.md"]) == 0.5
    assert retrieval.recall_at_k([], ["kb/a.md"]) == 0.0
    questions = [{"question": "form HR-7", "sources": ["kb/leave.md"]},
                 {"question": "zzz unknown", "sources": ["kb/pay.md"]}]
    report = evaluate(index, questions, k=3)
    assert report["keyword"]["recall"] == 0.5
    assert set(report) == set(retrieval.METHODS) and all(r["ms"] >= 0 for r in report.values())


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_shipped_question_sets_point_at_shipped_files(language: str) -> None:
    folder = retrieval.DATA / language
    items = json.loads((folder / "questions.json").read_text(encoding="utf-8"))
    assert len(items) >= 20
    sources = {d.source for d in retrieval.load(folder)}
    assert len(sources) >= 12
    for item in items:
        assert item["question"].strip() and item["sources"]
        assert set(item["sources"]) <= sources, item
    assert items == retrieval.questions(language)


def test_the_two_languages_have_the_same_files() -> None:
    en = {p.name for p in (retrieval.DATA / "en").glob("*.md")}
    assert en == {p.name for p in (retrieval.DATA / "zh").glob("*.md")}


def test_api_embedder_offline_uses_the_mock() -> None:
    embed = retrieval.api_embedder(dimensions=32, offline=True)
    vectors = embed(["annual leave", "年假"])
    assert len(vectors) == 2 and all(len(v) == 32 for v in vectors)
    idx = Index(embed=embed)
    idx.add(split(DOCS[0]))
    assert idx.search("annual leave", 1, "vector")[0].source == "kb/leave.md"


def test_api_embedder_error_never_shows_the_key() -> None:
    import httpx2

    embed = retrieval.api_embedder(offline=False, api_key="sk-secret-123", base_url="http://127.0.0.1:9/v1",
                                   timeout=0.5)
    with pytest.raises(httpx2.HTTPError) as info:
        embed(["x"])
    assert "sk-secret-123" not in str(info.value)
