"""nbval is strict here: a changed saved output fails the notebook test.

`make test` runs nbval with --nbval (not --nbval-lax) and the repo's sanitize file.
This runs the same command on two copies of notebook 00: one as saved (every cell
passes) and one with a saved output altered (that cell must fail).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.harness  # run by make test-student (CI), not by the everyday make test


def nbval(*paths: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MINIAGENT_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--nbval",
                           "--rootdir", str(paths[0].parent),
                           "--nbval-current-env", "--nbval-sanitize-with", str(ROOT / "tests/nbval-sanitize.cfg"),
                           *map(str, paths)], capture_output=True, text=True, env=env, cwd=paths[0].parent)


def test_a_changed_output_fails_nbval(tmp_path):
    """One nbval run over two copies (one pytest start-up): as saved, every cell passes; tampered, one fails."""
    saved = tmp_path / "00_setup.ipynb"
    shutil.copy(ROOT / "notebooks/00_setup.ipynb", saved)
    nb = json.loads(saved.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and c["outputs"]
                and "default model" in "".join(c["outputs"][0].get("text", "")))
    cell["outputs"][0]["text"] = ["Client(mode='offline')\n", "default model: something-else\n"]
    tampered = tmp_path / "00_tampered.ipynb"
    tampered.write_text(json.dumps(nb))

    run = nbval(saved, tampered)
    outcomes = [line.split(" ", 2)[:2] for line in run.stdout.splitlines() if line.startswith(("PASSED", "FAILED"))]
    assert outcomes, run.stdout[-2000:]
    assert all(status == "PASSED" for status, test in outcomes if test.startswith("00_setup.ipynb")), run.stdout
    failed = [test for status, test in outcomes if status == "FAILED"]
    assert failed and all(test.startswith("00_tampered.ipynb") for test in failed), run.stdout
    assert "something-else" in run.stdout
