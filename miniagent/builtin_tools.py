"""The three tools of the article's demo: weather, clock and calculator.

- `get_weather` answers from canned data, so the demo behaves the same offline,
  live and in CI. An unknown city raises, and the registry turns that into an
  "Error: ..." result listing the cities it knows, which the model can act on.
- `get_current_time` reads a clock you can replace (`now`), so tests and saved
  notebook outputs do not depend on when they ran.
- `calculate` is a safe calculator. The article warns that evaluating a string the
  model wrote is remote code execution; `safe_eval` never calls eval. It parses
  the expression into a syntax tree, allows only numbers and arithmetic, and checks
  every size limit before computing, so neither code nor a runaway power gets in.

Their error messages are read by a learner too (in the tool result, and in the mock's
answer that quotes it), so they follow MINIAGENT_LANG (miniagent.i18n.t); the results
themselves are data, and stay as they are.
"""

from __future__ import annotations

import ast
import math
import os
import re
from datetime import datetime, timedelta, timezone as dt_timezone
from functools import lru_cache
from typing import Callable, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from .i18n import t
from .tools import ToolRegistry, tool

# --- weather ---------------------------------------------------------------------------


class CityWeather(NamedTuple):
    zh: str
    en: str
    temp_c: int
    sky_zh: str
    sky_en: str
    wind_zh: str
    wind_en: str
    tz: str  # the city's IANA timezone, used to help a model that passes a city as a timezone


_CITIES = [
    CityWeather("北京", "Beijing", 25, "晴", "sunny", "微风", "light breeze", "Asia/Shanghai"),
    CityWeather("上海", "Shanghai", 22, "多云", "cloudy", "东风 3 级", "east wind, force 3", "Asia/Shanghai"),
    CityWeather("广州", "Guangzhou", 31, "雷阵雨", "thunderstorms", "南风", "south wind", "Asia/Shanghai"),
    CityWeather("深圳", "Shenzhen", 29, "阵雨", "showers", "海风", "sea breeze", "Asia/Shanghai"),
    CityWeather("杭州", "Hangzhou", 20, "阴", "overcast", "无风", "calm", "Asia/Shanghai"),
    CityWeather("成都", "Chengdu", 18, "小雨", "light rain", "微风", "light breeze", "Asia/Shanghai"),
    CityWeather("伦敦", "London", 11, "雾", "fog", "西风", "west wind", "Europe/London"),
    CityWeather("巴黎", "Paris", 16, "晴间多云", "partly cloudy", "微风", "light breeze", "Europe/Paris"),
    CityWeather("纽约", "New York", -2, "小雪", "light snow", "北风 4 级", "north wind, force 4", "America/New_York"),
    CityWeather("东京", "Tokyo", 21, "多云转晴", "clearing up", "微风", "light breeze", "Asia/Tokyo"),
]

# Canned weather by English name, e.g. WEATHER["Beijing"].temp_c == 25.
WEATHER: dict[str, CityWeather] = {c.en: c for c in _CITIES}


def _city_key(name: str) -> str:
    """'  New York City ' -> 'newyork'; '北京市' -> '北京': ignore case, spaces and a 'city' suffix."""
    key = "".join(name.split()).casefold()
    for suffix in ("city", "市"):
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
    return key


_BY_KEY = {_city_key(n): c for c in _CITIES for n in (c.zh, c.en)}
_HAS_CJK = re.compile(r"[\u4e00-\u9fff]")


def _quoted(text: str, limit: int = 60) -> str:
    """repr of user text for an error message, shortened so a long input is not echoed whole."""
    text = text.strip()
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def find_city(name: str) -> CityWeather | None:
    return _BY_KEY.get(_city_key(name))


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city. Accepts Chinese or English city names, e.g. 北京 or Beijing.

    Args:
        city: City name in Chinese or English, e.g. 北京, Shanghai, London.
    """
    # Answer in the language of the name asked, as a person would.
    if not isinstance(city, str):
        raise TypeError(t(f"city must be a string, got {type(city).__name__}",
                          f"city 必须是字符串，收到的是 {type(city).__name__}"))
    found = find_city(city)
    if found is None:
        raise ValueError(t(f"unknown city {_quoted(city)}. Known cities: " + ", ".join(f"{c.zh} ({c.en})" for c in _CITIES),
                           f"没有城市 {_quoted(city)} 的天气数据。已知的城市：" + "、".join(f"{c.zh}（{c.en}）" for c in _CITIES)))
    if _HAS_CJK.search(city):
        return f"{found.zh}：{found.sky_zh}，{found.temp_c}°C，{found.wind_zh}"
    return f"{found.en}: {found.sky_en}, {found.temp_c}°C, {found.wind_en}"


# --- clock -------------------------------------------------------------------------------


def now() -> datetime:
    """The current time, timezone-aware, or the time `MINIAGENT_CLOCK` fixes (an ISO time such as
    2026-05-09T06:23:11Z). `make test` and `make notebooks` fix it, so that what a saved notebook
    shows does not depend on the day it ran: not only the time (nbval masks that) but what follows
    from it, the weekday an answer names and the tokens it takes ("Wednesday" is longer than
    "Sunday"). In a test, replace the function instead:
    `monkeypatch.setattr(builtin_tools, "now", lambda: datetime(2026, 5, 9, 6, 23, 11, tzinfo=UTC))`.
    A naive datetime returned here is taken as UTC.
    """
    fixed = os.environ.get("MINIAGENT_CLOCK", "").strip()
    return parse_clock(fixed, "MINIAGENT_CLOCK") if fixed else datetime.now(dt_timezone.utc)


def parse_clock(text: str, what: str) -> datetime:
    """An ISO time (2026-05-09T06:23:11Z; no zone is UTC), or a ValueError that says what `what` needs."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        shown = text if len(text) <= 40 else text[:40] + "…"
        raise ValueError(f"{what}: {shown!r} is not an ISO time such as 2026-05-09T06:23:11Z") from None
    return when if when.tzinfo else when.replace(tzinfo=dt_timezone.utc)


# Zones without daylight saving time, for machines without a timezone database
# (Windows without the `tzdata` package): the default still works there.
_FIXED_ZONES = {
    "UTC": 0, "Asia/Shanghai": 8, "Asia/Hong_Kong": 8, "Asia/Singapore": 8,
    "Asia/Tokyo": 9, "Asia/Seoul": 9, "Asia/Kolkata": 5.5,
}


@lru_cache(maxsize=1)
def _zones_by_folded_name() -> dict[str, str]:
    return {z.casefold(): z for z in available_timezones()}


def _try_zone(key: str | None) -> ZoneInfo | None:
    try:
        return ZoneInfo(key) if key else None
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None  # unknown, malformed, or a directory such as "Asia"


def _zone(name: str) -> tuple[dt_timezone | ZoneInfo, str]:
    """The tzinfo for an IANA name, and the name spelt canonically ('asia/tokyo' -> 'Asia/Tokyo')."""
    cleaned = name.strip()
    if zone := _try_zone(cleaned):
        return zone, cleaned
    # Only now build the case-insensitive index: it scans the whole timezone database.
    canonical = _zones_by_folded_name().get(cleaned.casefold())
    if zone := _try_zone(canonical):
        return zone, canonical
    fixed = {k.casefold(): k for k in _FIXED_ZONES}.get(cleaned.casefold())
    if fixed:
        return dt_timezone(timedelta(hours=_FIXED_ZONES[fixed])), fixed
    city = find_city(cleaned) if cleaned else None
    raise ValueError(t(
        f"unknown timezone {_quoted(name)}. Use an IANA timezone name such as Asia/Shanghai, "
        f"Europe/London, America/New_York or UTC." + (f" For {city.en} that is {city.tz}." if city else ""),
        f"未知的时区 {_quoted(name)}。请使用 IANA 时区名，例如 Asia/Shanghai、Europe/London、America/New_York 或 UTC。"
        + (f"{city.zh}的时区是 {city.tz}。" if city else "")))


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")  # not %A: no locale


@tool
def get_current_time(timezone: str = "Asia/Shanghai") -> str:
    """Get the current date and time, optionally in a given IANA timezone.

    Args:
        timezone: IANA timezone name, e.g. Asia/Shanghai, Europe/London, America/New_York.
    """
    if not isinstance(timezone, str):
        raise TypeError(t(f"timezone must be a string, got {type(timezone).__name__}",
                          f"timezone 必须是字符串，收到的是 {type(timezone).__name__}"))
    tzinfo, label = _zone(timezone)
    current = now()
    if current.tzinfo is None:
        current = current.replace(tzinfo=dt_timezone.utc)
    local = current.astimezone(tzinfo)  # the weekday too, in English whatever the locale: the result is data
    return f"{local:%Y-%m-%d %H:%M:%S} ({label}), {WEEKDAYS[local.weekday()]}"


# --- calculator ----------------------------------------------------------------------------

MAX_LENGTH = 500  # characters of input
MAX_DEPTH = 100  # nesting of the syntax tree (1+1+...+1 nests one level per '+')
MAX_DIGITS = 1_000  # digits of an integer result (checked as bits, so about 1,000)
_MAX_BITS = math.ceil(MAX_DIGITS * math.log2(10))
ALLOWED = "numbers, + - * / // % ** and parentheses"


class CalculatorError(ValueError):
    """The expression is not plain arithmetic, or its result would be unreasonable."""


def _refuse(what: str) -> CalculatorError:
    return CalculatorError(t(f"{what}. Use only {ALLOWED}.", f"{what}。只能使用数字、+ - * / // % ** 和括号。"))


_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY: dict[type, Callable[[float], float]] = {ast.UAdd: lambda a: +a, ast.USub: lambda a: -a}

_SYMBOLS = {ast.BitXor: "^", ast.BitAnd: "&", ast.BitOr: "|", ast.LShift: "<<", ast.RShift: ">>",
            ast.MatMult: "@", ast.Invert: "~", ast.Not: "not"}
_NOT_ALLOWED = {  # (English, Chinese)
    ast.Call: ("function calls are not allowed", "不允许调用函数"),
    ast.Subscript: ("subscripts (indexing) are not allowed", "不允许下标（索引）"),
    ast.Lambda: ("lambda functions are not allowed", "不允许 lambda 函数"),
    ast.ListComp: ("comprehensions are not allowed", "不允许推导式"),
    ast.SetComp: ("comprehensions are not allowed", "不允许推导式"),
    ast.DictComp: ("comprehensions are not allowed", "不允许推导式"),
    ast.GeneratorExp: ("comprehensions are not allowed", "不允许推导式"),
    ast.Compare: ("comparisons are not allowed", "不允许比较"),
    ast.BoolOp: ("'and' and 'or' are not allowed", "不允许 'and' 和 'or'"),
    ast.IfExp: ("conditional expressions are not allowed", "不允许条件表达式"),
    ast.NamedExpr: ("assignments are not allowed", "不允许赋值"),
    ast.JoinedStr: ("strings are not allowed", "不允许字符串"),
    ast.Tuple: ("tuples are not allowed (write 1024, not 1,024)", "不允许元组（请写 1024，不要写 1,024）"),
    ast.List: ("lists are not allowed", "不允许列表"),
    ast.Set: ("sets are not allowed", "不允许集合"),
    ast.Dict: ("dicts are not allowed", "不允许字典"),
}

# What people and models type for arithmetic, mapped to Python's spelling.
_TRANSLATE = str.maketrans({"×": "*", "÷": "/", "^": "**", "−": "-", "（": "(", "）": ")"})


def _refusal(node: ast.AST) -> str | None:
    """Why this node is not arithmetic, or None when it is allowed."""
    if isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp)) or type(node) in _BINARY or type(node) in _UNARY:
        return None
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return None
        kind = {str: ("strings", "字符串"), bytes: ("strings", "字符串"), bool: ("booleans", "布尔值"),
                complex: ("complex numbers", "复数")}.get(type(value))
        return (t(f"{kind[0]} are not allowed: {value!r}", f"不允许{kind[1]}：{value!r}") if kind
                else t(f"{value!r} is not allowed", f"不允许 {value!r}"))
    if isinstance(node, ast.Name):
        return t(f"names are not allowed: {node.id!r}", f"不允许名字：{node.id!r}")
    if isinstance(node, ast.Attribute):
        return t(f"attribute access is not allowed: '.{node.attr}'", f"不允许访问属性：'.{node.attr}'")
    if type(node) in _SYMBOLS:
        return t(f"the operator {_SYMBOLS[type(node)]!r} is not allowed", f"不允许运算符 {_SYMBOLS[type(node)]!r}")
    name = type(node).__name__
    return t(*_NOT_ALLOWED.get(type(node), (f"{name} expressions are not allowed", f"不允许 {name} 表达式")))


def _parse(expression: object) -> ast.Expression:
    """The syntax tree of an arithmetic expression, every node checked, or CalculatorError."""
    if not isinstance(expression, str):
        raise CalculatorError(t(f"the expression must be a string, got {type(expression).__name__}",
                                f"表达式必须是字符串，收到的是 {type(expression).__name__}"))
    if len(expression) > MAX_LENGTH:
        raise CalculatorError(t(f"the expression is {len(expression):,} characters long; the limit is {MAX_LENGTH}",
                                f"表达式长 {len(expression):,} 个字符，上限是 {MAX_LENGTH}"))
    text = expression.translate(_TRANSLATE).strip()
    if not text:
        raise CalculatorError(t("the expression is empty; give one such as (1024 + 768) * 2",
                                "表达式是空的；请给出一个，例如 (1024 + 768) * 2"))
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        detail = getattr(exc, "msg", None) or type(exc).__name__
        raise _refuse(t(f"not a valid arithmetic expression ({detail})", f"不是有效的算术表达式（{detail}）")) from None
    # Walk the tree iteratively (a deep tree must not overflow the stack of the check itself).
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise CalculatorError(t(f"the expression is nested more than {MAX_DEPTH} levels deep",
                                    f"表达式嵌套超过 {MAX_DEPTH} 层"))
        reason = _refusal(node)
        if reason:
            raise _refuse(reason)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return tree


def _brief(number: int) -> str:
    digits = str(number)
    size = f"{len(digits.lstrip('-')):,}"
    return digits if len(digits) <= 30 else t(f"(a {size}-digit number)", f"（一个 {size} 位数）")


def _check_power(base: float, exponent: float) -> None:
    """Refuse an integer power whose result would be too big, before computing it."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or abs(base) <= 1:
        return  # floats overflow quickly and cheaply; 0, 1 and -1 stay small
    if exponent < 0:
        return  # a negative exponent gives a float between -1 and 1
    # |base| >= 2, so the result has at least `exponent` bits; compare before multiplying.
    bits = exponent * math.log2(abs(base)) if exponent <= _MAX_BITS else math.inf
    if bits > _MAX_BITS:
        try:
            about = f"{exponent * math.log10(abs(base)):,.0f}"
        except OverflowError:  # the exponent itself is too big for a float
            about = None
        raise CalculatorError(t(f"{_brief(base)} ** {_brief(exponent)} would have "
                                f"{f'about {about}' if about else 'an astronomical number of'} digits; the limit is {MAX_DIGITS:,}",
                                f"{_brief(base)} ** {_brief(exponent)} 的结果会有{f'大约 {about} 位' if about else '天文数字般多的位数'}；"
                                f"上限是 {MAX_DIGITS:,} 位"))


def _check_result(value: object) -> float:
    if isinstance(value, complex):
        raise CalculatorError(t("the result is a complex number (e.g. a fractional power of a negative number)",
                                "结果是复数（例如负数的分数次方）"))
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError(t("the result is too large to represent", "结果太大，无法表示"))
    if isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise CalculatorError(t(f"the result has more than {MAX_DIGITS:,} digits", f"结果超过 {MAX_DIGITS:,} 位"))
    return value  # type: ignore[return-value]


def _evaluate(node: ast.AST) -> float:
    """Evaluate a checked tree. Its depth is bounded by MAX_DEPTH, so recursion is safe."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant):
        return _check_result(node.value)
    if isinstance(node, ast.UnaryOp):
        return _check_result(_UNARY[type(node.op)](_evaluate(node.operand)))
    assert isinstance(node, ast.BinOp)  # _parse allowed nothing else
    left, right = _evaluate(node.left), _evaluate(node.right)
    if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and right == 0:
        raise CalculatorError(t("division by zero", "除数为零"))
    if isinstance(node.op, ast.Pow):
        if left == 0 and right < 0:
            raise CalculatorError(t("0 cannot be raised to a negative power (that divides by zero)",
                                    "0 不能取负数次方（那等于除以零）"))
        _check_power(left, right)
    try:
        return _check_result(_BINARY[type(node.op)](left, right))
    except OverflowError:
        raise CalculatorError(t("the result is too large to represent", "结果太大，无法表示")) from None
    except ZeroDivisionError:
        raise CalculatorError(t("division by zero", "除数为零")) from None


def safe_eval(expression: str) -> int | float:
    """The value of an arithmetic expression, computed without eval; else CalculatorError.

    Allowed: int and float literals, + - * / // % **, unary + and -, parentheses.
    Also accepted: × and ÷ for * and /, and ^ for power. In Python ^ is bitwise
    XOR, but in calculators and in the questions people ask, 2^10 means a power,
    and XOR has no place in arithmetic, so reading ^ as ** is what the asker means.
    Limits, all checked before any work is done: MAX_LENGTH characters, MAX_DEPTH
    levels of nesting, MAX_DIGITS digits for an integer, finite floats.
    """
    return _evaluate(_parse(expression))


def format_number(value: int | float) -> str:
    """A result as a person would write it.

    Integers as they are; whole floats as integers (10 / 2 -> "5"); other floats
    rounded to 12 significant digits, which hides binary noise (0.1 + 0.2 ->
    "0.3") while keeping far more precision than any answer needs.
    """
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression (numbers, + - * / // % ** and parentheses) safely and return the result.

    Args:
        expression: The expression to evaluate, e.g. (1024 + 768) * 2.
    """
    return format_number(safe_eval(expression))


def default_tools() -> ToolRegistry:
    """A fresh registry with the demo's three tools (fresh, so callers can add their own)."""
    return ToolRegistry([get_weather, get_current_time, calculate])
