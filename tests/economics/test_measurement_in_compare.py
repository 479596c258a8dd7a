"""``compare --measurement-id``: the stored measurement's passport, and the roofline model of
the compared deployment set against the measurement, on its own requests and on the log."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Session

from cachecast.contracts import ContractStore
from cachecast.core import db
from cachecast.economics.capacity import Deployment
from cachecast.economics.geometry import load_model
from cachecast.economics.hardware import get_accelerator
from cachecast.economics.timing import prefill_time
from cachecast.gpu_backend.tables import EngineMeasurement
from cachecast.passes.log_input import LogInput
from cachecast.usecases.compare import CompareRequest, compare
from tests.economics.conftest import deployment, shared_prefix_file
from tests.economics.test_measured import _report, _seconds

ROWS = [(100, 0), (250, 50), (1500, 1000), (2000, 0)]  # (prompt tokens, engine cached tokens)


def _store(url: str, *, dtype: str | None) -> int:
    row = EngineMeasurement(
        measured_at=datetime(2026, 12, 2, 11, tzinfo=UTC),
        engine_kind="http",
        engine_version="0.32.0",
        model="toy",
        device="cpu",
        block_size=16,
        num_blocks=1500,
        dtype=dtype,
        kv_cache_dtype="auto",
        endpoint="http://127.0.0.1:8000",
        source="log.jsonl",
        requests=len(ROWS),
        prompt_tokens=sum(prompt for prompt, _ in ROWS),
        output_tokens=len(ROWS),
        hit_rate=0.27,
        input_tokens_per_s=1.0,
        output_tokens_per_s=1.0,
        report_json=json.dumps(_report(ROWS)),
    )
    with Session(db.get_engine(url)) as session:
        session.add(row)
        session.commit()
        assert row.id is not None
        return row.id


def test_the_report_sets_the_roofline_against_the_measurement(
    migrated_db_url: str, tmp_path: Path
) -> None:
    identifier = _store(migrated_db_url, dtype="bfloat16")
    request = CompareRequest(
        **deployment(block_size=16),
        log=LogInput.of_paths([shared_prefix_file(tmp_path)]),
        measurement_id=identifier,
    )
    report = compare(request, ContractStore(migrated_db_url))
    facts = report.measurement
    assert facts is not None
    passport = facts.passport
    assert (passport.id, passport.dtype, passport.kv_cache_dtype) == (
        identifier,
        "bfloat16",
        "auto",
    )
    assert (passport.model, passport.device, passport.block_size) == ("toy", "cpu", 16)
    assert passport.num_blocks == 1500 and passport.requests == len(ROWS)
    # The engine's rows were timed by the law the fit recovers (tests/economics/test_measured).
    versus = facts.against_roofline
    model = Deployment(load_model("llama-3.1-8b"), get_accelerator("h100"), block_size=16)
    measured = [_seconds(cached, prompt - cached) for prompt, cached in ROWS]
    roofline = [prefill_time(model, cached, prompt - cached).seconds for prompt, cached in ROWS]
    assert versus.measured_requests == len(ROWS)
    assert versus.measured_ttft_mean_ms == pytest.approx(sum(measured) / len(ROWS) * 1000)
    assert versus.roofline_mean_ms == pytest.approx(sum(roofline) / len(ROWS) * 1000)
    assert versus.measured_over_roofline == pytest.approx(sum(measured) / sum(roofline))
    # The log: 64 shared tokens (4 blocks of 16) read by requests 2 and 3, 16 new each.
    fitted = _seconds(0, 80) + 2 * _seconds(64, 16)
    modelled = prefill_time(model, 0, 80).seconds + 2 * prefill_time(model, 64, 16).seconds
    assert versus.log_prefill_seconds == pytest.approx(fitted, rel=1e-6)
    assert versus.log_roofline_prefill_seconds == pytest.approx(modelled, rel=1e-9)
    assert versus.log_difference_seconds == pytest.approx(fitted - modelled, rel=1e-6)
    assert versus.log_measured_over_roofline == pytest.approx(fitted / modelled, rel=1e-6)
    assert versus.log_prefill_ms.max == pytest.approx(_seconds(0, 80) * 1000, rel=1e-6)
    # What differs between the measured engine and the deployment compared; same dtype
    # (bfloat16 is bf16) and block size, so neither is named.
    assert facts.warnings == [
        "measured on 'cpu', compared on h100-sxm: the fit times another device",  # h100's name
        "measured model 'toy' is not the compared model 'llama-3.1-8b'",
    ]
    assert report.timing_source.startswith(f"vLLM measurement: measurement #{identifier}:")


def test_a_measurement_without_its_dtype_says_so(migrated_db_url: str, tmp_path: Path) -> None:
    identifier = _store(migrated_db_url, dtype=None)
    request = CompareRequest(
        **deployment(block_size=32),
        log=LogInput.of_paths([shared_prefix_file(tmp_path)]),
        measurement_id=identifier,
    )
    facts = compare(request, ContractStore(migrated_db_url)).measurement
    assert facts is not None and facts.passport.dtype is None
    assert "the measurement does not record the engine's dtype" in facts.warnings
    assert "measured with block size 16, compared with 32" in facts.warnings
