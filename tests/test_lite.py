"""The browser edition's notebooks (scripts/lite.py), checked without building the site.

make test-lite builds the site and runs these notebooks in headless Chromium; this checks,
in make test, what the build does to them: the first cell, the cells shown but not run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import lite  # noqa: E402

SKIPPED = {k: v for k, v in json.loads((ROOT / "lite" / "not-in-browser.json").read_text(encoding="utf-8")).items()
           if k != "_"}
EDITIONS = [(p, False) for n in lite.NOTEBOOKS for p in (ROOT / "notebooks").glob(f"{n}_*.ipynb")] + \
           [(p, True) for n in lite.NOTEBOOKS for p in (ROOT / "notebooks" / "zh").glob(f"{n}_*.ipynb")]


def browser(path: Path, zh: bool) -> dict:
    return lite.for_the_browser(json.loads(path.read_text(encoding="utf-8")), path.stem, zh)


def test_both_editions_of_00_to_06_are_served():
    assert len(EDITIONS) == 14


@pytest.mark.parametrize("path,zh", EDITIONS, ids=lambda v: getattr(v, "stem", str(v)))
def test_the_first_cell_says_what_differs_and_installs_nothing(path, zh):
    notebook = browser(path, zh)
    first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    assert first["id"] == "install" and "serial_thread_pool()" in first["source"]
    assert "pip" not in first["source"] and first["outputs"] == []
    assert ('MINIAGENT_LANG"] = "zh"' in first["source"]) == zh
    assert notebook["metadata"]["kernelspec"]["name"] == "python"  # Pyodide's kernel
    assert not any(c.get("id") == "colab" for c in notebook["cells"])  # no badge: its image is on the internet


@pytest.mark.parametrize("path,zh", EDITIONS, ids=lambda v: getattr(v, "stem", str(v)))
def test_a_cell_that_cannot_run_shows_its_code_and_saved_output(path, zh):
    original = {c.get("id"): c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]}
    notebook = browser(path, zh)
    for cell_id, reason in SKIPPED.get(path.stem, {}).items():
        shown = next(c for c in notebook["cells"] if c.get("id") == cell_id)
        assert shown["cell_type"] == "markdown"
        assert lite.REASONS[reason][zh] in shown["source"]
        assert "".join(original[cell_id]["source"]) in shown["source"]  # the code, whole
        pngs = [o for o in original[cell_id]["outputs"] if "image/png" in o.get("data", {})]
        assert len(shown.get("attachments", {})) == len(pngs)
        if reason == "matplotlib":
            assert pngs and "attachment:output-" in shown["source"]  # the figure it drew in JupyterLab


def test_an_unknown_cell_id_stops_the_build(monkeypatch, tmp_path):
    (tmp_path / "not-in-browser.json").write_text('{"00_setup": {"cell-999": "server"}}', encoding="utf-8")
    monkeypatch.setattr(lite, "LITE", tmp_path)
    with pytest.raises(SystemExit, match="cell-999"):
        browser(ROOT / "notebooks" / "00_setup.ipynb", False)


def test_every_reason_is_said_in_both_languages():
    used = {reason for cells in SKIPPED.values() for reason in cells.values()}
    assert used <= set(lite.REASONS) and all(len(pair) == 2 and all(pair) for pair in lite.REASONS.values())
