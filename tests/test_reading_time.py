"""scripts/reading_time.py: the READMEs' timing tables are its output, and its formula is the one it states.

The tables cannot drift: both READMEs must hold exactly what the script prints for the notebooks as
they are (`python scripts/reading_time.py --write` puts it there). The formula is checked on a
notebook made for it, whose every count is known; a check's cases, which the script reads from the
check's source, are compared with the calls each check really makes on its notebook's reference
solution.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import pytest

from miniagent.exercises import CHECKS, DONE

ROOT = Path(__file__).resolve().parent.parent


def load_reading_time():
    spec = importlib.util.spec_from_file_location("reading_time", ROOT / "scripts" / "reading_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["reading_time"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


rt = load_reading_time()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_readmes_and_the_instructors_kit_hold_the_scripts_tables(lang):
    for path, kinds in rt.FILES[lang].items():
        text = path.read_text(encoding="utf-8")
        for name, table in rt.blocks(lang, kinds).items():
            assert rt.in_readme(text, name) == table, (
                f"{path.relative_to(ROOT)}: the {name} table is not scripts/reading_time.py's output; "
                "run `.venv/bin/python scripts/reading_time.py --write`")


def test_the_kit_has_a_minute_plan_for_every_notebook_and_the_readmes_link_it():
    for lang, kit in (("en", "docs/instructors.md"), ("zh", "docs/instructors.zh-CN.md")):
        names = set(rt.blocks(lang, ("plans",)))
        assert names == {f"plan {p.name[:2]}" for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")} and len(names) == 16
        assert kit in rt.READMES[lang].read_text(encoding="utf-8")
        assert (ROOT / kit) in rt.FILES[lang]


@pytest.mark.harness  # slow (seconds): make test-binder / make test-student, which CI runs
def test_check_fails_on_a_stale_table_and_write_mends_it(tmp_path, monkeypatch, capsys):
    files = {}
    for lang, paths in rt.FILES.items():
        files[lang] = {}
        for path, kinds in paths.items():
            copy = tmp_path / lang / path.name
            copy.parent.mkdir(exist_ok=True)
            copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
            files[lang][copy] = kinds
    monkeypatch.setattr(rt, "FILES", files)
    readme, kit = list(files["en"])
    text, plan = readme.read_text(encoding="utf-8"), kit.read_text(encoding="utf-8")
    readme.write_text(text.replace("| 00 · Setup | ", "| 00 · Setup | 99", 1), encoding="utf-8")
    kit.write_text(plan.replace("| 0:00 | ", "| 0:00 | 99", 1), encoding="utf-8")
    assert readme.read_text(encoding="utf-8") != text and kit.read_text(encoding="utf-8") != plan
    assert rt.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "README.md (notebooks): not this script's output" in out and "instructors.md (plan 00)" in out
    assert rt.main(["--write"]) == 0 and rt.main(["--check"]) == 0
    assert readme.read_text(encoding="utf-8") == text and kit.read_text(encoding="utf-8") == plan


# --- the formula, on a notebook made for it ----------------------------------------------------


def cell(kind, source, tags=(), outputs=()):
    made = {"cell_type": kind, "source": source, "metadata": {"tags": list(tags)} if tags else {}}
    if kind == "code":
        made |= {"outputs": list(outputs), "execution_count": None}
    return made


def stream(lines):
    return {"output_type": "stream", "name": "stdout", "text": "".join(line + "\n" for line in lines)}


def test_the_formula_the_docstring_states_on_a_notebook_whose_counts_are_known(tmp_path):
    words = " ".join(["word"] * 400)  # 2 minutes at 200 words a minute
    statement = " ".join(["spec"] * 48)  # + "**Exercise 1.**": 50 words, 1 minute at a quarter of the speed
    code = "\n".join(f"x{i} = {i}" for i in range(30)) + "\n# a comment\n\n"  # 30 lines: 3 minutes
    nb = {"cells": [
        cell("markdown", "# 99 · Counting — a test\n" + words + "\n```mermaid\nflowchart LR\n  a --> b\n```"),
        cell("code", code, outputs=[stream([f"line {i}" for i in range(40)]),  # 2 minutes
                                    stream([f"row {i}   {i * 2}" for i in range(10)]),  # 10 table rows: 1 minute
                                    {"output_type": "display_data", "metadata": {},
                                     "data": {"image/png": "", "text/plain": "<Figure>"}}]),
        cell("markdown", "## Exercises\n\n**Exercise 1.** " + statement),
        cell("code", "def to_openai_tool(tool):\n    ...", ["exercise"]),
        cell("code", "miniagent.exercises.check_08_1(to_openai_tool)", ["check"],
             [{"output_type": "execute_result", "data": {"text/plain": "exercise 1: not yet: " + words}}]),
        cell("code", "# The reference solution\n" + "\n".join(f"line{i} = {i}" for i in range(6))
             + "\n\nminiagent.exercises.check_08_1(reference)", ["solution"], [stream(["exercise 1: done!"])]),
    ]}
    path = tmp_path / "99_counting.ipynb"
    path.write_text(json.dumps(nb))
    book = rt.estimate(path)
    assert book.title == "99 · Counting"
    assert (book.code_lines, book.output_lines, book.table_rows, book.figures) == (30, 40, 10, 2)
    assert book.parts == {"prose": 2, "code": 3, "outputs": 3, "figures": 2}  # headings are not prose
    assert [name for name, _ in book.sections] == ["", "Exercises"]
    [exercise] = book.exercises
    assert (exercise.key, exercise.solution_lines, exercise.cases) == ("08-1", 6, 3)  # three tools in check 08-1
    assert exercise.statement == pytest.approx(50 / 200)
    assert exercise.minutes == pytest.approx(2 + 1 + 3 + 2 * math.log2(3))  # 9.17
    assert book.exercise_minutes == [9] and book.alone == 10 + 9
    assert book.section_minutes == [("", 10), ("Exercises", 0)]
    plan = rt.plan_table(book).splitlines()
    assert plan[2] == "| 0:00 | 10 | the title, what you will be able to do, the setup cell · Exercises |"
    assert plan[3] == "| 0:10 | 10 | discussion: the questions below |"
    assert plan[4].startswith("| 0:20 | 9 + 3 | exercise 1 (`check_08_1`)")
    assert plan[5] == "| 0:32 | | end (alone: 19 min; in a room: 32 min) |"
    nb["cells"][0]["source"] = "# 99 · 数数：测试\n" + "字" * 700  # 2 minutes at 350 characters a minute
    path.write_text(json.dumps(nb))
    assert rt.estimate(path).title == "99 · 数数" and rt.estimate(path).parts["prose"] == 2


def test_the_docstring_states_every_rate_the_script_uses():
    doc = " ".join(rt.__doc__.split())
    for phrase in (f"{rt.WORDS_A_MINUTE} English words a minute", f"{rt.HAN_A_MINUTE} Chinese characters a minute",
                   f"{rt.CODE_LINES_A_MINUTE} lines a minute", f"{rt.OUTPUT_LINES_A_MINUTE} lines a minute",
                   f"at {rt.TABLE_ROWS_A_MINUTE} a minute", f"{rt.PER_FIGURE} minute each",
                   f"{rt.EXERCISE_BASE} minutes (run the starter", "a quarter of the prose speed",
                   f"{rt.PER_SOLUTION_LINE} minutes for every line", f"{rt.PER_DOUBLING_OF_CASES} × log2 cases",
                   f"{rt.DISCUSSION_PER_NOTEBOOK} minutes of discussion a notebook",
                   f"and {rt.DISCUSSION_PER_EXERCISE} an exercise",
                   f"a {rt.BREAK}-minute break for every full {rt.BREAK_EVERY} minutes"):
        assert phrase in doc, phrase
    assert rt.STATEMENT_SLOWER == 4  # "a quarter"


def test_exercises_are_not_all_alike_and_the_long_ones_the_issue_named_take_10_to_20_minutes():
    minutes = {e.key: e.minutes for nb in rt.notebooks() for e in nb.exercises}
    assert sorted(minutes) == sorted(CHECKS)
    for key in ("08-3", "11-2", "12-2"):
        assert 10 <= minutes[key] <= 20, (key, minutes[key])
    assert min(minutes.values()) >= rt.EXERCISE_BASE and len({round(m) for m in minutes.values()}) >= 8


def test_each_notebooks_sections_add_up_to_its_reading_time():
    for nb in rt.notebooks() + rt.notebooks("zh"):
        assert nb.title.startswith(nb.name[:2] + " · "), nb.title  # its title, not the Colab badge above it
        minutes = [m for _, m in nb.section_minutes]
        assert sum(minutes) == nb.reading and min(minutes) >= 0, nb.name
        assert len(nb.sections) >= 5 and nb.sections[-1][0] in ("Exercises", "Next", "练习", "下一节"), nb.sections[-1]


def test_sessions_hold_every_notebook_once_leave_time_to_discuss_and_add_up():
    books = rt.notebooks()
    plan = rt.sessions(books)
    assert [n for s in plan for n in s.notebooks] == [nb.name[:2] for nb in books]
    alone = {nb.name[:2]: nb.alone for nb in books}
    for s in plan:
        assert s.reading + s.exercises == sum(alone[n] for n in s.notebooks)
        assert s.discussion >= rt.DISCUSSION_PER_NOTEBOOK * len(s.notebooks)
        assert s.total == s.reading + s.exercises + s.discussion + s.breaks
        assert s.total <= 4 * 60, s  # a session a room can sit through
    assert rt.sessions(books, "zh")[0].about != plan[0].about


# --- a check's cases: read from its source, as many as the runs it makes ------------------------


def counted_runs(monkeypatch) -> list[int]:
    """Count every run of learner code (`_run`) in the check modules."""
    calls = [0]
    for number in range(16):
        module = importlib.import_module(f"miniagent.exercises.n{number:02d}")
        if hasattr(module, "_run"):
            def counting(*args, _run=module._run, **kwargs):
                calls[0] += 1
                return _run(*args, **kwargs)
            monkeypatch.setattr(module, "_run", counting)
    return calls


def references():
    """(key, namespace, the check call) for every solution cell that runs on the notebook's imports alone."""
    from IPython.core.inputtransformer2 import TransformerManager

    for path in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        imports = []
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if c["cell_type"] != "code":
                continue
            tree = ast.parse(TransformerManager().transform_cell("".join(c["source"])))
            imports += [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
            if "solution" not in c.get("metadata", {}).get("tags", []):
                continue
            [call] = [node for node in tree.body if isinstance(node, ast.Expr) and rt.CHECK_CALL.search(ast.unparse(node))]
            key = "-".join(rt.CHECK_CALL.search(ast.unparse(call)).groups())
            namespace: dict = {}
            exec(compile(ast.Module(imports, []), str(path), "exec"), namespace)  # noqa: S102 (the notebook's own)
            try:
                exec(compile(ast.Module([n for n in tree.body if n is not call], []), key, "exec"), namespace)  # noqa: S102
            except NameError:  # it builds on what earlier cells made (a client, a session): not standalone
                continue
            yield key, namespace, call


@pytest.mark.harness  # slow (seconds): make test-binder / make test-student, which CI runs
def test_a_checks_cases_are_the_runs_it_makes_on_the_reference_solution(monkeypatch):
    calls = counted_runs(monkeypatch)
    compared = []
    for key, namespace, call in references():
        static = rt.check_cases(CHECKS[key])  # read before the check runs, and counted apart from it
        calls[0] = 0
        try:
            verdict = eval(compile(ast.Expression(call.value), key, "eval"), namespace)  # noqa: S307
        except NameError:  # the check needs an object of the notebook's (mock_llm, a session)
            continue
        if verdict.kind != DONE:  # a check changed and its notebook not rebuilt yet: nbval says so, not this test
            continue
        assert static == max(1, calls[0]), key
        compared.append(key)
    assert len(compared) >= 30 and {"04-2", "06-1", "07-3", "08-3", "11-2", "12-2"} <= set(compared), compared


def test_every_check_has_countable_cases():
    counts = {key: rt.check_cases(check) for key, check in CHECKS.items()}
    assert all(n >= 1 for n in counts.values())
    assert counts["04-2"] == 4 * len(importlib.import_module("miniagent.exercises.n04")._requests())
    assert counts["12-2"] == len(importlib.import_module("miniagent.exercises.n12").PROBES)
    assert re.search(r"\b11-2\b", rt.details("en"))
