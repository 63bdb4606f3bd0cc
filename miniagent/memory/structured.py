"""Structured memory: the facts a tight window would forget, kept in a small block every view carries.

A context policy (notebook 09) built on notebook 04's windows: `StructuredMemory` wraps
one of `miniagent.context`'s policies and, before the window drops a message it has
not read, asks the model for the facts stated there (`key: value` lines). Where
`Memory` (this folder's `__init__.py`) keeps facts across conversations, this keeps
them within one.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from miniagent.context import Compose, Policy, _checked, _clip, _needs_create, _positive_int, transcript
from miniagent.messages import text_block, text_of, user
from miniagent.tokens import estimate_text


MEMORY_HEADER = "[Facts established earlier in this conversation (a later message overrides them)]"
FACTS_SYSTEM = (
    "You keep a short list of facts for an AI assistant, so that it still knows them when older messages "
    "are dropped from its context. You write only the list."
)
FACTS_INSTRUCTIONS = (
    "Read the conversation below and find the facts the assistant must keep knowing: what the user "
    "said about themselves (their name, preferences, constraints) and decisions that were made. "
    "Not questions, not tool output, not small talk.\n"
    "Reply with one fact per line as `key: value`: the key a few lowercase words (such as name, "
    "preference, deadline), the value short. Give only facts that are new or changed: reuse a known "
    "fact's key to change it, and write `key: (forget)` for a known fact that no longer holds. "
    "If there is nothing new, reply `none`."
)
FORGET = "(forget)"
_FACT_LINE = re.compile(r"^\s*(?:[-*•]\s*)?`?([A-Za-z][\w .'/-]{0,39}?)`?\s*[:：]\s*(.*?)\s*`?\s*$")
_FORGET_VALUES = {"(forget)", "forget", "(forgotten)", "(removed)", "(none)", "(deleted)"}


def fact_key(key: Any) -> str:
    """A fact's key as the memory stores it: lowercase words joined by '_' ("Favourite colour": "favourite_colour")."""
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z][\w .'/-]{0,39}", key.strip()):
        raise ValueError(f"a fact's key must be a few words (letters first, at most 40 characters), got {key!r}")
    return "_".join(key.strip().lower().split())


def parse_facts(reply: str) -> dict[str, str | None]:
    """The `key: value` lines of a model's reply, in order: value None means forget the key.

    Lines that are not `key: value` (a preamble, "none", a mock's "(mock)" line) are
    ignored, so a reply the model got wrong changes nothing rather than wiping the memory.
    """
    out: dict[str, str | None] = {}
    for line in reply.splitlines():
        m = _FACT_LINE.match(line)
        if not m or not m.group(2) or m.group(1).strip().lower() == "none":
            continue
        value = m.group(2).strip().strip("`").strip()
        out[fact_key(m.group(1))] = None if value.lower() in _FORGET_VALUES else value
    return out


def facts_prompt(known: dict[str, str], messages: list[dict]) -> str:
    """The prompt that asks the model for the facts `messages` state that `known` lacks or changes."""
    parts = [FACTS_INSTRUCTIONS]
    if known:
        parts.append("<known_facts>\n" + "\n".join(f"{k}: {v}" for k, v in known.items()) + "\n</known_facts>")
    parts.append(f"<conversation>\n{transcript(messages, tool_output=False)}\n</conversation>")
    return "\n\n".join(parts)


class StructuredMemory(Policy):
    """A small block of facts (key -> value) that every view carries, around an inner window.

    A tight window forgets what the user said long ago (their name, a preference,
    a decision). This policy keeps those facts in a bounded block and puts the block
    into every view the `inner` policy returns, so the window can stay tight.

    **Where the facts come from**: a cheap extraction call, as `Summarize` makes a
    summary. Just before the inner window first drops a message the memory has not
    read, one call gives the model the conversation's text since the last read (user
    and assistant text only: tool output is what the window and truncation are for)
    and the facts known so far, and asks for the new or changed facts as `key: value`
    lines (`key: (forget)` to remove one). It then reads everything up to the end of
    the history, so the next call comes only when the window has moved past all of
    that: about one call per window's worth of turns, and none while nothing is
    dropped. Every message is thus either in the view or already read. This works
    the same live and offline (the mock lists the facts it reads in the transcript,
    as it summarises when asked to), needs no tool the model must remember to call,
    and its calls count in `extraction_tokens` and in the client's usage. If a call
    fails, the exception propagates and nothing counts as read. A reply line that is
    not `key: value` is ignored, so a confused reply changes nothing.
    `remember(key, value)` and `forget(key)` set facts directly (e.g. from a tool).

    **Where the block goes**: a text block appended to the first user message of the
    view. That message is the one every window keeps, so the block is always
    there; adding a block to an existing message never changes the view's shape, so
    a view the inner policy made valid stays valid (no new turn to alternate, no
    tool pair to split). After the first message's own text, not before it: the
    model reads the conversation in order, so the opening message < the block (facts
    up to the cut) < the recent messages, each overriding the one before, which is
    the order in which the facts were stated. The system prompt would read better,
    but a policy sees only the messages.

    **Bounds**: at most `max_facts` keys, values clipped to `max_value_chars`, and
    the block kept within `max_tokens` (estimated): when a new fact does not fit,
    the least recently set ones are dropped (`evicted`). Reserve `max_tokens` in a
    `TokenBudget` inner window. One instance serves one conversation: shown another
    one (a different first message or a shorter history), it forgets its facts.
    """

    COUNTERS = ("calls", "extractions", "extraction_tokens", "largest_extraction", "facts_set", "evicted",
                "block_tokens")

    def __init__(self, client: Any, inner: Any, *, max_tokens: int = 200, max_facts: int = 12,
                 max_value_chars: int = 120, max_reply_tokens: int = 300, system: str = FACTS_SYSTEM):
        super().__init__()
        self.client = _needs_create(client, "StructuredMemory")
        if not (callable(getattr(inner, "view", None)) and callable(getattr(inner, "on_tool_results", None))):
            raise TypeError(f"StructuredMemory: inner must be a context policy such as SlidingWindow(20), "
                            f"got {type(inner).__name__}")
        self.inner = inner
        self.max_tokens = _positive_int(max_tokens, "max_tokens", minimum=64)  # the header and a fact or two
        self.max_facts = _positive_int(max_facts, "max_facts")
        self.max_value_chars = _positive_int(max_value_chars, "max_value_chars", minimum=10)
        self.max_reply_tokens = _positive_int(max_reply_tokens, "max_reply_tokens")
        self.system = system
        self.facts: dict[str, str] = {}  # in the order they were last set: the oldest is evicted first
        self.extractions = self.extraction_tokens = self.largest_extraction = 0
        self.facts_set = self.evicted = self.block_tokens = 0
        self.read = 1  # history messages[1:read] have been read (messages[0] is in every view)
        self._anchor: dict | None = None
        self._last_read: dict | None = None

    # the facts

    def remember(self, key: str, value: str) -> None:
        """Set a fact (a new value replaces the old one and counts as the newest); an empty value forgets it."""
        key = fact_key(key)
        if not isinstance(value, str):
            raise TypeError(f"a fact's value must be a str, got {type(value).__name__}")
        value = " ".join(value.split())
        if not value:
            return self.forget(key)
        self.facts.pop(key, None)
        self.facts[key] = _clip(value, self.max_value_chars)
        self.facts_set += 1
        while len(self.facts) > self.max_facts or (len(self.facts) > 1 and self._block_size() > self.max_tokens):
            del self.facts[next(iter(self.facts))]
            self.evicted += 1
        full, n = self.facts[key], len(self.facts[key])
        while n > 10 and self._block_size() > self.max_tokens:  # one fact alone too long: clip it to fit
            n = n * 3 // 4
            self.facts[key] = full[:n].rstrip() + "..."

    def forget(self, key: str) -> None:
        """Remove a fact, if it is there."""
        self.facts.pop(fact_key(key), None)

    def block(self) -> str | None:
        """The text every view carries, or None when no fact is known."""
        if not self.facts:
            return None
        return MEMORY_HEADER + "\n" + "\n".join(f"- {k}: {v}" for k, v in self.facts.items())

    def _block_size(self) -> int:
        return estimate_text(self.block() or "")

    # the hooks

    def view(self, messages: list[dict]) -> list[dict]:
        messages = _checked(messages, "StructuredMemory")
        self.calls += 1
        if not self._same_conversation(messages):
            self.reset()
        view = self.inner.view(messages)
        if self._first_kept(messages, view) > self.read:  # an unread message is being dropped: read first
            self._extract(messages)
        return self.with_block(view)

    def on_tool_results(self, results: list[dict]) -> list[dict]:
        return self.inner.on_tool_results(results)

    def with_block(self, view: list[dict]) -> list[dict]:
        """`view` with the block appended to its first message (a new dict; the view is not changed)."""
        block = self.block()
        self.block_tokens = estimate_text(block) if block else 0
        if not block or not view:
            return view
        first, content = view[0], view[0]["content"]
        if isinstance(content, str):
            new = f"{content}\n\n{block}" if content else block
        else:
            new = [*content, text_block(block)]
        return [{**first, "content": new}, *view[1:]]

    @property
    def last_overflow(self) -> bool:
        return bool(getattr(self.inner, "last_overflow", False))

    def reset(self) -> None:
        """Forget the facts and what was read (the counters stay)."""
        self.facts, self.read, self._anchor, self._last_read = {}, 1, None, None

    def _same_conversation(self, messages: list[dict]) -> bool:
        if self._anchor is None:
            return True
        return (len(messages) >= self.read and messages[0] == self._anchor
                and messages[self.read - 1] == self._last_read)

    @staticmethod
    def _first_kept(messages: list[dict], view: list[dict]) -> int:
        """The index in `messages` of the first message the view keeps after its first one; everything
        before it (but messages[0]) was dropped. If the inner policy rewrote the messages it kept,
        assume all may be gone."""
        if len(view) < 2:
            return len(messages)
        for j in range(len(messages) - 1, 0, -1):  # a window keeps a tail: search from the end
            if messages[j] is view[1]:
                return j
        return len(messages)

    def _extract(self, messages: list[dict]) -> None:
        new = messages[self.read:]
        if transcript(new, tool_output=False).strip():
            prompt = facts_prompt(self.facts, new)
            response = self.client.create(messages=[user(prompt)], system=self.system,
                                          max_tokens=self.max_reply_tokens)
            usage = response.get("usage") or {}
            sent = int(usage.get("input_tokens", estimate_text(prompt) + estimate_text(self.system)))
            self.extractions += 1
            self.extraction_tokens += sent + int(usage.get("output_tokens", 0))
            self.largest_extraction = max(self.largest_extraction, sent)
            for key, value in parse_facts(text_of(response)).items():
                if value is None:
                    self.forget(key)
                else:
                    self.remember(key, value)
        self.read = len(messages)
        self._anchor = copy.deepcopy(messages[0])
        self._last_read = copy.deepcopy(messages[-1])

    def stats(self) -> dict[str, Any]:
        out = super().stats() | {"facts": len(self.facts)}
        for name, value in self.inner.stats().items():
            out[f"{type(self.inner).__name__}.{name}"] = value
        return out

    def describe(self) -> str:
        head, _, rest = self.inner.describe().partition(": ")
        inner = rest if isinstance(self.inner, Compose) else head  # Compose: its chain
        return (f"StructuredMemory(max_tokens={self.max_tokens}, max_facts={self.max_facts}) around {inner}: "
                "a block of stated facts in every view")
