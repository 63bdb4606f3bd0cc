"""Skills loaded on demand (notebook 15): what the model is told up front is each skill's name and one
line; the instructions themselves are read when it asks.

A skill is a folder holding `SKILL.md`, which opens with a front matter block

    ---
    name: csv-reports
    description: Turn a CSV file into a short report with totals per column. Use when asked to summarise a CSV.
    ---
    (the instructions: any Markdown, as long as needed)

and may hold other files (templates, scripts, examples) the instructions mention. `name` is 1-64
lowercase letters, digits and hyphens, and the folder's own name; `description` is one line of at most
1,024 characters, saying what the skill does and when to use it. The model sees `system_prompt()`;
it calls `load_skill(name)` for the instructions and the list of files, and `load_skill(name, file)`
for one of them. A file outside the skill's folder is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from miniagent.tokens import estimate_text
from miniagent.tools import Tool

NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
MAX_DESCRIPTION = 1024
MAX_FILE_CHARS = 20_000


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*")
                      if p.is_file() and p.name != "SKILL.md")


def parse(path: Path) -> Skill:
    """The skill whose SKILL.md is at `path`; ValueError naming the file and what is wrong."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---" or "---" not in (line.strip() for line in lines[1:]):
        raise ValueError(f"{path}: SKILL.md must open with a front matter block between two --- lines")
    end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    fields = {}
    for line in lines[1:end]:
        if line.strip():
            key, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"{path}: a front matter line is `key: value`, not {line.strip()!r}")
            fields[key.strip()] = value.strip().strip("\"'")
    name, description = fields.get("name", ""), fields.get("description", "")
    if not NAME.fullmatch(name):
        raise ValueError(f"{path}: name must be 1-64 lowercase letters, digits and hyphens, not {name!r}")
    if name != path.parent.name:
        raise ValueError(f"{path}: name {name!r} is not its folder's name {path.parent.name!r}")
    if not description or len(description) > MAX_DESCRIPTION:
        raise ValueError(f"{path}: description must say in one line (at most {MAX_DESCRIPTION} characters) "
                         "what the skill does and when to use it")
    return Skill(name, description, "\n".join(lines[end + 1:]).strip() + "\n", path.parent)


class Skills:
    """The skills in a folder (one sub-folder each), loaded on demand."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        found = [parse(p) for p in sorted(self.folder.glob("*/SKILL.md"))]
        self.skills = {s.name: s for s in found}
        self.loaded: list[str] = []  # the skills the model asked for, in order

    def __len__(self) -> int:
        return len(self.skills)

    def system_prompt(self) -> str:
        """What the model is told up front: each skill's name and description, and how to load one."""
        listed = "\n".join(f"- {s.name}: {s.description}" for s in self.skills.values())
        return ("You have skills: instructions for particular tasks, loaded when needed. Before a task a skill "
                f"covers, call load_skill with its name and follow what it says.\n{listed}")

    def everything_prompt(self) -> str:
        """The alternative: every skill's instructions in the system prompt, used or not."""
        return "\n\n".join(f"# Skill: {s.name}\n{s.description}\n\n{s.body}" for s in self.skills.values())

    def tokens(self) -> dict[str, int]:
        """The system prompt's tokens on demand and with everything in it (miniagent.tokens' estimate)."""
        return {"on_demand": estimate_text(self.system_prompt()), "everything": estimate_text(self.everything_prompt())}

    def load(self, name: str, file: str | None = None) -> str:
        skill = self.skills.get(name)
        if skill is None:
            raise ValueError(f"no skill named {name!r}; the skills are: {', '.join(self.skills) or '(none)'}")
        if file is None:
            self.loaded.append(name)
            files = skill.files()
            listed = ("\n\nFiles of this skill (load_skill with file= to read one): " + ", ".join(files)) if files else ""
            return skill.body + listed
        target = (skill.folder / file).resolve()
        if skill.folder.resolve() not in target.parents or not target.is_file():
            raise ValueError(f"{file!r} is not a file of the skill {name}; its files: {', '.join(skill.files()) or '(none)'}")
        text = target.read_text(encoding="utf-8", errors="replace")
        return text if len(text) <= MAX_FILE_CHARS else text[:MAX_FILE_CHARS] + "\n[clipped]"

    def tool(self) -> Tool:
        schema = {"type": "object", "properties": {
            "name": {"type": "string", "enum": list(self.skills), "description": "the skill's name"},
            "file": {"type": "string", "description": "one of the skill's files, to read it (optional)"}},
            "required": ["name"], "additionalProperties": False}
        return Tool("load_skill", "Load a skill's instructions (or one of its files) before the task it covers.",
                    schema, lambda name, file=None: self.load(name, file))
