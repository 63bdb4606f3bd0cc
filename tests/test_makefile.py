"""The Makefile: every target defined once, listed once by `make help`, none silently overridden."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_make_prints_no_warnings():
    """GNU make warns "overriding recipe for target" when a target is defined twice; the first silently loses."""
    run = make("-n", "help")
    assert run.returncode == 0 and "warning" not in (run.stdout + run.stderr).lower(), run.stderr


def test_help_lists_each_target_once_and_each_listed_target_exists():
    listed = re.findall(r"^  make (\S+)", make("help").stdout, re.M)
    assert listed and len(listed) == len(set(listed)), listed
    defined = re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M)
    assert len(defined) == len(set(defined)), sorted(d for d in defined if defined.count(d) > 1)
    assert set(listed) <= set(defined)
    for name in ("lab", "test", "test-props", "test-live", "test-ui", "notebooks", "bench"):
        assert name in listed
