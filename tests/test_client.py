"""The client: the request it sends, typed errors, retries, usage, redaction, connect()."""

import json
import logging

import httpx2
import pytest

from drivers import both
from miniagent import client as client_mod
from miniagent.client import (APIConnectionError, APITimeoutError, AuthenticationError, BadRequestError, Client,
                              InternalServerError, MalformedResponseError, MissingAPIKeyError, OverloadedError,
                              RateLimitError, connect)

CANARY = "sk-ant-canary-0123456789abcdefDONOTLEAK"
OK = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "hi"}],
      "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 3}}
HELLO = [{"role": "user", "content": "hello"}]


def error(status, kind, message, headers=None):
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx2.Response(status, json=body, headers={"request-id": "req_42", **(headers or {})})


def make(replies, **kwargs):
    """A client whose server answers with `replies` in order (responses or exceptions)."""
    seen, sleeps = [], []
    replies = list(replies)

    def handler(request):
        seen.append(request)
        reply = replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    c = Client(api_key=CANARY, base_url="https://api.test", transport=httpx2.MockTransport(handler),
               sleep=sleeps.append, **kwargs)
    return c, seen, sleeps


OPENAI_OK = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


@both
def test_request_body_and_headers():
    c, seen, _ = make([httpx2.Response(200, json=OK)], model="claude-x", max_tokens=77)
    c.create(HELLO, system="be brief")
    req = seen[0]
    assert req.url == "https://api.test/v1/messages"
    assert req.headers["x-api-key"] == CANARY
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert json.loads(req.content) == {"model": "claude-x", "max_tokens": 77, "messages": HELLO, "system": "be brief"}


@pytest.mark.parametrize("preset", ["anthropic", "deepseek-anthropic", "deepseek"])
def test_endpoint_is_where_and_how_the_client_itself_sends(preset):
    from miniagent import providers

    format = providers.preset(preset).wire_format()
    seen = []
    c = Client(api_key=CANARY, base_url="https://api.test/v1" if format.name == "openai" else "https://api.test/",
               format=format, transport=httpx2.MockTransport(lambda r: seen.append(r) or httpx2.Response(
                   200, json=OK if format.name == "anthropic" else OPENAI_OK)))
    url, headers = c.endpoint()
    c.create(HELLO)
    assert url == str(seen[0].url) == {"anthropic": "https://api.test/v1/messages",
                                       "openai": "https://api.test/v1/chat/completions"}[format.name]
    assert headers.items() <= dict(seen[0].headers).items()
    assert CANARY in (headers.get("x-api-key") or headers["authorization"])


@pytest.mark.parametrize("preset", ["anthropic", "deepseek"])
def test_each_answer_s_record_keeps_its_usage_in_the_messages_api_s_terms(preset):
    from miniagent import providers

    format = providers.preset(preset).wire_format()
    wire_usage = {"prompt_tokens": 30, "completion_tokens": 1, "total_tokens": 31,
                  "prompt_tokens_details": {"cached_tokens": 20}}
    answer = {**OPENAI_OK, "usage": wire_usage} if format.name == "openai" else {
        **OK, "usage": {"input_tokens": 10, "cache_read_input_tokens": 20, "output_tokens": 1}}
    c = Client(api_key=CANARY, base_url="https://api.test", format=format,
               transport=httpx2.MockTransport(lambda r: httpx2.Response(200, json=answer)))
    c.create(HELLO)
    assert c.last.usage == {"input_tokens": 10, "cache_read_input_tokens": 20, "output_tokens": 1}
    assert c.last.response["usage"] == answer["usage"]  # the record itself stays as it came


def test_optional_fields_left_out_when_unset():
    c, _, _ = make([])
    body = c.body(HELLO, tools=None, tool_choice=None, stop_sequences=None, temperature=None)
    assert set(body) == {"model", "max_tokens", "messages"}


@pytest.mark.parametrize("status,kind,cls", [(429, "rate_limit_error", RateLimitError),
                                             (529, "overloaded_error", OverloadedError),
                                             (500, "api_error", InternalServerError)])
@both
def test_two_faults_then_success_after_two_retries(status, kind, cls):
    headers = {"retry-after": "0.25"} if status == 429 else {}
    c, seen, sleeps = make([error(status, kind, "busy", headers), error(status, kind, "busy", headers),
                            httpx2.Response(200, json=OK)])
    assert c.create(HELLO)["content"][0]["text"] == "hi"
    assert len(seen) == 3 and len(sleeps) == 2
    if status == 429:
        assert sleeps == [0.25, 0.25]  # retry-after honoured exactly
    else:
        assert 0.375 <= sleeps[0] <= 0.5 and 0.75 <= sleeps[1] <= 1.0  # backoff with jitter
    assert [e.attempt for e in c.exchanges] == [1, 2, 3]
    assert [e.status for e in c.exchanges] == [status, status, 200]


@both
def test_retry_after_ms_wins_over_retry_after():
    c, _, sleeps = make([error(429, "rate_limit_error", "slow down", {"retry-after": "9", "retry-after-ms": "40"}),
                         httpx2.Response(200, json=OK)])
    c.create(HELLO)
    assert sleeps == [0.04]


@both
def test_gives_up_after_max_retries_with_typed_error():
    c, seen, sleeps = make([error(529, "overloaded_error", "Overloaded")] * 3)
    with pytest.raises(OverloadedError) as info:
        c.create(HELLO)
    assert len(seen) == 3 and len(sleeps) == 2
    assert info.value.status == 529 and info.value.message == "Overloaded" and info.value.request_id == "req_42"


@pytest.mark.parametrize("status,kind,cls", [(400, "invalid_request_error", BadRequestError),
                                             (401, "authentication_error", AuthenticationError)])
@both
def test_client_errors_are_not_retried(status, kind, cls):
    c, seen, sleeps = make([error(status, kind, "max_tokens: Field required")])
    with pytest.raises(cls) as info:
        c.create(HELLO)
    assert len(seen) == 1 and sleeps == []
    err = info.value
    assert err.message == "max_tokens: Field required" and err.type == kind and err.request_id == "req_42"
    assert str(err).startswith(f"{status} {kind}: max_tokens: Field required (request req_42)")
    assert "Hint:" in str(err)


@both
def test_x_should_retry_false_is_obeyed():
    c, seen, _ = make([error(500, "api_error", "no", {"x-should-retry": "false"})])
    with pytest.raises(InternalServerError):
        c.create(HELLO)
    assert len(seen) == 1


@both
def test_retry_after_longer_than_the_cap_is_not_waited_for():
    c, seen, sleeps = make([error(429, "rate_limit_error", "quota", {"retry-after": "3600"})], max_retry_wait=60)
    with pytest.raises(RateLimitError) as info:
        c.create(HELLO)
    assert len(seen) == 1 and sleeps == [] and "3600" in str(info.value)


@both
def test_connection_errors_and_timeouts_are_retried():
    c, seen, _ = make([httpx2.ConnectError("refused"), httpx2.ReadTimeout("slow"), httpx2.Response(200, json=OK)])
    assert c.create(HELLO)["stop_reason"] == "end_turn"
    assert len(seen) == 3
    c2, _, _ = make([httpx2.ReadTimeout("slow")] * 3)
    with pytest.raises(APITimeoutError):
        c2.create(HELLO)
    c3, _, _ = make([httpx2.RemoteProtocolError("dropped")] * 3)
    with pytest.raises(APIConnectionError):
        c3.create(HELLO)


@both
def test_malformed_responses_are_named():
    c, _, _ = make([httpx2.Response(200, text="<html>proxy login</html>")])
    with pytest.raises(MalformedResponseError, match="not JSON"):
        c.create(HELLO)
    c2, _, _ = make([httpx2.Response(200, json={"hello": "world"})])
    with pytest.raises(MalformedResponseError, match="not a Messages API response: 'type' should be \"message\""):
        c2.create(HELLO)


@both
def test_usage_totals_add_up():
    c, _, _ = make([httpx2.Response(200, json=OK), httpx2.Response(200, json=OK)])
    c.create(HELLO)
    c.create(HELLO)
    assert (c.usage.input_tokens, c.usage.output_tokens, c.usage.calls) == (20, 6, 2)


@both
def test_exchange_records_are_snapshots():
    c, _, _ = make([httpx2.Response(200, json=OK)])
    messages = list(HELLO)
    c.create(messages)
    messages.append({"role": "assistant", "content": "later"})
    assert c.last.request["body"]["messages"] == HELLO


@both
def test_canary_key_never_leaks(caplog):
    caplog.set_level(logging.DEBUG)
    echo = error(401, "authentication_error", f"invalid x-api-key: {CANARY}")
    c, _, _ = make([echo, httpx2.ConnectError(f"cannot connect with {CANARY}")] + [httpx2.ConnectError("x")] * 2)
    texts = [repr(c)]
    for _ in range(2):
        with pytest.raises(Exception) as info:
            c.create(HELLO)
        texts += [str(info.value), repr(info.value), info.value.message]
    texts += [json.dumps([e.to_dict() for e in c.exchanges]), caplog.text]
    for text in texts:
        assert CANARY not in text
    assert "<redacted>" in json.dumps(c.last.request)


@both
def test_connect_offline_when_forced(monkeypatch, capsys):
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    c = connect()
    assert c.mode == "offline" and c.mock is not None
    assert capsys.readouterr().out.startswith("offline (mock API) · model ")


@both
def test_connect_offline_without_a_key_says_how_to_go_live(monkeypatch, capsys):
    monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    c = connect()
    assert c.mode == "offline" and "set one to go live" in capsys.readouterr().out


@both
def test_connect_live_reads_the_environment(monkeypatch, capsys):
    monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("MINIAGENT_MODEL", "claude-test")
    c = connect()
    assert (c.mode, c.base_url, c.model) == ("live", "http://127.0.0.1:9", "claude-test")
    out = capsys.readouterr().out
    assert out.strip() == "live at http://127.0.0.1:9/ · model claude-test" and CANARY not in out


@both
def test_any_providers_address_and_timeouts_come_from_the_environment(monkeypatch):
    """A local server on another port, a slow first token: settings, not code (the llama.cpp presets too)."""
    monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
    monkeypatch.setenv("MINIAGENT_BASE_URL", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("MINIAGENT_TIMEOUT", "240")
    monkeypatch.setenv("MINIAGENT_STREAM_TIMEOUT", "1800")
    for provider, model in (("llamacpp", "smollm2-135m-instruct"), ("llamacpp-openai", "smollm2-135m-instruct"),
                            ("vllm", "NousResearch/Meta-Llama-3-8B-Instruct")):
        c = connect(provider=provider, quiet=True)
        assert (c.mode, c.base_url, c.model, c.timeout, c.stream_timeout) == \
            ("live", "http://127.0.0.1:9/v1", model, 240.0, 1800.0)
    assert connect(provider="llamacpp", quiet=True, timeout=5).timeout == 5  # code wins over the environment
    monkeypatch.setenv("MINIAGENT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="MINIAGENT_TIMEOUT must be a positive number of seconds, got 'soon'"):
        connect(provider="llamacpp", quiet=True)
    monkeypatch.setenv("MINIAGENT_TIMEOUT", "0")
    with pytest.raises(ValueError, match="MINIAGENT_TIMEOUT"):
        connect(provider="llamacpp", quiet=True)


@both
def test_a_lessons_own_mock_answers_as_a_model_it_serves_whatever_miniagent_model_says(monkeypatch):
    """Live on a local model, a cell's `connect(offline=True)` must not get the mock's 404 for that model's name."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("MINIAGENT_MODEL", "llama-3.2-1b-instruct")
    monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
    own = connect(offline=True, quiet=True)
    assert own.model == client_mod.DEFAULT_MODEL
    assert own.create([{"role": "user", "content": "hi"}])["stop_reason"] == "end_turn"
    assert connect(offline=True, quiet=True, model="claude-haiku-4-5").model == "claude-haiku-4-5"  # asked by name
    monkeypatch.setenv("MINIAGENT_OFFLINE", "1")  # a whole session offline: a typo in MINIAGENT_MODEL is the 404
    with pytest.raises(client_mod.APIError, match="llama-3.2-1b-instruct"):
        connect(quiet=True).create([{"role": "user", "content": "hi"}])


@both
def test_a_key_given_in_code_wins_over_the_environment_and_goes_live(monkeypatch):
    monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
    for env_key in (None, "sk-ant-from-the-environment"):  # with and without one in the environment
        if env_key is None:
            monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        else:
            monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
        c = connect(api_key=CANARY, base_url="http://127.0.0.1:9", quiet=True)
        assert (c.mode, c.base_url, c._api_key) == ("live", "http://127.0.0.1:9", CANARY)
    with pytest.raises(Exception, match="the api_key passed to connect.. has a space inside") as info:  # refused as from the environment
        connect(api_key="sk-ant-12 secret34", quiet=True)
    assert "secret34" not in str(info.value) and "sk-ant-12" not in str(info.value)


@both
def test_live_without_a_key_explains(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError) as info:
        connect(offline=False, quiet=True)
    assert "ANTHROPIC_API_KEY" in str(info.value) and "MINIAGENT_OFFLINE=1" in str(info.value)


def test_default_model_is_not_the_retiring_one():
    assert client_mod.DEFAULT_MODEL != "claude-sonnet-4-5"


@both
def test_live_code_path_against_the_mock_over_http(monkeypatch, capsys):
    """ANTHROPIC_BASE_URL pointed at the mock server: the live path, real sockets, mock answers."""
    from miniagent.mock import serve_in_thread

    server, url = serve_in_thread()
    try:
        monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
        monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        c = connect()
        reply = c.create(HELLO)
        assert c.mode == "live" and c.mock is None and reply["id"].startswith("msg_mock_")
        assert server.mock.records[-1]["headers"]["x-api-key"] == "<redacted>"
    finally:
        server.shutdown()
