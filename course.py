"""The course's commands without make: on Windows, macOS and Linux, with Python 3.11+ and nothing else.

    python course.py lab        # install on first use (a .venv here), open JupyterLab at the notebooks
    python course.py test       # install on first use, run the unit tests and every notebook (nbval)
    python course.py help       # every command

(Windows: `py course.py lab`, in PowerShell or cmd.) The Makefile runs these same commands
(`make lab` is `python course.py lab`), so the two never say different things.

Standard library only: it runs before anything is installed. The first command creates .venv
with this Python, installs uv there and with it requirements.txt and the package (plain pip when
uv cannot be had), and writes a stamp holding the hash of what it installed; later commands
install again only when requirements.txt or pyproject.toml changed. uv reads neither
PIP_INDEX_URL nor pip's config file, so the index pip is told to use (a mirror) is handed to it.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# The environment's folder: .venv, or another for a second Python (MINIAGENT_VENV=.venv-3.13).
VENV = ROOT / (os.environ.get("MINIAGENT_VENV", "").strip() or ".venv")
WINDOWS = os.name == "nt"


def scripts(venv: Path, windows: bool = WINDOWS) -> Path:
    """Where a venv keeps its programs: Scripts\\ on Windows, bin/ elsewhere."""
    return venv / ("Scripts" if windows else "bin")


def program(name: str, windows: bool = WINDOWS) -> str:
    return name + (".exe" if windows else "")


BIN = scripts(VENV)
PY = BIN / program("python")
STAMP = VENV / ".installed"
INSTALLED_FROM = ("requirements.txt", "pyproject.toml")
# The clock the built-in tools read while notebooks are tested (builtin_tools.now): a saved answer's
# weekday and token count follow from it. scripts/nbtools.py and the Makefile use the same (a test checks).
NOTEBOOK_CLOCK = "2026-05-09T06:23:11Z"
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval-sanitize.cfg"]
# What the everyday run leaves out: each has its own target (the Makefile's test-props, test-clients...).
EVERYDAY = ("not sdk and not fuzz and not harness and not memory and not postgres and not bench and not workers "
            "and not presets and not wheel and not sandbox")


# Notebooks 14 and 15 run the model's commands in notebook 14's jail, bubblewrap (Linux). Where it cannot run
# (macOS, Windows, a container without user namespaces) their saved outputs cannot be reproduced, so the
# test runs leave them out and say so; `make test-sandbox` installs bubblewrap and checks them (CI runs it).
JAILED = ("14_coding_agent.ipynb", "15_harness.ipynb")


def say(english: str, chinese: str) -> str:
    """A line for the person at the terminal, in Chinese under MINIAGENT_LANG=zh (the package's rule)."""
    return chinese if os.environ.get("MINIAGENT_LANG", "").strip().lower().startswith("zh") else english


def show(text: str) -> None:
    """print() that never fails on a console that cannot show a character (a GBK console and an emoji)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    print(text.encode(encoding, "backslashreplace").decode(encoding), flush=True)


# --- installing ---------------------------------------------------------------------------------


def wanted() -> str:
    """The hash of what an install is made from: reinstall when it changes."""
    digest = hashlib.sha256()
    for name in INSTALLED_FROM:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()


def pip_config(key: str) -> str:
    """A value of pip's own configuration (pip.conf, pip.ini), "" when it has none."""
    try:
        got = subprocess.run([sys.executable, "-m", "pip", "config", "get", key], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return got.stdout.strip() if got.returncode == 0 else ""


def index_options() -> list[str]:
    """The index pip is configured with, as uv's options: PIP_INDEX_URL / PIP_EXTRA_INDEX_URL, else pip's
    config. pip takes several extra indexes and the best version from all of them; uv does that only when told."""
    index = os.environ.get("PIP_INDEX_URL", "").strip() or pip_config("global.index-url")
    extra = (os.environ.get("PIP_EXTRA_INDEX_URL", "").strip() or pip_config("global.extra-index-url")).split()
    options = ["--index-url", index] if index else []
    for url in extra:
        options += ["--extra-index-url", url]
    return options + (["--index-strategy", "unsafe-best-match"] if extra else [])


def venv_python_version() -> str:
    """The Python (major.minor) that made .venv, from its pyvenv.cfg; "" when there is none."""
    try:
        config = (VENV / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return ""
    for line in config.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            return ".".join(value.strip().split(".")[:2])
    return ""


def uv() -> Path | None:
    """uv in the .venv (installed there with pip when missing), or None: then plain pip does the work."""
    path = BIN / program("uv")
    if not path.exists():
        subprocess.run([str(PY), "-m", "pip", "install", "-q", "--disable-pip-version-check", "uv"],
                       capture_output=True)
    try:
        ok = subprocess.run([str(path), "--version"], capture_output=True).returncode == 0
    except OSError:
        ok = False
    return path if ok else None


def install(requirements: str = "requirements.txt", constraints: str | None = None, stamp: Path | None = None) -> None:
    """`requirements` into .venv, once per content of what it is made from: for the course's list, the package
    too (pip install -e .); for an extra list (the third-party clients, PostgreSQL's driver), never moving a
    version `constraints` pins."""
    if sys.version_info < (3, 11):
        sys.exit(say(f"miniagent needs Python 3.11 or newer; this is {sys.version.split()[0]}.",
                     f"miniagent 需要 Python 3.11 或更新的版本；这里是 {sys.version.split()[0]}。"))
    main_list = stamp is None
    stamp = STAMP if stamp is None else stamp
    digest = wanted() if main_list else hashlib.sha256((ROOT / requirements).read_bytes()).hexdigest()
    made_by = venv_python_version()
    if made_by and made_by != "%d.%d" % sys.version_info[:2] and main_list:
        show(say(f"note: {VENV.name} was made by Python {made_by}, so the course runs on {made_by}, not on this "
                 f"{sys.version.split()[0]}. For this one: MINIAGENT_VENV=.venv-{sys.version_info[0]}.{sys.version_info[1]}",
                 f"注意：{VENV.name} 是用 Python {made_by} 建的，课程在 {made_by} 上运行，而不是这里的 "
                 f"{sys.version.split()[0]}。要用这个版本：MINIAGENT_VENV=.venv-{sys.version_info[0]}.{sys.version_info[1]}"))
    if PY.exists() and stamp.exists() and stamp.read_text(encoding="utf-8").strip() == digest:
        os.utime(stamp)  # make compares times: tell it this install is current
        return
    if not PY.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    show(say(f"Installing into {VENV.name} (first run only: about 700 MB, a minute with uv)...",
             f"正在安装到 {VENV.name}（只在第一次运行时：约 700 MB，用 uv 大约一分钟）...") if main_list else
         say(f"Installing {requirements} into {VENV.name} (first use only)...",
             f"正在把 {requirements} 安装到 {VENV.name}（只在第一次用到时）..."))
    what = ["-r", requirements] + (["-c", constraints] if constraints else []) + (["-e", "."] if main_list else [])
    fast = uv()
    if fast:
        command = [str(fast), "pip", "install", *index_options(), "--python", str(PY), *what]
    else:
        show(say("uv unavailable; using pip (slower)", "没有 uv，改用 pip（慢一些）"))
        command = [str(PY), "-m", "pip", "install", *what]
    result = subprocess.run(command, cwd=ROOT)
    if result.returncode != 0:
        sys.exit(say(f"The install failed (exit status {result.returncode}); see the lines above. Nothing was "
                     "marked as installed, so the next command tries again.",
                     f"安装失败（退出码 {result.returncode}），原因见上面几行。没有记为已安装，下一条命令会再试。"))
    stamp.write_text(digest + "\n", encoding="utf-8")


# --- the commands ----------------------------------------------------------------------------------


def run(args: list[str], **env: str) -> int:
    """Run `args` in the checkout with `env` added; Ctrl-C stops it and this quietly."""
    try:
        return subprocess.run(args, cwd=ROOT, env={**os.environ, **env}).returncode
    except KeyboardInterrupt:
        return 130


def jupyter_lab(folder: str, port: int, **env: str) -> int:
    root = ["--allow-root"] if not WINDOWS and hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return run([str(PY), "-m", "jupyter", "lab", f"--notebook-dir={folder}", f"--port={port}", *root], **env)


def chinese_ui() -> dict[str, str]:
    """JupyterLab's Chinese UI, in a settings folder of its own, so that `lab` stays English."""
    settings = ROOT / ".jupyter-zh" / "user-settings"
    plugin = settings / "@jupyterlab" / "translation-extension" / "plugin.jupyterlab-settings"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(json.dumps({"locale": "zh_CN"}), encoding="utf-8")
    return {"JUPYTERLAB_SETTINGS_DIR": str(settings), "MINIAGENT_LANG": "zh"}


def jail_options(folder: str) -> list[str]:
    """pytest's --ignore for the jailed notebooks in `folder` when bubblewrap cannot run here, saying so; else []."""
    probe = subprocess.run([str(PY), "-c", "from miniagent.sandbox import bwrap; print(bwrap() is not None)"],
                           capture_output=True, text=True)
    if probe.stdout.strip() == "True":
        return []
    show(say(f"note: bubblewrap cannot run here, so {folder}/14 and 15 (the coding agent's jail) are not compared "
             "with their saved outputs; on Linux: sudo apt-get install bubblewrap (or make test-sandbox)",
             f"注意：这里运行不了 bubblewrap，所以 {folder}/14 和 15（编程 Agent 的沙箱）不和保存的输出比对；"
             "在 Linux 上：sudo apt-get install bubblewrap（或者 make test-sandbox）"))
    return [f"--ignore={folder}/{name}" for name in JAILED]


def pytest(*args: str, **env: str) -> int:
    return run([str(PY), "-m", "pytest", *args, "-p", "no:cacheprovider"], MINIAGENT_OFFLINE="1",
               MINIAGENT_CLOCK=NOTEBOOK_CLOCK, MPLBACKEND="Agg", **{"MINIAGENT_LANG": "en", **env})


# The student editions: the notebooks without their reference solutions (binder/postBuild writes the same).
STUDENT = {"student": ("student", "notebooks"), "student-zh": ("student/zh", "notebooks/zh")}
# What each lab opens, and in which language (the Chinese ones in JupyterLab's Chinese UI).
LABS = {"lab": ("notebooks", "en"), "lab-zh": ("notebooks/zh", "zh"),
        "lab-student": ("student", "en"), "lab-student-zh": ("student/zh", "zh")}


def student(edition: str) -> int:
    folder, source = STUDENT[edition]
    notebooks = sorted(glob.glob(str(ROOT / source / "[0-9]*.ipynb")))
    return run([str(PY), "scripts/nbtools.py", "student", folder, *notebooks])


def lab(name: str, port: int) -> int:
    folder, language = LABS[name]
    if folder.startswith("student") and student("student-zh" if language == "zh" else "student"):
        return 1  # the edition could not be written: nothing to open
    return jupyter_lab(folder, port, **(chinese_ui() if language == "zh" else {"MINIAGENT_LANG": "en"}))


def miniagent(*args: str, language: str) -> int:
    """`python -m miniagent ...` in the .venv, in `language`."""
    return run([str(PY), "-m", "miniagent", *args], MINIAGENT_LANG=language)


# name: (what it does, how). Each installs first (main() does).
COMMANDS = {
    "setup": ("create .venv and install requirements.txt and the package", lambda o: 0),
    "lab": ("open JupyterLab at the notebooks (offline unless ANTHROPIC_API_KEY is set)", lambda o: lab("lab", o.port)),
    "lab-zh": ("中文版: JupyterLab at notebooks/zh/, with the Chinese UI", lambda o: lab("lab-zh", o.port)),
    "test": ("unit tests + every notebook compared against its saved outputs (offline)",
             lambda o: pytest("-n", "3", "--dist", "loadscope", "tests", "notebooks", *NBVAL, *jail_options("notebooks"),
                              "-m", EVERYDAY)),
    "test-zh": ("中文版: every Chinese notebook compared against its saved outputs",
                lambda o: pytest("-n", "3", "--dist", "loadscope", "notebooks/zh", *NBVAL, *jail_options("notebooks/zh"),
                                 "-o", "addopts=-q -p no:langsmith_plugin", MINIAGENT_LANG="zh")),
    "student": ("write the student edition (no reference solutions) to student/, keeping notebooks already there",
                lambda o: student("student")),
    "lab-student": ("JupyterLab at the student edition in student/ (written first)",
                    lambda o: lab("lab-student", o.port)),
    "student-zh": ("中文版的学生版, in student/zh/", lambda o: student("student-zh")),
    "lab-student-zh": ("the Chinese student edition in JupyterLab's Chinese UI", lambda o: lab("lab-student-zh", o.port)),
    "serve": ("the agent as a web service with a chat page at http://127.0.0.1:8000/",
              lambda o: miniagent("serve", "--port", str(o.serve_port), language="en")),
    "serve-zh": ("中文版: the web service, its page and its messages in Chinese",
                 lambda o: miniagent("serve", "--port", str(o.serve_port), language="zh")),
    "demo": ("the article's demo question, in the terminal", lambda o: miniagent("--verbose", DEMO, language="en")),
    "demo-zh": ("中文版: the demo, printed as the article prints it",
                lambda o: miniagent("--verbose", DEMO, language="zh")),
}


def usage() -> str:
    lines = ["miniagent: build an LLM agent from scratch (offline by default)", "",
             "usage: python course.py COMMAND [--port N] [--serve-port N]", ""]
    lines += [f"  {name:15} {what}" for name, (what, _) in COMMANDS.items()]
    lines += [f"  {'python ARGS':15} the course's Python (in .venv) with ARGS, e.g. python course.py python -m miniagent --help",
              "", "With make, `make COMMAND` is the same; `make help` lists the other targets (CI, benchmarks)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["python"]:  # python course.py python ARGS: the .venv's Python, whatever the system names it
        install()
        return run([str(PY), *argv[1:]])

    parser = argparse.ArgumentParser(prog="python course.py", add_help=False)
    parser.add_argument("command", nargs="?", default="help")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8888")))
    parser.add_argument("--serve-port", type=int, default=int(os.environ.get("SERVE_PORT", "8000")))
    parser.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.command == "install":  # the Makefile's extra lists: install REQUIREMENTS STAMP [CONSTRAINTS]
        install()
        requirements, stamp, *constraints = options.extra
        install(requirements, constraints[0] if constraints else None, ROOT / stamp)
        return 0
    if options.command in ("help", "-h", "--help"):
        show(usage())
        return 0
    if options.command not in COMMANDS:
        show(usage())
        return 2
    os.environ.setdefault("MPLBACKEND", "Agg")  # a notebook's plots are drawn inline; a test's are not shown
    install()
    return COMMANDS[options.command][1](options)


if __name__ == "__main__":
    sys.exit(main())
