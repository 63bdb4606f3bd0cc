"""Tests for miniagent.tools: schemas from hints, validation, the registry, truncation."""

from __future__ import annotations

import enum
import threading
import time
from typing import Literal, Optional

import pytest

from miniagent.messages import conversation_error
from miniagent.tools import (
    Tool,
    ToolRegistry,
    format_output,
    parse_docstring,
    tool,
    truncate_text,
    validate_arguments,
)


def props(t: Tool) -> dict:
    return t.input_schema["properties"]


def use(name: str, input: object = None, id: str = "toolu_1") -> dict:
    return {"type": "tool_use", "id": id, "name": name, "input": {} if input is None else input}


class Unit(enum.Enum):
    C = "C"
    F = "F"


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


# --- schema generation --------------------------------------------------------------


@pytest.mark.parametrize(
    "hint, expected",
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list[list[float]], {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
        (list, {"type": "array"}),
        (dict, {"type": "object"}),
        (dict[str, int], {"type": "object"}),
        (Literal["C", "F"], {"type": "string", "enum": ["C", "F"]}),
        (Literal[1, 2, 3], {"type": "integer", "enum": [1, 2, 3]}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (Unit, {"type": "string", "enum": ["C", "F"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
    ],
)
def test_schema_per_type(hint, expected):
    def f(x):
        """Doc."""

    f.__annotations__ = {"x": hint}
    t = tool(f)
    assert props(t)["x"] == expected
    assert t.input_schema["required"] == ["x"]


def test_optional_and_defaults_are_not_required():
    @tool
    def f(a: str, b: Optional[int], c: float | None, d: int = 3, e: Unit = Unit.F, g: str | None = None) -> None:
        """Doc."""

    schema = f.input_schema
    assert schema["required"] == ["a"]
    assert props(f)["b"] == {"type": "integer"}
    assert props(f)["c"] == {"type": "number"}
    assert props(f)["d"] == {"type": "integer", "default": 3}
    assert props(f)["e"] == {"type": "string", "enum": ["C", "F"], "default": "F"}
    assert "default" not in props(f)["g"]
    assert schema["additionalProperties"] is False


def test_non_json_default_is_left_out():
    @tool
    def f(when: str = object()) -> None:  # type: ignore[assignment]
        """Doc."""

    assert props(f)["when"] == {"type": "string"}


def test_docstring_gives_descriptions():
    @tool
    def get_weather(city: str, unit: Literal["C", "F"] = "C") -> str:
        """Get the weather for a city,
        today only.

        Second paragraph.

        Args:
            city: The city, e.g. Paris.
                Continued on a second line.
            unit (str): Temperature unit.

        Returns:
            A sentence.
        """
        return city

    assert get_weather.description == "Get the weather for a city, today only.\n\nSecond paragraph."
    assert props(get_weather)["city"]["description"] == "The city, e.g. Paris. Continued on a second line."
    assert props(get_weather)["unit"]["description"] == "Temperature unit."
    assert get_weather.schema() == {
        "name": "get_weather",
        "description": get_weather.description,
        "input_schema": get_weather.input_schema,
    }


def test_parse_docstring_without_args():
    assert parse_docstring("Just this.") == ("Just this.", {})


def test_decorator_with_arguments_and_still_callable():
    @tool(name="add_numbers", description="Add two numbers.", timeout=2.5)
    def add(a: int, b: int) -> int:
        return a + b

    assert add.name == "add_numbers"
    assert add.description == "Add two numbers."
    assert add.timeout == 2.5
    assert add(2, 3) == 5


def test_enum_arguments_arrive_as_members():
    @tool
    def convert(unit: Unit) -> str:
        """Doc."""
        return repr(unit)

    result = ToolRegistry([convert]).run(use("convert", {"unit": "F"}))
    assert result["content"] == repr(Unit.F)


@pytest.mark.parametrize("hint", [tuple, set[int], int | str, bytes, object])
def test_unsupported_hint_names_the_parameter(hint):
    def f(weird):
        """Doc."""

    f.__annotations__ = {"weird": hint}
    with pytest.raises(TypeError, match="parameter 'weird'"):
        tool(f)


def test_missing_hint_varargs_and_missing_description_are_refused():
    def no_hint(x):
        """Doc."""

    def var(*args: int):
        """Doc."""

    def no_doc(x: int):
        pass

    with pytest.raises(TypeError, match="'x' .* has no type hint"):
        tool(no_hint)
    with pytest.raises(TypeError, match="'args'"):
        tool(var)
    with pytest.raises(ValueError, match="no description"):
        tool(no_doc)


def test_docstring_documenting_a_missing_parameter_is_refused():
    def f(city: str):
        """Doc.

        Args:
            cty: Misspelt.
        """

    with pytest.raises(TypeError, match="cty"):
        tool(f)


def test_bad_tool_name_is_refused():
    with pytest.raises(ValueError, match="1-128 characters"):
        Tool("get weather", "d", {"type": "object"}, print)
    with pytest.raises(ValueError, match='"type": "object"'):
        Tool("ok", "d", {"type": "string"}, print)


# --- validation -----------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "days": {"type": "integer"},
        "scale": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "args, message",
    [
        ({"city": 42}, "city: expected a string, got 42 (int)"),
        ({}, "missing required field 'city'"),
        ({"city": "Paris", "unit": "celsius"}, "unit: expected one of 'C', 'F', got 'celsius'"),
        ({"cty": "Paris", "city": "Paris"}, "unexpected field 'cty' (known fields: city, unit, days, scale, tags)"),
        ({"city": "P", "days": True}, "days: expected an integer, got True (bool)"),
        ({"city": "P", "days": 2.5}, "days: expected an integer, got 2.5 (float)"),
        ({"city": "P", "scale": False}, "scale: expected a number, got False (bool)"),
        ({"city": "P", "tags": ["a", 3]}, "tags[1]: expected a string, got 3 (int)"),
        ({"city": "P", "tags": "a"}, "tags: expected an array, got 'a' (str)"),
        ("Paris", "arguments: expected an object, got 'Paris' (str)"),
    ],
)
def test_validation_messages(args, message):
    assert validate_arguments(SCHEMA, args) == [message]


def test_validation_accepts_good_arguments_and_int_for_number():
    assert validate_arguments(SCHEMA, {"city": "P", "unit": "F", "days": 3, "scale": 2, "tags": []}) == []


def test_validation_reports_every_problem():
    errors = validate_arguments(SCHEMA, {"unit": "K", "extra": 1})
    assert len(errors) == 3
    assert errors[0] == "missing required field 'city'"


def test_enum_does_not_confuse_true_with_one():
    schema = {"type": "object", "properties": {"n": {"enum": [1, 2]}}}
    assert validate_arguments(schema, {"n": True}) == ["n: expected one of 1, 2, got True"]
    assert validate_arguments(schema, {"n": 1}) == []


def test_extra_fields_allowed_when_schema_does_not_forbid_them():
    assert validate_arguments({"type": "object", "properties": {}}, {"anything": 1}) == []


# --- running ------------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: The city.
    """
    if city == "Atlantis":
        raise ValueError("unknown city 'Atlantis'")
    return f"{city}: sunny"


def test_run_returns_a_tool_result_block():
    registry = ToolRegistry([get_weather])
    result = registry.run(use("get_weather", {"city": "Paris"}, id="toolu_9"))
    assert result == {"type": "tool_result", "tool_use_id": "toolu_9", "content": "Paris: sunny"}


def test_unknown_tool_lists_known_names():
    result = ToolRegistry([get_weather]).run(use("get_wether", {"city": "Paris"}))
    assert result["is_error"] is True
    assert result["content"].startswith("Error: unknown tool 'get_wether'")
    assert "get_weather" in result["content"].split("Available tools:")[1]


def test_bad_arguments_become_an_error_result_with_the_validator_messages():
    calls = []
    registry = ToolRegistry([Tool("t", "d", SCHEMA, lambda **kw: calls.append(kw))])
    result = registry.run(use("t", {"city": 42, "cty": "x"}))
    assert result["is_error"] is True
    assert result["content"].startswith("Error: invalid arguments for t")
    assert "city: expected a string, got 42 (int)" in result["content"]
    assert "unexpected field 'cty'" in result["content"]
    assert calls == []  # the function never ran


def test_raising_tool_becomes_an_error_result_without_traceback():
    result = ToolRegistry([get_weather]).run(use("get_weather", {"city": "Atlantis"}))
    assert result["is_error"] is True
    assert result["content"].startswith("Error: get_weather raised ValueError: unknown city 'Atlantis'")
    assert "Traceback" not in result["content"]


def test_even_system_exit_in_a_tool_is_contained():
    def bail() -> None:
        raise SystemExit(3)

    registry = ToolRegistry([Tool("bail", "d", {"type": "object"}, bail)])
    result = registry.run(use("bail"))
    assert result["is_error"] is True and "SystemExit: 3" in result["content"]


def test_hanging_tool_times_out_as_an_error():
    release = threading.Event()

    def hang() -> str:
        release.wait()
        return "late"

    registry = ToolRegistry([Tool("hang", "Hangs.", {"type": "object"}, hang, timeout=0.2)])
    start = time.perf_counter()
    try:
        result = registry.run(use("hang"))
        elapsed = time.perf_counter() - start
    finally:
        release.set()
    assert result["is_error"] is True
    assert result["content"].startswith("Error: hang did not finish within 0.2 s")
    assert 0.18 <= elapsed < 2.0


def test_oversized_output_is_truncated_with_marker():
    text = "HEAD" + "x" * 50_000 + "TAIL"
    registry = ToolRegistry([Tool("big", "d", {"type": "object"}, lambda: text)], max_output_chars=1_000)
    content = registry.run(use("big"))["content"]
    assert len(content) <= 1_000
    assert content.startswith("HEAD") and content.endswith("TAIL")
    assert "characters omitted ...]" in content


def test_default_output_cap_is_8000():
    registry = ToolRegistry([Tool("big", "d", {"type": "object"}, lambda: "y" * 20_000)])
    assert len(registry.run(use("big"))["content"]) <= 8_000


@pytest.mark.parametrize(
    "value, text",
    [
        ({"temp": 25, "city": "北京"}, '{"temp":25,"city":"北京"}'),
        ([1, 2], "[1,2]"),
        (None, "(no output)"),
        ("", "(no output)"),
        (42, "42"),
        (2.5, "2.5"),
        (True, "True"),
    ],
)
def test_non_string_results(value, text):
    assert format_output(value) == text
    registry = ToolRegistry([Tool("v", "d", {"type": "object"}, lambda: value)])
    result = registry.run(use("v"))
    assert result["content"] == text and "is_error" not in result


def test_results_in_call_order_and_valid_conversation():
    def slow(n: int) -> str:
        """Waits for its gate, then returns n."""
        gate[n].wait(5)
        return f"n={n}"

    gate = {n: threading.Event() for n in range(3)}
    order = []

    def on_result(tool_use, result, seconds):
        order.append(tool_use["id"])
        assert seconds >= 0
        # Let the next lower n finish only after this one: completion order is 2, 1, 0.
        if tool_use["input"]["n"] > 0:
            gate[tool_use["input"]["n"] - 1].set()

    gate[2].set()
    uses = [use("slow", {"n": n}, id=f"toolu_{n}") for n in range(3)]
    results = ToolRegistry([slow]).run_all(uses, on_result=on_result)
    assert [r["tool_use_id"] for r in results] == ["toolu_0", "toolu_1", "toolu_2"]
    assert [r["content"] for r in results] == ["n=0", "n=1", "n=2"]
    assert order == ["toolu_2", "toolu_1", "toolu_0"]
    conversation = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    assert conversation_error(conversation) is None


def _barrier_registry(barrier: threading.Barrier) -> ToolRegistry:
    def meet(i: int) -> str:
        """Waits for all four calls."""
        barrier.wait()
        return f"met {i}"

    return ToolRegistry([meet])


def test_parallel_runs_tools_concurrently():
    # Each call waits until all four are waiting: they can only finish if they run at once.
    barrier = threading.Barrier(4, timeout=5)
    uses = [use("meet", {"i": i}, id=f"toolu_{i}") for i in range(4)]
    results = _barrier_registry(barrier).run_all(uses, parallel=True)
    assert [r["content"] for r in results] == [f"met {i}" for i in range(4)]
    assert not any(r.get("is_error") for r in results)


def test_sequential_runs_one_at_a_time():
    barrier = threading.Barrier(4, timeout=0.1)
    uses = [use("meet", {"i": i}, id=f"toolu_{i}") for i in range(4)]
    results = _barrier_registry(barrier).run_all(uses, parallel=False)
    assert all(r["is_error"] and "BrokenBarrierError" in r["content"] for r in results)


def test_run_all_reports_every_call_once_sequentially():
    seen = []
    registry = ToolRegistry([get_weather])
    uses = [use("get_weather", {"city": c}, id=f"toolu_{c}") for c in ("Paris", "Atlantis")]
    results = registry.run_all(uses, parallel=False, on_result=lambda u, r, s: seen.append((u["id"], r["tool_use_id"], s)))
    assert [(a, b) for a, b, _ in seen] == [("toolu_Paris", "toolu_Paris"), ("toolu_Atlantis", "toolu_Atlantis")]
    assert all(isinstance(s, float) and s >= 0 for _, _, s in seen)
    assert [r.get("is_error", False) for r in results] == [False, True]


def test_block_without_id_is_a_caller_bug():
    with pytest.raises(ValueError, match="'id'"):
        ToolRegistry([get_weather]).run({"type": "tool_use", "name": "get_weather", "input": {}})


# --- the registry itself --------------------------------------------------------------


def test_registry_basics():
    def plain(x: int) -> int:
        """Double x."""
        return 2 * x

    registry = ToolRegistry([get_weather, plain])
    assert len(registry) == 2
    assert "plain" in registry and "nope" not in registry
    assert registry.names == ["get_weather", "plain"]
    assert registry.get("plain").input_schema["properties"]["x"] == {"type": "integer"}
    assert registry.get("nope") is None
    assert [s["name"] for s in registry.schemas()] == ["get_weather", "plain"]
    assert set(registry.schemas()[0]) == {"name", "description", "input_schema"}
    assert repr(registry) == "ToolRegistry(get_weather, plain)"


def test_register_works_as_a_decorator_and_refuses_duplicates():
    registry = ToolRegistry()

    @registry.register
    def ping() -> str:
        """Answer pong."""
        return "pong"

    assert isinstance(ping, Tool) and registry.names == ["ping"]
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ping)


# --- truncate_text ----------------------------------------------------------------------


def test_truncate_short_text_is_unchanged():
    assert truncate_text("hello", 5) == "hello"


def test_truncate_keeps_head_and_tail_with_exact_count():
    text = "".join(chr(ord("a") + i % 26) for i in range(10_000))
    out = truncate_text(text, 1_000)
    assert len(out) <= 1_000
    head, rest = out.split("\n[... ", 1)
    count, tail = rest.split(" characters omitted ...]\n")
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + int(count.replace(",", "")) + len(tail) == len(text)
    assert count == f"{len(text) - len(head) - len(tail):,}"
    assert 0.65 <= len(head) / (len(head) + len(tail)) <= 0.75


@pytest.mark.parametrize("ratio", [0.0, 0.5, 1.0])
def test_truncate_head_ratio(ratio):
    out = truncate_text("a" * 500 + "b" * 500, 100, head_ratio=ratio)
    assert len(out) <= 100
    if ratio == 0.0:
        assert out.startswith("\n[...")
    if ratio == 1.0:
        assert out.endswith("...]\n")


def test_truncate_bad_arguments():
    with pytest.raises(ValueError, match="max_chars"):
        truncate_text("x" * 100, -1)
    with pytest.raises(ValueError, match="head_ratio"):
        truncate_text("x" * 100, 50, head_ratio=1.5)
    with pytest.raises(ValueError, match="marker"):
        truncate_text("x" * 100, 10)


def test_a_tool_whose_fn_is_not_callable_is_refused_where_it_is_defined():
    with pytest.raises(TypeError, match="fn must be callable"):
        Tool("weather", "Get the weather.", {"type": "object"}, "not a function")
