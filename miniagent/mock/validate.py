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

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from miniagent.messages import blocks, conversation_error, merge_turns
from miniagent.mock import caching, structured, thinking
from miniagent.mock.schema import (TOOL_NAME_PATTERN, TOOL_USE_ID_PATTERN, Reject, check_schema,  # noqa: F401
                                   known_betas)
from miniagent.tokens import estimate_request

if TYPE_CHECKING:
    from miniagent.mock.models import Catalog

SUPPORTED_VERSIONS = ("2023-06-01", "2026-10-21")

# The real cap is per model (e.g. 64000 for some, 128000 for others): the mock applies the
# catalog's (models.py) when it knows the model's, and else the most generous current cap.
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
                     strict_alternation: bool = False, models: Catalog | None = None,
                     betas: Iterable[str] = ()) -> ApiError | None:
    """The error the real API would return for this request body, or None if it is valid.

    `version` is the request's `anthropic-version` header; `count_tokens` selects
    the schema of `POST /v1/messages/count_tokens`; `strict_alternation` restores
    the old rule that roles must alternate instead of being merged. `models`: the
    catalog (models.py) of the models served: a model it does not serve is the API's
    404 right after the schema pass, and `max_tokens` is capped at the model's limit;
    None (the default): any model name, and one generous cap. `betas`: the names of the
    `anthropic-beta` header (`parse_betas`); with any, the beta shapes apply.
    """
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"version must be one of {SUPPORTED_VERSIONS}, got {version!r}")
    betas = list(betas)
    unknown_betas = beta_error(betas)
    if unknown_betas:
        return unknown_betas
    try:
        check_schema(body, version, count_tokens, beta=bool(betas))
        if models is not None and (unknown := models.check(body["model"])):
            return unknown
        cap = (models.max_tokens(body["model"]) if models is not None else None) or MAX_TOKENS_CAP
        _check_rules(body, count_tokens, strict_alternation, cap)
    except Reject as reject:
        return ApiError(400, "invalid_request_error", str(reject))
    return None


def parse_betas(header: str | None) -> tuple[list[str], ApiError | None]:
    """The names an `anthropic-beta` header lists (comma-separated), and the API's 400 if it
    names one the mock does not know (the pinned SDK's `AnthropicBetaParam`, and a few more:
    schema.ALSO_KNOWN_BETAS)."""
    names = [n.strip() for n in (header or "").split(",") if n.strip()]
    return names, beta_error(names)


_BETA_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*-[0-9]{4}-[0-9]{2}-[0-9]{2}")


def beta_error(names: list[str]) -> ApiError | None:
    """The API's 400 for the names it does not know, if any."""
    unknown = [n for n in dict.fromkeys(names) if n not in known_betas()]
    if not unknown:
        return None
    # the API's text. A value is quoted back only if it has the form of a beta name
    # (`feature-name-YYYY-MM-DD`): a key pasted here by mistake must not be
    listed = ", ".join(f"`{n}`" if _BETA_NAME.fullmatch(n) else "(a value that is not a beta name)"
                       for n in unknown[:20])
    return ApiError(400, "invalid_request_error",
                    f"Unexpected value(s) {listed} for the `anthropic-beta` header. Please consult our "
                    "documentation at docs.claude.com or try again without the header.")


def _with_content(messages: list[dict]) -> list[dict]:
    """The messages as the conversation rules read them. A beta `system` message may carry
    only `output_config` (no `content`): it stands there as a one-word text, so that the rules
    (which read every message's content) neither fail on it nor count it as empty."""
    return [m if "content" in m else {**m, "content": [{"type": "text", "text": "(output_config)"}]}
            for m in messages]


# --- pass 2: rules beyond the schema ----------------------------------------------------


def _check_rules(body: dict, count_tokens: bool, strict_alternation: bool, cap: int = MAX_TOKENS_CAP) -> None:
    names = [tool["name"] for tool in body.get("tools") or [] if "name" in tool]  # an MCP toolset has none
    if len(set(names)) != len(names):
        raise Reject("tools: Tool names must be unique.")
    _check_tool_choice_target(body.get("tool_choice"), names)
    if not count_tokens:
        max_tokens = body["max_tokens"]
        if max_tokens < 0:
            raise Reject("max_tokens: Input should be greater than or equal to 0")
        if max_tokens > cap:
            raise Reject(f"max_tokens: {max_tokens} > {cap}, which is the maximum allowed "
                          f"number of output tokens for {body['model']}")
    if body.get("temperature") is not None and body.get("top_p") is not None:  # 2023-06-01 only: 2026-10-21 has neither
        # the API's words: its current models take one way of sampling or the other, not both
        raise Reject("`temperature` and `top_p` cannot both be specified for this model. Please use only one.")
    _check_thinking_settings(body, count_tokens)
    messages = body["messages"]
    if len(messages) > MAX_MESSAGES:
        raise Reject(f"messages: List should have at most {MAX_MESSAGES} items after validation, "
                      f"not {len(messages)}")
    problem = conversation_error(_with_content(messages), strict_alternation=strict_alternation)
    if problem:
        raise Reject(problem)
    _check_thinking_blocks(messages, thinking.is_on(body))
    system = body.get("system")
    if isinstance(system, list) and any(isinstance(b, dict) and b.get("text") == "" for b in system):
        raise Reject("system: text content blocks must be non-empty")
    found = caching.count_breakpoints(body)
    if found > caching.MAX_BREAKPOINTS:
        raise Reject(f"A maximum of {caching.MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                      f"Found {found}.")  # the API's text
    _check_json_schemas(body)
    tokens = estimate_request(body)
    if tokens > MAX_PROMPT_TOKENS:
        raise Reject(f"prompt is too long: {tokens} tokens > {MAX_PROMPT_TOKENS} maximum")


# --- extended thinking (wire-format §5.D) --------------------------------------------------
# The texts are the API's, as seen in real responses, except where marked "ours".

THINKING_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
BUDGET_TOO_SMALL = "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
BUDGET_NOT_BELOW_MAX = ("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
                        f"at {THINKING_DOCS}#max-tokens-and-context-window-size")
FORCED_TOOL = "Thinking may not be enabled when tool_choice forces tool use."
THINKING_DISABLED = ("When thinking is disabled, an `assistant` message in the final position cannot contain "
                     "`thinking`. To use thinking blocks, enable `thinking` in your request.")
MUST_START_WITH_THINKING = (
    "{path}.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, "
    "a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` "
    "and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this "
    f"requirement, disable `thinking`. Please consult our documentation at {THINKING_DOCS}")  # "preceeding" sic
THINKING_BLOCKS = ("thinking", "redacted_thinking")


def _check_thinking_settings(body: dict, count_tokens: bool) -> None:
    """The budget's floor, room for an answer after the thinking, and no thinking when a tool is forced."""
    config = body.get("thinking")
    if not isinstance(config, dict):
        return  # absent, or a shape the schema pass answers for
    budget = config.get("budget_tokens")
    if config.get("type") == "enabled" and isinstance(budget, int) and not isinstance(budget, bool):
        if budget < 1024:
            raise Reject(BUDGET_TOO_SMALL)
        if not count_tokens and body["max_tokens"] <= budget:
            raise Reject(BUDGET_NOT_BELOW_MAX)
    choice = body.get("tool_choice")
    if thinking.is_on(body) and isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        raise Reject(FORCED_TOOL)


def _check_thinking_blocks(messages: list[dict], thinking_on: bool) -> None:
    """Thinking sent back: each block exactly as it was signed; none at the very end of an assistant
    message; none in a final assistant message when thinking is off; and, when it is on, the assistant
    turn being continued (a prefill, or the turn whose tool calls the last message answers) starts with it."""
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for j, block in enumerate(message["content"]):
            if isinstance(block, dict) and block.get("type") == "thinking" and not thinking.verify(block):
                raise Reject(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
    last = len(messages) - 1
    final = messages[last] if messages else {}
    final_blocks = blocks(final.get("content")) if final.get("role") == "assistant" else []
    if final_blocks and final_blocks[-1].get("type") in THINKING_BLOCKS:
        raise Reject(f"messages.{last}: The final block in an assistant message cannot be `thinking`.")
    if not thinking_on:
        if any(b.get("type") in THINKING_BLOCKS for b in final_blocks):
            raise Reject(THINKING_DISABLED)
        return
    turns = merge_turns([m if "content" in m else {**m, "content": []} for m in messages])
    continued = None
    if turns and turns[-1][1] == "assistant":
        continued = turns[-1]
    elif len(turns) >= 2 and turns[-2][1] == "assistant" and turns[-1][2] \
            and turns[-1][2][0].get("type") == "tool_result":
        continued = turns[-2]
    if continued is None or not continued[2]:
        return
    first = continued[2][0].get("type")
    if first not in THINKING_BLOCKS:
        raise Reject(MUST_START_WITH_THINKING.format(path=f"messages.{continued[0]}.content.0", found=first))


# --- structured outputs (wire-format §5.C) ---------------------------------------------------
# The schema subset and its messages live in structured.py, next to the code that fills it.


def _check_json_schemas(body: dict) -> None:
    """A JSON format's schema, and every strict tool's input_schema, in the subset the API compiles."""
    if structured.both_formats(body):
        raise Reject("output_format: cannot be used together with output_config.format; use only "
                      "output_config.format (output_format is deprecated)")  # ours (the SDK says the same)
    complexity = structured.Complexity()
    fmt = structured.requested(body)
    if fmt is not None:
        problem = structured.schema_problem(fmt[1], fmt[0], complexity)
        if problem:
            raise Reject(problem)
        if _cites(body["messages"]):
            raise Reject(f"{fmt[0].rsplit('.', 1)[0]}: structured outputs cannot be used with citations; "
                          "turn citations off on the documents, or drop the JSON format")  # ours (docs: a 400)
    strict = [(i, t) for i, t in enumerate(body.get("tools") or []) if isinstance(t, dict) and t.get("strict") is True]
    if len(strict) > structured.MAX_STRICT_TOOLS:
        raise Reject(structured.TOO_COMPLEX)
    for i, tool in strict:
        problem = structured.schema_problem(tool.get("input_schema"), f"tools.{i}.custom", complexity)
        if problem:
            raise Reject(problem)
    if complexity.too_complex():
        raise Reject(structured.TOO_COMPLEX)


def _cites(messages: list[dict]) -> bool:
    """Whether a document in the conversation has citations turned on."""
    return any(isinstance(b, dict) and b.get("type") == "document" and isinstance(b.get("citations"), dict)
               and b["citations"].get("enabled") is True for m in messages for b in blocks(m.get("content")))


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
