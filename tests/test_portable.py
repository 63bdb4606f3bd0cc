"""The package runs on Linux, macOS and Windows: what would break on one of them is refused here, on any.

Checked on the source (the CI matrix runs the suite on all three; this machine is Linux):
- no `os.fork` and no fork start method: macOS and Windows start processes with spawn;
- no POSIX-only module or signal on a learner's path (fcntl, resource, pwd, SIGALRM, SIGKILL...);
- every text file is opened with an explicit encoding: Windows' default is the ANSI code page (cp1252,
  or GBK on a Chinese Windows), and the package's data (the Chinese handbook) is UTF-8.
`MINIAGENT_START_METHOD=spawn python course.py test` runs the whole suite with spawn as the default.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "miniagent").rglob("*.py")) + [ROOT / "course.py"]
POSIX_ONLY_MODULES = {"fcntl", "resource", "pwd", "grp", "termios", "tty", "pty", "posix"}
POSIX_ONLY_SIGNALS = {"SIGALRM", "SIGKILL", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGCHLD", "SIGPIPE", "SIGQUIT"}


def calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def name_of(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return f"{name_of(func.value)}.{func.attr}"
    return func.id if isinstance(func, ast.Name) else "?"


def problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = path.relative_to(ROOT).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{where}:{node.lineno}: imports {a.name}" for a in node.names
                      if a.name.split(".")[0] in POSIX_ONLY_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in POSIX_ONLY_MODULES:
            found.append(f"{where}:{node.lineno}: imports {node.module}")
        elif isinstance(node, ast.Attribute) and node.attr in POSIX_ONLY_SIGNALS:
            found.append(f"{where}:{node.lineno}: signal.{node.attr}")
    for call in calls(tree):
        name = name_of(call.func)
        keywords = {k.arg for k in call.keywords}
        args = [a.value for a in call.args if isinstance(a, ast.Constant)]
        if name in ("os.fork", "os.forkpty"):
            found.append(f"{where}:{call.lineno}: {name}")
        if name.endswith(("get_context", "set_start_method")) and "fork" in args:
            found.append(f"{where}:{call.lineno}: the fork start method")
        binary = any(isinstance(a, str) and "b" in a for a in args[1:]) or any(
            k.arg == "mode" and isinstance(k.value, ast.Constant) and "b" in str(k.value.value) for k in call.keywords)
        if (name == "open" or name.endswith((".read_text", ".write_text"))) and "encoding" not in keywords \
                and not binary:
            found.append(f"{where}:{call.lineno}: {name}() without an encoding")
    return found


def test_the_package_has_no_posix_only_call_and_opens_text_as_utf8():
    found = [line for path in SOURCES for line in problems(path)]
    assert found == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """Each rule above catches a planted line (the checks could pass vacuously otherwise)."""
    planted = tmp_path / "planted.py"
    planted.write_text('import fcntl\nimport os, signal\nos.fork()\nsignal.alarm(1); signal.SIGALRM\n'
                       'import multiprocessing as mp\nmp.set_start_method("fork")\n'
                       'open("notes.txt")\nfrom pathlib import Path\nPath("x").read_text()\n'
                       'open("x.bin", "rb")\nPath("y").write_text("", encoding="utf-8")\n', encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = problems(planted)
    finally:
        ROOT = saved
    assert [line.split(": ", 1)[1] for line in found] == [
        "imports fcntl", "signal.SIGALRM", "os.fork", "the fork start method", "open() without an encoding",
        "?.read_text() without an encoding"]  # the binary open and the UTF-8 write are fine
