"""Hooks: your code before and after each tool call, and when a turn ends (notebook 15).

    hooks = Hooks()
    hooks.before("no_env_files", lambda name, args: "secrets stay out" if ".env" in str(args) else None)
    hooks.after("log", lambda name, args, output: log.append((name, output)) and None)
    hooks.at_turn_end("count", lambda event: turns.append(event))
    agent = miniagent.Agent(llm, hooks.wrap(tools), on_step=hooks.on_step)

The rules, in the order they apply:

1. `before` hooks run in the order they were added, before the tool. One that returns a string
   (its reason) or False blocks the call: the tool does not run, the hooks after it are not
   called, and the model is told "blocked by NAME: reason". None (or True) lets the call go on.
2. A `before` hook that raises blocks the call too (a broken guard never lets a call through),
   and the failure is recorded in `failures`.
3. The tool runs (its own errors are the registry's, as ever).
4. `after` hooks run in the order added, each with the tool's output. One that returns a
   string adds it to what the model reads, on a line of its own, "[NAME] text" (context, such
   as "3 tests still fail"); None adds nothing. One that raises changes nothing (the tool has
   run), and is recorded in `failures`. After a tool that raised, `after` hooks are not called.
5. `at_turn_end` hooks run, in the order added, on the loop's `stop` event (through `on_step`);
   they observe: one that raises is recorded, and the run goes on.
6. `until_done` hooks decide whether a finished run is done (`Hooks.run`): one that returns a
   string sends the agent back to work with it as the next message ("2 tests still fail"), at
   most `max_rounds` times; None lets it stop. One that raises is recorded and lets it stop.
   A run that answered, or used up its `max_iterations` for this turn, is theirs to judge; one
   that failed (an API error, the token budget) stops whatever they say.
"""

from __future__ import annotations

from typing import Any, Callable

from miniagent.messages import safe_str
from miniagent.tools import Tool, ToolRegistry

Before = Callable[[str, dict], Any]        # (tool name, arguments) -> None / True, or False / a reason
After = Callable[[str, dict, Any], Any]    # (tool name, arguments, output) -> None, or text to add
TurnEnd = Callable[[Any], Any]             # (the stop event) -> ignored


class Blocked(Exception):
    """A before hook said no: the registry answers the model with this message."""


class Hooks:
    def __init__(self) -> None:
        self._before: list[tuple[str, Before]] = []
        self._after: list[tuple[str, After]] = []
        self._turn_end: list[tuple[str, TurnEnd]] = []
        self._until_done: list[tuple[str, Callable[[Any], Any]]] = []
        self.failures: list[str] = []  # "NAME raised ValueError: ..." for each hook that failed
        self.blocked: list[str] = []   # "NAME blocked TOOL: reason" for each call a hook stopped

    def before(self, name: str, fn: Before) -> None:
        self._before.append((name, fn))

    def after(self, name: str, fn: After) -> None:
        self._after.append((name, fn))

    def at_turn_end(self, name: str, fn: TurnEnd) -> None:
        self._turn_end.append((name, fn))

    def until_done(self, name: str, fn: Callable[[Any], Any]) -> None:
        self._until_done.append((name, fn))

    def run(self, agent: Any, question: str, max_rounds: int = 3) -> Any:
        """agent.run(question), sent back to work while an `until_done` hook says it is not done."""
        result = agent.run(question)
        for _ in range(max_rounds):
            if not (result.ok or result.stop == "max_iterations"):  # an error, a budget: not the hooks' to undo
                break
            more = None
            for name, hook in self._until_done:
                try:
                    more = hook(result)
                except Exception as exc:  # noqa: BLE001 - a broken check lets the run stop
                    self.failures.append(f"{name} raised {type(exc).__name__}: {safe_str(exc)}")
                    more = None
                if isinstance(more, str) and more.strip():
                    break
            if not (isinstance(more, str) and more.strip()):
                break
            result = agent.run(f"[{name}] {more.strip()}")
        return result

    def call(self, tool: str, arguments: dict, run: Callable[..., Any]) -> Any:
        """One tool call with its hooks around it (the rules above)."""
        for name, hook in self._before:
            try:
                verdict = hook(tool, dict(arguments))
            except Exception as exc:  # noqa: BLE001 - a broken guard blocks
                self.failures.append(f"{name} raised {type(exc).__name__}: {safe_str(exc)}")
                verdict = f"the hook failed ({type(exc).__name__}), so the call was not run"
            if verdict is False or isinstance(verdict, str):
                reason = verdict if isinstance(verdict, str) else "not allowed"
                self.blocked.append(f"{name} blocked {tool}: {reason}")
                raise Blocked(f"blocked by {name}: {reason}")
        output = run(**arguments)
        added = []
        for name, hook in self._after:
            try:
                extra = hook(tool, dict(arguments), output)
            except Exception as exc:  # noqa: BLE001 - the tool has run: its result stands
                self.failures.append(f"{name} raised {type(exc).__name__}: {safe_str(exc)}")
                continue
            if isinstance(extra, str) and extra.strip():
                added.append(f"[{name}] {extra.strip()}")
        if not added:
            return output
        return "\n".join([output if isinstance(output, str) else safe_str(output), *added])

    def wrap(self, tools: ToolRegistry) -> ToolRegistry:
        """The same tools, each call going through the hooks."""
        def hooked(t: Tool) -> Tool:
            return Tool(t.name, t.description, t.input_schema, lambda **args: self.call(t.name, args, t.fn),
                        timeout=t.timeout, needs_approval=t.needs_approval)
        return ToolRegistry([hooked(t) for t in tools], max_output_chars=tools.max_output_chars)

    def on_step(self, event: Any) -> None:
        """For `Agent(on_step=...)`: runs the turn-end hooks on the loop's stop event."""
        if not isinstance(event, dict) or event.get("type") != "stop":
            return
        for name, hook in self._turn_end:
            try:
                hook(event)
            except Exception as exc:  # noqa: BLE001 - an observer's failure never ends the run
                self.failures.append(f"{name} raised {type(exc).__name__}: {safe_str(exc)}")
