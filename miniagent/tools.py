"""Tools: a name, a description, a JSON Schema and a callable.

The model never runs anything. It reads the request's `tools` list (names,
descriptions, input schemas) and, to use one, answers with a `tool_use` block: a
name and a JSON object of arguments. Our code runs the function and answers with
a `tool_result` block. This module is that contract:

- `Tool` and `@tool`: describe a Python function to the model. The schema is built
  from the type hints and the description from the docstring, so the two cannot
  drift apart.
- `validate_arguments`: check the model's arguments against the schema before the
  call, and say precisely what is wrong, so the model can fix its next attempt.
- `ToolRegistry`: look tools up by name and run `tool_use` blocks. Running never
  raises: an unknown name, bad arguments, an exception or a timeout all become a
  `tool_result` with `is_error: true` whose text starts with "Error: ". A model can
  read an error and correct itself; an exception that escapes ends the agent. Each
  tool gets its own copy of the arguments, so nothing it does can change what the
  model sent, and whatever it returns becomes text that UTF-8 and JSON can carry.
- `truncate_text`: keep a huge tool output from swamping the context window.

Each call runs in the caller's context (`contextvars`), copied into its thread, as an
asyncio task would be, so whatever a later notebook keeps there follows the call. Later
notebooks reach in through three small hooks: `arun_all` (07, `aloop.py`: the same from
asyncio), a tool marked `needs_approval` (10, `approval.py`: a person says yes first),
and spans while a tracer is active (11, `tracing.py`). A tool may be a coroutine function
(`async def`): `run_all` runs it on an event loop of its own, in its thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import enum
import functools
import inspect
import json
import queue
import re
import threading
import time
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Literal, Union

from . import tracing
# Python in a browser tab (Pyodide: the JupyterLite edition) cannot start a thread. There a call runs
# on the caller's thread, a round's calls one after another, and a timeout cannot abandon a call that
# hangs (the kernel's stop button interrupts it). Async tools still overlap on the async path (`arun_all`).
from .browser import THREADS
from .messages import clean_text, safe_str, tool_result

# The API's rule for tool names (a longer name is rejected with HTTP 400). Use it with
# fullmatch: with match, `$` also matches before a final newline ("get_weather\n").
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,128}")
DEFAULT_TIMEOUT = 10.0
# A tool call whose arguments were not JSON at all (a model's slip, seen on OpenAI-compatible APIs)
# arrives as {UNPARSED_ARGUMENTS: "the text"} (providers.parse_arguments), and is answered with an error.
UNPARSED_ARGUMENTS = "_unparsed_arguments"
DEFAULT_MAX_OUTPUT_CHARS = 8_000
# Waits are sliced this short so Ctrl-C is noticed at once: a plain blocking wait is not
# interrupted on Windows, nor by `_thread.interrupt_main()`.
_TICK = 0.05


# --- a tool ----------------------------------------------------------------------


@dataclass
class Tool:
    """What the model sees (name, description, input_schema) and what we run (fn).

    `fn` (a function or a coroutine function) gets the tool_use's `input` as keyword
    arguments; `timeout` is how long the registry waits for it before answering with an error.
    `needs_approval`: a person must approve each call before it runs (see `ToolRegistry.run_all`).
    """

    name: str
    description: str
    input_schema: dict
    fn: Callable[..., Any]
    timeout: float = DEFAULT_TIMEOUT
    needs_approval: bool = False

    def __post_init__(self) -> None:
        # Checked here, not by the API later: a bad tool should fail where it is defined.
        if not isinstance(self.name, str) or not NAME_PATTERN.fullmatch(self.name):
            raise ValueError(f"tool name {self.name!r} is not allowed: the API wants 1-128 characters "
                             "from a-z, A-Z, 0-9, '_' and '-' (pass name=... to choose one)")
        if not isinstance(self.input_schema, dict) or self.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: input_schema must be a JSON Schema dict with "
                             f"\"type\": \"object\", got {self.input_schema!r}")
        if not callable(self.fn):
            raise TypeError(f"tool {self.name!r}: fn must be callable, got {type(self.fn).__name__}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            raise ValueError(f"tool {self.name!r}: timeout must be a positive number of seconds, got {self.timeout!r}")

    def schema(self) -> dict:
        """This tool's entry in the request's `tools` list."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A decorated function stays callable as a plain function."""
        return self.fn(*args, **kwargs)


# --- @tool: a schema from type hints and a docstring -------------------------------


def tool(fn: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None, timeout: float = DEFAULT_TIMEOUT, needs_approval: bool = False) -> Any:
    """Turn a function into a `Tool`; usable bare (`@tool`) or with arguments.

    The description is the docstring's text before `Args:`; the parameter
    descriptions come from the `Args:` section. The description is all the model
    knows about when to use the tool, so a tool without one is refused.
    """

    def build(f: Callable[..., Any]) -> Tool:
        tool_name = name or f.__name__
        summary, param_docs = parse_docstring(inspect.getdoc(f) or "")
        text = description if description is not None else summary
        if not text.strip():
            raise ValueError(f"tool {tool_name!r} has no description: the model decides when to call a tool "
                             "from its description alone, so write a docstring or pass description=...")
        schema, enums = _schema_from_signature(f, param_docs)
        return Tool(tool_name, text, schema, _converting_enums(f, enums) if enums else f, timeout,
                    needs_approval=needs_approval)

    return build if fn is None else build(fn)


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns?|Yields?|Raises|Examples?|Notes?)\s*:\s*$")
_ARGS = ("Args", "Arguments", "Parameters")
_PARAM_LINE = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description}).

    Lines inside a paragraph are joined, because a docstring is wrapped for a
    code editor and the model reads it as prose.
    """
    lines = inspect.cleandoc(doc).splitlines()
    starts = [i for i, line in enumerate(lines) if _SECTION.match(line)]
    end = starts[0] if starts else len(lines)
    paragraphs = "\n".join(lines[:end]).split("\n\n")
    summary = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())

    params: dict[str, str] = {}
    for start in (i for i in starts if lines[i].startswith(_ARGS)):
        current, params_indent = None, 0
        for line in lines[start + 1 :]:
            if line and not line[0].isspace():
                break  # the next section begins
            match = _PARAM_LINE.match(line.strip())
            indent = len(line) - len(line.lstrip())
            if match and (current is None or indent <= params_indent):
                current, params_indent = match.group(1), indent
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return summary, params


def _schema_from_signature(fn: Callable[..., Any], param_docs: dict[str, str]) -> tuple[dict, dict]:
    """The input_schema for fn's parameters, and the parameters typed as Enum subclasses."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError) as exc:
        raise TypeError(f"cannot resolve the type hints of {fn.__name__}: {exc}") from exc
    unknown = set(param_docs) - set(signature.parameters)
    if unknown:
        raise TypeError(f"the docstring of {fn.__name__} documents {sorted(unknown)}, which are not parameters")

    properties: dict[str, dict] = {}
    required: list[str] = []
    enums: dict[str, type[enum.Enum]] = {}
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"parameter {pname!r} of {fn.__name__}: *args, **kwargs and positional-only parameters "
                            "cannot be passed by name from a JSON object; declare each parameter explicitly")
        if pname not in hints:
            raise TypeError(f"parameter {pname!r} of {fn.__name__} has no type hint; add one, e.g. {pname}: str")
        hint, optional = _unwrap_optional(hints[pname])
        try:
            prop = _schema_for(hint)
        except TypeError as exc:
            raise TypeError(f"parameter {pname!r} of {fn.__name__}: {exc}") from None
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            enums[pname] = hint
        if pname in param_docs:
            prop["description"] = param_docs[pname]
        if param.default is not param.empty:
            default = param.default.value if isinstance(param.default, enum.Enum) else param.default
            if default is not None and _is_json(default):
                prop["default"] = default
        elif not optional:
            required.append(pname)
        properties[pname] = prop

    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema, enums


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    """(X, True) for Optional[X] and X | None; (hint, False) otherwise."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        others = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(others) == 1:  # a union with one other type is exactly (X, None)
            return others[0], True
    return hint, False


_PLAIN = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SUPPORTED = "str, int, float, bool, list[...], dict, Literal[...], an Enum subclass or Optional[...] of these"


def _schema_for(hint: Any) -> dict:
    """The JSON Schema of one type hint (the subset a model fills reliably)."""
    if hint in _PLAIN:
        return {"type": _PLAIN[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is list or origin is list:
        return {"type": "array", "items": _schema_for(args[0])} if args else {"type": "array"}
    if hint is dict or origin is dict:
        return {"type": "object"}
    if origin is Literal:
        return _enum_schema(list(args))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([member.value for member in hint])
    raise TypeError(f"unsupported type hint {hint!r}; use {_SUPPORTED}")


def _enum_schema(values: list) -> dict:
    if not values or not all(type(v) in _PLAIN for v in values):
        raise TypeError(f"enum values must be strings, numbers or booleans, got {values!r}")
    kinds = {_PLAIN[type(v)] for v in values}
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _converting_enums(fn: Callable[..., Any], enums: dict[str, type[enum.Enum]]) -> Callable[..., Any]:
    """Wrap fn so that JSON values ("C") arrive as the Enum members (Unit.C) it declares."""

    def convert(kwargs: dict) -> None:
        for pname, cls in enums.items():
            if kwargs.get(pname) is not None:
                kwargs[pname] = cls(kwargs[pname])

    if inspect.iscoroutinefunction(fn):  # the wrapper must stay a coroutine function, to be awaited
        @functools.wraps(fn)
        async def acall(*args: Any, **kwargs: Any) -> Any:
            convert(kwargs)
            return await fn(*args, **kwargs)
        return acall

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        convert(kwargs)
        return fn(*args, **kwargs)

    return call


# --- validating the model's arguments -----------------------------------------------

_EXPECTED = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _is_type(value: Any, json_type: str) -> bool:
    # bool is a subclass of int in Python, but true is not a number in JSON.
    if json_type in ("integer", "number") and isinstance(value, bool):
        return False
    python_types = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
                    "array": list, "object": dict, "null": type(None)}
    return isinstance(value, python_types.get(json_type, object))


def _same(a: Any, b: Any) -> bool:
    """Equality that does not confuse True with 1."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_arguments(schema: dict, args: Any) -> list[str]:
    """What is wrong with `args` for `schema`, one message per problem ([] if nothing).

    Covers the subset `@tool` generates: type, required, enum, items, properties
    and additionalProperties false. Each message names the field and what was
    expected, because the model reads it and tries again.
    """
    return _check(args, schema, "")


def _check(value: Any, schema: dict, path: str) -> list[str]:
    where = f"{path}: " if path else ""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(_is_type(value, k) for k in kinds):
        expected = " or ".join(_EXPECTED.get(k, k) for k in kinds)
        label = where or "arguments: "
        return [f"{label}expected {expected}, got {_show(value)} ({type(value).__name__})"]
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        options = ", ".join(_show(option) for option in schema["enum"])
        return [f"{where}expected one of {options}, got {_show(value)}"]
    if isinstance(value, list) and "items" in schema:
        return [m for i, item in enumerate(value) for m in _check(item, schema["items"], f"{path}[{i}]")]
    if isinstance(value, dict):
        return _check_object(value, schema, path)
    return []


def _check_object(value: dict, schema: dict, path: str) -> list[str]:
    where = f"{path}: " if path else ""
    properties = schema.get("properties", {})
    errors = [f"{where}missing required field {name!r}" for name in schema.get("required", []) if name not in value]
    for key, item in value.items():
        if key in properties:
            errors += _check(item, properties[key], f"{path}.{key}" if path else key)
        elif schema.get("additionalProperties") is False:
            known = ", ".join(properties) or "none; this tool takes no arguments"
            errors.append(f"{where}unexpected field {key!r} (known fields: {known})")
    return errors


# --- keeping outputs small ------------------------------------------------------------


def omission_marker(omitted: int) -> str:
    return f"\n[... {omitted:,} characters omitted ...]\n"


def truncate_text(text: str, max_chars: int, *, head_ratio: float = 0.7) -> str:
    """`text` cut to at most `max_chars` characters by removing the middle.

    The head usually says what the output is and the tail how it ended (a total,
    an error), so both are kept; the marker tells the model (and you) how much
    is missing, so it can ask for a narrower result instead of guessing.
    """
    if not isinstance(max_chars, int) or max_chars < 0:
        raise ValueError(f"max_chars must be a non-negative int, got {max_chars!r}")
    if not 0.0 <= head_ratio <= 1.0:
        raise ValueError(f"head_ratio must be between 0 and 1, got {head_ratio!r}")
    if len(text) <= max_chars:
        return text
    # The marker counting the whole text is at least as long as the real one, so this fits.
    marker = len(omission_marker(len(text)))
    if max_chars < marker:
        raise ValueError(f"max_chars={max_chars} cannot hold the omission marker ({marker} characters); "
                         "use a larger max_chars")
    keep = max_chars - marker
    head = int(keep * head_ratio)
    tail = keep - head
    return text[:head] + omission_marker(len(text) - head - tail) + text[len(text) - tail :]


# --- running tools --------------------------------------------------------------------


def format_output(value: Any) -> str:
    """A tool's return value as the text of a tool_result; never raises.

    dicts and lists become compact JSON, bytes are decoded as UTF-8, anything else is
    `str(value)`. What cannot be shown that way (a circular list, an int of more than
    4300 digits, an object whose `__str__` raises) falls back to `safe_str`: a tool
    that succeeded must not fail at the boundary. Lone surrogates become U+FFFD, so
    the text can always be sent.
    """
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = str.__str__(value)  # a plain str, even from a subclass
    elif isinstance(value, (dict, list)):
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=safe_str)
        except Exception:  # noqa: BLE001 - circular, unsortable keys, a huge int: the tool boundary
            text = safe_str(value)
    else:
        text = safe_str(value)
    text = clean_text(text)
    return text if text.strip() else "(no output)"  # whitespace alone is no output (b"\t" too): the API wants text


def call_with_timeout(fn: Callable[..., Any], kwargs: dict, timeout: float) -> tuple[bool, Any]:
    """(True, value) or (False, exception) from fn(**kwargs); raises TimeoutError after `timeout` s.

    The call runs in a daemon thread. Python cannot kill a thread, so a tool that
    hangs is abandoned, not stopped: it keeps running in the background, and
    because it is a daemon it does not keep the interpreter from exiting.
    Where no thread can start (`THREADS` false) fn runs here, and `timeout` is not enforced.
    """
    if not THREADS:
        return call_here(fn, kwargs)
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((True, fn(**kwargs)))
        # The tool boundary: whatever the tool raises (even SystemExit) becomes a result.
        except BaseException as exc:  # noqa: BLE001
            outcome.append((False, exc))
        finally:
            done.set()

    context = contextvars.copy_context()  # the caller's span, budget and depth go with the call
    threading.Thread(target=context.run, args=(target,), daemon=True,
                     name=f"tool-{getattr(fn, '__name__', 'call')}").start()
    if not _wait(done, timeout):
        raise TimeoutError(f"did not finish within {timeout:g} s")
    return outcome[0]


def call_here(fn: Callable[..., Any], kwargs: dict) -> tuple[bool, Any]:
    """(True, value) or (False, exception) from fn(**kwargs) on this thread, where no thread can start."""
    try:
        return True, fn(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the tool boundary (Ctrl-C, here on the caller's thread, is not the tool's)
        return False, exc
    except SystemExit as exc:
        return False, exc


def _wait(event: threading.Event, timeout: float) -> bool:
    """event.wait(timeout), in slices of _TICK so that Ctrl-C interrupts it at once."""
    deadline = time.monotonic() + timeout
    while not event.wait(min(_TICK, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            return False
    return True


def _get(results: queue.SimpleQueue) -> Any:
    """results.get(), in slices of _TICK so that Ctrl-C interrupts it at once."""
    while True:
        try:
            return results.get(timeout=_TICK)
        except queue.Empty:
            continue


class ToolRegistry:
    """The tools an agent offers, by name, and the one place tool_use blocks are run."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = (), *,
                 max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS) -> None:
        self._tools: dict[str, Tool] = {}
        self.max_output_chars = max_output_chars
        for item in tools:
            self.register(item)

    def register(self, tool_or_fn: Tool | Callable[..., Any]) -> Tool:
        """Add a Tool (or a function, made one with @tool) and return it, so this works as a decorator too."""
        new = tool_or_fn if isinstance(tool_or_fn, Tool) else tool(tool_or_fn)
        if new.name in self._tools:
            raise ValueError(f"a tool named {new.name!r} is already registered; the API requires unique names")
        self._tools[new.name] = new
        return new

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __repr__(self) -> str:
        return f"ToolRegistry({', '.join(self._tools)})"

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def schemas(self) -> list[dict]:
        """The `tools` list of a request, in registration order."""
        return [t.schema() for t in self._tools.values()]

    def run(self, tool_use: dict) -> dict:
        """The tool_result answering one tool_use; raises only for a block without an id (nothing can answer it)."""
        return self._run_timed(tool_use)[0]

    def run_all(self, tool_uses: list[dict], parallel: bool = True,
                on_result: Callable[[dict, dict, float], Any] | None = None,
                approve: Callable[[dict], Any] | None = None, on_approval: Callable[[dict], Any] | None = None) -> list[dict]:
        """The tool_result blocks for several tool_use blocks, in the order of the calls.

        With `parallel`, each call runs in its own thread (where one can start: see `THREADS`),
        so the wait is the slowest tool rather than the sum of all of them. `on_result(tool_use,
        tool_result, seconds)` is called on this thread as each call finishes (in finishing order).

        A call of a tool that `needs_approval` is first put to `approve(call)`, on this
        thread, one call at a time in call order, before any tool of the round starts
        (a person answers one question at a time). Only `True` runs it; False, or a string
        (the person's reason), answers the model with an error result instead. Without
        `approve`, such a call is never run. `on_approval(event)` hears each answer
        (see `miniagent.approval`, notebook 10).

        The threads are daemons, not a thread pool: on Ctrl-C (KeyboardInterrupt) this
        returns at once, abandoning the running tools, where a pool would first wait
        for each of them (up to its timeout), and again at interpreter exit.
        """
        for block in tool_uses:  # a caller's bug should surface before any tool runs
            self._check_block(block)
        refused = {}
        if asking := self._asking(tool_uses):  # notebook 10's hook: a person approves these first
            from miniagent import approval
            refused = approval.refusals(asking, approve, on_approval)
        results: list[Any] = [None] * len(tool_uses)
        together = parallel and len(tool_uses) > 1 and THREADS
        spans = self._spans(tool_uses) if together else [None] * len(tool_uses)  # else each as it starts

        def finished(i: int, result: dict, seconds: float) -> None:
            results[i] = result
            tracing.end_tool(spans[i], result)
            if on_result:
                on_result(tool_uses[i], result, seconds)

        def timed(i: int) -> tuple[dict, float]:  # runs inside the call's own context
            tracing.activate(spans[i])
            if i in refused:
                return refused[i], 0.0
            return self._run_timed(tool_uses[i])

        if not together:
            for i in range(len(tool_uses)):
                spans[i] = self._spans(tool_uses[i:i + 1])[0]  # one after another: so are their spans
                finished(i, *contextvars.copy_context().run(timed, i))
        else:
            done: queue.SimpleQueue = queue.SimpleQueue()
            for i in range(len(tool_uses)):
                context = contextvars.copy_context()  # the caller's span, budget and depth go with the call
                threading.Thread(target=lambda i=i, context=context: done.put((i, *context.run(timed, i))),
                                 daemon=True, name=f"tools-{i}").start()
            for _ in tool_uses:
                finished(*_get(done))
        return results

    async def arun_all(self, tool_uses: list[dict], parallel: bool = True, **options: Any) -> list[dict]:
        """`run_all` for asyncio (notebook 07's hook: see `miniagent.aloop.arun_all`)."""
        from miniagent.aloop import arun_all
        return await arun_all(self, tool_uses, parallel, **options)

    def _spans(self, tool_uses: list[dict]) -> list[Any]:
        """Notebook 11's hook: an `execute_tool` span per call while a tracer is active, else None each."""
        return tracing.tool_spans(tool_uses, lambda name: getattr(self._tools.get(name) if isinstance(name, str) else None, "description", None))

    def _asking(self, tool_uses: list[dict]) -> dict[int, dict]:
        """The calls a person must approve first (index -> block): of tools that need approval, and
        that would run (a call refused anyway, e.g. with bad arguments, is not asked about)."""
        return {i: block for i, block in enumerate(tool_uses) if self._needs_approval(block)}

    def _needs_approval(self, block: dict) -> bool:
        chosen = self._tools.get(block.get("name")) if isinstance(block.get("name"), str) else None
        if chosen is None or not chosen.needs_approval:
            return False
        try:  # the same checks as before a run: unknown tool, unparsed JSON, invalid arguments
            return self._prepare(block.get("name"), block)[2] is None
        except Exception:  # noqa: BLE001 - a schema the validator cannot read: _outcome answers it
            return False

    def _check_block(self, block: Any) -> None:
        if not isinstance(block, dict) or not isinstance(block.get("id"), str):
            raise ValueError(f"expected a tool_use block with an 'id', got {_show(block)}")

    def _run_timed(self, tool_use: dict) -> tuple[dict, float]:
        self._check_block(tool_use)
        start = time.perf_counter()
        is_error, text = self._outcome(tool_use)
        return tool_result(tool_use["id"], text, is_error=is_error), time.perf_counter() - start

    def _outcome(self, tool_use: dict) -> tuple[bool, str]:
        """(is_error, text) for one call: the tool boundary, where nothing may escape.

        The tool gets a deep copy of the arguments, so the history and the trace keep
        exactly what the model sent. A failure outside the tool itself (a schema the
        validator cannot read, a max_output_chars too small for the marker) is still
        answered, as an error result, rather than ending the agent.
        """
        name = tool_use.get("name")
        try:
            chosen, args, refusal = self._prepare(name, tool_use)
            if refusal is not None:
                return self._finish(refusal)
            try:
                ok, value = call_with_timeout(_blocking(chosen.fn), args, chosen.timeout)
            except TimeoutError as exc:
                ok, value = None, f"{exc} and was abandoned"  # a thread cannot be stopped
            return self._finish(_answer(name, ok, value))
        except Exception as exc:  # noqa: BLE001 - the tool boundary
            return self._failed(name, exc)

    def _prepare(self, name: Any, tool_use: dict) -> tuple[Tool | None, Any, tuple[bool, str] | None]:
        """(tool, a copy of the arguments, None), or (None, None, the error result) when it must not run."""
        args = copy.deepcopy(tool_use.get("input", {}))
        chosen = self._tools.get(name) if isinstance(name, str) else None
        if chosen is None:
            known = ", ".join(self._tools) or "(none)"
            return None, None, (True, f"Error: unknown tool {name!r}. Available tools: {known}. Call one of these instead.")
        if isinstance(args, dict) and list(args) == [UNPARSED_ARGUMENTS]:
            return None, None, (True, f"Error: the arguments for {name} were not valid JSON: "
                                      f"{_show(args[UNPARSED_ARGUMENTS])}. Call {name} again with its "
                                      "arguments as one JSON object.")
        problems = validate_arguments(chosen.input_schema, args)
        if problems:
            listed = "\n".join(f"- {p}" for p in problems)
            return None, None, (True, f"Error: invalid arguments for {name}:\n{listed}\n"
                                      f"Fix the arguments and call {name} again.")
        return chosen, args, None

    def _finish(self, outcome: tuple[bool, str]) -> tuple[bool, str]:
        is_error, text = outcome
        if self.max_output_chars is not None:
            text = truncate_text(text, self.max_output_chars)
        return is_error, clean_text(text)

    @staticmethod
    def _failed(name: Any, exc: Exception) -> tuple[bool, str]:
        return True, clean_text(f"Error: {safe_str(name)} could not be run ({_raised(exc)}). Tell the user.")


def _answer(name: str, ok: bool | None, value: Any) -> tuple[bool, str]:
    """(is_error, text) from a call's outcome (ok None: it timed out, and `value` says how); every failure
    is advice to the model."""
    if ok is None:
        return True, f"Error: {name} {value}. Try again later or answer without it."
    if not ok:
        return True, (f"Error: {name} raised {_raised(value)}. "
                      "If the arguments caused this, correct them and retry; otherwise tell the user.")
    return False, format_output(value)


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def _blocking(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, callable from a plain thread: a coroutine function gets an event loop of its own there."""
    if not _is_async(fn):
        return fn
    return lambda **kwargs: asyncio.run(fn(**kwargs))


def _raised(exc: BaseException) -> str:
    """'ValueError: unknown city', or just the class name when the message is empty (or cannot be shown)."""
    message = safe_str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
