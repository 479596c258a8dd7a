"""One usage normalization for every provider shape (cachecast.logs.usage). Each case is a
usage object as the provider's or tool's reference documents it, with the normalized
figures worked out by hand from that documentation's convention."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from cachecast.core.errors import RecordFieldError
from cachecast.logs.usage import (
    canonical_observed,
    detect_convention,
    normalize_usage,
    observed_usage,
    to_canonical,
)
from cachecast.tokenizers.types import ObservedUsage

CASES: list[tuple[str, dict[str, Any], str | None, tuple[Any, ...]]] = [
    # (convention, usage, api, (input incl. cached, read, write, by TTL, output))
    (
        "openai-chat",  # prompt_tokens includes cached_tokens; completion includes reasoning
        {
            "prompt_tokens": 2_006,
            "completion_tokens": 300,
            "prompt_tokens_details": {"cached_tokens": 1_920},
            "completion_tokens_details": {"reasoning_tokens": 256},
        },
        None,
        (2_006, 1_920, None, {}, 300),
    ),
    (
        "openai-responses",
        {
            "input_tokens": 5_000,
            "output_tokens": 90,
            "input_tokens_details": {"cached_tokens": 4_096},
        },
        "responses",
        (5_000, 4_096, None, {}, 90),
    ),
    (
        "anthropic",  # input_tokens excludes reads and writes; the writes split by TTL
        {
            "input_tokens": 50,
            "cache_creation_input_tokens": 2_000,
            "cache_read_input_tokens": 10_000,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 500,
                "ephemeral_1h_input_tokens": 1_500,
            },
            "output_tokens": 400,
        },
        "anthropic",
        (12_050, 10_000, 2_000, {"5m": 500, "1h": 1_500}, 400),
    ),
    (
        "anthropic",  # no split: the writes are the default 5-minute TTL
        {"input_tokens": 4, "cache_creation_input_tokens": 1_163, "output_tokens": 9},
        None,
        (1_167, None, 1_163, {"5m": 1_163}, 9),  # no read field: not reported, not 0
    ),
    (
        "bedrock",  # Converse: inputTokens excludes cache reads and writes
        {
            "inputTokens": 100,
            "outputTokens": 20,
            "totalTokens": 3_620,
            "cacheReadInputTokens": 3_000,
            "cacheWriteInputTokens": 500,
        },
        "bedrock",
        (3_600, 3_000, 500, {"5m": 500}, 20),
    ),
    (
        "gemini",  # promptTokenCount includes cachedContentTokenCount; thoughts are output
        {
            "promptTokenCount": 9_000,
            "cachedContentTokenCount": 8_192,
            "candidatesTokenCount": 150,
            "thoughtsTokenCount": 1_024,
            "totalTokenCount": 10_174,
        },
        "gemini",
        (9_000, 8_192, None, {}, 1_174),
    ),
    (
        "deepseek",  # prompt_tokens = hit + miss
        {
            "prompt_tokens": 1_000,
            "prompt_cache_hit_tokens": 640,
            "prompt_cache_miss_tokens": 360,
            "completion_tokens": 7,
        },
        None,
        (1_000, 640, None, {}, 7),
    ),
    (
        "otel",  # gen_ai.usage.input_tokens includes cached tokens
        {
            "gen_ai.usage.input_tokens": 412,
            "gen_ai.usage.cache_read.input_tokens": 256,
            "gen_ai.usage.cache_creation.input_tokens": 100,
            "gen_ai.usage.output_tokens": 27,
        },
        None,
        (412, 256, 100, {}, 27),
    ),
    (
        "otel",  # the deprecated names
        {
            "gen_ai.usage.prompt_tokens": 300,
            "gen_ai.usage.completion_tokens": 5,
            "gen_ai.usage.cache_read_input_tokens": 200,
        },
        None,
        (300, 200, None, {}, 5),
    ),
    (
        "openinference",
        {
            "llm.token_count.prompt": 36,
            "llm.token_count.completion": 75,
            "llm.token_count.prompt_details.cache_read": 35,
        },
        None,
        (36, 35, None, {}, 75),
    ),
    (
        "langchain",  # usage_metadata: input_tokens is the sum of all input types
        {
            "input_tokens": 1_350,
            "output_tokens": 40,
            "input_token_details": {
                "cache_read": 1_000,
                "cache_creation": 300,
                "ephemeral_5m_input_tokens": 300,
            },
        },
        None,
        (1_350, 1_000, 300, {"5m": 300}, 40),
    ),
    (
        "codex",  # cached_input_tokens and reasoning_output_tokens are subsets
        {
            "input_tokens": 34_469,
            "cached_input_tokens": 3_456,
            "output_tokens": 431,
            "reasoning_output_tokens": 264,
        },
        None,
        (34_469, 3_456, None, {}, 431),
    ),
    (
        "langfuse",  # disjoint usage types: input is uncached only
        {
            "input": 179,
            "input_cache_read": 820,
            "output": 35,
            "output_reasoning": 64,
            "total": 1_098,
        },
        None,
        (999, 820, 0, {}, 99),
    ),
    (
        "openai-chat",  # LiteLLM: prompt_tokens already counts the Anthropic cache fields
        {
            "prompt_tokens": 1_510,
            "completion_tokens": 20,
            "cache_read_input_tokens": 1_500,
            "cache_creation_input_tokens": 0,
        },
        None,
        (1_510, 1_500, 0, {}, 20),
    ),
]


@pytest.mark.parametrize(("convention", "usage", "api", "expected"), CASES)
def test_each_convention(
    convention: str, usage: dict[str, Any], api: str | None, expected: tuple[Any, ...]
) -> None:
    assert detect_convention(usage, api) == convention
    observed = normalize_usage(usage, api=api)
    assert (
        observed.input_tokens,
        observed.cache_read_tokens,
        observed.cache_write_tokens,
        observed.cache_write_by_ttl,
        observed.output_tokens,
    ) == expected
    assert canonical_observed(to_canonical(observed)) == observed  # the round trip


def test_langfuse_total_decides_between_disjoint_and_details() -> None:
    # OpenInference-style keys whose total is input + output: they are details inside.
    subset = {"input": 85, "output": 29, "total": 114, "prompt_details.cache_read": 64}
    observed = normalize_usage(subset, convention="langfuse")
    assert (observed.input_tokens, observed.cache_read_tokens, observed.output_tokens) == (
        85,
        64,
        29,
    )
    with pytest.raises(RecordFieldError, match="the keys' meaning is ambiguous"):
        normalize_usage({"input": 1, "output": 1, "total": 7}, convention="langfuse")


def test_openrouter_cost_is_kept_exactly() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.00123, "is_byok": False}
    assert normalize_usage(usage).cost == Decimal("0.00123")
    # A cost is optional: a negative one is left out and named, the counts still read.
    negative = normalize_usage({**usage, "cost": -1})
    assert (negative.input_tokens, negative.cost) == (12, None)
    assert negative.ignored == ("usage.cost: expected a non-negative amount, got -1",)


def test_bedrock_cache_details_split_by_ttl() -> None:
    usage = {
        "inputTokens": 20,
        "outputTokens": 5,
        "cacheWriteInputTokens": 3_000,
        "cacheDetails": [{"ttl": "1h", "inputTokens": 2_000}, {"ttl": "5m", "inputTokens": 1_000}],
    }
    observed = normalize_usage(usage)
    assert observed.cache_write_by_ttl == {"1h": 2_000, "5m": 1_000}
    assert observed.input_tokens == 3_020


def test_records_find_usage_in_every_wrapper_place() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 2}
    for record in (
        {"usage": usage},
        {"response": {"usage": usage}},
        {"response": {"body": {"usage": usage}}},  # an OpenAI batch output line
    ):
        observed = observed_usage(record, "chat")
        assert observed is not None and observed.input_tokens == 10
    gemini = {"response": {"usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1}}}
    assert observed_usage(gemini, "gemini") == ObservedUsage(9, 0, None, {}, 1)
    assert observed_usage({"usage": {}}, "chat") is None
    canonical = {"observed": {"input_tokens": 10, "cache_read_tokens": 4}, "usage": usage}
    assert observed_usage(canonical, "chat") == ObservedUsage(10, 4)  # observed wins


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ({"prompt_tokens": -1}, "usage.prompt_tokens: expected a non-negative integer"),
        ({"prompt_tokens": 2.5}, "usage.prompt_tokens: expected a non-negative integer"),
        ({"prompt_tokens": True}, "usage.prompt_tokens: expected a non-negative integer"),
        ({"foo": 1}, "no usage counts found"),
        ({"inputTokens": 1, "cacheDetails": [{"inputTokens": 3}]}, "usage.cacheDetails[0].ttl"),
    ],
)
def test_malformed_usage_names_the_field(usage: dict[str, Any], message: str) -> None:
    with pytest.raises(RecordFieldError, match=message.replace("[", r"\[").replace("]", r"\]")):
        normalize_usage(usage)


def test_contradictory_usage_is_kept_and_flagged() -> None:
    # 11 cached of a 10-token prompt: the parts exceed the whole. Kept as reported, named.
    usage = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}}
    observed = normalize_usage(usage, path="response.body.usage")
    assert (observed.input_tokens, observed.cache_read_tokens) == (10, 11)
    assert observed.contradiction == (
        "response.body.usage: cache read 11 + write 0 exceed the input of 10 tokens"
    )
    # The flag survives the canonical form the adapters write.
    assert canonical_observed(to_canonical(observed)) == observed
    # A canonical record without the flag is still refused (a producer's mistake).
    with pytest.raises(RecordFieldError, match="exceed the input"):
        canonical_observed({"input_tokens": 10, "cache_read_tokens": 11})


def test_canonical_observed_is_checked() -> None:
    with pytest.raises(RecordFieldError, match=r"observed\.tokens: unknown key"):
        canonical_observed({"tokens": 5})
    with pytest.raises(
        RecordFieldError, match=r"observed\.cache_write_by_ttl\.1h: expected a non-negative"
    ):
        canonical_observed({"cache_write_by_ttl": {"1h": "x"}})
    assert canonical_observed({"output_tokens": 2.0}).output_tokens == 2  # an integral float
