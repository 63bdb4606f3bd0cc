"""How long each notebook takes a newcomer, and a workshop plan: the READMEs' timing tables.

    python scripts/reading_time.py            # both tables, English (notebooks/)
    python scripts/reading_time.py --lang zh  # the same for the Chinese edition (notebooks/zh/)
    python scripts/reading_time.py --details  # every exercise's statement, solution lines and cases
    python scripts/reading_time.py --write    # put the tables into README.md and README.zh-CN.md
    python scripts/reading_time.py --check    # exit 1 if a README's tables are not this script's output

The estimate is deliberately simple, so anyone can check it by hand. A notebook, alone:
- prose: 200 English words a minute, or 350 Chinese characters a minute (technical text read
  with care, not skimmed); Mermaid source is not prose, its diagram is a figure;
- code: 10 lines a minute, to read a cell and run it (blank and comment-only lines not counted);
- outputs, what the saved run printed (stream and text output; a traceback counts its last
  line only): 20 lines a minute, and a table row, a line whose columns are lined up with two
  or more spaces or `|`, at 10 a minute (its numbers are compared with the rows around it);
- a figure (a Mermaid diagram, a plot, a widget): 1 minute each;
- each exercise: 2 minutes (run the starter and the check, read the verdict), plus its
  statement read at a quarter of the prose speed (it is a specification: read twice, looked
  back at), plus 0.5 minutes for every line of the reference solution (what the learner
  writes; the check call and comment-only lines not counted), plus 2 minutes for every
  doubling of the check's cases (2 × log2 cases: each case is a situation the answer must
  handle, and the first "not yet" a newcomer meets usually names one).
The cells of an exercise (tagged `exercise`, `check`, `solution`) count only in the exercise:
a learner opens a solution after trying, and its statement is not counted twice as prose.

A check's cases are read from its source (miniagent/exercises/nNN.py): every call that runs
the learner's code (`_run`, or `_attempt` and `_awaited`, which call it) counts once, times the
number of items of every `for` loop around it (a literal as written, or the check module's
own list or function, evaluated, with what the check appends to it); a check that grades a
value the learner made, with no such call, has one case. tests/test_reading_time.py runs each check on its notebook's reference
solution and compares this count with the calls it really makes.

A workshop session (SESSIONS) adds to the reading and the exercises of its notebooks
10 minutes of discussion a notebook (its questions in docs/instructors.md) and 3 an exercise
(the room's usual wrong answer on the projector), then a 10-minute break for every full
90 minutes of all that. Each part is rounded to whole minutes and the totals add the rounded
parts, so every row of a table adds up as printed.
"""

from __future__ import annotations

import argparse
import ast
import copy
import functools
import inspect
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORDS_A_MINUTE = 200  # English prose
HAN_A_MINUTE = 350  # Chinese characters
CODE_LINES_A_MINUTE = 10
OUTPUT_LINES_A_MINUTE = 20
TABLE_ROWS_A_MINUTE = 10
PER_FIGURE = 1
EXERCISE_BASE = 2  # minutes: run the starter and the check, read the verdict
STATEMENT_SLOWER = 4  # a statement is read at a quarter of the prose speed
PER_SOLUTION_LINE = 0.5
PER_DOUBLING_OF_CASES = 2
DISCUSSION_PER_NOTEBOOK = 10
DISCUSSION_PER_EXERCISE = 3
BREAK, BREAK_EVERY = 10, 90

# A course in sessions of at most about three hours: (notebooks, what the session is about).
SESSIONS = [
    (("00", "01", "02"), "the call and tools", "一次调用与工具"),
    (("03", "04"), "the loop and its context", "循环与上下文"),
    (("05", "06"), "the agent, streamed", "完整的 Agent 与流式输出"),
    (("07", "08"), "serving it, on any provider", "服务化与多厂商"),
    (("09", "10"), "memory and several agents", "记忆与多 Agent"),
    (("11",), "tracing", "链路追踪"),
    (("12",), "tools from anywhere (MCP)", "MCP"),
    (("13",), "the production checklist", "上线前检查清单"),
    (("14",), "a coding agent", "编程 Agent"),
    (("15",), "a long-running harness", "长时间运行的 harness"),
]

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
MERMAID = re.compile(r"```mermaid\n.*?```", re.S)
EXERCISE_MARK = re.compile(r"\*\*(?:Exercise|练习) ?\d+[.．。]?\*\*")
TABLE_ROW = re.compile(r"\S {2,}\S")
CHECK_CALL = re.compile(r"exercises\.check_(\d\d)_(\d)\(")
RUNNERS = {"_run", "_attempt", "_awaited"}  # what runs the learner's code in a check
EXERCISE_TAGS = {"exercise", "check", "solution"}


def reading_minutes(text: str) -> float:
    """Prose: Chinese characters at HAN_A_MINUTE, every other word at WORDS_A_MINUTE."""
    han = len(HAN.findall(text))
    return han / HAN_A_MINUTE + len(HAN.sub(" ", text).split()) / WORDS_A_MINUTE


def code_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def output_lines(outputs: list[dict]) -> tuple[int, int, int]:
    """(plain lines, table rows, figures) a learner reads in a cell's saved outputs."""
    lines = rows = figures = 0
    for out in outputs:
        data = out.get("data", {})
        if "image/png" in data or "application/vnd.jupyter.widget-view+json" in data:
            figures += 1
            continue
        if out["output_type"] == "error":
            text = f"{out.get('ename', '')}: {out.get('evalue', '')}"
        else:
            text = "".join(out.get("text", "")) or "".join(data.get("text/plain", ""))
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if TABLE_ROW.search(line) or line.count("|") >= 2:
                rows += 1
            else:
                lines += 1
    return lines, rows, figures


# --- a check's cases -------------------------------------------------------------------------


def check_cases(check) -> int:
    """The cases of an exercise check, read from its source (see the module docstring)."""
    fn = inspect.unwrap(check)
    module = sys.modules[fn.__module__]
    source = Path(inspect.getsourcefile(fn)).read_text(encoding="utf-8")  # found by name, not by line number
    tree = next(node for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.FunctionDef) and node.name == fn.__name__)
    names = dict(vars(module))  # the module's own lists and functions, then the check's locals as they are assigned
    local: set[str] = set()

    def evaluate(node: ast.expr):
        return eval(compile(ast.Expression(node), f"<{fn.__name__}>", "eval"), names)  # noqa: S307 (the package's own code)

    def runs(node: ast.AST) -> int:
        return sum(1 for n in ast.walk(node)
                   if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in RUNNERS)

    def items(node: ast.expr) -> int:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("enumerate", "list") \
                and node.args:
            return items(node.args[0])
        if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return len(node.elts)
        try:
            return len(list(evaluate(node)))
        except Exception as exc:
            raise ValueError(f"{fn.__name__}: cannot count the items of {ast.unparse(node)!r}: {exc}") from exc

    def walk(body: list[ast.stmt], times: int) -> int:
        total = 0
        for node in body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and not runs(node.value)):  # never run the learner's code, nor the check's runs of it
                try:  # a copy: a later `.append` must not change the module's own list
                    names[node.targets[0].id] = copy.copy(evaluate(node.value))
                except Exception:  # it uses the answer or a local object: only a literal's length is known
                    if isinstance(node.value, (ast.List, ast.Tuple)):
                        names[node.targets[0].id] = [None] * len(node.value.elts)
                local.add(node.targets[0].id)
            grown = node.value if isinstance(node, ast.Expr) else None  # cases.append(...), cases.extend(...)
            if (isinstance(grown, ast.Call) and isinstance(grown.func, ast.Attribute)
                    and isinstance(grown.func.value, ast.Name) and grown.func.value.id in local
                    and grown.func.attr in ("append", "extend", "insert") and isinstance(names.get(grown.func.value.id), list)):
                try:
                    evaluate(grown)
                except Exception:  # an item the check builds from the answer: it still counts
                    items_added = items(grown.args[0]) if grown.func.attr == "extend" else 1
                    names[grown.func.value.id].extend([None] * items_added)
            if isinstance(node, (ast.For, ast.AsyncFor)):
                if runs(node):
                    total += walk(node.body, times * items(node.iter))
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    total += walk(inner, times)
            for handler in getattr(node, "handlers", []):
                total += walk(handler.body, times)
            total += times * sum(runs(child) for child in ast.iter_child_nodes(node)
                                 if not isinstance(child, (ast.stmt, ast.excepthandler)))
        return total

    return max(1, walk(tree.body, 1))


# --- a notebook ------------------------------------------------------------------------------


@dataclass
class Exercise:
    key: str  # "08-3"
    statement: float  # minutes to read it at prose speed
    solution_lines: int
    cases: int

    @property
    def minutes(self) -> float:
        return (EXERCISE_BASE + STATEMENT_SLOWER * self.statement + PER_SOLUTION_LINE * self.solution_lines
                + PER_DOUBLING_OF_CASES * math.log2(self.cases))


@dataclass
class Part:
    """What a learner reads in one section of a notebook (or in all of it)."""

    prose: float = 0.0  # minutes
    code_lines: int = 0
    output_lines: int = 0
    table_rows: int = 0
    figures: int = 0

    def __add__(self, other: "Part") -> "Part":
        return Part(self.prose + other.prose, self.code_lines + other.code_lines,
                    self.output_lines + other.output_lines, self.table_rows + other.table_rows,
                    self.figures + other.figures)

    @property
    def minutes(self) -> float:
        return (self.prose + self.code_lines / CODE_LINES_A_MINUTE + self.output_lines / OUTPUT_LINES_A_MINUTE
                + self.table_rows / TABLE_ROWS_A_MINUTE + self.figures * PER_FIGURE)


@dataclass
class Notebook:
    name: str  # "08_providers"
    title: str  # "08 · Other providers"
    sections: list[tuple[str, Part]]  # in order; the first is what comes before the first "## " heading
    exercises: list[Exercise]

    @property
    def whole(self) -> Part:
        return sum((part for _, part in self.sections), Part())

    def __getattr__(self, name: str):  # nb.prose, nb.code_lines, ...: the whole notebook's
        if name in Part.__dataclass_fields__:
            return getattr(self.whole, name)
        raise AttributeError(name)

    @property
    def parts(self) -> dict[str, int]:
        """Whole minutes of each part, as the tables print them."""
        whole = self.whole
        return {"prose": round(whole.prose), "code": round(whole.code_lines / CODE_LINES_A_MINUTE),
                "outputs": round(whole.output_lines / OUTPUT_LINES_A_MINUTE + whole.table_rows / TABLE_ROWS_A_MINUTE),
                "figures": whole.figures * PER_FIGURE}

    @property
    def reading(self) -> int:
        return sum(self.parts.values())

    @property
    def section_minutes(self) -> list[tuple[str, int]]:
        """Each section's whole minutes, adding up to `reading` (largest remainders get the odd minutes)."""
        exact = [part.minutes for _, part in self.sections]
        whole = [math.floor(m) for m in exact]
        order = sorted(range(len(exact)), key=lambda i: exact[i] - whole[i], reverse=True)
        short = self.reading - sum(whole)
        for k in range(abs(short)):
            i = order[k % len(order)] if short > 0 else order[-1 - k % len(order)]
            whole[i] += 1 if short > 0 else -1 if whole[i] > 0 else 0
        return [(heading, m) for (heading, _), m in zip(self.sections, whole)]

    @property
    def exercise_minutes(self) -> list[int]:
        return [round(e.minutes) for e in self.exercises]

    @property
    def alone(self) -> int:
        return self.reading + sum(self.exercise_minutes)


ELSEWHERE = ("colab", "install")  # the cells scripts/nbtools.py puts ahead of every notebook (nbtools.ELSEWHERE)


def title_of(cells: list[dict]) -> str:
    """'08 · Other providers' from '# 08 · Other providers — one agent on ...' (or its Chinese '：')."""
    first = "".join(cells[0]["source"]).splitlines()[0].lstrip("# ").strip()
    return re.split(r" — |：", first, maxsplit=1)[0].strip()


HEADING = re.compile(r"^## (.+)$", re.M)


def estimate(path: Path) -> Notebook:
    """The notebook's measures; read once per version of its file (the tests ask for every notebook often)."""
    stat = path.stat()
    return _estimate(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _estimate(path: Path, mtime_ns: int, size: int) -> Notebook:
    from miniagent.exercises import CHECKS

    cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c.get("id") not in ELSEWHERE]  # the Colab badge and its install cell: nothing to read here
    sections: list[tuple[str, Part]] = [("", Part())]
    exercises = []
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] == "markdown":
            mark = EXERCISE_MARK.search(text)
            if mark and any(EXERCISE_TAGS & set(c.get("metadata", {}).get("tags", [])) for c in cells[i + 1:i + 2]):
                text = text[:mark.start()]  # the statement is the exercise's, below
            pieces = HEADING.split(text)  # [before the first heading, heading, its text, heading, ...]
            for k, piece in enumerate(pieces):
                if k % 2 == 1:
                    sections.append((piece.strip(), Part()))
                    continue
                heading, part = sections[-1]
                sections[-1] = (heading, part + Part(prose=reading_minutes(MERMAID.sub(" ", piece)),
                                                     figures=len(MERMAID.findall(piece))))
            continue
        if "exercise" in tags:
            exercises.append(_exercise(cells, i, CHECKS))
        if tags & EXERCISE_TAGS:
            continue
        plain, table, drawn = output_lines(cell.get("outputs", []))
        heading, part = sections[-1]
        sections[-1] = (heading, part + Part(code_lines=len(code_lines(text)), output_lines=plain, table_rows=table,
                                             figures=drawn))
    return Notebook(path.stem, title_of(cells), sections, exercises)


def _exercise(cells: list[dict], at: int, checks: dict) -> Exercise:
    """The exercise whose `exercise` cell is cells[at]: the statement above it, the check and the solution after it."""
    before = next(c for c in reversed(cells[:at]) if c["cell_type"] == "markdown")
    text = "".join(before["source"])
    mark = EXERCISE_MARK.search(text)
    statement = text[mark.start():] if mark else text

    def after(tag: str) -> dict:
        return next(c for c in cells[at:] if tag in c.get("metadata", {}).get("tags", []))

    key = "-".join(CHECK_CALL.search("".join(after("check")["source"])).groups())
    solution = [line for line in code_lines("".join(after("solution")["source"])) if not CHECK_CALL.search(line)]
    return Exercise(key, reading_minutes(statement), len(solution), check_cases(checks[key]))


def notebooks(lang: str = "en") -> list[Notebook]:
    folder = ROOT / "notebooks" / ("zh" if lang == "zh" else "")
    return [estimate(path) for path in sorted(folder.glob("[0-9]*.ipynb"))]


# --- the tables ------------------------------------------------------------------------------

WORDS = {
    "en": {"notebook_head": "| notebook | prose | code | outputs | figures | exercises | alone |",
           "session_head": "| session | notebooks | reading | exercises | discussion | breaks | total |",
           "all": "all", "course": "the course", "h": "{h} h {m:02d} min", "min": "{m} min"},
    "zh": {"notebook_head": "| notebook | 正文 | 代码 | 输出 | 图 | 练习 | 独自学完 |",
           "session_head": "| 场次 | notebook | 阅读 | 练习 | 讨论 | 休息 | 合计 |",
           "all": "合计", "course": "全部课程", "h": "{h} 小时 {m:02d} 分钟", "min": "{m} 分钟"},
}


def duration(minutes: int, lang: str) -> str:
    words = WORDS[lang]
    return words["h"].format(h=minutes // 60, m=minutes % 60) if minutes >= 60 else words["min"].format(m=minutes)


def notebook_table(books: list[Notebook], lang: str = "en") -> str:
    rows = [WORDS[lang]["notebook_head"], "|---|---|---|---|---|---|---|"]
    for nb in books:
        p = nb.parts
        rows.append(f"| {nb.title} | {p['prose']} | {p['code']} | {p['outputs']} | {p['figures']} | "
                    f"{' + '.join(map(str, nb.exercise_minutes))} | {duration(nb.alone, lang)} |")
    total = {k: sum(nb.parts[k] for nb in books) for k in ("prose", "code", "outputs", "figures")}
    rows.append(f"| {WORDS[lang]['all']} | {total['prose']} | {total['code']} | {total['outputs']} | "
                f"{total['figures']} | {sum(sum(nb.exercise_minutes) for nb in books)} | "
                f"{duration(sum(nb.alone for nb in books), lang)} |")
    return "\n".join(rows)


@dataclass
class Session:
    number: int
    notebooks: tuple[str, ...]
    about: str
    reading: int
    exercises: int
    discussion: int

    @property
    def breaks(self) -> int:
        return BREAK * ((self.reading + self.exercises + self.discussion) // BREAK_EVERY)

    @property
    def total(self) -> int:
        return self.reading + self.exercises + self.discussion + self.breaks


def sessions(books: list[Notebook], lang: str = "en") -> list[Session]:
    by_number = {nb.name[:2]: nb for nb in books}
    planned = [number for numbers, _, _ in SESSIONS for number in numbers]
    assert sorted(planned) == sorted(by_number), f"SESSIONS must hold every notebook once: {planned}"
    out = []
    for n, (numbers, about_en, about_zh) in enumerate(SESSIONS, 1):
        these = [by_number[number] for number in numbers]
        out.append(Session(n, numbers, about_zh if lang == "zh" else about_en,
                           sum(nb.reading for nb in these), sum(sum(nb.exercise_minutes) for nb in these),
                           sum(DISCUSSION_PER_NOTEBOOK + DISCUSSION_PER_EXERCISE * len(nb.exercises) for nb in these)))
    return out


def session_table(books: list[Notebook], lang: str = "en") -> str:
    rows = [WORDS[lang]["session_head"], "|---|---|---|---|---|---|---|"]
    plan = sessions(books, lang)
    for s in plan:
        rows.append(f"| {s.number} · {s.about} | {', '.join(s.notebooks)} | {s.reading} | {s.exercises} | "
                    f"{s.discussion} | {s.breaks} | {duration(s.total, lang)} |")
    rows.append(f"| {WORDS[lang]['course']} | 00–{SESSIONS[-1][0][-1]} | {sum(s.reading for s in plan)} | "
                f"{sum(s.exercises for s in plan)} | {sum(s.discussion for s in plan)} | "
                f"{sum(s.breaks for s in plan)} | {duration(sum(s.total for s in plan), lang)} |")
    return "\n".join(rows)


# --- a notebook's minute plan, for docs/instructors.md ------------------------------------------

PLAN_WORDS = {
    "en": {"head": "| at | minutes | what |", "opening": "the title, what you will be able to do, the setup cell",
           "discuss": "discussion: the questions below",
           "exercise": "exercise {n} (`check_{key}`), then the room's usual wrong answers",
           "end": "end (alone: {alone} min; in a room: {room} min)"},
    "zh": {"head": "| 开始 | 分钟 | 内容 |", "opening": "标题、学完能做什么、准备单元格",
           "discuss": "讨论：下面的问题",
           "exercise": "练习 {n}（`check_{key}`），然后一起看全班最常见的错误答案",
           "end": "结束（独自学：{alone} 分钟；课堂上：{room} 分钟）"},
}


def plan_table(nb: Notebook, lang: str = "en") -> str:
    """The minute plan of one notebook in a room: its sections, the discussion, the exercises."""
    words = PLAN_WORDS[lang]
    rows = [words["head"], "|---|---|---|"]
    steps: list[tuple[str, str, int]] = []  # (minutes as printed, what, minutes)
    for heading, minutes in nb.section_minutes:
        what = heading or words["opening"]
        if minutes == 0 and steps:  # under half a minute: said with the section before it
            printed, before, m = steps[-1]
            steps[-1] = (printed, f"{before} · {what}", m)
        else:
            steps.append((str(minutes), what, minutes))
    discussion = DISCUSSION_PER_NOTEBOOK
    steps.append((str(discussion), words["discuss"], discussion))
    for n, (exercise, minutes) in enumerate(zip(nb.exercises, nb.exercise_minutes), 1):
        steps.append((f"{minutes} + {DISCUSSION_PER_EXERCISE}",
                      words["exercise"].format(n=n, key=exercise.key.replace("-", "_")),
                      minutes + DISCUSSION_PER_EXERCISE))
    at = 0
    for printed, what, minutes in steps:
        rows.append(f"| {at // 60}:{at % 60:02d} | {printed} | {what} |")
        at += minutes
    room = at
    assert room == nb.alone + DISCUSSION_PER_NOTEBOOK + DISCUSSION_PER_EXERCISE * len(nb.exercises)
    rows.append(f"| {at // 60}:{at % 60:02d} | | {words['end'].format(alone=nb.alone, room=room)} |")
    return "\n".join(rows)


# --- the files that hold the tables ----------------------------------------------------------

FILES = {  # each file, and the tables it holds between markers
    "en": {ROOT / "README.md": ("notebooks", "sessions"), ROOT / "docs" / "instructors.md": ("sessions", "plans")},
    "zh": {ROOT / "README.zh-CN.md": ("notebooks", "sessions"),
           ROOT / "docs" / "instructors.zh-CN.md": ("sessions", "plans")},
}
READMES = {lang: next(iter(files)) for lang, files in FILES.items()}


def marker(name: str) -> tuple[str, str]:
    return f"<!-- reading_time.py {name}: begin -->", f"<!-- reading_time.py {name}: end -->"


def blocks(lang: str, kinds: tuple[str, ...] = ("notebooks", "sessions", "plans")) -> dict[str, str]:
    """{block name: its table}: "notebooks", "sessions", and "plan NN" for each notebook."""
    books = notebooks(lang)
    made = {}
    if "notebooks" in kinds:
        made["notebooks"] = notebook_table(books, lang)
    if "sessions" in kinds:
        made["sessions"] = session_table(books, lang)
    if "plans" in kinds:
        made |= {f"plan {nb.name[:2]}": plan_table(nb, lang) for nb in books}
    return made


def in_readme(text: str, name: str) -> str | None:
    """The table between a file's markers for `name`, or None when it has none."""
    found = re.search(_block(name), text)
    return (found[1] or "") if found else None


def _block(name: str) -> re.Pattern:
    begin, end = marker(name)
    return re.compile(re.escape(begin) + r"\n(?:(.*?)\n)?" + re.escape(end), re.S)


def stale(lang: str) -> list[str]:
    """'README.md (notebooks)' for each table of a file that is not this script's output."""
    found = []
    for path, kinds in FILES[lang].items():
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        found += [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name} ({name})"
                  for name, table in blocks(lang, kinds).items() if in_readme(text, name) != table]
    return found


def write(lang: str) -> list[str]:
    """Put this script's tables between the markers of the files; the files that changed."""
    changed = []
    for path, kinds in FILES[lang].items():
        text = original = path.read_text(encoding="utf-8")
        for name, table in blocks(lang, kinds).items():
            begin, end = marker(name)
            if in_readme(text, name) is None:
                raise SystemExit(f"{path.name} has no {begin} ... {end} block")
            text = _block(name).sub(lambda _: f"{begin}\n{table}\n{end}", text)
        if text != original:
            path.write_text(text, encoding="utf-8")
            changed.append(path.name)
    return changed


def details(lang: str) -> str:
    rows = ["| exercise | statement (min at prose speed) | solution lines | cases | minutes |", "|---|---|---|---|---|"]
    for nb in notebooks(lang):
        for e in nb.exercises:
            rows.append(f"| {e.key} | {e.statement:.2f} | {e.solution_lines} | {e.cases} | {e.minutes:.1f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    parser.add_argument("--details", action="store_true", help="each exercise's measures")
    parser.add_argument("--plan", metavar="NN", help="the minute plan of notebook NN")
    parser.add_argument("--write", action="store_true", help="update the tables in the READMEs and docs/instructors*.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if a table there is not this script's output")
    args = parser.parse_args(argv)
    if args.write:
        for lang in FILES:
            for name in write(lang):
                print(f"updated {name}")
        return 0
    if args.check:
        found = [where for lang in FILES for where in stale(lang)]
        for where in found:
            print(f"{where}: not this script's output; run python scripts/reading_time.py --write")
        return 1 if found else 0
    if args.details:
        print(details(args.lang))
        return 0
    if args.plan:
        print(blocks(args.lang, ("plans",))[f"plan {args.plan}"])
        return 0
    for table in blocks(args.lang, ("notebooks", "sessions")).values():
        print(table, end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
