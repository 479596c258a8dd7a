"""Revision 0037 (contracts-v27.json): open-weight models on Together AI, Fireworks AI,
SambaNova Cloud, Cloudflare Workers AI and DeepInfra, and OpenRouter's listed price for
``qwen/qwen-2.5-vl-7b-instruct``.

Expected terms are what the sources in docs/contracts.md ("contracts-v27") state, written here
from those sources, not from the data file:

- Fireworks's serverless pricing table (https://docs.fireworks.ai/serverless/pricing), input /
  cached input / output per 1M tokens: "OpenAI GPT OSS 120B | $0.15 | $0.015 | $0.60",
  "OpenAI GPT OSS 20B | $0.07 | $0.035 | $0.30", "DeepSeek V3 family | $0.56 | $0.28 | $1.68",
  "GLM 4.7 | $0.60 | $0.30 | $2.20"; its prompt caching guide
  (https://docs.fireworks.ai/guides/prompt-caching): "enabled by default for all Fireworks
  models", "The default discount is 50%".
- genai-prices 0.2.5, provider "together" (pricing page https://www.together.ai/pricing) [S]:
  meta-llama/Llama-3.3-70B-Instruct-Turbo $0.88 / $0.88 per MTok; LiteLLM 1.110.2 [S]:
  its deprecation_date "2026-10-22".
- LiteLLM 1.110.2 "sambanova/Meta-Llama-3.3-70B-Instruct" (source
  https://cloud.sambanova.ai/plans/pricing) [S]: 6e-07 / 1.2e-06 per token, $0.60 / $1.20.
- genai-prices 0.2.5 and LiteLLM 1.110.2 for Workers AI's
  "@cf/meta/llama-3.3-70b-instruct-fp8-fast" (https://developers.cloudflare.com/workers-ai/platform/pricing/)
  [S]: $0.293 / $2.253 per MTok.
- An OpenRouter models API snapshot (https://openrouter.ai/api/v1/models) [S]:
  qwen/qwen-2.5-vl-7b-instruct "prompt_per_1m": "$0.2000", "completion_per_1m": "$0.2000",
  "created": 1724803200 (2024-08-28)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.contracts.history import history_gaps
from cachecast.contracts.model import CacheMode
from cachecast.core.errors import ContractNotYetInForceError
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.contracts.builders import bill_of_counts, seed_round_trip
from tests.logs.helpers import vcr_cassette, vcr_interaction

TODAY = dt.date(2026, 12, 5)
USER = [{"role": "user", "content": "Say hello in one word."}]


def _chat(model: str, usage: dict[str, int], created: int) -> dict[str, Any]:
    # A Chat Completions response; ``created`` (Unix seconds) dates the request.
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}}],
        "usage": usage,
    }


def _seeded() -> list[tuple[str, str]]:
    # The file lists what the revision seeds; which contracts they are, not their terms.
    data = resources.files("cachecast.contracts.data").joinpath("contracts-v27.json")
    contracts = json.loads(data.read_text())["contracts"]
    return sorted({(c["provider"], c["model"]) for c in contracts})


@pytest.mark.parametrize(
    ("model", "day", "prices", "read"),
    [
        ("gpt-oss-120b", dt.date(2025, 8, 5), ("0.15", "0.60"), "0.1"),  # 0.015 / 0.15
        ("gpt-oss-20b", dt.date(2025, 9, 1), ("0.07", "0.30"), "0.5"),  # 0.035 / 0.07
        ("deepseek-v3p1", dt.date(2025, 10, 1), ("0.56", "1.68"), "0.5"),  # 0.28 / 0.56
        ("glm-4p7", dt.date(2026, 1, 15), ("0.60", "2.20"), "0.5"),  # 0.30 / 0.60
    ],
)
def test_fireworks_caches_automatically_at_its_listed_cached_rate(
    migrated_db_url: str, model: str, day: dt.date, prices: tuple[str, str], read: str
) -> None:
    store = ContractStore(migrated_db_url)
    terms = store.as_of("fireworks_ai", model, day)
    assert (terms.input_per_mtok, terms.output_per_mtok) == tuple(Decimal(p) for p in prices)
    assert terms.mode is CacheMode.AUTOMATIC
    assert terms.read_multiplier == Decimal(read)
    # The API id is the alias.
    by_alias = store.as_of("fireworks_ai", f"accounts/fireworks/models/{model}", day)
    assert by_alias.model == model


def test_together_llama_3_3_70b_turbo_from_release_to_deprecation(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    terms = store.as_of(
        "together_ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", dt.date(2025, 6, 6)
    )
    assert (terms.input_per_mtok, terms.output_per_mtok) == (Decimal("0.88"), Decimal("0.88"))
    assert terms.mode is CacheMode.NONE
    assert terms.effective_to == dt.date(2026, 10, 22)
    with pytest.raises(ContractNotYetInForceError, match="2024-12-06"):
        store.as_of("together_ai", "llama-3.3-70b-instruct-turbo", dt.date(2024, 12, 5))


def test_sambanova_and_workers_ai_llama_3_3_70b(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    samba = store.as_of("sambanova", "Meta-Llama-3.3-70B-Instruct", dt.date(2025, 6, 6))
    assert (samba.input_per_mtok, samba.output_per_mtok) == (Decimal("0.60"), Decimal("1.20"))
    workers = store.as_of(
        "cloudflare", "@cf/meta/llama-3.3-70b-instruct-fp8-fast", dt.date(2025, 12, 30)
    )
    assert (workers.input_per_mtok, workers.output_per_mtok) == (
        Decimal("0.293"),
        Decimal("2.253"),
    )
    assert {samba.mode, workers.mode} == {CacheMode.NONE}


@pytest.mark.parametrize(("provider", "model"), _seeded())
def test_no_gap_from_first_day(migrated_db_url: str, provider: str, model: str) -> None:
    summary = history_gaps(ContractStore(migrated_db_url).history(provider, model), TODAY)
    assert summary.gaps == []
    assert summary.launch_known == 1


def test_bills_by_hand(migrated_db_url: str) -> None:
    store = ContractStore(migrated_db_url)
    together = store.as_of("together_ai", "llama-3.3-70b-instruct-turbo", dt.date(2025, 6, 6))
    # 1,000 input + 100 output at $0.88 / $0.88 per MTok: 0.00088 + 0.000088 = $0.000968.
    assert bill_of_counts(1_000, 100, together) == Decimal("0.000968")
    fireworks = store.as_of("fireworks_ai", "gpt-oss-120b", dt.date(2025, 9, 1))
    # 1,000 input of which 800 cached + 100 output at $0.15 in, $0.015 cached, $0.60 out:
    # 200 x 0.15 / 1e6 = 0.00003; 800 x 0.015 / 1e6 = 0.000012; 100 x 0.60 / 1e6 = 0.00006;
    # total $0.000102.
    assert bill_of_counts(1_000, 100, fireworks, cached=800) == Decimal("0.000102")


def test_a_together_recording_is_priced(migrated_db_url: str, tmp_path: Path) -> None:
    # EndlessInternational/intelligence's Together cassette (2025-06-06): 43 in, 2 out.
    path = vcr_cassette(
        tmp_path / "together.yaml",
        vcr_interaction(
            "https://api.together.xyz/v1/chat/completions",
            {"model": "meta-llama/Llama-3.3-70B-Instruct-Turbo", "messages": USER},
            _chat(
                "meta-llama/Llama-3.3-70B-Instruct-Turbo",
                {"prompt_tokens": 43, "completion_tokens": 2, "total_tokens": 45},
                1749238633,  # 2025-06-06 19:37:13 UTC
            ),
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    [target] = report.targets
    # 45 tokens at $0.88 per MTok: 45 x 0.88 / 1e6 = $0.0000396.
    assert target.summary.observed_cost == Decimal("0.0000396")


def test_openrouter_lists_a_price_for_open_weights_no_vendor_api_serves(
    migrated_db_url: str, tmp_path: Path
) -> None:
    # EndlessInternational/intelligence's OpenRouter cassette (2025-06-06), served by Hyperbolic:
    # the slug names Qwen, whose own API does not serve this model.
    path = vcr_cassette(
        tmp_path / "openrouter.yaml",
        vcr_interaction(
            "https://openrouter.ai/api/v1/chat/completions",
            {"model": "qwen/qwen-2.5-vl-7b-instruct", "messages": USER},
            _chat(
                "qwen/qwen-2.5-vl-7b-instruct",
                {"prompt_tokens": 27, "completion_tokens": 3, "total_tokens": 30},
                1749237604,  # 2025-06-06 19:20:04 UTC
            ),
        ),
    )
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([path])), ContractStore(migrated_db_url)
    )
    assert report.unpriced == {}
    [target] = report.targets
    assert (target.provider, target.model) == ("openrouter", "qwen-2.5-vl-7b-instruct")
    # 30 tokens at $0.20 per MTok: 30 x 0.20 / 1e6 = $0.000006.
    assert target.summary.observed_cost == Decimal("0.000006")


def test_upgrade_only_adds_and_downgrade_gives_back_the_previous_rows(sqlite_url: str) -> None:
    added = seed_round_trip(sqlite_url, "0037_seed_contracts_v27")
    assert {row[5] for row in added} == {"seed:contracts-v27"}
    assert sorted((str(row[0]), str(row[1])) for row in added) == _seeded()
