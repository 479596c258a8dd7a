"""A real in-process vLLM engine (CPU build): measured hits equal the simulator's and the
hand-derived values, counters move by exactly those amounts, TTFT is recorded, and the
passport row is stored. One engine serves the whole module (it takes seconds to start)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from cachecast.core.db import get_engine
from cachecast.gpu_backend.offline import OfflineBackend
from cachecast.gpu_backend.passport import list_measurements, store_report
from cachecast.gpu_backend.replay import LogFormatError, measure_layout
from cachecast.gpu_backend.report import MeasurementReport
from cachecast.gpu_backend.tables import EngineMeasurement
from cachecast.gpu_backend.types import ReplayOptions
from cachecast.usecases.measure import MeasureReport
from tests.gpu_backend.conftest import (
    BLOCK_BYTES,
    BLOCK_SIZE,
    MAX_MODEL_LEN,
    NUM_BLOCKS,
    VOCAB_SIZE,
    as_requests,
)
from tests.gpu_backend.streams import (
    CORRECTNESS_STREAMS,
    LONG_PREFIX,
    PACED_SCALE,
    Stream,
    check_exact_report,
    check_paced_report,
    check_warm_faster,
    cold_and_warm,
    non_block_aligned,
    paced_requests,
)

pytestmark = pytest.mark.vllm

EXACT = ReplayOptions(concurrency=1, warmup_requests=0)


@pytest.fixture(scope="module")
def backend(vllm_environment: Path, small_model_dir: Path) -> Iterator[OfflineBackend]:
    engine = OfflineBackend.create(
        str(small_model_dir),
        block_size=BLOCK_SIZE,
        kv_cache_bytes=NUM_BLOCKS * BLOCK_BYTES,
        max_model_len=MAX_MODEL_LEN,
        dtype="bfloat16",
        enforce_eager=True,
    )
    yield engine
    del engine


@pytest.fixture(scope="module")
def ttft_report(backend: OfflineBackend) -> tuple[MeasurementReport, list[bool]]:
    prompts, warm = cold_and_warm(trials=6)
    report = measure_layout(
        as_requests(prompts, "ttft"),
        backend,
        options=ReplayOptions(warmup_requests=2),
        source="ttft-stream",
    )
    return report, warm


def test_engine_geometry_is_read_back(backend: OfflineBackend, small_model_dir: Path) -> None:
    info = backend.info()
    assert info.kind == "offline"
    assert info.block_size == BLOCK_SIZE
    # The KV budget was sized for exactly NUM_BLOCKS blocks of BLOCK_BYTES each.
    assert info.num_blocks == NUM_BLOCKS
    assert info.model == str(small_model_dir)
    assert info.engine_version.count(".") >= 2
    assert info.device


@pytest.mark.parametrize("make_stream", CORRECTNESS_STREAMS, ids=lambda make: make.__name__)
def test_measured_hits_equal_prediction(backend: OfflineBackend, make_stream) -> None:
    stream: Stream = make_stream()
    report = measure_layout(
        as_requests(stream.prompts, stream.name), backend, options=EXACT, source=stream.name
    )
    check_exact_report(report, stream)


def test_warm_requests_on_a_long_prefix_are_faster(
    ttft_report: tuple[MeasurementReport, list[bool]],
) -> None:
    report, warm = ttft_report
    check_warm_faster(report, warm)
    assert [r.warm for r in report.requests] == warm
    assert report.ttft(warm=True)["count"] == sum(warm)
    assert report.ttft(warm=False)["count"] == len(warm) - sum(warm)


def test_passport_row_is_stored(
    ttft_report: tuple[MeasurementReport, list[bool]], migrated_db_url: str
) -> None:
    report, warm = ttft_report
    row_id = store_report(report, migrated_db_url, MeasureReport.of(report).document())
    with Session(get_engine(migrated_db_url)) as session:
        row = session.exec(select(EngineMeasurement).where(EngineMeasurement.id == row_id)).one()
    assert row.engine_kind == "offline"
    assert row.engine_version == report.engine.engine_version
    assert row.block_size == BLOCK_SIZE
    assert row.num_blocks == NUM_BLOCKS
    assert row.requests == len(warm)
    assert row.prompt_tokens == 2000 * len(warm)  # every prompt of the stream is 2,000 tokens
    assert row.measured_cached_tokens == LONG_PREFIX * sum(warm)
    assert row.predicted_cached_tokens == LONG_PREFIX * sum(warm)
    assert row.exact_match_share == 1.0
    assert row.ttft_cold_p50_s is not None and row.ttft_warm_p50_s is not None
    assert row.measured_at.year >= 2026
    assert [listed.id for listed in list_measurements(migrated_db_url)] == [row_id]


def test_concurrent_paced_replay_records_every_request(backend: OfflineBackend) -> None:
    stream = non_block_aligned()
    requests = paced_requests(stream, start=100.0)
    report = measure_layout(
        requests,
        backend,
        options=ReplayOptions(concurrency=2, arrival_scale=PACED_SCALE, warmup_requests=0),
    )
    check_paced_report(report, requests, stream)
    assert all(r.ttft_s > 0 for r in report.requests)


@pytest.mark.parametrize(
    ("prompt", "field"),
    [
        # MAX_MODEL_LEN tokens leave no room for the one generated token.
        ([5] * MAX_MODEL_LEN, "tokens"),
        # the model's vocabulary is VOCAB_SIZE ids, so VOCAB_SIZE itself is out of range.
        ([5, 6, VOCAB_SIZE], "tokens[2]"),
    ],
)
def test_prompts_the_engine_refuses_are_rejected_before_sending(
    backend: OfflineBackend, prompt: list[int], field: str
) -> None:
    requests = as_requests([[7] * 40, prompt], "bad")
    before = backend.metrics()
    with pytest.raises(LogFormatError) as raised:
        measure_layout(requests, backend, options=EXACT)
    assert (raised.value.line, raised.value.field) == (2, field)
    after = backend.metrics()
    assert after.prefix_cache_queries == before.prefix_cache_queries  # nothing was sent
    assert after.ttft_count == before.ttft_count
