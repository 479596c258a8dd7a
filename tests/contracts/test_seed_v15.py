"""Revision 0023 (contracts-v15.json): Perplexity's Sonar models, Cerebras's models and the
Gemini API's Gemini 3 Pro Preview.

Expected terms are what the sources in docs/contracts.md ("contracts-v15") state, written here
from those sources, not from the data file: Perplexity's model cards for Sonar, Sonar Pro and
Sonar Reasoning Pro, secondary sources (OpenRouter, LiteLLM 1.110.2's price map) for Sonar
Reasoning and Sonar Deep Research; Cerebras's model page for Qwen3 32B and LiteLLM 1.110.2 for
the other Cerebras prices and shutdown days; Google's launch post and the Vertex entry's prices
for Gemini 3 Pro Preview. Perplexity documents no prompt caching and Cerebras's caching page
states no price for cached tokens: every one of their days is stored without caching (mode
"none"). Six retired models lose the open price-map version of 2026-12-03 that brought them
back (Anthropic's and OpenAI's deprecation pages give their retirement days)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from runpy import run_path

import pytest
import sqlalchemy as sa

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.served import served_contract
from cachecast.core import db
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from cachecast.logs.providers import resolve_provider
from cachecast.tokenizers.types import ObservedUsage
from tests.contracts.builders import bill_of as bill

TODAY = dt.date(2026, 12, 5)

# Every model contracts-v15 adds, with its launch day (lifecycle.json).
LAUNCHES = {
    ("perplexity", "sonar"): dt.date(2025, 1, 21),
    ("perplexity", "sonar-pro"): dt.date(2025, 1, 21),
    ("perplexity", "sonar-reasoning"): dt.date(2025, 1, 29),
    ("perplexity", "sonar-reasoning-pro"): dt.date(2025, 3, 7),
    ("perplexity", "sonar-deep-research"): dt.date(2025, 3, 7),
    ("cerebras", "llama3.1-8b"): dt.date(2024, 8, 27),
    ("cerebras", "llama-3.3-70b"): dt.date(2024, 12, 6),
    ("cerebras", "qwen-3-32b"): dt.date(2025, 5, 14),
    ("cerebras", "gpt-oss-120b"): dt.date(2025, 8, 5),
    ("google", "gemini-3-pro-preview"): dt.date(2025, 11, 18),
    ("google", "gemini-2.5-flash-lite-preview-09-2025"): dt.date(2025, 9, 25),
}


@pytest.mark.parametrize(
    ("provider", "model", "day", "prices"),
    [
        # (input, output) per MTok.
        # https://docs.perplexity.ai/guides/models/sonar: "Input Tokens (Per Million) $1",
        # "Output Tokens (Per Million) $1" (legacy and search-context pricing alike).
        ("perplexity", "sonar", dt.date(2025, 2, 1), ("1", "1")),
        ("perplexity", "sonar", TODAY, ("1", "1")),
        # https://docs.perplexity.ai/guides/models/sonar-pro: "$3" in, "$15" out.
        ("perplexity", "sonar-pro", dt.date(2025, 6, 1), ("3", "15")),
        # OpenRouter perplexity/sonar-reasoning: "$1/M input tokens", "$5/M output tokens" [S].
        ("perplexity", "sonar-reasoning", dt.date(2025, 12, 14), ("1", "5")),
        # https://docs.perplexity.ai/docs/sonar/models/sonar-reasoning-pro: "$2" / "$8".
        ("perplexity", "sonar-reasoning-pro", dt.date(2026, 3, 1), ("2", "8")),
        # LiteLLM 1.110.2 perplexity/sonar-deep-research: 2e-06 / 8e-06 [S].
        ("perplexity", "sonar-deep-research", dt.date(2025, 9, 1), ("2", "8")),
        # LiteLLM 1.110.2 cerebras/llama3.1-8b: 1e-07 / 1e-07 [S]; the crewAI recording of
        # 2026-05-06 (api.cerebras.ai, "model":"llama3.1-8b") falls on this day.
        ("cerebras", "llama3.1-8b", dt.date(2026, 5, 6), ("0.1", "0.1")),
        # LiteLLM 1.110.2 cerebras/llama-3.3-70b: 8.5e-07 / 1.2e-06 [S].
        ("cerebras", "llama-3.3-70b", dt.date(2025, 6, 1), ("0.85", "1.2")),
        # https://inference-docs.cerebras.ai/models/qwen-3-32b: "Input $0.40 / M tokens",
        # "Output $0.80 / M tokens".
        ("cerebras", "qwen-3-32b", dt.date(2025, 9, 1), ("0.4", "0.8")),
        # LiteLLM 1.110.2 cerebras/gpt-oss-120b: 3.5e-07 / 7.5e-07 [S].
        ("cerebras", "gpt-oss-120b", TODAY, ("0.35", "0.75")),
    ],
)
def test_perplexity_and_cerebras_bill_every_prompt_token_at_the_input_price(
    migrated_db_url: str, provider: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of(provider, model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)
    assert terms.ttl_options == ()


def test_gemini_3_pro_preview_on_the_gemini_api_has_the_vertex_prices(
    migrated_db_url: str,
) -> None:
    # The crewAI recording test_gemini_async_conversation.yaml (2025-12-01) called it on
    # generativelanguage.googleapis.com. $2 / $12, above 200K input tokens $4 / $18, reads 0.1x
    # (LiteLLM 1.110.2 vertex_ai/gemini-3-pro-preview: 2e-06 / 1.2e-05 / read 2e-07).
    store = ContractStore(migrated_db_url)
    terms = store.as_of("google", "gemini-3-pro-preview", dt.date(2025, 12, 1))
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal(2), Decimal(12))
    assert terms.read_multiplier == Decimal("0.1")
    (tier,) = terms.long_context_tiers
    assert (tier.above_input_tokens, tier.input_per_mtok, tier.output_per_mtok) == (
        200_000,
        Decimal(4),
        Decimal(18),
    )
    vertex = store.as_of("vertex", "gemini-3-pro-preview", dt.date(2025, 12, 1))
    assert (vertex.input_per_mtok, vertex.output_per_mtok) == (Decimal(2), Decimal(12))


def test_the_september_2025_flash_lite_preview_on_the_gemini_api(migrated_db_url: str) -> None:
    # OpenRouter google/gemini-2.5-flash-lite-preview-09-2025: "$0.10/M input tokens",
    # "$0.40/M output tokens" [S]; reads 0.1x as every Gemini 2.5+ model on the Gemini API.
    terms = ContractStore(migrated_db_url).as_of(
        "google", "gemini-2.5-flash-lite-preview-09-2025", dt.date(2025, 10, 15)
    )
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("0.1"), Decimal("0.4"))
    assert terms.read_multiplier == Decimal("0.1")


@pytest.mark.parametrize(
    ("provider", "model", "shutdown"),
    [
        # "sonar-reasoning was deprecated on December 15, 2025"
        # (https://docs.perplexity.ai/docs/sonar/models/sonar-reasoning-pro).
        ("perplexity", "sonar-reasoning", dt.date(2025, 12, 15)),
        # LiteLLM 1.110.2 deprecation_date [S].
        ("cerebras", "llama3.1-8b", dt.date(2026, 5, 27)),
        ("cerebras", "llama-3.3-70b", dt.date(2026, 2, 16)),
        ("cerebras", "qwen-3-32b", dt.date(2026, 2, 16)),
        # "shutdown on March 31, 2026" (Google's Gemini API deprecations page, as
        # aifreeapi.com relays it [S]).
        ("google", "gemini-2.5-flash-lite-preview-09-2025", dt.date(2026, 3, 31)),
    ],
)
def test_a_retired_model_is_not_priced_from_its_shutdown(
    migrated_db_url: str, provider: str, model: str, shutdown: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of(provider, model, shutdown - dt.timedelta(days=1)).effective_to == shutdown
    with pytest.raises(UnknownContractError, match="no contract version in force"):
        store.as_of(provider, model, shutdown)


@pytest.mark.parametrize(
    ("provider", "written", "model"),
    [
        # As a request to api.perplexity.ai / api.cerebras.ai names the model.
        ("perplexity", "sonar-pro", "sonar-pro"),
        ("cerebras", "llama3.1-8b", "llama3.1-8b"),
        # LiteLLM's routing names, as a LiteLLM log writes them.
        (None, "perplexity/sonar", "sonar"),
        (None, "cerebras/gpt-oss-120b", "gpt-oss-120b"),
        # An OpenRouter slug names the upstream provider.
        ("openrouter", "perplexity/sonar-reasoning-pro", "sonar-reasoning-pro"),
    ],
)
def test_perplexity_and_cerebras_ids_resolve_to_their_contracts(
    migrated_db_url: str, provider: str | None, written: str, model: str
) -> None:
    resolved, name = resolve_provider(provider, written)
    assert resolved in {"perplexity", "cerebras"} and name is not None
    terms = ContractStore(migrated_db_url).as_of(resolved, name, dt.date(2025, 10, 1))
    assert terms.model == model


def test_a_request_before_the_launch_is_one_error_naming_it(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(ContractNotYetInForceError, match="launched on 2025-01-21"):
        served_contract(store, "perplexity", "sonar", dt.date(2025, 1, 20), TODAY)
    with pytest.raises(ContractNotYetInForceError, match="launched on 2024-08-27"):
        served_contract(store, "cerebras", "llama3.1-8b", dt.date(2024, 8, 26), TODAY)


def test_every_added_model_is_priced_from_its_launch_without_a_gap(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    history = [
        terms
        for provider in ("perplexity", "cerebras", "google")
        for terms in store.list(provider=provider)
        if (terms.provider, terms.model) in LAUNCHES
    ]
    assert {(terms.provider, terms.model) for terms in history} == set(LAUNCHES)
    summary = history_gaps(history, TODAY)
    assert summary.gaps == []
    assert summary.launch_unknown == []
    for (provider, model), launch in LAUNCHES.items():
        assert store.as_of(provider, model, launch).effective_from == launch


def test_hand_computed_bills(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    plain = ObservedUsage(input_tokens=1_000, output_tokens=100)
    # sonar-pro on 2025-06-01 at $3 / $15: 1,000 x $3 / 1e6 = $0.003; 100 x $15 / 1e6 =
    # $0.0015; total $0.0045 (Perplexity's request fee is not billed: no contract field).
    sonar_pro = store.as_of("perplexity", "sonar-pro", dt.date(2025, 6, 1))
    assert bill(plain, sonar_pro) == Decimal("0.0045")
    # llama3.1-8b on 2026-05-06 at $0.10 / $0.10: 1,000 x $0.10 / 1e6 = $0.0001;
    # 100 x $0.10 / 1e6 = $0.00001; total $0.00011.
    llama = store.as_of("cerebras", "llama3.1-8b", dt.date(2026, 5, 6))
    assert bill(plain, llama) == Decimal("0.00011")
    # gemini-3-pro-preview on 2025-12-01: 5,000 prompt tokens of which 4,096 read from an
    # implicit cache, 100 out: 904 x $2 / 1e6 = $0.001808; 4,096 x $0.20 / 1e6 = $0.0008192;
    # 100 x $12 / 1e6 = $0.0012; total $0.0038272.
    gemini = store.as_of("google", "gemini-3-pro-preview", dt.date(2025, 12, 1))
    observed = ObservedUsage(input_tokens=5_000, cache_read_tokens=4_096, output_tokens=100)
    assert bill(observed, gemini) == Decimal("0.0038272")


@pytest.mark.parametrize(
    ("provider", "model", "retired"),
    [
        # https://platform.claude.com/docs/en/about-claude/model-deprecations
        ("anthropic", "claude-3-haiku", dt.date(2026, 4, 20)),
        ("anthropic", "claude-3-opus-latest", dt.date(2026, 1, 5)),
        ("anthropic", "claude-3-sonnet", dt.date(2025, 7, 21)),
        # https://developers.openai.com/api/docs/deprecations
        ("openai", "gpt-5.2-chat-latest", dt.date(2026, 8, 10)),
        ("openai", "o1-mini", dt.date(2025, 10, 27)),
        ("openai", "o1-preview", dt.date(2025, 7, 28)),
    ],
)
def test_a_retired_model_does_not_come_back_with_the_price_map_of_2026_12_03(
    migrated_db_url: str, provider: str, model: str, retired: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    history = store.history(provider, model)
    assert max(terms.effective_from for terms in history) < retired
    assert all(terms.effective_to is not None for terms in history)
    assert store.as_of(provider, model, retired - dt.timedelta(days=1)).effective_to == retired
    for day in (retired, dt.date(2026, 12, 3), TODAY):
        with pytest.raises(UnknownContractError, match="no contract version in force"):
            store.as_of(provider, model, day)


def test_a_log_without_dates_of_a_retired_model_is_priced_under_its_last_version(
    migrated_db_url: str,
) -> None:
    # With the 2026-12-03 row gone the store has nothing in force today, so a recording
    # without dates (pydantic-ai's parsed_body files) is priced under the version in force
    # while Claude 3 Opus served, with a note saying so ($15 / $75, caching from 2024-08-14).
    served = served_contract(
        ContractStore(migrated_db_url), "anthropic", "claude-3-opus-20240229", None, TODAY
    )
    assert served.terms.effective_to == dt.date(2026, 1, 5)
    assert (served.terms.input_per_mtok, served.terms.output_per_mtok) == (Decimal(15), Decimal(75))
    assert served.note is not None and "last version" in served.note


def test_a_dated_request_after_the_retirement_is_still_refused(migrated_db_url: str) -> None:
    # pydantic-ai's test_anthropic_model_instructions.yaml says recorded_at 2026-03-06 (the
    # day the repository converted its cassettes), after Claude 3 Opus retired (2026-01-05).
    # The store refuses that day, naming the stored versions; whether such a date should be
    # taken as wrong is a pricing rule (contracts/served.py), not a contract version.
    store = ContractStore(migrated_db_url)
    with pytest.raises(UnknownContractError, match=r"2024-08-14, 2026-01-05\)\)$"):
        served_contract(store, "anthropic", "claude-3-opus-latest", dt.date(2026, 3, 6), TODAY)


def _rows(url: str) -> list[tuple[object, ...]]:
    with db.get_engine(url).connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT provider, model, effective_from, effective_to, mode, origin,"
                    " (SELECT count(*) FROM contract_alias a WHERE a.contract_id = v.id),"
                    " (SELECT count(*) FROM contract_ttl_option t WHERE t.contract_id = v.id)"
                    " FROM contract_version v ORDER BY provider, model, effective_from"
                )
            )
        )


def test_downgrade_gives_back_exactly_what_the_previous_revision_stored(sqlite_url: str) -> None:
    migration = Path(__file__).parents[2] / "migrations/versions/0023_seed_contracts_v15.py"
    previous = str(run_path(str(migration))["down_revision"])
    db.upgrade(sqlite_url, previous)
    before = _rows(sqlite_url)
    db.upgrade(sqlite_url, "0023_seed_contracts_v15")
    after = _rows(sqlite_url)
    # The upgrade removes only the six retired models' rows of 2026-12-03.
    removed = [row for row in before if row not in after]
    assert [(row[0], row[1], str(row[2]), row[5]) for row in removed] == [
        ("anthropic", "claude-3-haiku", "2026-12-03", "seed:contracts-v3"),
        ("anthropic", "claude-3-opus-latest", "2026-12-03", "seed:contracts-v3"),
        ("anthropic", "claude-3-sonnet", "2026-12-03", "seed:contracts-v3"),
        ("openai", "gpt-5.2-chat-latest", "2026-12-03", "seed:contracts-v3"),
        ("openai", "o1-mini", "2026-12-03", "seed:contracts-v3"),
        ("openai", "o1-preview", "2026-12-03", "seed:contracts-v3"),
    ]
    assert {row[5] for row in after if row not in before} == {"seed:contracts-v15"}
    db.downgrade(sqlite_url, previous)
    assert _rows(sqlite_url) == before
    db.get_engine(sqlite_url).dispose()
