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

from hypothesis import given
from hypothesis import strategies as st

from conversation_strategies import EXAMPLES, check_window, conversations, valid_cuts
from miniagent.context import SlidingWindow, TokenBudget, safe_cuts
from miniagent.tokens import estimate_messages


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
