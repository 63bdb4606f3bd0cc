"""The cells that call the API by hand work under every kind of preset, offline.

Notebooks 01, 05, 06 and 08 write requests by hand (a URL, headers, a JSON body) besides using the
client. Their URL and headers come from the connection (`llm.endpoint()`), so they must work
whichever preset a learner picked: the Messages API itself, an Anthropic-compatible provider (its
own models and key variable), and one that speaks Chat Completions (whose by-hand Messages cells
use the mock, saying so). Each notebook runs top to bottom in a fresh kernel under each preset,
offline; no cell may raise (but those tagged `raises-exception`), and the first line must name
the preset. `make test-live` runs these (marker `presets`), about a minute.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.presets

ROOT = Path(__file__).resolve().parent.parent
BY_HAND = ["01_llm_call", "05_agent", "06_streaming", "08_providers"]
PRESETS = ["anthropic", "deepseek-anthropic", "openai"]  # the Messages API, a compatible one, Chat Completions


def errors_of(notebook: str, preset: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    for name in [k for k in os.environ if k.endswith("_API_KEY") or k.startswith("MINIAGENT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    monkeypatch.setenv("MINIAGENT_PROVIDER", preset)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    path = ROOT / "notebooks" / f"{notebook}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    found = []
    for number, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        if "raises-exception" in cell.metadata.get("tags", []):
            continue
        found += [f"cell {number}: {o.ename}: {o.evalue[:300]}" for o in cell.get("outputs", []) if o.output_type == "error"]
    first = next((o.text for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                  if o.output_type == "stream"), "")
    return found, first.splitlines()[0] if first else ""


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("notebook", BY_HAND)
def test_every_cell_runs_under_the_preset(notebook, preset, monkeypatch):
    errors, first_line = errors_of(notebook, preset, monkeypatch)
    assert errors == [], f"{notebook} under {preset}"
    assert first_line.startswith("offline") and (preset == "anthropic" or preset in first_line), first_line
