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
    _check_callable(like_pattern, "like_pattern", "like_pattern(text) returns the pattern, a str",
                    zh="like_pattern(text) 返回 LIKE 模式，一个 str")
    for needle in NEEDLES:
        pattern = _run(like_pattern, needle, name="like_pattern", case=f"on {needle!r}",
                       case_zh=f"输入 {needle!r} 时")
        if pattern is None:
            not_yet(f"like_pattern returned None on {needle!r}: return the pattern string",
                    zh=f"输入 {needle!r} 时 like_pattern 返回了 None：要返回模式字符串")
        if not isinstance(pattern, str):
            wrong_kind(f"like_pattern returned {_kind(pattern)}; return a str to pass as the ? parameter",
                       zh=f"like_pattern 返回的是{_kind(pattern)}；要返回一个 str，作为 ? 参数传进去")
        want = [row for row in ROWS if needle.lower() in row.lower()]  # LIKE ignores ASCII case
        try:
            got = _like(pattern)
        except sqlite3.Error as exc:
            not_yet(f"on {needle!r}, SQLite refused your pattern {pattern!r}: {exc}",
                    zh=f"输入 {needle!r} 时，SQLite 拒绝了你的模式 {pattern!r}：{exc}")
        if got == want:
            continue
        extra, missing = [r for r in got if r not in want], [r for r in want if r not in got]
        if extra:
            hint = ("% and _ are wildcards: escape each as \\% and \\_" if any(c in needle for c in "%_")
                    else "escape the backslash itself too (\\\\), or it escapes the next character")
            hint_zh = ("% 和 _ 是通配符：分别转义成 \\% 和 \\_" if any(c in needle for c in "%_")
                       else "反斜杠本身也要转义（\\\\），不然它会转义掉后面那个字符")
            not_yet(f"searching for {needle!r} also found {_show(extra, 50)}: {hint}",
                    zh=f"搜索 {needle!r} 时还找到了 {_show(extra, 50)}：{hint_zh}")
        not_yet(f"searching for {needle!r} missed {_show(missing, 50)}: keep % before and after, "
                "so the text may stand anywhere",
                zh=f"搜索 {needle!r} 时漏掉了 {_show(missing, 50)}：前后都要留着 %，这样文本出现在任何位置都能找到")


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
    _check_callable(fts_query, "fts_query", "fts_query(question) returns an FTS5 query, a str",
                    zh="fts_query(question) 返回 FTS5 查询，一个 str")
    for question in QUESTIONS:
        expression = _run(fts_query, question, name="fts_query", case=f"on {question!r}",
                          case_zh=f"输入 {question!r} 时")
        if expression is None:
            not_yet(f"fts_query returned None on {question!r}: return the FTS5 expression",
                    zh=f"输入 {question!r} 时 fts_query 返回了 None：要返回 FTS5 表达式")
        if not isinstance(expression, str):
            wrong_kind(f"fts_query returned {_kind(expression)}; return a str to pass to MATCH ?",
                       zh=f"fts_query 返回的是{_kind(expression)}；要返回一个 str，传给 MATCH ?")
        want = _fts(_reference(question))
        try:
            got = _fts(expression)
        except sqlite3.Error as exc:
            not_yet(f"on {question!r}, FTS5 read part of your query {expression!r} as syntax ({exc}): "
                    'put each word in double quotes, with any " inside doubled',
                    zh=f"输入 {question!r} 时，FTS5 把你的查询 {expression!r} 的一部分当成了语法（{exc}）："
                       '把每个词放进双引号里，词里的 " 要写两遍')
        if got == want:
            continue
        if set(got) < set(want):
            not_yet(f"on {question!r}, your query found rows {got} where any of its words finds {want}: "
                    "join the words with OR (FTS5 joins them with AND when nothing is said)",
                    zh=f"输入 {question!r} 时，你的查询找到的行是 {got}，而匹配任意一个词应该找到 {want}："
                       "用 OR 把词连起来（什么都不写时，FTS5 用 AND 连接）")
        not_yet(f"on {question!r}, your query {expression!r} found rows {got}; expected {want}: each word, "
                "quoted, joined with OR",
                zh=f"输入 {question!r} 时，你的查询 {expression!r} 找到的行是 {got}，应该是 {want}："
                   "每个词加上引号，再用 OR 连起来")


FUSE_CASES_ZH = {  # the Chinese of each case's description in check_09_3
    "two rankings that agree on b": "两份排名都看好 b",
    "one ranking": "只有一份排名",
    "an id only one ranking has, ranked first there": "某个 id 只在一份排名里出现，而且排第一",
    "a small k, where a first place outweighs being in both": "k 很小，排第一胜过同时出现在两份排名里",
    "the same with k=60, where being in both wins": "同样的排名，k=60 时同时出现在两份里的胜出",
    "ties, in the order first seen": "分数相同，按首次出现的顺序排",
    "no rankings": "没有任何排名",
}


@_exercise("09", 3)
def check_09_3(fuse: Any) -> None:
    """`fuse(rankings, k=60)`: reciprocal rank fusion, best first, ties in first-seen order."""
    _check_callable(fuse, "fuse", "fuse(rankings, k=60) returns the ids, best first",
                    zh="fuse(rankings, k=60) 返回这些 id，最好的排在最前")
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
        what_zh = FUSE_CASES_ZH.get(what, what)
        got = _run(fuse, [list(r) for r in rankings], k, name="fuse", case=f"on {what}",
                   case_zh=f"用例“{what_zh}”")
        if got is None:
            not_yet(f"fuse returned None on {what}: return the list of ids",
                    zh=f"在用例“{what_zh}”中，fuse 返回了 None：要返回 id 列表")
        if not isinstance(got, (list, tuple)):
            wrong_kind(f"fuse returned {_kind(got)}; return a list of ids, best first",
                       zh=f"fuse 返回的是{_kind(got)}；要返回 id 列表，最好的排在最前")
        got = list(got)
        if got and all(isinstance(item, tuple) and len(item) == 2 for item in got):
            wrong_kind("fuse returned (id, score) pairs; return the ids alone, best first",
                       zh="fuse 返回的是 (id, score) 对；只返回 id，最好的排在最前")
        if got == want:
            continue
        if sorted(map(str, got)) != sorted(map(str, want)):
            not_yet(f"on {what}: the ids should be {_show(sorted(want))}, every id of every ranking once; "
                    f"yours were {_show(got)}",
                    zh=f"在用例“{what_zh}”中，id 应该是 {_show(sorted(want))}，每份排名里的每个 id 各出现一次；"
                       f"你返回的是 {_show(got)}")
        if k != 60 and got == [x for x in _fused(rankings, 60)]:
            not_yet(f"on {what} (k={k}): use the k you are given, not 60",
                    zh=f"在用例“{what_zh}”（k={k}）中，要用传进来的 k，不要写死 60")
        not_yet(f"on {what}: expected {want}, got {got}: an id at rank r (from 1) adds 1/(k + r), summed over "
                "the rankings it is in; sort by that, highest first, keeping first-seen order on ties",
                zh=f"在用例“{what_zh}”中，期望 {want}，得到 {got}：排在第 r 位（从 1 算起）的 id 得 1/(k + r) 分，"
                   "把它所在各份排名的得分加起来；按总分从高到低排序，分数相同时保持首次出现的顺序")


def _fused(rankings: list[list[str]], k: int) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])
