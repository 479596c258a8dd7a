"""Logs priced under a contract version that offers no prompt caching (mode 'none').

A hand-built recorded log of three OpenAI chat completions, each with usage prompt_tokens 1500
(the body is the 1,500 token ids themselves, so our count is the provider's) and
completion_tokens 20, on a hand-built none contract at $0.50 in / $1.50 out per MTok. Each
request's bill, by hand: 1500 x 0.50 / 1e6 + 20 x 1.50 / 1e6 = 0.00075 + 0.00003 = $0.00078.
The prompts repeat, so any cache would read from the second request on; none does here. The
third response reports 1,024 cached tokens: on a day without caching that disputes the
contract."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from tests.contracts.test_mode_none import none_terms

PER_REQUEST = Decimal("0.00078")  # worked in the module docstring
PROMPT = [1000 + position % 50 for position in range(1500)]


@pytest.fixture
def none_db(migrated_db_url: str) -> str:
    ContractStore(migrated_db_url).add_version(none_terms())
    return migrated_db_url


def _log(tmp_path: Path, cached: tuple[int, ...] = (0, 0, 1024)) -> Path:
    records = [
        {
            "timestamp": f"2024-06-01T10:00:0{index * 4}Z",
            "provider": "openai",
            "model": "gpt-4-nocache-test",
            "request_id": f"r-{index + 1}",
            "request": {"tokens": PROMPT},
            "response": {
                "usage": {
                    "prompt_tokens": 1500,
                    "completion_tokens": 20,
                    "total_tokens": 1520,
                    "prompt_tokens_details": {"cached_tokens": tokens},
                }
            },
        }
        for index, tokens in enumerate(cached)
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _json(*args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_estimate_reads_nothing_and_bills_input_plus_output(none_db: str, tmp_path: Path) -> None:
    log = str(_log(tmp_path))
    target = "openai:gpt-4-nocache-test"
    report = _json("estimate", log, "-t", target, "--at", "2024-06-01", "--database-url", none_db)
    (result,) = report["targets"]
    assert result["contract"]["mode"] == "none" and result["contract"]["ttl_options"] == []
    assert (result["input_tokens"], result["cache_read_tokens"]) == (4500, 0)
    assert result["cache_write_tokens"] == 0
    assert Decimal(result["cost"]["total"]) == 3 * PER_REQUEST
    assert Decimal(result["cost_without_cache"]) == 3 * PER_REQUEST
    assert result["miss_causes"] == [
        {"cause": "no_caching_offered", "tokens": 4500, "cost_lost": "0"}
    ]
    text = CliRunner().invoke(
        app, ["estimate", log, "-t", target, "--at", "2024-06-01", "--database-url", none_db]
    )
    assert "(no prompt caching offered)" in text.stdout


def test_reconcile_predicts_no_reads_and_disputes_the_cached_day(
    none_db: str, tmp_path: Path
) -> None:
    report = _json("reconcile", str(_log(tmp_path)), "--limit", "0", "--database-url", none_db)
    summary = report["summary"]
    assert summary["requests"] == 3 and summary["predicted_cache_read_tokens"] == 0
    assert summary["observed_cache_read_tokens"] == 1024
    # Two requests exact (0 read predicted, 0 observed); the third read 1,024 of 1,500 tokens,
    # beyond max(8, 15) tokens of tolerance.
    assert (summary["exact_matches"], summary["within_tolerance"]) == (2, 2)
    assert summary["classes"] == {"contract_disputed": 1}
    # The observed bill of a request is the hand-worked one (reads cost the input price).
    assert Decimal(summary["observed_cost"]) == 3 * PER_REQUEST
    (row,) = [row for row in report["requests"] if not row["exact_match"]]
    assert row["request_id"] == "r-3" and row["classification"] == "contract_disputed"
    assert Decimal(row["observed_cost"]) == PER_REQUEST
    assert "the log shows 1024 cached tokens" in row["explanation"]
    assert (
        "offers no prompt caching (from its source, https://example.invalid/pricing)"
        in row["explanation"]
    )
    assert "the caching start date may be wrong" in row["explanation"]


def test_reconcile_without_cached_tokens_is_exact(none_db: str, tmp_path: Path) -> None:
    log = str(_log(tmp_path, cached=(0, 0, 0)))
    summary = _json("reconcile", log, "--database-url", none_db)["summary"]
    assert summary["exact_matches"] == 3 and summary["classes"] == {}
    assert (
        Decimal(summary["predicted_cost"]) == Decimal(summary["observed_cost"]) == 3 * PER_REQUEST
    )


def test_price_bills_input_and_output_and_refuses_cache_reads(none_db: str) -> None:
    args = ["price", "openai:gpt-4-nocache-test", "--at", "2024-06-01", "--database-url", none_db]
    report = _json(*args, "--input", "1500", "--output", "20")
    assert Decimal(report["cost"]["total"]) == PER_REQUEST
    refused = CliRunner().invoke(app, [*args, "--input", "500", "--cache-read", "1000"])
    assert refused.exit_code == 2
    assert "offers no prompt caching" in refused.output and "Traceback" not in refused.output


def test_simulate_refuses_a_provider_policy_with_why(none_db: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "simulate", str(_log(tmp_path)), "--policy", "automatic",
            "--target", "openai:gpt-4-nocache-test", "--at", "2024-06-01",
            "--database-url", none_db,
        ],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "offers no prompt caching" in result.output and "Traceback" not in result.output
