"""Messages: plain dicts in the Anthropic Messages format, and the rules they obey.

A conversation is a list of `{"role": "user" | "assistant", "content": ...}` dicts,
exactly as they go over the wire. `content` is a string or a list of blocks
(`text`, `tool_use`, `tool_result`, `image`). This module builds them, reads them,
and says why the API would reject a list of them (`conversation_error`), in the
API's own words. The strict mock uses the same function, so a bug found here
offline is the bug the real API would report. `storable_content` makes whatever a
response holds safe to keep in a history that will be sent again.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# The real API's pattern for tool_use ids (used with fullmatch).
TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
SURROGATE = re.compile("[\ud800-\udfff]")

# The block types a response can hold, as the pinned SDK (anthropic 2.14) lists them;
# its ContentBlockParam accepts each of them back in an assistant message. Server tools
# added since (`*_tool_use`, `*_tool_result`) are kept too: see storable_content.
RESPONSE_BLOCK_TYPES = frozenset({
    "text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
    "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload",
})


# --- building -------------------------------------------------------------------


def user(content: str | list) -> dict:
    return {"role": "user", "content": content}


def assistant(content: str | list) -> dict:
    return {"role": "assistant", "content": content}


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_result(tool_use_id: str, content: str | list, is_error: bool = False) -> dict:
    """A `tool_result` block answering the `tool_use` block with id `tool_use_id`."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


# --- reading --------------------------------------------------------------------


def blocks(content: str | list | None) -> list[dict]:
    """A message's content as a list of blocks (a string is shorthand for one text block)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [text_block(content)]
    return list(content)


def text_of(message: dict) -> str:
    """The text of a message or response: its text blocks joined."""
    return "".join(b.get("text", "") for b in blocks(message.get("content")) if b.get("type") == "text")


def tool_uses(message: dict) -> list[dict]:
    """The `tool_use` blocks of a message or response, in order."""
    return [b for b in blocks(message.get("content")) if b.get("type") == "tool_use"]


def what_it_did(response: dict, limit: int = 80) -> str:
    """One line saying what a response did, for a cell whose model did not do what the lesson
    expected (a real model, a small one most of all, often answers in words instead of calling
    the tool): 'called get_weather {"city": "Paris"} (stop_reason tool_use)', or 'answered without
    calling a tool (stop_reason end_turn): "Bonjour…"'. Long text is cut at `limit` characters."""
    def clip(text: str) -> str:
        text = " ".join(text.split())
        return text if len(text) <= limit else text[:limit - 1] + "…"

    stop = f" (stop_reason {response['stop_reason']})" if response.get("stop_reason") else ""  # a response has one
    calls = tool_uses(response)
    if calls:
        named = ", ".join(f"{b.get('name')} {json.dumps(b.get('input'), ensure_ascii=False)}" for b in calls)
        return f"called {clip(named)}{stop}"
    text = text_of(response)
    said = f'"{clip(text)}"' if text.strip() else "no text at all"
    return f"answered without calling a tool{stop}: {said}"


def tool_results(message: dict) -> list[dict]:
    return [b for b in blocks(message.get("content")) if b.get("type") == "tool_result"]


def tool_use_ids(messages: list[dict]) -> set[str]:
    """The ids of every `tool_use` block in `messages` (the API wants them unique in a conversation)."""
    return {b["id"] for m in messages for b in blocks(m.get("content"))
            if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)}


def result_text(block: dict) -> str:
    """The text inside a `tool_result` block (its content may be a string or blocks)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


# --- text that can always be sent -------------------------------------------------------


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a high and a low one side by side
    become the character they encode).

    Python strings may hold lone surrogates ("\\ud800"; an undecodable byte in argv
    arrives as one), UTF-8 cannot encode them, and a request holding one cannot be sent.
    """
    if not SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def safe_str(value: Any) -> str:
    """str(value), else repr(value), else a placeholder: text for anything, never an exception.

    Both can fail: a broken `__str__`, an int of more than 4300 digits (ValueError since
    Python 3.11), a structure nested too deep. This is for boundaries that must not fail
    (a tool's result, a trace file), which is why it catches every Exception.
    """
    for show in (str, repr):
        try:
            return clean_text(str.__str__(show(value)))  # str.__str__: a plain str, even from a subclass
        except Exception:  # noqa: BLE001 - see the docstring
            continue
    return f"<{type(value).__name__} object that cannot be shown as text>"


# --- a response, made storable ---------------------------------------------------------


def storable_content(content: Any, used_ids: set[str]) -> list[dict]:
    """A copy of a response's `content` that the next request can carry back.

    The history is sent again with every call, so one bad block would make every later
    call a 400 (or unsendable). Whatever the model or a broken proxy returned:
    - strings lose their lone surrogates (UTF-8 cannot carry them) and numbers their
      NaN and infinities (JSON cannot), which become null;
    - empty or whitespace-only text blocks are dropped (the API rejects them);
    - a tool_use id that is missing, not `^[a-zA-Z0-9_-]+$`, or already used (earlier in
      this content or in `used_ids`) is replaced by a fresh one, so each tool_result
      answers exactly one call; a tool_use without a string name and an object input is
      dropped, as it could neither be run nor sent back;
    - blocks of other types are kept only if they are response blocks the API accepts
      back (`RESPONSE_BLOCK_TYPES`, and any server tool's `*_tool_use` and `*_tool_result`):
      thinking must even go back unchanged, with its signature, and server tool blocks
      carry the server's work. Anything else (an unknown type, a user-side block such as
      tool_result or image, a non-dict) is dropped: sent back, it is a 400, and no real
      response holds it;
    - a final text block loses its trailing whitespace: the history may end with this
      turn, and after `pause_turn` it is sent back as it is; the API reads a final
      assistant turn as a prefill, which must not end in whitespace.
    `used_ids` gains the ids kept. `content` itself is not modified.
    """
    if isinstance(content, str):
        content = [text_block(content)]
    stored: list[dict] = []
    for block in content if isinstance(content, list) else []:
        try:
            block = _plain(block)
        except RecursionError:  # nested too deep to send back
            continue
        if _storable(block):
            stored.append(block)
    for block in stored:
        if block["type"] == "tool_use":
            given = block.get("id")
            if not isinstance(given, str) or not TOOL_USE_ID.fullmatch(given) or given in used_ids:
                block["id"] = _fresh_id(used_ids)
            used_ids.add(block["id"])
    if stored and stored[-1]["type"] == "text":  # not blank (blank ones are gone), so never emptied
        stored[-1]["text"] = stored[-1]["text"].rstrip()
    return stored


def _storable(block: Any) -> bool:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(kind, str):
        return False
    if kind not in RESPONSE_BLOCK_TYPES and not kind.endswith(("_tool_use", "_tool_result")):
        return False
    if block["type"] == "text":
        return isinstance(block.get("text"), str) and bool(block["text"].strip())
    if block["type"] == "tool_use":
        return isinstance(block.get("name"), str) and isinstance(block.get("input"), dict)
    return True


def _plain(value: Any) -> Any:
    """A deep copy of JSON-like data that JSON and UTF-8 can carry (see storable_content)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {safe_str(k): _plain(v) for k, v in value.items()}  # JSON keys are strings
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _fresh_id(used: set[str]) -> str:
    """A valid tool_use id not in `used` (deterministic, so the same run stores the same history)."""
    n = len(used) + 1
    while f"toolu_miniagent_{n:04d}" in used:
        n += 1
    return f"toolu_miniagent_{n:04d}"


# --- the rules --------------------------------------------------------------------


def merge_turns(messages: list[dict]) -> list[tuple[int, str, list[dict]]]:
    """Consecutive same-role messages combined, as the API does before it checks them.

    Returns (index of the first original message, role, blocks) per turn.
    """
    turns: list[tuple[int, str, list[dict]]] = []
    for i, m in enumerate(messages):
        if turns and turns[-1][1] == m["role"]:
            turns[-1][2].extend(blocks(m["content"]))
        else:
            turns.append((i, m["role"], blocks(m["content"])))
    return turns


def conversation_error(messages: list[dict], *, strict_alternation: bool = False) -> str | None:
    """Why the Messages API would reject this conversation, in its words; None if it would not.

    Assumes each message is structurally sound (a dict with a valid role and content
    of the right type); `miniagent.mock.validate` checks that first. With
    `strict_alternation`, consecutive same-role messages are an error, as they were
    before the API began merging them.
    """
    if not messages:
        return "messages: at least one message is required"

    last = len(messages) - 1
    for i, m in enumerate(messages):
        content = m["content"]
        if not content and not (i == last and m["role"] == "assistant"):
            return f"messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        texts = [b.get("text", "") for b in blocks(content) if b.get("type") == "text"]
        if any(t == "" for t in texts):
            return "messages: text content blocks must be non-empty"
        if texts and all(not t.strip() for t in texts) and len(texts) == len(blocks(content)):
            return "messages: text content blocks must contain non-whitespace text"
        for j, b in enumerate(blocks(content)):
            kind = b.get("type")
            if kind == "tool_result" and m["role"] != "user":
                return f"messages.{i}.content.{j}: `tool_result` blocks can only be in `user` messages"
            if kind == "tool_use" and m["role"] != "assistant":
                return f"messages.{i}.content.{j}: `tool_use` blocks can only be in `assistant` messages"

    if strict_alternation:
        for prev, cur in zip(messages, messages[1:]):
            if prev["role"] == cur["role"]:
                r = cur["role"]
                return f'messages: roles must alternate between "user" and "assistant", but found multiple "{r}" roles in a row'

    final = messages[-1]
    if final["role"] == "assistant" and final["content"]:
        tail = blocks(final["content"])[-1]
        if tail.get("type") == "text" and tail["text"] != tail["text"].rstrip():
            return "messages: final assistant content cannot end with trailing whitespace"

    seen_ids: set[str] = set()
    turns = merge_turns(messages)
    for t, (i, role, content) in enumerate(turns):
        if role == "assistant":
            for j, b in enumerate(content):
                if b.get("type") == "tool_use":
                    if b.get("id") in seen_ids:
                        return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
                    seen_ids.add(b.get("id"))
            continue
        # A user turn: its tool_results must answer the previous assistant turn.
        asked = [b["id"] for b in turns[t - 1][2] if b.get("type") == "tool_use"] if t > 0 else []
        for j, b in enumerate(content):
            if b.get("type") == "tool_result" and b.get("tool_use_id") not in asked:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )

    for t, (i, role, content) in enumerate(turns):
        if role != "assistant":
            continue
        asked = [b["id"] for b in content if b.get("type") == "tool_use"]
        if not asked:
            continue
        answer = turns[t + 1][2] if t + 1 < len(turns) else []
        answered = [b.get("tool_use_id") for b in answer if b.get("type") == "tool_result"]
        missing = [x for x in asked if x not in answered]
        if missing:
            return (
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` "
                "block in the next message."
            )
        leading = 0
        for b in answer:
            if b.get("type") != "tool_result":
                break
            leading += 1
        if leading < len(asked):
            return (
                f"messages.{turns[t + 1][0]}: Did not find {len(asked)} `tool_result` block(s) at the "
                "beginning of this message. Messages following `tool_use` blocks must begin with a "
                "matching number of `tool_result` blocks."
            )
    return None


def is_valid(messages: list[dict]) -> bool:
    return conversation_error(messages) is None
