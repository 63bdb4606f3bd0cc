"""One mock server for a whole room: 100 learners running the demo agent against one `python -m miniagent.mock`.

    python benchmarks/classroom.py                        # 100 learners x 4 runs, unpaced: the server's capacity
    python benchmarks/classroom.py --first-token 0.5 --tokens-per-second 50   # answers paced like a real model
    python benchmarks/classroom.py --learners 30 --runs 2 --procs 2

The server is started as an instructor would start it (`python -m miniagent.mock --host 127.0.0.1 --port 0
--api-key KEY`, in a process of its own). Each learner is what a notebook does with the environment a
learner sets (ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY): `miniagent.connect()`, then
`Agent(client, default_tools()).run(DEMO)`, `--runs` times, streamed and not in turn (learner i starts
streamed when i is even). One learner is one thread with its own client (its own keep-alive connection,
like one kernel); the learners are spread over `--procs` processes so the clients' own Python work is
not bound by one GIL. All of them start at the same instant (everyone presses Run at once: the worst
case), after each process has imported everything and made one warm-up call.

Every model call is timed in the learner (the whole call: for a streamed one, to the end of its stream)
and checked: retries are off (`max_retries=0`), so a 429/529/connection error counts as an error and is
not hidden by a retry, and every run must end with the demo's answer (3584 and both cities).

Before the room, one learner alone runs the same demo on the same server: the latency floor (with
pacing, mostly the pacing itself), and the room's figures are compared with it. Printed: model calls per second over the whole room, agent runs per second, latency p50/p95/p99 per model
call (streamed, plain, all), the errors (claim: none), and the server's CPU time from /proc (as a share of
one core over the wall time) beside the clients'. The machine's load (`uptime`) is printed with them: on a
shared 2-core machine the server, the learners and whatever else runs share the same cores, so the
figures are a floor for a dedicated machine, not a ceiling.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from claims import Claim  # noqa: E402

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"
EXPECTED = ("3584", "北京", "上海")
KEY = "sk-classroom-demo"
LEARNERS, RUNS, PROCS = 100, 4, 2
START_DELAY = 3.0  # seconds from forking the learners' processes to the common start (imports, warm-up)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (Linux); NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


# --- one process of learners -------------------------------------------------------


def learners_process(base_url: str, indices: list[int], runs: int, start_at: float, out: mp.Queue) -> None:
    os.environ.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=KEY)
    os.environ.pop("MINIAGENT_OFFLINE", None)  # a learner's machine: live mode, at the room's server
    import miniagent
    from miniagent import Agent, connect, default_tools

    calls: list[tuple[bool, float]] = []   # (streamed, seconds) of every model call that succeeded
    errors: list[str] = []
    runs_done = [0]
    lock = threading.Lock()

    def client_for_a_learner() -> miniagent.Client:
        client = connect(quiet=True, max_retries=0)
        create = client.create

        def timed_create(messages, *, stream=False, **kwargs):
            started = time.perf_counter()
            try:
                response = create(messages, stream=stream, **kwargs)
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
                raise
            with lock:
                calls.append((stream, time.perf_counter() - started))
            return response

        client.create = timed_create  # the agent calls client.create: every model call is timed here
        return client

    # warm-up: imports done, one call made (not counted), so the common start measures the room, not imports
    warm = connect(quiet=True, max_retries=0)
    assert Agent(warm, default_tools()).run("Hello").ok
    warm.http.close()

    def learner(index: int) -> None:
        client = client_for_a_learner()
        time.sleep(max(0.0, start_at - time.time()))
        for run in range(runs):
            try:
                result = Agent(client, default_tools()).run(DEMO, stream=(index + run) % 2 == 0)
                if not result.ok or not all(part in result.text for part in EXPECTED):
                    with lock:
                        errors.append(f"run not ok: {result.stop}: {result.reason}: {result.text[:80]!r}")
                else:
                    with lock:
                        runs_done[0] += 1
            except Exception as exc:  # already counted when it came from a model call
                if not isinstance(exc, miniagent.APIError):
                    with lock:
                        errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
        client.http.close()

    cpu_before = time.process_time()
    threads = [threading.Thread(target=learner, args=(i,)) for i in indices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put({"calls": calls, "errors": errors, "runs": runs_done[0], "cpu": time.process_time() - cpu_before,
             "ended": time.time()})


# --- the room ----------------------------------------------------------------------


def run(*, learners: int = LEARNERS, runs: int = RUNS, procs: int = PROCS, first_token: float = 0.0,
        tokens_per_second: float | None = None) -> tuple[str, list[dict], list[Claim]]:
    from miniagent.mock import serve_in_subprocess

    args = ["--api-key", KEY]
    if first_token:
        args += ["--first-token", str(first_token)]
    if tokens_per_second:
        args += ["--tokens-per-second", str(tokens_per_second)]
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    server, base_url = serve_in_subprocess(*args, cwd=ROOT)
    try:
        context = mp.get_context("spawn")  # fresh interpreters: no thread or lock of this one carried over
        out = context.Queue()
        # first, one learner alone on the same server, the same runs: the latency floor the room is compared with
        alone_at = time.time() + START_DELAY
        alone = context.Process(target=learners_process, args=(base_url, [0], max(2, runs), alone_at, out))
        alone.start()
        alone_calls = [s for _, s in out.get(timeout=600)["calls"]]
        alone.join(timeout=30)
        start_at = time.time() + START_DELAY + 0.5 * procs
        groups = [list(range(p, learners, procs)) for p in range(procs)]
        workers = [context.Process(target=learners_process, args=(base_url, g, runs, start_at, out)) for g in groups]
        for worker in workers:
            worker.start()
        server_cpu_before = None
        while time.time() < start_at:  # the server's CPU time at the common start (after the warm-ups)
            time.sleep(0.01)
        server_cpu_before = cpu_seconds(server.pid)
        results = [out.get(timeout=600) for _ in workers]
        wall = max(r["ended"] for r in results) - start_at
        server_cpu = cpu_seconds(server.pid) - server_cpu_before
        for worker in workers:
            worker.join(timeout=30)
    finally:
        server.terminate()
        server.wait(timeout=10)
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())

    calls = [c for r in results for c in r["calls"]]
    errors = [e for r in results for e in r["errors"]]
    runs_ok = sum(r["runs"] for r in results)
    client_cpu = sum(r["cpu"] for r in results)
    all_calls = [s for _, s in calls]
    ms = lambda values, p: f"{percentile(values, p) * 1000:.1f}"  # noqa: E731
    rows = [{"model calls": "one learner alone", "count": len(alone_calls),
             "per_s": "-", "p50_ms": ms(alone_calls, 50),
             "p95_ms": ms(alone_calls, 95), "p99_ms": ms(alone_calls, 99), "max_ms": ms(alone_calls, 100)}]
    for label, values in (("plain", [s for streamed, s in calls if not streamed]),
                          ("streamed", [s for streamed, s in calls if streamed]),
                          ("all", [s for _, s in calls])):
        rows.append({"model calls": label, "count": len(values), "per_s": f"{len(values) / wall:.0f}",
                     "p50_ms": ms(values, 50), "p95_ms": ms(values, 95), "p99_ms": ms(values, 99),
                     "max_ms": ms(values, 100)})
    expected_runs = learners * runs
    pacing = (f"paced: first token {first_token:g} s, {tokens_per_second or 'all at once'} tokens/s" if first_token
              or tokens_per_second else "unpaced")
    summary = {
        "learners x runs": f"{learners} x {runs} ({procs} processes)",
        "agent runs ok": f"{runs_ok}/{expected_runs} in {wall:.2f} s ({runs_ok / wall:.1f} runs/s)",
        "model calls": f"{len(calls)} ({len(calls) / wall:.0f}/s)",
        "room vs alone": f"p50 {(percentile(all_calls, 50) - percentile(alone_calls, 50)) * 1000:+.1f} ms, "
                         f"p99 {(percentile(all_calls, 99) - percentile(alone_calls, 99)) * 1000:+.1f} ms per model call",
        "errors": str(len(errors)) + (f" (first: {errors[0]})" if errors else ""),
        "server CPU": f"{server_cpu:.2f} s = {server_cpu / wall * 100:.0f}% of one core "
                      f"({server_cpu / max(1, len(calls)) * 1000:.2f} ms per model call)",
        "learners' CPU": f"{client_cpu:.2f} s = {client_cpu / wall * 100:.0f}% of one core "
                         f"({client_cpu / max(1, len(calls)) * 1000:.2f} ms per model call)",
        "load (1/5/15 min)": f"before {load_before}, after {load_after} on {os.cpu_count()} cores",
    }
    claims = [
        Claim("no errors in a full room", f"{len(errors)} errors, {runs_ok} of {expected_runs} demo runs answered "
              f"correctly, {len(calls)} model calls", "0 errors, every run answered", not errors and
              runs_ok == expected_runs),
    ]
    title = (f"Classroom: {learners} learners on one mock server ({pacing}), the demo agent {runs} times each, "
             f"streamed and not in turn")
    return title, rows + [{"model calls": k, "count": v, "per_s": "", "p50_ms": "", "p95_ms": "", "p99_ms": "",
                           "max_ms": ""} for k, v in summary.items()], claims


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=LEARNERS)
    parser.add_argument("--runs", type=int, default=RUNS, help="demo runs per learner")
    parser.add_argument("--procs", type=int, default=PROCS, help="processes the learners are spread over")
    parser.add_argument("--first-token", type=float, default=0.0, help="the server's --first-token (seconds)")
    parser.add_argument("--tokens-per-second", type=float, default=None, help="the server's --tokens-per-second")
    args = parser.parse_args(argv)
    from run_all import table

    title, rows, claims = run(learners=args.learners, runs=args.runs, procs=args.procs,
                              first_token=args.first_token, tokens_per_second=args.tokens_per_second)
    timing, summary = [r for r in rows if r["per_s"]], [r for r in rows if not r["per_s"]]
    print(f"## {title}\n\n{table(timing)}\n")
    for row in summary:
        print(f"{row['model calls']:>18}: {row['count']}")
    print("\nclaims:")
    for claim in claims:
        print(f"  {claim}")
    return 0 if all(c.holds for c in claims) else 1


if __name__ == "__main__":
    sys.exit(main())
