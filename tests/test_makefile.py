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


def course():
    """course.py, the commands without make, as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("course", ROOT / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_learner_target_is_course_py_and_course_py_has_each_one():
    """`make X` runs `python course.py X`: the two never say different things."""
    commands = course().COMMANDS
    for target in commands:
        if target == "setup":
            continue
        run = make("-n", "-o", ".venv/.installed", target)  # -o: never (re)install for this
        assert run.returncode == 0, run.stderr
        assert run.stdout.split()[:3][1:] == ["course.py", target], (target, run.stdout)


def test_the_student_labs_open_the_student_edition_not_the_notebooks_with_their_solutions(monkeypatch):
    """`lab-student` (and -zh) writes student/ first, from the saved notebooks, then opens JupyterLab there."""
    module = course()
    ran = []
    monkeypatch.setattr(module, "run", lambda args, **env: ran.append((args, env)) or 0)
    for target, folder, source, language in (("lab-student", "student", "notebooks", "en"),
                                             ("lab-student-zh", "student/zh", "notebooks/zh", "zh")):
        ran.clear()
        assert module.COMMANDS[target][1](type("Options", (), {"port": 8899})) == 0
        (write, _), (open_, env) = ran
        assert write[1:4] == ["scripts/nbtools.py", "student", folder]
        assert write[4:] and all(Path(p).parent == ROOT / source for p in write[4:])
        assert f"--notebook-dir={folder}" in open_ and "--port=8899" in open_ and env["MINIAGENT_LANG"] == language


def test_every_uv_install_gets_the_index_pip_was_told_to_use(monkeypatch):
    """uv reads neither PIP_INDEX_URL nor pip.conf: course.py hands pip's index (a mirror) to it, for the
    course's list and for the extra lists the Makefile installs through it."""
    module = course()
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.test/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://extra.test/simple https://more.test/simple")
    assert module.index_options() == ["--index-url", "https://mirror.test/simple",
                                      "--extra-index-url", "https://extra.test/simple",
                                      "--extra-index-url", "https://more.test/simple", "--index-strategy", "unsafe-best-match"]
    monkeypatch.delenv("PIP_INDEX_URL")
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL")
    monkeypatch.setattr(module, "pip_config", lambda key: {"global.index-url": "https://conf.test/simple"}.get(key, ""))
    assert module.index_options() == ["--index-url", "https://conf.test/simple"]  # pip.conf's, without an extra
    monkeypatch.setattr(module, "pip_config", lambda key: "")
    assert module.index_options() == []  # no mirror set: uv's default index, as before
    for stamp in (".venv/.installed-clients", ".venv/.installed-postgres"):
        run = make("-n", "-B", "-o", ".venv/.installed", stamp)  # -B: as if never installed
        assert "course.py install requirements-" in run.stdout and stamp in run.stdout, run.stdout


def test_the_notebooks_are_tested_and_saved_on_one_fixed_clock_and_learners_get_the_real_one():
    """A saved answer's weekday and token count follow from the clock tool's result: `make test`,
    `make test-zh` (course.py's), `make test-notebooks` and `make notebooks` fix it (scripts/nbtools.py
    too, when run by hand), at the same instant; `make lab` and `make lab-zh` do not."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("nbtools", ROOT / "scripts" / "nbtools.py")
    nbtools = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nbtools)
    for target in ("test-notebooks", "notebooks"):
        run = make("-n", "-o", ".venv/.installed", target)
        assert run.returncode == 0, run.stderr
        runs = [line for line in run.stdout.splitlines() if "pytest" in line or "nbtools.py build" in line]
        assert runs and all(f"MINIAGENT_CLOCK={nbtools.CLOCK} " in line for line in runs), (target, run.stdout)
    module = course()
    assert module.NOTEBOOK_CLOCK == nbtools.CLOCK  # make test and make test-zh are course.py's
    assert f'NOTEBOOK_CLOCK = "{nbtools.CLOCK}"' in (ROOT / "tests" / "test_wheel.py").read_text()  # make test-wheel
    ran = []
    module.run = lambda args, **env: ran.append((args, env)) or 0
    for target in ("test", "test-zh", "lab", "lab-zh"):
        ran.clear()
        module.COMMANDS[target][1](type("Options", (), {"port": 8899}))
        (args, env), = ran
        assert ("pytest" in args) == (env.get("MINIAGENT_CLOCK") == nbtools.CLOCK), (target, env)
