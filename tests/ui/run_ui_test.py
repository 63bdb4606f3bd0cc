"""Browser test: notebook 05's chat widget, in JupyterLab, in headless Chromium.

    MINIAGENT_OFFLINE=1 .venv/bin/python tests/ui/run_ui_test.py     (or: make test-ui)

It starts JupyterLab on a free port with a random token, serving a temporary copy
of the notebooks (so the browser can never save over the committed ones), opens
05_agent.ipynb, runs all cells, types the article's demo question into the chat
widget, clicks Send, and checks that the answer with "3584" appears in the widget,
and that it appeared piece by piece: the served copy ends with one added cell that
paces the notebook's mock (`llm.mock.pace(...)`: first text after 0.3 s, then 20
tokens a second, like a real model), and the page records the answer's text at every
change of the transcript, which must show at least two growing partial answers
before the final one. Then it checks that Enter sends too. Then it opens the student edition of 00_setup.ipynb
(as `make student` writes it: no reference solution, the check's output cleared), runs
it, and checks that its exercise check says "not yet" there. Last, it starts JupyterLab again
as `make lab-zh` does (the Chinese UI language set in its settings, MINIAGENT_LANG=zh for the
kernels), opens the Chinese edition of notebook 05 (notebooks/zh/), and does the chat steps
again with the Chinese menus and the chat widget's Chinese labels. Screenshots go to
ui-test/chat.png, ui-test/student.png and ui-test/chat-zh.png (and ui-test/failure.png when a
step fails).
The server is always shut down.

Needs Debian's Chromium at /usr/bin/chromium (apt-get install -y chromium) and the
`playwright` Python package. Never run `playwright install`: it downloads its own
browser, which is neither needed nor possible here.
Exit status: 0 on success, 1 with a message saying which step failed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = "05_agent.ipynb"
STUDENT_NOTEBOOK = "00_setup.ipynb"  # its first exercise check, in the student edition
STUDENT_CHECK = "check_00_1(cut_response, llm)"
OUT = ROOT / "ui-test"
CHROMIUM = os.environ.get("MINIAGENT_CHROMIUM", "/usr/bin/chromium")
DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
# Added at the end of the served copy of notebook 05 (never to the committed one): the cells above
# run at the mock's full speed, the questions typed into the widget afterwards arrive at a model's pace.
PACE_CELL = ("# Added by the browser test: the mock now answers at a model's pace, so the chat widget\n"
             "# can be seen to show the answer as it arrives.\n"
             "llm.mock.pace(first=0.3, rate=20)")
# In the page: the text of the newest answer in the chat, recorded at every change of the transcript.
WATCH_ANSWERS = """() => {
    window.__answers = [];
    const transcript = document.querySelector('.miniagent-chat-transcript');
    const record = () => {
        const answers = transcript.querySelectorAll('.miniagent-answer');
        if (answers.length) window.__answers.push(answers[answers.length - 1].innerText);
    };
    new MutationObserver(record).observe(transcript, {childList: true, subtree: true, characterData: true});
}"""
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# JupyterLab settings for the test: no news toast, no update check, no autosave, and every
# cell attached to the page (the default skips rendering cells that are scrolled away).
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


class UITestError(Exception):
    """A step failed; the message says which and what was seen."""


def nbtools():
    """scripts/nbtools.py, which writes the student edition (`make student`)."""
    spec = importlib.util.spec_from_file_location("nbtools", ROOT / "scripts" / "nbtools.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def paced_copy(source: Path, target: Path) -> None:
    """The notebook with PACE_CELL added at its end."""
    import nbformat

    notebook = nbformat.read(source, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(PACE_CELL))
    nbformat.write(notebook, target)


def prepare(workdir: Path, chinese: bool = False) -> tuple[Path, dict]:
    """A copy of the notebooks to serve, and the environment for the server (`chinese`: as make lab-zh)."""
    served = workdir / "notebooks"
    served.mkdir()
    if chinese:
        (served / "zh").mkdir()
        paced_copy(ROOT / "notebooks" / "zh" / NOTEBOOK, served / "zh" / NOTEBOOK)
    else:
        paced_copy(ROOT / "notebooks" / NOTEBOOK, served / NOTEBOOK)
        nbtools().student_edition(ROOT / "notebooks" / STUDENT_NOTEBOOK, served / "student")
    settings = workdir / "settings"
    chosen = {**SETTINGS, **({"@jupyterlab/translation-extension/plugin.jupyterlab-settings": {"locale": "zh_CN"}}
                             if chinese else {})}
    for name, values in chosen.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ, MINIAGENT_OFFLINE="1", JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(workdir / "workspaces"), JUPYTER_RUNTIME_DIR=str(workdir / "runtime"),
               JUPYTER_DATA_DIR=str(workdir / "data"))
    env.pop("ANTHROPIC_API_KEY", None)
    env["MINIAGENT_LANG"] = "zh" if chinese else "en"
    return served, env


def start_server(served: Path, env: dict, port: int, token: str, log: Path) -> subprocess.Popen:
    jupyter = Path(sys.executable).parent / "jupyter"
    cmd = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--ServerApp.token={token}", "--allow-root", f"--ServerApp.root_dir={served}",
           "--ServerApp.port_retries=0"]
    return subprocess.Popen(cmd, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_server(base: str, token: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise UITestError(f"jupyter lab exited with status {server.returncode} before it answered")
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise UITestError(f"jupyter lab did not answer /api/status within {timeout:.0f} s")


def stop_server(server: subprocess.Popen, base: str, token: str) -> None:
    """Ask politely (which also stops the kernel), then insist."""
    try:
        request = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
        urllib.request.urlopen(request, timeout=5).close()
        server.wait(timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        pass
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)  # the group of the process this script started
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=5)


def step(name: str) -> None:
    print(f"[ui] {name}", flush=True)


ENGLISH = {"run": "Run", "run all": "Run All Cells", "screenshot": "chat.png", "folder": "", "you": "You:",
           "tool": "tool: "}
CHINESE = {"run": "运行", "run all": "运行所有单元格", "screenshot": "chat-zh.png", "folder": "zh/", "you": "你：",
           "tool": "工具："}


def drive(page, base: str, token: str, labels: dict = ENGLISH) -> None:
    """Everything a learner does in the browser, with a bounded wait at each step."""
    step(f"open the notebook {labels['folder']}{NOTEBOOK}")
    page.goto(f"{base}/lab/tree/{labels['folder']}{NOTEBOOK}?reset&token={token}", timeout=60_000)
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-CodeCell .cm-content", timeout=30_000)
    page.wait_for_selector(".jp-Spinner", state="detached", timeout=30_000)
    wait_kernel_idle(page, 60)
    accept_kernel_dialog(page, wait_ms=2_000)

    if labels is CHINESE:  # the menus are Chinese, and so is the notebook's prose
        page.get_by_role("menuitem", name=labels["run"], exact=True).wait_for(timeout=30_000)
        if "完整的 Agent" not in page.locator(".jp-Notebook").inner_text():
            raise UITestError("the Chinese edition of notebook 05 does not show its Chinese title")

    step("run all cells")
    page.locator(".jp-Notebook .jp-CodeCell .cm-content").first.click()
    page.get_by_role("menuitem", name=labels["run"], exact=True).click()
    page.get_by_role("menuitem", name=labels["run all"], exact=True).click()
    accept_kernel_dialog(page, wait_ms=1_000)

    step("wait for the chat widget")
    chat_input = page.locator(".miniagent-chat-input input")
    chat_input.wait_for(state="attached", timeout=60_000)
    chat_input.scroll_into_view_if_needed(timeout=10_000)
    transcript = page.locator(".miniagent-chat-transcript")
    page.wait_for_function("document.querySelector('.miniagent-chat-transcript')"
                           f" && document.querySelector('.miniagent-chat-transcript').innerText.includes('{labels['you']}')",
                           timeout=30_000)
    if "3584" in transcript.inner_text():
        raise UITestError("the transcript holds 3584 before the question was asked; the check would prove nothing")
    wait_kernel_idle(page, 60)

    step("ask the demo question (the mock is paced now)")
    chat_input.scroll_into_view_if_needed()
    chat_input.fill(DEMO)
    page.evaluate(WATCH_ANSWERS)
    page.locator("button.miniagent-chat-send").click()
    try:
        page.wait_for_function("document.querySelector('.miniagent-chat-transcript').innerText.includes('3584')",
                               timeout=30_000)
        page.wait_for_selector("button.miniagent-chat-send:not([disabled])", timeout=30_000)  # the run is over
    except Exception as exc:  # playwright's TimeoutError; say what the widget showed instead
        raise UITestError(f"no answer with 3584 in the chat widget within 30 s; it shows:\n"
                          f"{transcript.inner_text()[-800:]}") from exc
    check_streamed(page.evaluate("window.__answers"))
    text = transcript.inner_text()
    if DEMO not in text or text.count(labels["tool"] + "get_weather") < 2:
        raise UITestError(f"the answer came, but the question or its tool calls are missing:\n{text[-800:]}")
    if chat_input.input_value() != "":
        raise UITestError("the input box was not cleared after sending")

    step("screenshot")
    page.locator(".miniagent-chat details.miniagent-tool").last.locator("summary").click()
    dismiss_toasts(page)
    page.locator(".miniagent-chat").scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / labels["screenshot"]))

    step("press Enter to send")
    chat_input.fill("What is (2 + 3) * 4?")
    chat_input.press("Enter")
    try:
        page.wait_for_function("document.querySelector('.miniagent-chat-transcript').innerText.includes('= 20')",
                               timeout=30_000)
    except Exception as exc:  # playwright's TimeoutError
        raise UITestError("pressing Enter in the chat box did not send the question") from exc


def check_streamed(answers: list[str]) -> None:
    """The answer grew in the widget: at least two distinct partial answers, each a start of the final one."""
    if not answers or "3584" not in answers[-1]:
        raise UITestError(f"the page recorded no final answer with 3584; it recorded: {answers[-3:]!r}")
    final = answers[-1].rstrip()
    partial = [a for a in dict.fromkeys(a.rstrip() for a in answers)
               if a != final and len(a) > len("Agent:") and final.startswith(a)]
    step(f"the answer arrived in {len(partial)} partial states before the final one")
    if len(partial) < 2:
        raise UITestError(f"the answer did not arrive piece by piece: {len(partial)} partial state(s) seen "
                          f"before the final one; recorded states: {list(dict.fromkeys(answers))[-6:]!r}")


def drive_student(page, base: str, token: str) -> None:
    """Open the student edition of notebook 00, run it, and read its first exercise check."""
    step("open the student edition of notebook 00")
    page.goto(f"{base}/lab/tree/student/{STUDENT_NOTEBOOK}?token={token}", timeout=60_000)
    check = page.locator(".jp-Notebook .jp-CodeCell", has_text=STUDENT_CHECK)
    check.wait_for(state="attached", timeout=60_000)
    page.wait_for_selector(".jp-Spinner", state="detached", timeout=30_000)
    wait_kernel_idle(page, 60)
    accept_kernel_dialog(page, wait_ms=2_000)
    if "exercise 1:" in check.inner_text():
        raise UITestError("the check cell shows a verdict before it ran: the student edition should clear it")
    notes = page.locator(".jp-Notebook .jp-MarkdownCell", has_text="instructor's edition")
    if notes.count() == 0:
        raise UITestError("no note where the reference solution was: is this the student edition?")

    step("run all cells of the student notebook")
    check.locator(".cm-content").click()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    accept_kernel_dialog(page, wait_ms=1_000)
    output = check.locator(".jp-OutputArea-output")
    try:
        output.filter(has_text="exercise 1: not yet").wait_for(state="attached", timeout=60_000)
    except Exception as exc:  # playwright's TimeoutError: say what the cell showed instead
        raise UITestError(f"the first exercise check did not say \"not yet\" within 60 s; the cell shows:\n"
                          f"{check.inner_text()[-600:]}") from exc
    notebook = page.locator(".jp-Notebook").filter(has=page.locator(".jp-CodeCell", has_text=STUDENT_CHECK))
    if notebook.locator(".jp-OutputArea-output", has_text="done!").count():
        raise UITestError("the student notebook says done!: a reference solution is still in it")
    wait_kernel_idle(page, 60)
    dismiss_toasts(page)
    check.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "student.png"))


def wait_kernel_idle(page, seconds: float) -> None:
    """Wait until the toolbar's kernel indicator says idle (best effort: it may be absent)."""
    indicator = page.locator(".jp-Notebook-ExecutionIndicator")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if indicator.count() and indicator.first.get_attribute("data-status") == "idle":
            return
        page.wait_for_timeout(250)
    raise UITestError(f"the kernel was not idle within {seconds:.0f} s")


def accept_kernel_dialog(page, wait_ms: int) -> None:
    """JupyterLab sometimes asks which kernel to use even though one is starting: keep the default."""
    dialog = page.locator(".jp-Dialog")
    try:
        dialog.wait_for(state="visible", timeout=wait_ms)
    except Exception:  # playwright's TimeoutError: no dialog, nothing to do
        return
    step("accept the kernel dialog")
    dialog.locator("button.jp-mod-accept").click()
    dialog.wait_for(state="detached", timeout=10_000)


def dismiss_toasts(page) -> None:
    for button in page.locator(".jp-toast-dismiss, .Toastify__close-button").all():
        if button.is_visible():
            button.click()
    page.wait_for_timeout(200)


def session(sync_playwright, chinese: bool) -> int:
    """One JupyterLab server and the steps a learner takes in it; 0, or 1 with the failure reported."""
    port, token = free_port(), os.urandom(16).hex()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="miniagent-ui-") as tmp:
        workdir = Path(tmp)
        served, env = prepare(workdir, chinese)
        log = workdir / "jupyter.log"
        step(f"start jupyter lab on port {port}" + (" as make lab-zh does" if chinese else ""))
        server = start_server(served, env, port, token, log)
        page = None
        try:
            wait_for_server(base, token, server)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 1000})
                    try:
                        if chinese:
                            drive(page, base, token, CHINESE)
                        else:
                            drive(page, base, token)
                            drive_student(page, base, token)
                    except Exception:
                        OUT.mkdir(exist_ok=True)
                        page.screenshot(path=str(OUT / "failure.png"))
                        raise
                finally:
                    browser.close()
        except Exception as exc:  # report any failure as one message, with the server's last words
            print(f"ui test FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
            print("jupyter log (last lines):\n  " + "\n  ".join(tail), file=sys.stderr)
            print(f"screenshot of the failure: {OUT / 'failure.png'}", file=sys.stderr)
            return 1
        finally:
            step("stop jupyter lab")
            stop_server(server, base, token)
    return 0


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"ui test: no Chromium at {CHROMIUM}; install it with `apt-get install -y chromium` "
              "(not `playwright install`), or set MINIAGENT_CHROMIUM to its path.", file=sys.stderr)
        return 1
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("ui test: the `playwright` package is missing; run `make setup` (it is in requirements.txt).",
              file=sys.stderr)
        return 1

    started = time.monotonic()
    for chinese in (False, True):  # the English edition; then the Chinese one, as `make lab-zh` serves it
        failed = session(sync_playwright, chinese)
        if failed:
            return failed
    print(f"ui test passed in {time.monotonic() - started:.0f} s; screenshots: {OUT / 'chat.png'}, "
          f"{OUT / 'student.png'}, {OUT / 'chat-zh.png'} (the Chinese edition, in the Chinese UI)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
