"""miniagent.prices: list prices, dated, turned into the cost of one response's usage."""

import re
from datetime import date

import pytest

from miniagent import prices
from miniagent.clientcore import DEFAULT_MODEL
from miniagent.mock import models
from miniagent.prices import PRICES, PRICES_DATE, cost, price_of


def test_the_table_is_dated_and_says_where_it_comes_from():
    assert date.fromisoformat(PRICES_DATE) <= date.today()
    assert prices.SOURCE_URL.startswith("https://") and "pricing" in prices.SOURCE_URL


def test_known_model_exact_arithmetic():
    # Sonnet 5.5: $2 input, $10 output per MTok
    assert cost("claude-sonnet-5-5", {"input_tokens": 1_000_000, "output_tokens": 1_000_000}) == 12.0
    assert cost("claude-sonnet-5-5", {"input_tokens": 1234, "output_tokens": 567}) == 0.008138  # 0.002468 + 0.00567
    assert cost("claude-opus-4-8", {"input_tokens": 3, "output_tokens": 7}) == 0.00019  # 15e-6 + 175e-6


def test_cache_reads_and_writes():
    usage = {"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 2000,
             "cache_read_input_tokens": 10_000}
    # Opus 4.8: input 5, output 25, 5m write 6.25, read 0.50
    assert cost("claude-opus-4-8", usage) == 0.01925  # 0.0005 + 0.00125 + 0.0125 + 0.005
    # the API's split of cache writes by TTL: 1 h writes cost 2x input
    split = {**usage, "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1500}}
    assert cost("claude-opus-4-8", split) == 0.024875  # 0.0005 + 0.00125 + 0.003125 + 0.015 + 0.005


def test_a_missing_or_null_count_is_zero_and_a_bad_one_is_refused():
    assert cost("claude-haiku-4-5", {}) == 0.0
    assert cost("claude-haiku-4-5", {"input_tokens": 10, "cache_read_input_tokens": None}) == 0.00001
    with pytest.raises(ValueError, match="input_tokens"):
        cost("claude-haiku-4-5", {"input_tokens": -1})
    with pytest.raises(ValueError, match="output_tokens"):
        cost("claude-haiku-4-5", {"output_tokens": "12"})


def test_unknown_model_is_none_never_a_guess():
    assert cost("claude-sonnet-9-9", {"input_tokens": 10}) is None
    assert cost("gpt-5-mini", {"input_tokens": 10}) is None
    assert cost("claude-mythos-5-2", {"input_tokens": 10}) is None  # no published row found
    assert price_of("") is None and price_of(None) is None  # type: ignore[arg-type]


def test_dated_id_resolves_to_its_alias():
    assert price_of("claude-sonnet-4-5-20250929") is PRICES["claude-sonnet-4-5"]
    assert price_of("claude-haiku-4-5-20251001") is PRICES["claude-haiku-4-5"]
    assert cost("claude-opus-4-5-20251101", {"output_tokens": 1000}) == cost("claude-opus-4-5", {"output_tokens": 1000})
    assert price_of("claude-sonnet-4-5-2025") is None  # not a date suffix


def test_priced_by_prompt_length():
    # Haiku 5.5: up to 100,000 prompt tokens 0.10 / 0.50; over, 0.50 / 2.50 on every token, output included
    assert cost("claude-haiku-5-5", {"input_tokens": 100_000, "output_tokens": 1000}) == 0.0105
    assert cost("claude-haiku-5-5", {"input_tokens": 60_000, "cache_read_input_tokens": 40_001,
                                     "output_tokens": 1000}) == 0.03450005  # 0.03 + 0.00200005 + 0.0025


def test_the_default_model_and_the_current_catalog_are_priced():
    assert price_of(DEFAULT_MODEL) is not None
    unpriced = {m["id"] for m in models.MODELS if price_of(m["id"]) is None}
    assert unpriced <= {"claude-mythos-5-2"}, unpriced
    for name, price in PRICES.items():
        assert re.fullmatch(r"claude-[a-z]+-\d+(-\d+)?", name)
        assert price.cache_read < price.input < price.cache_write_5m < price.cache_write_1h
        assert price.input < price.output


def test_domestic_models_are_priced_in_rmb_and_say_so():
    # DeepSeek flash at peak: miss 2, hit 0.04, output 8 (RMB per MTok)
    spent = cost("deepseek-flash", {"input_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000,
                                    "output_tokens": 1_000_000})
    assert spent == 10.04 and spent.currency == "CNY"
    assert cost("claude-sonnet-5-5", {"input_tokens": 1}).currency == "USD"
    assert cost("glm-4.7-flash", {"input_tokens": 10**6, "output_tokens": 10**6}) == 0.0  # free
    assert cost("MiniMax-M2.7", {"cache_creation_input_tokens": 10**6}) == 2.625
    assert cost("qwen-plus", {"input_tokens": 128_001}) is None  # past the priced tier: unknown


def test_deepseek_cache_hits_in_its_own_usage_fields_cost_the_hit_rate():
    raw = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "prompt_cache_hit_tokens": 750_000,
           "prompt_cache_miss_tokens": 250_000}
    assert cost("deepseek-flash", raw) == 0.53  # 0.25 * 2 + 0.75 * 0.04
    assert cost("deepseek-flash", raw) < cost("deepseek-flash", {"input_tokens": 1_000_000})
    with pytest.raises(ValueError, match="prompt_cache_hit_tokens"):
        cost("deepseek-flash", {**raw, "prompt_cache_hit_tokens": -1})
