"""MockAPI through plain httpx2 and the in-process transport: auth, ids, scripts, faults, records."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from miniagent import DEFAULT_MODEL
from miniagent.mock import MockAPI
from miniagent.mock.api import parse_fault_header

KEY = "sk-mock-secret-123"
MODEL = DEFAULT_MODEL  # a model the mock serves (any other name is the API's 404: test_mock_models.py)
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
BODY = {"model": MODEL, "max_tokens": 200, "messages": [{"role": "user", "content": "Hello"}]}
WEATHER = {"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def fixed_brain(body: dict) -> dict:
    """A stand-in for the real brain, so these tests do not depend on its wording."""
    return {"content": [{"type": "text", "text": f"{len(body['messages'])} message(s) seen."}],
            "stop_reason": "end_turn", "stop_sequence": None}


class FakeSleep:
    """Records the sleeps instead of sleeping: timing tests without waiting."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def mock() -> MockAPI:
    return MockAPI(brain=fixed_brain)


@pytest.fixture
def sleep() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def client(mock, sleep):
    with httpx2.Client(transport=mock.transport(sleep=sleep), base_url="http://mock", timeout=5.0) as c:
        yield c


def post(client, body=BODY, headers=HEADERS, path="/v1/messages", **kwargs):
    return client.post(path, json=body, headers=headers, **kwargs)


def error_of(response) -> tuple[int, str, str]:
    data = response.json()
    assert data["type"] == "error" and data["request_id"] == response.headers["request-id"]
    return response.status_code, data["error"]["type"], data["error"]["message"]


# --- routes, auth, version ------------------------------------------------------------------


def test_a_successful_message_has_the_full_shape(client):
    r = post(client)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["request-id"] == "req_mock_0001"
    assert r.json() == {
        "id": "msg_mock_0001", "type": "message", "role": "assistant", "model": MODEL,
        "content": [{"type": "text", "text": "1 message(s) seen."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 5, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "service_tier": "standard"},
    }


def test_unknown_routes_are_404(client):
    r = client.get("/v1/complete", headers=HEADERS)
    status, kind, message = error_of(r)
    assert (status, kind) == (404, "not_found_error") and message.startswith("Not Found")
    assert r.headers["x-should-retry"] == "false"
    assert error_of(client.get("/v1/messages", headers=HEADERS))[0] == 404


def test_bearer_auth_is_accepted():
    mock = MockAPI(api_keys={KEY}, brain=fixed_brain)
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as c:
        r = post(c, headers={"Authorization": f"Bearer {KEY}", "anthropic-version": "2026-10-21"})
    assert r.status_code == 200


def test_x_api_key_wins_over_bearer():
    mock = MockAPI(api_keys={KEY}, brain=fixed_brain)
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as c:
        good = post(c, headers={**HEADERS, "Authorization": "Bearer wrong"})
        bad = post(c, headers={**HEADERS, "x-api-key": "wrong", "Authorization": f"Bearer {KEY}"})
    assert good.status_code == 200
    assert error_of(bad) == (401, "authentication_error", "invalid x-api-key")


def test_missing_key(client):
    r = post(client, headers={"anthropic-version": "2023-06-01"})
    assert error_of(r) == (401, "authentication_error", "x-api-key header is required")
    assert r.headers["x-should-retry"] == "false"


def test_wrong_key_is_401_and_never_echoed():
    mock = MockAPI(api_keys={KEY})
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as c:
        r = post(c, headers={**HEADERS, "x-api-key": "sk-typo-456"})
    assert error_of(r) == (401, "authentication_error", "invalid x-api-key")
    assert "sk-typo-456" not in r.text and KEY not in r.text


def test_headers_are_case_insensitive(mock):
    reply = mock.handle("POST", "/v1/messages", {"X-API-KEY": KEY, "Anthropic-Version": "2023-06-01"},
                        json.dumps(BODY).encode())
    assert reply.status == 200


def test_version_header_is_required(client):
    r = post(client, headers={"x-api-key": KEY})
    assert error_of(r) == (400, "invalid_request_error", "anthropic-version: header is required")


def test_unsupported_version_names_the_supported_ones(client):
    status, kind, message = error_of(post(client, headers={**HEADERS, "anthropic-version": "2024-01-01"}))
    assert (status, kind) == (400, "invalid_request_error")
    assert "2023-06-01" in message and "2026-10-21" in message


def test_validation_follows_the_version_header(client):
    body = {**BODY, "temperature": 0.2}
    assert post(client, body).status_code == 200
    r = post(client, body, headers={**HEADERS, "anthropic-version": "2026-10-21"})
    assert error_of(r) == (400, "invalid_request_error", "temperature: Extra inputs are not permitted")


def test_invalid_json_is_400(client):
    r = client.post("/v1/messages", content=b"{not json", headers=HEADERS)
    status, kind, message = error_of(r)
    assert (status, kind) == (400, "invalid_request_error") and "not valid JSON" in message


def test_validation_errors_come_back_with_no_retry(client):
    r = post(client, {"model": MODEL, "messages": BODY["messages"]})
    assert error_of(r) == (400, "invalid_request_error", "max_tokens: Field required")
    assert r.headers["x-should-retry"] == "false"


def test_stream_requests_are_answered_with_events(client):
    """The details are in test_mock_stream.py; here, that a streamed answer is the same message."""
    r = post(client, {**BODY, "stream": True})
    assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert r.text.startswith("event: message_start\ndata: ") and r.text.endswith(
        'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta") == "1 message(s) seen."


def test_strict_alternation_switch():
    body = {**BODY, "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    loose = MockAPI(brain=fixed_brain)
    strict = MockAPI(brain=fixed_brain, strict_alternation=True)
    raw = json.dumps(body).encode()
    assert loose.handle("POST", "/v1/messages", HEADERS, raw).status == 200
    assert strict.handle("POST", "/v1/messages", HEADERS, raw).status == 400


# --- determinism, ids, usage -------------------------------------------------------------------


def run_session(mock: MockAPI) -> list[tuple[int, dict, bytes]]:
    mock.script({"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}},
                             {"type": "tool_use", "name": "get_weather", "input": {"city": "Rome"}}]})
    replies = []
    for body in ({**BODY, "tools": [WEATHER]}, BODY, {"model": MODEL}, BODY):
        reply = mock.handle("POST", "/v1/messages", HEADERS, json.dumps(body).encode())
        replies.append((reply.status, reply.headers, reply.body))
    return replies


def test_two_fresh_mocks_give_the_same_bytes():
    first, second = run_session(MockAPI()), run_session(MockAPI())
    assert first == second
    tool_message = json.loads(first[0][2])
    assert [b["id"] for b in tool_message["content"]] == ["toolu_mock_0001", "toolu_mock_0002"]
    assert tool_message["stop_reason"] == "tool_use"
    assert [json.loads(r[2]).get("id") for r in first] == ["msg_mock_0001", "msg_mock_0002", None, "msg_mock_0003"]
    assert [r[1]["request-id"] for r in first] == [f"req_mock_000{i}" for i in range(1, 5)]


def test_usage_counts_system_and_tools(client):
    from miniagent.tokens import estimate_content, estimate_request
    body = {**BODY, "system": "You are terse.", "tools": [WEATHER]}
    data = post(client, body).json()
    assert data["usage"]["input_tokens"] == estimate_request(body) > estimate_request(BODY)
    assert data["usage"]["output_tokens"] == estimate_content(data["content"])


def test_reset_restarts_counters_and_forgets_records(mock, client):
    post(client)
    mock.script({"content": "scripted"})
    mock.fault(500)
    mock.reset()
    r = post(client)
    assert r.json()["id"] == "msg_mock_0001" and r.headers["request-id"] == "req_mock_0001"
    assert r.json()["content"][0]["text"] == "1 message(s) seen."
    assert len(mock.records) == 1


# --- scripts ---------------------------------------------------------------------------------------


def test_scripted_responses_are_used_in_order_then_the_brain(mock, client):
    mock.script({"content": "first", "stop_reason": "max_tokens"}, {"content": [{"type": "text", "text": "second"}]})
    first, second, third = (post(client).json() for _ in range(3))
    assert (first["content"][0]["text"], first["stop_reason"]) == ("first", "max_tokens")
    assert (second["content"][0]["text"], second["stop_reason"]) == ("second", "end_turn")
    assert third["content"][0]["text"] == "1 message(s) seen."


def test_a_scripted_tool_use_keeps_a_given_id(mock, client):
    mock.script({"content": [{"type": "tool_use", "id": "toolu_mine", "name": "get_weather", "input": {}}]})
    data = post(client, {**BODY, "tools": [WEATHER]}).json()
    assert data["content"][0]["id"] == "toolu_mine" and data["stop_reason"] == "tool_use"


def test_a_scripted_error(mock, client):
    mock.script({"status": 429, "error": {"type": "rate_limit_error", "message": "Slow down"}})
    r = post(client)
    assert error_of(r) == (429, "rate_limit_error", "Slow down")
    assert r.headers["retry-after"] == "0.05"


def test_scripts_are_only_used_by_valid_requests(mock, client):
    mock.script({"content": "kept for a valid request"})
    assert post(client, {"model": MODEL, "messages": []}).status_code == 400
    assert post(client).json()["content"][0]["text"] == "kept for a valid request"


def test_a_callable_script_sees_the_body(mock, client):
    mock.script(lambda body: {"content": f"you said {body['messages'][-1]['content']}"})
    assert post(client).json()["content"][0]["text"] == "you said Hello"


def test_a_repeating_script_never_runs_out(mock, client):
    def call_again(body):
        return {"content": [{"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}]}

    mock.script(call_again, repeat=True)
    ids = [post(client, {**BODY, "tools": [WEATHER]}).json()["content"][0]["id"] for _ in range(3)]
    assert ids == ["toolu_mock_0001", "toolu_mock_0002", "toolu_mock_0003"]
    with pytest.raises(ValueError, match="reset"):
        mock.script({"content": "never reached"})


def test_bad_scripts_fail_early_with_a_clear_message(mock):
    with pytest.raises(ValueError, match="content"):
        mock.script({"text": "hello"})
    with pytest.raises(ValueError, match="400 to 599"):
        mock.script({"status": 200})
    with pytest.raises(ValueError, match="exactly one"):
        mock.script({"content": "a"}, {"content": "b"}, repeat=True)


def test_a_failing_callable_script_is_a_500_that_says_why(mock, client):
    mock.script(lambda body: 1 / 0)
    status, kind, message = error_of(post(client))
    assert (status, kind) == (500, "api_error") and "ZeroDivisionError" in message


# --- faults ------------------------------------------------------------------------------------------


def test_a_429_fault_carries_retry_headers(mock, client):
    mock.fault(429, retry_after=0.25)
    r = post(client)
    assert error_of(r)[:2] == (429, "rate_limit_error")
    assert (r.headers["retry-after"], r.headers["retry-after-ms"]) == ("0.25", "250")
    assert "x-should-retry" not in r.headers
    assert post(client).status_code == 200


def test_529_and_500_faults(mock, client):
    mock.fault(529)
    mock.fault(500, times=2)
    assert error_of(post(client)) == (529, "overloaded_error", "Overloaded")
    assert error_of(post(client)) == (500, "api_error", "Internal server error")
    assert error_of(post(client))[0] == 500
    assert post(client).status_code == 200


def test_faults_apply_to_messages_calls_only(mock, client):
    mock.fault(529)
    body = {"model": MODEL, "messages": BODY["messages"]}
    assert post(client, body, path="/v1/messages/count_tokens").status_code == 200
    assert post(client).status_code == 529


def test_a_fault_comes_before_validation(mock, client):
    mock.fault(529)
    assert post(client, {"model": MODEL}).status_code == 529


def test_a_slow_success_within_the_timeout(mock, client, sleep):
    mock.fault(delay=0.3)
    assert post(client).status_code == 200
    assert sleep.calls == [0.3]


def test_a_delay_beyond_the_read_timeout_raises_read_timeout(mock, client, sleep):
    mock.fault(delay=2.0)
    with pytest.raises(httpx2.ReadTimeout):
        post(client, timeout=httpx2.Timeout(5.0, read=0.5))
    assert sleep.calls == [0.5]


def test_a_dropped_connection(mock, client):
    mock.fault(drop=True)
    with pytest.raises(httpx2.RemoteProtocolError, match="Server disconnected without sending a response."):
        post(client)
    assert mock.records[-1]["status"] is None and mock.records[-1]["response"] is None
    assert post(client).status_code == 200


def test_fault_arguments_are_checked(mock):
    with pytest.raises(ValueError, match="status"):
        mock.fault()
    with pytest.raises(ValueError, match="400 to 599"):
        mock.fault(200)
    with pytest.raises(ValueError, match="times"):
        mock.fault(429, times=0)


def test_the_async_transport():
    mock = MockAPI(brain=fixed_brain)
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async def go() -> tuple[int, int]:
        mock.fault(delay=0.2)
        async with httpx2.AsyncClient(transport=mock.async_transport(sleep=fake_sleep), base_url="http://m") as c:
            ok = await c.post("/v1/messages", json=BODY, headers=HEADERS)
            mock.fault(529)
            failed = await c.post("/v1/messages", json=BODY, headers=HEADERS)
        return ok.status_code, failed.status_code

    assert asyncio.run(go()) == (200, 529)
    assert slept == [0.2]


# --- the x-mock-fault header ----------------------------------------------------------------------


@pytest.mark.parametrize("value, status", [("429", 429), ("529", 529), ("500", 500), ("503", 503)])
def test_fault_header_statuses(client, value, status):
    r = post(client, headers={**HEADERS, "x-mock-fault": value})
    assert r.status_code == status
    assert post(client).status_code == 200  # the header affects only its own request


def test_fault_header_with_retry_after(client):
    r = post(client, headers={**HEADERS, "x-mock-fault": "429 retry-after=0.5"})
    assert (r.headers["retry-after"], r.headers["retry-after-ms"]) == ("0.5", "500")


def test_fault_header_slow_and_drop(client, sleep):
    assert post(client, headers={**HEADERS, "x-mock-fault": "slow=0.3"}).status_code == 200
    assert sleep.calls == [0.3]
    with pytest.raises(httpx2.RemoteProtocolError):
        post(client, headers={**HEADERS, "x-mock-fault": "drop"})


def test_a_bad_fault_header_says_how_to_write_it(client):
    status, _, message = error_of(post(client, headers={**HEADERS, "x-mock-fault": "sometimes"}))
    assert status == 400 and "'sometimes'" in message and "retry-after=0.05" in message
    with pytest.raises(ValueError):
        parse_fault_header("200")


# --- records ------------------------------------------------------------------------------------------


def test_records_redact_keys(mock, client):
    post(client)
    post(client, headers={"Authorization": f"Bearer {KEY}", "anthropic-version": "2023-06-01"})
    records = mock.records
    assert records[0]["headers"]["x-api-key"] == "<redacted>"
    assert records[1]["headers"]["authorization"] == "<redacted>"
    assert KEY not in json.dumps(records)
    assert (records[0]["n"], records[0]["method"], records[0]["path"], records[0]["status"]) == \
        (1, "POST", "/v1/messages", 200)
    assert records[0]["body"] == BODY and records[0]["response"]["id"] == "msg_mock_0001"


def test_requests_and_last_request_cover_messages_calls(mock, client):
    assert mock.last_request is None
    post(client)
    post(client, {"model": MODEL, "messages": BODY["messages"]}, path="/v1/messages/count_tokens")
    assert len(mock.records) == 2 and len(mock.requests) == 1
    assert mock.last_request["path"] == "/v1/messages"


def test_records_are_copies(mock, client):
    post(client)
    mock.records[0]["body"]["model"] = "changed"
    assert mock.records[0]["body"]["model"] == MODEL


# --- count_tokens --------------------------------------------------------------------------------------


def test_count_tokens(client):
    from miniagent.tokens import estimate_request
    body = {"model": MODEL, "messages": BODY["messages"], "tools": [WEATHER]}
    r = post(client, body, path="/v1/messages/count_tokens")
    assert r.status_code == 200 and r.json() == {"input_tokens": estimate_request(body)}
    r = post(client, {**body, "max_tokens": 5}, path="/v1/messages/count_tokens")
    assert error_of(r) == (400, "invalid_request_error", "max_tokens: Extra inputs are not permitted")


# --- control endpoints --------------------------------------------------------------------------------


def test_control_script_and_requests(mock, client):
    r = client.post("/_mock/script", json=[{"content": "from the control endpoint"}])
    assert r.status_code == 200 and r.json() == {"queued": 1}
    assert post(client).json()["content"][0]["text"] == "from the control endpoint"
    records = client.get("/_mock/requests").json()
    assert len(records) == 1 and records[0]["headers"]["x-api-key"] == "<redacted>"


def test_control_script_with_repeat(client):
    client.post("/_mock/script", json={"responses": [{"content": "again"}], "repeat": True})
    assert [post(client).json()["content"][0]["text"] for _ in range(2)] == ["again", "again"]


def test_control_fault_and_reset(mock, client):
    assert client.post("/_mock/fault", json={"status": 529, "times": 2}).json() == {"pending_faults": 2}
    assert post(client).status_code == 529
    assert client.post("/_mock/reset").status_code == 200
    assert post(client).status_code == 200 and len(mock.records) == 1


def test_control_endpoints_reject_bad_input_clearly(client):
    status, _, message = error_of(client.post("/_mock/fault", json={"status": 429, "often": True}))
    assert status == 400 and "often" in message
    status, _, message = error_of(client.post("/_mock/script", json={"content": "not a list"}))
    assert status == 400 and "list" in message
    assert client.get("/_mock/nothing").status_code == 404


# --- over a real socket -----------------------------------------------------------------------------


def test_serve_in_thread_answers_and_drops_over_http():
    from miniagent.mock import serve_in_thread

    mock = MockAPI(brain=fixed_brain)
    server, url = serve_in_thread(mock)
    try:
        assert url.startswith("http://127.0.0.1:")
        assert httpx2.post(f"{url}/v1/messages", json=BODY, headers=HEADERS).json()["id"] == "msg_mock_0001"
        with pytest.raises(httpx2.RemoteProtocolError):
            httpx2.post(f"{url}/v1/messages", json=BODY, headers={**HEADERS, "x-mock-fault": "drop"})
        assert [r["status"] for r in mock.records] == [200, None]
    finally:
        server.shutdown()


def test_a_scripted_callable_may_read_the_records(mock, client):
    post(client)
    mock.script(lambda body: {"content": f"{len(mock.records)} earlier request(s)"})
    assert post(client).json()["content"][0]["text"] == "1 earlier request(s)"


def test_a_scripted_error_with_a_bad_retry_after_is_refused_when_scripted():
    api = MockAPI()
    with pytest.raises(ValueError, match="retry_after"):
        api.script({"status": 429, "retry_after": "soon"})
