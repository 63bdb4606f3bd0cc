"""The mock's brain with several agents (notebook 10): specialists behind tools, hand-offs, a plan tool.

Each pattern in English and Chinese, with the exact calls, tasks, plan steps and answers,
and the rules that keep them sane: one specialist only when one is needed, a transfer
always alone, no hand-off straight back (no ping-pong), no plan for a single call, and
nothing changed for requests without these tools.
"""

from __future__ import annotations

import json

import pytest

from miniagent import DEFAULT_MODEL
from miniagent.builtin_tools import default_tools
from miniagent.messages import text_of, tool_uses
from miniagent.mock.brain import respond
from miniagent.mock.reading import is_delegate, plan_fields, tasks, transfer_target

TOOLS = default_tools()
WEATHER, TIME, CALC = (next(t for t in TOOLS.schemas() if t["name"] == n)
                       for n in ("get_weather", "get_current_time", "calculate"))
TASK = {"type": "object", "properties": {"task": {
    "type": "string", "description": "The task, self-contained: the specialist sees nothing else of this conversation."}},
    "required": ["task"]}
WEATHER_EXPERT = {"name": "weather_expert", "input_schema": TASK, "description": (
    "A weather specialist: knows the current weather and temperature of any city. "
    "Give it one self-contained task; it answers with a short result.")}
MATH_EXPERT = {"name": "math_expert", "input_schema": TASK, "description": (
    "A math specialist: calculates arithmetic, percentages and totals exactly. "
    "Give it one self-contained task; it answers with a short result.")}
SPECIALISTS = {"weather_expert": [WEATHER], "math_expert": [CALC]}  # each specialist's own tools


def transfer(name: str, about: str) -> dict:
    return {"name": f"transfer_to_{name}",
            "description": f"Hand the conversation to {name}: {about}. Call this when the user's question is "
                           f"about that; {name} then answers the user directly.",
            "input_schema": {"type": "object", "properties": {"reason": {"type": "string",
                                                                         "description": "Why, in a few words."}}}}


TO_WEATHER = transfer("weather_desk", "answers questions about the weather in any city")
TO_MATH = transfer("math_desk", "calculates arithmetic exactly")
TRANSFERRED = "Transferred to {}; it answers from here."
PLAN = {"name": "update_plan", "description": (
    "Write your plan for the task as a list of steps, and keep it up to date: call it first with every step "
    "(done: false), and again when you have finished steps, marking them done. The latest plan is what remains to do."),
    "input_schema": {"type": "object", "properties": {"steps": {"type": "array", "items": {
        "type": "object", "properties": {"step": {"type": "string"}, "done": {"type": "boolean"}},
        "required": ["step", "done"]}}}, "required": ["steps"]}}

EN = "What is the weather in Paris and Tokyo, and what is 1299 * 0.85?"
ZH = "巴黎和东京的天气怎么样？另外算一下 1299 * 0.85"
ONE_AT_A_TIME = {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}


def body(messages: list[dict], tools: list[dict], **extra) -> dict:
    return {"model": DEFAULT_MODEL, "max_tokens": 1024, "messages": messages, "tools": tools, **extra}


def checklist(steps: list[dict]) -> str:
    """What the package's plan tool answers (miniagent.planning.Plan.render)."""
    done = sum(s["done"] for s in steps)
    return "\n".join([f"Plan: {done} of {len(steps)} done"] + [f"[{'x' if s['done'] else ' '}] {s['step']}" for s in steps])


def execute(call: dict) -> str:
    """Run a call the way the notebook's agents do: real tools, a specialist as a whole agent of its own."""
    if call["name"] in SPECIALISTS:
        return drive(call["input"]["task"], SPECIALISTS[call["name"]])[1]
    if call["name"] == "update_plan":
        return checklist(call["input"]["steps"])
    if transfer_target(call):
        return TRANSFERRED.format(transfer_target(call))
    return TOOLS.run({**call, "type": "tool_use"})["content"]


def drive(question, tools, run=execute, messages=None, **extra):
    """A whole agent loop against the brain: (every turn as (text, calls), the final answer, the messages)."""
    messages, turns, n = list(messages or [{"role": "user", "content": question}]), [], 0
    for _ in range(10):
        response = respond(body(messages, tools, **extra))
        content = []
        for block in response["content"]:
            if block["type"] == "tool_use":
                n += 1
                block = {**block, "id": f"toolu_mock_{n:04d}"}
            content.append(block)
        messages.append({"role": "assistant", "content": content})
        turns.append((text_of({"content": content}), [(b["name"], b["input"]) for b in tool_uses(messages[-1])]))
        if response["stop_reason"] != "tool_use":
            return turns, turns[-1][0], messages
        results = []
        for call in tool_uses(messages[-1]):
            out = run(call)
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": out,
                            **({"is_error": True} if out.startswith("Error") else {})})
        messages.append({"role": "user", "content": results})
    raise AssertionError("the brain did not stop")


# --- specialists behind tools: an orchestrator --------------------------------------------------------


@pytest.mark.parametrize("question, said, weather_task, math_task", [
    (EN, "I'll ask weather_expert and math_expert.", "What is the weather in Paris and Tokyo?", "What is 1299 * 0.85?"),
    (ZH, "我来请 weather_expert 和 math_expert 帮忙。", "巴黎和东京的天气怎么样？", "算一下 1299 * 0.85。"),
])
def test_orchestrator_asks_each_specialist_its_own_part_in_one_turn(question, said, weather_task, math_task):
    turns, _, _ = drive(question, [WEATHER_EXPERT, MATH_EXPERT])
    assert turns[0] == (said, [("weather_expert", {"task": weather_task}), ("math_expert", {"task": math_task})])
    assert len(turns) == 2  # one round of specialists, then the answer


def test_orchestrator_combines_the_answers_one_line_each_without_their_marks():
    _, answer, _ = drive(EN, [WEATHER_EXPERT, MATH_EXPERT])
    assert answer == ("(mock) weather_expert: Paris: partly cloudy, 16°C, light breeze; "
                      "Tokyo: clearing up, 21°C, light breeze\nmath_expert: 1299 * 0.85 = 1104.15")
    _, answer, _ = drive(ZH, [WEATHER_EXPERT, MATH_EXPERT])
    assert answer == "（模拟）weather_expert：巴黎：晴间多云，16°C，微风；东京：多云转晴，21°C，微风\nmath_expert：1299 * 0.85 = 1104.15"


def test_each_specialist_answers_its_task_with_its_own_tools():
    turns, answer, _ = drive("What is the weather in Paris and Tokyo?", [WEATHER])
    assert turns[0][1] == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]
    assert answer == "(mock) Paris: partly cloudy, 16°C, light breeze\nTokyo: clearing up, 21°C, light breeze"
    turns, answer, _ = drive("算一下 1299 * 0.85。", [CALC])
    assert turns[0][1] == [("calculate", {"expression": "1299 * 0.85"})] and answer == "（模拟）1299 * 0.85 = 1104.15"


@pytest.mark.parametrize("question, expected", [
    ("What's the weather in Paris?", [("weather_expert", {"task": "What's the weather in Paris?"})]),
    ("What is 1299 * 0.85?", [("math_expert", {"task": "What is 1299 * 0.85?"})]),
    ("东京的天气怎么样？", [("weather_expert", {"task": "东京的天气怎么样？"})]),
    ("帮我算一下 12 * 7", [("math_expert", {"task": "帮我算一下 12 * 7。"})]),
])
def test_a_single_specialist_only_when_only_one_is_needed(question, expected):
    turns, _, _ = drive(question, [WEATHER_EXPERT, MATH_EXPERT])
    assert turns[0][1] == expected
    assert turns[0][0] == "I'll ask {}.".format(expected[0][0]) if question.isascii() else \
        turns[0][0] == "我来请 {} 帮忙。".format(expected[0][0])


def test_context_before_a_question_goes_with_it():
    question = "I'm flying to Tokyo tomorrow. What's the weather there, and what is 1299 * 0.85?"
    turns, _, _ = drive(question, [WEATHER_EXPERT, MATH_EXPERT])
    assert turns[0][1] == [("weather_expert", {"task": "I'm flying to Tokyo tomorrow. What's the weather there?"}),
                           ("math_expert", {"task": "What is 1299 * 0.85?"})]


def test_a_failed_specialist_is_reported_as_a_failure_and_not_retried():
    def failing(call):
        return "Error: math_expert stopped before answering (max_iterations)" if call["name"] == "math_expert" \
            else execute(call)
    turns, answer, _ = drive(EN, [WEATHER_EXPERT, MATH_EXPERT], failing)
    assert len(turns) == 2
    assert answer.endswith('\nmath_expert(task=What is 1299 * 0.85?) failed: '
                           '"Error: math_expert stopped before answering (max_iterations)"')


def test_the_task_cut_keeps_a_second_ask_in_the_same_clause_apart():
    assert tasks("What is the weather in Paris and what is 2 * 3?", [[12], [41]]) == \
        ["What is the weather in Paris?", "What is 2 * 3?"]
    assert tasks("What is the weather in Paris?", [[]]) == ["What is the weather in Paris?"]  # asked nowhere: all of it


# --- hand-offs ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("question, said, call", [
    ("What's the weather in Paris and Tokyo?", "I'll hand this over to weather_desk.",
     ("transfer_to_weather_desk", {"reason": "the question is about the weather"})),
    ("What is 1299 * 0.85?", "I'll hand this over to math_desk.",
     ("transfer_to_math_desk", {"reason": "the question is about arithmetic"})),
    ("巴黎的天气怎么样？", "我把这个问题转给 weather_desk。", ("transfer_to_weather_desk", {"reason": "问题与天气有关"})),
    ("帮我算一下 1299 * 0.85", "我把这个问题转给 math_desk。", ("transfer_to_math_desk", {"reason": "问题与计算有关"})),
])
def test_triage_calls_the_one_transfer_that_fits(question, said, call):
    response = respond(body([{"role": "user", "content": question}], [TO_WEATHER, TO_MATH]))
    assert text_of(response) == said
    assert [(b["name"], b["input"]) for b in response["content"] if b["type"] == "tool_use"] == [call]


def handed_over(question: str, target: str) -> list[dict]:
    """The history the receiving agent is sent: the question, the triage's transfer, its result."""
    return [{"role": "user", "content": question},
            {"role": "assistant", "content": [
                {"type": "text", "text": f"I'll hand this over to {target}."},
                {"type": "tool_use", "id": "toolu_mock_0001", "name": f"transfer_to_{target}",
                 "input": {"reason": "the question is about the weather"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_mock_0001",
                                          "content": TRANSFERRED.format(target)}]}]


@pytest.mark.parametrize("question, calls, answer", [
    ("What's the weather in Paris and Tokyo?", [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})],
     "(mock) Paris: partly cloudy, 16°C, light breeze\nTokyo: clearing up, 21°C, light breeze"),
    ("巴黎的天气怎么样？", [("get_weather", {"city": "巴黎"})], "（模拟）巴黎：晴间多云，16°C，微风"),
])
def test_the_agent_handed_the_conversation_answers_it_with_its_own_tools(question, calls, answer):
    turns, final, _ = drive(question, [WEATHER, TO_MATH], messages=handed_over(question, "weather_desk"))
    assert [t[1] for t in turns] == [calls, []]
    assert final == answer  # the transfer's result is not the answer, and is not quoted in it


def test_no_ping_pong_the_agent_just_handed_to_never_transfers_again():
    question = "What's the weather in Paris?"  # handed to the wrong desk: it has no tool for this
    response = respond(body(handed_over(question, "math_desk"), [CALC, TO_WEATHER]))
    assert response["stop_reason"] == "end_turn" and not tool_uses(response)
    assert text_of(response).startswith("(mock) None of the tools I was given (calculate, transfer_to_weather_desk)")


def test_the_agent_that_handed_over_says_so_if_it_is_asked_again():
    response = respond(body(handed_over("What's the weather in Paris?", "weather_desk"), [TO_WEATHER, TO_MATH]))
    assert text_of(response) == "(mock) I've handed this over to weather_desk; it answers from here."


def test_own_tools_first_and_never_a_transfer_with_another_call():
    response = respond(body([{"role": "user", "content": EN}], [WEATHER, TO_MATH]))
    assert [b["name"] for b in response["content"] if b["type"] == "tool_use"] == ["get_weather", "get_weather"]


def test_no_transfer_when_nothing_fits():
    response = respond(body([{"role": "user", "content": "Tell me a joke."}], [TO_WEATHER, TO_MATH]))
    assert not tool_uses(response) and text_of(response).startswith("(mock) None of the tools I was given")


def test_the_whole_hand_off_through_the_in_process_client():
    team = pytest.importorskip("miniagent.team")
    import miniagent
    from miniagent.agent import Agent
    client = miniagent.connect(offline=True, quiet=True)
    desk = lambda name, tool, about: Agent(client, [TOOLS.get(tool)], name=name, description=about)
    agents = [Agent(client, [], name="triage", description="routes the question"),
              desk("weather_desk", "get_weather", "answers questions about the weather in any city"),
              desk("math_desk", "calculate", "calculates arithmetic exactly")]
    result = team.handoff(agents, "What is 1299 * 0.85?")
    assert result.path == ["triage", "math_desk"] and result.text == "(mock) 1299 * 0.85 = 1104.15"
    result = team.handoff(agents, "东京的天气怎么样？")
    assert result.path == ["triage", "weather_desk"] and result.text == "（模拟）东京：多云转晴，21°C，微风"


# --- a plan tool -----------------------------------------------------------------------------------------

EN_STEPS = ["Look up the weather in Paris", "Look up the weather in Tokyo", "Calculate 1299 * 0.85"]
ZH_STEPS = ["查询巴黎的天气", "查询东京的天气", "计算 1299 * 0.85"]


def steps(texts, done):
    return {"steps": [{"step": s, "done": done} for s in texts]}


@pytest.mark.parametrize("question, texts, said", [
    (EN, EN_STEPS, ["I'll plan this first: 3 steps.", "I'll look up the weather in Paris and Tokyo and calculate 1299 * 0.85.",
                    "All 3 steps are done; I'll check them off."]),
    (ZH, ZH_STEPS, ["我先列一个计划：3 步。", "我来查询两座城市的天气，并计算表达式。", "3 步都完成了，我来把它们勾掉。"]),
])
def test_plan_first_then_the_calls_then_the_plan_checked_off_then_the_answer(question, texts, said):
    turns, answer, _ = drive(question, [WEATHER, CALC, TIME, PLAN])
    paris, tokyo = ("Paris", "Tokyo") if question == EN else ("巴黎", "东京")
    assert turns[:3] == [
        (said[0], [("update_plan", steps(texts, False))]),
        (said[1], [("get_weather", {"city": paris}), ("get_weather", {"city": tokyo}),
                   ("calculate", {"expression": "1299 * 0.85"})]),
        (said[2], [("update_plan", steps(texts, True))])]
    assert len(turns) == 4 and turns[3][1] == []
    _, unplanned, _ = drive(question, [WEATHER, CALC, TIME])
    assert answer == unplanned  # the same answer as without a plan: the plan is not quoted


def test_plan_with_one_call_per_turn_is_written_first_and_checked_off_after_the_last_call():
    turns, answer, _ = drive(EN, [WEATHER, CALC, PLAN], **ONE_AT_A_TIME)
    assert [t[1] for t in turns] == [
        [("update_plan", steps(EN_STEPS, False))], [("get_weather", {"city": "Paris"})],
        [("get_weather", {"city": "Tokyo"})], [("calculate", {"expression": "1299 * 0.85"})],
        [("update_plan", steps(EN_STEPS, True))], []]
    assert answer == ("(mock) Paris: partly cloudy, 16°C, light breeze\nTokyo: clearing up, 21°C, light breeze\n"
                      "1299 * 0.85 = 1104.15")


@pytest.mark.parametrize("question", ["What is 1299 * 0.85?", "东京的天气怎么样？", "Hello!", "Tell me a joke."])
def test_no_plan_for_a_question_needing_one_call_or_none(question):
    with_plan, answer, _ = drive(question, [WEATHER, CALC, PLAN])
    without, unplanned, _ = drive(question, [WEATHER, CALC])
    assert all(name != "update_plan" for _, calls in with_plan for name, _ in calls)
    assert [t[1] for t in with_plan] == [t[1] for t in without]
    if not question.startswith("Tell"):  # that answer lists the tools it was given
        assert answer == unplanned


def test_a_step_whose_call_failed_stays_open():
    def no_tokyo(call):
        return "Error: the weather service is down" if call["input"].get("city") == "Tokyo" else execute(call)
    turns, answer, _ = drive(EN, [WEATHER, CALC, PLAN], no_tokyo)
    assert turns[2] == ("2 of 3 steps are done; I'll check them off.", [("update_plan", {"steps": [
        {"step": "Look up the weather in Paris", "done": True}, {"step": "Look up the weather in Tokyo", "done": False},
        {"step": "Calculate 1299 * 0.85", "done": True}]})])
    assert 'get_weather(city=Tokyo) failed: "Error: the weather service is down"' in answer and len(turns) == 4


def test_an_orchestrator_with_a_plan_plans_its_specialists():
    turns, _, _ = drive(EN, [WEATHER_EXPERT, MATH_EXPERT, PLAN])
    assert turns[0][1] == [("update_plan", steps(["Ask weather_expert: What is the weather in Paris and Tokyo?",
                                                  "Ask math_expert: What is 1299 * 0.85?"], False))]
    assert [name for name, _ in turns[1][1]] == ["weather_expert", "math_expert"]


def test_the_plan_through_the_in_process_client_and_the_loop():
    planning = pytest.importorskip("miniagent.planning")
    import miniagent
    from miniagent.loop import run_loop
    from miniagent.messages import user
    client, plan = miniagent.connect(offline=True, quiet=True), planning.Plan()
    result = run_loop(client, [user(ZH)], tools=[TOOLS.get("get_weather"), TOOLS.get("calculate"), plan.tool])
    assert result.ok and result.iterations == 4 and plan.complete and [s["step"] for s in plan.steps] == ZH_STEPS
    assert result.text == "（模拟）巴黎：晴间多云，16°C，微风\n东京：多云转晴，21°C，微风\n1299 * 0.85 = 1104.15"


# --- nothing changes for other tools, and the same request gives the same bytes ------------------------------


def test_look_alike_tools_stay_ordinary_tools():
    todo = {"name": "add_todo", "description": "Add a task to the user's to-do list.",
            "input_schema": {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}}
    savings = {"name": "transfer_to_savings", "description": "Move money to the savings account.",
               "input_schema": {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}}
    settings = {"name": "update_settings", "description": "Turn features on or off.",
                "input_schema": {"type": "object", "properties": {"features": {"type": "array", "items": {
                    "type": "object", "properties": {"name": {"type": "string"}, "enabled": {"type": "boolean"}}}}}}}
    assert not is_delegate(todo) and transfer_target(savings) is None and plan_fields(settings) is None
    assert is_delegate(WEATHER_EXPERT) and transfer_target(TO_MATH) == "math_desk" and plan_fields(PLAN) == (
        "steps", "step", "done")
    response = respond(body([{"role": "user", "content": "Transfer 50 to my savings account"}], [savings]))
    assert [(b["name"], b["input"]) for b in response["content"] if b["type"] == "tool_use"] == [
        ("transfer_to_savings", {"amount": 50})]


@pytest.mark.parametrize("tools, messages", [
    ([WEATHER_EXPERT, MATH_EXPERT], [{"role": "user", "content": ZH}]),
    ([WEATHER, TO_MATH], handed_over("What's the weather in Paris?", "weather_desk")),
    ([WEATHER, CALC, PLAN], [{"role": "user", "content": EN}]),
])
def test_same_request_same_bytes(tools, messages):
    assert json.dumps(respond(body(messages, tools)), ensure_ascii=False) == \
        json.dumps(respond(body(messages, tools)), ensure_ascii=False)


@pytest.mark.parametrize("question, path", [("Delete the file notes.txt", "notes.txt"), ("删除文件 old.log", "old.log"),
                                            ("Delete ./logs/app.log please", "./logs/app.log")])
def test_a_path_argument_is_the_file_the_question_names(question, path):  # the approval demo asks about one file
    delete = {"name": "delete_file", "description": "Delete a file from the workspace.",
              "input_schema": {"type": "object", "properties": {"path": {"type": "string", "description": "The file's path."}},
                               "required": ["path"]}}
    response = respond(body([{"role": "user", "content": question}], [delete]))
    assert [(b["name"], b["input"]) for b in response["content"] if b["type"] == "tool_use"] == [("delete_file", {"path": path})]
