"""Prefill time fitted from a vLLM backend measurement, and its use in ``compare``."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlmodel import Session

from cachecast.core import db
from cachecast.core.errors import NotFoundError
from cachecast.economics.capacity import Deployment
from cachecast.economics.compare import compare_self_hosted
from cachecast.economics.geometry import load_model
from cachecast.economics.hardware import get_accelerator
from cachecast.economics.measured import (
    FittedPrefill,
    MeasurementError,
    UnknownMeasurementError,
    fit_from_report,
)
from cachecast.gpu_backend.tables import EngineMeasurement
from cachecast.usecases.compare import load_measurement
from tests.economics.conftest import shared_prefix_log

FIXED, PER_TOKEN, PER_PAIR = 0.01, 1e-4, 1e-8


def _seconds(cached: int, new: int) -> float:
    # pairs = ((C+S)(C+S+1) - C(C+1)) / 2, the suffix's causal attention pairs.
    pairs = ((cached + new) * (cached + new + 1) - cached * (cached + 1)) // 2
    return FIXED + PER_TOKEN * new + PER_PAIR * pairs


def _report(rows: list[tuple[int, int | None]]) -> dict[str, object]:
    return {
        "passport": {
            "engine_kind": "offline",
            "engine_version": "0.32.0",
            "model": "toy",
            "device": "cpu",
            "measured_at": "2026-12-02T11:00:00+00:00",
        },
        "per_request": [
            {
                "request_id": f"r{i}",
                "line": i + 1,
                "prompt_tokens": prompt,
                "measured_cached_tokens": cached,
                "predicted_cached_tokens": None,
                "output_tokens": 1,
                "ttft_s": _seconds(cached or 0, prompt - (cached or 0)),
                "latency_s": 1.0,
            }
            for i, (prompt, cached) in enumerate(rows)
        ],
    }


def test_fit_recovers_the_law_it_was_measured_from() -> None:
    fitted = fit_from_report(_report([(100, 0), (250, 50), (1500, 1000), (2000, 0)]))
    assert fitted.rows == 4
    assert fitted.fixed_s == pytest.approx(FIXED, rel=1e-6)
    assert fitted.per_token_s == pytest.approx(PER_TOKEN, rel=1e-6)
    assert fitted.per_pair_s == pytest.approx(PER_PAIR, rel=1e-6)
    assert "model toy on cpu" in fitted.source


def test_rows_without_engine_hit_counts_are_not_used() -> None:
    with pytest.raises(MeasurementError, match="at least 3"):
        fit_from_report(_report([(100, 0), (250, None), (1500, None), (2000, 0)]))
    with pytest.raises(MeasurementError, match="no request carries"):
        fit_from_report(_report([(100, None)]))


def test_compare_uses_the_measurement_and_says_so() -> None:
    measurement = FittedPrefill("toy run", FIXED, PER_TOKEN, PER_PAIR, rows=4)
    report = compare_self_hosted(
        shared_prefix_log(),
        Deployment(load_model("llama-3.1-8b"), get_accelerator("h100")),
        measurement=measurement,
        capacity_factors=(),
    )
    assert report.timing_source == "vLLM measurement: toy run"
    # Request 1: C=0, S=80, pairs 80*81/2 = 3,240 -> 0.01 + 0.008 + 0.0000324 = 18.0324 ms.
    # Requests 2, 3: C=64, S=16, pairs (80*81 - 64*65)/2 = 1,160 -> 11.6116 ms.
    assert report.self_hosted.prefill_ms.max == pytest.approx(18.0324)
    assert report.self_hosted.prefill_ms.mean == pytest.approx((18.0324 + 2 * 11.6116) / 3)


def test_load_a_stored_measurement(migrated_db_url: str) -> None:
    stored = EngineMeasurement(
        measured_at=datetime(2026, 12, 2, 11, tzinfo=UTC),
        engine_kind="offline",
        engine_version="0.32.0",
        model="toy",
        device="cpu",
        block_size=16,
        num_blocks=100,
        source="log.jsonl",
        requests=4,
        prompt_tokens=3850,
        output_tokens=4,
        hit_rate=0.27,
        input_tokens_per_s=1.0,
        output_tokens_per_s=1.0,
        report_json=json.dumps(_report([(100, 0), (250, 50), (1500, 1000), (2000, 0)])),
    )
    with Session(db.get_engine(migrated_db_url)) as session:
        session.add(stored)
        session.commit()
        identifier = stored.id
    assert identifier is not None
    fitted = load_measurement(migrated_db_url, identifier)
    assert fitted.source.startswith(f"measurement #{identifier}:")
    assert fitted.per_token_s == pytest.approx(PER_TOKEN, rel=1e-6)
    # An id nothing was stored under is not found (exit 2, HTTP 404), naming the option.
    with pytest.raises(UnknownMeasurementError, match="no engine measurement with id 999") as e:
        load_measurement(migrated_db_url, 999)
    assert isinstance(e.value, NotFoundError)
    assert e.value.location.field == "measurement_id"
