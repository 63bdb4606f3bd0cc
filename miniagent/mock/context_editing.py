"""Server-side context editing (beta `context-management-2025-06-27`), as the mock serves it (notebook 15).

A request may carry

    "context_management": {"edits": [{"type": "clear_tool_uses_20250919",
        "trigger": {"type": "input_tokens", "value": 30000},      # default 100,000
        "keep": {"type": "tool_uses", "value": 3},                 # default 3
        "clear_at_least": {"type": "input_tokens", "value": 5000}, # optional
        "exclude_tools": ["update_plan"],                          # optional
        "clear_tool_inputs": false}]}                              # or true, or a list of tool names

When the request's input tokens reach the trigger, the results of the oldest tool uses (all but the
last `keep`, and none of an excluded tool) are replaced by a placeholder before the model reads the
request, and usage counts what is left. If that frees fewer tokens than `clear_at_least`, nothing is
cleared. The client keeps its full history: the edit is made on the server, on every request, so
the client sends the same conversation as ever. The response says what was done:

    "context_management": {"applied_edits": [{"type": "clear_tool_uses_20250919",
                                              "cleared_tool_uses": 8, "cleared_input_tokens": 12345}]}

`clear_thinking_20251015` (keep the thinking of the last `keep.value` assistant turns, 1 by default,
or "all") is served the same way. Without the beta header, the API refuses `context_management`
(validation does that). The placeholder's words are the mock's own: the real API's are not published.
"""

from __future__ import annotations

import copy
from typing import Any

from miniagent.tokens import estimate_request

BETA = "context-management-2025-06-27"
CLEAR_TOOL_USES, CLEAR_THINKING = "clear_tool_uses_20250919", "clear_thinking_20251015"
PLACEHOLDER = "[this tool result was cleared by context management to save space]"


def apply(body: dict, betas: list[str]) -> tuple[dict, list[dict] | None]:
    """(the body the model reads, the applied edits), or (body, None) when the request asks for none.
    The body given is never changed: an edit that applies works on a copy."""
    config = body.get("context_management")
    if not isinstance(config, dict) or BETA not in betas:
        return body, None
    edits = {CLEAR_TOOL_USES: _clear_tool_uses, CLEAR_THINKING: _clear_thinking}
    applied = []
    for edit in config.get("edits") or []:
        done = edits[edit["type"]](body, edit) if edit.get("type") in edits else None
        if done is not None:
            body, record = done
            applied.append(record)
    return body, applied


def _value(spec: Any, default: Any) -> Any:
    return spec.get("value", default) if isinstance(spec, dict) else default


def _blocks(body: dict, role: str, kind: str) -> list[dict]:
    """The `kind` blocks of the `role` messages, in order."""
    return [block for message in body["messages"] if message.get("role") == role
            and isinstance(message.get("content"), list) for block in message["content"]
            if isinstance(block, dict) and block.get("type") == kind]


def _clear_tool_uses(body: dict, edit: dict) -> tuple[dict, dict] | None:
    before = estimate_request(body)
    if before < _value(edit.get("trigger"), 100_000):
        return None
    edited = copy.deepcopy(body)
    keep, excluded = _value(edit.get("keep"), 3), set(edit.get("exclude_tools") or [])
    inputs = edit.get("clear_tool_inputs", False)
    uses = [use for use in _blocks(edited, "assistant", "tool_use") if use.get("name") not in excluded]
    results = {result.get("tool_use_id"): result for result in _blocks(edited, "user", "tool_result")}
    oldest = [use for use in uses if use.get("id") in results][:max(0, len(uses) - keep)]
    for use in oldest:
        results[use["id"]]["content"] = PLACEHOLDER
        if inputs is True or (isinstance(inputs, list) and use.get("name") in inputs):
            use["input"] = {}
    cleared = before - estimate_request(edited)
    if not oldest or cleared < _value(edit.get("clear_at_least"), 0):
        return None  # not worth clearing: the request as it came
    return edited, {"type": CLEAR_TOOL_USES, "cleared_tool_uses": len(oldest), "cleared_input_tokens": max(0, cleared)}


def _clear_thinking(body: dict, edit: dict) -> tuple[dict, dict] | None:
    keep = edit.get("keep")
    if "all" in (keep, _value(keep, 1)):  # "all", or {"type": "thinking_turns", "value": "all"}
        return None
    edited = copy.deepcopy(body)
    thought = ("thinking", "redacted_thinking")
    turns = [m for m in edited["messages"] if m.get("role") == "assistant" and isinstance(m.get("content"), list)
             and any(isinstance(b, dict) and b.get("type") in thought for b in m["content"])]
    cleared_turns = turns[:max(0, len(turns) - int(_value(keep, 1)))]
    if not cleared_turns:
        return None
    for message in cleared_turns:
        message["content"] = [b for b in message["content"] if not (isinstance(b, dict) and b.get("type") in thought)]
    return edited, {"type": CLEAR_THINKING, "cleared_thinking_turns": len(cleared_turns),
                    "cleared_input_tokens": max(0, estimate_request(body) - estimate_request(edited))}
