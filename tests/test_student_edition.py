"""The exercises as the notebooks hold them, and the student edition made from them.

Every exercise is three code cells in a row, after its statement: `exercise` (the
learner's cell), `check` (one bare call into `miniagent.exercises`) and `solution` (the
reference solution, its input collapsed, calling the same check on its own answer). In
the saved notebooks each check says "not yet" (the honest state of an untouched
exercise) and each solution says "done!"; nbval re-runs them on every `make test`.

The student edition (`make student`) drops the solutions and clears the exercise and
check outputs. These tests are fast; `tests/check_student_edition.py` (`make
test-student`) runs every student notebook in a kernel.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

from miniagent import exercises

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
CALL = re.compile(r"^miniagent\.exercises\.(check_(\d\d)_(\d))\(.*\)$", re.S)


def load_nbtools():
    spec = importlib.util.spec_from_file_location("nbtools", ROOT / "scripts" / "nbtools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nbtools = load_nbtools()


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def text(cell) -> str:
    """A code cell's outputs as one string: streams and text/plain results."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", "")))
    return "".join(parts)


def exercises_of(nb) -> list[tuple]:
    """(exercise, check, solution) cells, in notebook order; fails if the three are not together."""
    found = []
    cells = nb.cells
    for i, cell in enumerate(cells):
        if "exercise" in tags(cell):
            trio = cells[i:i + 3]
            assert [tags(c) for c in trio] == [["exercise"], ["check"], ["solution"]], \
                f"cell {i}: an exercise cell must be followed by its check cell and its solution cell"
            found.append(tuple(trio))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_exercise_has_a_check_call_and_a_collapsed_solution_calling_the_same_check(path):
    nb = nbformat.read(path, as_version=4)
    trios = exercises_of(nb)
    assert trios, f"{path.name} has no exercise"
    assert len(trios) == sum("exercise" in tags(c) for c in nb.cells) == sum("solution" in tags(c) for c in nb.cells)
    for number, (_, check, solution) in enumerate(trios, 1):
        call = CALL.match(check.source.strip())
        assert call, f"a check cell is one bare call into miniagent.exercises, got: {check.source!r}"
        assert call.group(2) == path.name[:2] and int(call.group(3)) == number, call.group(1)
        assert f"miniagent.exercises.{call.group(1)}(" in solution.source
        assert solution.metadata.get("jupyter", {}).get("source_hidden") is True


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_checks_say_not_yet_and_saved_solutions_say_done(path):
    for number, (_, check, solution) in enumerate(exercises_of(nbformat.read(path, as_version=4)), 1):
        assert text(check).startswith(f"exercise {number}: not yet: "), text(check)
        assert text(solution).rstrip().endswith(f"exercise {number}: done!"), text(solution)


def test_every_check_in_the_package_is_used_by_its_notebook():
    used = set()
    for path in NOTEBOOKS:
        for _, check, _ in exercises_of(nbformat.read(path, as_version=4)):
            name = CALL.match(check.source.strip()).group(1)
            used.add(name[len("check_"):].replace("_", "-"))
    assert used == set(exercises.CHECKS)


def test_the_source_parser_collapses_solution_cells(tmp_path):
    source = tmp_path / "src" / "99_demo.py"
    source.parent.mkdir()
    source.write_text('# %% [markdown]\n# Try it.\n\n# %% tags=["exercise"]\nx = None\n\n'
                      '# %% tags=["check"]\nprint(x)\n\n# %% tags=["solution"]\nprint(1)\n')
    nb = nbformat.read(nbtools.build(source), as_version=4)
    assert [c.id for c in nb.cells[:2]] == list(nbtools.ELSEWHERE)  # the Colab badge and the install cell first
    cells = nb.cells[2:]
    hidden = [c.metadata.get("jupyter", {}).get("source_hidden", False) for c in cells]
    assert hidden == [False, False, False, True]
    assert [tags(c) for c in cells] == [[], ["exercise"], ["check"], ["solution"]]
    assert [c.id for c in cells] == ["cell-00", "cell-01", "cell-02", "cell-03"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_student_edition_drops_solutions_and_clears_exercise_outputs_only(path, tmp_path):
    saved = nbformat.read(path, as_version=4)
    student = nbformat.read(nbtools.student_edition(path, tmp_path), as_version=4)
    assert len(student.cells) == len(saved.cells)
    for before, after in zip(saved.cells, student.cells):
        if "solution" in tags(before):
            assert after.cell_type == "markdown" and after.source == nbtools.STUDENT_NOTE
            assert before.source not in json.dumps(student.dict())
        elif set(tags(before)) & {"exercise", "check"}:
            assert after.source == before.source and after.outputs == [] and after.execution_count is None
        else:
            assert after == before
    nbformat.validate(student)


def test_make_student_never_overwrites_a_learners_notebook(tmp_path, capsys):
    first = NOTEBOOKS[0]
    mine = tmp_path / first.name
    mine.write_text("my work")
    assert nbtools.main(["nbtools.py", "student", str(tmp_path), str(first), str(NOTEBOOKS[1])]) == 0
    assert mine.read_text() == "my work"
    assert (tmp_path / NOTEBOOKS[1].name).exists()
    assert "kept" in capsys.readouterr().out
