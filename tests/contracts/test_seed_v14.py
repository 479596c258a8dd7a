"""Revision 0022 (contracts-v14.json): models that served long before their first stored version.

Expected terms are what the sources in docs/contracts.md ("contracts-v14") state, written here
from those sources, not from the data file: AWS's Nova prices and the April 2025 general
availability of Bedrock prompt caching (before it, no caching), Anthropic's list prices for
Claude on Vertex AI and Bedrock, DeepSeek's price lists of each generation, and the launch and
shutdown days those sources give."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore, ContractTerms
from cachecast.contracts.history import history_gaps
from cachecast.contracts.served import served_contract
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts

TODAY = dt.date(2026, 12, 5)

# Every contract contracts-v14 extends back, with the launch day lifecycle.json gives it.
NOVA_LAUNCH = dt.date(2024, 12, 3)
LAUNCHES = {
    ("bedrock", "amazon.nova-micro-v1:0"): NOVA_LAUNCH,
    ("bedrock", "amazon.nova-lite-v1:0"): NOVA_LAUNCH,
    ("bedrock", "amazon.nova-pro-v1:0"): NOVA_LAUNCH,
    ("bedrock", "apac.amazon.nova-micro-v1:0"): NOVA_LAUNCH,
    ("bedrock", "apac.amazon.nova-lite-v1:0"): NOVA_LAUNCH,
    ("bedrock", "apac.amazon.nova-pro-v1:0"): NOVA_LAUNCH,
    ("bedrock", "eu.amazon.nova-micro-v1:0"): NOVA_LAUNCH,
    ("bedrock", "eu.amazon.nova-lite-v1:0"): NOVA_LAUNCH,
    ("bedrock", "eu.amazon.nova-pro-v1:0"): NOVA_LAUNCH,
    ("bedrock", "amazon.nova-premier-v1:0"): dt.date(2025, 4, 30),
    ("vertex", "claude-3-haiku"): dt.date(2024, 3, 13),
    ("vertex", "claude-3-opus"): dt.date(2024, 3, 4),
    ("bedrock", "anthropic.claude-opus-4-6-v1"): dt.date(2026, 2, 5),
    ("bedrock", "us.anthropic.claude-opus-4-6-v1"): dt.date(2026, 2, 5),
    ("bedrock", "anthropic.claude-sonnet-4-6"): dt.date(2026, 2, 17),
    ("bedrock", "us.anthropic.claude-sonnet-4-6"): dt.date(2026, 2, 17),
    ("bedrock", "anthropic.claude-opus-4-7"): dt.date(2026, 4, 16),
    ("bedrock", "us.anthropic.claude-opus-4-7"): dt.date(2026, 4, 16),
    ("bedrock", "global.anthropic.claude-fable-5-2"): dt.date(2026, 11, 9),
    ("bedrock", "regional.anthropic.claude-fable-5-2"): dt.date(2026, 11, 9),
    ("vertex", "claude-opus-4-6"): dt.date(2026, 2, 5),
    ("vertex", "claude-sonnet-4-6"): dt.date(2026, 2, 17),
    ("vertex", "claude-opus-4-7"): dt.date(2026, 4, 16),
    ("vertex", "claude-fable-5-2"): dt.date(2026, 11, 9),
    ("xai", "grok-code-fast-1-0825"): dt.date(2025, 8, 26),
    ("deepseek", "deepseek-v3"): dt.date(2024, 12, 26),
    ("deepseek", "deepseek-r1"): dt.date(2025, 1, 20),
    ("deepseek", "deepseek-v3.1-terminus"): dt.date(2025, 9, 22),
    ("deepseek", "deepseek-v3.2"): dt.date(2025, 12, 1),
    ("deepseek", "deepseek-coder"): dt.date(2024, 8, 2),
    ("moonshot", "kimi-k2-thinking-turbo"): dt.date(2025, 11, 6),
    ("google", "gemini-flash-1.5"): dt.date(2024, 5, 30),
    ("google", "gemini-pro-1.5"): dt.date(2024, 5, 30),
    ("google", "gemini-flash-1.5-8b"): dt.date(2024, 10, 3),
    ("openai", "gpt-image-1"): dt.date(2025, 4, 23),
    ("vertex", "gemini-2.5-flash-preview-09-2025"): dt.date(2025, 9, 25),
    ("vertex", "gemini-2.5-flash-lite-preview-09-2025"): dt.date(2025, 9, 25),
    ("vertex", "gemini-3.1-pro-preview"): dt.date(2026, 2, 19),
    ("vertex", "gemini-3.1-flash-lite-preview"): dt.date(2026, 3, 3),
    ("moonshot", "kimi-k2.5"): dt.date(2026, 1, 27),
}


def _terms(url: str, key: str, day: dt.date) -> ContractTerms:
    provider, model = key.split(":", 1)
    return ContractStore(url).as_of(provider, model, day)


@pytest.mark.parametrize(
    ("key", "day", "prices"),
    [
        # AWS's on-demand Nova prices per MTok: "Nova Micro | $0.035 | $0.140", "Nova Lite |
        # $0.060 | $0.240", "Nova Pro | $0.800 | $3.200" ([S] pristren.com's copy of
        # https://aws.amazon.com/bedrock/pricing/). Before Bedrock prompt caching's general
        # availability (https://aws.amazon.com/about-aws/whats-new/2025/04/
        # amazon-bedrock-general-availability-prompt-caching/) there was no caching for general
        # use: the launch day and the day before general availability.
        ("bedrock:amazon.nova-micro-v1:0", dt.date(2024, 12, 3), ("0.035", "0.14")),
        ("bedrock:us.amazon.nova-lite-v1:0", dt.date(2025, 1, 15), ("0.06", "0.24")),
        ("bedrock:amazon.nova-pro-v1:0", dt.date(2025, 4, 6), ("0.8", "3.2")),
        # Claude 3 on Vertex AI before Anthropic's prompt caching of 2024-08-14, at Anthropic's
        # list prices ($0.25 / $1.25 and $15 / $75, https://www.anthropic.com/news/claude-3-family).
        # Vertex's caching page listed only the two Claude 3.5 models of 2024-10-22 before it
        # listed Claude 3 Haiku and Opus with Claude 3.7 Sonnet (Preview, 2025-02-24).
        ("vertex:claude-3-haiku", dt.date(2024, 3, 13), ("0.25", "1.25")),
        ("vertex:claude-3-haiku", dt.date(2024, 12, 1), ("0.25", "1.25")),
        ("vertex:claude-3-opus", dt.date(2025, 2, 23), ("15", "75")),
        # Vertex's ids carry the snapshot after an '@' (claude-3-haiku@20240307, as listed on
        # https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/use-claude).
        ("vertex:claude-3-haiku@20240307", dt.date(2024, 6, 1), ("0.25", "1.25")),
    ],
)
def test_days_before_caching_bill_every_prompt_token_at_the_input_price(
    migrated_db_url: str, key: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = _terms(migrated_db_url, key, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(prices[0]), Decimal(prices[1]))
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)
    assert terms.ttl_options == ()


@pytest.mark.parametrize(
    ("key", "day", "prices"),
    [
        ("bedrock:amazon.nova-pro-v1:0", dt.date(2025, 4, 7), ("0.8", "3.2")),
        ("bedrock:us.amazon.nova-micro-v1:0", dt.date(2026, 9, 30), ("0.035", "0.14")),
        # Nova Premier $2.50 / $12.50 (aicoach.pw's Nova Premier 1.0 listing [S]).
        ("bedrock:amazon.nova-premier-v1:0", dt.date(2025, 4, 30), ("2.5", "12.5")),
        # Premier ran in US regions only, through its us. inference profile.
        ("bedrock:us.amazon.nova-premier-v1:0", dt.date(2026, 1, 15), ("2.5", "12.5")),
    ],
)
def test_nova_caches_at_explicit_checkpoints_from_general_availability(
    migrated_db_url: str, key: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = _terms(migrated_db_url, key, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(prices[0]), Decimal(prices[1]))
    # AWS's table (Portkey's copy): "Amazon Nova Micro | amazon.nova-micro-v1:0 | 1,000 | 4 |
    # system, messages": explicit checkpoints, at most 4, 1,000 tokens each; a cache read of
    # Nova costs a quarter of the input price (75% off).
    assert terms.mode.value == "explicit"
    assert terms.min_cacheable_tokens == 1000
    assert terms.max_breakpoints == 4
    assert terms.read_multiplier == Decimal("0.25")


def test_nova_premier_ends_at_its_end_of_life(migrated_db_url: str) -> None:
    # The Bedrock model card: "Model EOL date: September 14, 2026".
    store = ContractStore(migrated_db_url)
    last = store.as_of("bedrock", "amazon.nova-premier-v1:0", dt.date(2026, 9, 13))
    assert last.effective_to == dt.date(2026, 9, 14)
    with pytest.raises(UnknownContractError, match="no contract version in force"):
        store.as_of("bedrock", "amazon.nova-premier-v1:0", dt.date(2026, 9, 14))


@pytest.mark.parametrize(
    ("key", "day", "prices", "read", "write"),
    [
        # Anthropic's pricing table: Haiku 3 $0.30 5m write, $0.03 hit (1.2x, 0.12x); Opus 3
        # $18.75 write, $1.50 hit (1.25x, 0.1x); Vertex "behaves as described in the Anthropic
        # documentation" (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/
        # claude-prompt-caching).
        ("vertex:claude-3-haiku", dt.date(2025, 2, 24), ("0.25", "1.25"), "0.12", "1.2"),
        ("vertex:claude-3-opus", dt.date(2025, 6, 1), ("15", "75"), "0.1", "1.25"),
        # The 4.6 and 4.7 models at Anthropic's $5 / $25 and $3 / $15 list prices, on Bedrock's
        # and Vertex's launch days (the Anthropic API launch).
        ("bedrock:anthropic.claude-opus-4-6-v1", dt.date(2026, 2, 5), ("5", "25"), "0.1", "1.25"),
        (
            "bedrock:global.anthropic.claude-sonnet-4-6",
            dt.date(2026, 3, 1),
            ("3", "15"),
            "0.1",
            "1.25",
        ),
        ("vertex:claude-opus-4-7", dt.date(2026, 4, 16), ("5", "25"), "0.1", "1.25"),
    ],
)
def test_cloud_claude_caches_as_anthropic_documents(
    migrated_db_url: str,
    key: str,
    day: dt.date,
    prices: tuple[str, str],
    read: str,
    write: str,
) -> None:
    terms = _terms(migrated_db_url, key, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(prices[0]), Decimal(prices[1]))
    assert terms.mode.value == "explicit"
    assert terms.read_multiplier == Decimal(read)
    assert terms.ttl_options[0].write_multiplier == Decimal(write)


def test_vertex_claude_caches_are_per_project(migrated_db_url: str) -> None:
    # "Caches are unique to your Google Cloud project" (Vertex's Claude caching page); Claude 3
    # Haiku's minimum is 2,048 tokens (Anthropic's caching page).
    terms = ContractStore(migrated_db_url).as_of("vertex", "claude-3-haiku", dt.date(2025, 6, 1))
    assert terms.scope == "project"
    assert terms.min_cacheable_tokens == 2048


@pytest.mark.parametrize(
    ("model", "day", "miss", "hit", "out"),
    [
        # DeepSeek-V3's launch promotion at the old prices until 2025-02-08 (news1226, the
        # pricing page): $0.14 miss, $0.014 hit, $0.28 out; then $0.27 / $0.07 / $1.10.
        ("deepseek-v3", dt.date(2025, 1, 10), "0.14", "0.014", "0.28"),
        ("deepseek-v3", dt.date(2025, 3, 1), "0.27", "0.07", "1.1"),
        # DeepSeek-R1 at release (news250120): $0.55 miss, $0.14 hit, $2.19 out.
        ("deepseek-r1", dt.date(2025, 1, 20), "0.55", "0.14", "2.19"),
        # V3.1-Terminus on 2025-09-22 at the V3.1 price list of 2025-09-05 (news250821):
        # $0.56 / $0.07 / $1.68; at the comparison endpoint from 2025-09-29 "with pricing
        # consistent with V3.2-Exp": $0.28 / $0.028 / $0.42.
        ("deepseek-v3.1-terminus", dt.date(2025, 9, 22), "0.56", "0.07", "1.68"),
        ("deepseek-v3.1-terminus", dt.date(2025, 10, 14), "0.28", "0.028", "0.42"),
        ("deepseek-v3.2", dt.date(2025, 12, 1), "0.28", "0.028", "0.42"),
        # deepseek-coder at deepseek-chat's price from caching's first day (news0802).
        ("deepseek-coder", dt.date(2024, 8, 2), "0.14", "0.014", "0.28"),
    ],
)
def test_deepseek_generations_at_their_price_lists(
    migrated_db_url: str, model: str, day: dt.date, miss: str, hit: str, out: str
) -> None:
    terms = ContractStore(migrated_db_url).as_of("deepseek", model, day)
    assert terms.input_per_mtok == Decimal(miss)
    assert terms.output_per_mtok == Decimal(out)
    # Hit prices that are no exact 10-place multiple of the miss price round to the page's.
    assert (terms.input_per_mtok * terms.read_multiplier).quantize(Decimal("0.001")) == Decimal(
        hit
    ).quantize(Decimal("0.001"))


def test_deepseek_v3_has_the_off_peak_discount(migrated_db_url: str) -> None:
    # news250226: from 16:30 to 00:30 UTC, V3 at $0.135 miss / $0.55 out.
    terms = ContractStore(migrated_db_url).as_of("deepseek", "deepseek-v3", dt.date(2025, 3, 1))
    assert terms.off_peak is not None
    assert (terms.off_peak.input_per_mtok, terms.off_peak.output_per_mtok) == (
        Decimal("0.135"),
        Decimal("0.55"),
    )


@pytest.mark.parametrize(
    ("model", "replaced"),
    [
        # https://api-docs.deepseek.com/updates: V3.1 replaced V3 and R1 on 2025-08-21; the
        # Terminus comparison endpoint lasted to 2025-10-15; V4 replaced V3.2 on 2026-04-24.
        ("deepseek-v3", dt.date(2025, 8, 21)),
        ("deepseek-r1", dt.date(2025, 8, 21)),
        ("deepseek-v3.1-terminus", dt.date(2025, 10, 15)),
        ("deepseek-v3.2", dt.date(2026, 4, 24)),
    ],
)
def test_a_deepseek_generation_is_not_priced_once_replaced(
    migrated_db_url: str, model: str, replaced: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("deepseek", model, replaced - dt.timedelta(days=1)).effective_to == replaced
    with pytest.raises(UnknownContractError, match="no contract version in force"):
        store.as_of("deepseek", model, replaced)


@pytest.mark.parametrize(
    ("key", "day", "prices"),
    [
        # grok-code-fast-1's dated id: $0.20 / $1.50, $0.02 cached ([S] techdevnotes.com).
        ("xai:grok-code-fast-1-0825", dt.date(2025, 8, 26), ("0.2", "1.5")),
        # Gemini 1.5 Flash from the cut of 2024-08-12: $0.075 / $0.30 (Gemini API pricing page).
        ("google:gemini-flash-1.5", dt.date(2024, 8, 12), ("0.075", "0.3")),
        # Gemini 1.5 Pro at its release price $3.50 / $10.50 ([S] bigbullcloud.com).
        ("google:gemini-pro-1.5", dt.date(2024, 6, 1), ("3.5", "10.5")),
        # gpt-image-1 at release: "$5 per million tokens of text input", "$40 per million
        # tokens of output" ([S] ainews.oracelum.com, April 2025).
        ("openai:gpt-image-1", dt.date(2025, 4, 23), ("5", "40")),
        # The September 2025 previews: "$0.30/M input tokens$2.50/M output tokens" and
        # "$0.10/M input tokens$0.40/M output tokens" (OpenRouter's pages [S], "Created Sep 25,
        # 2025").
        ("vertex:gemini-2.5-flash-preview-09-2025", dt.date(2025, 9, 25), ("0.3", "2.5")),
        ("vertex:gemini-2.5-flash-lite-preview-09-2025", dt.date(2025, 10, 1), ("0.1", "0.4")),
        # Kimi K2 Thinking Turbo $1.15 / $8 (genai-prices 0.2.3; a gateway's table [S]).
        ("moonshot:kimi-k2-thinking-turbo", dt.date(2025, 11, 6), ("1.15", "8")),
        # Kimi K2.5 "$0.10 / $0.60 / $3.00" (hit / miss / out, [S] hivebook.wiki).
        ("moonshot:kimi-k2.5", dt.date(2026, 1, 27), ("0.6", "3")),
    ],
)
def test_other_ids_from_launch(
    migrated_db_url: str, key: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = _terms(migrated_db_url, key, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(prices[0]), Decimal(prices[1]))


def test_gemini_flash_1_5_is_not_priced_after_the_shutdown(migrated_db_url: str) -> None:
    # gemini-1.5-flash shut down on 2025-09-24 (lifecycle of google/gemini-1.5-flash).
    with pytest.raises(UnknownContractError, match="no contract version in force"):
        ContractStore(migrated_db_url).as_of("google", "gemini-flash-1.5", dt.date(2025, 9, 24))


@pytest.mark.parametrize(("provider", "model"), sorted(LAUNCHES))
def test_priced_from_launch_without_a_gap(migrated_db_url: str, provider: str, model: str) -> None:
    store = ContractStore(migrated_db_url)
    summary = history_gaps(store.history(provider, model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1
    launch = LAUNCHES[(provider, model)]
    assert store.as_of(provider, model, launch).effective_from == launch


def test_a_request_before_the_nova_launch_is_one_error_naming_it(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(ContractNotYetInForceError, match="launched on 2024-12-03"):
        served_contract(store, "bedrock", "amazon.nova-lite-v1:0", dt.date(2024, 12, 2), TODAY)


def test_nova_bills_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # Nova Micro on 2025-01-15 (no caching): 1,000 in x $0.035 / 1e6 = 0.000035;
    # 100 out x $0.14 / 1e6 = 0.000014; total 0.000049.
    micro = store.as_of("bedrock", "us.amazon.nova-micro-v1:0", dt.date(2025, 1, 15))
    assert bill_of_counts(1_000, 100, micro) == Decimal("0.000049")
    # Nova Pro on 2025-05-01, 3,000 prompt tokens of which 2,000 read from a checkpoint:
    # 1,000 x $0.80 / 1e6 = 0.0008; 2,000 x $0.20 (a quarter of $0.80) / 1e6 = 0.0004;
    # 100 out x $3.20 / 1e6 = 0.00032; total 0.00152.
    pro = store.as_of("bedrock", "amazon.nova-pro-v1:0", dt.date(2025, 5, 1))
    assert bill_of_counts(3_000, 100, pro, cached=2_000) == Decimal("0.00152")
