"""messages.what_it_did: the one line a notebook prints when the model did not do what the lesson expected."""

from miniagent.messages import what_it_did


def test_a_tool_call_is_named_with_its_input():
    response = {"stop_reason": "tool_use", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "北京"}}]}
    assert what_it_did(response) == 'called get_weather {"city": "北京"} (stop_reason tool_use)'


def test_an_answer_in_words_is_quoted_on_one_line_and_cut():
    response = {"stop_reason": "max_tokens", "content": [{"type": "text", "text": "Paris is\n\nlovely " * 30}]}
    line = what_it_did(response, limit=40)
    assert line.startswith("answered without calling a tool (stop_reason max_tokens): \"Paris is lovely")
    assert "\n" not in line and line.endswith('…"') and len(line) < 110


def test_an_empty_answer_says_so():
    assert what_it_did({"stop_reason": "end_turn", "content": []}) == \
        "answered without calling a tool (stop_reason end_turn): no text at all"
    assert what_it_did({"stop_reason": "end_turn", "content": "  "}).endswith("no text at all")


def test_a_message_from_a_history_has_no_stop_reason_to_quote():
    message = {"role": "assistant", "content": "Hello!"}
    assert what_it_did(message) == 'answered without calling a tool: "Hello!"'
