"""Run the contract probes (contract/probes.py): the mock, the real API when there is a key, llama.cpp's server.

    make contract                                   # the mock only, offline (what CI runs)
    python scripts/contract.py                      # + the real API if ANTHROPIC_API_KEY is set (asks first)
    python scripts/contract.py --live --yes         # the real API too, without asking (the weekly workflow)
    python scripts/contract.py --only cors -v       # the probes whose name or group contains "cors", verbosely
    python scripts/contract.py --llamacpp [URL]     # + llama.cpp's server (make contract LLAMACPP=1 or =URL)
    python scripts/contract.py --llamacpp URL --save-replies   # ... and save its replies for the tests
    python scripts/contract.py --replay             # + llama.cpp's saved replies (tests/data/contract-llamacpp.json)

Offline, every probe's observation of the mock must match what the probe expects (the
real API's answer as far as we know it). Live, the mock and the real API must match
each other; where the real API also differs from the expectation, the expectation is
reported as stale. Differences a probe marks as known (a deliberate difference of the
mock) and those of a pending probe (a feature the mock does not have yet) are printed
but do not fail the run. Exit status: 0 when nothing else differs, 1 otherwise, 2 when
the live run was refused or could not start.

With `--llamacpp`, every probe also runs against llama.cpp's server (the course's local model,
scripts/local_model.py: at URL; else at $MINIAGENT_LOCAL_PORT; else one started from the cached
local build for the run, and stopped; with none of these, exit status 2), and its observation is
compared with what the probe expects of the real API, as the mock's is offline. Probes observe
shapes, never the model's words. The differences llama.cpp is known to have are listed in one
table, LLAMACPP_KNOWN (probe name -> what llama.cpp does instead): printed as "known", they do not
fail the run; a difference in a probe not listed does. A listed probe that matches is printed as
"listed, matched" (where the tiny model's choice decides, as whether it calls a tool, it matches on
some runs; elsewhere the line may be out of date). The ones a miniagent client meets, and what it
does with each, are tests/test_client_llamacpp.py's, on the server's own bytes.

It is never part of a plain `make contract`: CI's MINIAGENT_OFFLINE=1 run stays the mock's, in a
second, because llama.cpp's answers are sampled (its Messages endpoint passes no seed on) and a run
takes about 5 minutes on 2 cores (the model rambles to max_tokens). Ask for it: `make contract
LLAMACPP=1` (or LLAMACPP=URL). MINIAGENT_OFFLINE=1 does not stop it: the server is on this machine.
`--save-replies` writes what llama.cpp answered (no key in it); `--replay` runs the llama.cpp part on
those replies, no server needed: tests/test_contract_llamacpp.py does, so the table stays true to them.

Live, it first says what the run may cost, from the probes' token counts and the model's
price, and asks before spending it, unless `--yes`. Refused requests (the validation
probes) are not billed. MINIAGENT_OFFLINE=1 keeps it offline whatever keys are set.
The key never appears in the output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import httpx2

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

LLAMACPP_MODEL = "smollm2-135m-instruct"  # what scripts/local_model.py names its model (--alias)
LLAMACPP_KEY = "sk-contract-llamacpp"     # llama.cpp's server takes any key unless started with --api-key
LLAMACPP_REPLIES = ROOT / "tests" / "data" / "contract-llamacpp.json"

# What llama.cpp's server (the build scripts/local_model.py pins, serving SmolLM2-135M-Instruct) does
# instead of what a probe expects of the real API: probe name -> one line. Printed as "known", never
# failing; a difference in a probe not listed fails the run. A line that says "may" depends on what the
# tiny model happens to say (a tool call or not): that probe matches on some runs.
_TAKEN = "answers 200: "
LLAMACPP_KNOWN: dict[str, str] = {
    # validation: the rules it does not enforce, and the error it gives instead where it gives one
    "missing max_tokens": _TAKEN + "no max_tokens means up to 4096 tokens",
    "missing messages": "500 server_error \"'messages' is required\": a bad request answered as the server's fault",
    "missing model": _TAKEN + "the model named is not read; the one loaded answers",
    "empty messages": _TAKEN + "an empty conversation is rendered and answered",
    "unknown top-level field": _TAKEN + "fields it does not know are ignored",
    "unknown field in a block": _TAKEN + "fields it does not know are ignored, in blocks too",
    "max_tokens over the model's limit": _TAKEN + "no output limit per model (the context is the limit)",
    "negative max_tokens": _TAKEN + "a negative max_tokens means no limit",
    "message with empty content": _TAKEN + "a message without content is rendered empty",
    "empty text block": _TAKEN + "an empty text block is taken",
    "whitespace-only text": _TAKEN + "a blank text block is taken",
    "unanswered tool_use": _TAKEN + "tool_use and tool_result are not paired up",
    "tool_result for an unknown id": _TAKEN + "a tool_result's id is not checked",
    "tool_result after text": _TAKEN + "the order of tool_result blocks is not checked",
    "duplicate tool names": _TAKEN + "tool names are not checked",
    "bad tool name": _TAKEN + "tool names are not checked",
    "tool name too long": _TAKEN + "tool names are not checked",
    "tool_choice names no tool": _TAKEN + "a forced choice becomes `required` (any tool), its name is not read",
    "temperature above 1": _TAKEN + "temperature is not bounded at 1",
    "temperature and top_p": _TAKEN + "takes both",
    "temperature on 2026-10-21": _TAKEN + "anthropic-version is not read",
    "count_tokens with max_tokens": _TAKEN + "count_tokens ignores fields it does not know",
    "invalid JSON": "400 invalid_request_error in its parser's words: `[json.exception.parse_error.101] ...`",
    "missing anthropic-version": _TAKEN + "anthropic-version is not read",
    "unknown anthropic-version": _TAKEN + "anthropic-version is not read",
    "unknown anthropic-beta": _TAKEN + "anthropic-beta is not read",
    "no API key": _TAKEN + "no key is asked for (only a server started with --api-key checks one)",
    "wrong API key": _TAKEN + "no key is checked (only a server started with --api-key checks one)",
    "unknown model": _TAKEN + "any model name is answered by the model loaded",
    "retired model": _TAKEN + "any model name is answered by the model loaded",
    "unknown model, count_tokens": _TAKEN + "any model name is counted with the model loaded",
    "unknown path": "404 not_found_error `File Not Found`",
    # answers
    "a plain message": "usage has no cache_creation_input_tokens or service_tier; the model may ramble to max_tokens",
    "a tool round trip": "the model may answer in text without calling the tool (a 135M model rarely calls one)",
    "the streaming event sequence": "message_start's usage has no cache_creation_input_tokens or service_tier",
    "a streamed tool call": "the model may call no tool; message_start's usage has no cache_creation_input_tokens "
                            "or service_tier",
    "a tool call's first JSON delta": "the model may call no tool, and then no input_json_delta comes",
    "structured output": "output_config is ignored: the answer is free text, not JSON to the schema",
    "prompt caching usage": "caches every prompt itself: the first call may already read the cache, none is "
                            "reported written; usage has no cache_creation_input_tokens nor cache_creation",
    "adaptive thinking": "thinking {type: adaptive} is ignored (it reads only `enabled`): no thinking block",
    # tool_choice, request ids, streams in Chinese
    "tool_choice tool forces that tool": "not forced: `tool` becomes `required`, which the server does not enforce "
                                         "here; the model may answer in text (to max_tokens)",
    "tool_choice any forces a call": "not forced: the model may answer in text (to max_tokens)",
    "tool_choice none forbids a call": "`none` is dropped (read as auto): the model may call the tool",
    "disable_parallel_tool_use": "not passed on, and `any` does not force: the model may make no call, or two",
    "a request-id header": "sends no request-id header (nor x-request-id)",
    "a streamed answer in Chinese": "may begin without message_start (when its first token is not a whole UTF-8 "
                                    "character; the client accepts it: streaming.UNSTARTED)",
    # models
    "listing models": "one page of its own shape ({models, object, data}, no first_id/last_id/has_more; items "
                      "without display_name or created_at); limit is ignored",
    "one model": "404 `File Not Found`: no /v1/models/{id} route",
    "an unknown model's info": "404 not_found_error `File Not Found`: no /v1/models/{id} route",
    # browsers
    "a browser's request, allowed": "echoes the Origin in access-control-allow-origin; no "
                                    "access-control-expose-headers",
    "a browser's request, not allowed": _TAKEN + "no anthropic-dangerous-direct-browser-access asked for; the "
                                                  "Origin echoed",
    "a preflight": "200, not 204; echoes the Origin in access-control-allow-origin",
    # message threads
    "a tool round on a message thread": "`thread` is ignored (nothing held, no thread errors); the model may not "
                                        "call the tool, and the probe stops there",
    "a thread with thinking": _TAKEN + "`thread` is ignored, so nothing is unsupported",
}


class Reply:
    def __init__(self, status: int, headers: httpx2.Headers, text: str) -> None:
        self.status, self.headers, self.text = status, headers, text
        self._events: list[dict] | None = None

    @classmethod
    def of(cls, response: httpx2.Response) -> "Reply":
        return cls(response.status_code, response.headers, response.text)

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
    """One API to probe: `send()` fills in the model and the default headers, and retries a busy API
    (`retry`: the statuses that mean busy; llama.cpp's 500 means a request it could not take, so none).
    With `saved` (a list), every exchange is appended to it, for `--save-replies`."""

    def __init__(self, name: str, client: httpx2.Client | None, key: str, model: str, run_id: str,
                 retry: tuple[int, ...] = RETRY_STATUSES, saved: list | None = None) -> None:
        self.name, self.client, self.key, self.model, self.run_id = name, client, key, model, run_id
        self.retry, self.saved = retry, saved

    def send(self, method: str, path: str, body: Any = None, headers: dict[str, str | None] | None = None,
             auth: bool = True) -> Reply:
        merged: dict[str, str | None] = {"x-api-key": self.key if auth else None, "anthropic-version": VERSION}
        if body is not None:
            merged["content-type"] = "application/json"
        merged.update(headers or {})
        sent = {k: v for k, v in merged.items() if v is not None}
        content = body if isinstance(body, bytes) else None if body is None else json.dumps(fill(body, self.model))
        reply = self.exchange(method, fill(path, self.model), content, sent)
        if self.saved is not None:
            self.saved.append({"key": exchange_key(method, fill(path, self.model), content, sent, self.key),
                               "status": reply.status, "headers": dict(reply.headers), "text": reply.text})
        return reply

    def exchange(self, method: str, path: str, content: bytes | str | None, headers: dict[str, str]) -> Reply:
        assert self.client is not None
        for attempt in range(4):
            try:
                response = self.client.request(method, path, content=content, headers=headers)
            except httpx2.RemoteProtocolError:
                # a kept-alive connection the server had closed (llama.cpp's, after some streams): once more,
                # on a new connection, as every client does
                response = self.client.request(method, path, content=content, headers=headers)
            if response.status_code not in self.retry or attempt == 3:
                return Reply.of(response)
            time.sleep(min(float(response.headers.get("retry-after") or 2 ** attempt), 30.0))
        raise AssertionError("unreachable")


def exchange_key(method: str, path: str, content: bytes | str | None, headers: dict[str, str], key: str) -> str:
    """What identifies a request among a run's: method, path, body and the headers sent (the key itself
    written as "<key>", so that none is saved)."""
    body = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
    shown = sorted((k, "<key>" if v == key else v) for k, v in headers.items())
    return json.dumps([method, path, body, shown], ensure_ascii=False)


class Replayed(Target):
    """A target answered from saved replies (`--save-replies`), not a server: each request gets the
    reply saved for the same request (in the order saved, when it was sent more than once); a request
    never saved gets a 599 whose message says so."""

    def __init__(self, name: str, saved: dict, key: str = "") -> None:
        super().__init__(name, None, key or saved["key"], saved["model"], saved["run_id"])
        self.replies: dict[str, list[dict]] = {}
        self.missing: list[str] = []  # the requests no saved reply answered
        for entry in saved["exchanges"]:
            self.replies.setdefault(entry["key"], []).append(entry)

    def exchange(self, method: str, path: str, content: bytes | str | None, headers: dict[str, str]) -> Reply:
        waiting = self.replies.get(exchange_key(method, path, content, headers, self.key)) or []
        if not waiting:
            self.missing.append(f"{method} {path}")
            return Reply(599, httpx2.Headers({"content-type": "application/json"}), json.dumps(
                {"error": {"type": "not_saved", "message": f"no saved reply for {method} {path}: save them again"}}))
        entry = waiting.pop(0)
        return Reply(entry["status"], httpx2.Headers(entry["headers"]), entry["text"])


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
    except (httpx2.HTTPError, ValueError, KeyError, TypeError, IndexError) as exc:
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


def run_llamacpp(probes: list[Probe], target: Target, verbose: bool) -> dict[str, int]:
    """Every probe against llama.cpp's server, compared with what it expects of the real API; the
    differences LLAMACPP_KNOWN lists are printed as known. Returns the counts ("FAIL" among them)."""
    counts = {"ok": 0, "known": 0, "listed, matched": 0, "FAIL": 0}
    probes = [p for p in probes if not p.openai]  # its Messages endpoint: the Responses API's probes are not for it
    print(f"\nllama.cpp ({target.model}): {len(probes)} probes, compared with what each expects of the real API")
    started, group = time.monotonic(), None
    for probe in probes:
        if probe.group != group:
            group = probe.group
            print(f"\n{group}")
        expected = fill(probe.expect, target.model)
        began = time.monotonic()
        seen = observe(probe, target)
        took = f"  [{time.monotonic() - began:.0f} s]" if target.client is not None else ""
        diffs = differences(expected, seen, list(expected) + [k for k in seen if k == "crashed"])
        why = LLAMACPP_KNOWN.get(probe.name, "")
        status = ("known" if why else "FAIL") if diffs else ("listed, matched" if why else "ok")
        counts[status] += 1
        print(f"  {status:<15} {probe.name}{took}" + (f"  ({why})" if why else ""))
        if diffs and (status == "FAIL" or verbose):
            for d in diffs:
                print(f"      {d.key}: expected {short(d.left)}, llama.cpp {short(d.right)}")
        if verbose:
            print(f"      observed (llama.cpp): {short(seen, 2000)}")
    print(f"\nllama.cpp: {counts['ok']} ok, {counts['known']} with known differences, {counts['listed, matched']} "
          f"listed as known but matching this time, {counts['FAIL']} failing ({time.monotonic() - started:.0f} s)")
    return counts


def llamacpp_target(url: str, run_id: str, saved: list | None) -> Target:
    return Target("llama.cpp", httpx2.Client(base_url=url, timeout=600), os.environ.get("LLAMACPP_API_KEY") or
                  LLAMACPP_KEY, os.environ.get("MINIAGENT_LLAMACPP_MODEL") or LLAMACPP_MODEL, run_id, retry=(),
                  saved=saved)


@contextlib.contextmanager
def llamacpp_server(url: str) -> Iterator[str | None]:
    """The server's URL: `url`, else one already up at MINIAGENT_LOCAL_PORT, else one started from the
    cached build for the run (scripts/local_model.py); None when there is none."""
    port = os.environ.get("MINIAGENT_LOCAL_PORT", "").strip()
    if url or port:
        yield url or f"http://127.0.0.1:{port}"
        return
    sys.path.append(str(ROOT / "scripts"))
    import local_model
    if not (local_model.server_path().exists() and local_model.model_path().exists()):
        yield None
        return
    with local_model.serving() as started:
        yield f"http://127.0.0.1:{started}"


def save_replies(path: Path, target: Target, url: str) -> None:
    head = {"saved": time.strftime("%Y-%m-%d"), "server": url, "model": target.model, "run_id": target.run_id,
            "key": LLAMACPP_KEY}
    lines = ",\n".join(json.dumps(e, ensure_ascii=False) for e in target.saved or [])  # one exchange a line
    path.write_text(json.dumps(head, ensure_ascii=False)[:-1] + ', "exchanges": [\n' + lines + "\n]}\n")
    print(f"contract: {len(target.saved or [])} replies of llama.cpp saved in {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="probe the real API too (needs ANTHROPIC_API_KEY)")
    parser.add_argument("--offline", action="store_true", help="the mock only, even with a key set")
    parser.add_argument("--yes", action="store_true", help="do not ask before spending money live")
    parser.add_argument("--model", default=os.environ.get("MINIAGENT_MODEL") or DEFAULT_MODEL,
                        help=f"the model the probes name (default: $MINIAGENT_MODEL or {DEFAULT_MODEL})")
    parser.add_argument("--only", default="", help="run only the probes whose name or group contains this text")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every probe's observations")
    parser.add_argument("--llamacpp", nargs="?", const="", metavar="URL",
                        help="also llama.cpp's server at URL (default: the one at $MINIAGENT_LOCAL_PORT, else one "
                             "started from the cached local build), against what the probes expect of the real API")
    parser.add_argument("--save-replies", type=Path, metavar="FILE", nargs="?", const=LLAMACPP_REPLIES,
                        help=f"with --llamacpp: save its replies (default {LLAMACPP_REPLIES.relative_to(ROOT)})")
    parser.add_argument("--replay", type=Path, metavar="FILE", nargs="?", const=LLAMACPP_REPLIES,
                        help="the llama.cpp part on saved replies instead of a server (what the tests do)")
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
    mock = Target("mock", httpx2.Client(transport=MockAPI(api_keys={MOCK_KEY}).transport(), base_url="http://mock",
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
            real = Target("real", httpx2.Client(base_url=base_url, timeout=120), key, args.model, run_id)

    where = f"the mock and the real API ({args.model})" if real else f"the mock ({args.model}), offline"
    print(f"contract: {len(probes)} probes, {where}")
    report, failed, group = Report(args.verbose), 0, None
    for probe in probes:
        if probe.group != group:
            group = probe.group
            print(f"\n{group}")
        expected = fill(probe.expect, args.model)
        seen_mock = observe(probe, mock)
        if real is None or probe.openai:  # offline; or a probe of OpenAI's API, which the live run does not reach
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
    if args.replay is not None:
        replayed = Replayed("llama.cpp", json.loads(args.replay.read_text()))
        failed += run_llamacpp(probes, replayed, args.verbose)["FAIL"]
        if replayed.missing:
            failed += 1
            print(f"contract: {len(replayed.missing)} requests have no saved reply in {args.replay} (a probe new or "
                  f"changed since): save them again with --llamacpp --save-replies")
    elif args.llamacpp is not None:
        with llamacpp_server(args.llamacpp) as url:
            if url is None:
                print("contract: no llama.cpp server: give its URL (--llamacpp URL), set MINIAGENT_LOCAL_PORT, or "
                      "build the local one first (make local-model)")
                return 2
            target = llamacpp_target(url, run_id, [] if args.save_replies else None)
            try:
                health = target.client.get("/health", timeout=10).status_code
            except httpx2.HTTPError as exc:
                health = f"{type(exc).__name__}: {exc}"
            if health != 200:
                print(f"contract: llama.cpp's server at {url} is not ready (/health: {health})")
                return 2
            try:
                failed += run_llamacpp(probes, target, args.verbose)["FAIL"]
            finally:
                target.client.close()
            if args.save_replies:
                save_replies(args.save_replies, target, url)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
