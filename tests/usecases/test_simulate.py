"""``simulate``: the library, ``cachecast simulate --json`` and ``POST /v1/simulations``
(JSON body and multipart upload) give the same report for the same log and options; every
way the command ends; the OpenAPI document says what the route returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.service.app import create_app
from cachecast.usecases.simulate import SimulateRequest, simulate
from tests.conftest import REPO_ROOT
from tests.distributed.test_routing import stream as routing_stream
from tests.service.conftest import make_settings

AT = "2026-11-01"
EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"
CLI_OPTION = {"ttl_seconds": "--ttl"}


def empty_folder(tmp: Path) -> Path:
    """A folder holding no log file (a folder stands for the logs in it)."""
    folder = tmp / "empty"
    folder.mkdir(exist_ok=True)
    (folder / "notes.md").write_text("not a log")
    return folder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def block_log(tmp_path: Path) -> Path:
    # Block size 4. Request 0: tokens 1..10, two full blocks cached. Request 1: tokens
    # 1..12: its first two blocks match, the third (9..12) is new: 8 hit tokens of 22.
    return write_jsonl(
        tmp_path / "blocks.jsonl",
        [
            {"timestamp": 0, "model": "gpt-4o", "tokens": list(range(1, 11))},
            {"timestamp": 1, "model": "gpt-4o", "tokens": list(range(1, 13))},
        ],
    )


def fleet_log(tmp_path: Path) -> Path:
    # tests/distributed/test_routing.py's hand-worked stream: two sessions resending an
    # 8-token prefix; session-sticky routing on two replicas hits 4 resends x 8 tokens.
    return write_jsonl(
        tmp_path / "sessions.jsonl",
        [
            {
                "timestamp": r.timestamp,
                "scope": r.scope,
                "session": r.session,
                "model": "gpt-4o",
                "request": {"tokens": list(r.tokens or [])},
            }
            for r in routing_stream()
        ],
    )


def trace_log(tmp_path: Path) -> Path:
    # A 2,048-token prompt twice, then 1,024 tokens of it (512-token blocks): the first is
    # cold, the second reads all 2,048, the third its 1,024: 3,072 of 5,120.
    return write_jsonl(
        tmp_path / "trace.jsonl",
        [
            {"timestamp": 0, "input_length": 2048, "output_length": 1, "hash_ids": [1, 2, 3, 4]},
            {"timestamp": 1000, "input_length": 2048, "output_length": 1, "hash_ids": [1, 2, 3, 4]},
            {"timestamp": 2000, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
        ],
    )


def library(path: Path, url: str, options: dict[str, Any]) -> dict[str, Any]:
    request = SimulateRequest(log=LogInput.of_paths([path]), **options)
    return simulate(request, ContractStore(url)).model_dump(mode="json")


def cli(path: Path, url: str, options: dict[str, Any]) -> dict[str, Any]:
    args = ["simulate", str(path), "--json", "--database-url", url]
    for name, value in options.items():
        args += [CLI_OPTION.get(name, "--" + name.replace("_", "-")), str(value)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


async def api(path: Path, url: str, options: dict[str, Any], *, upload: bool) -> dict[str, Any]:
    service = create_app(make_settings(url))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        if upload:
            files = {"log": (path.name, path.read_bytes(), "application/x-ndjson")}
            form = {name: str(value) for name, value in options.items()}
            response = await client.post("/v1/simulations", data=form, files=files)
        else:
            records = [json.loads(line) for line in path.read_text().splitlines() if line]
            response = await client.post("/v1/simulations", json={"records": records, **options})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


CASES = [
    pytest.param(block_log, {"policy": "vllm", "block_size": 4}, (2, 22, 8), id="vllm-blocks"),
    pytest.param(
        fleet_log,
        {"policy": "vllm", "block_size": 4, "replicas": 2, "routing": "session-sticky"},
        (6, 54, 32),
        id="fleet-session-sticky",
    ),
    pytest.param(
        trace_log,
        {"policy": "automatic", "block_size": 512, "target": "openai:gpt-4o", "at": AT},
        (3, 5120, 3072),
        id="automatic-under-a-contract",
    ),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("make_log", "options", "expected"), CASES)
async def test_every_front_end_gives_the_same_report(
    make_log: Any,
    options: dict[str, Any],
    expected: tuple[int, int, int],
    migrated_db_url: str,
    tmp_path: Path,
) -> None:
    path = make_log(tmp_path)
    report = library(path, migrated_db_url, options)
    assert (report["requests"], report["input_tokens"], report["hit_tokens"]) == expected
    assert report["hit_rate"] == expected[2] / expected[1]
    assert report["errors"] == [] and report["skipped_lines"] == 0
    assert cli(path, migrated_db_url, options) == report
    for upload in (False, True):
        assert await api(path, migrated_db_url, options, upload=upload) == report


@pytest.mark.anyio
async def test_the_example_log_under_an_explicit_contract(
    migrated_db_url: str, tmp_path: Path
) -> None:
    options = {"policy": "explicit", "target": "anthropic:claude-sonnet-4-5", "at": AT}
    report = library(EXAMPLE, migrated_db_url, options)
    lines = [line for line in EXAMPLE.read_text("utf-8").splitlines() if line.strip()]
    assert report["requests"] == len(lines)
    contract = report["policy"]["contract"]
    assert (contract["provider"], contract["model"]) == ("anthropic", "claude-sonnet-4-5")
    assert cli(EXAMPLE, migrated_db_url, options) == report
    assert await api(EXAMPLE, migrated_db_url, options, upload=False) == report


def test_fleet_report_names_replicas_and_options(migrated_db_url: str, tmp_path: Path) -> None:
    options = {"policy": "vllm", "block_size": 4, "replicas": 2, "routing": "session-sticky"}
    report = library(fleet_log(tmp_path), migrated_db_url, options)
    # As tests/distributed/test_routing.py: each replica computes 9 + 1 + 1 = 11 tokens.
    assert [(r["requests"], r["computed_tokens"]) for r in report["replicas"]] == [(3, 11), (3, 11)]
    assert report["imbalance"] == 1.0
    assert report["options"] == {
        "window_seconds": 60.0,
        "overlap_weight": None,
        "load_weight": None,
        "prefix_tokens": None,
    }
    assert report["policy"]["kind"] == "vllm" and report["policy"]["block_size"] == 4


@pytest.fixture
def good_log(tmp_path: Path) -> Path:
    return block_log(tmp_path)


@pytest.mark.parametrize(
    ("make_args", "needle"),
    [
        (lambda log, tmp: [str(tmp / "missing.jsonl")], "no such file"),
        (lambda log, tmp: [str(empty_folder(tmp))], "a folder without log files"),
        (lambda log, tmp: [str(log), "--ttl", "5"], "ttl_seconds: the vllm policy does not use"),
        (lambda log, tmp: [str(log), "--capacity-blocks", "1"], "capacity_blocks: the vllm"),
        (lambda log, tmp: [str(log), "--replicas", "2"], "routing: replicas and routing go"),
        (
            lambda log, tmp: [str(log), "--policy", "radix", "--replicas", "2", "--routing", "x"],
            "Invalid value",  # typer's own usage error: an unknown routing policy
        ),
        (
            lambda log, tmp: [
                str(log),
                *("--policy", "radix", "--replicas", "2", "--routing", "round-robin"),
            ],
            "with --policy vllm",
        ),
        (lambda log, tmp: [str(log), "--target", "openai:gpt-4oo"], "target: openai:gpt-4oo"),
        (lambda log, tmp: [str(log), "--target", "gpt-4o"], "PROVIDER:MODEL"),
        (lambda log, tmp: [str(log), "--target", "openai:gpt-4o", "--at", "soon"], "--at"),
        (lambda log, tmp: [str(trace_log(tmp)), "--block-size", "16"], "trace blocks are 512"),
        (lambda log, tmp: [str(log), "--policy", "radix", "--block-size", "x"], "Invalid value"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    make_args: Any, needle: str, good_log: Path, tmp_path: Path, migrated_db_url: str
) -> None:
    args = ["simulate", *make_args(good_log, tmp_path), "--database-url", migrated_db_url]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert needle in result.stderr and "Traceback" not in result.stderr
    if "Invalid value" not in needle:  # typer's usage errors draw a box; ours are one line
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) <= 2  # the error, and close matches where there are some


def test_a_target_needs_a_migrated_database(good_log: Path, tmp_path: Path) -> None:
    missing = tmp_path / "none" / "cachecast.db"
    args = ["simulate", str(good_log), "--target", "openai:gpt-4o"]
    result = CliRunner().invoke(app, [*args, "--database-url", f"sqlite:///{missing}"])
    assert result.exit_code == 2 and "cachecast db upgrade" in result.stderr
    assert not missing.parent.exists()


def test_bad_lines_are_skipped_and_listed_or_stop_with_strict(tmp_path: Path) -> None:
    log = block_log(tmp_path)
    log.write_text(log.read_text() + "{broken\n")
    result = CliRunner().invoke(app, ["simulate", str(log), "--block-size", "4", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["hit_tokens"], report["skipped_lines"]) == (8, 1)
    assert report["errors"][0]["line"] == 3
    assert f"skipped: {log}:3: <line>: invalid JSON" in result.stderr
    strict = CliRunner().invoke(app, ["simulate", str(log), "--strict"])
    assert strict.exit_code == 2 and f"error: {log}:3: <line>" in strict.stderr


@pytest.mark.anyio
async def test_api_errors_name_the_field_and_the_record(migrated_db_url: str) -> None:
    service = create_app(make_settings(migrated_db_url))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        records = [{"timestamp": 0, "tokens": [1, 2, 3]}]
        ignored = await client.post(
            "/v1/simulations", json={"records": records, "policy": "vllm", "ttl_seconds": 5}
        )
        assert ignored.status_code == 422
        assert ignored.json()["errors"][0]["field"] == "body.ttl_seconds"
        # A trace cut in 512-token blocks replayed with 16-token blocks: the second record
        # is at fault, named by its index.
        trace = [
            {"timestamp": 0, "tokens": [1, 2, 3]},
            {"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]},
        ]
        wrong = await client.post("/v1/simulations", json={"records": trace, "policy": "vllm"})
        assert wrong.status_code == 422, wrong.text
        (entry,) = wrong.json()["errors"]
        assert (entry["field"], entry["record"]) == ("records[1]", 1)
        assert "trace blocks are 512 tokens" in entry["message"]
        unknown = await client.post(
            "/v1/simulations",
            json={"records": records, "policy": "automatic", "target": "openai:gpt-4oo"},
        )
        assert unknown.status_code == 404
        assert "gpt-4o" in unknown.json()["close_matches"]


@pytest.mark.anyio
async def test_openapi_declares_the_policy_as_an_object(migrated_db_url: str) -> None:
    service = create_app(make_settings(migrated_db_url))
    transport = httpx.ASGITransport(app=service)
    async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
        document = (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    answer = document["paths"]["/v1/simulations"]["post"]["responses"]["200"]
    refs = {item["$ref"] for item in answer["content"]["application/json"]["schema"]["anyOf"]}
    assert refs == {
        "#/components/schemas/SimulationReport",
        "#/components/schemas/FleetSimulationReport",
    }
    for name in ("SimulationReport", "FleetSimulationReport"):
        policy = schemas[name]["properties"]["policy"]
        assert policy == {"$ref": "#/components/schemas/PolicySettings"}
    assert {"kind", "block_size", "contract"} <= set(schemas["PolicySettings"]["properties"])
