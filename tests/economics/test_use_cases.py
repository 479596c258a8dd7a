"""The library function and the CLI's ``--json`` give the same JSON for ``capacity`` and
``fleet`` (``compare``, which also has a route, is checked against the API in
tests/service/test_comparisons.py)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.passes.log_input import LogInput
from cachecast.usecases.capacity import CapacityRequest, ModelReference, capacity
from cachecast.usecases.compare import CompareRequest, compare
from cachecast.usecases.fleet import FleetRequest, fleet
from tests.economics.conftest import deployment, shared_prefix_file


def cli_json(*args: str) -> object:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_capacity_library_equals_cli(tmp_path: Path) -> None:
    request = CapacityRequest(
        **deployment("jamba-v0.1", "mi300x", kv_dtype="fp8", gpus=2),
        context=32_768,
        batch=16,
        cached=30_000,
    )
    arguments = ["capacity", "--model", "jamba-v0.1", "--gpu", "mi300x", "--kv-dtype", "fp8"]
    arguments += ["--gpus", "2", "--context", "32768", "--batch", "16", "--cached", "30000"]
    assert capacity(request).model_dump(mode="json") == cli_json(*arguments)
    # A config file: the CLI's --model PATH is ModelReference(config_file=PATH).
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "hidden_size": 256,
                "intermediate_size": 512,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "vocab_size": 1000,
            }
        )
    )
    from_file = CapacityRequest(model=ModelReference(config_file=config), gpu="l40s")
    assert capacity(from_file).model_dump(mode="json") == cli_json(
        "capacity", "--model", str(config), "--gpu", "l40s"
    )


def test_fleet_library_equals_cli(tmp_path: Path) -> None:
    log = shared_prefix_file(tmp_path)
    request = FleetRequest(
        **deployment(gpu="l40s"),
        log=LogInput.of_paths([log]),
        replicas=2,
        routings=["session-sticky", "all"],
        gpu_price=Decimal("1.75"),
        window_seconds=5,
    )
    arguments = ["fleet", str(log), "--model", "llama-3.1-8b", "--gpu", "l40s", "--replicas", "2"]
    arguments += ["--routing", "session-sticky", "--routing", "all", "--gpu-price", "1.75"]
    assert fleet(request).model_dump(mode="json") == cli_json(*arguments, "--window", "5")


def test_compare_library_equals_cli(tmp_path: Path) -> None:
    log = shared_prefix_file(tmp_path)
    request = CompareRequest(
        **deployment(block_size=32, gpu_memory_utilization=0.5),
        log=LogInput.of_paths([log]),
        gpu_price=Decimal("2"),
        host_memory_gib=0.5,
    )
    arguments = ["compare", str(log), "--model", "llama-3.1-8b", "--gpu", "h100"]
    arguments += ["--block-size", "32", "--gpu-memory-utilization", "0.5", "--gpu-price", "2"]
    assert compare(request).model_dump(mode="json") == cli_json(
        *arguments, "--host-memory-gib", "0.5"
    )
