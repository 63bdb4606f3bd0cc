"""Browser test: the page of `python -m miniagent serve`, in headless Chromium.

    MINIAGENT_OFFLINE=1 .venv/bin/python tests/ui/run_serve_test.py     (make test-ui runs it)

It serves `miniagent.serve.create_app` with uvicorn on a free port of 127.0.0.1, its
agents on a mock that answers at a model's pace and accepts only a recognisable fake
key. In the page it:

1. types the demo question and presses Send: the four tool calls appear with their
   results, the answer ends with "3584", and it arrived in several steps (the page
   records the answer's text at every change; at least two growing partial answers
   must come before the final one);
2. asks a follow-up, which goes into the same conversation;
3. asks a question holding HTML markup, which the page shows as text;
4. asks a question the mock answers slowly and presses Stop: the page says so, and the
   server's run ends (its count of running questions goes back to 0);
5. asks "Delete the file notes.txt", which calls `delete_file`, a tool that needs
   approval (it records each real call): the page shows the call with Approve and Deny;
   with a reason typed, Deny makes it say "denied: <reason>", the tool never runs and
   the answer says it was not approved; asked again, Approve runs it once;
and checks that the page never holds the key. Screenshot: ui-test/serve.png (and
ui-test/serve-failure.png when a step fails).

Same needs as run_ui_test.py (Debian's Chromium, the playwright package). A few seconds.
Exit status: 0 on success, 1 with a message saying which step failed.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # agent_fakes: the tests' delete_file tool

import uvicorn  # noqa: E402
from agent_fakes import deleting_tool  # noqa: E402
from run_ui_test import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from miniagent.__main__ import DEMO_QUESTION  # noqa: E402
from miniagent.aclient import AsyncClient  # noqa: E402
from miniagent.aloop import AsyncAgent  # noqa: E402
from miniagent.builtin_tools import default_tools  # noqa: E402
from miniagent.mock import MockAPI  # noqa: E402
from miniagent.serve import create_app  # noqa: E402

KEY = "sk-ant-browser-test-RECOGNISABLE-fake-key-7731"
OUT = ROOT / "ui-test"
TOOLS = ["get_current_time", "calculate", "get_weather", "get_weather"]
DELETE, REASON = "Delete the file notes.txt", "keep it, I still need it"
DELETED: list[str] = []  # the paths delete_file really deleted (on the server's thread)
delete_file = deleting_tool(DELETED)

# In the page: the newest answer's text, recorded at every change of the log.
WATCH_ANSWERS = """() => {
    window.__answers = [];
    const log = document.getElementById('log');
    new MutationObserver(() => {
        const texts = log.querySelectorAll('.turn:last-child .text');
        if (texts.length) window.__answers.push(texts[texts.length - 1].textContent);
    }).observe(log, {childList: true, subtree: true, characterData: true});
}"""


class ServeTestError(Exception):
    """A step failed; the message says which and what was seen."""


def start(app) -> tuple[uvicorn.Server, threading.Thread, str]:
    """uvicorn serving `app` on a thread, on a free port of 127.0.0.1; returns (server, thread, url)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise ServeTestError("uvicorn did not start within 10 s")
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}/"


def ask(page, question: str) -> None:
    page.fill("#message", question)
    page.click("#send")


def wait_for_statuses(page, n: int, timeout: float) -> None:
    """Wait until `n` questions have their status line (done, stopped or error).

    Locators, not wait_for_function: the page's Content-Security-Policy forbids the
    string evaluation that wait_for_function relies on, and the test keeps that policy on.
    """
    page.locator(".turn .status").nth(n - 1).wait_for(timeout=timeout)


def drive(page, url: str, mock: MockAPI, service) -> str:
    page.goto(url)
    page.wait_for_selector("#message")
    page.evaluate(WATCH_ANSWERS)

    ask(page, DEMO_QUESTION)  # 1. the demo question, streamed
    wait_for_statuses(page, 1, timeout=20_000)
    status = page.inner_text(".turn .status")
    if not status.startswith("done"):
        raise ServeTestError(f"the demo question ended with {status!r}")
    calls = page.locator(".tool .call").all_inner_texts()
    results = page.locator(".tool .result").all_inner_texts()
    if [c.split("(")[0].strip() for c in calls] != TOOLS:
        raise ServeTestError(f"the tool calls shown: {calls}")
    if "→ 3584" not in results or any("running" in r for r in results):
        raise ServeTestError(f"the tool results shown: {results}")
    answer = page.locator(".turn .text").last.inner_text()
    if "3584" not in answer:
        raise ServeTestError(f"the answer shown: {answer!r}")
    seen = page.evaluate("window.__answers")
    partial = [t for t in dict.fromkeys(seen) if t and t != answer and answer.startswith(t)]
    if len(partial) < 2:
        raise ServeTestError(f"the answer did not arrive in steps: {len(partial)} partial answers seen ({seen[:5]})")
    conversation = page.inner_text("#conversation")

    ask(page, "What is 6 * 7?")  # 2. a follow-up, in the same conversation
    wait_for_statuses(page, 2, timeout=20_000)
    follow_up = page.locator(".turn").last.inner_text()
    if "42" not in follow_up or page.inner_text("#conversation") != conversation:
        raise ServeTestError(f"the follow-up: {follow_up!r} in {page.inner_text('#conversation')!r}")
    if len(service.conversations) != 1:
        raise ServeTestError(f"the follow-up started a new conversation ({len(service.conversations)} on the server)")

    markup = '<b id="injected">bold?</b> <img src=x onerror="document.title=1">'  # shown as text, never run
    ask(page, "Please repeat: " + markup)
    wait_for_statuses(page, 3, timeout=20_000)
    if page.locator("#injected").count() or page.title() != "miniagent" or markup not in page.inner_text("#log"):
        raise ServeTestError("markup in a question became HTML in the page")

    mock.pace(first=10.0)  # 4. Stop while the model has not answered yet
    ask(page, "What is 2 + 3?")
    page.locator("#send", has_text="Stop").wait_for(timeout=5_000)
    deadline = time.monotonic() + 5
    while service.running != 1:
        if time.monotonic() > deadline:
            raise ServeTestError("the third question never started on the server")
        time.sleep(0.01)
    page.click("#send")
    wait_for_statuses(page, 4, timeout=5_000)
    stopped = page.locator(".turn .status").last.inner_text()
    deadline = time.monotonic() + 5
    while service.running:
        if time.monotonic() > deadline:
            raise ServeTestError("Stop closed the stream, but the server's run went on")
        time.sleep(0.01)
    if "Stop" not in stopped:
        raise ServeTestError(f"after Stop the page says {stopped!r}")
    mock.pace()

    ask(page, DELETE)  # 5. a tool that needs approval: Deny with a reason, then Approve
    box = page.locator(".turn").last.locator(".approval")
    box.locator(".deny").wait_for(timeout=10_000)
    shown = box.inner_text()
    if "delete_file" not in shown or '"path": "notes.txt"' not in shown:
        raise ServeTestError(f"the approval shows {shown!r}")
    if service.pending_approvals() != 1:
        raise ServeTestError(f"{service.pending_approvals()} approvals wait on the server, not 1")
    box.locator(".reason").fill(REASON)
    box.locator(".deny").click()
    wait_for_statuses(page, 5, timeout=10_000)
    outcome, turn = box.locator(".outcome").inner_text(), page.locator(".turn").last.inner_text()
    if outcome != "denied: " + REASON or box.locator("button").count():
        raise ServeTestError(f"after Deny the approval says {outcome!r}")
    ended = page.locator(".turn .status").last.inner_text()
    if DELETED or "did not approve" not in turn or not ended.startswith("done"):
        raise ServeTestError(f"after Deny: deleted {DELETED}, the turn says {turn!r}")
    ask(page, DELETE)
    box = page.locator(".turn").last.locator(".approval")
    box.locator(".approve").click(timeout=10_000)
    wait_for_statuses(page, 6, timeout=10_000)
    outcome, result = box.locator(".outcome").inner_text(), page.locator(".turn").last.locator(".result").inner_text()
    if outcome != "approved" or DELETED != ["notes.txt"] or result != "→ deleted notes.txt":
        raise ServeTestError(f"after Approve the approval says {outcome!r}, the result {result!r}, deleted {DELETED}")
    if service.pending_approvals():
        raise ServeTestError("an approval is still waiting on the server")

    if KEY in page.content():
        raise ServeTestError("the API key is in the page")
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "serve.png"), full_page=True)
    return f"{len(partial)} partial answers before the final one, {len(calls)} tool calls shown"


def drive_chinese(page, url: str, service) -> str:
    """The same page served under MINIAGENT_LANG=zh: every text the page writes is Chinese."""
    page.goto(url)
    page.wait_for_selector("#message")
    fixed = (page.inner_text("#send"), page.inner_text("#new"), page.inner_text("#conversation"),
             page.get_attribute("#message", "placeholder"))
    if fixed != ("发送", "新对话", "新对话", "问点什么（Enter 发送，Shift+Enter 换行）"):
        raise ServeTestError(f"the Chinese page's own texts: {fixed}")
    ask(page, DEMO_QUESTION)
    wait_for_statuses(page, 1, timeout=20_000)
    status = page.inner_text(".turn .status")
    if not status.startswith("完成 · 输入 ") or "token，输出 " not in status:
        raise ServeTestError(f"the Chinese page's status line: {status!r}")
    label = page.evaluate("getComputedStyle(document.querySelector('.tool .call'), '::before').content")
    if label != '"工具 "' or not page.inner_text("#conversation").startswith("对话 "):
        raise ServeTestError(f"the tool label {label!r}, the conversation {page.inner_text('#conversation')!r}")
    ask(page, DELETE)
    box = page.locator(".turn").last.locator(".approval")
    box.locator(".deny").wait_for(timeout=10_000)
    buttons = (box.locator(".approve").inner_text(), box.locator(".deny").inner_text())
    if buttons != ("批准", "拒绝") or "需要你批准" not in box.inner_text():
        raise ServeTestError(f"the Chinese approval: {box.inner_text()!r}")
    box.locator(".reason").fill("先别删")
    box.locator(".deny").click()
    wait_for_statuses(page, 2, timeout=10_000)
    if box.locator(".outcome").inner_text() != "已拒绝：先别删":
        raise ServeTestError(f"after 拒绝 the approval says {box.locator('.outcome').inner_text()!r}")
    OUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUT / "serve-zh.png"), full_page=True)
    return "the Chinese page's texts, status, tool label and approval"


def main() -> int:
    if not Path(CHROMIUM).exists():
        print(f"serve test: no Chromium at {CHROMIUM} (apt-get install -y chromium)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    began = time.monotonic()
    mock = MockAPI(api_keys={KEY}, pacing={"first": 0.1, "rate": 60})  # a model's pace: the answer in pieces
    client = AsyncClient(api_key=KEY, transport=mock.async_transport(), mock=mock)
    registry = default_tools()
    registry.register(delete_file)
    factory = lambda: AsyncAgent(client=client, tools=registry, stream=True)  # noqa: E731
    os.environ["MINIAGENT_LANG"] = "en"
    app = create_app(agent_factory=factory)
    server, thread, url = start(app)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            try:
                summary = drive(page, url, mock, app.state.service)
                server.should_exit = True
                thread.join(timeout=10)
                os.environ["MINIAGENT_LANG"] = "zh"  # as `make serve-zh` runs it
                app = create_app(agent_factory=factory)
                server, thread, url = start(app)
                summary += "; " + drive_chinese(page, url, app.state.service)
            except Exception as err:  # noqa: BLE001 - any failure: a screenshot, then the message
                OUT.mkdir(exist_ok=True)
                page.screenshot(path=str(OUT / "serve-failure.png"), full_page=True)
                print(f"serve test FAILED: {err}", file=sys.stderr)
                return 1
            finally:
                browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    print(f"serve test passed in {time.monotonic() - began:.1f} s: the page at {url} streamed the demo answer "
          f"({summary}), kept the conversation for a follow-up, Stop cancelled a run on the server, and "
          "Deny and Approve answered a tool call that needed approval; in Chinese, the same page said all in Chinese")
    return 0


if __name__ == "__main__":
    sys.exit(main())
