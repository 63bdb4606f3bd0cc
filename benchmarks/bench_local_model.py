"""A real model on this machine: how fast SmolLM2-135M answers on llama.cpp's server, beside the mock.

Every other benchmark meets the mock, whose speed the mock decides. This one measures the local
model of scripts/local_model.py (`make local-model` builds it once), on this machine's CPU:

- **tokens per second**: one answer of up to `MAX_TOKENS` tokens, its output tokens over its wall
  time (first call excluded: llama.cpp loads and warms up on the first request);
- **first token**: a streamed answer's wait for its first text;
- **an agent run**: the demo's kind of question to an `Agent` with the built-in tools, capped at
  `ITERATIONS` model calls, `RUNS` times; its median seconds, and how many of the runs called a tool
  at all (a model this small rarely does: that is a finding, not a failure).

Claims: at least `MIN_TOKENS_PER_SECOND` tokens/s, and an agent run within `MAX_RUN_SECONDS`, the
speeds the notebooks' live settings assume. When the server is not built (and MINIAGENT_LOCAL_PORT
names no running one), the table says so and no claim is made.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import local_model  # noqa: E402
from claims import Claim  # noqa: E402
from miniagent.agent import Agent  # noqa: E402
from miniagent.builtin_tools import default_tools  # noqa: E402
from miniagent.client import connect  # noqa: E402

MAX_TOKENS = 128
ITERATIONS = 4
RUNS = 3
QUESTION = "What is (1024 + 768) * 2? Use the calculator."
MIN_TOKENS_PER_SECOND = 5.0
MAX_RUN_SECONDS = 120.0


def _measure(port: int) -> tuple[list[dict], list[Claim]]:
    os.environ.pop("MINIAGENT_OFFLINE", None)  # make bench sets it for the other benchmarks; restored below
    settings = local_model.settings(port)
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        llm = connect(quiet=True)
        llm.create([{"role": "user", "content": "Hi"}], max_tokens=8)  # the warm-up call
        started = time.perf_counter()
        answer = llm.create([{"role": "user", "content": "Write a short story about a robot."}], max_tokens=MAX_TOKENS)
        seconds = time.perf_counter() - started
        rate = answer["usage"]["output_tokens"] / seconds
        started, first = time.perf_counter(), None
        with llm.stream([{"role": "user", "content": "Say hello."}], max_tokens=32) as stream:
            for event in stream:
                if first is None and event.get("type") == "content_block_delta":
                    first = time.perf_counter() - started
        runs, called = [], 0
        for _ in range(RUNS):
            agent = Agent(llm, default_tools(), max_iterations=ITERATIONS)
            started = time.perf_counter()
            agent.run(QUESTION)
            runs.append(time.perf_counter() - started)
            called += bool(agent.trace.of_type("tool_call"))
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
        os.environ["MINIAGENT_OFFLINE"] = "1"
    median = statistics.median(runs)
    rows = [{"measure": "tokens per second", "value": f"{rate:.1f}",
             "how": f"{answer['usage']['output_tokens']} tokens in {seconds:.2f} s"},
            {"measure": "first token", "value": f"{first:.2f} s" if first is not None else "no text", "how": "a stream"},
            {"measure": "an agent run", "value": f"{median:.1f} s",
             "how": f"median of {RUNS}, at most {ITERATIONS} calls; {called} of {RUNS} called a tool"}]
    claims = [Claim("local tokens per second", f"{rate:.1f} tokens/s", f"at least {MIN_TOKENS_PER_SECOND:g}",
                    rate >= MIN_TOKENS_PER_SECOND),
              Claim("local agent run", f"median {median:.1f} s", f"at most {MAX_RUN_SECONDS:g} s", median <= MAX_RUN_SECONDS)]
    return rows, claims


def run() -> tuple[str, list[dict], list[Claim]]:
    title = f"The local model: {local_model.MODEL_LABEL} on llama.cpp's server, {os.cpu_count()} cores"
    running = os.environ.get("MINIAGENT_LOCAL_PORT", "").strip()
    if running:
        return (title, *_measure(int(running)))
    if not local_model.server_path().exists() or not local_model.model_path().exists():
        return title, [{"measure": "not built", "value": "-", "how": "make local-model builds it once (about 7 minutes)"}], []
    with local_model.serving() as port:
        return (title, *_measure(port))
