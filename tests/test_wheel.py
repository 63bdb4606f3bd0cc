"""The course outside this repository, as Colab or any other Jupyter has it (make test-wheel, which CI runs).

The package is built into a wheel and installed with its `course` extra (what each notebook's first
cell installs when miniagent is missing) into a fresh virtual environment; the notebooks, both
editions, are copied to a temporary folder that is not the repository, and nbval runs every one
there, offline, comparing its outputs with the saved ones (the same sanitize file, the same fixed
clock). A notebook that reaches for a file of the checkout, or a package the extra forgets, fails
here. A few minutes: the install is uv's (from its cache when it has one), then 28 notebooks run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from miniagent.sandbox import bwrap

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.wheel
NOTEBOOK_CLOCK = "2026-05-09T06:23:11Z"  # course.py's and scripts/nbtools.py's (tests/test_makefile.py checks)


def uv() -> str:
    path = shutil.which("uv", path=str(Path(sys.executable).parent))
    assert path, "uv is installed with the course (course.py setup): run this from the course's .venv"
    return path


def run(args: list, cwd: Path, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MINIAGENT_", "PYTHON", "VIRTUAL_ENV"))}
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                            env={**clean, **env})
    assert result.returncode == 0, f"{args[:4]}... failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> tuple[Path, Path]:
    """(the fresh environment's Python, a folder outside the repository holding copies of the notebooks)."""
    base = tmp_path_factory.mktemp("elsewhere")
    run([uv(), "build", "--wheel", "--out-dir", base / "dist", ROOT], cwd=base)
    wheel, = (base / "dist").glob("miniagent-*.whl")
    run([uv(), "venv", "--python", sys.executable, base / "venv"], cwd=base)
    python = base / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # The extra, pinned as the course pins it; then what runs the notebooks (a kernel, nbval).
    run([uv(), "pip", "install", "--python", python, f"miniagent[course] @ {wheel.as_uri()}", "ipykernel", "nbval",
         "pytest", "-c", ROOT / "requirements.txt"], cwd=base)
    folder = base / "content"  # as Colab's /content: nothing of the checkout in it
    shutil.copytree(ROOT / "notebooks", folder, ignore=shutil.ignore_patterns("src", "__pycache__", ".ipynb_checkpoints"))
    shutil.copy(ROOT / "tests" / "nbval-sanitize.cfg", folder)
    return python, folder


def test_the_wheel_holds_every_file_of_the_package(elsewhere):
    """Every file the checkout has under miniagent/ (its code and the data it reads at run time) is in the
    wheel: a data file left out of pyproject's package-data works here and fails in Colab (the Responses
    API's request shapes were)."""
    import zipfile

    wheel, = (elsewhere[0].parent.parent.parent / "dist").glob("miniagent-*.whl")
    tracked = subprocess.run(["git", "ls-files", "miniagent"], cwd=ROOT, capture_output=True, text=True, check=True)
    wanted = {name for name in tracked.stdout.split() if not name.endswith("README.md")}
    assert wanted - set(zipfile.ZipFile(wheel).namelist()) == set()


def test_the_wheel_holds_the_package_and_its_data_and_is_what_the_notebooks_import(elsewhere):
    python, folder = elsewhere
    where = run([python, "-c", "import miniagent, miniagent.retrieval as r, miniagent.evals as e; "
                              "print(miniagent.__file__); print(len(list((r.DATA / 'en').glob('*.md')))); "
                              "print(len(e.load_tasks()))"], cwd=folder).stdout.split()
    assert Path(where[0]).is_relative_to(python.parent.parent) and not Path(where[0]).is_relative_to(ROOT)
    assert int(where[1]) >= 5 and int(where[2]) == 36


@pytest.mark.parametrize("edition, language", [(".", "en"), ("zh", "zh")])
def test_every_notebook_runs_outside_the_repository_as_saved(elsewhere, edition, language):
    python, folder = elsewhere
    notebooks = sorted((folder / edition).glob("[0-9]*.ipynb"))
    assert len(notebooks) == 16
    if bwrap() is None:  # notebooks 14 and 15 reproduce their outputs only in bubblewrap's jail (course.JAILED)
        notebooks = [path for path in notebooks if not path.name.startswith(("14_", "15_"))]
    run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
         "--nbval-sanitize-with", folder / "nbval-sanitize.cfg", *notebooks], cwd=folder / edition,
        MINIAGENT_OFFLINE="1", MINIAGENT_LANG=language, MINIAGENT_CLOCK=NOTEBOOK_CLOCK, MPLBACKEND="Agg")
