"""Several agents and tracing: what delegation saves, what parallel specialists gain, what spans cost.

Notebooks 10 and 11 say three things; this measures each, offline, within one run:

- **context**: a specialist that reads a lot to say a little keeps the reading out of
  its parent's context. The same handbook question asked of one agent with the search
  tool, and of an orchestrator whose HR specialist has it: the parent's history,
  in estimated tokens. Claim: the orchestrator holds at most half of what the lone agent holds.
- **parallel**: specialists asked in one round run at once. Two specialists whose tools
  answer after `LATENCY` seconds, with `parallel=False` and `parallel=True`. Claim: at
  least 1.6x faster (2x is the ideal: two waits become one).
- **tracing**: recording spans costs little. The same orchestrator run with and without
  a tracer, alternating, medians compared. Claim: within 25% of the untraced run (an
  offline run is a few milliseconds, all overhead and no waiting; live, a model call of a
  second makes the same spans a rounding error).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from claims import Claim
from miniagent import retrieval, team
from miniagent.agent import Agent
from miniagent.builtin_tools import default_tools
from miniagent.client import connect
from miniagent.tokens import estimate_messages
from miniagent.tools import Tool
from miniagent.tracing import Tracer

QUESTION = "What is the weather in Paris and Tokyo, and what is 1299 * 0.85?"
HANDBOOK_QUESTION = "How many days of annual leave do I get each year?"
LATENCY = 0.1
RUNS = 15
MIN_SPEEDUP = 1.6
MAX_SHARE = 0.5
MAX_TRACING = 0.25


def slow(t: Tool, seconds: float) -> Tool:
    def run(**arguments):
        time.sleep(seconds)
        return t.fn(**arguments)
    return Tool(t.name, t.description, t.input_schema, run)


def specialists(llm, latency: float = 0.0) -> list[Agent]:
    tools = {t.name: (slow(t, latency) if latency else t) for t in default_tools()}
    return [Agent(llm, [tools["get_weather"]], name="weather_expert",
                  description="A weather specialist: knows the current weather and temperature of any city."),
            Agent(llm, [tools["calculate"]], name="math_expert",
                  description="A math specialist: calculates arithmetic, percentages and totals exactly.")]


def context(llm) -> tuple[int, int]:
    index = retrieval.build(Path(retrieval.__file__).parent / "data" / "docs" / "en")
    search = retrieval.search_tool(index, method="keyword")
    alone = Agent(llm, [search]).run(HANDBOOK_QUESTION)
    hr = Agent(llm, [search], name="hr_expert", description="An HR specialist: answers questions about the staff "
               "handbook (leave, sick days, expenses, payroll), citing it.")
    delegated = team.orchestrator(llm, [hr]).run(HANDBOOK_QUESTION)
    assert alone.ok and delegated.ok
    return estimate_messages(alone.messages), estimate_messages(delegated.messages)


def parallel_timings(llm) -> dict[bool, float]:
    timings = {}
    for parallel in (False, True):
        started = time.perf_counter()
        assert team.orchestrator(llm, specialists(llm, LATENCY), parallel=parallel).run(QUESTION).ok
        timings[parallel] = time.perf_counter() - started
    return timings


def tracing_timings(llm) -> tuple[float, float, int]:
    plain, traced, spans = [], [], 0
    for _ in range(RUNS):
        for kind in ("plain", "traced"):
            tracer = Tracer() if kind == "traced" else None
            boss = team.orchestrator(llm, specialists(llm), tracer=tracer)
            started = time.perf_counter()
            assert boss.run(QUESTION).ok
            (traced if tracer else plain).append(time.perf_counter() - started)
            spans = len(tracer) if tracer else spans
    return statistics.median(plain), statistics.median(traced), spans


def run() -> tuple[str, list[dict], list[Claim]]:
    llm = connect(offline=True, quiet=True)
    alone, delegated = context(llm)
    timings = parallel_timings(llm)
    plain, traced, spans = tracing_timings(llm)
    speedup = timings[False] / timings[True]
    share = delegated / alone
    overhead = traced / plain - 1
    rows = [
        {"measure": "parent's history, handbook question", "one agent": f"{alone:,} tokens",
         "with a specialist": f"{delegated:,} tokens", "ratio": f"{share:.0%}"},
        {"measure": f"two specialists, tools of {LATENCY} s", "one agent": f"{timings[False]:.3f} s (one after another)",
         "with a specialist": f"{timings[True]:.3f} s (at once)", "ratio": f"{speedup:.2f}x faster"},
        {"measure": f"orchestrator run, median of {RUNS}", "one agent": f"{plain * 1000:.1f} ms untraced",
         "with a specialist": f"{traced * 1000:.1f} ms with {spans} spans", "ratio": f"{overhead:+.0%}"},
    ]
    claims = [
        Claim("delegation keeps the parent small", f"the orchestrator's history is {share:.0%} of the lone agent's",
              f"at most {MAX_SHARE:.0%}", share <= MAX_SHARE),
        Claim("parallel specialists", f"{speedup:.2f}x faster than one after another",
              f"at least {MIN_SPEEDUP}x", speedup >= MIN_SPEEDUP),
        Claim("spans are cheap", f"a traced run took {overhead:+.0%} against an untraced one ({spans} spans)",
              f"at most +{MAX_TRACING:.0%}", overhead <= MAX_TRACING),
    ]
    return "Several agents and tracing", rows, claims
