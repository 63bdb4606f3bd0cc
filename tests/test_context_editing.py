"""The mock's server-side context editing (beta context-management-2025-06-27, notebook 15), and the
client's betas that ask for it."""

from __future__ import annotations

import json

import pytest

import miniagent
from miniagent.errors import APIError
from miniagent.mock.context_editing import BETA, PLACEHOLDER

TOOLS = [{"name": "view", "description": "View a file.", "input_schema": {"type": "object", "properties": {
    "path": {"type": "string"}}}}, {"name": "update_plan", "description": "Keep a plan.", "input_schema": {
        "type": "object", "properties": {"steps": {"type": "array"}}}}]


def session(n, size=2000, name="view"):
    messages = [{"role": "user", "content": "Read the logs."}]
    for i in range(n):
        tool = name if i != 1 else "update_plan"
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{i:02d}", "name": tool, "input": {"path": f"log-{i}"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": f"log {i} " + "ok " * size}]})
    return messages


def edits(**options):
    return {"edits": [{"type": "clear_tool_uses_20250919", **options}]}


@pytest.fixture
def llm():
    client = miniagent.connect(offline=True, quiet=True)
    client.betas = [BETA]
    client.mock.script(lambda body: {"content": [{"type": "text", "text": json.dumps(
        [b["content"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
         if b.get("type") == "tool_result"])}]}, repeat=True)
    return client


def seen(response):
    """The tool results as the (scripted) model read them."""
    return json.loads(response["content"][0]["text"])


def test_without_the_beta_header_the_field_is_refused():
    client = miniagent.connect(offline=True, quiet=True)
    with pytest.raises(APIError, match="context_management: Extra inputs are not permitted"):
        client.create(session(2), tools=TOOLS, context_management=edits())
    assert client.exchanges[-1].request["headers"].get("anthropic-beta") is None


def test_the_client_sends_its_betas(llm):
    llm.create(session(1), tools=TOOLS)
    assert llm.exchanges[-1].request["headers"]["anthropic-beta"] == BETA


def test_below_the_trigger_nothing_is_cleared(llm):
    response = llm.create(session(6), tools=TOOLS, context_management=edits())  # default trigger: 100,000 tokens
    assert response["context_management"] == {"applied_edits": []}
    assert PLACEHOLDER not in seen(response)


def test_past_the_trigger_all_but_the_last_keep_are_cleared_and_usage_counts_what_is_left(llm):
    whole = llm.create(session(6), tools=TOOLS)["usage"]["input_tokens"]
    response = llm.create(session(6), tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 3000}, keep={"type": "tool_uses", "value": 2}))
    results = seen(response)
    assert results[:4] == [PLACEHOLDER] * 4 and PLACEHOLDER not in results[4:]
    applied = response["context_management"]["applied_edits"]
    assert applied[0]["type"] == "clear_tool_uses_20250919" and applied[0]["cleared_tool_uses"] == 4
    assert response["usage"]["input_tokens"] == whole - applied[0]["cleared_input_tokens"]


def test_excluded_tools_are_kept_and_clear_at_least_can_veto(llm):
    response = llm.create(session(6), tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 3000}, keep={"type": "tool_uses", "value": 1},
        exclude_tools=["update_plan"]))
    results = seen(response)
    assert PLACEHOLDER not in results[1] and results.count(PLACEHOLDER) == 4  # update_plan's result is kept
    vetoed = llm.create(session(6), tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 3000}, clear_at_least={"type": "input_tokens", "value": 10**6}))
    assert vetoed["context_management"] == {"applied_edits": []} and PLACEHOLDER not in seen(vetoed)


def test_clear_tool_inputs_and_the_clients_history_is_untouched(llm):
    messages = session(5)
    kept = json.dumps(messages)
    llm.mock.reset()
    llm.mock.script(lambda body: {"content": [{"type": "text", "text": json.dumps(
        [b["input"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
         if b.get("type") == "tool_use"])}]}, repeat=True)
    response = llm.create(messages, tools=TOOLS, context_management=edits(
        trigger={"type": "input_tokens", "value": 100}, keep={"type": "tool_uses", "value": 2}, clear_tool_inputs=True))
    assert json.loads(response["content"][0]["text"]) == [{}, {}, {}, {"path": "log-3"}, {"path": "log-4"}]
    assert json.dumps(messages) == kept


def test_a_streamed_answer_says_what_was_cleared(llm):
    with llm.stream(session(4), tools=TOOLS, context_management=edits(
            trigger={"type": "input_tokens", "value": 100}, keep={"type": "tool_uses", "value": 1})) as events:
        kinds = [e for e in events if e["type"] == "message_delta"]
    assert kinds[0]["context_management"]["applied_edits"][0]["cleared_tool_uses"] == 3
    assert events.message["context_management"]["applied_edits"][0]["cleared_tool_uses"] == 3


def test_thinking_of_older_turns_is_cleared(llm):
    from miniagent.mock.thinking import draft, seal

    messages = [{"role": "user", "content": "Think."}]
    for i in range(3):
        messages += [{"role": "assistant", "content": [seal(draft("hm " * 300 + str(i), "summarized")),
                                                       {"type": "text", "text": f"answer {i}"}]},
                     {"role": "user", "content": "More."}]
    llm.mock.reset()
    llm.mock.script(lambda body: {"content": [{"type": "text", "text": str(sum(
        b.get("type") == "thinking" for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]))}]},
        repeat=True)
    response = llm.create(messages, thinking={"type": "enabled", "budget_tokens": 1024}, max_tokens=2048,
                          context_management={"edits": [{"type": "clear_thinking_20251015"}]})
    assert response["content"][0]["text"] == "1"
    assert response["context_management"]["applied_edits"][0]["cleared_thinking_turns"] == 2
