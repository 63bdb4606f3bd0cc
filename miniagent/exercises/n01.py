"""Checks for notebook 01 · One LLM call."""

from __future__ import annotations

import json
from typing import Any

from miniagent.exercises._core import (_NotYet, _check_callable, _clip, _exercise, _kind, _plural, _raised, _run,
                                       _show, not_yet, wrong_kind)

_BUGS = (KeyError, IndexError, TypeError, AttributeError, NameError)
"""Exceptions that are a slip in the code, not a decision it made: a hint for "you raised on purpose,
return instead" is wrong for them."""


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


@_exercise("01", 1)
def check_01_1(french_reply: Any) -> None:
    """The httpx2 response to a request sent by hand with a top-level "system" prompt asking for French."""
    import httpx2

    keep = "keep what post(...) returns (an httpx2.Response, whose .request shows what was sent)"
    keep_zh = "把 post(...) 的返回值存下来（一个 httpx2.Response，它的 .request 就是发出去的内容）"
    if french_reply is None:
        not_yet("french_reply is still None: send your request with post(...) and keep what it returns",
                zh="french_reply 还是 None：用 post(...) 发出你的请求，把返回值存下来")
    if isinstance(french_reply, dict):
        wrong_kind(f"french_reply holds the reply's JSON (a dict); {keep}",
                   zh=f"french_reply 里存的是回复的 JSON（一个 dict）；{keep_zh}")
    if isinstance(french_reply, str):
        wrong_kind(f"french_reply holds text; {keep}", zh=f"french_reply 里存的是文本；{keep_zh}")
    if isinstance(french_reply, tuple):
        wrong_kind(f"french_reply holds a tuple (from post_with_retries?); {keep}",
                   zh=f"french_reply 里存的是一个 tuple（来自 post_with_retries？）；{keep_zh}")
    if not isinstance(french_reply, httpx2.Response):
        wrong_kind(f"french_reply is {_kind(french_reply)}; {keep}",
                   zh=f"french_reply 是{_kind(french_reply)}；{keep_zh}")
    try:
        request = french_reply.request
    except RuntimeError:
        wrong_kind(f"this httpx2.Response was never sent; {keep}", zh=f"这个 httpx2.Response 从没发出去过；{keep_zh}")
    try:
        body = json.loads(request.content)
    except ValueError:
        not_yet("the request behind french_reply has no JSON body: send a dict with post(...)",
                zh="french_reply 背后的请求没有 JSON 请求体：用 post(...) 发送一个 dict")
    if not isinstance(body, dict):
        not_yet("the request behind french_reply sent JSON that is not an object: send a dict like body",
                zh="french_reply 背后的请求发出的 JSON 不是对象：像 body 那样发送一个 dict")
    if not request.url.path.endswith("/v1/messages"):
        not_yet(f"the request went to {request.url.path}, not /v1/messages: use post(...)",
                zh=f"请求发到了 {request.url.path}，而不是 /v1/messages：用 post(...) 发送")
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    if "system" not in body:
        if any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
            not_yet('the API has no "system" role in messages: the system prompt is a top-level '
                    '"system" field, beside "messages"',
                    zh='API 的 messages 里没有 "system" 这个角色：系统提示词是一个顶层的 "system" 字段，'
                       '和 "messages" 并列')
        not_yet('the request behind french_reply has no "system" field: add one to a copy of body',
                zh='french_reply 背后的请求没有 "system" 字段：在 body 的副本里加上它')
    if french_reply.status_code != 200:
        try:
            error = french_reply.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            error = french_reply.text
        not_yet(f"the API answered {french_reply.status_code}: {_clip(error)}",
                zh=f"API 返回了 {french_reply.status_code}：{_clip(error)}")
    text = _system_text(body["system"]).lower()
    if "french" not in text and "français" not in text and "francais" not in text:
        not_yet(f"its system prompt does not ask for French: {_show(body['system'])}",
                zh=f"它的系统提示词没有要求用法语回答：{_show(body['system'])}")


@_exercise("01", 2)
def check_01_2(failed_request_id: Any, client: Any) -> None:
    """The request id of a 429 that `client` gave up on (its last attempt), as err.request_id gives it."""
    if failed_request_id is None:
        not_yet("failed_request_id is still None: catch the RateLimitError and keep err.request_id",
                zh="failed_request_id 还是 None：捕获 RateLimitError，把 err.request_id 存下来")
    if isinstance(failed_request_id, BaseException):
        wrong_kind("failed_request_id holds the exception itself; keep its .request_id, a string",
                   zh="failed_request_id 里存的是异常本身；要存的是它的 .request_id，一个字符串")
    if not isinstance(failed_request_id, str):
        wrong_kind(f"failed_request_id should be a request id, a str such as 'req_…', not {_kind(failed_request_id)}",
                   zh=f"failed_request_id 应该是一个 request id，即像 'req_…' 这样的 str，"
                      f"而不是{_kind(failed_request_id)}")

    def request_id(exchange: Any) -> Any:
        return exchange.response.get("request_id") if isinstance(exchange.response, dict) else None

    rate_limited = [e for e in client.exchanges if e.status == 429 and request_id(e) == failed_request_id]
    inside = [request_id(e) for e in client.exchanges if e.status == 429 and request_id(e)
              and request_id(e) != failed_request_id and request_id(e) in failed_request_id]
    if not rate_limited and inside:  # str(err): the message, with the id somewhere in it
        not_yet(f"failed_request_id holds a text with the request id {inside[-1]!r} inside it (the exception's "
                "message?); keep err.request_id, the id alone",
                zh=f"failed_request_id 里存的是一段文本，request id {inside[-1]!r} 只是夹在其中（是异常的消息吧？）；"
                   "要存的是 err.request_id，只要这个 id 本身")
    if not rate_limited:
        not_yet(f"mock_llm got no 429 with the request id {_show(failed_request_id)}: make a 429 outlast the "
                "retries, catch the RateLimitError from mock_llm.create(...), and keep err.request_id",
                zh=f"mock_llm 没有收到过 request id 为 {_show(failed_request_id)} 的 429：让 429 多于重试次数，"
                   "捕获 mock_llm.create(...) 抛出的 RateLimitError，把 err.request_id 存下来")
    if all(e.waited > 0 for e in rate_limited):
        not_yet("that 429 was retried, so the call went on; keep the id the exception carries, "
                "from the attempt the client gave up on",
                zh="客户端重试了这个 429，调用继续了下去；要存的是异常带着的 id，"
                   "它来自客户端最终放弃的那次尝试")


@_exercise("01", 3)
def check_01_3(impatient_post: Any, client: Any, payload: Any) -> None:
    """`impatient_post(payload, sleep=...)` gives up at once on a retry-after over 30 s, and still waits
    for a short one. Tried against `client.mock` (the mock the function posts to), with faults queued."""
    _check_callable(impatient_post, "impatient_post", "your copy of post_with_retries",
                    zh="你的 post_with_retries 副本")
    mock = client.mock
    # 25 and 5 must be waited for: a threshold below 30, or "5" > "30" compared as text, gives up on them
    cases = [(3600, False), (2, True), (31, False), (25, True), (5, True)]
    for retry_after, retries in cases:
        before = _last_request_number(mock)
        mock.fault(429, retry_after=retry_after)
        slept: list[float] = []
        raised: list[BaseException] = []
        try:
            _run(_noting(impatient_post, raised), payload, name="impatient_post", case=f"(retry-after: {retry_after})",
                 case_zh=f"retry-after: {retry_after}", sleep=slept.append)
        except _NotYet:
            sent = len([r for r in mock.requests if r["n"] > before])
            if raised and sent and not retries and not isinstance(raised[0], _BUGS):  # gave up by raising
                not_yet(f"with retry-after: {retry_after} impatient_post raised {_raised(raised[0])}: give up by "
                        "returning what it has, (r, attempt), as post_with_retries does after its last attempt",
                        zh=f"retry-after: {retry_after} 时，impatient_post 抛出了 {_raised(raised[0])}：放弃的方式是"
                           "返回手里已有的结果 (r, attempt)，就像 post_with_retries 在最后一次尝试后那样")
            raise
        finally:
            sent = len([r for r in mock.requests if r["n"] > before])
            if sent == 0:
                _drain_fault(mock, payload)
        if sent == 0:
            not_yet("impatient_post sent nothing to mock_llm's mock: post to mock_url with mock_http, "
                    "as post_with_retries does",
                    zh="impatient_post 没有向 mock_llm 的 mock 发送任何请求：像 post_with_retries 那样，"
                       "用 mock_http 发到 mock_url")
        if not retries and sent == 1 and slept:
            not_yet(f"with retry-after: {retry_after} it waited {slept[0]:g} s before giving up: look at "
                    "retry-after before you sleep, and give up at once when it is over 30 s",
                    zh=f"retry-after: {retry_after} 时，它先等了 {slept[0]:g} s 才放弃：要在 sleep 之前看 "
                       "retry-after，超过 30 s 就立刻放弃")
        if not retries and (sent > 1 or slept):
            waited = f"waited {slept[0]:g} s and " if slept else ""
            not_yet(f"with retry-after: {retry_after} it {waited}tried again ({_plural(sent, 'request')}); "
                    "give up at once when retry-after is over 30 s",
                    zh=f"retry-after: {retry_after} 时，它" + (f"等了 {slept[0]:g} s，然后" if slept else "")
                       + f"又试了一次（共 {sent} 个请求）；retry-after 超过 30 s 就应该立刻放弃")
        if retries and (sent < 2 or slept[:1] != [retry_after]):
            not_yet(f"with retry-after: {retry_after} it should wait {retry_after} s (through its sleep argument) "
                    f"and try again; it sent {_plural(sent, 'request')} and slept {slept or 'never'}",
                    zh=f"retry-after: {retry_after} 时，它应该（通过 sleep 参数）等 {retry_after} s 再重试；"
                       f"它发了 {sent} 个请求，" + (f"sleep 的记录是 {slept}" if slept else "从没调用 sleep"))


def _noting(fn: Any, raised: list) -> Any:
    """`fn`, keeping any exception it raises in `raised` (and raising it on)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noted for the hint, then reported by _run as any exception is
            raised.append(exc)
            raise
    return call


def _last_request_number(mock: Any) -> int:
    requests = mock.requests
    return requests[-1]["n"] if requests else 0


def _drain_fault(mock: Any, payload: Any) -> None:
    """Use up a fault the learner's function never triggered, so it cannot hit a later call."""
    headers = {"x-api-key": "exercise-check", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    body = json.dumps(payload if isinstance(payload, dict) else {}).encode()
    mock.handle("POST", "/v1/messages", headers, body)
