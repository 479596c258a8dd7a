"""The whole API through httpx's ASGI transport, on real migrated databases.

Every test here runs twice: on a fresh SQLite file and on PostgreSQL (skipped with a reason
when ``CACHECAST_TEST_POSTGRES_URL`` is unset).
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from cachecast.cli import app as cli_app
from cachecast.core import db
from tests.service.conftest import ADMIN_KEY, make_settings, open_client
from tests.service.logs import (
    GPT4O_DAY,
    estimate_body,
    owner,
    shared_prefix_records,
    slow_job_body,
    wait_for_job,
)

pytestmark = pytest.mark.anyio

PROBLEM = "application/problem+json"


def assert_problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["title"]
    return body


# ------------------------------------------------------------------ operations


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    ready = await client.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["revision"] == db.head_revision()


async def test_readyz_reports_an_unmigrated_database(sqlite_url: str) -> None:
    db.upgrade(sqlite_url, "0002_seed_contracts")  # one revision short of this code's head
    async for http in open_client(make_settings(sqlite_url)):
        body = assert_problem(await http.get("/readyz"), 503)
        assert "0002_seed_contracts" in body["detail"]
        # /metrics still answers, saying the job table could not be read.
        metrics = await http.get("/metrics")
        assert metrics.status_code == 200
        assert "cachecast_jobs_table_readable 0.0" in metrics.text


async def test_metrics_count_requests_by_route_and_jobs_by_status(
    client: httpx.AsyncClient,
) -> None:
    await client.get("/healthz")
    await client.get("/healthz")
    await client.get("/v1/contracts/openai/no-such-model")
    text = (await client.get("/metrics")).text
    # Two /healthz requests were made by this test on a fresh app, so the counter reads 2.
    assert 'cachecast_http_requests_total{method="GET",route="/healthz",status="200"} 2.0' in text
    assert (
        'cachecast_http_requests_total{method="GET",route="/v1/contracts/{provider}/{model}",'
        'status="404"} 1.0'
    ) in text
    assert (
        'cachecast_http_request_duration_seconds_count{method="GET",route="/healthz"} 2.0' in text
    )
    assert 'cachecast_jobs{status="queued"}' in text


async def test_openapi_documents_every_endpoint_with_examples(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    for path, method in [
        ("/v1/contracts", "get"),
        ("/v1/contracts", "post"),
        ("/v1/contracts/{provider}/{model}", "get"),
        ("/v1/contracts/{provider}/{model}/history", "get"),
        ("/v1/contracts/{provider}/{model}/changes", "post"),
        ("/v1/estimates", "post"),
        ("/v1/simulations", "post"),
        ("/v1/jobs/{job_id}", "get"),
        ("/v1/layout-checks", "post"),
        ("/v1/comparisons", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ]:
        assert method in paths[path], f"{method.upper()} {path} missing from OpenAPI"
    estimate_body_doc = paths["/v1/estimates"]["post"]["requestBody"]["content"]
    assert set(estimate_body_doc) == {"application/json", "multipart/form-data"}
    assert estimate_body_doc["application/json"]["examples"]


async def test_openapi_documents_the_file_uploads(client: httpx.AsyncClient) -> None:
    """The two endpoints that take files of any format: their multipart fields as the routers
    read them (inspections: ``log`` files, ``results``, ``format``; reconciliations: ``log``
    files, ``format``, the records' defaults, the day and the agent client), ``log``
    repeatable binary files."""
    paths = (await client.get("/openapi.json")).json()["paths"]
    files = {"type": "array", "items": {"type": "string", "format": "binary"}}
    expected = {
        "/v1/inspections": (set(), ["log", "results", "format"]),
        "/v1/reconciliations": (
            {"application/json"},
            ["log", "format", "model", "provider", "at", "client"],
        ),
    }
    for path, (other_media, fields) in expected.items():
        content = paths[path]["post"]["requestBody"]["content"]
        assert set(content) == other_media | {"multipart/form-data"}
        upload = content["multipart/form-data"]["schema"]
        assert upload["required"] == ["log"]
        assert list(upload["properties"]) == fields
        assert {key: upload["properties"]["log"][key] for key in files} == files


# ------------------------------------------------------------------ contracts


async def test_contract_as_of_a_date(client: httpx.AsyncClient) -> None:
    # Issue 2's acceptance facts (OpenAI's published terms): gpt-5.6 on 2026-11-01 has a
    # 1,024-token minimum, a 30-minute TTL refreshed on hit at 1.25x writes, 0.1x reads.
    response = await client.get("/v1/contracts/openai/gpt-5.6", params={"at": "2026-11-01"})
    assert response.status_code == 200, response.text
    terms = response.json()
    assert terms["min_cacheable_tokens"] == 1024
    assert [
        (t["ttl_seconds"], t["refresh_on_hit"], t["write_multiplier"]) for t in terms["ttl_options"]
    ] == [(1800, True, "1.25")]
    assert terms["read_multiplier"] == "0.1"
    old = (await client.get("/v1/contracts/openai/gpt-4o", params={"at": "2025-06-01"})).json()
    assert old["read_multiplier"] == "0.5"


async def test_contract_list_filters_by_provider_and_day(client: httpx.AsyncClient) -> None:
    listed = (
        await client.get("/v1/contracts", params={"provider": "anthropic", "at": "2026-11-01"})
    ).json()["contracts"]
    assert listed, "the seed data has Anthropic contracts in force on 2026-11-01"
    assert {terms["provider"] for terms in listed} == {"anthropic"}
    for terms in listed:
        assert terms["effective_from"] <= "2026-11-01"
        assert terms["effective_to"] is None or terms["effective_to"] > "2026-11-01"


async def test_unknown_model_is_404_with_close_matches(client: httpx.AsyncClient) -> None:
    body = assert_problem(await client.get("/v1/contracts/openai/gpt-4oo"), 404)
    assert "gpt-4o" in " ".join(body["close_matches"])
    assert "gpt-4oo" in body["detail"]


async def test_bad_query_parameter_names_the_field(client: httpx.AsyncClient) -> None:
    body = assert_problem(await client.get("/v1/contracts", params={"at": "yesterday"}), 422)
    assert body["errors"][0]["field"] == "query.at"


def _new_contract(model: str, effective_from: str, read: str = "0.1") -> dict[str, Any]:
    return {
        "provider": "testco",
        "model": model,
        "effective_from": effective_from,
        "verified_on": "2026-11-01",
        "source": "https://example.com/testco/pricing",
        "mode": "automatic",
        "min_cacheable_tokens": 1024,
        "increment_tokens": 128,
        "ttl_options": [
            {"name": "5m", "ttl_seconds": 300, "refresh_on_hit": True, "write_multiplier": "1"}
        ],
        "read_multiplier": read,
        "input_per_mtok": "2.00",
        "output_per_mtok": "8.00",
    }


async def test_writes_are_disabled_without_a_configured_key(
    readonly_client: httpx.AsyncClient,
) -> None:
    contract = _new_contract("ro-model", "2026-01-01")
    response = await readonly_client.post(
        "/v1/contracts", json=contract, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    body = assert_problem(response, 403)
    assert "admin" in body["detail"]
    assert_problem(await readonly_client.get("/v1/contracts/testco/ro-model"), 404)


async def test_writes_need_the_right_key(client: httpx.AsyncClient) -> None:
    model = "auth-model"
    contract = _new_contract(model, "2026-01-01")
    missing = assert_problem(await client.post("/v1/contracts", json=contract), 401)
    assert "Bearer" in missing["detail"]
    wrong = await client.post(
        "/v1/contracts", json=contract, headers={"Authorization": "Bearer not-the-key-at-all!!"}
    )
    assert_problem(wrong, 401)
    assert wrong.headers["www-authenticate"].startswith("Bearer")
    # Nothing was written by the refused attempts.
    assert_problem(await client.get(f"/v1/contracts/testco/{model}"), 404)
    right = await client.post(
        "/v1/contracts", json=contract, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert right.status_code == 201, right.text
    assert right.headers["location"].endswith(f"/v1/contracts/testco/{model}?at=2026-01-01")
    shown = (await client.get(f"/v1/contracts/testco/{model}", params={"at": "2026-06-01"})).json()
    assert shown["input_per_mtok"] == "2.00" or Decimal(shown["input_per_mtok"]) == Decimal(2)


async def test_changes_append_versions_and_overlaps_are_refused(client: httpx.AsyncClient) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    model = "change-model"
    created = await client.post(
        "/v1/contracts", json=_new_contract(model, "2026-01-01"), headers=admin
    )
    assert created.status_code == 201, created.text
    change = {
        "effective_from": "2026-07-01",
        "verified_on": "2026-06-20",
        "source": "https://example.com/testco/pricing-july",
        "changes": {"read_multiplier": "0.05"},
    }
    changed = await client.post(f"/v1/contracts/testco/{model}/changes", json=change, headers=admin)
    assert changed.status_code == 201, changed.text
    assert changed.json()["read_multiplier"] == "0.05"

    history = (await client.get(f"/v1/contracts/testco/{model}/history")).json()["versions"]
    # The first version is kept as it was, only closed where the change starts.
    assert [(v["effective_from"], v["effective_to"], v["read_multiplier"]) for v in history] == [
        ("2026-01-01", "2026-07-01", "0.1"),
        ("2026-07-01", None, "0.05"),
    ]
    before = (await client.get(f"/v1/contracts/testco/{model}", params={"at": "2026-06-30"})).json()
    assert before["read_multiplier"] == "0.1"

    # A version starting inside an existing closed range overlaps it: 409, nothing written.
    overlapping = _new_contract(model, "2026-03-01")
    overlapping["effective_to"] = "2026-05-01"
    conflict = await client.post("/v1/contracts", json=overlapping, headers=admin)
    assert_problem(conflict, 409)
    again = (await client.get(f"/v1/contracts/testco/{model}/history")).json()["versions"]
    assert len(again) == 2

    # Identity fields cannot be smuggled through 'changes'.
    smuggled = dict(change, effective_from="2026-09-01", changes={"model": "other"})
    body = assert_problem(
        await client.post(f"/v1/contracts/testco/{model}/changes", json=smuggled, headers=admin),
        422,
    )
    assert body["errors"][0]["field"] == "body.changes.model"
    invalid = dict(change, effective_from="2026-09-01", changes={"read_multiplier": "-1"})
    body = assert_problem(
        await client.post(f"/v1/contracts/testco/{model}/changes", json=invalid, headers=admin),
        422,
    )
    assert body["errors"][0]["field"] == "body.changes.read_multiplier"


async def test_invalid_contract_body_names_the_field(client: httpx.AsyncClient) -> None:
    contract = _new_contract("bad-model", "2026-01-01")
    contract["ttl_options"][0]["ttl_seconds"] = 0
    body = assert_problem(
        await client.post(
            "/v1/contracts", json=contract, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
        ),
        422,
    )
    assert body["errors"][0]["field"] == "body.ttl_options[0].ttl_seconds"


# ------------------------------------------------------------------ estimates


def _expected_bill(contract: dict[str, Any]) -> tuple[Decimal, Decimal]:
    """shared_prefix_records under OpenAI gpt-4o's 2025 terms, by hand.

    Request 0: 2048 tokens, nothing cached yet -> all 2048 billed at the input price (writes
    are free: write multiplier 1). Request 1: the same 2048 tokens then 100 more, 1 s later in
    the same scope: the cached prefix is the longest 1024 + 128*k <= 2048 = 2048 tokens, read
    at read_multiplier; 100 tokens at the input price. Output: 10 tokens each.
    """
    price_in = Decimal(contract["input_per_mtok"]) / 1_000_000
    price_out = Decimal(contract["output_per_mtok"]) / 1_000_000
    read = Decimal(contract["read_multiplier"])
    with_cache = (2048 + 100) * price_in + 2048 * price_in * read + 20 * price_out
    without_cache = (2048 + 2148) * price_in + 20 * price_out
    return with_cache, without_cache


async def test_small_estimate_is_priced_at_once(client: httpx.AsyncClient) -> None:
    contract = (await client.get("/v1/contracts/openai/gpt-4o", params={"at": GPT4O_DAY})).json()
    response = await client.post(
        "/v1/estimates", json=estimate_body(shared_prefix_records(), ["openai:gpt-4o"])
    )
    assert response.status_code == 200, response.text
    report = response.json()
    (target,) = report["targets"]
    assert target["contract"]["effective_from"] == contract["effective_from"]
    assert target["contract"]["source"] == contract["source"]
    assert (target["requests"], target["input_tokens"], target["cache_read_tokens"]) == (
        2,
        2048 + 2148,
        2048,
    )
    assert target["output_tokens"] == 20
    with_cache, without_cache = _expected_bill(contract)
    assert Decimal(target["cost"]["total"]) == with_cache
    assert Decimal(target["cost_without_cache"]) == without_cache
    assert Decimal(target["savings"]) == without_cache - with_cache


async def test_jsonl_upload_gives_the_same_answer_as_json(client: httpx.AsyncClient) -> None:
    records = shared_prefix_records()
    as_json = await client.post(
        "/v1/estimates", json=estimate_body(records, ["openai:gpt-4o", "openai:gpt-4.1"])
    )
    jsonl = "".join(json.dumps(record) + "\n" for record in records).encode()
    uploaded = await client.post(
        "/v1/estimates",
        files={"log": ("log.jsonl", jsonl, "application/x-ndjson")},
        data={"targets": "openai:gpt-4o,openai:gpt-4.1", "at": GPT4O_DAY},
    )
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json() == as_json.json()


async def test_unknown_target_is_404_with_close_matches(client: httpx.AsyncClient) -> None:
    body = assert_problem(
        await client.post(
            "/v1/estimates", json=estimate_body(shared_prefix_records(), ["openai:gpt-4oo"])
        ),
        404,
    )
    assert any("gpt-4o" in match for match in body["close_matches"])


async def test_malformed_records_name_index_and_field(client: httpx.AsyncClient) -> None:
    records = shared_prefix_records()
    records.insert(1, {"timestamp": 0.5, "tokens": "not a list"})
    body = assert_problem(
        await client.post("/v1/estimates", json=estimate_body(records, ["openai:gpt-4o"])), 422
    )
    (error,) = body["errors"]
    assert error["record"] == 1
    assert error["field"].startswith("records[1].tokens")

    jsonl = b'{"tokens": [1, 2, 3], "timestamp": 0}\n\n{"tokens": [1, 2\n'
    upload = await client.post(
        "/v1/estimates",
        files={"log": ("log.jsonl", jsonl)},
        data={"targets": "openai:gpt-4o"},
    )
    body = assert_problem(upload, 422)
    assert body["errors"][0]["line"] == 3  # the broken line, blank line 2 counted


async def test_request_validation_names_the_field(client: httpx.AsyncClient) -> None:
    body = assert_problem(
        await client.post("/v1/estimates", json={"records": shared_prefix_records()}), 422
    )
    assert body["errors"][0]["field"] == "body.targets"
    body = assert_problem(
        await client.post("/v1/estimates", json=estimate_body(shared_prefix_records(), ["gpt-4o"])),
        422,
    )
    assert body["errors"][0]["field"] == "body.targets[0]"
    unknown_field = dict(estimate_body(shared_prefix_records(), ["openai:gpt-4o"]), extra=1)
    body = assert_problem(await client.post("/v1/estimates", json=unknown_field), 422)
    assert body["errors"][0]["field"] == "body.extra"
    assert_problem(await client.post("/v1/estimates", content=b"{", headers=_json_type()), 422)
    assert_problem(
        await client.post("/v1/estimates", content=b"x", headers={"content-type": "text/plain"}),
        415,
    )


def _json_type() -> dict[str, str]:
    return {"content-type": "application/json"}


async def test_body_limit_declared_and_streamed(service_db_url: str) -> None:
    limit = 1000
    async for http in open_client(make_settings(service_db_url, max_body_bytes=limit)):
        big = json.dumps(estimate_body(shared_prefix_records(), ["openai:gpt-4o"])).encode()
        assert len(big) > limit
        body = assert_problem(
            await http.post("/v1/estimates", content=big, headers=_json_type()), 413
        )
        assert str(limit) in body["detail"]

        async def chunks(data: bytes = big):  # no Content-Length: counted as it streams in
            for start in range(0, len(data), 256):
                yield data[start : start + 256]

        streamed = await http.post("/v1/estimates", content=chunks(), headers=_json_type())
        assert_problem(streamed, 413)
        # A body under the limit still goes through.
        small = await http.post("/v1/contracts", content=b"{}", headers=_json_type())
        assert small.status_code == 401


async def test_large_estimate_becomes_a_job_with_the_same_result(
    client: httpx.AsyncClient, service_db_url: str
) -> None:
    # The fixture's threshold is 50 records: 60 records make a job, 2 records answer at once.
    records = shared_prefix_records(sessions=30)
    assert len(records) == 60
    accepted = await client.post("/v1/estimates", json=estimate_body(records, ["openai:gpt-4o"]))
    assert accepted.status_code == 202, accepted.text
    job = accepted.json()
    assert accepted.headers["location"] == job["status_url"] == f"/v1/jobs/{job['job_id']}"
    done = await wait_for_job(client, job["job_id"], job["owner_token"])
    assert done["status"] == "done", done
    # The result lives in the database: a fresh app (a restarted server) serves it unchanged.
    async for restarted in open_client(make_settings(service_db_url, job_runners=0)):
        again = await restarted.get(f"/v1/jobs/{job['job_id']}", headers=owner(job))
        assert again.json() == done
    assert done["progress"] == {"processed_records": 60, "total_records": 60, "fraction": 1.0}
    (target,) = done["result"]["targets"]
    # 30 independent sessions (scopes) of the 2-request pattern: 30 times the small case.
    assert (target["requests"], target["input_tokens"], target["cache_read_tokens"]) == (
        60,
        30 * (2048 + 2148),
        30 * 2048,
    )


async def test_unknown_job_is_404(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/v1/jobs/no-such-job"), 404)


async def test_concurrent_estimates_each_get_their_own_answer(
    client: httpx.AsyncClient,
) -> None:
    # Request i repeats the 2-request pattern in i+1 scopes: its totals scale with i+1.
    bodies = [
        estimate_body(shared_prefix_records(sessions=i + 1), ["openai:gpt-4o"]) for i in range(6)
    ]
    responses = await asyncio.gather(*(client.post("/v1/estimates", json=b) for b in bodies))
    for i, response in enumerate(responses):
        assert response.status_code == 200, response.text
        (target,) = response.json()["targets"]
        assert target["requests"] == 2 * (i + 1)
        assert target["cache_read_tokens"] == 2048 * (i + 1)


# ------------------------------------------------------------------ simulations


async def test_simulation_counts_vllm_block_hits(client: httpx.AsyncClient) -> None:
    # Block size 4. Request 0: tokens 1..10 -> two full blocks (8 tokens) cached, 2 left over.
    # Request 1: tokens 1..12 -> its first two blocks match, the third (9..12) is new: 8 hits.
    records = [
        {"timestamp": 0, "tokens": list(range(1, 11))},
        {"timestamp": 1, "tokens": list(range(1, 13))},
    ]
    response = await client.post(
        "/v1/simulations",
        json={"records": records, "policy": "vllm", "block_size": 4, "model": "gpt-4o"},
    )
    assert response.status_code == 200, response.text
    stats = response.json()
    assert (stats["requests"], stats["input_tokens"], stats["hit_tokens"]) == (2, 22, 8)
    assert stats["hit_rate"] == pytest.approx(8 / 22)


async def test_simulation_rejects_an_unknown_policy(client: httpx.AsyncClient) -> None:
    body = assert_problem(
        await client.post(
            "/v1/simulations",
            json={"records": [{"timestamp": 0, "tokens": [1]}], "policy": "magic"},
        ),
        422,
    )
    assert body["errors"][0]["field"] == "body.policy"


@pytest.mark.parametrize("model", ["/", "hf:/etc"])
async def test_a_record_naming_a_server_directory_is_refused(
    client: httpx.AsyncClient, model: str
) -> None:
    # "/" and "hf:/etc" would make the tokenizer registry load a Hugging Face tokenizer from
    # the server's own disk; the service refuses them as an unknown model of that record.
    response = await client.post(
        "/v1/simulations",
        json={"records": [{"timestamp": 0, "model": model, "prompt": "hello"}], "policy": "vllm"},
    )
    body = assert_problem(response, 422)
    assert "not allowed" in json.dumps(body)
    assert "model" in json.dumps(body["errors"])


# ------------------------------------------------------------------ routers owned elsewhere


async def test_layout_checks_and_comparisons_are_filled(client: httpx.AsyncClient) -> None:
    # Once placeholders answering 501; now an empty body is a 422 naming a required field.
    for path, required in (("/v1/layout-checks", "body.baseline"), ("/v1/comparisons", "body.gpu")):
        problem = assert_problem(await client.post(path, json={}), 422)
        assert required in [error["field"] for error in problem["errors"]]


async def test_estimate_equals_the_cli_json(
    client: httpx.AsyncClient, service_db_url: str, tmp_path: Path
) -> None:
    # The service promises the very object `cachecast estimate --json` prints for the same
    # log; targets with two different tokenizers exercise the per-tokenizer passes.
    records = shared_prefix_records(sessions=2)
    targets = ["openai:gpt-4o", "anthropic:claude-sonnet-4-5", "openai:gpt-4.1"]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    day = "2026-11-01"  # all three contracts are in force then
    arguments = ["estimate", str(log), "--at", day, "--json", "--database-url"]
    arguments.append(service_db_url)
    for target in targets:
        arguments += ["--target", target]
    result = CliRunner().invoke(cli_app, arguments)
    assert result.exit_code == 0, result.output
    from_cli = json.loads(result.stdout)
    response = await client.post("/v1/estimates", json=estimate_body(records, targets, day))
    assert response.status_code == 200, response.text
    from_service = response.json()
    # Only the name of the log differs: a file path for the CLI, 'request' for the service.
    assert from_cli.pop("sources") == [str(log)]
    assert from_service.pop("sources") == ["request"]
    assert from_service == from_cli


async def test_a_job_with_malformed_records_fails_naming_them(client: httpx.AsyncClient) -> None:
    records = shared_prefix_records(sessions=30)  # 60 records: over the threshold of 50
    records[41]["tokens"] = [1, "two", 3]
    accepted = await client.post("/v1/estimates", json=estimate_body(records, ["openai:gpt-4o"]))
    assert accepted.status_code == 202, accepted.text
    failed = await wait_for_job(client, accepted.json()["job_id"], accepted.json()["owner_token"])
    assert (failed["status"], failed["result"]) == ("failed", None)
    error = failed["error"]
    assert error["status"] == 422
    assert [item["record"] for item in error["errors"]] == [41]
    assert error["errors"][0]["field"].startswith("records[41].tokens")


async def test_unknown_routes_and_methods_are_problems(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/v1/no-such-thing"), 404)
    assert_problem(await client.delete("/v1/contracts"), 405)


async def test_shutdown_fails_a_running_job_at_once(service_db_url: str) -> None:
    settings = make_settings(
        service_db_url, job_threshold_records=100, job_shutdown_grace_seconds=0
    )
    async for http in open_client(settings):
        accepted = await http.post("/v1/estimates", json=slow_job_body())
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        mine = owner(accepted.json())
        while (await http.get(f"/v1/jobs/{job_id}", headers=mine)).json()["status"] == "queued":
            await asyncio.sleep(0.02)
    # The app has shut down with the job unfinished: a fresh app sees it failed, no result.
    async for http in open_client(make_settings(service_db_url, job_runners=0)):
        job = (await http.get(f"/v1/jobs/{job_id}", headers=mine)).json()
        assert (job["status"], job["result"]) == ("failed", None), job
        assert "shut down" in job["error"]["detail"]
