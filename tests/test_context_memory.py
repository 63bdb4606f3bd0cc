"""StructuredMemory: a bounded block of stated facts in every view, around a tight window.

The facts come from extraction calls made just before the window drops a message the
memory has not read; the block rides in the first user message. The end-to-end recall
on the 60-turn workload is in test_bench_context.py (it reuses the benchmark's run).
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

import miniagent
from conversation_strategies import EXAMPLES, accepted, conversations
from miniagent.context import Compose, SlidingWindow, Summarize, TokenBudget, TruncateToolResults
from miniagent.memory.structured import FORGET, MEMORY_HEADER, StructuredMemory, fact_key, facts_prompt, parse_facts
from miniagent.messages import assistant, conversation_error, text_block, text_of, user
from miniagent.tokens import estimate_text


class Scripted:
    """A client whose replies are given in advance (the last one repeats); it records the prompts."""

    def __init__(self, *replies: str):
        self.replies, self.prompts = list(replies) or ["none"], []

    def create(self, messages, system=None, max_tokens=None, **_):
        self.prompts.append(text_of(messages[0]))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return {"content": [{"type": "text", "text": reply}], "usage": {"input_tokens": 50, "output_tokens": 5}}


def chat(*said: str) -> list[dict]:
    """A text-only history: the user's lines, each answered with "ok"."""
    history = []
    for line in said:
        history += [user(line), assistant("ok")]
    return history[:-1]  # ends on the user's last line, as a request does


def test_facts_are_read_only_when_the_window_drops_an_unread_message():
    client = Scripted("name: Ada")
    memory = StructuredMemory(client, SlidingWindow(4))
    history = chat("task", "my name is Ada", "q3")  # 5 messages: the window drops one
    assert memory.view(history[:3]) == history[:3] and client.prompts == []  # nothing dropped, no call
    view = memory.view(history)
    assert len(client.prompts) == 1 and "User: my name is Ada" in client.prompts[0]
    assert memory.facts == {"name": "Ada"} and memory.read == 5
    assert view[0]["content"] == f"task\n\n{MEMORY_HEADER}\n- name: Ada" and view[1:] == history[-3:]
    longer = history + [assistant("ok"), user("q4")]
    memory.view(longer)  # drops messages it has read: no new call
    assert len(client.prompts) == 1
    memory.view(longer + [assistant("ok"), user("q5"), assistant("ok"), user("q6")])  # drops q4: read again
    assert len(client.prompts) == 2 and "<known_facts>\nname: Ada\n</known_facts>" in client.prompts[1]
    assert "q3" not in client.prompts[1] and "User: q6" in client.prompts[1]  # only what is new
    assert memory.stats()["extractions"] == 2 and memory.extraction_tokens == 110


def test_a_fact_is_updated_and_removed_by_the_model_or_directly():
    client = Scripted("name: Ada\npreference: tea", "Preference: coffee", f"name: {FORGET}")
    memory = StructuredMemory(client, SlidingWindow(2))
    history = chat("task", "a", "b")
    memory.view(history)
    assert memory.facts == {"name": "Ada", "preference": "tea"}
    history += [assistant("ok"), user("c")]
    memory.view(history)
    assert memory.facts == {"name": "Ada", "preference": "coffee"}  # updated, and now the newest
    memory.view(history + [assistant("ok"), user("d")])
    assert memory.facts == {"preference": "coffee"}
    memory.remember("Favourite colour", "green")
    memory.forget("preference")
    assert memory.facts == {"favourite_colour": "green"}
    memory.remember("favourite colour", "")  # an empty value forgets
    assert memory.facts == {} and memory.block() is None


def test_the_block_is_bounded_in_tokens_and_keys():
    memory = StructuredMemory(Scripted(), SlidingWindow(4), max_tokens=64, max_facts=3, max_value_chars=40)
    for n in range(5):
        memory.remember(f"key {n}", "v" * 10)
    assert list(memory.facts) == ["key_2", "key_3", "key_4"] and memory.evicted == 2  # the oldest go first
    memory.remember("key 2", "updated")  # an update makes a fact the newest
    memory.remember("long", "word " * 100)
    assert estimate_text(memory.block()) <= 64 and memory.facts["long"].startswith("word word")
    assert "key_2" in memory.facts and "key_3" not in memory.facts
    assert all(len(v) <= 43 for v in memory.facts.values())  # clipped to max_value_chars (+ "...")
    with pytest.raises(ValueError, match="key"):
        memory.remember("", "x")
    with pytest.raises(ValueError, match="key"):
        memory.remember("x" * 41, "x")


def test_replies_are_parsed_leniently_and_garbage_changes_nothing():
    assert parse_facts("(mock) Facts stated in this conversation:\n- name: Ada\n* `Deadline`: Friday\nnone") == {
        "name": "Ada", "deadline": "Friday"}
    assert parse_facts("name: (forget)\nmood: Forget") == {"name": None, "mood": None}
    assert parse_facts("I could not find any facts.") == {} and parse_facts("none") == {}
    assert fact_key("  User Name ") == "user_name"
    memory = StructuredMemory(Scripted("Sorry, I can't help with that."), SlidingWindow(2))
    memory.remember("name", "Ada")
    memory.view(chat("task", "a", "b"))
    assert memory.facts == {"name": "Ada"}


def test_the_prompt_has_the_known_facts_and_the_text_but_no_tool_output():
    history = [user("task"), assistant([text_block("searching"),
                                         {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}}]),
               user([{"type": "tool_result", "tool_use_id": "t1", "content": "HUGE OUTPUT " * 50}]),
               assistant("found it"), user("my name is Ada")]
    prompt = facts_prompt({"name": "Bob"}, history[1:])
    assert "<known_facts>\nname: Bob\n</known_facts>" in prompt and "User: my name is Ada" in prompt
    assert "Assistant: searching" in prompt and "HUGE OUTPUT" not in prompt and "called tool" not in prompt
    client = Scripted("none")
    StructuredMemory(client, SlidingWindow(2)).view([user("task"), assistant([history[1]["content"][1]]),
                                                     history[2], assistant("x"), user("y")])
    assert len(client.prompts) == 1  # text to read: one call
    quiet = Scripted("none")
    memory = StructuredMemory(quiet, SlidingWindow(2))
    call2 = {**history[1]["content"][1], "id": "t2"}
    result2 = user([{"type": "tool_result", "tool_use_id": "t2", "content": "more output"}])
    memory.view([user("task"), assistant([history[1]["content"][1]]), history[2], assistant([call2]), result2])
    assert quiet.prompts == [] and memory.read == 5  # only tool traffic to read: no call


def test_block_placement_keeps_list_content_and_never_touches_the_history():
    anchor = user([text_block("look at this"), {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                               "data": "iVBORw0KGgo="}}])
    history = [anchor, assistant("ok"), user("my name is Ada"), assistant("ok"), user("q")]
    before = copy.deepcopy(history)
    memory = StructuredMemory(Scripted("name: Ada"), SlidingWindow(2))
    view = memory.view(history)
    assert history == before
    assert view[0]["content"][:2] == anchor["content"] and view[0]["content"][2]["text"].endswith("- name: Ada")
    assert memory.block_tokens == estimate_text(memory.block())
    accepted(view)


def test_another_conversation_starts_with_no_facts():
    memory = StructuredMemory(Scripted("name: Ada", "none"), SlidingWindow(2))
    memory.view(chat("task", "a", "b"))
    assert memory.facts
    memory.view(chat("another task", "c", "d"))
    assert memory.facts == {}


def test_it_wraps_any_policy_and_reports_its_stats():
    memory = StructuredMemory(Scripted(), Compose(TruncateToolResults(100), SlidingWindow(4)))
    result = {"type": "tool_result", "tool_use_id": "t", "content": "x" * 500}
    assert len(memory.on_tool_results([result])[0]["content"]) < 200  # the inner policy's truncation
    memory.view(chat("task", "a", "b", "c"))
    stats = memory.stats()
    assert stats["Compose.SlidingWindow.dropped_messages"] > 0 and stats["facts"] == 0
    assert "StructuredMemory" in repr(memory) and memory.last_overflow is False
    with pytest.raises(TypeError, match="inner"):
        StructuredMemory(Scripted(), "window")
    with pytest.raises(TypeError, match="create"):
        StructuredMemory(object(), SlidingWindow(4))


def test_with_the_mock_a_stated_fact_survives_a_tight_window_and_an_update_wins():
    llm = miniagent.connect(offline=True, quiet=True)
    memory = StructuredMemory(llm, SlidingWindow(4))
    history = [user("Hello")]
    for said in ["My name is Ada.", "I prefer answers in metric units.", "ok", "ok", "ok", "My name is Bea.", "ok",
                 "ok", "ok", "What's my name, and what do I prefer?"]:
        history = [*history, assistant(text_of(llm.create(memory.view(history)))), user(said)]
    answer = text_of(llm.create(memory.view(history)))
    assert memory.facts == {"preference": "answers in metric units", "name": "Bea"}  # updated: now the newest
    assert answer == "(mock) Your name is Bea. You told me you like answers in metric units."
    assert text_of(llm.create(SlidingWindow(4).view(history))).count("I don't know") == 2  # the window alone forgets


@EXAMPLES
@given(st.lists(st.tuples(st.sampled_from(["name", "Name", "likes", "a b", "k" * 40]),
                          st.sampled_from(["", "Ada", "tea " * 30, "天气" * 50, "x" * 500])), max_size=12),
       st.integers(64, 200), st.integers(1, 4))
def test_the_bounds_hold_whatever_is_remembered(updates, max_tokens, max_facts):
    memory = StructuredMemory(Scripted(), SlidingWindow(4), max_tokens=max_tokens, max_facts=max_facts)
    for key, value in updates:
        memory.remember(key, value)
        assert len(memory.facts) <= max_facts and estimate_text(memory.block() or "") <= max_tokens
        assert (memory.facts.get(fact_key(key)) is None) == (value == "")  # the newest fact is always kept


@EXAMPLES
@given(conversations(max_rounds=6), st.integers(2, 10), st.sampled_from(["window", "budget", "summary"]))
def test_every_view_is_valid_and_keeps_the_inner_views_shape(history, size, inner_kind):
    """On any valid history, with any inner policy: a valid request, the inner view plus the block."""
    client = Scripted("name: Ada\nlikes: tea")
    inner = {"window": lambda: SlidingWindow(size), "budget": lambda: TokenBudget(size * 40),
             "summary": lambda: Summarize(client, trigger_tokens=size * 40, keep_recent_tokens=size * 10)}[inner_kind]()
    before = copy.deepcopy(history)
    memory = StructuredMemory(client, inner)
    for end in range(1, len(history) + 1):  # as a conversation grows: each request on the way, and the end
        if end < len(history) and (history[end - 1]["role"] != "user" or conversation_error(history[:end])):
            continue
        view = memory.view(history[:end])
        accepted(view)
        assert len(view) == len(inner.view(history[:end])) and view[1:] == inner.view(history[:end])[1:]
        if memory.facts:
            assert text_of(view[0]).endswith("- name: Ada\n- likes: tea")
    assert history == before
