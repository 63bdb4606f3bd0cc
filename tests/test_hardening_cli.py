"""`python -m miniagent` in hostile surroundings: Ctrl-C mid-round, an unwritable trace
path, any terminal encoding, undecodable argv bytes, a key that cannot be a key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import miniagent.client
from miniagent.__main__ import DEMO_QUESTION, main
from miniagent.events import Trace
from portable import sends_ctrl_c

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("ANTHROPIC_API_KEY", "MINIAGENT_OFFLINE", "ANTHROPIC_BASE_URL", "MINIAGENT_MODEL",
        "PYTHONIOENCODING", "PYTHONUTF8", "LANG", "LC_ALL", "LC_CTYPE")


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update(extra)
    return env


def run_cli(*args: str | bytes, **env: str) -> subprocess.CompletedProcess:
    """The CLI as a process; output kept as bytes, since the terminal's encoding is under test."""
    return subprocess.run([sys.executable, "-m", "miniagent", *args], cwd=ROOT, env=environment(**env),
                          capture_output=True, timeout=60)


# --- Ctrl-C during parallel tools -------------------------------------------------------------


@sends_ctrl_c
def test_sigint_during_parallel_tools_exits_130_at_once_with_the_trace(tmp_path):
    trace = tmp_path / "t.jsonl"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "cli_slow_tool.py"), "--trace", str(trace),
                             "What's the weather in Paris and London?"],
                            cwd=ROOT, env=environment(MINIAGENT_OFFLINE="1", PYTHONIOENCODING="utf-8",
                                                      PYTHONPATH=str(ROOT)),  # this checkout's miniagent
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
    try:
        started = 0
        while started < 2:  # both calls of the round are running
            line = proc.stderr.readline()
            assert line, "the CLI ended before its tools started"
            started += line.count("tool started:")
        signal_sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=30)
        seconds = time.monotonic() - signal_sent
        err = proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
    assert status == 130 and "interrupted" in err and "Traceback" not in err
    assert seconds < 1.0, f"the CLI took {seconds:.2f} s to exit after Ctrl-C"
    events = Trace.from_jsonl(trace)
    assert [e["name"] for e in events.of_type("tool_call")] == ["get_weather", "get_weather"]


# --- --trace checked before the run ------------------------------------------------------------


@pytest.fixture
def no_connect(monkeypatch):
    """Fails the test if the CLI got as far as connecting."""
    def refuse(**kwargs):
        raise AssertionError("the run started although --trace cannot be written")
    monkeypatch.setattr(miniagent.client, "connect", refuse)


@pytest.mark.parametrize("where, message", [
    ("folder", "is a folder"),
    ("file/t.jsonl", "is a file, not a folder"),
])
def test_an_unwritable_trace_path_is_reported_before_the_run(tmp_path, capsys, no_connect, where, message):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["--offline", "--trace", str(tmp_path / where), "Hello!"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m miniagent") and "--trace: " in err and message in err
    assert (tmp_path / "file").read_text(encoding="utf-8") == "not a folder"


# --- any terminal, any bytes ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [(DEMO_QUESTION,), ("--verbose", DEMO_QUESTION), ("--help",)])
def test_any_terminal_encoding_never_crashes_the_cli(subtests, args):
    terminals = {
        "PYTHONIOENCODING=ascii": {"PYTHONIOENCODING": "ascii"},
        "LANG=C LC_ALL=C": {"LANG": "C", "LC_ALL": "C"},
        "LC_ALL=C without UTF-8 mode": {"LC_ALL": "C", "PYTHONUTF8": "0"},
        "latin-1": {"PYTHONIOENCODING": "latin-1"},
    }
    for label, env in terminals.items():
        with subtests.test(terminal=label):
            proc = run_cli(*args, MINIAGENT_OFFLINE="1", **env)
            assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
            assert b"Traceback" not in proc.stderr
            if args != ("--help",):
                out = proc.stdout.decode("utf-8", "replace")
                assert "3584" in out and ("北京" in out or "\\u5317\\u4eac" in out)


def test_undecodable_bytes_in_the_question_become_replacement_characters(tmp_path):
    trace = tmp_path / "t.jsonl"
    proc = run_cli("--trace", str(trace), b"caf\xe9 \xff: weather in Paris?", MINIAGENT_OFFLINE="1",
                   PYTHONIOENCODING="utf-8")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert "Paris" in proc.stdout.decode("utf-8")
    question = Trace.from_jsonl(trace).of_type("question")[0]["text"]
    assert question == "caf\ufffd \ufffd: weather in Paris?"


def test_utf8_bytes_survive_an_ascii_locale(tmp_path):
    """In a C locale without UTF-8 mode, Python cannot decode a UTF-8 question; it is decoded again, not lost."""
    trace = tmp_path / "t.jsonl"
    proc = run_cli("--trace", str(trace), "北京天气".encode("utf-8"),
                   MINIAGENT_OFFLINE="1", LC_ALL="C", PYTHONUTF8="0")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert Trace.from_jsonl(trace).of_type("question")[0]["text"] == "北京天气"


# --- a key that cannot be a key --------------------------------------------------------------------


def test_an_invalid_key_prints_the_errors_own_message_never_the_key(monkeypatch, capsys):
    key = "sk-ant-api03-has a space-SECRET"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    error = miniagent.client.InvalidAPIKeyError(
        "ANTHROPIC_API_KEY contains a space at character 20; an API key is one unbroken line",
        type="invalid_api_key")

    def connect(**kwargs):
        raise error

    monkeypatch.setattr(miniagent.client, "connect", connect)
    assert main(["--live", "Hello!"]) == 2
    captured = capsys.readouterr()
    assert str(error) in captured.err and "Traceback" not in captured.err
    assert "SECRET" not in captured.err + captured.out and "is not set" not in captured.err


@pytest.mark.parametrize("key", ["sk-ant-api03-has space-SECRET", "sk-ant-api03-tab\there-SECRET",
                                 "sk-ant-api03-line\nbreak-SECRET"])
def test_a_key_with_spaces_or_control_characters_is_refused_as_a_process(key):
    proc = run_cli("--live", "Hello!", ANTHROPIC_API_KEY=key, PYTHONIOENCODING="utf-8")
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2 and err.startswith("miniagent: ") and "ANTHROPIC_API_KEY" in err
    assert "Traceback" not in err and "SECRET" not in err + proc.stdout.decode("utf-8")
