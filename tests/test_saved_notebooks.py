"""The committed notebooks are clean: run in order, no stray errors, no widget state, no secrets."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
# Folders of the machine that ran a notebook: this checkout's, a home, a temp dir, an installed Python's.
MACHINE_PATH = re.compile("|".join([re.escape(str(ROOT)), r"/home/[^/\s\"']+/", r"/root/", r"/tmp/",
                                    r"/Users/[^/\s\"']+/", r"[A-Za-z]:\\\\Users", r"/site-packages/",
                                    r"/usr/lib/python"]))
SECRET = re.compile(r"sk-ant-[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9]{32,}")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 2


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_saved_notebook_is_clean(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], "strip metadata.widgets (make notebooks does)"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), \
        "execution counts must be 1..N: re-execute from a fresh kernel with `make notebooks`"
    for i, cell in enumerate(code):
        allowed = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        assert allowed or not errors, f"code cell {i + 1} saved an error: {errors[0]['ename'] if errors else ''}"
        assert not SECRET.search(json.dumps(cell)), f"code cell {i + 1} holds something that looks like an API key"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_saved_output_shows_a_path_of_the_machine_that_ran_it(path):
    """Tracebacks and printed paths are made relative by `make notebooks`; nothing machine-specific is saved."""
    nb = json.loads(path.read_text())
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        found = MACHINE_PATH.search(json.dumps(cell["outputs"]))
        assert not found, f"code cell {i + 1} shows {found.group(0)!r}: a folder of the machine it ran on"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_says_which_mode(path):
    """Every notebook's setup cell prints whether it talks to the mock or a real model."""
    nb = json.loads(path.read_text())
    text = json.dumps([c.get("outputs", []) for c in nb["cells"] if c["cell_type"] == "code"][:3])
    assert "offline (mock API)" in text


def outputs_text(path: Path) -> list[str]:
    """Each code cell's saved stream and text/plain output, as one string per cell."""
    cells = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            parts = []
            for out in cell["outputs"]:
                text = out.get("text", out.get("data", {}).get("text/plain", ""))
                parts.append(text if isinstance(text, str) else "".join(text))
            cells.append("".join(parts))
    return cells


# A value a notebook prints in two cells (a measurement, then the checklist that quotes it).
# scripts/nbtools.py saves one run's outputs, so these agree; before it did, the page showed
# 2.9 ms beside 3.9 ms, and 0.41 s beside 0.42 s.
# Each pattern has an English and a Chinese form (the Chinese edition prints its labels in Chinese).
PRINTED_TWICE = [
    ("07_async_serving.ipynb", r"CPU: ([\d.]+ ms) per conversation|CPU：每个对话 ([\d.]+ ms)"),
    ("13_production.ipynb", r"6 concurrent tools:?\s+([\d.]+ s) one after another, ([\d.]+ s) together"
                            r"|逐个执行 ([\d.]+ s)，同时执行 ([\d.]+ s)"),
]


@pytest.mark.parametrize("name, pattern", PRINTED_TWICE, ids=[n for n, _ in PRINTED_TWICE])
def test_a_value_printed_twice_is_printed_the_same(name, pattern):
    for path in (ROOT / "notebooks" / name, ROOT / "notebooks" / "zh" / name):
        found = [(i, m.groups()) for i, text in enumerate(outputs_text(path)) for m in re.finditer(pattern, text)]
        assert len({i for i, _ in found}) >= 2, f"{path.name}: expected the value in two cells, found {found}"
        assert len({values for _, values in found}) == 1, \
            f"{path.name} prints {found}: one run's value beside another's (rebuild with make notebooks)"


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "notebooks" / "zh").glob("[0-9]*.ipynb")),
                         ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_every_notebook_opens_in_colab_and_installs_the_course_there(path):
    """Outside this repository (Colab, another Jupyter) a notebook installs the course itself; here,
    where it is installed, that cell does nothing and shows nothing."""
    badge, install, *_ = json.loads(path.read_text(encoding="utf-8"))["cells"]
    where = path.relative_to(ROOT).as_posix()
    assert badge["cell_type"] == "markdown" and "colab-badge.svg" in "".join(badge["source"])
    assert f"https://colab.research.google.com/github/OWNER/REPO/blob/main/{where})" in "".join(badge["source"])
    source = "".join(install["source"])
    assert install["cell_type"] == "code" and install["outputs"] == [] and install["execution_count"] == 1
    assert 'if importlib.util.find_spec("miniagent") is None:' in source
    assert '"miniagent[course] @ git+https://github.com/OWNER/REPO"' in source
