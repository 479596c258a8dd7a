"""Revision 0029 (contracts-v21.json): Claude on Bedrock is cached only from Bedrock's prompt
caching launch, and only for the models AWS lists.

Expected terms are what the sources in docs/contracts.md ("contracts-v21") state, written here
from those sources, not from the data file. Bedrock's prompt-caching page
(https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html): "generally
available with Claude 3.7 Sonnet, Claude 3.5 Haiku, Amazon Nova ..."; Claude 3.5 Sonnet v2's
caching kept only for the customers of the preview; no Claude 3 Opus, Claude 3 Sonnet or
Claude 3.5 Sonnet v1. The preview opened at re:Invent 2024 (2024-12-04 [U]) for Claude 3.5
Haiku and 3.5 Sonnet v2 (anthropics/anthropic-sdk-python issue #774, 2024-12-05 [S]); Claude
3.5 Haiku is priced with caching from then because openllmetry's recording of 2025-03-18
(test_invoke_model_cache_tokens.yaml) shows Bedrock caching it. General availability for Claude
3.7 Sonnet by 2025-04-02 (Portkey-AI/gateway issue #1022 and continuedev/continue pull request
#4948 of that day [S]). Prices: Bedrock's on-demand us-east-1 prices
(https://aws.amazon.com/bedrock/pricing/) as the stored versions had them: Claude 3 Opus
$15 / $75, Claude 3 Sonnet, 3.5 Sonnet and 3.7 Sonnet $3 / $15, Claude 3.5 Haiku $0.80 / $4
per MTok."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import CacheMode
from cachecast.core import db
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts, full_rows_across, full_version_rows

TODAY = dt.date(2026, 12, 5)
REVISION = "0029_seed_contracts_v21"

OPUS = "anthropic.claude-3-opus-20240229-v1:0"
SONNET_3 = "regional.anthropic.claude-3-sonnet-20240229-v1:0"
SONNET_35_V1 = "anthropic.claude-3-5-sonnet-20240620-v1:0"
SONNET_35_V2 = "anthropic.claude-3-5-sonnet-20241022-v2:0"
HAIKU_35 = "anthropic.claude-3-5-haiku-20241022-v1:0"
SONNET_37 = "anthropic.claude-3-7-sonnet-20250219-v1:0"


@pytest.mark.parametrize(
    ("name", "day", "mode", "prices"),
    [
        # Claude 3.7 Sonnet: no caching before general availability (by 2025-04-02).
        (SONNET_37, dt.date(2025, 3, 1), CacheMode.NONE, ("3", "15")),
        (SONNET_37, dt.date(2025, 4, 1), CacheMode.NONE, ("3", "15")),
        (SONNET_37, dt.date(2025, 4, 2), CacheMode.EXPLICIT, ("3", "15")),
        (
            "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            dt.date(2025, 3, 1),
            CacheMode.NONE,
            ("3", "15"),
        ),
        (
            "eu.anthropic.claude-3-7-sonnet-20250219-v1:0",
            dt.date(2025, 6, 1),
            CacheMode.EXPLICIT,
            ("3", "15"),
        ),
        # Claude 3.5 Haiku: no caching before the preview (2024-12-04), cached from then on.
        (HAIKU_35, dt.date(2024, 11, 15), CacheMode.NONE, ("0.8", "4")),
        (HAIKU_35, dt.date(2024, 12, 4), CacheMode.EXPLICIT, ("0.8", "4")),
        (HAIKU_35, dt.date(2025, 3, 18), CacheMode.EXPLICIT, ("0.8", "4")),
        (
            "us.anthropic.claude-3-5-haiku-20241022-v1:0",
            dt.date(2024, 11, 15),
            CacheMode.NONE,
            ("0.8", "4"),
        ),
        # 3.5 Sonnet v2: as 3.5 Haiku, none before the preview, cached from it (the page keeps
        # caching for the customers admitted to the preview).
        (SONNET_35_V2, dt.date(2024, 11, 15), CacheMode.NONE, ("3", "15")),
        (SONNET_35_V2, dt.date(2025, 6, 1), CacheMode.EXPLICIT, ("3", "15")),
        (
            "us.anthropic.claude-3-5-sonnet-20241022-v2:0",
            dt.date(2026, 1, 5),
            CacheMode.EXPLICIT,
            ("3", "15"),
        ),
        # Models the page does not list: never cached.
        (SONNET_35_V1, dt.date(2024, 9, 1), CacheMode.NONE, ("3", "15")),
        (SONNET_35_V1, dt.date(2025, 6, 1), CacheMode.NONE, ("3", "15")),
        (OPUS, dt.date(2024, 5, 1), CacheMode.NONE, ("15", "75")),
        (
            "eu.anthropic.claude-3-opus-20240229-v1:0",
            dt.date(2025, 6, 1),
            CacheMode.NONE,
            ("15", "75"),
        ),
        (SONNET_3, dt.date(2025, 6, 1), CacheMode.NONE, ("3", "15")),
        # The base id falls back to the regional contract (contracts/rules.py fallback_names).
        (
            "anthropic.claude-3-sonnet-20240229-v1:0",
            dt.date(2024, 3, 27),
            CacheMode.NONE,
            ("3", "15"),
        ),
        # Its cross-Region profiles were of mode none already (contracts-v20): consistent now.
        (
            "us.anthropic.claude-3-sonnet-20240229-v1:0",
            dt.date(2025, 6, 1),
            CacheMode.NONE,
            ("3", "15"),
        ),
    ],
)
def test_the_version_in_force(
    migrated_db_url: str, name: str, day: dt.date, mode: CacheMode, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("bedrock", name, day)
    assert terms.mode is mode
    assert (terms.input_per_mtok, terms.output_per_mtok) == tuple(Decimal(p) for p in prices)


def test_from_general_availability_the_stored_caching_terms_hold(migrated_db_url: str) -> None:
    # Bedrock Claude: 5-minute cache, writes 1.25x, reads 0.1x the input price (the page's
    # pricing pointer; LiteLLM's 3.75 write and 0.3 read for $3 input [S]).
    terms = ContractStore(migrated_db_url).as_of("bedrock", SONNET_37, dt.date(2025, 4, 2))
    assert terms.read_multiplier == Decimal("0.1")
    assert [(o.ttl_seconds, o.write_multiplier) for o in terms.ttl_options] == [
        (300, Decimal("1.25"))
    ]


def test_the_id_no_bedrock_model_has_is_gone(migrated_db_url: str) -> None:
    # Claude 3.7 Sonnet was released in February 2025; "20240620" is Claude 3.5 Sonnet's
    # snapshot date, so no Bedrock model had the id anthropic.claude-3-7-sonnet-20240620-v1:0.
    with pytest.raises(UnknownContractError):
        ContractStore(migrated_db_url).as_of(
            "bedrock", "anthropic.claude-3-7-sonnet-20240620-v1:0", dt.date(2025, 6, 1)
        )


@pytest.mark.parametrize("model", [OPUS, SONNET_3, SONNET_35_V1, SONNET_35_V2, HAIKU_35, SONNET_37])
def test_no_gap(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("bedrock", model), TODAY)
    assert summary.gaps == []


def test_a_bill_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # Claude 3.7 Sonnet on 2025-03-01 (no caching): 1,000 in x $3 / 1e6 = 0.003;
    # 100 out x $15 / 1e6 = 0.0015; total 0.0045.
    before = store.as_of("bedrock", SONNET_37, dt.date(2025, 3, 1))
    assert bill_of_counts(1_000, 100, before) == Decimal("0.0045")
    # Claude 3.5 Haiku on 2025-05-01, 800 of the 1,000 read from the cache: 200 x $0.80 / 1e6
    # = 0.00016; 800 x $0.08 / 1e6 = 0.000064; 100 x $4 / 1e6 = 0.0004; total 0.000624.
    after = store.as_of("bedrock", HAIKU_35, dt.date(2025, 5, 1))
    assert bill_of_counts(1_000, 100, after, cached=800) == Decimal("0.000624")


def test_the_round_trip_gives_back_the_deleted_rows_exactly(sqlite_url: str) -> None:
    previous, before, after = full_rows_across(sqlite_url, REVISION)
    removed = [(row[1], str(row[2]), row[15]) for row in before if row not in after]
    assert removed == [
        (HAIKU_35, "2024-10-22", "seed:contracts-v2"),
        (SONNET_35_V1, "2024-06-20", "seed:contracts-v2"),
        (SONNET_35_V2, "2024-10-22", "seed:contracts-v2"),
        ("anthropic.claude-3-7-sonnet-20240620-v1:0", "2024-06-20", "seed:contracts-v2"),
        (SONNET_37, "2025-02-19", "seed:contracts-v2"),
        (OPUS, "2024-02-29", "seed:contracts-v2"),
        (SONNET_3, "2024-02-29", "seed:contracts-v3"),
    ]
    assert {row[15] for row in after if row not in before} == {"seed:contracts-v21"}
    db.downgrade(sqlite_url, previous)
    assert full_version_rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        # LiteLLM 1.110.2 'azure_ai/grok-3' $3e-06 / $1.5e-05 per token and 'azure_ai/grok-3-mini'
        # $2.5e-07 / $1.27e-06, citing Azure's retail prices API
        # (https://prices.azure.com/api/retail/prices, 'Foundry Models', East US) [S].
        ("grok-3", ("3", "15")),
        ("grok-3-mini", ("0.25", "1.27")),
    ],
)
def test_azure_grok_3_from_build_2025_to_its_retirement(
    migrated_db_url: str, model: str, prices: tuple[str, str]
) -> None:
    store = ContractStore(migrated_db_url)
    # Announced and available at Microsoft Build 2025's opening, 2025-05-19 [S].
    terms = store.as_of("azure", model, dt.date(2025, 5, 19))
    assert terms.mode is CacheMode.NONE
    assert (terms.input_per_mtok, terms.output_per_mtok) == tuple(Decimal(p) for p in prices)
    with pytest.raises(ContractNotYetInForceError):
        store.as_of("azure", model, dt.date(2025, 5, 18))
    # Retired on Azure 2026-05-01 (LiteLLM's deprecation_date, citing
    # https://learn.microsoft.com/en-us/azure/foundry/concepts/model-lifecycle-retirement) [S].
    assert store.as_of("azure", model, dt.date(2026, 4, 30)).effective_to == dt.date(2026, 5, 1)
    summary = history_gaps(store.history("azure", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_an_azure_grok_3_mini_bill_by_hand(migrated_db_url: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("azure", "grok-3-mini", dt.date(2025, 9, 1))
    # 1,000 in x $0.25 / 1e6 = 0.00025; 100 out x $1.27 / 1e6 = 0.000127; total 0.000377.
    assert bill_of_counts(1_000, 100, terms) == Decimal("0.000377")
    # No cached-input price on Azure: 400 of the tokens reported cached cost the input price.
    assert bill_of_counts(1_000, 100, terms, cached=400) == Decimal("0.000377")
