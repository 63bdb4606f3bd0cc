"""A session that outlives its process (notebook 15): the conversation, the plan and what it cost,
in one JSON file written after every turn, and loaded by a new process to go on where it stopped.

    session = Session.open("work/session.json", agent)      # a new file, or the one a crash left
    session.ask("Fix the failing test.")                      # a turn: run, then save

The file is written to a temporary name and renamed over the old one (`os.replace`, atomic on
every OS we run on), so a process killed mid-write leaves the last whole session, never half of
one. A file that is not a session (not JSON, another version, a history the API would refuse)
is refused with a message naming it, and left untouched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from miniagent.messages import conversation_error
from miniagent.planning import write_whole

VERSION = 1


class Session:
    """An agent whose history, plan and usage are saved to `path` after each turn."""

    def __init__(self, path: str | Path, agent: Any, plan: Any = None) -> None:
        self.path, self.agent, self.plan = Path(path), agent, plan
        self.turns = 0
        self.tokens = {"input": 0, "output": 0}  # of the turns before this process, and of this one's

    @classmethod
    def open(cls, path: str | Path, agent: Any, plan: Any = None) -> "Session":
        """The session saved at `path` (its history, plan and counts restored into `agent` and `plan`),
        or a new one when there is no file yet."""
        session = cls(path, agent, plan)
        if not session.path.exists():
            return session
        try:
            saved = json.loads(session.path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{session.path} is not a saved session (not JSON: {exc})") from None
        if not isinstance(saved, dict) or saved.get("version") != VERSION:
            raise ValueError(f"{session.path} is not a version-{VERSION} session file")
        history = saved.get("history")
        problem = _shape_error(history) or (conversation_error(history) if history else None)
        if problem:
            raise ValueError(f"{session.path}: its history would be refused by the API: {problem}")
        agent.history = history or []
        session.turns = int(saved.get("turns", 0))
        session.tokens = {k: int(saved.get("tokens", {}).get(k, 0)) for k in ("input", "output")}
        if plan is not None:
            plan.steps = list(saved.get("plan", []))
        return session

    def ask(self, question: str) -> Any:
        """One turn: the agent runs on the saved history, then the session is saved (even when it failed)."""
        before = self.agent.client.usage.input_tokens, self.agent.client.usage.output_tokens
        try:
            return self.agent.run(question)
        finally:
            self.turns += 1
            self.tokens["input"] += self.agent.client.usage.input_tokens - before[0]
            self.tokens["output"] += self.agent.client.usage.output_tokens - before[1]
            self.save()

    def save(self) -> Path:
        """Write the session atomically: a temporary file, then a rename over the old one."""
        data = {"version": VERSION, "turns": self.turns, "tokens": self.tokens, "history": self.agent.history,
                "plan": self.plan.steps if self.plan is not None else []}
        return write_whole(self.path, json.dumps(data, ensure_ascii=False, indent=1))


def _shape_error(history: Any) -> str | None:
    """What is wrong with a saved history's shape (conversation_error assumes sound messages), or None."""
    if not isinstance(history, list):
        return "history is not a list"
    for i, message in enumerate(history):
        if (not isinstance(message, dict) or message.get("role") not in ("user", "assistant")
                or not isinstance(message.get("content"), (str, list))):
            return f"message {i} is not a user or assistant message with content"
    return None
