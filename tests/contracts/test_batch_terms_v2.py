"""Batch terms v2 (revision 0035, batch-terms-v2.json): Azure OpenAI Global Batch and Groq's
Batch API (docs/contracts.md, "Batch terms").

Expected terms are what the sources state, written here from them:

- Microsoft's batch page (https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/batch):
  "at 50% less cost than global standard"; generally available in the docs of 2024-10-24 [S].
- Groq's batch page (https://console.groq.com/docs/batch): "Pricing is at a 50% cost discount
  compared to synchronous API pricing"; groq-python 0.18.0 (2025-02-05) "Add batch API" [S].

Groq bill by hand: llama-3.3-70b-versatile $0.59 in / $0.79 out per MTok, no caching
(contracts-v12, 2024-12-06 to 2026-08-16). A batch result of 2,000 prompt + 500 completion
tokens on 2025-06-02: on demand 2,000 x 0.59 / 1e6 + 500 x 0.79 / 1e6 = 0.00118 + 0.000395
= $0.001575; at the batch term x 0.5 = $0.0007875.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.contracts.batch_terms import SEED_FILE_V2, seed_terms, term_for
from cachecast.core import db
from tests.logs.helpers import write_jsonl


@pytest.mark.parametrize(
    ("provider", "start"),
    [("azure", dt.date(2024, 10, 24)), ("groq", dt.date(2025, 2, 5))],
)
def test_v2_terms_are_what_the_sources_state(provider: str, start: dt.date) -> None:
    (term,) = [t for t in seed_terms(SEED_FILE_V2) if t.provider == provider]
    assert term.tier == "batch"
    assert term.effective_from == start
    assert term.effective_to is None
    assert term.price_ratio == Decimal("0.5")
    # Neither source says whether cached input is discounted again under batch [U].
    assert {token_class.value for token_class in term.applies_to} == {"input", "output"}
    assert term.models is None
    assert term.source.startswith("https://")


def test_a_v2_term_applies_from_its_first_day_only() -> None:
    terms = seed_terms(SEED_FILE_V2)
    assert term_for(terms, "groq", "llama-3.3-70b-versatile", "batch", dt.date(2025, 2, 4)) is None
    assert term_for(terms, "groq", "llama-3.3-70b-versatile", "batch", dt.date(2025, 2, 5))
    assert term_for(terms, "azure", "gpt-4o", "batch", dt.date(2024, 10, 23)) is None
    assert term_for(terms, "groq", "llama-3.3-70b-versatile", "flex", dt.date(2025, 6, 1)) is None


def test_migration_0035_up_and_down_on_a_sqlite_file(sqlite_url: str) -> None:
    db.upgrade(sqlite_url, "0034_batch_terms")
    before = ContractStore(sqlite_url).batch_terms()
    assert {t.provider for t in before} == {"openai", "anthropic", "google"}
    db.upgrade(sqlite_url, "0035_batch_terms_v2")
    after = ContractStore(sqlite_url).batch_terms()
    added = [t for t in after if t not in before]
    assert sorted(added, key=lambda t: t.provider) == sorted(
        seed_terms(SEED_FILE_V2), key=lambda t: t.provider
    )
    assert len(after) == len(before) + 2
    db.downgrade(sqlite_url, "0034_batch_terms")
    assert ContractStore(sqlite_url).batch_terms() == before


def groq_output(created: int, prompt: int, completion: int) -> dict[str, Any]:
    """One line of a Groq batch output file: OpenAI's batch output shape, its body carrying
    ``x_groq`` (Groq's batch page)."""
    return {
        "id": "batch_req_1",
        "custom_id": "request-1",
        "response": {
            "status_code": 200,
            "request_id": "req_1",
            "body": {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": created,
                "model": "llama-3.3-70b-versatile",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
                "x_groq": {"id": "req_1"},
            },
        },
        "error": None,
    }


def test_a_groq_batch_output_is_billed_at_half_price(tmp_path: Path, migrated_db_url: str) -> None:
    # 1_748_858_400 = 2025-06-02T10:00:00Z.
    path = write_jsonl(tmp_path / "groq_out.jsonl", [groq_output(1_748_858_400, 2_000, 500)])
    result = CliRunner().invoke(
        app, ["reconcile", str(path), "--json"], env={"CACHECAST_DATABASE_URL": migrated_db_url}
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    (row,) = report["requests"]
    assert Decimal(row["observed_cost"]) == Decimal("0.0007875")  # worked in the docstring
    (target,) = report["targets"]
    assert (target["provider"], target["model"]) == ("groq", "llama-3.3-70b-versatile")
    (note,) = [n for n in target["notes"] if n.startswith("billed at batch prices")]
    assert "50% of on-demand" in note and "from 2025-02-05" in note
    assert "console.groq.com/docs/batch" in note
    # No caching is offered for the model (mode none, read price = input price): reading
    # would have saved nothing, even though the batch term halves input and not reads.
    assert target["miss_causes"] == [
        {"cause": "no_caching_offered", "tokens": 2_000, "cost_lost": "0"}
    ]
