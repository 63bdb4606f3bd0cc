"""A deterministic token estimate.

Real tokenizers are model-specific and not public, so miniagent uses a rule a
reader can check by hand. The mock API reports `usage` with it, and the context
policies budget with it, so offline the two always agree; live, compare it with
the `usage` the API returns (notebook 04 does).

The rule:
- text: one token per CJK character, one token per 4 other characters (rounded up);
- a message: its blocks plus 4 tokens of framing (role, separators);
- a `tool_use` block: its name and the compact JSON of its input, plus 8;
- a `tool_result` block: its text content, plus 8;
- an image: 1,600 tokens (roughly what a 1-megapixel image costs);
- a request: system prompt + messages + the compact JSON of the tools + 3.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")

MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 8
IMAGE_TOKENS = 1600
REQUEST_OVERHEAD = 3


def estimate_text(text: str) -> int:
    """Tokens in a piece of text: CJK characters count 1 each, others 1 per 4."""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def estimate_block(block: dict) -> int:
    kind = block.get("type")
    if kind == "text":
        return estimate_text(block.get("text", ""))
    if kind == "tool_use":
        return BLOCK_OVERHEAD + estimate_text(block.get("name", "") + _compact(block.get("input", {})))
    if kind == "tool_result":
        return BLOCK_OVERHEAD + estimate_content(block.get("content", ""))
    if kind == "image":
        return IMAGE_TOKENS
    return estimate_text(_compact(block))


def estimate_content(content: str | list | None) -> int:
    """Tokens in a message's `content`: a string or a list of blocks."""
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_text(content)
    return sum(estimate_block(b) for b in content if isinstance(b, dict))


def estimate_message(message: dict) -> int:
    return MESSAGE_OVERHEAD + estimate_content(message.get("content"))


def estimate_messages(messages: list[dict]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_request(body: dict) -> int:
    """Input tokens of a Messages API request body: what `usage.input_tokens` reports offline."""
    total = REQUEST_OVERHEAD + estimate_messages(body.get("messages") or [])
    system = body.get("system")
    if system:
        total += estimate_content(system)
    if body.get("tools"):
        total += estimate_text(_compact(body["tools"]))
    return total
