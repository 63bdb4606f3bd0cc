"""A plan the model keeps: a todo list it writes first and checks off as it works.

Coding agents keep one (Claude Code's todo list, Codex's plan tool). The plan is a tool,
`update_plan(steps)`, so the model writes it in the same way it does everything else,
and its latest version sits near the end of the context, where the model reads it
again before each step. For you it is a progress bar and a check: a run whose plan
still has open steps did not finish the task, whatever its last message says.

Notebook 10 measures what a plan costs (model calls and tokens) against the same task
without one, and counts success by the plan and by the answer.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from miniagent.messages import clean_text
from miniagent.tools import Tool

MAX_STEPS = 50
MAX_STEP_CHARS = 200

PLAN_SCHEMA = {"type": "object", "properties": {"steps": {
    "type": "array", "description": "Every step of the task, in order.",
    "items": {"type": "object", "properties": {"step": {"type": "string"}, "done": {"type": "boolean"}},
              "required": ["step", "done"]}}},
    "required": ["steps"]}
PLAN_DESCRIPTION = ("Write your plan for the task as a list of steps, and keep it up to date: call it first with "
                    "every step (done: false), and again when you have finished steps, marking them done. "
                    "The latest plan is what remains to do.")


# Control characters (a newline could fake a checked line; ESC drives a terminal) and the
# invisible ones that reorder or hide text (bidi marks, overrides and isolates, line separators);
# the zero-width (non-)joiners stay: emoji sequences and some scripts need them.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u200b\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]+")


def _one_line(text: str) -> str:
    """A step's text as one clean line: control and invisible characters become spaces, runs of space one."""
    return " ".join(_UNPRINTABLE.sub(" ", clean_text(text)).split())


def write_whole(path: Path, text: str) -> Path:
    """Write `text` to `path` whole or not at all: a temporary file, then renamed over the old one
    (`os.replace` is atomic), so a process killed mid-write leaves the last whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writing = path.with_name(path.name + ".writing")
    writing.write_text(text, encoding="utf-8")
    os.replace(writing, path)
    return path


class Plan:
    """The latest plan the model wrote (`steps`), how often it changed it, and the tool to change it.

    With `path` (notebook 15), every update is also written there as a checklist (a temporary
    file renamed over the old one), so a person, or the next session, can read where the work
    stands; `Plan.load(path)` reads such a file back.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.steps: list[dict] = []
        self.updates = 0
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self.tool = Tool("update_plan", PLAN_DESCRIPTION, PLAN_SCHEMA, self.update)

    @classmethod
    def load(cls, path: str | Path) -> "Plan":
        """The plan written at `path` by a Plan with that path (an empty plan if there is no file yet)."""
        plan = cls(path)
        if plan.path.exists():
            for line in plan.path.read_text(encoding="utf-8").splitlines()[1:]:
                if re.fullmatch(r"\[[ x]\] .+", line):
                    plan.steps.append({"step": line[4:], "done": line[1] == "x"})
        return plan

    def update(self, steps: list[dict]) -> str:
        """The tool's function: replace the plan with `steps` and return it as a checklist."""
        if len(steps) > MAX_STEPS:
            raise ValueError(f"a plan holds at most {MAX_STEPS} steps, got {len(steps)}; merge some")
        cleaned = [{"step": _one_line(s["step"])[:MAX_STEP_CHARS].strip(), "done": s["done"]} for s in steps]
        if any(not s["step"] for s in cleaned):
            raise ValueError("every step needs some text")
        with self._lock:
            self.steps, self.updates = cleaned, self.updates + 1
            if self.path is not None:
                write_whole(self.path, self.render() + "\n")
        return self.render()

    @property
    def done(self) -> int:
        return sum(s["done"] for s in self.steps)

    @property
    def complete(self) -> bool:
        """Whether there is a plan and every step of it is checked off."""
        return bool(self.steps) and self.done == len(self.steps)

    def render(self) -> str:
        if not self.steps:
            return "Plan: (no steps yet)"
        lines = [f"Plan: {self.done} of {len(self.steps)} done"]
        lines += [f"[{'x' if s['done'] else ' '}] {s['step']}" for s in self.steps]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.render()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.render())
