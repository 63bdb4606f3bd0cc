"""Several agents: a specialist as a tool, an orchestrator, and a hand-off.

Delegation is checked with fake clients whose answers and token counts each test
decides (agent_fakes.py), on both drivers: specialists of one round run at the same
time; every token a specialist spends is charged to the run that asked it, and counts
against its budget; a specialist that fails is an error result, never an exception; an
agent that can call itself stops at `max_depth`; and none of the specialist's transcript
reaches the parent. The hand-off runs on the strict mock with a scripted model, so the
requests it records show which system prompt and tools each agent really sent.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading

import pytest

from agent_fakes import SYNC_ASYNC, AsyncFake, Fake, ask, make, results_in, say, script, use
from miniagent import connect
from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent
from miniagent.errors import InternalServerError
from miniagent.loop import current_run, run_loop
from miniagent.messages import tool_results, user
from miniagent.aclient import AsyncClient
from miniagent.clientcore import OFFLINE_API_KEY
from miniagent.team import MAX_DEPTH, DelegationError, ahandoff, agent_tool, handoff, orchestrator, transfer_tool
from miniagent.tools import Tool, ToolRegistry

WAIT = 5.0


@pytest.fixture(params=SYNC_ASYNC)
def kind(request):
    return request.param


def specialist(kind, name, respond, tools=(), **settings):
    return make(kind, respond, tools, name=name, description=f"The {name} specialist.",
                system=f"You are the {name} specialist.", **settings)


def boss_client(kind, respond):
    return Fake(respond) if kind == "sync" else AsyncFake(respond)


def echo_results(request):
    """A parent model that answers with its tool results, joined."""
    return say(" | ".join(f"{'ERR ' if r.get('is_error') else ''}{r['content']}" for r in results_in(request)))


def waiting_tool(name, barrier, seen):
    """A tool that only returns once every barrier party is inside its own tool at the same time."""
    def wait(q: str) -> str:
        seen.append(name)
        barrier.wait()
        return f"{name} says {q}"
    return Tool(f"{name}_lookup", "Look something up.", {"type": "object", "properties": {"q": {"type": "string"}},
                                                          "required": ["q"]}, wait)


def test_two_specialists_run_at_the_same_time_and_their_tokens_are_charged_to_the_parent(kind):
    barrier = threading.Barrier(2, timeout=WAIT)  # passes only if both specialists' tools run at once
    seen: list = []
    weather = specialist(kind, "weather", script(use(("weather_lookup", {"q": "Paris"}),
                                                     usage={"input_tokens": 100, "output_tokens": 50}),
                                                 lambda req: say("Sunny", {"input_tokens": 120, "output_tokens": 30})),
                         [waiting_tool("weather", barrier, seen)])
    math = specialist(kind, "math", script(use(("math_lookup", {"q": "2+2"}), usage={"input_tokens": 7, "output_tokens": 3}),
                                           say("4", {"input_tokens": 9, "output_tokens": 1})),
                      [waiting_tool("math", barrier, seen)])
    boss = orchestrator(boss_client(kind, script(use(("weather", {"task": "Weather in Paris?"}),
                                                     ("math", {"task": "What is 2+2?"})), echo_results)),
                        [weather, math], token_budget=100_000)
    assert isinstance(boss, AsyncAgent) == (kind == "async")
    result = ask(boss, "Weather in Paris, and 2+2?")
    assert result.ok and result.text == "Sunny | 4" and sorted(seen) == ["math", "weather"]
    # own: 2 calls of (10 in, 5 out); weather: 100+120 in, 50+30 out; math: 7+9 in, 3+1 out
    expected = (20 + 220 + 16, 10 + 80 + 4, 6)
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.calls) == expected
    assert (boss.usage.input_tokens, boss.usage.output_tokens, boss.usage.calls) == expected
    charged = {e["source"]: (e["input_tokens"], e["output_tokens"], e["calls"]) for e in boss.trace.of_type("usage")
               if "source" in e}
    assert charged == {"weather": (220, 80, 2), "math": (16, 4, 2)}
    assert boss.trace.summary()["total_tokens"] == boss.usage.total_tokens
    # the specialists themselves were forked: the originals spent nothing and remember nothing
    assert weather.usage.calls == math.usage.calls == 0 and weather.history == math.history == []


def test_the_parent_sees_only_the_task_and_the_short_answer(kind):
    inner = Tool("secret_tool", "Internal.", {"type": "object", "properties": {}}, lambda: "SECRET-INTERNAL-RESULT")
    spec = specialist(kind, "researcher", script(use(("secret_tool", {})), say("The short answer.")), [inner])
    boss = orchestrator(boss_client(kind, script(use(("researcher", {"task": "Find it."})), echo_results)), [spec])
    result = ask(boss, "Find it for me.")
    assert result.text == "The short answer."
    for where in (json.dumps(boss.history), json.dumps(boss.client.requests)):
        assert "secret_tool" not in where and "SECRET-INTERNAL-RESULT" not in where
    uses = [b for m in boss.history if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"]
    assert [(b["name"], b["input"]) for b in uses] == [("researcher", {"task": "Find it."})]
    # and the specialist was sent only the task, not the parent's conversation
    assert spec.client.requests[0]["messages"] == [user("Find it.")]
    assert spec.client.requests[0]["system"] == "You are the researcher specialist."


def test_the_parent_budget_counts_a_childs_tokens(kind):
    spec = specialist(kind, "big", script(say("done", {"input_tokens": 5_000, "output_tokens": 0})))
    boss = orchestrator(boss_client(kind, script(use(("big", {"task": "t"})), echo_results)), [spec],
                        token_budget=1_000)
    result = ask(boss, "go")
    assert result.stop == "token_budget" and len(boss.client.requests) == 1  # no second call of its own
    assert result.usage.total_tokens == 15 + 5_000 and "budget 1,000" in result.reason


def test_a_child_gets_at_most_the_parents_remaining_budget(kind):
    budgets: list = []
    probe = Tool("probe", "Probe.", {"type": "object", "properties": {}},
                 lambda: budgets.append(current_run().token_budget) or "ok")
    spec = specialist(kind, "child", script(use(("probe", {})), say("fine")), [probe], token_budget=50_000)
    boss = orchestrator(boss_client(kind, script(use(("child", {"task": "t"})), echo_results)), [spec],
                        token_budget=1_000)
    assert ask(boss, "go").ok
    assert budgets == [1_000 - 15] and spec.token_budget == 50_000  # the fork was limited, not the original
    # with a smaller budget of its own, the child keeps that
    spec2 = specialist(kind, "child", script(use(("probe", {})), say("fine")), [probe], token_budget=100)
    boss2 = orchestrator(boss_client(kind, script(use(("child", {"task": "t"})), echo_results)), [spec2],
                         token_budget=1_000)
    assert ask(boss2, "go").ok and budgets[-1] == 100


def test_a_child_that_overruns_its_share_is_an_error_result_and_the_parent_stops(kind):
    probe = Tool("probe", "Probe.", {"type": "object", "properties": {}}, lambda: "ok")
    spec = specialist(kind, "child", script(use(("probe", {}), usage={"input_tokens": 2_000, "output_tokens": 0})),
                      [probe])
    boss = orchestrator(boss_client(kind, script(use(("child", {"task": "t"})))), [spec], token_budget=1_000)
    result = ask(boss, "go")
    block = tool_results(result.messages[2])[0]
    assert block["is_error"] and "child stopped before answering (token_budget)" in block["content"]
    assert result.stop == "token_budget" and len(spec.client.requests) == 1


@pytest.mark.parametrize("failure", ["api_error", "max_iterations"])
def test_a_failing_specialist_is_an_error_result_and_the_parent_carries_on(kind, failure):
    if failure == "api_error":
        spec = specialist(kind, "flaky", lambda req: InternalServerError("Internal server error", status=500,
                                                                         type="api_error"))
    else:
        loopy = Tool("again", "Again.", {"type": "object", "properties": {"n": {"type": "integer"}}}, lambda n=0: n)
        spec = specialist(kind, "flaky", lambda req: use(("again", {"n": len(req["messages"])})), [loopy],
                          max_iterations=2)
    boss = orchestrator(boss_client(kind, script(use(("flaky", {"task": "t"})), echo_results)), [spec])
    result = ask(boss, "go")
    assert result.ok and result.stop == "end_turn"
    block = tool_results(result.messages[2])[0]
    assert block["is_error"] and f"flaky stopped before answering ({failure})" in block["content"]
    assert result.text.startswith("ERR Error: flaky raised DelegationError")


def test_a_specialist_whose_api_fails_after_retries_on_the_mock():
    client = connect(offline=True, quiet=True, max_retries=2, sleep=lambda s: None)
    client.mock.fault(500, times=3)
    spec = Agent(client, [], name="flaky", description="Flaky.")
    boss = orchestrator(Fake(script(use(("flaky", {"task": "t"})), echo_results)), [spec])
    result = boss.run("go")
    assert result.ok and [r["status"] for r in client.mock.requests] == [500, 500, 500]
    assert "flaky stopped before answering (api_error)" in tool_results(result.messages[2])[0]["content"]


def test_an_agent_that_calls_itself_stops_at_max_depth(kind):
    def respond(req):  # always delegate to itself, unless told it cannot
        told = results_in(req)
        if told:
            return say(f"depth answer: {told[0]['content'][:80]}")
        return use(("recurse", {"task": "again"}))
    agent = make(kind, respond, [], name="recurse", description="Calls itself.")
    agent.tools.register(agent_tool(agent))
    result = ask(agent, "go")
    assert result.ok
    # the root and MAX_DEPTH levels below it each made two calls; the deepest was refused
    assert len(agent.client.requests) == 2 * (MAX_DEPTH + 1)
    refusals = [r for req in agent.client.requests for r in results_in(req) if r.get("is_error")]
    assert len(refusals) == 1 and f"max_depth={MAX_DEPTH}" in refusals[0]["content"]


def test_max_depth_one_allows_one_level():
    seen = []
    leaf = Agent(Fake(script(say("leaf"))), [], name="leaf", description="Leaf.")
    mid = Agent(Fake(lambda req: say(results_in(req)[0]["content"]) if results_in(req)
                     else use(("leaf", {"task": "t"}))), [agent_tool(leaf, max_depth=1)], name="mid",
                description="Mid.")
    top = Agent(Fake(lambda req: seen.append(results_in(req)) or say("top") if results_in(req)
                     else use(("mid", {"task": "t"}))), [agent_tool(mid, max_depth=1)])
    assert top.run("go").ok
    assert "max_depth=1" in seen[0][0]["content"]  # mid itself could not call leaf


def test_max_result_chars_cuts_a_long_answer(kind):
    spec = specialist(kind, "verbose", script(say("x" * 5_000)))
    tool = agent_tool(spec, max_result_chars=300)
    boss = make(kind, script(use(("verbose", {"task": "t"})), echo_results), [tool])
    result = ask(boss, "go")
    content = tool_results(result.messages[2])[0]["content"]
    assert len(content) <= 300 and "characters omitted" in content and content.startswith("xxx")


def test_agent_tool_checks_its_arguments():
    nameless = Agent(Fake(script()), [], name="quiet")
    with pytest.raises(ValueError, match="needs a description"):
        agent_tool(nameless)
    assert agent_tool(nameless, description="Does things.").name == "quiet"
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="max_depth"):
            agent_tool(nameless, description="x", max_depth=bad)
    with pytest.raises(ValueError, match="needs a description"):
        transfer_tool(nameless)
    with pytest.raises(ValueError, match="name"):
        Agent(Fake(script()), [], name=" ")


def test_an_async_specialist_is_a_coroutine_tool():
    spec = specialist("async", "a", script(say("async answer")))
    assert inspect.iscoroutinefunction(agent_tool(spec).fn)
    assert not inspect.iscoroutinefunction(agent_tool(specialist("sync", "s", script())).fn)


def test_two_async_specialists_overlap_under_an_async_orchestrator():
    inside, both = 0, asyncio.Event()

    async def meet(q: str) -> str:
        nonlocal inside
        inside += 1
        if inside == 2:
            both.set()
        await asyncio.wait_for(both.wait(), WAIT)  # only returns if the other specialist is here too
        return q

    tools = [Tool("meet", "Meet.", {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}, meet)]
    specs = [specialist("async", n, script(use(("meet", {"q": n})), lambda req: say(results_in(req)[0]["content"])),
                        tools) for n in ("left", "right")]
    boss = orchestrator(AsyncFake(script(use(("left", {"task": "l"}), ("right", {"task": "r"})), echo_results)), specs)
    assert isinstance(boss, AsyncAgent)
    result = asyncio.run(boss.run("go"))
    assert result.text == "left | right" and boss.usage.calls == 6


def test_the_orchestrator_follows_its_client_not_its_specialists():
    """A blocking client with async specialists (or the reverse) must still give an agent that can run."""
    specs = [specialist("async", "a", script(say("from a")))]
    boss = orchestrator(Fake(script(use(("a", {"task": "t"})), echo_results)), specs)
    assert not isinstance(boss, AsyncAgent) and boss.run("go").text == "from a"
    specs = [specialist("sync", "s", script(say("from s")))]
    boss = orchestrator(AsyncFake(script(use(("s", {"task": "t"})), echo_results)), specs)
    assert isinstance(boss, AsyncAgent) and asyncio.run(boss.run("go")).text == "from s"


def test_delegating_outside_any_run_works_and_charges_nobody():
    spec = Agent(Fake(script(say("alone"))), [], name="solo", description="Solo.")
    out = ToolRegistry([agent_tool(spec)]).run({"type": "tool_use", "id": "t1", "name": "solo", "input": {"task": "t"}})
    assert out == {"type": "tool_result", "tool_use_id": "t1", "content": "alone"}
    assert issubclass(DelegationError, Exception) and spec.usage.calls == 0  # the fork spent, not the original


def test_fork_shares_nothing_mutable():
    agent = Agent(Fake(script(say("one"), say("two"))), [], name="f", description="F.", create={"temperature": 0})
    agent.run("first")
    clone = agent.fork()
    assert clone.history == [] and len(clone.trace) == 0 and clone.usage.calls == 0 and clone.last_result is None
    for attr in ("history", "trace", "usage", "create"):
        assert getattr(clone, attr) is not getattr(agent, attr), attr
    clone.create["temperature"] = 1
    assert agent.create == {"temperature": 0}
    clone.run("second")
    assert len(agent.history) == 2 and agent.usage.calls == 1 and len(clone.history) == 2
    assert clone.tools is agent.tools and clone.client is agent.client  # shared on purpose (the docstring says so)


# --- hand-off, on the strict mock --------------------------------------------------------------------


def _lookup(name):
    return Tool(f"{name}_lookup", f"{name} data.", {"type": "object", "properties": {}}, lambda: f"{name} data")


def routed(routes):
    """A mock script: the answer depends on which agent asks (its system prompt) and what its tools allow."""
    def respond(body):
        return routes[body["system"]](body)
    return respond


def transfer_names(body):
    return [t["name"] for t in body.get("tools") or [] if t["name"].startswith("transfer_to_")]


@pytest.fixture
def llm():
    client = connect(offline=True, quiet=True)
    yield client
    assert all(r["status"] == 200 for r in client.mock.records), "the strict mock rejected a request"


class Relay:
    """handoff() with Agents, or ahandoff() with AsyncAgents on an AsyncClient of the same mock."""

    def __init__(self, kind, llm):
        self.kind, self.llm = kind, llm
        self.client = llm if kind == "sync" else AsyncClient(
            api_key=OFFLINE_API_KEY, base_url=llm.base_url, model=llm.model, mode="offline",
            transport=llm.mock.async_transport(), mock=llm.mock)

    def agent(self, name, tools=(), system=None, **settings):
        cls = Agent if self.kind == "sync" else AsyncAgent
        return cls(self.client, list(tools), name=name, description=f"{name.title()}.",
                   system=system or f"{name.title()}.", **settings)

    def run(self, agents, question, **options):
        if self.kind == "sync":
            return handoff(agents, question, **options)
        return asyncio.run(ahandoff(agents, question, **options))


@pytest.fixture(params=SYNC_ASYNC)
def relay(request, llm):
    return Relay(request.param, llm)


def test_handoff_moves_the_conversation_to_the_chosen_agent(relay, llm):
    triage = relay.agent("triage", system="Route.")
    billing = relay.agent("billing", [_lookup("billing")], system="Billing.")
    tech = relay.agent("tech", [_lookup("tech")], system="Tech.")
    llm.mock.script(routed({
        "Route.": lambda b: {"content": [{"type": "tool_use", "name": "transfer_to_billing",
                                          "input": {"reason": "an invoice"}}]},
        "Billing.": lambda b: {"content": "Your invoice is paid."},
        "Tech.": lambda b: pytest.fail("tech was never chosen")}), repeat=True)
    out = relay.run([triage, billing, tech], "Is my invoice paid?")
    assert out.path == ["triage", "billing"] and out.result.stop == "end_turn" and out.text == "Your invoice is paid."
    first, second = [r["body"] for r in llm.mock.requests]
    assert first["system"] == "Route." and transfer_names(first) == ["transfer_to_billing", "transfer_to_tech"]
    assert second["system"] == "Billing."
    assert [t["name"] for t in second["tools"]] == ["billing_lookup", "transfer_to_triage", "transfer_to_tech"]
    assert second["messages"][0] == user("Is my invoice paid?")  # the same history, carried on
    assert second["messages"][1]["content"][0]["name"] == "transfer_to_billing"
    assert tool_results(second["messages"][2])[0]["content"] == "Transferred to billing; it answers from here."
    reported = [r["response"]["usage"] for r in llm.mock.requests]
    assert out.usage.total_tokens == sum(u["input_tokens"] + u["output_tokens"] for u in reported)
    assert out.usage.calls == 2


def test_a_transfer_ends_the_loop_with_handoff(llm):
    llm.mock.script({"content": [{"type": "tool_use", "name": "transfer_to_x", "input": {}}]})
    target = Agent(llm, [], name="x", description="X.")
    result = run_loop(llm, [user("hi")], tools=[transfer_tool(target)], handoff_tools={"transfer_to_x"})
    assert result.stop == "handoff" and not result.ok and result.iterations == 1
    assert tool_results(result.messages[-1])[0]["content"].startswith("Transferred to x")


def test_a_failed_transfer_does_not_hand_off(llm):
    llm.mock.script({"content": [{"type": "tool_use", "name": "transfer_to_x", "input": {"reason": 5}}]},
                    {"content": "I will answer myself."})
    target = Agent(llm, [], name="x", description="X.")
    result = run_loop(llm, [user("hi")], tools=[transfer_tool(target)], handoff_tools={"transfer_to_x"})
    assert result.stop == "end_turn" and result.text == "I will answer myself."


def test_the_agent_handed_to_is_the_one_whose_transfer_worked(relay, llm):
    """The first transfers of the turn fail (an unknown agent, bad arguments); the one that worked decides."""
    a, b, c = (relay.agent(n, [_lookup(n)]) for n in "abc")
    llm.mock.script(routed({
        "A.": lambda body: {"content": [
            {"type": "tool_use", "name": "transfer_to_nobody", "input": {}},
            {"type": "tool_use", "name": "transfer_to_b", "input": {"reason": 5}},
            {"type": "tool_use", "name": "transfer_to_c", "input": {"reason": "c knows"}}]},
        "B.": lambda body: {"content": "b answered"},
        "C.": lambda body: {"content": "c answered"}}), repeat=True)
    out = relay.run([a, b, c], "who?")
    assert out.path == ["a", "c"] and out.text == "c answered"


def test_max_handoffs_stops_ping_pong(relay, llm):
    """Two agents that always pass the question on: after max_handoffs the holder has no transfer left."""
    def passer(body):
        names = transfer_names(body)
        return {"content": [{"type": "tool_use", "name": names[0], "input": {}}]} if names else {"content": "fine, me"}
    ping, pong = relay.agent("ping", [_lookup("ping")]), relay.agent("pong", [_lookup("pong")])
    llm.mock.script(routed({"Ping.": passer, "Pong.": passer}), repeat=True)
    out = relay.run([ping, pong], "who answers?", max_handoffs=3)
    assert out.path == ["ping", "pong", "ping", "pong"] and out.text == "fine, me"
    bodies = [r["body"] for r in llm.mock.requests]
    assert [transfer_names(b) for b in bodies] == [["transfer_to_pong"], ["transfer_to_ping"], ["transfer_to_pong"], []]
    assert bodies[-1]["system"] == "Pong." and [t["name"] for t in bodies[-1]["tools"]] == ["pong_lookup"]


def test_max_handoffs_zero_means_no_transfer_tools(relay, llm):
    llm.mock.script({"content": "only me"})
    solo, other = relay.agent("solo", [_lookup("solo")]), relay.agent("other")
    out = relay.run([solo, other], "q", max_handoffs=0)
    assert out.path == ["solo"] and transfer_names(llm.mock.requests[0]["body"]) == []


def test_start_picks_the_first_agent(relay, llm):
    llm.mock.script({"content": "second here"})
    first, second = relay.agent("first"), relay.agent("second")
    out = relay.run([first, second], "q", start=second)
    assert out.path == ["second"] and llm.mock.requests[0]["body"]["system"] == "Second."


def test_handoff_checks_its_agents():
    client = Fake(script())
    a, a2 = Agent(client, [], name="same", description="A."), Agent(client, [], name="same", description="B.")
    with pytest.raises(ValueError, match="unique"):
        handoff([a, a2], "q")
    stranger = Agent(client, [], name="stranger", description="S.")
    with pytest.raises(ValueError, match="not one of the agents"):
        handoff([a], "q", start=stranger)
    with pytest.raises(ValueError, match="at least one"):
        handoff([], "q")
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="max_handoffs"):
            handoff([a], "q", max_handoffs=bad)
    assert client.requests == []


def test_an_empty_task_is_an_error_result(kind):
    spec = specialist(kind, "picky", script())
    boss = orchestrator(boss_client(kind, script(use(("picky", {"task": "   "})), echo_results)), [spec])
    result = ask(boss, "go")
    assert result.ok and result.text.startswith("ERR Error: picky raised ValueError")
    assert spec.client.requests == []


def test_many_specialists_at_once_are_all_charged_exactly(kind):
    n = 12
    specs = [specialist(kind, f"s{i}", script(say(f"a{i}", {"input_tokens": 100 + i, "output_tokens": i})))
             for i in range(n)]
    boss = orchestrator(boss_client(kind, script(use(*[(f"s{i}", {"task": "t"}) for i in range(n)]), echo_results)),
                        specs)
    result = ask(boss, "go")
    assert result.text == " | ".join(f"a{i}" for i in range(n))
    expected = (20 + sum(100 + i for i in range(n)), 10 + sum(range(n)), 2 + n)
    assert (boss.usage.input_tokens, boss.usage.output_tokens, boss.usage.calls) == expected
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.calls) == expected


def test_the_wrong_driver_for_a_handoff_says_which_to_use():
    asynchronous = make("async", script(), [], name="a", description="A.")
    with pytest.raises(TypeError, match="ahandoff"):
        handoff([asynchronous], "q")
    blocking = make("sync", script(), [], name="b", description="B.")
    with pytest.raises(TypeError, match="use run_loop"):
        asyncio.run(ahandoff([blocking], "q"))
    assert asynchronous.client.requests == blocking.client.requests == []


def test_a_handoff_keeps_the_callers_history_and_each_agents_approver(kind):
    from agent_fakes import results_in as told
    ran = []
    danger = Tool("wipe", "Wipe.", {"type": "object", "properties": {}}, lambda: ran.append(1) or "wiped",
                  needs_approval=True)
    triage = make(kind, script(use(("transfer_to_ops", {}))), [], name="triage", description="Routes.",
                  approve=lambda call: True)  # triage's approver must not approve ops' calls
    ops = make(kind, script(use(("wipe", {})), lambda req: say(told(req)[0]["content"][:40])), [danger], name="ops",
               description="Ops.", approve=lambda call: "not today")
    history = [user("earlier"), {"role": "assistant", "content": "earlier answer"}]
    before = json.dumps(history)
    out = handoff([triage, ops], "wipe it", history=history) if kind == "sync" else \
        asyncio.run(ahandoff([triage, ops], "wipe it", history=history))
    assert ran == [] and out.text.startswith("Error: the user did not approve")
    assert json.dumps(history) == before and out.messages[:3] == [*history, user("wipe it")]
    assert triage.client.requests[0]["messages"][:2] == history


def test_after_the_last_handoff_an_agent_without_tools_gets_transfers_that_refuse(relay, llm):
    """The history holds transfer calls, so the request must define tools: the holder's transfers are
    there, but refuse; the model reads the refusal and answers itself."""
    def ping(body):
        return {"content": [{"type": "tool_use", "name": "transfer_to_pong", "input": {}}]}

    def pong(body):
        last = body["messages"][-1]["content"]
        refused = isinstance(last, list) and any(b.get("is_error") for b in tool_results({"content": last}))
        if refused:
            return {"content": "then I answer: 42"}
        return {"content": [{"type": "tool_use", "name": "transfer_to_ping", "input": {}}]}
    first, second = relay.agent("ping"), relay.agent("pong")
    llm.mock.script(routed({"Ping.": ping, "Pong.": pong}), repeat=True)
    out = relay.run([first, second], "who answers?", max_handoffs=1)
    assert out.path == ["ping", "pong"] and out.text == "then I answer: 42"
    bodies = [r["body"] for r in llm.mock.requests]
    assert [transfer_names(b) for b in bodies] == [["transfer_to_pong"], ["transfer_to_ping"], ["transfer_to_ping"]]
    refusal = results_in(bodies[-1])[0]
    assert refusal["is_error"] is True and "no more hand-offs" in refusal["content"]


def test_a_specialist_that_starts_after_the_budget_is_spent_is_refused_by_the_runs_budget():
    """Each specialist of a round is capped at what was left when the round began; and they all draw on
    the run's one ledger, so a specialist that starts after its sibling spent the rest makes no call."""
    from miniagent.builtin_tools import default_tools

    llm = connect(offline=True, quiet=True)
    tools = {t.name: t for t in default_tools()}
    weather = Agent(llm, [tools["get_weather"]], name="weather_expert", description="A weather specialist: "
                    "knows the current weather and temperature of any city.")
    math = Agent(llm, [tools["calculate"]], name="math_expert", description="A math specialist: calculates "
                 "arithmetic, percentages and totals exactly.")
    first_done = threading.Event()
    w, m = agent_tool(weather), agent_tool(math)

    def weather_first(task):
        try:
            return w.fn(task=task)
        finally:
            first_done.set()

    def math_after(task):
        assert first_done.wait(5)  # the weather specialist has spent its call by now
        return m.fn(task=task)
    boss = Agent(llm, [Tool(w.name, w.description, w.input_schema, weather_first),
                       Tool(m.name, m.description, m.input_schema, math_after)], token_budget=400)
    result = boss.run("What is the weather in Paris and Tokyo, and what is 1299 * 0.85?")
    outcome = {e["name"]: e["content"] for e in boss.trace.of_type("tool_result")}
    first = llm.mock.requests[0]["response"]["usage"]
    left = 400 - first["input_tokens"] - first["output_tokens"]
    assert f"tokens used, budget {left}." in outcome["weather_expert"]  # its cap: what the round began with
    assert "stopped: the delegating run's budget: " in outcome["math_expert"]
    assert "budget 400." in outcome["math_expert"]
    calls = [r["response"]["usage"] for r in llm.mock.requests]
    assert len(calls) == 2 and result.usage.total_tokens == sum(u["input_tokens"] + u["output_tokens"] for u in calls)
    assert result.stop == "token_budget" and result.usage.total_tokens <= 400 + max(
        u["input_tokens"] + u["output_tokens"] for u in calls)
