"""Hostile or broken input never costs memory, data or a 5xx: each probe of an outside review
of the API, answered fast with a 4xx that names the field, and nothing half-written.

The real app over real migrated databases (httpx's ASGI transport), a real uvicorn where the
connection matters, a subprocess where a broken server could take the session's memory.
Expected values come from the documented limits (docs/limits.md), the contract rules
(docs/contracts.md) and the problem format (docs/errors.md).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cachecast.core import db
from cachecast.core.errors import MAX_LISTED_PROBLEMS
from cachecast.service.jobs import JobStore, jobs_table
from tests.service.conftest import ADMIN_KEY, make_settings, open_client
from tests.service.server import Server
from tests.service.test_api import _new_contract

pytestmark = pytest.mark.anyio

PROBLEM = "application/problem+json"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
REPO = Path(__file__).resolve().parents[2]
DAY = "2026-11-01"
# docs/limits.md: the service's default of max_request_tokens.
MAX_REQUEST_TOKENS = 2_000_000


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    return body


def fields(body: dict[str, Any]) -> list[str]:
    return [error["field"] for error in body.get("errors", [])]


def contract(model: str, effective_from: str, **changes: Any) -> dict[str, Any]:
    return {**_new_contract(model, effective_from), **changes}


def estimate(records: list[dict[str, Any]], target: str = "openai:gpt-4o") -> dict[str, Any]:
    return {"records": records, "targets": [target], "at": DAY}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# ------------------------------------------------------------ 1. claimed sizes


def test_1_a_claimed_token_count_is_refused_at_once_with_memory_unchanged(
    migrated_db_url: str,
) -> None:
    """80 bytes claiming 1e40 prompt tokens for a model whose tokenizer is approximate: the
    count is over max_request_tokens (2,000,000 by the service's default), so a 422 well
    under a second and no memory taken, instead of padding tokens one by one."""
    ran = subprocess.run(
        [sys.executable, "-m", "tests.service.hostile_claim", migrated_db_url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    outcome = json.loads(ran.stdout.splitlines()[-1])
    assert outcome["record_bytes"] < 110
    assert outcome["status"] == 422, outcome
    found = outcome["problem"]
    assert found["type"] == "https://cachecast.dev/problems/limit-exceeded"
    assert fields(found) == ["records[0].usage.input_tokens"]
    assert str(MAX_REQUEST_TOKENS) in found["detail"]
    assert "max_request_tokens" in found["detail"]
    assert outcome["seconds"] < 1.0, outcome
    assert outcome["grown_bytes"] < 20 * 2**20, outcome


async def test_1_limits_are_the_service_settings(migrated_db_url: str) -> None:
    """max_request_tokens and max_log_tokens as set: 100 tokens per request, 150 per log."""
    settings = make_settings(migrated_db_url, max_request_tokens=100, max_log_tokens=150)
    async for http in open_client(settings):
        over = [{"tokens": list(range(101))}]
        body = problem(await http.post("/v1/estimates", json=estimate(over)), 422)
        assert body["type"].endswith("/limit-exceeded")
        assert "100" in body["detail"] and "max_request_tokens" in body["detail"]
        # Two requests of 80 tokens (no output): 160 > 150 for the log.
        log = [{"tokens": list(range(80)), "timestamp": t} for t in (1, 2)]
        body = problem(await http.post("/v1/estimates", json=estimate(log)), 422)
        assert "max_log_tokens" in body["detail"] and "160" in body["detail"]
        assert body["errors"][0]["record"] == 1
        # Within both: priced.
        fine = await http.post("/v1/estimates", json=estimate(log[:1]))
        assert fine.status_code == 200, fine.text


# ------------------------------------------------------------ 2. contract keys


@pytest.mark.parametrize("model", ["a/b", "zero\u200bwidth", "nul\x00x", "with space", "q?x"])
async def test_2_a_contract_key_that_is_no_url_segment_is_refused_and_nothing_written(
    client: httpx.AsyncClient, model: str
) -> None:
    # The PostgreSQL database is shared by the session: compare with what was there before.
    before = (await client.get("/v1/contracts", params={"provider": "testco"})).json()
    for _ in range(2):  # the retry is refused the same way, never a 409 for a half-write
        body = problem(
            await client.post("/v1/contracts", json=contract(model, "2026-01-01"), headers=ADMIN),
            422,
        )
        assert fields(body) == ["body.model"]
    after = (await client.get("/v1/contracts", params={"provider": "testco"})).json()
    assert after["contracts"] == before["contracts"]
    assert model not in {row["model"] for row in after["contracts"]}


async def test_2_every_stored_contract_reads_back_where_location_says(
    client: httpx.AsyncClient,
) -> None:
    """The rule's characters (letters, digits, . _ - : @) are path characters as they are."""
    model = "acme.v1:0@eu_west-2"
    created = await client.post("/v1/contracts", json=contract(model, "2026-01-01"), headers=ADMIN)
    assert created.status_code == 201, created.text
    location = created.headers["Location"]
    assert location == f"/v1/contracts/testco/{model}?at=2026-01-01"
    shown = await client.get(location)
    assert shown.status_code == 200, shown.text
    assert shown.json() == created.json()


# ------------------------------------------------------------ 3. small bodies, heavy work

LAYOUT = {
    "cachecast_layout": 1,
    "provider": "openai",
    "model": "gpt-4o",
    "turn": [{"role": "user", "content": "hi"}],
    "arrival": {"sessions": 1, "turns_per_session": 1, "start": "2026-03-02T09:00:00Z"},
}


def layout_check(system: str) -> dict[str, Any]:
    layout = {**LAYOUT, "system": system}
    return {
        "baseline": {"layout": layout},
        "candidate": {"layout": layout},
        "targets": ["openai:gpt-4o"],
        "at": DAY,
    }


async def test_3_a_template_asking_for_60_mb_is_refused_before_making_it(
    client: httpx.AsyncClient,
) -> None:
    start = time.monotonic()
    response = await client.post("/v1/layout-checks", json=layout_check("{{ 'ab ' * 20000000 }}"))
    body = problem(response, 422)
    assert time.monotonic() - start < 2.0
    assert body["type"].endswith("/limit-exceeded")
    assert fields(body) == ["body.baseline.layout.system"]
    # 'ab ' * 20,000,000 = 60,000,000 characters, over max_template_output_chars.
    assert "60000000" in body["detail"] and "max_template_output_chars" in body["detail"]


async def test_3_a_template_looping_without_output_stops_at_the_time_limit(
    migrated_db_url: str,
) -> None:
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    settings = make_settings(migrated_db_url, max_template_render_seconds=0.5)
    async for http in open_client(settings):
        start = time.monotonic()
        body = problem(await http.post("/v1/layout-checks", json=layout_check(loop)), 422)
        assert time.monotonic() - start < 5.0
        assert "max_template_render_seconds" in body["detail"]


async def test_3_a_model_with_a_billion_layers_is_refused_before_any_sizing(
    client: httpx.AsyncClient,
) -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 1_000_000_000,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    record = {"timestamp": 1762074000, "model": "gpt-4o", "prompt": "hello", "output_tokens": 10}
    start = time.monotonic()
    response = await client.post(
        "/v1/comparisons", json={"records": [record], "model": config, "gpu": "h100-sxm"}
    )
    body = problem(response, 422)
    assert time.monotonic() - start < 1.0
    assert body["type"].endswith("/limit-exceeded")
    assert fields(body) == ["body.model.num_hidden_layers"]
    assert "max_model_layers" in body["detail"]


# ------------------------------------------------------------ 4. bounded after open


async def test_4_a_bounded_version_never_ends_the_open_one(client: httpx.AsyncClient) -> None:
    created = await client.post(
        "/v1/contracts", json=contract("open-m", "2026-01-01"), headers=ADMIN
    )
    assert created.status_code == 201, created.text
    bounded = contract("open-m", "2026-12-01", effective_to="2027-01-01", read_multiplier="0.25")
    body = problem(await client.post("/v1/contracts", json=bounded, headers=ADMIN), 409)
    assert "2027-01-01" in body["detail"]
    history = (await client.get("/v1/contracts/testco/open-m/history")).json()["versions"]
    assert [(v["effective_from"], v["effective_to"]) for v in history] == [("2026-01-01", None)]
    later = await client.get("/v1/contracts/testco/open-m", params={"at": "2027-02-01"})
    assert later.status_code == 200
    # A bounded version into a gap (before the first) ends nothing: stored.
    earlier = contract("open-m", "2025-06-01", effective_to="2026-01-01")
    stored = await client.post("/v1/contracts", json=earlier, headers=ADMIN)
    assert stored.status_code == 201, stored.text


# ------------------------------------------------------------ 5. what used to be 500s


async def test_5_json_nested_10000_deep_is_a_422_everywhere(client: httpx.AsyncClient) -> None:
    deep = nested(10000)
    json_body = (
        '{"records": [{"prompt": "x", "model": "gpt-4o", "e": '
        + deep
        + '}], "targets": ["openai:gpt-4o"]}'
    )
    headers = {"content-type": "application/json"}
    for path, text in (
        ("/v1/estimates", json_body),
        ("/v1/layout-checks", '{"baseline": ' + deep + "}"),
        ("/v1/contracts", '{"provider": ' + deep + "}"),
    ):
        extra = ADMIN if path == "/v1/contracts" else {}
        body = problem(await client.post(path, content=text, headers={**headers, **extra}), 422)
        assert "recursion" in body["detail"], body
    line = ('{"prompt": "x", "model": "gpt-4o", "e": ' + deep + "}\n").encode()
    upload = await client.post(
        "/v1/estimates", files={"log": ("l.jsonl", line)}, data={"targets": "openai:gpt-4o"}
    )
    body = problem(upload, 422)
    assert body["errors"][0]["line"] == 1


async def test_5_out_of_range_numbers_are_422_naming_the_field(client: httpx.AsyncClient) -> None:
    headers = {"content-type": "application/json"}
    cases: list[tuple[str, str, str]] = [
        (
            "/v1/simulations",
            '{"records": [{"tokens": [1, 2, 3, 4]}], "policy": "vllm", "block_size": 2,'
            ' "capacity_blocks": 1' + "0" * 30 + "}",
            "body.capacity_blocks",
        ),
        (
            "/v1/simulations",
            '{"records": [{"tokens": [4294967296, 1]}], "policy": "vllm", "block_size": 2}',
            "records[0].tokens[0]",
        ),
        (
            "/v1/estimates",
            '{"records": [{"prompt": "x", "model": "gpt-4o", "output_tokens": 1'
            + "0" * 70
            + '}], "targets": ["openai:gpt-4o"], "at": "2026-11-01"}',
            "records[0].output_tokens",
        ),
        (
            "/v1/estimates",
            '{"records": [{"prompt": "x", "model": "gpt-4o", "usage": {"input_tokens": 5,'
            ' "input_tokens_details": "x"}}], "targets": ["openai:gpt-4o"], "at": "2026-11-01"}',
            "records[0].usage.input_tokens_details",
        ),
    ]
    record = {"timestamp": 1762074000, "model": "gpt-4o", "prompt": "hello", "output_tokens": 10}
    window = {
        "model_type": "mistral",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 32000,
        "sliding_window": -1,
    }
    for config, price, field in (
        ("llama-3.1-8b", "1e400", "body.gpu_price"),
        (window, None, "body.model.sliding_window"),
    ):
        comparison = {"records": [record], "model": config, "gpu": "h100-sxm", "gpu_price": price}
        cases.append(("/v1/comparisons", json.dumps(comparison), field))
    for path, text, field in cases:
        body = problem(await client.post(path, content=text, headers=headers), 422)
        assert field in fields(body), (path, body)


@pytest.mark.parametrize(
    ("value", "why"), [("1e300", "digits before the point"), ("0.0000000000001", "after the point")]
)
async def test_5_a_decimal_beyond_the_columns_is_422_and_not_written(
    client: httpx.AsyncClient, value: str, why: str
) -> None:
    body = problem(
        await client.post(
            "/v1/contracts",
            json=contract("dec-m", "2026-01-01", input_per_mtok=value),
            headers=ADMIN,
        ),
        422,
    )
    assert fields(body) == ["body.input_per_mtok"]
    assert why in body["detail"]
    problem(await client.get("/v1/contracts/testco/dec-m"), 404)


def test_5_the_connection_stays_usable_after_every_probe(
    migrated_db_url: str, tmp_path: Path
) -> None:
    """A real uvicorn and one keep-alive connection: each former 500 is a 422, and the next
    request on the same connection is answered (before, it was reset)."""
    server = Server(migrated_db_url, tmp_path / "server.log")
    probes = [
        '{"records": [{"prompt": "x", "model": "gpt-4o", "output_tokens": 1'
        + "0" * 70
        + '}], "targets": ["openai:gpt-4o"], "at": "2026-11-01"}',
        '{"records": [{"prompt": "x", "e": ' + nested(10000) + '}], "targets": ["openai:gpt-4o"]}',
    ]
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            for text in probes:
                answer = http.post(
                    "/v1/estimates", content=text, headers={"content-type": "application/json"}
                )
                assert answer.status_code == 422, answer.text
                assert http.get("/healthz").status_code == 200
    finally:
        server.stop()


async def test_5_a_bug_is_a_500_problem_and_the_exception_ends_there() -> None:
    """The middleware that answers bugs, around an app that fails: a 500 problem, and nothing
    raised on to the server (which would reset the client's connection)."""
    from cachecast.service.problems import UnexpectedErrorMiddleware

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/x", "headers": []}
    await UnexpectedErrorMiddleware(failing)(scope, receive, send)
    assert sent[0]["status"] == 500
    assert (b"content-type", PROBLEM.encode()) in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["detail"].startswith("RuntimeError")


# ------------------------------------------------------------ 6. unknown changes


async def test_6_an_unknown_key_in_changes_is_refused(client: httpx.AsyncClient) -> None:
    created = await client.post(
        "/v1/contracts", json=contract("typo-m", "2026-01-01"), headers=ADMIN
    )
    assert created.status_code == 201, created.text
    change = {
        "effective_from": "2026-12-01",
        "verified_on": "2026-11-20",
        "source": "https://example.com/testco/pricing-dec",
        "changes": {"bogus": 1, "read_multiplier": "0.05"},
    }
    body = problem(
        await client.post("/v1/contracts/testco/typo-m/changes", json=change, headers=ADMIN), 422
    )
    assert fields(body) == ["body.changes.bogus"]
    history = (await client.get("/v1/contracts/testco/typo-m/history")).json()["versions"]
    assert len(history) == 1


# ------------------------------------------------------------ 7. queue and retention


def many_records(count: int) -> list[dict[str, Any]]:
    return [{"timestamp": i, "tokens": [i % 7, 1, 2, 3]} for i in range(count)]


async def test_7_a_full_queue_answers_429_with_retry_after(migrated_db_url: str) -> None:
    settings = make_settings(
        migrated_db_url,
        job_runners=0,
        job_threshold_records=2,
        job_queue_limit=2,
        job_retry_after_seconds=7,
    )
    async for http in open_client(settings):
        for _ in range(2):
            accepted = await http.post("/v1/estimates", json=estimate(many_records(3)))
            assert accepted.status_code == 202, accepted.text
        full = await http.post("/v1/estimates", json=estimate(many_records(3)))
        body = problem(full, 429)
        assert full.headers["Retry-After"] == "7"
        assert "job_queue_limit" in body["detail"]
    with db.get_engine(migrated_db_url).connect() as connection:
        stored = connection.execute(sa.select(sa.func.count()).select_from(jobs_table)).scalar()
    assert stored == 2  # the refused job left nothing behind


async def test_7_finished_jobs_go_after_their_retention(migrated_db_url: str) -> None:
    """A running service sweeps on its own: the request body of a finished job is dropped at
    the first sweep, the job itself once it is older than job_retention_seconds."""
    settings = make_settings(
        migrated_db_url,
        job_threshold_records=2,
        job_sweep_seconds=0.1,
        job_retention_seconds=1.0,
    )
    async for http in open_client(settings):
        accepted = await http.post("/v1/estimates", json=estimate(many_records(3)))
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        mine = {"X-Job-Token": accepted.json()["owner_token"]}
        deadline = time.monotonic() + 60
        seen_done = body_dropped = False
        while time.monotonic() < deadline:
            answer = await http.get(f"/v1/jobs/{job_id}", headers=mine)
            if answer.status_code == 404:
                break
            seen_done = seen_done or answer.json()["status"] == "done"
            with db.get_engine(migrated_db_url).connect() as connection:
                kept = connection.execute(
                    sa.select(jobs_table.c.request_json).where(jobs_table.c.id == job_id)
                ).scalar()
            body_dropped = body_dropped or kept == ""
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the finished job was never swept")
        assert seen_done and body_dropped
        problem(await http.get(f"/v1/jobs/{job_id}", headers=mine), 404)


def test_7_the_sweep_drops_bodies_then_jobs_by_age_then_by_size(migrated_db_url: str) -> None:
    from cachecast.service.retention import sweep

    store = JobStore(migrated_db_url)
    engine = db.get_engine(migrated_db_url)
    ids = []
    for _ in range(3):
        job_id = store.submit("estimate", {"records": ["x" * 1000]}, 1)
        claimed = store.claim_next("worker")
        assert claimed is not None and claimed[0] == job_id
        assert store.complete(job_id, "worker", {"result": "r" * 100}, 1)
        ids.append(job_id)
    queued = store.submit("estimate", {"records": ["y" * 1000]}, 1)
    # The first job finished long ago.
    with engine.begin() as connection:
        connection.execute(
            jobs_table.update()
            .where(jobs_table.c.id == ids[0])
            .values(finished_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
        )
    # Results are '{"result":"rrr..."}': 100 + 13 characters each; room for one of them.
    result = sweep(engine, max_age_seconds=3600, max_bytes=150)
    assert (result.bodies_dropped, result.deleted_by_age, result.deleted_by_size) == (3, 1, 1)
    with engine.connect() as connection:
        rows = dict(connection.execute(sa.select(jobs_table.c.id, jobs_table.c.request_json)).all())
    assert set(rows) == {ids[2], queued}  # the newest finished one, and the queued one
    assert rows[ids[2]] == ""
    assert json.loads(rows[queued]) == {"records": ["y" * 1000]}  # still to be run


# ------------------------------------------------------------ 8. error size


async def test_8_an_error_response_lists_the_first_problems_and_counts_all(
    client: httpx.AsyncClient,
) -> None:
    lines = b"not json\n" * 60000
    response = await client.post(
        "/v1/estimates", files={"log": ("l.jsonl", lines)}, data={"targets": "openai:gpt-4o"}
    )
    body = problem(response, 422)
    assert len(body["errors"]) == MAX_LISTED_PROBLEMS
    assert body["total_errors"] == 60000
    assert len(response.content) < len(lines)
    assert [error["line"] for error in body["errors"][:3]] == [1, 2, 3]


# ------------------------------------------------------------ 9. the OpenAPI document


async def test_9_every_error_is_documented_as_the_problem_it_is(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert list(response["content"]) == [PROBLEM], (method, path, status)
    assert "HTTPValidationError" not in document["components"]["schemas"]
    estimates = document["paths"]["/v1/estimates"]["post"]["responses"]
    assert "Retry-After" in estimates["429"]["headers"]


async def test_9_strict_types_as_the_schema_says(client: httpx.AsyncClient) -> None:
    for params in ({"at": "0"}, {"at": "86400"}):
        body = problem(await client.get("/v1/contracts", params=params), 422)
        assert fields(body) == ["query.at"]
    records = [{"tokens": [1, 2, 3]}]
    for name, value in (("auto_cache_control", 0), ("at", 0), ("at", "0")):
        sent = {**estimate(records), name: value}
        body = problem(await client.post("/v1/estimates", json=sent), 422)
        assert fields(body) == [f"body.{name}"]


async def test_9_a_write_authenticates_before_it_reads_the_body(client: httpx.AsyncClient) -> None:
    broken = b"\xff\xfe{"
    headers = {"content-type": "application/json"}
    for path in ("/v1/contracts", "/v1/contracts/openai/gpt-4o/changes"):
        problem(await client.post(path, content=broken, headers=headers), 401)
        body = problem(await client.post(path, content=broken, headers={**headers, **ADMIN}), 422)
        assert fields(body) == ["body"]
