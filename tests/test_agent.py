"""Agent: the article's demo offline, history across questions, clean failure, verbose output, callbacks."""

from datetime import datetime, timezone

import pytest

from miniagent import builtin_tools, connect
from miniagent.agent import DEFAULT_SYSTEM, Agent, RoundPrinter
from miniagent.builtin_tools import default_tools
from miniagent.messages import conversation_error, text_of, tool_uses
from miniagent.tools import tool

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
FIXED = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)  # 14:23:11 in Shanghai, as in the article


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: FIXED)


@pytest.fixture
def llm():
    return connect(offline=True, quiet=True)


@pytest.fixture
def agent(llm):
    return Agent(llm)


def test_demo_question_four_parallel_calls_then_an_answer(agent, llm):
    result = agent.run(DEMO)
    assert result.ok and result.stop == "end_turn" and result.iterations == 2
    calls = [(e["name"], e["input"]) for e in agent.trace.of_type("tool_call")]
    assert calls == [("get_current_time", {}), ("calculate", {"expression": "(1024 + 768) * 2"}),
                     ("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]
    assert {e["iteration"] for e in agent.trace.of_type("tool_call")} == {1}
    assert "3584" in result.text and "北京" in result.text and "上海" in result.text
    assert "2026-05-09 14:23:11" in result.text
    assert len(llm.mock.requests) == 2 and [r["status"] for r in llm.mock.requests] == [200, 200]
    assert result.text == agent.history[-1]["content"][0]["text"]
    assert conversation_error(agent.history) is None


def test_request_carries_system_prompt_and_tool_schemas(agent, llm):
    agent.run(DEMO)
    body = llm.mock.requests[0]["body"]
    assert body["system"] == DEFAULT_SYSTEM
    assert [t["name"] for t in body["tools"]] == ["get_weather", "get_current_time", "calculate"]


def test_history_is_kept_across_questions(agent, llm):
    agent.run("What is (2 + 3) * 4?")
    first = list(agent.history)
    assert [m["role"] for m in first] == ["user", "assistant", "user", "assistant"]
    agent.run("What is the weather in Paris?")
    sent = llm.mock.requests[-2]["body"]["messages"]  # the first call of the second question
    assert sent[:4] == first and sent[4] == {"role": "user", "content": "What is the weather in Paris?"}
    assert agent.history[:4] == first and len(agent.history) == 8


def test_multi_turn_recall_and_reset_forgets(agent):
    agent.chat("Hi, my name is Ada.")
    assert "Ada" in agent.chat("What is my name?")
    agent.reset()
    assert agent.history == [] and len(agent.trace) == 0 and agent.last_result is None
    assert "Ada" not in agent.chat("What is my name?")
    assert len(agent.history) == 2


def test_reset_sends_only_the_new_question(agent, llm):
    agent.run("What is 6 * 7?")
    agent.reset()
    agent.run("Hello!")
    assert llm.mock.requests[-1]["body"]["messages"] == [{"role": "user", "content": "Hello!"}]


def test_api_error_restores_history_and_retry_works(llm):
    agent = Agent(connect(offline=True, quiet=True, max_retries=0))
    agent.run("What is 6 * 7?")
    before = [dict(m) for m in agent.history]
    agent.client.mock.fault(400, message="injected bad request")
    result = agent.run(DEMO)
    assert result.stop == "api_error" and not result.ok and result.error.status == 400
    assert agent.history == before
    assert agent.trace.summary()["api_errors"] == 1
    retry = agent.run(DEMO)
    assert retry.ok and "3584" in retry.text
    assert sum(1 for m in agent.history if m["content"] == DEMO) == 1
    assert conversation_error(agent.history) is None


def test_api_error_after_a_tool_round_leaves_nothing_half_appended():
    """The second model call fails after the tools ran: the tool_use/tool_result pair is not kept."""
    client = connect(offline=True, quiet=True, max_retries=0)

    def fail_next_call(event):
        if event["type"] == "usage" and event["iteration"] == 1:  # after the first call succeeded
            client.mock.fault(500)

    agent = Agent(client, on_step=fail_next_call)
    result = agent.run(DEMO)
    assert result.stop == "api_error" and result.iterations == 2
    assert agent.history == [] and "500" in result.reason
    assert len(agent.trace.of_type("tool_result")) == 4  # the tools did run, and the trace says so
    agent.on_step = None
    assert "3584" in agent.chat(DEMO) and len(agent.history) == 4


def test_chat_says_when_the_api_failed():
    agent = Agent(connect(offline=True, quiet=True, max_retries=0))
    agent.client.mock.fault(500)
    assert agent.chat("Hello!").startswith("[stopped: the API call failed: 500 api_error: Internal server error")


def test_chat_returns_text_and_says_why_it_stopped(llm):
    agent = Agent(llm, max_iterations=1)
    answer = agent.chat(DEMO)
    assert answer.endswith("[stopped: stopped after 1 model calls (max_iterations=1)]")
    assert agent.last_result.stop == "max_iterations"
    # the history keeps the finished tool round, and it is still a valid conversation
    assert conversation_error(agent.history) is None and len(agent.history) == 3


def test_chat_returns_the_answer_text(agent):
    answer = agent.chat("What is (1024 + 768) * 2?")
    assert "3584" in answer and "[stopped" not in answer


def test_usage_is_cumulative_and_matches_the_mock(agent, llm):
    agent.run(DEMO)
    agent.run("What is 2 + 2?")
    reported = [r["response"]["usage"] for r in llm.mock.requests]
    assert agent.usage.input_tokens == sum(u["input_tokens"] for u in reported)
    assert agent.usage.output_tokens == sum(u["output_tokens"] for u in reported)
    assert agent.usage.calls == len(reported) == agent.trace.summary()["model_calls"]
    assert agent.trace.summary()["total_tokens"] == agent.usage.total_tokens
    agent.reset()
    assert agent.usage.calls == len(reported)  # tokens spent stay spent


def test_on_step_sees_every_event_in_order(llm):
    seen = []
    agent = Agent(llm, on_step=seen.append)
    agent.run(DEMO)
    assert seen == agent.trace.events
    kinds = [e["type"] for e in seen]
    assert kinds[:3] == ["question", "request", "response"] and kinds[-1] == "stop"
    assert kinds.count("tool_call") == kinds.count("tool_result") == 4 and kinds.count("usage") == 2
    assert all("t" in e and "elapsed" in e for e in seen)


def test_policy_decides_what_is_sent(llm):
    class LastMessageOnly:
        def __init__(self):
            self.calls = 0

        def view(self, messages):
            self.calls += 1
            return messages[-1:]

        def on_tool_results(self, results):
            return results

    policy = LastMessageOnly()
    agent = Agent(llm, policy=policy)
    agent.run("Hello!")
    agent.run("How are you?")
    assert policy.calls == 2
    assert llm.mock.requests[-1]["body"]["messages"] == [{"role": "user", "content": "How are you?"}]
    assert len(agent.history) == 4  # the policy shortens what is sent, never what is kept


def test_sequential_and_parallel_give_the_same_history():
    runs = []
    for parallel in (True, False):
        agent = Agent(connect(offline=True, quiet=True), parallel=parallel)
        agent.run(DEMO)
        runs.append(agent.history)
    assert runs[0] == runs[1]


def test_custom_tools_and_no_tools(llm):
    @tool
    def shout(text: str) -> str:
        """Shout a text back in capital letters.

        Args:
            text: the text to shout
        """
        return text.upper()

    agent = Agent(llm, [shout])
    assert agent.tools.names == ["shout"]
    plain = Agent(llm, [])
    plain.run("What is the weather in Paris?")
    assert "tools" not in llm.mock.requests[-1]["body"]
    assert not tool_uses(plain.history[-1])


def test_default_client_and_tools_come_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    agent = Agent()
    assert agent.client.mode == "offline" and agent.tools.names == default_tools().names
    assert "offline (mock API)" in capsys.readouterr().out
    assert "Agent(tools=[get_weather, get_current_time, calculate], messages=0" in repr(agent)


@pytest.mark.parametrize("question", ["", "   ", None, 42])
def test_bad_question(agent, question):
    with pytest.raises(ValueError, match="non-empty string"):
        agent.run(question)
    assert agent.history == [] and len(agent.trace) == 0


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_max_iterations(llm, bad):
    with pytest.raises(ValueError, match="max_iterations must be a positive integer"):
        Agent(llm, max_iterations=bad)


# --- verbose output -----------------------------------------------------------------------


def test_verbose_prints_round_by_round(llm, capsys):
    Agent(llm, verbose=True).run(DEMO)
    out = capsys.readouterr().out
    round1, rest = out.split("--- round 1 ---", 1)[1].split("--- round 2 ---", 1)
    assert round1.count("tool call:") == 4 and round1.count("  result:") == 4
    assert round1.index("get_current_time({})") < round1.index('calculate({"expression": "(1024 + 768) * 2"})') \
        < round1.index('get_weather({"city": "北京"})') < round1.index('get_weather({"city": "上海"})')
    assert "  result: 2026-05-09 14:23:11 (Asia/Shanghai), Saturday" in round1 and "  result: 3584" in round1
    assert "tool call:" not in rest and "Final answer:" in rest and "3584" in rest.split("Final answer:")[1]


def test_verbose_reports_a_stop(llm, capsys):
    Agent(llm, verbose=True, max_iterations=1).run(DEMO)
    out = capsys.readouterr().out
    assert "Stopped (max_iterations): stopped after 1 model calls" in out and "Final answer" not in out


def test_quiet_by_default(agent, capsys):
    agent.run(DEMO)
    assert capsys.readouterr().out == ""


def test_round_printer_orders_results_by_call_and_clips_them():
    lines = []
    printer = RoundPrinter(lines.append)
    printer({"type": "request", "iteration": 1})
    printer({"type": "response", "stop_reason": "tool_use", "content": [{"type": "text", "text": "Let me look."}]})
    printer({"type": "tool_call", "id": "a", "name": "slow", "input": {"x": 1}})
    printer({"type": "tool_call", "id": "b", "name": "fast", "input": {}})
    printer({"type": "tool_result", "id": "b", "name": "fast", "content": "y" * 300})
    assert lines == ["\n--- round 1 ---", "model: Let me look."]  # waits for the round's last result
    printer({"type": "tool_result", "id": "a", "name": "slow", "content": "Error: boom", "is_error": True})
    assert lines[2:] == ['tool call: slow({"x": 1})', "  error: Error: boom", "tool call: fast({})",
                         "  result: " + "y" * 100 + "…"]


def test_response_text_is_shown_once(llm, capsys):
    Agent(llm, verbose=True).run(DEMO)
    out = capsys.readouterr().out
    first_text = text_of(llm.mock.requests[0]["response"])
    assert out.count(first_text) == 1
