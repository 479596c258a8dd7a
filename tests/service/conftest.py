"""Service fixtures: the real app over a real migrated database (SQLite, and PostgreSQL when
``CACHECAST_TEST_POSTGRES_URL`` names a server), reached through httpx's ASGI transport."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from cachecast import db
from cachecast.service.app import create_app
from cachecast.service.settings import ServiceSettings

POSTGRES_ENV = "CACHECAST_TEST_POSTGRES_URL"
ADMIN_KEY = "test-admin-key-0123456789abcdef"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh database on the PostgreSQL server, migrated to head, dropped afterwards."""
    server_url = os.environ.get(POSTGRES_ENV)
    if not server_url:
        pytest.skip(f"{POSTGRES_ENV} is not set: no PostgreSQL server to test against")
    name = f"cachecast_test_{uuid.uuid4().hex[:12]}"
    admin_engine = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin_engine.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        db.upgrade(url)
        yield url
    finally:
        db.get_engine(url).dispose()
        with admin_engine.connect() as connection:
            connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service_db_url(request: pytest.FixtureRequest) -> str:
    """Each service test runs on a migrated SQLite file and on PostgreSQL (or is skipped,
    saying why, when no server is configured)."""
    if request.param == "sqlite":
        url: str = request.getfixturevalue("migrated_db_url")
        return url
    url = request.getfixturevalue("postgres_url")
    return url


def make_settings(database_url: str, **overrides: Any) -> ServiceSettings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "admin_keys": [ADMIN_KEY],
        "job_threshold_records": 50,
        "job_poll_seconds": 0.05,
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
