"""`python -m miniagent.mock --port N`: the mock API as a real HTTP server.

Point any client at it, e.g. `Anthropic(base_url="http://127.0.0.1:N", api_key="anything")`,
`OpenAI(base_url="http://127.0.0.1:N/v1", api_key="anything")` (Chat Completions, embeddings,
models: the same brain in OpenAI's shapes) or curl. The first line printed is `miniagent mock API listening on http://HOST:PORT`
(scripts read the port from it when started with `--port 0`); after that, one line
per request goes to stderr (method, path, status: never a header, so never a key).

With `--api-key`, the control endpoints (`/_mock/*`) need that key too, since the
server may listen on a shared network and its records hold everyone's requests.
`--flaky 0.2 --seed 7` makes one call in five fail with a 429 or a 529, in the same
pattern every run, never three in a row: live-mode notebooks meet transient errors.
`--first-token 0.5 --tokens-per-second 30` paces every answer like a real model's
(streamed: the events arrive as they become due; plain: the answer comes when the
stream would have ended), so latency can be felt; `x-mock-pace` overrides it per request.
The mock answers as the models of its catalog (`GET /v1/models` lists them; any other
name is the API's 404); `--model NAME` adds a name, e.g. one a workshop made up.
A web page may call the server directly if it sends `anthropic-dangerous-direct-browser-access:
true`, as the real API requires (see miniagent/mock/cors.py).
"""

from __future__ import annotations

import argparse
import json
import sys

from miniagent.mock.api import MockAPI
from miniagent.mock.models import DEFAULT_CATALOG, MODELS, RETIRED
from miniagent.mock.server import LISTENING, MockHTTPServer


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m miniagent.mock",
                                     description="A strict, deterministic offline mock of the Anthropic Messages API, "
                                                 "which speaks OpenAI's Chat Completions and embeddings too.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: pick a free one; default 0)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--api-key", action="append", dest="api_keys", metavar="KEY",
                        help="accept only this key (repeatable); default: any non-empty key")
    parser.add_argument("--script", metavar="FILE.json",
                        help='responses to queue: a JSON list, or {"responses": [...], "repeat": true}')
    parser.add_argument("--fail", type=int, default=0, metavar="N", help="fail the first N model calls (/v1/messages, /v1/chat/completions)")
    parser.add_argument("--fail-status", type=int, default=529, metavar="STATUS",
                        help="status for --fail (default 529 overloaded)")
    parser.add_argument("--flaky", type=float, default=0.0, metavar="RATE",
                        help="fail each API call (messages, count_tokens, chat completions, embeddings) with "
                             "probability RATE (0 to <1) with a 429 or 529 (OpenAI's 503 on its surfaces), never more "
                             "than 2 in a row (default 0: never)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the --flaky pattern (default 0)")
    parser.add_argument("--first-token", type=float, default=0.0, metavar="SECONDS",
                        help="pace answers: seconds before the first token (0 to 60; default 0)")
    parser.add_argument("--tokens-per-second", type=float, default=None, metavar="N",
                        help="pace answers: tokens per second after the first (above 0, at most 1000000; "
                             "default: all at once)")
    parser.add_argument("--model", action="append", dest="models", metavar="NAME",
                        help="also answer as this model name (repeatable); the catalog's models are always served")
    parser.add_argument("--strict-alternation", action="store_true",
                        help="reject consecutive same-role messages instead of merging them (the older API rule)")
    return parser


def build_mock(args: argparse.Namespace, parser: argparse.ArgumentParser) -> MockAPI:
    """The MockAPI the options describe; bad options end the program with a clear message."""
    try:
        added = [name for name in dict.fromkeys(args.models or ()) if DEFAULT_CATALOG.get(name) is None]
        models = [*MODELS, *RETIRED, *added] if added else None
        mock = MockAPI(api_keys=set(args.api_keys) if args.api_keys else None, models=models,
                       strict_alternation=args.strict_alternation, flaky=args.flaky, seed=args.seed,
                       pacing={"first": args.first_token, "rate": args.tokens_per_second})
        if args.script:
            with open(args.script, encoding="utf-8") as f:
                mock.script_json(json.load(f))
        if args.fail:
            mock.fault(args.fail_status, times=args.fail)
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        parser.error(str(exc))
    return mock


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    mock = build_mock(args, parser)
    try:
        server = MockHTTPServer((args.host, args.port), mock, log=sys.stderr)
    except OSError as exc:
        parser.error(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; try another --port")
    print(f"{LISTENING}{server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
