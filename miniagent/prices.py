"""What a call cost: Anthropic's list prices, dated, and `cost(model, usage)`.

A trace counts tokens; a budget is in dollars. This table turns one into the other,
from the `usage` object every Messages API response carries:

    input_tokens                  tokens read at the base input price (cache reads and writes excluded)
    output_tokens                 tokens written (thinking included), at the output price
    cache_creation_input_tokens   tokens written to the prompt cache (5-minute price, the default
                                  TTL, unless `cache_creation` splits them into 5 m and 1 h)
    cache_read_input_tokens       tokens served from the cache, at the cache-hit price

Prices change, so the table says when it was read (PRICES_DATE) and where (SOURCE_URL),
and each row says what it rests on. A model the table does not hold costs None, never
a guess: an old price for a new model is a wrong number that looks right. A dated id
(`claude-haiku-4-5-20251001`) costs what its alias costs.

Not modelled (each changes a bill, none changes a lesson): the Batch API's 50 % discount,
US-only inference (`inference_geo: "us"`, 1.1x), fast mode, and server tools billed per
use (web search). Haiku 5.5 and Sonnet 4.5 are priced by the prompt's length (input plus
cache reads and writes): past the threshold, every token of that request costs the
higher rates, output included.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping

PRICES_DATE = "2026-11-30"  # the day these rows were read and cross-checked
SOURCE_URL = "https://platform.claude.com/docs/en/about-claude/pricing"  # docs.anthropic.com/... redirects here
CURRENCY = "USD"
PER = 1_000_000  # prices are per million tokens (MTok)


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `long`: (threshold, Price) for prompts longer than `threshold` tokens."""

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal
    long: tuple[int, "Price"] | None = None
    currency: str = CURRENCY  # the row's currency: "USD" (Anthropic's list prices) or "CNY" (a Chinese platform's)


def _p(input: str, output: str, write_5m: str, write_1h: str, read: str,
       long: tuple[int, Price] | None = None) -> Price:
    return Price(Decimal(input), Decimal(output), Decimal(write_5m), Decimal(write_1h), Decimal(read), long)


_FABLE_5_2 = _p("8", "40", "10", "16", "0.20")
_FABLE_5_1 = _p("10", "50", "12.50", "20", "0.25")
_FABLE_5 = _p("10", "50", "12.50", "20", "1")
_OPUS_5_5 = _p("4", "20", "5", "8", "0.20")
_OPUS_4_5_TO_5 = _p("5", "25", "6.25", "10", "0.50")
_SONNET_5_5 = _p("2", "10", "2.50", "4", "0.10")
_SONNET_5 = _p("2", "10", "2.50", "4", "0.20")
_SONNET_4 = _p("3", "15", "3.75", "6", "0.30")
_HAIKU_5_5 = _p("0.10", "0.50", "0.125", "0.20", "0.01",
                long=(100_000, _p("0.50", "2.50", "0.625", "1", "0.05")))
_HAIKU_4_5 = _p("1", "5", "1.25", "2", "0.10")

# Keyed by alias. "from:" says what each row rests on: "pricing page" is SOURCE_URL, "model page" a
# model's overview on the same site (platform.claude.com/docs/en/models/<model>/overview), "trackers"
# third-party price lists that follow the pricing page (used only where the copy we read was older).
PRICES: dict[str, Price] = {
    # from: trackers only, two agreeing (the pricing page we could read predates Fable 5.2, released
    # 2026-11-09): 8 / 40, 5m 10, 1h 16, read 0.20. Re-check against SOURCE_URL.
    "claude-fable-5-2": _FABLE_5_2,
    # from: pricing page (the Fable 5.1 and Mythos 5.1 rows: cache hits 0.025x input)
    "claude-fable-5-1": _FABLE_5_1,
    "claude-mythos-5-1": _FABLE_5_1,
    # from: pricing page (the Fable 5 and Mythos 5 rows)
    "claude-fable-5": _FABLE_5,
    "claude-mythos-5": _FABLE_5,
    # from: model page (Opus 5.5: 4 / 20, 5m 5, 1h 8, read 0.20)
    "claude-opus-5-5": _OPUS_5_5,
    # from: pricing page (Opus 5, 4.8, 4.7, 4.6 and 4.5 rows, all the same)
    "claude-opus-5": _OPUS_4_5_TO_5,
    "claude-opus-4-8": _OPUS_4_5_TO_5,
    "claude-opus-4-7": _OPUS_4_5_TO_5,
    "claude-opus-4-6": _OPUS_4_5_TO_5,
    "claude-opus-4-5": _OPUS_4_5_TO_5,
    # from: model page (2 / 10, 5m 2.50, 1h 4, read 0.20 at launch); trackers: read cut to 0.10 on 2026-10-07
    "claude-sonnet-5-5": _SONNET_5_5,
    # from: model page (Sonnet 5)
    "claude-sonnet-5": _SONNET_5,
    # from: trackers (3 / 15, 5m 3.75, 1h 6, read 0.30: the Sonnet 4 row of the pricing page)
    "claude-sonnet-4-6": _SONNET_4,
    # from: pricing page (Sonnet 4 / 4.5: 3 / 15 ...; over 200k prompt tokens, with the 1M-context
    # beta, input 6 and output 22.50, the cache prices following input). Retired 2026-11-30.
    "claude-sonnet-4-5": _p("3", "15", "3.75", "6", "0.30", long=(200_000, _p("6", "22.50", "7.50", "12", "0.60"))),
    # from: model page (input, output and cache writes, by prompt length: up to 100,000 tokens, and
    # over); trackers for cache reads (0.01, 0.05)
    "claude-haiku-5-5": _HAIKU_5_5,
    # from: model pages' comparison tables (1 / 5); trackers for the cache prices (1.25, 2, 0.10)
    "claude-haiku-4-5": _HAIKU_4_5,
}

class Amount(float):
    """A cost: a float (so sums and comparisons work as before) that says its currency."""

    currency: str = CURRENCY

    def __new__(cls, value: float, currency: str = CURRENCY) -> "Amount":
        amount = super().__new__(cls, value)
        amount.currency = currency
        return amount


def _cny(input: str, output: str, read: str, write: str | None = None) -> Price:
    """RMB per million tokens; a cache write costs the input price unless the platform bills it apart."""
    w = write or input
    return Price(Decimal(input), Decimal(output), Decimal(w), Decimal(w), Decimal(read), currency="CNY")


# Domestic models, in RMB (元 / 百万 tokens), each row on its maker's own platform, read 2026-12-02.
_DEEPSEEK_FLASH = _cny("2", "8", "0.04")
DOMESTIC_PRICES: dict[str, Price] = {
    # from: https://api-docs.deepseek.com/zh-cn/quick_start/pricing (高峰时段: 缓存命中 0.04, 未命中 2, 输出 8;
    # 空闲时段 half of that: Beijing weekdays 9-12 and 14-18 are peak). Priced at peak: an upper bound.
    # Cache writes are not billed apart (automatic caching); cache hits come as prompt_cache_hit_tokens.
    "deepseek-flash": _DEEPSEEK_FLASH,
    "deepseek-v4-flash": _DEEPSEEK_FLASH,  # "旧模型名 ... 按 Flash 价格计费"
    "deepseek-v4-pro": _cny("9", "27", "0.30"),
    # from: https://docs.bigmodel.cn/cn/guide/models/free/glm-4.7-flash (a free model) and
    # https://docs.bigmodel.cn/cn/guide/start/pricing (GLM-5.3: 8 / 28, 缓存命中 2; GLM-5.3-Flash list price
    # 0.8 / 2.8 / 0.23, its half-price offer ended 2026-09-09)
    "glm-4.7-flash": _cny("0", "0", "0"),
    "glm-5.3": _cny("8", "28", "2"),
    "glm-5.3-flash": _cny("0.8", "2.8", "0.23"),
    # from: https://platform.minimaxi.com/docs/guides/pricing-paygo (输入 2.1, 输出 8.4, 缓存读取 0.42, 缓存写入 2.625;
    # -highspeed 4.2 / 16.8). The international platform bills USD (not in this table).
    "MiniMax-M2.7": _cny("2.1", "8.4", "0.42", "2.625"),
    "MiniMax-M2.7-highspeed": _cny("4.2", "16.8", "0.42", "2.625"),
    # from: trackers only (two Chinese guides quoting Bailian's Beijing table: 0.8 / 2 for prompts up to 128K;
    # cache hits not stated there, priced here at the input price: an upper bound). Over 128K: not priced.
    "qwen-plus": Price(Decimal("0.8"), Decimal("2"), Decimal("0.8"), Decimal("0.8"), Decimal("0.8"),
                       long=(128_000, None), currency="CNY"),  # type: ignore[arg-type]
}
# Not priced (no RMB figure found on a page that could be read on 2026-12-02): Kimi (kimi-k2.6: Moonshot's
# pricing page was read without its table), Doubao (Ark's price page read only as an unrendered document),
# Qianfan's and SiliconFlow's hosted models.

# Not priced (cost() answers None): claude-mythos-5-2 (no published row found) and
# claude-mythos-preview (retired, invitation only).

_DATED = re.compile(r"^(?P<alias>.+?)-(?P<date>20\d{6})$")


def price_of(model: str) -> Price | None:
    """The row for `model`, an alias or a dated id (`claude-sonnet-4-5-20250929`); None if unknown."""
    if not isinstance(model, str):
        return None
    if model in PRICES:
        return PRICES[model]
    if model in DOMESTIC_PRICES:
        return DOMESTIC_PRICES[model]
    match = _DATED.match(model)
    return PRICES.get(match["alias"]) if match else None


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"usage[{key!r}] must be a whole number of tokens >= 0, got {value!r}")
    return value


def cost(model: str, usage: Mapping[str, Any]) -> Amount | None:
    """The list price of one response's `usage` on `model`, in the row's currency (the Amount says
    which: `.currency`, "USD" or "CNY"); None for a model the table lacks, or a prompt past the
    longest priced tier. `usage` may also be in the OpenAI format (prompt_tokens; DeepSeek's
    prompt_cache_hit_tokens and the OpenAI prompt_tokens_details.cached_tokens count as cache reads).

    Cache writes are split by TTL when the usage says how (`cache_creation`:
    `ephemeral_5m_input_tokens`, `ephemeral_1h_input_tokens`, as the API reports them);
    otherwise they are priced as 5-minute writes, the default TTL. Exact decimal arithmetic,
    one rounding at the end (to float). Summing a run? Sum the usages, or the costs: for a
    model priced by prompt length, only per-response costs are right.
    """
    price = price_of(model)
    if price is None:
        return None
    if "prompt_tokens" in usage and "input_tokens" not in usage:  # Chat Completions usage
        from miniagent.providers import from_openai_usage
        for key in ("prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens"):
            _count(usage, key)
        usage = from_openai_usage(dict(usage))
    fresh = _count(usage, "input_tokens")
    output = _count(usage, "output_tokens")
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    split = usage.get("cache_creation")
    if isinstance(split, Mapping):
        write_1h = _count(split, "ephemeral_1h_input_tokens")
        write_5m = _count(split, "ephemeral_5m_input_tokens")
        if write_1h + write_5m != written and written:  # disagreeing figures: trust the total, as 5 m
            write_1h, write_5m = 0, written
    else:
        write_1h, write_5m = 0, written
    currency = price.currency
    while price.long and fresh + read + write_5m + write_1h > price.long[0]:
        if price.long[1] is None:  # a tier no page we read prices: unknown, never a guess
            return None
        price = price.long[1]
    total = (fresh * price.input + output * price.output + read * price.cache_read
             + write_5m * price.cache_write_5m + write_1h * price.cache_write_1h)
    return Amount(float(total / PER), currency)
