"""The tool boundary under hostile tools: it never raises, its text can always be sent,
tool names are checked exactly, and a tool cannot change what the model sent."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent import connect
from miniagent.loop import run_loop
from miniagent.tools import NAME_PATTERN, Tool, ToolRegistry, tool

ANY_ARGS = {"type": "object"}


def use(name: str, input: object = None, id: str = "toolu_1") -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": {} if input is None else input}


def sendable(result: dict) -> None:
    """What the model gets back must be readable text that JSON and UTF-8 can carry."""
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    text = result["content"]
    assert isinstance(text, str) and text.strip()
    text.encode("utf-8")  # no lone surrogate
    json.dumps(result, ensure_ascii=False, allow_nan=False).encode("utf-8")


class Unprintable:
    """str() and repr() both raise."""

    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("the message itself fails")


class BadStr(str):
    """A str subclass whose own __str__ raises."""

    def __str__(self) -> str:
        raise RuntimeError("nope")


def circular_list() -> list:
    items: list = [1]
    items.append(items)
    return items


def circular_dict() -> dict:
    d: dict = {"a": 1}
    d["self"] = d
    return d


def deep_list(depth: int = 50_000) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_RETURNS = {
    "str and repr raise": lambda: Unprintable(),
    "a dict holding one": lambda: {"x": Unprintable()},
    "circular list": circular_list,
    "circular dict": circular_dict,
    "lone surrogate": lambda: "a\ud800b",
    "surrogate in a dict": lambda: {"k\udcff": "v\ud800"},
    "surrogate from __str__": lambda: type("S", (), {"__str__": lambda self: "x\udc80"})(),
    "int too large for str()": lambda: 10 ** 5000,
    "a dict holding a huge int": lambda: {"n": 10 ** 5000},
    "keys JSON cannot have": lambda: {(1, 2): "tuple key"},
    "nested too deep": deep_list,
    "bytes": lambda: b"caf\xc3\xa9 \xff",
    "bytearray": lambda: bytearray(b"\xed\xa0\x80"),
    "NaN": lambda: float("nan"),
    "NaN in a list": lambda: [math.nan, math.inf],
    "generator": lambda: (i for i in range(3)),
    "str subclass with a broken __str__": lambda: BadStr("fine text"),
    "empty bytes": lambda: b"",
}

HOSTILE_RAISES = {
    "exception whose str() raises": UnprintableError,
    "exception with a lone surrogate": lambda: ValueError("bad \ud800 input"),
    "exception holding a huge int": lambda: ValueError(10 ** 5000),
    "exception whose args cannot be shown": lambda: KeyError(Unprintable()),
}


def raiser(make):
    def fn():
        raise make()
    return fn


def test_run_and_run_all_never_raise_whatever_a_tool_returns_or_raises(subtests):
    cases = {**{f"returns {k}": v for k, v in HOSTILE_RETURNS.items()},
             **{f"raises {k}": raiser(v) for k, v in HOSTILE_RAISES.items()}}
    for label, fn in cases.items():
        registry = ToolRegistry([Tool("t", "A hostile tool.", ANY_ARGS, fn)])
        for how in ("run", "run_all serial", "run_all parallel"):
            with subtests.test(case=label, how=how):
                if how == "run":
                    result = registry.run(use("t"))
                else:
                    second = use("t", id="toolu_2")
                    result = registry.run_all([use("t"), second], parallel=how.endswith("parallel"))[0]
                sendable(result)
                if label.startswith("raises"):
                    assert result["is_error"] and result["content"].startswith("Error: t raised ")


def test_readable_text_for_bytes_and_lone_surrogates():
    def run(value):
        return ToolRegistry([Tool("t", "d", ANY_ARGS, lambda: value)]).run(use("t"))["content"]

    assert run(b"caf\xc3\xa9") == "café"
    assert run(b"\xff") == "\ufffd"
    assert run("a\ud800b") == "a\ufffdb"
    assert run("\ud83d\ude00") == "\U0001f600"  # a split surrogate pair is joined, not replaced
    assert run(Unprintable()) == "<Unprintable object that cannot be shown as text>"


# Anything a tool may hand back: JSON-like data with hostile leaves, nested.
_leaves = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
    st.integers(), st.sampled_from([5000, 4400]).map(lambda digits: -(10 ** digits)),
    st.text(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), max_size=20),  # lone surrogates too
    st.binary(max_size=20), st.builds(Unprintable), st.builds(lambda: (i for i in range(2))),
)
_values = st.recursive(_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers(), st.tuples(st.integers())), inner, max_size=4)),
    max_leaves=12)


@settings(deadline=None)
@given(value=_values, raises=st.booleans())
def test_any_returned_or_raised_value_becomes_sendable_text(value, raises):
    def fn():
        if raises:
            raise ValueError(value)
        return value

    registry = ToolRegistry([Tool("t", "d", ANY_ARGS, fn)])
    sendable(registry.run(use("t")))
    sendable(registry.run_all([use("t"), use("t", id="toolu_2")])[0])


# --- tool names ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["get_weather\n", "x\n", "a" * 128 + "\n"])
def test_a_name_with_a_final_newline_is_refused(name):
    with pytest.raises(ValueError, match="is not allowed"):
        Tool(name, "d", ANY_ARGS, lambda: None)
    with pytest.raises(ValueError, match="is not allowed"):
        tool(name=name, description="d")(lambda: None)
    assert NAME_PATTERN.fullmatch(name.rstrip("\n"))


# --- the arguments are the tool's own copy -------------------------------------------------


def mutating_tool():
    @tool
    def plan_trip(cities: list[str], options: dict) -> str:
        """Plan a trip through cities.

        Args:
            cities: the cities to visit
            options: travel options
        """
        cities.append("Atlantis")
        cities[0] = "changed"
        options["unit"] = "F"
        options.setdefault("nested", {})["x"] = 1
        for value in options.values():
            if isinstance(value, list):
                value.clear()
        return "planned"

    return plan_trip


ARGS = {"cities": ["Paris", "Rome"], "options": {"unit": "C", "stops": [1, 2], "nested": {"y": [3]}}}


def test_a_tool_cannot_change_the_arguments_it_was_given():
    block = use("plan_trip", json.loads(json.dumps(ARGS)))
    registry = ToolRegistry([mutating_tool()])
    assert registry.run(block)["content"] == "planned"
    registry.run_all([block, {**block, "id": "toolu_2"}])
    assert block["input"] == ARGS


def test_history_trace_and_next_request_keep_what_the_model_sent():
    llm = connect(offline=True, quiet=True)
    llm.mock.script({"content": [{"type": "tool_use", "name": "plan_trip", "input": ARGS}]},
                    {"content": [{"type": "text", "text": "Done."}]})
    events: list[dict] = []
    result = run_loop(llm, [{"role": "user", "content": "Plan it"}], tools=[mutating_tool()],
                      on_event=events.append)
    assert result.stop == "end_turn"
    assert result.messages[1]["content"][0]["input"] == ARGS
    assert [e["input"] for e in events if e["type"] == "tool_call"] == [ARGS]
    response_event = next(e for e in events if e["type"] == "response")
    assert response_event["content"][0]["input"] == ARGS
    sent = llm.mock.requests[1]["body"]["messages"][1]["content"][0]["input"]
    assert sent == ARGS


@pytest.mark.parametrize("value", ["", " ", "\t", b"\t", b"\n \r", None])
def test_no_output_and_whitespace_alone_become_a_placeholder_the_api_accepts(value):
    registry = ToolRegistry([Tool("t", "d", ANY_ARGS, lambda: value)])
    assert registry.run(use("t"))["content"] == "(no output)"
