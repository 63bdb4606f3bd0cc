"""The mock's brain: deterministic, plausible answers from nothing but the request."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings, strategies as st

from miniagent import DEFAULT_MODEL
from miniagent.messages import conversation_error, text_of, tool_uses
from miniagent.mock import brain, scripts
from miniagent.mock.brain import respond
from miniagent.tokens import estimate_content

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def schema(props: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "properties": props, "required": required or []}


WEATHER = {"name": "get_weather",
           "description": "Get the current weather for a city. Accepts Chinese or English city names, e.g. 北京 or Beijing.",
           "input_schema": schema({"city": {"type": "string"}}, ["city"])}
TIME = {"name": "get_current_time",
        "description": "Get the current date and time, optionally in a given IANA timezone.",
        "input_schema": schema({"timezone": {"type": "string", "default": "Asia/Shanghai"}})}
CALC = {"name": "calculate",
        "description": "Evaluate an arithmetic expression (numbers, + - * / // % ** and parentheses) safely and return the result.",
        "input_schema": schema({"expression": {"type": "string"}}, ["expression"])}
BUILTIN = [WEATHER, TIME, CALC]
VAGUE = {"name": "tool_1", "description": "Does things.", "input_schema": schema({"x": {"type": "string"}}, ["x"])}
CONVERT = {"name": "convert_temperature", "description": "Convert a temperature between Celsius and Fahrenheit.",
           "input_schema": schema({"value": {"type": "number"},
                                   "unit": {"type": "string", "enum": ["C", "F"], "description": "unit to convert to"}},
                                  ["value", "unit"])}
SEARCH = {"name": "search", "description": "Search the web and return the top results.",
          "input_schema": schema({"query": {"type": "string"}}, ["query"])}

RESULTS = {  # canned tool output, as the article's demo shows it
    "get_current_time": "2026-05-09 14:23:11",
    "calculate": "3584",
    "get_weather": "{city} 今天晴，气温 25 度，微风",
}


def user(text):
    return {"role": "user", "content": text}


def body(messages, tools=None, **extra):
    b = {"model": DEFAULT_MODEL, "max_tokens": 1024, "messages": messages, **extra}
    if tools:
        b["tools"] = tools
    return b


def ask(text, tools=None, **extra):
    return respond(body([user(text)], tools, **extra))


def with_ids(response, start=1):
    """The response as an assistant message, with ids on its tool_use blocks (as MockAPI adds them)."""
    content, n = [], start
    for b in response["content"]:
        if b["type"] == "tool_use":
            b = {**b, "id": f"toolu_mock_{n:04d}"}
            n += 1
        content.append(b)
    return {"role": "assistant", "content": content}


def results_for(assistant, outputs=None):
    """A user message answering every tool_use of an assistant message."""
    blocks = []
    for call in tool_uses(assistant):
        out = (outputs or {}).get(call["name"], RESULTS.get(call["name"], "ok"))
        try:
            out = out(call["input"]) if callable(out) else out.format(**call["input"])
        except KeyError as missing:  # a call cut off by max_tokens: never run it, say so
            out = f"Error: missing required field {missing}; the call was cut off and not run"
        block = {"type": "tool_result", "tool_use_id": call["id"], "content": out}
        if out.startswith("Error"):
            block["is_error"] = True
        blocks.append(block)
    return {"role": "user", "content": blocks}


def run(text, tools, outputs=None, turns=6, **extra):
    """Drive a whole agent loop against the brain; return the messages and the last response."""
    messages, n = [user(text)], 1
    for _ in range(turns):
        response = respond(body(messages, tools, **extra))
        assistant = with_ids(response, n)
        n += len(tool_uses(assistant))
        messages.append(assistant)
        if response["stop_reason"] != "tool_use":
            return messages, response
        messages.append(results_for(assistant, outputs))
    raise AssertionError("the brain did not stop")


def calls(response):
    return [(b["name"], b["input"]) for b in response["content"] if b["type"] == "tool_use"]


# --- the article's demo ---------------------------------------------------------------------


def test_demo_question_asks_for_four_tools_in_question_order():
    r = ask(DEMO, BUILTIN)
    assert r["stop_reason"] == "tool_use" and r["stop_sequence"] is None
    assert r["content"][0] == {"type": "text", "text": "我来查一下时间、计算表达式，并查询两座城市的天气。"}
    assert calls(r) == [("get_current_time", {}), ("calculate", {"expression": "(1024 + 768) * 2"}),
                        ("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]
    assert all("id" not in b for b in r["content"])


def test_demo_final_answer_uses_every_result_in_call_order():
    messages, final = run(DEMO, BUILTIN)
    assert len(messages) == 4 and final["stop_reason"] == "end_turn"
    answer = text_of(final)
    assert answer.startswith("（模拟）现在是 2026-05-09 14:23:11。")
    assert "(1024 + 768) * 2 = 3584" in answer
    assert answer.index("北京 今天晴，气温 25 度，微风") < answer.index("上海 今天晴，气温 25 度，微风")
    assert conversation_error(messages) is None


def test_demo_with_the_article_tools_described_in_chinese():
    article = [{"name": "get_weather", "description": "查询指定城市的当前天气", "input_schema": schema({"city": {"type": "string"}}, ["city"])},
               {"name": "get_current_time", "description": "获取当前时间", "input_schema": schema({})},
               {"name": "calculate", "description": "执行数学表达式计算",
                "input_schema": schema({"expression": {"type": "string"}}, ["expression"])}]
    assert calls(ask(DEMO, article)) == calls(ask(DEMO, BUILTIN))
    _, final = run(DEMO, article, {"calculate": "[mock] 表达式 {expression} = 3584"})
    assert "\n[mock] 表达式 (1024 + 768) * 2 = 3584\n" in text_of(final)  # not repeated when the result has it


def test_demo_with_the_real_builtin_tools():
    from miniagent.builtin_tools import default_tools
    registry = default_tools()
    outputs = {name: (lambda inp, name=name: registry.run({"type": "tool_use", "id": "x", "name": name, "input": inp})["content"])
               for name in ("get_weather", "get_current_time", "calculate")}
    _, final = run(DEMO, registry.schemas(), outputs)
    assert "3584" in text_of(final) and "北京：晴" in text_of(final) and "上海：多云" in text_of(final)


# --- picking tools and filling arguments ------------------------------------------------------


def test_english_weather_question_with_two_cities():
    r = ask("What's the weather like in Paris and London today?", BUILTIN)
    assert calls(r) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})]
    assert text_of(r) == "I'll look up the weather in Paris and London."
    _, final = run("What's the weather like in Paris and London today?", BUILTIN,
                   {"get_weather": "{city}: sunny, 18°C"})
    assert text_of(final) == "(mock) Paris: sunny, 18°C\nLondon: sunny, 18°C"


def test_unknown_place_is_passed_on_for_the_tool_to_reject():
    assert calls(ask("What's the weather in Atlantis?", BUILTIN)) == [("get_weather", {"city": "Atlantis"})]
    assert calls(ask("亚特兰蒂斯的天气怎么样？", BUILTIN)) == [("get_weather", {"city": "亚特兰蒂斯"})]


def test_optional_timezone_only_when_the_question_gives_it():
    assert calls(ask("What time is it?", BUILTIN)) == [("get_current_time", {})]
    assert calls(ask("What time is it in Tokyo?", BUILTIN)) == [("get_current_time", {"timezone": "Asia/Tokyo"})]
    assert calls(ask("What time is it in Europe/Paris?", BUILTIN)) == [("get_current_time", {"timezone": "Europe/Paris"})]


def test_arithmetic_expression_alone_is_enough_to_pick_the_calculator():
    assert calls(ask("What is 2+3*4?", BUILTIN)) == [("calculate", {"expression": "2+3*4"})]
    assert calls(ask("How much is 12 / (3 - 1) and 7 * 6?", BUILTIN)) == [
        ("calculate", {"expression": "12 / (3 - 1)"}), ("calculate", {"expression": "7 * 6"})]
    assert calls(ask("I was born on 1990-05-17.", [CALC])) == []


def test_numbers_and_enum_from_the_question():
    assert calls(ask("Convert 100 F to C", [CONVERT])) == [("convert_temperature", {"value": 100, "unit": "C"})]
    assert calls(ask("Convert 36.6 degrees into Fahrenheit", [CONVERT])) == [
        ("convert_temperature", {"value": 36.6, "unit": "F"})]


def test_weather_question_prefers_the_weather_tool_over_a_temperature_converter():
    assert calls(ask("What's the weather in Paris?", [CONVERT, WEATHER])) == [("get_weather", {"city": "Paris"})]


def test_free_text_argument_is_a_quote_or_the_relevant_phrase():
    assert calls(ask('Search for "miniagent tutorial"', [SEARCH])) == [("search", {"query": "miniagent tutorial"})]
    assert calls(ask("Please search for the latest Python release.", [SEARCH])) == [
        ("search", {"query": "the latest Python release"})]


def test_tool_unknown_to_the_concept_table_is_picked_by_shared_words():
    stock = {"name": "get_stock_price", "description": "Latest stock price for a ticker symbol.",
             "input_schema": schema({"ticker": {"type": "string"}}, ["ticker"])}
    assert calls(ask('What is the stock price of "ACME"?', [stock])) == [("get_stock_price", {"ticker": "ACME"})]
    assert calls(ask("Tell me a joke.", [stock])) == []


def test_vague_tool_is_never_picked():
    for question in ("Can you do things with this text?", "Do the thing with tool 1", "What's the weather in Paris?"):
        r = ask(question, [VAGUE])
        assert calls(r) == [] and r["stop_reason"] == "end_turn"
        assert "tool_1" in text_of(r)  # it says that none of its tools fits
    described = {**VAGUE, "description": "Get the current weather for a city."}
    assert [name for name, _ in calls(ask("What's the weather in Paris?", [described]))] == ["tool_1"]


def test_missing_required_argument_makes_it_ask():
    r = ask("What's the weather like?", BUILTIN)
    assert calls(r) == [] and r["stop_reason"] == "end_turn"
    assert text_of(r) == "(mock) To call get_weather I need the city. Which city do you mean?"


# --- plain answers, language ------------------------------------------------------------------


@pytest.mark.parametrize("question, expected", [
    ("Hello!", "(mock) Hello! I'm the mock model, not a real one."),
    ("你好", "（模拟）你好！我是模拟模型，不是真正的模型。"),
    ("What is the capital of France?", "(mock) I'm the mock model"),
    ("法国的首都是哪里？", "（模拟）我是模拟模型"),
])
def test_plain_answers_in_the_language_of_the_question(question, expected):
    r = ask(question)
    assert r["stop_reason"] == "end_turn" and text_of(r).startswith(expected)
    if "France" in question or "法国" in question:
        assert "ANTHROPIC_API_KEY" in text_of(r)


def test_language_counts_rather_than_spots_chinese():
    assert brain.language("What's the weather in 北京?") == "en"
    assert brain.language(DEMO) == "zh" and brain.language("我叫Ada") == "zh"
    assert text_of(ask("What's the weather in 北京?", BUILTIN)) == "I'll look up the weather in 北京."


# --- tool_choice -------------------------------------------------------------------------------


def test_tool_choice_none_never_uses_tools():
    r = ask(DEMO, BUILTIN, tool_choice={"type": "none"})
    assert calls(r) == [] and r["stop_reason"] == "end_turn"
    assert "tool_choice" in text_of(r)


def test_tool_choice_any_forces_a_tool():
    assert calls(ask("Tell me a joke.", [VAGUE], tool_choice={"type": "any"})) == [("tool_1", {"x": "a joke"})]
    assert calls(ask("What time is it?", BUILTIN, tool_choice={"type": "any"})) == [("get_current_time", {})]


def test_tool_choice_tool_uses_exactly_that_tool():
    r = ask(DEMO, BUILTIN, tool_choice={"type": "tool", "name": "get_weather"})
    assert calls(r) == [("get_weather", {"city": "北京"}), ("get_weather", {"city": "上海"})]
    r = ask("Hello", BUILTIN, tool_choice={"type": "tool", "name": "calculate"})
    assert [name for name, _ in calls(r)] == ["calculate"]


def test_disable_parallel_tool_use_makes_one_call_per_turn():
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    assert calls(ask(DEMO, BUILTIN, tool_choice=choice)) == [("get_current_time", {})]
    messages, final = run(DEMO, BUILTIN, tool_choice=choice)
    made = [b["name"] for m in messages for b in tool_uses(m)]
    assert made == ["get_current_time", "calculate", "get_weather", "get_weather"]
    assert all(len(tool_uses(m)) <= 1 for m in messages)
    assert "3584" in text_of(final) and conversation_error(messages) is None


# --- errors and self-correction ------------------------------------------------------------------


def test_corrects_a_value_once_from_the_allowed_values():
    bad = lambda inp: "Error: unit: expected one of 'C', 'F', got 'celsius'" if inp["unit"] != "C" else "37.8 C"
    messages = [user("Convert 100 F to celsius"),
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "convert_temperature",
                                                   "input": {"value": 100, "unit": "celsius"}}]}]
    messages.append(results_for(messages[-1], {"convert_temperature": bad}))
    r = respond(body(messages, [CONVERT]))
    assert calls(r) == [("convert_temperature", {"value": 100, "unit": "C"})]
    assert text_of(r) == 'convert_temperature failed, so I\'ll try again with unit = "C".'


def test_corrects_a_misspelt_city_from_the_known_cities():
    known = "Known cities: 北京 (Beijing), 上海 (Shanghai), 伦敦 (London)"
    weather = lambda inp: f"Error: unknown city '{inp['city']}'. {known}" if inp["city"] == "Shangai" else "Shanghai: cloudy"
    messages, final = run("What's the weather in Shangai?", BUILTIN, {"get_weather": weather})
    made = [b["input"] for m in messages for b in tool_uses(m)]
    assert made == [{"city": "Shangai"}, {"city": "Shanghai"}]
    assert text_of(final) == "(mock) Shanghai: cloudy"


def test_fills_a_field_the_error_says_is_missing():
    messages = [user("What's the weather in Paris?"),
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                                              "content": "Error: missing required field 'city'"}]}]
    assert calls(respond(body(messages, BUILTIN))) == [("get_weather", {"city": "Paris"})]


def test_gives_up_with_the_error_when_it_cannot_correct():
    error = "Error: unknown city 'Atlantis'. Known cities: 北京 (Beijing), 上海 (Shanghai)"
    messages, final = run("What's the weather in Atlantis?", BUILTIN, {"get_weather": error})
    assert len(messages) == 4 and final["stop_reason"] == "end_turn"
    assert text_of(final) == f'(mock) get_weather(city=Atlantis) failed: "{error}"'


def test_corrects_only_once_then_answers_never_loops():
    always = lambda inp: f"Error: unit must be one of 'C', 'F', got '{inp['unit']}'"
    messages = [user("Convert 100 into celsius"),
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "convert_temperature",
                                                   "input": {"value": 100, "unit": "celsius"}}]}]
    messages.append(results_for(messages[-1], {"convert_temperature": always}))
    for _ in range(3):
        response = respond(body(messages, [CONVERT]))
        if response["stop_reason"] != "tool_use":
            break
        messages.append(with_ids(response, 10 + len(messages)))
        messages.append(results_for(messages[-1], {"convert_temperature": always}))
    assert response["stop_reason"] == "end_turn"
    assert [b["input"]["unit"] for m in messages for b in tool_uses(m)] == ["celsius", "C"]  # one correction
    assert text_of(response) == ("(mock) convert_temperature(value=100, unit=C) failed again after one "
                                 "correction: \"Error: unit must be one of 'C', 'F', got 'C'\"")


def test_no_retry_when_the_allowed_value_is_what_was_sent():
    always = lambda inp: "Error: unit must be one of 'C', 'F'"
    messages, final = run("Convert 100 into celsius", [CONVERT], {"convert_temperature": always})
    assert [b["input"] for m in messages for b in tool_uses(m)] == [{"value": 100, "unit": "C"}]
    assert "failed" in text_of(final)


def test_error_in_chinese_question_is_reported_in_chinese():
    error = "Error: unknown city '火星'. Known cities: 北京 (Beijing)"
    _, final = run("火星的天气怎么样？", BUILTIN, {"get_weather": error})
    assert text_of(final) == f"（模拟）get_weather(city=火星) 失败：「{error}」"


# --- memory is only the request ---------------------------------------------------------------------


def test_name_is_recalled_while_it_is_in_the_messages():
    said = [user("Hi, my name is Ada."), {"role": "assistant", "content": "Nice to meet you."}]
    assert text_of(respond(body(said + [user("What's my name?")]))) == "(mock) Your name is Ada."
    forgot = text_of(respond(body([user("What's my name?")])))
    assert "Ada" not in forgot and "don't know your name" in forgot


def test_name_recalled_from_system_and_in_chinese():
    assert text_of(respond(body([user("What's my name?")], system="The user's name is Bea."))) == "(mock) Your name is Bea."
    said = [user("我叫小明，我喜欢喝咖啡。"), {"role": "assistant", "content": "好的。"}]
    assert text_of(respond(body(said + [user("我叫什么名字？")]))) == "（模拟）你叫小明。"
    assert text_of(respond(body(said + [user("我喜欢什么？")]))) == "（模拟）你说过你喜欢喝咖啡。"
    assert "不知道你的名字" in text_of(respond(body([user("我叫什么名字？")])))


def test_a_stated_name_is_acknowledged():
    assert text_of(ask("I'm Ada.")).startswith("(mock) Nice to meet you, Ada!")


def test_later_statement_wins():
    said = [user("My name is Ada."), {"role": "assistant", "content": "Hi."}, user("Actually, call me Bea."),
            {"role": "assistant", "content": "Sure."}, user("What's my name?")]
    assert text_of(respond(body(said))) == "(mock) Your name is Bea."


def test_a_question_asking_for_two_facts_gets_both():
    said = [user("My name is Ada."), {"role": "assistant", "content": "Hi."}, user("I prefer short answers."),
            {"role": "assistant", "content": "Noted."}, user("What's my name, and what do I prefer?")]
    assert text_of(respond(body(said))) == "(mock) Your name is Ada. You told me you like short answers."
    half = text_of(respond(body(said[2:])))
    assert half.startswith("(mock) I don't know your name") and half.endswith("You told me you like short answers.")


def test_a_bulleted_list_of_facts_in_a_user_message_is_read():
    """StructuredMemory's block: `- key: value` lines in the user's own message state the facts."""
    noted = "Plan a trip.\n\n[Facts established earlier]\n- name: Ada\n- preference: answers in metric units"
    answer = text_of(respond(body([user(noted), {"role": "assistant", "content": "Sure."},
                                   user("What's my name, and what do I prefer?")])))
    assert answer == "(mock) Your name is Ada. You told me you like answers in metric units."
    mixed = [user(noted), {"role": "assistant", "content": "ok"}, user("Call me Bea."),
             {"role": "assistant", "content": "ok"}, user("What's my name?")]
    assert text_of(respond(body(mixed))) == "(mock) Your name is Bea."  # a later statement still wins
    tool_said = [user("Who is it?"), {"role": "assistant", "content": "- name: Bob"}, user("What's my name?")]
    assert "don't know your name" in text_of(respond(body(tool_said)))  # only the user's (or system's) own list


def test_asked_for_a_fact_list_it_lists_the_facts_stated_in_the_transcript():
    prompt = ("Find the facts. Reply with one fact per line as `key: value`.\n\n<known_facts>\nname: Zed\n"
              "</known_facts>\n\n<conversation>\nUser: Search for tea.\nAssistant: Done.\nUser: My name is Ada.\n"
              "Assistant: Hi Ada.\nUser: I prefer green tea.\n</conversation>")
    assert text_of(ask(prompt, BUILTIN)) == ("(mock) Facts stated in this conversation:\nname: Ada\n"
                                              "preference: green tea")
    nothing = prompt.replace("My name is Ada.", "Hello.").replace("I prefer green tea.", "Thanks.")
    assert text_of(ask(nothing)).endswith("\nnone (no new facts stated)")  # the known facts are not repeated
    assert calls(ask("Search for the facts about tea", [SEARCH])) == [("search", {"query": "the facts about tea"})]


# --- summaries ------------------------------------------------------------------------------------------


def test_summary_of_the_messages_keeps_the_name_and_results():
    messages, _ = run("My name is Ada. What's the weather in Paris?", BUILTIN, {"get_weather": "{city}: sunny, 18°C"})
    messages.append(user("Please summarise our conversation so far."))
    summary = text_of(respond(body(messages, BUILTIN)))
    assert summary.startswith("(mock) Summary")
    assert "The user's name is Ada." in summary and "Paris: sunny, 18°C" in summary
    assert len(summary.split()) <= 150


def test_summary_of_a_pasted_transcript_and_recall_from_it():
    from miniagent import context
    history = [user("我叫小明。"), {"role": "assistant", "content": "你好，小明。"}, user("北京天气怎么样？"),
               {"role": "assistant", "content": "北京：晴。"}]
    prompt = context.summary_prompt(None, history)
    summary = text_of(respond(body([user(prompt)], system=context.SUMMARY_SYSTEM)))
    assert summary.startswith("（模拟）摘要：用户叫小明。") and "北京天气怎么样" in summary
    again = text_of(respond(body([user(context.summary_prompt(summary, [user("现在几点了？")]))])))
    assert "用户叫小明" in again  # a re-summary keeps the name from the earlier summary
    later = [user(f"{context.SUMMARY_HEADER}\n{summary}"), {"role": "assistant", "content": "好的。"}, user("我叫什么名字？")]
    assert text_of(respond(body(later))) == "（模拟）你叫小明。"


def test_summary_is_bounded():
    long = [user(f"Question number {i} about a long topic with many words in it?") for i in range(60)]
    turns = [m for q in long for m in (q, {"role": "assistant", "content": "ok"})]
    summary = text_of(respond(body(turns + [user("Summarize the conversation.")])))
    assert len(summary.split()) <= 151


# --- limits: max_tokens, stop sequences, prefill ------------------------------------------------------------


def test_max_tokens_cuts_text():
    full = text_of(ask("What is the capital of France?"))
    r = ask("What is the capital of France?", max_tokens=10)
    assert r["stop_reason"] == "max_tokens" and r["stop_sequence"] is None
    assert full.startswith(text_of(r)) and len(text_of(r)) < len(full)
    assert estimate_content(r["content"]) <= 10


def test_max_tokens_truncates_a_tool_call_to_an_empty_input():
    whole = ask(DEMO, BUILTIN)
    empty_call = {"type": "tool_use", "name": "calculate", "input": {}}
    budget = estimate_content(whole["content"][:2] + [empty_call])  # the second call fits only when emptied
    r = ask(DEMO, BUILTIN, max_tokens=budget)
    assert r["stop_reason"] == "max_tokens"
    assert r["content"][:2] == whole["content"][:2]
    assert r["content"][2] == empty_call and len(r["content"]) == 3
    assert estimate_content(r["content"]) <= budget
    smaller = ask(DEMO, BUILTIN, max_tokens=budget - 1)  # not even the empty call fits: it is left out
    assert smaller["content"] == whole["content"][:2] and smaller["stop_reason"] == "max_tokens"


def test_stop_sequence_cuts_just_before_it():
    r = ask("What is the capital of France?", stop_sequences=["never", "model:"])
    assert r == {"content": [{"type": "text", "text": "(mock) I'm the mock"}],
                 "stop_reason": "stop_sequence", "stop_sequence": "model:"}
    assert ask("Hello", stop_sequences=["zzz"])["stop_reason"] == "end_turn"


def test_stop_sequence_before_tool_calls_drops_them():
    r = ask(DEMO, BUILTIN, stop_sequences=["计算"])
    assert r["content"] == [{"type": "text", "text": "我来查一下时间、"}] and r["stop_reason"] == "stop_sequence"


def test_prefill_is_continued_not_repeated():
    full = text_of(ask("What is the capital of France?"))
    prefill = full[:20].rstrip()
    r = respond(body([user("What is the capital of France?"), {"role": "assistant", "content": prefill}]))
    assert prefill + text_of(r) == full
    r = respond(body([user("Hello"), {"role": "assistant", "content": "Well"}]))
    assert text_of(r).startswith(" (mock) Hello")
    r = respond(body([user(DEMO), {"role": "assistant", "content": "好的"}], BUILTIN))
    assert r["stop_reason"] == "tool_use" and r["content"][0]["type"] == "tool_use" and len(calls(r)) == 4


# --- contract: deterministic, pure, always a valid next turn --------------------------------------------------

CASES = [
    body([user(DEMO)], BUILTIN),
    body([user("What's the weather in Paris and London?")], BUILTIN),
    body([user("What is the capital of France?")], [VAGUE]),
    body([user("Tell me a joke.")], [VAGUE], tool_choice={"type": "any"}),
    body([user(DEMO)], BUILTIN, tool_choice={"type": "auto", "disable_parallel_tool_use": True}),
    body([user(DEMO)], BUILTIN, max_tokens=40),
    body([user("What is the capital of France?")], max_tokens=3),
    body([user("What is the capital of France?")], stop_sequences=["mock"]),
    body([user("Please summarise.")]),
    body([user("我叫什么名字？")]),
    body([user("What's the weather like?")], BUILTIN),
]


@pytest.mark.parametrize("request_body", CASES)
def test_same_body_same_answer_and_body_untouched(request_body):
    before = copy.deepcopy(request_body)
    first, second = respond(request_body), respond(copy.deepcopy(request_body))
    assert first == second and request_body == before
    assert json.dumps(first)  # plain JSON, nothing else


@pytest.mark.parametrize("request_body", CASES)
def test_every_response_is_a_valid_next_turn(request_body):
    response = respond(request_body)
    assert set(response) - {"cut_json"} == {"content", "stop_reason", "stop_sequence"}
    if "cut_json" in response:  # a tool call cut by max_tokens: the last block, with an empty input
        assert response["stop_reason"] == "max_tokens" and response["content"][-1]["input"] == {}
    assert response["stop_reason"] in ("end_turn", "tool_use", "max_tokens", "stop_sequence")
    assert (response["stop_reason"] == "tool_use") == (bool(tool_uses(response)) and response["stop_reason"] != "max_tokens")
    messages = request_body["messages"] + [with_ids(response)]
    if tool_uses(messages[-1]):
        messages.append(results_for(messages[-1]))
    else:
        messages.append(user("Thanks."))
    assert conversation_error(messages) is None


def test_every_turn_of_a_long_conversation_is_valid():
    messages, final = run(DEMO, BUILTIN)
    messages += [user("我叫小明。")]
    messages.append(with_ids(respond(body(messages, BUILTIN)), 50))
    messages.append(user("总结一下我们的对话。"))
    summary = respond(body(messages, BUILTIN))
    assert "用户叫小明" in text_of(summary) and "3584" in text_of(summary)
    assert conversation_error(messages + [with_ids(summary, 60)]) is None


# --- scripts ------------------------------------------------------------------------------------------------


def test_script_factories():
    assert scripts.text("hi") == {"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                                  "stop_sequence": None}
    call = scripts.tool_call("get_weather", {"city": "北京"}, text="Checking.")
    assert call["stop_reason"] == "tool_use" and call["content"][0]["text"] == "Checking."
    assert calls(call) == [("get_weather", {"city": "北京"})]
    cut = scripts.truncated_tool_call("calculate", {"expr": "(10"})
    assert cut["stop_reason"] == "max_tokens" and calls(cut) == [("calculate", {"expr": "(10"})]
    assert scripts.truncated_tool_call("calculate")["content"][-1]["input"] == {}
    assert scripts.refusal()["stop_reason"] == "refusal" and scripts.pause_turn()["stop_reason"] == "pause_turn"


def test_runaway_scripts_never_stop():
    same = scripts.runaway("get_weather", {"city": "北京"})
    a, b = same(body([user("hi")])), same(body([user("hi"), {"role": "assistant", "content": "x"}, user("stop!")]))
    assert calls(a) == calls(b) == [("get_weather", {"city": "北京"})] and a["stop_reason"] == "tool_use"
    varied = scripts.runaway_varied("search", lambda n: {"query": f"attempt {n}"})
    one, three = varied(body([user("hi")])), varied(body([user("a"), {"role": "assistant", "content": "b"}, user("c")]))
    assert calls(one) == [("search", {"query": "attempt 1"})] and calls(three) == [("search", {"query": "attempt 3"})]
    assert varied(body([user("hi")])) == one


def test_script_inputs_are_copied():
    given = {"city": "北京"}
    call = scripts.tool_call("get_weather", given)
    call["content"][0]["input"]["city"] = "上海"
    assert given == {"city": "北京"}


def test_scripts_work_with_the_mock_api():
    from miniagent.mock import MockAPI
    api = MockAPI()
    api.script(scripts.runaway("get_current_time", {}), repeat=True)
    headers = {"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    for _ in range(3):
        reply = api.handle("POST", "/v1/messages", headers, json.dumps(body([user("hi")], BUILTIN)).encode())
        assert reply.status == 200 and json.loads(reply.body)["stop_reason"] == "tool_use"


def test_corrected_result_takes_the_place_of_the_failure():
    weather = lambda inp: ("Error: unknown city 'Shangai'. Known cities: 上海 (Shanghai)" if inp["city"] == "Shangai"
                           else "Shanghai: cloudy")
    _, final = run("What's the weather in Shangai and what is 2**10?", BUILTIN,
                   {"get_weather": weather, "calculate": "1024"})
    assert text_of(final) == "(mock) Shanghai: cloudy\n2**10 = 1024"


def test_summary_of_plain_text_keeps_its_first_lines():
    prompt = "Summarise this tool output.\n<tool_output>\nBuild failed with 3 errors.\nerror: missing ; at line 12\n</tool_output>"
    summary = text_of(ask(prompt))
    assert summary == "(mock) Summary: Key points: Build failed with 3 errors.; error: missing ; at line 12."


WORDS = st.sampled_from(["weather", "北京", "Paris", "time", "几点", "(1 + 2) * 3", "summarise", "my name is Ada",
                         "What's my name?", "hello", "你好", "in Atlantis", "convert", "100", "F", "to C", "?", "，",
                         "search", '"quoted"', "tool 1", "", " "])


@settings(deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=8), st.integers(min_value=1, max_value=80),
       st.lists(st.sampled_from(["mock", "。", "\n", "e"]), max_size=2),
       st.sampled_from([None, {"type": "auto"}, {"type": "any"}, {"type": "none"},
                        {"type": "tool", "name": "calculate"}, {"type": "auto", "disable_parallel_tool_use": True}]))
def test_any_question_gives_a_valid_next_turn(parts, max_tokens, stops, choice):
    question = " ".join(parts).strip() or "?"
    extra = {"max_tokens": max_tokens, "stop_sequences": stops}
    if choice:
        extra["tool_choice"] = choice
    request = body([user(question)], BUILTIN + [CONVERT, SEARCH, VAGUE], **extra)
    response = respond(request)
    assert estimate_content(response["content"]) <= max_tokens
    if not response["content"]:
        return
    messages = request["messages"] + [with_ids(response)]
    messages.append(results_for(messages[-1]) if tool_uses(messages[-1]) else user("ok"))
    assert conversation_error(messages) is None
    if response["stop_reason"] == "tool_use":
        follow = respond({**request, "messages": messages})
        assert follow["stop_reason"] in ("end_turn", "tool_use", "max_tokens", "stop_sequence")
