"""Context policies on hand-made conversations: what each keeps, what it costs, what it never breaks."""

from __future__ import annotations

import copy

import pytest

import miniagent
from miniagent.client import BadRequestError
from miniagent.context import (
    ANCHOR_HEADER,
    SUMMARY_HEADER,
    Compose,
    NaiveWindow,
    Policy,
    SlidingWindow,
    Summarize,
    SummarizeToolResults,
    TokenBudget,
    TruncateToolResults,
    safe_cuts,
    summary_prompt,
    transcript,
)
from miniagent.messages import assistant, conversation_error, text_block, text_of, tool_result, user
from miniagent.mock.validate import validate_request
from miniagent.tokens import estimate_messages


def use(id_: str, name: str = "get_weather", **args) -> dict:
    return {"type": "tool_use", "id": id_, "name": name, "input": args}


def chat() -> list[dict]:
    """Ten messages: a name, two rounds of tool calls (one parallel), a follow-up question."""
    return [
        user("Hi, I'm Ada and I prefer Celsius. What's the weather in Paris and Tokyo?"),
        assistant([text_block("Let me check both."), use("toolu_1", city="Paris"), use("toolu_2", city="Tokyo")]),
        user([tool_result("toolu_1", "Paris: 18 C, cloudy"), tool_result("toolu_2", "Tokyo: 24 C, sunny")]),
        assistant("Paris is 18 C and cloudy; Tokyo is 24 C and sunny."),
        user("And London?"),
        assistant([use("toolu_3", city="London")]),
        user([tool_result("toolu_3", "London: 12 C, rain")]),
        assistant("London is 12 C with rain."),
        user("What time is it in Tokyo?"),
        assistant([use("toolu_4", "clock", tz="Asia/Tokyo")]),
        user([tool_result("toolu_4", "2026-03-01 09:00")]),
    ]


def api_error(view: list[dict]):
    return validate_request({"model": "m", "max_tokens": 100, "messages": view}, version="2023-06-01")


class FakeClient:
    """Stands in for miniagent.Client: returns a fixed summary and records every call."""

    def __init__(self, text: str = "The user is Ada; she prefers Celsius.", usage: dict | None = None):
        self.text = text
        self.usage = usage if usage is not None else {"input_tokens": 120, "output_tokens": 30}
        self.calls: list[dict] = []

    def create(self, messages, **kwargs):
        self.calls.append({"messages": copy.deepcopy(messages), **kwargs})
        return {"type": "message", "role": "assistant", "content": [{"type": "text", "text": self.text}],
                "stop_reason": "end_turn", "usage": self.usage}

    def prompt(self, i: int = -1) -> str:
        return self.calls[i]["messages"][0]["content"]


# --- safe cuts -----------------------------------------------------------------------


def test_safe_cuts_never_start_the_tail_with_tool_results():
    h = chat()
    assert safe_cuts(h) == [1, 3, 4, 5, 7, 8, 9]
    for k in range(1, len(h)):
        valid = conversation_error([h[0], *h[k:]]) is None
        assert (k in safe_cuts(h)) == valid, k


def test_safe_cuts_respect_merged_turns():
    # The API merges consecutive same-role messages; a cut inside a turn must not drop its tool_use.
    h = [user("hi"), assistant([use("toolu_a")]), assistant("checking"),
         user([tool_result("toolu_a", "ok")]), user("thanks"), assistant("done")]
    assert conversation_error(h) is None
    assert safe_cuts(h) == [1, 4, 5]
    assert conversation_error([h[0], *h[2:]]) is not None  # why 2 is excluded
    assert conversation_error([h[0], *h[4:]]) is None


def test_safe_cuts_of_tiny_histories():
    assert safe_cuts([]) == []
    assert safe_cuts([user("hi")]) == []
    assert safe_cuts([user("hi"), assistant("hello")]) == [1]


# --- the naive window ---------------------------------------------------------------------


def test_naive_window_is_the_articles_trim_messages():
    h = chat()
    p = NaiveWindow(max_turns=2)
    view = p.view(h)
    assert view == [h[0], *h[-3:]]
    assert len(view) == 4
    assert p.stats() == {"calls": 1, "dropped_messages": 7}


def test_naive_window_leaves_short_histories_alone():
    h = chat()[:4]
    view = NaiveWindow(max_turns=2).view(h)
    assert view == h and view is not h


def test_naive_window_orphans_a_tool_result_and_the_api_says_so():
    h = chat()
    view = NaiveWindow(max_turns=1).view(h)  # anchor + the last message: a bare tool_result
    error = conversation_error(view)
    assert error is not None and "unexpected `tool_use_id`" in error and "toolu_4" in error
    api = api_error(view)
    assert api is not None and api.status == 400 and "toolu_4" in api.message


def test_naive_window_fails_against_the_strict_mock_and_sliding_window_does_not():
    client = miniagent.connect(offline=True, quiet=True)
    h = chat()
    with pytest.raises(BadRequestError) as err:
        client.create(NaiveWindow(max_turns=1).view(h))
    assert "toolu_4" in str(err.value)
    reply = client.create(SlidingWindow(max_messages=3).view(h))
    assert reply["type"] == "message"


# --- sliding window -----------------------------------------------------------------------


def test_sliding_window_keeps_anchor_and_recent_messages_and_stays_valid():
    h = chat()
    for limit in range(2, len(h) + 2):
        p = SlidingWindow(max_messages=limit)
        view = p.view(h)
        assert conversation_error(view) is None, limit
        assert api_error(view) is None, limit
        assert view[0] == h[0] and view[-1] == h[-1]
        assert view[1:] == h[len(h) - len(view) + 1:]
        if limit >= 3:
            assert len(view) <= limit and not p.last_overflow
    assert SlidingWindow(100).view(h) == h


def test_sliding_window_prefers_the_largest_safe_tail():
    h = chat()
    view = SlidingWindow(max_messages=5).view(h)
    # h[7:] (4 messages) fits with the anchor; h[6:] would start with a tool_result.
    assert view == [h[0], *h[7:]]


def test_sliding_window_overflows_only_when_the_last_unit_is_too_big():
    h = chat()
    p = SlidingWindow(max_messages=2)
    view = p.view(h)  # the last unit is the clock tool_use + its result: 3 messages with the anchor
    assert view == [h[0], h[-2], h[-1]]
    assert p.last_overflow is True
    assert conversation_error(view) is None
    view = p.view(h[:-2])  # now ends on a user question: anchor + question fits in 2
    assert view == [h[0], h[-3]]
    assert p.last_overflow is False
    assert p.stats() == {"calls": 2, "dropped_messages": 8 + 7, "overflows": 1}


def test_sliding_window_with_parallel_calls_never_splits_them():
    h = chat()[:4]
    view = SlidingWindow(max_messages=3).view(h)
    # h[2] holds both parallel results; the only safe short tail is h[3:].
    assert view == [h[0], h[3]]


# --- token budget ---------------------------------------------------------------------------


def test_token_budget_fits_and_keeps_as_much_as_possible():
    h = chat()
    for budget in range(30, estimate_messages(h) + 20, 7):
        p = TokenBudget(budget)
        view = p.view(h)
        assert conversation_error(view) is None
        assert view[0] == h[0]
        assert p.last_tokens == estimate_messages(view)
        if not p.last_overflow:
            assert p.last_tokens <= budget
        # Any longer safe tail would not have fitted.
        longer = [k for k in safe_cuts(h) if k < len(h) - len(view) + 1]
        assert all(estimate_messages([h[0], *h[k:]]) > budget for k in longer)


def test_token_budget_reserve_is_taken_from_the_budget():
    h = chat()
    full = estimate_messages(h)
    assert TokenBudget(full).view(h) == h
    p = TokenBudget(full, reserve=1)
    assert len(p.view(h)) < len(h)
    assert p.budget == full - 1 and p.last_tokens <= full - 1


def test_token_budget_with_a_huge_tool_result_overflows_with_a_valid_view():
    h = chat()
    h[-1] = user([tool_result("toolu_4", "tick " * 5000)])
    p = TokenBudget(max_tokens=500)
    view = p.view(h)
    assert view == [h[0], h[-2], h[-1]]
    assert p.last_overflow is True and p.overflows == 1
    assert conversation_error(view) is None
    p.view(h[:-2])
    assert p.last_overflow is False


def test_token_budget_counts_cjk_text_as_the_estimate_does():
    h = [user("你好" * 50), assistant("好的" * 50), user("天气" * 50)]
    p = TokenBudget(max_tokens=220)  # each message: 100 CJK tokens + 4
    view = p.view(h)
    assert view == [h[0], h[2]]
    assert p.last_tokens == 208 and not p.last_overflow


# --- summaries ------------------------------------------------------------------------------


def long_chat(rounds: int) -> list[dict]:
    h = [user("Hi, I'm Ada and I prefer Celsius.")]
    for i in range(rounds):
        h.append(assistant([use(f"toolu_{i}", city=f"City{i}")]))
        h.append(user([tool_result(f"toolu_{i}", f"City{i}: {i} C " + "detail " * 20)]))
        h.append(assistant(f"City{i} is {i} C."))
        h.append(user(f"Next question number {i}?"))
    return h


def test_summarize_does_nothing_below_the_trigger():
    client = FakeClient()
    p = Summarize(client, trigger_tokens=10_000, keep_recent_tokens=100)
    h = chat()
    assert p.view(h) == h
    assert client.calls == [] and p.summaries_made == 0


def test_summarize_replaces_old_turns_with_one_summary_and_keeps_recent_ones():
    client = FakeClient()
    h = long_chat(6)
    p = Summarize(client, trigger_tokens=400, keep_recent_tokens=150)
    view = p.view(h)
    assert len(client.calls) == 1
    first = view[0]
    assert first["role"] == "user"
    assert text_of(first).startswith(SUMMARY_HEADER + "\n" + client.text)
    assert ANCHOR_HEADER in text_of(first) and h[0]["content"] in text_of(first)
    assert view[1:] == h[p.covered:]
    assert estimate_messages(h[p.covered:]) <= 150
    assert conversation_error(view) is None and api_error(view) is None
    call = client.calls[0]
    assert call["max_tokens"] == p.max_summary_tokens and call["system"]
    assert "name" in client.prompt() and "preferences" in client.prompt() and "open questions" in client.prompt()
    assert "I'm Ada" in client.prompt() and "City0: 0 C" in client.prompt()
    assert p.stats() == {"calls": 1, "summaries_made": 1, "summary_tokens": 150, "covered": p.covered}


def test_summarize_caches_the_summary_until_the_trigger_is_passed_again():
    client = FakeClient()
    h = long_chat(12)
    p = Summarize(client, trigger_tokens=400, keep_recent_tokens=150)
    n = 20
    p.view(h[:n])
    assert len(client.calls) == 1
    covered = p.covered
    p.view(h[:n])
    p.view(h[:n + 2])  # a little more history: still under the trigger
    assert len(client.calls) == 1 and p.covered == covered
    grown = n
    while estimate_messages(h[covered:grown]) <= 400:
        grown += 2
    view = p.view(h[:grown])
    assert len(client.calls) == 2 and p.covered > covered
    prompt = client.prompt()
    assert "<previous_summary>\n" + client.text in prompt
    # Only the newly old turns are sent, not the ones the old summary covers.
    assert "I'm Ada" not in prompt.split("<conversation>")[1]
    assert "Next question number 0?" not in prompt
    assert conversation_error(view) is None
    assert view[0]["content"].count(SUMMARY_HEADER) == 1


def test_summarize_never_summarises_again_when_no_cut_moves_forward():
    # The last unit alone is over the trigger: nothing more can be folded in.
    client = FakeClient()
    h = [user("Hi, I'm Ada."), assistant("Hello Ada."), user("Please read this: " + "word " * 2000)]
    p = Summarize(client, trigger_tokens=300, keep_recent_tokens=100)
    for _ in range(3):
        view = p.view(h)
    assert len(client.calls) == 1
    assert view[1:] == [h[2]] and conversation_error(view) is None


def test_summarize_starts_over_on_another_conversation():
    client = FakeClient()
    p = Summarize(client, trigger_tokens=400, keep_recent_tokens=150)
    p.view(long_chat(6))
    other = long_chat(6)
    other[0] = user("Hello, I'm Grace.")
    view = p.view(other)
    assert len(client.calls) == 2
    assert "Grace" in text_of(view[0]) and "I'm Grace" in client.prompt()


def test_summarize_keeps_the_cache_when_the_call_fails():
    class Failing(FakeClient):
        def create(self, messages, **kwargs):
            raise RuntimeError("overloaded")

    p = Summarize(Failing(), trigger_tokens=400, keep_recent_tokens=150)
    h = long_chat(6)
    with pytest.raises(RuntimeError, match="overloaded"):
        p.view(h)
    assert p.summary is None and p.covered == 0 and p.summaries_made == 0


def test_summarize_with_block_content_anchor_keeps_its_blocks():
    h = long_chat(6)
    h[0] = user([text_block("Hi, I'm Ada."), {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}])
    p = Summarize(FakeClient(), trigger_tokens=400, keep_recent_tokens=150)
    view = p.view(h)
    assert view[0]["content"][1:] == h[0]["content"]
    assert text_of(view[0]).startswith(SUMMARY_HEADER)
    assert conversation_error(view) is None and api_error(view) is None


def test_summarize_against_the_offline_mock():
    client = miniagent.connect(offline=True, quiet=True)
    h = long_chat(12)
    p = Summarize(client, trigger_tokens=400, keep_recent_tokens=150)
    view = p.view(h[:20])
    assert p.summaries_made == 1
    assert "Ada" in p.summary  # the mock's summary keeps the name...
    p.view(h)
    assert p.summaries_made == 2 and "Ada" in p.summary  # ...and so does the summary of that summary
    assert p.summary_tokens == client.usage.total_tokens > 0
    sent = client.last.request["body"]
    assert sent["messages"][0]["content"].startswith("Summarise") and sent["system"] == p.system
    reply = client.create(p.view(h))  # the mock accepts the summarised view
    assert reply["type"] == "message" and p.summaries_made == 2


def test_a_summary_remembers_what_a_window_forgets():
    # The name is in the second user message, which a window drops and a summary keeps.
    h = [user("Hello!"), assistant("Hi! How can I help?"), user("My name is Ada."),
         *long_chat(8)[1:], assistant("Anything else?"), user("What is my name?")]
    assert conversation_error(h) is None
    client = miniagent.connect(offline=True, quiet=True)
    assert "Ada" in text_of(client.create(h))
    assert "Ada" not in text_of(client.create(SlidingWindow(6).view(h)))
    assert "Ada" in text_of(client.create(Summarize(client, 400, 150).view(h)))


def test_transcript_and_prompt_name_tools_and_results():
    h = chat()[:3]
    text = transcript(h)
    assert "User: Hi, I'm Ada" in text
    assert 'Assistant called tool get_weather with {"city": "Paris"}' in text
    assert "Result of get_weather: Tokyo: 24 C, sunny" in text
    err = transcript([assistant([use("toolu_9", "calc")]), user([tool_result("toolu_9", "bad", is_error=True)])])
    assert "Error from calc: bad" in err
    assert summary_prompt(None, h).count("<previous_summary>") == 0


# --- tool results -----------------------------------------------------------------------------


def test_truncate_tool_results_keeps_head_and_tail_with_a_marker():
    p = TruncateToolResults(max_chars=300)
    long = "HEAD " + "x" * 10_000 + " TAIL"
    results = [tool_result("toolu_1", long), tool_result("toolu_2", "short"), text_block("note")]
    out = p.on_tool_results(results)
    cut = out[0]["content"]
    assert len(cut) <= 300
    assert cut.startswith("HEAD ") and cut.endswith(" TAIL")
    assert "characters omitted" in cut
    assert out[0]["tool_use_id"] == "toolu_1"
    assert out[1] == results[1] and out[2] == results[2]
    assert p.truncated_results == 1 and p.chars_removed == len(long) - len(cut)


def test_truncate_tool_results_head_ratio_moves_the_cut():
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    head_heavy = TruncateToolResults(200, head_ratio=0.9).on_tool_results([tool_result("t", text)])[0]["content"]
    tail_heavy = TruncateToolResults(200, head_ratio=0.1).on_tool_results([tool_result("t", text)])[0]["content"]
    assert head_heavy.index("[...") > 100 > tail_heavy.index("[...")


def test_truncate_tool_results_with_blocks_and_errors():
    p = TruncateToolResults(max_chars=200)
    image = {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    block = tool_result("toolu_1", [text_block("a" * 150), image, text_block("b" * 150)], is_error=True)
    out = p.on_tool_results([block])[0]
    assert out["is_error"] is True
    assert out["content"][1] == image
    assert len(out["content"][0]["text"]) <= 200 and out["content"][0]["text"].endswith("b")
    assert block["content"][0]["text"] == "a" * 150  # the input is untouched


def test_truncate_tool_results_view_is_identity():
    h = chat()
    view = TruncateToolResults(1000).view(h)
    assert view == h and view is not h


def test_summarize_tool_results_calls_the_model_only_for_long_output():
    client = FakeClient(text="Paris 18 C.")
    p = SummarizeToolResults(client, max_chars=100)
    out = p.on_tool_results([tool_result("toolu_1", "x" * 500), tool_result("toolu_2", "short")])
    assert len(client.calls) == 1 and "x" * 500 in client.prompt()
    assert out[0]["content"] == "[Summary of a 500-character tool result]\nParis 18 C."
    assert out[1]["content"] == "short"
    assert p.stats() == {"calls": 0, "summaries_made": 1, "summary_tokens": 150,
                         "chars_removed": 500 - len(out[0]["content"])}


def test_summarize_tool_results_against_the_offline_mock():
    client = miniagent.connect(offline=True, quiet=True)
    p = SummarizeToolResults(client, max_chars=200)
    output = "Paris weather report\nTemperature: 18 C\nSky: cloudy\n" + "filler line of data\n" * 100
    out = p.on_tool_results([tool_result("toolu_1", output)])[0]["content"]
    assert out.startswith(f"[Summary of a {len(output):,}-character tool result]\n")
    assert "18 C" in out and len(out) < 400
    assert p.summary_tokens == client.usage.total_tokens


# --- composing -------------------------------------------------------------------------------


class Recorder(Policy):
    def __init__(self, name: str, log: list):
        super().__init__()
        self.name, self.log = name, log

    def view(self, messages):
        self.log.append(("view", self.name))
        return [*messages, user(self.name)]

    def on_tool_results(self, results):
        self.log.append(("results", self.name))
        return [*results, text_block(self.name)]


def test_compose_runs_policies_in_order():
    log: list = []
    p = Compose(Recorder("a", log), Recorder("b", log))
    view = p.view([user("x")])
    assert [m["content"] for m in view] == ["x", "a", "b"]
    out = p.on_tool_results([])
    assert [b["text"] for b in out] == ["a", "b"]
    assert log == [("view", "a"), ("view", "b"), ("results", "a"), ("results", "b")]


def test_compose_truncates_then_windows():
    p = Compose(TruncateToolResults(200), SlidingWindow(4))
    results = p.on_tool_results([tool_result("toolu_4", "z" * 5000)])
    h = [*chat()[:-1], user(results)]
    view = p.view(h)
    assert len(view) <= 4 and conversation_error(view) is None
    assert len(view[-1]["content"][0]["content"]) <= 200
    assert p.describe() == "Compose: TruncateToolResults(max_chars=200) -> SlidingWindow(max_messages=4)"
    assert p.stats()["SlidingWindow.calls"] == 1 and p.stats()["TruncateToolResults.truncated_results"] == 1
    assert p.last_overflow is False


# --- never mutate, always explain -----------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: NaiveWindow(1), lambda: SlidingWindow(3), lambda: TokenBudget(60),
    lambda: Summarize(FakeClient(), 100, 40), lambda: TruncateToolResults(100),
    lambda: SummarizeToolResults(FakeClient(), 100),
    lambda: Compose(TruncateToolResults(100), Summarize(FakeClient(), 100, 40), TokenBudget(80)),
])
def test_policies_never_mutate_their_input(make):
    p = make()
    h = chat()
    h[2] = user([tool_result("toolu_1", "r" * 3000), tool_result("toolu_2", [text_block("s" * 3000)])])
    before = copy.deepcopy(h)
    view = p.view(h)
    results = copy.deepcopy(h[2]["content"])
    p.on_tool_results(results)
    assert h == before
    assert results == before[2]["content"]
    assert view is not h
    assert p.describe() and "\n" not in p.describe()


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match="max_turns"):
        NaiveWindow(0)
    with pytest.raises(ValueError, match="max_messages must be an int >= 2"):
        SlidingWindow(1)
    with pytest.raises(ValueError, match="reserve"):
        TokenBudget(100, reserve=100)
    with pytest.raises(ValueError, match="keep_recent_tokens"):
        Summarize(FakeClient(), trigger_tokens=100, keep_recent_tokens=100)
    with pytest.raises(TypeError, match="create"):
        Summarize(object(), 100, 10)
    with pytest.raises(ValueError, match="max_chars"):
        TruncateToolResults(10)
    with pytest.raises(ValueError, match="head_ratio"):
        TruncateToolResults(500, head_ratio=1.5)
    with pytest.raises(ValueError, match="at least one policy"):
        Compose()
    with pytest.raises(TypeError, match="argument 1"):
        Compose(SlidingWindow(3), "not a policy")
    with pytest.raises(TypeError, match="list of message dicts"):
        SlidingWindow(3).view("hello")
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        TokenBudget(100).view([user("hi"), {"role": "system", "content": "x"}])
    with pytest.raises(ValueError, match="must start with a user message"):
        SlidingWindow(3).view([assistant("hi"), user("hello")])
    assert SlidingWindow(3).view([]) == [] and TokenBudget(10).view([]) == []
