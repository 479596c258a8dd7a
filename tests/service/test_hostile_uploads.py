"""Issue 28 on the service: the JSON bodies' timestamps and integers, an upload's file name
with a NUL, a DELETE racing the retention sweep, and the service's own lower limits. Each is a
4xx naming the field, never a 500. The real app over a real migrated SQLite database."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from bench.chains import write_chain_har
from cachecast.core import db
from cachecast.core.limits import DEFAULT_LIMITS, SERVICE_LIMITS
from cachecast.service.jobs import jobs_table
from cachecast.service.settings import ServiceSettings
from tests.service.conftest import ADMIN_KEY, make_settings, open_client

pytestmark = pytest.mark.anyio

RECORD = {
    "provider": "openai",
    "model": "gpt-4o",
    "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
}
ESTIMATE = {"targets": ["openai:gpt-4o"], "at": "2026-11-01"}
RANGE = "is outside 1970-01-01 to 9999-12-31 (UTC)"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    return body


def multipart(filename: bytes, content: bytes) -> tuple[bytes, dict[str, str]]:
    """A multipart body written by hand: a client library would escape the NUL."""
    body = (
        b'--BOUNDARY\r\nContent-Disposition: form-data; name="log"; filename="'
        + filename
        + b'"\r\nContent-Type: application/x-ndjson\r\n\r\n'
        + content
        + b"\r\n--BOUNDARY--\r\n"
    )
    return body, {"content-type": "multipart/form-data; boundary=BOUNDARY"}


@pytest.mark.parametrize(
    "timestamp", [1e18, 1e300, 10**39, "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"]
)
async def test_a_timestamp_out_of_range_in_an_estimate_body_is_a_422(
    client: httpx.AsyncClient, timestamp: Any
) -> None:
    answer = await client.post(
        "/v1/estimates", json={"records": [{**RECORD, "timestamp": timestamp}], **ESTIMATE}
    )
    body = problem(answer, 422)
    (error,) = [error for error in body["errors"] if error["field"] == "records[0].timestamp"]
    assert RANGE in error["message"] or "non-negative" in error["message"]


async def test_an_integer_of_5000_digits_in_a_body_is_a_422(client: httpx.AsyncClient) -> None:
    text = json.dumps({"records": [{**RECORD, "output_tokens": 0}], **ESTIMATE})
    text = text.replace('"output_tokens": 0', '"output_tokens": ' + "9" * 5000)
    answer = await client.post(
        "/v1/estimates", content=text, headers={"content-type": "application/json"}
    )
    body = problem(answer, 422)
    assert len(answer.text) < 3000  # the number is not repeated
    assert body["errors"][0]["field"] == "body"


@pytest.mark.parametrize("path", ["/v1/inspections", "/v1/estimates", "/v1/reconciliations"])
@pytest.mark.parametrize("name", [b"a\x00b.jsonl", b"a\nb.jsonl", b"x" * 300 + b".jsonl"])
async def test_a_file_name_with_a_nul_or_too_long_is_a_422(
    client: httpx.AsyncClient, path: str, name: bytes
) -> None:
    body, headers = multipart(name, json.dumps(RECORD).encode())
    answer = await client.post(path, content=body, headers=headers)
    found = problem(answer, 422)
    assert [error["field"] for error in found["errors"]] == ["log.filename"]
    assert "\x00" not in answer.text and "xxxxxxxxxx" not in answer.text


async def test_a_plain_file_name_is_still_read(client: httpx.AsyncClient) -> None:
    body, headers = multipart(b"agent log.jsonl", json.dumps(RECORD).encode())
    answer = await client.post("/v1/inspections", content=body, headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["files"][0]["path"] == "agent log.jsonl"


async def test_delete_racing_the_retention_sweep_is_a_404_not_a_500(migrated_db_url: str) -> None:
    """The job is deleted (as the sweep deletes a finished job) between the route's first read
    and its cancel: before, an ``assert`` made this a 500."""
    settings = make_settings(migrated_db_url, job_runners=0, job_threshold_records=1)
    engine = db.get_engine(migrated_db_url)
    async for http in open_client(settings):
        accepted = await http.post("/v1/estimates", json={"records": [RECORD] * 2, **ESTIMATE})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        mine = {"X-Job-Token": accepted.json()["owner_token"]}

        def swept_first(
            connection: Any, cursor: Any, statement: str, *_: Any, doomed: str = job_id
        ) -> None:
            if statement.startswith(f"UPDATE {jobs_table.name} SET status"):
                cursor.execute(f"DELETE FROM {jobs_table.name} WHERE id = ?", (doomed,))

        sa.event.listen(engine, "before_cursor_execute", swept_first)
        try:
            answer = await http.delete(f"/v1/jobs/{job_id}", headers=mine)
        finally:
            sa.event.remove(engine, "before_cursor_execute", swept_first)
        found = problem(answer, 404)
        assert found["type"].endswith("/unknown-job")
    with engine.connect() as connection:
        left = connection.execute(
            sa.select(sa.func.count()).select_from(jobs_table).where(jobs_table.c.id == job_id)
        ).scalar()
    assert left == 0


def test_the_service_runs_under_its_own_lower_limits() -> None:
    """docs/limits.md: the service's per-request budgets are far below the command line's."""
    limits = ServiceSettings().limits
    assert limits == SERVICE_LIMITS
    assert limits.max_log_tokens == 50_000_000 < DEFAULT_LIMITS.max_log_tokens
    assert limits.max_request_tokens == 2_000_000 < DEFAULT_LIMITS.max_request_tokens
    assert limits.max_line_bytes == 16 * 1024 * 1024 < DEFAULT_LIMITS.max_line_bytes
    for name in ("max_log_records", "max_log_bytes", "max_record_chars", "max_document_bytes"):
        assert getattr(limits, name) < getattr(DEFAULT_LIMITS, name), name


async def test_100_claims_just_under_the_cli_cap_are_refused_by_the_service_budget(
    migrated_db_url: str,
) -> None:
    """Issue 28: 9,000,000 claimed tokens x 100 records (a 17 KB body) took the server to 8 GB.
    The service's max_request_tokens (2,000,000) refuses the first claim, naming it."""
    record = {**RECORD, "usage": {"prompt_tokens": 9_000_000, "completion_tokens": 1}}
    # (run at once: 100 records are under the default job_threshold_records of 1000)
    settings = make_settings(migrated_db_url, job_threshold_records=1000)
    async for http in open_client(settings):
        answer = await http.post("/v1/estimates", json={"records": [record] * 100, **ESTIMATE})
        found = problem(answer, 422)
        assert found["type"].endswith("/limit-exceeded")
        assert "max_request_tokens" in found["detail"] and "9000000" in found["detail"]


async def test_identity_canaries_never_reach_an_answer_or_a_job_result(
    migrated_db_url: str,
) -> None:
    """An api_key, org and user in the records become hashed scopes (core.identity): neither
    the direct answer nor the stored job result holds them."""
    canaries = {"api_key": "sk-CANARY-0123456789", "org": "CANARY-ORG", "user": "CANARY-USER"}
    records = [{**RECORD, **canaries, "timestamp": index} for index in range(3)]
    settings = make_settings(migrated_db_url, job_threshold_records=2)
    async for http in open_client(settings):
        direct = await http.post("/v1/estimates", json={"records": records[:2], **ESTIMATE})
        assert direct.status_code == 200, direct.text
        accepted = await http.post("/v1/estimates", json={"records": records, **ESTIMATE})
        assert accepted.status_code == 202, accepted.text
        status_url = accepted.json()["status_url"]
        mine = {"X-Job-Token": accepted.json()["owner_token"]}
        for _ in range(600):
            job = await http.get(status_url, headers=mine)
            if job.json()["status"] in ("done", "failed"):
                break
            await asyncio.sleep(0.05)
        assert job.json()["status"] == "done", job.text
        for answer in (direct, accepted, job):
            assert "CANARY" not in answer.text
    with db.get_engine(migrated_db_url).connect() as connection:
        stored = connection.execute(sa.select(jobs_table.c.result_json)).scalars().all()
    assert stored and all("CANARY" not in (text or "") for text in stored)


async def test_heavy_requests_beyond_the_bound_are_a_503_and_health_still_answers(
    migrated_db_url: str,
) -> None:
    """max_concurrent_requests = 1: while one estimate runs (its body still streaming in),
    another is answered 503 with Retry-After before its body is read; /healthz and job reads
    are not held up; once the first ends, the next is served."""
    settings = make_settings(migrated_db_url, max_concurrent_requests=1, busy_retry_after_seconds=9)
    release = asyncio.Event()
    started = asyncio.Event()
    body = json.dumps({"records": [RECORD], **ESTIMATE}).encode()

    async def slow_body() -> Any:
        yield body[:10]
        started.set()
        await release.wait()
        yield body[10:]

    async for http in open_client(settings):
        first = asyncio.create_task(
            http.post(
                "/v1/estimates", content=slow_body(), headers={"content-type": "application/json"}
            )
        )
        await asyncio.wait_for(started.wait(), 30)
        busy = await http.post("/v1/estimates", json={"records": [RECORD], **ESTIMATE})
        found = problem(busy, 503)
        assert found["type"].endswith("/busy")
        assert busy.headers["Retry-After"] == "9"
        assert "max_concurrent_requests" in found["detail"]
        assert (await http.get("/healthz")).status_code == 200
        release.set()
        assert (await first).status_code == 200
        again = await http.post("/v1/estimates", json={"records": [RECORD], **ESTIMATE})
        assert again.status_code == 200, again.text


async def test_a_job_belongs_to_who_submitted_it(migrated_db_url: str) -> None:
    """Only the owner token the 202 answered with (or an admin key) reads or cancels a job;
    anyone else gets the 404 an unknown id gets. Only the token's SHA-256 is stored."""
    settings = make_settings(migrated_db_url, job_runners=0, job_threshold_records=1)
    async for http in open_client(settings):
        accepted = await http.post("/v1/estimates", json={"records": [RECORD] * 2, **ESTIMATE})
        assert accepted.status_code == 202, accepted.text
        job_id, token = accepted.json()["job_id"], accepted.json()["owner_token"]
        assert len(token) >= 40  # 32 random bytes, URL-safe base64
        unknown = problem(await http.get("/v1/jobs/no-such-job"), 404)
        strangers: list[dict[str, str]] = [
            {},
            {"X-Job-Token": token[:-1] + ("A" if token[-1] != "A" else "B")},
            {"X-Job-Token": ""},
            {"Authorization": f"Bearer {token}"},  # the owner token is not an admin key
            {"Authorization": "Bearer not-an-admin-key-of-this-server"},
        ]
        for headers in strangers:
            for method in ("GET", "DELETE"):
                answer = await http.request(method, f"/v1/jobs/{job_id}", headers=headers)
                found = problem(answer, 404)
                assert {k: found[k] for k in ("type", "title", "status")} == {
                    k: unknown[k] for k in ("type", "title", "status")
                }
        mine = await http.get(f"/v1/jobs/{job_id}", headers={"X-Job-Token": token})
        assert mine.status_code == 200 and mine.json()["status"] == "queued"  # not cancelled
        admin = await http.get(f"/v1/jobs/{job_id}", headers=ADMIN)
        assert admin.json() == mine.json()
        cancelled = await http.delete(f"/v1/jobs/{job_id}", headers={"X-Job-Token": token})
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "failed"
    with db.get_engine(migrated_db_url).connect() as connection:
        row = connection.execute(sa.select(jobs_table).where(jobs_table.c.id == job_id)).one()
    assert row.owner_digest == hashlib.sha256(token.encode()).hexdigest()
    assert all(token not in str(value) for value in row)


async def test_the_schema_states_what_the_server_enforces(client: httpx.AsyncClient) -> None:
    """ST202: a body the schema accepts must not be refused. A change's keys are contract
    fields only (not the identifying ones), a comparison's gpu is not empty, a job read names
    its owner-token header."""
    document = (await client.get("/openapi.json")).json()
    paths = document["paths"]
    change = paths["/v1/contracts/{provider}/{model}/changes"]["post"]["requestBody"]
    changes = change["content"]["application/json"]["schema"]["properties"]["changes"]
    assert changes["additionalProperties"] is False
    assert "read_multiplier" in changes["properties"]
    assert not {"provider", "model", "effective_from", "effective_to"} & set(changes["properties"])
    compare = paths["/v1/comparisons"]["post"]["requestBody"]["content"]["application/json"]
    gpu = compare["schema"]
    if "$ref" in gpu:
        gpu = document["components"]["schemas"][gpu["$ref"].rsplit("/", 1)[1]]
    assert gpu["properties"]["gpu"]["minLength"] == 1
    for method in ("get", "delete"):
        names = [p["name"] for p in paths["/v1/jobs/{job_id}"][method]["parameters"]]
        assert "X-Job-Token" in names


async def test_a_chained_log_too_large_to_store_as_a_job_is_refused_before_it_is_stored(
    service_db_url: str, tmp_path: Any
) -> None:
    """Before: 3,000 Responses requests chained by ``previous_response_id`` (a 3 MB HAR)
    became a job whose records, each holding every earlier turn, were written out whole: a
    minute, gigabytes, then a database error (500). The records a job would store are
    counted record by record against ``max_body_bytes``. Here 200 chained requests (a
    220 KB upload; request k holds k earlier turns of about 260 bytes: 5 MB written out)
    pass 2,000,000 bytes: a 422 naming the setting, and no job. 60 of them (about 0.5 MB
    written out) are a job."""
    settings = make_settings(service_db_url, max_body_bytes=2_000_000)
    async for client in open_client(settings):
        long = write_chain_har(tmp_path / "long.har", 200).read_bytes()
        refused = await client.post(
            "/v1/estimates", files={"log": ("long.har", long)}, data=ESTIMATE
        )
        assert refused.status_code == 422, refused.text
        problem = refused.json()
        assert problem["type"] == "https://cachecast.dev/problems/limit-exceeded"
        assert "max_body_bytes" in problem["detail"] and "2,000,000 bytes" in problem["detail"]
        with db.get_engine(service_db_url).connect() as connection:
            stored = connection.execute(sa.select(sa.func.count()).select_from(jobs_table))
            assert stored.scalar_one() == 0
        short = write_chain_har(tmp_path / "short.har", 60).read_bytes()
        accepted = await client.post(
            "/v1/estimates", files={"log": ("short.har", short)}, data=ESTIMATE
        )
        assert accepted.status_code == 202, accepted.text
