"""miniagent: an LLM agent built from scratch, one mechanism at a time.

The notebooks in notebooks/ build each piece inline; this package is where the
consolidated versions live, in the notebooks' order (tiny.py is 01-05 in one file; the
floor plan, held by tests/test_layers.py, is in the README's Layout):

    tiny.py           the front door: the whole agent of notebooks 01-05 in under 300 lines

    messages.py       message dicts and the rules the API checks
    client.py         one LLM call over httpx2: retries, usage, bounds; connect()
    aclient.py        the same call from asyncio: AsyncClient, connect_async()
    clientcore.py     what both clients decide (body, errors, retries, records), without I/O
    errors.py         what a failed call means, and whether to retry it
    wire.py           the border checks: request bytes, response shape, bounded records
    deadline.py       a time bound on a whole HTTP attempt, not just between two bytes
    streaming.py      server-sent events parsed by hand, the message they add up to, the streamed call
    providers.py      other providers: OpenAI Chat Completions translated at the edge; presets
    tools.py          a tool = JSON Schema + a function; the registry
    builtin_tools.py  weather, clock, a safe calculator
    loop.py           the ReAct loop with its budgets: the rules once, and the driver that performs them
    context.py        what part of the history each call sends
    workload.py       the long, tool-heavy session notebook 04 and `make bench` measure
    agent.py          all of it assembled, with a trace of its events
    events.py         that trace: every step of a run as a dict, saved as JSON Lines (notebook 05)
    aloop.py          the same from asyncio: tools, the loop's driver and AsyncAgent, every wait awaited
    serve/            the agent as a web service (FastAPI; optional extra); store.py where its workers
                      keep conversations (memory, SQLite, PostgreSQL); web/ its page
    approval.py       a person approves a tool call before it runs: one callback, asked in one place
    memory/           long-term memory in SQLite: remember, recall (LIKE, FTS5), forget, as tools;
                      pg.py the same on PostgreSQL; structured.py the facts a tight window drops
    retrieval/        load, split, index (FTS5, vectors), search with citations: RAG; pg.py on
                      PostgreSQL; data/docs/ the handbook it ships, with its questions (en, zh)
    team.py           several agents: an agent as a tool, an orchestrator, a hand-off
    planning.py       a plan the model keeps as a tool, and checks off
    tracing.py        spans for every run, model call and tool call; tree, timeline, cost
    otel.py           those spans to any OpenTelemetry backend (GenAI conventions; optional extra)
    prices.py         a dated price table: what a call cost
    mcp/              tools from anywhere: an MCP client over stdio JSON-RPC (both eras), its tools as Tools;
                      server.py any Tools as an MCP server, by hand; sdk.py the built-in tools served
                      with the official SDK (optional extra); servers/ small servers for notebook 12
    i18n.py           the language of what a learner reads: English, or Chinese (MINIAGENT_LANG=zh)
    mock/             the strict offline mock of the Messages API (and of OpenAI's Chat Completions and Responses)
    exercises/        the notebooks' exercise checks, a module per notebook (miniagent.exercises.check_01_1, ...)

Names are imported lazily, so `import miniagent` stays fast and loads nothing you
don't use (no ipywidgets, no matplotlib, no SDK).
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # client
    "connect": "client", "Client": "client", "APIError": "client", "Usage": "client",
    "BadRequestError": "client", "AuthenticationError": "client", "RateLimitError": "client",
    "OverloadedError": "client", "InternalServerError": "client", "APIConnectionError": "client",
    "APITimeoutError": "client", "MissingAPIKeyError": "client", "DEFAULT_MODEL": "client",
    "APIKeyError": "client", "InvalidAPIKeyError": "client", "MalformedResponseError": "client",
    "StreamError": "client", "MessageStream": "streaming",
    "AsyncClient": "aclient", "connect_async": "aclient", "AsyncMessageStream": "aclient",
    # providers
    "PRESETS": "providers", "Preset": "providers", "OpenAIFormat": "providers", "AnthropicFormat": "providers",
    # streaming
    "SSEParser": "streaming", "ServerSentEvent": "streaming", "MessageAccumulator": "streaming",
    # messages
    "user": "messages", "assistant": "messages", "tool_result": "messages", "text_of": "messages",
    "tool_uses": "messages", "tool_results": "messages", "conversation_error": "messages", "what_it_did": "messages",
    # tools
    "tool": "tools", "Tool": "tools", "ToolRegistry": "tools",
    "default_tools": "builtin_tools",
    # loop and agent
    "run_loop": "loop", "arun_loop": "aloop", "LoopResult": "loop",
    "Agent": "agent", "AsyncAgent": "aloop",
    # memory
    "Memory": "memory", "memory_tools": "memory",
    # retrieval (RAG)
    "Index": "retrieval", "search_tool": "retrieval",
    # several agents, planning, tracing
    "agent_tool": "team", "orchestrator": "team", "handoff": "team", "ahandoff": "team",
    "Plan": "planning", "Tracer": "tracing",
    # mock
    "MockAPI": "mock",
}

# Submodules reachable as attributes without an import, loaded on first use: a check cell
# is the bare call `miniagent.exercises.check_01_1(...)`.
_SUBMODULES = {"exercises"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return import_module(f"miniagent.{name}")
    if name in _EXPORTS:
        value = getattr(import_module(f"miniagent.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'miniagent' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
