"""binder/: what Binder or a JupyterHub (repo2docker) needs to build this repository as it is.

repo2docker reads a `binder/` folder instead of the files at the top (so `make setup`'s own files stay
as they are): `runtime.txt` picks Python 3.11, `requirements.txt` installs the same pinned stack as
`make setup` (it includes ../requirements.txt), and `postBuild` installs the package itself and writes
the student edition (student/, student/zh/: the notebooks without their solutions, where the READMEs'
Binder links open). No key: `miniagent.connect()` falls back to the offline mock, as `make lab` does.

The rules checked here are repo2docker's (buildpacks/base.py, buildpacks/python/__init__.py). When
repo2docker can be run (`repo2docker` on PATH, or MINIAGENT_REPO2DOCKER=/path/to/repo2docker; it needs
no Docker for this), its dry run (`--no-build --debug`) prints the Dockerfile it would build, and the
last test reads it; otherwise that test is skipped. To run it:
    python3 -m venv /tmp/r2d && /tmp/r2d/bin/pip install jupyter-repo2docker
    MINIAGENT_REPO2DOCKER=/tmp/r2d/bin/repo2docker .venv/bin/python -m pytest tests/test_binder.py
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9,._-]+\])?)==([A-Za-z0-9.+!-]+)$")
# Files that would make repo2docker pick another build pack than Python's, or add steps we do not want.
OTHER_BUILDPACKS = ("environment.yml", "Pipfile", "Pipfile.lock", "Project.toml", "REQUIRE", "install.R",
                    "DESCRIPTION", "default.nix", "Dockerfile", "setup.py", "apt.txt")


def pins(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, str]:
    """{name: version} of a requirements file, following `-r FILE` relative to the file (as pip does).
    Anything but `name==version`, `-r` and comments fails: an unpinned line would let Binder drift."""
    assert path.resolve() not in seen, f"-r loop at {path}"
    found: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            found.update(pins(path.parent / line.split(None, 1)[1], (*seen, path.resolve())))
            continue
        match = PIN.match(line)
        assert match, f"{path.relative_to(ROOT)}:{number}: not pinned (name==version): {raw!r}"
        found[match[1].lower()] = match[2]
    return found


def test_only_binder_is_there_and_it_picks_the_python_build_pack():
    assert BINDER.is_dir() and not (ROOT / ".binder").exists()  # both at once is an error in repo2docker
    assert [name for name in OTHER_BUILDPACKS if (BINDER / name).exists()] == []
    assert {p.name for p in BINDER.iterdir()} <= {"runtime.txt", "requirements.txt", "postBuild", "start"}


def test_runtime_is_python_3_11_which_the_package_accepts():
    assert (BINDER / "runtime.txt").read_text() == "python-3.11\n"  # repo2docker: name-version
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert "3.11" in SpecifierSet(requires)  # repo2docker refuses a runtime.txt the package excludes



def test_requirements_are_the_pinned_stack_plus_the_notebook_that_matches_its_jupyterlab():
    root, binder = pins(ROOT / "requirements.txt"), pins(BINDER / "requirements.txt")
    assert "-r ../requirements.txt" in (BINDER / "requirements.txt").read_text().splitlines()
    assert {k: v for k, v in binder.items() if k in root} == root  # every pin of make setup, unchanged
    # repo2docker's image has Notebook 7.4 (jupyterlab<4.5), and `jupyter notebook` is its default command:
    # notebook 7.6.x is the series that requires jupyterlab>=4.6.6,<4.7.
    assert set(binder) - set(root) == {"notebook"}
    assert root["jupyterlab"].startswith("4.6.") and binder["notebook"].startswith("7.6.")


def test_postbuild_is_executable_fails_loudly_and_installs_the_package_as_make_setup_does():
    script = BINDER / "postBuild"
    text = script.read_text()
    assert os.access(script, os.X_OK) and text.startswith("#!/bin/bash\n")
    assert "set -euo pipefail" in text
    commands = postbuild_commands()
    assert commands[0] == "python -m pip install --no-cache-dir --no-deps -e ."  # the deps come pinned, above
    assert "ANTHROPIC_API_KEY" not in "\n".join(commands) and "MINIAGENT_OFFLINE" not in "\n".join(commands)


def postbuild_commands() -> list[str]:
    text = (BINDER / "postBuild").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")][1:]


def test_postbuild_writes_the_student_edition_as_make_student_and_student_zh_do():
    """Where a room starts on Binder or a JupyterHub: student/ (no reference solutions), not notebooks/,
    as course.py's student commands (make student, make student-zh) write it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("course", ROOT / "course.py")
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    assert postbuild_commands()[1:] == [f"python scripts/nbtools.py student {folder} {source}/[0-9]*.ipynb"
                                        for folder, source in course.STUDENT.values()]


@pytest.mark.harness  # slow (seconds): make test-binder / make test-student, which CI runs
def test_the_student_edition_postbuild_writes_has_no_solutions_and_no_saved_verdicts(tmp_path):
    import nbformat

    for name in ("notebooks", "scripts", "miniagent"):  # what the commands read, in a folder of their own
        (tmp_path / name).symlink_to(ROOT / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for command in postbuild_commands()[1:]:
        run = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
    for folder, source in ((tmp_path / "student", ROOT / "notebooks"), (tmp_path / "student" / "zh",
                                                                         ROOT / "notebooks" / "zh")):
        written = sorted(p.name for p in folder.glob("[0-9]*.ipynb"))
        assert written == sorted(p.name for p in source.glob("[0-9]*.ipynb")) and len(written) == 16
        for name in written:
            cells = nbformat.read(folder / name, as_version=4).cells
            tags = [set(c.get("metadata", {}).get("tags", [])) for c in cells]
            assert not any("solution" in t for t in tags), name
            assert not any("def reference_" in c.source for c in cells if c.cell_type == "code"), name
            assert all(not c.outputs for c, t in zip(cells, tags) if t & {"exercise", "check"}), name
            assert sum("check" in t for t in tags) == sum("exercise" in t for t in tags) >= 1, name


def test_the_readmes_open_binder_at_the_student_edition():
    link = re.compile(r"https://mybinder\.org/v2/gh/OWNER/REPO/HEAD\?urlpath=lab/tree/(student(?:/zh)?)\b")
    assert "student" in link.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "student/zh" in link.findall((ROOT / "README.zh-CN.md").read_text(encoding="utf-8"))
    assert {"student", "student/zh"} <= set(link.findall((BINDER / "postBuild").read_text()))


def _repo2docker() -> str | None:
    return os.environ.get("MINIAGENT_REPO2DOCKER") or shutil.which("repo2docker")


@pytest.mark.skipif(_repo2docker() is None, reason="repo2docker not installed (see this module's docstring)")
def test_repo2docker_dry_run_builds_python_3_11_installs_the_requirements_with_the_repo_then_postbuild(tmp_path):
    proc = subprocess.run([_repo2docker(), "--no-build", "--debug", "--no-run", str(ROOT)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Building conda environment for python=3.11" in out
    assert "environment-2epy-2d3-2e11-2dlinux" in out  # the base image's lock for 3.11 (a path escaped by repo2docker)
    copy_repo = out.index("COPY --chown=0:0 src/ ${REPO_DIR}/")
    install = out.index('pip install --no-cache-dir -r "binder/requirements.txt"')
    post_build = out.index("RUN ./binder/postBuild")
    assert copy_repo < install < post_build  # `-r ../requirements.txt` needs the whole repository copied first
    assert "pip install --no-cache-dir ." not in out.replace("-r \"binder", "")  # no second, non-editable install
