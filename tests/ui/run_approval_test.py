"""Browser test: approving and denying a risky tool call in the chat widget, in JupyterLab.

    MINIAGENT_OFFLINE=1 .venv/bin/python tests/ui/run_approval_test.py     (or: make test-ui)

It serves a temporary folder holding one notebook written here (never a committed
one): its cell gives an offline agent a tool `delete_file(path)` marked
`needs_approval=True`, which records each real call as a line of `deleted.log` next to
the notebook, and shows `ChatView(agent)`. In the browser it then

1. asks "Delete the file notes.txt" and clicks Send; the approval panel must show the
   call (tool name, arguments), with the box and Send disabled and the kernel idle
   (the run waits in a worker thread, so the click below can reach the kernel);
2. types a reason and clicks Deny: the panel goes, the transcript's tool line says
   "denied by you: <reason>", the agent answers, and `deleted.log` does not exist;
3. asks again and clicks Approve: the line says "approved by you" and `deleted.log`
   holds one call.

Screenshots: ui-test/approval.png (the panel) and, when a step fails,
/tmp/miniagent-approval-failure.png. The server is always shut down. It reuses the
server and page helpers of run_ui_test.py (same folder); the same needs: Debian's
Chromium at /usr/bin/chromium and the `playwright` package (never `playwright install`).
Exit status: 0 on success, 1 with a message saying which step failed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_ui_test as ui  # noqa: E402  (the server, kernel and page helpers)

NOTEBOOK = "approval.ipynb"
LOG = "deleted.log"
QUESTION = "Delete the file notes.txt"
REASON = "keep it, I still need it"
FAILURE = Path(tempfile.gettempdir()) / "miniagent-approval-failure.png"
CELL = f'''\
from pathlib import Path

from miniagent import connect
from miniagent.agent import Agent
from miniagent.tools import tool
from miniagent.widgets import ChatView

llm = connect(offline=True, quiet=True)
llm.mock.pace(first=0.2, rate=40)  # a model's pace: the answer streams in from the worker thread


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file from the workspace.

    Args:
        path: the file to delete
    """
    with Path({LOG!r}).open("a") as log:  # what the test checks: the tool really ran
        log.write(path + "\\n")
    return f"deleted {{path}}"


chat = ChatView(Agent(llm, [delete_file]))
chat'''


def step(name: str) -> None:
    print(f"[approval] {name}", flush=True)


def prepare(workdir: Path) -> tuple[Path, dict]:
    """The folder to serve (the notebook alone), and the environment for the server."""
    import nbformat

    served = workdir / "notebooks"
    served.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(CELL))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, served / NOTEBOOK)
    settings = workdir / "settings"
    for name, values in ui.SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ, MINIAGENT_OFFLINE="1", JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(workdir / "workspaces"), JUPYTER_RUNTIME_DIR=str(workdir / "runtime"),
               JUPYTER_DATA_DIR=str(workdir / "data"))
    env.pop("ANTHROPIC_API_KEY", None)
    return served, env


def calls_made(served: Path) -> list[str]:
    log = served / LOG
    return log.read_text().splitlines() if log.exists() else []


def ask_and_wait_for_the_panel(page, transcript) -> None:
    """Type the question, click Send, wait for the approval panel; check what it and the page show."""
    chat_input = page.locator(".miniagent-chat-input input")
    chat_input.fill(QUESTION)
    page.locator("button.miniagent-chat-send").click()
    panel = page.locator(".miniagent-approval")
    try:
        panel.wait_for(state="visible", timeout=30_000)
    except Exception as exc:  # playwright's TimeoutError; say what the widget showed instead
        raise ui.UITestError(f"no approval panel within 30 s of Send; the chat shows:\n"
                             f"{transcript.inner_text()[-800:]}") from exc
    text = panel.inner_text()
    if "delete_file" not in text or '"path"' not in text:
        raise ui.UITestError(f"the approval panel does not show the call's tool and arguments:\n{text}")
    if not panel.locator("button.miniagent-approve").is_visible() or \
            not panel.locator("button.miniagent-deny").is_visible():
        raise ui.UITestError("the approval panel has no visible Approve and Deny buttons")
    if not (chat_input.is_disabled() and page.locator("button.miniagent-chat-send").is_disabled()):
        raise ui.UITestError("the chat box and Send stay enabled while a run waits for approval")
    if "waiting for your approval" not in transcript.inner_text():
        raise ui.UITestError(f"the transcript does not mark the call as waiting:\n{transcript.inner_text()[-600:]}")
    # The run waits in a worker thread: the kernel itself is free, so the click can reach it.
    ui.wait_kernel_idle(page, 10)


def wait_for_the_answer(page, transcript, decision: str, answers: int) -> str:
    """After a click: the panel goes, the tool line shows `decision`, the run ends with an answer."""
    try:
        page.locator(".miniagent-approval").wait_for(state="detached", timeout=10_000)
        page.wait_for_function(
            "([decision, answers]) => {"
            " const t = document.querySelector('.miniagent-chat-transcript');"
            " return t.innerText.includes(decision) && t.querySelectorAll('.miniagent-answer').length >= answers; }",
            arg=[decision, answers], timeout=30_000)
        page.wait_for_selector("button.miniagent-chat-send:not([disabled])", timeout=30_000)  # the run is over
    except Exception as exc:  # playwright's TimeoutError
        raise ui.UITestError(f"after the click, no {decision!r} on the tool line and answer {answers} within 30 s; "
                             f"the chat shows:\n{transcript.inner_text()[-800:]}") from exc
    return transcript.inner_text()


def drive(page, base: str, token: str, served: Path) -> None:
    step("open the notebook")
    page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}", timeout=60_000)
    page.wait_for_selector(".jp-Notebook .jp-CodeCell .cm-content", timeout=60_000)
    page.wait_for_selector(".jp-Spinner", state="detached", timeout=30_000)
    ui.wait_kernel_idle(page, 60)
    ui.accept_kernel_dialog(page, wait_ms=2_000)

    step("run the cell")
    page.locator(".jp-Notebook .jp-CodeCell .cm-content").first.click()
    page.keyboard.press("Shift+Enter")
    ui.accept_kernel_dialog(page, wait_ms=1_000)
    chat_input = page.locator(".miniagent-chat-input input")
    chat_input.wait_for(state="visible", timeout=60_000)
    ui.wait_kernel_idle(page, 60)
    transcript = page.locator(".miniagent-chat-transcript")

    step("ask, and deny with a reason")
    ask_and_wait_for_the_panel(page, transcript)
    ui.dismiss_toasts(page)
    page.locator(".miniagent-chat").scroll_into_view_if_needed()
    page.locator(".miniagent-deny-reason input").fill(REASON)
    ui.OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(ui.OUT / "approval.png"))
    page.locator("button.miniagent-deny").click()
    text = wait_for_the_answer(page, transcript, f"denied by you: {REASON}", answers=1)
    if calls_made(served):
        raise ui.UITestError(f"the tool ran although the call was denied: {LOG} holds {calls_made(served)!r}")
    if "approved" in text:
        raise ui.UITestError(f"the transcript says approved after Deny:\n{text[-600:]}")
    step(f"denied: the tool did not run; the agent answered: {text.rsplit('Agent:', 1)[-1].strip()[:80]!r}")

    step("ask again, and approve")
    ask_and_wait_for_the_panel(page, transcript)
    page.locator("button.miniagent-approve").click()
    wait_for_the_answer(page, transcript, "approved by you", answers=2)
    deadline = time.monotonic() + 10  # the log is written by the kernel: give the file system a moment
    while len(calls_made(served)) < 1 and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    if len(calls_made(served)) != 1:
        raise ui.UITestError(f"after Approve the tool should have run once; {LOG} holds {calls_made(served)!r}")
    step(f"approved: the tool ran once, with {calls_made(served)[0]!r}")
    if chat_input.input_value() != "" or chat_input.is_disabled():
        raise ui.UITestError("after the run the chat box should be empty and enabled again")


def main() -> int:
    if not Path(ui.CHROMIUM).exists():
        print(f"approval test: no Chromium at {ui.CHROMIUM}; install it with `apt-get install -y chromium` "
              "(not `playwright install`), or set MINIAGENT_CHROMIUM to its path.", file=sys.stderr)
        return 1
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("approval test: the `playwright` package is missing; run `make setup`.", file=sys.stderr)
        return 1

    started = time.monotonic()
    port, token = ui.free_port(), os.urandom(16).hex()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="miniagent-approval-") as tmp:
        workdir = Path(tmp)
        served, env = prepare(workdir)
        log = workdir / "jupyter.log"
        step(f"start jupyter lab on port {port}")
        server = ui.start_server(served, env, port, token, log)
        try:
            ui.wait_for_server(base, token, server)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=ui.CHROMIUM, args=ui.CHROMIUM_ARGS, headless=True)
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 1000})
                    try:
                        drive(page, base, token, served)
                    except Exception:
                        page.screenshot(path=str(FAILURE))
                        raise
                finally:
                    browser.close()
        except Exception as exc:  # report any failure as one message, with the server's last words
            print(f"approval test FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
            print("jupyter log (last lines):\n  " + "\n  ".join(tail), file=sys.stderr)
            print(f"screenshot of the failure: {FAILURE}", file=sys.stderr)
            return 1
        finally:
            step("stop jupyter lab")
            ui.stop_server(server, base, token)
    print(f"approval test passed in {time.monotonic() - started:.0f} s; screenshot: {ui.OUT / 'approval.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
