"""Run the contract probes (contract/probes.py): the mock, and the real API when there is a key.

    make contract                                   # the mock only, offline (what CI runs)
    python scripts/contract.py                      # + the real API if ANTHROPIC_API_KEY is set (asks first)
    python scripts/contract.py --live --yes         # the real API too, without asking (the weekly workflow)
    python scripts/contract.py --only cors -v       # the probes whose name or group contains "cors", verbosely

Offline, every probe's observation of the mock must match what the probe expects (the
real API's answer as far as we know it). Live, the mock and the real API must match
each other; where the real API also differs from the expectation, the expectation is
reported as stale. Differences a probe marks as known (a deliberate difference of the
mock) and those of a pending probe (a feature the mock does not have yet) are printed
but do not fail the run. Exit status: 0 when nothing else differs, 1 otherwise, 2 when
the live run was refused or could not start.

Live, it first says what the run may cost, from the probes' token counts and the model's
price, and asks before spending it, unless `--yes`. Refused requests (the validation
probes) are not billed. MINIAGENT_OFFLINE=1 keeps it offline whatever keys are set.
The key never appears in the output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from contract.probes import PROBES, Probe, differences  # noqa: E402
from miniagent import DEFAULT_MODEL  # noqa: E402
from miniagent.mock import MockAPI  # noqa: E402

REAL_API = "https://api.anthropic.com"
VERSION = "2023-06-01"
MOCK_KEY = "sk-contract-mock-key"
RETRY_STATUSES = (429, 500, 529)
# US dollars per million tokens (input, output), from the models' pages; cache writes cost 1.25x input,
# which the estimate charges on all input, so it errs high. A model not listed is priced as the dearest.
PRICES = {"claude-haiku-5-5": (0.10, 0.50), "claude-sonnet-5-5": (2, 10), "claude-sonnet-5": (2, 10),
          "claude-opus-5-5": (4, 20), "claude-opus-5": (5, 25), "claude-fable-5-2": (8, 40),
          "claude-fable-5-1": (10, 50), "claude-fable-5": (10, 50), "claude-opus-4-8": (5, 25),
          "claude-opus-4-6": (5, 25), "claude-sonnet-4-6": (3, 15), "claude-haiku-4-5": (1, 5),
          "claude-opus-4-5": (5, 25)}
DEAREST = (10, 50)


class Reply:
    def __init__(self, response: httpx.Response) -> None:
        self.status, self.headers, self.text = response.status_code, response.headers, response.text
        self._events: list[dict] | None = None

    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def events(self) -> list[dict]:
        """The server-sent events' data, parsed (a block that is not JSON is left out)."""
        if self._events is None:
            self._events = []
            for block in self.text.replace("\r\n", "\n").split("\n\n"):
                data = "\n".join(line[5:].lstrip(" ") for line in block.split("\n") if line.startswith("data:"))
                try:
                    self._events.append(json.loads(data))
                except ValueError:
                    pass
        return self._events


class Target:
    """One API to probe: `send()` fills in the model and the default headers, and retries a busy API."""

    def __init__(self, name: str, client: httpx.Client, key: str, model: str, run_id: str) -> None:
        self.name, self.client, self.key, self.model, self.run_id = name, client, key, model, run_id

    def send(self, method: str, path: str, body: Any = None, headers: dict[str, str | None] | None = None,
             auth: bool = True) -> Reply:
        merged: dict[str, str | None] = {"x-api-key": self.key if auth else None, "anthropic-version": VERSION}
        if body is not None:
            merged["content-type"] = "application/json"
        merged.update(headers or {})
        sent = {k: v for k, v in merged.items() if v is not None}
        content = body if isinstance(body, bytes) else None if body is None else json.dumps(fill(body, self.model))
        for attempt in range(4):
            response = self.client.request(method, fill(path, self.model), content=content, headers=sent)
            if response.status_code not in RETRY_STATUSES or attempt == 3:
                return Reply(response)
            time.sleep(min(float(response.headers.get("retry-after") or 2 ** attempt), 30.0))
        raise AssertionError("unreachable")


def fill(value: Any, model: str) -> Any:
    """Put the model into "$MODEL" wherever it appears (bodies, paths, expectations)."""
    if isinstance(value, str):
        return value.replace("$MODEL", model)
    if isinstance(value, list):
        return [fill(v, model) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, model) for k, v in value.items()}
    return value


def observe(probe: Probe, target: Target) -> dict[str, Any]:
    try:
        return probe.run(target)
    except (httpx.HTTPError, ValueError, KeyError, TypeError, IndexError) as exc:
        return {"crashed": f"{type(exc).__name__}: {exc}"[:300]}


def estimate(probes: list[Probe], model: str) -> tuple[float, int, int, bool]:
    """(dollars at most, input tokens, output tokens, whether the price is known)."""
    tokens_in = sum(p.billed[0] for p in probes)
    tokens_out = sum(p.billed[1] for p in probes)
    price_in, price_out = PRICES.get(model, DEAREST)
    return (tokens_in * price_in * 1.25 + tokens_out * price_out) / 1e6, tokens_in, tokens_out, model in PRICES


def short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class Report:
    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.counts = {"ok": 0, "known": 0, "pending": 0, "now passes": 0, "FAIL": 0, "stale": 0}

    def probe(self, probe: Probe, diffs: list, stale: list, labels: tuple[str, str]) -> bool:
        """Print one probe's outcome; True if it fails the run."""
        failing = [d for d in diffs if not probe.why_known(d.key)]
        if probe.pending:
            status = "pending" if diffs else "now passes"
        elif failing:
            status = "FAIL"
        elif diffs:
            status = "known"
        else:
            status = "ok"
        self.counts[status] += 1
        note = f"  ({probe.pending})" if probe.pending and diffs else \
            "  (pending mark can go: " + probe.pending + ")" if probe.pending else ""
        print(f"  {status:<10} {probe.name}{note}")
        if status != "ok" or self.verbose:
            for d in diffs:
                why = probe.why_known(d.key)
                tag = f"known: {why}" if why else "differs"
                print(f"      {d.key}: {tag}")
                print(f"        {labels[0]:<9} {short(d.left)}\n        {labels[1]:<9} {short(d.right)}")
        for d in stale:
            self.counts["stale"] += 1
            print(f"      {d.key}: the real API differs from what the probe expects ({probe.evidence}): "
                  f"expected {short(d.left)}, real {short(d.right)}")
        return status == "FAIL"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="probe the real API too (needs ANTHROPIC_API_KEY)")
    parser.add_argument("--offline", action="store_true", help="the mock only, even with a key set")
    parser.add_argument("--yes", action="store_true", help="do not ask before spending money live")
    parser.add_argument("--model", default=os.environ.get("MINIAGENT_MODEL") or DEFAULT_MODEL,
                        help=f"the model the probes name (default: $MINIAGENT_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--only", default="", help="run only the probes whose name or group contains this text")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every probe's observations")
    args = parser.parse_args(argv)

    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    offline = args.offline or os.environ.get("MINIAGENT_OFFLINE", "").lower() in ("1", "true", "yes")
    live = (args.live or bool(key)) and not offline
    if live and not key:
        print("contract: --live needs ANTHROPIC_API_KEY; set it, or run without --live (the mock only)")
        return 2
    probes = [p for p in PROBES if args.only.lower() in (p.name + " " + p.group).lower()]
    if not probes:
        print(f"contract: no probe matches {args.only!r}")
        return 2
    run_id = time.strftime("%Y%m%dT%H%M%S")
    mock = Target("mock", httpx.Client(transport=MockAPI(api_keys={MOCK_KEY}).transport(), base_url="http://mock",
                                       timeout=30), MOCK_KEY, args.model, run_id)
    real = None
    if live:
        base_url = os.environ.get("ANTHROPIC_BASE_URL") or REAL_API
        dollars, tokens_in, tokens_out, priced = estimate(probes, args.model)
        print(f"contract: live against {base_url} as {args.model}: {len(probes)} probes, at most about "
              f"{tokens_in:,} input and {tokens_out:,} output tokens, about ${dollars:.2f}"
              + ("" if priced else " (price of this model unknown: priced as the dearest)"))
        if not args.yes:
            if not sys.stdin.isatty():
                print("contract: not confirmed (no terminal to ask; pass --yes): probing the mock only")
                live = False
            elif input(f"Spend up to ${dollars:.2f} on the real API? [y/N] ").strip().lower() not in ("y", "yes"):
                print("contract: not confirmed: probing the mock only")
                live = False
        if live:
            real = Target("real", httpx.Client(base_url=base_url, timeout=120), key, args.model, run_id)

    where = f"the mock and the real API ({args.model})" if real else f"the mock ({args.model}), offline"
    print(f"contract: {len(probes)} probes, {where}")
    report, failed, group = Report(args.verbose), 0, None
    for probe in probes:
        if probe.group != group:
            group = probe.group
            print(f"\n{group}")
        expected = fill(probe.expect, args.model)
        seen_mock = observe(probe, mock)
        if real is None:
            keys = list(expected) + [k for k in seen_mock if k == "crashed"]
            failed += report.probe(probe, differences(expected, seen_mock, keys), [], ("expected", "mock"))
        else:
            seen_real = observe(probe, real)
            shown = {d.key for d in differences(seen_mock, seen_real)}
            # the expectation is stale where the mock and the real API agree with each other, not with it
            stale = [d for d in differences(expected, seen_real, list(expected))
                     if d.key not in shown and not probe.why_known(d.key)]
            failed += report.probe(probe, differences(seen_mock, seen_real), stale if not probe.pending else [],
                                   ("mock", "real"))
        if args.verbose:
            print(f"      observed (mock): {short(seen_mock, 2000)}")
    for target in (mock, real):
        if target is not None:
            target.client.close()
    c = report.counts
    print(f"\ncontract: {c['ok']} ok, {c['known']} with known differences, {c['pending']} pending, "
          f"{c['now passes']} pending but passing, {c['FAIL']} failing"
          + (f", {c['stale']} expectations the real API contradicts" if real else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
