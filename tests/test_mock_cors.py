"""Browsers and the mock (miniagent/mock/cors.py): preflights answered, `Origin` without
`anthropic-dangerous-direct-browser-access: true` refused, every allowed answer readable.

In-process and over a real socket (raw HTTP, as a browser's network stack sees it); the
headless-Chromium check of the same is tests/ui/run_cors_test.py (make test-ui)."""

from __future__ import annotations

import json
import socket

import httpx2
import pytest

from miniagent import DEFAULT_MODEL
from miniagent.mock import MockAPI, serve_in_thread
from miniagent.mock.cors import REFUSED

KEY = "sk-mock-cors-key"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
BROWSER = {"origin": "http://localhost:8000", "anthropic-dangerous-direct-browser-access": "true"}
BODY = {"model": DEFAULT_MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "Hello"}]}
PREFLIGHT = {"origin": "http://localhost:8000", "access-control-request-method": "POST",
             "access-control-request-headers": "content-type,x-api-key,anthropic-version,"
                                               "anthropic-dangerous-direct-browser-access,x-stainless-os"}


@pytest.fixture
def mock() -> MockAPI:
    return MockAPI(api_keys={KEY})


@pytest.fixture
def client(mock):
    with httpx2.Client(transport=mock.transport(), base_url="http://mock") as c:
        yield c


def test_a_preflight_is_answered_without_a_key_or_a_record(client, mock):
    r = client.options("/v1/messages", headers=PREFLIGHT)
    assert r.status_code == 204 and r.content == b""
    assert r.headers["access-control-allow-origin"] == "*"
    assert {"GET", "POST", "OPTIONS"} <= {m.strip() for m in r.headers["access-control-allow-methods"].split(",")}
    allowed = {h.strip() for h in r.headers["access-control-allow-headers"].split(",")}
    assert {"content-type", "x-api-key", "anthropic-version", "anthropic-beta", "authorization",
            "anthropic-dangerous-direct-browser-access", "x-stainless-os"} <= allowed
    assert int(r.headers["access-control-max-age"]) > 0
    assert mock.records == [] and client.post("/v1/messages", json=BODY, headers=HEADERS).headers[
        "request-id"] == "req_mock_0001"  # a preflight takes no request id


@pytest.mark.parametrize("path", ["/v1/messages/count_tokens", "/v1/models", "/v1/models/x", "/_mock/requests"])
def test_every_path_answers_a_preflight(client, path):
    assert client.options(path, headers=PREFLIGHT).status_code == 204


def test_asked_header_names_that_are_not_tokens_are_left_out(client):
    r = client.options("/v1/messages", headers={**PREFLIGHT, "access-control-request-headers": "x-ok, bad name, a\tb"})
    allowed = [h.strip() for h in r.headers["access-control-allow-headers"].split(",")]
    assert "x-ok" in allowed and "bad name" not in allowed and not any("\t" in h for h in allowed)


def test_a_browser_request_without_the_header_is_the_apis_401(client, mock):
    r = client.post("/v1/messages", json=BODY, headers={**HEADERS, "origin": "http://localhost:8000"})
    assert r.status_code == 401 and r.json()["error"] == {"type": "authentication_error", "message": REFUSED}
    assert "access-control-allow-origin" not in r.headers and mock.records == []
    false = {**HEADERS, **BROWSER, "anthropic-dangerous-direct-browser-access": "false"}
    assert client.post("/v1/messages", json=BODY, headers=false).status_code == 401
    assert client.get("/_mock/requests", headers={**HEADERS, "origin": "http://x"}).status_code == 401


def test_with_the_header_every_answer_is_readable(client):
    for r in (client.post("/v1/messages", json=BODY, headers={**HEADERS, **BROWSER}),
              client.post("/v1/messages", json={**BODY, "model": "nope"}, headers={**HEADERS, **BROWSER}),
              client.post("/v1/messages", json={}, headers={**HEADERS, **BROWSER}),
              client.post("/v1/messages", json=BODY, headers={**BROWSER, "anthropic-version": "2023-06-01"}),
              client.get("/v1/models", headers={**HEADERS, **BROWSER}),
              client.get("/_mock/requests", headers={**HEADERS, **BROWSER})):
        assert r.headers["access-control-allow-origin"] == "*", r.text
        assert r.headers["access-control-expose-headers"] == "*"
    assert [r.status_code for r in (client.post("/v1/messages", json=BODY, headers={**HEADERS, **BROWSER}),)] == [200]


def test_the_header_alone_is_enough_as_live(client):
    """curl sends no Origin: the real API still adds the CORS headers when the header is set."""
    r = client.post("/v1/messages", json=BODY, headers={**HEADERS, "anthropic-dangerous-direct-browser-access": "true"})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-origin" not in client.post("/v1/messages", json=BODY, headers=HEADERS).headers


def test_a_stream_is_readable_too(client):
    with client.stream("POST", "/v1/messages", json={**BODY, "stream": True}, headers={**HEADERS, **BROWSER}) as r:
        assert r.headers["access-control-allow-origin"] == "*" and r.headers["content-type"].startswith(
            "text/event-stream")
        assert b"message_stop" in r.read()


def raw_http(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while not data.endswith(b"\r\n\r\n") and b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            rest += sock.recv(65536)
        return head + b"\r\n\r\n" + rest


def test_over_a_socket_as_a_browser_sends_it():
    server, url = serve_in_thread(MockAPI(api_keys={KEY}))
    try:
        pre = raw_http(url, b"OPTIONS /v1/messages HTTP/1.1\r\nHost: x\r\nOrigin: http://localhost:8000\r\n"
                            b"Access-Control-Request-Method: POST\r\n"
                            b"Access-Control-Request-Headers: content-type,x-api-key\r\nConnection: close\r\n\r\n")
        head = pre.split(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 204") and b"access-control-allow-origin: *" in head
        assert b"content-length" not in head  # a 204 has no body, and says no length
        body = json.dumps(BODY).encode()
        answer = raw_http(url, b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nOrigin: http://localhost:8000\r\n"
                               b"anthropic-dangerous-direct-browser-access: true\r\nx-api-key: " + KEY.encode() +
                          b"\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\n"
                          b"content-length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
        head, _, payload = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"access-control-allow-origin: *" in head.lower()
        assert json.loads(payload)["type"] == "message"
    finally:
        server.shutdown()
