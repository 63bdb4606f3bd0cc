"""`python -m miniagent "question"`: the full agent in a terminal.

Offline (the bundled mock) unless ANTHROPIC_API_KEY is set; `--offline` and `--live`
force one or the other. Exit status: 0 when the agent finished its answer, 1 when it
stopped for another reason (an API error, a budget, a truncated answer; the reason
is printed), 2 for a bad command line or a missing key.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEMO_QUESTION = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m miniagent",
        description="Ask the miniagent agent one question. It calls its tools (weather, clock, "
                    "calculator) as it sees fit and prints the answer.",
        epilog=f'example: python -m miniagent --verbose "{DEMO_QUESTION}"\n'
               "exit status: 0 answered, 1 stopped early (reason printed), 2 bad usage or missing key",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("question", help="what to ask (quote it)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--offline", action="store_true", help="use the bundled mock API, even if a key is set")
    mode.add_argument("--live", action="store_true", help="use the real API (needs ANTHROPIC_API_KEY)")
    parser.add_argument("--model", help="model name (default: $MINIAGENT_MODEL or the package default)")
    parser.add_argument("--max-iterations", type=_positive_int, default=10, metavar="N",
                        help="stop after N model calls (default: 10)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each round: tool calls and results")
    parser.add_argument("--trace", type=Path, metavar="FILE", help="write every step to FILE as JSON Lines")
    parser.add_argument("--system", metavar="TEXT", help="replace the default system prompt")
    return parser


def _missing_key_message() -> str:
    return ("miniagent: --live needs an API key, and ANTHROPIC_API_KEY is not set. Export one first "
            "(export ANTHROPIC_API_KEY=sk-ant-...), set ANTHROPIC_BASE_URL as well to use another "
            "endpoint, or drop --live to run offline against the bundled mock.")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (so tests can call it in-process)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.question.strip():
        parser.error("the question is empty; pass the question as one quoted argument")
    if args.trace is not None and not args.trace.parent.is_dir():
        parser.error(f"--trace: the folder {str(args.trace.parent)!r} does not exist; create it or pick another path")

    from miniagent.agent import DEFAULT_SYSTEM, Agent  # imported after parsing: --help stays instant
    from miniagent.client import MissingAPIKeyError, connect

    offline = True if args.offline else False if args.live else None
    try:
        client = connect(offline=offline, model=args.model)
    except MissingAPIKeyError:
        print(_missing_key_message(), file=sys.stderr)
        return 2
    agent = Agent(client, system=args.system or DEFAULT_SYSTEM, max_iterations=args.max_iterations,
                  verbose=args.verbose)
    try:
        result = agent.run(args.question)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        if args.trace is not None:
            agent.trace.to_jsonl(args.trace)
    if not args.verbose:  # verbose mode has printed the answer (or why it stopped) already
        print(result.text if result.ok else f"Stopped ({result.stop}): {result.reason}")
    if result.error is not None:
        print(f"Hint: {result.error.hint}", file=sys.stderr)
    if args.trace is not None:
        print(f"trace: {len(agent.trace)} events written to {args.trace}", file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
