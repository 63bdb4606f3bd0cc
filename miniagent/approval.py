"""Human approval: a tool marked `needs_approval=True` runs only when a person says yes (notebook 10).

The approver is one callback, `approve(call)`, shown `{"id", "name", "input"}` (a copy: it
cannot change what the model asked) and answering True (run it), False (don't), or a
string, the person's reason for saying no. Anything else, an approver that raises, or no
approver at all is never a yes. A refused call is not an error of the run: the model gets a
`tool_result` that says the person declined (and why), and carries on.

`ToolRegistry.run_all` and `arun_all` call `refusals` / `arefusals` here, once a round, before
any tool of the round starts: the questions come one at a time, in call order (a person
answers one question at a time). Each answer can be reported as an `approval` event
(`on_answer`); the loop passes its `on_event`, so the trace says who was asked what.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, Callable

from miniagent.messages import clean_text, safe_str, tool_result
from miniagent.tools import _raised as raised

Approver = Callable[[dict], Any]  # call {"id", "name", "input"} -> True, False or the person's reason
COROUTINE_IN_SYNC = "the approve callback is a coroutine function; use AsyncAgent to await it"


class NotAsked:
    """The answer when no one could be asked (no approver, or it failed): never an approval."""

    def __init__(self, why: str) -> None:
        self.why = why


def question(block: dict) -> dict:
    """What an approver is shown: the call, with a copy of its arguments (it must not change them)."""
    return {"id": block["id"], "name": block.get("name"), "input": copy.deepcopy(block.get("input", {}))}


def ask(approve: Approver | None, block: dict, awaitable: bool = False) -> Any:
    """The approver's answer about one call; a coroutine's answer only if `awaitable` (else NotAsked)."""
    if approve is None:
        return NotAsked("no approve callback was given")
    try:
        answer = approve(question(block))
    except Exception as exc:  # noqa: BLE001 - a broken approver never approves
        return NotAsked(f"the approve callback raised {raised(exc)}")
    if inspect.isawaitable(answer) and not awaitable:
        getattr(answer, "close", lambda: None)()  # never awaited: say so instead of warning later
        return NotAsked(COROUTINE_IN_SYNC)
    return answer


async def aask(approve: Approver | None, block: dict) -> Any:
    """`ask` for asyncio: an approver may be a coroutine function (a web page waiting for a click)."""
    answer = ask(approve, block, awaitable=True)
    if inspect.isawaitable(answer):
        try:
            answer = await answer
        except Exception as exc:  # noqa: BLE001 - a broken approver never approves
            return NotAsked(f"the approve callback raised {raised(exc)}")
    return answer


def refusals(calls: dict[int, dict], approve: Approver | None,
             on_answer: Callable[[dict], Any] | None = None) -> dict[int, dict]:
    """Ask about each call (index -> tool_use block), in order: index -> error result for each not approved.
    `on_answer(event)` hears each answer as it comes, before the next question."""
    answers = {}
    for i, block in calls.items():
        answers[i] = _heard(block, ask(approve, block), on_answer)
    return {i: refusal(calls[i], answer) for i, answer in answers.items() if answer is not True}


async def arefusals(calls: dict[int, dict], approve: Approver | None,
                    on_answer: Callable[[dict], Any] | None = None) -> dict[int, dict]:
    """`refusals` for asyncio: each answer awaited before the next question."""
    answers = {}
    for i, block in calls.items():
        answers[i] = _heard(block, await aask(approve, block), on_answer)
    return {i: refusal(calls[i], answer) for i, answer in answers.items() if answer is not True}


def _heard(block: dict, answer: Any, on_answer: Callable[[dict], Any] | None) -> Any:
    if on_answer is not None:
        on_answer(event(block, answer))
    return answer


def event(block: dict, answer: Any) -> dict:
    """The `approval` trace event for one answer."""
    if isinstance(answer, NotAsked):
        reason: str | None = f"no one was asked ({answer.why})"
    else:
        reason = answer.strip() if isinstance(answer, str) and answer.strip() else None
    return {"type": "approval", "id": block["id"], "name": block.get("name"),
            "input": copy.deepcopy(block.get("input", {})), "approved": answer is True, "reason": reason}


def refusal(block: dict, answer: Any) -> dict:
    """The error result for a call a person did not approve."""
    name = safe_str(block.get("name"))
    if isinstance(answer, NotAsked):
        why = f"no one was asked ({answer.why})"
    elif isinstance(answer, str) and answer.strip():
        why = f"they said: {clean_text(answer.strip())[:500]}"
    else:
        why = "they declined"
    return tool_result(block["id"], f"Error: the user did not approve this call to {name}, so it was not run; "
                       f"{why}. Do not call it again for the same thing: carry on without it, and tell the "
                       "user what you would have done.", is_error=True)
