"""A claim a benchmark checks: its name, what was measured, the bound it must meet, and whether it held.

Printed by `make bench` under each table, one line per claim:

    ✓ window + truncation: spends 8.4% of the unmanaged session's input tokens (claim: at most 25%)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    name: str      # short and stable, e.g. "square law"
    measured: str  # the measurement in words, e.g. "twice the turns cost 3.82x the input tokens"
    expected: str  # the bound, e.g. "at least 3x (4x is the square)"
    holds: bool

    def __str__(self) -> str:
        return f"{'✓' if self.holds else '✗'} {self.name}: {self.measured} (claim: {self.expected})"
