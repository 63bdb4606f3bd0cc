"""Exercise checks graded against a live model that does not play along (a small local one rarely
calls a tool, and llama.cpp ignores disable_parallel_tool_use): the reference solution still passes,
a wrong one still fails, and the check says in one line what the live model did.

"Live" here is the mock behind a client in live mode, scripted to behave like such a model."""

from __future__ import annotations

import miniagent
from miniagent import exercises
from miniagent.builtin_tools import default_tools
from miniagent.exercises import DONE, NOT_YET
from miniagent.mock import MockAPI, scripts
from miniagent.tools import tool

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def live_model(*responses, repeat=True):
    """A client in live mode whose model answers with `responses` (scripted on a mock of its own)."""
    mock = MockAPI()
    mock.script(*responses, repeat=repeat)
    return miniagent.Client(api_key="any-key", base_url="http://live.invalid", transport=mock.transport(),
                            mode="live", sleep=lambda s: None)


@tool(name="get_local_time")
def reference_clock(city: str) -> str:
    """Get the current local time in a city.

    Args:
        city: the city, e.g. Tokyo or 东京
    """
    return "12:00"


@tool
def tool_a(city: str) -> str:
    """Your description here.

    Args:
        city: ...
    """
    return "12:00"


def test_02_1_a_live_model_that_calls_no_tool_leaves_the_grading_to_the_mock(capsys):
    llm = live_model(scripts.text("Tokyo is a big city in Japan."))
    verdict = exercises.check_02_1(reference_clock, llm)
    assert verdict.kind == DONE, verdict
    said = capsys.readouterr().out
    assert "live, asked 'What time is it in Tokyo?', the model called no tool" in said
    assert "graded on the check's own mock instead" in said
    verdict = exercises.check_02_1(tool_a, live_model(scripts.text("I don't know.")))
    assert verdict.kind == NOT_YET and "called no tool" in verdict.hint, verdict  # the mock refuses it too


def test_02_1_a_live_model_that_picks_the_tool_grades_it_without_the_mock(capsys):
    def model(body):  # the time tool for the time, no tool for the weather
        asked = body["messages"][0]["content"]
        return scripts.tool_call("get_local_time", {"city": "Tokyo"}) if "Tokyo" in asked else scripts.text("Rain.")
    llm = live_model(model)
    assert exercises.check_02_1(reference_clock, llm).kind == DONE
    assert capsys.readouterr().out == ""


def test_03_2_live_grades_the_request_and_says_what_the_model_did(capsys):
    tools = default_tools()
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    llm = live_model(scripts.text("It is sunny and the answer is 42."))
    result = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools, tool_choice=choice)
    verdict = exercises.check_03_2(result, llm)
    assert verdict.kind == DONE, verdict
    assert "live, the model called 0 tools in 1 round and the run ended with 'end_turn'" in capsys.readouterr().out

    both = scripts.tool_call("calculate", {"expression": "1 + 1"})
    both["content"].append({"type": "tool_use", "id": "toolu_second", "name": "calculate", "input": {"expression": "2"}})
    llm = live_model(both, scripts.text("2 and 2."), repeat=False)  # a server that ignores the flag
    result = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools, tool_choice=choice)
    assert exercises.check_03_2(result, llm).kind == DONE
    assert "the model called 2 tools in 2 rounds" in capsys.readouterr().out


def test_03_2_live_still_refuses_a_run_without_the_flag(capsys):
    llm = live_model(scripts.text("It is sunny."))
    result = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=default_tools())
    verdict = exercises.check_03_2(result, llm)
    assert verdict.kind == NOT_YET and "disable_parallel_tool_use" in verdict.hint, verdict
    assert capsys.readouterr().out == ""


def test_00_1_on_a_provider_speaking_chat_completions():
    """The client's record keeps the wire's JSON, in Chat Completions' own shape: the check reads it as the client did."""
    llm = miniagent.connect(offline=True, provider="openai", quiet=True)
    cut = llm.create([{"role": "user", "content": "Tell me about the moon."}], max_tokens=5)
    assert llm.last.response.get("choices"), "the record is not in Chat Completions' shape: this test tests nothing"
    assert exercises.check_00_1(cut, llm).kind == DONE
    whole = llm.create([{"role": "user", "content": "Hi"}])
    verdict = exercises.check_00_1(whole, llm)
    assert verdict.kind == NOT_YET and "'end_turn'" in verdict.hint and "fewer tokens" in verdict.hint, verdict
    forged = {**whole, "stop_reason": "max_tokens"}
    assert exercises.check_00_1(forged, llm).kind == NOT_YET
