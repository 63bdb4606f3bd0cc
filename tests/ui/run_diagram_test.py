"""Browser test: every Mermaid diagram in the notebooks renders in JupyterLab, without a syntax error.

    .venv/bin/python tests/ui/run_diagram_test.py     (make test-ui runs it)

A diagram is a ```mermaid block in a Markdown cell; JupyterLab draws it as an SVG,
or, if the text does not parse, as an error box. nbval cannot see either (it runs
code cells only), so a broken diagram would otherwise reach learners unnoticed. This
opens each notebook that has diagrams (a temporary copy, nothing is executed), waits
for every diagram to become an SVG, and fails on any error box, naming the notebook.
A screenshot of each notebook's first diagram goes to ui-test/diagram-NN.png.

Same needs as run_ui_test.py (Debian's Chromium, the playwright package).
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

from run_ui_test import (CHROMIUM, CHROMIUM_ARGS, OUT, ROOT, UITestError, dismiss_toasts, free_port, prepare,
                         start_server, step, stop_server, wait_for_server)


def diagrams(path: Path) -> int:
    nb = json.loads(path.read_text())
    return sum("".join(c["source"]).count("```mermaid") for c in nb["cells"] if c["cell_type"] == "markdown")


def check(page, base: str, token: str, name: str, expected: int) -> None:
    step(f"open {name} ({expected} diagram{'s' * (expected != 1)})")
    page.goto(f"{base}/lab/tree/{name}?reset&token={token}", timeout=60_000)  # reset: only this notebook open
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    try:
        page.wait_for_function(
            "n => document.querySelectorAll('.jp-RenderedMermaid img, .jp-RenderedMermaid svg, .jp-RenderedMermaid.jp-mod-warning').length >= n",
            arg=expected, timeout=30_000)
    except Exception as exc:  # playwright's TimeoutError
        drawn = page.locator(".jp-RenderedMermaid").count()
        raise UITestError(f"{name}: {drawn} of {expected} diagrams appeared within 30 s") from exc
    broken = page.locator(".jp-RenderedMermaid.jp-mod-warning")
    if broken.count() or "Syntax error" in page.locator(".jp-Notebook").inner_text():
        text = broken.first.inner_text()[:500] if broken.count() else "a 'Syntax error' box"
        raise UITestError(f"{name}: a Mermaid diagram does not parse: {text}")
    drawn = page.locator(".jp-RenderedMermaid img, .jp-RenderedMermaid svg").count()
    if drawn < expected:
        raise UITestError(f"{name}: {drawn} SVGs for {expected} diagrams")
    dismiss_toasts(page)
    page.locator(".jp-RenderedMermaid img, .jp-RenderedMermaid svg").first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    OUT.mkdir(exist_ok=True)
    shot = f"diagram-zh-{name[3:5]}.png" if name.startswith("zh/") else f"diagram-{name[:2]}.png"
    page.screenshot(path=str(OUT / shot))  # for a person to look at; not checked


def main() -> int:
    from playwright.sync_api import sync_playwright

    # Both editions: the Chinese one translates the diagrams' labels, which can break their syntax.
    paths = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("[0-9]*.ipynb"))
    notebooks = {str(p.relative_to(ROOT / "notebooks")): n for p in paths if (n := diagrams(p))}
    if not notebooks:
        print("no diagrams found")
        return 1
    port, token = free_port(), secrets.token_hex(16)
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        served, env = prepare(workdir)
        for name in notebooks:
            (served / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "notebooks" / name, served / name)
        server = start_server(served, env, port, token, workdir / "lab.log")
        try:
            wait_for_server(base, token, server)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                try:
                    for name, expected in notebooks.items():
                        check(page, base, token, name, expected)
                finally:
                    browser.close()
        except UITestError as err:
            print(f"diagram test FAILED: {err}", file=sys.stderr)
            return 1
        finally:
            step("stop jupyter lab")
            stop_server(server, base, token)
    print(f"diagram test passed: {sum(notebooks.values())} diagrams in {len(notebooks)} notebooks render")
    return 0


if __name__ == "__main__":
    sys.exit(main())
