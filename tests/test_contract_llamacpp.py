"""`scripts/contract.py --llamacpp`: llama.cpp's server as the contract's third target, on its saved replies.

tests/data/contract-llamacpp.json holds what llama.cpp's server (the local build, SmolLM2-135M)
answered to every probe (`python scripts/contract.py --llamacpp URL --save-replies`); replayed,
the run needs no server. Every difference llama.cpp showed there must be listed in
LLAMACPP_KNOWN, an unlisted one fails the run, and a probe with no saved reply fails it too.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPLIES = ROOT / "tests" / "data" / "contract-llamacpp.json"


@pytest.fixture(scope="module")
def contract():
    """scripts/contract.py as a module (its name is the probes' package's, so it is loaded by path)."""
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("contract_script", ROOT / "scripts" / "contract.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def llamacpp_part(out: str) -> str:
    return out[out.index("\nllama.cpp ("):]


def test_every_difference_in_the_saved_replies_is_listed(contract, capsys):
    assert contract.main(["--offline", "--replay", str(REPLIES)]) == 0
    part = llamacpp_part(capsys.readouterr().out)
    assert "FAIL" not in part and "no saved reply" not in part
    summary = part.strip().splitlines()[-1]
    known = int(summary.split(" with known differences")[0].rsplit(", ", 1)[1])
    assert known >= 40  # most probes differ: the rules llama.cpp does not enforce, shapes, headers
    # what the issue names, seen in these replies and printed with what llama.cpp does instead
    for name in ("tool_choice tool forces that tool", "a request-id header", "a streamed answer in Chinese",
                 "missing max_tokens", "unknown model"):
        line = next(line for line in part.splitlines() if line.endswith(f"({contract.LLAMACPP_KNOWN[name]})"))
        assert line.split()[0] == "known", line


def test_an_unlisted_difference_fails_the_run(contract, capsys, monkeypatch):
    table = {k: v for k, v in contract.LLAMACPP_KNOWN.items() if k != "a request-id header"}
    monkeypatch.setattr(contract, "LLAMACPP_KNOWN", table)
    assert contract.main(["--offline", "--replay", str(REPLIES), "--only", "request-id"]) == 1
    out = capsys.readouterr().out
    assert "FAIL            a request-id header" in out
    assert "request-id: expected 'req_...', llama.cpp null" in out


def test_a_probe_without_a_saved_reply_fails_the_run(contract, capsys, tmp_path):
    saved = json.loads(REPLIES.read_text())
    saved["exchanges"] = [e for e in saved["exchanges"] if "/v1/messages/count_tokens" not in e["key"]]
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(saved))
    assert contract.main(["--offline", "--replay", str(path), "--only", "count"]) == 1
    out = capsys.readouterr().out
    assert "requests have no saved reply" in out and "save them again" in out


def test_the_table_names_probes_that_exist_in_one_line_each(contract):
    names = {p.name for p in contract.PROBES}
    assert set(contract.LLAMACPP_KNOWN) <= names, set(contract.LLAMACPP_KNOWN) - names
    for name, line in contract.LLAMACPP_KNOWN.items():
        assert line and "\n" not in line and len(line) <= 160, name


def test_the_saved_replies_cover_every_probe_and_hold_no_key(contract):
    text = REPLIES.read_text()
    saved = json.loads(text)
    assert saved["model"] == contract.LLAMACPP_MODEL and saved["exchanges"]
    assert "<key>" in text and contract.MOCK_KEY not in text
    replayed = contract.Replayed("llama.cpp", saved)
    for probe in contract.PROBES:
        if not probe.openai:  # the Responses API's probes are not run against llama.cpp's Messages endpoint
            contract.observe(probe, replayed)
    assert replayed.missing == []


def test_a_listed_probe_that_matches_is_said_but_does_not_fail(contract, capsys, monkeypatch):
    """The tiny model's choices vary: a listed probe that matches on a run is printed as such."""
    monkeypatch.setattr(contract, "LLAMACPP_KNOWN", {**contract.LLAMACPP_KNOWN, "the full list": "may differ"})
    assert contract.main(["--offline", "--replay", str(REPLIES), "--only", "the full list"]) == 0
    assert "listed, matched the full list  (may differ)" in capsys.readouterr().out


def test_without_a_server_or_a_build_it_says_how_to_get_one(contract, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("MINIAGENT_LOCAL_PORT", raising=False)
    monkeypatch.setenv("MINIAGENT_CACHE", str(tmp_path))  # an empty cache: no local build
    assert contract.main(["--offline", "--llamacpp", "--only", "missing model"]) == 2
    assert "no llama.cpp server" in capsys.readouterr().out


def test_a_server_that_is_not_up_is_said_not_probed(contract, capsys):
    assert contract.main(["--offline", "--llamacpp", "http://127.0.0.1:9", "--only", "missing model"]) == 2
    assert "is not ready (/health: ConnectError" in capsys.readouterr().out


def test_saving_replies_writes_what_replaying_reads(contract, tmp_path):
    """--save-replies, on a target that answers from the saved file: the file it writes replays the same."""
    saved = json.loads(REPLIES.read_text())
    source = contract.Replayed("llama.cpp", saved)
    source.saved = []
    probe = next(p for p in contract.PROBES if p.name == "a request-id header")
    first = contract.observe(probe, source)
    path = tmp_path / "again.json"
    contract.save_replies(path, source, "http://127.0.0.1:8090")
    again = contract.Replayed("llama.cpp", json.loads(path.read_text()))
    assert contract.observe(probe, again) == first and again.missing == []


def test_plain_make_contract_never_asks_for_llamacpp():
    """CI's `MINIAGENT_OFFLINE=1 make contract` stays the mock's; LLAMACPP=1 or =URL adds llama.cpp."""
    import subprocess

    def recipe(*args: str) -> str:
        return subprocess.run(["make", "--no-print-directory", "-n", "contract", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[-1]

    assert "--llamacpp" not in recipe()
    assert recipe("LLAMACPP=1").split("contract.py")[1].split() == ["--llamacpp"]
    assert recipe("LLAMACPP=http://127.0.0.1:8090").split("contract.py")[1].split() == \
        ["--llamacpp", "http://127.0.0.1:8090"]
