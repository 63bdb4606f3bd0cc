"""Reliability soak: many agent runs against ONE mock HTTP server that fails on purpose.

    python benchmarks/soak.py                       # 1,000 runs (make soak)
    python benchmarks/soak.py --runs 60 --seconds 15
    python benchmarks/soak.py --seed 7 --only 123   # replay run 123 of seed 7, with its details

Each run asks one of a few representative questions (the demo question and three English
ones, all answered with the built-in tools, the clock fixed), streamed or not, through a
real `Client` over loopback HTTP to one `miniagent.mock` server on 127.0.0.1, which accepts
the soak's key only. Up to two consecutive HTTP attempts of the run carry an `x-mock-fault`
header: 429, 529, 500, a slow answer, a stall longer than the client's timeout, a dropped
connection, a body or stream cut after N bytes or events (`cut=N`), an `error` event after
N events (`error-after=N`).
What each run gets comes from `random.Random(f"{seed}:{run}")` alone, so a failing run is
replayed, whatever the threads did, with `--seed S --only RUN`.

A stream that breaks after its first byte is never retried by the client (a retry would
repeat text the caller has already seen), so the run ends `api_error` with the agent's
history unchanged; the documented recovery is to ask again, and the soak does so (at most
twice), for that case only (the break must come from the fault planned for that very
attempt), and counts it ("re-asked"). Every other failure is a failure.

Checked for every run, reported in a table, and any failure makes the exit status 1:
1. it ends ok, with exactly the answer a clean run of the same question gave (the clean
   runs come first, both plain and streamed, and must agree with each other);
2. every conversation sent was valid: no 400 from the server (whose validation is strict),
   and every request body it recorded, faulted ones too (a fault comes before validation),
   passes `validate_request` again;
3. the API key, a canary made up for this soak (`sk-ant-api03-CANARY-...`), appears in no
   answer, no `agent.trace` (as JSON Lines and as text), no history, no `client.exchanges`,
   no exception text or traceback, no log record (the root logger, at DEBUG, warnings
   included), nothing written to stdout or stderr, no line the server logged, and no record
   the mock kept.
The faults the server says it served (its log: 429, 500, 529, dropped, cut) must match the
ones the soak injected, so a run that injected nothing cannot pass as a soak. The table also
counts the runs whose retries their faults do not explain (each fault sent before a stream's
first byte costs exactly one retry, a slow answer none): a timeout of a loaded machine's own
making would show there (reported, not failed on).

Loopback only, bounded in count (`--runs`) and time (`--seconds`: no run starts after it);
the client's back-off waits are recorded as asked and slept for at most `--max-sleep`.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import random
import secrets
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import httpx2

from miniagent import builtin_tools, deadline
from miniagent.agent import Agent
from miniagent.client import Client
from miniagent.clientcore import API_VERSION
from miniagent.mock import MockAPI, serve_in_thread
from miniagent.mock.validate import parse_betas, validate_request

QUESTIONS = (
    "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。",  # the demo question
    "What's the weather in Tokyo and Paris right now?",
    "What time is it in New York, and what is 17 * 23 + 4?",
    "Calculate (3.5 + 2) * 12 / 4, then tell me the weather in London.",
)
FIXED_NOW = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)
KINDS = ("429", "529", "500", "slow", "stall", "drop", "cut", "error_after")
WEIGHTS = (1.0, 1.0, 1.0, 0.7, 0.3, 1.0, 1.5, 1.5)  # a stall costs a whole client timeout: rarer
MESSAGES_PATH = "/v1/messages"
DEFAULT_RUNS, DEFAULT_SECONDS, DEFAULT_WORKERS = 1000, 240.0, 8
# seconds: 200x a loopback call, so a loaded machine does not time out by itself; a stall lasts
# longer than this, so the client times out and retries
CLIENT_TIMEOUT = 2.0
STALL = CLIENT_TIMEOUT + 0.3
MAX_SLEEP = 0.01       # the longest back-off actually slept (the wait asked for is still recorded)
MAX_ASKS = 3           # a question asked again after each stream broken midway by a planned fault (2 in a row)


def fault_counts(max_in_a_row: int) -> tuple[int, ...]:
    """How many consecutive faults a run may get, as a list to draw from: none a tenth of the time."""
    return (0,) + tuple(k for k in range(1, max_in_a_row + 1) for _ in range(4 if max_in_a_row <= 2 else 1))


@dataclass
class Plan:
    """What one run gets, drawn from its own seed: the question, streamed or not, the faults."""

    run: int
    question: int
    streamed: bool
    faults: dict[int, tuple[str, str]]  # attempt number (1-based, per run) -> (kind, x-mock-fault header)

    def describe(self) -> str:
        faults = ", ".join(f"attempt {n}: {h}" for n, (_, h) in sorted(self.faults.items())) or "no faults"
        return f"run {self.run}: question {self.question}, {'streamed' if self.streamed else 'plain'}, {faults}"


def plan_for(seed: int, run: int, *, questions: int, calls: Sequence[int], kinds: Sequence[str] = KINDS,
             counts: Sequence[int] = fault_counts(2)) -> Plan:
    """The run's plan from `random.Random(f"{seed}:{run}")` only. `calls[q]`: the model calls a clean run
    of question q makes; the faults start on one of them (a first attempt of a call), and follow in a row."""
    rng = random.Random(f"{seed}:{run}")
    question = rng.randrange(questions)
    streamed = rng.random() < 0.5
    count = rng.choice(list(counts))
    start = rng.randint(1, max(1, calls[question]))
    weights = [WEIGHTS[KINDS.index(k)] if k in KINDS else 1.0 for k in kinds]
    faults = {}
    for n in range(start, start + count):
        kind = rng.choices(list(kinds), weights)[0]
        faults[n] = (kind, fault_header(kind, rng))
    return Plan(run, question, streamed, faults)


def fault_header(kind: str, rng: random.Random) -> str:
    if kind in ("429", "529", "500"):
        return kind
    if kind == "slow":
        return f"slow={rng.uniform(0.01, 0.08):.3f}"
    if kind == "stall":
        return f"slow={STALL:g}"
    if kind == "drop":
        return "drop"
    if kind == "cut":
        return f"cut={rng.randint(0, 40)}"  # events of a stream, bytes of a plain body
    if kind == "error_after":
        return f"error-after={rng.randint(0, 20)}"
    raise ValueError(f"unknown fault kind {kind!r}")


# --- the client's side ---------------------------------------------------------------------


class FaultingTransport(httpx2.BaseTransport):
    """The client's real transport (deadline-bounded sockets), adding the planned `x-mock-fault`
    header to the planned attempts of `POST /v1/messages`, and counting the attempts."""

    def __init__(self, faults: dict[int, tuple[str, str]]) -> None:
        self.inner = deadline.deadline_transport()
        self.faults, self.attempts, self.injected = faults, 0, Counter()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST" and request.url.path == MESSAGES_PATH:
            self.attempts += 1
            planned = self.faults.get(self.attempts)
            if planned:
                request.headers["x-mock-fault"] = planned[1]
                self.injected[planned[0]] += 1
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class Sleeper:
    """The client's sleep: records each back-off (one per retry) and sleeps at most `cap` of it."""

    def __init__(self, cap: float) -> None:
        self.cap, self.waits = cap, []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(min(max(seconds, 0.0), self.cap))


# --- what must never hold the key ------------------------------------------------------------


class LeakWatch:
    """Everything the soak looks through for the canary: texts handed in, log records, stdout/stderr."""

    def __init__(self, canary: str) -> None:
        self.canary = canary
        self.lock = threading.Lock()
        self.leaks: list[str] = []
        self.looked = Counter()

    def check(self, where: str, text: str) -> bool:
        with self.lock:
            self.looked[where] += 1
            if self.canary in text:
                self.leaks.append(where)
                return True
            return False


class _LogHandler(logging.Handler):
    def __init__(self, watch: LeakWatch) -> None:
        super().__init__(logging.DEBUG)
        self.watch = watch
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)  # the message, its arguments, and any traceback
        except Exception:  # noqa: BLE001 - a record that cannot format still gets looked at
            text = repr(record.__dict__)
        self.watch.check(f"log record ({record.name})", text)


class _Tee(io.TextIOBase):
    """stdout or stderr, looked through on its way."""

    def __init__(self, inner: Any, watch: LeakWatch, name: str) -> None:
        self.inner, self.watch, self.name = inner, watch, name

    def write(self, text: str) -> int:
        self.watch.check(self.name, text)
        return self.inner.write(text)

    def flush(self) -> None:
        self.inner.flush()


class ServerLog:
    """The mock server's log (one line per request), counted by outcome and looked through."""

    def __init__(self, watch: LeakWatch) -> None:
        self.watch, self.lock = watch, threading.Lock()
        self.outcomes: Counter = Counter()
        self.odd: list[str] = []

    def write(self, text: str) -> int:
        line = text.strip()  # print() writes the line and its "\n" apart; threads may interleave them
        if line:
            self.watch.check("server log", line)
            with self.lock:
                words = line.split()
                if line.startswith("mock:") or len(words) < 3:
                    self.odd.append(line)
                elif "cut by a fault" in line or "cut short by a fault" in line:
                    self.outcomes["cut"] += 1
                else:
                    self.outcomes[words[2]] += 1  # "POST /v1/messages 200 (...)", or "... dropped (no response)"
        return len(text)

    def flush(self) -> None:
        pass


# --- one run ---------------------------------------------------------------------------------


@dataclass
class RunResult:
    plan: Plan
    ok: bool = False
    text: str = ""
    answers: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    attempts: int = 0
    retries: int = 0
    reasked: int = 0  # times the question was asked again after a stream broke midway
    injected: Counter = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _texts_of(agent: Agent, client: Client, result: Any, trace_file: Path) -> list[tuple[str, str]]:
    """Every text a run produced that a person or a file could see: where, and what."""
    texts = [("answer", result.text), ("stop reason", result.reason), ("result", repr(result)),
             ("history", json.dumps(agent.history, ensure_ascii=False, default=str)),
             ("result messages", json.dumps(result.messages, ensure_ascii=False, default=str))]
    agent.trace.to_jsonl(trace_file)
    texts += [("trace (to_jsonl)", trace_file.read_text(encoding="utf-8")), ("trace (str)", str(agent.trace)),
              ("trace (table)", agent.trace.table()), ("trace (events)", repr(list(agent.trace)))]
    texts.append(("client.exchanges", json.dumps([e.to_dict() for e in client.exchanges], ensure_ascii=False,
                                                 default=str)))
    texts.append(("client", repr(client)))
    if result.error is not None:
        err = result.error
        texts += [("exception (str)", str(err)), ("exception (repr)", repr(err)),
                  ("exception (traceback)", "".join(traceback.format_exception(type(err), err, err.__traceback__))),
                  ("exception (partial)", json.dumps(err.partial, ensure_ascii=False, default=str))]
    return texts


def one_run(plan: Plan, *, base_url: str, canary: str, questions: Sequence[str], expected: Sequence[str | None],
            watch: LeakWatch, trace_file: Path, max_sleep: float = MAX_SLEEP, timeout: float = CLIENT_TIMEOUT,
            create: dict | None = None) -> RunResult:
    """One agent run of the plan, checked: its answer, its leaks; asked again after a stream broken midway."""
    out = RunResult(plan)
    started = time.perf_counter()
    transport, sleeper = FaultingTransport(plan.faults), Sleeper(max_sleep)
    client = Client(api_key=canary, base_url=base_url, transport=transport, sleep=sleeper, timeout=timeout,
                    max_retries=2)
    agent = Agent(client, stream=plan.streamed, create=create)
    question = questions[plan.question]
    try:
        for asked in range(1, MAX_ASKS + 1):
            result = agent.run(question)
            for where, text in _texts_of(agent, client, result, trace_file):
                if watch.check(where, text):
                    out.leaks.append(where)
            out.answers.append(result.text)
            if result.ok:
                out.ok, out.text = True, result.text
                break
            last = client.exchanges[-1] if client.exchanges else None
            broke_midway = (plan.streamed and last is not None and last.status == 200 and last.stream is not None
                            and not last.stream.get("complete"))
            # broken by the fault planned for that very attempt (not by anything else)
            planned_break = plan.faults.get(transport.attempts, ("", ""))[0] in ("cut", "error_after")
            if agent.history:
                out.problems.append(f"a failed run changed the history ({len(agent.history)} messages)")
            why = f"{result.stop}: {result.reason[:300]}"
            if asked < MAX_ASKS and broke_midway and planned_break and not agent.history:
                out.reasked += 1  # the documented recovery: the history is as it was, ask again
                continue
            out.problems.append(f"the run failed: {why}")
            break
    except Exception as exc:  # noqa: BLE001 - a run must never raise: report it, with its text looked through
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        if watch.check("exception raised by agent.run", text):
            out.leaks.append("exception raised by agent.run")
        out.problems.append(f"agent.run raised {type(exc).__name__}: {str(exc)[:300]}")
    finally:
        client.http.close()
    want = expected[plan.question]
    if out.ok and out.text != want:
        out.problems.append(f"a different answer: {out.text[:200]!r}, expected {str(want)[:200]!r}")
    out.attempts, out.retries, out.injected = transport.attempts, len(sleeper.waits), transport.injected
    if out.leaks:
        out.problems.append(f"the canary key appears in: {', '.join(sorted(set(out.leaks)))}")
    out.seconds = time.perf_counter() - started
    return out


# --- the soak ------------------------------------------------------------------------------------


@dataclass
class Report:
    seed: int
    requested: int
    results: list[RunResult] = field(default_factory=list)
    clean: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # soak-wide: clean runs, server, records
    server_outcomes: Counter = field(default_factory=Counter)
    status_400: int = 0
    invalid_bodies: int = 0
    records: int = 0
    leaks: list[str] = field(default_factory=list)
    looked: Counter = field(default_factory=Counter)
    wall: float = 0.0
    timed_out: bool = False
    load: str = ""

    @property
    def runs(self) -> int:
        return len(self.results)

    @property
    def failed_runs(self) -> list[RunResult]:
        return [r for r in self.results if r.problems]

    @property
    def mismatches(self) -> int:
        return sum(1 for r in self.results if any(p.startswith("a different answer") for p in r.problems))

    @property
    def injected(self) -> Counter:
        total: Counter = Counter()
        for r in self.results:
            total.update(r.injected)
        return total

    @property
    def unexplained_retries(self) -> int:
        """Runs retried more or less often than their faults call for: a timeout of the machine's own
        making (a loaded machine) would show here; reported, not failed on."""
        return sum(1 for r in self.results if r.retries != expected_retries(r))

    @property
    def failed(self) -> bool:
        return bool(self.problems or self.failed_runs or self.status_400 or self.invalid_bodies or self.leaks)

    def rows(self) -> list[tuple[str, str]]:
        injected, runs = self.injected, self.runs
        streamed = sum(r.plan.streamed for r in self.results)
        faulted = sum(1 for r in self.results if r.injected)
        rows = [
            ("runs", f"{runs} of {self.requested}" + (" (stopped by --seconds)" if self.timed_out else "")
             + f": {streamed} streamed, {runs - streamed} plain; {faulted} with faults"),
            ("runs ok, same answer as clean", f"{sum(1 for r in self.results if r.ok and not r.problems)}"),
            ("faults injected", f"{sum(injected.values())}: " + ", ".join(f"{k} {injected[k]}" for k in KINDS
                                                                              if injected[k]) or "0"),
            ("HTTP attempts / retries", f"{sum(r.attempts for r in self.results)} / "
                                        f"{sum(r.retries for r in self.results)}"),
            ("runs whose retries the faults don't explain", str(self.unexplained_retries)),
            ("re-asked (stream broken midway)", f"{sum(r.reasked for r in self.results)} times, in "
                                                f"{sum(1 for r in self.results if r.reasked)} runs"),
            ("failed runs", str(len(self.failed_runs))),
            ("answer mismatches", str(self.mismatches)),
            ("400s from the server", str(self.status_400)),
            ("recorded bodies invalid on re-check", f"{self.invalid_bodies} of {self.records}"),
            ("canary leaks", f"{len(self.leaks)} in {sum(self.looked.values())} texts looked through"),
            ("server outcomes", ", ".join(f"{k} {v}" for k, v in sorted(self.server_outcomes.items()))),
            ("wall time", f"{self.wall:.1f} s" + (f" (load {self.load})" if self.load else "")),
            ("runs/s", f"{runs / self.wall:.1f}" if self.wall else "-"),
        ]
        return rows

    def table(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        return "\n".join(f"  {k.ljust(width)}  {v}" for k, v in self.rows())


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def _clean_answers(base_url: str, canary: str, questions: Sequence[str], watch: LeakWatch, trace_file: Path,
                   create: dict | None, report: Report) -> tuple[list[str | None], list[int]]:
    """Each question asked without faults, plain and streamed: the answer every run must give, and the
    model calls it takes (where a run's faults may start)."""
    expected: list[str | None] = []
    calls: list[int] = []
    for q in range(len(questions)):
        answers = []
        for streamed in (False, True):
            result = one_run(Plan(-1, q, streamed, {}), base_url=base_url, canary=canary, questions=questions,
                             expected=[None] * len(questions), watch=watch, trace_file=trace_file, create=create)
            result.problems = [p for p in result.problems if not p.startswith("a different answer")]
            if result.problems:
                report.problems.append(f"the clean {'streamed' if streamed else 'plain'} run of question {q} "
                                       f"failed: {'; '.join(result.problems)}")
            answers.append(result.text if result.ok else None)
            report.clean.append({"question": q, "streamed": streamed, "ok": result.ok, "calls": result.attempts,
                                 "text": result.text})
            if not streamed:
                calls.append(max(1, result.attempts))
        if answers[0] != answers[1]:
            report.problems.append(f"question {q}: the clean plain and streamed answers differ: "
                                   f"{str(answers[0])[:120]!r} vs {str(answers[1])[:120]!r}")
        expected.append(answers[0])
    return expected, calls


def run_soak(runs: int = DEFAULT_RUNS, *, seed: int = 0, seconds: float = DEFAULT_SECONDS,
             workers: int = DEFAULT_WORKERS, questions: Sequence[str] = QUESTIONS, kinds: Sequence[str] = KINDS,
             counts: Sequence[int] = fault_counts(2), canary: str | None = None,
             expected: Sequence[str | None] | None = None, create: dict | None = None,
             max_sleep: float = MAX_SLEEP, only: int | None = None, progress: bool = False) -> Report:
    """The soak: clean runs first, then `runs` faulted runs on `workers` threads, all checked.

    For tests: `expected` replaces the clean answers (a wrong one must be caught), `counts` the
    numbers of faults in a row to draw from (3 exhausts the client's 2 retries), `create` extra
    request fields (an invalid one must be caught as 400s), `canary` the key (put it in a question
    and the trace holds it: a leak), `only` one run to replay. `progress`: a line on stderr every
    tenth of the runs (how many, the seconds so far, about how many are left).
    """
    canary = canary or "sk-ant-api03-CANARY-" + secrets.token_hex(20)  # made here, so no source line holds it
    report = Report(seed, 1 if only is not None else runs, load=_load())
    watch = LeakWatch(canary)
    server_log = ServerLog(watch)
    # the canary is the one key the server accepts: a run that sent anything else would get 401s
    mock = MockAPI(api_keys={canary}, max_records=max(1_000, 12 * (runs + 2 * len(questions))))
    server, base_url = serve_in_thread(mock, log=server_log)
    saved_now, saved_out, saved_err = builtin_tools.now, sys.stdout, sys.stderr
    root, handler = logging.getLogger(), _LogHandler(watch)
    saved_level = root.level
    builtin_tools.now = lambda: FIXED_NOW
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    logging.captureWarnings(True)
    sys.stdout, sys.stderr = _Tee(saved_out, watch, "stdout"), _Tee(saved_err, watch, "stderr")
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="miniagent-soak-") as tmp:
            folder = Path(tmp)
            clean, calls = _clean_answers(base_url, canary, questions, watch, folder / "clean.jsonl", create, report)
            want = list(expected) if expected is not None else clean
            indices = [only] if only is not None else list(range(runs))
            results: list[RunResult | None] = [None] * len(indices)
            lock, cursor, stop_at = threading.Lock(), iter(range(len(indices))), started + seconds
            done, every = [0], max(1, len(indices) // 10)

            def count_one() -> None:  # called under the lock
                done[0] += 1
                if progress and (done[0] % every == 0 or done[0] == len(indices)):
                    spent = time.perf_counter() - started
                    left = spent / done[0] * (len(indices) - done[0])
                    print(f"soak: {done[0]:,}/{len(indices):,} runs in {spent:.0f} s"
                          + (f", about {left:.0f} s left" if done[0] < len(indices) else ""), file=saved_err, flush=True)

            def work(worker: int) -> None:
                while True:
                    with lock:
                        if time.perf_counter() > stop_at:
                            report.timed_out = True
                            return
                        k = next(cursor, None)
                    if k is None:
                        return
                    plan = plan_for(seed, indices[k], questions=len(questions), calls=calls, kinds=kinds,
                                    counts=counts)
                    results[k] = one_run(plan, base_url=base_url, canary=canary, questions=questions,
                                         expected=want, watch=watch, trace_file=folder / f"trace-{worker}.jsonl",
                                         max_sleep=max_sleep, create=create)
                    with lock:
                        count_one()

            threads = [threading.Thread(target=work, args=(w,), name=f"soak-{w}")
                       for w in range(max(1, min(workers, len(indices))))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            report.results = [r for r in results if r is not None]
    finally:
        report.wall = time.perf_counter() - started
        sys.stdout, sys.stderr = saved_out, saved_err
        logging.captureWarnings(False)
        root.removeHandler(handler)
        root.setLevel(saved_level)
        builtin_tools.now = saved_now
        server.shutdown()
    _check_server(report, mock, server_log, watch)
    report.leaks, report.looked = list(watch.leaks), Counter(watch.looked)
    return report


def _check_server(report: Report, mock: MockAPI, log: ServerLog, watch: LeakWatch) -> None:
    """What the server saw: its records re-validated and looked through, its log against what was injected."""
    records = mock.records
    report.records = len(records)
    for record in records:
        if record["path"] != MESSAGES_PATH:
            continue
        if record["status"] == 400:
            report.status_400 += 1
            if report.status_400 <= 3:
                report.problems.append(f"a 400 from the server: {json.dumps(record['response'])[:300]}")
        body = record["body"]
        headers = record["headers"]
        problem = validate_request(body, version=headers.get("anthropic-version", API_VERSION), models=mock.models,
                                   betas=parse_betas(headers.get("anthropic-beta"))[0])
        if problem is not None:
            report.invalid_bodies += 1
            if report.invalid_bodies <= 3:
                report.problems.append(f"a recorded body is invalid: {problem.message[:200]}")
        watch.check("mock records", json.dumps(record, ensure_ascii=False, default=str))
    report.server_outcomes = Counter(log.outcomes)
    if log.odd:
        report.problems.append(f"the server logged {len(log.odd)} unexpected line(s), e.g. {log.odd[0][:200]!r}")
    expected_400 = sum(v for k, v in log.outcomes.items() if k == "400")
    if expected_400 != report.status_400 and len(records) < mock._records.max_records:
        report.problems.append(f"the server logged {expected_400} 400s but recorded {report.status_400}")
    report.status_400 = max(report.status_400, expected_400)
    injected = report.injected
    plain_error_after = sum(1 for r in report.results for kind, _ in _injected_faults(r)
                            if kind == "error_after" and not r.plan.streamed)
    wanted = {"429": injected["429"], "500": injected["500"], "529": injected["529"] + plain_error_after,
              "dropped": injected["drop"], "cut": injected["cut"]}
    for outcome, count in wanted.items():
        if log.outcomes[outcome] != count:
            report.problems.append(f"the server served {log.outcomes[outcome]} {outcome!r} but the soak injected "
                                   f"{count}")


def _injected_faults(result: RunResult) -> list[tuple[str, str]]:
    """The planned faults that were actually sent (their attempt was made)."""
    return [fault for n, fault in sorted(result.plan.faults.items()) if n <= result.attempts]


def expected_retries(result: RunResult) -> int:
    """The client retries the faults sent injected before a stream's first byte: statuses, drops, stalls (a
    timeout), a plain body cut or `error_after` (a 529 there), a stream cut before its first event. A slow
    answer is no failure, and a stream broken after its first byte is not retried (the run asks again)."""
    count = 0
    for kind, header in _injected_faults(result):
        if kind in ("429", "529", "500", "drop", "stall"):
            count += 1
        elif kind in ("cut", "error_after") and not result.plan.streamed:
            count += 1
        elif kind == "cut" and header == "cut=0":
            count += 1
    return count


def print_report(report: Report, *, details: int = 20) -> None:
    print(f"\nsoak: seed {report.seed}\n{report.table()}")
    for problem in report.problems:
        print(f"FAIL {problem}")
    for result in report.failed_runs[:details]:
        print(f"FAIL {result.plan.describe()}: {'; '.join(result.problems)}")
        print(f"     replay: python benchmarks/soak.py --seed {report.seed} --only {result.plan.run}")
    if len(report.failed_runs) > details:
        print(f"... and {len(report.failed_runs) - details} more failed runs")
    print("soak:", "FAILED" if report.failed else "ok")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"agent runs (default {DEFAULT_RUNS})")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help=f"no run starts after this many seconds (default {DEFAULT_SECONDS:g})")
    parser.add_argument("--seed", type=int, default=0, help="the seed every run's plan is drawn from (default 0)")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help=f"threads (default {DEFAULT_WORKERS})")
    parser.add_argument("--max-in-a-row", type=int, default=2,
                        help="most consecutive faulted attempts in a run (default 2; 3 exhausts the 2 retries)")
    parser.add_argument("--max-sleep", type=float, default=MAX_SLEEP,
                        help=f"the longest back-off actually slept, in seconds (default {MAX_SLEEP:g})")
    parser.add_argument("--only", type=int, metavar="RUN", help="replay one run of --seed, with its details")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.seconds <= 0 or args.workers < 1 or args.max_in_a_row < 0 or args.max_sleep < 0:
        parser.error("--runs, --seconds and --workers must be positive, --max-in-a-row and --max-sleep at least 0")
    report = run_soak(args.runs, seed=args.seed, seconds=args.seconds, workers=args.workers,
                      counts=fault_counts(args.max_in_a_row), max_sleep=args.max_sleep, only=args.only,
                      progress=True)
    if args.only is not None:
        for result in report.results:
            print(result.plan.describe())
            print(f"  attempts {result.attempts}, retries {result.retries}, re-asked {result.reasked}, "
                  f"ok {result.ok}")
            for answer in result.answers:
                print(f"  answer: {answer!r}")
    print_report(report)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
