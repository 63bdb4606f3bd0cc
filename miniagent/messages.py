"""Messages: plain dicts in the Anthropic Messages format, and the rules they obey.

A conversation is a list of `{"role": "user" | "assistant", "content": ...}` dicts,
exactly as they go over the wire. `content` is a string or a list of blocks
(`text`, `tool_use`, `tool_result`, `image`). This module builds them, reads them,
and says why the API would reject a list of them (`conversation_error`), in the
API's own words. The strict mock uses the same function, so a bug found here
offline is the bug the real API would report.
"""

from __future__ import annotations

from typing import Any

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


def tool_results(message: dict) -> list[dict]:
    return [b for b in blocks(message.get("content")) if b.get("type") == "tool_result"]


def result_text(block: dict) -> str:
    """The text inside a `tool_result` block (its content may be a string or blocks)."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


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
