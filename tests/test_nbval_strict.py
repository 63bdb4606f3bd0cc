"""nbval is strict here: a changed saved output fails the notebook test.

`make test` runs nbval with --nbval (not --nbval-lax) and the repo's sanitize file.
This runs the same command on a copy of notebook 00, once as saved (it passes) and
once with one saved output altered (it must fail).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def nbval(path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MINIAGENT_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval",
                           "--nbval-current-env", "--nbval-sanitize-with", str(ROOT / "tests/nbval-sanitize.cfg"),
                           str(path)], capture_output=True, text=True, env=env, cwd=path.parent)


def test_a_changed_output_fails_nbval(tmp_path):
    saved = tmp_path / "00_setup.ipynb"
    shutil.copy(ROOT / "notebooks/00_setup.ipynb", saved)
    assert nbval(saved).returncode == 0

    nb = json.loads(saved.read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and c["outputs"]
                and "default model" in "".join(c["outputs"][0].get("text", "")))
    cell["outputs"][0]["text"] = ["Client(mode='offline')\n", "default model: something-else\n"]
    tampered = tmp_path / "00_tampered.ipynb"
    tampered.write_text(json.dumps(nb))
    run = nbval(tampered)
    assert run.returncode != 0
    assert "something-else" in run.stdout
