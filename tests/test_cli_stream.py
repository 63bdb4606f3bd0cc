"""`python -m miniagent`, streamed: the text printed as it arrives, the same answer as --no-stream,
a broken stream reported, Ctrl-C in the middle of a stream."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import miniagent.client
from miniagent import builtin_tools
from miniagent.__main__ import DEMO_QUESTION, main
from miniagent.mock import MockAPI, scripts
from miniagent.mock.server import serve_in_thread
from miniagent.events import Trace
from portable import selects_a_pipe, sends_ctrl_c

ROOT = Path(__file__).resolve().parent.parent
FIXED = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)
KEYS = ("ANTHROPIC_API_KEY", "MINIAGENT_OFFLINE", "MINIAGENT_MODEL", "ANTHROPIC_BASE_URL")


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(builtin_tools, "now", lambda: FIXED)


class Terminal:
    """A stdout that keeps every write apart, and notes whether the stream being read had finished by then."""

    def __init__(self, clients: list) -> None:
        self.writes: list[str] = []
        self.stream_complete_at_write: list[bool | None] = []
        self.clients = clients

    def write(self, text: str) -> int:
        last = self.clients[-1].last if self.clients else None
        self.writes.append(text)
        self.stream_complete_at_write.append(None if last is None or last.stream is None
                                             else last.stream["complete"])
        return len(text)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        return "".join(self.writes)


@pytest.fixture
def clients(monkeypatch):
    """Every client the CLI connects (offline), scripted first by `clients.script` if set."""
    made: list = []
    real = miniagent.client.connect

    def spy(**kwargs):
        made.append(real(max_retries=0, **kwargs))
        return made[-1]

    monkeypatch.setattr(miniagent.client, "connect", spy)
    return made


def run(argv: list[str], monkeypatch, clients: list, script: list | None = None) -> tuple[int, Terminal]:
    terminal = Terminal(clients)
    monkeypatch.setattr(sys, "stdout", terminal)
    if script:
        real = miniagent.client.connect

        def scripted(**kwargs):
            client = real(**kwargs)
            client.mock.script(*script)
            return client
        monkeypatch.setattr(miniagent.client, "connect", scripted)
    status = main(argv)
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    return status, terminal


def text_deltas(client) -> list[str]:
    """The text pieces the mock sent in its last streamed answer."""
    return [e["delta"]["text"] for e in client.mock.requests[-1]["response"]
            if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta"]


def test_the_answer_is_printed_piece_by_piece_before_the_stream_ends(monkeypatch, clients):
    status, terminal = run(["--offline", "Hi! What can you do?"], monkeypatch, clients)
    assert status == 0
    pieces = text_deltas(clients[0])
    assert len(pieces) > 3
    start = terminal.writes.index(pieces[0])
    assert terminal.writes[start:start + len(pieces)] == pieces  # each piece written as it came, in order
    assert terminal.stream_complete_at_write[start:start + len(pieces)] == [False] * len(pieces)


def test_streamed_stdout_is_the_unstreamed_stdout(monkeypatch, clients):
    streamed = run(["--offline", "Hi! What can you do?"], monkeypatch, clients)
    plain = run(["--offline", "--no-stream", "Hi! What can you do?"], monkeypatch, clients)
    assert streamed[0] == plain[0] == 0 and streamed[1].text == plain[1].text
    assert [bool(r["body"].get("stream")) for c in clients for r in c.mock.requests] == [True, False]


def test_the_demo_streamed_prints_the_models_words_before_its_tool_calls_then_the_same_answer(monkeypatch, clients):
    status, streamed = run(["--offline", DEMO_QUESTION], monkeypatch, clients)
    assert status == 0
    history = [r["body"]["messages"] for r in clients[0].mock.requests]
    narration = "".join(b["text"] for b in history[1][1]["content"] if b["type"] == "text")
    status, plain = run(["--offline", "--no-stream", DEMO_QUESTION], monkeypatch, clients)
    mode_line, answer = plain.text.split("\n", 1)
    assert status == 0 and "3584" in answer
    assert streamed.text == f"{mode_line}\n{narration}\n{answer}"  # the answer itself is the same, line for line


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_a_broken_stream_ends_its_line_and_says_why(monkeypatch, clients, capsys, verbose):
    script = [scripts.overloaded_midway("The quick brown fox jumps over the lazy dog, twice over.", deltas=2)]
    status, terminal = run(["--offline", *(["--verbose"] if verbose else []), "Hi"], monkeypatch, clients, script)
    assert status == 1
    lines = terminal.text.splitlines()
    assert "The quick brown fox jumps over the lazy dog, twice over." not in terminal.text
    assert lines[-2].endswith("The quick brown fox ") and lines[-2].startswith("model: " if verbose else "The quick")
    assert lines[-1].startswith("Stopped (api_error): the API call failed: 529 overloaded_error: Overloaded "
                                "(an error event in the middle of the stream")
    assert "Hint: The API is overloaded" in capsys.readouterr().err


def test_no_stream_sends_plain_requests_and_prints_the_final_answer_block(monkeypatch, clients):
    status, terminal = run(["--offline", "--no-stream", "--verbose", DEMO_QUESTION], monkeypatch, clients)
    assert status == 0 and terminal.text.count("Final answer:") == 1
    assert not any(r["body"].get("stream") for r in clients[0].mock.requests)


def test_the_trace_of_a_streamed_run_has_the_events_of_an_unstreamed_one(tmp_path, monkeypatch, clients):
    streamed, plain = tmp_path / "s.jsonl", tmp_path / "p.jsonl"
    assert run(["--offline", "--trace", str(streamed), DEMO_QUESTION], monkeypatch, clients)[0] == 0
    assert run(["--offline", "--no-stream", "--trace", str(plain), DEMO_QUESTION], monkeypatch, clients)[0] == 0
    s, p = Trace.from_jsonl(streamed), Trace.from_jsonl(plain)
    assert [e["type"] for e in s] == [e["type"] for e in p] and len(s) == 16
    assert all(e["stream"]["events"] > 0 for e in s.of_type("response"))


# --- as a real process, against the mock over HTTP, paced ------------------------------------------------


@sends_ctrl_c
@selects_a_pipe
def test_ctrl_c_while_the_answer_streams_exits_130_with_the_trace(tmp_path):
    """The first words show while the rest is still coming (paced at 2 tokens a second, so the
    whole answer would take seconds); Ctrl-C then ends the run with 130 and the trace written."""
    mock = MockAPI()
    mock.pace(first=0.05, rate=2)
    server, base_url = serve_in_thread(mock)
    trace = tmp_path / "t.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update(ANTHROPIC_API_KEY="sk-ant-test-key", ANTHROPIC_BASE_URL=base_url, PYTHONIOENCODING="utf-8",
               PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "miniagent", "--live", "--trace", str(trace), "Hi!"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen = b""
        deadline = time.monotonic() + 30
        while b"(mock)" not in seen:  # the first piece of the answer
            assert time.monotonic() < deadline, f"no text within 30 s; stdout so far: {seen!r}"
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 4096)
                assert chunk, f"the CLI ended before its answer; stdout: {seen!r}, stderr: {proc.stderr.read()!r}"
                seen += chunk
        assert proc.poll() is None and b"call." not in seen  # the answer's end is seconds away
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=30)
        err = proc.stderr.read().decode("utf-8")
    finally:
        proc.kill()
        proc.wait()
        server.shutdown()
    assert status == 130 and "interrupted" in err and "Traceback" not in err
    assert [e["type"] for e in Trace.from_jsonl(trace)] == ["question", "request"]
