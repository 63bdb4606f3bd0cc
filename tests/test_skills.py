"""Notebook 15's skills: parsed strictly, loaded on demand, and what that saves in tokens."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import miniagent
from miniagent.skills import Skills, parse

EXAMPLES = Path(miniagent.__file__).parent / "data" / "skills"


def many(tmp_path: Path, n: int) -> Path:
    """n skills: the three examples, and copies of them under other names to make up the number."""
    originals = sorted(EXAMPLES.iterdir())
    for i in range(n):
        source = originals[i % len(originals)]
        name = source.name if i < len(originals) else f"{source.name}-{i:02d}"
        shutil.copytree(source, tmp_path / name)
        if name != source.name:
            skill = tmp_path / name / "SKILL.md"
            skill.write_text(skill.read_text(encoding="utf-8").replace(f"name: {source.name}", f"name: {name}"),
                             encoding="utf-8")
    return tmp_path


def test_the_examples_parse_and_list_their_files():
    skills = Skills(EXAMPLES)
    assert list(skills.skills) == ["commit-messages", "csv-reports", "python-tests"]
    assert skills.skills["python-tests"].files() == ["checklist.md"]
    assert "- csv-reports: Turn a CSV file" in skills.system_prompt()


@pytest.mark.parametrize("n", [3, 30])
def test_on_demand_costs_a_fraction_of_everything_in_the_prompt(tmp_path, n):
    tokens = Skills(many(tmp_path, n)).tokens()
    assert tokens["on_demand"] * 4 < tokens["everything"]  # measured: see the closing note of issue 31
    print(n, tokens)


def test_loading_a_skill_and_its_file(tmp_path):
    skills = Skills(EXAMPLES)
    body = skills.load("python-tests")
    assert body.startswith("# Fixing a failing Python test") and "checklist.md" in body
    assert skills.load("python-tests", "checklist.md").startswith("Before reporting a fix")
    assert skills.loaded == ["python-tests"]
    with pytest.raises(ValueError, match="not a file of the skill"):
        skills.load("python-tests", "../csv-reports/SKILL.md")
    with pytest.raises(ValueError, match="no skill named 'deploy'; the skills are: commit-messages"):
        skills.load("deploy")


def test_through_the_registry(tmp_path):
    tools = miniagent.ToolRegistry([Skills(EXAMPLES).tool()])
    result = tools.run({"type": "tool_use", "id": "t", "name": "load_skill", "input": {"name": "nope"}})
    assert result["is_error"] and "expected one of" in result["content"]  # the schema's enum names them


@pytest.mark.parametrize("text,problem", [
    ("name: x\n", "front matter block"),
    ("---\nname: Bad_Name\ndescription: d\n---\nbody", "lowercase letters"),
    ("---\nname: other\ndescription: d\n---\nbody", "folder's name"),
    ("---\nname: s\n---\nbody", "description must say"),
    ("---\nname: s\ndescription: " + "x" * 1025 + "\n---\n", "at most 1024"),
    ("---\nname s\n---\n", "key: value"),
])
def test_a_malformed_skill_is_refused_with_its_file_named(tmp_path, text, problem):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "SKILL.md").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=problem) as caught:
        parse(tmp_path / "s" / "SKILL.md")
    assert "SKILL.md" in str(caught.value)
