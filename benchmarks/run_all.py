"""Run every benchmark in this folder and print one table per benchmark.

    make bench            # or: python benchmarks/run_all.py [name ...]

Each `bench_*.py` module has `run() -> (title, rows)` where rows are dicts with the
same keys, and a `check(rows) -> list[str]` that returns the claims that failed.
Ratios are measured within one run, because these machines are noisy: never compare
absolute timings across runs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).parent


def table(rows: list[dict]) -> str:
    keys = list(rows[0])
    cells = [[str(r[k]) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths))  # noqa: E731
    return "\n".join([line(keys), line(["-" * w for w in widths])] + [line(c) for c in cells])


def main(names: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    modules = sorted(p.stem for p in HERE.glob("bench_*.py"))
    failures = []
    for name in modules:
        if names and not any(n in name for n in names):
            continue
        bench = importlib.import_module(name)
        title, rows = bench.run()
        print(f"\n## {title}\n\n{table(rows)}\n")
        for problem in bench.check(rows):
            failures.append(f"{name}: {problem}")
            print(f"CLAIM FAILED: {problem}")
    print("all claims hold" if not failures else f"{len(failures)} claim(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
