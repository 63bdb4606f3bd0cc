"""Property tests: on any valid conversation, every policy's view is one the API accepts.

A strategy builds random valid histories (text turns, 1-4 parallel tool calls,
results first and optionally followed by text, CJK, long outputs, sometimes a
turn spread over up to three same-role messages, sometimes ending on the assistant). For
each policy we check what the agent loop relies on: the view passes
`conversation_error` and the mock's request validator, keeps the first user
message, fits the budget whenever any valid cut would fit (and says so exactly
when none does), and leaves the history untouched.
"""

from __future__ import annotations

import copy
import random

from hypothesis import event, given, settings
from hypothesis import strategies as st

from miniagent.context import (
    ANCHOR_HEADER,
    SUMMARY_HEADER,
    Compose,
    SlidingWindow,
    Summarize,
    TokenBudget,
    TruncateToolResults,
    safe_cuts,
)
from miniagent.messages import assistant, conversation_error, result_text, text_block, text_of, tool_result, user
from miniagent.mock.validate import validate_request
from miniagent.tokens import estimate_messages

EXAMPLES = settings(max_examples=1000, deadline=None)

WORDS = ["the", "weather", "in", "Paris", "is", "18", "C", "Ada", "likes", "tea", "ok",
         "你好", "天气", "北京", "晴天", "東京", "数据", "result:", "{\"k\": 1}", "x" * 60]
# Texts are drawn from a fixed pool (one draw each, so a thousand examples stay fast).
_rng = random.Random(0)
TEXT = st.sampled_from([" ".join(_rng.choices(WORDS, k=_rng.randint(1, 25))) for _ in range(300)])
LONG_TEXT = st.tuples(TEXT, st.integers(1, 80)).map(lambda t: " ".join([t[0]] * t[1]))
TOOL_NAMES = st.sampled_from(["get_weather", "clock", "calculator", "search"])


@st.composite
def result_content(draw):
    text = draw(st.one_of(TEXT, LONG_TEXT))
    if draw(st.booleans()):
        return text
    return [text_block(text), *([text_block(draw(TEXT))] if draw(st.booleans()) else [])]


def pieces(draw, items: list) -> list[list]:
    """`items` as one list, or spread over up to three (consecutive same-role messages, merged by the API)."""
    cuts = sorted(draw(st.sets(st.integers(1, len(items) - 1), max_size=2))) if len(items) > 1 else []
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:])]


@st.composite
def conversations(draw, max_rounds: int = 10) -> list[dict]:
    """A random valid history that starts with a user message."""
    history = [user(draw(st.one_of(TEXT, LONG_TEXT)))]
    next_id = 0
    for _ in range(draw(st.integers(0, max_rounds))):
        said = [text_block(draw(TEXT))] if draw(st.booleans()) else []
        calls = []
        if not said or draw(st.booleans()):
            for _ in range(draw(st.integers(1, 4))):
                calls.append({"type": "tool_use", "id": f"toolu_{next_id}", "name": draw(TOOL_NAMES),
                              "input": {"q": draw(TEXT)}})
                next_id += 1
        if not calls:
            history.append(assistant(said[0]["text"] if draw(st.booleans()) else said))
            history.append(user(draw(TEXT)))
            continue
        turn = said + calls if draw(st.booleans()) else calls + said  # text may also follow the calls
        history += [assistant(part) for part in pieces(draw, turn)]
        results = [tool_result(c["id"], draw(result_content()), is_error=draw(st.booleans())) for c in calls]
        answer = draw(st.permutations(results)) + ([text_block(draw(TEXT))] if draw(st.booleans()) else [])
        history += [user(part) for part in pieces(draw, answer)]  # results first, then optional text
    if draw(st.booleans()):  # end on the assistant's final answer
        history.append(assistant(draw(TEXT)))
    assert conversation_error(history) is None, conversation_error(history)
    return history


def accepted(view: list[dict]) -> None:
    """The view would pass both the conversation rules and the mock's full request validator."""
    assert conversation_error(view) is None, conversation_error(view)
    body = {"model": "m", "max_tokens": 100, "messages": view}
    assert validate_request(body, version="2023-06-01") is None, validate_request(body, version="2023-06-01")


def valid_cuts(history: list[dict]) -> list[int]:
    """Every k for which anchor + history[k:] is valid, by brute force."""
    return [k for k in range(1, len(history)) if conversation_error([history[0], *history[k:]]) is None]


def check_window(history: list[dict], view: list[dict], size, limit: int, overflow: bool) -> None:
    """Anchor kept, tail intact, fits if anything fits, and nothing longer would have fitted."""
    accepted(view)
    assert view[0] is history[0]
    assert view[1:] == history[len(history) - len(view) + 1:]
    cuts = valid_cuts(history) or [len(history)]
    fitting = [k for k in cuts if size([history[0], *history[k:]]) <= limit]
    assert overflow == (not fitting)
    event("overflow" if overflow else ("trimmed" if len(view) < len(history) else "whole history"))
    if fitting:
        assert view == [history[0], *history[fitting[0]:]]
    else:
        assert view == [history[0], *history[cuts[-1]:]]


@EXAMPLES
@given(conversations())
def test_safe_cuts_are_exactly_the_valid_cuts(history):
    assert safe_cuts(history) == valid_cuts(history)


@EXAMPLES
@given(conversations(), st.integers(2, 14))
def test_sliding_window(history, max_messages):
    before = copy.deepcopy(history)
    p = SlidingWindow(max_messages)
    view = p.view(history)
    assert history == before
    check_window(history, view, len, max_messages, p.last_overflow)


@EXAMPLES
@given(conversations(), st.floats(-0.2, 1.2), st.integers(0, 200))
def test_token_budget(history, share, reserve):
    # Budgets from a bit below the smallest valid view to a bit above the whole history.
    smallest = estimate_messages([history[0], *history[(safe_cuts(history) or [1])[-1]:]])
    budget = max(1, int(smallest + share * (estimate_messages(history) - smallest)))
    max_tokens = budget + reserve
    before = copy.deepcopy(history)
    p = TokenBudget(max_tokens, reserve=reserve)
    view = p.view(history)
    assert history == before
    check_window(history, view, estimate_messages, max_tokens - reserve, p.last_overflow)
    if not p.last_overflow:
        assert estimate_messages(view) <= max_tokens - reserve


class FakeClient:
    def __init__(self):
        self.calls = 0

    def create(self, messages, **kwargs):
        self.calls += 1
        return {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Ada likes tea."}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}


def growing(history: list[dict]) -> list[list[dict]]:
    """The history as the agent sees it before each model call: every prefix ending on a user turn."""
    prefixes = [history[:i + 1] for i, m in enumerate(history) if m["role"] == "user"
                and (i + 1 == len(history) or history[i + 1]["role"] == "assistant")]
    return prefixes + ([history] if history[-1]["role"] == "assistant" else [])


@EXAMPLES
@given(conversations(), st.integers(40, 1500), st.floats(0.0, 0.9))
def test_summarize(history, trigger, keep_share):
    keep = int(trigger * keep_share)
    client = FakeClient()
    p = Summarize(client, trigger_tokens=trigger, keep_recent_tokens=keep)
    before = copy.deepcopy(history)
    for prefix in growing(history):
        calls = client.calls
        view = p.view(prefix)
        accepted(view)
        if p.covered:
            assert text_of(view[0]).startswith(SUMMARY_HEADER + "\nAda likes tea.")
            assert ANCHOR_HEADER + "\n" + text_of(history[0]) in text_of(view[0])
            assert view[1:] == prefix[p.covered:]
        else:
            assert view == prefix
        # Summarised at most once per call, and only as far as a cut can move.
        assert client.calls - calls <= 1
        later = [k for k in safe_cuts(prefix) if k > max(p.covered, 1)]
        assert estimate_messages(prefix[p.covered:]) <= trigger or not later
        # Asking again with the same history never costs another call.
        calls = client.calls
        assert p.view(prefix) == view and client.calls == calls
    assert history == before
    assert p.summaries_made == client.calls
    event(f"summaries made: {min(client.calls, 3)}{'+' if client.calls > 3 else ''}")


@EXAMPLES
@given(conversations(), st.integers(2, 10), st.integers(100, 400))
def test_truncate_then_window(history, max_messages, max_chars):
    p = Compose(TruncateToolResults(max_chars), SlidingWindow(max_messages))
    # Let every user turn's tool results pass through on_tool_results, as the loop does.
    fed = []
    for m in history:
        content = m["content"]
        if m["role"] == "user" and isinstance(content, list) and content[0].get("type") == "tool_result":
            snapshot = copy.deepcopy(content)
            m = user(p.on_tool_results(content))
            assert content == snapshot
            assert all(len(result_text(b)) <= max_chars for b in m["content"] if b.get("type") == "tool_result")
        fed.append(m)
    accepted(fed)
    before = copy.deepcopy(fed)
    view = p.view(fed)
    assert fed == before
    window = p.policies[1]
    check_window(fed, view, len, max_messages, window.last_overflow)
    assert p.last_overflow == window.last_overflow
