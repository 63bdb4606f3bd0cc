"""Request validation: would the real Messages API accept this body?

The real API validates a request in two passes. First a schema pass (the API is
built on pydantic, hence messages like `max_tokens: Field required` and
`<path>: Extra inputs are not permitted`): every field present, of the right type,
no unknown keys at any depth; that pass is `schema.py`. Then rules the schema cannot express: unique tool
names, `max_tokens` limits, the conversation rules (tool pairing, non-empty
content...), and the prompt's length. The first problem found is reported, as a
400 `invalid_request_error` whose message names the path of the offending value.

This module does the same, in the same order, and returns an `ApiError` (or None).
It checks by API version: on `2026-10-21` the sampling parameters `temperature`,
`top_p` and `top_k` are no longer part of the schema, so they are rejected like
any other unknown key.

Error texts follow the real API where we have seen it (see wire-format.md §1.4);
where we have not (a mock-only limitation, say), the message says what to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from miniagent.messages import conversation_error
from miniagent.mock.schema import TOOL_NAME_PATTERN, TOOL_USE_ID_PATTERN, Reject, check_schema  # noqa: F401
from miniagent.tokens import estimate_request

SUPPORTED_VERSIONS = ("2023-06-01", "2026-10-21")

# The real cap is per model (e.g. 64000 for some, 128000 for others); the mock
# accepts any model name, so it applies the most generous current cap to all.
MAX_TOKENS_CAP = 128_000
MAX_MESSAGES = 100_000
MAX_PROMPT_TOKENS = 200_000


@dataclass(frozen=True)
class ApiError:
    """An error the API would answer with: HTTP status, `error.type`, `error.message`."""

    status: int
    type: str
    message: str


def validate_request(body: Any, *, version: str, count_tokens: bool = False,
                     strict_alternation: bool = False) -> ApiError | None:
    """The error the real API would return for this request body, or None if it is valid.

    `version` is the request's `anthropic-version` header; `count_tokens` selects
    the schema of `POST /v1/messages/count_tokens`; `strict_alternation` restores
    the old rule that roles must alternate instead of being merged.
    """
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"version must be one of {SUPPORTED_VERSIONS}, got {version!r}")
    try:
        check_schema(body, version, count_tokens)
        _check_rules(body, count_tokens, strict_alternation)
    except Reject as reject:
        return ApiError(400, "invalid_request_error", str(reject))
    return None


# --- pass 2: rules beyond the schema ----------------------------------------------------


def _check_rules(body: dict, count_tokens: bool, strict_alternation: bool) -> None:
    names = [tool["name"] for tool in body.get("tools") or []]
    if len(set(names)) != len(names):
        raise Reject("tools: Tool names must be unique.")
    _check_tool_choice_target(body.get("tool_choice"), names)
    if not count_tokens:
        max_tokens = body["max_tokens"]
        if max_tokens < 0:
            raise Reject("max_tokens: Input should be greater than or equal to 0")
        if max_tokens > MAX_TOKENS_CAP:
            raise Reject(f"max_tokens: {max_tokens} > {MAX_TOKENS_CAP}, which is the maximum allowed "
                          f"number of output tokens for {body['model']}")
    messages = body["messages"]
    if len(messages) > MAX_MESSAGES:
        raise Reject(f"messages: List should have at most {MAX_MESSAGES} items after validation, "
                      f"not {len(messages)}")
    problem = conversation_error(messages, strict_alternation=strict_alternation)
    if problem:
        raise Reject(problem)
    system = body.get("system")
    if isinstance(system, list) and any(b["text"] == "" for b in system):
        raise Reject("system: text content blocks must be non-empty")
    tokens = estimate_request(body)
    if tokens > MAX_PROMPT_TOKENS:
        raise Reject(f"prompt is too long: {tokens} tokens > {MAX_PROMPT_TOKENS} maximum")


def _check_tool_choice_target(choice: dict | None, names: list[str]) -> None:
    """`any` and `tool` force a tool call, so there must be a tool to call (our wording)."""
    if not choice or choice["type"] not in ("any", "tool"):
        return
    if not names:
        raise Reject(f"tool_choice: `{choice['type']}` forces a tool call but the request has no "
                      "`tools`; add the tools or drop tool_choice")
    if choice["type"] == "tool" and choice["name"] not in names:
        raise Reject(f"tool_choice.tool.name: no tool named {choice['name']!r} in `tools` "
                      f"(defined: {', '.join(names)})")
