"""scripts/still_runs.py: the ledger it writes from the recorded runs (no notebook is run here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import still_runs  # noqa: E402

VERSIONS = {"mode": "live", "miniagent": "abc1234", "python": "3.11.7", "date": "2026-12-02", "machine": "x86_64, 2 cores"}


def record(backend: str, results: list[dict], **extra) -> dict:
    return {"backend": backend, "what": still_runs.backends()[backend], "versions": VERSIONS, "results": results, **extra}


def result(notebook: str, *failures: str, seconds: float = 3.0) -> dict:
    return {"notebook": notebook, "clean": not failures, "seconds": seconds, "mode_line": "",
            "failures": [{"cell": 4, "error": f} for f in failures]}


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(still_runs, "RESULTS", tmp_path)
    return tmp_path


def test_the_ledger_marks_clean_failed_and_not_run_and_says_why(results_dir):
    (results_dir / "mock.json").write_text(json.dumps(record("mock", [result("00_setup.ipynb"), result("01_llm_call.ipynb")])))
    (results_dir / "llamacpp.json").write_text(json.dumps(record(
        "llamacpp", [result("00_setup.ipynb", "IndexError: list index out of range", seconds=61)],
        programs=[{"program": "the CLI demo, streamed", "clean": True, "failures": [], "seconds": 12.0}])))
    text = still_runs.ledger()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    mock, local = (next(line for line in rows if line.startswith(f"| `{name}` (")) for name in ("mock", "llamacpp"))
    assert text.index("`mock` (") < text.index("`llamacpp` (")  # in the order of the backends
    assert mock.count("✓") >= 2 and "✗" not in mock
    assert "✗" in local and "·" in local  # 00 failed, 01 not run
    assert "- llamacpp, 00_setup.ipynb, cell 4: `IndexError: list index out of range`" in text
    assert "| `llamacpp` | the CLI demo, streamed | ✓ | 12 |" in text
    assert "| `llamacpp` | 61 | · |" in text  # the seconds per notebook


def test_a_partial_run_keeps_the_notebooks_and_programs_it_did_not_run(results_dir, monkeypatch):
    old = record("mock", [result("00_setup.ipynb", "NameError: x"), result("01_llm_call.ipynb")],
                 programs=[{"program": "p", "clean": True, "failures": [], "seconds": 1.0}])
    (results_dir / "mock.json").write_text(json.dumps(old))
    monkeypatch.setattr(still_runs, "notebooks", lambda chosen: [Path("00_setup.ipynb")])
    monkeypatch.setattr(still_runs, "run_notebook", lambda path, env, secret: result(path.name))
    monkeypatch.setattr(still_runs, "versions", lambda used: VERSIONS)
    assert still_runs.run("mock", "00") is True
    kept = json.loads((results_dir / "mock.json").read_text())
    assert [(r["notebook"], r["clean"]) for r in kept["results"]] == [("00_setup.ipynb", True), ("01_llm_call.ipynb", True)]
    assert kept["programs"] == old["programs"]


def test_the_evaluation_s_totals_go_into_the_ledger_an_unknown_cost_said_so(results_dir):
    totals = {"passed": 1, "tasks": 36, "pass_rate": 1 / 36, "input_tokens": 52000, "output_tokens": 9000,
              "model_calls": 80, "seconds": 400.0, "cost": None, "tasks_with_a_tool_call": 3}
    (results_dir / "evals").mkdir()
    (results_dir / "evals" / "llamacpp.json").write_text(json.dumps(
        {"backend": "llamacpp", "what": "", "versions": VERSIONS, "model": "smollm2-135m-instruct",
         "reports": {"precise": totals, "vague": {**totals, "passed": 0, "cost": 0.5}}}))
    text = still_runs.ledger()
    assert ("| `llamacpp` | smollm2-135m-instruct | precise | 1/36 | 3/36 | 52,000 | 9,000 | unknown | 400 | 2026-12-02 |"
            in text)
    assert "| vague | 0/36 | 3/36 | 52,000 | 9,000 | 0.5000 |" in text
