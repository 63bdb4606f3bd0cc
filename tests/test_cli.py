"""`python -m miniagent`: the demo offline, the trace file, exit statuses, clear errors."""

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

import miniagent.client
from miniagent import builtin_tools
from miniagent.__main__ import DEMO_QUESTION, main

ROOT = Path(__file__).resolve().parent.parent
FIXED = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    """No key and no forced mode: the CLI must pick offline by itself."""
    for name in ("ANTHROPIC_API_KEY", "MINIAGENT_OFFLINE", "MINIAGENT_MODEL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(builtin_tools, "now", lambda: FIXED)


@pytest.fixture
def clients(monkeypatch):
    """Every client the CLI connects, so a test can look at what it sent."""
    made = []
    real = miniagent.client.connect

    def spy(**kwargs):
        made.append(real(**kwargs))
        return made[-1]

    monkeypatch.setattr(miniagent.client, "connect", spy)
    return made


def round_one(out):
    return out.split("--- round 1 ---", 1)[1].split("--- round 2 ---", 1)[0]


def final_answer(out):
    """The answer in a verbose printout: after "Final answer:", or streamed, the last round's text."""
    if "Final answer:" in out:
        assert out.count("Final answer:") == 1
        return out.split("Final answer:", 1)[1]
    last_round = out.rsplit("\n--- round ", 1)[1]
    assert "tool call:" not in last_round
    return last_round.split("model: ", 1)[1]


@pytest.mark.parametrize("flags", [[], ["--no-stream"]], ids=["streamed", "not-streamed"])
def test_demo_offline_verbose(capsys, flags):
    assert main([*flags, "--verbose", DEMO_QUESTION]) == 0
    out = capsys.readouterr().out
    assert out.startswith("offline (mock API) · model ")
    first = round_one(out)
    assert [line.split("(")[0] for line in first.splitlines() if line.startswith("tool call:")] == \
        ["tool call: get_current_time", "tool call: calculate", "tool call: get_weather", "tool call: get_weather"]
    assert "北京" in first and "上海" in first and "  result: 3584" in first
    answer = final_answer(out)
    assert "3584" in answer and "北京" in answer and "上海" in answer
    assert ("Final answer:" in out) == ("--no-stream" in flags)


def test_demo_offline_quiet_prints_mode_then_answer(capsys):
    assert main([DEMO_QUESTION]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("offline (mock API)") and "no ANTHROPIC_API_KEY set" in lines[0]
    assert "3584" in "\n".join(lines[1:]) and not any("tool call" in line for line in lines)


def test_trace_file_is_json_lines(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    assert main(["--trace", str(path), DEMO_QUESTION]) == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    assert len(events) == 16
    for event in events:
        assert isinstance(event["type"], str) and datetime.fromisoformat(event["t"]).tzinfo is not None
    assert [e["type"] for e in events].count("tool_call") == 4 and events[-1]["type"] == "stop"
    assert f"16 events written to {path}" in capsys.readouterr().err


def test_options_reach_the_agent(clients, capsys):
    # another model the mock serves (a made-up name would be the API's 404, as live)
    assert main(["--offline", "--model", "claude-haiku-5-5", "--system", "Be brief.", "What is 6 * 7?"]) == 0
    body = clients[0].mock.requests[0]["body"]
    assert body["model"] == "claude-haiku-5-5" and body["system"] == "Be brief."
    assert "model claude-haiku-5-5" in capsys.readouterr().out


def test_offline_flag_wins_over_a_key(monkeypatch, clients, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key-0000000000")
    assert main(["--offline", "Hello!"]) == 0
    assert clients[0].mode == "offline"
    out = capsys.readouterr().out
    assert "sk-ant" not in out and "(no ANTHROPIC_API_KEY" not in out


def test_stopped_early_exits_1_and_says_why(capsys):
    assert main(["--max-iterations", "1", DEMO_QUESTION]) == 1
    assert "Stopped (max_iterations): stopped after 1 model calls" in capsys.readouterr().out


def test_api_error_exits_1_with_a_hint(monkeypatch, capsys):
    real = miniagent.client.connect

    def failing(**kwargs):
        client = real(max_retries=0, **kwargs)
        client.mock.fault(529)
        return client

    monkeypatch.setattr(miniagent.client, "connect", failing)
    assert main(["Hello!"]) == 1
    captured = capsys.readouterr()
    assert "Stopped (api_error): the API call failed: 529 overloaded_error" in captured.out
    assert "Hint: The API is overloaded right now" in captured.err and "Traceback" not in captured.err


@pytest.mark.parametrize("argv, message", [
    (["--bogus", "hi"], "unrecognized arguments: --bogus"),
    ([], "the following arguments are required: question"),
    (["--offline", "--live", "hi"], "not allowed with argument"),
    (["--max-iterations", "0", "hi"], "must be at least 1"),
    (["--max-iterations", "many", "hi"], "expected a whole number"),
    (["   "], "the question is empty"),
    (["--trace", "/no/such/folder/t.jsonl", "hi"], "does not exist"),
])
def test_bad_flags_exit_2_with_usage(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m miniagent") and message in err


def test_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--offline", "--live", "--model", "--max-iterations", "--verbose", "--no-stream", "--trace",
                 "--system"):
        assert flag in out


def test_live_without_a_key_is_a_clear_message(capsys):
    assert main(["--live", "hi"]) == 2
    captured = capsys.readouterr()
    assert "ANTHROPIC_API_KEY is not set" in captured.err and "drop --live" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1  # one paragraph


# --- as a real process --------------------------------------------------------------------


def run_cli(*args, **env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("ANTHROPIC_API_KEY", "MINIAGENT_OFFLINE", "ANTHROPIC_BASE_URL", "MINIAGENT_MODEL")}
    clean.update(env, PYTHONIOENCODING="utf-8")
    return subprocess.run([sys.executable, "-m", "miniagent", *args], cwd=ROOT, env=clean,
                          capture_output=True, text=True, encoding="utf-8", timeout=60)


def test_subprocess_demo():
    proc = run_cli("--verbose", DEMO_QUESTION)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("offline (mock API)")
    assert round_one(proc.stdout).count("tool call:") == 4
    assert "3584" in final_answer(proc.stdout)


def test_subprocess_live_without_key():
    proc = run_cli("--live", "hi")
    assert proc.returncode == 2
    assert "ANTHROPIC_API_KEY is not set" in proc.stderr and "Traceback" not in proc.stderr


def test_subprocess_bad_flag():
    proc = run_cli("--nope")
    assert proc.returncode == 2 and "usage: python -m miniagent" in proc.stderr


@pytest.mark.parametrize("provider, words", [("deepseek", "DEEPSEEK_API_KEY is not set"),
                                             ("nope", "unknown provider 'nope'; choose one of: anthropic")])
def test_another_provider_without_its_key_or_an_unknown_one_is_a_clear_message(monkeypatch, capsys, provider, words):
    monkeypatch.setenv("MINIAGENT_PROVIDER", provider)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    assert main(["--live", "Hello"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
