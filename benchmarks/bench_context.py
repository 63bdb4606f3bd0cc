"""Context policies on one long, tool-heavy session: what each costs, and what it forgets.

The session is `miniagent.workload`'s, the one notebook 04 runs: the same tools,
questions, turns (`workload.TURNS`), policies and parameters, on one offline client
in the same order, so this table is the notebook's comparison table, number for
number, plus a last row the notebook leaves out (structured memory, notebook 09's). The claims (notebook 04, and the article's section 5):

- square law: without a policy, twice the turns cost about four times the input
  tokens (at least 3x); under a pair-safe window about twice (at most 2.5x);
- tool output is most of what an unmanaged tool-heavy session sends (at least half;
  the article says 80%);
- the article's naive window breaks with a 400; every pair-safe policy answers every turn;
- TokenBudget keeps every call within its budget (system prompt and tool schemas included);
- a pair-safe window plus tool-output truncation spends at most 25% of the unmanaged tokens;
- a summary keeps the name the user gave in turn 2; a window forgets it;
- structured memory (window + truncation, plus a small block of stated facts in every view)
  spends at most 10% of the unmanaged tokens, its extraction calls included, sends no call
  above the token budget, and recalls the name (turn 2) and the preference (mid-session)
  that the same window without it forgets.
"""

from __future__ import annotations

import miniagent
from claims import Claim
from miniagent import workload
from miniagent.workload import Session

MIN_SQUARE = 3.0       # the unmanaged session's cost for twice the turns, at least (4 is the square)
MAX_LINEAR = 2.5       # a window's, at most (2 is a straight line)
MIN_TOOL_SHARE = 0.5   # tool output's share of the unmanaged session's input tokens, at least
MAX_SHARE = 0.25       # window + truncation's share of the unmanaged session's input tokens, at most
MAX_MEMORY_SHARE = 0.10  # structured memory's share, at most
PAIR_SAFE = ("sliding window", "token budget", "summarize", "truncate tool output", "summarize tool output",
             "window + truncation", "structured memory")


def measure(turns: int = workload.TURNS) -> dict[str, Session]:
    """The session without a policy, then under each policy: one offline client, the notebook's order."""
    client = miniagent.connect(offline=True, quiet=True)
    sessions = {"none": workload.run_session(client, None, turns)}
    for label, policy in workload.policies(client, memory=True).items():
        sessions[label] = workload.run_session(client, policy, turns)
    return sessions


def claims(sessions: dict[str, Session]) -> list[Claim]:
    none, naive, window = sessions["none"], sessions["naive window"], sessions["sliding window"]
    budget, both, summary = sessions["token budget"], sessions["window + truncation"], sessions["summarize"]
    sent = workload.requests_of(none.history)
    tool_share = sum(workload.tool_output_tokens(m) for m in sent) / max(1, sum(none.per_call))
    share = both.input_tokens / max(1, none.input_tokens)
    unfinished = [label for label in PAIR_SAFE if not sessions[label].completed]
    memory = sessions["structured memory"]
    memory_share = memory.input_tokens / max(1, none.input_tokens)
    extraction = getattr(memory.policy, "largest_extraction", 0)
    memory_largest = max(memory.largest_call, extraction)
    return [
        Claim("square law", f"without a policy, twice the turns cost {none.doubling or 0:.2f}x the input tokens",
              f"at least {MIN_SQUARE:g}x; 4x is the square", (none.doubling or 0) >= MIN_SQUARE),
        Claim("a window is linear", f"under the sliding window, twice the turns cost {window.doubling or 0:.2f}x",
              f"at most {MAX_LINEAR:g}x; 2x is a straight line", 0 < (window.doubling or 0) <= MAX_LINEAR),
        Claim("tool output dominates", f"tool output is {tool_share:.1%} of the unmanaged session's input tokens",
              f"at least {MIN_TOOL_SHARE:.0%}; the article says 80%", tool_share >= MIN_TOOL_SHARE),
        Claim("the naive window breaks", "the article's trimMessages window " + (
                  f"was rejected with a {naive.ending}" if naive.broke else f"completed ({naive.ending})"),
              "a 400, as it cuts a tool_use from its tool_result", naive.ending.startswith("400 ")),
        Claim("pair-safe policies complete",
              f"{len(PAIR_SAFE) - len(unfinished)} of {len(PAIR_SAFE)} answered all {none.turns} turns"
              + (f" (not: {', '.join(unfinished)})" if unfinished else ""), "all, with no 400", not unfinished),
        Claim("the token budget holds", f"the largest call under TokenBudget sent {budget.largest_call:,} input tokens",
              f"at most {workload.BUDGET:,}", 0 < budget.largest_call <= workload.BUDGET),
        Claim("window + truncation is cheap", f"it spends {share:.1%} of the unmanaged session's input tokens",
              f"at most {MAX_SHARE:.0%}", both.completed and share <= MAX_SHARE),
        Claim("a summary remembers, a window forgets",
              f"asked their name at the end, summarize {'gave' if summary.recalled else 'did not give'} it, "
              f"the sliding window {'gave' if window.recalled else 'did not'}",
              "the summary keeps the name from turn 2, the window drops it",
              summary.recalled and window.completed and not window.recalled),
        Claim("structured memory is cheap",
              f"it spends {memory_share:.1%} of the unmanaged session's input tokens, its "
              f"{getattr(memory.policy, 'extractions', 0)} extraction calls included",
              f"at most {MAX_MEMORY_SHARE:.0%}", memory.completed and memory_share <= MAX_MEMORY_SHARE),
        Claim("structured memory stays within the budget",
              f"its largest call sent {memory_largest:,} input tokens (largest extraction call: {extraction:,})",
              f"at most {workload.BUDGET:,}", 0 < memory_largest <= workload.BUDGET),
        Claim("structured memory remembers",
              f"asked at the end, structured memory recalled: {memory.remembers}; "
              f"the same window without it: {both.remembers}",
              "the name from turn 2 and the preference from mid-session, which the window alone forgets",
              memory.recalled and memory.recalled_preference and both.completed
              and not (both.recalled or both.recalled_preference)),
    ]


def run(turns: int = workload.TURNS) -> tuple[str, list[dict], list[Claim]]:
    sessions = measure(turns)
    title = (f"Context policies: miniagent.workload's {turns}-turn tool-heavy session, as in notebook 04 "
             f"(offline mock; windows of {workload.WINDOW} messages, token budget {workload.BUDGET:,}, "
             f"tool output cut to {workload.TRUNCATE_TO:,} characters)")
    return title, workload.compare(sessions), claims(sessions)
