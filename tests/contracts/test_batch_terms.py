"""Batch terms (revision 0034, batch-terms-v1.json): batch and flex requests billed at the
dated batch prices, by hand from the documented prices (docs/contracts.md, "Batch terms").

Expected terms are what the sources state, written here from them, not from the data file:

- OpenAI's Batch guide (https://platform.openai.com/docs/guides/batch): "50% cost discount
  compared to synchronous APIs".
- OpenAI's Flex guide (https://developers.openai.com/api/docs/guides/flex-processing): "Tokens
  are priced at Batch API rates, with additional discounts from prompt caching".
- Anthropic's batch-processing page
  (https://platform.claude.com/docs/en/build-with-claude/batch-processing): "All usage is
  charged at 50% of the standard API prices"; "The pricing discounts from prompt caching and
  Message Batches can stack".
- Google's "Batch Mode in the Gemini API" (2025-07-07): "priced at 50% less than the standard
  rate".

On-demand prices used below (docs/contracts.md's sources for each contract version):
gpt-4o-mini $0.15 input / $0.60 output per MTok, cached input 50% ($0.075); gpt-3.5-turbo
(2024) $0.50 / $1.50, no caching; Claude Haiku 3.5 $0.80 / $4, 5-minute write 1.25x ($1.00),
read 0.1x ($0.08); o4-mini $1.10 / $4.40.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.contracts.batch_terms import (
    SEED_FILE_V2,
    TokenClass,
    read_terms_file,
    seed_terms,
    term_for,
    terms_from_document,
)
from cachecast.contracts.errors import ContractFormatError
from cachecast.core import db
from cachecast.logs.canonical import SERVICE_TIER_NOTES
from tests.logs.helpers import write_jsonl

ALL = {"input", "cache_read", "cache_write", "output"}


def cli(args: list[str], url: str) -> Any:
    result = CliRunner().invoke(app, args, env={"CACHECAST_DATABASE_URL": url})
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# --- the data ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "tier", "start", "classes"),
    [
        ("openai", "batch", dt.date(2024, 4, 15), ALL),
        ("openai", "flex", dt.date(2025, 4, 17), ALL),
        ("anthropic", "batch", dt.date(2024, 10, 8), ALL),  # the discounts stack (cited above)
        ("google", "batch", dt.date(2025, 7, 7), {"input", "output"}),
    ],
)
def test_seeded_terms_are_what_the_sources_state(
    provider: str, tier: str, start: dt.date, classes: set[str]
) -> None:
    (term,) = [t for t in seed_terms() if (t.provider, t.tier) == (provider, tier)]
    assert term.effective_from == start
    assert term.effective_to is None
    assert term.price_ratio == Decimal("0.5")  # "50%" on every page cited
    assert {token_class.value for token_class in term.applies_to} == classes
    assert term.source.startswith("https://")
    assert term.notes


def test_no_term_for_a_provider_without_a_sourced_one() -> None:
    # Bedrock, Mistral and Vertex AI batch prices are not dated by any stored source
    # (docs/contracts.md, "Batch terms"): their batch requests keep the note. Azure and Groq
    # are seeded apart, by batch-terms-v2 (tests/contracts/test_batch_terms_v2.py).
    terms = seed_terms() + seed_terms(SEED_FILE_V2)
    for provider in ("bedrock", "mistral", "vertex"):
        assert term_for(terms, provider, "any", "batch", dt.date(2026, 1, 1)) is None


def test_a_term_applies_from_its_first_day_only() -> None:
    terms = seed_terms()
    assert term_for(terms, "openai", "gpt-4o-mini", "batch", dt.date(2024, 4, 14)) is None
    found = term_for(terms, "openai", "gpt-4o-mini", "batch", dt.date(2024, 4, 15))
    assert found is not None and found.discounts(TokenClass.CACHE_READ)
    assert term_for(terms, "openai", "gpt-4o-mini", "priority", dt.date(2025, 1, 1)) is None


def document(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"format": "cachecast-batch-terms", "format_version": 1, "terms": list(terms)}


TERM = {
    "provider": "openai",
    "models": ["gpt-4o"],
    "tier": "batch",
    "effective_from": "2024-04-15",
    "effective_to": None,
    "price_ratio": "0.5",
    "applies_to": ["input", "output"],
    "verified_on": "2026-12-05",
    "source": "https://example.invalid/batch",
    "notes": "test",
}


@pytest.mark.parametrize(
    ("terms", "entry", "field"),
    [
        ([{**TERM, "price_ratio": "1.5"}], "terms[0]", "price_ratio"),
        ([{**TERM, "applies_to": ["storage"]}], "terms[0]", "applies_to.0"),
        ([{**TERM, "tier": "priority"}], "terms[0]", "tier"),
        ([{**TERM, "applies_to": []}], "terms[0]", "applies_to"),
        # Two terms that could both price one gpt-4o batch request on 2025-01-01.
        ([TERM, {**TERM, "models": None, "effective_from": "2025-01-01"}], "terms[1]", ""),
    ],
)
def test_a_bad_terms_file_is_refused_naming_the_entry(
    tmp_path: Path, terms: list[dict[str, Any]], entry: str, field: str
) -> None:
    path = tmp_path / "terms.json"
    path.write_text(json.dumps(document(*terms)), encoding="utf-8")
    with pytest.raises(ContractFormatError) as caught:
        read_terms_file(path)
    assert caught.value.file == str(path)
    assert caught.value.entry == entry
    assert caught.value.field.startswith(field)


def test_a_binary_float_ratio_is_refused_and_a_json_number_read_exactly(tmp_path: Path) -> None:
    with pytest.raises(ContractFormatError, match="exact decimal"):
        terms_from_document(document({**TERM, "price_ratio": 0.6}), "terms.json")
    path = tmp_path / "terms.json"
    path.write_text(json.dumps(document({**TERM, "price_ratio": 0.6})), encoding="utf-8")
    (term,) = read_terms_file(path)  # the file's 0.6 is read as the decimal 0.6, not a float
    assert term.price_ratio == Decimal("0.6")


# --- the migration ----------------------------------------------------------------------------


def test_migration_0034_up_and_down_on_a_sqlite_file(sqlite_url: str) -> None:
    db.upgrade(sqlite_url, "0033_seed_contracts_v25")
    assert ContractStore(sqlite_url).batch_terms() == []  # no table: no terms, no error
    db.upgrade(sqlite_url, "0034_batch_terms")
    stored = ContractStore(sqlite_url).batch_terms()
    assert sorted(stored, key=lambda t: (t.provider, t.tier)) == sorted(
        seed_terms(), key=lambda t: (t.provider, t.tier)
    )
    assert [t.tier for t in ContractStore(sqlite_url).batch_terms("OpenAI")] == ["batch", "flex"]
    db.downgrade(sqlite_url, "0033_seed_contracts_v25")
    engine = db.get_engine(sqlite_url)
    assert not sa.inspect(engine).has_table("batch_term")
    assert ContractStore(sqlite_url).batch_terms() == []
    engine.dispose()


# --- the bills --------------------------------------------------------------------------------


def openai_output(path: Path, model: str, created: int, usages: list[dict[str, Any]]) -> Path:
    return write_jsonl(
        path,
        [
            {
                "id": f"batch_req_{n}",
                "custom_id": f"req-{n}",
                "response": {
                    "status_code": 200,
                    "request_id": f"r{n}",
                    "body": {
                        "id": f"chatcmpl-{n}",
                        "object": "chat.completion",
                        "created": created,
                        "model": model,
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": "ok"}}
                        ],
                        "usage": usage,
                    },
                },
                "error": None,
            }
            for n, usage in enumerate(usages, start=1)
        ],
    )


def test_an_openai_batch_output_is_billed_at_half_price(
    tmp_path: Path, migrated_db_url: str
) -> None:
    usage = {
        "prompt_tokens": 2048,
        "completion_tokens": 100,
        "total_tokens": 2148,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    # 2025-06-02T10:00:00Z; gpt-4o-mini, OpenAI batch term in force from 2024-04-15.
    path = openai_output(tmp_path / "out.jsonl", "gpt-4o-mini-2024-07-18", 1_748_858_400, [usage])
    report = cli(["reconcile", str(path), "--json"], migrated_db_url)
    (row,) = report["requests"]
    # Observed, on demand: 1,024 uncached x $0.15 = $0.0001536; 1,024 cached x $0.075
    # = $0.0000768; 100 output x $0.60 = $0.00006; total $0.0002904. At batch prices (reads
    # too: the discounts stack): x 0.5 = $0.0001452.
    assert Decimal(row["observed_cost"]) == Decimal("0.0001452")
    (target,) = report["targets"]
    (note,) = [n for n in target["notes"] if n.startswith("billed at batch prices")]
    assert "50% of on-demand" in note and "from 2024-04-15" in note
    assert "platform.openai.com/docs/guides/batch" in note
    assert not [n for n in target["notes"] if n.startswith(SERVICE_TIER_NOTES["batch"])]


def test_anthropic_batch_results_with_cache_writes_and_reads(
    tmp_path: Path, migrated_db_url: str
) -> None:
    def message(n: int, usage: dict[str, int]) -> dict[str, Any]:
        return {
            "custom_id": f"q{n}",
            "result": {
                "type": "succeeded",
                "message": {
                    "id": f"msg_{n}",
                    "type": "message",
                    "model": "claude-3-5-haiku-20241022",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": {**usage, "service_tier": "batch"},
                },
            },
        }

    path = write_jsonl(
        tmp_path / "results.jsonl",
        [
            message(
                1,
                {
                    "input_tokens": 100,
                    "cache_creation_input_tokens": 2000,
                    "cache_read_input_tokens": 0,
                    "output_tokens": 50,
                },
            ),
            message(
                2,
                {
                    "input_tokens": 100,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 2000,
                    "output_tokens": 50,
                },
            ),
        ],
    )
    report = cli(["reconcile", str(path), "--at", "2025-06-02", "--json"], migrated_db_url)
    costs = {row["request_id"]: Decimal(row["observed_cost"]) for row in report["requests"]}
    # q1 on demand: 100 x $0.80 = $0.00008; 2,000 written x $1.00 = $0.002; 50 x $4 = $0.0002;
    # $0.00228. Batch (every class, the caching discount stacking): $0.00114.
    # q2 on demand: $0.00008 + 2,000 read x $0.08 = $0.00016 + $0.0002 = $0.00044; batch
    # $0.00022.
    assert costs == {"q1": Decimal("0.00114"), "q2": Decimal("0.00022")}


def gpt35_batch(tmp_path: Path, created: int) -> Path:
    usage = {"prompt_tokens": 13, "completion_tokens": 5, "total_tokens": 18}
    return openai_output(tmp_path / "out.jsonl", "gpt-3.5-turbo-0125", created, [usage, usage])


def test_a_batch_dated_before_the_batch_api_keeps_on_demand_and_the_note(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # 2024-03-01T00:00:00Z: six weeks before OpenAI's batch term starts (2024-04-15).
    path = gpt35_batch(tmp_path, 1_709_251_200)
    report = cli(["reconcile", str(path), "--json"], migrated_db_url)
    (target,) = report["targets"]
    # Each: 13 x $0.50 + 5 x $1.50 = $0.0000065 + $0.0000075 = $0.000014; two: $0.000028.
    assert Decimal(target["cost"]) == Decimal("0.000028")
    assert f"{SERVICE_TIER_NOTES['batch']} (2 requests)" in target["notes"]


def test_the_same_batch_after_the_launch_costs_half(tmp_path: Path, migrated_db_url: str) -> None:
    path = gpt35_batch(tmp_path, 1_714_521_600)  # 2024-05-01T00:00:00Z
    report = cli(["reconcile", str(path), "--json"], migrated_db_url)
    (target,) = report["targets"]
    # $0.000028 on demand (above) x 0.5 = $0.000014.
    assert Decimal(target["cost"]) == Decimal("0.000014")
    assert not [n for n in target["notes"] if n.startswith(SERVICE_TIER_NOTES["batch"])]


def flex_log(tmp_path: Path, day: str) -> Path:
    return write_jsonl(
        tmp_path / "flex.jsonl",
        [
            {
                "timestamp": f"{day}T10:00:00Z",
                "provider": "openai",
                "request": {"model": "o4-mini", "messages": [{"role": "user", "content": "Hi"}]},
                "response": {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "model": "o4-mini-2025-04-16",
                    "service_tier": "flex",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 8, "completion_tokens": 20, "total_tokens": 28},
                },
            }
        ],
    )


def test_a_flex_response_is_billed_at_batch_rates(tmp_path: Path, migrated_db_url: str) -> None:
    report = cli(["reconcile", str(flex_log(tmp_path, "2025-06-02")), "--json"], migrated_db_url)
    (row,) = report["requests"]
    # On demand: 8 x $1.10 = $0.0000088; 20 x $4.40 = $0.000088; $0.0000968. Flex: x 0.5
    # = $0.0000484.
    assert Decimal(row["observed_cost"]) == Decimal("0.0000484")
    (target,) = report["targets"]
    assert [n for n in target["notes"] if n.startswith("billed at flex prices: 50%")]


def test_a_flex_response_before_the_flex_term_keeps_the_note(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # o4-mini's first day (2025-04-16) is the day before the flex term's start.
    report = cli(["reconcile", str(flex_log(tmp_path, "2025-04-16")), "--json"], migrated_db_url)
    (row,) = report["requests"]
    assert Decimal(row["observed_cost"]) == Decimal("0.0000968")  # on demand (above)
    (target,) = report["targets"]
    assert f"{SERVICE_TIER_NOTES['flex']} (1 requests)" in target["notes"]


def test_what_a_flex_miss_would_have_saved_is_priced_at_flex_rates(
    tmp_path: Path, migrated_db_url: str
) -> None:
    # One o4-mini flex request of 1,500 prompt tokens (the token ids themselves, so our count
    # is the provider's), none read from cache: all 1,500 are first sight. Reading them would
    # have cost the read price instead of the input price, both at the flex term's 50%:
    # 1,500 x ($1.10 x 0.5 - $0.275 x 0.5) / 1e6 = 1,500 x $0.4125 / 1e6 = $0.00061875
    # (at on-demand rates it would read $0.0012375, twice what the bill could have dropped).
    prompt = [1000 + position % 50 for position in range(1500)]
    log = write_jsonl(
        tmp_path / "flex_tokens.jsonl",
        [
            {
                "timestamp": "2025-06-02T10:00:00Z",
                "provider": "openai",
                "model": "o4-mini",
                "request_id": "r-1",
                "request": {"tokens": prompt},
                "response": {
                    "model": "o4-mini-2025-04-16",
                    "service_tier": "flex",
                    "usage": {
                        "prompt_tokens": 1500,
                        "completion_tokens": 20,
                        "total_tokens": 1520,
                        "prompt_tokens_details": {"cached_tokens": 0},
                    },
                },
            }
        ],
    )
    report = cli(["reconcile", str(log), "--json"], migrated_db_url)
    (target,) = report["targets"]
    assert target["miss_causes"] == [
        {"cause": "first_sight", "tokens": 1500, "cost_lost": "0.00061875"}
    ]
