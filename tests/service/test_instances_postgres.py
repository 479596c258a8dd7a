"""Two real ``cachecast serve`` instances (uvicorn, 127.0.0.1) on ONE PostgreSQL database.

Issue 5: "several instances on one PostgreSQL database must work". Both processes are started
once for the module on a fresh database migrated once; each test then drives them through
HTTP only and checks the shared database directly where the API cannot show enough (who
claimed a job, which rows a refused write left). Skipped, saying why, without a server.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from cachecast.contracts import ContractStore
from cachecast.contracts.store import ALIASES, TTL_OPTIONS, VERSIONS
from cachecast.core import db
from cachecast.passes.log_input import LogInput
from cachecast.service.jobs import jobs_table
from cachecast.usecases.estimate import EstimateRequest, estimate
from tests.service.conftest import ADMIN_KEY
from tests.service.logs import PREFIX_TOKENS, SUFFIX_TOKENS, shared_prefix_records
from tests.service.server import Server

pytestmark = pytest.mark.postgres

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
JOB_THRESHOLD = 4  # records; every log below has at least 6, so every estimate is a job
ESTIMATE_DAY = "2026-11-01"
# Two targets with different tokenizers: each job makes two tokenization passes.
ESTIMATE_TARGETS = ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"]


class Instances:
    def __init__(self, url: str, a: Server, b: Server) -> None:
        self.url = url
        self.a = a
        self.b = b
        self.engine = db.get_engine(url)

    @property
    def both(self) -> tuple[Server, Server]:
        return self.a, self.b


@pytest.fixture(scope="module")
def instances(
    new_postgres_database: Callable[[], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Instances]:
    url = new_postgres_database()
    db.upgrade(url)  # once, before either instance starts
    logs = tmp_path_factory.mktemp("instances")
    settings: dict[str, Any] = {
        "admin_keys": ADMIN_KEY,
        "job_threshold_records": JOB_THRESHOLD,
        "job_poll_seconds": 0.05,
    }
    servers: list[Server] = []
    try:
        # Started together so their imports overlap; each waits with its own bound.
        servers.append(Server(url, logs / "a.log", **settings))
        servers.append(Server(url, logs / "b.log", **settings))
        for server in servers:
            server.wait_ready()
        yield Instances(url, servers[0], servers[1])
    finally:
        for server in servers:
            server.stop()


def _sample(metrics_text: str, name: str, **labels: str) -> float:
    """The value of one Prometheus sample; 0 when the series does not exist (yet)."""
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def _wait_done(base_url: str, job_id: str, timeout: float = 45.0) -> dict[str, Any]:
    """Poll until done or failed: a bounded wait, never a hang."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = httpx.get(
            f"{base_url}/v1/jobs/{job_id}", headers=ADMIN, timeout=10
        ).json()
        if job["status"] in ("done", "failed"):
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['status']} after {timeout} s: {job}")
        time.sleep(0.05)


def test_a_contract_appended_through_one_instance_is_served_by_the_other(
    instances: Instances,
) -> None:
    a, b = instances.both
    # B reads first, so any per-process cache it kept would now be stale.
    before = httpx.get(f"{b.base_url}/v1/contracts/openai/gpt-5/history", timeout=10)
    assert before.status_code == 200, before.text
    old_versions = before.json()["versions"]
    newest = old_versions[-1]
    assert newest["effective_to"] is None
    # Any value differing from the stored one shows which version answered.
    new_read = "0.0123" if newest["read_multiplier"] != "0.0123" else "0.0456"
    change = {
        "effective_from": "2027-03-01",
        "verified_on": "2026-11-20",
        "source": "https://example.com/instances-test",
        "changes": {"read_multiplier": new_read},
    }
    created = httpx.post(
        f"{a.base_url}/v1/contracts/openai/gpt-5/changes", json=change, headers=ADMIN, timeout=30
    )
    assert created.status_code == 201, created.text

    later = httpx.get(f"{b.base_url}/v1/contracts/openai/gpt-5?at=2027-03-01", timeout=10)
    assert later.status_code == 200, later.text
    assert (later.json()["read_multiplier"], later.json()["effective_from"]) == (
        new_read,
        "2027-03-01",
    )
    # The day before the change is still the old version, now closed by the new one.
    earlier = httpx.get(f"{b.base_url}/v1/contracts/openai/gpt-5?at=2027-02-28", timeout=10)
    assert earlier.json()["read_multiplier"] == newest["read_multiplier"]
    assert earlier.json()["effective_to"] == "2027-03-01"

    history = httpx.get(f"{b.base_url}/v1/contracts/openai/gpt-5/history", timeout=10).json()
    versions = history["versions"]
    assert len(versions) == len(old_versions) + 1  # appended, nothing rewritten away
    assert versions[:-2] == old_versions[:-1]
    assert {**versions[-2], "effective_to": None} == newest
    assert (versions[-1]["effective_from"], versions[-1]["read_multiplier"]) == (
        "2027-03-01",
        new_read,
    )


def _in_process_estimate(url: str, records: list[dict[str, Any]], log: Path) -> dict[str, Any]:
    """What ``estimate()`` says for the same records read from a JSONL file."""
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    request = EstimateRequest(
        log=LogInput.of_paths([log]),
        targets=list(ESTIMATE_TARGETS),
        at=dt.date.fromisoformat(ESTIMATE_DAY),
    )
    return estimate(request, ContractStore(url)).model_dump(mode="json")


def test_jobs_submitted_to_both_run_once_and_read_the_same_everywhere(
    instances: Instances, tmp_path: Path
) -> None:
    a, b = instances.both
    # Six logs of 3..8 sessions (6..16 records, all over the threshold of 4), sent three to
    # each instance, all at once.
    session_counts = [3, 4, 5, 6, 7, 8]
    bodies: list[dict[str, Any]] = [
        {"records": shared_prefix_records(n), "targets": ESTIMATE_TARGETS, "at": ESTIMATE_DAY}
        for n in session_counts
    ]
    finished_before = {
        server.port: _sample(
            httpx.get(f"{server.base_url}/metrics", timeout=10).text,
            "cachecast_jobs_finished_total",
            kind="estimate",
            outcome="done",
        )
        for server in (a, b)
    }
    start = threading.Barrier(len(bodies))

    def submit(index: int) -> str:
        server = (a, b)[index % 2]
        start.wait(timeout=30)
        accepted = httpx.post(f"{server.base_url}/v1/estimates", json=bodies[index], timeout=60)
        assert accepted.status_code == 202, accepted.text
        job_id: str = accepted.json()["job_id"]
        return job_id

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        job_ids = list(pool.map(submit, range(len(bodies))))
    assert len(set(job_ids)) == len(bodies)

    for job_id, sessions, body in zip(job_ids, session_counts, bodies, strict=True):
        job = _wait_done(a.base_url, job_id)
        assert job["status"] == "done", job
        from_b = httpx.get(f"{b.base_url}/v1/jobs/{job_id}", headers=ADMIN, timeout=10).json()
        assert from_b == job  # the same stored job, whichever instance is asked
        result = job["result"]
        expected = _in_process_estimate(instances.url, body["records"], tmp_path / f"{job_id}.jl")
        # Only the source's name differs: the service names inline records "request".
        assert result == {**expected, "sources": ["request"]}
        # By hand, per session (see logs.shared_prefix_records): gpt-4o writes the 2048-token
        # prefix (16 x 128, over the 1024 minimum) on the first request and reads it on the
        # second, 1 s later; the 100-token suffix is uncached. Anthropic's contract needs
        # breakpoints, these records carry none, so nothing is cached there.
        gpt, claude = result["targets"]
        per_session_input = PREFIX_TOKENS + PREFIX_TOKENS + SUFFIX_TOKENS
        assert (
            gpt["input_tokens"],
            gpt["cache_read_tokens"],
            gpt["cache_write_tokens"],
            gpt["uncached_input_tokens"],
        ) == (
            sessions * per_session_input,
            sessions * PREFIX_TOKENS,
            sessions * PREFIX_TOKENS,
            sessions * SUFFIX_TOKENS,
        )
        assert (claude["cache_read_tokens"], claude["cache_write_tokens"]) == (0, 0)
        # Two tokenizers: every record is read twice, and progress says so.
        assert job["progress"]["processed_records"] == 2 * len(body["records"])

    with instances.engine.connect() as connection:
        rows = connection.execute(
            sa.select(jobs_table.c.id, jobs_table.c.status, jobs_table.c.claimed_by).where(
                jobs_table.c.id.in_(job_ids)
            )
        ).all()
    assert {row.id for row in rows} == set(job_ids)
    # claimed_by is host:pid:process-start:token; one uvicorn worker per instance, so the
    # pid is the instance's own process.
    claims_by_pid: dict[int, int] = {}
    for row in rows:
        assert row.status == "done"
        pid = int(row.claimed_by.split(":")[1])
        claims_by_pid[pid] = claims_by_pid.get(pid, 0) + 1
    assert set(claims_by_pid) <= {a.process.pid, b.process.pid}, (claims_by_pid, a, b)

    # Exactly once: each instance finished as many jobs as the database says it claimed,
    # and none had its result dropped because another instance held the job.
    for server in (a, b):
        metrics = httpx.get(f"{server.base_url}/metrics", timeout=10).text
        done = (
            _sample(metrics, "cachecast_jobs_finished_total", kind="estimate", outcome="done")
            - finished_before[server.port]
        )
        assert done == claims_by_pid.get(server.process.pid, 0), (server.port, claims_by_pid)
        for outcome in ("lost", "failed", "abandoned"):
            assert _sample(metrics, "cachecast_jobs_finished_total", outcome=outcome) == 0


def _contract_body(template: dict[str, Any], model: str, **changes: Any) -> dict[str, Any]:
    return {
        **template,
        "model": model,
        "verified_on": "2026-11-20",
        "source": "https://example.com/instances-test",
        **changes,
    }


def test_overlapping_versions_posted_to_both_at_once_one_wins_whole(
    instances: Instances,
) -> None:
    a, b = instances.both
    template = httpx.get(
        f"{a.base_url}/v1/contracts/openai/gpt-4o?at={ESTIMATE_DAY}", timeout=10
    ).json()
    for round_number in range(4):
        model = f"instances-race-{round_number}"
        # Overlapping ranges with different starts, so no unique constraint can tell them
        # apart: only the store's write lock makes the second one see the first. Each
        # carries its own alias and price, so the stored rows show whose write they are.
        from_a = _contract_body(
            template,
            model,
            aliases=[f"{model}-from-a"],
            effective_from="2027-01-01",
            effective_to=None,
            input_per_mtok="3",
        )
        from_b = _contract_body(
            template,
            model,
            aliases=[f"{model}-from-b"],
            effective_from="2026-12-15",
            effective_to="2027-02-01",
            input_per_mtok="4",
        )
        start = threading.Barrier(2)

        def post(server: Server, body: dict[str, Any], gate: threading.Barrier = start) -> int:
            gate.wait(timeout=30)
            response = httpx.post(
                f"{server.base_url}/v1/contracts", json=body, headers=ADMIN, timeout=30
            )
            assert response.status_code in (201, 409), response.text
            if response.status_code == 409:
                assert response.headers["content-type"].startswith("application/problem+json")
            return response.status_code

        with ThreadPoolExecutor(max_workers=2) as pool:
            status_a, status_b = pool.map(post, (a, b), (from_a, from_b))
        assert sorted((status_a, status_b)) == [201, 409], (round_number, status_a, status_b)
        winner = from_a if status_a == 201 else from_b

        for server in (a, b):
            history = httpx.get(
                f"{server.base_url}/v1/contracts/openai/{model}/history", timeout=10
            ).json()
            (stored,) = history["versions"]
            assert stored == winner
        with instances.engine.connect() as connection:
            version_ids = (
                connection.execute(
                    sa.select(VERSIONS.c.id).where(
                        VERSIONS.c.provider == "openai", VERSIONS.c.model == model
                    )
                )
                .scalars()
                .all()
            )
            assert len(version_ids) == 1
            aliases = (
                connection.execute(
                    sa.select(ALIASES.c.pattern).where(ALIASES.c.contract_id == version_ids[0])
                )
                .scalars()
                .all()
            )
            loser_alias = (from_b if winner is from_a else from_a)["aliases"][0]
            # Nothing of the refused write anywhere: not its alias, not a child row.
            stray = connection.execute(
                sa.select(sa.func.count()).where(ALIASES.c.pattern == loser_alias)
            ).scalar_one()
            ttl_rows = connection.execute(
                sa.select(sa.func.count()).where(TTL_OPTIONS.c.contract_id == version_ids[0])
            ).scalar_one()
        assert (aliases, stray) == (winner["aliases"], 0)
        assert ttl_rows == len(winner["ttl_options"])


def test_metrics_and_readiness_answer_on_both(instances: Instances) -> None:
    head = db.head_revision()
    with instances.engine.connect() as connection:
        counts: dict[str, int] = dict(
            connection.execute(
                sa.select(jobs_table.c.status, sa.func.count()).group_by(jobs_table.c.status)
            ).all()
        )
    for server in instances.both:
        ready = httpx.get(f"{server.base_url}/readyz", timeout=10)
        assert ready.status_code == 200, ready.text
        assert ready.json() == {
            "status": "ready",
            "database": "reachable",
            "revision": head,
            "head_revision": head,
        }
        metrics = httpx.get(f"{server.base_url}/metrics", timeout=10)
        assert metrics.status_code == 200
        assert metrics.headers["content-type"].startswith("text/plain")
        text = metrics.text
        assert _sample(text, "cachecast_jobs_table_readable") == 1
        # Job counts come from the shared table: both instances show every job.
        for status in ("queued", "running", "done", "failed"):
            assert _sample(text, "cachecast_jobs", status=status) == counts.get(status, 0)
        # Request counters are per process: this instance counted the /readyz just above.
        assert (
            _sample(
                text, "cachecast_http_requests_total", method="GET", route="/readyz", status="200"
            )
            >= 1
        )
