"""`python -m miniagent "question"`: the full agent in a terminal.

(`python -m miniagent serve` serves it over HTTP instead, with a web page: `miniagent.serve`.)

Offline (the bundled mock) unless ANTHROPIC_API_KEY is set; `--offline` and `--live`
force one or the other. Exit status: 0 when the agent finished its answer, 1 when it
stopped for another reason (an API error, a budget, a truncated answer; the reason
is printed), 2 for a bad command line or a missing or unusable key, 130 on Ctrl-C.

The answer is streamed: its text is printed as it arrives, the words a model writes
before it calls tools included (each response's text on lines of its own), so the
last lines are the answer. `--no-stream` waits for the run and prints the answer only.

It runs in whatever terminal it is given: output the terminal's encoding cannot
show is escaped (\\u5317) rather than fatal, and bytes in the arguments that are not
valid text become U+FFFD instead of an unsendable question.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from miniagent.i18n import add_connection_options, argument_parser, t  # the learner's language (MINIAGENT_LANG=zh)

if TYPE_CHECKING:
    from miniagent.tools import ToolRegistry
    from miniagent.events import Trace

DEMO_QUESTION = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(t(f"expected a whole number, got {text!r}", f"要一个整数，收到的是 {text!r}")) from None
    if value < 1:
        raise argparse.ArgumentTypeError(t(f"must be at least 1, got {value}", f"至少是 1，收到的是 {value}"))
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argument_parser(
        prog="python -m miniagent",
        description=t("Ask the miniagent agent one question. It calls its tools (weather, clock, "
                       "calculator) as it sees fit and prints the answer.",
                       "向 miniagent 的 Agent 提一个问题。它自己决定调用哪些工具（天气、时钟、计算器），然后打印回答。"),
        epilog=t(f'example: python -m miniagent --verbose "{DEMO_QUESTION}"\n'
                  "exit status: 0 answered, 1 stopped early (reason printed), 2 bad usage or missing key\n"
                  "as a web service: python -m miniagent serve [--port N] (see serve --help); "
                  "to ask the question 'serve', write: python -m miniagent -- serve",
                  f'示例：python -m miniagent --verbose "{DEMO_QUESTION}"\n'
                  "退出码：0 已回答，1 提前停止（会打印原因），2 用法错误或缺少 key\n"
                  "作为 Web 服务运行：python -m miniagent serve [--port N]（见 serve --help）；"
                  "要问的问题恰好是 'serve' 时，写成：python -m miniagent -- serve"),
    )
    parser.add_argument("question", help=t("what to ask (quote it)", "要问的问题（用引号括起来）"))
    add_connection_options(parser)
    parser.add_argument("--max-iterations", type=_positive_int, default=10, metavar="N",
                        help=t("stop after N model calls (default: 10)", "调用模型 N 次后停止（默认：10）"))
    parser.add_argument("-v", "--verbose", action="store_true",
                        help=t("print each round: tool calls and results", "打印每一轮：工具调用和结果"))
    parser.add_argument("--no-stream", action="store_true",
                        help=t("wait for the whole answer instead of printing its text as it arrives",
                                "等完整的回答出来再打印，而不是边生成边打印"))
    parser.add_argument("--trace", type=Path, metavar="FILE",
                        help=t("write every step to FILE as JSON Lines", "把每一步以 JSON Lines 格式写入 FILE"))
    parser.add_argument("--system", metavar="TEXT", help=t("replace the default system prompt", "替换默认的系统提示词"))
    return parser


def _missing_key_message(err: Exception) -> str:
    """What to do about a missing key: the error names the chosen provider's variable (MINIAGENT_PROVIDER)."""
    what = getattr(err, "message", "") or "an API key is missing"
    return t(f"miniagent: --live: {what}. Export it first, or drop --live to run offline against the bundled mock.",
              f"miniagent：--live：{what}。请先 export 它，或者去掉 --live，离线使用内置的 mock。")


def _argument_text(text: str) -> str:
    """An argument as text the API can be sent.

    Bytes the locale could not decode arrive as lone surrogates. They are decoded again
    as UTF-8 (an ASCII locale garbles a UTF-8 terminal's question otherwise), and what
    is still not text becomes U+FFFD.
    """
    from miniagent.messages import SURROGATE, clean_text  # light: --help stays instant

    if not SURROGATE.search(text):
        return text
    try:
        return os.fsencode(text).decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that no undecodable byte made (passed in-process)
        return clean_text(text)


def _trace_problem(path: Path) -> str | None:
    """Why the trace could not be written to `path`, found before the run rather than after it."""
    shown = repr(str(path))
    if path.is_dir():
        return f"{shown} is a folder; give a file name, e.g. {str(path / 'trace.jsonl')!r}"
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        return f"{str(folder)!r} is a file, not a folder; pick another path"
    if not folder.is_dir():
        return f"the folder {str(folder)!r} does not exist; create it or pick another path"
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"{shown} cannot be written (permission denied); pick another path"
    return None


def _tolerant_output() -> None:
    """Make stdout and stderr escape what their encoding cannot show, instead of raising.

    The demo's answer is Chinese; an ASCII terminal (PYTHONIOENCODING=ascii, a C locale)
    would otherwise end the run with UnicodeEncodeError after all the work was done.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # absent on a notebook's streams
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _write_trace(trace: Trace, path: Path) -> bool:
    try:
        trace.to_jsonl(path)
    except OSError as exc:  # e.g. the folder was removed during the run
        print(t(f"miniagent: could not write the trace to {str(path)!r}: {exc.strerror or exc}",
                 f"miniagent：无法把 trace 写入 {str(path)!r}：{exc.strerror or exc}"), file=sys.stderr)
        return False
    return True


class _TextPrinter:
    """Writes a streamed run's text as it arrives, each response's text on its own lines.

    Only the text is printed (the verbose printout is `RoundPrinter`'s job): the pieces
    as they come, a line end when the response ends (`step`, given every trace event),
    and `finish` ends the last line. `printed` says whether the last response showed any
    text, so that an empty answer still prints the empty line an unstreamed run prints.
    """

    def __init__(self) -> None:
        self.line_open = False
        self.printed = False

    def text(self, delta: str) -> None:
        sys.stdout.write(delta)
        sys.stdout.flush()  # stdout into a pipe is block-buffered; the point is to show it now
        self.line_open, self.printed = not delta.endswith("\n"), True

    def step(self, event: dict[str, Any]) -> None:
        if event["type"] == "request":
            self.printed = False
        elif event["type"] in ("response", "error"):
            self.finish()

    def finish(self) -> None:
        if self.line_open:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self.line_open = False


def _serve(argv: list[str]) -> int:
    """`python -m miniagent serve ...`, or a clear message when its optional dependencies are missing."""
    import importlib.util

    missing = [name for name in ("fastapi", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        print(f"miniagent serve needs {' and '.join(missing)}: pip install 'miniagent[serve]'", file=sys.stderr)
        return 2
    from miniagent.serve import main as serve

    return serve(argv)


def main(argv: list[str] | None = None, *, tools: ToolRegistry | list | None = None) -> int:
    """Run the CLI; returns the exit status (so tests can call it in-process).

    `tools` replaces the built-in tools (a list or a ToolRegistry), for a program that
    wants this command line around its own tools.
    """
    _tolerant_output()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:  # `python -m miniagent serve`: the agent as a web service
        return _serve(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("question", "system", "model"):
        if getattr(args, name) is not None:
            setattr(args, name, _argument_text(getattr(args, name)))
    if not args.question.strip():
        parser.error(t("the question is empty; pass the question as one quoted argument",
                        "问题是空的；请把问题作为一个带引号的参数传进来"))
    problem = _trace_problem(args.trace) if args.trace is not None else None
    if problem:
        parser.error(f"--trace: {problem}")

    from miniagent.agent import DEFAULT_SYSTEM, Agent  # imported after parsing: --help stays instant
    from miniagent.client import APIKeyError, MissingAPIKeyError, connect

    offline = True if args.offline else False if args.live else None
    try:
        client = connect(offline=offline, model=args.model)
    except MissingAPIKeyError as err:
        print(_missing_key_message(err), file=sys.stderr)
        return 2
    except ValueError as err:  # an unknown MINIAGENT_PROVIDER: the message lists the known ones
        print(f"miniagent: {err}", file=sys.stderr)
        return 2
    except APIKeyError as err:  # e.g. a key with a space inside; the message never shows the key
        print(f"miniagent: {err}", file=sys.stderr)
        return 2
    stream = not args.no_stream
    printer = _TextPrinter() if stream and not args.verbose else None  # verbose: RoundPrinter streams
    agent = Agent(client, tools, system=args.system or DEFAULT_SYSTEM, max_iterations=args.max_iterations,
                  verbose=args.verbose, stream=stream, on_text=printer and printer.text,
                  on_step=printer and printer.step)
    written = False
    try:
        result = agent.run(args.question)
    except KeyboardInterrupt:
        if printer:
            printer.finish()
        print(t("\ninterrupted", "\n已中断"), file=sys.stderr)
        return 130
    finally:
        if args.trace is not None:
            written = _write_trace(agent.trace, args.trace)
    if printer:
        printer.finish()
    if not args.verbose:  # verbose mode has printed the answer (or why it stopped) already
        if not result.ok:
            print(t(f"Stopped ({result.stop}): {result.reason}", f"已停止（{result.stop}）：{result.reason}"))
        elif not (printer and printer.printed):  # streamed, the answer is on screen already
            print(result.text)
    if result.error is not None:
        print(t(f"Hint: {result.error.hint}", f"提示：{result.error.hint}"), file=sys.stderr)
    if written:
        print(t(f"trace: {len(agent.trace)} events written to {args.trace}",
                 f"trace：{len(agent.trace)} 个事件已写入 {args.trace}"), file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
