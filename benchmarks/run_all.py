"""Run every benchmark in this folder: one table per benchmark, and each claim it checks.

    make bench            # or: python benchmarks/run_all.py [name ...]

Each `bench_*.py` module has `run() -> (title, rows, claims)`: rows are dicts with the
same keys, claims are `claims.Claim`s (a name, what was measured, the bound, whether it
held). Every claim is printed under its table, held or not; the exit status is 1 if
any failed. Ratios are measured within one run, because these machines are noisy:
never compare absolute timings across runs.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


def table(rows: list[dict]) -> str:
    keys = list(rows[0])
    cells = [[str(r[k]) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    return "\n".join([line(keys), line(["-" * w for w in widths])] + [line(c) for c in cells])


def main(names: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    modules = sorted(p.stem for p in HERE.glob("bench_*.py"))
    checked, failures = 0, []
    chosen = [name for name in modules if not names or any(n in name for n in names)]
    started = time.monotonic()
    for number, name in enumerate(chosen, 1):
        print(f"[{number}/{len(chosen)}] {name} (after {time.monotonic() - started:.0f} s)...", file=sys.stderr, flush=True)
        title, rows, claims = importlib.import_module(name).run()
        print(f"\n## {title}\n\n{table(rows)}\n\nclaims:")
        for claim in claims:
            print(f"  {claim}")
            checked += 1
            if not claim.holds:
                failures.append(f"{name}: {claim.name}")
    print(f"\nall {checked} claims hold" if not failures else
          f"\n{len(failures)} of {checked} claims failed: {'; '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
