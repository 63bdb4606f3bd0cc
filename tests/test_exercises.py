"""The exercise checks (`miniagent.exercises`): each one is tested like any other code.

For every check: the reference solution (the one in the notebook's `solution` cell)
passes; plausible wrong solutions fail with the hint that names their fault; an
odd-but-valid solution passes; an answer of the wrong type gets "that's not the right
kind of answer"; and nothing a learner can write makes a check raise or hang.
"""

from __future__ import annotations

import functools
import threading
import time
from types import SimpleNamespace

import pytest

import miniagent
from miniagent import exercises
from miniagent.builtin_tools import calculate, default_tools, get_weather
from miniagent.context import Compose, SlidingWindow, Summarize, TruncateToolResults
from miniagent.exercises import DONE, NOT_YET, WRONG_KIND
from miniagent.messages import blocks, text_of, tool_uses
from miniagent.tools import Tool, ToolRegistry, tool

DEMO = "现在几点了？顺便帮我算一下 (1024 + 768) * 2，再告诉我北京和上海的天气。"


def offline():
    return miniagent.connect(offline=True, quiet=True)


def done(verdict):
    assert verdict.kind == DONE, verdict
    assert repr(verdict).endswith(": done!")


def not_yet(verdict, *hints):
    assert verdict.kind == NOT_YET, verdict
    assert ": not yet: " in repr(verdict)
    for hint in hints:
        assert hint in verdict.hint, verdict


def wrong_kind(verdict, *hints):
    assert verdict.kind == WRONG_KIND, verdict
    assert ": that's not the right kind of answer: " in repr(verdict)
    for hint in hints:
        assert hint in verdict.hint, verdict


def exercise_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("exercise-")]


@pytest.fixture(autouse=True)
def no_thread_outlives_its_test():
    """A learner's code runs in a thread; none may still run after the test (it would skew the
    memory and timing of whatever test runs next in this process)."""
    yield
    for thread in exercise_threads():
        thread.join(10)
    assert not exercise_threads()


@pytest.fixture
def short_timeout(monkeypatch):
    """Checks give up on a hanging answer after TIMEOUT; a test need not wait 10 s for that.
    The 'hanging' functions wait on `release`, set at teardown, so their threads end."""
    monkeypatch.setattr(exercises._core, "TIMEOUT", 0.1)  # _run reads it there
    release = threading.Event()
    yield release
    release.set()


# --- the verdict -------------------------------------------------------------------------


def test_a_verdict_is_one_line_with_ok_and_kind():
    assert repr(exercises.Verdict(2, DONE)) == "exercise 2: done!"
    assert str(exercises.Verdict(1, NOT_YET, "look here")) == "exercise 1: not yet: look here"
    wrong = exercises.Verdict(3, WRONG_KIND, "a list, please")
    assert repr(wrong) == "exercise 3: that's not the right kind of answer: a list, please"
    assert exercises.Verdict(2, DONE).ok and not wrong.ok


def test_every_exercise_in_the_notebooks_has_a_check_and_every_check_an_exercise():
    import re
    from pathlib import Path

    sources = sorted((Path(__file__).parent.parent / "notebooks" / "src").glob("[0-9]*.py"))
    called = {f"{nb}-{k}" for path in sources for nb, k in re.findall(r"exercises\.check_(\d\d)_(\d)\(", path.read_text())}
    stated = {f"{path.name[:2]}-{k}" for path in sources for k in re.findall(r"\*\*Exercise (\d)\.\*\*", path.read_text())}
    assert sorted(exercises.CHECKS) == sorted(called) == sorted(stated)
    assert {"00-1", "01-3", "05-3", "06-3"} <= set(exercises.CHECKS)
    for key, check in exercises.CHECKS.items():
        assert check.__name__ == "check_" + key.replace("-", "_")
        assert getattr(exercises, check.__name__) is check


def test_importing_the_checks_loads_nothing_heavy():
    import subprocess
    import sys

    code = ("import sys, miniagent\nminiagent.exercises\n"
            "print(sorted(m for m in ('httpx2', 'miniagent.client', 'miniagent.mock', 'ipywidgets')\n"
            "             if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "[]"


def test_a_check_that_trips_over_the_answer_says_not_yet_and_does_not_raise():
    class Hostile:
        def __getattr__(self, name):
            raise RuntimeError("boom")

        def __repr__(self):
            raise RuntimeError("no repr either")

    verdict = exercises.check_04_3(Hostile(), lambda policy: None, {}, "Ada")
    assert verdict.kind in (NOT_YET, WRONG_KIND), verdict


def test_an_exception_that_cannot_even_be_printed_is_still_reported():
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no message either")

    def raises_it(messages):
        raise Unprintable()
    not_yet(exercises.check_04_1(raises_it), "orphaned_results raised Unprintable")


def test_a_long_exception_message_is_clipped():
    def noisy(*args):
        raise ValueError("x" * 5_000)

    verdict = exercises.check_04_1(noisy)
    not_yet(verdict, "orphaned_results raised ValueError")
    assert len(repr(verdict)) < 400


# --- 00 -----------------------------------------------------------------------------------


def test_00_1_reference_and_odd_but_valid():
    llm = offline()
    done(exercises.check_00_1(llm.create([{"role": "user", "content": "Tell me about the moon."}], max_tokens=20), llm))
    done(exercises.check_00_1(llm.create([{"role": "user", "content": "Hi"}], max_tokens=3, system="Be brief."), llm))
    import copy
    one = llm.create([{"role": "user", "content": "Hi"}], max_tokens=1)  # one token, kept as a deep copy
    done(exercises.check_00_1(copy.deepcopy(one), llm))


def test_00_1_wrong_answers():
    llm = offline()
    not_yet(exercises.check_00_1(None, llm), "still None")
    full = llm.create([{"role": "user", "content": "Hello! Who are you?"}])
    not_yet(exercises.check_00_1(full, llm), "'end_turn'", "max_tokens=1024", "fewer tokens")
    other = offline()
    elsewhere = other.create([{"role": "user", "content": "Hi"}], max_tokens=5)
    not_yet(exercises.check_00_1(elsewhere, llm), "never received")
    forged = dict(full, stop_reason="max_tokens")  # editing the dict proves nothing
    not_yet(exercises.check_00_1(forged, llm), "'end_turn'")
    wrong_kind(exercises.check_00_1(text_of(full), llm), "not a str")
    wrong_kind(exercises.check_00_1({"model": "m", "max_tokens": 20, "messages": []}, llm), "max_tokens")
    cut = llm.create([{"role": "user", "content": "Hello! Who are you?"}], max_tokens=20)
    wrong_kind(exercises.check_00_1(cut["content"], llm), "the dict that llm.create(...) returns", "not a list")
    wrong_kind(exercises.check_00_1(cut["usage"], llm), "the whole response", "output_tokens")  # a part of it
    wrong_kind(exercises.check_00_1(llm.last, llm), "not an Exchange")  # the record, not the response


# --- 01 -----------------------------------------------------------------------------------


@pytest.fixture
def nb01():
    """What notebook 01 defines before its exercises: post, body, mock_llm, post_with_retries, good."""
    llm, mock_llm = offline(), offline()
    url = llm.base_url + "/v1/messages"
    headers = {"x-api-key": "mock-key", "anthropic-version": "2023-06-01", "content-type": "application/json"}
    mock_url, mock_http = mock_llm.base_url + "/v1/messages", mock_llm.http

    def post(body):
        return llm.http.post(url, headers=headers, json=body)

    def post_with_retries(payload, attempts=3, sleep=time.sleep):
        for attempt in range(1, attempts + 1):
            r = mock_http.post(mock_url, headers=headers, json=payload)
            if r.status_code not in (408, 409, 429, 500, 502, 503, 504, 529) or attempt == attempts:
                return r, attempt
            sleep(float(r.headers.get("retry-after", 0)) or 0.01)

    body = {"model": llm.model, "max_tokens": 300,
            "messages": [{"role": "user", "content": "In one sentence: what is an LLM agent?"}]}
    good = {"model": mock_llm.model, "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}
    return SimpleNamespace(post=post, body=body, mock_llm=mock_llm, mock_http=mock_http, mock_url=mock_url,
                           headers=headers, post_with_retries=post_with_retries, good=good)


def test_01_1_reference_and_odd_but_valid(nb01):
    done(exercises.check_01_1(nb01.post({**nb01.body, "system": "Answer in French."})))
    blocks_system = [{"type": "text", "text": "You are helpful."}, {"type": "text", "text": "Réponds en FRENCH."}]
    done(exercises.check_01_1(nb01.post({**nb01.body, "system": blocks_system})))
    done(exercises.check_01_1(nb01.post({**nb01.body, "system": "Réponds toujours en français."})))  # in French


def test_01_1_wrong_answers(nb01):
    not_yet(exercises.check_01_1(None), "still None")
    not_yet(exercises.check_01_1(nb01.post(nb01.body)), 'no "system" field')
    as_message = {**nb01.body, "messages": [{"role": "system", "content": "Answer in French."}, *nb01.body["messages"]]}
    not_yet(exercises.check_01_1(nb01.post(as_message)), 'no "system" role')
    not_yet(exercises.check_01_1(nb01.post({**nb01.body, "system": "Answer in Spanish."})), "does not ask for French")
    not_yet(exercises.check_01_1(nb01.post({**nb01.body, "system": "Answer in French.", "model": None})),
            "the API answered 400")
    in_the_question = {**nb01.body, "messages": [{"role": "user", "content": "Answer in French. "
                                                   + nb01.body["messages"][0]["content"]}]}
    not_yet(exercises.check_01_1(nb01.post(in_the_question)), 'no "system" field')  # an instruction, not a system prompt
    not_yet(exercises.check_01_1(nb01.post({**nb01.body, "system": ["Answer in French."]})),
            "the API answered 400", "system.0")  # a list, but of strings, not of text blocks


def test_01_1_other_readings_of_reply_are_refused_with_a_clear_hint(nb01):
    reply = nb01.post({**nb01.body, "system": "Answer in French."})
    wrong_kind(exercises.check_01_1(reply.json()), "the reply's JSON", "httpx2.Response")
    wrong_kind(exercises.check_01_1(text_of(reply.json())), "holds text", "httpx2.Response")
    wrong_kind(exercises.check_01_1((reply, 1)), "tuple")
    wrong_kind(exercises.check_01_1(42), "an int")


def test_01_2_reference_and_odd_but_valid(nb01):
    mock_llm = nb01.mock_llm
    mock_llm.mock.fault(429, times=3)
    with pytest.raises(miniagent.RateLimitError) as caught:
        mock_llm.create([{"role": "user", "content": "Hi"}])
    done(exercises.check_01_2(caught.value.request_id, mock_llm))
    mock_llm.mock.fault(429, times=10)  # more faults than attempts: the exception still names the last attempt
    with pytest.raises(miniagent.RateLimitError) as again:
        mock_llm.create([{"role": "user", "content": "Hi"}])
    done(exercises.check_01_2(again.value.request_id, mock_llm))
    done(exercises.check_01_2(mock_llm.last.response["request_id"], mock_llm))  # read from the record, not the exception
    mock_llm.mock.reset()


def test_01_2_wrong_answers(nb01):
    mock_llm = nb01.mock_llm
    not_yet(exercises.check_01_2(None, mock_llm), "still None")
    mock_llm.mock.fault(429)  # by hand, as the notebook does first: a 429 the client never saw
    raw = nb01.mock_http.post(nb01.mock_url, headers=nb01.headers, json=nb01.good)
    not_yet(exercises.check_01_2(raw.headers["request-id"], mock_llm), "got no 429 with the request id")
    mock_llm.mock.fault(429, times=3)
    with pytest.raises(miniagent.RateLimitError) as caught:
        mock_llm.create([{"role": "user", "content": "Hi"}])
    first_attempt = [e for e in mock_llm.exchanges if e.status == 429][0].response["request_id"]
    not_yet(exercises.check_01_2(first_attempt, mock_llm), "was retried")
    wrong_kind(exercises.check_01_2(caught.value, mock_llm), "exception itself")
    wrong_kind(exercises.check_01_2(429, mock_llm), "not an int")
    not_yet(exercises.check_01_2(str(caught.value), mock_llm), "a text with the request id", "err.request_id, the id alone")
    other = offline()  # the 429 made on another client than mock_llm (further on: each mock numbers its ids
    for _ in range(5):  # from req_mock_0001, so an id of another mock at the same count looks the same)
        other.create([{"role": "user", "content": "Hi"}])
    other.mock.fault(429, times=3)
    with pytest.raises(miniagent.RateLimitError) as elsewhere:
        other.create([{"role": "user", "content": "Hi"}])
    not_yet(exercises.check_01_2(elsewhere.value.request_id, mock_llm), "got no 429", "mock_llm.create(...)")


def reference_impatient_post(nb01):
    def impatient_post(payload, attempts=3, sleep=time.sleep):
        for attempt in range(1, attempts + 1):
            r = nb01.mock_http.post(nb01.mock_url, headers=nb01.headers, json=payload)
            wait = float(r.headers.get("retry-after", 0))
            if r.status_code not in (429, 529) or attempt == attempts or wait > 30:
                return r, attempt
            sleep(wait or 0.01)
    return impatient_post


def test_01_3_reference_and_odd_but_valid(nb01):
    done(exercises.check_01_3(reference_impatient_post(nb01), nb01.mock_llm, nb01.good))

    def raises_nothing_returns_early(payload, attempts=3, sleep=time.sleep):  # a while loop, a dict answer
        attempt = 0
        while True:
            attempt += 1
            r = nb01.mock_http.post(nb01.mock_url, headers=nb01.headers, json=payload)
            if r.status_code != 429 or attempt >= attempts:
                return {"response": r}
            if int(r.headers["retry-after"]) > 30:
                return {"gave up": r}
            sleep(int(r.headers["retry-after"]))
    done(exercises.check_01_3(raises_nothing_returns_early, nb01.mock_llm, nb01.good))


def test_01_3_wrong_answers_leave_no_fault_behind(nb01):
    mock_llm = nb01.mock_llm
    not_yet(exercises.check_01_3(nb01.post_with_retries, mock_llm, nb01.good), "waited 3600 s", "give up at once")

    def never_retries(payload, attempts=3, sleep=time.sleep):
        return nb01.mock_http.post(nb01.mock_url, headers=nb01.headers, json=payload), 1
    not_yet(exercises.check_01_3(never_retries, mock_llm, nb01.good), "retry-after: 2", "wait 2 s")

    def sends_nothing(payload, attempts=3, sleep=time.sleep):
        return None
    not_yet(exercises.check_01_3(sends_nothing, mock_llm, nb01.good), "sent nothing")

    def no_sleep_parameter(payload):
        return None
    not_yet(exercises.check_01_3(no_sleep_parameter, mock_llm, nb01.good), "TypeError", "sleep")
    not_yet(exercises.check_01_3(None, mock_llm, nb01.good), "still None")
    wrong_kind(exercises.check_01_3("post_with_retries", mock_llm, nb01.good), "a function")

    def variant(decide):
        """post_with_retries, with `decide(r, wait, sleep)` choosing: "return", "retry" or "raise"."""
        def impatient_post(payload, attempts=3, sleep=time.sleep):
            for attempt in range(1, attempts + 1):
                r = nb01.mock_http.post(nb01.mock_url, headers=nb01.headers, json=payload)
                if r.status_code != 429 or attempt == attempts:
                    return r, attempt
                if decide(r.headers["retry-after"], sleep) == "return":
                    return r, attempt
        return impatient_post

    def sleeps_then_looks(wait, sleep):  # waits the hour, then gives up
        sleep(float(wait))
        return "return" if float(wait) > 30 else "retry"
    not_yet(exercises.check_01_3(variant(sleeps_then_looks), mock_llm, nb01.good),
            "waited 3600 s before giving up", "before you sleep")

    def caps_the_wait(wait, sleep):  # waits at most 30 s, but never gives up
        sleep(min(float(wait), 30))
        return "retry"
    not_yet(exercises.check_01_3(variant(caps_the_wait), mock_llm, nb01.good), "waited 30 s and tried again")

    def raises(wait, sleep):
        if float(wait) > 30:
            raise RuntimeError(f"retry-after {wait} s is too long")
        sleep(float(wait))
    not_yet(exercises.check_01_3(variant(raises), mock_llm, nb01.good), "raised RuntimeError", "give up by returning")

    def compares_text(wait, sleep):  # the header is a str: "5" > "30", as text
        if wait > "30":
            return "return"
        sleep(float(wait))
    not_yet(exercises.check_01_3(variant(compares_text), mock_llm, nb01.good), "retry-after: 5", "wait 5 s")

    slept_for_real = []

    def ignores_its_sleep(wait, sleep):  # sleeps some other way: the check sees no wait
        if float(wait) > 30:
            return "return"
        slept_for_real.append(float(wait))
    not_yet(exercises.check_01_3(variant(ignores_its_sleep), mock_llm, nb01.good),
            "through its sleep argument", "slept never")
    assert mock_llm.create([{"role": "user", "content": "Hi"}])["stop_reason"] == "end_turn"  # no fault left queued
    assert len([e for e in mock_llm.exchanges if e.status != 200]) == 0


def test_01_3_a_function_that_really_sleeps_an_hour_is_called_hanging(nb01, short_timeout):
    def sleeps_for_real(payload, attempts=3, sleep=time.sleep):
        r = nb01.mock_http.post(nb01.mock_url, headers=nb01.headers, json=payload)
        short_timeout.wait(float(r.headers.get("retry-after", 0)))
        return r, 1
    not_yet(exercises.check_01_3(sleeps_for_real, nb01.mock_llm, nb01.good), "did not return within 0.1 s")


# --- 02 -----------------------------------------------------------------------------------


@tool
def get_time(city: str) -> str:
    """Get the current local time in a city.

    Args:
        city: the city, e.g. Tokyo
    """
    return "12:00"


def test_02_1_reference_and_odd_but_valid():
    llm = offline()
    done(exercises.check_02_1(get_time, llm))

    def clock_in(place: str) -> str:  # a plain function (not @tool), a name without the word "time"
        """Tell the current time and date in a city.

        Args:
            place: the city
        """
        return "12:00"
    done(exercises.check_02_1(clock_in, llm))
    done(exercises.check_02_1(get_time.schema(), llm))

    @tool(name="clock")
    def 时钟(city: str) -> str:  # described in Chinese, with an English name
        """获取某个城市当前的本地时间。

        Args:
            city: 城市，例如 Tokyo 或 东京
        """
        return "12:00"
    done(exercises.check_02_1(时钟, llm))


def test_02_1_wrong_answers():
    llm = offline()

    @tool
    def tool_a(city: str) -> str:
        """Your description here.

        Args:
            city: ...
        """
        return "12:00"
    not_yet(exercises.check_02_1(tool_a, llm), "called no tool", "tells the time")
    renamed_only = Tool("get_time", tool_a.description, tool_a.input_schema, tool_a.fn)
    not_yet(exercises.check_02_1(renamed_only, llm), "by its name alone", "placeholder")

    @tool
    def helper(city: str) -> str:
        """Answers any question at all: the time, the weather, sums, anything.

        Args:
            city: the city
        """
        return "12:00"
    not_yet(exercises.check_02_1(helper, llm), "also called helper", "only that")
    weather_named = Tool("get_weather", "Get the current time in a city.", get_time.input_schema, get_time.fn)
    done_or_refused = exercises.check_02_1(weather_named, llm)  # a clash with a distractor is never a crash
    assert done_or_refused.kind in (DONE, NOT_YET)

    def no_docstring(city):
        return "12:00"
    not_yet(exercises.check_02_1(no_docstring, llm), "@tool refuses")

    @tool(name="tool_a")
    def described_only(city: str) -> str:  # described, but never renamed: the model found it by its description
        """Get the current local time in a city.

        Args:
            city: the city, e.g. Tokyo
        """
        return "12:00"
    not_yet(exercises.check_02_1(described_only, llm), "its name is still 'tool_a'", "rename it")
    bad_name = {"name": "get local time", "description": "Get the current local time in a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    not_yet(exercises.check_02_1(bad_name, llm), "not a tool the API accepts", "'get local time'")
    not_yet(exercises.check_02_1(None, llm), "still None")
    wrong_kind(exercises.check_02_1("get_time", llm), "not a str")


def reference_run_safely(fn, tool_use):
    try:
        return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": str(fn(**tool_use["input"]))}
    except Exception as err:
        return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": f"Error: {err}", "is_error": True}


def test_02_2_reference_and_odd_but_valid():
    done(exercises.check_02_2(reference_run_safely))

    def with_blocks(fn, tool_use):  # content as text blocks, is_error always present, repr of the exception
        result = {"type": "tool_result", "tool_use_id": tool_use["id"], "is_error": False}
        try:
            output = fn(**tool_use["input"])
        except BaseException as err:
            result.update(is_error=True, content=[{"type": "text", "text": f"Error: {err!r}"}])
        else:
            result["content"] = [{"type": "text", "text": f"{output}"}]
        return result
    done(exercises.check_02_2(with_blocks))

    def via_the_registry(fn, tool_use):  # the package's own boundary does it too
        return ToolRegistry([Tool(tool_use["name"], "A tool.", {"type": "object"}, fn)]).run(tool_use)
    done(exercises.check_02_2(via_the_registry))


def test_02_2_wrong_answers():
    def no_try(fn, tool_use):
        return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": str(fn(**tool_use["input"]))}
    not_yet(exercises.check_02_2(no_try), "run_safely raised ValueError", "get_weather({'city': 'Atlantis'})")

    def no_is_error(fn, tool_use):
        try:
            return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": str(fn(**tool_use["input"]))}
        except Exception as err:
            return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": f"Error: {err}"}
    not_yet(exercises.check_02_2(no_is_error), "no is_error: True")

    def only_value_errors(fn, tool_use):
        try:
            output = fn(**tool_use["input"])
        except ValueError as err:
            return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": f"Error: {err}", "is_error": True}
        return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": str(output)}
    not_yet(exercises.check_02_2(only_value_errors), "ZeroDivisionError")

    def positional(fn, tool_use):
        return reference_run_safely(lambda **kw: fn(tool_use["input"]), tool_use)
    not_yet(exercises.check_02_2(positional), "get_weather({'city': 'Paris'})", "is_error")

    def silent(fn, tool_use):
        result = reference_run_safely(fn, tool_use)
        return {**result, "content": "Error: something went wrong"} if result.get("is_error") else result
    not_yet(exercises.check_02_2(silent), "does not say why")

    def wrong_key(fn, tool_use):
        return {"type": "tool_result", "id": tool_use["id"], "content": "x"}
    not_yet(exercises.check_02_2(wrong_key), "would refuse", "tool_use_id")
    wrong_kind(exercises.check_02_2(lambda fn, tool_use: "Paris: sunny"), "returned a str", "tool_result block")

    def raw_output(fn, tool_use):  # the output as it is: 0.75 is a float, not text
        result = reference_run_safely(fn, tool_use)
        return result if result.get("is_error") else {**result, "content": fn(**tool_use["input"])}
    not_yet(exercises.check_02_2(raw_output), "divide({'a': 3, 'b': 4})", "must be a string", "not a float")

    def the_exception_itself(fn, tool_use):
        try:
            return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": str(fn(**tool_use["input"]))}
        except Exception as err:
            return {"type": "tool_result", "tool_use_id": tool_use["id"], "content": err, "is_error": True}
    not_yet(exercises.check_02_2(the_exception_itself), "must be a string", "not a ValueError")

    def flag_as_text(fn, tool_use):
        result = reference_run_safely(fn, tool_use)
        return {**result, "is_error": "true"} if result.get("is_error") else result
    not_yet(exercises.check_02_2(flag_as_text), "is_error must be true or false, not 'true'")
    not_yet(exercises.check_02_2(lambda fn, tool_use: {**reference_run_safely(fn, tool_use), "is_error": True}),
            "the call worked, but your result says is_error")  # the flag copied into both branches
    wrong_kind(exercises.check_02_2(lambda fn, tool_use: {"role": "user", "content": [reference_run_safely(fn, tool_use)]}),
               "a whole message", "just the tool_result block")
    not_yet(exercises.check_02_2(lambda fn, tool_use: None), "returned None")
    wrong_kind(exercises.check_02_2(42), "a function")


def test_02_3_reference_odd_but_valid_and_the_old_crash():
    done(exercises.check_02_3("2 ^ 10"))
    done(exercises.check_02_3("2 ^ 0.5"))  # the old check crashed here: Python refuses float ^ float
    done(exercises.check_02_3("(1024 + 768) × 2"))  # Python cannot even parse it: a difference too
    done(exercises.check_02_3("3 ^ 2 + 1"))
    done(exercises.check_02_3("0 ^ 0"))  # 0 ** 0 is 1, 0 XOR 0 is 0


def test_02_3_wrong_answers_and_nothing_can_freeze_it():
    not_yet(exercises.check_02_3("2 ** 10"), "both give 1024")
    not_yet(exercises.check_02_3("1 ^ 0"), "both give 1", "right symbol", "other numbers")
    not_yet(exercises.check_02_3("-2 ^ 2"), "both give -4", "right symbol")  # -(2 ** 2) and (-2) XOR 2 agree
    not_yet(exercises.check_02_3("7 // 2"), "both give 3", "which symbols")
    huge = exercises.check_02_3("2 ** 10 ** 3")  # both agree on a 302-digit number: the hint quotes it clipped
    not_yet(huge, "both give 1071508607", "…")
    assert len(huge.hint) < 200
    not_yet(exercises.check_02_3("__import__('os').getcwd()"), "safe_eval refuses it")
    not_yet(exercises.check_02_3(""), "safe_eval refuses it")
    not_yet(exercises.check_02_3(None), "still None")
    wrong_kind(exercises.check_02_3(2 ^ 10), "in quotes", "an int")
    wrong_kind(exercises.check_02_3(b"2 ^ 10"), "bytes")
    started = time.perf_counter()
    not_yet(exercises.check_02_3("9**(0^10**8)"), "too large")  # safe_eval reads 9**0; Python 9**100000000
    not_yet(exercises.check_02_3("2 ^ 1 << 10**9"), "refuses")
    assert time.perf_counter() - started < 1


# --- 03 -----------------------------------------------------------------------------------


def reference_budget_react(client, question, tools, token_budget, max_iterations=10):
    messages = [{"role": "user", "content": question}]
    start = client.usage.total_tokens
    for _ in range(max_iterations):
        response = client.create(messages, tools=tools.schemas())
        messages.append({"role": "assistant", "content": response["content"]})
        if response["stop_reason"] != "tool_use":
            return text_of(response), messages
        if client.usage.total_tokens - start > token_budget:
            return f"stopped: this run used more than {token_budget} tokens", messages
        messages.append({"role": "user", "content": [tools.run(c) for c in tool_uses(response)]})
    return f"stopped after {max_iterations} rounds", messages


def test_03_1_reference_and_odd_but_valid():
    done(exercises.check_03_1(reference_budget_react))

    def checks_first(client, question, tools, token_budget, max_iterations=10):  # the budget at the top, run_all
        messages, start = [miniagent.user(question)], client.usage.total_tokens
        while client.usage.total_tokens - start <= token_budget and len(messages) < 2 * max_iterations:
            response = client.create(messages, tools=tools.schemas())
            messages.append(miniagent.assistant(response["content"]))
            if response["stop_reason"] != "tool_use":
                return text_of(response), messages
            messages.append(miniagent.user(tools.run_all(tool_uses(response))))
        return "budget spent", messages
    done(exercises.check_03_1(checks_first))
    done(exercises.check_03_1(counting("each response's usage, added up", lambda client, response, start, seen:
                                       seen + response["usage"]["input_tokens"] + response["usage"]["output_tokens"])))


def counting(what, used):
    """budget_react that measures this run with `used(client, response, start, so_far)` (`what` says how)."""
    def budget_react(client, question, tools, token_budget, max_iterations=10):
        messages, start, so_far = [miniagent.user(question)], client.usage, 0
        start = SimpleNamespace(total=start.total_tokens, input=start.input_tokens, output=start.output_tokens)
        for _ in range(max_iterations):
            response = client.create(messages, tools=tools.schemas())
            messages.append(miniagent.assistant(response["content"]))
            if response["stop_reason"] != "tool_use":
                return text_of(response), messages
            so_far = used(client, response, start, so_far)
            if so_far > token_budget:
                return f"stopped: {what} passed {token_budget}", messages
            messages.append(miniagent.user([tools.run(c) for c in tool_uses(response)]))
        return "rounds used up", messages
    return budget_react


def test_03_1_wrong_answers():
    def no_budget(client, question, tools, token_budget, max_iterations=10):
        return reference_budget_react(client, question, tools, 10**12, max_iterations)
    not_yet(exercises.check_03_1(no_budget), "the runaway model made 30 calls", "stop after call 3")

    def whole_usage(client, question, tools, token_budget, max_iterations=10):
        messages = [{"role": "user", "content": question}]
        for _ in range(max_iterations):
            if client.usage.total_tokens > token_budget:
                return "over budget", messages
            response = client.create(messages, tools=tools.schemas())
            messages.append({"role": "assistant", "content": response["content"]})
            if response["stop_reason"] != "tool_use":
                return text_of(response), messages
            messages.append({"role": "user", "content": [tools.run(c) for c in tool_uses(response)]})
        return "", messages
    not_yet(exercises.check_03_1(whole_usage), "count the tokens this run used", "5,200 before")

    def uses_a_global(client, question, tools, token_budget, max_iterations=10):
        return reference_budget_react(offline(), question, tools, token_budget, max_iterations)
    not_yet(exercises.check_03_1(uses_a_global), "no model calls with the client it was given")
    input_only = counting("input tokens", lambda client, response, start, seen: client.usage.input_tokens - start.input)
    not_yet(exercises.check_03_1(input_only), "made 4 calls", "stop after call 3")  # the answer's tokens count too
    output_only = counting("output tokens", lambda client, response, start, seen: client.usage.output_tokens - start.output)
    not_yet(exercises.check_03_1(output_only), "made 30 calls", "stop after call 3")
    this_call = counting("this call's tokens", lambda client, response, start, seen:  # one call, not the run
                         response["usage"]["input_tokens"] + response["usage"]["output_tokens"])
    not_yet(exercises.check_03_1(this_call), "stop after call 3", "993 tokens")
    wrong_kind(exercises.check_03_1(lambda *a, **k: reference_budget_react(*a, **k)[::-1]),
               "returned a tuple", "return (answer, messages)")  # (messages, answer)

    def always_one_call(client, question, tools, token_budget, max_iterations=10):
        return reference_budget_react(client, question, tools, 0, max_iterations)
    not_yet(exercises.check_03_1(always_one_call), "3584")

    def endless(client, question, tools, token_budget, max_iterations=10):
        if "(1024" in question:
            return reference_budget_react(client, question, tools, token_budget)
        messages = [miniagent.user(question)]
        while True:
            response = client.create(messages, tools=tools.schemas())
            messages += [miniagent.assistant(response["content"]),
                         miniagent.user([tools.run(c) for c in tool_uses(response)])]
    not_yet(exercises.check_03_1(endless), "made 40 calls")
    not_yet(exercises.check_03_1(lambda client, question, tools, budget: None), "max_iterations")
    wrong_kind(exercises.check_03_1(lambda *a, **k: reference_budget_react(*a, **k)[0] if a[3] > 10**5 else None),
               "returned a str")


def test_03_2_reference_and_odd_but_valid():
    llm, tools = offline(), default_tools()
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    done(exercises.check_03_2(miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools, tool_choice=choice), llm))
    blocks_question = [miniagent.user([{"type": "text", "text": DEMO}])]
    done(exercises.check_03_2(miniagent.run_loop(llm, blocks_question, tools=tools, tool_choice=choice,
                                                 parallel=False, max_iterations=20), llm))


def test_03_2_wrong_answers():
    llm, tools = offline(), default_tools()
    not_yet(exercises.check_03_2(None, llm), "still None")
    parallel = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools)
    not_yet(exercises.check_03_2(parallel, llm), "asked for 4 tools at once")
    forced = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools,
                                tool_choice={"type": "any", "disable_parallel_tool_use": True})
    not_yet(exercises.check_03_2(forced, llm), "ended with 'repeated_call'")
    untyped = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools,
                                 tool_choice={"disable_parallel_tool_use": True})
    not_yet(exercises.check_03_2(untyped, llm), "'api_error'", "tool_choice")
    simple = miniagent.run_loop(llm, [miniagent.user("What is 2 + 2?")], tools=tools,
                                tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    not_yet(exercises.check_03_2(simple, llm), "called 1 tool", "demo question")
    elsewhere = offline()
    result = miniagent.run_loop(elsewhere, [miniagent.user(DEMO)], tools=tools,
                                tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    not_yet(exercises.check_03_2(result, offline()), "llm sent no request")
    wrong_kind(exercises.check_03_2(5, llm), "holds a number")
    one_by_one_here = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools, parallel=False)  # runs them in
    not_yet(exercises.check_03_2(one_by_one_here, llm), "asked for 4 tools at once", "disable_parallel_tool_use")  # turn
    cut_short = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools, max_iterations=3,
                                   tool_choice={"type": "auto", "disable_parallel_tool_use": True})
    not_yet(exercises.check_03_2(cut_short, llm), "ended with 'max_iterations'", "max_iterations=3")
    as_text = miniagent.run_loop(llm, [miniagent.user(DEMO)], tools=tools,
                                 tool_choice={"type": "auto", "disable_parallel_tool_use": "true"})
    not_yet(exercises.check_03_2(as_text, llm), "'api_error'", "tool_choice.auto.disable_parallel_tool_use")
    wrong_kind(exercises.check_03_2(result.messages, llm), "LoopResult")


def reference_careful_react(client, question, tools, max_iterations=10):
    messages = [{"role": "user", "content": question}]
    for _ in range(max_iterations):
        response = client.create(messages, tools=tools.schemas())
        messages.append({"role": "assistant", "content": response["content"]})
        if response["stop_reason"] == "max_tokens":
            return "stopped: the answer was cut off by max_tokens", messages
        if response["stop_reason"] != "tool_use":
            return text_of(response), messages
        messages.append({"role": "user", "content": [tools.run(c) for c in tool_uses(response)]})
    return f"stopped after {max_iterations} rounds", messages


def test_03_3_reference_and_odd_but_valid():
    done(exercises.check_03_3(reference_careful_react))

    def answers_the_cut_call(client, question, tools, max_iterations=10):  # as the package does: an error result
        messages = [miniagent.user(question)]
        for _ in range(max_iterations):
            response = client.create(messages, tools=tools.schemas())
            messages.append(miniagent.assistant(response["content"]))
            calls = tool_uses(response)
            if response["stop_reason"] == "max_tokens":
                if calls:
                    messages.append(miniagent.user([miniagent.tool_result(c["id"], "Error: not executed (cut off)",
                                                                          is_error=True) for c in calls]))
                return "The answer hit max_tokens.", messages
            if response["stop_reason"] != "tool_use":
                return text_of(response), messages
            messages.append(miniagent.user(tools.run_all(calls)))
        return "", messages
    done(exercises.check_03_3(answers_the_cut_call))

    def through_run_loop(client, question, tools, max_iterations=10):  # the package's loop, which runs no cut call
        result = miniagent.run_loop(client, [miniagent.user(question)], tools=tools, max_iterations=max_iterations)
        return (f"stopped: {result.stop}" if result.stop == "max_tokens" else result.text), result.messages
    done(exercises.check_03_3(through_run_loop))


def test_03_3_wrong_answers():
    def plain_react(client, question, tools, max_iterations=10):  # react as written: stops, but says nothing
        messages = [miniagent.user(question)]
        for _ in range(max_iterations):
            response = client.create(messages, tools=tools.schemas())
            messages.append(miniagent.assistant(response["content"]))
            if response["stop_reason"] != "tool_use":
                return text_of(response), messages
            messages.append(miniagent.user([tools.run(c) for c in tool_uses(response)]))
        return "", messages
    not_yet(exercises.check_03_3(plain_react), "include the words max_tokens")

    def runs_whatever_it_sees(client, question, tools, max_iterations=10):  # the old check let this pass
        messages = [miniagent.user(question)]
        for _ in range(max_iterations):
            response = client.create(messages, tools=tools.schemas())
            messages.append(miniagent.assistant(response["content"]))
            calls = tool_uses(response)
            if calls:
                messages.append(miniagent.user([tools.run(c) for c in calls]))
            if response["stop_reason"] == "max_tokens":
                return "stopped on max_tokens", messages
            if not calls:
                return text_of(response), messages
        return "", messages
    not_yet(exercises.check_03_3(runs_whatever_it_sees), "ran calculate", "never run a cut-off call")

    def calls_the_function_directly(client, question, tools, max_iterations=10):
        response = client.create([miniagent.user(question)], tools=tools.schemas())
        for call in tool_uses(response):
            tools.get(call["name"]).fn(**call["input"])
        return "max_tokens", []
    not_yet(exercises.check_03_3(calls_the_function_directly), "ran calculate")

    def article_loop(client, question, tools, max_iterations=10):  # spins on max_tokens, sending the same request
        messages = [miniagent.user(question)]
        for _ in range(max_iterations):
            response = client.create(messages, tools=tools.schemas())
            if response["stop_reason"] == "end_turn":
                return text_of(response), messages
            if response["stop_reason"] == "tool_use":
                messages.append(miniagent.assistant(response["content"]))
                messages.append(miniagent.user([tools.run(c) for c in tool_uses(response)]))
        return "max_tokens? max iterations reached", messages
    not_yet(exercises.check_03_3(article_loop), "called the model again", "10 calls")

    def spins_for_ever(client, question, tools, max_iterations=10):
        while True:
            client.create([miniagent.user(question)], tools=tools.schemas())
    not_yet(exercises.check_03_3(spins_for_ever), "called the model again", "20 calls")

    def always_stops(client, question, tools, max_iterations=10):
        client.create([miniagent.user(question)], tools=tools.schemas())
        return "stopped on max_tokens", []
    not_yet(exercises.check_03_3(always_stops), "3584")

    def on_max_tokens(then):
        """react that, on max_tokens, does `then(response)`: a return value, or it raises."""
        def careful_react(client, question, tools, max_iterations=10):
            messages = [miniagent.user(question)]
            for _ in range(max_iterations):
                response = client.create(messages, tools=tools.schemas())
                messages.append(miniagent.assistant(response["content"]))
                if response["stop_reason"] == "max_tokens":
                    return then(response), messages
                if response["stop_reason"] != "tool_use":
                    return text_of(response), messages
                messages.append(miniagent.user([tools.run(c) for c in tool_uses(response)]))
            return "", messages
        return careful_react

    def raise_it(response):
        raise RuntimeError("the answer was cut off by max_tokens")
    not_yet(exercises.check_03_3(on_max_tokens(raise_it)), "raised RuntimeError", "stop by returning (answer, messages)")
    not_yet(exercises.check_03_3(on_max_tokens(lambda response: response["stop"])), "raised KeyError: 'stop'")
    assert "stop by returning" not in exercises.check_03_3(on_max_tokens(lambda response: response["stop"])).hint

    def asks_for_more(client, question, tools, max_iterations=10):  # tries again with a larger max_tokens
        messages, max_tokens = [miniagent.user(question)], 1024
        for _ in range(max_iterations):
            response = client.create(messages, tools=tools.schemas(), max_tokens=max_tokens)
            if response["stop_reason"] == "max_tokens":
                max_tokens *= 2
                continue
            messages.append(miniagent.assistant(response["content"]))
            if response["stop_reason"] != "tool_use":
                return text_of(response), messages
            messages.append(miniagent.user([tools.run(c) for c in tool_uses(response)]))
        return "max_tokens every time", messages
    not_yet(exercises.check_03_3(asks_for_more), "called the model again", "stop on max_tokens")
    not_yet(exercises.check_03_3(lambda client, question, tools, max_iterations=10: None), "no model calls")
    wrong_kind(exercises.check_03_3(reference_careful_react(offline(), "Hi", default_tools())), "a function")


# --- 04 -----------------------------------------------------------------------------------


def reference_orphaned_results(messages):
    orphans = []
    for i, message in enumerate(messages):
        before = blocks(messages[i - 1]["content"]) if i > 0 else []
        asked = {b["id"] for b in before if b["type"] == "tool_use"}
        orphans += [b["tool_use_id"] for b in blocks(message["content"])
                    if b["type"] == "tool_result" and b["tool_use_id"] not in asked]
    return orphans


def test_04_1_reference_and_odd_but_valid():
    done(exercises.check_04_1(reference_orphaned_results))

    def as_a_set(messages):  # a set, built with the package's tool_uses and tool_results
        from miniagent.messages import tool_results
        found = set()
        for before, message in zip([None, *messages], messages):
            asked = {b["id"] for b in tool_uses(before)} if before else set()
            found |= {b["tool_use_id"] for b in tool_results(message)} - asked
        return found
    done(exercises.check_04_1(as_a_set))

    def lazily(messages):  # a generator, reading the message before only when it is the assistant's
        for before, message in zip([None, *messages], messages):
            asked = {b["id"] for b in tool_uses(before)} if before and before["role"] == "assistant" else set()
            yield from (b["tool_use_id"] for b in blocks(message["content"])
                        if b["type"] == "tool_result" and b["tool_use_id"] not in asked)
    done(exercises.check_04_1(lazily))


def test_04_1_wrong_answers():
    not_yet(exercises.check_04_1(lambda messages: []), "naive window's view", "['toolu_")

    def anywhere_before(messages):  # looks at every earlier message, not just the one before
        seen, orphans = set(), []
        for message in messages:
            for b in blocks(message["content"]):
                if b["type"] == "tool_use":
                    seen.add(b["id"])
                elif b["type"] == "tool_result" and b["tool_use_id"] not in seen:
                    orphans.append(b["tool_use_id"])
        return orphans
    not_yet(exercises.check_04_1(anywhere_before), "two messages back", "['toolu_a']")

    def lists_only(messages):  # assumes every content is a list of blocks
        orphans = []
        for i, message in enumerate(messages):
            asked = {b["id"] for b in (messages[i - 1]["content"] if i else []) if b["type"] == "tool_use"}
            orphans += [b["tool_use_id"] for b in message["content"]
                        if b["type"] == "tool_result" and b["tool_use_id"] not in asked]
        return orphans
    not_yet(exercises.check_04_1(lists_only), "TypeError: string indices")

    def wraps_around(messages):  # messages[i - 1] at i = 0 is the last message: the old check let this pass
        orphans = []
        for i, message in enumerate(messages):
            asked = {b["id"] for b in blocks(messages[i - 1]["content"]) if b["type"] == "tool_use"}
            orphans += [b["tool_use_id"] for b in blocks(message["content"])
                        if b["type"] == "tool_result" and b["tool_use_id"] not in asked]
        return orphans
    not_yet(exercises.check_04_1(wraps_around), "answers a call only its last message makes", "['toolu_w']",
            "messages[i - 1] at i = 0 is the last one")

    def unanswered_calls(messages):  # the other side of the pair: tool_use blocks with no result after them
        found = []
        for i, message in enumerate(messages):
            after = blocks(messages[i + 1]["content"]) if i + 1 < len(messages) else []
            answered = {b["tool_use_id"] for b in after if b["type"] == "tool_result"}
            found += [b["id"] for b in blocks(message["content"]) if b["type"] == "tool_use" and b["id"] not in answered]
        return found
    not_yet(exercises.check_04_1(unanswered_calls), "naive window's view", "the message just before it")

    def first_result_only(messages):  # one result per message, as if a turn made one call
        orphans = []
        for i, message in enumerate(messages):
            asked = {b["id"] for b in (blocks(messages[i - 1]["content"]) if i else []) if b["type"] == "tool_use"}
            results = [b for b in blocks(message["content"]) if b["type"] == "tool_result"]
            if results and results[0]["tool_use_id"] not in asked:
                orphans.append(results[0]["tool_use_id"])
        return orphans
    not_yet(exercises.check_04_1(first_result_only), "two results", "['toolu_r']")
    wrong_kind(exercises.check_04_1(lambda messages: len(reference_orphaned_results(messages))), "an int")
    wrong_kind(exercises.check_04_1(lambda messages: [{"id": i} for i in reference_orphaned_results(messages)]),
               "strings")
    not_yet(exercises.check_04_1(lambda messages: None), "returned None")
    wrong_kind(exercises.check_04_1([]), "a function")


def reference_trim_safe(messages, max_turns):
    limit = max_turns * 2
    if len(messages) <= limit:
        return list(messages)
    cut = len(messages) - (limit - 1)
    while any(b["type"] == "tool_result" for b in blocks(messages[cut]["content"])):
        cut += 1
    return [messages[0]] + messages[cut:]


def article_trim(messages, max_turns):
    if len(messages) <= max_turns * 2:
        return messages
    return [messages[0]] + messages[len(messages) - (max_turns * 2 - 1):]


def test_04_2_reference_and_odd_but_valid():
    done(exercises.check_04_2(reference_trim_safe))
    done(exercises.check_04_2(lambda messages, max_turns: SlidingWindow(max_messages=max_turns * 2).view(messages)))

    def one_step_as_a_tuple(messages, max_turns):  # `if`, not `while`: after results comes the assistant's turn
        if len(messages) <= max_turns * 2:
            return tuple(messages)
        cut = len(messages) - (max_turns * 2 - 1)
        if any(b["type"] == "tool_result" for b in blocks(messages[cut]["content"])):
            cut += 1
        return (messages[0], *messages[cut:])
    done(exercises.check_04_2(one_step_as_a_tuple))


def test_04_2_wrong_answers():
    not_yet(exercises.check_04_2(article_trim), "would refuse the view", "unexpected `tool_use_id`")

    def drops_too_much(messages, max_turns):  # cuts only before a question: valid, but forgets more than it must
        view = reference_trim_safe(messages, max_turns)
        starts = [i for i, m in enumerate(view) if i > 0 and isinstance(m["content"], str)]
        return [view[0]] + view[starts[0]:] if starts else view
    not_yet(exercises.check_04_2(drops_too_much), "where", "fit without breaking a pair")

    def cuts_backwards(messages, max_turns):  # keeps the tool_use too: one message over the limit
        view = article_trim(messages, max_turns)
        if len(view) > 1 and any(b["type"] == "tool_result" for b in blocks(view[1]["content"])):
            view = [view[0], messages[len(messages) - len(view)]] + view[1:]
        return view
    not_yet(exercises.check_04_2(cuts_backwards), "more than max_turns * 2")

    def trims_in_place(messages, max_turns):
        view = reference_trim_safe(messages, max_turns)
        messages[:] = view
        return messages
    not_yet(exercises.check_04_2(trims_in_place), "changed the list it was given")

    def forgets_the_task(messages, max_turns):
        view = reference_trim_safe(messages, max_turns)
        return view[1:] if len(view) < len(messages) else view
    not_yet(exercises.check_04_2(forgets_the_task), "dropped the first message")

    wrong_kind(exercises.check_04_2(lambda messages, max_turns: "no"), "a list of messages")

    def same_list_when_short(messages, max_turns):  # the article's `return messages`, kept
        return messages if len(messages) <= max_turns * 2 else reference_trim_safe(messages, max_turns)
    not_yet(exercises.check_04_2(same_list_when_short), "returned the very list it was given", "list(messages)")

    def one_too_many(messages, max_turns):  # the latest max_turns * 2, plus the first
        if len(messages) <= max_turns * 2:
            return list(messages)
        cut = len(messages) - max_turns * 2
        while any(b["type"] == "tool_result" for b in blocks(messages[cut]["content"])):
            cut += 1
        return [messages[0]] + messages[cut:]
    not_yet(exercises.check_04_2(one_too_many), "kept 7 messages", "more than max_turns * 2 = 6")

    def back_to_a_question(messages, max_turns):  # moves the cut to a user message: a results message is one too
        if len(messages) <= max_turns * 2:
            return list(messages)
        cut = len(messages) - (max_turns * 2 - 1)
        while messages[cut]["role"] != "user":
            cut += 1
        return [messages[0]] + messages[cut:]
    not_yet(exercises.check_04_2(back_to_a_question), "would refuse the view", "unexpected `tool_use_id`")
    not_yet(exercises.check_04_2(lambda messages: messages), "TypeError")


@pytest.fixture(scope="module")
def nb04():
    """A short version of notebook 04's session: search results long enough that policies matter."""
    from miniagent.tools import tool as make_tool

    llm = offline()

    @make_tool
    def search_web(query: str) -> str:
        """Search the web and return the top hits.

        Args:
            query: What to search for.
        """
        return "".join(f"{i}. {query}: a long snippet about {query}, with details. " * 6 for i in range(1, 9))

    tools = ToolRegistry([get_weather, calculate, search_web])
    topics = ["context windows", "prompt caching", "tool calling", "agent memory", "rate limits", "retries"]
    questions = ["I'm writing a guide. Search for context windows.", "By the way, my name is Ada."]
    questions += [f"Search for {topic}." if i % 2 == 0 else f"What's the weather in {['Paris', 'Tokyo'][i % 2]}?"
                  for i, topic in enumerate(topics * 2)] + ["What's my name?"]

    def run_session(policy=None):
        session = SimpleNamespace(policy=policy, history=[], answer="", broke=None, input_tokens=0)
        before = llm.usage.input_tokens
        for turn, question in enumerate(questions, 1):
            result = miniagent.run_loop(llm, session.history + [miniagent.user(question)], tools=tools, policy=policy)
            if result.stop == "api_error":
                session.broke = (turn, str(result.error).splitlines()[0])
                break
            session.history, session.answer = result.messages, result.text
        session.input_tokens = llm.usage.input_tokens - before
        return session

    measured = {"none": run_session(), "sliding window": run_session(SlidingWindow(max_messages=8)),
                "summarize": run_session(Summarize(llm, trigger_tokens=2_000, keep_recent_tokens=800))}
    return SimpleNamespace(llm=llm, run_session=run_session, measured=measured)


def test_04_3_the_target_comes_from_the_measured_sessions(nb04):
    m = nb04.measured
    assert "Ada" in m["none"].answer and "Ada" in m["summarize"].answer and "Ada" not in m["sliding window"].answer
    assert m["summarize"].input_tokens < m["none"].input_tokens


def test_04_3_reference_and_odd_but_valid(nb04):
    llm = nb04.llm
    reference = Compose(TruncateToolResults(max_chars=300),
                        Summarize(llm, trigger_tokens=1_500, keep_recent_tokens=600))
    done(exercises.check_04_3(reference, nb04.run_session, nb04.measured, "Ada"))
    measured_with_it = {**nb04.measured, "mine": nb04.run_session(reference)}  # its own earlier run is no target
    done(exercises.check_04_3(reference, nb04.run_session, measured_with_it, "Ada"))
    done(exercises.check_04_3(reference, nb04.run_session, list(nb04.measured.values()), "Ada"))
    done(exercises.check_04_3(TruncateToolResults(max_chars=300), nb04.run_session, nb04.measured, "Ada"))  # alone


def test_04_3_wrong_answers(nb04):
    llm, run, measured = nb04.llm, nb04.run_session, nb04.measured
    not_yet(exercises.check_04_3(SlidingWindow(max_messages=8), run, measured, "Ada"), "does not know the name")
    not_yet(exercises.check_04_3(Summarize(llm, trigger_tokens=2_000, keep_recent_tokens=800), run, measured, "Ada"),
            "'summarize' knew it too", "spend fewer")
    from miniagent.context import NaiveWindow
    not_yet(exercises.check_04_3(NaiveWindow(max_turns=3), run, measured, "Ada"), "stopped at turn", "tool_use_id")

    class Broken(SlidingWindow):
        def view(self, messages):
            raise KeyError("content")
    not_yet(exercises.check_04_3(Broken(max_messages=8), run, measured, "Ada"), "view() raised KeyError")

    class ForgetsToReturn(SlidingWindow):
        def view(self, messages):
            super().view(messages)
    not_yet(exercises.check_04_3(ForgetsToReturn(max_messages=8), run, measured, "Ada"),
            "view() returned None", "list of messages")
    wrong_kind(exercises.check_04_3(Compose(TruncateToolResults, SlidingWindow(max_messages=8)), run, measured, "Ada"),
               "the class TruncateToolResults", "TruncateToolResults(...)")
    elsewhere = offline()  # summaries on another client than the session's: the old check did not count them
    on_the_side = Summarize(elsewhere, trigger_tokens=2_000, keep_recent_tokens=800)
    verdict = exercises.check_04_3(on_the_side, run, measured, "Ada")
    not_yet(verdict, "went to another client", "give it the client the session runs on")
    assert f"{elsewhere.usage.input_tokens:,} input tokens" in verdict.hint

    not_yet(exercises.check_04_3(None, run, measured, "Ada"), "still None")
    wrong_kind(exercises.check_04_3(SlidingWindow, run, measured, "Ada"), "the class SlidingWindow")
    wrong_kind(exercises.check_04_3("summarize", run, measured, "Ada"), "view() and on_tool_results()")
    not_yet(exercises.check_04_3(SlidingWindow(max_messages=8), run, {"sliding": measured["sliding window"]}, "Ada"),
            "no target")


# --- 05 -----------------------------------------------------------------------------------


@tool
def get_population(city: str) -> str:
    """Get the population of a city: how many people live there.

    Args:
        city: the city, e.g. Tokyo
    """
    return {"Tokyo": "37,400,068 people"}.get(city, f"no data for {city}")


def test_05_1_reference_and_odd_but_valid():
    llm = offline()
    done(exercises.check_05_1(get_population, llm))

    def population_of(town: str) -> int:  # a plain function, another name, a number as the answer
        """The number of people living in a town or city (its population).

        Args:
            town: the city
        """
        return 37_400_068
    done(exercises.check_05_1(population_of, llm))

    @tool(name="get_population")
    async def population_in_words(city: str) -> str:  # a coroutine, the number in words and in Chinese units
        """Get the population of a city: how many people live there.

        Args:
            city: the city's name, e.g. Tokyo or 东京
        """
        return {"Tokyo": "about 37.4 million people (3740万人)"}.get(city, "unknown")
    done(exercises.check_05_1(population_in_words, llm))


def test_05_1_wrong_answers():
    llm = offline()

    @tool
    def get_population(city: str) -> None:  # named right, does nothing: the name alone does not pass
        """Get the population of a city.

        Args:
            city: the city
        """
    not_yet(exercises.check_05_1(get_population, llm), "answered", "return the population")

    @tool
    def get_population_broken(city: str) -> str:
        """Get the population of a city.

        Args:
            city: the city
        """
        raise KeyError(city)
    not_yet(exercises.check_05_1(get_population_broken, llm), "failed when the agent called it", "KeyError")

    @tool
    def lookup(city: str) -> str:
        """Look something up.

        Args:
            city: the city
        """
        return "37,400,068"
    not_yet(exercises.check_05_1(lookup, llm), "called no tool", "name and description")

    @tool(name="get_population")
    def lower_case_keys(city: str) -> str:  # the model asks for "Tokyo"
        """Get the population of a city.

        Args:
            city: the city
        """
        return {"tokyo": "37,400,068", "paris": "11,208,440"}.get(city, f"no data for {city}")
    not_yet(exercises.check_05_1(lower_case_keys, llm), "answered 'no data for Tokyo'", "return the population")

    @tool(name="get_population")
    def digits_but_no_population(city: str) -> str:  # the old check took any digit for a number of people
        """Get the population of a city.

        Args:
            city: the city
        """
        return f"{city}: unknown (data of 2024)"
    not_yet(exercises.check_05_1(digits_but_no_population, llm), "answered 'Tokyo: unknown (data of 2024)'",
            "return the population")

    @tool(name="get_population")
    def wants_a_year(city: str, year: int) -> str:  # nothing in the question gives the year
        """Get the population of a city in a given year.

        Args:
            city: the city
            year: the year of the census
        """
        return "37,400,068"
    verdict = exercises.check_05_1(wants_a_year, llm)
    not_yet(verdict, "called no tool", "requires city, year", "give the other parameters a default")
    assert "name and description" not in verdict.hint  # they are fine: the old hint pointed there
    not_yet(exercises.check_05_1(Tool("get_weather", "Population.", lookup.input_schema, lookup.fn), llm),
            "already has a tool named 'get_weather'")
    not_yet(exercises.check_05_1(None, llm), "still None")
    wrong_kind(exercises.check_05_1(miniagent.Agent(llm), llm), "a tool")


def test_05_1_a_live_model_that_calls_no_tool_leaves_the_grade_to_the_checks_mock(capsys):
    weak = offline()
    weak.mode = "live"  # as a small real model: it answers in words, whatever it is asked
    weak.mock.script({"content": "Tokyo is a big city."}, repeat=True)
    done(exercises.check_05_1(get_population, weak))
    assert "live, asked 'What is the population of Tokyo?', the agent called no tool: graded on the check's own mock" \
        in capsys.readouterr().out

    @tool
    def get_population_wordy(city: str) -> str:  # a wrong answer is still wrong on the mock
        """Get the population of a city.

        Args:
            city: the city
        """
        return "a lot of people"
    not_yet(exercises.check_05_1(get_population_wordy, weak), "answered", "return the population")
    capsys.readouterr()
    weak.mode = "offline"  # the mock decides only for a live model: offline, its own answer is the grade
    not_yet(exercises.check_05_1(get_population, weak), "called no tool")
    assert "graded on the check's own mock" not in capsys.readouterr().out


def reference_calls_per_round(trace):
    rounds = {}
    for event in trace.of_type("tool_call"):
        rounds[event["iteration"]] = rounds.get(event["iteration"], 0) + 1
    return rounds


def test_05_2_reference_and_odd_but_valid():
    from collections import Counter

    done(exercises.check_05_2(reference_calls_per_round))
    done(exercises.check_05_2(lambda trace: Counter(e["iteration"] for e in trace if e["type"] == "tool_call")))

    def from_the_responses(trace):  # the tool_use blocks the model asked for: the check's traces hold them too
        return {e["iteration"]: n for e in trace.of_type("response")
                if (n := sum(b["type"] == "tool_use" for b in e["content"]))}
    done(exercises.check_05_2(from_the_responses))

    def counting_requests(trace):  # rounds numbered by the requests seen, results counted instead of calls
        rounds, n = {}, 0
        for event in trace:
            n += event["type"] == "request"
            if event["type"] == "tool_result":
                rounds[n] = rounds.get(n, 0) + 1
        return rounds
    done(exercises.check_05_2(counting_requests))


def test_05_2_wrong_answers():
    not_yet(exercises.check_05_2(lambda trace: {1: 4}), "2 calls in round 1 and 1 in round 2", "{1: 2, 2: 1}")

    def results_too(trace):
        rounds = {}
        for event in trace:
            if event["type"] in ("tool_call", "tool_result"):
                rounds[event["iteration"]] = rounds.get(event["iteration"], 0) + 1
        return rounds
    not_yet(exercises.check_05_2(results_too), "{1: 2, 2: 1}")
    not_yet(exercises.check_05_2(lambda trace: {str(k): v for k, v in reference_calls_per_round(trace).items()}),
            "'1'")
    not_yet(exercises.check_05_2(lambda trace: {e["iteration"]: 1 for e in trace.of_type("tool_call")}),
            "yours was {1: 1, 2: 1}")
    not_yet(exercises.check_05_2(lambda trace: {e["iteration"]: 1 for e in trace}), "KeyError: 'iteration'")

    def distinct_tools(trace):  # get_weather for Beijing and for Shanghai is two calls
        names = {}
        for event in trace.of_type("tool_call"):
            names.setdefault(event["iteration"], set()).add(event["name"])
        return {k: len(v) for k, v in names.items()}
    not_yet(exercises.check_05_2(distinct_tools), "a run of the demo question", "{1: 4}, yours was {1: 3}")
    from_zero = lambda trace: dict(enumerate(reference_calls_per_round(trace).values()))  # noqa: E731
    not_yet(exercises.check_05_2(from_zero), "yours was {0: 2, 1: 1}")
    wrong_kind(exercises.check_05_2(lambda trace: list(reference_calls_per_round(trace).items())), "a list")
    not_yet(exercises.check_05_2(lambda trace: None), "returned None")


def reference_slowest_tool(trace):
    return max(trace.of_type("tool_result"), key=lambda event: event["seconds"])["name"]


def test_05_3_reference_and_odd_but_valid():
    done(exercises.check_05_3(reference_slowest_tool))
    done(exercises.check_05_3(lambda trace: sorted((e.get("seconds", -1), e.get("name", ""))
                                                   for e in trace.events)[-1][1]))

    def by_hand(trace):  # a loop, no max, ties to the first
        best = None
        for event in trace:
            if event["type"] == "tool_result" and (best is None or event["seconds"] > best["seconds"]):
                best = event
        return best["name"]
    done(exercises.check_05_3(by_hand))


def test_05_3_wrong_answers():
    not_yet(exercises.check_05_3(lambda trace: trace.of_type("tool_result")[-1]["name"]), "yours said 'fast'")
    not_yet(exercises.check_05_3(lambda trace: max(trace.of_type("tool_result"), key=lambda e: e["elapsed"])["name"]),
            "'slow', yours said 'fast'")  # elapsed is when it arrived, not how long it took
    not_yet(exercises.check_05_3(lambda trace: max(trace, key=lambda e: e["seconds"])["name"]), "KeyError: 'seconds'")
    wrong_kind(exercises.check_05_3(lambda trace: max(trace.of_type("tool_result"), key=lambda e: e["seconds"])),
               "a dict", "name")
    not_yet(exercises.check_05_3(lambda trace: None), "returned None")
    not_yet(exercises.check_05_3(lambda trace: sorted(trace.of_type("tool_result"), key=lambda e: e["seconds"])[0]["name"]),
            "yours said 'fast'")  # sorted, but the first is the fastest
    not_yet(exercises.check_05_3(lambda trace: max(trace.of_type("tool_result"), key=lambda e: e["seconds"])["id"]),
            "the slowest tool is 'slow', yours said 'b'")  # the call's id, not the tool's name

    def time_per_tool(trace):  # added up per tool: the slowest result is another question
        total = {}
        for event in trace.of_type("tool_result"):
            total[event["name"]] = total.get(event["name"], 0) + event["seconds"]
        return max(total, key=total.get)
    not_yet(exercises.check_05_3(time_per_tool), "called twice", "'search_web', yours said 'get_weather'",
            "one result at a time")
    first_round = lambda trace: max((e for e in trace.of_type("tool_result") if e["iteration"] == 1),  # noqa: E731
                                    key=lambda e: e["seconds"])["name"]
    not_yet(exercises.check_05_3(first_round), "'search_web', yours said 'get_weather'")
    wrong_kind(exercises.check_05_3(lambda trace: max(e["seconds"] for e in trace.of_type("tool_result"))),
               "a float", "the tool's name")


# --- no answer makes a check raise ----------------------------------------------------------


def _raises(*args, **kwargs):
    raise RuntimeError("learner bug")


GARBAGE = [None, True, False, 0, "", "text", [], {}, object(), int, _raises, lambda *a, **k: object(), print]


def test_no_answer_makes_any_check_raise(nb01):
    llm = offline()
    contexts = {"00-1": (llm,), "01-2": (nb01.mock_llm,), "01-3": (nb01.mock_llm, nb01.good), "02-1": (llm,),
                "03-2": (llm,), "04-3": (lambda policy: SimpleNamespace(broke=None, answer="", input_tokens=0),
                                         {"none": SimpleNamespace(broke=None, answer="Ada", input_tokens=9)}, "Ada"),
                "05-1": (llm,)}
    for key, check in exercises.CHECKS.items():
        for answer in GARBAGE:
            verdict = check(answer, *contexts.get(key, ()))
            assert isinstance(verdict, exercises.Verdict) and verdict.kind in (NOT_YET, WRONG_KIND), (key, answer)
            assert verdict.hint and "\n" not in repr(verdict), (key, answer, verdict)


@pytest.mark.parametrize("key", ["01-3", "02-2", "03-1", "03-3", "04-1", "04-2", "04-3", "05-1", "05-2", "05-3",
                                 "06-1", "06-2", "06-3", "07-1", "07-2", "07-3", "08-1", "08-2", "08-3",
                                 "09-1", "09-2", "09-3"])
def test_an_answer_that_never_returns_is_reported_not_waited_for(key, short_timeout, nb01, nb04):
    """Learner code that hangs (an endless loop, a sleep of an hour) costs a check TIMEOUT seconds."""
    def hangs(*args, **kwargs):
        short_timeout.wait()

    class StuckWindow(SlidingWindow):
        def on_tool_results(self, results):
            short_timeout.wait()

    @tool
    def get_population(city: str) -> str:
        """Get the population of a city.

        Args:
            city: the city
        """
        short_timeout.wait()
        return "1"

    llm = offline()
    answers = {"01-3": (hangs, nb01.mock_llm, nb01.good), "04-3": (StuckWindow(max_messages=8), nb04.run_session,
                                                                   nb04.measured, "Ada"),
               "05-1": (get_population, llm)}
    started = time.perf_counter()
    not_yet(exercises.CHECKS[key](*answers.get(key, (hangs,))), "did not return within 0.1 s",
            "restart the kernel")
    assert time.perf_counter() - started < 5



# --- 06 · Streaming ----------------------------------------------------------------------------

import json  # noqa: E402


def hand_made_events_of(raw):
    """The notebook's first parser: one data: line per event (the exercise's starting point)."""
    events = []
    for chunk in raw.decode().split("\n\n"):
        for line in chunk.splitlines():
            if line.startswith("data:"):
                events.append(json.loads(line[len("data:"):]))
    return events


def reference_parse_events(raw):
    events = []
    text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    for chunk in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in chunk.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def test_06_1_reference_and_odd_but_valid():
    done(exercises.check_06_1(reference_parse_events))

    def with_the_package(raw):  # odd but valid: the package's parser, then json.loads
        return [json.loads(sse.data) for sse in miniagent.SSEParser().feed(raw)]
    done(exercises.check_06_1(with_the_package))


def test_06_1_wrong_answers():
    not_yet(exercises.check_06_1(hand_made_events_of), "JSON over two data: lines")

    def data_text(raw):  # the data lines, unparsed
        return [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
    wrong_kind(exercises.check_06_1(data_text), "json.loads")

    def only_deltas(raw):  # keeps the deltas only
        return [e for e in reference_parse_events(raw) if e["type"] == "content_block_delta"]
    not_yet(exercises.check_06_1(only_deltas), "events where there are")
    wrong_kind(exercises.check_06_1("parse_events"), "should be a function")


def reference_tool_inputs(events):
    fragments, inputs = {}, {}
    for event in events:
        if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
            fragments[event["index"]] = []
        elif event["type"] == "content_block_delta" and event["index"] in fragments:
            fragments[event["index"]].append(event["delta"].get("partial_json", ""))
        elif event["type"] == "content_block_stop" and event["index"] in fragments:
            text = "".join(fragments[event["index"]])
            try:
                inputs[event["index"]] = json.loads(text) if text else {}
            except json.JSONDecodeError:
                inputs[event["index"]] = None
    return {index: inputs.get(index) for index in fragments}


def test_06_2_reference_and_odd_but_valid():
    done(exercises.check_06_2(reference_tool_inputs))

    def with_the_accumulator(events):  # odd but valid: feed the package's accumulator, read its blocks
        acc = miniagent.MessageAccumulator()
        for event in events:
            acc.add(event)
        final = acc.message or acc.snapshot()
        cut = {item["index"] for item in acc.incomplete} | {item["index"] for item in acc.forming}
        return {i: (None if i in cut else b["input"]) for i, b in enumerate(final["content"]) if b["type"] == "tool_use"}
    done(exercises.check_06_2(with_the_accumulator))


def test_06_2_wrong_answers():
    def one_buffer(events):  # joins fragments across blocks
        out, text = {}, ""
        for e in events:
            if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
                out[e["index"]] = None
            elif e["type"] == "content_block_delta" and "partial_json" in e["delta"]:
                text += e["delta"]["partial_json"]
            elif e["type"] == "content_block_stop" and e["index"] in out:
                try:
                    out[e["index"]] = json.loads(text) if text else {}
                except json.JSONDecodeError:
                    out[e["index"]] = None
        return out
    not_yet(exercises.check_06_2(one_buffer), "by its index")

    def guesses_empty(events):  # an unfinished call becomes {}: it would run with no arguments
        return {i: ({} if v is None else v) for i, v in reference_tool_inputs(events).items()}
    not_yet(exercises.check_06_2(guesses_empty), "never completed", "None")

    def stops_only(events):  # forgets blocks that never stopped
        return {i: v for i, v in reference_tool_inputs(events).items() if v is not None}
    not_yet(exercises.check_06_2(stops_only), "every tool_use block has an entry")
    wrong_kind(exercises.check_06_2(lambda events: [1, 2]), "return a dict")


def reference_time_to_first_text(client, messages):
    started = time.perf_counter()
    with client.stream(messages) as stream:
        for event in stream:
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                return time.perf_counter() - started
    return time.perf_counter() - started


def test_06_3_reference_and_odd_but_valid():
    done(exercises.check_06_3(reference_time_to_first_text))

    def with_create(client, messages):  # odd but valid: create(stream=True) and an exception to stop early
        class First(Exception):
            pass
        started = time.perf_counter()

        def on_event(event):
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                raise First
        try:
            client.create(messages, stream=True, on_event=on_event)
        except First:
            pass
        return time.perf_counter() - started
    done(exercises.check_06_3(with_create))


def test_06_3_wrong_answers():
    def plain(client, messages):  # a plain call: nothing arrives until the end
        started = time.perf_counter()
        client.create(messages)
        return time.perf_counter() - started
    not_yet(exercises.check_06_3(plain), "no streamed request")

    def first_event(client, messages):  # stops at message_start, before any text
        started = time.perf_counter()
        with client.stream(messages) as stream:
            next(iter(stream))
        return time.perf_counter() - started
    not_yet(exercises.check_06_3(first_event), "before any text could arrive")

    def whole(client, messages):  # the whole stream
        started = time.perf_counter()
        with client.stream(messages) as stream:
            for _ in stream:
                pass
        return time.perf_counter() - started
    not_yet(exercises.check_06_3(whole), "nearer the whole answer")
    wrong_kind(exercises.check_06_3(lambda client, messages: "0.2 s"), "return the seconds")


def test_06_1_more_wrong_answers():
    def six_characters(raw):  # assumes "data: " with its space: a `data:{...}` line loses its brace
        events = []
        for chunk in raw.decode().replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
            data = [line[6:] for line in chunk.split("\n") if line.startswith("data:")]
            if data:
                events.append(json.loads("\n".join(data)))
        return events
    not_yet(exercises.check_06_1(six_characters), "JSONDecodeError", "no space after data:")

    known = {"message_start", "content_block_start", "content_block_delta", "content_block_stop",
             "message_delta", "message_stop", "ping"}

    def known_types_only(raw):  # the event list without `error`: a stream's failure is dropped
        return [event for event in reference_parse_events(raw) if event["type"] in known]
    not_yet(exercises.check_06_1(known_types_only), "an error event ends", "error included")


def test_06_2_more_wrong_answers():
    def text_blocks_too(events):  # an entry for every block, text ones as None
        inputs = reference_tool_inputs(events)
        for event in events:
            if event["type"] == "content_block_start" and event["content_block"]["type"] == "text":
                inputs[event["index"]] = None
        return inputs
    not_yet(exercises.check_06_2(text_blocks_too), "only tool_use blocks have an entry")

    def empty_is_none(events):  # json.loads("") fails: a call without arguments becomes None
        return {index: None if value == {} else value for index, value in reference_tool_inputs(events).items()}
    not_yet(exercises.check_06_2(empty_is_none), "its input is {}, not None")

    def string_keys(events):
        return {str(index): value for index, value in reference_tool_inputs(events).items()}
    not_yet(exercises.check_06_2(string_keys), "keyed by its index (the int)")


def test_06_3_more_wrong_answers():
    def milliseconds(client, messages):
        return reference_time_to_first_text(client, messages) * 1000
    not_yet(exercises.check_06_3(milliseconds), "in milliseconds", "return seconds")

    def at_block_start(client, messages):  # content_block_start comes before the first token's wait
        started = time.perf_counter()
        with client.stream(messages) as stream:
            for event in stream:
                if event["type"] == "content_block_start":
                    return time.perf_counter() - started
    not_yet(exercises.check_06_3(at_block_start), "before any text could arrive")


# --- 07 · Async and serving ---------------------------------------------------------------------

import asyncio  # noqa: E402


async def reference_ask_all(questions, make_agent, limit):
    gate = asyncio.Semaphore(limit)

    async def ask(question):
        async with gate:
            return (await make_agent().run(question)).text

    return await asyncio.gather(*(ask(q) for q in questions))


def test_07_1_reference_and_odd_but_valid():
    done(exercises.check_07_1(reference_ask_all))

    async def with_tasks(questions, make_agent, limit):  # tasks and a bounded queue of workers: also fine
        pending = list(enumerate(questions))
        answers = [None] * len(questions)

        async def worker():
            while pending:
                i, question = pending.pop(0)
                answers[i] = (await make_agent().run(question)).text

        await asyncio.gather(*(worker() for _ in range(limit)))
        return answers
    done(exercises.check_07_1(with_tasks))


def test_07_1_wrong_answers():
    async def one_by_one(questions, make_agent, limit):
        return [(await make_agent().run(q)).text for q in questions]
    not_yet(exercises.check_07_1(one_by_one), "start them all together")

    async def unlimited(questions, make_agent, limit):
        return await asyncio.gather(*((lambda q: _text(make_agent().run(q)))(q) for q in questions))
    not_yet(exercises.check_07_1(unlimited), "over the limit")

    async def finishing_order(questions, make_agent, limit):
        gate = asyncio.Semaphore(limit)

        async def ask(q):
            async with gate:
                return (await make_agent().run(q)).text
        return [await t for t in asyncio.as_completed([ask(q) for q in questions])]
    not_yet(exercises.check_07_1(finishing_order), "in the order they finished")

    async def one_agent(questions, make_agent, limit):
        agent, gate = make_agent(), asyncio.Semaphore(limit)

        async def ask(q):
            async with gate:
                return (await agent.run(q)).text
        return await asyncio.gather(*(ask(q) for q in questions))
    not_yet(exercises.check_07_1(one_agent), "call make_agent() once per question")

    async def results(questions, make_agent, limit):
        gate = asyncio.Semaphore(limit)

        async def ask(q):
            async with gate:
                return await make_agent().run(q)
        return await asyncio.gather(*(ask(q) for q in questions))
    wrong_kind(exercises.check_07_1(results), ".text")

    def not_async(questions, make_agent, limit):
        return ["answer"]
    wrong_kind(exercises.check_07_1(not_async), "async def")


async def _text(awaitable):
    return (await awaitable).text


def reference_make_async(fn):
    async def run(*args, **kwargs):
        return await asyncio.to_thread(fn, *args, **kwargs)
    return run


def test_07_2_reference_and_odd_but_valid():
    done(exercises.check_07_2(reference_make_async))

    def with_executor(fn):  # run_in_executor with functools.partial: the older spelling
        import functools

        async def run(*args, **kwargs):
            return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))
        return run
    done(exercises.check_07_2(with_executor))


def test_07_2_wrong_answers():
    def blocking(fn):  # async in name only: the call blocks the loop
        async def run(*args, **kwargs):
            return fn(*args, **kwargs)
        return run
    not_yet(exercises.check_07_2(blocking), "event loop stood still")

    def no_kwargs(fn):
        async def run(*args):
            return await asyncio.to_thread(fn, *args)
        return run
    not_yet(exercises.check_07_2(no_kwargs), "unexpected keyword argument")

    def swallows(fn):
        async def run(*args, **kwargs):
            try:
                return await asyncio.to_thread(fn, *args, **kwargs)
            except Exception as exc:
                return f"Error: {exc}"
        return run
    not_yet(exercises.check_07_2(swallows), "must raise it too")

    def plain(fn):
        return fn
    wrong_kind(exercises.check_07_2(plain), "not something to await")


def reference_sse_frame(event, text):
    if "\n" in event or "\r" in event:
        raise ValueError(f"an event name cannot contain a line break: {event!r}")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


def test_07_3_reference_and_odd_but_valid():
    done(exercises.check_07_3(reference_sse_frame))

    def crlf_framing(event, text):  # CRLF line ends and bytes: both valid on the wire
        if any(c in event for c in "\r\n"):
            raise ValueError("bad event name")
        import re
        lines = re.split(r"\r\n|\r|\n", text)
        return ("event:" + event + "\r\n" + "".join("data:" + line + "\r\n" if not line.startswith(" ")
                                                    else "data: " + line + "\r\n" for line in lines) + "\r\n").encode()
    done(exercises.check_07_3(crlf_framing))


def test_07_3_wrong_answers():
    def one_line(event, text):
        if "\n" in event:
            raise ValueError
        return f"event: {event}\ndata: {text}\n\n"
    not_yet(exercises.check_07_3(one_line), "split the text at every line end")

    def lf_only(event, text):
        if "\n" in event or "\r" in event:
            raise ValueError
        return f"event: {event}\n" + "".join(f"data: {line}\n" for line in text.split("\n")) + "\n"
    not_yet(exercises.check_07_3(lf_only), "(\\n, \\r\\n, \\r)")

    def no_blank_line(event, text):
        if "\n" in event or "\r" in event:
            raise ValueError
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines)
    not_yet(exercises.check_07_3(no_blank_line), "blank line")

    def trusting(event, text):
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"
    not_yet(exercises.check_07_3(trusting), "raise ValueError")

    def no_space(event, text):  # `data:` without its space eats a leading space of the text
        if "\n" in event or "\r" in event:
            raise ValueError
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        return f"event: {event}\n" + "".join(f"data:{line}\n" for line in lines) + "\n"
    not_yet(exercises.check_07_3(no_space), "' leading space'", "without the text's leading space", "`data: `")


def test_07_1_more_answers():
    async def semaphore_per_question(questions, make_agent, limit):  # each run has a gate of its own
        async def ask(q):
            async with asyncio.Semaphore(limit):
                return (await make_agent().run(q)).text
        return await asyncio.gather(*(ask(q) for q in questions))
    not_yet(exercises.check_07_1(semaphore_per_question), "over the limit", "shared by all the runs")

    async def gate_around_gather(questions, make_agent, limit):  # one gate, held once, around everything
        async with asyncio.Semaphore(limit):
            return await asyncio.gather(*(_text(make_agent().run(q)) for q in questions))
    not_yet(exercises.check_07_1(gate_around_gather), "held around the whole gather")

    async def in_batches(questions, make_agent, limit):  # odd but valid: never more than `limit` at once
        answers = []
        for start in range(0, len(questions), limit):
            answers += await asyncio.gather(*(_text(make_agent().run(q)) for q in questions[start:start + limit]))
        return answers
    done(exercises.check_07_1(in_batches))


def test_07_2_more_answers():
    def executor_with_kwargs(fn):  # run_in_executor takes no keyword arguments for fn
        async def run(*args, **kwargs):
            return await asyncio.get_running_loop().run_in_executor(None, fn, *args, **kwargs)
        return run
    not_yet(exercises.check_07_2(executor_with_kwargs), "unexpected keyword argument")

    def drops_kwargs(fn):
        async def run(*args, **kwargs):
            return await asyncio.to_thread(fn, *args)
        return run
    not_yet(exercises.check_07_2(drops_kwargs), "passing city and unit=... through")

    def yields_then_blocks(fn):  # an await first does not make the call itself non-blocking
        async def run(*args, **kwargs):
            await asyncio.sleep(0)
            return fn(*args, **kwargs)
        return run
    not_yet(exercises.check_07_2(yields_then_blocks), "event loop stood still")

    def returns_the_coroutine(fn):  # odd but valid: a plain def whose call gives something to await
        def run(*args, **kwargs):
            return asyncio.to_thread(fn, *args, **kwargs)
        return run
    done(exercises.check_07_2(returns_the_coroutine))


def _framed(lines_of):
    """An sse_frame that refuses bad names and writes `data: ` lines from `lines_of(text)`."""
    def sse_frame(event, text):
        if "\n" in event or "\r" in event:
            raise ValueError("bad event name")
        return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines_of(text)) + "\n"
    return sse_frame


def test_07_3_more_answers():
    not_yet(exercises.check_07_3(_framed(str.splitlines)), "without the empty lines at its end", "splitlines")
    keeps_last = _framed(lambda text: text.splitlines() + ([""] if text.endswith(("\n", "\r")) or not text else []))
    not_yet(exercises.check_07_3(keeps_last), "\\u2028", "splitlines() also splits")
    lines = lambda text: text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # noqa: E731
    not_yet(exercises.check_07_3(_framed(lambda text: lines(text.strip()))), "ends with a newline", "strip()")
    not_yet(exercises.check_07_3(_framed(lambda text: [json.dumps(text)])), "your text as JSON")

    def no_data_line_when_empty(event, text):
        frame = _framed(lines)(event, text)
        return frame.replace("data: \n\n", "\n") if text == "" else frame
    not_yet(exercises.check_07_3(no_data_line_when_empty), "no data: line", "even an empty text")

    def newline_only_name_check(event, text):
        if "\n" in event:
            raise ValueError("bad event name")
        return reference_sse_frame("x", text).replace("event: x", f"event: {event}", 1)
    not_yet(exercises.check_07_3(newline_only_name_check), "'bad\\rname'", "raise ValueError")

    import re
    done(exercises.check_07_3(_framed(lambda text: re.split(r"\r\n|\r|\n", text))))  # odd but valid: one regex


# --- 08 · Other providers -----------------------------------------------------------------------


def reference_to_openai_tool(tool):
    return {"type": "function", "function": {"name": tool["name"], "description": tool["description"],
                                             "parameters": tool["input_schema"]}}


def test_08_1_reference_and_wrong_answers():
    done(exercises.check_08_1(reference_to_openai_tool))
    not_yet(exercises.check_08_1(lambda t: {"type": "function", "function": {
        "name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}}), '"parameters"')
    not_yet(exercises.check_08_1(lambda t: {"type": "function", "name": t["name"], "description": t["description"],
                                            "parameters": t["input_schema"]}), 'inside "function"')
    not_yet(exercises.check_08_1(lambda t: {"function": {"name": t["name"], "description": t["description"],
                                                         "parameters": t["input_schema"]}}), '"type": "function"')

    def renames_in_place(tool):
        tool["parameters"] = tool.pop("input_schema")
        return {"type": "function", "function": tool}
    not_yet(exercises.check_08_1(renames_in_place), "changed the tool it was given")
    wrong_kind(exercises.check_08_1(lambda t: json.dumps(reference_to_openai_tool(t))), "return a dict")


def reference_assemble_tool_calls(chunks):
    calls = {}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            for piece in choice.get("delta", {}).get("tool_calls") or []:
                call = calls.setdefault(piece["index"], {"id": None, "name": None, "arguments": ""})
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["name"] = function.get("name") or call["name"]
                call["arguments"] += function.get("arguments") or ""
    out = []
    for index in sorted(calls):
        call = calls[index]
        try:
            arguments = json.loads(call["arguments"]) if call["arguments"] else {}
        except json.JSONDecodeError:
            arguments = None
        out.append({"id": call["id"], "name": call["name"], "input": arguments})
    return out


def test_08_2_reference_and_wrong_answers():
    done(exercises.check_08_2(reference_assemble_tool_calls))

    def joined(chunks):  # all argument pieces joined together, across calls
        calls, text = [], ""
        for chunk in chunks:
            for piece in chunk["choices"][0]["delta"].get("tool_calls") or []:
                if "id" in piece:
                    calls.append({"id": piece["id"], "name": piece["function"]["name"]})
                text += piece["function"].get("arguments", "")
        return [{**c, "input": None} for c in calls]
    not_yet(exercises.check_08_2(joined), "join the argument pieces of each index separately")

    def guesses(chunks):
        return [{**c, "input": c["input"] if c["input"] is not None else {}}
                for c in reference_assemble_tool_calls(chunks)]
    not_yet(exercises.check_08_2(guesses), "never guess the rest")

    def by_id(chunks):  # later pieces have no id: they are lost
        calls = {}
        for chunk in chunks:
            for piece in chunk["choices"][0]["delta"].get("tool_calls") or []:
                if "id" in piece:
                    calls[piece["id"]] = {"id": piece["id"], "name": piece["function"]["name"], "arguments": ""}
        return [{"id": c["id"], "name": c["name"], "input": {}} for c in calls.values()]
    not_yet(exercises.check_08_2(by_id), "join the argument pieces")
    wrong_kind(exercises.check_08_2(lambda chunks: {}), "return a list")


def reference_to_openai_messages(messages):
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        texts = [b["text"] for b in content if b["type"] == "text"]
        if message["role"] == "assistant":
            calls = [{"id": b["id"], "type": "function",
                      "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
                     for b in content if b["type"] == "tool_use"]
            out.append({"role": "assistant", "content": "".join(texts) or None, **({"tool_calls": calls} if calls else {})})
            continue
        for block in content:
            if block["type"] == "tool_result":
                out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": block["content"]})
        if texts:
            out.append({"role": "user", "content": "".join(texts)})
    return out


def test_08_3_reference_and_odd_but_valid():
    done(exercises.check_08_3(reference_to_openai_messages))

    def ascii_arguments_and_parts(messages):  # escaped JSON and text parts: the API reads the same
        out = reference_to_openai_messages(messages)
        for m in out:
            for c in m.get("tool_calls", []):
                c["function"]["arguments"] = json.dumps(json.loads(c["function"]["arguments"]))
            if m["role"] == "user":
                m["content"] = [{"type": "text", "text": m["content"]}]
        return out
    done(exercises.check_08_3(ascii_arguments_and_parts))


def test_08_3_wrong_answers():
    def dict_arguments(messages):
        out = reference_to_openai_messages(messages)
        for m in out:
            for c in m.get("tool_calls", []):
                c["function"]["arguments"] = json.loads(c["function"]["arguments"])
        return out
    not_yet(exercises.check_08_3(dict_arguments), "JSON string")

    def one_tool_message(messages):  # all results in one message
        out = []
        for m in reference_to_openai_messages(messages):
            if m["role"] == "tool" and out and out[-1]["role"] == "tool":
                out[-1]["content"] += "\n" + m["content"]
            else:
                out.append(m)
        return out
    not_yet(exercises.check_08_3(one_tool_message), "its own \"tool\" message")

    def text_first(messages):  # the turn's text before its results: a tool message must follow the call
        out = reference_to_openai_messages(messages)
        for i in range(len(out) - 1):
            if out[i]["role"] == "tool" and out[-1]["role"] == "user" and i == len(out) - 2:
                out[i], out[-1] = out[-1], out[i]
        return out
    not_yet(exercises.check_08_3(text_first), "before any text of that turn")

    def drops_content(messages):
        out = reference_to_openai_messages(messages)
        for m in out:
            if m.get("tool_calls") and m["content"] is None:
                del m["content"]
        return out
    not_yet(exercises.check_08_3(drops_content), '"content" (None if no text)')


def test_08_1_strict_false_is_the_same_tool_and_hints_say_where_it_differs():
    """The statement asks for a Chat Completions tool: `"strict": false` (the default) is one."""
    def with_strict(value):
        return lambda t: {"type": "function", "function": {**reference_to_openai_tool(t)["function"], "strict": value}}
    done(exercises.check_08_1(with_strict(False)))
    not_yet(exercises.check_08_1(with_strict(True)), "additionalProperties: false", "leave strict out")
    not_yet(exercises.check_08_1(with_strict("false")), "result['function'] has 'strict': 'false'")

    def no_description(tool):
        return {"type": "function", "function": {"name": tool["name"], "parameters": tool["input_schema"]}}
    verdict = exercises.check_08_1(no_description)
    not_yet(verdict, "result['function'] has no 'description'")
    assert "expected {" not in verdict.hint  # not two clipped dicts that read the same

    def name_twice(tool):
        return {**reference_to_openai_tool(tool), "name": tool["name"]}
    not_yet(exercises.check_08_1(name_twice), "result has 'name'", "does not belong there")

    def name_as_description(tool):
        return {"type": "function", "function": {"name": tool["name"], "description": tool["name"],
                                                 "parameters": tool["input_schema"]}}
    not_yet(exercises.check_08_1(name_as_description), "['description'] should be 'Get the current weather")

    import copy

    def copied_schema(tool):  # odd but valid: a copy of the schema, equal to it
        made = reference_to_openai_tool(tool)
        made["function"]["parameters"] = copy.deepcopy(tool["input_schema"])
        return made
    done(exercises.check_08_1(copied_schema))


def test_08_2_more_wrong_answers():
    def first_choice_always(chunks):  # chunk["choices"][0]: a last chunk with usage only has none
        return reference_assemble_tool_calls([{"choices": [chunk["choices"][0]]} for chunk in chunks])
    not_yet(exercises.check_08_2(first_choice_always), "IndexError", "only usage, no choices")

    def name_from_every_piece(chunks):  # later pieces carry no name: the last one wins, as None
        calls = reference_assemble_tool_calls(chunks)
        names = {}
        for chunk in chunks:
            for choice in chunk.get("choices", []):
                for piece in choice["delta"].get("tool_calls") or []:
                    names[piece["index"]] = piece["function"].get("name")
        return [{**call, "name": names[index]} for index, call in zip(sorted(names), calls)]
    not_yet(exercises.check_08_2(name_from_every_piece), "from its first chunk")

    def arguments_unparsed(chunks):
        calls = reference_assemble_tool_calls(chunks)
        return [{**call, "input": json.dumps(call["input"], ensure_ascii=False)} for call in calls]
    not_yet(exercises.check_08_2(arguments_unparsed), "then json.loads the whole")

    def empty_is_none(chunks):
        return [{**call, "input": None if call["input"] == {} else call["input"]}
                for call in reference_assemble_tool_calls(chunks)]
    not_yet(exercises.check_08_2(empty_is_none), "no arguments came: that is {}")


def test_08_3_more_wrong_answers():
    def no_call_type(messages):
        out = reference_to_openai_messages(messages)
        for message in out:
            for call in message.get("tool_calls", []):
                del call["type"]
        return out
    not_yet(exercises.check_08_3(no_call_type), "message 1['tool_calls'][0] has no 'type'")

    def empty_string_content(messages):  # the statement says None when the turn has no text
        out = reference_to_openai_messages(messages)
        for message in out:
            if message.get("tool_calls") and message["content"] is None:
                message["content"] = ""
        return out
    not_yet(exercises.check_08_3(empty_string_content), "message 1['content'] should be None, got ''")

    def call_ids_renamed(messages):
        out = reference_to_openai_messages(messages)
        for message in out:
            if message["role"] == "tool":
                message["tool_call_id"] = message["tool_call_id"].replace("toolu", "call")
        return out
    not_yet(exercises.check_08_3(call_ids_renamed), "['tool_call_id'] should be 'toolu_1'")


# --- 09 · Memory and retrieval ------------------------------------------------------------------


def like_reference(text):
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def test_09_1_reference_and_odd_but_valid():
    import re
    done(exercises.check_09_1(like_reference))
    done(exercises.check_09_1(lambda text: "%" + re.sub(r"([\\%_])", r"\\\1", text) + "%"))  # one pass
    done(exercises.check_09_1(lambda text: "%" + "".join("\\" + c if c in "\\%_" else c for c in text) + "%"))


def test_09_1_wrong_answers():
    not_yet(exercises.check_09_1(lambda text: f"%{text}%"), "% and _ are wildcards")
    not_yet(exercises.check_09_1(lambda text: "%" + text.replace("%", "\\%").replace("_", "\\_") + "%"),
            "escape the backslash itself")
    not_yet(exercises.check_09_1(lambda text: text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")),
            "keep % before and after")
    wrong_kind(exercises.check_09_1(lambda text: [text]), "return a str")


def test_09_1_escaping_in_the_wrong_order_is_told_so():
    """The issue's case: the backslash escaped last doubles the backslashes put before % and _;
    the hint used to say "keep % before and after", which the pattern did."""
    late = exercises.check_09_1(lambda text: "%" + text.replace("%", "\\%").replace("_", "\\_")
                                .replace("\\", "\\\\") + "%")
    not_yet(late, "two backslashes before the %", "after % and _", "escape \\ first")
    assert "keep % before and after" not in late.hint
    not_yet(exercises.check_09_1(lambda text: "%" + text.replace("_", "\\_").replace("\\", "\\\\")
                                 .replace("%", "\\%") + "%"), "escape \\ first")  # only _ escaped too early


def test_09_1_more_wrong_answers():
    not_yet(exercises.check_09_1(lambda text: "%" + text.replace("\\", "\\\\").replace("%", "\\%") + "%"),
            "'a_b'", "% and _ are wildcards")  # forgot _
    import re
    not_yet(exercises.check_09_1(lambda text: "%" + re.escape(text) + "%"), "% and _ are wildcards")  # regex habits
    not_yet(exercises.check_09_1(lambda text: "%" + text.replace("%", "[%]").replace("_", "[_]") + "%"),
            "LIKE knows only %, _ and the ESCAPE character")  # SQL Server's brackets
    not_yet(exercises.check_09_1(lambda text: like_reference(text)[1:]), "keep % before and after")  # a prefix search


def fts_reference(question):
    """The notebook's solution: the question's words (runs of letters and digits, as FTS5 reads them), quoted, OR-ed."""
    import re
    return " OR ".join(f'"{word}"' for word in re.findall(r"[^\W_]+", question))


def test_09_2_reference_and_odd_but_valid():
    import re
    done(exercises.check_09_2(fts_reference))
    done(exercises.check_09_2(lambda q: " OR ".join('"' + w.replace('"', '""') + '"'  # quotes doubled, harmless here
                                                    for w in re.split(r"[^0-9A-Za-z]+", q) if w)))
    done(exercises.check_09_2(lambda q: " OR ".join(dict.fromkeys(f'"{w.lower()}"' for w in re.findall(r"\w+", q)))))
    done(exercises.check_09_2(lambda q: " OR ".join(f'"{w}"' for w in re.findall(r"\w+", q))))  # no _ here


def test_09_2_a_word_is_what_fts5_reads_as_one():
    """The issue's case: expected rows came from a whitespace split, so "NEAR(station" was a two-word
    phrase and an answer quoting each word alone (as the statement asks) was rejected. Now the split at
    spaces is the near miss, told why."""
    from miniagent.exercises import n09
    assert n09._words("NEAR(station deadline)") == ["near", "station", "deadline"]
    assert n09._words("Ada's deadline?") == ["ada", "s", "deadline"]
    assert n09._fts(n09._reference("NEAR(station deadline)")) == [2, 4]  # "near the station" has both words
    at_spaces = exercises.check_09_2(lambda q: " OR ".join('"' + w.replace('"', '""') + '"' for w in q.split()))
    not_yet(at_spaces, "'NEAR(station deadline)'", "a quoted string is a phrase", "['near', 'station', 'deadline']")


def test_09_2_wrong_answers():
    import re
    not_yet(exercises.check_09_2(lambda q: q), "join the words with OR")
    not_yet(exercises.check_09_2(lambda q: " OR ".join(q.split())), "as syntax")
    not_yet(exercises.check_09_2(lambda q: " ".join(f'"{w}"' for w in re.findall(r"\w+", q))), "join the words with OR")
    not_yet(exercises.check_09_2(lambda q: " OR ".join(f'"{w}"' for w in q.split())), "doubled")  # 'the "deadline'
    wrong_kind(exercises.check_09_2(lambda q: q.split()), "return a str")


def test_09_2_more_wrong_answers():
    import re
    not_yet(exercises.check_09_2(lambda q: " OR ".join(f'"{w}"' for w in re.findall(r"\w+", q) if len(w) > 2)),
            "it leaves words out", "short ones too")  # short words dropped: "is" finds row 2
    not_yet(exercises.check_09_2(lambda q: " OR ".join(re.findall(r"\w+", q))), "as syntax")  # OR, NOT, AND unquoted
    not_yet(exercises.check_09_2(lambda q: " OR ".join(f'"{w}"*' for w in re.findall(r"\w+", q))),
            "each word, quoted, joined with OR")  # a prefix search finds more
    not_yet(exercises.check_09_2(lambda q: ""), "an empty query", "'what'")
    not_yet(exercises.check_09_2(lambda q: '"' + q.replace('"', '""') + '"'), "join the words with OR")  # one phrase


def fuse_reference(rankings, k=60):
    scores = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1 / (k + rank)
    return sorted(scores, key=lambda item: -scores[item])


def test_09_3_reference_and_odd_but_valid():
    done(exercises.check_09_3(fuse_reference))

    def reversed_sort(rankings, k=60):  # reverse=True keeps a stable sort's order on ties
        scores = {}
        for ranking in rankings:
            for rank, item in enumerate(ranking, start=1):
                scores[item] = scores.get(item, 0) + 1 / (k + rank)
        return sorted(scores, key=scores.get, reverse=True)
    done(exercises.check_09_3(reversed_sort))
    done(exercises.check_09_3(lambda rankings, k=60: tuple(fuse_reference(rankings, k))))


def test_09_3_wrong_answers():
    not_yet(exercises.check_09_3(lambda rankings, k=60: fuse_reference(rankings, 60)), "use the k you are given")
    not_yet(exercises.check_09_3(lambda rankings, k=60: [x for r in rankings for x in r]), "every id")
    wrong_kind(exercises.check_09_3(lambda rankings, k=60: [(x, 1.0) for x in fuse_reference(rankings, k)]), "pairs")


def test_09_3_more_wrong_answers():
    def scored(rankings, k=60, start=1, add=lambda a, b: a + b, key=None):
        scores = {}
        for ranking in rankings:
            for rank, item in enumerate(ranking, start=start):
                scores[item] = add(scores.get(item, 0.0), 1 / (k + rank))
        return sorted(scores, key=key(scores) if key else lambda item: -scores[item])
    not_yet(exercises.check_09_3(lambda rankings, k=60: scored(rankings, k, start=0)), "count ranks from 1")
    not_yet(exercises.check_09_3(lambda rankings, k=60: scored(rankings, k, key=lambda s: lambda i: (-s[i], i))),
            "ties, in the order first seen", "sort by the score alone")  # ties broken by id
    not_yet(exercises.check_09_3(lambda rankings, k=60: scored(rankings, k, add=max)),
            "summed over the rankings")  # the best rank only
    not_yet(exercises.check_09_3(lambda rankings, k=60: scored(rankings, k)[::-1]), "highest first")  # worst first


# --- 11 · Tracing ---------------------------------------------------------------------------------

IN_TOKENS, OUT_TOKENS = "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"


def reference_tokens_by_agent(tracer):
    totals = {}

    def visit(span, owner):
        if span.kind == "agent":
            owner = span.attributes["gen_ai.agent.name"]
            totals.setdefault(owner, 0)
        elif span.kind == "model" and owner is not None:
            totals[owner] += span.attributes.get(IN_TOKENS, 0) + span.attributes.get(OUT_TOKENS, 0)
        for child in tracer.children(span):
            visit(child, owner)

    for root in tracer.children(None):
        visit(root, None)
    return totals


def test_11_1_reference_and_odd_but_valid():
    from collections import Counter, defaultdict

    done(exercises.check_11_1(reference_tokens_by_agent))

    def by_parent_chain(tracer):  # climbs from each model span to its nearest agent; agents with 0 left out
        by_id = {s.span_id: s for s in tracer.spans}
        totals = Counter()
        for span in tracer.of_kind("model"):
            owner = by_id[span.parent_id]
            while owner.kind != "agent":
                owner = by_id[owner.parent_id]
            totals[owner.attributes["gen_ai.agent.name"]] += (span.attributes.get(IN_TOKENS, 0)
                                                              + span.attributes.get(OUT_TOKENS, 0))
        return totals
    done(exercises.check_11_1(by_parent_chain))

    def direct_children(tracer):  # model spans are the direct children of their agent's span
        totals = defaultdict(int)
        for agent in tracer.of_kind("agent"):
            for child in tracer.children(agent):
                if child.kind == "model":
                    totals[agent.name.removeprefix("invoke_agent ")] += (child.attributes.get(IN_TOKENS, 0)
                                                                        + child.attributes.get(OUT_TOKENS, 0))
        return totals
    done(exercises.check_11_1(direct_children))

    def own_usage(tracer):  # an agent span's usage holds its sub-agents': take the nearest ones' back out
        by_id = {s.span_id: s for s in tracer.spans}

        def tokens(s):
            return s.attributes.get(IN_TOKENS, 0) + s.attributes.get(OUT_TOKENS, 0)

        def nearest_agent(s):
            s = by_id.get(s.parent_id)
            while s is not None and s.kind != "agent":
                s = by_id.get(s.parent_id)
            return s
        totals = defaultdict(int)
        for s in tracer.of_kind("agent"):
            totals[s.attributes["gen_ai.agent.name"]] += tokens(s)
            if (parent := nearest_agent(s)) is not None:
                totals[parent.attributes["gen_ai.agent.name"]] -= tokens(s)
        return totals
    done(exercises.check_11_1(own_usage))


def test_11_1_wrong_answers():
    from collections import defaultdict

    def stub(tracer):
        ...
    not_yet(exercises.check_11_1(stub), "returned None", "return a dict")

    def from_agent_spans(tracer):  # an agent span's usage includes its sub-agents'
        totals = {}
        for s in tracer.of_kind("agent"):
            name = s.attributes["gen_ai.agent.name"]
            totals[name] = totals.get(name, 0) + s.attributes[IN_TOKENS] + s.attributes[OUT_TOKENS]
        return totals
    not_yet(exercises.check_11_1(from_agent_spans), "count the sub-agents' tokens too", "nearest agent")

    def whole_subtree(tracer):
        totals = {}
        for s in tracer.of_kind("agent"):
            inside = [x for _, x in tracer._subtree(s) if x.kind == "model"]
            name = s.attributes["gen_ai.agent.name"]
            totals[name] = totals.get(name, 0) + sum(x.attributes.get(IN_TOKENS, 0) + x.attributes.get(OUT_TOKENS, 0)
                                                     for x in inside)
        return totals
    not_yet(exercises.check_11_1(whole_subtree), "count the sub-agents' tokens too")

    def input_only(tracer):
        totals = reference_tokens_by_agent(tracer)
        for s in tracer.of_kind("agent"):
            for c in tracer.children(s):
                if c.kind == "model":
                    totals[s.attributes["gen_ai.agent.name"]] -= c.attributes.get(OUT_TOKENS, 0)
        return totals
    not_yet(exercises.check_11_1(input_only), "input tokens only")

    def by_span_name(tracer):
        return {f"invoke_agent {k}": v for k, v in reference_tokens_by_agent(tracer).items()}
    not_yet(exercises.check_11_1(by_span_name), "gen_ai.agent.name")

    def last_run_wins(tracer):
        totals = {}
        for s in tracer.of_kind("agent"):
            totals[s.attributes["gen_ai.agent.name"]] = sum(
                c.attributes.get(IN_TOKENS, 0) + c.attributes.get(OUT_TOKENS, 0)
                for c in tracer.children(s) if c.kind == "model")
        return totals
    not_yet(exercises.check_11_1(last_run_wins), "ran more than once", "add them up")

    def strict_keys(tracer):  # a failed model call has no usage attributes
        totals = {}
        for s in tracer.of_kind("agent"):
            name = s.attributes["gen_ai.agent.name"]
            for c in tracer.children(s):
                if c.kind == "model":
                    totals[name] = totals.get(name, 0) + c.attributes[IN_TOKENS] + c.attributes[OUT_TOKENS]
        return totals
    not_yet(exercises.check_11_1(strict_keys), "KeyError", "failed")

    def last_agent_seen(tracer):  # walks the tree keeping "the current agent", never restored on the way back up
        totals, owner = {}, None
        for _, s in tracer.walk():
            if s.kind == "agent":
                owner = s.attributes["gen_ai.agent.name"]
                totals.setdefault(owner, 0)
            elif s.kind == "model":
                totals[owner] += s.attributes.get(IN_TOKENS, 0) + s.attributes.get(OUT_TOKENS, 0)
        return totals
    not_yet(exercises.check_11_1(last_agent_seen), "went to that sub-agent", "nearest agent among its ancestors")

    def minus_every_descendant(tracer):  # takes out the grandchildren too, though the children's usage held them
        def tokens(s):
            return s.attributes.get(IN_TOKENS, 0) + s.attributes.get(OUT_TOKENS, 0)
        totals = defaultdict(int)
        for s in tracer.of_kind("agent"):
            below = [x for _, x in tracer._subtree(s) if x.kind == "agent" and x is not s]
            totals[s.attributes["gen_ai.agent.name"]] += tokens(s) - sum(tokens(x) for x in below)
        return totals
    not_yet(exercises.check_11_1(minus_every_descendant), "three levels", "expected")
    wrong_kind(exercises.check_11_1(lambda tracer: list(reference_tokens_by_agent(tracer).items())), "return a dict")


def reference_self_time(tracer, span):
    covered, reach = 0.0, span.start
    for child in sorted(tracer.children(span), key=lambda s: s.start):
        start, end = max(child.start, reach), min(child.end, span.end)
        if end > start:
            covered, reach = covered + end - start, end
    return span.seconds - covered


def test_11_2_reference_and_odd_but_valid():
    done(exercises.check_11_2(reference_self_time))

    def merged(tracer, span):  # merge the intervals first, then subtract their lengths
        intervals = []
        for child in sorted(tracer.children(span), key=lambda s: s.start):
            if intervals and child.start <= intervals[-1][1]:
                intervals[-1][1] = max(intervals[-1][1], child.end)
            else:
                intervals.append([child.start, child.end])
        return span.seconds - sum(end - start for start, end in intervals)
    done(exercises.check_11_2(merged))

    def sampled(tracer, span):  # count 0.1 ms steps that no child covers: rough, but right to the microsecond here
        steps = round(span.seconds * 10_000)
        free = sum(1 for i in range(steps) if not any(c.start <= span.start + (i + 0.5) / 10_000 < c.end
                                                       for c in tracer.children(span)))
        return free / 10_000
    done(exercises.check_11_2(sampled))


def test_11_2_wrong_answers():
    def stub(tracer, span):
        pass
    not_yet(exercises.check_11_2(stub), "returned None")

    def summed(tracer, span):  # the notebook's starting point
        return span.seconds - sum(child.seconds for child in tracer.children(span))
    not_yet(exercises.check_11_2(summed), "overlap in time", "merge their intervals")
    not_yet(exercises.check_11_2(lambda tracer, span: span.seconds), "whole duration", "subtract")
    not_yet(exercises.check_11_2(lambda tracer, span: reference_self_time(tracer, span) * 1000), "milliseconds")

    def every_descendant(tracer, span):
        inside = [s for _, s in tracer._subtree(span)][1:]
        return span.seconds - sum(s.seconds for s in inside)
    not_yet(exercises.check_11_2(every_descendant), "grandchildren")

    def merge_forgets_max(tracer, span):  # a contained child shortens the merged interval
        intervals = []
        for child in sorted(tracer.children(span), key=lambda s: s.start):
            if intervals and child.start <= intervals[-1][1]:
                intervals[-1][1] = child.end
            else:
                intervals.append([child.start, child.end])
        return span.seconds - sum(end - start for start, end in intervals)
    not_yet(exercises.check_11_2(merge_forgets_max), "two tools in parallel", "expected 0.008 s, got 0.038 s",
            "covered by at least one")
    clamped = lambda tracer, span: max(0.0, span.seconds - sum(c.seconds for c in tracer.children(span)))  # noqa: E731
    not_yet(exercises.check_11_2(clamped), "two tools in parallel", "clamping at 0 hides that")

    def edges_only(tracer, span):  # the time before the first child and after the last: the gaps between are lost
        children = tracer.children(span)
        return span.seconds - (max(c.end for c in children) - min(c.start for c in children)) if children else span.seconds
    not_yet(exercises.check_11_2(edges_only), "one after another", "covered by at least one")
    wrong_kind(exercises.check_11_2(lambda tracer, span: f"{reference_self_time(tracer, span)} s"), "a number")
    wrong_kind(exercises.check_11_2(lambda tracer, span: True), "a number")


def reference_otlp_attributes(attributes):
    def value(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, str):
            return {"stringValue": v}
        return {"arrayValue": {"values": [value(item) for item in v]}}
    return [{"key": key, "value": value(v)} for key, v in attributes.items()]


def test_11_3_the_reference_is_what_opentelemetry_itself_encodes():
    pytest.importorskip("opentelemetry.exporter.otlp.proto.common")
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common._internal import _encode_attributes

    from miniagent.exercises.n11 import ATTRIBUTE_CASES, _otlp_attributes
    for _, attributes in ATTRIBUTE_CASES:
        official = [MessageToDict(kv) for kv in _encode_attributes(attributes)]
        assert _otlp_attributes(attributes) == official == reference_otlp_attributes(attributes)


def test_11_3_reference_and_odd_but_valid():
    done(exercises.check_11_3(reference_otlp_attributes))

    def numbers_as_numbers(attributes):  # readers accept a JSON number for an int64 too
        items = reference_otlp_attributes(attributes)
        for item in items:
            if "intValue" in item["value"]:
                item["value"]["intValue"] = int(item["value"]["intValue"])
        return items
    done(exercises.check_11_3(numbers_as_numbers))
    done(exercises.check_11_3(lambda attributes: tuple(reversed(reference_otlp_attributes(attributes)))))


def test_11_3_wrong_answers():
    def stub(attributes):
        ...
    not_yet(exercises.check_11_3(stub), "returned None")

    def int_before_bool(attributes):
        def value(v):
            if isinstance(v, int):
                return {"intValue": str(v)}
            if isinstance(v, float):
                return {"doubleValue": v}
            if isinstance(v, str):
                return {"stringValue": v}
            if isinstance(v, bool):
                return {"boolValue": v}
            return {"arrayValue": {"values": [value(item) for item in v]}}
        return [{"key": k, "value": value(v)} for k, v in attributes.items()]
    not_yet(exercises.check_11_3(int_before_bool), "test for bool before int")
    not_yet(exercises.check_11_3(lambda attributes: [{"key": k, "value": {"stringValue": str(v)}}
                                                     for k, v in attributes.items()]), "numbers stay numbers")

    def flat_lists(attributes):
        return [{"key": k, "value": {"stringValue": v}} if isinstance(v, str)
                else {"key": k, "value": {"arrayValue": v}} if isinstance(v, list)
                else item for (k, v), item in zip(attributes.items(), reference_otlp_attributes(attributes))]
    not_yet(exercises.check_11_3(flat_lists), "arrayValue", "values")
    not_yet(exercises.check_11_3(lambda attributes: [{"key": k, "value": v} for k, v in attributes.items()]),
            "became")
    not_yet(exercises.check_11_3(lambda attributes: reference_otlp_attributes(attributes)[1:]), "once each")
    not_yet(exercises.check_11_3(lambda attributes: [{"name": k, "value": v} for k, v in attributes.items()]),
            '"key" and "value"')

    def doubles_as_strings(attributes):  # by analogy with intValue
        items = reference_otlp_attributes(attributes)
        for item in items:
            if "doubleValue" in item["value"]:
                item["value"]["doubleValue"] = str(item["value"]["doubleValue"])
        return items
    not_yet(exercises.check_11_3(doubles_as_strings), "temperature", "a doubleValue is a JSON number")

    def numbers_as_doubles(attributes):  # JavaScript's view: every number is a double
        return [{"key": k, "value": {"doubleValue": v}} if isinstance(v, (int, float)) and not isinstance(v, bool)
                else item for (k, v), item in zip(attributes.items(), reference_otlp_attributes(attributes))]
    not_yet(exercises.check_11_3(numbers_as_doubles), "gen_ai.usage.input_tokens=270", "an int is an intValue")
    wrong_kind(exercises.check_11_3(lambda attributes: {k: {"stringValue": str(v)} for k, v in attributes.items()}),
               "a list")
    wrong_kind(exercises.check_11_3(lambda attributes: str(attributes)), "a list")


@pytest.mark.parametrize("key", ["11-1", "11-2", "11-3"])
def test_11_an_answer_that_never_returns_is_reported_not_waited_for(key, short_timeout):
    def hangs(*args, **kwargs):
        short_timeout.wait()
    started = time.perf_counter()
    not_yet(exercises.CHECKS[key](hangs), "did not return within 0.1 s", "restart the kernel")
    assert time.perf_counter() - started < 5


# --- notebook 10 · several agents ----------------------------------------------------------


def reference_specialist_tool(client, tools, system):
    from miniagent.loop import run_loop
    from miniagent.messages import user

    @tool
    def specialist(task: str) -> str:
        """A specialist agent: give it one self-contained task.

        task: The task, self-contained.
        """
        result = run_loop(client, [user(task)], tools=tools, system=system)
        if not result.ok:
            raise RuntimeError(f"the specialist stopped early ({result.stop}): {result.reason}")
        return result.text
    return specialist


def test_10_1_reference_and_odd_but_valid():
    done(exercises.check_10_1(reference_specialist_tool))

    def with_an_agent(client, tools, system):  # an Agent per call is a fresh conversation too
        from miniagent.agent import Agent

        def ask_specialist(task: str) -> str:
            """Ask the specialist agent one self-contained task.

            task: The task.
            """
            result = Agent(client, tools, system=system).run(task)
            if not result.ok:
                raise RuntimeError(result.reason)
            return result.text
        return ask_specialist  # a plain function with a docstring: @tool is applied by the check
    done(exercises.check_10_1(with_an_agent))


def test_10_1_wrong_answers():
    from miniagent.agent import Agent
    from miniagent.loop import run_loop
    from miniagent.messages import user

    not_yet(exercises.check_10_1(lambda client, tools, system: None), "returned None")

    def shared_history(client, tools, system):
        agent = Agent(client, tools, system=system)  # one agent for every call: the tasks pile up

        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            return agent.run(task).text
        return specialist
    not_yet(exercises.check_10_1(shared_history), "two tasks should start two conversations")

    def no_system(client, tools, system):
        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            return run_loop(client, [user(task)], tools=tools).text
        return specialist
    not_yet(exercises.check_10_1(no_system), "pass the system prompt")

    def whole_result(client, tools, system):
        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            return run_loop(client, [user(task)], tools=tools, system=system)
        return specialist
    wrong_kind(exercises.check_10_1(whole_result), "return result.text")

    def swallows_failures(client, tools, system):
        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            return run_loop(client, [user(task)], tools=tools, system=system).text
        return specialist
    not_yet(exercises.check_10_1(swallows_failures), "raise an exception")

    def wrong_parameter(client, tools, system):
        @tool
        def specialist(question: str) -> str:
            """A specialist.

            question: The question.
            """
            return run_loop(client, [user(question)], tools=tools, system=system).text
        return specialist
    not_yet(exercises.check_10_1(wrong_parameter), "task: str")
    wrong_kind(exercises.check_10_1("specialist"), "should be a function")


def test_10_1_more_wrong_answers():
    from miniagent.loop import run_loop
    from miniagent.messages import user

    def no_tools(client, tools, system):  # forgets to pass the tools on
        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            result = run_loop(client, [user(task)], system=system)
            if not result.ok:
                raise RuntimeError(result.reason)
            return result.text
        return specialist
    not_yet(exercises.check_10_1(no_tools), "pass tools to run_loop")

    def swapped(client, tools, system):  # the system prompt as the user's message, the task as the system prompt
        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            result = run_loop(client, [user(system)], tools=tools, system=task)
            if not result.ok:
                raise RuntimeError(result.reason)
            return result.text
        return specialist
    not_yet(exercises.check_10_1(swapped), "send the task itself")

    def last_message(client, tools, system):  # the final message, not its text
        @tool
        def specialist(task: str) -> str:
            """A specialist.

            task: The task.
            """
            result = run_loop(client, [user(task)], tools=tools, system=system)
            if not result.ok:
                raise RuntimeError(result.reason)
            return result.messages[-1]
        return specialist
    wrong_kind(exercises.check_10_1(last_message), "return the specialist's answer, a str")


def reference_approve_email(call):
    """Notebook 10's reference solution, read from the notebook's source: the test checks the notebook's own."""
    return notebook_function("10_several_agents.py", "reference_approve_email")(call)


def test_10_2_reference_and_odd_but_valid():
    import re
    from email.utils import getaddresses
    done(exercises.check_10_2(reference_approve_email))

    def every_address(call):  # each word with an @ must be an address at example.com, and there is one
        to = call["input"]["to"]
        found = re.findall(r"[^\s,;<>]*@[^\s,;<>]*", to)
        outside = [a for a in found if not re.fullmatch(r"[\w.+-]+@example\.com", a, re.I)]
        return True if found and not outside else f"refused: {', '.join(outside) or 'no address'} in {to!r}"
    done(exercises.check_10_2(every_address))

    def with_the_standard_library(call):  # email.utils reads the list (notebook 13's company_only does the same)
        to = str(call["input"].get("to", ""))
        recipients = [address for _, address in getaddresses([to.replace(";", ",")])]
        if recipients and all(a.partition("@")[0] and a.rpartition("@")[2].lower() == "example.com" for a in recipients):
            return True
        return f"mail to {to} is not allowed: only addresses at example.com"
    done(exercises.check_10_2(with_the_standard_library))


def test_10_2_a_recipient_list_with_one_outside_address_is_refused():
    """The issue's case: the old reference solution took everything after the last '@' as the
    domain, so "attacker@evil.example, ada@example.com" was approved."""
    def last_at(call):
        to = str(call["input"].get("to", ""))
        local, at, domain = to.strip().rpartition("@")
        return True if at and local and domain.lower() == "example.com" else f"mail to {to!r} is not allowed"
    verdict = exercises.check_10_2(last_at)
    not_yet(verdict, "'attacker@evil.example, ada@example.com' was approved", "several recipients",
            "every one is at example.com")
    assert "attacker@evil.example" in verdict.hint
    assert reference_approve_email({"input": {"to": "attacker@evil.example, ada@example.com"}}) is not True


def test_10_2_wrong_answers():
    def refuse(call):
        return f"no: {call['input']['to']}"
    not_yet(exercises.check_10_2(lambda call: None), "returned None")
    not_yet(exercises.check_10_2(lambda call: "example.com" in call["input"]["to"].lower() or refuse(call)),
            "was approved", "after the last '@'")
    not_yet(exercises.check_10_2(lambda call: call["input"]["to"].endswith("@example.com") or refuse(call)),
            "compare the domain without regard to case")
    not_yet(exercises.check_10_2(lambda call: call["input"]["to"].lower().endswith("example.com") or refuse(call)),
            "was approved")
    not_yet(exercises.check_10_2(lambda call: call["input"]["to"].lower().endswith("@example.com")),
            "refused without a reason")
    not_yet(exercises.check_10_2(lambda call: call["input"]["to"].lower().endswith("@example.com") or "not allowed"),
            "does not name the outside address")
    not_yet(exercises.check_10_2(lambda call: "yes" if call["input"]["to"].lower().endswith("@example.com")
                                 else refuse(call)), "only the bool True approves")
    not_yet(exercises.check_10_2(lambda call: call["input"]["to"].lower().split("@")[-1] == "example.com"
                                 and "@" in call["input"]["to"] or refuse(call)), "a name before the '@'")
    wrong_kind(exercises.check_10_2(lambda call: call["input"]["to"].lower().endswith("@example.com")
                                    and not call["input"]["to"].startswith("@") or 0), "return True or a reason")


def test_10_2_more_wrong_answers():
    import re

    def one_address(call):  # right for one address, and refuses every list, an all-company one too
        to = call["input"]["to"]
        return True if re.fullmatch(r"[^@\s]+@example\.com", to, re.I) else f"refused: {to} is outside example.com"
    not_yet(exercises.check_10_2(one_address), "'ada@example.com, grace@example.com' was not approved",
            "several recipients")

    def any_inside(call):  # approves when one recipient is inside
        recipients = re.split(r"\s*[,;]\s*", call["input"]["to"])
        return True if any(re.fullmatch(r"[^@\s<>]+@example\.com", r, re.I) for r in recipients) else refuse(call)

    def refuse(call):
        return f"no: {call['input']['to']}"
    not_yet(exercises.check_10_2(any_inside), "'attacker@evil.example, ada@example.com' was approved")

    def spaces_too(call):  # splits at spaces as well: the display name's words are not addresses
        parts = [p.strip("<>") for p in re.split(r"[\s,;]+", call["input"]["to"]) if p]
        return True if parts and all(re.fullmatch(r"[^@]+@example\.com", p, re.I) for p in parts) else refuse(call)
    not_yet(exercises.check_10_2(spaces_too), "'Ada Lovelace <ada@example.com>' was not approved", "Name <address>")

    def name_or_address(call):  # any recipient that mentions example.com before its <...> passes
        to = call["input"]["to"]
        pieces = [p.strip() for p in re.split(r"[,;]", to) if p.strip()]
        ok = pieces and all(re.search(r"[^@\s<>\"]+@example\.com\b(?!\.)", p, re.I) for p in pieces)
        return True if ok else refuse(call)
    not_yet(exercises.check_10_2(name_or_address), "'ada@example.com eve@evil.io' was approved", "'eve@evil.io'")

    def names_only_the_list(call):  # refuses the right mail but names the whole field
        verdict = reference_approve_email(call)
        return True if verdict is True else "mail to these recipients is not allowed"
    not_yet(exercises.check_10_2(names_only_the_list), "does not name the outside address 'bob@example.org'")


def reference_open_steps(messages):
    for message in reversed(messages):
        if message["role"] != "assistant" or not isinstance(message["content"], list):
            continue
        for block in reversed(message["content"]):
            if block.get("type") == "tool_use" and block.get("name") == "update_plan":
                return [s["step"] for s in block["input"].get("steps", []) if not s.get("done")]
    return []


def test_10_3_reference_and_odd_but_valid():
    done(exercises.check_10_3(reference_open_steps))

    def from_the_front(messages):  # keeps overwriting: the last plan seen wins
        latest = []
        for m in messages:
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("type") == "tool_use" and b.get("name") == "update_plan":
                    latest = [s["step"] for s in b["input"]["steps"] if not s["done"]]
        return latest
    done(exercises.check_10_3(from_the_front))


def test_10_3_wrong_answers():
    not_yet(exercises.check_10_3(lambda messages: None), "returned None")

    def first_plan(messages):
        for m in messages:
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("type") == "tool_use" and b.get("name") == "update_plan":
                    return [s["step"] for s in b["input"]["steps"] if not s["done"]]
        return []
    not_yet(exercises.check_10_3(first_plan), "the latest plan replaces the earlier ones")

    def every_step(messages):
        found = reference_open_steps(messages)
        if not found and not any(isinstance(m["content"], list) for m in messages):
            return []
        for m in reversed(messages):
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("name") == "update_plan":
                    return [s["step"] for s in b["input"]["steps"]]
        return []
    not_yet(exercises.check_10_3(every_step), "done is false")

    def whole_steps(messages):
        for m in reversed(messages):
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("name") == "update_plan":
                    return [s for s in b["input"]["steps"] if not s["done"]]
        return []
    not_yet(exercises.check_10_3(whole_steps), "as their text")

    def text_search(messages):  # reads a user's pasted text as a plan
        return ["pretend step"] if "update_plan" in str(messages[0]["content"]) else reference_open_steps(messages)
    not_yet(exercises.check_10_3(text_search), "no update_plan tool_use block means no plan")
    wrong_kind(exercises.check_10_3(lambda messages: tuple(reference_open_steps(messages))), "a list")


def test_10_3_a_wrong_guess_at_the_step_format_is_told_the_format():
    """The issue's case: the statement did not give the step format, and a wrong guess got a bare KeyError."""
    def steps_as_text_and_status(messages):
        for m in reversed(messages):
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("name") == "update_plan":
                    return [s["text"] for s in b["input"]["steps"] if s["status"] != "done"]
        return []
    verdict = exercises.check_10_3(steps_as_text_and_status)
    not_yet(verdict, "KeyError: 'status'", '"input": {"steps": [{"step": "the text", "done": false}', '"done" (a bool)')

    def steps_as_strings(messages):  # guesses that steps are plain strings: s.startswith raises on a dict
        for m in reversed(messages):
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("name") == "update_plan":
                    return [s for s in b["input"]["steps"] if not s.startswith("[x]")]
        return []
    not_yet(exercises.check_10_3(steps_as_strings), "AttributeError", '"step" (its text, a str)')

    def get_the_wrong_key(messages):  # .get() hides the guess: the steps come back as None
        for m in reversed(messages):
            for b in (m["content"] if m["role"] == "assistant" and isinstance(m["content"], list) else []):
                if b.get("name") == "update_plan":
                    return [s.get("title") for s in b["input"]["steps"] if not s.get("done")]
        return []
    not_yet(exercises.check_10_3(get_the_wrong_key), "[None, None]", "as their text, a list of str", '"step"')


def test_10_3_more_wrong_answers():
    def first_block_only(messages):  # looks at the first tool_use of each message
        for m in reversed(messages):
            if m["role"] == "assistant" and isinstance(m["content"], list):
                used = [b for b in m["content"] if b.get("type") == "tool_use"]
                if used and used[0].get("name") == "update_plan":
                    return [s["step"] for s in used[0]["input"]["steps"] if not s["done"]]
        return []
    not_yet(exercises.check_10_3(first_block_only), "a plan checked off completely", "the last update_plan block")

    def last_block_only(messages):  # the last block of the latest assistant message that has a list
        for m in reversed(messages):
            if m["role"] == "assistant" and isinstance(m["content"], list):
                b = m["content"][-1]
                return [s["step"] for s in b["input"]["steps"] if not s["done"]] if b.get("name") == "update_plan" \
                    else []
        return []
    not_yet(exercises.check_10_3(last_block_only), "a plan, then another tool call in the same message",
            "every block of the message")

    def only_the_last_message(messages):  # the plan must be in the very last message
        last = messages[-1]
        blocks = last["content"] if last["role"] == "assistant" and isinstance(last["content"], list) else []
        for b in blocks:
            if b.get("name") == "update_plan":
                return [s["step"] for s in b["input"]["steps"] if not s["done"]]
        return []
    not_yet(exercises.check_10_3(only_the_last_message), "a plan with two steps open", "done is false")


@pytest.mark.parametrize("key", ["10-1", "10-2", "10-3"])
def test_10_an_answer_that_never_returns_is_reported_not_waited_for(key, short_timeout):
    def hangs(*args, **kwargs):
        short_timeout.wait()
    started = time.perf_counter()
    not_yet(exercises.CHECKS[key](hangs), "did not return within 0.1 s", "restart the kernel")
    assert time.perf_counter() - started < 5


# --- notebook 12: MCP --------------------------------------------------------------------------

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def reference_tools_call(request_id, name, arguments):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": dict(MODERN_META)}}


def test_12_1_reference_and_wrong_answers():
    done(exercises.check_12_1(reference_tools_call))
    with_info = lambda i, n, a: {**reference_tools_call(i, n, a), "params": {  # noqa: E731 - clientInfo is optional
        "name": n, "arguments": a, "_meta": {**MODERN_META, "io.modelcontextprotocol/clientInfo": {"name": "x"}}}}
    done(exercises.check_12_1(with_info))
    not_yet(exercises.check_12_1(lambda i, n, a: None), "returned None")
    wrong_kind(exercises.check_12_1(lambda i, n, a: __import__("json").dumps(reference_tools_call(i, n, a))), "text")
    not_yet(exercises.check_12_1(lambda i, n, a: {**reference_tools_call(i, n, a), "id": 1}), "request_id")
    legacy = lambda i, n, a: {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n, "arguments": a}}  # noqa: E731
    not_yet(exercises.check_12_1(legacy), "_meta", "no handshake")
    anthropic = lambda i, n, a: {"jsonrpc": "2.0", "id": i, "method": "tools/call",  # noqa: E731
                                 "params": {"name": n, "input": a, "_meta": MODERN_META}}
    not_yet(exercises.check_12_1(anthropic), '"arguments"')
    old = lambda i, n, a: {**reference_tools_call(i, n, a), "params": {  # noqa: E731
        "name": n, "arguments": a, "_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}}}
    not_yet(exercises.check_12_1(old), "2026-07-28")
    no_caps = lambda i, n, a: {**reference_tools_call(i, n, a), "params": {  # noqa: E731
        "name": n, "arguments": a, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}
    not_yet(exercises.check_12_1(no_caps), "clientCapabilities")
    not_yet(exercises.check_12_1(lambda i, n, a: {**reference_tools_call(i, n, a), "jsonrpc": "2"}), '"2.0"')
    plain_keys = lambda i, n, a: {**reference_tools_call(i, n, a), "params": {  # noqa: E731 - initialize's names
        "name": n, "arguments": a, "_meta": {"protocolVersion": "2026-07-28", "clientCapabilities": {}}}}
    not_yet(exercises.check_12_1(plain_keys), "carry a prefix", "io.modelcontextprotocol/protocolVersion")
    top_level_meta = lambda i, n, a: {**reference_tools_call(i, n, a), "params": {"name": n, "arguments": a},  # noqa: E731
                                      "_meta": MODERN_META}
    not_yet(exercises.check_12_1(top_level_meta), "params._meta")


def reference_choose_version(response):
    ours_modern, ours_legacy = ["2026-07-28"], ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    if response is None:
        return "2025-11-25"
    if "result" in response:
        supported = response["result"].get("supportedVersions", [])
    elif response["error"]["code"] == -32022:
        supported = response["error"].get("data", {}).get("supported", [])
    else:
        return "2025-11-25"
    for version in ours_modern + ours_legacy:
        if version in supported:
            return "2026-07-28" if version in ours_modern else "2025-11-25"
    return None


def test_12_2_reference_and_wrong_answers():
    done(exercises.check_12_2(reference_choose_version))
    only_601 = lambda r: (reference_choose_version(r) if r is None or "result" in r  # noqa: E731
                          or r["error"]["code"] in (-32601, -32022) else None)
    not_yet(exercises.check_12_2(only_601), "never to key the fallback to one code")
    always_legacy_on_error = lambda r: "2025-11-25" if r is None or "error" in r else reference_choose_version(r)  # noqa: E731
    not_yet(exercises.check_12_2(always_legacy_on_error), "no version in its list is one we speak")
    refuse_on_32022 = lambda r: None if r and r.get("error", {}).get("code") == -32022 else reference_choose_version(r)  # noqa: E731
    not_yet(exercises.check_12_2(refuse_on_32022), "2025-11-25 is one of ours")
    wrong_kind(exercises.check_12_2(lambda r: 2026), "version string")
    def starting_point(response):  # the notebook's exercise cell
        if response and "result" in response:
            return "2026-07-28"
        return "2025-11-25"
    not_yet(exercises.check_12_2(starting_point), "no version in its list is one we speak")
    prefers_legacy = lambda r: ("2025-11-25" if r and "2025-11-25" in r.get("result", {}).get("supportedVersions", [])  # noqa: E731
                                else reference_choose_version(r))
    not_yet(exercises.check_12_2(prefers_legacy), "dual-era", "the handshake is only for a server that does not")
    newest = lambda r: (max(r["result"]["supportedVersions"]) if r and "result" in r  # noqa: E731
                        else reference_choose_version(r))
    not_yet(exercises.check_12_2(newest), "2099-01-01", "no version in its list is one we speak")


def reference_tool_changes(old, new):
    before, after = {t["name"]: t for t in old}, {t["name"]: t for t in new}
    return {"added": sorted(after.keys() - before.keys()), "removed": sorted(before.keys() - after.keys()),
            "changed": sorted(n for n in before.keys() & after.keys() if before[n] != after[n])}


def test_12_3_reference_and_wrong_answers():
    done(exercises.check_12_3(reference_tool_changes))
    by_position = lambda old, new: {"added": [], "removed": [], "changed": sorted(  # noqa: E731
        a["name"] for a, b in zip(old, new) if a != b)}
    not_yet(exercises.check_12_3(by_position), "match tools by name")
    description_only = lambda old, new: {**reference_tool_changes(old, new), "changed": sorted(  # noqa: E731
        a["name"] for a in old for b in new if a["name"] == b["name"] and a["description"] != b["description"])}
    not_yet(exercises.check_12_3(description_only), "the description and the inputSchema")
    as_text = lambda old, new: {**reference_tool_changes(old, new), "changed": sorted(  # noqa: E731
        a["name"] for a in old for b in new if a["name"] == b["name"] and str(a) != str(b))}
    not_yet(exercises.check_12_3(as_text), "whatever their order")
    not_yet(exercises.check_12_3(lambda old, new: {"added": []}), "return all three keys")
    added_also_changed = lambda old, new: {**reference_tool_changes(old, new), "changed": sorted(  # noqa: E731
        b["name"] for b in new if {a["name"]: a for a in old}.get(b["name"]) != b)}
    not_yet(exercises.check_12_3(added_also_changed), "a new tool and one gone", "added or removed")
    done(exercises.check_12_3(lambda old, new: {k: set(v) for k, v in reference_tool_changes(old, new).items()}))
    wrong_kind(exercises.check_12_3(lambda old, new: []), "return a dict")


# --- notebook 13: the production checklist -----------------------------------------------------


def reference_regressions(before, after):
    return {"broken": sorted(t for t in before if t in after and before[t] and not after[t]),
            "fixed": sorted(t for t in before if t in after and not before[t] and after[t]),
            "missing": sorted(t for t in before if t not in after)}


def test_13_1_reference_and_wrong_answers():
    done(exercises.check_13_1(reference_regressions))
    unsorted = lambda b, a: {k: list(reversed(v)) for k, v in reference_regressions(b, a).items()}  # noqa: E731
    not_yet(exercises.check_13_1(unsorted), "sort each list")
    swapped = lambda b, a: {**reference_regressions(b, a), "broken": reference_regressions(b, a)["fixed"],  # noqa: E731
                            "fixed": reference_regressions(b, a)["broken"]}
    not_yet(exercises.check_13_1(swapped), "swapped")
    missing_as_broken = lambda b, a: {"broken": sorted(t for t in b if b[t] and not a.get(t, False)),  # noqa: E731
                                      "fixed": reference_regressions(b, a)["fixed"], "missing": []}
    not_yet(exercises.check_13_1(missing_as_broken), "missing")
    not_yet(exercises.check_13_1(lambda b, a: {"broken": []}), "return all three keys")
    fails_now = lambda b, a: {**reference_regressions(b, a), "broken": sorted(t for t in a if not a[t])}  # noqa: E731
    not_yet(exercises.check_13_1(fails_now), "nothing changed", "failed both times did not break")
    wrong_kind(exercises.check_13_1(lambda b, a: []), "return a dict")


def reference_cache_cost(usage, prices):
    n = {k: usage.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens",
                                        "cache_read_input_tokens", "output_tokens")}
    return (n["input_tokens"] * prices["input"] + n["cache_creation_input_tokens"] * prices["input"] * 1.25
            + n["cache_read_input_tokens"] * prices["input"] * 0.1 + n["output_tokens"] * prices["output"]) / 1e6


def test_13_2_reference_and_wrong_answers():
    done(exercises.check_13_2(reference_cache_cost))
    not_yet(exercises.check_13_2(lambda u, p: reference_cache_cost(u, p) * 1e6), "per million tokens")

    def no_write_premium(u, p):
        return reference_cache_cost(u, p) - (u.get("cache_creation_input_tokens") or 0) * p["input"] * 0.25 / 1e6
    not_yet(exercises.check_13_2(no_write_premium), "1.25 times")

    def free_reads(u, p):
        return reference_cache_cost(u, p) - (u.get("cache_read_input_tokens") or 0) * p["input"] * 0.1 / 1e6
    not_yet(exercises.check_13_2(free_reads), "cheap, not free")

    def subtracts(u, p):
        cached = (u.get("cache_creation_input_tokens") or 0) + (u.get("cache_read_input_tokens") or 0)
        return reference_cache_cost(u, p) - cached * p["input"] / 1e6
    not_yet(exercises.check_13_2(subtracts), "don't subtract")
    not_yet(exercises.check_13_2(lambda u, p: reference_cache_cost({k: v for k, v in u.items() if v is not None}, p)
                                 if all(v is not None for v in u.values()) else u["cache_creation_input_tokens"] + 1),
            "cache_cost raised TypeError")  # None + 1: the crash is reported, not raised
    wrong_kind(exercises.check_13_2(lambda u, p: "$0.01"), "number of dollars")


def test_13_2_exact_numbers_of_other_types_pass():
    from decimal import Decimal
    from fractions import Fraction

    def in_decimal(usage, prices):  # money in Decimal, as an accountant would
        n = {k: Decimal(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                      "cache_read_input_tokens", "output_tokens")}
        per = Decimal(str(prices["input"])) / 1_000_000
        return (n["input_tokens"] * per + n["cache_creation_input_tokens"] * per * Decimal("1.25")
                + n["cache_read_input_tokens"] * per * Decimal("0.1")
                + n["output_tokens"] * Decimal(str(prices["output"])) / 1_000_000)
    done(exercises.check_13_2(in_decimal))
    done(exercises.check_13_2(lambda u, p: Fraction(reference_cache_cost(u, p))))
    not_yet(exercises.check_13_2(lambda u, p: in_decimal(u, p) * 2), "expected $")
    not_yet(exercises.check_13_2(lambda u, p: Decimal("sNaN")), "not a number of dollars")
    not_yet(exercises.check_13_2(lambda u, p: reference_cache_cost(u, p) * 1e3), "not per thousand")
    wrong_kind(exercises.check_13_2(lambda u, p: complex(reference_cache_cost(u, p))), "number of dollars")


def reference_as_data_text(text):
    import html
    return "<untrusted_data>\n" + html.escape(text, quote=False) + "\n</untrusted_data>"


def test_13_3_reference_and_wrong_answers():
    import html

    done(exercises.check_13_3(reference_as_data_text))
    not_yet(exercises.check_13_3(lambda t: f"<untrusted_data>{t}</untrusted_data>"), "closes the tag")
    only_exact = lambda t: "<untrusted_data>" + t.replace("</untrusted_data>", "") + "</untrusted_data>"  # noqa: E731
    not_yet(exercises.check_13_3(only_exact), "closes the tag")
    no_amp = lambda t: "<untrusted_data>" + t.replace("<", "&lt;").replace(">", "&gt;") + "</untrusted_data>"  # noqa: E731
    not_yet(exercises.check_13_3(no_amp), "escape '&' too")
    not_yet(exercises.check_13_3(lambda t: t), "should start with <untrusted_data>")
    wrong_kind(exercises.check_13_3(lambda t: t.encode()), "return a str")
    amp_and_gt = lambda t: "<untrusted_data>" + t.replace("&", "&amp;").replace(">", "&gt;") + "</untrusted_data>"  # noqa: E731
    not_yet(exercises.check_13_3(amp_and_gt), "closes the tag", "escaping '>' is not enough", "escape '<'")
    wrong_order = lambda t: ("<untrusted_data>" + t.replace("<", "&lt;").replace(">", "&gt;").replace("&", "&amp;")  # noqa: E731
                             + "</untrusted_data>")
    not_yet(exercises.check_13_3(wrong_order), "unescaping twice", "escape '&' first")
    twice = lambda t: "<untrusted_data>" + html.escape(html.escape(t)) + "</untrusted_data>"  # noqa: E731
    not_yet(exercises.check_13_3(twice), "unescaping twice")
    # odd but valid: escape only what can start a tag, and '&'; or every quote too (html.escape's default)
    only_lt = lambda t: "<untrusted_data>" + t.replace("&", "&amp;").replace("<", "&lt;") + "</untrusted_data>"  # noqa: E731
    done(exercises.check_13_3(only_lt))
    done(exercises.check_13_3(lambda t: "<untrusted_data>" + html.escape(t) + "</untrusted_data>"))


@functools.cache
def notebook_function(notebook, name):
    """A function defined in a notebook's source, with the imports of its source (module level, any cell)."""
    import ast
    from pathlib import Path

    source = (Path(__file__).parent.parent / "notebooks" / "src" / notebook).read_text()
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.startswith("%")))
    wanted = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
              or isinstance(node, ast.FunctionDef) and node.name == name]
    namespace = {}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), notebook, "exec"), namespace)
    return namespace[name]


@pytest.mark.parametrize("to, approved", [
    ("ada@example.com", True), ("Ada Lovelace <ada@example.com>", True), ("Grace@EXAMPLE.com", True),
    ('"Lovelace, Ada" <ada@example.com>, Bob <bob@example.com>', True), ("ada@example.com; bob@example.com", True),
    ("attacker@evil.example, ada@example.com", False), ("ada@example.com, attacker@evil.example", False),
    ("ada@example.com; leak@evil.example", False), ("Ada <ada@example.com>; Eve <eve@evil.example>", False),
    ('"ada@example.com" <eve@evil.example>', False), ("ada@example.com.evil.example", False),
    ("ada@example.com\nBcc: x@evil.example", False), ("@example.com", False), ("", False)])
def test_13_company_only_approves_a_recipient_list_only_when_every_address_is_at_the_company(to, approved):
    company_only = notebook_function("13_production.py", "company_only")
    verdict = company_only({"name": "send_email", "input": {"to": to, "body": "hi"}})
    assert (verdict is True) == approved, verdict
    if not approved:
        assert isinstance(verdict, str) and "not allowed" in verdict
    assert company_only({"name": "delete_file", "input": {"path": "~/notes.txt"}}) is not True
