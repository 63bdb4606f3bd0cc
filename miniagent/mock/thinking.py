"""Extended thinking in the mock (wire-format §5.D): thinking blocks and their signatures.

With `thinking: {"type": "enabled", "budget_tokens": N}` or `{"type": "adaptive"}` a
response starts with a `thinking` block: `{"type": "thinking", "thinking": "...",
"signature": "..."}`. With `"display": "omitted"` its text is empty, but the thinking
still happened: it is billed as output tokens and its signature still stands for it.

The real API signs every thinking block (the signature is an encrypted copy of the full
thinking) and refuses a block that comes back changed. The mock signs with an HMAC
instead: its signature holds the display mode, the number of tokens the full thinking
took, a digest of the full thinking and a MAC over all of that and the text shown. The
key is fixed and written below, so it protects nothing: it only lets the mock notice a
changed block, or a signature that is not its own, as the API would. The same thinking
always gets the same signature (the mock is deterministic).

The brain writes a *draft* block (`draft()`, the full text and the display mode) and
`seal()` turns it into the block the response carries, after `max_tokens` has had its
say (`cut()`): a draft is never sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
from typing import Any

from miniagent.tokens import estimate_block, estimate_text

# Public on purpose: a checksum key, not a credential. Changing it invalidates every
# thinking block the mock has signed before.
SECRET = b"miniagent offline mock: thinking signature v1"
_MAGIC = b"MOCK\x01"
_MODES = {"summarized": 0, "omitted": 1}
_HEADER = struct.Struct(">5sBI12s")  # magic, mode, tokens of the full thinking, digest of it
_MAC_BYTES = 16


def settings(body: dict) -> dict | None:
    """`{"display": ..., "budget": N or None}` when the request turns thinking on, else None.

    Read defensively: the schema pass has checked the shape (or will), and a shape it let
    through unchecked must not make the brain fail.
    """
    config = body.get("thinking")
    if not isinstance(config, dict) or config.get("type") not in ("enabled", "adaptive"):
        return None
    display = config.get("display") if config.get("display") in _MODES else "summarized"
    budget = config.get("budget_tokens") if config.get("type") == "enabled" else None
    if isinstance(budget, bool) or not isinstance(budget, int):
        budget = None
    return {"display": display, "budget": budget}


def is_on(body: dict) -> bool:
    return settings(body) is not None


# --- drafts and blocks ---------------------------------------------------------------------------


def draft(full: str, display: str) -> dict:
    """The brain's thinking before limits apply: the full text, and how it will be shown."""
    return {"type": "thinking", "thinking": full, "signature": None, "display": display}


def is_draft(block: dict) -> bool:
    return block.get("type") == "thinking" and block.get("signature") is None and "display" in block


def seal(block: dict) -> dict:
    """The block a response carries for a draft: the text shown (none if omitted) and its signature."""
    if not is_draft(block):
        return block
    full, display = block["thinking"], block["display"]
    shown = "" if display == "omitted" else full
    return {"type": "thinking", "thinking": shown, "signature": sign(full, shown, display)}


def cut(block: dict, budget: int) -> dict | None:
    """A draft whose thinking fits `budget` tokens (the longest start of it), or None if nothing fits."""
    full = block["thinking"]
    lo, hi = 0, len(full)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if estimate_text(full[:mid]) <= budget else (lo, mid - 1)
    text = full[:lo].rstrip()
    return {**block, "thinking": text} if text else None


# --- signatures ------------------------------------------------------------------------------------


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate sent back must not crash the check


def sign(full: str, shown: str, display: str) -> str:
    """The signature of a thinking block: see the module's docstring for what it holds."""
    header = _HEADER.pack(_MAGIC, _MODES[display], estimate_text(full), hashlib.sha256(_utf8(full)).digest()[:12])
    mac = hmac.new(SECRET, header + _utf8(shown), hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.b64encode(header + mac).decode("ascii")


def _opened(block: dict) -> tuple[int, int, bytes] | None:
    """(mode, tokens, digest) of a block whose signature is the mock's and matches its text; else None."""
    signature, shown = block.get("signature"), block.get("thinking")
    if not isinstance(signature, str) or not isinstance(shown, str) or len(signature) > 200:
        return None
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != _HEADER.size + _MAC_BYTES:
        return None
    header, mac = raw[:_HEADER.size], raw[_HEADER.size:]
    magic, mode, tokens, digest = _HEADER.unpack(header)
    if magic != _MAGIC or mode not in _MODES.values():
        return None
    if not hmac.compare_digest(mac, hmac.new(SECRET, header + _utf8(shown), hashlib.sha256).digest()[:_MAC_BYTES]):
        return None
    if (mode == _MODES["omitted"] and shown) or \
            (mode == _MODES["summarized"] and hashlib.sha256(_utf8(shown)).digest()[:12] != digest):
        return None
    return mode, tokens, digest


def verify(block: dict) -> bool:
    """Whether a thinking block sent back is one the mock signed, unchanged."""
    return _opened(block) is not None


# --- what thinking costs -----------------------------------------------------------------------------


def block_tokens(block: Any) -> int:
    """Output tokens of a response block. A thinking block costs its full thinking, shown or not
    (the signature says how much a mock-signed one took); every other block what `tokens` says."""
    if not isinstance(block, dict):
        return 0
    if block.get("type") == "thinking":
        if is_draft(block):
            return estimate_text(block["thinking"])
        opened = _opened(block)
        if opened is not None:
            return opened[1]
        return estimate_text(block.get("thinking") if isinstance(block.get("thinking"), str) else "")
    return estimate_block(block)


def output_tokens(content: list) -> int:
    """`usage.output_tokens` of a response's content (equal to `tokens.estimate_content` without thinking)."""
    return sum(block_tokens(b) for b in content)
