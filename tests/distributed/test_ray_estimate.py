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
from cachecast.simulator.estimate import PerRequestRow, Target, estimate
from tests.distributed.conftest import write_multi_tenant_logs

pytestmark = pytest.mark.ray

AT = dt.date(2026, 11, 1)


def both_runs(
    paths: list[Path], targets: list[Target], url: str, buckets: int
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]], int]:
    from cachecast.simulator.distributed.runner import estimate_on_ray

    store = ContractStore(url)
    single_rows: list[PerRequestRow] = []
    single = estimate(paths, targets, AT, store, per_request=single_rows.append)
    ray_rows: list[PerRequestRow] = []
    progressed: list[int] = []
    partitioned = estimate_on_ray(
        paths,
        targets,
        AT,
        store,
        url,
        progressed.append,
        per_request=ray_rows.append,
        buckets=buckets,
        chunk_requests=100,  # several chunks per file: exercises the chunked shuffle
    )
    return (
        single.to_json(),
        [row.as_record() for row in single_rows],
        partitioned.to_json(),
        [row.as_record() for row in ray_rows],
        sum(progressed),
    )


def test_mooncake_trace_partitioned_equals_single_process(
    ray_cluster: str, migrated_db_url: str, mooncake_trace: Path
) -> None:
    # gpt-4o: automatic, 1,024-token minimum, 128-token increment; deepseek-chat: 64/64.
    targets = [Target("openai", "gpt-4o"), Target("deepseek", "deepseek-chat")]
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
    targets = [Target("openai", "gpt-4o"), Target("anthropic", "claude-sonnet-4-5")]
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
