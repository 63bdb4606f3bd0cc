"""Does every notebook still run on every backend? Run them, and write the ledger that says so.

    python scripts/still_runs.py run llamacpp                 # every notebook, live on the local model
    python scripts/still_runs.py run as-deepseek --notebooks 00,01,05
    python scripts/still_runs.py run all-presets              # the mock posing as each provider preset
    python scripts/still_runs.py ledger                       # docs/still-runs.md from docs/still-runs/*.json
    python scripts/still_runs.py real                         # make test-real: the local model, every preset, the ledger
    python scripts/still_runs.py eval llamacpp                # make eval on a backend, its totals into the ledger
    python scripts/still_runs.py backends                     # the backends and what each one is
    MINIAGENT_LOCAL_PORT=8080 python scripts/still_runs.py run llamacpp --notebooks 02   # a server already up

The saved outputs are made offline and nbval compares them, so a live run cannot be
compared; what it can show is that nothing breaks. A run executes each notebook top to
bottom in a fresh kernel, as a learner would with the backend's settings, and records
for each: clean, or which cells raised and what (cells tagged `raises-exception` may);
whether it said the mode it ran in; its seconds; and that no API key appears in any
output. Each backend's results go to docs/still-runs/BACKEND.json, with the versions it
used; `ledger` joins them into one dated table, notebook by backend.

Backends:
- `mock`: offline, the mock in-process (what `make test` checks output by output);
- `mock-http`: live code paths against the mock over HTTP, a fifth of its answers 429 or 529;
- `as-PRESET` (every preset of `miniagent.providers.PRESETS` but the local servers): the mock
  over HTTP posing as that provider, with its model name and its auth header, at its path
  (/v1/messages or /v1/chat/completions), so every preset's route is proven offline;
- `llamacpp`, `llamacpp-openai`: a real model, SmolLM2-135M served by llama.cpp
  (scripts/local_model.py), over the Messages API and over Chat Completions;
- `anthropic`, `deepseek`: the real APIs, when ANTHROPIC_API_KEY / DEEPSEEK_API_KEY is set.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "still-runs"
LEDGER = ROOT / "docs" / "still-runs.md"
CANARY = "sk-still-runs-canary-0123456789abcdef"  # the key every mock-backed run uses: it must appear nowhere
CELL_SECONDS = 900  # one cell, at most: a local model on a loaded CI machine is slow, not broken
sys.path.insert(0, str(ROOT / "scripts"))


# --- the backends ---------------------------------------------------------------------------------


def presets() -> dict:
    from miniagent.providers import PRESETS

    return PRESETS


def backends() -> dict[str, str]:
    """Every backend's name, and what it is."""
    found = {"mock": "the mock, in-process (offline)",
             "mock-http": "the mock over HTTP, a fifth of its answers 429 or 529 (live code paths)"}
    for name, preset in presets().items():
        if not name.startswith(("llamacpp", "ollama", "vllm")):
            found[f"as-{name}"] = f"the mock posing as {name} ({'Messages' if preset.format == 'anthropic' else 'Chat Completions'}, model {preset.model or 'default'})"
    found["llamacpp"] = "SmolLM2-135M on llama.cpp's server, the Messages API"
    found["llamacpp-openai"] = "SmolLM2-135M on llama.cpp's server, Chat Completions"
    found["anthropic"] = "the Anthropic API (needs ANTHROPIC_API_KEY)"
    found["deepseek"] = "DeepSeek's Anthropic-compatible API (needs DEEPSEEK_API_KEY)"
    return found


def _key_free_environment() -> dict[str, str]:
    """Ours, without any provider's key, address or choice: each backend says its own."""
    names = {p.key_env for p in presets().values() if p.key_env} | {p.base_env for p in presets().values() if p.base_env}
    names |= {"MINIAGENT_OFFLINE", "MINIAGENT_PROVIDER", "MINIAGENT_MODEL", "MINIAGENT_BASE_URL"}
    return {k: v for k, v in os.environ.items() if k not in names}


@contextlib.contextmanager
def backend(name: str) -> Iterator[tuple[dict[str, str], dict]]:
    """(the environment the notebooks run with, what was used) while the backend is up."""
    from miniagent.mock import serve_in_subprocess

    env = _key_free_environment() | {"MPLBACKEND": "Agg"}
    if name == "mock":
        yield env | {"MINIAGENT_OFFLINE": "1"}, {"mode": "offline"}
        return
    if name == "mock-http" or name.startswith("as-"):
        preset_name = name[3:] if name.startswith("as-") else "anthropic"
        preset = presets()[preset_name]
        args = ["--flaky", "0.2", "--seed", "8"] if name == "mock-http" else []
        if preset.model:
            args += ["--model", preset.model]
        server, url = serve_in_subprocess(*args)
        try:
            base = url + ("/v1" if preset.format == "openai" else "")
            env |= {"MINIAGENT_PROVIDER": preset_name, "MINIAGENT_BASE_URL": base}
            if preset.key_env:
                env[preset.key_env] = CANARY
            yield env, {"mode": "live", "server": "python -m miniagent.mock " + " ".join(args), "base_url": base}
        finally:
            server.terminate()
            server.wait(10)
        return
    if name in ("llamacpp", "llamacpp-openai"):
        import local_model

        wire = "openai" if name.endswith("openai") else "anthropic"
        running = os.environ.get("MINIAGENT_LOCAL_PORT", "").strip()  # a server already up (`local_model.py serve`)
        serving = contextlib.nullcontext(int(running)) if running else local_model.serving(log=RESULTS / f"{name}.server.log")
        with serving as port:
            yield env | local_model.settings(port, wire), {
                "mode": "live", "model": local_model.MODEL_LABEL, "server": f"llama.cpp {local_model.build_key()}" + (
                    f", answers cut at {os.environ['MINIAGENT_LOCAL_MAX_TOKENS']} tokens, seed {REAL_SEED}"
                    if os.environ.get("MINIAGENT_LOCAL_MAX_TOKENS") else "")}
        return
    if name in ("anthropic", "deepseek"):
        key_env = "ANTHROPIC_API_KEY" if name == "anthropic" else "DEEPSEEK_API_KEY"
        if not os.environ.get(key_env):
            raise SystemExit(f"still_runs: the {name} backend needs {key_env}")
        yield env | {key_env: os.environ[key_env]} | ({"MINIAGENT_PROVIDER": "deepseek-anthropic"}
                                                     if name == "deepseek" else {}), {"mode": "live"}
        return
    raise SystemExit(f"still_runs: unknown backend {name!r}; the backends: {', '.join(backends())}")


# --- running the notebooks --------------------------------------------------------------------------


def notebooks(chosen: str | None) -> list[Path]:
    paths = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    if chosen:
        wanted = {n.strip().zfill(2) for n in chosen.split(",")}
        paths = [p for p in paths if p.name[:2] in wanted]
    return paths


def run_notebook(path: Path, env: dict[str, str], secret: str | None) -> dict:
    """Execute one notebook in a fresh kernel with `env`; what happened."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits the environment of this process
    started = time.monotonic()
    try:
        ExecutePreprocessor(timeout=CELL_SECONDS, kernel_name="python3", allow_errors=True,
                            extra_arguments=["--IPKernelApp.log_level=ERROR"]).preprocess(
            nb, {"metadata": {"path": str(path.parent)}})
        crashed = None
    except Exception as exc:  # noqa: BLE001 - a dead kernel or a cell past its time: that is the finding
        crashed = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
    finally:
        os.environ.clear()
        os.environ.update(saved)
    seconds = time.monotonic() - started
    failures, text = [], nbformat.writes(nb)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for number, cell in enumerate(code_cells, 1):
        allowed = "raises-exception" in cell.metadata.get("tags", [])
        for out in cell.get("outputs", []):
            if out.output_type == "error" and not allowed:
                failures.append({"cell": number, "error": f"{out.ename}: {out.evalue.splitlines()[0][:300] if out.evalue else ''}"})
    if crashed:
        failures.append({"cell": None, "error": crashed})
    first = next((o.text for c in code_cells for o in c.get("outputs", []) if o.output_type == "stream"), "")
    said = first.splitlines()[0] if first else ""
    leaked = bool(secret) and secret in text
    if leaked:
        failures.append({"cell": None, "error": "the API key appears in an output"})
    return {"notebook": path.name, "clean": not failures, "failures": failures, "seconds": round(seconds, 1),
            "mode_line": said[:200]}


def versions(used: dict) -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {**used, "miniagent": commit or "?", "python": platform.python_version(),
            "date": datetime.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores"}


def run(name: str, chosen: str | None, programs: bool = False) -> bool:
    RESULTS.mkdir(parents=True, exist_ok=True)
    paths = notebooks(chosen)
    with backend(name) as (env, used):
        secret = CANARY if name == "mock-http" or name.startswith("as-") else next(
            (env[k] for k in ("ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY") if env.get(k)), None)
        results = []
        print(f"still_runs: {len(paths)} notebooks on {name} ({backends().get(name, name)})", flush=True)
        for i, path in enumerate(paths, 1):
            result = run_notebook(path, env, secret)
            results.append(result)
            state = "clean" if result["clean"] else f"{len(result['failures'])} failure(s)"
            print(f"  [{i}/{len(paths)}] {path.name}: {state} in {result['seconds']:.0f} s", flush=True)
            for failure in result["failures"]:
                print(f"        cell {failure['cell']}: {failure['error']}", flush=True)
        ran = run_programs(env) if programs else []  # the programs' results
        for result in ran:
            state = "clean" if result["clean"] else result["failures"][0]["error"]
            print(f"  {result['program']}: {state} in {result['seconds']:.0f} s", flush=True)
    record = {"backend": name, "what": backends().get(name, name), "versions": versions(used), "results": results}
    if ran:
        record["programs"] = ran
    out = RESULTS / f"{name}.json"
    if chosen and out.exists():  # a partial run updates the notebooks it ran, keeps the others
        old = json.loads(out.read_text())
        done = {r["notebook"] for r in results}
        record["results"] = sorted([r for r in old["results"] if r["notebook"] not in done] + results,
                                   key=lambda r: r["notebook"])
        if not ran and old.get("programs"):
            record["programs"] = old["programs"]
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    clean = all(r["clean"] for r in results + ran)
    print(f"still_runs: {name}: {'every notebook ran clean' if clean else 'some notebooks failed'} ({out})")
    return clean


# --- the programs: the CLI, a streamed run, the served page's stream ---------------------------------


DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"  # the article's question (make demo)


def _program(name: str, command: list[str], env: dict[str, str], check) -> dict:
    """Run one command with the backend's settings; clean when it ends as `check(returncode, out, err)` says."""
    started = time.monotonic()
    try:
        done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=CELL_SECONDS)
        problem = check(done.returncode, done.stdout, done.stderr)
    except subprocess.TimeoutExpired:
        problem = f"still running after {CELL_SECONDS} s"
    return {"program": name, "clean": problem is None, "failures": [{"cell": None, "error": problem}] if problem else [],
            "seconds": round(time.monotonic() - started, 1)}


def _answered(code: int, out: str, err: str) -> str | None:
    """The CLI answered (0) or stopped early and said why (1); never a traceback."""
    if "Traceback" in err or code not in (0, 1):
        lines = [line for line in err.strip().splitlines() if line.strip()]
        return f"exit {code}: {lines[-1][:300] if lines else '(nothing on stderr)'}"
    return None if out.strip() or code == 1 else "exit 0 with no answer printed"


SERVED = """
import json, sys
import httpx2
from miniagent.serve import create_app, serve_in_thread
server, base = serve_in_thread(create_app(), port=int(sys.argv[1]))  # a taken port fails at once
events = []
with httpx2.stream("POST", f"{base}/chat/stream", json={"message": sys.argv[2]},
                  timeout=httpx2.Timeout(None, connect=10)) as reply:
    reply.raise_for_status()
    for line in reply.iter_lines():
        if line.startswith("event: "):
            events.append(line[7:])
server.should_exit = True
print(json.dumps(events))
"""


def _streamed_page(code: int, out: str, err: str) -> str | None:
    if code != 0:
        lines = [line for line in err.strip().splitlines() if line.strip()]
        return f"exit {code}: {lines[-1][:300] if lines else '(nothing on stderr)'}"
    events = json.loads(out.strip().splitlines()[-1])
    if not events or events[0] != "conversation" or events[-1] not in ("done", "error"):
        return f"the page's stream was {events[:3]}...{events[-2:]}: it must begin with conversation and end with done"
    return None if events[-1] == "done" else "the stream ended with an error event"


def run_programs(env: dict[str, str]) -> list[dict]:
    """The CLI demo (streamed, then not), and the served page's stream, on the backend of `env`."""
    import local_model

    python = sys.executable
    return [_program("the CLI demo, streamed", [python, "-m", "miniagent", "--verbose", DEMO], env, _answered),
            _program("the CLI, one answer at once", [python, "-m", "miniagent", "--no-stream", "What is 2 + 2?"], env,
                     _answered),
            _program("the served page's stream", [python, "-c", SERVED, str(local_model.free_port()), DEMO], env,
                     _streamed_page)]


# --- the evaluation (make eval) on a backend ----------------------------------------------------------

def evals_dir() -> Path:
    return RESULTS / "evals"


def run_eval(name: str) -> dict:
    """Both configurations of `make eval` (miniagent.evals, all 36 tasks) on a backend; the totals, recorded."""
    with backend(name) as (env, used):
        script = ("import json, sys\nfrom miniagent import evals\nfrom miniagent.client import connect\n"
                  "client = connect(quiet=True)\nout = {'model': client.model, 'reports': {}}\n"
                  "for name in ('precise', 'vague'):\n"
                  "    report = evals.run(evals.CONFIGS[name], client=client, progress=lambda done, of, row: print(\n"
                  "        f'  [{done}/{of}] {name}: {row.id} {\"pass\" if row.passed else \"FAIL\"} in {row.seconds:.1f} s',\n"
                  "        file=sys.stderr, flush=True))\n"
                  "    called = sum(1 for row in report.rows if row.tool_calls)\n"
                  "    out['reports'][name] = {**report.totals(), 'tasks_with_a_tool_call': called}\n"
                  "print(json.dumps(out))\n")
        print(f"still_runs: make eval's two configurations on {name}", flush=True)
        done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        if done.returncode:
            raise SystemExit(f"still_runs: the evaluation on {name} failed (exit {done.returncode})")
    record = {"backend": name, "what": backends().get(name, name), "versions": versions(used),
              **json.loads(done.stdout.strip().splitlines()[-1])}
    evals_dir().mkdir(parents=True, exist_ok=True)
    (evals_dir() / f"{name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return record


def eval_table() -> list[str]:
    records = [json.loads(p.read_text()) for p in sorted(evals_dir().glob("*.json"))]
    if not records:
        return []
    order = list(backends())
    records.sort(key=lambda r: order.index(r["backend"]) if r["backend"] in order else len(order))
    lines = ["", "## make eval on each backend", "",
             "The 36 graded tasks of notebook 13 (`python -m miniagent.evals`), both configurations. On the",
             "mock, the scripted brain decides what is called; on the local model, the model does, and a",
             "model of 135 million parameters rarely calls a tool at all: most of its tasks fail for that alone.", "",
             "| backend | model | config | passed | tasks that called a tool | input tokens | output tokens | cost (USD) | seconds | date |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for rec in records:
        for config, t in rec["reports"].items():
            cost = "unknown" if t["cost"] is None else f"{t['cost']:.4f}"
            lines.append(f"| `{rec['backend']}` | {rec['model']} | {config} | {t['passed']}/{t['tasks']} "
                         f"| {t['tasks_with_a_tool_call']}/{t['tasks']} | {t['input_tokens']:,.0f} | {t['output_tokens']:,.0f} "
                         f"| {cost} | {t['seconds']:.0f} | {rec['versions']['date']} |")
    return lines


# --- the ledger ---------------------------------------------------------------------------------------


def ledger() -> str:
    records = [json.loads(p.read_text()) for p in sorted(RESULTS.glob("*.json"))]
    order = list(backends())
    records.sort(key=lambda r: order.index(r["backend"]) if r["backend"] in order else len(order))
    names = sorted({r["notebook"][:2] for rec in records for r in rec["results"]} |
                   {p.name[:2] for p in notebooks(None)})
    lines = ["# Still runs: every notebook on every backend", "",
             "Generated by `python scripts/still_runs.py ledger` from the runs in `docs/still-runs/`; each run",
             "executes the notebooks top to bottom in a fresh kernel with that backend's settings. ✓ clean,",
             "✗ a cell raised (listed below), · not run on that backend. Offline, `make test` also compares",
             "every output with the saved one; live, a run can only show that nothing breaks. Two presets, one",
             "per wire format, run every notebook on the mock posing as them; the others run the notebooks",
             f"that reach a provider by hand or through its route ({ROUTE_NOTEBOOKS}), where presets differ.",
             "`make test-real` writes the local model's rows and the presets'; the weekly workflow",
             "(.github/workflows/still-runs.yml) the real APIs' rows, when their keys are secrets.", "",
             "| backend | " + " | ".join(names) + " | date | versions |",
             "|---|" + "---|" * len(names) + "---|---|"]
    details = []
    for rec in records:
        by = {r["notebook"][:2]: r for r in rec["results"]}
        marks = []
        for n in names:
            r = by.get(n)
            marks.append("·" if r is None else "✓" if r["clean"] else "✗")
            if r is not None and not r["clean"]:
                for f in r["failures"]:
                    details.append(f"- {rec['backend']}, {r['notebook']}, cell {f['cell']}: `{f['error'][:200]}`")
        v = rec["versions"]
        used = ", ".join(str(v[k]) for k in ("model", "server") if v.get(k)) or v.get("mode", "")
        seconds = sum(r["seconds"] for r in rec["results"])
        lines.append(f"| `{rec['backend']}` ({rec['what']}) | " + " | ".join(marks) +
                     f" | {v['date']} | miniagent {v['miniagent']}, Python {v['python']}; {used}; {seconds:.0f} s |")
    if details:
        lines += ["", "## What failed", "", *details]
    programs = [(rec["backend"], p) for rec in records for p in rec.get("programs", [])]
    if programs:
        lines += ["", "## Programs", "", "The command line and the web service, with the same settings as the notebooks.", "",
                  "| backend | program | result | seconds |", "|---|---|---|---|"]
        for name, p in programs:
            result = "✓" if p["clean"] else "✗ " + "; ".join(f["error"][:200] for f in p["failures"])
            lines.append(f"| `{name}` | {p['program']} | {result} | {p['seconds']:.0f} |")
    lines += eval_table()
    seconds_of = {rec["backend"]: {r["notebook"][:2]: r["seconds"] for r in rec["results"]} for rec in records}
    lines += ["", "## Seconds per notebook", "", "| backend | " + " | ".join(names) + " |",
              "|---|" + "---|" * len(names)]
    for rec in records:
        row = seconds_of[rec["backend"]]
        lines.append(f"| `{rec['backend']}` | " + " | ".join(f"{row[n]:.0f}" if n in row else "·" for n in names) + " |")
    return "\n".join(lines) + "\n"


# Every preset's route is proven offline by the mock posing as it. Two presets, one per format, run
# every notebook; the others run the notebooks that reach the provider by hand or through its route
# (01 and 06 by hand, 05 the agent, 08 the providers), which is where a preset can differ.
FULL_PRESETS = ("as-anthropic", "as-openai")
# The local model rambles to whatever max_tokens a request asks (1,024 by default: 10 s a call here);
# for make test-real the server cuts every answer at this many tokens (a cut answer is one more thing
# a real model does that the cells must cope with). make lab-local does not cut.
REAL_MAX_TOKENS = 256
REAL_SEED = 1  # the server samples with this seed, so that a run can be repeated (4 slots may still interleave)
ROUTE_NOTEBOOKS = "00,01,05,06,08"


def real() -> bool:
    """make test-real: every notebook and program on the local model (both formats for 08), then every
    preset's route on the mock posing as it; the ledger from what ran."""
    import local_model

    running = os.environ.get("MINIAGENT_LOCAL_PORT", "").strip()
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    serving = contextlib.nullcontext(int(running)) if running else local_model.serving(
        log=RESULTS / "llamacpp.server.log", max_tokens=REAL_MAX_TOKENS, seed=REAL_SEED)
    with serving as port:
        os.environ["MINIAGENT_LOCAL_PORT"] = str(port)  # one server for both formats and every run
        if not running:
            os.environ["MINIAGENT_LOCAL_MAX_TOKENS"] = str(REAL_MAX_TOKENS)  # for the record of the runs
        try:
            clean = [run("llamacpp", None, programs=True), run("llamacpp-openai", "08")]
        finally:
            if not running:
                os.environ.pop("MINIAGENT_LOCAL_PORT")
                os.environ.pop("MINIAGENT_LOCAL_MAX_TOKENS")
    for name in (b for b in backends() if b.startswith("as-")):
        clean.append(run(name, None if name in FULL_PRESETS else ROUTE_NOTEBOOKS))
    LEDGER.write_text(ledger())
    print(f"still_runs: wrote {LEDGER.relative_to(ROOT)} after {time.monotonic() - started:.0f} s")
    return all(clean)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/still_runs.py", description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    one = verbs.add_parser("run", help="run the notebooks on a backend (or all-presets)")
    one.add_argument("backend")
    one.add_argument("--notebooks", help="which, by number: 00,01,05 (default: all)")
    verbs.add_parser("ledger", help=f"write {LEDGER.relative_to(ROOT)} from the recorded runs")
    verbs.add_parser("backends", help="list the backends")
    evaluate = verbs.add_parser("eval", help="make eval's two configurations on a backend, recorded for the ledger")
    evaluate.add_argument("backend")
    verbs.add_parser("real", help="make test-real: the local model (notebooks and programs), every preset's route, the ledger")
    args = parser.parse_args(argv)
    if args.verb == "backends":
        for name, what in backends().items():
            print(f"{name:24} {what}")
        return 0
    if args.verb == "eval":
        run_eval(args.backend)
        LEDGER.write_text(ledger())
        return 0
    if args.verb == "real":
        return 0 if real() else 1
    if args.verb == "ledger":
        LEDGER.parent.mkdir(parents=True, exist_ok=True)
        LEDGER.write_text(ledger())
        print(f"still_runs: wrote {LEDGER.relative_to(ROOT)}")
        return 0
    chosen = [b for b in backends() if b.startswith("as-")] if args.backend == "all-presets" else [args.backend]
    clean = [run(name, args.notebooks) for name in chosen]
    return 0 if all(clean) else 1


if __name__ == "__main__":
    sys.exit(main())
