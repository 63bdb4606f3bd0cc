"""ChatView and TraceView: sending works like clicking, tool calls show, the text form is meaningful."""

import html
import re
from datetime import datetime, timezone

import pytest

pytest.importorskip("ipywidgets")

from miniagent import builtin_tools, connect  # noqa: E402
from miniagent.agent import Agent  # noqa: E402
from miniagent.widgets import ChatView, TraceView  # noqa: E402

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc))


@pytest.fixture
def chat():
    return ChatView(Agent(connect(offline=True, quiet=True)))


def test_layout_and_css_classes(chat):
    assert chat.input.placeholder == "Ask the agent…" and chat.button.description == "Send"
    assert "miniagent-chat-input" in chat.input._dom_classes
    assert "miniagent-chat-send" in chat.button._dom_classes
    assert "miniagent-chat-transcript" in chat.transcript._dom_classes
    assert chat.transcript in chat.children and chat.tokens in chat.children
    assert "No messages yet" in chat.transcript.value
    assert repr(chat) == "ChatView · 0 question(s) · tokens: 0 in · 0 out · 0 model calls"


def test_send_shows_tool_calls_and_the_answer(chat):
    answer = chat.send(DEMO)
    assert "3584" in answer
    html = chat.transcript.value
    assert html.count("<details") == 4 and "get_current_time({})" in html
    assert "tool: get_weather({&quot;city&quot;: &quot;北京&quot;})" in html and "3584" in html
    assert "<b>Agent:</b>" in html and "thinking" not in html
    usage = chat.agent.usage
    assert f"{usage.input_tokens:,} in · {usage.output_tokens:,} out · 2 model calls" in chat.tokens.value
    assert not chat.input.disabled and not chat.button.disabled and chat.button.description == "Send"


def test_text_form_is_the_transcript(chat):
    chat.send(DEMO)
    text = repr(chat)
    lines = text.splitlines()
    assert lines[0].startswith("ChatView · 1 question(s) · tokens: ")
    assert lines[1] == f"you: {DEMO}"
    assert lines[2:6] == ["  tool get_current_time({}) -> 2026-05-09 14:23:11 (Asia/Shanghai)",
                          '  tool calculate({"expression": "(1024 + 768) * 2"}) -> 3584',
                          '  tool get_weather({"city": "北京"}) -> 北京：晴，25°C，微风',
                          '  tool get_weather({"city": "上海"}) -> 上海：多云，22°C，东风 3 级']
    assert lines[6].startswith("agent: ") and "3584" in text.split("agent: ", 1)[1]
    bundle = chat._repr_mimebundle_()
    assert bundle["text/plain"] == text and len(text) > 110  # not cut at 110 characters
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_button_click_sends_what_is_typed(chat):
    chat.input.value = "What is (2 + 3) * 4?"
    chat.button.click()
    assert chat.input.value == "" and len(chat.turns) == 1
    assert "20" in chat.turns[0]["answer"] and "calculate" in chat.transcript.value


def test_enter_sends(chat):
    chat.input.value = "Hello!"
    chat.input._handle_custom_msg({"event": "submit"}, [])  # what the front end sends on Enter
    assert len(chat.turns) == 1 and chat.turns[0]["answer"]


def test_empty_input_does_nothing(chat):
    chat.input.value = "   "
    chat.button.click()
    assert chat.send("") == "" and chat.turns == [] and chat.agent.usage.calls == 0


def test_multi_turn_and_history(chat):
    chat.send("Hi, my name is Ada.")
    chat.send("What is my name?")
    assert "Ada" in chat.turns[1]["answer"] and repr(chat).count("you: ") == 2
    assert len(chat.agent.history) == 4


def test_a_stopped_run_is_shown(chat):
    chat.agent.client.max_retries = 0
    chat.agent.client.mock.fault(500)
    assert chat.send("Hello!") == ""
    assert "stopped: api_error" in chat.transcript.value and "[stopped: api_error" in repr(chat)


def test_an_exception_is_shown_and_raised_by_send(chat, monkeypatch):
    def boom(question, **streaming):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(chat.agent, "run", boom)
    with pytest.raises(RuntimeError):
        chat.send("Hello!")
    assert "RuntimeError: kaboom" in chat.transcript.value and not chat.button.disabled
    chat.input.value = "again"
    chat.button.click()  # from the UI: shown, not raised into the void
    assert repr(chat).count("RuntimeError: kaboom") == 2


def test_send_rejects_non_text_and_keeps_widget_messages(chat):
    with pytest.raises(TypeError, match="as a string"):
        chat.send(42)
    chat.focus()  # ipywidgets uses send({"do": "focus"}) itself; that must still work


def test_trace_view(chat):
    chat.send(DEMO)
    view = TraceView(chat.agent.trace)
    assert repr(view) == chat.agent.trace.table(width=90)
    assert view.value.count("<tr>") == len(chat.agent.trace) + 1
    assert "get_weather({&quot;city&quot;: &quot;上海&quot;})" in view.value
    chat.send("Hello!")
    rows = view.value.count("<tr>")
    view.refresh()
    assert view.value.count("<tr>") > rows
    assert view._repr_mimebundle_()["text/plain"] == repr(view)


# --- streamed ---------------------------------------------------------------------------------


def answers_shown(values: list[str]) -> list[str]:
    """The answer text in each transcript value that shows one (HTML-escaped, as drawn)."""
    found = [re.search(r'class="miniagent-answer"[^>]*><b>Agent:</b> (.*?)</div>', v, re.S) for v in values]
    return [m.group(1) for m in found if m]


def test_the_answer_is_drawn_as_it_arrives(chat):
    values: list[str] = []
    chat.transcript.observe(lambda change: values.append(change["new"]), names="value")
    answer = chat.send(DEMO)
    final = html.escape(answer)
    shown = answers_shown(values)
    partial = [a for a in dict.fromkeys(shown) if a != final and final.startswith(a)]
    assert len(partial) >= 2 and shown[-1] == final  # it grew in steps, then the final answer
    assert any('class="miniagent-tool-forming"' in v for v in values)  # tool calls showed as they formed
    assert 'class="miniagent-tool-forming"' not in values[-1] and "thinking" not in values[-1]
    assert all(r["body"]["stream"] for r in chat.agent.client.mock.requests)


def test_streamed_and_unstreamed_chats_read_the_same(chat):
    plain = ChatView(Agent(connect(offline=True, quiet=True)), stream=False)
    for question in (DEMO, "Hi, my name is Ada.", "What is my name?"):
        chat.send(question)
        plain.send(question)
    assert repr(chat) == repr(plain) and chat.transcript.value == plain.transcript.value
    assert not any(r["body"].get("stream") for r in plain.agent.client.mock.requests)


def test_a_stream_that_breaks_shows_no_half_answer(chat):
    from miniagent.mock import scripts

    chat.agent.client.mock.script(scripts.overloaded_midway("A long answer that will not arrive whole.", deltas=2))
    assert chat.send("Hello!") == ""
    assert "stopped: api_error" in chat.transcript.value and "A long answer" not in chat.transcript.value
    assert chat.turns[-1]["answer"] == "" and "forming" not in chat.turns[-1]
