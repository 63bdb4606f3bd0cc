"""The evaluation harness: grading, the two shipped configurations offline, the table, the CLI."""

import json

from datetime import datetime, timezone

import pytest

import miniagent
from miniagent import builtin_tools, evals

TASK = {"id": "paris", "question": "What is the weather in Paris?",
        "calls": [{"name": "get_weather", "args": {"city": "Paris"}}],
        "facts": ["16°C", {"regex": r"partly\s+cloudy"}], "budget": {"max_tokens": 1000, "max_calls": 2}}
GOOD_CALLS = [{"name": "get_weather", "input": {"city": "paris"}}]  # case does not matter
GOOD_TEXT = "Paris: partly cloudy, 16°C, light breeze"


def test_a_good_run_passes():
    assert evals.grade(TASK, GOOD_CALLS, GOOD_TEXT, 600, 40, 2) == []


@pytest.mark.parametrize("change, reason", [
    ({"calls": []}, "missing call: get_weather {\"city\": \"Paris\"}"),
    ({"calls": [{"name": "get_weather", "input": {"city": "Tokyo"}}]},
     'wrong argument: get_weather wanted {"city": "Paris"}, got {"city": "Tokyo"}'),
    ({"text": "Paris: partly cloudy, 61°F"}, "missing fact: '16°C'"),
    ({"text": "Paris: 16°C"}, r"missing fact: /partly\s+cloudy/"),
    ({"input_tokens": 980}, "over budget: 1020 tokens > 1000"),
    ({"model_calls": 3}, "over budget: 3 model calls > 2"),
    ({"stop": "max_iterations"}, "did not finish: stopped by max_iterations"),
])
def test_a_failed_run_fails_for_its_reason_alone(change, reason):
    run = {"calls": GOOD_CALLS, "text": GOOD_TEXT, "input_tokens": 600, "output_tokens": 40, "model_calls": 2,
           "stop": "end_turn", **change}
    assert evals.grade(TASK, **run) == [reason]


def test_a_question_for_no_tool_fails_when_a_tool_is_called():
    task = {"id": "hi", "question": "Hello!", "no_tools": True}
    assert evals.grade(task, [], "Hello!", 200, 20, 1) == []
    assert evals.grade(task, GOOD_CALLS, "Hello!", 200, 20, 1) == ["unexpected call: get_weather"]


def test_the_suite_is_well_formed():
    tasks = evals.load_tasks()
    assert 24 <= len(tasks) <= 40 and len({t["id"] for t in tasks}) == len(tasks)
    assert sum(t["lang"] == "zh" for t in tasks) >= 8
    assert all(t.get("budget") and (t.get("calls") or t.get("no_tools")) for t in tasks)


@pytest.fixture(scope="module")
def reports():
    """Both shipped configurations on the whole suite, each with a fresh mock client (ids start at 1)."""
    tasks = evals.load_tasks()
    with pytest.MonkeyPatch.context() as mp:  # a fixed clock: the same answers on any day
        mp.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc))
        return {name: evals.run(evals.CONFIGS[name], tasks, miniagent.connect(offline=True, quiet=True))
                for name in ("precise", "vague")}


def test_precise_descriptions_cost_more_and_vague_ones_miss_the_indirect_time_questions(reports):
    precise, vague = reports["precise"], reports["vague"]
    failed = lambda r: [row.id for row in r.rows if not row.passed]
    assert (sum(r.passed for r in precise.rows), len(precise.rows)) == (33, 36)
    assert (sum(r.passed for r in vague.rows), len(vague.rows)) == (33, 36)
    assert failed(precise) == ["zh-weather-and-time", "cheap-hello", "cheap-calc"]  # the tight budgets
    assert failed(vague) == ["zh-weather-and-time", "morning-tokyo", "night-newyork"]  # "is it morning?" is time
    # the descriptions ride along on every request: precise ones cost input tokens
    sums = lambda r: (r.total("input_tokens"), r.total("output_tokens"), r.total("model_calls"))
    assert sums(precise) == (36540, 1838, 70)
    assert sums(vague) == (19066, 1948, 68)
    assert precise.total("cost") == pytest.approx(0.09146) and vague.total("cost") == pytest.approx(0.057612)
    # and the reasons are the mechanism's: a vague description makes the mock call no tool
    row = next(r for r in vague.rows if r.id == "morning-tokyo")
    assert row.tool_calls == [] and row.reasons[0] == 'missing call: get_current_time {"timezone": "Asia/Tokyo"}'


def test_the_verdicts_do_not_depend_on_the_learners_language(reports, monkeypatch):
    """Under MINIAGENT_LANG=zh the built-in tools' errors are Chinese: a task that checks the error was
    reported accepts it in either language, so both editions of notebook 13 grade the same."""
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    monkeypatch.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc))
    chinese = evals.run(evals.CONFIGS["precise"], evals.load_tasks(), miniagent.connect(offline=True, quiet=True))
    assert [(r.id, r.passed) for r in chinese.rows] == [(r.id, r.passed) for r in reports["precise"].rows]
    row = next(r for r in chinese.rows if r.id == "cheap-hello")
    assert row.reasons == ["超出预算：510 token > 400"]  # the reasons in the learner's language


def test_the_tables_print(reports):
    table = reports["precise"].table()
    assert "33/36 passed (92%)" in table and "over budget: 510 tokens > 400" in table
    assert all(t["id"] in table for t in evals.load_tasks())
    side_by_side = reports["precise"].compare(reports["vague"])
    assert "pass rate                       91.7%        91.7%        +0.0%" in side_by_side
    assert "input tokens                    36540        19066       -17474" in side_by_side


def test_a_config_can_be_a_function():
    def build(client):
        return miniagent.Agent(client, evals.described(evals.VAGUE), max_iterations=6)

    task = [t for t in evals.load_tasks() if t["id"] == "cheap-calc"]
    report = evals.run(("my-vague", build), task, miniagent.connect(offline=True, quiet=True))
    assert report.config == "my-vague" and report.rows[0].passed and report.rows[0].model_calls == 2


def test_the_cli_prints_both_tables_and_the_comparison(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    suite = tmp_path / "tasks.json"
    suite.write_text(json.dumps({"tasks": evals.load_tasks()[:3]}), encoding="utf-8")
    chart = tmp_path / "evals.png"
    assert evals.main(["--tasks", str(suite), "--plot", str(chart)]) == 0
    printed = capsys.readouterr()
    out = printed.out
    assert "precise (claude-" in out and "vague (claude-" in out and "pass rate" in out
    progress = printed.err.splitlines()  # a line per task as it ends, apart from the tables
    ids = [t["id"] for t in evals.load_tasks()[:3]]
    assert [line.split("]")[0].strip() for line in progress if line] == [f"[{n}/6" for n in range(1, 7)]
    assert ids[0] in progress[0] and "vague" in progress[3] and "left" in progress[0] and "left" not in progress[5]
    assert chart.stat().st_size > 1000
    assert evals.main(["--tasks", str(suite), "--config", "vague"]) == 0
    out = capsys.readouterr().out
    assert "vague (claude-" in out and "precise" not in out and "difference" not in out


