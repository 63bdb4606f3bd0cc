"""Property tests, part 2: summaries and truncation composed with a window.

Split from test_context_properties.py so the two halves run on separate test workers.
"""

from __future__ import annotations

import copy

from hypothesis import event, given
from hypothesis import strategies as st

from conversation_strategies import EXAMPLES, accepted, check_window, conversations
from miniagent.context import ANCHOR_HEADER, SUMMARY_HEADER, Compose, SlidingWindow, Summarize, TruncateToolResults, safe_cuts
from miniagent.messages import result_text, text_of, user
from miniagent.tokens import estimate_messages


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
