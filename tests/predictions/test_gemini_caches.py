"""Gemini explicit caches as a recording shows them: ``cachedContents`` created, used by a
``generateContent`` call naming it, deleted. Terms (Gemini API caching docs, as stored in
the contract gemini-2.5-flash@2026-10-01): creation billed at the input price ($0.30/MTok),
reads at 0.1x, storage $1.00 per million tokens per hour for the cache's lifetime."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.billing import bill_request
from cachecast.simulator.pricing import PerRequestRow
from cachecast.usecases.estimate import EstimateRequest, estimate
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.logs.test_http import entry

GEMINI = "https://generativelanguage.googleapis.com/v1beta"
CACHED, OWN = 2_500, 40  # the provider's counts: the cache, the request's own part
AT = dt.date(2026, 11, 1)


def recording(tmp_path: Path, deleted_after_minutes: int | None) -> Path:
    entries = [
        entry(
            f"{GEMINI}/cachedContents",
            {
                "model": "models/gemini-2.5-flash",
                "systemInstruction": {"parts": [{"text": "You answer from the manual."}]},
                "contents": [{"role": "user", "parts": [{"text": "Manual page. " * 600}]}],
                "ttl": "3600s",
            },
            {
                "name": "cachedContents/c1",
                "model": "models/gemini-2.5-flash",
                "usageMetadata": {"totalTokenCount": CACHED},
            },
            started="2026-11-01T10:00:00.000Z",
        ),
        entry(
            f"{GEMINI}/models/gemini-2.5-flash:generateContent",
            {
                "cachedContent": "cachedContents/c1",
                "contents": [{"role": "user", "parts": [{"text": "What does page 3 say?"}]}],
            },
            {
                "candidates": [{"content": {"role": "model", "parts": [{"text": "It says."}]}}],
                "usageMetadata": {
                    "promptTokenCount": CACHED + OWN,
                    "cachedContentTokenCount": CACHED,
                    "candidatesTokenCount": 5,
                },
            },
            started="2026-11-01T10:05:00.000Z",
        ),
    ]
    if deleted_after_minutes is not None:
        entries.append(
            entry(
                f"{GEMINI}/cachedContents/c1",
                None,
                {},
                method="DELETE",
                started=f"2026-11-01T10:{deleted_after_minutes:02d}:00.000Z",
            )
        )
    path = tmp_path / "gemini.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    return path


def rows_of(path: Path, store: ContractStore) -> list[PerRequestRow]:
    rows: list[PerRequestRow] = []
    request = EstimateRequest(
        log=LogInput.of_paths([path]), targets=["google:gemini-2.5-flash"], at=AT
    )
    estimate(request, store, on_row=rows.append)
    return rows


def test_storage_is_billed_for_the_cache_s_actual_lifetime(
    tmp_path: Path, store: ContractStore
) -> None:
    contract = store.as_of("google", "gemini-2.5-flash", AT)
    assert (contract.input_per_mtok, contract.storage_per_mtok_hour) == (Decimal("0.3"), 1)
    creation, use = rows_of(recording(tmp_path, deleted_after_minutes=20), store)
    # Created at 10:00, deleted at 10:20: 1,200 s of storage, not the hour it asked for.
    assert creation.usage.cache_write_tokens == {"1h": CACHED}
    assert creation.usage.storage_token_seconds == CACHED * 1200
    # 2,500 tokens x 1/3 h x $1/MTok/h = $0.000833333333333 (rounded to 1e-15), plus the
    # creation at the input price: 2,500 x $0.30 / 1e6 = $0.00075.
    assert creation.cost.storage == Decimal("0.000833333333333")
    assert creation.cost.cache_write == Decimal("0.00075")
    # The request naming the cache reads all of it; its own 40 tokens are input.
    assert use.usage.cache_read_tokens == CACHED
    assert use.usage.uncached_input_tokens == OWN
    assert use.cost.cache_read == Decimal("0.000075")  # 2,500 x 0.30 x 0.1 / 1e6
    assert use.cost.storage == 0
    assert bill_request(use.usage, contract).total == use.cost.total


def test_without_deletion_the_ttl_is_the_lifetime(tmp_path: Path, store: ContractStore) -> None:
    creation, _ = rows_of(recording(tmp_path, deleted_after_minutes=None), store)
    assert creation.usage.storage_token_seconds == CACHED * 3600


def test_a_cache_creation_is_not_billed_under_a_contract_without_such_objects(
    tmp_path: Path, store: ContractStore
) -> None:
    request = EstimateRequest(
        log=LogInput.of_paths([recording(tmp_path, 20)]), targets=["openai:gpt-4.1"], at=AT
    )
    report = estimate(request, store)
    (target,) = report.targets
    assert target.requests == 1  # only the generateContent call
    assert any("cachedContents" in note for note in target.notes)


def test_reconcile_holds_the_cache_read_against_the_observation(
    tmp_path: Path, store: ContractStore
) -> None:
    report = reconcile(
        ReconcileRequest(log=LogInput.of_paths([recording(tmp_path, 20)]), at=AT), store
    )
    rows = sorted(report.requests, key=lambda row: row.line)
    assert [(r.observed_cache_read_tokens, r.observed_cache_write_tokens) for r in rows] == [
        (0, CACHED),
        (CACHED, None),
    ]
    assert [r.predicted_cache_read_tokens for r in rows] == [0, CACHED]
    assert [r.predicted_cache_write_tokens for r in rows] == [CACHED, 0]
    assert all(r.within_tolerance for r in rows)
