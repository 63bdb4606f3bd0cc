"""The Chinese edition (notebooks/zh/) is the English one translated, and stays so.

Its code cells are the English notebook's, except the string literals a cell declares as
translated (`<!-- code:cell-NN -->` blocks in notebooks/src/zh/NN_name.md: the questions, names
and labels a Chinese learner reads); its outputs are its own run's, under MINIAGENT_LANG=zh,
which `make test-zh` compares with nbval (pyproject leaves notebooks/zh out of `make test`).
Each Chinese Markdown cell is tied to the English text it translates by a hash: when the
English changes, the drift guard fails here, naming the cell, until the translation is redone.
Both runs record what the mock answered (the tools it called, the numbers in their arguments,
which tool results were errors): a translated question that sends the mock down another path
fails here too.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("nbtools", ROOT / "scripts" / "nbtools.py")
nbtools = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nbtools)

TRANSLATED = sorted(p.stem for p in nbtools.ZH_SOURCES.glob("[0-9]*.md"))
HAN = re.compile(r"[\u4e00-\u9fff]")


def test_every_notebook_has_a_chinese_edition():
    english = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    assert TRANSLATED == english
    assert sorted(p.stem for p in (ROOT / "notebooks" / "zh").glob("[0-9]*.ipynb")) == english


@pytest.mark.parametrize("name", TRANSLATED)
def test_translation_is_in_step_with_the_english(name):
    english = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    blocks = nbtools.read_translation(nbtools.ZH_SOURCES / f"{name}.md")
    assert nbtools.drift(english, blocks) == [], "run scripts/nbtools.py zh-template on it to see what to redo"
    untranslated = [i + 1 for i, (_, text) in enumerate(blocks) if not HAN.search(text)]
    assert untranslated == [], f"Markdown cells still in English: {untranslated}"


@pytest.mark.parametrize("name", TRANSLATED)
def test_the_built_chinese_notebook_has_the_english_code_but_its_declared_literals(name):
    english = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    chinese = nbformat.read(ROOT / "notebooks" / "zh" / f"{name}.ipynb", as_version=4)
    literals = nbtools.read_literals(nbtools.ZH_SOURCES / f"{name}.md")
    assert [c.cell_type for c in chinese.cells] == [c.cell_type for c in english.cells]
    assert set(literals) <= {c.id for c in english.cells if c.cell_type == "code"}
    for en, zh in zip(english.cells, chinese.cells):
        assert zh.id == en.id
        if en.cell_type == "code":
            pairs = literals.get(en.id, [])
            assert zh.metadata == en.metadata
            assert nbtools.masked(zh.source, pairs, chinese=True) == nbtools.masked(en.source, pairs, chinese=False), \
                f"{name}: code cell {en.id} differs from the English beyond its declared literals"
            assert zh.source == nbtools.translate_code(en.source, pairs, en.id), \
                f"{name}: code cell {en.id} is older than the English or its translation: rebuild with `make notebooks`"
    texts = [nbtools.unwrap_cjk(text) for _, text in nbtools.read_translation(nbtools.ZH_SOURCES / f"{name}.md")]
    assert [c.source for c in chinese.cells if c.cell_type == "markdown" and c.id not in nbtools.ELSEWHERE] == texts, \
        f"{name}: notebooks/zh/ is older than its translation: rebuild with `make notebooks`"


@pytest.mark.parametrize("name", TRANSLATED)
def test_both_editions_make_the_same_calls_and_reach_the_same_results(name):
    english = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    chinese = nbformat.read(ROOT / "notebooks" / "zh" / f"{name}.ipynb", as_version=4)
    en_calls = english.metadata.get("miniagent", {}).get("mock_calls")
    zh_calls = chinese.metadata.get("miniagent", {}).get("mock_calls")
    assert en_calls is not None and zh_calls is not None, f"{name}: built before the runs were recorded: `make notebooks`"
    assert zh_calls == en_calls, f"{name}: the Chinese run took the mock down another path"
    # each edition's own run: the same cells raise (those tagged to), with the same exceptions
    errors = [[o.ename for o in c.get("outputs", []) if o.output_type == "error"] for c in english.cells]
    assert [[o.ename for o in c.get("outputs", []) if o.output_type == "error"] for c in chinese.cells] == errors


def test_a_translated_literal_must_be_a_whole_string_of_its_cell_once():
    source = '%matplotlib inline\nagent.run("What is the weather in Paris?")\nprint("Paris", "Paris")'
    assert nbtools.translate_code(source, [('"What is the weather in Paris?"', '"巴黎天气怎么样？"')]) == \
        source.replace("What is the weather in Paris?", "巴黎天气怎么样？")
    assert nbtools.translate_code('print(f"{n} calls")', [('f"{n} calls"', 'f"{n} 次调用"')]) == 'print(f"{n} 次调用")'
    with pytest.raises(ValueError, match="not a string"):  # a part of a string, or a name, is not a literal
        nbtools.translate_code(source, [('"weather"', '"天气"')], "cell-01")
    with pytest.raises(ValueError, match="more than one"):
        nbtools.translate_code(source, [('"Paris"', '"巴黎"')], "cell-01")
    assert nbtools.masked('f("a", "b")', [('"a"', '"甲"')], chinese=False) == \
        nbtools.masked('f("甲", "b")', [('"a"', '"甲"')], chinese=True) != nbtools.masked('f("甲", "c")', [('"a"', '"甲"')], chinese=True)


def test_a_code_block_line_that_is_not_two_literals_is_refused(tmp_path):
    path = tmp_path / "01_x.md"
    path.write_text('<!-- en:0123456789ab -->\n正文\n\n<!-- code:cell-03 -->\n"a → b" → "甲 → 乙"\n', encoding="utf-8")
    assert nbtools.read_literals(path) == {"cell-03": [('"a → b"', '"甲 → 乙"')]}
    assert [h for h, _ in nbtools.read_translation(path)] == ["0123456789ab"]  # code blocks are not Markdown cells
    path.write_text('<!-- en:0123456789ab -->\n正文\n\n<!-- code:cell-03 -->\nParis → 巴黎\n', encoding="utf-8")
    with pytest.raises(ValueError, match="two string literals"):
        nbtools.read_literals(path)


def test_the_mock_logs_each_answer_for_the_comparison(tmp_path, monkeypatch):
    from miniagent import Agent, builtin_tools
    from miniagent.client import connect

    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("MINIAGENT_CALL_LOG", str(log))
    Agent(connect(offline=True, quiet=True), builtin_tools.default_tools()).run("What is 12 * 34?")
    english = nbtools.mock_calls(log)
    assert english == ['{"calls": ["calculate(12,34)"], "results": []}', '{"calls": [], "results": ["ok"]}']
    Agent(connect(offline=True, quiet=True), builtin_tools.default_tools()).run("12 乘以 34 是多少？")
    assert nbtools.mock_calls(log) == sorted(english * 2)  # the same path in Chinese
    monkeypatch.delenv("MINIAGENT_CALL_LOG")
    Agent(connect(offline=True, quiet=True), builtin_tools.default_tools()).run("What is 12 * 34?")
    assert len(nbtools.mock_calls(log)) == 4  # not set: nothing written
