"""Revision 0021 (contracts-v13.json): Gemini 1.0 Pro, Bedrock's Meta Llama models, Azure
OpenAI's GPT-3.5 Turbo / GPT-4 and Claude Instant 1.2 priced from launch, all without
caching; Cohere's stored "explicit" versions corrected to mode none; the price-map row that
brought the retired gemini-1.5-flash back removed.

Expected terms are what the sources in docs/contracts.md ("contracts-v13") state, written here
from those sources, not from the data file: Vertex AI's per-character price of Gemini 1.0 Pro
($0.000125 / $0.000375 per 1K characters [S]) times Google's 4 characters per token; AWS's
on-demand Bedrock prices as LiteLLM 1.110.2 lists them (https://aws.amazon.com/bedrock/pricing/);
Azure's prices as OpenAI's for the same model version, and LiteLLM's azure/ entries [S];
shutdown days from Google's Vertex deprecation notice and the Bedrock lifecycle [U]."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import sqlalchemy as sa

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core import db
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("provider", "name", "day", "model", "prices"),
    [
        # Gemini 1.0 Pro: $0.000125 / 1K input characters x 4 characters per token = $0.50
        # per MTok; $0.000375 x 4 = $1.50 ([S] visualfoodie.com, winenfood.com).
        ("google", "gemini-1.0-pro", dt.date(2023, 12, 13), "gemini-1.0-pro", ("0.5", "1.5")),
        ("google", "gemini-pro", dt.date(2024, 6, 1), "gemini-1.0-pro", ("0.5", "1.5")),
        ("google", "gemini-1.0-pro-002", dt.date(2024, 9, 1), "gemini-1.0-pro", ("0.5", "1.5")),
        # dd-trace-py's Vertex cassette of 2025-03-21: Vertex kept 1.0 Pro to 2025-04-09
        # (https://cloud.google.com/vertex-ai/generative-ai/docs/deprecations/gemini-1.0-pro).
        ("google", "gemini-pro", dt.date(2025, 3, 21), "gemini-1.0-pro", ("0.5", "1.5")),
        # Bedrock on-demand (us-east-1): Llama 2 Chat 13B $0.75 / $1.00, 70B $1.95 / $2.56.
        (
            "bedrock",
            "meta.llama2-13b-chat-v1",
            dt.date(2024, 1, 8),
            "regional.meta.llama2-13b-chat-v1",
            ("0.75", "1"),
        ),
        (
            "bedrock",
            "meta.llama2-70b-chat-v1",
            dt.date(2024, 3, 1),
            "regional.meta.llama2-70b-chat-v1",
            ("1.95", "2.56"),
        ),
        # Llama 3 8B / 70B Instruct $0.30 / $0.60 and $2.65 / $3.50.
        (
            "bedrock",
            "meta.llama3-70b-instruct-v1:0",
            dt.date(2024, 6, 1),
            "regional.meta.llama3-70b-instruct-v1:0",
            ("2.65", "3.5"),
        ),
        # A cross-Region profile bills the source Region's price: Llama 3.1 8B $0.22 / $0.22.
        (
            "bedrock",
            "us.meta.llama3-1-8b-instruct-v1:0",
            dt.date(2025, 1, 15),
            "us.meta.llama3-1-8b-instruct-v1:0",
            ("0.22", "0.22"),
        ),
        # The EU profile of Llama 3.2 1B: LiteLLM's own entry, $0.13 / $0.13.
        (
            "bedrock",
            "eu.meta.llama3-2-1b-instruct-v1:0",
            dt.date(2025, 1, 15),
            "eu.meta.llama3-2-1b-instruct-v1:0",
            ("0.13", "0.13"),
        ),
        # Azure gpt-35-turbo: $0.002 per 1K tokens at launch, $0.0015 / $0.002 after June
        # 2023 (dd-trace-py's Azure cassette of 2023-11-07), $0.0005 / $0.0015 today.
        ("azure", "gpt-35-turbo", dt.date(2023, 4, 1), "gpt-3.5-turbo", ("2", "2")),
        ("azure", "gpt-35-turbo", dt.date(2023, 11, 7), "gpt-3.5-turbo", ("1.5", "2")),
        ("azure", "gpt-35-turbo", dt.date(2024, 6, 1), "gpt-3.5-turbo", ("0.5", "1.5")),
        ("azure", "gpt-35-turbo-16k", dt.date(2024, 6, 1), "gpt-3.5-turbo-16k", ("3", "4")),
        # GPT-4 8K $0.03 / $0.06 per 1K tokens; GPT-4 Turbo (Regional) $11 / $33 per MTok.
        ("azure", "gpt-4", dt.date(2023, 8, 1), "gpt-4", ("30", "60")),
        ("azure", "gpt-4-turbo-2024-04-09", dt.date(2024, 6, 1), "gpt-4-turbo", ("11", "33")),
        # Claude Instant 1.2: $1.63 / $5.51 at launch [U], $0.80 / $2.40 from Anthropic's
        # pricing update of 2023-11-21 (https://www.anthropic.com/news/claude-2-1).
        (
            "anthropic",
            "claude-instant-1.2",
            dt.date(2023, 10, 1),
            "claude-instant-1.2",
            ("1.63", "5.51"),
        ),
        (
            "anthropic",
            "claude-instant-1",
            dt.date(2024, 3, 1),
            "claude-instant-1.2",
            ("0.8", "2.4"),
        ),
        (
            "bedrock",
            "anthropic.claude-instant-v1",
            dt.date(2024, 3, 1),
            "regional.anthropic.claude-instant-v1",
            ("0.8", "2.4"),
        ),
        # xAI: grok-beta $5 / $15, grok-2-1212 (alias grok-2) $2 / $10 ([S] genai-prices 0.2.3).
        ("xai", "grok-beta", dt.date(2024, 11, 1), "grok-beta", ("5", "15")),
        ("xai", "grok-2", dt.date(2025, 3, 1), "grok-2-1212", ("2", "10")),
    ],
)
def test_prices_the_sources_state_without_caching(
    migrated_db_url: str,
    provider: str,
    name: str,
    day: dt.date,
    model: str,
    prices: tuple[str, str],
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, name, day)
    assert terms.model == model
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # None of these providers cached prompts for these models.
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)


@pytest.mark.parametrize(
    ("provider", "name", "day"),
    [
        # Vertex AI ended Gemini 1.0 Pro on 2025-04-09 (the Gemini API on 2025-02-15).
        ("google", "gemini-pro", dt.date(2025, 4, 9)),
        # Bedrock's end of life of Llama 2 Chat, 2024-08-12 [U].
        ("bedrock", "meta.llama2-13b-chat-v1", dt.date(2024, 8, 12)),
        # Llama 3.2 ends on the map's deprecation_date, 2026-07-07 [S].
        ("bedrock", "us.meta.llama3-2-3b-instruct-v1:0", dt.date(2026, 7, 7)),
        # Anthropic retired claude-instant-1.2 on 2024-11-06 (its model deprecations page).
        ("anthropic", "claude-instant-1.2", dt.date(2024, 11, 6)),
        # gemini-1.5-flash was shut down on 2025-09-24 and stays so (the price-map row of
        # 2026-12-03 is removed).
        ("google", "gemini-1.5-flash", dt.date(2026, 12, 3)),
        ("google", "gemini-1.5-flash", TODAY),
    ],
)
def test_after_shutdown_nothing_is_in_force(
    migrated_db_url: str, provider: str, name: str, day: dt.date
) -> None:
    with pytest.raises(UnknownContractError):
        ContractStore(migrated_db_url).as_of(provider, name, day)


def test_before_launch_is_refused_with_the_launch_day(migrated_db_url: str) -> None:
    with pytest.raises(ContractNotYetInForceError, match="2023-12-13"):
        ContractStore(migrated_db_url).as_of("google", "gemini-pro", dt.date(2023, 12, 12))


def test_gpt_4o_2024_08_06_has_its_own_price_before_caching(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # OpenAI's Structured Outputs post: gpt-4o-2024-08-06 at $2.50 / $10.00 per MTok, while
    # gpt-4o still named gpt-4o-2024-05-13 ($5 / $15) until 2024-10-02.
    snapshot = store.as_of("openai", "gpt-4o-2024-08-06", dt.date(2024, 9, 1))
    assert (snapshot.model, snapshot.input_per_mtok, snapshot.output_per_mtok) == (
        "gpt-4o-2024-08-06",
        Decimal("2.5"),
        Decimal("10"),
    )
    assert snapshot.mode.value == "none"
    assert store.as_of("openai", "gpt-4o", dt.date(2024, 9, 1)).input_per_mtok == Decimal(5)
    # From OpenAI's caching launch (2024-10-01): reads at half the input price, $1.25.
    cached = store.as_of("openai", "gpt-4o-2024-08-06", dt.date(2025, 1, 15))
    assert (cached.mode.value, cached.read_multiplier) == ("automatic", Decimal("0.5"))
    assert cached.read_multiplier * cached.input_per_mtok == Decimal("1.25")


def test_mistral_tiny_is_mistral_7b_until_its_retirement(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # Mistral's card mistral-7b-0-2.ts: apiNames open-mistral-7b, released 2023-12-11,
    # retired 2025-03-30; $0.25 / $0.25 per MTok ([S] genai-prices 0.2.3 'mistral-tiny').
    tiny = store.as_of("mistral", "mistral-tiny", dt.date(2024, 6, 1))
    assert (tiny.model, tiny.input_per_mtok, tiny.output_per_mtok) == (
        "open-mistral-7b",
        Decimal("0.25"),
        Decimal("0.25"),
    )
    with pytest.raises(UnknownContractError):
        store.as_of("mistral", "mistral-tiny", dt.date(2025, 3, 30))


@pytest.mark.parametrize("model", ["command-r7b-12-2024", "command-a-03-2025"])
def test_cohere_is_corrected_to_no_caching(migrated_db_url: str, model: str) -> None:
    store = ContractStore(migrated_db_url)
    # The version stored on 2026-12-03 (explicit, read 1x) keeps its day; from the next day
    # Cohere's models are what they always were: no prompt caching.
    assert store.as_of("cohere", model, dt.date(2026, 12, 3)).mode.value == "explicit"
    corrected = store.as_of("cohere", model, dt.date(2026, 12, 4))
    assert corrected.mode.value == "none"
    assert corrected.effective_to is None


TOUCHED = [
    ("google", "gemini-1.0-pro"),
    ("google", "gemini-1.5-flash"),
    ("cohere", "command-r7b-12-2024"),
    ("cohere", "command-a-03-2025"),
    ("bedrock", "regional.meta.llama2-13b-chat-v1"),
    ("bedrock", "regional.meta.llama2-70b-chat-v1"),
    ("bedrock", "regional.meta.llama3-8b-instruct-v1:0"),
    ("bedrock", "regional.meta.llama3-70b-instruct-v1:0"),
    ("bedrock", "regional.meta.llama3-1-405b-instruct-v1:0"),
    ("bedrock", "us.meta.llama3-1-70b-instruct-v1:0"),
    ("bedrock", "regional.meta.llama3-2-90b-instruct-v1:0"),
    ("bedrock", "us.meta.llama3-3-70b-instruct-v1:0"),
    ("azure", "gpt-3.5-turbo"),
    ("azure", "gpt-3.5-turbo-0301"),
    ("azure", "gpt-3.5-turbo-instruct"),
    ("azure", "gpt-4"),
    ("azure", "gpt-4-0125-preview"),
    ("anthropic", "claude-instant-1.2"),
    ("bedrock", "regional.anthropic.claude-instant-v1"),
    ("openai", "gpt-4o-2024-08-06"),
    ("xai", "grok-beta"),
    ("xai", "grok-2-1212"),
    ("mistral", "open-mistral-7b"),
]


@pytest.mark.parametrize(("provider", "model"), TOUCHED)
def test_no_gap_from_launch(migrated_db_url: str, provider: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history(provider, model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


@pytest.mark.parametrize(
    ("provider", "name", "day", "total"),
    [
        # Llama 2 Chat 13B on Bedrock, 2024-01-08: 1,000 in x $0.75 / 1e6 = 0.00075;
        # 100 out x $1.00 / 1e6 = 0.0001; total 0.00085.
        ("bedrock", "meta.llama2-13b-chat-v1", dt.date(2024, 1, 8), "0.00085"),
        # Gemini 1.0 Pro, 2025-03-21: 1,000 x $0.50 / 1e6 = 0.0005; 100 x $1.50 / 1e6 =
        # 0.00015; total 0.00065.
        ("google", "gemini-pro", dt.date(2025, 3, 21), "0.00065"),
        # Azure gpt-35-turbo, 2023-11-07: 1,000 x $1.50 / 1e6 = 0.0015; 100 x $2.00 / 1e6 =
        # 0.0002; total 0.0017.
        ("azure", "gpt-35-turbo", dt.date(2023, 11, 7), "0.0017"),
    ],
)
def test_a_bill_by_hand(
    migrated_db_url: str, provider: str, name: str, day: dt.date, total: str
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, name, day)
    assert bill_of_counts(1_000, 100, terms) == Decimal(total)


def _rows(url: str) -> list[tuple[object, ...]]:
    with db.get_engine(url).connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT provider, model, effective_from, effective_to, mode, origin"
                    " FROM contract_version ORDER BY provider, model, effective_from"
                )
            )
        )


def test_downgrade_gives_back_exactly_what_revision_0020_stored(sqlite_url: str) -> None:
    db.upgrade(sqlite_url, "0020_seed_contracts_v12")
    before = _rows(sqlite_url)
    db.upgrade(sqlite_url, "0021_seed_contracts_v13")
    after = _rows(sqlite_url)
    # The upgrade removes only the gemini-1.5-flash row of 2026-12-03 and closes the two
    # Cohere versions on the day their corrections begin.
    removed = [row for row in before if row not in after]
    assert [(row[0], row[1], str(row[2])) for row in removed] == [
        ("cohere", "command-a-03-2025", "2026-12-03"),
        ("cohere", "command-r7b-12-2024", "2026-12-03"),
        ("google", "gemini-1.5-flash", "2026-12-03"),
    ]
    db.downgrade(sqlite_url, "0020_seed_contracts_v12")
    assert _rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
