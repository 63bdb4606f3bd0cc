"""The mock's request validation: each rule of wire-format §1.4, with the API's own words."""

from __future__ import annotations

import pytest

from miniagent import DEFAULT_MODEL
from miniagent.mock.validate import MAX_MESSAGES, ApiError, validate_request

OLD, NEW = "2023-06-01", "2026-10-21"
MODEL = DEFAULT_MODEL
WEATHER = {"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def request(messages=None, **fields):
    body = {"model": MODEL, "max_tokens": 256,
            "messages": messages if messages is not None else [{"role": "user", "content": "Hello"}]}
    body.update(fields)
    return body


def tool_turns(use_id="toolu_1", result_id="toolu_1"):
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": use_id, "name": "get_weather",
                                           "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": result_id, "content": "15 C"}]},
    ]


def rejects(body, message, *, version=OLD, **kwargs):
    """Assert the full error: status, type and exact message."""
    assert validate_request(body, version=version, **kwargs) == ApiError(400, "invalid_request_error", message)


# --- valid requests pass ------------------------------------------------------------


def test_a_plain_request_passes_on_both_versions():
    assert validate_request(request(), version=OLD) is None
    assert validate_request(request(), version=NEW) is None


def test_a_valid_tool_round_trip_passes():
    body = request(tool_turns() + [{"role": "assistant", "content": "It is 15 C in Paris."}],
                   tools=[WEATHER], tool_choice={"type": "auto"}, system="Be brief.")
    assert validate_request(body, version=OLD) is None


def test_a_valid_prefill_passes():
    body = request([{"role": "user", "content": "Answer in JSON"}, {"role": "assistant", "content": "{"}])
    assert validate_request(body, version=OLD) is None


def test_all_optional_fields_pass_on_the_old_version():
    body = request(system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
                   stop_sequences=["END"], stream=False, metadata={"user_id": "u1"},
                   temperature=0.5, top_k=40, thinking={"type": "disabled"})
    assert validate_request(body, version=OLD) is None
    body.pop("temperature")
    assert validate_request({**body, "top_p": 0.9}, version=OLD) is None  # top_p instead (not both)


def test_an_unknown_version_is_a_programming_error():
    with pytest.raises(ValueError, match="2023-06-01"):
        validate_request(request(), version="2024-01-01")


# --- required fields and types ------------------------------------------------------------


@pytest.mark.parametrize("field", ["model", "max_tokens", "messages"])
def test_a_missing_required_field(field):
    body = request()
    del body[field]
    rejects(body, f"{field}: Field required")


def test_the_body_must_be_an_object():
    error = validate_request([1, 2], version=OLD)
    assert (error.status, error.type) == (400, "invalid_request_error") and "JSON object" in error.message


def test_max_tokens_must_be_an_integer():
    rejects(request(max_tokens="1024"), "max_tokens: Input should be a valid integer")
    rejects(request(max_tokens=True), "max_tokens: Input should be a valid integer")


def test_role_must_be_one_the_api_knows():
    """An OpenAI habit: a `tool` message. The SDK's messages are user, assistant or system."""
    for version in (OLD, NEW):
        rejects(request([{"role": "tool", "content": "15 C"}]),
                "messages.0.role: Input should be 'user', 'assistant' or 'system'", version=version)
    rejects(request([{"content": "Hello"}]), "messages.0.role: Field required")


def test_a_system_message_in_the_conversation_is_accepted():
    """The SDK's MessageParam has a `system` role (in 1.x, speaking 2023-06-01, too): text only."""
    messages = [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Hello"},
                {"role": "system", "content": [{"type": "text", "text": "Be brief."}]}]
    for version in (OLD, NEW):
        assert validate_request(request(messages), version=version) is None
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
    # one block type, so one model, checked as pydantic checks one: its fields in order
    rejects(request([{"role": "system", "content": [image]}, {"role": "user", "content": "Hi"}]),
            "messages.0.content.0.text: Field required")
    rejects(request([{"role": "system", "content": [{**image, "text": "a cat"}]}, {"role": "user", "content": "Hi"}]),
            "messages.0.content.0.type: Input should be 'text'")


def test_a_message_needs_content():
    rejects(request([{"role": "user"}]), "messages.0.content: Field required")


def test_an_unknown_block_type():
    """The expected tags are every block type of the pinned SDK, in its order."""
    error = validate_request(request([{"role": "user", "content": [{"type": "video", "url": "x"}]}]), version=OLD)
    assert error.message.startswith("messages.0.content.0: Input tag 'video' found using 'type' does not match any "
                                    "of the expected tags: 'text', 'image', 'document', 'search_result', 'thinking', "
                                    "'redacted_thinking', 'tool_use', 'tool_result', 'server_tool_use', ")


def test_a_block_without_a_type():
    rejects(request([{"role": "user", "content": [{"text": "Hello"}]}]),
            "messages.0.content.0: Unable to extract tag using discriminator 'type'")


def test_a_value_of_a_kind_no_member_of_a_union_takes():
    rejects(request([{"role": "user", "content": 42}]),
            "messages.0.content: Input should be a valid string or a valid list")
    rejects(request(system={"text": "Be brief."}), "system: Input should be a valid string or a valid list")


def test_a_tool_use_block_needs_its_fields():
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "name": "x", "input": {}}]}]
    rejects(request(messages), "messages.1.content.0.tool_use.id: Field required")


@pytest.mark.parametrize("bad_id", ["toolu 1", "toolu_1\n", "toolu.1", "toolu:1", "", "tööl", "toolu_1\u200b"])
def test_a_tool_use_id_must_match_the_api_pattern(bad_id):
    """The real API's words (seen in many bug reports); fullmatch, so a trailing newline fails too."""
    rejects(request(tool_turns(use_id=bad_id, result_id=bad_id), tools=[WEATHER]),
            "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
    for good in ("toolu_01D7FLrfh4GYq7yT1ULFeyMV", "toolu_mock_0001", "call-1", "A"):  # the API's and the mock's
        assert validate_request(request(tool_turns(good, good), tools=[WEATHER]), version=OLD) is None


def test_an_image_needs_a_supported_media_type():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AAAA"}}
    rejects(request([{"role": "user", "content": [image]}]),
            "messages.0.content.0.image.source.base64.media_type: Input should be "
            "'image/jpeg', 'image/png', 'image/gif' or 'image/webp'")


# --- unknown keys at every depth -------------------------------------------------------------


def test_unknown_top_level_key():
    rejects(request(response_format={"type": "json"}), "response_format: Extra inputs are not permitted")


def test_unknown_key_in_a_message():
    rejects(request([{"role": "user", "content": "hi", "name": "bob"}]),
            "messages.0.name: Extra inputs are not permitted")


def test_unknown_key_in_a_block():
    messages = tool_turns()
    messages[1]["content"][0]["text"] = "oops"
    rejects(request(messages, tools=[WEATHER]), "messages.1.content.0.tool_use.text: Extra inputs are not permitted")


def test_unknown_key_in_a_tool():
    rejects(request(tools=[{**WEATHER, "parameters": {}}]), "tools.0.custom.parameters: Extra inputs are not permitted")


def test_unknown_key_in_tool_choice():
    rejects(request(tools=[WEATHER], tool_choice={"type": "auto", "parallel": False}),
            "tool_choice.auto.parallel: Extra inputs are not permitted")


def test_unknown_key_in_a_nested_tool_result_block():
    messages = tool_turns()
    messages[2]["content"][0]["content"] = [{"type": "text", "text": "15 C", "lang": "en"}]
    rejects(request(messages), "messages.2.content.0.tool_result.content.0.text.lang: Extra inputs are not permitted")


# --- sampling parameters by version -----------------------------------------------------------


def test_temperature_range_on_the_old_version():
    rejects(request(temperature=1.5), "temperature: Input should be less than or equal to 1")
    rejects(request(temperature=-0.1), "temperature: Input should be greater than or equal to 0")


def test_temperature_and_top_p_together_on_the_old_version():
    for one in ({"temperature": 0.5}, {"top_p": 0.9}):
        assert validate_request(request(**one), version=OLD) is None
    rejects(request(temperature=0.5, top_p=0.9),
            "`temperature` and `top_p` cannot both be specified for this model. Please use only one.")


@pytest.mark.parametrize("field, value", [("temperature", 1.0), ("top_p", 0.9), ("top_k", 5)])
def test_sampling_parameters_are_rejected_on_2026_10_21(field, value):
    rejects(request(**{field: value}), f"{field}: Extra inputs are not permitted", version=NEW)
    assert validate_request(request(**{field: value}), version=OLD) is None


# --- tools and tool_choice -------------------------------------------------------------------


def test_bad_tool_name():
    rejects(request(tools=[{**WEATHER, "name": "get weather"}]),
            "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")


def test_a_tool_name_with_a_trailing_newline_is_bad():
    rejects(request(tools=[{**WEATHER, "name": "get_weather\n"}]),
            "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")


def test_too_long_tool_name():
    rejects(request(tools=[WEATHER, {**WEATHER, "name": "t" * 129}]),
            "tools.1.custom.name: String should have at most 128 characters")
    assert validate_request(request(tools=[{**WEATHER, "name": "t" * 128}]), version=OLD) is None


def test_duplicate_tool_names():
    rejects(request(tools=[WEATHER, dict(WEATHER)]), "tools: Tool names must be unique.")


def test_a_tool_needs_an_object_input_schema():
    rejects(request(tools=[{"name": "t"}]), "tools.0.custom.input_schema: Field required")
    rejects(request(tools=[{"name": "t", "input_schema": {"type": "string"}}]),
            "tools.0.custom.input_schema.type: Input should be 'object'")


def test_server_tools_and_anthropic_defined_tools_are_accepted():
    """The mock never runs them (its model calls only tools with a schema: test_mock_brain), but
    a request that defines them is valid, and the real API would serve it."""
    tools = [WEATHER, {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
             {"type": "bash_20250124", "name": "bash"},
             {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
             {"type": "memory_20250818", "name": "memory"},
             {"type": "code_execution_20250825", "name": "code_execution"}]
    for version in (OLD, NEW):
        assert validate_request(request(tools=tools), version=version) is None


def test_an_anthropic_defined_tool_has_its_own_fields_and_name():
    rejects(request(tools=[{"type": "bash_20250124", "name": "shell"}]),
            "tools.0.bash_20250124.name: Input should be 'bash'")
    rejects(request(tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": "3"}]),
            "tools.0.web_search_20250305.max_uses: Input should be a valid integer")
    rejects(request(tools=[{"type": "bash_20250124", "name": "bash", "input_schema": {"type": "object"}}]),
            "tools.0.bash_20250124.input_schema: Extra inputs are not permitted")


def test_an_unknown_tool_type():
    error = validate_request(request(tools=[{"type": "function", "function": {"name": "f"}}]), version=OLD)
    assert error.message.startswith("tools.0: Input tag 'function' found using 'type' does not match any of the "
                                    "expected tags: 'custom', 'bash_20250124', ")


def test_a_client_tool_may_say_it_is_custom_or_not_say_anything():
    for kind in ({"type": "custom"}, {"type": None}, {}):
        assert validate_request(request(tools=[{**WEATHER, **kind}]), version=OLD) is None
    rejects(request(tools=[{**WEATHER, "type": None, "name": "get weather"}]),
            "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")


def test_an_input_schema_may_use_any_json_schema_keyword():
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False, "$defs": {}, "description": "Where"}
    assert validate_request(request(tools=[{**WEATHER, "input_schema": schema}]), version=OLD) is None
    rejects(request(tools=[{**WEATHER, "input_schema": {**schema, "required": "city"}}]),
            "tools.0.custom.input_schema.required: Input should be a valid list")


def test_tool_choice_variants():
    rejects(request(tools=[WEATHER], tool_choice={"type": "required"}),
            "tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: "
            "'auto', 'any', 'tool', 'none'")
    rejects(request(tools=[WEATHER], tool_choice={"type": "tool"}), "tool_choice.tool.name: Field required")
    for choice in ({"type": "auto"}, {"type": "any"}, {"type": "none"}, {"type": "tool", "name": "get_weather"}):
        assert validate_request(request(tools=[WEATHER], tool_choice=choice), version=OLD) is None


def test_tool_choice_must_name_a_defined_tool():
    error = validate_request(request(tools=[WEATHER], tool_choice={"type": "tool", "name": "get_time"}), version=OLD)
    assert (error.status, error.type) == (400, "invalid_request_error")
    assert "'get_time'" in error.message and "get_weather" in error.message


def test_forcing_a_tool_call_without_tools_is_rejected():
    error = validate_request(request(tool_choice={"type": "any"}), version=OLD)
    assert (error.status, error.type) == (400, "invalid_request_error") and "`tools`" in error.message


# --- limits ------------------------------------------------------------------------------------


def test_negative_max_tokens():
    rejects(request(max_tokens=-1), "max_tokens: Input should be greater than or equal to 0")
    assert validate_request(request(max_tokens=0), version=OLD) is None


def test_max_tokens_over_the_cap():
    rejects(request(max_tokens=128_001),
            f"max_tokens: 128001 > 128000, which is the maximum allowed number of output tokens for {MODEL}")


def test_too_many_messages():
    pair = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    messages = pair * (MAX_MESSAGES // 2) + [{"role": "user", "content": "c"}]
    rejects(request(messages), f"messages: List should have at most {MAX_MESSAGES} items after validation, "
                               f"not {MAX_MESSAGES + 1}")


def test_prompt_too_long():
    # 800,000 characters estimate at 200,000 tokens, plus message and request overhead.
    rejects(request([{"role": "user", "content": "x" * 800_000}]),
            "prompt is too long: 200007 tokens > 200000 maximum")


# --- conversation rules ------------------------------------------------------------------------


def test_empty_messages():
    rejects(request([]), "messages: at least one message is required")


def test_empty_content():
    rejects(request([{"role": "user", "content": []}]),
            "messages.0: all messages must have non-empty content except for the optional final assistant message")


def test_empty_text_block():
    rejects(request([{"role": "user", "content": [{"type": "text", "text": ""}]}]),
            "messages: text content blocks must be non-empty")


def test_whitespace_only_text():
    rejects(request([{"role": "user", "content": "   \n"}]),
            "messages: text content blocks must contain non-whitespace text")


def test_prefill_with_trailing_whitespace():
    rejects(request([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sure, "}]),
            "messages: final assistant content cannot end with trailing whitespace")


def test_orphaned_tool_result():
    # What a naive sliding window leaves behind: the tool_use it answers was cut off.
    messages = tool_turns()[2:] + [{"role": "assistant", "content": "15 C."}, {"role": "user", "content": "Thanks"}]
    rejects(request(messages),
            "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. "
            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")


def test_unanswered_tool_use():
    messages = tool_turns()[:2] + [{"role": "user", "content": "Never mind."}]
    rejects(request(messages),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. "
            "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")


def test_tool_result_not_first():
    messages = tool_turns()
    messages[2]["content"].insert(0, {"type": "text", "text": "Here you go:"})
    rejects(request(messages),
            "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. "
            "Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.")


def test_duplicate_tool_use_ids():
    messages = tool_turns() + [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "20 C"}]}]
    rejects(request(messages), "messages.3.content.0: `tool_use` ids must be unique")


# --- roles: merging and strict alternation ------------------------------------------------------


def test_consecutive_user_turns_are_merged_by_default():
    body = request([{"role": "user", "content": "Hello"}, {"role": "user", "content": "Are you there?"}])
    assert validate_request(body, version=OLD) is None


def test_merged_user_turns_can_answer_tool_use_together():
    messages = tool_turns() + [{"role": "user", "content": "And tomorrow?"}]
    assert validate_request(request(messages), version=OLD) is None


def test_strict_alternation_rejects_consecutive_roles():
    body = request([{"role": "user", "content": "Hello"}, {"role": "user", "content": "Are you there?"}])
    rejects(body, 'messages: roles must alternate between "user" and "assistant", but found multiple "user" '
                  'roles in a row', strict_alternation=True)


def test_an_assistant_first_conversation_is_accepted():
    body = request([{"role": "assistant", "content": "Hi, how can I help?"}, {"role": "user", "content": "Hi"}])
    assert validate_request(body, version=OLD) is None


# --- count_tokens ----------------------------------------------------------------------------------


def test_count_tokens_has_its_own_schema():
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hello"}]}
    assert validate_request(body, version=NEW, count_tokens=True) is None
    rejects({**body, "max_tokens": 10}, "max_tokens: Extra inputs are not permitted", count_tokens=True)
    rejects({"model": MODEL}, "messages: Field required", count_tokens=True)


def test_count_tokens_applies_the_conversation_rules():
    body = {"model": MODEL, "messages": tool_turns()[:2]}
    assert validate_request(body, version=OLD, count_tokens=True).message.startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks")


# --- what the pinned SDK can send, and the rules schema.py adds by hand -------------------------------


def test_the_model_name_must_not_be_empty():
    rejects(request(model=""), "model: String should have at least 1 character")
    rejects(request(model=5), "model: Input should be a valid string")


def test_newer_top_level_parameters_are_accepted():
    body = request(speed="fast", service_tier="standard_only", inference_geo="us", diagnostics={},
                   cache_control={"type": "ephemeral", "ttl": "1h"}, output_config={"effort": "low"},
                   thinking={"type": "adaptive"}, container="container_1")
    for version in (OLD, NEW):
        assert validate_request(body, version=version) is None
    rejects(request(speed="warp"), "speed: Input should be 'standard' or 'fast'")
    rejects(request(output_config={"effort": "huge"}),
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")


def test_thinking_blocks_go_back_in_assistant_turns():
    from miniagent.mock import thinking
    said = "The user wants the weather."
    turn = [{"type": "thinking", "thinking": said, "signature": thinking.sign(said, said, "summarized")},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}, {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]
    messages = tool_turns()
    messages[1]["content"] = turn
    assert validate_request(request(messages, tools=[WEATHER]), version=NEW) is None
    messages[1]["content"][0] = {"type": "thinking", "thinking": said}
    rejects(request(messages, tools=[WEATHER]), "messages.1.content.0.thinking.signature: Field required")


def test_search_results_and_caller():
    """search_result blocks, at the top of a user turn and inside a tool_result; `caller` on a
    tool_use (the real API's responses carry it, and the SDK sends a response's blocks back with it)."""
    found = {"type": "search_result", "source": "https://example.com/paris", "title": "Paris",
             "content": [{"type": "text", "text": "Paris is in France."}], "citations": {"enabled": True}}
    messages = tool_turns()
    messages[0]["content"] = [found, {"type": "text", "text": "Weather in Paris?"}]
    messages[1]["content"][0]["caller"] = {"type": "direct"}
    messages[2]["content"][0]["content"] = [found]
    for version in (OLD, NEW):
        assert validate_request(request(messages, tools=[WEATHER]), version=version) is None
    messages[1]["content"][0]["caller"] = None  # model_dump() of a block parsed without one
    rejects(request(messages, tools=[WEATHER]),
            "messages.1.content.0.tool_use.caller: Input should be a valid dictionary")


def test_2026_10_21_refuses_documents_in_assistant_turns():
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Notes."}}
    messages = [{"role": "user", "content": "Read this."}, {"role": "assistant", "content": [document]},
                {"role": "user", "content": "Thanks."}]
    assert validate_request(request(messages), version=OLD) is None
    rejects(request(messages), "messages.1.content.0: `document` blocks are not allowed in assistant messages on "
                               "anthropic-version 2026-10-21; move the document to a user message", version=NEW)


def test_2026_10_21_refuses_citations_in_user_text():
    cited = {"type": "text", "text": "As the notes say.", "citations": [
        {"type": "char_location", "cited_text": "Notes.", "document_index": 0, "start_char_index": 0,
         "end_char_index": 6, "document_title": None}]}
    messages = [{"role": "user", "content": [cited]}]
    assert validate_request(request(messages), version=OLD) is None
    assert validate_request(request([{"role": "user", "content": [{**cited, "citations": []}]}]), version=NEW) is None
    rejects(request(messages), "messages.0.content.0: `text` blocks with citations are not allowed in user messages "
                               "on anthropic-version 2026-10-21; remove the citations", version=NEW)


# --- beta fields ------------------------------------------------------------------------------------

BETA = "context-management-2025-06-27"


def test_a_beta_field_needs_a_beta_header():
    """Without an `anthropic-beta` header, the beta shapes do not apply (the API's words)."""
    body = request(context_management={"edits": [{"type": "clear_tool_uses_20250919"}]})
    rejects(body, "context_management: Extra inputs are not permitted")
    assert validate_request(body, version=NEW, betas=[BETA]) is None


def test_an_unknown_beta_name_is_the_apis_400():
    rejects(request(), "Unexpected value(s) `no-such-beta-2025-01-01` for the `anthropic-beta` header. Please consult "
                       "our documentation at docs.claude.com or try again without the header.",
            betas=[BETA, "no-such-beta-2025-01-01"])


def test_a_system_message_needs_content_or_output_config():
    """The beta system message may carry only output_config (per-turn effort); with neither it is refused
    (the SDK says so; the words are ours)."""
    config_only = [{"role": "user", "content": "Hello"}, {"role": "system", "output_config": {"effort": "low"}}]
    assert validate_request(request(config_only), version=NEW, betas=[BETA]) is None
    for empty in ({"role": "system"}, {"role": "system", "output_config": {}},
                  {"role": "system", "output_config": None}):
        rejects(request([{"role": "user", "content": "Hello"}, empty]),
                "messages.1: a `system` message needs `content` or `output_config`", betas=[BETA])
    rejects(request(config_only), "messages.1.content: Field required")  # GA: content is required


def test_the_older_output_format_is_a_beta_field():
    """Structured outputs' first form (anthropic 0.x sent it with `structured-outputs-2025-11-13`)."""
    fmt = {"type": "json_schema", "schema": {"type": "object", "properties": {"a": {"type": "string"}},
                                             "required": ["a"], "additionalProperties": False}}
    assert validate_request(request(output_format=fmt), version=NEW, betas=["structured-outputs-2025-11-13"]) is None
    rejects(request(output_format=fmt), "output_format: Extra inputs are not permitted")
