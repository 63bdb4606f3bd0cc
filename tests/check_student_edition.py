"""The student edition runs: every notebook, offline, in a fresh kernel, without its solutions.

    make test-student     (MINIAGENT_OFFLINE=1 pytest -n 2 tests/check_student_edition.py)

Not named test_*.py on purpose: it executes all six notebooks (about 30 s), so the
everyday `make test` does not collect it; `make test-student` runs it.

For each notebook: the student edition is written to a temporary folder (as `make
student` writes it to student/), executed top to bottom as a learner's "Run All" would,
and every exercise check must say "not yet", word for word what the saved notebook's
check says (so no check depends on a solution cell that the student edition lacks). That
the same checks say "done!" on the reference solutions is proved by the saved notebooks,
which nbval re-runs on every `make test` (see tests/test_student_edition.py).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbconvert.preprocessors import ExecutePreprocessor

from test_student_edition import NOTEBOOKS, exercises_of, nbtools, tags, text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_student_notebook_runs_and_each_check_says_not_yet(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    student = nbformat.read(nbtools.student_edition(path, tmp_path), as_version=4)
    assert not any("solution" in tags(c) for c in student.cells)
    ExecutePreprocessor(timeout=300, kernel_name="python3",
                        extra_arguments=["--IPKernelApp.log_level=ERROR"]).preprocess(
        student, {"metadata": {"path": str(tmp_path)}})

    saved = [text(check) for _, check, _ in exercises_of(nbformat.read(path, as_version=4))]
    ran = [text(c) for c in student.cells if "check" in tags(c)]
    assert len(ran) == len(saved) > 0
    for number, (got, want) in enumerate(zip(ran, saved), 1):
        assert got.startswith(f"exercise {number}: not yet: "), got
        assert got == want, f"exercise {number} says something else without the solution cells"
