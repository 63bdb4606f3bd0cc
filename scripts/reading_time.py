"""How long each notebook takes to work through, estimated from its text: the README's timing guide.

    python scripts/reading_time.py          # a Markdown table

The estimate is deliberately simple, so anyone can check it:
- prose: 200 words a minute (technical English read with care, not skimmed);
- code: 10 lines a minute, to read a cell, run it and read what it printed;
- a diagram or a figure: a minute each;
- exercises: 5 minutes each, to try one honestly (more for a first-time programmer).
Reference-solution cells (tagged `solution`) are not counted: a learner opens them after.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS_A_MINUTE, LINES_A_MINUTE, PER_FIGURE, PER_EXERCISE = 200, 10, 1, 5


def estimate(path: Path) -> dict:
    nb = json.loads(path.read_text())
    words = lines = figures = exercises = 0
    in_exercises = False
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if "solution" in cell.get("metadata", {}).get("tags", []):
            continue
        if cell["cell_type"] == "markdown":
            in_exercises = in_exercises or "## Exercises" in text
            figures += text.count("```mermaid")
            if in_exercises:
                exercises += sum(1 for line in text.splitlines() if re.match(r"\d+\. |\*\*Exercise \d+", line))
            words += len(text.split())
        else:
            lines += sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))
            figures += sum(1 for out in cell.get("outputs", []) if "image/png" in out.get("data", {}))
    minutes = words / WORDS_A_MINUTE + lines / LINES_A_MINUTE + figures * PER_FIGURE + exercises * PER_EXERCISE
    return {"words": words, "code_lines": lines, "figures": figures, "exercises": exercises,
            "minutes": 5 * round(minutes / 5)}


def main() -> int:
    rows = [(p.stem, estimate(p)) for p in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))]
    print("| notebook | prose words | code lines | figures | exercises | about |")
    print("|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['words']:,} | {r['code_lines']} | {r['figures']} | {r['exercises']} | {r['minutes']} min |")
    total = sum(r["minutes"] for _, r in rows)
    print(f"| all | | | | | {total} min |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
