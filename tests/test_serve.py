"""miniagent.serve: the agent as a web service.

JSON and SSE answers to the demo question, follow-ups, every refusal in one JSON shape
(with the service still answering after it), the bounds (runs at once, conversations
kept, history), no key anywhere, and a client that disconnects mid-stream cancelling
its run and its tool, over a real uvicorn server; a tool that needs approval asked
through the stream and answered at /chat/approve (approved, denied, timed out, left
unanswered by a client that went away, refused at POST /chat). Offline, a second or two in all.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager

import httpx2
import pytest

pytest.importorskip("fastapi")  # an optional extra of the package (the course environment has it)

import uvicorn  # noqa: E402
from agent_fakes import deleting_tool  # noqa: E402

from miniagent.__main__ import DEMO_QUESTION, main  # noqa: E402
from miniagent.aclient import AsyncClient  # noqa: E402
from miniagent.aloop import AsyncAgent  # noqa: E402
from miniagent.builtin_tools import default_tools  # noqa: E402
from miniagent.messages import conversation_error  # noqa: E402
from miniagent.mock import MockAPI, scripts  # noqa: E402
from miniagent.serve import MAX_CONNECTIONS_PER_CLIENT, create_app, event_stream  # noqa: E402
from miniagent.streaming import parse  # noqa: E402
from miniagent.tools import tool  # noqa: E402
from portable import second_loopback_address, sends_ctrl_c  # noqa: E402

KEY = "sk-ant-serve-test-RECOGNISABLE-fake-key-0042"
BASE = "http://127.0.0.1:8000"
WAIT = 5.0  # seconds: a bound on waits that a correct service never reaches


def agents(mock: MockAPI | None = None, tools: list | None = None):
    """An agent factory like the default one (one client, an agent per conversation), on `mock` with KEY."""
    mock = mock or MockAPI(api_keys={KEY})
    client = AsyncClient(api_key=KEY, transport=mock.async_transport(), mock=mock)
    registry = default_tools()
    for extra in tools or []:
        registry.register(extra)
    return lambda: AsyncAgent(client=client, tools=registry, stream=True)


def run(app, scenario, *, raise_app_exceptions: bool = True):
    """`await scenario(http)` with an httpx2 client talking to `app` in-process."""
    async def go():
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
        async with httpx2.AsyncClient(transport=transport, base_url=BASE) as http:
            return await scenario(http)
    return asyncio.run(go())


def events_of(body: bytes) -> list[tuple[str, dict]]:
    return [(e.event, json.loads(e.data)) for e in parse([body])]


def blocking_tool():
    """A coroutine tool that waits until the test releases it: (tool, started, release, cancelled)."""
    started, release, cancelled = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @tool
    async def wait_for_release(what: str) -> str:
        """Wait until released.

        Args:
            what: anything
        """
        started.set()
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "released"
    return wait_for_release, started, release, cancelled


async def wait_until(condition, timeout: float = WAIT) -> None:
    """Wait for `condition()` to hold (it changes on the event loop), failing after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.002)


# --- answers -------------------------------------------------------------------------


def test_chat_answers_the_demo_question_with_its_tool_calls():
    app = create_app(agent_factory=agents())
    answer = run(app, lambda http: http.post("/chat", json={"message": DEMO_QUESTION}))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert set(body) == {"conversation_id", "text", "stop", "reason", "usage", "tool_calls"}
    assert body["stop"] == "end_turn" and "3584" in body["text"]
    assert [c["name"] for c in body["tool_calls"]] == ["get_current_time", "calculate", "get_weather", "get_weather"]
    assert all(c["result"] and c["is_error"] is False for c in body["tool_calls"])
    assert body["usage"]["input_tokens"] > 0 and body["usage"]["output_tokens"] > 0
    assert len(body["conversation_id"]) >= 22  # 18 random bytes: not guessable


def test_stream_sends_the_demo_answer_as_events():
    app = create_app(agent_factory=agents())
    response = run(app, lambda http: http.post("/chat/stream", json={"message": DEMO_QUESTION}))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    events = events_of(response.content)
    names = [name for name, _ in events]
    assert names[0] == "conversation" and names[-1] == "done"
    assert names.index("tool_use") < names.index("tool_result") < len(names) - 1
    assert names.count("text") >= 2 and "usage" in names
    uses = [data for name, data in events if name == "tool_use" and data["done"]]
    results = [data for name, data in events if name == "tool_result"]
    assert sorted(u["id"] for u in uses) == sorted(r["id"] for r in results)
    assert {"name": "calculate", "input": {"expression": "(1024 + 768) * 2"}}.items() <= uses[1].items()
    done = events[-1][1]
    assert done["stop"] == "end_turn" and done["ok"] and "3584" in done["text"]
    last_result = max(i for i, name in enumerate(names) if name == "tool_result")
    assert "".join(d["text"] for name, d in events[last_result:] if name == "text") == done["text"]


def test_a_follow_up_continues_the_conversation_by_its_id():
    app = create_app(agent_factory=agents())

    async def scenario(http):
        first = (await http.post("/chat", json={"message": "Hi, my name is Ada."})).json()
        cid = first["conversation_id"]
        second = (await http.post("/chat", json={"message": "What is my name?", "conversation_id": cid})).json()
        streamed = await http.post("/chat/stream", json={"message": "What is 6 * 7?", "conversation_id": cid})
        return cid, second, events_of(streamed.content)

    cid, second, events = run(app, scenario)
    assert second["conversation_id"] == cid and "Ada" in second["text"]
    assert events[0] == ("conversation", {"conversation_id": cid})
    assert "42" in events[-1][1]["text"]
    assert len(app.state.service.conversations) == 1


# --- refusals ------------------------------------------------------------------------

JSON = {"content-type": "application/json"}
BAD_REQUESTS = [  # (what, body, headers, status, error type)
    ("invalid JSON", b'{"message": ', JSON, 400, "invalid_json"),
    ("not UTF-8", b'{"message": "\xff"}', JSON, 400, "invalid_json"),
    ("not an object", b'["hello"]', JSON, 422, "invalid_request"),
    ("missing message", b"{}", JSON, 422, "invalid_request"),
    ("message not a string", b'{"message": 42}', JSON, 422, "invalid_request"),
    ("empty message", b'{"message": "  \\n "}', JSON, 422, "invalid_request"),
    ("message too long", json.dumps({"message": "x" * 501}).encode(), JSON, 422, "invalid_request"),
    ("unknown field", b'{"message": "hi", "conversationId": "x"}', JSON, 422, "invalid_request"),
    ("id not a string", b'{"message": "hi", "conversation_id": 7}', JSON, 422, "invalid_request"),
    ("unknown conversation", b'{"message": "hi", "conversation_id": "nope"}', JSON, 404, "conversation_not_found"),
    ("not JSON content", b'{"message": "hi"}', {"content-type": "text/plain"}, 415, "unsupported_media_type"),
    ("huge body", json.dumps({"message": "x" * 5000}).encode(), JSON, 413, "request_too_large"),
    ("another site's host name", b'{"message": "hi"}', {**JSON, "host": "attacker.example"}, 400, "invalid_host"),
]


@pytest.mark.parametrize("path", ["/chat", "/chat/stream"])
def test_bad_requests_get_a_json_error_and_the_service_carries_on(path):
    app = create_app(agent_factory=agents(), max_body_bytes=1000, max_question_chars=500)

    async def scenario(http):
        for what, body, headers, status, kind in BAD_REQUESTS:
            response = await http.post(path, content=body, headers=headers)
            assert response.status_code == status, (what, response.text)
            assert response.headers["content-type"] == "application/json", what
            error = response.json()["error"]
            assert set(error) == {"type", "message"} and error["type"] == kind and error["message"], what
        for method, other, status in [("GET", path, 405), ("POST", "/nowhere", 404)]:
            response = await http.request(method, other, json={"message": "hi"})
            assert response.status_code == status and set(response.json()["error"]) == {"type", "message"}
        return await http.post(path, json={"message": "What is 2 + 2?"})

    assert run(app, scenario).status_code == 200
    assert app.state.service.running == 0 and len(app.state.service.conversations) == 1


def test_a_huge_body_is_refused_without_being_read():
    """Straight ASGI, to count what the app reads: a body sent in chunks, no length declared."""
    app = create_app(agent_factory=agents(), max_body_bytes=1000)
    reads, sent = 0, []

    async def receive():
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"x" * 800, "more_body": True}  # endless

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/chat", "raw_path": b"/chat", "query_string": b"",
             "root_path": "", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5555),
             "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]}
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 413 and reads == 2
    assert json.loads(sent[1]["body"])["error"]["type"] == "request_too_large"


def test_a_busy_conversation_is_409_and_a_full_service_503():
    wait_tool, started, release, _ = blocking_tool()
    mock = MockAPI(api_keys={KEY})
    mock.script(scripts.tool_call("wait_for_release", {"what": "x"}))
    app = create_app(agent_factory=agents(mock, [wait_tool]), max_concurrent_runs=1)

    async def scenario(http):
        first = asyncio.create_task(http.post("/chat", json={"message": "Wait for it."}))
        await asyncio.wait_for(started.wait(), WAIT)
        [waiting] = app.state.service.conversations.ids()
        busy = await http.post("/chat/stream", json={"message": "And now?", "conversation_id": waiting})
        full = await http.post("/chat", json={"message": "Another question"})
        release.set()
        done = await asyncio.wait_for(first, WAIT)
        after = await http.post("/chat", json={"message": "What is 2 + 2?"})
        return busy, full, done, after

    busy, full, done, after = run(app, scenario)
    assert busy.status_code == 409 and busy.json()["error"]["type"] == "conversation_busy"
    assert full.status_code == 503 and full.json()["error"]["type"] == "overloaded"
    assert full.headers["retry-after"] == "1"
    assert done.status_code == 200 and done.json()["tool_calls"][0]["result"] == "released"
    assert after.status_code == 200


def test_the_least_recently_used_conversation_is_forgotten_first():
    app = create_app(agent_factory=agents(), max_conversations=2)

    async def scenario(http):
        async def ask(cid=None):
            body = {"message": "What is 1 + 1?"} | ({"conversation_id": cid} if cid else {})
            response = await http.post("/chat", json=body)
            return response.status_code, response.json().get("conversation_id")
        _, a = await ask()
        _, b = await ask()
        await ask(a)       # a is now the most recently used
        _, c = await ask()  # full: b goes
        return await ask(a), await ask(b), await ask(c)

    (a_status, _), (b_status, _), (c_status, _) = run(app, scenario)
    assert (a_status, b_status, c_status) == (200, 404, 200)
    assert len(app.state.service.conversations) == 2


def test_history_is_bounded_and_never_cut_between_a_tool_call_and_its_result():
    app = create_app(agent_factory=agents(), max_history_messages=5)

    async def scenario(http):
        cid = None
        for n in range(1, 6):
            body = {"message": f"What is {n} * 7?"} | ({"conversation_id": cid} if cid else {})
            response = await http.post("/chat", json=body)
            assert response.status_code == 200 and str(n * 7) in response.json()["text"]
            cid = response.json()["conversation_id"]
        return cid

    cid = run(app, scenario)
    history = app.state.service.conversations.history(cid)
    assert 2 <= len(history) <= 5 and conversation_error(history) is None
    assert history[0]["content"] == "What is 1 * 7?"  # the first question stays, as SlidingWindow's anchor


# --- errors from the model, failures, secrets ------------------------------------------


def test_an_api_error_is_a_502_or_an_error_event_and_never_shows_the_key():
    refusing = MockAPI(api_keys={"sk-ant-another-key"})  # KEY is refused: a 401 with the client's message
    app = create_app(agent_factory=agents(refusing))

    async def scenario(http):
        responses = [await http.get("/"), await http.get("/chat.js"),
                     await http.post("/chat", json={"message": DEMO_QUESTION}),
                     await http.post("/chat/stream", json={"message": DEMO_QUESTION}),
                     await http.post("/chat", json={"message": ""})]
        return responses

    page, script, chat, stream, bad = run(app, scenario)
    assert chat.status_code == 502 and chat.json()["error"]["type"] == "api_error"
    assert "401" in chat.json()["error"]["message"]
    name, data = events_of(stream.content)[-1]
    assert name == "error" and data["type"] == "api_error" and "401" in data["message"]
    for response in (page, script, chat, stream, bad):
        assert KEY not in response.text and KEY not in str(response.headers)
        assert KEY[-12:] not in response.text


def test_no_key_in_a_successful_run_either():
    app = create_app(agent_factory=agents())
    chat = run(app, lambda http: http.post("/chat", json={"message": DEMO_QUESTION}))
    stream = run(app, lambda http: http.post("/chat/stream", json={"message": DEMO_QUESTION}))
    assert chat.status_code == stream.status_code == 200
    for response in (chat, stream):
        assert KEY not in response.text and KEY not in str(response.headers)


def test_an_agent_that_crashes_is_a_500_or_an_error_event_and_the_service_carries_on():
    class Broken:
        history, on_step = [], None

        class trace:
            @staticmethod
            def clear():
                pass

        async def run(self, message, **callbacks):
            raise RuntimeError("a bug with a secret-looking detail")

    app = create_app(agent_factory=Broken)

    async def scenario(http):
        chat = await http.post("/chat", json={"message": "hi"})
        stream = await http.post("/chat/stream", json={"message": "hi"})
        return chat, stream

    chat, stream = run(app, scenario, raise_app_exceptions=False)  # Starlette re-raises it, for the server's log
    assert chat.status_code == 500 and chat.json()["error"]["type"] == "internal_error"
    assert events_of(stream.content)[-1][1]["type"] == "internal_error"
    assert "secret-looking" not in chat.text + stream.text
    assert app.state.service.running == 0


# --- the page ------------------------------------------------------------------------


def test_the_page_is_self_contained_and_never_parses_model_text_as_html():
    app = create_app(agent_factory=agents())
    page, script = run(app, lambda http: asyncio.gather(http.get("/"), http.get("/chat.js")))
    assert page.status_code == script.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for text in (page.text, script.text):
        assert "http://" not in text and "https://" not in text  # no external resources
    assert not re.search(r"\.(inner|outer)HTML\s*[+]?=|insertAdjacentHTML|document\.write", script.text)
    assert 'fetch("chat/stream"' in script.text and '<script src="chat.js">' in page.text


# --- disconnects, over a real server -----------------------------------------------------


@asynccontextmanager
async def serving(app):
    """`app` on uvicorn on a free port of 127.0.0.1, in this event loop; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started or task.done())
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, WAIT)
        sock.close()


@asynccontextmanager
async def waiting_next():
    """A served conversation with one question answered; its next run calls a tool that waits until cancelled.

    Yields (url, conversation id, the tool's `started` and `cancelled` events, `outcome`). The test
    sends the next question and goes away; on leaving the block, the tool must have been cancelled,
    the run ended and the history be as it was; `outcome["again"]` is then a follow-up's response.
    """
    wait_tool, started, _, cancelled = blocking_tool()
    mock = MockAPI(api_keys={KEY})
    app = create_app(agent_factory=agents(mock, [wait_tool]))
    service = app.state.service
    async with serving(app) as url, httpx2.AsyncClient(base_url=url, timeout=WAIT) as http:
        cid = (await http.post("/chat", json={"message": "What is 2 + 2?"})).json()["conversation_id"]
        before = service.conversations.history(cid)
        mock.script(scripts.tool_call("wait_for_release", {"what": "x"}, text="Let me wait."))
        outcome = {}
        yield url, cid, started, cancelled, outcome
        await asyncio.wait_for(cancelled.wait(), WAIT)
        await wait_until(lambda: not service.conversations.leased(cid) and service.running == 0)
        assert service.conversations.history(cid) == before  # the question never happened
        outcome["again"] = await http.post("/chat", json={"message": "What is 3 + 4?", "conversation_id": cid})


def test_a_client_that_disconnects_mid_stream_cancels_its_run_and_its_tool():
    async def scenario():
        async with waiting_next() as (url, cid, started, cancelled, outcome):
            seen = []
            async with httpx2.AsyncClient(base_url=url, timeout=WAIT) as http, \
                    http.stream("POST", "/chat/stream", json={"message": "Wait.", "conversation_id": cid}) as r:
                async for event in parse_lines(r):
                    seen.append(event)
                    if event == "tool_use_done":
                        break
                await asyncio.wait_for(started.wait(), WAIT)
                assert not cancelled.is_set()
            # Leaving the block closed the connection mid-stream, with the tool still waiting.
        return seen, outcome["again"]

    seen, again = asyncio.run(scenario())
    assert seen[0] == "conversation" and "text" in seen
    assert again.status_code == 200 and "7" in again.json()["text"]


def test_a_client_that_disconnects_while_the_model_is_still_answering_cancels_the_call():
    async def scenario():
        mock = MockAPI(api_keys={KEY}, pacing={"first": 30.0})  # the first token would take 30 s
        app = create_app(agent_factory=agents(mock))
        service = app.state.service
        async with serving(app) as url, httpx2.AsyncClient(base_url=url, timeout=WAIT) as http:
            async with http.stream("POST", "/chat/stream", json={"message": "What is 2 + 2?"}) as response:
                first = await anext(parse_lines(response))
                assert service.running == 1
            await wait_until(lambda: service.running == 0)
            [cid] = service.conversations.ids()
            mock.pace()
            again = await http.post("/chat", json={"message": "What is 3 + 4?", "conversation_id": cid})
            return first, service.conversations.history(cid), again

    first, history, again = asyncio.run(scenario())
    assert first == "conversation" and again.status_code == 200
    assert [m["role"] for m in history][:1] == ["user"] and history[0]["content"] == "What is 3 + 4?"


async def parse_lines(response):
    """Event names as they arrive ("tool_use_done" for a complete call), read line by line."""
    name = None
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
            yield "tool_use_done" if name == "tool_use" and data["done"] else name


def test_a_quiet_stream_sends_keep_alive_comments():
    async def first_three():
        queue: asyncio.Queue = asyncio.Queue()
        stream = event_stream("c1", queue, heartbeat=0.001)
        got = [await anext(stream), await anext(stream)]
        queue.put_nowait(("text", {"text": "hi"}))
        got.append(await anext(stream))
        queue.put_nowait(None)
        got.extend([chunk async for chunk in stream])
        return got

    chunks = asyncio.run(first_three())
    assert chunks[0].startswith(b"event: conversation\n") and chunks[1] == b": keep-alive\n\n"
    assert chunks[-1] == b'event: text\ndata: {"text":"hi"}\n\n'


# --- the command line ----------------------------------------------------------------


def test_the_command_line_dispatches_serve_and_keeps_its_errors(capsys, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("MINIAGENT_OFFLINE", raising=False)
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--help"])
    assert exit_.value.code == 0 and "--host" in capsys.readouterr().out
    assert main(["serve", "--live"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_a_port_in_use_is_a_clear_error(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert main(["serve", "--offline", "--port", str(taken.getsockname()[1])]) == 2
    assert "pick another with --port" in capsys.readouterr().err


@sends_ctrl_c
@second_loopback_address
def test_python_m_miniagent_serve_serves_until_ctrl_c():
    server = subprocess.Popen([sys.executable, "-m", "miniagent", "serve", "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "MINIAGENT_OFFLINE": "1"})
    try:
        lines = [server.stdout.readline() for _ in range(2)]  # the mode, then the address
        url = re.search(r"http://127\.0\.0\.1:\d+/", lines[1]).group()
        page = httpx2.get(url, timeout=WAIT)
        answer = httpx2.post(url + "chat", json={"message": "What is 2 + 2?"}, timeout=WAIT)
        port = int(url.rsplit(":", 1)[1].strip("/"))
        crowd = [socket.create_connection(("127.0.0.1", port), WAIT, source_address=("127.0.0.2", 0))
                 for _ in range(MAX_CONNECTIONS_PER_CLIENT + 1)]
        refused = crowd[-1].recv(100)  # the server's bounds are on (GuardedH11Protocol): one too many
        for conn in crowd:
            conn.close()
        server.send_signal(signal.SIGINT)
        assert server.wait(WAIT) == 0, server.stderr.read()
    finally:
        server.kill()
    assert lines[0].startswith("offline") and page.status_code == 200 and "miniagent" in page.text
    assert answer.status_code == 200 and "4" in answer.json()["text"]
    assert refused.startswith(b"HTTP/1.1 503 ")


def test_limits_must_be_positive():
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_concurrent_runs must be an integer of at least 1"):
            create_app(agent_factory=agents(), max_concurrent_runs=bad)


def test_a_client_that_leaves_a_json_request_cancels_its_run_and_its_tool():
    async def scenario():
        async with waiting_next() as (url, cid, started, _, outcome):
            async with httpx2.AsyncClient(base_url=url, timeout=WAIT) as leaving:
                request = asyncio.create_task(leaving.post("/chat", json={"message": "Wait.", "conversation_id": cid}))
                await asyncio.wait_for(started.wait(), WAIT)
                request.cancel()  # the client gives up: its connection closes with the tool still waiting
                await asyncio.gather(request, return_exceptions=True)
        return outcome["again"]

    again = asyncio.run(scenario())
    assert again.status_code == 200 and "7" in again.json()["text"]


# --- tools that need a person's approval ---------------------------------------------------

DELETE = "Delete the file notes.txt"  # the mock calls delete_file(path="notes.txt") for it


def deleting():
    """A tool that needs approval, and the list of the paths it really deleted."""
    deleted: list[str] = []
    return deleting_tool(deleted), deleted


async def asked(service, http, message: str = DELETE):
    """Start a streamed question; wait until it asks for approval. Returns (the stream's task, conversation, id)."""
    stream = asyncio.create_task(http.post("/chat/stream", json={"message": message}))
    await wait_until(lambda: service.pending_approvals() == 1 or stream.done())
    [(conversation_id, approval_id)] = service.conversations.waiting_approvals()
    return stream, conversation_id, approval_id


@pytest.mark.parametrize("approved", [False, True])
def test_a_streamed_run_asks_before_a_tool_that_needs_approval(approved):
    delete_file, deleted = deleting()
    app = create_app(agent_factory=agents(tools=[delete_file]))
    service = app.state.service

    async def scenario(http):
        stream, conversation_id, approval_id = await asked(service, http)
        assert not deleted and not stream.done()  # the run waits for the answer
        answer = {"conversation_id": conversation_id, "approval_id": approval_id, "approved": approved,
                  "reason": "keep it,\x00 I still\nneed it\x1b"}
        first = await http.post("/chat/approve", json=answer)
        again = await http.post("/chat/approve", json=answer)
        return first, again, events_of((await asyncio.wait_for(stream, WAIT)).content), approval_id

    first, again, events, approval_id = run(app, scenario)
    assert first.status_code == 200 and first.json()["approved"] is approved
    assert again.status_code == 409 and again.json()["error"]["type"] == "approval_answered"
    by_name = {name: data for name, data in events}
    asking = by_name["approval"]
    assert asking["approval_id"] == approval_id and asking["name"] == "delete_file"
    assert asking["input"] == {"path": "notes.txt"} and asking["conversation_id"] == events[0][1]["conversation_id"]
    names = [name for name, _ in events]
    assert names.index("approval") < names.index("approval_result") < names.index("tool_result")
    decided = by_name["approval_result"]
    assert decided["approval_id"] == approval_id and decided["approved"] is approved
    assert by_name["done"]["ok"] and service.pending_approvals() == 0 and service.running == 0
    if approved:
        assert deleted == ["notes.txt"] and decided["reason"] is None
        assert by_name["tool_result"]["content"] == "deleted notes.txt"
    else:
        assert deleted == []
        assert decided["reason"] == "keep it, I still need it"  # control characters gone
        assert by_name["tool_result"]["is_error"] and "did not approve" in by_name["tool_result"]["content"]
        assert "did not approve" in by_name["done"]["text"] and "keep it" in by_name["done"]["text"]


def test_approval_answers_that_cannot_be_taken():
    delete_file, deleted = deleting()
    app = create_app(agent_factory=agents(tools=[delete_file]), max_body_bytes=1000)
    service = app.state.service

    async def scenario(http):
        stream, conversation_id, approval_id = await asked(service, http)
        good = {"conversation_id": conversation_id, "approval_id": approval_id, "approved": True}
        refused = [
            (404, "approval_not_found", json.dumps(good | {"conversation_id": "nope"}).encode(), JSON),
            (404, "approval_not_found", json.dumps(good | {"approval_id": "nope"}).encode(), JSON),
            (400, "invalid_json", b'{"approved": ', JSON),
            (415, "unsupported_media_type", json.dumps(good).encode(), {"content-type": "text/plain"}),
            (413, "request_too_large", json.dumps(good | {"reason": "x" * 2000}).encode(), JSON),
            (422, "invalid_request", json.dumps(good | {"approved": "yes"}).encode(), JSON),
            (422, "invalid_request", json.dumps(good | {"reason": "x" * 501}).encode(), JSON),
            (422, "invalid_request", json.dumps(good | {"reason": 7}).encode(), JSON),
            (422, "invalid_request", json.dumps(good | {"extra": 1}).encode(), JSON),
            (422, "invalid_request", json.dumps({k: v for k, v in good.items() if k != "approval_id"}).encode(), JSON),
            (422, "invalid_request", b"[]", JSON),
            (400, "invalid_host", json.dumps(good).encode(), {**JSON, "host": "attacker.example"}),
        ]
        seen = []
        for status, kind, body, headers in refused:
            response = await http.post("/chat/approve", content=body, headers=headers)
            seen.append((status, kind, response.status_code, response.json()["error"]["type"]))
        assert service.pending_approvals() == 1 and not deleted  # none of them answered it
        denied = await http.post("/chat/approve", json=good | {"approved": False})
        return seen, denied, await asyncio.wait_for(stream, WAIT)

    seen, denied, stream = run(app, scenario)
    for status, kind, got_status, got_kind in seen:
        assert (got_status, got_kind) == (status, kind)
    assert denied.status_code == 200 and stream.status_code == 200 and deleted == []


def test_no_answer_in_time_is_a_denial():
    delete_file, deleted = deleting()
    app = create_app(agent_factory=agents(tools=[delete_file]), approval_timeout_seconds=0.05)
    service = app.state.service

    async def scenario(http):
        events = events_of((await http.post("/chat/stream", json={"message": DELETE})).content)
        [conversation_id] = service.conversations.ids()
        approval_id = dict(events)["approval"]["approval_id"]
        late = await http.post("/chat/approve", json={"conversation_id": conversation_id,
                                                      "approval_id": approval_id, "approved": True})
        return events, late

    events, late = run(app, scenario)
    decided = dict(events)["approval_result"]
    assert decided["approved"] is False and decided["reason"] == "no answer within 0.05 s"
    assert deleted == [] and events[-1][0] == "done" and "did not approve" in events[-1][1]["text"]
    assert late.status_code == 409 and "no longer waiting" in late.json()["error"]["message"]
    assert service.pending_approvals() == 0 and service.running == 0


def test_a_client_that_leaves_while_asked_leaves_no_question_waiting():
    async def scenario():
        delete_file, deleted = deleting()
        app = create_app(agent_factory=agents(tools=[delete_file]))
        service = app.state.service
        async with serving(app) as url, httpx2.AsyncClient(base_url=url, timeout=WAIT) as http:
            async with http.stream("POST", "/chat/stream", json={"message": DELETE}) as response:
                async for name in parse_lines(response):
                    if name == "approval":
                        break
                [(conversation_id, approval_id)] = service.conversations.waiting_approvals()
            await wait_until(lambda: service.running == 0)
            late = await http.post("/chat/approve", json={"conversation_id": conversation_id,
                                                          "approval_id": approval_id, "approved": True})
            again = await http.post("/chat", json={"message": "What is 3 + 4?", "conversation_id": conversation_id})
            return service.pending_approvals(), late, again, deleted

    pending, late, again, deleted = asyncio.run(scenario())
    assert pending == 0 and deleted == []
    assert late.status_code == 409 and again.status_code == 200 and "7" in again.json()["text"]


def test_post_chat_cannot_ask_anyone_so_the_tool_is_denied():
    delete_file, deleted = deleting()
    app = create_app(agent_factory=agents(tools=[delete_file]))
    answer = run(app, lambda http: http.post("/chat", json={"message": DELETE}))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    [call] = body["tool_calls"]
    assert deleted == [] and call["name"] == "delete_file" and call["is_error"]
    assert call["approval"]["approved"] is False and "no one was asked" in call["approval"]["reason"]
    assert "no one was asked" in body["text"]
    assert app.state.service.pending_approvals() == 0


def test_the_approval_timeout_must_be_positive():
    for bad in (0, -1, True, float("nan"), float("inf"), "5"):
        with pytest.raises(ValueError, match="approval_timeout_seconds must be a positive number"):
            create_app(agent_factory=agents(), approval_timeout_seconds=bad)
