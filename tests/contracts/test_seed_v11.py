"""Revision 0019 (contracts-v11.json): Gemini 1.5 Pro, 1.5 Flash and 1.5 Flash-8B from launch.

Expected terms are what the sources in docs/contracts.md ("contracts-v11") state: billing in
the Gemini API from 2024-05-30 (Google's developer post "Gemini 1.5 Pro and 1.5 Flash GA",
https://developers.googleblog.com/en/gemini-15-pro-and-15-flash-now-available/), no context
caching before 2024-06-27 (mode "none"), explicit caching with reads at 0.25x from then on,
price cuts on 2024-08-12 (Flash) and 2024-10-01 (Pro), a higher tier above 128K prompt tokens,
shutdown on 2025-09-24. The versions of mode "none" need that mode in the loader: these tests
pass once it is merged."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from tests.contracts.builders import bill_of_counts

TODAY = dt.date(2026, 12, 5)


@pytest.mark.parametrize(
    ("model", "day", "prices", "mode"),
    [
        # 1.5 Pro $3.50 / $10.50 per MTok, $7 / $21 above 128K ([S] bigbullcloud.com
        # "Google Gemini API cost structure"); no caching before 2024-06-27.
        ("gemini-1.5-pro", dt.date(2024, 5, 30), ("3.5", "10.5", "7", "21"), "none"),
        ("gemini-1.5-pro", dt.date(2024, 6, 26), ("3.5", "10.5", "7", "21"), "none"),
        ("gemini-1.5-pro", dt.date(2024, 6, 27), ("3.5", "10.5", "7", "21"), "explicit"),
        # From 2024-10-01 $1.25 / $5, $2.50 / $10 above 128K ([S] genai-prices 0.2.3
        # 'gemini-pro-1.5', citing https://ai.google.dev/gemini-api/docs/pricing#gemini-1.5-pro).
        ("gemini-1.5-pro", dt.date(2024, 10, 1), ("1.25", "5", "2.5", "10"), "explicit"),
        ("gemini-1.5-pro", dt.date(2025, 9, 23), ("1.25", "5", "2.5", "10"), "explicit"),
        # 1.5 Flash at launch $0.35 / $1.05, $0.70 / $2.10 above 128K [U in the notes].
        ("gemini-1.5-flash", dt.date(2024, 5, 30), ("0.35", "1.05", "0.7", "2.1"), "none"),
        ("gemini-1.5-flash", dt.date(2024, 8, 11), ("0.35", "1.05", "0.7", "2.1"), "explicit"),
        # From 2024-08-12 $0.075 / $0.30, $0.15 / $0.60 above 128K ([S] genai-prices 0.2.3
        # 'gemini-1.5-flash'; https://ai.google.dev/gemini-api/docs/pricing#gemini-1.5-flash).
        ("gemini-1.5-flash", dt.date(2024, 8, 12), ("0.075", "0.3", "0.15", "0.6"), "explicit"),
        ("gemini-1.5-flash", dt.date(2025, 9, 23), ("0.075", "0.3", "0.15", "0.6"), "explicit"),
        # Flash-8B $0.0375 / $0.15, $0.075 / $0.30 above 128K ([S] genai-prices 0.2.3
        # 'gemini-flash-1.5-8b', https://ai.google.dev/gemini-api/docs/pricing#gemini-1.5-flash-8b).
        (
            "gemini-1.5-flash-8b",
            dt.date(2024, 10, 3),
            ("0.0375", "0.15", "0.075", "0.3"),
            "explicit",
        ),
    ],
)
def test_gemini_1_5_prices_on_each_day(
    migrated_db_url: str,
    model: str,
    day: dt.date,
    prices: tuple[str, str, str, str],
    mode: str,
) -> None:
    terms = ContractStore(migrated_db_url).as_of("google", model, day)
    (tier,) = terms.long_context_tiers
    assert (
        terms.input_per_mtok,
        terms.output_per_mtok,
        tier.input_per_mtok,
        tier.output_per_mtok,
    ) == tuple(Decimal(price) for price in prices)
    assert tier.above_input_tokens == 128_000
    assert terms.mode.value == mode
    if mode == "none":
        assert terms.ttl_options == ()
        assert terms.read_multiplier == Decimal(1)
    else:
        # Cached tokens at 0.25x (e.g. Flash $0.01875 of $0.075), a 1 h default TTL.
        assert terms.read_multiplier == Decimal("0.25")
        assert [option.ttl_seconds for option in terms.ttl_options] == [3600]


@pytest.mark.parametrize(
    ("model", "storage"),
    [("gemini-1.5-pro", "4.5"), ("gemini-1.5-flash", "1"), ("gemini-1.5-flash-8b", "0.25")],
)
def test_gemini_1_5_storage_per_mtok_hour(migrated_db_url: str, model: str, storage: str) -> None:
    terms = ContractStore(migrated_db_url).as_of("google", model, dt.date(2024, 12, 1))
    assert terms.storage_per_mtok_hour == Decimal(storage)


def test_dated_ids_are_aliases(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("google", "gemini-1.5-pro-002", dt.date(2025, 1, 15)).model == (
        "gemini-1.5-pro"
    )
    assert store.as_of("google", "gemini-1.5-flash-001", dt.date(2024, 7, 1)).model == (
        "gemini-1.5-flash"
    )


def test_before_billing_began_is_refused_with_the_launch_day(migrated_db_url: str) -> None:
    with pytest.raises(ContractNotYetInForceError, match="2024-05-30"):
        ContractStore(migrated_db_url).as_of("google", "gemini-1.5-pro", dt.date(2024, 5, 29))


def test_after_shutdown_nothing_is_in_force(migrated_db_url: str) -> None:
    with pytest.raises(UnknownContractError):
        ContractStore(migrated_db_url).as_of("google", "gemini-1.5-pro", dt.date(2025, 9, 24))
    # The price-map version of 2026-12-03 that brought the model back is removed by revision
    # 0021 (contracts-v13): after its shutdown no day of gemini-1.5-flash is priced.
    with pytest.raises(UnknownContractError):
        ContractStore(migrated_db_url).as_of("google", "gemini-1.5-flash", dt.date(2026, 12, 3))


@pytest.mark.parametrize("model", ["gemini-1.5-pro", "gemini-1.5-flash", "gemini-1.5-flash-8b"])
def test_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    history = ContractStore(migrated_db_url).history("google", model)
    summary = history_gaps(history, TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_bills_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    # 1.5 Pro on 2024-06-01 (no caching): 1,000 in x $3.50 / 1e6 = 0.0035;
    # 100 out x $10.50 / 1e6 = 0.00105; total 0.00455.
    pro = store.as_of("google", "gemini-1.5-pro", dt.date(2024, 6, 1))
    assert bill_of_counts(1_000, 100, pro) == Decimal("0.00455")
    # 1.5 Pro on 2024-10-01, a 200,000-token prompt is above 128K: 200,000 x $2.50 / 1e6 = 0.5;
    # 100 out x $10 / 1e6 = 0.001; total 0.501.
    pro_cut = store.as_of("google", "gemini-1.5-pro", dt.date(2024, 10, 1))
    assert bill_of_counts(200_000, 100, pro_cut) == Decimal("0.501")
    # 1.5 Flash on 2024-08-12, 40,000 prompt tokens of which 32,768 read from a cache:
    # 7,232 x $0.075 / 1e6 = 0.0005424; 32,768 x $0.01875 / 1e6 = 0.0006144;
    # 100 out x $0.30 / 1e6 = 0.00003; total 0.0011868.
    flash = store.as_of("google", "gemini-1.5-flash", dt.date(2024, 8, 12))
    assert bill_of_counts(40_000, 100, flash, cached=32_768) == Decimal("0.0011868")


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # Prices from Mistral's model cards (github.com/mistralai/platform-docs-public,
        # src/schema/models/models/*.ts): Medium 3 and 3.1 $0.40 / $2.00.
        ("mistral-medium-latest", dt.date(2025, 5, 7), ("0.4", "2")),
        ("mistral-medium-latest", dt.date(2026, 6, 15), ("0.4", "2")),
        # Medium 3.5 $1.50 / $7.50; -latest moved on 2026-06-16 ([S] genai-prices 0.2.3).
        ("mistral-medium-latest", dt.date(2026, 6, 16), ("1.5", "7.5")),
        ("mistral-medium-2505", dt.date(2026, 8, 30), ("0.4", "2")),
        ("mistral-medium-2508", dt.date(2025, 8, 12), ("0.4", "2")),
        # Codestral 25.01 and 25.08 $0.30 / $0.90.
        ("codestral-latest", dt.date(2025, 1, 13), ("0.3", "0.9")),
        ("codestral-2508", dt.date(2025, 7, 30), ("0.3", "0.9")),
        # Mistral Nemo 12B $0.15 / $0.15, also under its dated id.
        ("open-mistral-nemo", dt.date(2024, 7, 18), ("0.15", "0.15")),
        ("open-mistral-nemo-2407", dt.date(2025, 3, 1), ("0.15", "0.15")),
        ("pixtral-12b-2409", dt.date(2024, 9, 11), ("0.15", "0.15")),
        ("pixtral-large-latest", dt.date(2024, 11, 18), ("2", "6")),
        ("magistral-medium-latest", dt.date(2025, 6, 10), ("2", "5")),
        ("magistral-small-latest", dt.date(2025, 9, 18), ("0.5", "1.5")),
        # Ministral 8B 24.10 $0.10 / $0.10, then Ministral 3 8B $0.15 / $0.15 from 2025-12-02.
        ("ministral-8b-latest", dt.date(2025, 12, 1), ("0.1", "0.1")),
        ("ministral-8b-latest", dt.date(2025, 12, 2), ("0.15", "0.15")),
        ("ministral-3b-2410", dt.date(2024, 10, 9), ("0.04", "0.04")),
    ],
)
def test_mistral_prices_from_the_model_cards(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("mistral", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # Mistral's caching terms as for mistral-small-latest: reads at 10% of the input price.
    assert terms.read_multiplier == Decimal("0.1")


@pytest.mark.parametrize(
    ("model", "retired"),
    [
        # retirementDate on each card
        ("mistral-medium-2505", dt.date(2026, 8, 31)),
        ("pixtral-12b-2409", dt.date(2025, 12, 31)),
        ("pixtral-large-2411", dt.date(2026, 5, 31)),
        ("ministral-8b-2410", dt.date(2025, 12, 31)),
    ],
)
def test_retired_mistral_models_end_at_retirement(
    migrated_db_url: str, model: str, retired: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("mistral", model, retired - dt.timedelta(days=1)).model == model
    with pytest.raises(UnknownContractError):
        store.as_of("mistral", model, retired)


@pytest.mark.parametrize(
    "model",
    [
        "mistral-medium-2505",
        "mistral-medium-2508",
        "codestral-2501",
        "codestral-2508",
        "open-mistral-nemo",
        "pixtral-12b-2409",
        "pixtral-large-2411",
        "magistral-medium-latest",
        "magistral-small-latest",
        "ministral-8b-latest",
        "ministral-8b-2410",
        "ministral-3b-2410",
        "ministral-8b-2512",
    ],
)
def test_mistral_models_have_no_gap_from_their_release(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("mistral", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_a_mistral_bill_by_hand(migrated_db_url: str) -> None:
    # Mistral Medium 3.1 under -latest on 2025-09-01: 1,000 prompt tokens of which 200 cached,
    # 100 out. 800 x $0.40 / 1e6 = 0.00032; 200 x $0.04 / 1e6 = 0.000008;
    # 100 x $2.00 / 1e6 = 0.0002; total 0.000528.
    terms = ContractStore(migrated_db_url).as_of(
        "mistral", "mistral-medium-latest", dt.date(2025, 9, 1)
    )
    assert bill_of_counts(1_000, 100, terms, cached=200) == Decimal("0.000528")


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # command-r is an alias for command-r-03-2024 (Cohere's Command R page);
        # $0.50 / $1.50 [S] (Bedrock's listing of the same model).
        ("command-r", dt.date(2024, 3, 11), ("0.5", "1.5")),
        ("command-r-03-2024", dt.date(2025, 1, 2), ("0.5", "1.5")),
        ("command-r-plus", dt.date(2024, 4, 4), ("3", "15")),  # [U] in the notes
        # Cohere's changelog of 2024-08-30: $0.15 / $0.60 and $2.50 / $10.00.
        ("command-r-08-2024", dt.date(2024, 8, 30), ("0.15", "0.6")),
        ("command-r-plus-08-2024", dt.date(2024, 8, 30), ("2.5", "10")),
        # Before the stored price-map versions of 2026-12-03, at their prices.
        ("command-r7b-12-2024", dt.date(2024, 12, 13), ("0.0375", "0.15")),
        ("command-a-03-2025", dt.date(2025, 3, 13), ("2.5", "10")),
    ],
)
def test_cohere_prices_and_no_caching(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("cohere", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # Cohere offers no prompt caching.
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)


@pytest.mark.parametrize(
    "model",
    [
        "command-r",
        "command-r-plus",
        "command-r-08-2024",
        "command-r-plus-08-2024",
        "command-r7b-12-2024",
        "command-a-03-2025",
    ],
)
def test_cohere_models_have_no_gap_from_their_release(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("cohere", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_a_cohere_bill_by_hand(migrated_db_url: str) -> None:
    # command-r-08-2024 on 2025-01-15: 1,000 in x $0.15 / 1e6 = 0.00015;
    # 100 out x $0.60 / 1e6 = 0.00006; total 0.00021.
    terms = ContractStore(migrated_db_url).as_of(
        "cohere", "command-r-08-2024", dt.date(2025, 1, 15)
    )
    assert bill_of_counts(1_000, 100, terms) == Decimal("0.00021")


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # xAI's Models and Pricing page archived 2025-06-02 (https://archive.fo/dYUtw):
        # (input, cached input, output) per MTok.
        ("grok-3", dt.date(2025, 4, 9), ("3", "0.75", "15")),
        ("grok-3-beta", dt.date(2025, 4, 20), ("3", "0.75", "15")),
        ("grok-3-fast", dt.date(2025, 6, 2), ("5", "1.25", "25")),
        ("grok-3-mini", dt.date(2026, 12, 2), ("0.3", "0.075", "0.5")),
        ("grok-3-mini-fast", dt.date(2025, 6, 2), ("0.6", "0.15", "4")),
        # Grok Code Fast 1 $0.20 / $0.02 / $1.50 ([S] techdevnotes.com); from 2026-05-15
        # redirected to grok-build-0.1 at $1 / $0.20 (80% off) / $2 ([S] creeta.com).
        ("grok-code-fast-1", dt.date(2025, 8, 26), ("0.2", "0.02", "1.5")),
        ("grok-code-fast-1", dt.date(2026, 5, 15), ("1", "0.2", "2")),
    ],
)
def test_xai_prices_from_launch(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("xai", model, day)
    assert (
        terms.input_per_mtok,
        terms.input_per_mtok * terms.read_multiplier,
        terms.output_per_mtok,
    ) == tuple(Decimal(price) for price in prices)
    # contracts-v6's correction: cached tokens are counted one by one.
    assert terms.increment_tokens == 1


@pytest.mark.parametrize(
    "model", ["grok-3", "grok-3-fast", "grok-3-mini", "grok-3-mini-fast", "grok-code-fast-1"]
)
def test_xai_models_have_no_gap_from_launch(migrated_db_url: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history("xai", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_an_xai_bill_by_hand(migrated_db_url: str) -> None:
    # grok-3-mini on 2025-06-02: 1,000 prompt tokens of which 283 cached (a go-vcr cassette's
    # read), 100 out. 717 x $0.30 / 1e6 = 0.0002151; 283 x $0.075 / 1e6 = 0.000021225;
    # 100 x $0.50 / 1e6 = 0.00005; total 0.000286325.
    terms = ContractStore(migrated_db_url).as_of("xai", "grok-3-mini", dt.date(2025, 6, 2))
    assert bill_of_counts(1_000, 100, terms, cached=283) == Decimal("0.000286325")


@pytest.mark.parametrize(
    ("model", "launched"),
    [
        # [S] ctol.digital (K2, 2025-07-11); routerai.ru (0905, 2025-09-04); naga.ac (Thinking,
        # 2025-11-06). $0.60 in, $0.15 on a cache hit, $2.50 out per MTok (the stored terms).
        ("kimi-k2-0711-preview", dt.date(2025, 7, 11)),
        ("kimi-k2-0905-preview", dt.date(2025, 9, 4)),
        ("kimi-k2-thinking", dt.date(2025, 11, 6)),
    ],
)
def test_kimi_k2_from_launch(migrated_db_url: str, model: str, launched: dt.date) -> None:
    store = ContractStore(migrated_db_url)
    terms = store.as_of("moonshot", model, launched)
    assert (
        terms.input_per_mtok,
        terms.input_per_mtok * terms.read_multiplier,
        terms.output_per_mtok,
    ) == (Decimal("0.6"), Decimal("0.15"), Decimal("2.5"))
    with pytest.raises(ContractNotYetInForceError, match=launched.isoformat()):
        store.as_of("moonshot", model, launched - dt.timedelta(days=1))
    summary = history_gaps(store.history("moonshot", model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1
