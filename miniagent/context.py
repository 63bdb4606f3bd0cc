"""Context policies: which part of a growing history each model call gets to see.

Every call resends the whole history, so turn k costs about k times a turn's
tokens and n turns cost about n squared / 2. A policy bounds that with two hooks
the agent loop calls:

- `view(messages)`, before each model call: the list to send. It never changes
  its input, so the agent keeps the full history and only the request shrinks.
  (The article's `trimMessages` trims the only copy: what it drops is gone.) The
  view shares the message dicts with the history: treat it as read-only.
- `on_tool_results(results)`, with one turn's `tool_result` blocks before they
  enter the history: shrink a huge output once instead of on every later call.

A cut must leave a conversation the API accepts: a `tool_result` whose
`tool_use` was dropped (or the reverse) is a 400. `safe_cuts` finds where a
history may be cut, and the windows only cut there.

Policies, from light to heavy: `NaiveWindow` (the article's, kept to show its
bug), `SlidingWindow` (in messages), `TokenBudget` (in tokens), `Summarize`
(older turns replaced by a model-written summary), `TruncateToolResults` and
`SummarizeToolResults` (long tool output shrunk on arrival). `Compose` chains
them. Each counts what it did (`stats()`), so a notebook can show the savings.
(Notebook 09's `StructuredMemory`, a window that keeps the facts it would drop in a
small block every view carries, is in `miniagent/memory/structured.py`.)
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable

from miniagent.messages import blocks, result_text, text_block, text_of, user
from miniagent.tokens import estimate_message, estimate_messages, estimate_text
from miniagent.tools import truncate_text

SUMMARY_HEADER = "[Summary of the earlier conversation]"
ANCHOR_HEADER = "[The conversation began with this message]"

SUMMARY_SYSTEM = (
    "You compress conversations so that an AI assistant can continue them with less context. "
    "You write only the summary, in the language of the conversation."
)
SUMMARY_INSTRUCTIONS = (
    "Summarise the conversation below so that the summary can replace it. Keep:\n"
    "- every fact the user stated (their name, preferences, constraints) and every decision made;\n"
    "- what the user wants and any open questions or unfinished tasks;\n"
    "- the key tool results (values, names, numbers) and which tool gave them.\n"
    "Leave out greetings and repetition. Write short plain sentences, no preamble."
)
TOOL_SUMMARY_INSTRUCTIONS = (
    "Summarise this tool output for an AI assistant that needs its content to answer the user. "
    "Keep every number, name, date, error message and conclusion; drop boilerplate and repetition. "
    "Write the summary only."
)


# --- where a history may be cut ----------------------------------------------------


def _is(block: Any, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def _has(message: dict, kind: str) -> bool:
    return any(_is(b, kind) for b in blocks(message.get("content")))


def safe_cuts(messages: list[dict]) -> list[int]:
    """Every k for which `[messages[0]] + messages[k:]` is still a valid conversation.

    Assumes `messages` is valid and starts with a user message (the anchor).
    k = 1 drops nothing and is always safe. Past that, the API merges consecutive
    same-role messages into one turn, so a cut is judged by the turn it lands in:
    - a user message merges with the anchor; if it carries `tool_result` blocks,
      their `tool_use` is gone: unsafe;
    - an assistant message is unsafe if an earlier part of its turn (dropped by
      the cut) holds a `tool_use`: the next turn's results would answer nothing.
    In increasing order: the first cut keeps the most, the last the least.
    """
    if len(messages) < 2:
        return []
    cuts = [1]
    use_before = False  # a tool_use earlier in the assistant turn that messages[k] belongs to
    for k in range(2, len(messages)):
        message, previous = messages[k], messages[k - 1]
        if message["role"] == "user":  # tool_results open their turn, so this message would hold them
            use_before = False
            if not _has(message, "tool_result"):
                cuts.append(k)
        else:
            use_before = previous["role"] == "assistant" and (use_before or _has(previous, "tool_use"))
            if not use_before:
                cuts.append(k)
    return cuts


def _window(messages: list[dict], fits: Callable[[int], bool]) -> tuple[list[dict], bool]:
    """(view, overflow): the anchor plus the longest tail that fits, cut at a safe point.

    `fits(k)` says whether `[messages[0]] + messages[k:]` is small enough. When no
    cut fits, the view is the smallest valid one (the anchor plus the last
    indivisible unit) and overflow is True: an oversized request may still be
    served, an invalid one is a certain 400.
    """
    if not messages:
        return [], False
    cuts = safe_cuts(messages) or [len(messages)]  # one message: the anchor alone
    chosen = next((k for k in cuts if fits(k)), None)
    k = cuts[-1] if chosen is None else chosen
    return [messages[0], *messages[k:]], chosen is None


def _checked(messages: Any, who: str) -> list[dict]:
    if not isinstance(messages, list):
        raise TypeError(f"{who}.view() takes the list of message dicts, got {type(messages).__name__}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant") or "content" not in m:
            raise ValueError(f"{who}: messages[{i}] is not a message dict with role 'user' or 'assistant' and a "
                             f"'content' (got {_clip(repr(m))}); "
                             "build messages with miniagent.messages.user()/assistant()")
    if messages and messages[0]["role"] != "user":
        raise ValueError(f"{who}: the history must start with a user message (the anchor every view keeps), "
                         f"but messages[0] has role {messages[0]['role']!r}")
    return messages


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _positive_int(value: Any, name: str, minimum: int = 1) -> int:
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _needs_create(client: Any, who: str) -> Any:
    if not callable(getattr(client, "create", None)):
        raise TypeError(f"{who} needs a client with a create(messages=..., system=..., max_tokens=...) method, "
                        f"such as miniagent.connect(); got {type(client).__name__}")
    return client


def _ask_for_summary(client: Any, prompt: str, system: str, max_tokens: int) -> tuple[str, int]:
    """(summary, tokens the call cost): input + output from its `usage`, estimated if absent."""
    response = client.create(messages=[user(prompt)], system=system, max_tokens=max_tokens)
    summary = text_of(response).strip() or "(the model returned an empty summary)"
    usage = response.get("usage") or {}
    if "input_tokens" in usage or "output_tokens" in usage:
        return summary, int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
    return summary, estimate_text(prompt) + estimate_text(summary)


# --- the policies --------------------------------------------------------------------


class Policy:
    """Both hooks as no-ops: send everything, keep tool output as it is. Subclasses override what they change."""

    COUNTERS: tuple[str, ...] = ("calls",)  # the attributes stats() reports

    def __init__(self) -> None:
        self.calls = 0

    def view(self, messages: list[dict]) -> list[dict]:
        self.calls += 1
        return list(messages)

    def on_tool_results(self, results: list[dict]) -> list[dict]:
        return list(results)

    def describe(self) -> str:
        return "Policy: sends the whole history every call"

    def stats(self) -> dict[str, Any]:
        """What the policy has done so far, e.g. {'calls': 12, 'dropped_messages': 40}."""
        return {name: getattr(self, name) for name in self.COUNTERS}

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


class NaiveWindow(Policy):
    """The article's `trimMessages`, exactly: the first message plus the last `max_turns * 2 - 1`.

    Kept as a teaching exhibit, because it is wrong: it counts messages without
    looking at them, so the cut can fall between a `tool_use` and its
    `tool_result`, and the API (and the strict mock) answers 400 ("unexpected
    `tool_use_id` found in `tool_result` blocks"). Use `SlidingWindow` instead.
    """

    COUNTERS = ("calls", "dropped_messages")

    def __init__(self, max_turns: int):
        super().__init__()
        self.max_turns = _positive_int(max_turns, "max_turns")
        self.dropped_messages = 0

    def view(self, messages: list[dict]) -> list[dict]:
        self.calls += 1
        if len(messages) <= self.max_turns * 2:
            return list(messages)
        view = [messages[0], *messages[len(messages) - (self.max_turns * 2 - 1):]]
        self.dropped_messages += len(messages) - len(view)
        return view

    def describe(self) -> str:
        kept = self.max_turns * 2 - 1
        return f"NaiveWindow(max_turns={self.max_turns}): first + last {kept} messages, blind to tool pairs"


class SlidingWindow(Policy):
    """The first user message plus the most recent messages, at most `max_messages` in all.

    Pair-safe: it cuts only where `safe_cuts` allows, keeping a message or two
    fewer than the limit if it must. If even the anchor plus the last indivisible
    unit (the last user turn, or the last tool_use turn and its results) is too
    long, that minimal view is sent anyway and `last_overflow` is True.
    """

    COUNTERS = ("calls", "dropped_messages", "overflows")

    def __init__(self, max_messages: int):
        super().__init__()
        self.max_messages = _positive_int(max_messages, "max_messages", minimum=2)
        self.dropped_messages = 0
        self.overflows = 0
        self.last_overflow = False

    def view(self, messages: list[dict]) -> list[dict]:
        messages = _checked(messages, "SlidingWindow")
        self.calls += 1
        n = len(messages)
        view, self.last_overflow = _window(messages, lambda k: 1 + n - k <= self.max_messages)
        self.dropped_messages += len(messages) - len(view)
        self.overflows += self.last_overflow
        return view

    def describe(self) -> str:
        return (f"SlidingWindow(max_messages={self.max_messages}): "
                "first message + recent ones, cut only between tool pairs")


class TokenBudget(Policy):
    """Like `SlidingWindow`, measured in estimated tokens instead of messages.

    The view fits `estimate_messages(view) <= max_tokens - reserve`. `reserve` is
    for what the request adds around the messages, the system prompt and the tool
    schemas (`miniagent.tokens.estimate_request` of a body with no messages gives
    it). Overflow works as in `SlidingWindow`.
    """

    COUNTERS = ("calls", "dropped_messages", "overflows", "last_tokens")

    def __init__(self, max_tokens: int, reserve: int = 0):
        super().__init__()
        self.max_tokens = _positive_int(max_tokens, "max_tokens")
        if not isinstance(reserve, int) or not 0 <= reserve < max_tokens:
            raise ValueError(f"reserve must be an int with 0 <= reserve < max_tokens ({max_tokens}), got {reserve!r}")
        self.reserve = reserve
        self.dropped_messages = 0
        self.overflows = 0
        self.last_overflow = False
        self.last_tokens = 0

    @property
    def budget(self) -> int:
        return self.max_tokens - self.reserve

    def view(self, messages: list[dict]) -> list[dict]:
        messages = _checked(messages, "TokenBudget")
        self.calls += 1
        sizes = [estimate_message(m) for m in messages]
        view, self.last_overflow = _window(messages, lambda k: sizes[0] + sum(sizes[k:]) <= self.budget)
        self.last_tokens = estimate_messages(view)
        self.dropped_messages += len(messages) - len(view)
        self.overflows += self.last_overflow
        return view

    def describe(self) -> str:
        reserve = f" - reserve {self.reserve}" if self.reserve else ""
        return (f"TokenBudget(max_tokens={self.max_tokens}{reserve}): "
                "first message + recent ones within the token budget")


def transcript(messages: list[dict], tool_output: bool = True) -> str:
    """The messages as plain text for a summarising prompt: who said what, which tools ran.

    With `tool_output=False`, only what the user and the assistant wrote (no tool calls or results).
    """
    names: dict[str, str] = {}
    lines = []
    for m in messages:
        who = "User" if m["role"] == "user" else "Assistant"
        for b in blocks(m["content"]):
            kind = b.get("type")
            if kind == "text":
                lines.append(f"{who}: {b.get('text', '')}")
            elif not tool_output:
                continue
            elif kind == "tool_use":
                names[b.get("id", "")] = b.get("name", "?")
                args = json.dumps(b.get("input", {}), ensure_ascii=False)
                lines.append(f"Assistant called tool {b.get('name')} with {args}")
            elif kind == "tool_result":
                name = names.get(b.get("tool_use_id", ""), "a tool")
                label = "Error from" if b.get("is_error") else "Result of"
                lines.append(f"{label} {name}: {result_text(b)}")
            else:
                lines.append(f"{who}: [{kind} block]")
    return "\n".join(lines)


def summary_prompt(previous: str | None, messages: list[dict]) -> str:
    """The prompt that asks the model to fold `messages` (and an earlier summary) into one summary."""
    parts = [SUMMARY_INSTRUCTIONS]
    if previous:
        parts.append(f"<previous_summary>\n{previous}\n</previous_summary>")
    parts.append(f"<conversation>\n{transcript(messages)}\n</conversation>")
    return "\n\n".join(parts)


class Summarize(Policy):
    """Older turns replaced by one summary the model writes; recent turns kept verbatim.

    When the unsummarised part of the history passes `trigger_tokens`, the oldest
    messages are folded into the summary, leaving about `keep_recent_tokens` of
    recent history (cut at a safe point). The view is then one user message holding
    the summary and the first user message verbatim (the task everything else
    serves), followed by the kept turns.

    A summary costs a model call, so it is cached with the number of messages it
    covers, and remade (from the old summary plus the newly old turns) only when
    the part after it passes the trigger again. One instance serves one
    conversation: shown another one (a different first message, or a shorter
    history), it forgets its summary. If the call fails, the exception propagates
    and the cache is left as it was.
    """

    COUNTERS = ("calls", "summaries_made", "summary_tokens", "covered")

    def __init__(self, client: Any, trigger_tokens: int, keep_recent_tokens: int, *,
                 max_summary_tokens: int = 600, system: str = SUMMARY_SYSTEM):
        super().__init__()
        self.client = _needs_create(client, "Summarize")
        self.trigger_tokens = _positive_int(trigger_tokens, "trigger_tokens")
        if not isinstance(keep_recent_tokens, int) or not 0 <= keep_recent_tokens < trigger_tokens:
            raise ValueError(f"keep_recent_tokens must be an int with 0 <= keep_recent_tokens < trigger_tokens "
                             f"({trigger_tokens}), got {keep_recent_tokens!r}; "
                             "otherwise every call would summarise again")
        self.keep_recent_tokens = keep_recent_tokens
        self.max_summary_tokens = _positive_int(max_summary_tokens, "max_summary_tokens")
        self.system = system
        self.summaries_made = 0
        self.summary_tokens = 0
        self.summary: str | None = None
        self.covered = 0  # history messages[:covered] are represented by the summary
        self._anchor: dict | None = None
        self._last_covered: dict | None = None

    def view(self, messages: list[dict]) -> list[dict]:
        messages = _checked(messages, "Summarize")
        self.calls += 1
        if not self._same_conversation(messages):
            self.reset()
        if estimate_messages(messages[self.covered:]) > self.trigger_tokens:
            cut = self._next_cut(messages)
            if cut:
                self._summarise(messages, cut)
        if not self.covered:
            return list(messages)
        return [self.summary_message(messages[0]), *messages[self.covered:]]

    def summary_message(self, anchor: dict) -> dict:
        """The user message that stands for history[:covered]: the summary, then the first message."""
        head = f"{SUMMARY_HEADER}\n{self.summary}\n\n{ANCHOR_HEADER}\n"
        content = anchor["content"]
        if isinstance(content, str):
            return user(head + content)
        return user([text_block(head.rstrip()), *content])

    def reset(self) -> None:
        """Forget the summary (the counters stay)."""
        self.summary, self.covered, self._anchor, self._last_covered = None, 0, None, None

    def _same_conversation(self, messages: list[dict]) -> bool:
        """Whether `messages` still begins with the history the summary covers (copies kept in _summarise)."""
        if not self.covered:
            return True
        return (len(messages) > self.covered and messages[0] == self._anchor
                and messages[self.covered - 1] == self._last_covered)

    def _next_cut(self, messages: list[dict]) -> int:
        """Where the new summary should end: keep ~keep_recent_tokens; 0 if no cut moves forward.

        A cut at a user question (a turn boundary) is preferred, so a question stays
        with the tool calls that answer it. Only a turn too long to keep is cut
        between its tool rounds.
        """
        later = [k for k in safe_cuts(messages) if k > max(self.covered, 1)]
        tail = {k: estimate_messages(messages[k:]) for k in later}
        turns = [k for k in later if messages[k]["role"] == "user"]
        # In order of preference: which cuts, leaving at most how many tokens.
        for cuts, limit in ((turns, self.keep_recent_tokens), (turns, self.trigger_tokens),
                            (later, self.keep_recent_tokens)):
            for k in cuts:  # the first that fits keeps the most
                if tail[k] <= limit:
                    return k
        return later[-1] if later else 0

    def _summarise(self, messages: list[dict], cut: int) -> None:
        prompt = summary_prompt(self.summary, messages[self.covered:cut])
        self.summary, tokens = _ask_for_summary(self.client, prompt, self.system, self.max_summary_tokens)
        self.covered = cut
        self._anchor = copy.deepcopy(messages[0])
        self._last_covered = copy.deepcopy(messages[cut - 1])
        self.summaries_made += 1
        self.summary_tokens += tokens

    def describe(self) -> str:
        return (f"Summarize(trigger_tokens={self.trigger_tokens}, keep_recent_tokens={self.keep_recent_tokens}): "
                "older turns folded into one model-written summary")


class TruncateToolResults(Policy):
    """Long tool output cut to `max_chars` when it arrives, keeping its head and tail.

    Cutting once at the door is cheaper than paying for the full text on every
    later call. The cut is `miniagent.tools.truncate_text`'s: `head_ratio` of the
    room for the start, the rest for the end, a marker in the middle saying how
    much was left out. A result made of blocks has its text blocks joined into
    one cut text block, followed by its other blocks (images). `view` sends the
    history as it is.
    """

    COUNTERS = ("calls", "truncated_results", "chars_removed")

    def __init__(self, max_chars: int, head_ratio: float = 0.7):
        super().__init__()
        self.max_chars = _positive_int(max_chars, "max_chars", minimum=100)
        if not isinstance(head_ratio, (int, float)) or not 0 <= head_ratio <= 1:
            raise ValueError(f"head_ratio must be a number between 0 and 1, got {head_ratio!r}")
        self.head_ratio = float(head_ratio)
        self.truncated_results = 0
        self.chars_removed = 0

    def on_tool_results(self, results: list[dict]) -> list[dict]:
        return [self._cut(b) if _is(b, "tool_result") else b for b in results]

    def _cut(self, block: dict) -> dict:
        content = block.get("content", "")
        if isinstance(content, str):
            if len(content) <= self.max_chars:
                return block
            return {**block, "content": self._shorter(content)}
        if not isinstance(content, list):
            return block
        text = "\n".join(c.get("text", "") for c in content if _is(c, "text"))
        if len(text) <= self.max_chars:
            return block
        others = [c for c in content if not _is(c, "text")]
        return {**block, "content": [text_block(self._shorter(text)), *others]}

    def _shorter(self, text: str) -> str:
        cut = truncate_text(text, self.max_chars, head_ratio=self.head_ratio)
        self.truncated_results += 1
        self.chars_removed += len(text) - len(cut)
        return cut

    def describe(self) -> str:
        return f"TruncateToolResults(max_chars={self.max_chars}): long tool output cut to head + tail on arrival"


class SummarizeToolResults(Policy):
    """Long tool output replaced by a model-written summary when it arrives.

    The article's second option for big tool results: it keeps meaning that a cut
    in the middle would lose, at the price of one model call per result longer
    than `max_chars` (counted in `summaries_made` and `summary_tokens`).
    """

    COUNTERS = ("calls", "summaries_made", "summary_tokens", "chars_removed")

    def __init__(self, client: Any, max_chars: int, *, max_summary_tokens: int = 400,
                 system: str = SUMMARY_SYSTEM):
        super().__init__()
        self.client = _needs_create(client, "SummarizeToolResults")
        self.max_chars = _positive_int(max_chars, "max_chars")
        self.max_summary_tokens = _positive_int(max_summary_tokens, "max_summary_tokens")
        self.system = system
        self.summaries_made = 0
        self.summary_tokens = 0
        self.chars_removed = 0

    def on_tool_results(self, results: list[dict]) -> list[dict]:
        return [self._summarise(b) if _is(b, "tool_result") else b for b in results]

    def _summarise(self, block: dict) -> dict:
        text = result_text(block)
        if len(text) <= self.max_chars:
            return block
        prompt = f"{TOOL_SUMMARY_INSTRUCTIONS}\n\n<tool_output>\n{text}\n</tool_output>"
        summary, tokens = _ask_for_summary(self.client, prompt, self.system, self.max_summary_tokens)
        new = f"[Summary of a {len(text):,}-character tool result]\n{summary}"
        self.summaries_made += 1
        self.summary_tokens += tokens
        self.chars_removed += len(text) - len(new)
        content = block["content"] if isinstance(block.get("content"), list) else []
        others = [c for c in content if isinstance(c, dict) and c.get("type") != "text"]
        return {**block, "content": [text_block(new), *others] if others else new}

    def describe(self) -> str:
        return f"SummarizeToolResults(max_chars={self.max_chars}): long tool output summarised by the model on arrival"


class Compose(Policy):
    """Several policies in a row: each hook runs the policies in the order given.

    `Compose(TruncateToolResults(2000), TokenBudget(8000))` cuts tool output as it
    arrives, then windows the history by tokens. For `view`, order matters: each
    policy sees what the previous one returned. Put `Summarize` first: its cached
    summary is tied to positions in the full history.
    """

    def __init__(self, *policies: Any):
        super().__init__()
        if not policies:
            raise ValueError("Compose needs at least one policy, "
                             "e.g. Compose(TruncateToolResults(2000), SlidingWindow(20))")
        for i, p in enumerate(policies):
            if not (callable(getattr(p, "view", None)) and callable(getattr(p, "on_tool_results", None))):
                raise TypeError(f"Compose: argument {i} ({type(p).__name__}) "
                                "has no view() and on_tool_results() methods")
        self.policies = policies

    def view(self, messages: list[dict]) -> list[dict]:
        self.calls += 1
        for p in self.policies:
            messages = p.view(messages)
        return messages

    def on_tool_results(self, results: list[dict]) -> list[dict]:
        for p in self.policies:
            results = p.on_tool_results(results)
        return results

    @property
    def last_overflow(self) -> bool:
        """True if any window in the chain could not fit its last view."""
        return any(getattr(p, "last_overflow", False) for p in self.policies)

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"calls": self.calls}
        for p in self.policies:
            for name, value in p.stats().items():
                out[f"{type(p).__name__}.{name}"] = value
        return out

    def describe(self) -> str:
        return "Compose: " + " -> ".join(p.describe().split(":")[0] for p in self.policies)
