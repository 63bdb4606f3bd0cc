"""The Chinese edition (notebooks/zh/) is the English one with its prose translated, and stays so.

Its code cells and saved outputs are the English notebook's, byte for byte, so nbval runs the
English edition only (pyproject ignores notebooks/zh). Each Chinese Markdown cell is tied to the
English text it translates by a hash (notebooks/src/zh/NN_name.md): when the English changes,
the drift guard fails here, naming the cell, until the translation is redone.
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
def test_the_built_chinese_notebook_has_the_english_code_and_outputs(name):
    english = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    chinese = nbformat.read(ROOT / "notebooks" / "zh" / f"{name}.ipynb", as_version=4)
    assert [c.cell_type for c in chinese.cells] == [c.cell_type for c in english.cells]
    for en, zh in zip(english.cells, chinese.cells):
        if en.cell_type == "code":
            assert (zh.source, zh.metadata, zh.outputs) == (en.source, en.metadata, en.outputs), \
                f"{name}: code cell {en.id} differs: rebuild with `make notebooks`"
        assert zh.id == en.id
    texts = [nbtools.unwrap_cjk(text) for _, text in nbtools.read_translation(nbtools.ZH_SOURCES / f"{name}.md")]
    assert [c.source for c in chinese.cells if c.cell_type == "markdown"] == texts, \
        f"{name}: notebooks/zh/ is older than its translation: rebuild with `make notebooks`"


def test_the_drift_guard_names_a_changed_english_cell_and_the_build_refuses(tmp_path, monkeypatch):
    english = nbformat.read(ROOT / "notebooks" / "00_setup.ipynb", as_version=4)
    blocks = nbtools.read_translation(nbtools.ZH_SOURCES / "00_setup.md")
    assert nbtools.drift(english, blocks) == []
    second = [c for c in english.cells if c.cell_type == "markdown"][1]
    second.source = second.source.replace("connect()", "miniagent.connect()", 1)  # one word changed
    problems = nbtools.drift(english, blocks)
    assert len(problems) == 1 and problems[0].startswith("Markdown cell 2 (") and "changed since" in problems[0]
    assert nbtools.drift(english, blocks[:-1])[0].endswith("blocks in Chinese")  # a block missing
    changed = tmp_path / "00_setup.ipynb"
    nbformat.write(english, changed)
    monkeypatch.setattr(nbtools, "ZH_FOLDER", tmp_path / "zh")
    with pytest.raises(ValueError, match="Markdown cell 2 .* changed since it was translated"):
        nbtools.zh_edition(changed)
    assert not (tmp_path / "zh").exists()


def test_a_drifted_translation_keeps_its_old_chinese_for_the_translator(tmp_path, monkeypatch):
    english = nbformat.read(ROOT / "notebooks" / "00_setup.ipynb", as_version=4)
    markdown = [c for c in english.cells if c.cell_type == "markdown"]
    markdown[1].source += "\n\nOne more sentence."
    path = tmp_path / "00_setup.ipynb"
    nbformat.write(english, path)
    monkeypatch.setattr(nbtools, "ZH_SOURCES", tmp_path)
    (tmp_path / "00_setup.md").write_text((nbtools.ROOT / "notebooks/src/zh/00_setup.md").read_text(encoding="utf-8"),
                                          encoding="utf-8")
    nbtools.zh_template(path)
    blocks = nbtools.read_translation(tmp_path / "00_setup.md")
    assert blocks[1][0] == nbtools.cell_hash(markdown[1].source)
    assert blocks[1][1].startswith("That line is the first thing") and "the translation before the English changed" \
        in blocks[1][1] and "每个 notebook 打印的第一行" in blocks[1][1]
    assert blocks[0][1].startswith("# 00 · 环境准备")  # in step: kept as it was
    assert json.dumps(blocks)  # plain strings


def test_soft_line_breaks_between_chinese_are_joined_and_nothing_else_is():
    text = ("第一行，\n第二行接着说 `code`\nand English\n然后\n继续\n\n- 列表项\n- 另一项\n\n```python\nx = 1\n\ny = 2\n```\n"
            "| a | b |\n|---|---|\n## 标题\n正文")
    assert nbtools.unwrap_cjk(text) == ("第一行，第二行接着说 `code`\nand English\n然后继续\n\n- 列表项\n- 另一项\n\n```python\nx = 1\n\n"
                                        "y = 2\n```\n| a | b |\n|---|---|\n## 标题\n正文")
    english = "one line\nanother line"
    assert nbtools.unwrap_cjk(english) == english



def test_the_chinese_student_edition_says_where_the_solutions_are_in_chinese(tmp_path):
    written = nbtools.student_edition(ROOT / "notebooks" / "zh" / "12_mcp.ipynb", tmp_path)
    nb = nbformat.read(written, as_version=4)
    notes = [c.source for c in nb.cells if c.source == nbtools.STUDENT_NOTE_ZH]
    assert len(notes) == 3  # one per exercise of notebook 12
    assert not any("solution" in c.get("metadata", {}).get("tags", []) for c in nb.cells)
    checks = [c for c in nb.cells if "check" in c.get("metadata", {}).get("tags", [])]
    assert len(checks) == 3 and all(c.outputs == [] for c in checks)
