"""Everyday questions, in English and Chinese, through the Agent and the offline mock.

The suite (tests/data/questions/en.json, zh.json) is questions as a user types them: weather
asked many ways, time, date, weekday, arithmetic in words and symbols (full-width brackets, ×,
÷, 乘以, number words), units, memory, the handbook, two tools in one question, and questions
that need no tool. Each entry names the tools it is asked with ("tools": default, memory or
handbook), the calls it must make (name, and the arguments that matter), and what the final
answer must contain. Every question runs the real path: `Agent` with those tools against the
in-process mock, the clock fixed at 2026-05-09 06:23:11 UTC (a Saturday; 14:23 in Shanghai),
the Chinese suite under MINIAGENT_LANG=zh as the Chinese edition runs.

About a third of each language (every third entry, chosen before the brain was tuned) is marked
`held_out`: those were never looked at while the brain's rules were written, so they measure
how well the rules generalise. `python tests/test_mock_brain_questions.py` prints the scores
(tuned and held-out, per language) without showing the held-out failures.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from miniagent import Agent, builtin_tools
from miniagent import retrieval
from miniagent.client import connect
from miniagent.memory import Memory, memory_tools
from miniagent.messages import tool_uses

DATA = Path(__file__).parent / "data" / "questions"
LANGUAGES = ("en", "zh")
CLOCK = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)
MARK = {"en": "(mock) ", "zh": "（模拟）"}


def suite(language: str) -> list[dict]:
    return json.loads((DATA / f"{language}.json").read_text(encoding="utf-8"))


_INDEXES: dict[str, retrieval.Index] = {}


def handbook(language: str) -> retrieval.Index:
    if language not in _INDEXES:
        _INDEXES[language] = retrieval.build(retrieval.DATA / language)
    return _INDEXES[language]


def toolset(entry: dict, language: str):
    kind = entry.get("tools", "default")
    if kind == "default":
        return builtin_tools.default_tools()
    if kind == "memory":
        memory = Memory()
        for fact in entry.get("memory", []):
            memory.remember(fact)
        return memory_tools(memory)
    if kind == "handbook":
        return [retrieval.search_tool(handbook(language), method="keyword")]
    raise ValueError(f"unknown toolset {kind!r}")


def _fits(value, wanted) -> bool:
    if isinstance(wanted, dict) and "contains" in wanted:
        return isinstance(value, str) and wanted["contains"].casefold() in value.casefold()
    if isinstance(wanted, str):
        return isinstance(value, str) and value.casefold() == wanted.casefold()
    return value == wanted


def problems(entry: dict, language: str) -> list[str]:
    """What is wrong with the run of one question ([] when it passes)."""
    agent = Agent(connect(offline=True, quiet=True), toolset(entry, language))
    result = agent.run(entry["question"])
    made = [b for m in result.messages for b in tool_uses(m)]
    wrong = []
    names = sorted(c["name"] for c in made)
    if names != sorted(c["name"] for c in entry["calls"]):
        wrong.append(f"calls {[(c['name'], c['input']) for c in made]}, expected {[c['name'] for c in entry['calls']]}")
    else:
        unmatched = list(made)
        for expected in entry["calls"]:
            fit = next((c for c in unmatched if c["name"] == expected["name"] and all(
                _fits(c["input"].get(k), v) for k, v in expected.get("args", {}).items())), None)
            if fit is None:
                wrong.append(f"no call {expected['name']}{expected.get('args', {})} among "
                             f"{[(c['name'], c['input']) for c in made]}")
            else:
                unmatched.remove(fit)
    if not result.text.startswith(MARK[language]):
        wrong.append(f"answer not in the question's language: {result.text!r}")
    missing = [s for s in entry["answer"] if s not in result.text]
    if missing:
        wrong.append(f"answer lacks {missing}: {result.text!r}")
    return wrong


@pytest.fixture
def fixed_clock(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: CLOCK)


# The least share of each part that must pass. Those that fail are said in the failure message; the
# held-out part's failures were never used to tune the brain (see report()).
FLOOR = {"tuned": 0.95, "held-out": 0.85}


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_brain_answers_everyday_questions(language, fixed_clock, monkeypatch):
    monkeypatch.setenv("MINIAGENT_LANG", language)
    for part, held in (("tuned", False), ("held-out", True)):
        entries = [e for e in suite(language) if bool(e.get("held_out")) == held]
        failed = {e["id"]: problems(e, language) for e in entries}
        failed = {k: v for k, v in failed.items() if v}
        assert 1 - len(failed) / len(entries) >= FLOOR[part], (part, failed)


@pytest.mark.parametrize("text, expressions", [
    ("（1024 + 768）× 2 等于几", ["(1024 + 768)* 2"]),  # spacing as written; full-width brackets and × (NFKC, one character each)
    ("12 乘以 34", ["12 * 34"]), ("一千二百乘以三", ["1200 * 3"]), ("twelve times thirty-four", ["12 * 34"]),
    ("80 的 15% 是多少", ["80 * 15 / 100"]), ("a 15% tip on a $240 bill", ["240 * 15 / 100"]),
    ("2 的 10 次方", ["2 ** 10"]), ("299 打八折", ["299 * 0.8"]), ("How much is 1,299 * 0.85?", ["1299 * 0.85"]),
    ("100 华氏度是多少摄氏度", ["(100 - 32) * 5 / 9"]), ("how many pounds is 70 kg", ["70 / 0.45359237"]),
    ("2026-05-09", []), ("我一年有几天年假", []), ("which one is better, plus size or not", []),
])
def test_arithmetic_and_conversions_said_in_words_become_expressions(text, expressions):
    from miniagent.mock.reading import expressions as found
    assert [e for _, e in found(text)] == expressions


def test_the_suite_is_large_and_about_a_third_held_out():
    for language in LANGUAGES:
        entries = suite(language)
        held = [e for e in entries if e.get("held_out")]
        assert len(entries) >= 110 and 0.25 <= len(held) / len(entries) <= 0.35
        assert len({e["question"] for e in entries}) == len(entries)  # no question twice


def report(show_tuned_failures: bool = True) -> None:
    """The scores per language, tuned and held-out; the tuned part's failures (never the held-out ones)."""
    builtin_tools.now = lambda: CLOCK
    for language in LANGUAGES:
        os.environ["MINIAGENT_LANG"] = language
        score = {False: [0, 0], True: [0, 0]}
        for entry in suite(language):
            wrong = problems(entry, language)
            held = bool(entry.get("held_out"))
            score[held][0] += not wrong
            score[held][1] += 1
            if wrong and not held and show_tuned_failures:
                print(f"  {entry['id']} {entry['question']!r}: " + "; ".join(wrong))
        print(f"{language}: tuned {score[False][0]}/{score[False][1]}, held-out {score[True][0]}/{score[True][1]}")


if __name__ == "__main__":
    report(show_tuned_failures="-q" not in sys.argv)
