"""``estimate`` partitioned on a real Ray cluster equals the single-process run, row for row.

The expected values are the single-process run's own output: the claim under test is
equality (exact partitioning), and the single-process simulator is tested by hand in
tests/simulator and tests/estimate. Each comparison also checks that the run has hits to
lose (a partitioning that split sharing requests would show fewer).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.pricing import PerRequestRow
from cachecast.usecases.estimate import EstimateRequest, estimate
from tests.distributed.conftest import write_multi_tenant_logs

pytestmark = pytest.mark.ray

AT = dt.date(2026, 11, 1)


class Advances:
    def __init__(self) -> None:
        self.counts: list[int] = []

    def start(self, label: str, total: int | None) -> None:
        return None

    def advance(self, count: int) -> None:
        self.counts.append(count)


def both_runs(
    paths: list[Path], targets: list[str], url: str, buckets: int
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]], int]:
    from cachecast.passes.ray.executor import RayExecutor

    store = ContractStore(url)
    request = EstimateRequest(log=LogInput.of_paths(paths), targets=targets, at=AT)
    single_rows: list[PerRequestRow] = []
    single = estimate(request, store, on_row=single_rows.append)
    ray_rows: list[PerRequestRow] = []
    progressed = Advances()
    partitioned = estimate(
        request,
        store,
        progress=progressed,
        on_row=ray_rows.append,
        # several chunks per file: exercises the chunked shuffle
        executor=RayExecutor(buckets=buckets, chunk_requests=100),
    )
    return (
        single.model_dump(mode="json"),
        [row.as_record() for row in single_rows],
        partitioned.model_dump(mode="json"),
        [row.as_record() for row in ray_rows],
        sum(progressed.counts),
    )


def test_mooncake_trace_partitioned_equals_single_process(
    ray_cluster: str, migrated_db_url: str, mooncake_trace: Path
) -> None:
    # gpt-4o: automatic, 1,024-token minimum, 128-token increment; deepseek-chat: 64/64.
    targets = ["openai:gpt-4o", "deepseek:deepseek-chat"]
    single, single_rows, partitioned, ray_rows, progressed = both_runs(
        [mooncake_trace], targets, migrated_db_url, buckets=8
    )
    assert partitioned == single
    assert ray_rows == single_rows
    assert len(ray_rows) == 2 * 3993  # every request of the trace, once per target
    # Two tokenizer groups (o200k_base; DeepSeek's own): each pass counts every request.
    assert progressed == 2 * 3993
    assert all(target["cache_read_tokens"] > 0 for target in single["targets"])


def test_multi_tenant_logs_partitioned_equals_single_process(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    paths = write_multi_tenant_logs(tmp_path)
    # Two tokenizer groups (o200k_base for gpt-4o; Anthropic's for claude) and an explicit
    # contract, priced under both.
    targets = ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"]
    single, single_rows, partitioned, ray_rows, _ = both_runs(
        paths, targets, migrated_db_url, buckets=5
    )
    assert partitioned == single
    assert ray_rows == single_rows
    assert single["targets"][0]["cache_read_tokens"] > 0


def test_estimate_cli_on_ray_with_a_glob_equals_the_plain_run(
    ray_cluster: str, migrated_db_url: str, tmp_path: Path
) -> None:
    import json

    from typer.testing import CliRunner

    from cachecast.cli import app

    paths = write_multi_tenant_logs(tmp_path, requests=60)
    common = ["--target", "openai:gpt-4o", "--at", AT.isoformat(), "--json"]
    common += ["--database-url", migrated_db_url]
    plain = CliRunner().invoke(app, ["estimate", *map(str, paths), *common])
    on_ray = CliRunner().invoke(
        app, ["estimate", str(tmp_path / "tenants-*.jsonl"), "--ray", *common]
    )
    assert plain.exit_code == 0, plain.output
    assert on_ray.exit_code == 0, on_ray.output
    # The glob expands to the same two files, sorted: the same sources and bills.
    assert json.loads(on_ray.stdout) == json.loads(plain.stdout)
