"""Notebook views of an agent: a chat box and a trace table (ipywidgets).

This module imports ipywidgets, so `miniagent/__init__.py` never imports it: only
`from miniagent.widgets import ChatView` does. Each view also has a plain-text form
(its `repr`), which is what a terminal, a log and nbval (which skips widget views and
compares text only) see.

The browser test finds the parts by their CSS classes: `miniagent-chat-input`,
`miniagent-chat-send`, `miniagent-chat-transcript`, `miniagent-chat-tokens`, in the
transcript `miniagent-answer` (the answer, growing while it streams) and
`miniagent-decision` (an approval decision on a tool line), and, while a call waits
for a person, the panel `miniagent-approval` with its buttons `miniagent-approve` and
`miniagent-deny` and its box `miniagent-deny-reason`.
"""

from __future__ import annotations

import html
import inspect
import json
import threading
from typing import Any, Callable

import ipywidgets as widgets

from miniagent.i18n import say, t, width
from miniagent.events import Trace, describe

_TRANSCRIPT_STYLE = ("max-height:420px;overflow-y:auto;padding:6px 8px;border:1px solid #ddd;"
                     "border-radius:4px;font-size:13px;line-height:1.45")
_PANEL_STYLE = "padding:6px 8px;border:1px solid #e0a800;border-radius:4px;background:#fff8e1;font-size:13px"
WAITING = "waiting for your approval…"


def _args(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _indent(text: str, prefix: str) -> str:
    return text.replace("\n", "\n" + prefix)


class ChatView(widgets.VBox):
    """A transcript, a text box and a Send button (Enter sends too), and a token count.

    Each question's tool calls appear as collapsible lines (`<details>`) holding the
    arguments and the result. `send(text)` asks a question from code, synchronously;
    Send and Enter ask what is in the box, in the background (see below).

    The answer is streamed (`stream=False` waits for it whole): the transcript is drawn
    again at each piece of text, and a tool call shows as soon as its name is known,
    its arguments growing (its result shows once the next answer begins: the view is
    drawn from the stream's callbacks, not from the tools). Once the run ends, the
    turn is drawn from the run's result and trace, exactly as an unstreamed run draws
    it, so the text form (what nbval compares) does not depend on how it arrived.

    Approval. A call of a tool marked `needs_approval` runs only if someone says yes,
    and who that is depends on how the question was asked:

    - `approve=` given (a function `approve(call) -> True | False | reason`): it decides,
      for questions from the box and from `send()` alike;
    - otherwise, a question from the box (Send, Enter): you do. A panel under the
      transcript shows the call (tool name, arguments) with Approve and Deny and a box
      for why not (told to the model); the run waits until you click;
    - otherwise, `send()` from code: the agent's own approver if it has one, else no one
      is asked and the agent denies the call (the model is told, and answers without
      it). `send()` never waits for a click: a cell that waits for a widget of its own
      output would wait for ever (see the next paragraph), and a notebook must read the
      same on every run. Pass `approve=` to decide in code.

    The decision shows on the call's line, in the transcript and in the text form:
    "approved by you", "denied by you: <why>", "approved" or "denied: <why>" when a
    function decided, "denied: no one was asked" when no one could be.

    Why the box runs questions in a worker thread. The kernel handles one message at a
    time on its main thread, and a click is a message: while a run held that thread (as
    it would inside the Send button's handler), an Approve button could be drawn but its
    click would never be handled. So Send runs `agent.run` on a thread of its own
    (`wait()` joins it) and returns at once; the approver that thread calls shows the
    panel and blocks on a `threading.Event` that the button's handler, on the main
    thread, sets. Widget updates from the worker reach the page as ipykernel sends them
    from any thread. A thread rather than an asyncio task on the kernel's event loop:
    `Agent.run` is blocking (its model calls and tools would stall the kernel's loop,
    and the click with it); a thread does not depend on how a given ipykernel version
    schedules tasks between messages; and it behaves the same outside a kernel (the
    unit tests). An `AsyncAgent` is refused for the same reason: its run would need the
    kernel's loop, or a loop of its own that its client was not made on.
    One question at a time: the box and Send are disabled while a run is in flight, and
    `send()` then raises. The kernel's interrupt stops the main thread only: it does not
    stop a run asked from the box.
    """

    def __init__(self, agent: Any, *, stream: bool = True,
                 approve: Callable[[dict], Any] | None = None) -> None:
        if approve is not None and not callable(approve):
            raise TypeError(f"approve must be a function approve(call) -> True, False or a reason, "
                            f"got {type(approve).__name__}")
        if inspect.iscoroutinefunction(getattr(agent, "run", None)):
            raise TypeError("ChatView drives a sync Agent (its questions run in a thread); "
                            "give it miniagent.Agent rather than AsyncAgent")
        self.agent = agent
        self.stream = stream
        self.approve = approve
        self.turns: list[dict] = []  # {"question", "tools": [(call, result, approval)], "answer", "stopped"}
        self._live: _LiveTurn | None = None
        self._running = threading.Lock()   # held while a question is being answered (from code or the box)
        self._worker: threading.Thread | None = None
        self._pending: _Pending | None = None  # the call waiting for a click
        self._by_you: dict[str, dict] = {}     # call id -> {"approved", "reason"} decided with the buttons
        self._run: tuple[dict, int] | None = None  # (turn, first trace event) of the run in flight
        self.transcript = widgets.HTML()
        self.input = widgets.Text(placeholder=t("Ask the agent…", "向 Agent 提问…"),
                                  layout=widgets.Layout(flex="1 1 auto", width="auto"))
        self.button = widgets.Button(description=t("Send", "发送"), button_style="primary",
                                     tooltip=t("Send (or press Enter)", "发送（或按回车）"))
        self.tokens = widgets.HTML()
        self.transcript.add_class("miniagent-chat-transcript")
        self.input.add_class("miniagent-chat-input")
        self.button.add_class("miniagent-chat-send")
        self.tokens.add_class("miniagent-chat-tokens")
        # The approval panel: in the view's children only while a call waits for a click.
        self.approval_call = widgets.HTML()
        self.approve_button = widgets.Button(description=t("Approve", "批准"), button_style="success",
                                             tooltip=t("Run this call", "执行这次调用"), icon="check")
        self.deny_button = widgets.Button(description=t("Deny", "拒绝"), button_style="danger",
                                          tooltip=t("Do not run it; the model is told (and why, if you say)",
                                                    "不执行；模型会收到通知（如果你写了原因，也会收到原因）"),
                                          icon="times")
        self.reason = widgets.Text(placeholder=t("Why not? (optional, for Deny; Enter denies)",
                                                 "为什么不批准？（可选，用于拒绝；按回车即拒绝）"),
                                   layout=widgets.Layout(flex="1 1 auto", width="auto"))
        self.approval = widgets.VBox([self.approval_call,
                                      widgets.HBox([self.approve_button, self.deny_button, self.reason])])
        self.approval.add_class("miniagent-approval")
        self.approve_button.add_class("miniagent-approve")
        self.deny_button.add_class("miniagent-deny")
        self.reason.add_class("miniagent-deny-reason")
        self._row = widgets.HBox([self.input, self.button])
        super().__init__([self.transcript, self._row, self.tokens])
        self.add_class("miniagent-chat")
        self.button.on_click(lambda _button: self._send_from_ui())
        # Enter in the box: the front end sends a "submit" message (Text.on_submit is deprecated).
        self.input.on_msg(lambda _w, content, _buffers: content.get("event") == "submit" and self._send_from_ui())
        self.approve_button.on_click(lambda _button: self.decide(True))
        self.deny_button.on_click(lambda _button: self.decide(False))
        self.reason.on_msg(lambda _w, content, _buffers: content.get("event") == "submit" and self.decide(False))
        self._render()

    # --- asking ------------------------------------------------------------------------

    def send(self, text: str | None = None, buffers: Any = None) -> str:
        """Ask the agent `text` (default: what is in the box) here and now; show and return the answer.

        Calls needing approval are decided by `approve=`, else by the agent's own
        approver, else denied (no one to ask: see the class docstring); never by a click.
        """
        if isinstance(text, dict):  # ipywidgets' own message channel shares the name (focus() uses it)
            return super().send(text, buffers)
        if text is not None and not isinstance(text, str):
            raise TypeError(f"send() takes the question as a string, got {type(text).__name__}")
        question = self.input.value if text is None else text
        if not question.strip():
            return ""
        if not self._running.acquire(blocking=False):
            raise RuntimeError("the chat is still answering the question sent from its box; "
                               "wait for it (view.wait()) before sending another")
        try:
            return self._answer(self._begin(question), self.approve)
        finally:
            self._running.release()

    def _send_from_ui(self) -> None:
        """Send and Enter: start the run in a worker thread and return, so clicks keep arriving."""
        question = self.input.value
        if not question.strip() or not self._running.acquire(blocking=False):
            return  # nothing to ask, or a run is in flight (its box is disabled; a late Enter lands here)
        try:
            turn = self._begin(question)
            approve = self.approve or self.ask_in_panel
            self._worker = threading.Thread(target=self._answer_in_worker, args=(turn, approve),
                                            daemon=True, name="miniagent-chat")
            self._worker.start()
        except BaseException:
            self._running.release()
            raise

    def _answer_in_worker(self, turn: dict, approve: Callable[[dict], Any]) -> None:
        try:
            self._answer(turn, approve)
        except Exception:  # noqa: BLE001 - already shown in the transcript; a worker has nowhere to raise to
            pass
        finally:
            self._running.release()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the question sent from the box to be answered; False if `timeout` ran out first."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)
            return not worker.is_alive()
        return True

    @property
    def busy(self) -> bool:
        """Whether a question is being answered."""
        return self._running.locked()

    def _begin(self, question: str) -> dict:
        self.input.value = ""
        turn: dict = {"question": question, "tools": [], "answer": "", "stopped": None}
        self.turns.append(turn)
        self._busy(True)
        return turn

    def _answer(self, turn: dict, approve: Callable[[dict], Any] | None) -> str:
        start = len(self.agent.trace)
        self._run = (turn, start)
        options: dict[str, Any] = {} if approve is None else {"approve": approve}
        if self.stream:
            self._live = _LiveTurn(turn, self.agent.trace, start, self._render_live)
            options.update(stream=True, on_text=self._live.text, on_tool_use=self._live.tool_use)
        try:
            result = self.agent.run(turn["question"], **options)
        except Exception as exc:
            turn["answer"] = ""  # as an unstreamed run shows it: no answer, and why
            turn["stopped"] = f"{type(exc).__name__}: {exc}"
            raise
        else:
            turn["tools"] = _tool_rows(self.agent.trace.events[start:])
            turn["answer"] = result.text
            turn["stopped"] = None if result.ok else f"{result.stop}: {result.reason}"
            return result.text
        finally:
            self._live = self._run = None
            turn.pop("forming", None)
            self._busy(False)

    def _busy(self, busy: bool) -> None:
        self.input.disabled = self.button.disabled = busy
        self.button.description = "…" if busy else t("Send", "发送")
        self._render(thinking=busy)

    # --- approval with the buttons ------------------------------------------------------

    def ask_in_panel(self, call: dict) -> bool | str:
        """The approver of questions from the box: show `call` in the panel, wait for a click.

        Runs on the run's thread (never the kernel's main thread: a click could not
        arrive there); returns True, or the reason typed for Deny, or False.
        """
        if threading.current_thread() is threading.main_thread():
            raise RuntimeError("ask_in_panel waits for a click, and the kernel handles clicks on its main "
                               "thread, so it cannot wait there: ask from the chat's box, or give send() "
                               "an approve= function")
        pending = _Pending(call)
        self._pending = pending
        self._show_waiting(call)
        try:
            pending.answered.wait()
        finally:
            self._pending = None
            self.children = [self.transcript, self._row, self.tokens]
        if pending.by_you:
            self._by_you[call["id"]] = {"approved": pending.approved, "reason": pending.reason or None}
        self._render(thinking=True)
        return True if pending.approved else (pending.reason or False)

    def decide(self, approved: bool, reason: str | None = None) -> bool:
        """Answer the call waiting in the panel (what Approve and Deny do); False if none waits.

        `reason` (for a denial) defaults to what is typed in the panel's box.
        """
        pending = self._pending
        if pending is None or pending.answered.is_set():
            return False
        pending.approved, pending.by_you = bool(approved), True
        pending.reason = "" if approved else (self.reason.value if reason is None else reason).strip()
        self.approve_button.disabled = self.deny_button.disabled = self.reason.disabled = True
        pending.answered.set()
        return True

    @property
    def pending(self) -> dict | None:
        """The call waiting for Approve or Deny, if one is."""
        pending = self._pending
        return None if pending is None or pending.answered.is_set() else pending.call

    def _show_waiting(self, call: dict) -> None:
        if self._run is not None:  # the call's line in the transcript, marked as waiting
            turn, start = self._run
            turn["tools"] = _tool_rows(self.agent.trace.events[start:])
        pretty = json.dumps(call.get("input", {}), ensure_ascii=False, indent=2)
        self.approval_call.value = (
            f'<div style="{_PANEL_STYLE}"><b>{t("The agent wants to run", "Agent 想要执行")}</b> '
            f'<code class="miniagent-approval-tool">{html.escape(str(call.get("name")))}</code> '
            f'<b>{t("with", "参数为")}</b><pre style="margin:4px 0;white-space:pre-wrap">{html.escape(pretty)}</pre>'
            + t("Approve it to run it; Deny tells the model it was not run (and why, if you say).",
                "批准即执行；拒绝会告诉模型这次调用没有执行（如果你写了原因，也会告诉它原因）。") + "</div>")
        self.reason.value = ""
        self.approve_button.disabled = self.deny_button.disabled = self.reason.disabled = False
        self._render(thinking=True)
        self.children = [self.transcript, self.approval, self._row, self.tokens]  # last: the panel shows ready

    def close(self) -> None:
        """Close the view; a call waiting for a click is denied, so its run can end."""
        pending = getattr(self, "_pending", None)  # None too when __init__ refused its arguments
        if pending is not None and not pending.answered.is_set():
            pending.approved, pending.reason = False, "the chat was closed before anyone answered"
            pending.answered.set()
        super().close()

    # --- rendering ---------------------------------------------------------------------

    def _render_live(self) -> None:
        """Draw the transcript while a streamed answer arrives (busy: input still disabled)."""
        self._render(thinking=True)

    def _render(self, thinking: bool = False) -> None:
        waiting = self.pending
        parts = [_turn_html(turn, self._by_you, waiting) for turn in self.turns]
        if thinking and self._live is not None and self._live.turn["answer"]:
            thinking = False  # the answer is arriving: it shows that something is happening
        if thinking and waiting is None:
            parts.append(f'<div style="color:#888"><i>{say("chat_thinking")}</i></div>')
        if not parts:
            parts.append(f'<div style="color:#888">{t("No messages yet. Ask something below.", "还没有消息。在下面提个问题吧。")}</div>')
        self.transcript.value = f'<div style="{_TRANSCRIPT_STYLE}">{"".join(parts)}</div>'
        usage = self.agent.usage
        line = self.token_line()
        self.tokens.value = f'<span style="color:#666;font-size:12px">{html.escape(line)}</span>'

    def token_line(self) -> str:
        usage = self.agent.usage
        return say("chat_tokens", input=f"{usage.input_tokens:,}", output=f"{usage.output_tokens:,}", calls=usage.calls)

    def __repr__(self) -> str:
        lines = [say("chat_head", n=len(self.turns), tokens=self.token_line())]
        waiting = self.pending
        you, agent = say("chat_you"), say("chat_agent")  # later lines of a text are indented under its first
        for turn in self.turns:
            lines.append(you + _indent(turn["question"], " " * width(you)))
            for call, result, approval in turn["tools"]:
                shown = say("chat_no_result") if result is None else describe(result).split(" -> ", 1)[-1]
                decision = _decision_shown(_decision(call, approval, self._by_you, waiting))
                decision = f" · {decision}" if decision else ""
                lines.append(f"{say('chat_tool')}{call['name']}({_args(call.get('input', {}))}){_indent(decision, '    ')}"
                             f" -> {_indent(shown, '    ')}")
            if turn["answer"]:
                lines.append(agent + _indent(turn["answer"], " " * width(agent)))
            if turn["stopped"]:
                lines.append(say("chat_stopped", reason=turn["stopped"]))
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        """The widget, plus the whole transcript as text (ipywidgets would cut it at 110 characters)."""
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = repr(self)
        return data


class _Pending:
    """A call waiting for Approve or Deny; `answered` is set by the click's handler."""

    def __init__(self, call: dict) -> None:
        self.call = call
        self.answered = threading.Event()
        self.approved = False
        self.by_you = False  # answered with the buttons (or decide()), not by close()
        self.reason = ""


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
        if any(e["type"] in ("tool_call", "tool_result", "approval") for e in new):
            self.turn["tools"] = _tool_rows(events[self.start:])


def _tool_rows(events: list[dict]) -> list[tuple[dict, dict | None, dict | None]]:
    """(tool_call, tool_result, approval) events of one run, in the order the model asked for them."""
    results = {e.get("id"): e for e in events if e["type"] == "tool_result"}
    approvals = {e.get("id"): e for e in events if e["type"] == "approval"}
    return [(e, results.get(e.get("id")), approvals.get(e.get("id"))) for e in events if e["type"] == "tool_call"]


def _decision(call: dict, approval: dict | None, by_you: dict[str, dict], waiting: dict | None) -> str:
    """What the tool line says about approval: "" for a call that needed none.

    From the run's approval event (the loop records one for every call that needed
    approval, "no one was asked" included); until it arrives, from the click itself.
    """
    mine = by_you.get(call.get("id"))
    if approval is None:
        if waiting is not None and waiting.get("id") == call.get("id"):
            return WAITING
        if mine is None:
            return ""
        approval = mine
    who = " by you" if mine is not None else ""
    if approval.get("approved"):
        return f"approved{who}"
    reason = approval.get("reason")
    return f"denied{who}" + (f": {reason}" if isinstance(reason, str) and reason.strip() else "")


def _decision_shown(decision: str) -> str:
    """A tool line's approval, as the page shows it (the decision itself stays English: code compares it)."""
    chinese = [(WAITING, "等待你的批准…"), ("approved by you", "已由你批准"), ("approved", "已批准"),
               ("denied by you", "已被你拒绝"), ("denied", "已拒绝")]
    for english, zh in chinese:
        if decision.startswith(english):
            return t(decision, zh + decision[len(english):].replace(": ", "：", 1))
    return decision


def _turn_html(turn: dict, by_you: dict[str, dict] | None = None, waiting: dict | None = None) -> str:
    esc = html.escape
    out = [f'<div class="miniagent-user" style="margin:6px 0"><b>{t("You:", "你：")}</b> {esc(turn["question"])}</div>']
    for call, result, approval in turn["tools"]:
        failed = bool(result and result.get("is_error"))
        content = say("chat_no_result") if result is None else result.get("content", "")
        content = content if isinstance(content, str) else _args(content)
        decision = _decision(call, approval, by_you or {}, waiting)
        colour = "#a66b00" if decision == WAITING else "#b00" if decision.startswith("denied") else "#080"
        shown = (f' · <span class="miniagent-decision" style="font-weight:bold;color:{colour}">'
                 f'{esc(_decision_shown(decision))}</span>' if decision else "")
        out.append(
            f'<details class="miniagent-tool" style="margin:2px 0 2px 16px;color:{"#b00" if failed else "#555"}">'
            f'<summary>{t("tool: ", "工具：")}{esc(call["name"])}({esc(_args(call.get("input", {})))}){shown}</summary>'
            f'<div style="margin-left:16px">{t("arguments: ", "参数：")}<code>{esc(_args(call.get("input", {})))}</code><br>'
            f'{t("error:", "出错：") if failed else t("result:", "结果：")}'
            f'<pre style="white-space:pre-wrap;margin:2px 0">{esc(content)}</pre>'
            f"</div></details>")
    ran = {call.get("id") for call, _result, _approval in turn["tools"]}
    for call in (turn.get("forming") or {}).values():  # streaming: calls of this round not yet run
        if call.get("id") in ran:
            continue  # already a tool line above
        shown = _args(call["input"]) if call["done"] and call["input"] is not None else call["partial_json"] + "…"
        out.append(f'<div class="miniagent-tool-forming" style="margin:2px 0 2px 16px;color:#888">'
                   f'{t("tool: ", "工具：")}{esc(str(call["name"]))}({esc(shown)})</div>')
    if turn["answer"]:
        out.append(f'<div class="miniagent-answer" style="margin:6px 0;white-space:pre-wrap">'
                   f"<b>{t('Agent:', 'Agent：')}</b> {esc(turn['answer'])}</div>")
    if turn["stopped"]:
        out.append(f'<div class="miniagent-stopped" style="color:#b00">{t("stopped: ", "已停止：")}{esc(turn["stopped"])}</div>')
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
        self.value = (f"<table style='font-size:12px'><thead><tr>{say('trace_view_head')}</tr></thead>"
                      f"<tbody>{''.join(rows)}</tbody></table>")

    def __repr__(self) -> str:
        return self.trace.table(width=self.width)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | None:
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = repr(self)
        return data
