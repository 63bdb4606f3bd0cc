"""miniagent/tiny.py, the whole agent of notebooks 01–05 in one file, against the strict mock.

It must behave as the package does where both do the same job (the article's demo question:
the same tool calls in the same rounds, the same answer), stay valid through a tight window,
run live with the same variables, fail cleanly on every bad input, and stay tiny.
"""

import ast
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx2
import pytest

import miniagent
from miniagent import builtin_tools, tiny
from miniagent.agent import DEFAULT_SYSTEM
from miniagent.mock import MockAPI
from miniagent.mock.server import serve_in_thread

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
SOURCE = Path(tiny.__file__)


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc))


def demo_tools():
    """The package's three demo tools, as tiny builds them from the same functions."""
    return [tiny.tool(t.fn) for t in (builtin_tools.get_weather, builtin_tools.get_current_time,
                                      builtin_tools.calculate)]


def mocked(mock=None):
    return tiny.LLM("mock-key", base_url="http://miniagent-mock.invalid", transport=(mock or MockAPI()).transport())


def package_rounds(result):
    rounds = []
    for message in result.messages:
        if message["role"] == "assistant":
            rounds.append([(b["name"], b["input"]) for b in miniagent.tool_uses(message)])
    return rounds


def test_the_demo_question_takes_the_same_rounds_and_answer_as_the_package():
    small = tiny.Agent(mocked(), demo_tools(), system=DEFAULT_SYSTEM).run(DEMO)
    big = miniagent.Agent(miniagent.connect(offline=True, quiet=True), builtin_tools.default_tools()).run(DEMO)
    assert small.stop == big.stop == "end_turn"
    assert small.rounds == package_rounds(big)
    assert len(small.rounds[0]) == 4 and small.rounds[1] == []  # four tools at once, then the answer
    assert small.text == big.text and "3584" in small.text


def test_the_schema_is_the_one_the_package_sends_for_the_same_function():
    """Names, types, required and defaults agree (the package adds the docstring's parameter descriptions)."""
    def bare(schema):
        return {**schema, "properties": {name: {k: v for k, v in prop.items() if k != "description"}
                                         for name, prop in schema["properties"].items()}}
    package = {s["name"]: s for s in builtin_tools.default_tools().schemas()}
    for ours in tiny.Tools(demo_tools()).schemas():
        theirs = package[ours["name"]]
        assert ours["description"] == theirs["description"]
        assert bare(ours["input_schema"]) == {"required": [], **bare(theirs["input_schema"])}


def test_a_long_conversation_through_a_tight_window_is_never_a_400():
    """The strict mock answers 400 to a tool_result whose tool_use was cut away: tiny never sends one."""
    agent = tiny.Agent(mocked(), demo_tools(), max_messages=4)
    questions = ["What's the weather in Paris?", "And what is 17 * 23?", "What time is it in Tokyo?",
                 "Weather in Beijing and Shanghai?", "What is (2 + 3) * 4?"] * 3
    for question in questions:
        result = agent.run(question)  # an APIError (the mock's 400) would raise here
        assert result.stop == "end_turn", question
    assert len(agent.history) > 4 * len(questions) // 2  # the agent keeps everything; only the view is cut


def test_the_window_keeps_the_anchor_and_cuts_only_between_pairs():
    history = [{"role": "user", "content": "q1"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
               {"role": "user", "content": "q2"}]
    assert tiny.window(history, 10) == history
    assert tiny.window(history, 3) == [history[0], history[3], history[4]]
    view = tiny.window(history, 2)  # nothing fits: the smallest valid view, never an orphan result
    assert view == [history[0], history[4]]


def test_live_mode_works_with_the_same_variables(monkeypatch):
    """ANTHROPIC_API_KEY and MINIAGENT_BASE_URL: the mock over HTTP stands in for the real API."""
    server, base_url = serve_in_thread()
    try:
        monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
        monkeypatch.setenv("MINIAGENT_BASE_URL", base_url)
        llm = tiny.connect()
        assert str(llm.http.base_url).rstrip("/") == base_url.rstrip("/")
        result = tiny.Agent(llm, demo_tools(), system=DEFAULT_SYSTEM).run(DEMO)
        assert result.stop == "end_turn" and "3584" in result.text
        monkeypatch.delenv("MINIAGENT_BASE_URL")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)  # the official SDK's variable works too
        assert tiny.Agent(tiny.connect(), demo_tools()).run("What is 6 * 7?").stop == "end_turn"
    finally:
        server.shutdown()
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    assert str(tiny.connect().http.base_url).startswith("http://miniagent-mock.invalid")


def test_stop_reasons_and_budgets():
    mock = MockAPI()
    llm = mocked(mock)
    tools = tiny.Tools(demo_tools())
    question = [{"role": "user", "content": "What's the weather in Paris?"}]
    mock.script({"content": [{"type": "text", "text": "Let me lo"}], "stop_reason": "max_tokens"})
    assert tiny.run(llm, question, tools).stop == "max_tokens"
    mock.script({"content": [{"type": "text", "text": "No."}], "stop_reason": "refusal"})
    assert tiny.run(llm, question, tools).stop == "refusal"
    # a tool call cut by max_tokens is never run, but answered, so the history stays valid
    mock.script({"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": "Par"}}],
                 "stop_reason": "max_tokens"})
    cut = tiny.run(llm, question, tools)
    assert cut.stop == "max_tokens" and cut.messages[-1]["content"][0]["is_error"] is True
    assert tiny.run(llm, cut.messages + [{"role": "user", "content": "go on"}], tools).stop == "end_turn"
    mock.script({"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}]}, repeat=True)
    looping = tiny.run(llm, question, tools, max_iterations=3)
    assert looping.stop == "max_iterations" and looping.iterations == 3
    budget = tiny.run(llm, question, tools, token_budget=1)
    assert budget.stop == "token_budget" and budget.iterations == 1 and budget.tokens >= 1


def slow(seconds: float) -> str:
    """Sleeps."""
    time.sleep(seconds)
    return "woke"


def boom(what: str) -> str:
    """Raises."""
    raise RuntimeError(f"no {what}")


def huge(n: int) -> str:
    """Returns n characters."""
    return "x" * n


def test_every_bad_tool_call_is_an_error_result_the_model_can_read():
    tools = tiny.Tools([tiny.tool(slow, timeout=0.2), tiny.tool(boom), tiny.tool(huge)])
    call = lambda name, args: {"type": "tool_use", "id": "t1", "name": name, "input": args}  # noqa: E731
    assert "unknown tool 'nope'" in tools.run(call("nope", {}))["content"]
    assert "missing ['what']" in tools.run(call("boom", {}))["content"]
    assert "n must be a JSON integer" in tools.run(call("huge", {"n": "12"}))["content"]
    assert "n must be a JSON integer" in tools.run(call("huge", {"n": True}))["content"]
    assert "unknown ['x']" in tools.run(call("boom", {"what": "a", "x": 1}))["content"]
    assert "raised RuntimeError: no luck" in tools.run(call("boom", {"what": "luck"}))["content"]
    assert "longer than 0.2 s" in tools.run(call("slow", {"seconds": 5}))["content"]
    clipped = tools.run(call("huge", {"n": 10**6}))
    assert len(clipped["content"]) < tiny.MAX_RESULT_CHARS + 100 and "1,000,000 characters" in clipped["content"]
    assert all(tools.run(call(n, a)).get("is_error") for n, a in [("nope", {}), ("boom", {"what": "x"})])
    assert "is_error" not in tools.run(call("huge", {"n": 3}))
    def undocumented(x: str) -> str:
        return x
    with pytest.raises(ValueError, match="no docstring"):
        tiny.tool(undocumented)
    with pytest.raises(TypeError, match=r"untyped\(x\): give it one of the types"):
        tiny.tool(lambda x: x, name="untyped")


def test_parallel_tools_run_at_the_same_time_and_answer_in_order():
    """Four calls that each wait for the other three: only calls run at once can all get through."""
    import threading
    barrier = threading.Barrier(4, timeout=5)

    def meet(i: int) -> str:
        """Waits for the others."""
        barrier.wait()
        return f"met {i}"

    tools = tiny.Tools([tiny.tool(meet)])
    calls = [{"type": "tool_use", "id": f"t{i}", "name": "meet", "input": {"i": i}} for i in range(4)]
    results = tools.run_all(calls)
    assert [(r["tool_use_id"], r["content"]) for r in results] == [(f"t{i}", f"met {i}") for i in range(4)]
    barrier = threading.Barrier(2, timeout=0.1)  # `meet` reads this name when called
    one_by_one = tools.run_all(calls[:2], parallel=False)  # one after another, the first waits in vain
    assert one_by_one[0]["is_error"] and "BrokenBarrierError" in one_by_one[0]["content"]


def test_api_errors_are_clear_retried_when_worth_it_and_never_show_the_key():
    mock = MockAPI()
    llm = mocked(mock)
    mock.fault(429, times=2, retry_after=0.01)  # (a 529 is retried the same way, after 0.5 s, then 1 s)
    assert llm.create([{"role": "user", "content": "hi"}])["stop_reason"] == "end_turn"  # tried again
    key = "sk-ant-secret-0123456789abcdef"
    denied = tiny.LLM(key, transport=httpx2.MockTransport(lambda r: httpx2.Response(
        401, json={"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})))
    with pytest.raises(tiny.APIError) as err:
        denied.create([{"role": "user", "content": "hi"}])
    assert err.value.status == 401 and err.value.type == "authentication_error" and key not in str(err.value)
    garbage = tiny.LLM("k", transport=httpx2.MockTransport(lambda r: httpx2.Response(200, text="<html>oops")))
    with pytest.raises(tiny.APIError, match="not a message"):
        garbage.create([{"role": "user", "content": "hi"}])

    def hang(request):
        raise httpx2.ReadTimeout("timed out", request=request)
    with pytest.raises(tiny.APIError, match="in time"):
        tiny.LLM("k", transport=httpx2.MockTransport(hang)).create([{"role": "user", "content": "hi"}])


def test_a_failed_run_leaves_the_history_as_it_was():
    mock = MockAPI()
    agent = tiny.Agent(mocked(mock), demo_tools())
    agent.run("What's the weather in Paris?")
    before = list(agent.history)
    mock.fault(400, times=1)
    with pytest.raises(tiny.APIError):
        agent.run("And in Beijing?")
    assert agent.history == before


def test_tiny_stays_tiny_and_needs_only_httpx_and_the_standard_library():
    lines = SOURCE.read_text().splitlines()
    assert len(lines) <= 300, f"tiny.py has {len(lines)} lines; the promise is a file you read in one sitting"
    tree = ast.parse(SOURCE.read_text())
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
    assert top - set(sys.stdlib_module_names) - {"__future__"} == {"httpx2"}
    inner = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
             and node not in tree.body}
    assert inner <= {"miniagent.mock"}  # the mock, lazily, offline only


def test_a_tool_that_hangs_for_ever_neither_holds_the_run_nor_the_exit_of_python():
    import subprocess
    program = ("import time\nfrom miniagent import tiny\n"
               "def hang(x: int) -> str:\n    'Hangs.'\n    time.sleep(3600)\n"
               "print(tiny.Tools([tiny.tool(hang, timeout=0.2)]).run({'id': 'a', 'name': 'hang', 'input': {'x': 1}}))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "took longer than 0.2 s" in done.stdout
