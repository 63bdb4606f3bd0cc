"""Checks for notebook 00 · Setup."""

from __future__ import annotations

from typing import Any

from miniagent.exercises._core import _clip, _exercise, _kind, not_yet, wrong_kind


@_exercise("00", 1)
def check_00_1(cut_response: Any, client: Any) -> None:
    """A response cut off by `max_tokens`, that `client` really received (found in its exchanges)."""
    if cut_response is None:
        not_yet("cut_response is still None: keep what llm.create(...) returns",
                zh="cut_response 还是 None：把 llm.create(...) 的返回值存下来")
    if not isinstance(cut_response, dict):
        wrong_kind(f"cut_response should be the dict that llm.create(...) returns, not {_kind(cut_response)}",
                   zh=f"cut_response 应该是 llm.create(...) 返回的 dict，而不是{_kind(cut_response)}")
    if "stop_reason" not in cut_response or "id" not in cut_response:
        wrong_kind("cut_response should be the whole response, with its id and stop_reason; "
                   f"this dict has {_clip(', '.join(map(str, cut_response)) or 'no keys')}",
                   zh="cut_response 应该是完整的响应，带着 id 和 stop_reason；这个 dict "
                      + (f"只有 {_clip(', '.join(map(str, cut_response)))}" if cut_response else "一个键都没有"))
    received = [(e, answer) for e, answer in ((e, _as_message(client, e)) for e in client.exchanges if e.status == 200)
                if answer.get("id") == cut_response.get("id") and answer.get("usage") == cut_response.get("usage")]
    if not received:
        not_yet("llm never received this response: make the call with llm.create(...) and keep what it returns",
                zh="llm 从没收到过这个响应：用 llm.create(...) 发出调用，把它的返回值存下来")
    exchange, truth = received[-1]  # as it arrived: editing the dict's stop_reason changes nothing here
    body = exchange.request["body"]
    asked = body.get("max_tokens", body.get("max_completion_tokens"))  # the field's name in Chat Completions, too
    if truth.get("stop_reason") != "max_tokens":
        not_yet(f"its stop_reason is {truth.get('stop_reason')!r}: the whole answer fit in "
                f"max_tokens={asked}; ask for fewer tokens",
                zh=f"它的 stop_reason 是 {truth.get('stop_reason')!r}：整个回答在 "
                   f"max_tokens={asked} 以内就写完了；把 max_tokens 再调小一点")


def _as_message(client: Any, exchange: Any) -> dict:
    """An answer as the client returned it: the record keeps the JSON that came over the wire, which a
    provider speaking Chat Completions sends in its own shape, translated by the client's format."""
    answer = exchange.response if isinstance(exchange.response, dict) else {}
    form = getattr(client, "format", None)
    if answer and getattr(form, "name", None) == "openai":
        try:
            return form.message(answer)
        except Exception:  # the check boundary: a record the translation cannot read is no answer of the learner's
            return {}
    return answer
