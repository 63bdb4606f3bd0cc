"""The machinery every exercise check shares: the verdict, running a learner's code safely,
and saying briefly what is wrong. The checks themselves are in n00.py, n01.py, …, one
module per notebook; `miniagent/exercises/__init__.py` says how they work."""

from __future__ import annotations

import contextlib
import functools
import io
import threading
from dataclasses import dataclass
from typing import Any, Callable

from miniagent.browser import THREADS
from miniagent.i18n import language, say
from miniagent.i18n import t as _say  # a hint in the learner's language: (English, Chinese or None)

DONE, NOT_YET, WRONG_KIND = "done", "not yet", "wrong kind"
TIMEOUT = 10.0  # seconds a learner's function may take on one case before it counts as hanging
HINT_CHARS = 80  # the longest value a hint quotes; longer ones are clipped with a marker


# --- the verdict ----------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What a check says: `kind` is "done", "not yet" or "wrong kind"; `hint` says what to look at.

    Its repr is the one line a check cell shows, so the bare call in a cell prints it once.
    """

    exercise: int
    kind: str
    hint: str = ""

    @property
    def ok(self) -> bool:
        return self.kind == DONE

    def __str__(self) -> str:
        if self.kind == DONE:
            return say("done", n=self.exercise)
        return say("wrong_kind" if self.kind == WRONG_KIND else "not_yet", n=self.exercise, hint=self.hint)

    __repr__ = __str__


class _NotYet(Exception):
    """Raised inside a check: the answer runs, but does not do what the exercise asks."""


class _WrongKind(Exception):
    """Raised inside a check: the answer is not the kind of thing the exercise asks for."""


def not_yet(hint: str, zh: str | None = None) -> None:
    raise _NotYet(_say(hint, zh))


def wrong_kind(hint: str, zh: str | None = None) -> None:
    raise _WrongKind(_say(hint, zh))


CHECKS: dict[str, Callable[..., Verdict]] = {}  # "01-2" -> check_01_2, for the tests


def _exercise(notebook: str, number: int) -> Callable[[Callable[..., None]], Callable[..., Verdict]]:
    """Make a check out of a function that raises _NotYet/_WrongKind or returns (done)."""

    def wrap(check: Callable[..., None]) -> Callable[..., Verdict]:
        @functools.wraps(check)
        def run(*args: Any, **kwargs: Any) -> Verdict:
            try:
                check(*args, **kwargs)
            except _NotYet as exc:
                return Verdict(number, NOT_YET, str(exc))
            except _WrongKind as exc:
                return Verdict(number, WRONG_KIND, str(exc))
            except Exception as exc:  # the check boundary: an answer's objects can raise anywhere; a check never does
                return Verdict(number, NOT_YET, _say(f"checking your answer raised {_raised(exc)}",
                                                     f"检查你的答案时抛出了 {_raised(exc)}"))
            return Verdict(number, DONE)

        CHECKS[f"{notebook}-{number}"] = run
        return run

    return wrap


# --- running the learner's code ---------------------------------------------------------


def _run(fn: Callable[..., Any], *args: Any, name: str, case: str = "", patient: bool = False,
         case_zh: str | None = None, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), the way a check must call a learner's code.

    What it prints is hidden (the check's one line is the output); an exception it
    raises becomes a "not yet" naming the exception; after `TIMEOUT` seconds it counts
    as hanging (`patient=True` waits for ever: for notebook code that runs learner code
    only through guarded hooks). A Python thread cannot be stopped, so a hanging call
    keeps running in the background, and the hint says so.
    """
    limit = None if patient else TIMEOUT
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except Exception as exc:  # the check boundary, on the learner's thread: reported, never raised
            outcome["error"] = exc

    where = f" {case}" if case else ""
    where_zh = f"（{case_zh if case_zh is not None else case}）" if case else ""
    thread = threading.Thread(target=target, daemon=True, name=f"exercise-{name}")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if THREADS:
            thread.start()
            thread.join(limit)
        else:  # a browser tab: no thread, so no time limit either (the kernel's stop button ends a hang)
            target()
    if thread.is_alive():
        not_yet(f"{name} did not return within {limit:g} s{where}: is there a loop that never ends? "
                "(It keeps running in the background; restart the kernel to stop it.)",
                zh=f"{name} 在 {limit:g} 秒内没有返回{where_zh}：是不是有一个停不下来的循环？"
                   "（它还在后台运行；重启 kernel 才能停掉它。）")
    error = outcome.get("error")
    if isinstance(error, (_NotYet, _WrongKind)):  # a check's own verdict, raised inside a callback
        raise error
    if error is not None:
        not_yet(f"{name} raised {_raised(error)}{where}", zh=f"{name} 抛出了 {_raised(error)}{where_zh}")
    if "value" not in outcome:
        not_yet(f"{name} stopped without returning{where} (did it call exit()?)",
                zh=f"{name} 没有返回就停了{where_zh}（是不是调用了 exit()？）")
    return outcome["value"]


def _returned_or_raised(fn: Callable[..., Any], *args: Any, error: type[Exception] = ValueError) -> tuple[str, Any]:
    """("returned", fn(*args)) or ("raised", the message of the `error` it raised): for `_run`, when a check
    wants some inputs refused (any other exception is `_run`'s, as ever)."""
    try:
        return "returned", fn(*args)
    except error as exc:
        return "raised", str(exc)


# --- saying what is wrong, briefly --------------------------------------------------------


def _clip(text: str, limit: int = HINT_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _show(value: Any, limit: int = HINT_CHARS) -> str:
    """A value as a hint quotes it: its repr, on one line, clipped."""
    try:
        text = repr(value)
    except Exception:  # the check boundary: a learner's object whose repr raises
        text = f"<a {type(value).__name__}>"
    return _clip(text, limit)


def _raised(exc: BaseException) -> str:
    """'KeyError: 'seconds'': an exception's type and the first line of its message, clipped."""
    try:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    except Exception:  # the check boundary: an exception whose own __str__ raises
        message = ""
    return f"{type(exc).__name__}: {_clip(message, 160)}" if message else type(exc).__name__


def _kind(value: Any) -> str:
    """'a str', 'an int', 'None', 'a function': what a hint calls a value's type (in the learner's language)."""
    zh = language() == "zh"
    if value is None:
        return "None"
    if isinstance(value, type):
        return f"类 {value.__name__}" if zh else f"the class {value.__name__}"
    if callable(value) and getattr(value, "__name__", None) and not isinstance(value, type):
        return "一个函数" if zh else "a function"
    name = type(value).__name__
    if zh:
        return f"一个 {name}"
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _check_callable(fn: Any, name: str, what: str, zh: str | None = None) -> None:
    """`what` says what the function does (`zh`: the same in Chinese)."""
    if fn is None:
        not_yet(f"{name} is still None: {what}", zh=f"{name} 还是 None：{zh or what}")
    if not callable(fn) or isinstance(fn, type):
        wrong_kind(f"{name} should be a function ({what}), not {_kind(fn)}",
                   zh=f"{name} 应该是一个函数（{zh or what}），而不是{_kind(fn)}")


# --- mock clients for the checks -----------------------------------------------------------


def _mock_client(history: int = 200) -> Any:
    """A fresh offline client of the check's own: its mock can be scripted and its records read."""
    from miniagent.client import connect

    return connect(offline=True, quiet=True, history=history)


def _graded_live(problem: Callable[[Any], Any], client: Any, said: tuple[str, str]) -> Any:
    """`problem(client)`; when the client is live and that finds something, grade on the check's own
    mock instead, saying so (`said`: what was found, in English and Chinese). A live model may call no
    tool (a small one rarely calls any) or call one at random, which says nothing of the learner's code:
    the mock, which reads names and descriptions, decides."""
    found = problem(client)
    if found and getattr(client, "mode", None) == "live":
        print(_say(f"(live, {said[0](found)}: graded on the check's own mock instead)",
                   f"（在线时，{said[1](found)}：改用检查自己的 mock 来评分）"))
        found = problem(_mock_client())
    return found


def _fused(script: Callable[[dict], dict], limit: int) -> Callable[[dict], dict]:
    """`script`, until `limit` calls have been answered; then a 400 that ends any loop still calling."""
    calls = [0]

    def respond(body: dict) -> dict:
        calls[0] += 1
        if calls[0] > limit:
            return {"status": 400, "error": {"type": "invalid_request_error",
                                             "message": f"the exercise check stopped this run after {limit} calls"}}
        return script(body)

    return respond


def _ok_calls(client: Any) -> list[Any]:
    """The model calls `client` made that succeeded, oldest first (the check's clients start fresh)."""
    return [e for e in client.exchanges if e.status == 200]
