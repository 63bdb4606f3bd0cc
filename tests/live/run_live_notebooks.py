"""Every notebook, run in LIVE mode against the mock API over real HTTP.

    make test-live

The saved outputs are made offline, so nbval cannot check a live run. This checks
what it can: with ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL set (the mock server
standing in for the real API), each notebook says it is live, runs top to bottom
without an error (cells tagged `raises-exception` excepted), and the key appears in
no output and in no line the server logged.

The server is flaky on purpose, as the real API is on a busy day: any call may get a
429 or a 529 (`--flaky`, at most two in a row, so the client's two retries always get
through). A notebook that crashes on one has a cell that does not expect them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ExecutePreprocessor

from miniagent.mock import serve_in_subprocess

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-ant-live-canary-0123456789abcdef"
FLAKY = ["--flaky", "0.2", "--seed", "8"]  # a fifth of the calls fail with 429 or 529


def start_server(log: Path) -> tuple[subprocess.Popen, str]:
    try:
        return serve_in_subprocess(*FLAKY, stderr=log.open("w"))
    except RuntimeError as err:
        raise SystemExit(str(err)) from None


def problems(path: Path, url: str) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    ExecutePreprocessor(timeout=120, kernel_name="python3", allow_errors=True,
                        extra_arguments=["--IPKernelApp.log_level=ERROR"]).preprocess(
        nb, {"metadata": {"path": str(path.parent)}})
    found, text = [], nbformat.writes(nb)
    first = next((o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"), None)
    if first is None or not first.text.startswith(f"live at {url}"):
        found.append(f"the first output does not say live mode: {first.text.splitlines()[0] if first else None!r}")
    for i, cell in enumerate(nb.cells):
        allowed = "raises-exception" in cell.metadata.get("tags", [])
        for out in cell.get("outputs", []):
            if out.output_type == "error" and not allowed:
                found.append(f"cell {i}: {out.ename}: {out.evalue[:200]}")
    if KEY in text:
        found.append("the API key appears in an output")
    return found


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        server, url = start_server(log)
        os.environ.pop("MINIAGENT_OFFLINE", None)
        os.environ.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=url, MPLBACKEND="Agg")
        failed = 0
        try:
            for path in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
                found = problems(path, url)
                failed += bool(found)
                print(f"{'ok  ' if not found else 'FAIL'} {path.name} (live against {url})")
                for problem in found:
                    print(f"     {problem}")
        finally:
            server.terminate()
            server.wait(timeout=10)
        logged = log.read_text()
        if KEY in logged:
            print("FAIL the API key appears in the mock server's log")
            failed += 1
        faults = sum(line.endswith((" 429", " 529")) for line in logged.splitlines())
        print(f"the server answered {faults} of {len(logged.splitlines())} requests with 429 or 529")
        if not faults:
            print("FAIL no fault was injected, so this run proves nothing about them")
            failed += 1
    print("live notebooks:", "all ran" if not failed else f"{failed} problem(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
