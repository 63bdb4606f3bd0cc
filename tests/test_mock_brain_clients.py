"""The brain where real clients meet it (issue 28, part 3): instructor's `create_iterable` and smolagents'
ToolCallingAgent, with the requests they really send (instructor 1.17.0, smolagents 1.26.0, reproduced
here as dicts), and the same conversations in the Messages API's shape.

1. A forced tool whose properties are all optional (instructor's `IterableUser`, `tasks: list[User]` with a
   default) gets what the question gives, read as a required property is read; {} when it gives nothing.
2. smolagents writes the calls the model made back as an assistant text ("Calling tools:\n[...]") and their
   results as a user text ("Observation:\n..."); a failed call reaches the model only as a user text
   ("Error executing tool 'x' with arguments {...}"). The brain reads them as tool_use and tool_result
   blocks, so the agent's run ends (with `final_answer`, since tool_choice is "required") instead of
   calling the same tool until max_steps. Ordinary conversations read as before.
"""

from __future__ import annotations

import json

import httpx2
import pytest
from hypothesis import given, strategies as st

from miniagent import DEFAULT_MODEL
from miniagent.messages import text_of
from miniagent.mock import MockAPI
from miniagent.mock.brain import respond
from miniagent.mock.reading import text_calls, with_text_calls

BEARER = {"authorization": "Bearer sk-mock-clients"}
ANTHROPIC = {"x-api-key": "sk-mock-clients", "anthropic-version": "2023-06-01"}


@pytest.fixture
def mock():
    return MockAPI()


def post(mock, path, body, headers):
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as client:
        response = client.post(path, headers=headers, content=json.dumps(body))
    assert response.status_code == 200, response.text
    return response


def chat(mock, body) -> dict:
    """The assistant message of a (plain) chat completion."""
    return post(mock, "/v1/chat/completions", body, BEARER).json()["choices"][0]["message"]


def calls_of(message: dict) -> list[tuple[str, dict]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or []]


def uses(response: dict) -> list[tuple[str, dict]]:
    return [(b["name"], b["input"]) for b in response["content"] if b["type"] == "tool_use"]


def sse_data(response) -> list[dict]:
    return [json.loads(line[6:]) for line in response.text.split("\n")
            if line.startswith("data: ") and line != "data: [DONE]"]


# --- 1. a forced tool whose properties are all optional: instructor's create_iterable --------------------

USER_DEFS = {"User": {"properties": {"name": {"title": "Name", "type": "string"},
                                     "age": {"title": "Age", "type": "integer"}},
                      "required": ["name", "age"], "title": "User", "type": "object"}}
TASKS = {"tasks": {"description": "Correctly segmented list of `User` tasks", "items": {"$ref": "#/$defs/User"},
                   "title": "Tasks", "type": "array"}}
USERS = "Extract the users: Jason is 25 years old, Sarah is 30 years old."


def instructor_openai(question: str) -> dict:
    """What `instructor.from_openai(client).chat.completions.create_iterable(response_model=User, ...)` sends."""
    return {"messages": [{"role": "user", "content": question}], "model": "gpt-4o-mini", "stream": True,
            "tool_choice": {"type": "function", "function": {"name": "IterableUser"}},
            "tools": [{"type": "function", "function": {
                "name": "IterableUser", "description": "Correct segmentation of `User` tasks",
                "parameters": {"$defs": USER_DEFS, "properties": TASKS, "type": "object", "required": []}}}]}


def instructor_anthropic(question: str) -> dict:
    """What `instructor.from_anthropic(client).messages.create_iterable(response_model=User, ...)` sends."""
    return {"max_tokens": 1024, "messages": [{"role": "user", "content": question}], "model": DEFAULT_MODEL,
            "stream": True, "tool_choice": {"type": "tool", "name": "IterableUser", "disable_parallel_tool_use": True},
            "tools": [{"name": "IterableUser", "description": "Correct segmentation of `User` tasks",
                       "input_schema": {"$defs": USER_DEFS, "description": "Correct segmentation of `User` tasks",
                                        "properties": TASKS, "title": "IterableUser", "type": "object"}}]}


def streamed_openai_arguments(mock, body) -> list[tuple[str, dict]]:
    """The calls a streamed chat completion makes, its argument deltas joined (as instructor reads them)."""
    calls: dict[int, dict] = {}
    for chunk in sse_data(post(mock, "/v1/chat/completions", body, BEARER)):
        for choice in chunk["choices"]:
            for delta in choice["delta"].get("tool_calls") or []:
                call = calls.setdefault(delta["index"], {"name": "", "arguments": ""})
                call["name"] += delta.get("function", {}).get("name") or ""
                call["arguments"] += delta.get("function", {}).get("arguments") or ""
    return [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]


def streamed_anthropic_input(mock, body) -> list[tuple[str, dict]]:
    """The tool_use blocks of a streamed message, their input_json_delta parts joined."""
    blocks: dict[int, dict] = {}
    for event in sse_data(post(mock, "/v1/messages", body, ANTHROPIC)):
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            blocks[event["index"]] = {"name": event["content_block"]["name"], "json": ""}
        elif event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
            blocks[event["index"]]["json"] += event["delta"]["partial_json"]
    return [(b["name"], json.loads(b["json"] or "{}")) for _, b in sorted(blocks.items())]


def test_instructor_create_iterable_gets_what_the_question_gives_on_both_endpoints(mock):
    expected = [("IterableUser", {"tasks": [{"name": "Jason", "age": 25}]})]
    assert streamed_openai_arguments(mock, instructor_openai(USERS)) == expected
    assert streamed_anthropic_input(mock, instructor_anthropic(USERS)) == expected
    plain = {k: v for k, v in instructor_anthropic(USERS).items() if k != "stream"}
    assert uses(respond(plain)) == expected  # the brain itself, which the Responses endpoint shares


def test_instructor_create_iterable_still_gets_nothing_when_the_question_gives_nothing(mock):
    for question in ("Extract the users.", "Hello"):
        assert streamed_openai_arguments(mock, instructor_openai(question)) == [("IterableUser", {})]
        assert streamed_anthropic_input(mock, instructor_anthropic(question)) == [("IterableUser", {})]


def forced(question: str, tool: dict, choice: dict | None = None) -> list[tuple[str, dict]]:
    return uses(respond({"model": DEFAULT_MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": question}],
                         "tools": [tool], "tool_choice": choice or {"type": "any"}}))


def optional(**props) -> dict:
    return {"type": "object", "properties": props}


SEARCH = {"name": "search", "description": "Search the web.",
          "input_schema": optional(query={"type": "string"}, limit={"type": "integer"})}
WEATHER = {"name": "get_weather", "description": "Get the weather for a city.",
           "input_schema": optional(city={"type": "string"}, units={"type": "string", "enum": ["C", "F"]})}
CLOCK = {"name": "get_current_time", "description": "Get the current date and time, optionally in a given IANA timezone.",
         "input_schema": optional(timezone={"type": "string", "default": "Asia/Shanghai"})}


def test_a_forced_all_optional_tool_is_filled_as_a_required_one_would_be():
    # as for a required `query`: the question's phrase; a number it gives; never a placeholder
    assert forced("Find 5 recipes for pasta", SEARCH) == [("search", {"query": "5 recipes for pasta", "limit": 5})]
    assert forced("搜索一下意大利面的做法", SEARCH) == [("search", {"query": "意大利面的做法"})]
    assert forced("Find recipes for pasta", SEARCH, {"type": "tool", "name": "search"}) == [
        ("search", {"query": "recipes for pasta"})]
    # a default or an enum's first option is no value the question gave: left out, as before
    assert forced("What time is it?", CLOCK) == [("get_current_time", {})]
    assert forced("现在几点？", CLOCK) == [("get_current_time", {})]
    assert forced("What time is it in Tokyo?", CLOCK) == [("get_current_time", {"timezone": "Asia/Tokyo"})]
    # one call per city, as before
    assert forced("Weather in Paris and Tokyo?", WEATHER) == [("get_weather", {"city": "Paris"}),
                                                              ("get_weather", {"city": "Tokyo"})]
    assert forced("Weather in Paris in F?", WEATHER) == [("get_weather", {"city": "Paris", "units": "F"})]


def test_a_forced_all_optional_tool_whose_references_fan_out_stays_small():
    # 2**39 names written out: compared as bounded JSON, the big property is left out, the small one kept
    defs = {"D0": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}
    for i in range(1, 40):
        defs[f"D{i}"] = {"type": "object", "required": ["a", "b"],
                         "properties": {"a": {"$ref": f"#/$defs/D{i - 1}"}, "b": {"$ref": f"#/$defs/D{i - 1}"}}}
    tool = {"name": "store", "description": "Store people.",
            "input_schema": {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/D39"},
                                                                          "name": {"type": "string"}}}}
    assert forced("Store Ada Lovelace please", tool) == [("store", {"name": "Store Ada Lovelace"})]
    assert forced("hi", tool) == [("store", {})]


def test_an_unforced_all_optional_tool_is_filled_as_before():
    assert forced("Find 5 recipes for pasta", SEARCH, {"type": "auto"}) == []
    assert forced("What's the weather in Paris?", WEATHER, {"type": "auto"}) == [("get_weather", {"city": "Paris"})]


# --- 2. tool results as user text: smolagents' ToolCallingAgent ---------------------------------------------

# smolagents 1.26.0's system prompt for a ToolCallingAgent with one tool, get_weather (prompts/toolcalling_agent.yaml)
SMOLAGENTS_SYSTEM = """You are an expert assistant who can solve any task using tool calls. You will be given a task to solve as best you can.
To do so, you have been given access to some tools.

The tool call you write is an action: after the tool is executed, you will get the result of the tool call as an "observation".
This Action/Observation can repeat N times, you should take several steps when needed.

You can use the result of the previous action as input for the next action.
The observation will always be a string: it can represent a file, like "image_1.jpg".
Then you can use it as input for the next action. You can do it for instance as follows:

Observation: "image_1.jpg"

Action:
{
  "name": "image_transformer",
  "arguments": {"image": "image_1.jpg"}
}

To provide the final answer to the task, use an action blob with "name": "final_answer" tool. It is the only way to complete the task, else you will be stuck on a loop. So your final output should look like this:
Action:
{
  "name": "final_answer",
  "arguments": {"answer": "insert your final answer here"}
}


Here are a few examples using notional tools:
---
Task: "Generate an image of the oldest person in this document."

Action:
{
  "name": "document_qa",
  "arguments": {"document": "document.pdf", "question": "Who is the oldest person mentioned?"}
}
Observation: "The oldest person in the document is John Doe, a 55 year old lumberjack living in Newfoundland."

Action:
{
  "name": "image_generator",
  "arguments": {"prompt": "A portrait of John Doe, a 55-year-old man living in Canada."}
}
Observation: "image.png"

Action:
{
  "name": "final_answer",
  "arguments": "image.png"
}

---
Task: "What is the result of the following operation: 5 + 3 + 1294.678?"

Action:
{
    "name": "python_interpreter",
    "arguments": {"code": "5 + 3 + 1294.678"}
}
Observation: 1302.678

Action:
{
  "name": "final_answer",
  "arguments": "1302.678"
}

---
Task: "Which city has the highest population , Guangzhou or Shanghai?"

Action:
{
    "name": "web_search",
    "arguments": "Population Guangzhou"
}
Observation: ['Guangzhou has a population of 15 million inhabitants as of 2021.']


Action:
{
    "name": "web_search",
    "arguments": "Population Shanghai"
}
Observation: '26 million (2019)'

Action:
{
  "name": "final_answer",
  "arguments": "Shanghai"
}

Above example were using notional tools that might not exist for you. You only have access to these tools:
- get_weather: Get the current weather for a city.
    Takes inputs: {'city': {'type': 'string', 'description': "The city's name, e.g. Paris."}}
    Returns an output of type: string
- final_answer: Provides a final answer to the given problem.
    Takes inputs: {'answer': {'type': 'any', 'description': 'The final answer to the problem'}}
    Returns an output of type: any

Here are the rules you should always follow to solve your task:
1. ALWAYS provide a tool call, else you will fail.
2. Always use the right arguments for the tools. Never use variable names as the action arguments, use the value instead.
3. Call a tool only when needed: do not call the search agent if you do not need information, try to solve the task yourself. If no tool call is needed, use final_answer tool to return your answer.
4. Never re-do a tool call that you previously did with the exact same parameters.

Now Begin!"""
SMOL_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name, e.g. Paris."}},
                       "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "final_answer", "description": "Provides a final answer to the given problem.",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string", "description": "The final answer to the problem"}},
                       "required": ["answer"]}}},
]


def text(role: str, said: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": said}]}


def smolagents(*turns: dict) -> dict:
    """A request of smolagents' OpenAIServerModel: its memory as messages, tool_choice "required"."""
    return {"messages": [text("system", SMOLAGENTS_SYSTEM), *turns], "model": "gpt-4o-mini",
            "stop": ["Observation:", "Calling tools:"], "tool_choice": "required", "tools": SMOL_TOOLS}


def calling(*calls: tuple[str, str, dict]) -> dict:
    """smolagents' record of the calls the model made: the ToolCall dicts, as a Python list, in an assistant text."""
    listed = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls]
    return text("assistant", "Calling tools:\n" + str(listed))


RETRY = ("Now let's retry: take care not to repeat previous errors! If you have retried several times, "
         "try a completely different approach.\n")


def failed(name: str, arguments: dict, error: str) -> str:
    """The text smolagents adds to its memory when a tool raises (agents.py, execute_tool_call)."""
    return (f"Error:\nError executing tool '{name}' with arguments {arguments}: {error}\n"
            f"Please try again or use another tool\n{RETRY}")


def test_smolagents_run_calls_the_tool_then_answers_through_final_answer(mock):
    task = text("user", "New task:\nWhat is the weather in Paris?")
    assert calls_of(chat(mock, smolagents(task))) == [("get_weather", {"city": "Paris"})]
    after = smolagents(task, calling(("call_mock_0001", "get_weather", {"city": "Paris"})),
                       text("user", "Observation:\nParis: sunny, 22 C"))
    assert calls_of(chat(mock, after)) == [("final_answer", {"answer": "(mock) Paris: sunny, 22 C"})]


def test_smolagents_parallel_calls_get_one_observation_line_each(mock):
    task = text("user", "New task:\nWhat is the weather in Paris and Tokyo?")
    assert calls_of(chat(mock, smolagents(task))) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]
    after = smolagents(task, calling(("call_mock_0015", "get_weather", {"city": "Paris"}),
                                     ("call_mock_0016", "get_weather", {"city": "Tokyo"})),
                       text("user", "Observation:\nParis: sunny, 22 C\nTokyo: rainy, 15 C"))
    assert calls_of(chat(mock, after)) == [("final_answer", {"answer": "(mock) Paris: sunny, 22 C\nTokyo: rainy, 15 C"})]


def test_smolagents_failed_call_is_corrected_once_then_reported(mock):
    # A tool that raises leaves no "Calling tools" turn: its error is appended to the task's user text.
    known = "ValueError: Unknown city 'Pariss'. Known cities: Paris, Tokyo"
    first = text("user", "New task:\nWhat is the weather in Pariss?\n" + failed("get_weather", {"city": "Pariss"}, known))
    assert calls_of(chat(mock, smolagents(first))) == [("get_weather", {"city": "Paris"})]  # the one correction
    after = smolagents(first, calling(("call_mock_0002", "get_weather", {"city": "Paris"})),
                       text("user", "Observation:\nParis: sunny, 22 C"))
    assert calls_of(chat(mock, after)) == [("final_answer", {"answer": "(mock) Paris: sunny, 22 C"})]
    hopeless = "ValueError: Unknown city 'Atlantis'. Known cities: Paris, Tokyo"
    twice = text("user", "New task:\nWhat is the weather in Atlantis?\n" + failed("get_weather", {"city": "Atlantis"}, hopeless))
    [(name, args)] = calls_of(chat(mock, smolagents(twice)))
    assert name == "final_answer" and args["answer"].startswith('(mock) get_weather(city=Atlantis) failed: "Error executing')
    assert "Unknown city 'Atlantis'" in args["answer"] and "retry" not in args["answer"]  # not smolagents' advice


def test_smolagents_call_id_error_reads_as_a_failed_result():
    turns = [text("user", "New task:\nWhat is the weather in Paris?"),
             calling(("call_1", "get_weather", {"city": "Paris"})),
             text("user", "Call id: call_1\n" + failed("get_weather", {"city": "Paris"}, "TimeoutError: no answer"))]
    read = with_text_calls(turns, [{"name": "get_weather", "input_schema": {"type": "object"}}])
    assert [b["type"] for m in read for b in m["content"]] == ["text", "tool_use", "tool_result"]
    assert read[2]["content"][0]["content"].startswith("Error:\nError executing tool 'get_weather'")


def anthropic_view(turns: list[dict]) -> dict:
    """The same conversation in the Messages API's shape (what LiteLLM makes of it for Claude)."""
    tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
              "input_schema": t["function"]["parameters"]} for t in SMOL_TOOLS]
    return {"model": DEFAULT_MODEL, "max_tokens": 1024, "system": SMOLAGENTS_SYSTEM, "messages": turns,
            "tools": tools, "tool_choice": {"type": "any"}, "stop_sequences": ["Observation:", "Calling tools:"]}


def test_the_messages_endpoint_reads_them_too(mock):
    turns = [text("user", "New task:\nWhat is the weather in Paris?"),
             calling(("call_1", "get_weather", {"city": "Paris"})), text("user", "Observation:\nParis: sunny, 22 C")]
    answer = post(mock, "/v1/messages", anthropic_view(turns), ANTHROPIC).json()
    assert uses(answer) == [("final_answer", {"answer": "(mock) Paris: sunny, 22 C"})]


@pytest.mark.parametrize("said", [
    'Action:\n{\n  "name": "get_weather",\n  "arguments": {"city": "Paris"}\n}',  # smolagents' text format
    'I need the weather.\nAction: {"action": "get_weather", "action_input": {"city": "Paris"}}',
    "Thought: I should look it up.\nAction: get_weather\nAction Input: Paris",  # a text ReAct agent
])
def test_an_assistant_text_that_names_an_action_is_answered_by_an_observation(said):
    turns = [{"role": "user", "content": "What is the weather in Paris?"}, {"role": "assistant", "content": said},
             {"role": "user", "content": "Observation: Paris: sunny, 22 C"}]
    view = anthropic_view(turns)
    alone = {**view, "tools": view["tools"][:1], "tool_choice": {"type": "auto"}}  # no final_answer: a text answer
    assert text_of(respond(alone)) == "(mock) Paris: sunny, 22 C"
    assert uses(respond(anthropic_view(turns))) == [("final_answer", {"answer": "(mock) Paris: sunny, 22 C"})]


def test_ordinary_conversations_read_as_before():
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    ordinary = [
        [text("user", "Observation: the sky is blue. What is the weather in Paris?")],  # nothing pending
        [text("user", "Hi"), text("assistant", "Calling tools:\n[{'function': {'name': 'get_weather', 'arguments': {}}}]"),
         text("user", "What about Tokyo?")],  # not answered
        [text("user", "Hi"), text("assistant", "Action: {\"name\": \"search\", \"arguments\": {}}"),
         text("user", "Observation: nothing")],  # not an offered tool
        [text("user", "Hi"), text("assistant", "Calling tools:\n[{not a list"), text("user", "Observation: x")],
        [text("user", "Error:\nError executing tool 'search' with arguments {}: no such tool")],  # not offered
    ]
    for turns in ordinary:
        assert with_text_calls(turns, tools) is turns
    assert with_text_calls(ordinary[0], []) is ordinary[0]
    assert text_calls("Calling tools:\n" + "[" * 200_000, tools) == ("", [])  # too long to read: left as text


def test_a_lone_argument_goes_to_the_tool_s_one_property():
    tools = [{"name": "final_answer", "input_schema": {"type": "object", "properties": {"answer": {}}}}]
    said = "Calling tools:\n[{'id': 'c', 'type': 'function', 'function': {'name': 'final_answer', 'arguments': 'image.png'}}]"
    assert text_calls(said, tools) == ("", [{"type": "tool_use", "name": "final_answer", "input": {"answer": "image.png"}}])


PIECES = ["Calling tools:\n", "[{'id': 'c', 'type': 'function', 'function': {'name': 'get_weather', 'arguments': ",
          "{'city': 'Paris'}", "'Paris'", "}}]", "Observation:\n", "Call id: c\n", "Error:\nError executing tool 'get_weather'",
          " with arguments ", "}: ", "ValueError: no", "Action: ", "get_weather\nAction Input: ", '{"name": "get_weather"',
          ', "arguments": {"city": "Tokyo"}}', "\n", "Paris: sunny", "观察：", "What is the weather in Paris?", "[", "{", "'"]
said = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), said), min_size=1, max_size=6))
def test_text_calls_never_break_a_conversation(turns):
    messages = [text(role, said or " ") for role, said in turns]
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    read = with_text_calls(messages, tools)
    for n, message in enumerate(read):  # every call made of text is answered in the next message, and only there
        made = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in read[n + 1]["content"] if b["type"] == "tool_result"] if made else []
        assert made == answered and all(isinstance(b["input"], dict) for b in message["content"] if b["type"] == "tool_use")
    respond({"model": DEFAULT_MODEL, "max_tokens": 256, "messages": messages if messages[0]["role"] == "user"
             else [text("user", "Hi"), *messages], "tools": tools})


def test_a_failure_report_cut_right_after_with_arguments_is_still_read():
    """Found by the 1,000-example property run: "...with arguments " and nothing more raised IndexError."""
    from miniagent.mock.reading import _failures

    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]
    before, failed = _failures("Error:\nError executing tool 'get_weather' with arguments ", tools)
    assert before == "" and failed[0][0]["name"] == "get_weather" and failed[0][0]["input"] == {}
