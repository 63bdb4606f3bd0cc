"""course.py: the course's commands without make (Windows, or any machine without it), as a learner runs them."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load():
    spec = importlib.util.spec_from_file_location("course", ROOT / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_help_lists_every_command_and_an_unknown_one_is_refused():
    run = subprocess.run([sys.executable, "course.py", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0
    for name in load().COMMANDS:
        assert f"\n  {name} " in run.stdout
    run = subprocess.run([sys.executable, "course.py", "tset"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "usage: python course.py COMMAND" in run.stdout


def test_the_venv_is_where_each_system_puts_it():
    from pathlib import PurePosixPath

    module = load()
    venv = PurePosixPath(".venv")
    assert (module.scripts(venv, windows=True) / module.program("python", windows=True)).as_posix() == \
        ".venv/Scripts/python.exe"
    assert (module.scripts(venv, windows=False) / module.program("uv", windows=False)).as_posix() == ".venv/bin/uv"
    assert module.PY == module.VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    assert module.VENV == ROOT / (os.environ.get("MINIAGENT_VENV") or ".venv")


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """course.py pointed at a folder of its own, every command it would run recorded instead (none runs)."""
    module = load()
    for name in ("requirements.txt", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    venv = tmp_path / ".venv"
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "VENV", venv)
    monkeypatch.setattr(module, "BIN", venv / "bin")
    monkeypatch.setattr(module, "PY", venv / "bin" / "python")
    monkeypatch.setattr(module, "STAMP", venv / ".installed")
    monkeypatch.setattr(module, "uv", lambda: venv / "bin" / "uv")
    monkeypatch.setattr(module, "index_options", lambda: [])
    module.ran, module.fail = [], False

    def fake_run(args, **kwargs):
        module.ran.append([str(a) for a in args])
        if args[1:3] == ["-m", "venv"]:
            (venv / "bin").mkdir(parents=True)
            (venv / "bin" / "python").write_text("")
        return subprocess.CompletedProcess(args, 1 if module.fail else 0)

    monkeypatch.setattr(module.subprocess, "run", fake_run)
    return module


def test_the_first_command_installs_and_later_ones_only_when_the_lists_change(sandbox, capsys):
    sandbox.install()
    assert [r[1:3] for r in sandbox.ran] == [["-m", "venv"], ["pip", "install"]]
    assert sandbox.ran[1][-4:] == ["-r", "requirements.txt", "-e", "."]
    assert sandbox.STAMP.read_text().strip() == sandbox.wanted()
    assert "Installing into .venv" in capsys.readouterr().out
    sandbox.ran.clear()
    sandbox.install()
    assert sandbox.ran == []  # the same lists: nothing to do
    (sandbox.ROOT / "requirements.txt").write_text("httpx2==2.16.2\n", encoding="utf-8")
    sandbox.install()
    assert [r[1:3] for r in sandbox.ran] == [["pip", "install"]]  # the venv is kept, the list installed again


def test_line_endings_do_not_count_as_a_change(sandbox):
    """A checkout on Windows may turn \\n into \\r\\n: the same lists, no reinstall."""
    before = sandbox.wanted()
    path = sandbox.ROOT / "pyproject.toml"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert sandbox.wanted() == before


def test_a_failed_install_says_so_and_is_tried_again(sandbox):
    sandbox.fail = True
    with pytest.raises(SystemExit) as exit_info:
        sandbox.install()
    assert "The install failed (exit status 1)" in str(exit_info.value) and not sandbox.STAMP.exists()


def test_without_uv_plain_pip_installs(sandbox, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "uv", lambda: None)
    sandbox.install()
    assert sandbox.ran[-1][1:4] == ["-m", "pip", "install"] and "using pip" in capsys.readouterr().out


def test_an_extra_list_is_installed_under_the_courses_pins(sandbox):
    (sandbox.ROOT / "requirements-clients.txt").write_text("langchain-core\n", encoding="utf-8")
    stamp = sandbox.VENV / ".installed-clients"
    sandbox.install()
    sandbox.install("requirements-clients.txt", "requirements.txt", stamp)
    assert sandbox.ran[-1][-4:] == ["-r", "requirements-clients.txt", "-c", "requirements.txt"]
    assert stamp.exists() and "-e" not in sandbox.ran[-1]


def test_an_old_python_gets_a_sentence_not_a_traceback(sandbox, monkeypatch):
    monkeypatch.setattr(sandbox.sys, "version_info", (3, 10, 12))
    with pytest.raises(SystemExit) as exit_info:
        sandbox.install()
    assert "needs Python 3.11 or newer" in str(exit_info.value) and sandbox.ran == []


def test_a_console_that_cannot_show_a_character_gets_an_escape(monkeypatch, capsys):
    """A Windows console in GBK cannot show every character; course.py must not crash printing one."""
    module = load()

    class Console:
        encoding = "gbk"
        text = ""

        def write(self, text):
            text.encode("gbk")  # raises as a real GBK console would
            Console.text += text

        def flush(self):
            pass

    monkeypatch.setattr(module.sys, "stdout", Console())
    module.show("安装 🎉 done")
    assert Console.text == "安装 \\U0001f389 done\n"


def test_the_workflows_run_the_learners_commands_on_every_system_and_python():
    """CI for forks: Linux, macOS, Windows x Python 3.11-3.13, each running course.py as a learner does,
    and one check that waits for all of them."""
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "test.yml").read_text(encoding="utf-8"))
    job = workflow["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    assert set(matrix["os"]) == {"ubuntu-latest", "macos-latest", "windows-latest"}
    assert matrix["python"] == ["3.11", "3.12", "3.13"] and job["strategy"]["fail-fast"] is False
    commands = [step["run"] for step in job["steps"] if "run" in step]
    known = load().COMMANDS
    for command in commands:
        words = command.split()
        assert words[:2] == ["python", "course.py"] and (words[2] in known or words[2] == "python"), command
    assert {c.split()[2] for c in commands} >= {"setup", "test", "test-zh", "python"}
    assert job["defaults"]["run"]["shell"] == "bash"
    waits = workflow["jobs"]["all"]
    assert set(waits["needs"]) == set(workflow["jobs"]) - {"all"} and waits["if"] == "always()"
    assert all(f"needs.{name}.result" in waits["steps"][0]["run"] for name in waits["needs"])


def test_course_python_runs_the_courses_python():
    run = subprocess.run([sys.executable, "course.py", "python", "-c", "import sys, miniagent; print(sys.prefix)"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and Path(run.stdout.splitlines()[-1]).resolve() == load().VENV.resolve(), run.stderr
