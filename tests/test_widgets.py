"""ChatView and TraceView: sending works like clicking, tools show, approval works, the text form is meaningful."""

import html
import json
import re
import threading
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
    assert lines[2:6] == ["  tool get_current_time({}) -> 2026-05-09 14:23:11 (Asia/Shanghai), Saturday",
                          '  tool calculate({"expression": "(1024 + 768) * 2"}) -> 3584',
                          '  tool get_weather({"city": "北京"}) -> 北京：晴，25°C，微风',
                          '  tool get_weather({"city": "上海"}) -> 上海：多云，22°C，东风 3 级']
    assert lines[6].startswith("agent: ") and "3584" in text.split("agent: ", 1)[1]
    bundle = chat._repr_mimebundle_()
    assert bundle["text/plain"] == text and len(text) > 110  # not cut at 110 characters
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_button_click_sends_what_is_typed(chat):
    chat.input.value = "What is (2 + 3) * 4?"
    chat.button.click()  # returns at once: the question runs in a worker thread
    assert chat.input.value == "" and len(chat.turns) == 1
    assert chat.wait(timeout=10) and not chat.busy
    assert "20" in chat.turns[0]["answer"] and "calculate" in chat.transcript.value


def test_enter_sends(chat):
    chat.input.value = "Hello!"
    chat.input._handle_custom_msg({"event": "submit"}, [])  # what the front end sends on Enter
    assert chat.wait(timeout=10) and len(chat.turns) == 1 and chat.turns[0]["answer"]


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
    assert chat.wait(timeout=10)
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


# --- approval ---------------------------------------------------------------------------------
#
# A question from the box runs in a worker thread; the panel's approver blocks it until a click.
# Here the test's thread plays the kernel's main thread: it clicks while the worker waits.

DELETE = "Delete the file notes.txt"


@pytest.fixture
def deleted():
    """The paths the delete_file tool was really called with."""
    return []


def risky_agent(deleted: list, **settings) -> Agent:
    from agent_fakes import deleting_tool

    return Agent(connect(offline=True, quiet=True), [deleting_tool(deleted)], **settings)


def panel_shown(view: ChatView) -> threading.Event:
    """Set when the approval panel joins the view (observe before sending: no race)."""
    shown = threading.Event()
    view.observe(lambda change: view.approval in change["new"] and shown.set(), names="children")
    return shown


def ask_from_the_box(view: ChatView, question: str = DELETE) -> None:
    shown = panel_shown(view)
    view.input.value = question
    view.button.click()  # returns at once; the run waits in its thread for a click
    assert shown.wait(5), f"no approval panel; the view shows:\n{view!r}"


def tool_lines(view: ChatView) -> list[str]:
    return [line for line in repr(view).splitlines() if line.startswith("  tool ")]


@pytest.mark.parametrize("stream", [True, False])
def test_the_panel_shows_the_call_and_approve_runs_it(deleted, stream):
    view = ChatView(risky_agent(deleted), stream=stream)
    assert view.approval not in view.children and view.pending is None
    ask_from_the_box(view)
    call = view.pending
    assert call["name"] == "delete_file" and view.busy and deleted == []
    assert {"miniagent-approval"} <= set(view.approval._dom_classes)
    assert "miniagent-approve" in view.approve_button._dom_classes and view.approve_button.description == "Approve"
    assert "miniagent-deny" in view.deny_button._dom_classes and view.deny_button.description == "Deny"
    assert "delete_file" in view.approval_call.value
    assert html.escape(json.dumps(call["input"], indent=2)) in view.approval_call.value  # pretty JSON
    assert view.input.disabled and view.button.disabled and not view.approve_button.disabled
    assert "waiting for your approval" in view.transcript.value and "thinking" not in view.transcript.value
    assert tool_lines(view)[0].endswith("· waiting for your approval… -> (no result)")

    view.approve_button.click()  # the click handler, on this (the "main") thread, answers the worker
    assert view.wait(5) and not view.busy
    assert deleted == [call["input"]["path"]]
    assert view.approval not in view.children and view.pending is None
    assert tool_lines(view) == [f'  tool delete_file({json.dumps(call["input"])}) · approved by you'
                                f' -> deleted {call["input"]["path"]}']
    assert "approved by you" in view.transcript.value and not view.input.disabled
    approval = [e for e in view.agent.trace.events if e["type"] == "approval"]
    assert [(e["id"], e["approved"]) for e in approval] == [(call["id"], True)]


def test_deny_with_a_reason_never_runs_the_tool(deleted):
    view = ChatView(risky_agent(deleted))
    ask_from_the_box(view)
    view.reason.value = "keep it, I still need it"
    view.deny_button.click()
    assert view.wait(5) and deleted == []
    line = tool_lines(view)[0]
    assert "· denied by you: keep it, I still need it -> error Error: the user did not approve" in line
    told = view.agent.history[2]["content"][0]  # the tool_result the model got
    assert told["is_error"] and told["content"].startswith("Error: the user did not approve")
    assert "keep it, I still need it" in told["content"]
    assert view.turns[0]["answer"] and "denied by you" in view.transcript.value
    assert view.decide(True) is False  # nothing waits any more: a late click does nothing


def test_enter_in_the_reason_box_denies_and_deny_alone_gives_no_reason(deleted):
    view = ChatView(risky_agent(deleted))
    ask_from_the_box(view)
    view.reason.value = "no"
    view.reason._handle_custom_msg({"event": "submit"}, [])
    assert view.wait(5) and "· denied by you: no -> " in tool_lines(view)[0]
    ask_from_the_box(view)
    view.deny_button.click()
    assert view.wait(5) and deleted == []
    assert "· denied by you -> error" in tool_lines(view)[1]


def test_one_question_at_a_time(deleted):
    view = ChatView(risky_agent(deleted))
    ask_from_the_box(view)
    with pytest.raises(RuntimeError, match="still answering"):
        view.send("What is 1 + 1?")
    view.input.value = "What is 1 + 1?"
    view.button.click()  # the box is disabled in the page; a click that gets through anyway does nothing
    assert len(view.turns) == 1
    view.approve_button.click()
    view.approve_button.click()  # a second click on the same call is ignored
    assert view.wait(5) and len(deleted) == 1
    assert view.send("What is (2 + 3) * 4?") and len(view.turns) == 2


def test_closing_the_view_denies_the_waiting_call(deleted):
    view = ChatView(risky_agent(deleted))
    ask_from_the_box(view)
    view.close()
    assert view.wait(5) and deleted == []
    assert "denied: the chat was closed" in tool_lines(view)[0]


def test_approve_callback_decides_instead_of_the_buttons(deleted):
    asked = []
    view = ChatView(risky_agent(deleted), approve=lambda call: asked.append(call["name"]) or True)
    assert view.send(DELETE) and len(deleted) == 1 and asked == ["delete_file"]
    assert "· approved -> deleted" in tool_lines(view)[0]
    shown = panel_shown(view)
    view.input.value = DELETE
    view.button.click()  # from the box too: the function decides, no panel
    assert view.wait(5) and not shown.is_set() and len(deleted) == 2 and len(asked) == 2

    no = ChatView(risky_agent(deleted), approve=lambda call: "not today")
    no.send(DELETE)
    assert len(deleted) == 2 and "· denied: not today -> error Error: the user did not approve" in tool_lines(no)[0]
    with pytest.raises(TypeError, match="approve must be a function"):
        ChatView(risky_agent(deleted), approve="yes")


def test_send_from_code_without_an_approver_denies(deleted):
    view = ChatView(risky_agent(deleted))
    shown = panel_shown(view)
    answer = view.send(DELETE)  # never waits for a click
    assert answer and deleted == [] and not shown.is_set() and view.pending is None
    assert "· denied: no one was asked (no approve callback was given) -> error Error: the user did not approve" in tool_lines(view)[0]
    # The agent's own approver decides when the view has none.
    trusting = ChatView(risky_agent(deleted, approve=lambda call: True))
    trusting.send(DELETE)
    assert len(deleted) == 1 and "· approved -> deleted" in tool_lines(trusting)[0]


def test_a_tool_without_approval_shows_no_decision(chat):
    chat.send("What is (2 + 3) * 4?")
    assert tool_lines(chat) == ['  tool calculate({"expression": "(2 + 3) * 4"}) -> 20']
    assert "miniagent-decision" not in chat.transcript.value


def test_an_async_agent_is_refused_with_a_reason():
    from miniagent.aloop import AsyncAgent
    from miniagent.aclient import connect_async

    with pytest.raises(TypeError, match="sync Agent"):
        ChatView(AsyncAgent(connect_async(offline=True, quiet=True)))


def test_the_panel_never_waits_on_the_main_thread(deleted):
    """There the click could never arrive: the registry takes the error as a denial instead of a hang."""
    agent = risky_agent(deleted)
    view = ChatView(agent)
    agent.approve = view.ask_in_panel  # a mistake: send() runs on the main thread
    safety = threading.Timer(3, lambda: view.decide(False, "the guard did not work"))  # fail, never hang
    safety.start()
    try:
        view.send(DELETE)
    finally:
        safety.cancel()
    assert deleted == [] and "the guard did not work" not in repr(view)
    assert "no one was asked (the approve callback raised RuntimeError: ask_in_panel waits for a click" in repr(view)


def test_two_calls_in_one_round_are_asked_one_at_a_time(deleted):
    view = ChatView(risky_agent(deleted))
    both = [{"type": "tool_use", "name": "delete_file", "input": {"path": p}} for p in ("a.txt", "b.txt")]
    view.agent.client.mock.script({"content": both, "stop_reason": "tool_use"}, {"content": "Done: one of the two."})
    ask_from_the_box(view)
    assert view.pending["input"] == {"path": "a.txt"}
    second = panel_shown(view)
    view.approve_button.click()
    assert second.wait(5) and view.pending["input"] == {"path": "b.txt"}
    assert deleted == []  # no tool of the round starts before every call is decided
    view.deny_button.click()
    assert view.wait(5) and deleted == ["a.txt"]
    assert [line.split(" -> ")[0] for line in tool_lines(view)] == [
        '  tool delete_file({"path": "a.txt"}) · approved by you',
        '  tool delete_file({"path": "b.txt"}) · denied by you']


def test_the_chat_speaks_the_learners_language(monkeypatch):
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    view = ChatView(Agent(connect(offline=True, quiet=True), builtin_tools.default_tools()))
    assert (view.button.description, view.input.placeholder) == ("发送", "向 Agent 提问…")
    assert (view.approve_button.description, view.deny_button.description) == ("批准", "拒绝")
    view.send("What is 6 * 7?")
    page = view.transcript.value
    assert "你：" in page and "Agent：" in page and "工具：calculate" in page and "结果：" in page and "42" in page
    assert "调用模型 2 次" in view.tokens.value
    assert repr(view).splitlines() == [  # the text form, what a saved notebook of the Chinese edition shows
        f"ChatView · 1 个问题 · {view.token_line()}", "你：What is 6 * 7?",
        '  工具 calculate({"expression": "6 * 7"}) -> 42', "Agent：(mock) 6 * 7 = 42"]
    assert view.token_line().startswith("token：输入 ") and view.token_line().endswith(" · 调用模型 2 次")
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    assert repr(view).splitlines()[1:] == [
        "you: What is 6 * 7?", '  tool calculate({"expression": "6 * 7"}) -> 42', "agent: (mock) 6 * 7 = 42"]
    assert repr(view).startswith("ChatView · 1 question(s) · tokens: ") and view.token_line().endswith(" 2 model calls")


def test_a_chinese_answer_spread_over_lines_stays_under_its_label(monkeypatch):
    from miniagent.widgets import _indent

    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    view = ChatView(Agent(connect(offline=True, quiet=True)))
    view.turns.append({"question": "第一行\n第二行", "tools": [], "answer": "甲\n乙", "stopped": "max_iterations: 到上限了"})
    assert repr(view).splitlines()[1:] == ["你：第一行", "    第二行", "Agent：甲", "       乙", "［已停止：max_iterations: 到上限了］"]
    assert _indent("a\nb", "  ") == "a\n  b"


def test_a_trace_view_heads_its_columns_in_the_learners_language(monkeypatch):
    agent = Agent(connect(offline=True, quiet=True), builtin_tools.default_tools())
    agent.run("What is 6 * 7?")
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    assert "<th>耗时</th><th>类型</th>" in TraceView(agent.trace).value
    monkeypatch.setenv("MINIAGENT_LANG", "en")
    assert "<th>elapsed</th><th>type</th><th style='text-align:left'>what</th>" in TraceView(agent.trace).value
