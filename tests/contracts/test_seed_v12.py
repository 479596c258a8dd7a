"""Revision 0020 (contracts-v12.json): Groq's models, from launch to shutdown.

Expected terms are what the sources in docs/contracts.md ("contracts-v12") state, written here
from those sources, not from the data file: per-MTok prices as genai-prices 0.2.3 lists them for
provider 'groq' (the gpt-oss input prices also in Groq's own changelog), earlier prices as the
secondary sources named below quote them; prompt caching only for
Kimi K2 from 2025-08-20 and for gpt-oss-20b / gpt-oss-120b from 2025-09-25 / 2025-10-21 (Groq's
changelog), reads at half the input price and no write fee (Groq's prompt caching page); every
other day is a day without caching (mode "none"). Shutdown days from Groq's deprecations page as
secondary sources quote it."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.served import served_contract
from cachecast.core.errors import ContractNotYetInForceError, UnknownContractError
from cachecast.logs.providers import resolve_provider
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.helpers import vcr_cassette

TODAY = dt.date(2026, 12, 5)

# Every Groq model contracts-v12 adds, with its launch day (lifecycle.json).
GROQ_MODELS = {
    "llama3-8b-8192": dt.date(2024, 4, 18),
    "llama3-70b-8192": dt.date(2024, 4, 18),
    "llama-3.1-8b-instant": dt.date(2024, 7, 23),
    "llama-3.1-70b-versatile": dt.date(2024, 7, 23),
    "llama-3.3-70b-versatile": dt.date(2024, 12, 6),
    "mixtral-8x7b-32768": dt.date(2024, 2, 1),
    "gemma-7b-it": dt.date(2024, 2, 21),
    "gemma2-9b-it": dt.date(2024, 6, 27),
    "deepseek-r1-distill-llama-70b": dt.date(2025, 1, 20),
    "llama-4-scout-17b-16e-instruct": dt.date(2025, 4, 5),
    "llama-4-maverick-17b-128e-instruct": dt.date(2025, 4, 5),
    "qwen3-32b": dt.date(2025, 4, 29),
    "gpt-oss-20b": dt.date(2025, 8, 5),
    "gpt-oss-120b": dt.date(2025, 8, 5),
    "kimi-k2-instruct": dt.date(2025, 7, 14),
    "kimi-k2-instruct-0905": dt.date(2025, 9, 5),
    "gpt-oss-safeguard-20b": dt.date(2025, 10, 29),
    "llama-3.2-11b-vision-preview": dt.date(2024, 9, 25),
    "llama-3.2-90b-vision-preview": dt.date(2024, 9, 25),
    "llama-guard-4-12b": dt.date(2025, 5, 9),
    "mistral-saba-24b": dt.date(2025, 2, 17),
}


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # (input, output) per MTok; genai-prices 0.2.3, provider 'groq' [S], unless noted.
        # llama3-8b-8192 at $0.10 out until LiteLLM's correction of 2024-06-25 "verified" on
        # Groq's site (BerriAI/litellm PR #4401; Mirascope PR #272 quotes $0.05 / $0.10).
        ("llama3-8b-8192", dt.date(2024, 5, 1), ("0.05", "0.1")),
        ("llama3-8b-8192", dt.date(2024, 6, 25), ("0.05", "0.08")),
        ("llama3-70b-8192", dt.date(2025, 8, 29), ("0.59", "0.79")),
        ("llama-3.1-8b-instant", dt.date(2026, 8, 15), ("0.05", "0.08")),
        ("llama-3.3-70b-versatile", dt.date(2025, 6, 1), ("0.59", "0.79")),
        ("mixtral-8x7b-32768", dt.date(2024, 6, 1), ("0.24", "0.24")),
        ("gemma2-9b-it", dt.date(2025, 1, 1), ("0.2", "0.2")),
        ("deepseek-r1-distill-llama-70b", dt.date(2025, 3, 1), ("0.75", "0.99")),
        # The API ids with a vendor prefix, as requests and responses carry them.
        ("meta-llama/llama-4-scout-17b-16e-instruct", dt.date(2025, 5, 1), ("0.11", "0.34")),
        ("meta-llama/llama-4-maverick-17b-128e-instruct", dt.date(2025, 5, 1), ("0.2", "0.6")),
        ("qwen/qwen3-32b", dt.date(2026, 7, 16), ("0.29", "0.59")),
        ("llama-3.2-90b-vision-preview", dt.date(2025, 1, 1), ("0.9", "0.9")),
        ("meta-llama/llama-guard-4-12b", dt.date(2026, 12, 5), ("0.2", "0.2")),
        # Launch prices of the gpt-oss models on Groq: "gpt-oss-20b - $0.10/$0.50",
        # "gpt-oss-120b - $0.15/$0.75" (BerriAI/litellm PR #13363, 2025-08-07).
        ("openai/gpt-oss-20b", dt.date(2025, 8, 5), ("0.1", "0.5")),
        ("openai/gpt-oss-120b", dt.date(2025, 10, 20), ("0.15", "0.75")),
        ("moonshotai/kimi-k2-instruct", dt.date(2025, 7, 14), ("1", "3")),
    ],
)
def test_days_without_groq_caching_bill_every_prompt_token_at_the_input_price(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("groq", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    assert terms.mode.value == "none"
    assert terms.read_multiplier == Decimal(1)
    assert terms.ttl_options == ()


@pytest.mark.parametrize(
    ("model", "day", "prices"),
    [
        # Kimi K2: caching "rolling out to Kimi K2 starting today" (Groq changelog, 2025-08-20).
        ("moonshotai/kimi-k2-instruct", dt.date(2025, 8, 20), ("1", "3")),
        ("moonshotai/kimi-k2-instruct-0905", dt.date(2025, 9, 5), ("1", "3")),
        # Groq's changelog of 2025-09-25 / 2025-10-21: "$0.037/M vs $0.075/M" and
        # "$0.075/M vs $0.15/M" (https://console.groq.com/docs/changelog) for the input prices;
        # outputs $0.30 and $0.60 (genai-prices 0.2.3).
        ("openai/gpt-oss-20b", dt.date(2025, 9, 25), ("0.075", "0.3")),
        ("gpt-oss-120b", dt.date(2025, 10, 21), ("0.15", "0.6")),
        ("openai/gpt-oss-120b", dt.date(2026, 12, 5), ("0.15", "0.6")),
        # "Prompt caching enabled" at its launch (Groq changelog, 2025-10-29).
        ("openai/gpt-oss-safeguard-20b", dt.date(2025, 10, 29), ("0.075", "0.3")),
    ],
)
def test_groq_caching_days_read_at_half_the_input_price_without_a_write_fee(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str]
) -> None:
    terms = ContractStore(migrated_db_url).as_of("groq", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == (
        Decimal(prices[0]),
        Decimal(prices[1]),
    )
    # https://console.groq.com/docs/prompt-caching: automatic; "a 50% discount for cached
    # input tokens"; "no additional fees"; cached data "expires after 2 hours without use";
    # cached_tokens are counted inside prompt_tokens.
    assert terms.mode.value == "automatic"
    assert terms.read_multiplier == Decimal("0.5")
    assert [(o.ttl_seconds, o.write_multiplier) for o in terms.ttl_options] == [(7200, 1)]
    assert terms.reported_input_includes_cached is True


def test_the_day_before_groq_cached_a_model_has_no_caching(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    for model, first_cached in (
        ("kimi-k2-instruct", dt.date(2025, 8, 20)),
        ("gpt-oss-20b", dt.date(2025, 9, 25)),
        ("gpt-oss-120b", dt.date(2025, 10, 21)),
    ):
        before = store.as_of("groq", model, first_cached - dt.timedelta(days=1))
        on = store.as_of("groq", model, first_cached)
        assert (before.mode.value, on.mode.value) == ("none", "automatic")


@pytest.mark.parametrize(
    ("model", "shutdown"),
    [
        # Groq's deprecations page (https://console.groq.com/docs/deprecations) as quoted by
        # the secondary sources in the versions' notes.
        ("mixtral-8x7b-32768", dt.date(2025, 3, 20)),
        ("llama3-8b-8192", dt.date(2025, 8, 30)),
        ("deepseek-r1-distill-llama-70b", dt.date(2025, 10, 2)),
        ("gemma2-9b-it", dt.date(2025, 10, 8)),
        ("kimi-k2-instruct", dt.date(2025, 10, 10)),
        ("llama-4-maverick-17b-128e-instruct", dt.date(2026, 3, 9)),
        ("kimi-k2-instruct-0905", dt.date(2026, 4, 15)),
        ("llama-4-scout-17b-16e-instruct", dt.date(2026, 7, 17)),
        ("qwen3-32b", dt.date(2026, 7, 17)),
        ("llama-3.2-11b-vision-preview", dt.date(2025, 4, 14)),
        ("llama-3.3-70b-versatile", dt.date(2026, 8, 16)),
    ],
)
def test_a_groq_model_is_not_priced_from_its_shutdown(
    migrated_db_url: str, model: str, shutdown: dt.date
) -> None:
    store = ContractStore(migrated_db_url)
    assert store.as_of("groq", model, shutdown - dt.timedelta(days=1)).effective_to == shutdown
    with pytest.raises(UnknownContractError, match="no contract version in force"):
        store.as_of("groq", model, shutdown)


@pytest.mark.parametrize(
    ("written", "model"),
    [
        # As a request to api.groq.com names the model (the reader's provider is "groq").
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("meta-llama/llama-4-scout-17b-16e-instruct", "llama-4-scout-17b-16e-instruct"),
        ("qwen/qwen3-32b", "qwen3-32b"),
        ("meta-llama/llama-guard-4-12b", "llama-guard-4-12b"),
        ("moonshotai/kimi-k2-instruct-0905", "kimi-k2-instruct-0905"),
        ("llama-3.3-70b-versatile", "llama-3.3-70b-versatile"),
        # LiteLLM's routing name, as a LiteLLM log writes it.
        ("groq/openai/gpt-oss-20b", "gpt-oss-20b"),
    ],
)
def test_groq_api_ids_resolve_to_their_contracts(
    migrated_db_url: str, written: str, model: str
) -> None:
    provider, name = resolve_provider("groq", written)
    assert provider == "groq" and name is not None
    terms = ContractStore(migrated_db_url).as_of(provider, name, dt.date(2025, 9, 10))
    assert terms.model == model


def test_a_groq_request_before_the_launch_is_one_error_naming_it(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    with pytest.raises(ContractNotYetInForceError, match="launched on 2025-08-05"):
        served_contract(store, "groq", "gpt-oss-120b", dt.date(2025, 8, 4), TODAY)


def test_every_groq_model_is_priced_from_its_launch_without_a_gap(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    history = store.list(provider="groq")
    assert {terms.model for terms in history} == set(GROQ_MODELS)
    summary = history_gaps(history, TODAY)
    assert summary.gaps == []
    assert summary.launch_unknown == []
    for model, launch in GROQ_MODELS.items():
        assert store.as_of("groq", model, launch).effective_from == launch


# A chat completion as Groq documents it (https://console.groq.com/docs/api-reference):
# usage with Groq's timings, prompt_tokens_details.cached_tokens, and the x_groq request id.
def _interaction(model: str, messages: str, date: str, created: int, usage: str) -> str:
    response = {
        "id": f"chatcmpl-{created}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Replace the chain."},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": json.loads(usage),
        "system_fingerprint": "fp_a1b2c3d4e5",
        "x_groq": {"id": f"req_{created}"},
    }
    # JSON holds no single quote, so each body is a single-quoted YAML scalar as vcrpy writes.
    return f"""- request:
    body: '{{"messages":{messages},"model":"{model}"}}'
    headers:
      Content-Type:
      - application/json
    method: POST
    uri: https://api.groq.com/openai/v1/chat/completions
  response:
    body:
      string: '{json.dumps(response, separators=(",", ":"))}'
    headers:
      Content-Type:
      - application/json
      Date:
      - {date}
    status:
      code: 200
      message: OK
"""


FIRST_TURN = (
    '[{"role":"system","content":"You answer questions about a bicycle repair shop."},'
    '{"role":"user","content":"My chain skips under load. What first?"}]'
)
SECOND_TURN = FIRST_TURN[:-1] + (
    ',{"role":"assistant","content":"Check chain wear first."},'
    '{"role":"user","content":"It reads 0.75. Then what?"}]'
)


def test_a_groq_cassette_with_cache_reads_is_billed_at_the_documented_prices(
    migrated_db_url: str, tmp_path: Path
) -> None:
    cassette = vcr_cassette(
        tmp_path / "groq_chat.yaml",
        _interaction(
            "openai/gpt-oss-120b",
            FIRST_TURN,
            "Wed, 12 Nov 2025 10:00:00 GMT",
            1762941600,
            '{"queue_time":0.041,"prompt_tokens":2000,"prompt_time":0.012,"completion_tokens":100,'
            '"completion_time":0.21,"total_tokens":2100,"total_time":0.222,'
            '"prompt_tokens_details":{"cached_tokens":0}}',
        ),
        _interaction(
            "openai/gpt-oss-120b",
            SECOND_TURN,
            "Wed, 12 Nov 2025 10:01:00 GMT",
            1762941660,
            '{"queue_time":0.038,"prompt_tokens":2100,"prompt_time":0.004,"completion_tokens":50,'
            '"completion_time":0.1,"total_tokens":2150,"total_time":0.104,'
            '"prompt_tokens_details":{"cached_tokens":1920}}',
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([cassette])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    (target,) = report.targets
    assert target.contract.version == "groq/gpt-oss-120b@2025-10-21"
    # Bills by hand at $0.15 in / $0.60 out per MTok, reads at half the input ($0.075), on
    # 2025-11-12 (caching for gpt-oss-120b from 2025-10-21):
    #   turn 1: 2,000 prompt, 0 cached, 100 out: 2,000 x 0.15 / 1e6 = 0.0003;
    #           100 x 0.60 / 1e6 = 0.00006; total 0.00036
    #   turn 2: 2,100 prompt, 1,920 cached, 50 out: 180 x 0.15 / 1e6 = 0.000027;
    #           1,920 x 0.075 / 1e6 = 0.000144; 50 x 0.60 / 1e6 = 0.00003; total 0.000201
    rows = sorted(report.requests, key=lambda row: row.line)
    assert [row.observed_cost for row in rows] == [Decimal("0.00036"), Decimal("0.000201")]
    assert [row.observed_cache_read_tokens for row in rows] == [0, 1920]
    assert report.summary.observed_cost == Decimal("0.000561")


def test_a_groq_request_on_a_day_without_caching_pays_the_input_price(
    migrated_db_url: str, tmp_path: Path
) -> None:
    cassette = vcr_cassette(
        tmp_path / "groq_chat.yaml",
        _interaction(
            "llama-3.3-70b-versatile",
            FIRST_TURN,
            "Sun, 01 Jun 2025 09:00:00 GMT",
            1748768400,
            '{"queue_time":0.02,"prompt_tokens":1000,"prompt_time":0.01,"completion_tokens":100,'
            '"completion_time":0.1,"total_tokens":1100,"total_time":0.11}',
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([cassette])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    (target,) = report.targets
    assert target.contract.version == "groq/llama-3.3-70b-versatile@2024-12-06"
    # 1,000 input + 100 output at $0.59 / $0.79 per MTok (genai-prices 0.2.3 [S]):
    # 1,000 x 0.59 / 1e6 = 0.00059; 100 x 0.79 / 1e6 = 0.000079; total 0.000669.
    (row,) = report.requests
    assert row.observed_cost == Decimal("0.000669")
