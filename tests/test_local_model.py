"""scripts/local_model.py, with a stand-in for llama-server: what it is started with, and that it is always stopped.

The real server takes minutes to build (make test-real uses it); here a small Python script sits
where the build would be (in a cache folder of the test's own), answers /health, and writes down
the arguments it was given.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import local_model  # noqa: E402

FAKE_SERVER = """#!{python}
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
open({argv_file!r}, "w").write(json.dumps(args))
class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{{"status": "ok"}}'
        self.send_response(200); self.send_header("content-length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Health).serve_forever()
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache holding a stand-in server and model; returns the file the server writes its arguments to."""
    monkeypatch.setenv("MINIAGENT_CACHE", str(tmp_path / "cache"))
    argv_file = tmp_path / "argv.json"
    server = local_model.server_path()
    server.parent.mkdir(parents=True)
    server.write_text(FAKE_SERVER.format(python=sys.executable, argv_file=str(argv_file)))
    server.chmod(0o755)
    local_model.model_path().parent.mkdir(parents=True)
    local_model.model_path().write_bytes(b"GGUF")
    return argv_file


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def server_pid(port: int) -> int:
    found = subprocess.run(["pgrep", "-f", f"llama-server.*--port {port}"], capture_output=True, text=True).stdout.split()
    return int(found[0])


def test_the_server_gets_the_portable_flags_the_template_and_the_cut_and_is_stopped_after(cache):
    with local_model.serving(max_tokens=256, seed=1) as port:
        pid = server_pid(port)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
            assert json.load(answer) == {"status": "ok"}
        args = json.loads(cache.read_text())
    assert ["--host", "127.0.0.1"] == args[args.index("--host"):args.index("--host") + 2]  # loopback only
    assert "--no-repack" in args and "--jinja" in args and ["-n", "256", "--seed", "1"] == args[-4:]
    assert args[args.index("--chat-template-file") + 1] == str(local_model.TEMPLATE)
    assert args[args.index("--alias") + 1] == local_model.MODEL_NAME
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_no_cut_unless_asked_and_settings_point_at_the_server_patiently(cache, monkeypatch):
    with local_model.serving() as port:
        args = json.loads(cache.read_text())
    assert "-n" not in args and "--seed" not in args
    monkeypatch.delenv("MINIAGENT_TIMEOUT", raising=False)
    monkeypatch.setenv("MINIAGENT_STREAM_TIMEOUT", "42")  # the environment's own choice wins
    assert local_model.settings(port, "openai") == {
        "MINIAGENT_PROVIDER": "llamacpp-openai", "MINIAGENT_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "MINIAGENT_TIMEOUT": "300", "MINIAGENT_STREAM_TIMEOUT": "42"}


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_killing_serve_stops_the_server_too(cache, stop):
    port = local_model.free_port()
    serve = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "local_model.py"), "serve", "--port", str(port)],
                             env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "served at" in serve.stdout.readline()
        pid = server_pid(port)
        serve.send_signal(stop)
        assert serve.wait(10) == 128 + stop
        deadline = time.monotonic() + 5
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid), "llama-server outlived local_model.py serve"
    finally:
        serve.kill()
