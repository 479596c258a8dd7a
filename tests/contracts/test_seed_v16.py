"""Revision 0024 (contracts-v16.json): Bedrock base models that public recordings name (Claude
3 Haiku, Mistral AI, AI21 Jamba 1.5, Cohere Command, Amazon Titan Text), priced from their
Bedrock launch without caching.

Expected terms are what the sources in docs/contracts.md ("contracts-v16") state, written here
from those sources, not from the data file: AWS's on-demand us-east-1 prices as LiteLLM 1.110.2
and genai-prices 0.2.3 list them (https://aws.amazon.com/bedrock/pricing/) [S]; launch and end
of life days from Bedrock's model cards and model-lifecycle page
(https://docs.aws.amazon.com/bedrock/latest/userguide/model-lifecycle.html) or the map's
deprecation_date [S]; no caching because Bedrock's prompt-caching page lists none of these
models (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts, seed_round_trip

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("name", "day", "model", "prices"),
    [
        # The recordings' ids on their dates. Claude 3 Haiku on Bedrock: $0.25 / $1.25 per MTok
        # (genai-prices 0.2.3 'regional.anthropic.claude-3-haiku-20240307-v1:0').
        (
            "anthropic.claude-3-haiku-20240307-v1:0",
            dt.date(2025, 6, 10),
            "regional.anthropic.claude-3-haiku-20240307-v1:0",
            ("0.25", "1.25"),
        ),
        # The us. cross-Region profile bills the source Region's price ("There's no additional
        # charge for using cross-region inference", https://aws.amazon.com/bedrock/pricing/).
        (
            "us.anthropic.claude-3-haiku-20240307-v1:0",
            dt.date(2025, 6, 10),
            "regional.anthropic.claude-3-haiku-20240307-v1:0",
            ("0.25", "1.25"),
        ),
        # Mistral 7B Instruct $0.15 / $0.20 (LiteLLM, source: Bedrock's Mistral 7B model card).
        (
            "mistral.mistral-7b-instruct-v0:2",
            dt.date(2025, 7, 18),
            "regional.mistral.mistral-7b-instruct-v0:2",
            ("0.15", "0.2"),
        ),
        # Jamba 1.5 Mini $0.20 / $0.40 (LiteLLM, source: Bedrock's Jamba 1.5 Mini model card).
        (
            "ai21.jamba-1-5-mini-v1:0",
            dt.date(2025, 7, 29),
            "regional.ai21.jamba-1-5-mini-v1:0",
            ("0.2", "0.4"),
        ),
        # Cohere Command (text) $1 / $2 (LiteLLM 'cohere.command-text-v14').
        (
            "cohere.command-text-v14",
            dt.date(2025, 7, 29),
            "regional.cohere.command-text-v14",
            ("1", "2"),
        ),
        # Titan Text Express $0.20 / $0.60 (LiteLLM, genai-prices 'amazon.titan-text-express-v1').
        (
            "amazon.titan-text-express-v1",
            dt.date(2025, 7, 29),
            "regional.amazon.titan-text-express-v1",
            ("0.2", "0.6"),
        ),
        # Siblings: Mixtral 8x7B $0.45 / $0.70; Mistral Large 24.02 $4 / $12, 24.07 $2 / $6;
        # Mistral Small 24.02 $1 / $3; Jamba 1.5 Large $2 / $8; Command Light $0.30 / $0.60;
        # Titan Text Lite $0.15 / $0.20, Premier $0.50 / $1.50.
        (
            "mistral.mixtral-8x7b-instruct-v0:1",
            dt.date(2024, 6, 1),
            "regional.mistral.mixtral-8x7b-instruct-v0:1",
            ("0.45", "0.7"),
        ),
        (
            "mistral.mistral-large-2402-v1:0",
            dt.date(2024, 6, 1),
            "regional.mistral.mistral-large-2402-v1:0",
            ("4", "12"),
        ),
        (
            "mistral.mistral-large-2407-v1:0",
            dt.date(2025, 1, 15),
            "regional.mistral.mistral-large-2407-v1:0",
            ("2", "6"),
        ),
        (
            "mistral.mistral-small-2402-v1:0",
            dt.date(2025, 1, 15),
            "regional.mistral.mistral-small-2402-v1:0",
            ("1", "3"),
        ),
        (
            "ai21.jamba-1-5-large-v1:0",
            dt.date(2025, 1, 15),
            "regional.ai21.jamba-1-5-large-v1:0",
            ("2", "8"),
        ),
        (
            "cohere.command-light-text-v14",
            dt.date(2024, 6, 1),
            "regional.cohere.command-light-text-v14",
            ("0.3", "0.6"),
        ),
        (
            "amazon.titan-text-lite-v1",
            dt.date(2024, 6, 1),
            "regional.amazon.titan-text-lite-v1",
            ("0.15", "0.2"),
        ),
        (
            "amazon.titan-text-premier-v1:0",
            dt.date(2024, 6, 1),
            "regional.amazon.titan-text-premier-v1:0",
            ("0.5", "1.5"),
        ),
        # Other Bedrock base ids of the price maps (LiteLLM 1.110.2): DeepSeek-R1 $1.35 / $5.40
        # (its us. profile the same), Llama 4 Maverick $0.24 / $0.97 and Scout $0.17 / $0.66,
        # gpt-oss-120b $0.15 / $0.60 and gpt-oss-20b $0.07 / $0.30 (AWS's price list).
        ("us.deepseek.r1-v1:0", dt.date(2025, 9, 1), "regional.deepseek.r1-v1:0", ("1.35", "5.4")),
        (
            "us.meta.llama4-maverick-17b-instruct-v1:0",
            dt.date(2025, 9, 1),
            "regional.meta.llama4-maverick-17b-instruct-v1:0",
            ("0.24", "0.97"),
        ),
        (
            "meta.llama4-scout-17b-instruct-v1:0",
            dt.date(2025, 9, 1),
            "regional.meta.llama4-scout-17b-instruct-v1:0",
            ("0.17", "0.66"),
        ),
        (
            "openai.gpt-oss-120b-1:0",
            dt.date(2025, 9, 1),
            "regional.openai.gpt-oss-120b-1:0",
            ("0.15", "0.6"),
        ),
        (
            "openai.gpt-oss-20b-1:0",
            dt.date(2025, 9, 1),
            "regional.openai.gpt-oss-20b-1:0",
            ("0.07", "0.3"),
        ),
        # An ARN naming the base model is the base model.
        (
            "arn:aws:bedrock:us-east-1::foundation-model/mistral.mistral-7b-instruct-v0:2",
            dt.date(2025, 7, 18),
            "regional.mistral.mistral-7b-instruct-v0:2",
            ("0.15", "0.2"),
        ),
    ],
)
def test_prices_the_sources_state_without_caching(
    migrated_db_url: str, name: str, day: dt.date, model: str, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("bedrock", name, day)
    assert terms.model == model
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # Bedrock's prompt-caching page lists none of these models.
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)


@pytest.mark.parametrize(
    ("name", "day"),
    [
        # Claude 3 Haiku's Bedrock card: "Model EOL date: September 10, 2026".
        ("anthropic.claude-3-haiku-20240307-v1:0", dt.date(2026, 9, 10)),
        ("anthropic.claude-3-haiku-20240307-v1:0", TODAY),
        # Jamba 1.5 ends on the map's deprecation_date, 2026-11-26 [S].
        ("ai21.jamba-1-5-mini-v1:0", dt.date(2026, 11, 26)),
        # Mistral 7B Instruct ends on the map's deprecation_date, 2027-03-30 [S].
        ("mistral.mistral-7b-instruct-v0:2", dt.date(2027, 3, 30)),
    ],
)
def test_after_end_of_life_nothing_is_in_force(
    migrated_db_url: str, name: str, day: dt.date
) -> None:
    with pytest.raises(UnknownContractError):
        ContractStore(migrated_db_url).as_of("bedrock", name, day)


def test_the_day_before_end_of_life_is_priced(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    last = store.as_of("bedrock", "anthropic.claude-3-haiku-20240307-v1:0", dt.date(2026, 9, 9))
    assert last.input_per_mtok == Decimal("0.25")


def test_before_launch_is_refused_with_the_launch_day(migrated_db_url: str) -> None:
    # Claude 3 Haiku's Bedrock card: "Model launch date: Mar 13, 2024".
    with pytest.raises(ContractNotYetInForceError, match="2024-03-13"):
        ContractStore(migrated_db_url).as_of(
            "bedrock", "anthropic.claude-3-haiku-20240307-v1:0", dt.date(2024, 3, 12)
        )


TOUCHED = [
    "regional.anthropic.claude-3-haiku-20240307-v1:0",
    "regional.mistral.mistral-7b-instruct-v0:2",
    "regional.mistral.mixtral-8x7b-instruct-v0:1",
    "regional.mistral.mistral-large-2402-v1:0",
    "regional.mistral.mistral-large-2407-v1:0",
    "regional.mistral.mistral-small-2402-v1:0",
    "regional.ai21.jamba-1-5-mini-v1:0",
    "regional.ai21.jamba-1-5-large-v1:0",
    "regional.cohere.command-text-v14",
    "regional.cohere.command-light-text-v14",
    "regional.amazon.titan-text-express-v1",
    "regional.amazon.titan-text-lite-v1",
    "regional.amazon.titan-text-premier-v1:0",
    "regional.deepseek.r1-v1:0",
    "regional.meta.llama4-maverick-17b-instruct-v1:0",
    "regional.meta.llama4-scout-17b-instruct-v1:0",
    "regional.openai.gpt-oss-120b-1:0",
    "regional.openai.gpt-oss-20b-1:0",
]


@pytest.mark.parametrize("model", TOUCHED)
def test_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("bedrock", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


@pytest.mark.parametrize(
    ("name", "day", "total"),
    [
        # Claude 3 Haiku on Bedrock, 2025-06-10: 1,000 in x $0.25 / 1e6 = 0.00025; 100 out x
        # $1.25 / 1e6 = 0.000125; total 0.000375.
        ("anthropic.claude-3-haiku-20240307-v1:0", dt.date(2025, 6, 10), "0.000375"),
        # Mistral 7B Instruct, 2025-07-18: 1,000 x $0.15 / 1e6 = 0.00015; 100 x $0.20 / 1e6 =
        # 0.00002; total 0.00017.
        ("mistral.mistral-7b-instruct-v0:2", dt.date(2025, 7, 18), "0.00017"),
        # Titan Text Express, 2025-07-29: 1,000 x $0.20 / 1e6 = 0.0002; 100 x $0.60 / 1e6 =
        # 0.00006; total 0.00026.
        ("amazon.titan-text-express-v1", dt.date(2025, 7, 29), "0.00026"),
    ],
)
def test_a_bill_by_hand(migrated_db_url: str, name: str, day: dt.date, total: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("bedrock", name, day)
    assert bill_of_counts(1_000, 100, terms) == Decimal(total)


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0024_seed_contracts_v16")
    assert {row[5] for row in added} == {"seed:contracts-v16"}
    assert sorted(str(row[1]) for row in added) == sorted(TOUCHED)
