"""The whole agent of notebooks 01–05 in one file, to read in one sitting.

    from miniagent import tiny
    agent = tiny.Agent(tiny.connect(), [tiny.tool(get_weather)])
    print(agent.run("What's the weather in Paris?").text)

Five parts, in the notebooks' order: the call (01), tools (02), the loop (03), the
window (04), the agent (05). It needs httpx2 and the standard library; offline (no
ANTHROPIC_API_KEY, or MINIAGENT_OFFLINE=1) it talks to the package's mock in-process.
The rest of the package is this file grown up: the same ideas with every edge
hardened, measured and tested (`client.py`, `tools.py`, `loop.py`, `context.py`,
`agent.py`). Where the two differ, this file says what it leaves out.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
import typing
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx2

MODEL = "claude-sonnet-5-5"
API_URL = "https://api.anthropic.com"
RETRIED = {429, 500, 502, 503, 504, 529}  # busy or broken for a moment: worth another try
MAX_RESULT_CHARS = 20_000  # a tool's answer beyond this is clipped: it would crowd the window
THREADS = sys.platform not in ("emscripten", "wasi")  # Python in a browser tab starts no thread

# --- 1. The call (notebook 01) -------------------------------------------------------


class APIError(Exception):
    """The API said no (`status`, `type`), or its answer made no sense. Never holds the key."""

    def __init__(self, message: str, status: int | None = None, type: str = "api_error"):
        super().__init__(message)
        self.status, self.type = status, type


class LLM:
    """One POST to /v1/messages, tried again on 429/5xx/529, with the answer checked."""

    def __init__(self, api_key: str, *, model: str = MODEL, base_url: str = API_URL,
                 transport: httpx2.BaseTransport | None = None, max_tokens: int = 1024,
                 retries: int = 3, timeout: float = 60.0):
        self.model, self.max_tokens, self.retries = model, max_tokens, retries
        self.http = httpx2.Client(base_url=base_url, transport=transport, timeout=timeout,
                                 headers={"x-api-key": api_key, "anthropic-version": "2023-06-01"})

    def create(self, messages: list, *, system: str | None = None, tools: list | None = None) -> dict:
        body = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        for attempt in range(self.retries + 1):
            try:
                response = self.http.post("/v1/messages", json=body)
            except httpx2.TimeoutException:
                raise APIError("the API did not answer in time", type="timeout") from None
            except httpx2.HTTPError as exc:  # the message names the host, never the headers
                raise APIError(f"could not reach the API: {type(exc).__name__}", type="connection") from None
            if response.status_code in RETRIED and attempt < self.retries:
                wait = response.headers.get("retry-after", "")
                time.sleep(min(float(wait), 30.0) if wait.replace(".", "", 1).isdigit() else 0.5 * 2 ** attempt)
                continue
            return _answer(response)
        raise AssertionError("unreachable")


def _answer(response: httpx2.Response) -> dict:
    """The message in a 200, or the APIError a non-200 or a malformed body means."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code != 200:
        error = data.get("error") if isinstance(data, dict) else None
        error = error if isinstance(error, dict) else {}
        raise APIError(f"{response.status_code}: {error.get('message') or response.text[:200]}",
                       response.status_code, str(error.get("type") or "api_error"))
    if not isinstance(data, dict) or not isinstance(data.get("content"), list) or "stop_reason" not in data:
        raise APIError(f"a 200 that is not a message: {response.text[:200]!r}", 200, "malformed_response")
    return data


def connect(*, offline: bool | None = None, model: str | None = None) -> LLM:
    """The real API when ANTHROPIC_API_KEY is set (MINIAGENT_BASE_URL or ANTHROPIC_BASE_URL, MINIAGENT_MODEL too),
    else the mock."""
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if offline is None:
        offline = os.environ.get("MINIAGENT_OFFLINE", "").lower() in ("1", "true", "yes") or not key
    if offline:
        from miniagent.mock import MockAPI  # imported only offline: live use never loads it
        return LLM("mock-key", model=model or MODEL, base_url="http://miniagent-mock.invalid",
                   transport=MockAPI().transport())
    return LLM(key, model=model or os.environ.get("MINIAGENT_MODEL") or MODEL,
               base_url=(os.environ.get("MINIAGENT_BASE_URL", "").strip()
                         or os.environ.get("ANTHROPIC_BASE_URL", "").strip() or API_URL))


# --- 2. Tools: a schema the model reads, a registry that runs them (notebook 02) --------

JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


@dataclass
class Tool:
    name: str
    description: str
    input_schema: dict
    fn: typing.Callable
    timeout: float = 30.0


def tool(fn: typing.Callable, timeout: float = 30.0, name: str | None = None) -> Tool:
    """A Tool from a typed function: its docstring's first paragraph is all the model knows of it."""
    tool_name = name or fn.__name__
    hints, properties, required = typing.get_type_hints(fn), {}, []
    for name, param in inspect.signature(fn).parameters.items():
        kind = typing.get_origin(hints.get(name)) or hints.get(name)
        if kind not in JSON_TYPES:
            raise TypeError(f"{tool_name}({name}): give it one of the types {[t.__name__ for t in JSON_TYPES]}")
        properties[name] = {"type": JSON_TYPES[kind]}
        if param.default is param.empty:
            required.append(name)
        elif param.default is not None:
            properties[name]["default"] = param.default
    description = (inspect.getdoc(fn) or "").split("\n\n")[0].strip()
    if not description:
        raise ValueError(f"{tool_name} has no docstring: the model picks tools by their description")
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return Tool(tool_name, description, schema, fn, timeout)


def _bad_input(t: Tool, args: object) -> str | None:
    """What is wrong with a model's arguments for `t`, or None: the model gets this back to fix."""
    if not isinstance(args, dict):
        return f"the input must be a JSON object, got {type(args).__name__}"
    props = t.input_schema["properties"]
    missing = [n for n in t.input_schema["required"] if n not in args]
    unknown = [n for n in args if n not in props]
    if missing or unknown:
        return f"missing {missing}, unknown {unknown}; the parameters are {list(props)}"
    for name, value in args.items():
        want = next(k for k, v in JSON_TYPES.items() if v == props[name]["type"])
        ok = isinstance(value, (int, float) if want is float else want) and not (
            isinstance(value, bool) and want in (int, float))
        if not ok:
            return f"{name} must be a JSON {props[name]['type']}, got {json.dumps(value)[:80]}"
    return None


class Tools:
    """A registry: the schemas to send, and `run_all` to answer the model's tool_use blocks."""

    def __init__(self, tools: list[Tool]):
        self.by_name = {t.name: t for t in tools}

    def schemas(self) -> list[dict]:
        return [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in self.by_name.values()]

    def run(self, call: dict) -> dict:
        """One tool_result for one tool_use; every failure is an is_error result, never an exception."""
        t = self.by_name.get(call["name"])
        if t is None:
            return _result(call, f"unknown tool {call['name']!r}; the tools are {list(self.by_name)}", True)
        problem = _bad_input(t, call.get("input"))
        if problem:
            return _result(call, f"bad input for {t.name}: {problem}", True)
        box: dict = {}

        def work() -> None:
            try:
                box["output"] = t.fn(**call["input"])
            except Exception as exc:  # noqa: BLE001 - the model reads the error and can try otherwise
                box["error"] = f"{t.name} raised {type(exc).__name__}: {exc}"

        if not THREADS:  # a browser tab (Pyodide) starts no thread: the call runs here, with no time limit
            work()
        else:
            worker = threading.Thread(target=work, daemon=True)  # a daemon: a hung tool never blocks exit
            worker.start()
            worker.join(t.timeout)
            if worker.is_alive():
                return _result(call, f"{t.name} took longer than {t.timeout:g} s and was abandoned", True)
        if "error" in box:
            return _result(call, box["error"], True)
        output = box.get("output")
        return _result(call, output if isinstance(output, str) else json.dumps(output, default=str), False)

    def run_all(self, calls: list[dict], parallel: bool = True) -> list[dict]:
        """Every call's result, in the calls' order; at the same time when `parallel`."""
        if parallel and len(calls) > 1 and THREADS:
            with ThreadPoolExecutor(max_workers=len(calls)) as fan:
                return list(fan.map(self.run, calls))
        return [self.run(call) for call in calls]


def _result(call: dict, text: str, is_error: bool) -> dict:
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[clipped: {len(text):,} characters in all]"
    block = {"type": "tool_result", "tool_use_id": call["id"], "content": text}
    return {**block, "is_error": True} if is_error else block


# --- 3. The loop: call, run the tools, call again, until the model stops (notebook 03) ---

DONE = ("end_turn", "stop_sequence")


@dataclass
class Result:
    stop: str  # end_turn, stop_sequence, max_tokens, refusal, max_iterations, token_budget, ...
    text: str
    messages: list
    iterations: int
    tokens: int = 0
    rounds: list = field(default_factory=list)  # per model call: the tool calls it asked for


def run(llm: LLM, messages: list, tools: Tools, *, system: str | None = None, max_iterations: int = 10,
        token_budget: int | None = None, max_messages: int | None = None, parallel: bool = True) -> Result:
    """The ReAct loop. Works on a copy of `messages`; the Result holds the extended list."""
    messages, tokens, rounds, text = list(messages), 0, [], ""
    while True:
        if len(rounds) >= max_iterations:
            return Result("max_iterations", text, messages, len(rounds), tokens, rounds)
        if token_budget is not None and tokens >= token_budget:  # checked before each call, so a run
            return Result("token_budget", text, messages, len(rounds), tokens, rounds)  # may pass it by one call
        sent = window(messages, max_messages) if max_messages else messages
        response = llm.create(sent, system=system, tools=tools.schemas())
        usage = response.get("usage") or {}
        tokens += usage.get("input_tokens", 0) + usage.get("output_tokens", 0)
        content = response["content"]
        calls = [b for b in content if b.get("type") == "tool_use"]
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        rounds.append([(c["name"], c.get("input")) for c in calls])
        if content:
            messages.append({"role": "assistant", "content": content})
        stop = response["stop_reason"]
        if stop == "pause_turn" and not calls:  # a server-side turn paused: send it back as it is
            continue
        if stop != "tool_use" or not calls:
            if calls:  # e.g. cut by max_tokens mid-call: never run it, but answer it, or the next call is a 400
                messages.append({"role": "user", "content": [
                    _result(c, f"not executed: the turn ended with {stop}", True) for c in calls]})
            return Result(stop if stop != "tool_use" else "unknown_stop_reason", text, messages, len(rounds),
                          tokens, rounds)
        messages.append({"role": "user", "content": tools.run_all(calls, parallel)})


# --- 4. The window: what each call sends (notebook 04) -------------------------------


def window(messages: list, max_messages: int) -> list:
    """The first message plus the most recent ones, at most `max_messages`, cut only where it is safe.

    A cut is safe where the kept tail starts with an assistant message, or with a user
    message that holds no tool_result: a result whose tool_use was cut away is a 400.
    When nothing fits, the smallest valid view is sent (the package's SlidingWindow
    also counts such overflows, and summarises instead of cutting if asked).
    """
    if len(messages) <= max_messages:
        return list(messages)
    safe = [k for k in range(2, len(messages)) if messages[k]["role"] == "assistant"
            or not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in messages[k]["content"])]
    fits = [k for k in safe if 1 + len(messages) - k <= max_messages]
    k = fits[0] if fits else (safe[-1] if safe else 1)
    return [messages[0], *messages[k:]]


# --- 5. The agent: a conversation around the loop (notebook 05) -----------------------


class Agent:
    """Keeps the history between questions; a run that raises leaves it as it was."""

    def __init__(self, llm: LLM, tools: list[Tool], *, system: str | None = None, max_iterations: int = 10,
                 token_budget: int | None = None, max_messages: int | None = 40):
        self.llm, self.tools, self.system = llm, Tools(tools), system
        self.limits = {"max_iterations": max_iterations, "token_budget": token_budget, "max_messages": max_messages}
        self.history: list[dict] = []

    def run(self, question: str) -> Result:
        result = run(self.llm, [*self.history, {"role": "user", "content": question}], self.tools,
                     system=self.system, **self.limits)
        self.history = result.messages  # only reached if no APIError was raised
        return result
