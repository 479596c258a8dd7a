"""Service fixtures: the real app over a real migrated database (SQLite, and PostgreSQL when
``CACHECAST_TEST_POSTGRES_URL`` names a server), reached through httpx's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cachecast.core import db
from cachecast.service.app import create_app
from cachecast.service.settings import ServiceSettings

ADMIN_KEY = "test-admin-key-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_url(new_postgres_database: Callable[[], str]) -> str:
    """A fresh database on the PostgreSQL server, migrated to head, shared by the session."""
    url = new_postgres_database()
    db.upgrade(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service_db_url(request: pytest.FixtureRequest) -> str:
    """Each service test runs on a migrated SQLite file and on PostgreSQL (or is skipped,
    saying why, when no server is configured)."""
    if request.param == "sqlite":
        url: str = request.getfixturevalue("migrated_db_url")
        return url
    url = request.getfixturevalue("postgres_url")
    # The PostgreSQL database is shared by the session: each test starts, as on SQLite,
    # with no jobs (a job another test left queued would count against the queue limit).
    with db.get_engine(url).begin() as connection:
        connection.execute(sa.text("DELETE FROM service_jobs"))
    return url


def make_settings(database_url: str, **overrides: Any) -> ServiceSettings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "admin_keys": [ADMIN_KEY],
        "job_threshold_records": 50,
        "job_poll_seconds": 0.05,
        # The 6 s production deadline trips on a loaded CI machine (a work process's start-up
        # counts); the tests of the deadline itself set theirs (test_isolation.py).
        "request_deadline_seconds": 120.0,
    }
    values.update(overrides)
    return ServiceSettings(**values)


async def open_client(settings: ServiceSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://cachecast") as client:
            yield client


@pytest.fixture
async def client(service_db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async for http in open_client(make_settings(service_db_url)):
        yield http


@pytest.fixture
async def readonly_client(service_db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """No admin key configured: writes are disabled."""
    async for http in open_client(make_settings(service_db_url, admin_keys=[])):
        yield http
