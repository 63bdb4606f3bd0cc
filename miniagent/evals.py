"""Evaluation: run a suite of tasks against an agent configuration, grade them, compare configurations.

A change to a prompt, a tool description or a budget feels better after three questions
in a notebook; an eval says whether it *is* better, on tens of questions, every time.
The harness is small:

- a **task** (one entry of `data/evals/tasks.json`) is a question with graded checks:
  the tool `calls` that must be made (a name, and the argument values that matter),
  the `facts` the answer must contain (a string, or `{"regex": ...}`), `no_tools` for a
  question no tool should answer, and a `budget` (`max_tokens`, `max_calls`: model calls);
- a **config** is a name and what builds a fresh `Agent` for each task: a function
  `build(client) -> Agent`, or a dict of Agent settings (`system`, `tools`, `policy`,
  `token_budget`, `max_iterations`, `model`);
- `run(config, tasks)` runs every task, grades it (pass, or the reasons it failed:
  missing call, wrong argument, missing fact, over budget, did not finish) and records
  tokens, cost (`prices.cost`, per model response), wall seconds and model calls;
- a `Report` prints as a table; `compare(a, b)` puts two configurations side by side.

The two configurations shipped here differ in one thing only, the tools' descriptions
(names, schemas and functions are the same). The model picks a tool from its name and
description alone, so this is what a learner tunes first:

- `precise`: each description says what the tool covers and which everyday questions it
  answers ("whether to take an umbrella", "is it morning somewhere"), and lists the cities;
- `vague`: a first draft, one or two words ("Weather.", "Returns the time.", "Calculator.").

Precise descriptions answer more questions, and cost input tokens on every model call,
since every request carries them. Run `python -m miniagent.evals` to see both sides.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from miniagent.i18n import chinese_font, say
from miniagent.loop import DONE

TASKS_PATH = Path(__file__).parent / "data" / "evals" / "tasks.json"

PRECISE = {
    "get_weather": "Current weather for a city: the sky (sunny, cloudy, rain, snow, fog), the temperature in °C "
                   "and the wind. Use it whenever an answer depends on conditions outside: whether it is hot or "
                   "cold, whether to take an umbrella or a coat. Knows Beijing, Shanghai, Guangzhou, Shenzhen, "
                   "Hangzhou, Chengdu, London, Paris, New York and Tokyo (北京、上海、广州、深圳、杭州、成都、伦敦、"
                   "巴黎、纽约、东京); 冷不冷、热不热、要不要带伞。",
    "get_current_time": "The current date and clock reading in an IANA timezone (Asia/Shanghai by default; "
                        "Europe/London, America/New_York, Asia/Tokyo...). Use it for what hour or day it is, "
                        "whether it is morning or night somewhere, and today's date; 现在几点、今天几号、星期几。",
    "calculate": "Exact arithmetic: + - * / // % ** and parentheses. Use it for every sum, product, percentage, "
                 "discount or split of a bill instead of working numbers out in your head; 加减乘除、百分比、折扣。",
}
VAGUE = {"get_weather": "Weather.", "get_current_time": "Returns the time.", "calculate": "Calculator."}


def described(descriptions: dict[str, str]) -> Any:
    """The built-in tools with their descriptions replaced (same names, schemas and functions)."""
    from miniagent.builtin_tools import default_tools
    from miniagent.tools import ToolRegistry
    return ToolRegistry([dataclasses.replace(t, description=descriptions[t.name]) for t in default_tools()])


@dataclass
class Config:
    """A named way to build an agent: `build(client) -> Agent`, or a dict of Agent settings."""

    name: str
    build: Callable[[Any], Any] | dict

    def agent(self, client: Any) -> Any:
        if callable(self.build):
            return self.build(client)
        from miniagent.agent import Agent
        settings = dict(self.build)
        model = settings.pop("model", None)
        tools = settings.pop("tools", None)
        tools = tools() if callable(tools) else tools  # a factory: each task gets fresh tools
        return Agent(client, tools, create={"model": model} if model else None, **settings)


CONFIGS = {
    "precise": Config("precise", {"tools": lambda: described(PRECISE), "max_iterations": 6}),
    "vague": Config("vague", {"tools": lambda: described(VAGUE), "max_iterations": 6}),
}


def load_tasks(path: str | Path = TASKS_PATH) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))["tasks"]


# --- grading -----------------------------------------------------------------------------------------


def _same(expected: Any, actual: Any) -> bool:
    """Argument values match ignoring case and surrounding spaces ("paris" is "Paris")."""
    if isinstance(expected, str) and isinstance(actual, str):
        return expected.strip().casefold() == actual.strip().casefold()
    return expected == actual


def grade(task: dict, calls: list[dict], text: str, input_tokens: int, output_tokens: int,
          model_calls: int, stop: str = "end_turn") -> list[str]:
    """Why a task failed ([] if it passed), from what the run did: its tool calls
    ([{"name", "input"}]), its answer's text, its tokens, its model calls and why it stopped."""
    reasons = []
    if stop not in DONE:
        reasons.append(say("ev_unfinished", stop=stop))
    for want in task.get("calls", []):
        same_name = [c for c in calls if c["name"] == want["name"]]
        args = want.get("args", {})
        wanted = json.dumps(args, ensure_ascii=False)
        if not same_name:
            reasons.append(say("ev_missing_call", call=want["name"] + (f" {wanted}" if args else "")))
        elif not any(all(_same(v, (c.get("input") or {}).get(k)) for k, v in args.items()) for c in same_name):
            got = "; ".join(json.dumps(c.get("input"), ensure_ascii=False) for c in same_name)
            reasons.append(say("ev_wrong_argument", name=want["name"], wanted=wanted, got=got))
    if task.get("no_tools") and calls:
        reasons.append(say("ev_unexpected_call", names=", ".join(c["name"] for c in calls)))
    for fact in task.get("facts", []):
        if isinstance(fact, dict):
            if not re.search(fact["regex"], text):
                reasons.append(say("ev_missing_fact", fact=f"/{fact['regex']}/"))
        elif fact.casefold() not in text.casefold():
            reasons.append(say("ev_missing_fact", fact=repr(fact)))
    budget = task.get("budget", {})
    tokens = input_tokens + output_tokens
    if "max_tokens" in budget and tokens > budget["max_tokens"]:
        reasons.append(say("ev_over_tokens", n=tokens, limit=budget["max_tokens"]))
    if "max_calls" in budget and model_calls > budget["max_calls"]:
        reasons.append(say("ev_over_calls", n=model_calls, limit=budget["max_calls"]))
    return reasons


# --- running ----------------------------------------------------------------------------------------


@dataclass
class Row:
    """One task's outcome under one configuration."""

    id: str
    passed: bool
    reasons: list[str]
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = 0.0
    seconds: float = 0.0
    model_calls: int = 0
    tool_calls: list[dict] = field(default_factory=list)
    text: str = ""


@dataclass
class Report:
    """A configuration's results: one Row per task, and the totals."""

    config: str
    model: str
    rows: list[Row]

    @property
    def pass_rate(self) -> float:
        return sum(r.passed for r in self.rows) / len(self.rows) if self.rows else 0.0

    def total(self, attr: str) -> float:
        """The sum of one Row attribute ("input_tokens", "cost", "seconds", ...); a cost None counts as 0."""
        return sum(getattr(r, attr) or 0 for r in self.rows)

    def totals(self) -> dict[str, Any]:
        """Pass rate and the sums, as a dict (cost None when the price table lacks the model)."""
        priced = all(r.cost is not None for r in self.rows)
        return {"passed": sum(r.passed for r in self.rows), "tasks": len(self.rows), "pass_rate": self.pass_rate,
                **{k: self.total(k) for k in ("input_tokens", "output_tokens", "model_calls", "seconds")},
                "cost": self.total("cost") if priced else None}

    def table(self) -> str:
        t = self.totals()
        cost = "cost n/a" if t["cost"] is None else f"${t['cost']:.4f}"
        lines = [f"{self.config} ({self.model}): {t['passed']}/{t['tasks']} passed ({t['pass_rate']:.0%}),"
                 f" {t['input_tokens']} in + {t['output_tokens']} out tokens, {cost},"
                 f" {t['model_calls']} model calls, {t['seconds']:.2f} s",
                 f"{'task':<24} {'ok':<4} {'in':>6} {'out':>5} {'calls':>5} {'sec':>6}  why it failed"]
        for r in self.rows:
            lines.append(f"{r.id:<24} {'pass' if r.passed else 'FAIL':<4} {r.input_tokens:>6} {r.output_tokens:>5}"
                         f" {r.model_calls:>5} {r.seconds:>6.2f}  {'; '.join(r.reasons)}")
        return "\n".join(lines)

    def compare(self, other: "Report") -> str:
        return compare(self, other)


def run(config: Config | tuple[str, Any], tasks: list[dict] | None = None, client: Any = None,
        progress: Callable[[int, int, "Row"], Any] | None = None) -> Report:
    """Run every task, each with a fresh agent of `config`, and grade it. `client` defaults to `connect()`.
    `progress(done, total, row)` is called after each task (the command line prints a line per task)."""
    from miniagent.prices import cost
    if not isinstance(config, Config):
        config = Config(*config)
    if client is None:
        from miniagent.client import connect
        client = connect(quiet=True)
    rows, models = [], set()
    tasks = load_tasks() if tasks is None else tasks
    for task in tasks:
        agent = config.agent(client)
        model = agent.create.get("model") or client.model
        models.add(model)
        start = time.perf_counter()
        try:
            result = agent.run(task["question"])
            text, stop, usage = result.text, result.stop, result.usage
        except Exception as err:  # a failed task is a row, not the end of the run
            text, stop, usage = "", f"{type(err).__name__}: {err}", agent.usage
        seconds = time.perf_counter() - start
        calls = [{"name": e["name"], "input": e.get("input")} for e in agent.trace.of_type("tool_call")]
        prices = [cost(model, e["usage"]) for e in agent.trace.of_type("response") if e.get("usage")]
        reasons = grade(task, calls, text, usage.input_tokens, usage.output_tokens, usage.calls, stop)
        rows.append(Row(task["id"], not reasons, reasons, usage.input_tokens, usage.output_tokens,
                        None if None in prices else sum(prices), seconds, usage.calls, calls, text))
        if progress:
            progress(len(rows), len(tasks), rows[-1])
    return Report(config.name, ", ".join(sorted(models)) or client.model, rows)


def compare(a: Report, b: Report) -> str:
    """Two reports side by side, task by task, then the totals and the difference (b - a)."""
    theirs = {r.id: r for r in b.rows}
    verdict = lambda r: "-" if r is None else "pass" if r.passed else "FAIL"
    tokens = lambda r: r.input_tokens + r.output_tokens
    lines = [f"{'task':<24} {a.config:>9} {b.config:>9}   {'tokens':>6} {'tokens':>6} {'diff':>6}"]
    for r in a.rows:
        o = theirs.get(r.id)
        mark = "" if o is None or o.passed == r.passed else "  <-"
        lines.append(f"{r.id:<24} {verdict(r):>9} {verdict(o):>9}   {tokens(r):>6} {tokens(o) if o else '-':>6}"
                     f" {f'{tokens(o) - tokens(r):+d}' if o else '-':>6}{mark}")
    ta, tb = a.totals(), b.totals()
    lines += ["", f"{'total':<24} {a.config:>12} {b.config:>12} {'difference':>12}"]
    for label, key, fmt in [("pass rate", "pass_rate", "{:.1%}"), ("input tokens", "input_tokens", "{:.0f}"),
                            ("output tokens", "output_tokens", "{:.0f}"), ("cost (USD)", "cost", "{:.4f}"),
                            ("model calls", "model_calls", "{:.0f}"), ("seconds", "seconds", "{:.2f}")]:
        x, y = ta[key], tb[key]
        shown = [fmt.format(v) if v is not None else "n/a" for v in (x, y)]
        diff = "n/a" if x is None or y is None else ("+" if y >= x else "") + fmt.format(y - x)
        lines.append(f"{label:<24} {shown[0]:>12} {shown[1]:>12} {diff:>12}")
    return "\n".join(lines)


def plot(reports: list[Report], path: str | None = None) -> Any:
    """Pass rate and tokens per config, two bar charts side by side (matplotlib, imported here)."""
    import matplotlib.pyplot as plt
    names = [r.config for r in reports]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
    left.bar(names, [r.pass_rate * 100 for r in reports], color="tab:green")
    chinese = chinese_font()  # under MINIAGENT_LANG=zh with a font that has Chinese (else English, not empty boxes)
    left.set(ylabel="%", ylim=(0, 100))
    left.set_title("通过率" if chinese else "pass rate", fontfamily=chinese or None)
    right.bar(names, [r.total("input_tokens") + r.total("output_tokens") for r in reports], color="tab:blue")
    right.set_title("token（输入 + 输出）" if chinese else "tokens (input + output)", fontfamily=chinese or None)
    fig.tight_layout()
    if path:
        fig.savefig(path)
    return fig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m miniagent.evals", description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=sorted(CONFIGS),
                        help="a configuration to run (repeatable; default: precise and vague)")
    parser.add_argument("--tasks", default=str(TASKS_PATH), help="the task suite (JSON)")
    parser.add_argument("--plot", metavar="PNG", help="save a chart of pass rate and tokens per config")
    args = parser.parse_args(argv)
    from miniagent.client import connect
    client = connect(quiet=True)
    print(f"model: {client.model} ({getattr(client, 'mode', '?')})\n")
    tasks = load_tasks(args.tasks)
    names = args.config or ["precise", "vague"]
    started, total = time.monotonic(), len(tasks) * len(names)
    reports = []
    for number, name in enumerate(names):
        def shown(done: int, of: int, row: Row, name: str = name, before: int = number * len(tasks)) -> None:
            finished = before + done
            left = (time.monotonic() - started) / finished * (total - finished)
            print(f"  [{finished}/{total}] {name}: {row.id} {'pass' if row.passed else 'FAIL'} in {row.seconds:.1f} s"
                  + (f", about {left:.0f} s left" if finished < total else ""), file=sys.stderr, flush=True)
        reports.append(run(CONFIGS[name], tasks, client, progress=shown))
    print(file=sys.stderr)
    for report in reports:
        print(report.table(), end="\n\n")
    if len(reports) >= 2:
        print(compare(reports[0], reports[1]))
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        plot(reports, args.plot)
        print(f"\nchart: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
