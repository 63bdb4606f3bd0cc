"""Parallel vs serial tool execution: the demo question's four calls, each 0.3 s slow.

The claims (notebook 03, and the article's section 4.2): running one response's tool
calls concurrently costs the slowest call instead of the sum, so four 0.3 s tools
finish in under 0.45 s of wall time in parallel; and that at least halves the
latency of running them one after another (the article's "halves").
"""

from __future__ import annotations

import time

from claims import Claim
from miniagent.builtin_tools import default_tools
from miniagent.tools import Tool, ToolRegistry

LATENCY = 0.3
MAX_PARALLEL = 0.45  # seconds: the slowest call plus overhead, far below the sum (1.2 s)
MIN_SPEEDUP = 2.0
CALLS = [
    {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}},
    {"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {"expression": "(1024 + 768) * 2"}},
    {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {"city": "北京"}},
    {"type": "tool_use", "id": "toolu_4", "name": "get_weather", "input": {"city": "上海"}},
]


def slow(tool: Tool) -> Tool:
    def fn(**arguments):
        time.sleep(LATENCY)  # stands in for a network round trip
        return tool.fn(**arguments)
    return Tool(tool.name, tool.description, tool.input_schema, fn)


def measure(registry: ToolRegistry, parallel: bool, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        results = registry.run_all(CALLS, parallel=parallel)
        best = min(best, time.perf_counter() - started)
        assert not any(r.get("is_error") for r in results), results
    return best


def run() -> tuple[str, list[dict], list[Claim]]:
    registry = ToolRegistry([slow(t) for t in default_tools()])
    serial = measure(registry, parallel=False)
    parallel = measure(registry, parallel=True)
    rows = [{"mode": "serial", "wall_s": f"{serial:.3f}", "vs_serial": "1.00x"},
            {"mode": "parallel", "wall_s": f"{parallel:.3f}", "vs_serial": f"{serial / parallel:.2f}x faster"}]
    claims = [
        Claim("the slowest, not the sum", f"{len(CALLS)} calls of {LATENCY} s took {parallel:.3f} s in parallel",
              f"under {MAX_PARALLEL} s", parallel < MAX_PARALLEL),
        Claim("parallel halves latency", f"serial took {serial:.3f} s, parallel {serial / parallel:.2f}x less",
              f"at least {MIN_SPEEDUP:g}x", serial / parallel >= MIN_SPEEDUP),
    ]
    return f"Tool execution: {len(CALLS)} calls of {LATENCY} s each (best of 3)", rows, claims
