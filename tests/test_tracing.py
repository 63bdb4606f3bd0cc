"""Spans: nesting, timing, errors, attributes, secrets, files, and the context they travel in.

Runs use fake clients (agent_fakes.py) on both drivers, so every token count and answer
is known; time comes from a clock the test moves (`Tracer(clock=..., wall_ns=...)`) where
a duration is asserted, and ids from `seed`. Overlap is proven with barriers, never sleeps.
"""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from agent_fakes import SYNC_ASYNC, AsyncFake, Fake, ask, make, results_in, say, script, use
from miniagent import tracing
from miniagent.errors import InternalServerError
from miniagent.loop import current_run
from miniagent.team import agent_tool, orchestrator
from miniagent.tools import Tool
from miniagent.tracing import CONTENT_CHARS, Span, Tracer, current_span

WAIT = 5.0


@pytest.fixture(params=SYNC_ASYNC)
def kind(request):
    return request.param


class Clock:
    """Seconds that move only when told to (thread-safe)."""

    def __init__(self):
        self.t = 1000.0
        self.lock = threading.Lock()

    def __call__(self):
        with self.lock:
            return self.t

    def advance(self, seconds):
        with self.lock:
            self.t += seconds


def fixed_tracer(**settings):
    clock = Clock()
    return Tracer(clock=clock, wall_ns=lambda: 1_700_000_000_000_000_000, seed=7, **settings), clock


def tool(name, fn, props=("q",)):
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in props}}
    return Tool(name, f"The {name} tool.", schema, fn)


def echo_results(request):
    return say(" | ".join(r["content"] for r in results_in(request)))


def team(kind, tracer=None):
    """An orchestrator (tracer attached) with one specialist that calls one tool."""
    spec = make(kind, script(use(("lookup", {"q": "x"})), echo_results), [tool("lookup", lambda q: f"found {q}")],
                name="researcher", description="Finds things.")
    client = Fake(script(use(("researcher", {"task": "find x"})), echo_results)) if kind == "sync" else \
        AsyncFake(script(use(("researcher", {"task": "find x"})), echo_results))
    return orchestrator(client, [spec], tracer=tracer)


def shape(tracer):
    return [(depth, span.name) for depth, span in tracer.walk()]


# --- nesting --------------------------------------------------------------------------------------------


def test_spans_nest_agent_model_tool_agent(kind):
    tracer = Tracer(seed=1)
    boss = team(kind, tracer)
    result = ask(boss, "find x for me")
    assert result.text == "found x"
    assert shape(tracer) == [(0, "invoke_agent orchestrator"), (1, "chat fake-model"),
                             (1, "execute_tool researcher"), (2, "invoke_agent researcher"),
                             (3, "chat fake-model"), (3, "execute_tool lookup"), (3, "chat fake-model"),
                             (1, "chat fake-model")]
    by_name = {}
    for _, span in tracer.walk():
        by_name.setdefault(span.name, []).append(span)
    root = by_name["invoke_agent orchestrator"][0]
    assert root.parent_id is None and {s.trace_id for s in tracer.spans} == {root.trace_id}
    assert by_name["invoke_agent researcher"][0].parent_id == by_name["execute_tool researcher"][0].span_id
    assert by_name["execute_tool lookup"][0].parent_id == by_name["invoke_agent researcher"][0].span_id
    assert all(s.status == "ok" and s.end is not None and s.end >= s.start for s in tracer.spans)
    assert len({s.span_id for s in tracer.spans}) == len(tracer.spans)
    assert current_span() is None


def test_each_run_is_its_own_trace(kind):
    tracer = Tracer()
    agent = make(kind, script(say("one"), say("two")), [], tracer=tracer)
    ask(agent, "a")
    ask(agent, "b")
    roots = tracer.children(None)
    assert [r.name for r in roots] == ["invoke_agent assistant"] * 2
    assert roots[0].trace_id != roots[1].trace_id
    for root in roots:
        assert [c.trace_id for c in tracer.children(root)] == [root.trace_id]


def test_parallel_tool_spans_overlap_and_are_listed_in_call_order(kind):
    barrier = threading.Barrier(2, timeout=WAIT)
    second_done = threading.Event()

    def first(q):
        barrier.wait()
        assert second_done.wait(WAIT)  # finishes last
        return "first"

    def second(q):
        barrier.wait()
        second_done.set()
        return "second"

    tracer = Tracer()
    agent = make(kind, script(use(("first", {"q": "1"}), ("second", {"q": "2"})), echo_results),
                 [tool("first", first), tool("second", second)], tracer=tracer)
    assert ask(agent, "go").text == "first | second"
    a, b = tracer.of_kind("tool")
    assert (a.name, b.name) == ("execute_tool first", "execute_tool second")
    assert a.start < b.end and b.start < a.end  # they overlap
    assert a.end is not None and b.end is not None
    assert a.attributes["gen_ai.tool.call.id"] == agent.history[1]["content"][0]["id"]


def test_sequential_tool_spans_do_not_overlap(kind):
    tracer, clock = fixed_tracer()
    agent = make(kind, script(use(("slow", {"q": "1"}), ("slower", {"q": "2"})), echo_results),
                 [tool("slow", lambda q: clock.advance(1.0) or "a"), tool("slower", lambda q: clock.advance(2.0) or "b")],
                 tracer=tracer, parallel=False)
    ask(agent, "go")
    a, b = tracer.of_kind("tool")
    assert (a.seconds, b.seconds) == (1.0, 2.0)
    assert b.start >= a.end
    assert [s.name for s in tracer.slowest(n=2)] == ["invoke_agent assistant", "execute_tool slower"]
    assert [s.name for s in tracer.slowest("tool")] == ["execute_tool slower", "execute_tool slow"]
    assert a.start_ns == 1_700_000_000_000_000_000 + round(a.start * 1e9)


def test_parallel_sub_agents_nest_under_their_own_tool_spans(kind):
    barrier = threading.Barrier(2, timeout=WAIT)

    def meet(q):
        barrier.wait()
        return q

    specs = [make(kind, script(use(("meet", {"q": n})), echo_results), [tool("meet", meet)], name=n,
                  description=f"{n}.") for n in ("left", "right")]
    tracer = Tracer()
    client = (Fake if kind == "sync" else AsyncFake)(script(use(("left", {"task": "l"}), ("right", {"task": "r"})),
                                                            echo_results))
    boss = orchestrator(client, specs, tracer=tracer)
    assert ask(boss, "go").text == "left | right"
    tools = {s.name: s for s in tracer.of_kind("tool")}
    for n in ("left", "right"):
        agent_span = next(s for s in tracer.of_kind("agent") if s.name == f"invoke_agent {n}")
        assert agent_span.parent_id == tools[f"execute_tool {n}"].span_id
        inner = tracer.children(agent_span)
        assert [s.name for s in inner] == ["chat fake-model", "execute_tool meet", "chat fake-model"]
        assert tracer.children(next(s for s in inner if s.kind == "tool")) == []


# --- errors ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("capture", [False, True])
def test_a_tool_error_is_an_error_span(kind, capture):
    def broken(q):
        raise ValueError("boom")
    tracer = Tracer(capture_content=capture)
    agent = make(kind, script(use(("broken", {"q": "x"})), say("sorry")), [tool("broken", broken)], tracer=tracer)
    assert ask(agent, "go").ok
    (span,) = tracer.of_kind("tool")
    assert span.status == "error" and span.attributes["error.type"] == "tool_error"
    # the error's text only with capture_content (test_tracing_hardening.py: it may quote the user)
    assert span.error.startswith("Error: broken raised ValueError: boom" if capture else "tool_error: details not")
    assert tracer.of_kind("agent")[0].status == "ok" and tracer.summary()["errors"] == 1


@pytest.mark.parametrize("capture", [False, True])
def test_an_api_error_is_an_error_chat_span_and_an_error_agent_span(kind, capture):
    tracer = Tracer(capture_content=capture)
    failure = InternalServerError("Internal server error", status=500, type="api_error")
    agent = make(kind, lambda req: failure, [], tracer=tracer)
    result = ask(agent, "go")
    assert result.stop == "api_error"
    (chat,) = tracer.of_kind("model")
    assert chat.status == "error" and chat.attributes["error.type"] == "InternalServerError"
    assert chat.error.startswith("InternalServerError: " + ("500 api_error: Internal server error" if capture
                                                             else "details not recorded"))
    (run,) = tracer.of_kind("agent")
    assert run.status == "error" and run.error.startswith("api_error:") and run.attributes["miniagent.stop"] == "api_error"
    assert run.attributes["error.type"] == "api_error"
    assert tracer.summary()["errors"] == 2


def test_an_exception_out_of_the_run_closes_its_spans():
    tracer = Tracer()

    class Boom(Exception):
        pass

    def respond(req):
        raise Boom("not an API error")
    agent = make("sync", respond, [], tracer=tracer)
    with pytest.raises(Boom):
        agent.run("go")
    assert [(s.kind, s.status, s.attributes.get("error.type")) for s in tracer.spans] == \
        [("agent", "error", "Boom"), ("model", "error", "Boom")]
    assert all(s.end is not None for s in tracer.spans) and current_span() is None


# --- no tracer: no spans, no cost --------------------------------------------------------------------------


def test_without_a_tracer_nothing_is_made(kind, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("span work without a tracer")
    for name in ("model_attributes", "response_attributes", "tool_attributes", "agent_attributes", "open_span"):
        monkeypatch.setattr(tracing, name, forbidden)
    monkeypatch.setattr(Tracer, "start", forbidden)
    seen = []
    agent = make(kind, script(use(("probe", {"q": "x"})), say("ok")),
                 [tool("probe", lambda q: seen.append(current_span()) or "ok")])
    assert ask(agent, "go").ok and seen == [None] and current_span() is None


def test_with_tracer_activates_and_deactivates(kind):
    tracer = Tracer()
    agent = make(kind, script(say("one"), say("two")), [])
    with tracer as active:
        assert active is tracer and tracing.active_tracer() is tracer
        ask(agent, "a")
    assert tracing.active_tracer() is None
    ask(agent, "b")
    assert [s.name for s in tracer.spans] == ["invoke_agent assistant", "chat fake-model"]


def test_nested_with_blocks_restore_the_outer_tracer():
    outer, inner = Tracer(), Tracer()
    with outer:
        with inner:
            assert tracing.active_tracer() is inner
        assert tracing.active_tracer() is outer
    assert tracing.active_tracer() is None


# --- attributes --------------------------------------------------------------------------------------------


def test_spans_use_the_genai_names_and_the_response_usage(kind):
    tracer = Tracer()
    usage = {"input_tokens": 123, "output_tokens": 45}
    agent = make(kind, script(use(("probe", {"q": "x"}), usage=usage), say("done", {"input_tokens": 200, "output_tokens": 6})),
                 [tool("probe", lambda q: "ok")], tracer=tracer, name="prober", description="Probes.")
    result = ask(agent, "go")
    first, second = tracer.of_kind("model")
    a = first.attributes
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.request.model"] == "fake-model" == a["gen_ai.response.model"]
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (123, 45)
    assert a["gen_ai.response.finish_reasons"] == ["tool_use"] and a["gen_ai.response.id"] == "msg_fake_1"
    assert (a["server.address"], a["server.port"], a["gen_ai.request.max_tokens"]) == ("fake.test", 8443, 1024)
    assert second.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    (t,) = tracer.of_kind("tool")
    assert t.attributes["gen_ai.operation.name"] == "execute_tool" and t.attributes["gen_ai.tool.name"] == "probe"
    assert t.attributes["gen_ai.tool.type"] == "function"
    assert t.attributes["gen_ai.tool.call.id"] == result.messages[1]["content"][0]["id"]
    (run,) = tracer.of_kind("agent")
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent" and run.attributes["gen_ai.agent.name"] == "prober"
    assert (run.attributes["gen_ai.usage.input_tokens"], run.attributes["gen_ai.usage.output_tokens"]) == (323, 51)
    summary = tracer.summary()
    assert (summary["agent_runs"], summary["model_calls"], summary["tool_calls"], summary["errors"]) == (1, 2, 1, 0)
    assert (summary["input_tokens"], summary["output_tokens"]) == (323, 51)


CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


def test_content_is_not_captured_by_default(kind):
    tracer = Tracer()
    agent = make(kind, script(use(("probe", {"q": "private words"})), say("private answer")),
                 [tool("probe", lambda q: "private result")], tracer=tracer, system="private system")
    ask(agent, "private question")
    for span in tracer.spans:
        assert not set(CONTENT_KEYS) & set(span.attributes), span
    assert "private" not in json.dumps([s.to_dict() for s in tracer.spans])


def test_captured_content_is_recorded_and_clipped(kind):
    tracer = Tracer(capture_content=True)
    long = "q" * (CONTENT_CHARS * 3)
    agent = make(kind, script(use(("probe", {"q": "the arguments"})), say("the answer")),
                 [tool("probe", lambda q: "r" * (CONTENT_CHARS * 2))], tracer=tracer, system="the system")
    ask(agent, long)
    first = tracer.of_kind("model")[0].attributes
    assert len(first["gen_ai.input.messages"]) == CONTENT_CHARS and first["gen_ai.input.messages"].endswith("…")
    assert "the system" in first["gen_ai.system_instructions"]
    assert "probe" in first["gen_ai.output.messages"]
    t = tracer.of_kind("tool")[0].attributes
    assert "the arguments" in t["gen_ai.tool.call.arguments"] and len(t["gen_ai.tool.call.result"]) <= CONTENT_CHARS
    assert "the answer" in tracer.of_kind("model")[1].attributes["gen_ai.output.messages"]


def test_api_keys_never_reach_a_span(kind, monkeypatch, tmp_path):
    anthropic_key, openai_key = "sk-ant-api03-FAKEFAKEFAKE0123456789abcdef", "sk-proj-FAKEOPENAI0123456789xyz"
    monkeypatch.setenv("ANTHROPIC_API_KEY", anthropic_key)
    monkeypatch.setenv("OPENAI_API_KEY", openai_key)

    def leaky(q):
        raise RuntimeError(f"could not use {anthropic_key}")

    tracer = Tracer(capture_content=True)
    # the model repeats the keys it was shown: in arguments, as a call id and even as a tool name
    respond = script(lambda req: {"content": [
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"q": f"{anthropic_key} {openai_key}"}},
        {"type": "tool_use", "id": "toolu_2", "name": "leaky", "input": {"q": "x"}},
        {"type": "tool_use", "id": anthropic_key, "name": anthropic_key, "input": {"q": "x"}}],
        "stop_reason": "tool_use"}, say(f"Your keys are {anthropic_key} and {openai_key}"))
    agent = make(kind, respond, [tool("echo", lambda q: f"echo {q}"), tool("leaky", leaky)], tracer=tracer,
                 system=f"Never say {openai_key}")
    ask(agent, f"My keys are {anthropic_key} and {openai_key}; repeat them.")
    text = tracer.to_jsonl(tmp_path / "spans.jsonl").read_text(encoding="utf-8") + tracer.tree(width=10_000)
    assert anthropic_key not in text and openai_key not in text
    assert "<redacted>" in text
    assert len(tracer.of_kind("tool")) == 3 and tracer.of_kind("tool")[1].status == "error"


# --- files ---------------------------------------------------------------------------------------------------


def test_jsonl_round_trip(kind, tmp_path):
    tracer, _ = fixed_tracer()
    ask(team(kind, tracer), "find x")
    path = tracer.to_jsonl(tmp_path / "t.jsonl")
    loaded = Tracer.from_jsonl(path)
    assert [s.to_dict() for s in loaded.spans] == [s.to_dict() for s in tracer.spans]
    assert loaded.tree() == tracer.tree() and loaded.summary() == tracer.summary()
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(tracer.spans) == 8


GOOD = {"name": "n", "kind": "tool", "trace_id": "t", "span_id": "s", "parent_id": None, "start": 0.0, "end": 1.0,
        "status": "ok", "attributes": {}}


def line(**changes):
    return json.dumps({**GOOD, **changes})


@pytest.mark.parametrize("text, where", [
    (line() + "\n{not json\n", "line 2"),
    (line(kind="robot"), "line 1"),
    (line().replace('"start": 0.0', '"start": NaN'), "line 1"),
    (line(start=None), "line 1"),
    (line(end="soon"), "line 1"),
    (line(start=True), "line 1"),
    ("[1, 2, 3]\n", "line 1"),
    ('"a string"\n', "line 1"),
    ("null\n", "line 1"),
    (line(attributes=[1]), "line 1"),
    (line(parent_id=5), "line 1"),
    (line(name=None), "line 1"),
    (line(start_ns="soon"), "line 1"),
    (line(end_ns="later"), "line 1"),
    (line(end_ns=1.5), "line 1"),
    (line(error={"not": "text"}), "line 1"),
    ("\n\n" + line() + "\n" + "[" * 100_000 + "\n", "line 4"),
    (line().replace('"end": 1.0', '"end": 1e999'), "line 1"),
], ids=["not-json", "kind", "nan", "no-start", "end-text", "bool-start", "array", "string", "null", "attrs-list",
        "parent-int", "name-null", "start-ns-text", "end-ns-text", "end-ns-float", "error-object", "deep", "infinite"])
def test_from_jsonl_rejects_garbage_naming_the_line(tmp_path, text, where):
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=where) as caught:
        Tracer.from_jsonl(path)
    assert "bad.jsonl" in str(caught.value)


def test_from_jsonl_rejects_what_is_not_a_readable_file(tmp_path):
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80\x81")
    for path in (tmp_path / "missing.jsonl", tmp_path, binary):
        with pytest.raises(ValueError, match="cannot read"):
            Tracer.from_jsonl(path)


def test_a_loaded_file_with_odd_values_still_reads(tmp_path):
    """Anything from_jsonl accepts, tree(), summary(), slowest() and walk() must survive."""
    spans = [line(span_id="self", parent_id="self", name="loops on itself"),
             line(span_id="m", kind="model", attributes={"gen_ai.usage.input_tokens": "many",
                                                         "gen_ai.usage.output_tokens": -3,
                                                         "gen_ai.response.finish_reasons": [1, None]}),
             line(span_id="a", kind="agent", attributes={"gen_ai.usage.input_tokens": 1.5, "miniagent.stop": 7}),
             line(span_id="dup"), line(span_id="dup", parent_id="dup"),
             line(span_id="z", end=None, status="weird", error="x" * 10_000)]
    chain = [line(span_id=f"c{i}", parent_id=f"c{i - 1}" if i else None, name=f"c{i}") for i in range(1_500)]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(spans + chain) + "\n", encoding="utf-8")
    tracer = Tracer.from_jsonl(path)
    tree = tracer.tree()
    walked = list(tracer.walk())
    assert len(tree.splitlines()) == len(walked) <= len(tracer.spans)
    assert (1_499, "c1499") in [(d, s.name) for d, s in walked]  # deeper than Python's recursion limit
    assert [s.span_id for _, s in walked].count("dup") == 2  # each span once, even with a repeated id
    summary = tracer.summary()
    assert summary["model_calls"] == 1 and summary["input_tokens"] == 0 and summary["output_tokens"] == 0
    assert len(tracer.slowest(n=5)) == 5


def test_a_tree_of_a_loaded_file(kind, tmp_path):
    tracer, _ = fixed_tracer()
    ask(team(kind, tracer), "find x")
    loaded = Tracer.from_jsonl(tracer.to_jsonl(tmp_path / "t.jsonl"))
    lines = loaded.tree().splitlines()
    assert len(lines) == 8 and lines[0].startswith("invoke_agent orchestrator")
    assert lines[3].startswith("    invoke_agent researcher") and all(len(x) <= 100 for x in lines)


# --- cost and the chart -------------------------------------------------------------------------------------


def test_cost_is_none_for_an_unknown_model_and_a_sum_for_a_priced_one(kind):
    prices = pytest.importorskip("miniagent.prices")
    if not hasattr(prices, "cost"):
        pytest.skip("miniagent.prices.cost is not written yet")
    tracer = Tracer()
    ask(make(kind, script(say("a")), [], tracer=tracer), "go")
    assert tracer.cost() is None
    model = next(iter(prices.PRICES))
    priced = Tracer()
    agent = make(kind, script(use(("probe", {"q": "x"}), usage={"input_tokens": 1000, "output_tokens": 100}),
                              say("b", {"input_tokens": 2000, "output_tokens": 10})),
                 [tool("probe", lambda q: "ok")], tracer=priced)
    agent.client.model = model
    ask(agent, "go")
    expected = prices.cost(model, {"input_tokens": 1000, "output_tokens": 100}) + \
        prices.cost(model, {"input_tokens": 2000, "output_tokens": 10})
    assert priced.cost() == pytest.approx(expected) and expected > 0
    root = priced.children(None)[0]
    assert priced.cost(root) == pytest.approx(expected)
    assert priced.cost(priced.of_kind("tool")[0]) == 0.0


def test_timeline_draws_one_bar_per_span(kind):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tracer, _ = fixed_tracer()
    ask(team(kind, tracer), "find x")
    tracer.spans[2].status = "error"
    figure = tracer.timeline(title="team")
    try:
        ax = figure.axes[0]
        assert len(ax.patches) == len(tracer.spans) == 8
        assert ax.get_title() == "team" and len(ax.get_yticklabels()) == 8
        assert [label.get_text().strip() for label in ax.get_yticklabels()][:2] == \
            ["invoke_agent orchestrator", "chat fake-model"]
    finally:
        plt.close(figure)


# --- the context a tool runs in ----------------------------------------------------------------------------


def test_a_tool_runs_inside_its_span_and_its_run(kind):
    seen = {}

    def probe(q):
        seen["span"], seen["run"] = current_span(), current_run()
        inner = threading.Thread(target=lambda: seen.update(thread=(current_span(), current_run())))
        inner.start()
        inner.join(WAIT)
        return "ok"

    async def aprobe(q):
        seen["aspan"], seen["arun"] = current_span(), current_run()
        return "ok"

    tools = [tool("probe", probe)] + ([tool("aprobe", aprobe)] if kind == "async" else [])
    calls = [("probe", {"q": "x"})] + ([("aprobe", {"q": "y"})] if kind == "async" else [])
    tracer = Tracer()
    agent = make(kind, script(use(*calls), say("ok")), tools, tracer=tracer)
    result = ask(agent, "go")
    spans = {s.attributes["gen_ai.tool.name"]: s for s in tracer.of_kind("tool")}
    assert seen["span"] is spans["probe"] and seen["run"].usage is result.usage
    # a thread the tool starts itself does not inherit the context: expected, as in OpenTelemetry
    # (we copy the context into the threads we start; a tool that starts its own must copy it too)
    assert seen["thread"] == (None, None)
    if kind == "async":
        assert seen["aspan"] is spans["aprobe"] and seen["arun"].usage is result.usage
    assert current_span() is None and current_run() is None


def test_a_sub_agent_started_inside_a_tool_thread_nests_and_charges_its_parent():
    tracer = Tracer()
    spec = make("sync", script(say("sub answer", {"input_tokens": 40, "output_tokens": 2})), [], name="sub",
                description="Sub.")
    delegate = agent_tool(spec)
    agent = make("sync", script(use(("sub", {"task": "t"})), echo_results), [delegate], tracer=tracer,
                 parallel=False)
    result = ask(agent, "go")
    assert result.text == "sub answer" and result.usage.input_tokens == 10 + 40 + 10
    sub_span = next(s for s in tracer.of_kind("agent") if s.name == "invoke_agent sub")
    assert sub_span.parent_id == tracer.of_kind("tool")[0].span_id


def test_asyncio_tasks_of_one_round_get_their_own_span():
    tracer = Tracer()
    seen = {}

    async def probe(q):
        await asyncio.sleep(0)
        seen[q] = current_span()
        return q

    agent = make("async", script(use(("probe", {"q": "a"}), ("probe", {"q": "b"})), echo_results),
                 [tool("probe", probe)], tracer=tracer)
    assert ask(agent, "go").text == "a | b"
    a, b = tracer.of_kind("tool")
    assert seen == {"a": a, "b": b} and a is not b


def test_span_objects_are_plain_data():
    span = Span("n", "tool", "t", "s", None, 1.0, 5)
    assert span.seconds == 0.0 and "n" in repr(span)
    tracer = Tracer(capture_content=True)  # an error's text is content (test_tracing_hardening.py)
    with pytest.raises(ValueError, match="kind"):
        tracer.start("x", "robot")
    opened = tracer.start("x", "tool")
    tracer.finish(opened, "it broke")
    assert opened.status == "error" and opened.error == "it broke" and "error.type" not in opened.attributes


def test_a_broken_on_end_callback_never_breaks_the_run(kind, monkeypatch):
    """An exporter whose collector is down raises in on_end: the run goes on, every span is kept."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-SECRETSECRET0123")
    ended = []

    def broken(span):
        raise ConnectionError("collector unreachable with sk-ant-api03-SECRETSECRET0123")

    tracer = Tracer(on_end=[broken, ended.append])
    agent = make(kind, script(use(("probe", {"q": "x"})), say("ok")), [tool("probe", lambda q: "r")], tracer=tracer)
    result = ask(agent, "go")
    assert result.ok and result.text == "ok"
    assert len(tracer.spans) == len(ended) == tracer.on_end_errors == 4
    assert all(s.status == "ok" for s in tracer.spans)
    assert tracer.last_on_end_error == "ConnectionError: collector unreachable with <redacted>"


@pytest.mark.parametrize("kind", SYNC_ASYNC)
def test_a_streamed_run_on_the_mock_records_its_chat_spans(kind):
    from miniagent import connect
    from miniagent.aclient import connect_async
    from miniagent.agent import Agent
    from miniagent.aloop import AsyncAgent

    tracer = Tracer()
    client = connect(offline=True, quiet=True) if kind == "sync" else connect_async(offline=True, quiet=True)
    client.mock.script({"content": [{"type": "tool_use", "name": "probe", "input": {"q": "x"}}]},
                       {"content": "streamed answer"})
    cls = Agent if kind == "sync" else AsyncAgent
    agent = cls(client, [tool("probe", lambda q: "ok")], stream=True, tracer=tracer)
    result = ask(agent, "go")
    assert result.text == "streamed answer"
    chats = tracer.of_kind("model")
    assert len(chats) == 2 and all(c.attributes.get("gen_ai.request.stream") is True for c in chats)
    assert all(c.attributes["gen_ai.response.time_to_first_chunk"] >= 0 for c in chats)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == agent.usage.input_tokens
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == agent.usage.output_tokens
    assert [c.attributes["gen_ai.response.finish_reasons"] for c in chats] == [["tool_use"], ["end_turn"]]


def test_each_hop_of_a_handoff_is_an_agent_span(kind):
    from miniagent.team import ahandoff, handoff

    tracer = Tracer()
    triage = make(kind, script(use(("transfer_to_billing", {"reason": "money"}))), [], name="triage",
                  description="Routes.")
    billing = make(kind, script(say("paid")), [], name="billing", description="Billing.")
    with tracer:
        out = handoff([triage, billing], "paid?") if kind == "sync" else asyncio.run(ahandoff([triage, billing], "paid?"))
    assert out.path == ["triage", "billing"] and out.text == "paid"
    assert shape(tracer) == [(0, "invoke_agent triage"), (1, "chat fake-model"), (1, "execute_tool transfer_to_billing"),
                             (0, "invoke_agent billing"), (1, "chat fake-model")]
    first, second = tracer.of_kind("agent")
    assert first.status == "ok" and first.attributes["miniagent.stop"] == "handoff"  # a hand-off is no failure
    assert second.attributes["miniagent.stop"] == "end_turn"


def test_scrub_removes_the_longest_key_first_and_reads_lowercase_names(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-12345678")
    monkeypatch.setenv("SERVICE_TOKEN", "sk-ant-12345678-and-more-secret")
    monkeypatch.setenv("my_api_key", "lowercase-secret-value")
    text = tracing.scrub("a sk-ant-12345678-and-more-secret b sk-ant-12345678 c lowercase-secret-value")
    assert text == "a <redacted> b <redacted> c <redacted>"


def test_tree_shows_a_model_chosen_name_on_one_harmless_line():
    tracer = Tracer()
    bad_name = "evil\x1b[2J\nfake line\u202e"
    agent = make("sync", script({"content": [{"type": "tool_use", "name": bad_name, "input": {}}],
                                 "stop_reason": "tool_use"}, say("ok")), [tool("x", lambda q="": "x")], tracer=tracer)
    assert agent.run("go").ok
    tree = tracer.tree(width=500)
    assert len(tree.splitlines()) == len(tracer.spans) == 4
    assert not any(ch in tree for ch in "\x1b\u202e") and "execute_tool evil" in tree
    assert tracer.of_kind("tool")[0].name == f"execute_tool {bad_name}"  # the span itself keeps what happened


def test_the_conventions_own_shapes_provider_names_cached_tokens_and_messages():
    from types import SimpleNamespace

    from miniagent import tracing as t

    assert [t.provider_name(SimpleNamespace(provider=p)) for p in ("qwen-cn", "deepseek-anthropic", "openai", None)] \
        == ["qwen", "deepseek", "openai", "anthropic"]
    attributes = t.response_attributes({"id": "m", "model": "x", "stop_reason": None, "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5, "output_tokens": 3}})
    assert attributes["gen_ai.usage.input_tokens"] == 115  # every input token, cached or not
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 100 and "gen_ai.response.finish_reasons" not in attributes
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "calling"},
                                                  {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    assert t.genai_messages(messages) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "calling"},
                                        {"type": "tool_call", "id": "t1", "name": "f", "arguments": {"a": 1}}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "t1", "result": "ok"}]}]
    assert t.genai_messages([messages[0]], "end_turn")[0]["finish_reason"] == "end_turn"
