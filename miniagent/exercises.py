"""The exercise checks of the notebooks: one function per exercise, each tested.

A check cell in a notebook is one bare call, such as
`miniagent.exercises.check_01_1(french_reply)`, and it shows one line:

    exercise 1: done!
    exercise 1: not yet: <what failed, and where to look>
    exercise 1: that's not the right kind of answer: <what was expected instead>

The checks live in the package, not in the notebooks, so that each one can be tested
(`tests/test_exercises.py`): a reference solution passes, plausible wrong ones fail
with the hint they deserve, and odd-but-valid ones pass.

A check tests what an answer *does*, never a flag the learner sets. It runs the
learner's function on cases the learner cannot see, against mock clients scripted to
misbehave (a model that never stops, a tool call cut off by `max_tokens`), and reads
what was really sent (the mock's records, `client.exchanges`). Everything a check
needs from a notebook comes in as an argument: a check never reads notebook globals.

A check never raises. The learner's code runs through `_run`, which hides what it
prints, turns its exceptions into "not yet", and gives up on it after `TIMEOUT`
seconds (an endless loop). Whatever else an answer can raise is caught once, at the
check boundary in `_exercise`.

Only the standard library is imported here: the client, the mock, the loop and the
agent are imported inside the checks that use them, so `import miniagent` stays light.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import io
import json
import math
import operator
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable

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
        head = f"exercise {self.exercise}: "
        if self.kind == DONE:
            return head + "done!"
        if self.kind == WRONG_KIND:
            return head + "that's not the right kind of answer: " + self.hint
        return head + "not yet: " + self.hint

    __repr__ = __str__


class _NotYet(Exception):
    """Raised inside a check: the answer runs, but does not do what the exercise asks."""


class _WrongKind(Exception):
    """Raised inside a check: the answer is not the kind of thing the exercise asks for."""


def not_yet(hint: str) -> None:
    raise _NotYet(hint)


def wrong_kind(hint: str) -> None:
    raise _WrongKind(hint)


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
                return Verdict(number, NOT_YET, f"checking your answer raised {_raised(exc)}")
            return Verdict(number, DONE)

        CHECKS[f"{notebook}-{number}"] = run
        return run

    return wrap


# --- running the learner's code ---------------------------------------------------------


def _run(fn: Callable[..., Any], *args: Any, name: str, case: str = "", patient: bool = False,
         **kwargs: Any) -> Any:
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
    thread = threading.Thread(target=target, daemon=True, name=f"exercise-{name}")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        thread.start()
        thread.join(limit)
    if thread.is_alive():
        not_yet(f"{name} did not return within {limit:g} s{where}: is there a loop that never ends? "
                "(It keeps running in the background; restart the kernel to stop it.)")
    error = outcome.get("error")
    if isinstance(error, (_NotYet, _WrongKind)):  # a check's own verdict, raised inside a callback
        raise error
    if error is not None:
        not_yet(f"{name} raised {_raised(error)}{where}")
    if "value" not in outcome:
        not_yet(f"{name} stopped without returning{where} (did it call exit()?)")
    return outcome["value"]


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
    """'a str', 'an int', 'None', 'a function': what a hint calls a value's type."""
    if value is None:
        return "None"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if callable(value) and getattr(value, "__name__", None) and not isinstance(value, type):
        return "a function"
    name = type(value).__name__
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _check_callable(fn: Any, name: str, what: str) -> None:
    if fn is None:
        not_yet(f"{name} is still None: {what}")
    if not callable(fn) or isinstance(fn, type):
        wrong_kind(f"{name} should be a function ({what}), not {_kind(fn)}")


# --- mock clients for the checks -----------------------------------------------------------


def _mock_client(history: int = 200) -> Any:
    """A fresh offline client of the check's own: its mock can be scripted and its records read."""
    from miniagent.client import connect

    return connect(offline=True, quiet=True, history=history)


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


# =============================================================================================
# 00 · Setup
# =============================================================================================


@_exercise("00", 1)
def check_00_1(cut_response: Any, client: Any) -> None:
    """A response cut off by `max_tokens`, that `client` really received (found in its exchanges)."""
    if cut_response is None:
        not_yet("cut_response is still None: keep what llm.create(...) returns")
    if not isinstance(cut_response, dict):
        wrong_kind(f"cut_response should be the dict that llm.create(...) returns, not {_kind(cut_response)}")
    if "stop_reason" not in cut_response or "id" not in cut_response:
        wrong_kind("cut_response should be the whole response, with its id and stop_reason; "
                   f"this dict has {_clip(', '.join(map(str, cut_response)) or 'no keys')}")
    received = [e for e in client.exchanges if e.status == 200 and isinstance(e.response, dict)
                and e.response.get("id") == cut_response.get("id")
                and e.response.get("usage") == cut_response.get("usage")]
    if not received:
        not_yet("llm never received this response: make the call with llm.create(...) and keep what it returns")
    truth = received[-1]  # as it arrived: editing the dict's stop_reason changes nothing here
    if truth.response.get("stop_reason") != "max_tokens":
        not_yet(f"its stop_reason is {truth.response.get('stop_reason')!r}: the whole answer fit in "
                f"max_tokens={truth.request['body'].get('max_tokens')}; ask for fewer tokens")


# =============================================================================================
# 01 · One LLM call
# =============================================================================================


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


@_exercise("01", 1)
def check_01_1(french_reply: Any) -> None:
    """The httpx response to a request sent by hand with a top-level "system" prompt asking for French."""
    import httpx

    keep = "keep what post(...) returns (an httpx.Response, whose .request shows what was sent)"
    if french_reply is None:
        not_yet("french_reply is still None: send your request with post(...) and keep what it returns")
    if isinstance(french_reply, dict):
        wrong_kind(f"french_reply holds the reply's JSON (a dict); {keep}")
    if isinstance(french_reply, str):
        wrong_kind(f"french_reply holds text; {keep}")
    if isinstance(french_reply, tuple):
        wrong_kind(f"french_reply holds a tuple (from post_with_retries?); {keep}")
    if not isinstance(french_reply, httpx.Response):
        wrong_kind(f"french_reply is {_kind(french_reply)}; {keep}")
    try:
        request = french_reply.request
    except RuntimeError:
        wrong_kind(f"this httpx.Response was never sent; {keep}")
    try:
        body = json.loads(request.content)
    except ValueError:
        not_yet("the request behind french_reply has no JSON body: send a dict with post(...)")
    if not isinstance(body, dict):
        not_yet("the request behind french_reply sent JSON that is not an object: send a dict like body")
    if not request.url.path.endswith("/v1/messages"):
        not_yet(f"the request went to {request.url.path}, not /v1/messages: use post(...)")
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    if "system" not in body:
        if any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
            not_yet('the API has no "system" role in messages: the system prompt is a top-level '
                    '"system" field, beside "messages"')
        not_yet('the request behind french_reply has no "system" field: add one to a copy of body')
    if french_reply.status_code != 200:
        try:
            error = french_reply.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            error = french_reply.text
        not_yet(f"the API answered {french_reply.status_code}: {_clip(error)}")
    text = _system_text(body["system"]).lower()
    if "french" not in text and "français" not in text and "francais" not in text:
        not_yet(f"its system prompt does not ask for French: {_show(body['system'])}")


@_exercise("01", 2)
def check_01_2(failed_request_id: Any, client: Any) -> None:
    """The request id of a 429 that `client` gave up on (its last attempt), as err.request_id gives it."""
    if failed_request_id is None:
        not_yet("failed_request_id is still None: catch the RateLimitError and keep err.request_id")
    if isinstance(failed_request_id, BaseException):
        wrong_kind("failed_request_id holds the exception itself; keep its .request_id, a string")
    if not isinstance(failed_request_id, str):
        wrong_kind(f"failed_request_id should be a request id, a str such as 'req_…', not {_kind(failed_request_id)}")

    def request_id(exchange: Any) -> Any:
        return exchange.response.get("request_id") if isinstance(exchange.response, dict) else None

    rate_limited = [e for e in client.exchanges if e.status == 429 and request_id(e) == failed_request_id]
    if not rate_limited:
        not_yet(f"mock_llm got no 429 with the request id {_show(failed_request_id)}: make a 429 outlast the "
                "retries, catch the RateLimitError from mock_llm.create(...), and keep err.request_id")
    if all(e.waited > 0 for e in rate_limited):
        not_yet("that 429 was retried, so the call went on; keep the id the exception carries, "
                "from the attempt the client gave up on")


@_exercise("01", 3)
def check_01_3(impatient_post: Any, client: Any, payload: Any) -> None:
    """`impatient_post(payload, sleep=...)` gives up at once on a retry-after over 30 s, and still waits
    for a short one. Tried against `client.mock` (the mock the function posts to), with faults queued."""
    _check_callable(impatient_post, "impatient_post", "your copy of post_with_retries")
    mock = client.mock
    cases = [(3600, False), (2, True), (31, False)]
    for retry_after, retries in cases:
        before = _last_request_number(mock)
        mock.fault(429, retry_after=retry_after)
        slept: list[float] = []
        try:
            _run(impatient_post, payload, name="impatient_post", case=f"(retry-after: {retry_after})",
                 sleep=slept.append)
        finally:
            sent = len([r for r in mock.requests if r["n"] > before])
            if sent == 0:
                _drain_fault(mock, payload)
        if sent == 0:
            not_yet("impatient_post sent nothing to mock_llm's mock: post to mock_url with mock_http, "
                    "as post_with_retries does")
        if not retries and (sent > 1 or slept):
            waited = f"waited {slept[0]:g} s and " if slept else ""
            not_yet(f"with retry-after: {retry_after} it {waited}tried again ({_plural(sent, 'request')}); "
                    "give up at once when retry-after is over 30 s")
        if retries and (sent < 2 or slept[:1] != [retry_after]):
            not_yet(f"with retry-after: {retry_after} it should wait {retry_after} s (through its sleep argument) "
                    f"and try again; it sent {_plural(sent, 'request')} and slept {slept or 'never'}")


def _last_request_number(mock: Any) -> int:
    requests = mock.requests
    return requests[-1]["n"] if requests else 0


def _drain_fault(mock: Any, payload: Any) -> None:
    """Use up a fault the learner's function never triggered, so it cannot hit a later call."""
    headers = {"x-api-key": "exercise-check", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    body = json.dumps(payload if isinstance(payload, dict) else {}).encode()
    mock.handle("POST", "/v1/messages", headers, body)


# =============================================================================================
# 02 · Tools
# =============================================================================================


def _as_tool(answer: Any, name: str) -> Any:
    """A Tool from what the learner stored: a Tool, a function with a docstring, or a schema dict."""
    from miniagent.tools import Tool, tool

    if answer is None:
        not_yet(f"{name} is still None: write the tool")
    if isinstance(answer, Tool):
        return answer
    if isinstance(answer, dict) and {"name", "description", "input_schema"} <= set(answer):
        try:
            return Tool(answer["name"], answer["description"], answer["input_schema"], lambda **_: "")
        except (TypeError, ValueError) as exc:
            not_yet(f"{name} is not a tool the API accepts: {_raised(exc)}")
    if callable(answer) and not isinstance(answer, type):
        try:
            return tool(answer)
        except (TypeError, ValueError) as exc:
            not_yet(f"@tool refuses {name}: {_raised(exc)}")
    wrong_kind(f"{name} should be a tool (a function decorated with @tool), not {_kind(answer)}")


@_exercise("02", 1)
def check_02_1(time_tool: Any, client: Any) -> None:
    """The model (client) picks the renamed tool for the time in Tokyo, among other tools, and does
    not pick it for the weather: its name and description say what it does, and only that."""
    from miniagent.builtin_tools import default_tools
    from miniagent.client import APIError
    from miniagent.messages import tool_uses

    learner = _as_tool(time_tool, "time_tool")
    schema = learner.schema()
    others = [t.schema() for t in default_tools() if t.name not in ("get_current_time", learner.name)]

    def called(question: str, tools: list[dict]) -> list[str]:
        try:
            response = client.create([{"role": "user", "content": question}], tools=tools)
        except APIError as err:
            not_yet(f"the API refused a request with your tool: {_clip(str(err).splitlines()[0], 160)}")
        return [b.get("name") for b in tool_uses(response)]

    asked = "What time is it in Tokyo?"
    names = called(asked, others + [schema])
    if learner.name not in names:
        seen = f"called {', '.join(names)}" if names else "called no tool"
        not_yet(f"asked {asked!r}, the model {seen}: all it knew of yours was its name, {learner.name!r}, "
                f"and its description, {_show(learner.description, 50)}; what there says it tells the time?")
    unrelated = "What's the weather in Paris?"
    if learner.name in called(unrelated, [schema]):
        not_yet(f"the model also called {learner.name} for {unrelated!r}, which it cannot answer: "
                "describe what the tool does, and only that")
    if learner.description.strip().startswith("Your description here"):
        not_yet("the model picked it by its name alone; a real model leans on the description too, and "
                "yours is still the placeholder: say what the tool does")


def _tool_use(name: str, input: dict, id: str) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def _divide(a: float, b: float) -> float:
    """A small tool for the checks: it raises ZeroDivisionError for b = 0."""
    return a / b


@_exercise("02", 2)
def check_02_2(run_safely: Any) -> None:
    """`run_safely(fn, tool_use)` returns a tool_result the API accepts: the output, or the
    exception's message with is_error; nothing escapes. Tried on functions the learner cannot see."""
    from miniagent.builtin_tools import get_weather as weather_tool
    from miniagent.messages import conversation_error, result_text

    get_weather = weather_tool.fn  # the plain function, as the learner's own tools are

    _check_callable(run_safely, "run_safely", "run_safely(fn, tool_use) returns a tool_result block")

    def expected_error(fn: Callable[..., Any], args: dict) -> str | None:
        try:
            fn(**args)
        except Exception as exc:  # computing what the learner's result must quote
            return str(exc)
        return None

    cases = [
        (get_weather, {"city": "Paris"}),
        (get_weather, {"city": "Atlantis"}),
        (_divide, {"a": 3, "b": 4}),
        (_divide, {"a": 1, "b": 0}),
        (get_weather, {"town": "Paris"}),
    ]
    for n, (fn, args) in enumerate(cases, 1):
        block = _tool_use(fn.__name__.lstrip("_"), args, f"toolu_check_{n}")
        call = f"{block['name']}({_show(args)})"
        result = _run(run_safely, fn, copy.deepcopy(block), name="run_safely", case=f"for {call}")
        if result is None:
            not_yet(f"run_safely returned None for {call}: return the tool_result block")
        if not isinstance(result, dict):
            wrong_kind(f"run_safely returned {_kind(result)} for {call}; return the whole tool_result block, "
                       "a dict with type, tool_use_id and content")
        conversation = [{"role": "user", "content": "Use the tool."}, {"role": "assistant", "content": [block]},
                        {"role": "user", "content": [result]}]
        problem = _block_problem(result) or conversation_error(conversation)
        if problem:
            not_yet(f"for {call} the API would refuse your tool_result: {_clip(problem, 160)}")
        error = expected_error(fn, args)
        text = result_text(result)
        if error is None:
            if result.get("is_error"):
                not_yet(f"for {call} the call worked, but your result says is_error: {_show(text, 60)}")
            if str(fn(**args)) not in text:
                not_yet(f"for {call} the content should be the output as text, {_show(str(fn(**args)), 50)}; "
                        f"yours was {_show(text, 50)}")
        else:
            if result.get("is_error") is not True:
                not_yet(f"{call} raised, but your result has no is_error: True, so the model takes it as an answer")
            if error[:30] not in text:
                not_yet(f"{call} raised, and your result does not say why: put the exception's message in "
                        f"its content (yours: {_show(text, 50)})")


def _block_problem(block: dict) -> str | None:
    """What makes a tool_result block malformed, before the conversation rules are checked."""
    if block.get("type") != "tool_result":
        return f"its type is {_show(block.get('type'), 30)}, not 'tool_result'"
    if not isinstance(block.get("tool_use_id"), str):
        return "it has no tool_use_id saying which call it answers"
    content = block.get("content", "")
    if not isinstance(content, (str, list)) or (isinstance(content, list) and not all(
            isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in content)):
        return f"its content must be a string (or a list of text blocks), not {_kind(content)}"
    if "is_error" in block and not isinstance(block["is_error"], bool):
        return f"is_error must be true or false, not {_show(block['is_error'], 30)}"
    return None


class _TooBig(Exception):
    """Python's value of an expression would take too long to compute here."""


_PY_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.MatMult: operator.matmul,
}
_PY_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Invert: operator.invert, ast.Not: operator.not_,
}
_MAX_BITS = 4_000


def _python_value(expression: str) -> Any:
    """What Python computes for `expression`, as eval would, but without eval.

    Only numbers and operators are evaluated, and a power or shift whose result would
    be huge raises _TooBig instead of freezing the kernel (`9**(0^10**8)` passes
    safe_eval, which reads it as 9**0, but Python's reading is 9**100000000).
    SyntaxError, TypeError and the like propagate: Python refusing is a difference too.
    """
    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex)):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _PY_UNARY:
            return _PY_UNARY[type(node.op)](value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _PY_BINARY:
            left, right = value(node.left), value(node.right)
            if isinstance(left, int) and isinstance(right, int) and right > 0:
                if isinstance(node.op, ast.LShift) and right > _MAX_BITS:
                    raise _TooBig
                if isinstance(node.op, ast.Pow) and abs(left) > 1 and right * math.log2(abs(left)) > _MAX_BITS:
                    raise _TooBig
            return _PY_BINARY[type(node.op)](left, right)
        raise _TooBig  # not arithmetic: safe_eval accepted it, so this cannot happen; refuse rather than guess

    return value(ast.parse(expression, mode="eval"))


@_exercise("02", 3)
def check_02_3(my_expression: Any) -> None:
    """An expression safe_eval accepts whose value Python computes differently (or refuses)."""
    from miniagent.builtin_tools import CalculatorError, format_number, safe_eval

    if my_expression is None:
        not_yet('my_expression is still None: write an expression as a string, such as "1 + 1"')
    if not isinstance(my_expression, str):
        wrong_kind(f"my_expression should be the expression as a string, in quotes, not {_kind(my_expression)} "
                   f"(Python already computed {_show(my_expression, 30)})")
    try:
        ours = safe_eval(my_expression)
    except CalculatorError as err:
        not_yet(f"safe_eval refuses it: {_clip(str(err), 120)}")
    try:
        theirs = _python_value(my_expression)
    except _TooBig:
        not_yet("Python's value of it is too large to compute here: try smaller numbers")
    except (SyntaxError, ValueError, TypeError, ArithmeticError, RecursionError, MemoryError):
        return  # Python refuses what safe_eval computes: a difference, and a real one
    if type(theirs) in (int, float) and theirs == ours:
        not_yet(f"safe_eval and Python both give {format_number(ours)}: which symbols does safe_eval's "
                "docstring read differently from Python?")


# =============================================================================================
# 03 · The ReAct loop
# =============================================================================================


def _answer_and_messages(result: Any, name: str, case: str) -> tuple[str, list]:
    """The (answer, messages) pair a react-style function returns, or the right verdict."""
    if result is None:
        not_yet(f"{name} returned None {case}: return (answer, messages), as react does")
    if not isinstance(result, (tuple, list)) or len(result) != 2 or not isinstance(result[0], str):
        wrong_kind(f"{name} returned {_kind(result)} {case}; return (answer, messages), as react does")
    return result[0], result[1]


def _runaway(limit: int) -> Callable[[dict], dict]:
    from miniagent.mock import scripts

    return _fused(scripts.runaway_varied("calculate", lambda n: {"expression": f"{n} * 2"}), limit)


@_exercise("03", 1)
def check_03_1(budget_react: Any) -> None:
    """`budget_react(client, question, tools, token_budget)` still answers a question that needs no
    stopping, and, against a model that never stops, stops once the run (not the client's
    lifetime) has used more than the budget."""
    from miniagent.builtin_tools import default_tools

    _check_callable(budget_react, "budget_react", "react with a client argument and a token budget")
    tools = default_tools()
    client = _mock_client()
    question = "What is (1024 + 768) * 2?"
    result = _run(budget_react, client, question, tools, 1_000_000, name="budget_react",
                  case="(token_budget=1,000,000)", max_iterations=10)
    if not _ok_calls(client):
        not_yet("budget_react made no model calls with the client it was given: start from a copy of react, "
                "and call client.create where react calls llm.create")
    answer, _ = _answer_and_messages(result, "budget_react", "with a large budget")
    if "3584" not in answer:
        not_yet(f"with token_budget=1,000,000 and {question!r} the answer should come from the model "
                f"(it says 3584); yours was {_show(answer, 50)}")

    budget, before = 1_000, 5_200
    client = _mock_client()
    client.usage.add({"input_tokens": before - 200, "output_tokens": 200})  # spent before this run
    client.mock.script(_runaway(40), repeat=True)
    case = f"(a model that never stops, token_budget={budget:,})"
    failure = _attempt(budget_react, client, "算一下", tools, budget, name="budget_react", case=case,
                       max_iterations=30)
    calls, used, stop_after, used_then = _ok_calls(client), 0, None, 0
    for n, exchange in enumerate(calls, 1):
        usage = exchange.response["usage"]
        used += usage["input_tokens"] + usage["output_tokens"]
        if used > budget and stop_after is None:
            stop_after, used_then = n, used
    if stop_after is None or len(calls) < stop_after:
        not_yet(f"with token_budget={budget:,} it stopped after {_plural(len(calls), 'call')}, when this run "
                f"had used only {used:,} tokens: count the tokens this run used (the client had used "
                f"{before:,} before it)")
    if len(calls) > stop_after:
        not_yet(f"the runaway model made {_plural(len(calls), 'call')}; with token_budget={budget:,} the run "
                f"should stop after call {stop_after}, when it had used {used_then:,} tokens")
    if failure:
        raise failure


def _attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> _NotYet | None:
    """`_run`, keeping its "not yet" for later: a check may have a more telling hint to give first
    (a loop stopped by the check's fuse raises, but the real fault is that it never stopped)."""
    try:
        _run(fn, *args, **kwargs)
    except _NotYet as exc:
        return exc
    return None


@_exercise("03", 2)
def check_03_2(one_at_a_time: Any, client: Any) -> None:
    """The LoopResult of a run_loop on `client` with disable_parallel_tool_use: one tool per round,
    several rounds, ending with the model's answer; and `client` really sent that tool_choice."""
    from miniagent.loop import LoopResult
    from miniagent.messages import tool_uses

    if one_at_a_time is None:
        not_yet("one_at_a_time is still None: keep the LoopResult that run_loop returns")
    if isinstance(one_at_a_time, int) and not isinstance(one_at_a_time, bool):
        wrong_kind("one_at_a_time holds a number; keep the LoopResult itself (its .iterations is the number)")
    if not isinstance(one_at_a_time, LoopResult):
        wrong_kind(f"one_at_a_time should be the LoopResult that run_loop returns, not {_kind(one_at_a_time)}")
    rounds = [len(tool_uses(m)) for m in one_at_a_time.messages if m.get("role") == "assistant"]
    for n, count in enumerate(rounds, 1):
        if count > 1:
            not_yet(f"in round {n} the model asked for {count} tools at once: pass tool_choice with "
                    "disable_parallel_tool_use to run_loop")
    if one_at_a_time.stop not in ("end_turn", "stop_sequence"):
        not_yet(f"the run ended with {one_at_a_time.stop!r}, not with the model's answer: "
                f"{_clip(one_at_a_time.reason, 120)}")
    if sum(rounds) < 2:
        not_yet(f"the model called {_plural(sum(rounds), 'tool')}: ask the demo question, which needs several")
    first = one_at_a_time.messages[0] if one_at_a_time.messages else None
    sent = [e.request["body"] for e in client.exchanges]
    if not any(isinstance(b.get("tool_choice"), dict) and b["tool_choice"].get("disable_parallel_tool_use") is True
               and (b.get("messages") or [None])[0] == first for b in sent):
        not_yet("llm sent no request for this question with disable_parallel_tool_use: true: run it with llm "
                "and tool_choice={\"type\": \"auto\", \"disable_parallel_tool_use\": True}")


class _Spy:
    """Wraps a ToolRegistry and records every tool call run through it, whatever the way in."""

    def __init__(self) -> None:
        from miniagent.builtin_tools import default_tools
        from miniagent.tools import Tool, ToolRegistry

        self.ran: list[Any] = []
        spy = self

        class SpyRegistry(ToolRegistry):
            def run(self, tool_use: dict) -> dict:
                spy.ran.append(tool_use)
                return super().run(tool_use)

            def run_all(self, tool_uses: list[dict], *args: Any, **kwargs: Any) -> list[dict]:
                spy.ran.extend(tool_uses)
                return super().run_all(tool_uses, *args, **kwargs)

        def watched(t: Any) -> Any:
            def fn(**arguments: Any) -> Any:
                spy.ran.append({"name": t.name, "input": arguments})
                return t.fn(**arguments)
            return Tool(t.name, t.description, t.input_schema, fn, t.timeout)

        self.tools = SpyRegistry([watched(t) for t in default_tools()])


@_exercise("03", 3)
def check_03_3(careful_react: Any) -> None:
    """`careful_react(client, question, tools)` stops on max_tokens, says so, and runs nothing: not the
    cut-off tool call (whose arguments look complete), not through any way in; and still answers."""
    from miniagent.mock import scripts

    _check_callable(careful_react, "careful_react", "react with a client argument that stops on max_tokens")
    cut_call = scripts.truncated_tool_call("calculate", {"expression": "(1024 + 768) * 2"})
    cut_text = scripts.text("The answer, in full detail, is that", stop_reason="max_tokens")
    for what, response in (("a tool call cut off by max_tokens", cut_call), ("a text cut off by max_tokens", cut_text)):
        client, spy = _mock_client(), _Spy()
        client.mock.script(_fused(lambda body, r=response: copy.deepcopy(r), 20), repeat=True)
        case = f"(a model whose answer is {what})"
        outcome: dict[str, Any] = {}
        failure = _attempt(lambda *a, **k: outcome.setdefault("result", careful_react(*a, **k)),
                           client, "算一下 (1024 + 768) * 2", spy.tools, name="careful_react", case=case,
                           max_iterations=10)
        calls = len(_ok_calls(client))
        if calls == 0 and not failure:
            not_yet("careful_react made no model calls with the client it was given: start from a copy of react, "
                    "and call client.create where react calls llm.create")
        if spy.ran:
            not_yet(f"on {what}, careful_react ran {spy.ran[0].get('name', 'a tool')}: never run a cut-off call, "
                    "its arguments may be incomplete")
        if calls > 1:
            not_yet(f"after {what} it called the model again ({_plural(calls, 'call')} in all): stop on max_tokens")
        if failure:
            raise failure
        answer, _ = _answer_and_messages(outcome.get("result"), "careful_react", f"on {what}")
        if "max_tokens" not in answer:
            not_yet(f"on {what} the answer should say so (include the words max_tokens); "
                    f"yours was {_show(answer, 50)}")
    client, spy = _mock_client(), _Spy()
    question = "What is (1024 + 768) * 2?"
    result = _run(careful_react, client, question, spy.tools, name="careful_react", case=f"for {question!r}",
                  max_iterations=10)
    answer, _ = _answer_and_messages(result, "careful_react", f"for {question!r}")
    if "3584" not in answer:
        not_yet(f"for {question!r}, which needs no stopping, the answer should come from the model "
                f"(it says 3584); yours was {_show(answer, 50)}")


# =============================================================================================
# 04 · Context
# =============================================================================================


def _blocks(message: dict) -> list:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _ask(text: str) -> dict:
    return {"role": "user", "content": text}


def _reply(*content: Any) -> dict:
    return {"role": "assistant", "content": list(content)}


def _call(id: str, name: str = "get_weather", **input: Any) -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": input or {"city": "Paris"}}


def _result(id: str, text: str = "sunny, 25°C") -> dict:
    return {"type": "tool_result", "tool_use_id": id, "content": text}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


# The shape of each turn of the check's session: how many tool calls each round makes.
_TURN_SHAPES = [(1,), (), (2,), (1, 1), (3,), (), (1,), (2, 1), (1,), (), (1, 2), (1,)]


def _session() -> list[dict]:
    """A long, tool-heavy history the learner has never seen: rounds of one to three calls,
    some turns with no tools, some calls after a short text; every call answered."""
    messages, n = [], 0
    for turn, shape in enumerate(_TURN_SHAPES, 1):
        messages.append(_ask(f"Question {turn}: what now?"))
        for calls in shape:
            ids = [f"toolu_s{n + i + 1:02d}" for i in range(calls)]
            n += calls
            lead = [_text("Let me check.")] if turn % 3 == 0 else []
            messages.append(_reply(*lead, *[_call(i) for i in ids]))
            messages.append({"role": "user", "content": [_result(i, f"result of {i}") for i in ids]})
        messages.append(_reply(_text(f"Answer {turn}.")))
    return messages


def _requests() -> list[list[dict]]:
    """Every request of the session: each prefix that ends with a user message."""
    history = _session()
    return [history[:i + 1] for i, m in enumerate(history) if m["role"] == "user"]


def _orphans(messages: list[dict]) -> list[str]:
    """The reference answer of 04-1: results whose tool_use is not in the message just before."""
    found = []
    for i, message in enumerate(messages):
        before = _blocks(messages[i - 1]) if i > 0 else []
        asked = {b.get("id") for b in before if b.get("type") == "tool_use"}
        found += [b["tool_use_id"] for b in _blocks(message)
                  if b.get("type") == "tool_result" and b["tool_use_id"] not in asked]
    return found


def _naive_view(messages: list[dict], max_turns: int) -> list[dict]:
    """The article's trimMessages: the first message plus the last max_turns * 2 - 1."""
    if len(messages) <= max_turns * 2:
        return list(messages)
    return [messages[0]] + messages[len(messages) - (max_turns * 2 - 1):]


def _orphan_cases() -> list[tuple[str, list[dict]]]:
    history = _session()
    cut = next(r for r in _requests() if _orphans(_naive_view(r, 3)))
    return [
        ("a valid 20-message history", history[:20]),
        (f"the naive window's view of a {len(cut)}-message history", _naive_view(cut, 3)),
        ("a history whose first message holds a tool_result", [{"role": "user", "content": [_result("toolu_x")]}]),
        ("a message with two results, one of them for a call made in that turn",
         [_ask("Weather in Paris and Rome?"), _reply(_call("toolu_p")),
          {"role": "user", "content": [_result("toolu_p"), _result("toolu_r")]}]),
        ("a result whose tool_use is two messages back",
         [_ask("Weather?"), _reply(_call("toolu_a")), _ask("Never mind."), _reply(_text("OK.")),
          {"role": "user", "content": [_result("toolu_a")]}]),
        ("a history whose messages all have string content",
         [_ask("Hi"), {"role": "assistant", "content": "Hello!"}, _ask("Bye")]),
    ]


@_exercise("04", 1)
def check_04_1(orphaned_results: Any) -> None:
    """`orphaned_results(messages)` finds exactly the orphaned results, on histories it has not seen."""
    _check_callable(orphaned_results, "orphaned_results", "orphaned_results(messages) returns a list of ids")
    for what, messages in _orphan_cases():
        want = _orphans(messages)
        got = _run(orphaned_results, copy.deepcopy(messages), name="orphaned_results", case=f"on {what}")
        if got is None:
            not_yet(f"orphaned_results returned None on {what}: return a list of ids")
        if isinstance(got, (str, bytes, dict)) or not isinstance(got, Iterable):
            wrong_kind(f"orphaned_results returned {_kind(got)}; return a list of tool_use_ids (strings)")
        got = list(got)
        if not all(isinstance(i, str) for i in got):
            wrong_kind(f"orphaned_results returned {_show(got, 50)}; return the tool_use_ids, "
                       "strings such as 'toolu_1'")
        if sorted(got) != sorted(want):
            not_yet(f"on {what} the answer is {want}, yours was {_show(got, 60)}: compare each result's "
                    "tool_use_id with the ids of the tool_use blocks in the message just before it")


def _safe_view(messages: list[dict], max_turns: int) -> list[dict]:
    """The reference answer of 04-2: the article's cut, moved forward past any tool results."""
    limit = max_turns * 2
    if len(messages) <= limit:
        return list(messages)
    cut = len(messages) - (limit - 1)
    while any(b.get("type") == "tool_result" for b in _blocks(messages[cut])):
        cut += 1
    return [messages[0]] + messages[cut:]


@_exercise("04", 2)
def check_04_2(trim_safe: Any) -> None:
    """`trim_safe(messages, max_turns)` on every request of a session it has not seen: a valid
    conversation, within the limit, first and last messages kept, the latest messages
    contiguous and as many as fit, and the history it was given left as it was."""
    from miniagent.messages import conversation_error

    _check_callable(trim_safe, "trim_safe", "trim_safe(messages, max_turns) returns a shorter list")
    requests = _requests()
    for max_turns in (3, 5, 2, 10):
        for request in requests:
            given = copy.deepcopy(request)
            case = f"with max_turns={max_turns} on a {len(request)}-message history"
            view = _run(trim_safe, given, max_turns, name="trim_safe", case=case)
            if view is None:
                not_yet(f"trim_safe returned None {case}: return the list of messages to send")
            if not isinstance(view, (list, tuple)) or not all(isinstance(m, dict) for m in view):
                wrong_kind(f"trim_safe returned {_kind(view)}; return a list of messages")
            view = list(view)
            if given != request:
                not_yet(f"trim_safe changed the list it was given ({case}): that is the agent's only copy "
                        "of the history; return a new list instead")
            if len(view) > max_turns * 2:
                not_yet(f"{case} it kept {len(view)} messages, more than max_turns * 2 = {max_turns * 2}")
            if not view or view[0] != request[0]:
                not_yet(f"{case} it dropped the first message (the task): keep it")
            if view[-1] != request[-1]:
                not_yet(f"{case} it dropped the last message, the one the model must answer: keep it")
            problem = conversation_error(view)
            if problem:
                not_yet(f"{case} the API would refuse the view: {_clip(problem, 140)}")
            if len(view) > 1 and view[1:] != request[len(request) - len(view) + 1:]:
                not_yet(f"{case} the view is not the first message plus the latest ones, in order")
            best = len(_safe_view(request, max_turns))
            if len(view) < best:
                not_yet(f"{case} it kept {len(view)} messages where {best} fit without breaking a pair: "
                        "drop only what you must")


class _GuardedPolicy:
    """A learner's policy, each hook run through `_run`: an exception or an endless loop in it
    becomes a "not yet" instead of a dead session or a frozen kernel."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def view(self, messages: list[dict]) -> Any:
        return _run(self.policy.view, messages, name="your policy's view()")

    def on_tool_results(self, results: list[dict]) -> Any:
        return _run(self.policy.on_tool_results, results, name="your policy's on_tool_results()")

    def __getattr__(self, name: str) -> Any:  # describe(), stats(), ... as the policy has them
        return getattr(self.policy, name)


def _completed(session: Any) -> bool:
    """Did the session answer every turn? (A session may say so itself, or only say where it broke.)"""
    return not getattr(session, "broke", None) and not getattr(session, "unfinished", None)


def _sessions(measured: Any) -> list[tuple[str, Any]]:
    if isinstance(measured, Mapping):
        return [(str(label), s) for label, s in measured.items()]
    return [(f"session {n}", s) for n, s in enumerate(measured, 1)]


@_exercise("04", 3)
def check_04_3(my_policy: Any, run_session: Callable[[Any], Any], measured: Any, name: str) -> None:
    """`my_policy` completes the notebook's session (`run_session(policy)`), still knows `name` at
    the end, and spends fewer input tokens than every measured policy that also knew it.

    The target comes from `measured` (the notebook's sessions, by label), so it means the same
    offline and live. A session is read for `.input_tokens`, `.answer`, `.broke`, and, when it has
    them, `.unfinished` and `.policy`.
    """
    if my_policy is None:
        not_yet("my_policy is still None: make a policy, e.g. Compose(TruncateToolResults(...), Summarize(llm, ...))")
    if isinstance(my_policy, type):
        wrong_kind(f"my_policy is the class {my_policy.__name__}; make one: {my_policy.__name__}(...)")
    if not callable(getattr(my_policy, "view", None)) or not callable(getattr(my_policy, "on_tool_results", None)):
        wrong_kind(f"my_policy should be a context policy, with view() and on_tool_results() like SlidingWindow(...); "
                   f"it is {_kind(my_policy)}")
    knew = [(label, s) for label, s in _sessions(measured)
            if _completed(s) and name in str(getattr(s, "answer", "")) and getattr(s, "policy", None) is not my_policy]
    if not knew:
        not_yet(f"none of the measured sessions still knew {name!r} at the end, so there is no target to beat; "
                "run the cells above first")
    label, target = min(knew, key=lambda item: item[1].input_tokens)
    session = _run(run_session, _GuardedPolicy(my_policy), name="run_session", patient=True)
    if session.broke:
        turn, error = session.broke
        not_yet(f"the session stopped at turn {turn}: {_clip(error, 140)}")
    if getattr(session, "unfinished", None):
        turn, stop = session.unfinished[0]
        not_yet(f"turn {turn} ended with {stop!r} instead of an answer")
    if name not in str(session.answer):
        not_yet(f"the session completed, but its last answer does not know the name: {_show(session.answer, 60)}: "
                "what in your policy keeps the turn that gave it?")
    if session.input_tokens >= target.input_tokens:
        not_yet(f"it knew the name, but used {session.input_tokens:,} input tokens; {label!r} knew it too "
                f"with {target.input_tokens:,}: spend fewer")


# =============================================================================================
# 05 · The full agent
# =============================================================================================


@_exercise("05", 1)
def check_05_1(population_tool: Any, client: Any) -> None:
    """An agent on `client` with `default_tools()` plus the learner's tool calls it for the population
    of Tokyo, and the tool, run as the model asked, returns a number."""
    from miniagent.agent import Agent
    from miniagent.builtin_tools import default_tools

    if population_tool is None:
        not_yet("population_tool is still None: write the tool and keep it here")
    learner = _as_tool(population_tool, "population_tool")
    tools = default_tools()
    if learner.name in tools:
        not_yet(f"default_tools() already has a tool named {learner.name!r}: give yours its own name")
    tools.register(learner)
    agent = Agent(client, tools)
    question = "What is the population of Tokyo?"
    _run(agent.run, question, name="the agent", case=f"asked {question!r}")
    called = [e["name"] for e in agent.trace.of_type("tool_call")]
    if learner.name not in called:
        seen = f"called {', '.join(called)}" if called else "called no tool"
        not_yet(f"asked {question!r}, the agent {seen}: do your tool's name and description say what it returns?")
    results = [e for e in agent.trace.of_type("tool_result") if e["name"] == learner.name]
    content = str(results[-1].get("content", "")) if results else ""
    if not results or results[-1].get("is_error"):
        not_yet(f"your tool failed when the agent called it: {_clip(content, 120)}")
    if not any(ch.isdigit() for ch in content):
        not_yet(f"your tool answered {_show(content, 50)} for Tokyo: return the population, a number")


def _trace(events: list[dict]) -> Any:
    """A trace of `events`, stamped by a clock that ticks 0.1 s per event (elapsed is not seconds)."""
    from datetime import datetime, timezone

    from miniagent.trace import Trace

    ticks = iter(range(10_000))
    trace = Trace(clock=lambda: next(ticks) / 10, now=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc))
    for event in events:
        trace.record(event)
    return trace


def _round(iteration: int, calls: list[tuple[str, str, float]], finish_order: list[int] | None = None) -> list[dict]:
    """One round's events: a request, a response, each tool_call, then each tool_result in finishing order."""
    events = [{"type": "request", "iteration": iteration, "messages": 1, "sent": 1},
              {"type": "response", "iteration": iteration, "stop_reason": "tool_use", "content": [], "usage": {}}]
    events += [{"type": "tool_call", "iteration": iteration, "id": id, "name": name, "input": {}}
               for id, name, _ in calls]
    for i in finish_order or range(len(calls)):
        id, name, seconds = calls[i]
        events.append({"type": "tool_result", "iteration": iteration, "id": id, "name": name,
                       "is_error": False, "content": "ok", "seconds": seconds})
    return events


def _visible_trace() -> Any:
    """The notebook's example: two calls in round 1 (fast 0.1 s, slow 0.9 s), one in round 2."""
    return _trace([{"type": "tool_call", "iteration": 1, "id": "a", "name": "fast"},
                   {"type": "tool_call", "iteration": 1, "id": "b", "name": "slow"},
                   {"type": "tool_result", "iteration": 1, "id": "a", "name": "fast", "seconds": 0.1},
                   {"type": "tool_result", "iteration": 1, "id": "b", "name": "slow", "seconds": 0.9},
                   {"type": "tool_call", "iteration": 2, "id": "c", "name": "fast"}])


def _demo_trace() -> Any:
    from miniagent.agent import Agent

    agent = Agent(_mock_client())
    agent.run("现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。")
    return agent.trace


@_exercise("05", 2)
def check_05_2(calls_per_round: Any) -> None:
    """`calls_per_round(trace)` on the notebook's example, a real agent run, an empty trace and a
    trace with other events in between."""
    _check_callable(calls_per_round, "calls_per_round", "calls_per_round(trace) returns {round: calls}")
    question = {"type": "question", "text": "Weather, time and a sum?"}
    cases = [
        ("a trace with 2 calls in round 1 and 1 in round 2", _visible_trace(), {1: 2, 2: 1}),
        ("a run of the demo question", _demo_trace(), {1: 4}),
        ("an empty trace", _trace([]), {}),
        ("a trace with 1 call in round 1 and 3 in round 2",
         _trace([question, *_round(1, [("t1", "get_current_time", 0.2)]),
                 *_round(2, [("w1", "get_weather", 0.3), ("w2", "get_weather", 0.1), ("c1", "calculate", 0.0)],
                         [1, 2, 0])]),
         {1: 1, 2: 3}),
    ]
    for what, trace, want in cases:
        got = _run(calls_per_round, trace, name="calls_per_round", case=f"on {what}")
        if got is None:
            not_yet(f"calls_per_round returned None on {what}: return a dict {{round: number of tool calls}}")
        if not isinstance(got, Mapping):
            wrong_kind(f"calls_per_round returned {_kind(got)}; return a dict {{round: number of tool calls}}")
        if dict(got) != want:
            not_yet(f"on {what} the answer is {want}, yours was {_show(dict(got), 50)}: count the tool_call "
                    "events, grouped by their 'iteration'")


@_exercise("05", 3)
def check_05_3(slowest_tool: Any) -> None:
    """`slowest_tool(trace)` by `seconds`, on traces where the last result to arrive, the last call
    made and the slowest differ."""
    _check_callable(slowest_tool, "slowest_tool", "slowest_tool(trace) returns a tool's name")
    cases = [
        ("a trace where 'fast' took 0.1 s and 'slow' 0.9 s", _visible_trace(), "slow"),
        ("a trace whose slowest result arrives first",
         _trace([*_round(1, [("w", "get_weather", 0.8), ("c", "calculate", 0.01)], [0, 1]),
                 *_round(2, [("t", "get_current_time", 0.3)])]), "get_weather"),
        ("a trace whose slowest call is neither the first nor the last",
         _trace([*_round(1, [("a", "search_web", 0.2), ("b", "fetch_page", 1.5), ("c", "calculate", 0.1)],
                         [2, 0, 1]),
                 *_round(2, [("d", "search_web", 0.4)])]), "fetch_page"),
    ]
    for what, trace, want in cases:
        got = _run(slowest_tool, trace, name="slowest_tool", case=f"on {what}")
        if got is None:
            not_yet(f"slowest_tool returned None on {what}: return the tool's name")
        if not isinstance(got, str):
            wrong_kind(f"slowest_tool returned {_kind(got)}; return the tool's name, a string such as 'get_weather'")
        if got != want:
            not_yet(f"on {what} the slowest tool is {want!r}, yours said {_show(got, 40)}: compare the "
                    "'seconds' of the tool_result events")


# =============================================================================================
# 06 · Streaming
# =============================================================================================


def _sse(events: list[dict], *, newline: str = "\n", comments: bool = False, split_data: bool = False) -> bytes:
    """A stream of `events` as the wire could carry it: another line ending, comment lines,
    or the JSON of each event spread over several `data:` lines (the format allows all three)."""
    out = [": a comment line, which a parser must skip"] if comments else []
    for event in events:
        data = json.dumps(event, ensure_ascii=False, separators=(", ", ": "))
        lines = [f"event: {event['type']}"]
        if split_data and ", " in data:  # cut between two JSON members: each line alone is not JSON
            head, tail = data.split(", ", 1)
            lines += [f"data: {head},", f"data: {tail}"]
        else:
            lines.append(f"data: {data}")
        if comments:
            lines.insert(1, ": keep-alive")
        out.append(newline.join(lines) + newline)
    return newline.join(out).encode("utf-8") + newline.encode()


def _stream_cases() -> list[tuple[str, list[dict]]]:
    """(description, events) for the streaming checks: text, the demo's four tool calls, a
    max_tokens cut inside tool JSON, a stream cut short, CJK and emoji."""
    from miniagent.mock.stream import message_events

    usage = {"input_tokens": 10, "output_tokens": 30}
    text = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "北京：晴 ☀️, 25°C. Shanghai: cloudy."}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}
    calls = [{"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}},
             {"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {"expression": "(1024 + 768) * 2"}},
             {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {"city": "北京"}},
             {"type": "tool_use", "id": "toolu_4", "name": "get_weather", "input": {"city": "上海"}}]
    tools = {**text, "content": [{"type": "text", "text": "Let me check."}, *calls], "stop_reason": "tool_use"}
    cut = {**text, "content": [{"type": "text", "text": "Working."}, {**calls[1], "input": {}}],
           "stop_reason": "max_tokens"}
    events = message_events(tools)
    broken = events[:next(i for i, e in enumerate(events) if e.get("index") == 3 and e["type"] == "content_block_delta"
                          and e["delta"].get("partial_json")) + 1]
    return [("a text answer", message_events(text)),
            ("the demo's four tool calls", events),
            ("a tool call cut off by max_tokens", message_events(cut, cut_json='{"expression": "(10')),
            ("a stream cut inside the third tool call", broken)]


@_exercise("06", 1)
def check_06_1(parse_events: Any) -> None:
    """`parse_events(raw)` on streams with LF and CRLF line endings, comment lines and data spread
    over several `data:` lines: the parsed data of every event, in order."""
    _check_callable(parse_events, "parse_events", "parse_events(raw bytes) returns the events' parsed data")
    cases = [(what, events) for what, events in _stream_cases() if what != "a stream cut inside the third tool call"]
    forms = [("with \\n line endings", {}), ("with \\r\\n line endings", {"newline": "\r\n"}),
             ("with comment lines", {"comments": True}), ("with the JSON over two data: lines", {"split_data": True})]
    for (what, events), (how, style) in [(case, form) for case in cases for form in forms]:
        raw = _sse(events, **style)
        got = _run(parse_events, raw, name="parse_events", case=f"on {what} {how}")
        if got is None:
            not_yet(f"parse_events returned None on {what} {how}: return a list of dicts")
        if not isinstance(got, list):
            wrong_kind(f"parse_events returned {_kind(got)}; return a list with one dict per event")
        if got and all(isinstance(item, str) for item in got):
            wrong_kind("parse_events returned strings: parse each event's data with json.loads")
        if got != events:
            first = next((i for i, (a, b) in enumerate(zip(got, events)) if a != b), min(len(got), len(events)))
            seen = _show(got[first], 50) if first < len(got) else "nothing"
            not_yet(f"on {what} {how}: {len(got)} events where there are {len(events)}; event {first} should be "
                    f"{_show(events[first], 50)}, yours was {seen}"
                    + (": join the data: lines of one event with \\n before parsing" if style.get("split_data") else ""))


@_exercise("06", 2)
def check_06_2(tool_inputs: Any) -> None:
    """`tool_inputs(events)`: {index: input, or None if the JSON never completed}, per block."""
    _check_callable(tool_inputs, "tool_inputs", "tool_inputs(events) returns {index: input or None}")
    wants = {"a text answer": {},
             "the demo's four tool calls": {1: {}, 2: {"expression": "(1024 + 768) * 2"}, 3: {"city": "北京"},
                                            4: {"city": "上海"}},
             "a tool call cut off by max_tokens": {1: None},
             "a stream cut inside the third tool call": {1: {}, 2: {"expression": "(1024 + 768) * 2"}, 3: None}}
    for what, events in _stream_cases():
        got = _run(tool_inputs, copy.deepcopy(events), name="tool_inputs", case=f"on {what}")
        if got is None:
            not_yet(f"tool_inputs returned None on {what}: return a dict (empty if there is no tool call)")
        if not isinstance(got, Mapping):
            wrong_kind(f"tool_inputs returned {_kind(got)}; return a dict {{index: input or None}}")
        want = wants[what]
        if dict(got) == want:
            continue
        wrong = next((i for i in sorted(set(want) | set(got), key=str) if dict(got).get(i, "?") != want.get(i, "?")),
                     None)
        if wrong not in got:
            hint = ": every tool_use block has an entry, keyed by its index, finished or not"
        elif want.get(wrong, "?") is None:
            hint = ": its JSON never completed, so its input is None (never guess the rest)"
        else:
            hint = ": join the fragments of each block separately, by its index, and parse them at its content_block_stop"
        not_yet(f"on {what}, block {wrong} should be {_show(want.get(wrong, 'absent'), 40)}, yours was "
                f"{_show(dict(got).get(wrong, 'absent'), 40)}{hint}")


@_exercise("06", 3)
def check_06_3(time_to_first_text: Any) -> None:
    """`time_to_first_text(client, messages)` on two mocks paced differently: close to each one's
    first-token time, well before the whole answer's."""
    _check_callable(time_to_first_text, "time_to_first_text",
                    "time_to_first_text(client, messages) returns seconds, a float")
    question = [{"role": "user", "content": "What is your name, and what can you do?"}]
    for first in (0.15, 0.45):
        client = _mock_client()
        client.mock.pace(first=first, rate=40)
        got = _run(time_to_first_text, client, copy.deepcopy(question), name="time_to_first_text",
                   case=f"on a mock whose first token comes after {first} s")
        if got is None:
            not_yet("time_to_first_text returned None: return the seconds, a float")
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isfinite(got):
            wrong_kind(f"time_to_first_text returned {_kind(got)}; return the seconds, a number such as 0.2")
        if not any(e.request["body"].get("stream") for e in client.exchanges):
            not_yet("it made no streamed request: use client.stream(messages); a plain call gives nothing until the end")
        whole = first + 30 / 40  # the mock's answer is about 30 tokens, at 40 a second after the first
        if got < first - 0.05:
            not_yet(f"it said {got:.2f} s, before any text could arrive (the first token came after {first} s): "
                    "stop the clock at the first text_delta, not at message_start")
        if got > first + (whole - first) / 2:
            not_yet(f"it said {got:.2f} s, nearer the whole answer's time than the first token's ({first} s): "
                    "stop the clock at the first text_delta")
