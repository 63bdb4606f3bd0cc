"""The Makefile: every target defined once, listed once by `make help`, none silently overridden."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_make_prints_no_warnings():
    """GNU make warns "overriding recipe for target" when a target is defined twice; the first silently loses."""
    run = make("-n", "help")
    assert run.returncode == 0 and "warning" not in (run.stdout + run.stderr).lower(), run.stderr


def test_help_lists_each_target_once_and_each_listed_target_exists():
    listed = re.findall(r"^  make (\S+)", make("help").stdout, re.M)
    assert listed and len(listed) == len(set(listed)), listed
    defined = re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M)
    assert len(defined) == len(set(defined)), sorted(d for d in defined if defined.count(d) > 1)
    assert set(listed) <= set(defined)
    for name in ("lab", "test", "test-props", "test-live", "test-ui", "notebooks", "bench"):
        assert name in listed


def test_the_student_targets_open_the_student_edition_not_the_notebooks_with_their_solutions():
    """`make lab-student` (and -zh) writes student/ first, from the saved notebooks, then opens JupyterLab there."""
    for target, folder, source in (("lab-student", "student", "notebooks/[0-9]*.ipynb"),
                                   ("lab-student-zh", "student/zh", "notebooks/zh/[0-9]*.ipynb")):
        run = make("-n", "-o", ".venv/.installed", target)  # -o: never (re)install for this
        assert run.returncode == 0, run.stderr
        lines = [line for line in run.stdout.splitlines() if "nbtools.py student" in line or "jupyter lab" in line]
        assert len(lines) == 2 and "nbtools.py student" in lines[0], run.stdout
        assert lines[0].endswith(f"scripts/nbtools.py student {folder} {source}")
        assert f"--notebook-dir={folder} " in lines[1] and "--notebook-dir=notebooks" not in lines[1]


def test_every_uv_install_gets_the_index_pip_was_told_to_use():
    """uv reads neither PIP_INDEX_URL nor pip.conf: the Makefile hands pip's index (a mirror) to it."""
    import os
    env = {**os.environ, "PIP_INDEX_URL": "https://mirror.test/simple", "PIP_EXTRA_INDEX_URL": "https://extra.test/simple"}
    for target in (".venv/.installed", ".venv/.installed-clients", ".venv/.installed-postgres"):
        run = subprocess.run(["make", "--no-print-directory", "-n", "-B", target], cwd=ROOT, capture_output=True,
                             text=True, timeout=60, env=env)
        assert run.returncode == 0, run.stderr
        uv = [line for line in run.stdout.splitlines() if "uv pip install" in line]
        assert uv and all("--index-url https://mirror.test/simple --extra-index-url https://extra.test/simple" in line
                          for line in uv), run.stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    run = subprocess.run(["make", "--no-print-directory", "-n", "-B", ".venv/.installed"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, env=env)
    assert "--index-url" not in run.stdout  # no mirror set: uv's default index, as before


def test_the_notebooks_are_tested_and_saved_on_one_fixed_clock_and_learners_get_the_real_one():
    """A saved answer's weekday and token count follow from the clock tool's result: `make test`,
    `make test-zh`, `make test-notebooks` and `make notebooks` fix it (scripts/nbtools.py too, when
    run by hand), at the same instant; `make lab` and `make lab-zh` do not."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("nbtools", ROOT / "scripts" / "nbtools.py")
    nbtools = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbtools)
    for target in ("test", "test-zh", "test-notebooks", "notebooks"):
        run = make("-n", "-o", ".venv/.installed", target)
        assert run.returncode == 0, run.stderr
        runs = [line for line in run.stdout.splitlines() if "pytest" in line or "nbtools.py build" in line]
        assert runs and all(f"MINIAGENT_CLOCK={nbtools.CLOCK} " in line for line in runs), (target, run.stdout)
    for target in ("lab", "lab-zh"):
        run = make("-n", "-o", ".venv/.installed", target)
        assert run.returncode == 0 and "jupyter lab" in run.stdout and "MINIAGENT_CLOCK" not in run.stdout
