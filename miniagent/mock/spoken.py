"""Arithmetic and unit conversions as people say them, read into expressions the calculator takes.

`reading.expressions` finds the expressions written in symbols; this module finds the ones said
in words, in English and Chinese: "twelve times thirty-four", "12 乘以 34", "三加五", "2 的 10
次方", "square root of 144", "15% of 80", "80 的 15%", "百分之二十的 250", "299 打八折", and
conversions between units ("100 华氏度是多少摄氏度", "10 miles in km"), each written as a plain
Python expression ("12 * 34", "(100 - 32) * 5 / 9") that `builtin_tools.calculate` evaluates.

`view(text)` is the text as it is read: each character normalised by NFKC when that gives one
character (full-width brackets, digits and operators, the default of Chinese input methods,
become ASCII), × and ÷ made * and /. Positions stay those of the text.

Small tables and regular expressions, like the rest of the mock's reading: plausible and
predictable, not language understanding.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal
from functools import lru_cache


_SIGNS = {"×": "*", "✕": "*", "÷": "/", "−": "-", "–": "-"}


@lru_cache(maxsize=4096)
def _char(ch: str) -> str:
    if ch in _SIGNS:
        return _SIGNS[ch]
    norm = unicodedata.normalize("NFKC", ch)
    return norm if len(norm) == 1 else ch


def view(text: str) -> str:
    """The text with each character normalised (NFKC, when that is one character; × ÷ as * /): same length."""
    return "".join(_char(c) for c in text) if not text.isascii() else text


# --- numbers said in words ----------------------------------------------------------------------

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000}
_ZH_NUM = "[零〇一二两三四五六七八九十百千万]+"


def zh_number(text: str) -> int | None:
    """一千二百 -> 1200, 三十七 -> 37, 十二 -> 12, 两万 -> 20000; None when it is not a number."""
    total, section, digit = 0, 0, None
    for ch in text:
        if ch in _ZH_DIGITS:
            if digit is not None:  # two digits in a row (一二): not a number said this way
                return None
            digit = _ZH_DIGITS[ch]
        elif ch in _ZH_UNITS:
            section += (1 if digit is None else digit) * _ZH_UNITS[ch]
            digit = None
        elif ch == "万":
            total += (section + (digit or 0)) * 10_000
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


_EN_SMALL = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_EN_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_EN_SCALE = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_EN_WORD = "(?:" + "|".join(sorted([*_EN_SMALL, *_EN_TENS, *_EN_SCALE], key=len, reverse=True)) + ")"
_EN_NUM = rf"\b{_EN_WORD}(?:(?:[\s-]+|\s+and\s+){_EN_WORD})*\b"


def en_number(text: str) -> int | None:
    """twelve -> 12, thirty-four -> 34, one hundred and five -> 105; None when it is not a number."""
    total, current = 0, 0
    for word in re.split(r"[\s-]+", text.lower()):
        if word == "and":
            continue
        if word in _EN_SMALL:
            current += _EN_SMALL[word]
        elif word in _EN_TENS:
            current += _EN_TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word in _EN_SCALE:
            total += max(current, 1) * _EN_SCALE[word]
            current = 0
        else:
            return None
    return total + current


# A number as a question writes it: digits (1,299 with its thousands separators), Chinese or English words.
NUMBER = rf"(?:[$¥€£]\s*)?(?:\d{{1,3}}(?:,\d{{3}})+(?![\d,])(?:\.\d+)?|\d+(?:\.\d+)?|{_ZH_NUM}|{_EN_NUM})"


def number_value(text: str) -> str | None:
    """A number's digits as the calculator reads them ("1,299" -> "1299", "三十七" -> "37"), else None."""
    text = re.sub(r"^[$¥€£]\s*", "", text.strip())
    if re.fullmatch(r"[\d,]+(?:\.\d+)?", text):
        return text.replace(",", "")
    value = zh_number(text) if re.fullmatch(_ZH_NUM, text) else en_number(text)
    return None if value is None else str(value)


# --- operators said in words ---------------------------------------------------------------------

_OPERATORS = [  # (regex, Python operator); the ones said in words first
    (r"\s+(?:multiplied\s+by|times)\s+|\s*(?:乘以|乘上|乘)\s*|(?<=\d)\s*[xX]\s*(?=\d)", "*"),
    (r"\s+divided\s+by\s+|\s+over\s+(?=\d)|\s*除以\s*", "/"),
    (r"\s+plus\s+|\s*(?:加上|加)\s*", "+"),
    (r"\s+minus\s+|\s*(?:减去|减)\s*", "-"),
    (r"\s+(?:mod|modulo)\s+", "%"),
    (r"\s+(?:to\s+the\s+power\s+of|raised\s+to(?:\s+the\s+power\s+of)?)\s+", "**"),
    (r"\s*(?:\*\*|\^)\s*", "**"),
    (r"\s*[-+*/%]\s*", None),  # a symbol stands for itself
]
_OP = "|".join(f"(?:{rx})" for rx, _ in _OPERATORS)
_OPS = [(re.compile(rx, re.I), op) for rx, op in _OPERATORS]
_CHAIN = re.compile(rf"({NUMBER})((?:(?:{_OP})(?:{NUMBER}))+)", re.I)
_PIECE = re.compile(rf"({_OP})({NUMBER})", re.I)


def _operator(text: str) -> str:
    if text.strip().lower() == "x":
        return "*"
    for rx, op in _OPS:
        if rx.fullmatch(text):
            return op or text.strip()
    return text.strip()


def _chain(m: re.Match) -> tuple[str, bool] | None:
    """The expression of a matched chain ("12 乘以 34" -> "12 * 34"), and whether any of it was said in words."""
    first = number_value(m.group(1))
    if first is None:
        return None
    parts, worded = [first], first != m.group(1).strip()
    for piece in _PIECE.finditer(m.string, m.start(2), m.end(2)):
        value = number_value(piece.group(2))
        if value is None:
            return None
        op = _operator(piece.group(1))
        worded = worded or op != piece.group(1).strip() or value != piece.group(2).strip()
        parts += [op, value]
    return " ".join(parts), worded


_PERCENT = rf"(?:({NUMBER})\s*(?:%|\s+per\s*cent\b)|百分之\s*({NUMBER}))"
_FORMS = [  # (regex, how the groups make an expression); each group a number
    (rf"{_PERCENT}\s*(?:[a-z]+\s+)?(?:of|on)\s+(?:an?\s+|the\s+)?({NUMBER})", lambda p, q, n: f"{n} * {p or q} / 100"),
    (rf"({NUMBER})\s*(?:元|块钱?|欧元|美元)?\s*的\s*{_PERCENT}", lambda n, p, q: f"{n} * {p or q} / 100"),
    (rf"{_PERCENT}\s*的\s*({NUMBER})", lambda p, q, n: f"{n} * {p or q} / 100"),
    (rf"({NUMBER})\s*(?:元|块钱?)?\s*打\s*([一二三四五六七八九]|\d)([一二三四五六七八九五]|\d)?\s*折",
     lambda n, a, b: f"{n} * 0.{number_value(a)}{number_value(b) if b else ''}"),
    (rf"({NUMBER})\s*的\s*({NUMBER})\s*次(?:方|幂)", lambda a, b: f"{a} ** {b}"),
    (rf"(?:\bsquare\s+root\s+of|\bsqrt\s*(?:of\s*)?|√|根号)\s*({NUMBER})", lambda a: f"{a} ** 0.5"),
    (rf"({NUMBER})\s*(?:的)?\s*平方根", lambda a: f"{a} ** 0.5"),
    (rf"({NUMBER})\s*(?:squared\b|的\s*平方(?!根))", lambda a: f"{a} ** 2"),
    (rf"({NUMBER})\s*(?:cubed\b|的\s*立方(?!根))", lambda a: f"{a} ** 3"),
    (rf"\bdivide\s+({NUMBER})\s+by\s+({NUMBER})", lambda a, b: f"{a} / {b}"),
    (rf"\bmultiply\s+({NUMBER})\s+(?:by|and|with)\s+({NUMBER})", lambda a, b: f"{a} * {b}"),
    (rf"\bsubtract\s+({NUMBER})\s+from\s+({NUMBER})", lambda a, b: f"{b} - {a}"),
    (rf"\badd\s+({NUMBER})\s+(?:and|to)\s+({NUMBER})", lambda a, b: f"{a} + {b}"),
]
_FORM_RX = [(re.compile(rx, re.I), build) for rx, build in _FORMS]


def _form(m: re.Match, build) -> str | None:
    values = [None if g is None else number_value(g) for g in m.groups()]
    if any(v is None for v, g in zip(values, m.groups()) if g is not None):
        return None
    return build(*values)


# --- unit conversions -------------------------------------------------------------------------------

# unit -> (what it measures, its size in the base unit as an exact decimal string, the names it goes by)
UNITS = {
    "km": ("length", "1000", r"kilomet(?:er|re)s?|km|公里|千米"),
    "mile": ("length", "1609.344", r"miles?|英里"),
    "m": ("length", "1", r"met(?:er|re)s?|(?<![厘毫千])米"),
    "cm": ("length", "0.01", r"centimet(?:er|re)s?|cm|厘米"),
    "mm": ("length", "0.001", r"millimet(?:er|re)s?|mm|毫米"),
    "inch": ("length", "0.0254", r"inch(?:es)?|英寸"),
    "foot": ("length", "0.3048", r"feet|foot|ft|英尺"),
    "kg": ("mass", "1", r"kilograms?|kilos?|kgs?|公斤|千克"),
    "g": ("mass", "0.001", r"grams?|(?<![千])克"),
    "lb": ("mass", "0.45359237", r"pounds?|lbs?|磅"),
    "jin": ("mass", "0.5", r"(?<![公])斤"),
    "hour": ("time", "3600", r"hours?|hrs?|小时|钟头"),
    "minute": ("time", "60", r"minutes?|mins?|分钟"),
    "second": ("time", "1", r"seconds?|secs?|秒钟?"),
    "day": ("time", "86400", r"days?"),
    "week": ("time", "604800", r"weeks?"),
    "C": ("temperature", "", r"°\s*C|℃|celsius|centigrade|摄氏度?|(?-i:C)"),
    "F": ("temperature", "", r"°\s*F|℉|fahrenheit|华氏度?|(?-i:F)"),
}
_UNIT_RX = re.compile("|".join(rf"(?P<{k}>(?<![A-Za-z])(?:{names})(?![A-Za-z]))" for k, (_, _, names) in UNITS.items()),
                      re.I)
_AMOUNT = re.compile(rf"({NUMBER})\s*$", re.I)


def _conversion(value: str, source: str, target: str) -> str:
    if source == "F":
        return f"({value} - 32) * 5 / 9"
    if source == "C":
        return f"{value} * 9 / 5 + 32"
    a, b = Decimal(UNITS[source][1]), Decimal(UNITS[target][1])
    times, per = format((a / b).normalize(), "f"), format((b / a).normalize(), "f")
    return f"{value} * {times}" if len(times) <= len(per) else f"{value} / {per}"  # the exact one of the two


def conversions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, expression) of each conversion asked: an amount with a unit and another unit of the same
    kind in the same clause ("5 公里是多少英里", "how many pounds is 70 kg", "30 C in F")."""
    found = []
    for clause in re.finditer(r"[^,;?!，。；？！\n]+", text):
        units = [(m.start() + clause.start(), m.end() + clause.start(), m.lastgroup) for m in _UNIT_RX.finditer(clause.group())]
        for start, end, unit in units:
            amount = _AMOUNT.search(text[clause.start():start])
            if amount is None or (value := number_value(amount.group(1))) is None:
                continue
            kind = UNITS[unit][0]
            others = [(s, e, u) for s, e, u in units if u != unit and UNITS[u][0] == kind and (s, e) != (start, end)
                      and not (len(text[s:e].strip("°")) == 1 and text[s:e] not in "CF")]
            if not others:
                continue
            s, e, target = min(others, key=lambda o: abs(o[0] - start))
            found.append((clause.start() + amount.start(1), max(end, e), _conversion(value, unit, target)))
            break
    return found


def spoken(text: str) -> list[tuple[int, int, str]]:
    """(start, end, expression) of the arithmetic said in words in `text` (a `view`), and of conversions."""
    found: list[tuple[int, int, str]] = list(conversions(text))
    taken = lambda a, b: any(s < b and a < e for s, e, _ in found)
    for rx, build in _FORM_RX:
        for m in rx.finditer(text):
            if not taken(m.start(), m.end()) and (expr := _form(m, build)) is not None:
                found.append((m.start(), m.end(), expr))
    for m in _CHAIN.finditer(text):
        if taken(m.start(), m.end()):
            continue
        made = _chain(m)
        if made is not None and made[1]:  # a chain written only in symbols is read as written (reading.expressions)
            found.append((m.start(), m.end(), made[0]))
    return sorted(found)
