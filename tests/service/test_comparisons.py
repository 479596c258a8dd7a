"""``POST /v1/comparisons``: ``cachecast compare`` over HTTP on a migrated database."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app as cli_app
from tests.economics.conftest import tiny_gqa_config
from tests.service.logs import GPT4O_DAY, shared_prefix_records
from tests.service.test_api import assert_problem

pytestmark = pytest.mark.anyio


def comparison_body(**extra: Any) -> dict[str, Any]:
    body = {
        "records": shared_prefix_records(),
        "model": "llama-3.3-70b",
        "gpu": "h100-sxm",
        "gpus": 2,
        "gpu_price": "2.50",
        "targets": ["openai:gpt-4o"],
        "at": GPT4O_DAY,
    }
    return body | extra


async def test_small_log_against_gpt_4o(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/comparisons", json=comparison_body())
    assert response.status_code == 200, response.text
    report = response.json()
    for key in ("deployment", "capacity", "log", "self_hosted", "hosted", "versus", "host_tier"):
        assert key in report, key
    capacity = report["capacity"]
    # Llama-3.3-70B (docs/economics.md): K and V x 80 layers x 8 KV heads x 128 dims x 2 B.
    assert capacity["kv_bytes_per_token"] == 2 * 80 * 8 * 128 * 2 == 327_680
    # 70,553,706,496 parameters x 2 bytes; 0.9 x 2 x 80 GB usable; the rest is KV, in blocks
    # of 16 tokens x 327,680 B = 5,242,880 B: 2,892,587,008 // 5,242,880 = 551 blocks.
    assert capacity["weight_bytes"] == 70_553_706_496 * 2
    assert capacity["kv_budget_bytes"] == 144_000_000_000 - 141_107_412_992
    assert capacity["num_blocks"] == 551 and capacity["kv_capacity_tokens"] == 551 * 16
    log = report["log"]
    # shared_prefix_records: 2,048 tokens, then the same 2,048 plus 100; 10 output tokens each.
    assert (log["requests"], log["input_tokens"], log["output_tokens"]) == (2, 4196, 20)
    assert log["sources"] == ["request"]
    # vLLM with 16-token blocks: the second request finds its 2,048-token prefix (128 full
    # blocks) cached.
    assert report["self_hosted"]["hit_tokens"] == 2048
    assert report["gpu_price_per_hour"] == "2.50"
    cost = report["self_hosted"]["cost"]
    gpu_hours = Decimal(report["self_hosted"]["full_utilization"]["gpu_hours"])
    assert Decimal(cost["full_utilization"]) == (gpu_hours * Decimal("2.50")).quantize(
        Decimal("0.000001")
    )

    contract = (await client.get("/v1/contracts/openai/gpt-4o", params={"at": GPT4O_DAY})).json()
    (hosted,) = report["hosted"]
    assert (hosted["provider"], hosted["model"]) == ("openai", "gpt-4o")
    assert hosted["contract"]["effective_from"] == contract["effective_from"]
    # gpt-4o caches 2,048 of the second request's 2,148 tokens (a multiple of 128 at or
    # above 1,024): 2,148 + 100 tokens at the input price, 2,048 at the read multiplier.
    price_in = Decimal(contract["input_per_mtok"]) / 1_000_000
    price_out = Decimal(contract["output_per_mtok"]) / 1_000_000
    read = Decimal(contract["read_multiplier"])
    with_cache = (2048 + 100) * price_in + 2048 * price_in * read + 20 * price_out
    without_cache = 4196 * price_in + 20 * price_out
    assert Decimal(hosted["cost"]["total"]) == with_cache
    assert Decimal(hosted["cost_without_cache"]) == without_cache
    assert hosted["hit_rate"] == pytest.approx(2048 / 4196)
    assert report["at"] == GPT4O_DAY


async def test_equals_the_cli_json(
    client: httpx.AsyncClient, service_db_url: str, tmp_path: Path
) -> None:
    records = shared_prefix_records(sessions=2)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    arguments = ["compare", str(log), "--model", "llama-3.1-8b", "--gpu", "h200"]
    arguments += ["--gpu-price", "3.10", "--target", "openai:gpt-4o", "--at", GPT4O_DAY]
    arguments += ["--json", "--database-url", service_db_url]
    result = CliRunner().invoke(cli_app, arguments)
    assert result.exit_code == 0, result.output
    from_cli = json.loads(result.stdout)
    body = comparison_body(records=records, model="llama-3.1-8b", gpu="h200", gpus=1)
    body["gpu_price"] = "3.10"
    response = await client.post("/v1/comparisons", json=body)
    assert response.status_code == 200, response.text
    from_service = response.json()
    # Only the name of the log differs: a file path for the CLI, 'request' for the service.
    assert from_cli["log"].pop("sources") == [str(log)]
    assert from_service["log"].pop("sources") == ["request"]
    assert from_service == from_cli


async def test_inline_config_without_targets(client: httpx.AsyncClient) -> None:
    # A small GQA model as a config.json object: 4 layers, 2 KV heads of 64 dims, bf16:
    # 2 x 4 x 2 x 64 x 2 = 2,048 bytes per token.
    body = comparison_body(model=tiny_gqa_config(), gpus=1, targets=[])
    del body["gpu_price"]
    response = await client.post("/v1/comparisons", json=body)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["capacity"]["kv_bytes_per_token"] == 2 * 4 * 2 * 64 * 2
    assert report["deployment"]["model"]["name"] == "tiny-gqa"
    assert report["hosted"] == [] and report["gpu_price_per_hour"] is None
    assert report["self_hosted"]["cost"] is None


async def test_jsonl_upload(client: httpx.AsyncClient) -> None:
    records = shared_prefix_records()
    files = {"log": ("log.jsonl", "".join(json.dumps(r) + "\n" for r in records))}
    data = {"model": "llama-3.3-70b", "gpu": "h100-sxm", "gpus": "2", "targets": "openai:gpt-4o"}
    data["at"] = GPT4O_DAY
    response = await client.post("/v1/comparisons", data=data, files=files)
    assert response.status_code == 200, response.text
    assert response.json()["capacity"]["kv_bytes_per_token"] == 327_680
    assert [line["model"] for line in response.json()["hosted"]] == ["gpt-4o"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model": "/etc/hostname"}, "body.model"),  # a name, never a server path
        ({"model": {"num_hidden_layers": 2}}, "body.model"),
        ({"gpu_price": "two dollars"}, "body.gpu_price"),
        ({"gpu_price": "-1"}, "body.gpu_price"),
        ({"gpus": 0}, "body.gpus"),
        ({"kv_dtype": "fp3"}, "body.kv_dtype"),
        ({"targets": ["gpt-4o"]}, "body.targets[0]"),
        ({"records": []}, "body.records"),
        ({"records": [{"timestamp": 1, "model": "gpt-4o"}]}, "records[0]"),
        ({"at": "soon"}, "body.at"),
        ({"gpu": "l40s", "gpus": 1}, "body"),  # 141 GB of weights on one 48 GB card
        ({"unknown_option": 1}, "body.unknown_option"),
        # Model names the tokenizer registry would load from the server's disk.
        ({"tokenizer": "/"}, "body.tokenizer"),
        ({"records": [{"model": "hf:/tmp", "prompt": "hi", "timestamp": 1}]}, "records[0].model"),
        (
            {"records": [{"request": {"model": "/", "input": "hi"}, "timestamp": 1}]},
            "records[0].request.model",
        ),
    ],
)
async def test_bad_input_is_422_naming_the_field(
    client: httpx.AsyncClient, change: dict[str, Any], field: str
) -> None:
    problem = assert_problem(
        await client.post("/v1/comparisons", json=comparison_body(**change)), 422
    )
    fields = [error["field"] for error in problem["errors"]]
    assert any(name.startswith(field) for name in fields), fields


async def test_unknown_target_is_404_with_close_matches(client: httpx.AsyncClient) -> None:
    body = comparison_body(targets=["openai:gpt-4oo"])
    problem = assert_problem(await client.post("/v1/comparisons", json=body), 404)
    assert "gpt-4o" in problem["close_matches"]


async def test_unknown_accelerator_is_404_naming_the_field(client: httpx.AsyncClient) -> None:
    # An accelerator the table does not hold is something named that does not exist (as an
    # unknown target is): 404, the field named, close matches from the table's names.
    problem = assert_problem(
        await client.post("/v1/comparisons", json=comparison_body(gpu="h20")), 404
    )
    assert [error["field"] for error in problem["errors"]] == ["body.gpu"]
    assert "h200" in problem["close_matches"]


def mixed_records() -> list[dict[str, Any]]:
    """Two OpenAI chats and two Anthropic ones sharing their system prompts, and two
    records naming a model but no provider (the request's default provider applies)."""
    system = "You are a careful assistant who checks every figure twice. " * 60
    records: list[dict[str, Any]] = []
    for turn in range(2):
        question = {"role": "user", "content": f"Question {turn}: what changed?"}
        records.append(
            {
                "timestamp": 10 * turn,
                "provider": "openai",
                "model": "gpt-4o",
                "request": {
                    "model": "gpt-4o",
                    "messages": [{"role": "system", "content": system}, question],
                },
                "output_tokens": 20,
            }
        )
        records.append(
            {
                "timestamp": 10 * turn + 1,
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "request": {
                    "model": "claude-sonnet-4-5",
                    "system": [
                        {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}
                    ],
                    "messages": [question],
                    "max_tokens": 100,
                },
                "output_tokens": 30,
            }
        )
        records.append(
            {"timestamp": 10 * turn + 2, "model": "gpt-4o", "prompt": system, "output_tokens": 5}
        )
    return records


async def test_library_cli_and_api_give_the_same_report(
    client: httpx.AsyncClient, service_db_url: str, tmp_path: Path
) -> None:
    # One use case behind three front ends: for the same log (mixed models and providers,
    # a default provider for the records naming none) and options, the library's report, the
    # CLI's --json and the API's response are the same JSON; only the log's name differs
    # between a file and inline records.
    from cachecast.contracts import ContractStore
    from cachecast.passes.log_input import LogInput
    from cachecast.usecases.capacity import ModelReference
    from cachecast.usecases.compare import CompareRequest, compare

    records = mixed_records()
    log = tmp_path / "mixed.jsonl"
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    day, targets = "2026-11-01", ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"]
    arguments = ["compare", str(log), "--model", "llama-3.1-8b", "--gpu", "h200", "--json"]
    arguments += ["--gpu-price", "3.10", "--at", day, "--provider", "openai"]
    arguments += ["--target", targets[0], "--target", targets[1]]
    result = CliRunner().invoke(cli_app, [*arguments, "--database-url", service_db_url])
    assert result.exit_code == 0, result.output
    from_cli = json.loads(result.stdout)
    body = comparison_body(
        records=records, model="llama-3.1-8b", gpu="h200", gpus=1, provider="openai"
    )
    body |= {"gpu_price": "3.10", "targets": targets, "at": day}
    response = await client.post("/v1/comparisons", json=body)
    assert response.status_code == 200, response.text
    from_api = response.json()

    options: dict[str, Any] = {
        "model": ModelReference(preset="llama-3.1-8b"),
        "gpu": "h200",
        "gpu_price": Decimal("3.10"),
        "targets": targets,
        "at": dt.date.fromisoformat(day),
    }
    store = ContractStore(service_db_url)
    on_file = LogInput.of_paths([log], default_provider="openai")
    inline = LogInput(records=records, default_provider="openai", on_bad_record="reject")
    assert (
        compare(CompareRequest(log=on_file, **options), store).model_dump(mode="json") == from_cli
    )
    assert compare(CompareRequest(log=inline, **options), store).model_dump(mode="json") == from_api
    assert from_cli["log"].pop("sources") == [str(log)]
    assert from_api["log"].pop("sources") == ["request"]
    assert from_api == from_cli
    # The hosted bills are estimate's own, target by target.
    assert [line["model"] for line in from_api["hosted"]] == ["gpt-4o", "claude-sonnet-4-5"]
    assert from_api["log"]["requests"] == 6
