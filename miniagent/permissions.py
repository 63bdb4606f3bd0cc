"""Rules that allow, ask or deny a tool call before it runs (notebook 14), as coding agents write them.

    rules = Permissions(allow=["bash(python -m pytest*)", "str_replace_based_edit_tool(view *)"],
                        deny=["bash(rm *)", "bash(curl *)"], ask=["str_replace_based_edit_tool(create *)"])
    agent = miniagent.Agent(llm, tools, approve=rules.approver(person))

A rule is `Tool` (every call of it) or `Tool(pattern)`, the pattern a shell-style wildcard
(`*`, `?`) matched against the call's subject: a shell command's text, an editor call's
"command path", or any other tool's arguments as compact JSON. `*` alone is every tool.

Deciding one call: a deny rule that matches wins; else an ask rule; else an allow rule; else
`default` ("ask"). A shell command is split at `;`, `&&`, `||`, `|`, `&` and newlines first, and
every part must be allowed for the whole to be: `git status; rm -rf ~` is not allowed by
`bash(git status*)`, and any part a deny rule matches denies all of it. A command with `$(`,
a backquote or `<(` runs a command the rules cannot see, so no allow rule covers it: it is asked.

The decision reaches the model through the approval path of notebook 10: every tool the rules
govern is marked `needs_approval`, and `approver(person)` answers for the rules, asking
`person` only when the decision is "ask" (no person: the call is refused, and the model told).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

SHELL_TOOLS = {"bash"}
EDITOR_TOOLS = {"str_replace_based_edit_tool"}
EFFECTS = ("deny", "ask", "allow")  # the order a decision looks in: deny wins
_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*?-]+)(?:\((?P<pattern>.*)\))?", re.DOTALL)
_SPLIT = re.compile(r"\|\||&&|[;|\n]|(?<![<>])&(?!>)")  # `&` but not in a redirection (2>&1, &>file)
_HIDDEN = ("$(", "`", "<(", ">(")


@dataclass(frozen=True)
class Rule:
    effect: str
    tool: str
    pattern: str | None  # None: every call of the tool

    @classmethod
    def parse(cls, effect: str, text: str) -> "Rule":
        match = _RULE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise ValueError(f"a rule is Tool or Tool(pattern), e.g. bash(git status*), not {text!r}")
        return cls(effect, match["tool"], match["pattern"])

    def matches(self, name: str, subject: str) -> bool:
        return fnmatch.fnmatchcase(name, self.tool) and (self.pattern is None or fnmatch.fnmatchcase(subject, self.pattern))

    def __str__(self) -> str:
        return f"{self.effect} {self.tool}" + (f"({self.pattern})" if self.pattern is not None else "")


@dataclass(frozen=True)
class Decision:
    effect: str          # allow, ask or deny
    rule: Rule | None    # the rule that decided (None: the default)
    subject: str
    note: str = ""       # why, when no rule decided and it was not simply the default

    def reason(self) -> str:
        if self.rule:
            return f"{self.effect} by the rule {self.rule}"
        return f"{self.effect} ({self.note or 'no rule matched: the default'})"


def subject_of(name: str, arguments: Any) -> str:
    """What a rule's pattern is matched against for one call."""
    if not isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False, default=str)
    if name in SHELL_TOOLS:
        return str(arguments.get("command", ""))
    if name in EDITOR_TOOLS:  # the path as the workspace reads it: ./.env, sub/../.env and /work/.env are .env
        path = posixpath.normpath(str(arguments.get("path", ""))) if arguments.get("path") else ""
        path = path[len("/work/"):] if path.startswith("/work/") else path
        return f"{arguments.get('command', '')} {path}"
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)


def shell_parts(command: str) -> list[str]:
    """A shell command's simple commands, split at ; && || | & and newlines (quotes are not parsed: a
    separator inside quotes splits too, which can only make a decision stricter)."""
    return [part.strip() for part in _SPLIT.split(command) if part.strip()]


class Permissions:
    """Allow, ask and deny rules, and a default for a call no rule matches."""

    def __init__(self, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = (),
                 default: str = "ask") -> None:
        if default not in EFFECTS:
            raise ValueError(f"default is one of {', '.join(EFFECTS)}, not {default!r}")
        self.rules = [Rule.parse(effect, text) for effect, texts in (("deny", deny), ("ask", ask), ("allow", allow))
                      for text in ([texts] if isinstance(texts, str) else texts)]
        self.default = default
        self.decisions: list[Decision] = []  # every call decided, in order: what the rules stopped

    def decide(self, name: str, arguments: Any) -> Decision:
        """The decision for one call, recorded in `decisions`."""
        decision = self._decide(str(name), subject_of(str(name), arguments))
        self.decisions.append(decision)
        return decision

    def _decide(self, name: str, subject: str) -> Decision:
        if name in SHELL_TOOLS:
            parts = shell_parts(subject) or [subject]
            for effect in ("deny", "ask"):  # any part denied (or to be asked) decides the whole
                for part in [subject, *parts]:
                    if rule := self._first(effect, name, part):
                        return Decision(effect, rule, subject)
            if any(hidden in subject for hidden in _HIDDEN):  # a command inside: no rule can vouch for it
                return Decision("deny" if self.default == "deny" else "ask", None, subject,
                                "it runs a command inside $( ), backquotes or <( ), which no rule can see")
            rules = [self._first("allow", name, part) for part in parts]
            if all(rules):
                return Decision("allow", rules[0], subject)
            return Decision(self.default, None, subject)
        for effect in EFFECTS:
            if rule := self._first(effect, name, subject):
                return Decision(effect, rule, subject)
        return Decision(self.default, None, subject)

    def _first(self, effect: str, name: str, subject: str) -> Rule | None:
        return next((r for r in self.rules if r.effect == effect and r.matches(name, subject)), None)

    def approver(self, person: Callable[[dict], Any] | None = None) -> Callable[[dict], Any]:
        """An `approve` callback (notebook 10's path) that answers for the rules and asks `person` on "ask"."""
        def approve(call: dict) -> Any:
            decision = self.decide(call.get("name"), call.get("input"))
            if decision.effect == "allow":
                return True
            if decision.effect == "deny":
                return f"refused: {decision.reason()}"
            if person is None:
                return f"refused: {decision.reason()}, and nobody was there to ask"
            return person(call)
        return approve

    def stopped(self) -> list[Decision]:
        """The decisions that stopped a call without asking (deny)."""
        return [d for d in self.decisions if d.effect == "deny"]
