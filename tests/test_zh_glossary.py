"""The Chinese edition names each idea one way: notebooks/src/zh/GLOSSARY.md says which, and this checks it.

The glossary's table gives, per English term, the one Chinese term and the variants not to write. No
variant may appear in the prose of the translations (notebooks/src/zh/NN_*.md), of the built Chinese
notebooks' Markdown cells (notebooks/zh/) or of README.zh-CN.md. Code (fenced blocks, mermaid, inline
`code`), HTML comments and link targets are not prose and are left out. An ASCII variant matches as a
whole word, case and all; a Chinese one as a substring, whatever line breaks fall inside it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY = ROOT / "notebooks" / "src" / "zh" / "GLOSSARY.md"
NONE = {"—", "-", ""}


def glossary(path: Path = GLOSSARY) -> list[tuple[str, str, list[str]]]:
    """(English, 中文, banned variants) for each row of the glossary's table."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) != 3 or cells[0] == "English" or set(cells[0]) <= set("-: "):
            continue
        banned = [] if cells[2] in NONE else [v.strip() for v in cells[2].split("、") if v.strip()]
        rows.append((cells[0], cells[1], banned))
    return rows


FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
INLINE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
LINK_TARGET = re.compile(r"\]\([^)]*\)")


# A code cell's translated literals (`<!-- code:cell-07 -->`, one `"English" → "中文"` a line): the
# English side is the English notebook's code, so only the Chinese side is checked.
LITERALS = re.compile(r"^<!-- code:[^>]*-->\n(?:(?!<!-- ).*(?:\n|$))*", re.M)
ENGLISH_SIDE = re.compile(r"^.*? → ", re.M)
# On the Chinese side, code is not prose either: an f-string's {fields} and names with a dot or a slash
# in them (miniagent/agent.py, agent.trace).
CODE_IN_LITERAL = re.compile(r"\{[^{}\n]*\}|[\w-]+(?:[./][\w-]+)+")


def prose(markdown: str) -> str:
    """The Markdown with code blocks, inline code, comments, link targets and the English side of
    translated literals blanked (line numbers kept)."""
    def blank(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))
    markdown = LITERALS.sub(lambda m: CODE_IN_LITERAL.sub(blank, ENGLISH_SIDE.sub(blank, m.group(0))), markdown)
    for pattern in (COMMENT, FENCE, INLINE, LINK_TARGET):
        markdown = pattern.sub(blank, markdown)
    return markdown


def _is_ascii(text: str) -> bool:
    return all(ord(c) < 128 for c in text)


def hits(markdown: str, banned: list[str]) -> list[tuple[int, str]]:
    """(line number, variant) for each banned variant found in the prose of `markdown`."""
    text = prose(markdown)
    squeezed, lines, line = [], [], 1  # the text without spaces: a soft line break may fall inside a Chinese term
    for char in text:
        if char == "\n":
            line += 1
        if not char.isspace():
            squeezed.append(char), lines.append(line)
    squeezed = "".join(squeezed)
    found = []
    for variant in banned:
        if _is_ascii(variant):
            pattern = re.compile(r"(?<![A-Za-z0-9_\-])" + re.escape(variant) + r"(?![A-Za-z0-9_\-])")
            found += [(text.count("\n", 0, m.start()) + 1, variant) for m in pattern.finditer(text)]
        else:
            target = re.sub(r"\s+", "", variant)
            found += [(lines[m.start()], variant) for m in re.finditer(re.escape(target), squeezed)]
    return sorted(found)


def sources() -> list[tuple[str, str]]:
    """(name, Markdown) of every Chinese text a learner reads."""
    texts = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
             for p in sorted((ROOT / "notebooks" / "src" / "zh").glob("[0-9]*.md"))]
    texts.append(("README.zh-CN.md", (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")))
    for path in sorted((ROOT / "notebooks" / "zh").glob("[0-9]*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for number, cell in enumerate(cells, 1):
            if cell["cell_type"] == "markdown":
                source = cell["source"]
                texts.append((f"{path.relative_to(ROOT)} cell {number}", "".join(source) if isinstance(source, list) else source))
    return texts


ROWS = glossary()
BANNED = sorted({v for _, _, variants in ROWS for v in variants})


def test_the_glossary_names_one_term_per_idea_and_bans_its_variants():
    terms = {english: chinese for english, chinese, _ in ROWS}
    assert terms["orchestrator"] == "编排者" and terms["prompt"] == "提示词"
    assert terms["registry, tool registry"].startswith("注册表")
    assert any(chinese == "首字延迟" and "TTFT" in english for english, chinese, _ in ROWS)
    assert len(BANNED) >= 30
    for english, chinese, variants in ROWS:
        assert not hits(chinese, variants), f"{english}: the chosen term {chinese} is one of its own banned variants"
    owners = {}
    for english, _, variants in ROWS:
        for variant in variants:
            assert owners.setdefault(variant, english) == english, f"{variant} is banned for two terms"


SOURCES = sources()


@pytest.mark.parametrize("name,markdown", SOURCES, ids=[name for name, _ in SOURCES])
def test_no_banned_variant_in_the_chinese_prose(name, markdown):
    found = hits(markdown, BANNED)
    assert found == [], f"{name}: " + "; ".join(f"line {line}: {variant}" for line, variant in found) + \
        " (see notebooks/src/zh/GLOSSARY.md for the term to use)"


def test_a_reintroduced_variant_is_caught_and_code_is_not():
    text = ("编排者把任务交给专家。\n"
            "`ToolRegistry` 和 `registry` 是代码，<!-- registry --> 是注释，[链接](docs/registry.md) 是地址。\n"
            "```python\nprompt = '协调者'\n```\n"
            "Server-Sent Events 不是 server。")
    assert hits(text, BANNED) == [(6, "server")]
    assert hits(text.replace("编排者", "协调者"), BANNED) == [(1, "协调者"), (6, "server")]
    assert hits("每个请求都带着系统 prompt。", BANNED) == [(1, "prompt")]
    assert hits("流式输出缩短的是等第一个字的\n时间。", BANNED) == [(1, "第一个字的时间")]  # a soft line break inside
    assert hits("协调\n者", BANNED) == [(1, "协调者")]
    assert hits("prompts 和 prompt_tokens 和 live-ish", ["prompt"]) == []


def test_every_translation_and_the_readme_are_checked():
    names = [name for name, _ in sources()]
    english = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    assert [n for n in names if n.startswith("notebooks/src/zh/")] == [f"notebooks/src/zh/{e}.md" for e in english]
    assert "README.zh-CN.md" in names
    assert {n.split(" cell ")[0] for n in names if " cell " in n} == {f"notebooks/zh/{e}.ipynb" for e in english}


LAB = re.compile(r"make (lab[\w-]*)")
CHINESE_LABS = {"lab-zh", "lab-student-zh"}  # the Makefile's targets that open notebooks/zh/ and student/zh/


def test_the_chinese_edition_tells_the_learner_to_open_the_chinese_edition():
    import importlib.util

    spec = importlib.util.spec_from_file_location("course", ROOT / "course.py")  # what `make lab-zh` runs
    course = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course)
    assert {name for name, (folder, language) in course.LABS.items() if language == "zh"} == CHINESE_LABS
    for target in CHINESE_LABS:
        assert course.LABS[target][0] in ("notebooks/zh", "student/zh"), target
    for path in sorted((ROOT / "notebooks" / "src" / "zh").glob("[0-9]*.md")):
        targets = LAB.findall(path.read_text(encoding="utf-8"))
        assert set(targets) <= CHINESE_LABS, f"{path.name} says make {set(targets) - CHINESE_LABS}: the English edition"
    for line in (ROOT / "README.zh-CN.md").read_text(encoding="utf-8").splitlines():
        english = set(LAB.findall(line)) - CHINESE_LABS
        assert not english or "英文版" in line, f"README.zh-CN.md: make {english} opens the English edition: {line}"


def test_a_translated_literal_is_checked_on_its_chinese_side_only():
    markdown = '<!-- en:0123456789ab -->\n正文\n\n<!-- code:cell-03 -->\n"What is an agent?" → "什么是智能体？"\n'
    assert hits(markdown, ["agent", "智能体"]) == [(5, "智能体")]


def test_code_on_a_literals_chinese_side_is_not_prose():
    """An f-string's fields and a dotted or slashed name are code; the words around them are prose."""
    markdown = ('<!-- en:0123456789ab -->\n正文\n\n<!-- code:cell-07 -->\n'
                'f"x {len(agent.trace)}" → f"{miniagent.agent.__name__}：miniagent/agent.py 有 {n} 行"\n'
                '"an agent" → "一个 agent"\n')
    assert hits(markdown, ["agent"]) == [(6, "agent")]
