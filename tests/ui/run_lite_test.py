"""Browser test: the browser edition (JupyterLite) runs notebooks 00-06 top to bottom, in headless Chromium.

    .venv/bin/python tests/ui/run_lite_test.py [SITE]     (or: make test-lite, which builds the site first)

It serves the site `make lite` built (build/lite) from a local static server, as any web
host would, opens each notebook of 00-06 in both editions, waits for the Pyodide kernel,
clicks Run > Run All Cells, and waits until every code cell has run. Then it checks, per
notebook: every code cell ran (a prompt number, none left at [ ] or [*]); no cell wrote
to stderr or raised, except the cells tagged `raises-exception`, which must raise; the
first code cell's output says that the thread pool is serial here; and a notebook's
key output is there (the mock's banner in 00, Chinese in the Chinese edition's).
Nothing is fetched from the internet: a request that leaves the local server fails the test.

Needs Debian's Chromium at /usr/bin/chromium and the `playwright` Python package.
Exit status 0 on success, 1 with the failing notebook and cell. Screenshot of a failure:
ui-test/lite-failure.png.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import socketserver
import sys
import threading
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "ui-test"
CHROMIUM = os.environ.get("MINIAGENT_CHROMIUM", "/usr/bin/chromium")
NOTEBOOKS = ["00_setup", "01_llm_call", "02_tools", "03_react_loop", "04_context", "05_agent", "06_streaming"]
# A line each notebook must print in the browser (English edition, Chinese edition).
EXPECTED = {"00_setup": ("offline (mock API)", "离线（mock API）"),
            "01_llm_call": ("exercise 1: done!", "练习 1：完成！"),
            "02_tools": ("exercise 2: done!", "练习 2：完成！"),
            "03_react_loop": ("exercise 3: done!", "练习 3：完成！"),
            "04_context": ("exercise 3: done!", "练习 3：完成！"),
            "05_agent": ("exercise 3: done!", "练习 3：完成！"),
            "06_streaming": ("exercise 3: done!", "练习 3：完成！")}
IDLE = "[...document.querySelectorAll('.jp-StatusBar-TextItem')].some(e => /\\| (Idle|空闲)/.test(e.textContent))"
KERNEL_IDLE = f"() => {IDLE}"
# Run All has ended: the kernel is idle and no cell is queued or running ([*]); either every cell has run,
# or one raised and the rest were never run (JupyterLab stops there): both end the wait, and the checks tell.
# It must hold for 1.5 s: between two cells the kernel is idle for a moment.
STOPPED = """() => {
  const idle = %s;
  const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent);
  const now = idle && prompts.some(p => /\\[\\d+\\]/.test(p)) && !prompts.some(p => p.includes('*'));
  const stable = now && window.__stoppedSince !== undefined && Date.now() - window.__stoppedSince > 1500;
  window.__stoppedSince = now ? (window.__stoppedSince ?? Date.now()) : undefined;
  return stable;
}""" % IDLE
CELLS = """() => [...document.querySelectorAll('.jp-CodeCell')].map(c => ({
  prompt: c.querySelector('.jp-InputPrompt').textContent.trim(),
  outputs: [...c.querySelectorAll('.jp-OutputArea-output')].map(o => {
    const typed = o.querySelector('[data-mime-type]') || o;
    return {mime: typed.dataset.mimeType || '', text: o.innerText};
  })}))"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def serve(site: Path) -> tuple[socketserver.TCPServer, str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def menu(page, name: str, item: str) -> None:
    page.click(f".lm-MenuBar-item:has-text('{name}')")
    page.click(f".lm-Menu-item:has-text('{item}')")


def resume_after(page, notebook: dict) -> int | None:
    """The index (among code cells) of the first cell not run, when the cell before it is tagged
    raises-exception and did raise: JupyterLite's Run All stops there, where JupyterLab's goes on."""
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    cells = page.evaluate(CELLS)
    for i, shown in enumerate(cells):
        if not shown["prompt"].strip("[]: ").isdigit():
            tagged = i > 0 and "raises-exception" in code[i - 1].get("metadata", {}).get("tags", [])
            raised = i > 0 and any(o["mime"] == "application/vnd.jupyter.stderr" for o in cells[i - 1]["outputs"])
            return i if tagged and raised else None
    return None


def problems_of(notebook: dict, cells: list[dict], expected: str) -> list[str]:
    """What is wrong with one notebook's run, as the page shows it (empty: nothing)."""
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    if len(code) != len(cells):
        return [f"the page shows {len(cells)} code cells, the notebook has {len(code)}"]
    found = []
    for source, shown in zip(code, cells):
        where = f"cell {source.get('id')}"
        if not shown["prompt"].strip("[]: ").isdigit():
            found.append(f"{where} did not run (prompt {shown['prompt']!r})")
        raised = [o["text"] for o in shown["outputs"] if o["mime"] == "application/vnd.jupyter.stderr"]
        tagged = "raises-exception" in source.get("metadata", {}).get("tags", [])
        if raised and not tagged:
            found.append(f"{where} failed:\n{raised[-1][-1500:]}")
        if tagged and not raised:
            found.append(f"{where} is tagged raises-exception but raised nothing")
    first = cells[0]["outputs"][0]["text"].strip() if cells and cells[0]["outputs"] else ""
    if first != "True":
        found.append(f"the first cell (the browser's note) printed {first!r}, not True: the thread pool is not serial")
    if not any(expected in o["text"] for c in cells for o in c["outputs"]):
        found.append(f"no output says {expected!r}")
    return found


def main() -> int:
    site = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "lite"
    if not (site / "lab" / "index.html").exists():
        print(f"no site in {site}: build it with make lite")
        return 1
    OUT.mkdir(exist_ok=True)
    server, base = serve(site)
    outside = []
    failed = False
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            for zh in (False, True):
                for name in NOTEBOOKS:
                    path = f"zh/{name}.ipynb" if zh else f"{name}.ipynb"
                    notebook = json.loads((site / "files" / path).read_text(encoding="utf-8"))
                    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith((base, "data:", "blob:", "attachment:")) else None)
                    started = time.monotonic()
                    try:
                        page.goto(f"{base}/lab/index.html?path={path}")
                        page.wait_for_function(KERNEL_IDLE, timeout=180_000, polling=500)
                        booted = time.monotonic() - started
                        menu(page, "View", "Expand All Code")  # the reference solutions' inputs are collapsed
                        menu(page, "Run", "Run All Cells")
                        page.wait_for_function(STOPPED, timeout=600_000, polling=500)
                        resumed = 0
                        while (at := resume_after(page, notebook)) is not None and resumed < 20:
                            resumed += 1  # Run All stopped at a cell that raises on purpose: go on from the next
                            page.locator(".jp-CodeCell").nth(at).locator(".jp-InputPrompt").click()
                            menu(page, "Run", "Run Selected Cell and All Below")
                            page.wait_for_function(STOPPED, timeout=600_000, polling=500)
                        found = problems_of(notebook, page.evaluate(CELLS), EXPECTED[name][zh])
                        if name == "04_context":  # what a reader sees in place of the figure
                            shown = page.locator(".jp-MarkdownCell:has-text('Not run in the browser'), "
                                                 ".jp-MarkdownCell:has-text('浏览器里不运行')").first
                            shown.scroll_into_view_if_needed()
                            page.screenshot(path=str(OUT / f"lite-04{'-zh' if zh else ''}.png"))
                    except Exception as exc:  # noqa: BLE001 - a step that timed out is this notebook's failure
                        found, booted = [f"{type(exc).__name__}: {str(exc).splitlines()[0]}"], 0.0
                    took = time.monotonic() - started
                    if found:
                        failed = True
                        page.screenshot(path=str(OUT / "lite-failure.png"))
                        print(f"FAIL {path} ({took:.0f} s):", flush=True)
                        for problem in found:
                            print("  " + problem.replace("\n", "\n    "), flush=True)
                    else:
                        print(f"ok   {path}: {sum(c['cell_type'] == 'code' for c in notebook['cells'])} code cells ran in {took:.0f} s (kernel ready in {booted:.0f} s)", flush=True)
                    page.context.close()
        finally:
            browser.close()
            server.shutdown()
    if outside:
        print(f"FAIL: the site asked for {len(set(outside))} address(es) outside itself, e.g. {sorted(set(outside))[:3]}")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
