"""The mock's brain with memory and search tools: remember, recall, forget, and answers that cite passages.

The tools are the real ones (`memory_tools`, `search_tool` on a keyword-only index of the shipped
handbook, so no embedding model is needed), and the brain reads only their names, descriptions
and schemas: nothing here names a tool to the brain.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from miniagent import Agent
from miniagent.client import connect
from miniagent.messages import conversation_error, text_of, tool_uses
from miniagent.memory import Memory, memory_tools
from miniagent.mock import brain
from miniagent.mock.brain import respond
from miniagent.mock.reading import as_fact, content_words
from miniagent.retrieval import DATA, Index, load, search_tool, split
from miniagent.tools import ToolRegistry

from test_mock_brain import BUILTIN, SEARCH, body, calls, results_for, user, with_ids


@pytest.fixture(scope="module")
def index():
    built = Index()  # no embedder: keyword search (FTS5) only
    for language in ("en", "zh"):
        for document in load(DATA / language):
            built.add(split(document))
    yield built
    built.close()


def toolset(memory, index):
    return [*memory_tools(memory), search_tool(index)]


@pytest.fixture
def schemas(index):
    return ToolRegistry(toolset(Memory(), index)).schemas()


def agent(memory, index):
    return Agent(connect(offline=True, quiet=True), toolset(memory, index))


def made(result):
    """The tool calls of a run, as (name, input)."""
    return [(b["name"], b["input"]) for m in result.messages for b in tool_uses(m)]


# --- reading Chinese: content words are character pairs --------------------------------------------------


def test_chinese_content_words_are_character_pairs_cut_at_function_characters():
    # 每 ("every") is a function character too: 每年 would match every yearly rule of a handbook
    assert [w for _, w in content_words("我每年有多少天年假？")] == ["多少", "少天", "天年", "年假"]
    assert [w for _, w in content_words("报销每月几号截止")] == ["报销", "号截", "截止"]  # 月 alone: no pair
    assert [w for _, w in content_words("Hotels in 北京")] == ["hotel", "北京"]
    assert content_words("北京的天气") == [(0, "北京")]  # 天气 asks for a concept: not a content word
    assert content_words("我每年有多少天年假？", cjk=False) == []


# --- picking the memory tools by what their descriptions say -----------------------------------------------


@pytest.mark.parametrize("question, expected", [
    ("Please remember that my favourite colour is green.", [("remember", {"text": "The user's favourite colour is green."})]),
    ("请记住我最喜欢的颜色是绿色", [("remember", {"text": "用户最喜欢的颜色是绿色。"})]),
    ("What is my favourite colour? Recall it from memory.", [("recall", {"query": "What is my favourite colour"})]),
    ("What is my favourite colour?", [("recall", {"query": "What is my favourite colour"})]),
    ("我最喜欢什么颜色？", [("recall", {"query": "用户最喜欢什么颜色"})]),  # memories are in the third person
    ("Do you remember my name?", [("recall", {"query": "Do you remember my name"})]),
    ("Forget memory 1.", [("forget", {"memory_id": 1})]),
    ("忘掉第 1 条记忆", [("forget", {"memory_id": 1})]),
    ("Delete memory 3, please.", [("forget", {"memory_id": 3})]),
    ("My name is Ada. Remember that.", [("remember", {"text": "The user's name is Ada."})]),
    ("我叫小明，记住它。", [("remember", {"text": "用户叫小明。"})]),
    # a statement names a place the documents cover, but asks nothing: no search
    ("I live in Porthaven; please remember it", [("remember", {"text": "The user lives in Porthaven."})]),
])
def test_memory_requests_call_the_tool_whose_description_fits(schemas, question, expected):
    r = respond(body([user(question)], schemas))
    assert calls(r) == expected and r["stop_reason"] == "tool_use"


def test_a_fact_the_conversation_holds_is_answered_from_it_not_looked_up(schemas):
    said = [user("My favourite colour is green."), {"role": "assistant", "content": "Noted."}]
    r = respond(body(said + [user("What is my favourite colour?")], schemas))
    assert calls(r) == [] and text_of(r) == "(mock) You told me you like green."
    asked = respond(body(said + [user("What is my favourite colour? Recall it from memory.")], schemas))
    assert [name for name, _ in calls(asked)] == ["recall"]  # asked to recall: it does


def test_without_a_recall_tool_a_missing_fact_is_still_unknown():
    r = respond(body([user("What is my favourite colour?")], BUILTIN + [SEARCH]))
    assert calls(r) == [] and "don't know what you like" in text_of(r)


def test_questions_not_about_the_user_or_the_documents_call_nothing(schemas):
    for question in ("What is the capital of France?", "法国的首都是哪里？", "Tell me a joke."):
        r = respond(body([user(question)], schemas))
        assert calls(r) == [] and "remember, recall, forget, search_documents" in text_of(r)


def test_a_word_explained_by_the_chosen_tool_picks_no_other():
    keep = {"name": "keep_note", "description": "Keep a note in memory.", "input_schema":
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
    drop = {"name": "drop_note", "description": "Delete a note from memory by its number.", "input_schema":
            {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}}
    assert calls(respond(body([user("Delete memory note 2")], [keep, drop]))) == [("drop_note", {"number": 2})]


# --- search: Chinese questions, answers that cite ----------------------------------------------------------


@pytest.mark.parametrize("question, query", [
    ("How many days of annual leave do I get each year?", "How many days of annual leave do I"),
    ("Where is the office in Porthaven?", "Where is the office in Porthaven"),
    ("我每年有多少天年假？", "我每年有多少天年假"),
])
def test_a_question_about_the_documents_searches_them(schemas, question, query):
    assert calls(respond(body([user(question)], schemas))) == [("search_documents", {"query": query})]


@pytest.mark.parametrize("question, answer", [
    ("How many days of annual leave do I get each year?",
     "(mock) search_documents found: Every employee of Tidewater Instruments has 26 days of paid annual leave "
     "per calendar year, on top of public holidays [en/leave.md:1-7]."),
    ("我每年有多少天年假？",
     "（模拟）search_documents 找到：潮汐仪器公司的每位员工每个日历年享有二十六天带薪年假，法定节假日另计 [zh/leave.md:1-15]。"),
])
def test_the_agent_answers_with_the_passage_and_its_citation(index, question, answer):
    result = agent(Memory(), index).run(question)
    assert [name for name, _ in made(result)] == ["search_documents"]
    assert result.stop == "end_turn" and result.text == answer


def test_quote_prefers_the_sentence_and_section_that_fit_the_question():
    result = ("[a.md:1-5]\n# Learning\n\nEach year five days of courses do not count as leave.\n\n"
              "[b.md:1-3]\n# Annual leave\n\nYou get 26 days. Ask your manager first.")
    assert brain.passages(result)[1] == ("[b.md:1-3]", "# Annual leave\n\nYou get 26 days. Ask your manager first.")
    assert brain.quote("How many days of annual leave?", brain.passages(result), "en") == "You get 26 days [b.md:1-3]."
    assert brain.quote("unrelated", brain.passages(result), "en") == (
        "Each year five days of courses do not count as leave [a.md:1-5].")  # nothing fits: the tool's first
    records = "2 found:\n#4 [user] The user's favourite colour is green.\n#7 The user lives in Porthaven."
    assert brain.passages(records) == [("[#4]", "The user's favourite colour is green."),
                                       ("[#7]", "The user lives in Porthaven.")]
    assert brain.quote("Where do I live?", brain.passages(records), "en") == "The user lives in Porthaven [#7]."
    assert brain.passages("No passage matches this query.") == []


def test_a_result_without_citations_is_reported_as_before(index):
    result = agent(Memory(), index).run("What is my favourite colour?")
    assert made(result) == [("recall", {"query": "What is my favourite colour"})]
    assert result.text == "(mock) recall returned: No memory matches 'What is my favourite colour'."


# --- end to end: a memory outlives its conversation ----------------------------------------------------------


@pytest.mark.parametrize("tell, ask, fact, answer", [
    ("Please remember that my favourite colour is green.", "What is my favourite colour?",
     "The user's favourite colour is green.", "(mock) recall found: The user's favourite colour is green [#1]."),
    ("请记住我最喜欢的颜色是绿色", "我最喜欢什么颜色？",
     "用户最喜欢的颜色是绿色。", "（模拟）recall 找到：用户最喜欢的颜色是绿色 [#1]。"),
])
def test_a_fact_remembered_by_one_agent_is_recalled_by_another(index, tell, ask, fact, answer):
    memory = Memory()
    first = agent(memory, index).run(tell)
    assert made(first) == [("remember", {"text": fact})] and first.stop == "end_turn"
    assert [r.text for r in memory.all()] == [fact]
    second = agent(memory, index)  # a new conversation: the fact is in the memory only
    result = second.run(ask)
    query = ask.rstrip("?？").replace("我", "用户")  # Chinese is matched by characters: 用户 as the memory says it
    assert made(result) == [("recall", {"query": query})]
    assert result.text == answer and fact not in text_of(result.messages[0])


@pytest.mark.parametrize("forget", ["Forget memory 1.", "忘掉第 1 条记忆"])
def test_forget_deletes_the_memory_by_its_number(index, forget):
    memory = Memory()
    memory.remember("The user's favourite colour is green.")
    result = agent(memory, index).run(forget)
    assert made(result) == [("forget", {"memory_id": 1})] and len(memory) == 0
    assert "Forgot #1." in result.text


def test_as_fact_writes_a_memory_in_the_third_person():
    assert as_fact("my favourite colour is green") == "The user's favourite colour is green."
    assert as_fact("I like tea and I'm from Oslo") == "The user likes tea and the user is from Oslo."
    assert as_fact("I live in Porthaven.") == "The user lives in Porthaven."
    assert as_fact("我住在北京") == "用户住在北京。"


# --- contract: whatever is asked, a valid next turn -------------------------------------------------------

MEMORY_WORDS = st.sampled_from(["remember", "Please remember that", "my favourite colour is green", "recall", "forget",
                                "memory 1", "Do you remember", "What is my", "?", "记住", "我最喜欢什么颜色", "忘掉第 1 条记忆",
                                "年假", "annual leave", "it", "它", "#2", "[en/leave.md:1-7]", "", "。"])


@settings(deadline=None)
@given(st.lists(MEMORY_WORDS, min_size=1, max_size=8), st.integers(min_value=1, max_value=200))
def test_any_memory_question_gives_a_valid_next_turn(parts, max_tokens):
    tools = ToolRegistry(toolset(Memory(), Index())).schemas()
    request = body([user(" ".join(parts).strip() or "?")], tools, max_tokens=max_tokens)
    response = respond(request)
    assert response == respond(request)  # deterministic
    if not response["content"]:
        return
    messages = request["messages"] + [with_ids(response)]
    cited = "1 found:\n#1 The user's favourite colour is green.\n[en/leave.md:1-7]\n# Annual leave\n\n26 days."
    messages.append(results_for(messages[-1], {n: cited for n in ("recall", "search_documents")})
                    if tool_uses(messages[-1]) else user("ok"))
    assert conversation_error(messages) is None
    follow = respond({**request, "messages": messages})
    assert follow["stop_reason"] in ("end_turn", "tool_use", "max_tokens", "stop_sequence")
