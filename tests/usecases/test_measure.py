"""``cachecast measure`` without an engine: every way it ends before one is needed (exit 2,
one line, no traceback, nothing created), an engine that does not answer, and the report's
JSON shape. The runs on a real vLLM are in tests/gpu_backend."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.gpu_backend.report import MeasurementReport, RequestComparison
from cachecast.gpu_backend.types import EngineInfo, MetricsSnapshot, ReplayOptions
from cachecast.usecases.measure import MeasureReport


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def empty_folder(tmp: Path) -> Path:
    folder = tmp / "empty"
    folder.mkdir()
    (folder / "notes.md").write_text("not a log")
    return folder


@pytest.fixture
def token_log(tmp_path: Path) -> Path:
    log = tmp_path / "tokens.jsonl"
    log.write_text('{"tokens": [5, 6, 7]}\n{"tokens": [5, 6, 8]}\n')
    return log


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda log, tmp: [str(log), "--engine", "http"], "url: an http engine needs"),
        (lambda log, tmp: [str(log)], "model: an offline engine needs the model"),
        # A folder stands for the logs in it; one that holds none is refused by name.
        (
            lambda log, tmp: [str(empty_folder(tmp)), "--engine", "http", "--url", "x"],
            "a folder without log files",
        ),
        (lambda log, tmp: [str(tmp / "none.jsonl"), "--model", "m"], "no such file"),
        (lambda log, tmp: [str(bad_log(tmp)), "--model", "m"], ":2: tokens[1]: not a token id"),
        (
            lambda log, tmp: [
                str(log),
                "--engine",
                "http",
                "--url",
                f"http://127.0.0.1:{free_port()}",
            ],
            "failed",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    make_args: Any, needle: str, token_log: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, ["measure", *make_args(token_log, tmp_path), "--no-store"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.stderr


def bad_log(tmp_path: Path) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"tokens": [1, 2]}\n{"tokens": [1, "x"]}\n')
    return path


def test_an_unmigrated_passport_database_is_refused_before_the_engine(
    token_log: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "cachecast.db"
    port = free_port()  # no engine listens: the database must be refused first
    args = ["measure", str(token_log), "--engine", "http", "--url", f"http://127.0.0.1:{port}"]
    result = CliRunner().invoke(app, [*args, "--database-url", f"sqlite:///{missing}"])
    assert result.exit_code == 2
    assert "is not migrated" in result.stderr and "--no-store" in result.stderr
    assert not missing.parent.exists()


def test_the_report_json_keeps_the_measurement_shape() -> None:
    # Hand-made figures (as tests/gpu_backend/test_measurement_units.py): request c's
    # measured 32 differs from its predicted 0.
    rows = [
        RequestComparison("a", 1, 100, 0, 0, 1, 0.30, 0.31),
        RequestComparison("b", 2, 100, 96, 96, 1, 0.05, 0.06),
        RequestComparison("c", 3, 50, 32, 0, 1, 0.04, 0.05),
    ]
    measurement = MeasurementReport(
        engine=EngineInfo("offline", "0.0.0", "m", "cpu", 32, 10),
        source="s",
        options=ReplayOptions(),
        cache_isolation="reset",
        requests=rows,
        metrics_delta=MetricsSnapshot(250, 128, 3, 0.39, ((0.1, 3), (float("inf"), 3))),
        wall_s=0.5,
    )
    report = MeasureReport.of(measurement, stored_id=7)
    data = json.loads(report.model_dump_json())
    assert set(data) == {
        "passport", "source", "options", "simulator_policy", "requests", "prompt_tokens",
        "output_tokens", "measured_cached_tokens", "predicted_cached_tokens",
        "exact_match_share", "hit_rate", "ttft", "ttft_cold", "ttft_warm", "wall_s",
        "input_tokens_per_s", "output_tokens_per_s", "engine_counters_delta", "per_request",
        "stored_id",
    }  # fmt: skip
    assert (data["requests"], data["prompt_tokens"], data["measured_cached_tokens"]) == (
        3,
        250,
        128,
    )
    assert data["engine_counters_delta"]["ttft_buckets"] == [["0.1", 3], ["inf", 3]]
    assert data["ttft_cold"] == {
        "count": 1, "p50_s": 0.30, "p90_s": 0.30, "p95_s": 0.30, "p99_s": 0.30
    }  # fmt: skip
    assert [row.request_id for row in report.mismatches] == ["c"]
    assert data["stored_id"] == 7
    stored = json.loads(MeasureReport.of(measurement).document())  # what the passport keeps
    assert stored["stored_id"] is None and list(stored) == sorted(stored)
