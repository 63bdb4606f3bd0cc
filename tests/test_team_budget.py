"""One run's token budget bounds everything spent on its behalf, whatever the fan-out and the depth.

The defect (issue 24, item 9): each parallel specialist was given the parent's whole remainder
and passed its own whole remainder on, so spending grew with fan-out^depth: `token_budget=1000`
with fan-out 3 and the default depth spent 13,400 tokens in 67 calls. Now every run of a
delegation tree draws on one ledger (`team.Ledger`), and the bound is

    spent <= token_budget + the largest single model call

checked here on fake models (exact token counts), on the strict mock (its counts are the
estimate the ledger reserves by, so the bound is exact offline) over random fan-outs, depths
and budgets with both drivers, and on the ledger itself under threads.
"""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_fakes import SYNC_ASYNC, ask, make, results_in, say, use
from miniagent import connect
from miniagent.aclient import AsyncClient
from miniagent.agent import Agent
from miniagent.aloop import AsyncAgent
from miniagent.clientcore import OFFLINE_API_KEY
from miniagent.aloop import arun_loop
from miniagent.loop import run_loop
from miniagent.messages import user
from miniagent.team import MAX_DEPTH, Ledger, agent_tool

CALL = {"input_tokens": 150, "output_tokens": 50}  # 200 tokens a call, as in the issue's figure
NAMES = ["alpha", "beta", "gamma", "delta"]
QUESTION = "Research the topic of solar power, please."


def fake_tree(kind, fan_out, budget, max_depth=MAX_DEPTH):
    """`fan_out` specialists, each able to ask all of them (itself too), under a root that asks them all.

    Every model call costs 200 tokens; a model that has results answers, else it delegates to everyone."""
    names = [f"s{i}" for i in range(fan_out)]

    def respond(request):
        if results_in(request):
            return say("done", CALL)
        return use(*[(n, {"task": "t"}) for n in names], usage=CALL)
    agents = [make(kind, respond, [], name=n, description=f"Specialist {n}.") for n in names]
    for a in agents:
        for b in agents:
            a.tools.register(agent_tool(b, max_depth=max_depth))
    root = make(kind, respond, [agent_tool(b, max_depth=max_depth) for b in agents], token_budget=budget)
    return root, agents


@pytest.mark.parametrize("kind", SYNC_ASYNC)
def test_the_issues_figure_budget_1000_fan_out_3_default_depth(kind):
    """Before: 13,400 tokens in 67 calls (both drivers). Now: at most one call past the budget."""
    root, agents = fake_tree(kind, 3, 1_000)
    result = ask(root, "go")
    calls = len(root.client.requests) + sum(len(a.client.requests) for a in agents)
    assert result.stop == "token_budget"
    assert result.usage.total_tokens <= 1_000 + 200, (result.usage.total_tokens, calls)
    assert result.usage.calls == calls  # every call made on its behalf is charged to the root


def mock_tree(kind, fan_out, depth, budget):
    """The same tree on the strict mock: research specialists the mock asks all at once, every turn."""
    llm = connect(offline=True, quiet=True)
    client, cls = llm, Agent
    if kind == "async":
        client, cls = AsyncClient(api_key=OFFLINE_API_KEY, base_url=llm.base_url, model=llm.model, mode="offline",
                                  transport=llm.mock.async_transport(), mock=llm.mock), AsyncAgent
    agents = [cls(client, [], name=f"{n}_expert",
                  description=f"A research specialist ({n}): researches any topic and reports.")
              for n in NAMES[:fan_out]]
    for a in agents:
        for b in agents:
            a.tools.register(agent_tool(b, max_depth=depth))
    return llm, cls(client, [agent_tool(b, max_depth=depth) for b in agents], token_budget=budget)


def spent_on_the_mock(llm):
    """(every token the mock billed, the largest single call, calls), from what the mock answered."""
    billed = [r["response"]["usage"] for r in llm.mock.requests if r["status"] == 200]
    sizes = [u["input_tokens"] + u["output_tokens"] + u.get("cache_read_input_tokens", 0)
             + u.get("cache_creation_input_tokens", 0) for u in billed]
    return sum(sizes), max(sizes), len(sizes)


@settings(deadline=None)  # a few dozen mock calls in threads: a loaded machine must not make it flaky
@given(kind=st.sampled_from(SYNC_ASYNC), fan_out=st.integers(1, 4), depth=st.integers(1, MAX_DEPTH),
       budget=st.integers(1, 6_000))
def test_spent_never_exceeds_the_budget_by_more_than_one_call(kind, fan_out, depth, budget):
    llm, root = mock_tree(kind, fan_out, depth, budget)
    result = ask(root, QUESTION)
    billed, largest, calls = spent_on_the_mock(llm)
    assert billed <= budget + largest, (billed, budget, largest, calls)
    # and everything the mock billed was charged to the root run: the bound is on the whole bill
    assert (result.usage.total_tokens, result.usage.calls) == (billed, calls)


def test_a_generous_budget_changes_nothing():
    """A budget the whole tree fits in: every specialist answers, as without a budget."""
    llm, free = mock_tree("sync", 2, 2, None)
    unbounded = free.run(QUESTION)
    llm2, budgeted = mock_tree("sync", 2, 2, 1_000_000)
    bounded = budgeted.run(QUESTION)
    assert unbounded.ok and bounded.ok and bounded.text == unbounded.text
    assert spent_on_the_mock(llm2) == spent_on_the_mock(llm)


@pytest.mark.parametrize("kind", SYNC_ASYNC)
def test_a_specialist_refused_by_the_shared_budget_is_an_error_result_that_says_so(kind):
    """Two specialists asked together when the budget can pay for neither call in full: the first
    to ask runs on credit, alone; the other is refused, an error result naming the run's budget."""
    root, agents = fake_tree(kind, 2, 300, max_depth=1)
    result = ask(root, "go")
    assert result.stop == "token_budget"
    refused = [r for req in root.client.requests for r in results_in(req) if r.get("is_error")]
    # the root's second call was refused too, so its tool results were never sent: read them from the history
    results = [b for m in result.messages if isinstance(m["content"], list) for b in m["content"]
               if b.get("type") == "tool_result"]
    errors = [b["content"] for b in results if b.get("is_error")]
    assert refused == [] and len(errors) == 2 and all("stopped before answering (token_budget)" in e for e in errors)
    ran, stopped = sorted(errors, key=lambda e: "delegating run" in e)
    assert "stopped: 200 tokens used, budget 100" in ran  # its share of what was left, spent on credit
    # refused while the other's call ran, or after it had spent the run's budget: which, depends on timing
    assert "stopped: the delegating run's budget: " in stopped
    assert "200 tokens used and 1," in stopped and "held by calls still running" in stopped \
        or "400 tokens used, budget 300" in stopped, stopped
    assert result.usage.total_tokens <= 300 + 200


def test_a_specialists_own_smaller_budget_still_caps_it():
    """The shared ledger adds the run's bound; a specialist's own token_budget still caps its share."""
    def respond(request):
        return say("done", CALL) if results_in(request) else use(("s0", {"task": "t"}), usage=CALL)
    spec = make("sync", respond, [], name="s0", description="Specialist s0.", token_budget=100)
    spec.tools.register(agent_tool(spec))
    root = make("sync", respond, [agent_tool(spec)], token_budget=100_000)
    result = root.run("go")
    # the specialist made one call (on credit) and its fork stopped: its own cap, not the root's budget
    assert result.ok and result.usage.calls == 3
    assert "stopped: 200 tokens used, budget 100" in result.messages[2]["content"][0]["content"]


# --- the ledger itself --------------------------------------------------------------------------------


def test_ledger_admits_what_fits_and_one_call_on_credit_alone():
    ledger = Ledger(1_000)
    assert ledger.admit(400) is None and ledger.admit(600) is None  # both fit: 1,000 reserved
    assert "held by calls still running" in ledger.admit(1)
    ledger.settle(400, 100)
    ledger.settle(600, 100)  # 200 spent, nothing running
    assert ledger.admit(5_000) is None  # does not fit, but nothing else runs and 800 are left: on credit
    assert "held by calls still running" in ledger.admit(1)  # nothing beside a call on credit
    ledger.settle(5_000, 900)  # 1,100 spent: over by less than that one call
    assert ledger.admit(1) == "1,100 tokens used, budget 1,000"


def test_a_share_draws_on_its_parent_and_says_whose_budget_refused():
    root = Ledger(1_000)
    share = root.share(300)
    assert share.limit == 300 and share.admit(50) is None
    assert (root.held, share.held) == (50, 50)
    share.settle(50, 250)
    assert (root.spent, share.spent, root.held) == (250, 250, 0)
    assert share.admit(100) is None  # 50 left of the share: on credit at its level, fits at the root's
    share.settle(100, 100)
    assert share.admit(1) == "350 tokens used, budget 300"
    other = root.share(2_000)  # a share bigger than what the parent has left: the parent still refuses
    root_call = root.admit(600)
    assert root_call is None and "the delegating run's budget" in other.admit(100)


def test_the_ledger_holds_its_bound_under_threads():
    """Threads admitting and settling at random: spent never passes limit + the largest single charge,
    and every admitted call's reservation is given back."""
    ledger, lock, charges = Ledger(10_000), threading.Lock(), []
    start = threading.Barrier(8, timeout=5)

    def worker(seed):
        rng = random.Random(seed)
        start.wait()
        for _ in range(200):
            reservation = rng.randint(1, 800)
            if ledger.admit(reservation) is None:
                actual = rng.randint(0, reservation)
                with lock:
                    charges.append(actual)
                ledger.settle(reservation, actual)
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert ledger.held == 0 and ledger.spent == sum(charges)
    assert ledger.spent <= 10_000 + max(charges)


def test_a_call_that_fails_or_is_cancelled_gives_its_reservation_back():
    from miniagent.errors import InternalServerError

    ledger = Ledger(10_000)
    failing = make("sync", lambda req: InternalServerError("down", status=500, type="api_error"), [])
    result = run_loop(failing.client, [user("hi")], token_budget=ledger)
    assert result.stop == "api_error" and (ledger.held, ledger.spent) == (0, 0)

    async def forever(messages, **kwargs):
        await asyncio.Event().wait()

    class Stuck:
        max_tokens = 1024
        create = staticmethod(forever)

    async def cancel_it():
        task = asyncio.ensure_future(arun_loop(Stuck(), [user("hi")], token_budget=ledger))
        for _ in range(100):
            await asyncio.sleep(0)
            if ledger.held:
                break
        assert ledger.held > 0
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(cancel_it())
    assert (ledger.held, ledger.spent) == (0, 0)
