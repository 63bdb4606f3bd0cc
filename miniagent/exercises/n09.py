"""Checks for notebook 09 · Memory and retrieval."""

from __future__ import annotations

import sqlite3
from typing import Any

from miniagent.exercises._core import _check_callable, _exercise, _kind, _run, _show, not_yet, wrong_kind

ROWS = ["50% off today", "500 euros", "about 50 percent", "a_b", "axb", "ab", "a\\b", "Ada's notes",
        "c:\\temp\\100%", "plain text"]
NEEDLES = ["50%", "a_b", "a\\b", "Ada's", "100%", "plain", "%", "_"]


def _select(create: str, rows: list[str], query: str, parameter: str) -> list[Any]:
    """The first column of `query` (one ? for `parameter`) over a fresh in-memory table `t` holding `rows`."""
    db = sqlite3.connect(":memory:")
    db.execute(create)
    db.executemany("INSERT INTO t (text) VALUES (?)", [(row,) for row in rows])
    return [value for (value, *_) in db.execute(query, (parameter,))]


def _like(pattern: str) -> list[str]:
    return _select("CREATE TABLE t (text TEXT)", ROWS,
                   "SELECT text FROM t WHERE text LIKE ? ESCAPE '\\' ORDER BY rowid", pattern)


@_exercise("09", 1)
def check_09_1(like_pattern: Any) -> None:
    """`like_pattern(text)`: a LIKE pattern (ESCAPE '\\') that finds `text` as a literal substring."""
    _check_callable(like_pattern, "like_pattern", "like_pattern(text) returns the pattern, a str")
    for needle in NEEDLES:
        pattern = _run(like_pattern, needle, name="like_pattern", case=f"on {needle!r}")
        if pattern is None:
            not_yet(f"like_pattern returned None on {needle!r}: return the pattern string")
        if not isinstance(pattern, str):
            wrong_kind(f"like_pattern returned {_kind(pattern)}; return a str to pass as the ? parameter")
        want = [row for row in ROWS if needle.lower() in row.lower()]  # LIKE ignores ASCII case
        try:
            got = _like(pattern)
        except sqlite3.Error as exc:
            not_yet(f"on {needle!r}, SQLite refused your pattern {pattern!r}: {exc}")
        if got == want:
            continue
        extra, missing = [r for r in got if r not in want], [r for r in want if r not in got]
        if extra:
            hint = ("% and _ are wildcards: escape each as \\% and \\_" if any(c in needle for c in "%_")
                    else "escape the backslash itself too (\\\\), or it escapes the next character")
            not_yet(f"searching for {needle!r} also found {_show(extra, 50)}: {hint}")
        not_yet(f"searching for {needle!r} missed {_show(missing, 50)}: keep % before and after, "
                "so the text may stand anywhere")


FTS_ROWS = ["My favourite colour is green", "The deadline is in March", "Say hi to Ada", "near the station",
            "c plus plus and minus", "drop the table, then order more", "or else not and"]
QUESTIONS = ["what is my favourite colour", "OR NOT AND", 'say "hi"', "NEAR(station deadline)",
             "c++ -minus :table *", "DROP TABLE t; --", "colour", "Ada's deadline?", 'the "deadline']


def _fts(expression: str) -> list[int]:
    return _select("CREATE VIRTUAL TABLE t USING fts5(text)", FTS_ROWS,
                   "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", expression)


def _reference(question: str) -> str:
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in question.split())


@_exercise("09", 2)
def check_09_2(fts_query: Any) -> None:
    """`fts_query(question)`: an FTS5 expression matching any of the question's words, each literally."""
    _check_callable(fts_query, "fts_query", "fts_query(question) returns an FTS5 query, a str")
    for question in QUESTIONS:
        expression = _run(fts_query, question, name="fts_query", case=f"on {question!r}")
        if expression is None:
            not_yet(f"fts_query returned None on {question!r}: return the FTS5 expression")
        if not isinstance(expression, str):
            wrong_kind(f"fts_query returned {_kind(expression)}; return a str to pass to MATCH ?")
        want = _fts(_reference(question))
        try:
            got = _fts(expression)
        except sqlite3.Error as exc:
            not_yet(f"on {question!r}, FTS5 read part of your query {expression!r} as syntax ({exc}): "
                    'put each word in double quotes, with any " inside doubled')
        if got == want:
            continue
        if set(got) < set(want):
            not_yet(f"on {question!r}, your query found rows {got} where any of its words finds {want}: "
                    "join the words with OR (FTS5 joins them with AND when nothing is said)")
        not_yet(f"on {question!r}, your query {expression!r} found rows {got}; expected {want}: each word, "
                "quoted, joined with OR")


@_exercise("09", 3)
def check_09_3(fuse: Any) -> None:
    """`fuse(rankings, k=60)`: reciprocal rank fusion, best first, ties in first-seen order."""
    _check_callable(fuse, "fuse", "fuse(rankings, k=60) returns the ids, best first")
    cases = [
        ("two rankings that agree on b", [["a", "b", "c"], ["b", "c", "d"]], 60, ["b", "c", "a", "d"]),
        ("one ranking", [["x", "y", "z"]], 60, ["x", "y", "z"]),
        ("an id only one ranking has, ranked first there", [["p", "q"], ["r", "q"]], 60, ["q", "p", "r"]),
        ("a small k, where a first place outweighs being in both", [["a", "x", "y", "b"], ["p", "q", "r", "b"]], 1,
         ["a", "p", "b", "x", "q", "y", "r"]),
        ("the same with k=60, where being in both wins", [["a", "x", "y", "b"], ["p", "q", "r", "b"]], 60,
         ["b", "a", "p", "x", "q", "y", "r"]),
        ("ties, in the order first seen", [["m", "n"], ["n", "m"]], 60, ["m", "n"]),
        ("no rankings", [], 60, []),
    ]
    for what, rankings, k, want in cases:
        got = _run(fuse, [list(r) for r in rankings], k, name="fuse", case=f"on {what}")
        if got is None:
            not_yet(f"fuse returned None on {what}: return the list of ids")
        if not isinstance(got, (list, tuple)):
            wrong_kind(f"fuse returned {_kind(got)}; return a list of ids, best first")
        got = list(got)
        if got and all(isinstance(item, tuple) and len(item) == 2 for item in got):
            wrong_kind("fuse returned (id, score) pairs; return the ids alone, best first")
        if got == want:
            continue
        if sorted(map(str, got)) != sorted(map(str, want)):
            not_yet(f"on {what}: the ids should be {_show(sorted(want))}, every id of every ranking once; "
                    f"yours were {_show(got)}")
        if k != 60 and got == [x for x in _fused(rankings, 60)]:
            not_yet(f"on {what} (k={k}): use the k you are given, not 60")
        not_yet(f"on {what}: expected {want}, got {got}: an id at rank r (from 1) adds 1/(k + r), summed over "
                "the rankings it is in; sort by that, highest first, keeping first-seen order on ties")


def _fused(rankings: list[list[str]], k: int) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])
