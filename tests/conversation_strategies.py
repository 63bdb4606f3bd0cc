"""Hypothesis strategies and checks shared by the context property tests.

`conversations()` builds random VALID histories: text turns, assistant turns with 1-4
parallel tool calls, results first (in any order) and optionally followed by text, CJK,
long outputs, turns spread over up to three same-role messages (the API merges them),
sometimes ending on the assistant.
"""

from __future__ import annotations

import random

from hypothesis import event, settings
from hypothesis import strategies as st

from miniagent.messages import assistant, conversation_error, text_block, tool_result, user
from miniagent.mock.validate import validate_request

# 50 examples per policy in `make test`; 1,000 in `make test-props` (see conftest.py; CI runs it).
EXAMPLES = settings(deadline=None)

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


