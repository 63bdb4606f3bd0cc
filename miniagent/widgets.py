"""Notebook views of an agent: a chat box and a trace table (ipywidgets).

This module imports ipywidgets, so `miniagent/__init__.py` never imports it: only
`from miniagent.widgets import ChatView` does. Each view also has a plain-text form
(its `repr`), which is what a terminal, a log and nbval (which skips widget views and
compares text only) see.

The browser test finds the parts by their CSS classes: `miniagent-chat-input`,
`miniagent-chat-send`, `miniagent-chat-transcript`, `miniagent-chat-tokens`, and in the
transcript `miniagent-answer` (the answer, growing while it streams).
"""

from __future__ import annotations

import html
import json
from typing import Any

import ipywidgets as widgets

from miniagent.trace import Trace, describe

_TRANSCRIPT_STYLE = ("max-height:420px;overflow-y:auto;padding:6px 8px;border:1px solid #ddd;"
                     "border-radius:4px;font-size:13px;line-height:1.45")


def _args(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _indent(text: str, prefix: str) -> str:
    return text.replace("\n", "\n" + prefix)


class ChatView(widgets.VBox):
    """A transcript, a text box and a Send button (Enter sends too), and a token count.

    Each question's tool calls appear as collapsible lines (`<details>`) holding the
    arguments and the result. `send(text)` does exactly what clicking Send does.

    The answer is streamed (`stream=False` waits for it whole): the transcript is drawn
    again at each piece of text, and a tool call shows as soon as its name is known,
    its arguments growing (its result shows once the next answer begins: the view is
    drawn from the stream's callbacks, not from the tools). Once the run ends, the
    turn is drawn from the run's result and trace, exactly as an unstreamed run draws
    it, so the text form (what nbval compares) does not depend on how it arrived.
    """

    def __init__(self, agent: Any, *, stream: bool = True) -> None:
        self.agent = agent
        self.stream = stream
        self.turns: list[dict] = []  # {"question", "tools": [(call, result)], "answer", "stopped", "forming"}
        self._live: _LiveTurn | None = None
        self.transcript = widgets.HTML()
        self.input = widgets.Text(placeholder="Ask the agent…", layout=widgets.Layout(flex="1 1 auto", width="auto"))
        self.button = widgets.Button(description="Send", button_style="primary", tooltip="Send (or press Enter)")
        self.tokens = widgets.HTML()
        self.transcript.add_class("miniagent-chat-transcript")
        self.input.add_class("miniagent-chat-input")
        self.button.add_class("miniagent-chat-send")
        self.tokens.add_class("miniagent-chat-tokens")
        super().__init__([self.transcript, widgets.HBox([self.input, self.button]), self.tokens])
        self.add_class("miniagent-chat")
        self.button.on_click(lambda _button: self._send_from_ui())
        # Enter in the box: the front end sends a "submit" message (Text.on_submit is deprecated).
        self.input.on_msg(lambda _w, content, _buffers: content.get("event") == "submit" and self._send_from_ui())
        self._render()

    def send(self, text: str | None = None, buffers: Any = None) -> str:
        """Ask the agent `text` (default: what is in the box); show and return the answer."""
        if isinstance(text, dict):  # ipywidgets' own message channel shares the name (focus() uses it)
            return super().send(text, buffers)
        if text is not None and not isinstance(text, str):
            raise TypeError(f"send() takes the question as a string, got {type(text).__name__}")
        question = self.input.value if text is None else text
        if not question.strip():
            return ""
        self.input.value = ""
        turn: dict = {"question": question, "tools": [], "answer": "", "stopped": None}
        self.turns.append(turn)
        self._busy(True)
        start = len(self.agent.trace)
        live: dict[str, Any] = {}
        if self.stream:
            self._live = _LiveTurn(turn, self.agent.trace, start, self._render_live)
            live = {"stream": True, "on_text": self._live.text, "on_tool_use": self._live.tool_use}
        try:
            result = self.agent.run(question, **live)
        except Exception as exc:
            turn["answer"] = ""  # as an unstreamed run shows it: no answer, and why
            turn["stopped"] = f"{type(exc).__name__}: {exc}"
            raise
        else:
            turn["tools"] = _tool_pairs(self.agent.trace.events[start:])
            turn["answer"] = result.text
            turn["stopped"] = None if result.ok else f"{result.stop}: {result.reason}"
            return result.text
        finally:
            self._live = None
            turn.pop("forming", None)
            self._busy(False)

    def _send_from_ui(self) -> None:
        try:
            self.send()
        except Exception:  # noqa: BLE001 - already shown in the transcript; a callback has nowhere to raise to
            pass

    def _busy(self, busy: bool) -> None:
        self.input.disabled = self.button.disabled = busy
        self.button.description = "…" if busy else "Send"
        self._render(thinking=busy)

    # --- rendering ---------------------------------------------------------------------

    def _render_live(self) -> None:
        """Draw the transcript while a streamed answer arrives (busy: input still disabled)."""
        self._render(thinking=True)

    def _render(self, thinking: bool = False) -> None:
        parts = [_turn_html(turn) for turn in self.turns]
        if thinking and self._live is not None and self._live.turn["answer"]:
            thinking = False  # the answer is arriving: it shows that something is happening
        if thinking:
            parts.append('<div style="color:#888"><i>thinking…</i></div>')
        if not parts:
            parts.append('<div style="color:#888">No messages yet. Ask something below.</div>')
        self.transcript.value = f'<div style="{_TRANSCRIPT_STYLE}">{"".join(parts)}</div>'
        self.tokens.value = f'<span style="color:#666;font-size:12px">{html.escape(self.token_line())}</span>'

    def token_line(self) -> str:
        usage = self.agent.usage
        return f"tokens: {usage.input_tokens:,} in · {usage.output_tokens:,} out · {usage.calls} model calls"

    def __repr__(self) -> str:
        lines = [f"ChatView · {len(self.turns)} question(s) · {self.token_line()}"]
        for turn in self.turns:
            lines.append(f"you: {_indent(turn['question'], '     ')}")
            for call, result in turn["tools"]:
                shown = "(no result)" if result is None else describe(result).split(" -> ", 1)[-1]
                lines.append(f"  tool {call['name']}({_args(call.get('input', {}))}) -> {_indent(shown, '    ')}")
            if turn["answer"]:
                lines.append(f"agent: {_indent(turn['answer'], '       ')}")
            if turn["stopped"]:
                lines.append(f"[stopped: {turn['stopped']}]")
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        """The widget, plus the whole transcript as text (ipywidgets would cut it at 110 characters)."""
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = repr(self)
        return data


class _LiveTurn:
    """A turn as its answer streams in: the text of the current round, the tool calls so far.

    Fed by the loop's callbacks; reads the trace (from `start`) to learn that a new round
    began (the text shown is the current response's) and which calls have run and with
    what result. `redraw()` is called after each change.
    """

    def __init__(self, turn: dict, trace: Trace, start: int, redraw: Any) -> None:
        self.turn, self.trace, self.start, self.redraw = turn, trace, start, redraw
        self._seen = start   # trace events already looked at
        turn["forming"] = {}  # block index -> the latest on_tool_use dict of this round

    def text(self, delta: str) -> None:
        self._catch_up()
        self.turn["answer"] += delta
        self.redraw()

    def tool_use(self, call: dict) -> None:
        self._catch_up()
        self.turn["forming"][call["index"]] = call
        self.redraw()

    def _catch_up(self) -> None:
        """Take in the trace events recorded since the last callback."""
        events = self.trace.events
        new, self._seen = events[self._seen:], len(events)
        if any(e["type"] == "request" for e in new):  # a new round: its text replaces the last one's
            self.turn["answer"], self.turn["forming"] = "", {}
        if any(e["type"] in ("tool_call", "tool_result") for e in new):
            self.turn["tools"] = _tool_pairs(events[self.start:])


def _tool_pairs(events: list[dict]) -> list[tuple[dict, dict | None]]:
    """(tool_call, tool_result) events of one run, in the order the model asked for them."""
    results = {e.get("id"): e for e in events if e["type"] == "tool_result"}
    return [(e, results.get(e.get("id"))) for e in events if e["type"] == "tool_call"]


def _turn_html(turn: dict) -> str:
    esc = html.escape
    out = [f'<div class="miniagent-user" style="margin:6px 0"><b>You:</b> {esc(turn["question"])}</div>']
    for call, result in turn["tools"]:
        failed = bool(result and result.get("is_error"))
        content = "(no result)" if result is None else result.get("content", "")
        content = content if isinstance(content, str) else _args(content)
        out.append(
            f'<details class="miniagent-tool" style="margin:2px 0 2px 16px;color:{"#b00" if failed else "#555"}">'
            f'<summary>tool: {esc(call["name"])}({esc(_args(call.get("input", {})))})</summary>'
            f'<div style="margin-left:16px">arguments: <code>{esc(_args(call.get("input", {})))}</code><br>'
            f'{"error" if failed else "result"}:<pre style="white-space:pre-wrap;margin:2px 0">{esc(content)}</pre>'
            f"</div></details>")
    for call in (turn.get("forming") or {}).values():  # streaming: calls of this round not yet run
        shown = _args(call["input"]) if call["done"] and call["input"] is not None else call["partial_json"] + "…"
        out.append(f'<div class="miniagent-tool-forming" style="margin:2px 0 2px 16px;color:#888">'
                   f'tool: {esc(str(call["name"]))}({esc(shown)})</div>')
    if turn["answer"]:
        out.append(f'<div class="miniagent-answer" style="margin:6px 0;white-space:pre-wrap">'
                   f"<b>Agent:</b> {esc(turn['answer'])}</div>")
    if turn["stopped"]:
        out.append(f'<div class="miniagent-stopped" style="color:#b00">stopped: {esc(turn["stopped"])}</div>')
    return "".join(out)


class TraceView(widgets.HTML):
    """A trace as an HTML table (call `refresh()` after more events arrive)."""

    def __init__(self, trace: Trace, *, width: int = 90) -> None:
        super().__init__()
        self.trace = trace
        self.width = width
        self.add_class("miniagent-trace")
        self.refresh()

    def refresh(self) -> None:
        rows = [f"<tr><td>{n}</td><td>{elapsed:.3f} s</td><td><code>{html.escape(kind)}</code></td>"
                f"<td style='text-align:left'>{html.escape(what)}</td></tr>"
                for n, elapsed, kind, what in self.trace.rows(self.width)]
        self.value = ("<table style='font-size:12px'><thead><tr><th>#</th><th>elapsed</th><th>type</th>"
                      f"<th style='text-align:left'>what</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")

    def __repr__(self) -> str:
        return self.trace.table(width=self.width)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = repr(self)
        return data
