"""A real vLLM OpenAI-compatible server on loopback (CPU build), driven over HTTP: hits per
request and /metrics counters equal the hand-derived values and the simulator's, TTFT is
recorded for every request, the ``measure`` CLI stores a passport. One server per module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.core.db import get_engine
from cachecast.gpu_backend.http_backend import HttpBackend
from cachecast.gpu_backend.replay import LogFormatError, measure_layout, settled_metrics
from cachecast.gpu_backend.tables import EngineMeasurement
from cachecast.gpu_backend.types import ReplayOptions
from tests.gpu_backend.conftest import (
    BLOCK_SIZE,
    MAX_MODEL_LEN,
    NUM_BLOCKS,
    SERVED_NAME,
    VllmServer,
    as_requests,
)
from tests.gpu_backend.streams import (
    CORRECTNESS_STREAMS,
    PACED_SCALE,
    Stream,
    check_exact_report,
    check_paced_report,
    check_warm_faster,
    cold_and_warm,
    non_block_aligned,
    paced_requests,
    shared_prefix,
)

pytestmark = pytest.mark.vllm

EXACT = ReplayOptions(concurrency=1, warmup_requests=0)


@pytest.fixture(scope="module")
def server_url(vllm_server: VllmServer) -> str:
    return vllm_server.wait_healthy()


@pytest.fixture(scope="module")
def backend(server_url: str) -> HttpBackend:
    return HttpBackend(server_url)


def test_engine_geometry_is_read_back_from_metrics(backend: HttpBackend, server_url: str) -> None:
    info = backend.info()
    assert info.kind == "http"
    assert info.model == SERVED_NAME  # the first (only) model the server lists
    assert info.block_size == BLOCK_SIZE
    assert info.num_blocks == NUM_BLOCKS  # KV budget sized for exactly NUM_BLOCKS blocks
    assert info.endpoint == server_url
    assert info.engine_version.count(".") >= 2


@pytest.mark.parametrize("make_stream", CORRECTNESS_STREAMS, ids=lambda make: make.__name__)
def test_measured_hits_and_counters_equal_prediction(backend: HttpBackend, make_stream) -> None:
    stream: Stream = make_stream()
    report = measure_layout(
        as_requests(stream.prompts, stream.name), backend, options=EXACT, source=stream.name
    )
    check_exact_report(report, stream)


def test_warm_requests_on_a_long_prefix_are_faster(backend: HttpBackend) -> None:
    prompts, warm = cold_and_warm(trials=5)
    report = measure_layout(
        as_requests(prompts, "ttft"), backend, options=ReplayOptions(warmup_requests=2)
    )
    check_warm_faster(report, warm)


def test_measure_cli_reports_json_and_stores_the_passport(
    server_url: str, migrated_db_url: str, tmp_path: Path
) -> None:
    stream = shared_prefix()
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"tokens": prompt}) + "\n" for prompt in stream.prompts))
    result = CliRunner().invoke(
        app,
        [
            "measure", str(log), "--engine", "http", "--url", server_url,
            "--compare-simulator", "--json", "--warmup", "1",
            "--device", "cpu (test host)", "--database-url", migrated_db_url,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [r["measured_cached_tokens"] for r in report["per_request"]] == stream.expected_cached
    assert report["predicted_cached_tokens"] == sum(stream.expected_cached)
    assert report["exact_match_share"] == 1.0
    # hit rate: 192 cached of 106 + 106 + 136 = 348 prompt tokens
    assert report["hit_rate"] == pytest.approx(192 / 348)
    assert report["engine_counters_delta"]["agree_with_requests"] is True
    with Session(get_engine(migrated_db_url)) as session:
        rows = session.exec(select(EngineMeasurement)).all()
    assert len(rows) == 1
    assert rows[0].engine_kind == "http"
    assert rows[0].device == "cpu (test host)"
    assert rows[0].endpoint == server_url
    assert rows[0].model == SERVED_NAME
    assert rows[0].block_size == BLOCK_SIZE and rows[0].num_blocks == NUM_BLOCKS
    assert rows[0].measured_cached_tokens == 192


def test_concurrent_paced_replay_over_http(backend: HttpBackend) -> None:
    stream = non_block_aligned()
    requests = paced_requests(stream, start=50.0)
    report = measure_layout(
        requests,
        backend,
        options=ReplayOptions(
            concurrency=2, arrival_scale=PACED_SCALE, warmup_requests=0, max_tokens=3
        ),
    )
    check_paced_report(report, requests, stream)
    assert all(r.output_tokens == 3 for r in report.requests)  # ignore_eos: exactly max_tokens
    assert all(0 < r.ttft_s <= r.latency_s for r in report.requests)


def test_a_log_that_can_be_read_once_is_replayed_as_it_is_read(backend: HttpBackend) -> None:
    stream = shared_prefix()
    report = measure_layout(
        iter(as_requests(stream.prompts, stream.name)), backend, options=EXACT, source="once"
    )
    check_exact_report(report, stream)


def test_a_log_read_once_stops_at_a_prompt_the_engine_refuses(backend: HttpBackend) -> None:
    first = [7] * 40
    # MAX_MODEL_LEN tokens leave no room for the one generated token.
    requests = iter(as_requests([first, [5] * MAX_MODEL_LEN, [7] * 40], "once-bad"))
    before = backend.metrics()
    with pytest.raises(LogFormatError) as raised:
        measure_layout(requests, backend, options=EXACT)
    assert (raised.value.line, raised.value.field) == (2, "tokens")
    # Read once, the log is checked request by request: the first was sent, nothing after
    # (the server publishes its counters after the response: waited for).
    after = settled_metrics(backend, before, 1)
    assert after.prefix_cache_queries - before.prefix_cache_queries == len(first)
    assert after.ttft_count - before.ttft_count == 1
