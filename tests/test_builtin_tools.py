"""Tests for miniagent.builtin_tools: canned weather, an injectable clock, a safe calculator."""

from __future__ import annotations

import ast
import builtins
import time
from datetime import datetime, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from miniagent import builtin_tools
from miniagent.builtin_tools import (
    WEATHER,
    CalculatorError,
    calculate,
    default_tools,
    get_current_time,
    get_weather,
    safe_eval,
)
from miniagent.tools import Tool, ToolRegistry

# --- weather ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "city, answer",
    [
        ("北京", "北京：晴，25°C，微风"),
        ("Beijing", "Beijing: sunny, 25°C, light breeze"),
        ("  bEiJiNg  ", "Beijing: sunny, 25°C, light breeze"),
        ("Beijing City", "Beijing: sunny, 25°C, light breeze"),
        ("北京市", "北京：晴，25°C，微风"),
        ("上海", "上海：多云，22°C，东风 3 级"),
        ("new york", "New York: light snow, -2°C, north wind, force 4"),
        ("NewYork", "New York: light snow, -2°C, north wind, force 4"),
        ("东京", "东京：多云转晴，21°C，微风"),
    ],
)
def test_weather_answers_in_the_language_asked(city, answer):
    assert get_weather(city) == answer


def test_weather_data_is_distinct_and_bilingual():
    assert len(WEATHER) >= 10
    assert {"Beijing", "Shanghai", "Guangzhou", "Shenzhen", "Hangzhou", "Chengdu", "London", "Paris",
            "New York", "Tokyo"} <= set(WEATHER)
    assert len({(c.sky_en, c.temp_c) for c in WEATHER.values()}) == len(WEATHER)
    for city in WEATHER.values():
        assert get_weather(city.zh).startswith(city.zh + "：")
        assert get_weather(city.en).startswith(city.en + ":")


def test_unknown_city_names_the_known_ones():
    with pytest.raises(ValueError) as info:
        get_weather("Atlantis")
    message = str(info.value)
    assert message.startswith("unknown city 'Atlantis'. Known cities: 北京 (Beijing), 上海 (Shanghai)")
    assert "纽约 (New York)" in message


def test_unknown_city_through_the_registry_is_an_error_result():
    result = default_tools().run({"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                  "input": {"city": "Atlantis"}})
    assert result["is_error"] is True
    assert result["content"].startswith("Error: get_weather raised ValueError: unknown city 'Atlantis'")


def test_under_chinese_the_errors_a_learner_reads_are_chinese(monkeypatch):
    monkeypatch.setenv("MINIAGENT_LANG", "zh")
    with pytest.raises(ValueError) as city:
        get_weather("柏林")
    assert str(city.value).startswith("没有城市 '柏林' 的天气数据。已知的城市：北京（Beijing）、上海（Shanghai）")
    with pytest.raises(ValueError, match="未知的时区 'Tokyo'.*东京的时区是 Asia/Tokyo"):
        get_current_time("Tokyo")
    with pytest.raises(CalculatorError, match="^除数为零$"):
        safe_eval("1 / 0")
    with pytest.raises(CalculatorError, match="^不允许名字：'x'。只能使用数字"):
        safe_eval("x + 1")
    result = default_tools().run({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "柏林"}})
    assert result["is_error"] is True and "没有城市 '柏林' 的天气数据" in result["content"]
    assert get_weather("上海") == "上海：多云，22°C，东风 3 级"  # results are data: unchanged


# --- clock -------------------------------------------------------------------------------

FIXED = datetime(2026, 5, 9, 6, 23, 11, tzinfo=timezone.utc)


@pytest.fixture
def fixed_clock(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: FIXED)


@pytest.mark.parametrize(
    "zone, text",
    [
        ("Asia/Shanghai", "2026-05-09 14:23:11 (Asia/Shanghai), Saturday"),
        ("Europe/London", "2026-05-09 07:23:11 (Europe/London), Saturday"),  # British Summer Time
        ("America/New_York", "2026-05-09 02:23:11 (America/New_York), Saturday"),
        ("UTC", "2026-05-09 06:23:11 (UTC), Saturday"),
        (" asia/tokyo ", "2026-05-09 15:23:11 (Asia/Tokyo), Saturday"),
    ],
)
def test_time_with_injected_clock(fixed_clock, zone, text):
    assert get_current_time(zone) == text


def test_time_default_zone_is_shanghai(fixed_clock):
    assert get_current_time() == "2026-05-09 14:23:11 (Asia/Shanghai), Saturday"


def test_naive_clock_is_taken_as_utc(monkeypatch):
    monkeypatch.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11))
    assert get_current_time("UTC") == "2026-05-09 06:23:11 (UTC), Saturday"


def test_real_clock_has_the_format(monkeypatch):
    monkeypatch.delenv("MINIAGENT_CLOCK", raising=False)  # make test fixes it for the notebooks
    text = get_current_time("UTC")
    stamp, weekday = text.split(" (UTC), ")
    parsed = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    assert abs((parsed - datetime.now(timezone.utc)).total_seconds()) < 5
    assert weekday == builtin_tools.WEEKDAYS[parsed.weekday()]


@pytest.mark.parametrize("zone", ["Mars/Base", "", "Asia", "../etc/passwd", "x" * 400])
def test_bad_timezone_is_explained(zone):
    with pytest.raises(ValueError, match=r"unknown timezone .* such as Asia/Shanghai, Europe/London"):
        get_current_time(zone)


def test_city_given_as_timezone_gets_a_hint():
    with pytest.raises(ValueError, match="For Tokyo that is Asia/Tokyo"):
        get_current_time("Tokyo")


# --- calculator: results ---------------------------------------------------------------


def test_demo_expression():
    assert calculate("(1024 + 768) * 2") == "3584"


@pytest.mark.parametrize(
    "expression, result",
    [
        ("1 + 2 * 3", "7"),
        ("(1 + 2) * 3", "9"),
        ("2 ** 10", "1024"),
        ("2 ^ 10", "1024"),
        ("2 ** 3 ** 2", "512"),
        ("-2 ** 2", "-4"),
        ("(-2) ** 2", "4"),
        ("+-+3", "-3"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("7 / 2", "3.5"),
        ("10 / 2", "5"),
        ("1 / 3", "0.333333333333"),
        ("0.1 + 0.2", "0.3"),
        ("3 × 4 ÷ 2", "6"),
        ("（1 + 1）× 3", "6"),
        ("2 ** -1", "0.5"),
        ("1e3 + 1", "1001"),
        ("1_000 * 3", "3000"),
        ("0x10 + 1", "17"),
        ("2 ** 0.5", "1.41421356237"),
        ("1e20", "1e+20"),
        ("10 ** 100", "1" + "0" * 100),
        ("  42  ", "42"),
    ],
)
def test_good_expressions(expression, result):
    assert calculate(expression) == result


def test_safe_eval_returns_numbers():
    assert safe_eval("6 * 7") == 42 and isinstance(safe_eval("6 * 7"), int)
    assert safe_eval("1 / 4") == 0.25


# --- calculator: refusals ------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, reason",
    [
        ("os", "names are not allowed: 'os'"),
        ("__import__", "names are not allowed: '__import__'"),
        ("(1).real", "attribute access is not allowed: '.real'"),
        ("os.system", "attribute access is not allowed"),
        ("abs(-1)", "function calls are not allowed"),
        ("__import__('os').system('echo hi')", "function calls are not allowed"),
        ("import os", "not a valid arithmetic expression"),
        ("lambda: 1", "lambda functions are not allowed"),
        ("(lambda: 1)()", "function calls are not allowed"),
        ("[x for x in (1, 2)]", "comprehensions are not allowed"),
        ("{x: 1 for x in (1,)}", "comprehensions are not allowed"),
        ("(1, 2)[0]", "subscripts (indexing) are not allowed"),
        ("'a' * 3", "strings are not allowed: 'a'"),
        ("f'{1}'", "strings are not allowed"),
        ("True + 1", "booleans are not allowed: True"),
        ("1j", "complex numbers are not allowed"),
        ("1 < 2", "comparisons are not allowed"),
        ("1 and 2", "'and' and 'or' are not allowed"),
        ("1 if 1 else 2", "conditional expressions are not allowed"),
        ("(x := 3)", "assignments are not allowed"),
        ("1 << 2", "the operator '<<' is not allowed"),
        ("~1", "the operator '~' is not allowed"),
        ("[1, 2]", "lists are not allowed"),
        ("1,500", "tuples are not allowed"),
        ("1 +", "not a valid arithmetic expression"),
        ("", "empty"),
        ("1 / 0", "division by zero"),
        ("1 // 0", "division by zero"),
        ("1 % 0.0", "division by zero"),
        ("0 ** -1", "0 cannot be raised to a negative power"),
        ("(-8) ** (1 / 3)", "complex number"),
        ("1e308 * 10", "too large"),
        ("1e999", "too large"),
        ("10 ** 999 * 10 ** 999", "more than 1,000 digits"),
        ("10 ** 500 / 3", "too large"),
        ("1" + "+1" * 150, "nested more than"),
        ("1" * 501, "the limit is 500"),
    ],
)
def test_refusals(expression, reason):
    with pytest.raises(CalculatorError, match=None) as info:
        safe_eval(expression)
    assert reason in str(info.value)


def test_non_string_is_refused():
    with pytest.raises(CalculatorError, match="must be a string"):
        safe_eval(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("expression", ["9**9**9", "2**10**10", "10**10**10", "2**100000000",
                                        "(10**999)**(10**999)", "-(7**7**7**7)", "2^2^2^2^2^2"])
def test_huge_powers_are_refused_at_once(expression):
    with pytest.raises(CalculatorError, match="digits"):
        safe_eval(expression)

    def refuse() -> float:
        start = time.perf_counter()
        with pytest.raises(CalculatorError):
            safe_eval(expression)
        return time.perf_counter() - start

    # Best of three: a refusal is microseconds of work; a scheduler hiccup on a busy
    # CI machine should not fail the test, while computing the power would take hours.
    assert min(refuse() for _ in range(3)) < 0.05


def test_calculator_errors_are_value_errors_and_results_in_the_registry():
    assert issubclass(CalculatorError, ValueError)
    result = default_tools().run({"type": "tool_use", "id": "toolu_1", "name": "calculate",
                                  "input": {"expression": "os.system('ls')"}})
    assert result["is_error"] is True
    assert "CalculatorError: function calls are not allowed" in result["content"]


# --- calculator: fuzz ---------------------------------------------------------------------

TOKENS = ["1", "2", "9", "0", "10", "0.5", "1e308", "7_7", "+", "-", "*", "/", "//", "%", "**", "^", "×", "÷",
          "(", ")", " ", ".", ",", "__import__", "os", "open", "system", "'x'", "[", "]", "lambda", ":", "=",
          "x", "for", "in", "if", "else", "not", "~", "<<", "@", "j", "\n", "\x00", "（", "）"]


@pytest.fixture
def tripwire(tmp_path, monkeypatch):
    """A file that must never be created, and builtins that record any call to them.

    `compile` is recorded only when it is asked for code: ast.parse calls it with
    PyCF_ONLY_AST, which builds a syntax tree and runs nothing. Nor is the parser's
    own import of `unicodedata`, which it needs to normalise non-ASCII names.
    """
    calls = []
    for name in ("open", "__import__", "eval", "exec", "compile"):
        original = getattr(builtins, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            flags = args[3] if len(args) > 3 else kwargs.get("flags", 0)
            parser_internal = (_name == "compile" and flags & ast.PyCF_ONLY_AST) or (
                _name == "__import__" and args[:1] == ("unicodedata",)
            )
            if not parser_internal:
                calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(builtins, name, spy)
    target = tmp_path / "pwned"
    return calls, target


def _payloads(target) -> list[str]:
    path = str(target)
    return [
        f"open({path!r}, 'w')",
        f"__import__('os').system('touch {path}')",
        f"__import__('pathlib').Path({path!r}).touch()",
        f"(lambda: open({path!r}, 'w'))()",
    ]


def test_attack_payloads_do_nothing(tripwire):
    calls, target = tripwire
    payloads = _payloads(target)
    calls.clear()
    for payload in payloads:
        with pytest.raises(CalculatorError):
            safe_eval(payload)
    during = list(calls)
    assert during == [] and not target.exists()


# "1if" and the like make the parser warn (SyntaxWarning) before it fails; noise, not a finding.
@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=80), st.lists(st.sampled_from(TOKENS), max_size=30).map("".join)))
def test_fuzz_only_calculator_errors_escape(tripwire, expression):
    calls, target = tripwire
    calls.clear()  # Hypothesis itself may import or open files between examples
    start = time.perf_counter()
    try:
        value = safe_eval(expression)
    except CalculatorError:
        value = None
    elapsed, during = time.perf_counter() - start, list(calls)
    assert value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    assert elapsed < 0.5
    assert during == [] and not target.exists()


# --- the default registry ---------------------------------------------------------------


def test_default_tools():
    registry = default_tools()
    assert isinstance(registry, ToolRegistry)
    assert registry.names == ["get_weather", "get_current_time", "calculate"]
    assert all(isinstance(t, Tool) for t in registry)
    schemas = {s["name"]: s for s in registry.schemas()}
    assert schemas["calculate"]["description"].startswith("Evaluate an arithmetic expression")
    assert schemas["get_weather"]["input_schema"]["required"] == ["city"]
    assert schemas["get_current_time"]["input_schema"]["properties"]["timezone"]["default"] == "Asia/Shanghai"
    assert "required" not in schemas["get_current_time"]["input_schema"]
    assert default_tools() is not registry  # each call gets its own registry


def test_the_demo_question_in_parallel(fixed_clock):
    uses = [
        {"type": "tool_use", "id": "toolu_1", "name": "get_current_time", "input": {}},
        {"type": "tool_use", "id": "toolu_2", "name": "calculate", "input": {"expression": "(1024 + 768) * 2"}},
        {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {"city": "北京"}},
        {"type": "tool_use", "id": "toolu_4", "name": "get_weather", "input": {"city": "上海"}},
    ]
    results = default_tools().run_all(uses)
    assert [r["content"] for r in results] == [
        "2026-05-09 14:23:11 (Asia/Shanghai), Saturday", "3584", "北京：晴，25°C，微风", "上海：多云，22°C，东风 3 级",
    ]


def test_miniagent_clock_fixes_the_time_the_tool_reads(monkeypatch):
    monkeypatch.setenv("MINIAGENT_CLOCK", "2026-05-09T06:23:11Z")
    assert get_current_time() == "2026-05-09 14:23:11 (Asia/Shanghai), Saturday"
    monkeypatch.setenv("MINIAGENT_CLOCK", " 2026-12-02T08:00:00 ")  # no zone: UTC
    assert get_current_time("Europe/London") == "2026-12-02 08:00:00 (Europe/London), Wednesday"
    monkeypatch.setenv("MINIAGENT_CLOCK", "2026-12-02T08:00:00+08:00")
    assert get_current_time("UTC") == "2026-12-02 00:00:00 (UTC), Wednesday"
    monkeypatch.setenv("MINIAGENT_CLOCK", "")
    assert get_current_time("UTC")[:4].isdigit()  # empty: the real clock


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "x" * 500])
def test_a_bad_miniagent_clock_is_a_tool_error_that_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("MINIAGENT_CLOCK", value)
    registry = ToolRegistry([get_current_time])
    result = registry.run({"type": "tool_use", "id": "t1", "name": "get_current_time", "input": {}})
    assert result["is_error"] and "MINIAGENT_CLOCK" in result["content"] and "2026-05-09T06:23:11Z" in result["content"]
    assert "x" * 41 not in result["content"]  # a long value is cut, not echoed whole
