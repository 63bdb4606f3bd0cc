"""Checks for notebook 09 · Memory and retrieval."""

from __future__ import annotations

import re
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
        late = _escaped_late(needle, pattern)
        if late:
            found = (f"also found {_show(extra, 50)}" if extra else f"missed {_show(missing, 50)}",
                     f"还找到了 {_show(extra, 50)}" if extra else f"漏掉了 {_show(missing, 50)}")
            not_yet(f"searching for {needle!r} {found[0]}: your pattern, {pattern} as SQLite gets it, has two "
                    f"backslashes before the {late}: escaping the backslash after % and _ doubled the one you had "
                    "just put there; escape \\ first, then % and _",
                    zh=f"搜索 {needle!r} 时{found[1]}：你的模式（SQLite 收到的是 {pattern}）在 {late} 前面有两个"
                       "反斜杠：在 % 和 _ 之后才转义反斜杠，把刚加上的那个反斜杠又变成了两个；先转义 \\，再转义 % 和 _")
        if extra:
            hint = ("% and _ are wildcards: escape each as \\% and \\_" if any(c in needle for c in "%_")
                    else "escape the backslash itself too (\\\\), or it escapes the next character")
            hint_zh = ("% 和 _ 是通配符：分别转义成 \\% 和 \\_" if any(c in needle for c in "%_")
                       else "反斜杠本身也要转义（\\\\），不然它会转义掉后面那个字符")
            not_yet(f"searching for {needle!r} also found {_show(extra, 50)}: {hint}",
                    zh=f"搜索 {needle!r} 时还找到了 {_show(extra, 50)}：{hint_zh}")
        if not (pattern.startswith("%") and pattern.endswith("%") and not pattern.endswith("\\%")):
            not_yet(f"searching for {needle!r} missed {_show(missing, 50)}: keep % before and after, "
                    "so the text may stand anywhere",
                    zh=f"搜索 {needle!r} 时漏掉了 {_show(missing, 50)}：前后都要留着 %，这样文本出现在任何位置都能找到")
        not_yet(f"searching for {needle!r} missed {_show(missing, 50)} with your pattern, {pattern} as SQLite gets "
                "it: SQLite's LIKE knows only %, _ and the ESCAPE character; put one backslash before each %, _ and "
                "\\ of the text",
                zh=f"用你的模式（SQLite 收到的是 {pattern}）搜索 {needle!r} 时漏掉了 {_show(missing, 50)}：SQLite 的 LIKE 只认 %、_ "
                   "和 ESCAPE 指定的字符；在文本里的每个 %、_ 和 \\ 前面各加一个反斜杠")


def _escaped_late(needle: str, pattern: str) -> str | None:
    """The wildcard (% or _) that `pattern` puts two backslashes before where the text has none: the mark of
    escaping the backslash after % and _. None if there is no such wildcard."""
    return next((c for c in "%_" if f"\\\\{c}" in pattern and f"\\{c}" not in needle), None)


FTS_ROWS = ["My favourite colour is green", "The deadline is in March", "Say hi to Ada", "near the station",
            "c plus plus and minus", "drop the table, then order more", "or else not and"]
QUESTIONS = ["what is my favourite colour", "OR NOT AND", 'the "deadline', 'say "hi"', "NEAR(station deadline)",
             "c++ -minus :table *", "DROP TABLE t; --", "colour", "Ada's deadline?", "Hi!"]


def _fts(expression: str) -> list[int]:
    return _select("CREATE VIRTUAL TABLE t USING fts5(text)", FTS_ROWS,
                   "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", expression)


def _words(question: str) -> list[str]:
    """The question's words as FTS5 itself reads them (its default tokenizer, the one `t` uses):
    runs of letters and digits, so "NEAR(station" is two words and "Ada's" is "ada" and "s"."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE q USING fts5(text)")
    db.execute("CREATE VIRTUAL TABLE words USING fts5vocab(q, 'instance')")
    db.execute("INSERT INTO q (text) VALUES (?)", (question,))
    return [word for (word,) in db.execute("SELECT term FROM words ORDER BY offset")]


def _reference(question: str) -> str:
    """What the statement asks for: every word of the question, quoted, OR-ed."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in _words(question))


def _phrases(question: str) -> str:
    """The near miss: the question split at spaces, so "NEAR(station" is one phrase of two words side by side."""
    return " OR ".join('"' + part.replace('"', '""') + '"' for part in question.split())


@_exercise("09", 2)
def check_09_2(fts_query: Any) -> None:
    """`fts_query(question)`: an FTS5 expression matching any of the question's words (as FTS5 splits
    them: runs of letters and digits), each literally."""
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
        if not expression.strip():
            not_yet(f"fts_query returned an empty query on {question!r}, and FTS5 cannot search for nothing: "
                    f"its words are {_words(question)}; quote each one and join them with OR",
                    zh=f"输入 {question!r} 时 fts_query 返回了空查询，FTS5 没法搜索“什么都没有”：它的词是 "
                       f"{_words(question)}；每个词加上引号，再用 OR 连起来")
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
        if got == _fts(_phrases(question)):
            not_yet(f"on {question!r}, your query {expression!r} found rows {got} where any of its words finds "
                    f"{want}: a quoted string is a phrase, its words side by side, and splitting at spaces keeps "
                    f"words glued by punctuation together; FTS5's words here are {_words(question)}: quote each "
                    "one alone (re.findall(r'[^\\W_]+', question), letters and digits, finds them)",
                    zh=f"输入 {question!r} 时，你的查询 {expression!r} 找到的行是 {got}，而匹配任意一个词应该找到 "
                       f"{want}：引号里的字符串是一个短语，要求其中的词紧挨着出现；按空格切分，会让被标点粘在一起的词"
                       f"仍连在一起。FTS5 在这里读出的词是 {_words(question)}：每个词单独加引号"
                       "（re.findall(r'[^\\W_]+', question) 找的就是字母和数字，能把它们找出来）")
        if set(got) < set(want) and re.search(r'"\s+OR\s+"', expression):
            not_yet(f"on {question!r}, your query {expression!r} found rows {got} where any of its words finds "
                    f"{want}: it leaves words out; every word counts, short ones too: {_words(question)}",
                    zh=f"输入 {question!r} 时，你的查询 {expression!r} 找到的行是 {got}，而匹配任意一个词应该找到 "
                       f"{want}：它漏掉了一些词；每个词都要算上，短词也一样：{_words(question)}")
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
        ("ties, in the order first seen", [["n", "m"], ["m", "n"]], 60, ["n", "m"]),  # not in alphabetical order
        ("a small k, where a first place outweighs being in both", [["a", "x", "y", "b"], ["p", "q", "r", "b"]], 1,
         ["a", "p", "b", "x", "q", "y", "r"]),
        ("the same with k=60, where being in both wins", [["a", "x", "y", "b"], ["p", "q", "r", "b"]], 60,
         ["b", "a", "p", "x", "q", "y", "r"]),
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
        if got == _fused(rankings, k, start=0):
            not_yet(f"on {what}: expected {want}, got {got}: count ranks from 1, so the first id scores 1/(k + 1) "
                    "(enumerate(ranking, start=1))",
                    zh=f"在用例“{what_zh}”中，期望 {want}，得到 {got}：名次从 1 算起，排第一的 id 得 1/(k + 1) 分"
                       "（enumerate(ranking, start=1)）")
        if what.startswith("ties"):
            not_yet(f"on {what}: expected {want}, got {got}: the two scores are equal, so keep the order the ids "
                    "were first seen; sort by the score alone (Python's sort is stable), not by the id too",
                    zh=f"在用例“{what_zh}”中，期望 {want}，得到 {got}：两个分数相等，所以要保持 id 首次出现的顺序；"
                       "只按分数排序（Python 的排序是稳定的），不要再按 id 排")
        not_yet(f"on {what}: expected {want}, got {got}: an id at rank r (from 1) adds 1/(k + r), summed over "
                "the rankings it is in; sort by that, highest first, keeping first-seen order on ties",
                zh=f"在用例“{what_zh}”中，期望 {want}，得到 {got}：排在第 r 位（从 1 算起）的 id 得 1/(k + r) 分，"
                   "把它所在各份排名的得分加起来；按总分从高到低排序，分数相同时保持首次出现的顺序")


def _fused(rankings: list[list[str]], k: int, start: int = 1) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=start):
            scores[item] = scores.get(item, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])
