"""The reliability soak (benchmarks/soak.py), short: 60 faulted agent runs over loopback HTTP must all
end with the clean answer, send only valid conversations and never show the key; and the soak must
notice when one of those fails, so that its "ok" means something."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import soak  # noqa: E402

pytestmark = pytest.mark.bench  # run by make test-bench (CI), not by the everyday make test

RETRIED = {"429", "529", "500", "drop", "cut", "error_after"}


def test_sixty_faulted_runs_end_with_the_clean_answer_valid_requests_and_no_key_anywhere():
    report = soak.run_soak(60, seed=17, seconds=60)
    failures = [f"{r.plan.describe()}: {r.problems}" for r in report.failed_runs]
    assert not report.problems and not failures, (report.table(), report.problems, failures[:5])
    assert report.runs == 60 and not report.timed_out
    assert all(r.ok for r in report.results) and report.mismatches == 0
    assert report.status_400 == 0 and report.invalid_bodies == 0 and report.records > 120
    assert report.leaks == [] and report.looked["trace (to_jsonl)"] >= 60 and report.looked["server log"] > 0
    assert any(where.startswith("log record") for where in report.looked)  # the logs were looked through
    # not vacuous: the faults were injected, of every retried kind, and the client had to work for it
    injected = report.injected
    assert RETRIED <= set(injected) and sum(injected.values()) >= 60, injected
    assert sum(r.retries for r in report.results) >= 30
    assert report.unexplained_retries == 0  # every retry answers a fault, and every retried fault got one
    assert sum(r.reasked for r in report.results) >= 1  # a stream broken midway, recovered by asking again
    assert {r.plan.streamed for r in report.results} == {True, False}
    assert {r.plan.question for r in report.results} == set(range(len(soak.QUESTIONS)))
    assert report.server_outcomes["429"] == injected["429"] and report.server_outcomes["dropped"] == injected["drop"]


def test_plans_come_from_the_seed_alone_with_at_most_two_faults_in_a_row():
    calls = [2] * len(soak.QUESTIONS)
    plans = [soak.plan_for(5, run, questions=len(soak.QUESTIONS), calls=calls) for run in range(1000)]
    assert plans == [soak.plan_for(5, run, questions=len(soak.QUESTIONS), calls=calls) for run in range(1000)]
    assert plans != [soak.plan_for(6, run, questions=len(soak.QUESTIONS), calls=calls) for run in range(1000)]
    for plan in plans:
        attempts = sorted(plan.faults)
        if attempts:
            assert len(attempts) <= 2 and attempts == list(range(attempts[0], attempts[0] + len(attempts)))
            assert attempts[0] <= 2  # they start on the first attempt of one of the run's two calls
    assert {kind for plan in plans for kind, _ in plan.faults.values()} == set(soak.KINDS)


def test_a_wrong_expected_answer_is_a_mismatch():
    report = soak.run_soak(6, seed=1, expected=["not the answer"] * len(soak.QUESTIONS))
    assert report.failed and report.mismatches == 6
    assert all("a different answer" in " ".join(r.problems) for r in report.results)


def test_three_faults_in_a_row_exhaust_the_retries_and_fail_the_run():
    report = soak.run_soak(6, seed=2, kinds=("529",), counts=(3,))
    assert report.failed and len(report.failed_runs) == 6
    assert all("529 overloaded_error" in " ".join(r.problems) for r in report.results)
    assert all(r.attempts >= 3 and r.retries == 2 for r in report.results)


def test_an_invalid_conversation_is_caught_as_400s():
    report = soak.run_soak(3, seed=3, create={"temperature": 5})  # the API allows 0 to 1
    assert report.failed and report.status_400 > 0 and report.invalid_bodies >= report.status_400


def test_a_key_in_what_the_agent_keeps_is_a_leak():
    canary = "sk-ant-api03-CANARY-" + "0123456789abcdef" * 2
    report = soak.run_soak(3, seed=4, canary=canary, questions=[f"What is 2 + 2? (my key: {canary})"])
    assert report.failed and report.leaks
    assert {"trace (to_jsonl)", "history"} <= set(report.leaks)


def test_the_command_line_runs_a_short_soak_and_says_ok(capsys):
    assert soak.main(["--runs", "8", "--seed", "9", "--workers", "2"]) == 0
    printed = capsys.readouterr()
    assert "canary leaks" in printed.out and "runs/s" in printed.out and printed.out.rstrip().endswith("soak: ok")
    progress = [line for line in printed.err.splitlines() if line.startswith("soak: ")]  # a line per run of 8
    assert [line.split(" runs")[0] for line in progress] == [f"soak: {n}/8" for n in range(1, 9)]
    assert "left" in progress[0] and "left" not in progress[-1]
