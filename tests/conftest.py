"""Fixtures shared by every test package: a real SQLite file migrated by Alembic, and fresh
databases on a real PostgreSQL server when ``CACHECAST_TEST_POSTGRES_URL`` names one."""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from cachecast.core import db

REPO_ROOT = Path(__file__).resolve().parent.parent
# Third-party data (public traces, recordings written by other projects) is never committed:
# it sits in ../shared/data beside every checkout and CI's clone (docs/testing.md).
SHARED_DATA_ENV = "CACHECAST_SHARED_DATA"
REQUIRE_SHARED_DATA_ENV = "CACHECAST_REQUIRE_SHARED_DATA"
SHARED_DATA = Path(os.environ.get(SHARED_DATA_ENV) or REPO_ROOT.parent / "shared" / "data")
# The public Mooncake trace, checked against its published sha256 before use.
MOONCAKE_TRACE_PATH = "mooncake/synthetic_trace.jsonl"
MOONCAKE_SHA256 = "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131"
POSTGRES_ENV = "CACHECAST_TEST_POSTGRES_URL"

# The embedded default database is a file in the user's data folder (platformdirs reads
# $XDG_DATA_HOME; core/db_location.py). The tests get a data folder of their own, empty as on
# a fresh machine, so a test that uses the default neither reads nor migrates the developer's
# database (another checkout's, perhaps at another revision).
_DATA_HOME = tempfile.mkdtemp(prefix="cachecast-test-data-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
atexit.register(shutil.rmtree, _DATA_HOME, ignore_errors=True)


def shared_data(relative: str) -> Path:
    """A file or folder of the shared third-party data. Absent: the test is skipped, saying
    why, unless ``CACHECAST_REQUIRE_SHARED_DATA=1`` (set by ``.ci/run``) makes it a failure."""
    path = SHARED_DATA / relative
    if not path.exists():
        reason = f"shared test data {path} is absent (set {SHARED_DATA_ENV} to its folder)"
        if os.environ.get(REQUIRE_SHARED_DATA_ENV) == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A URL for a fresh, empty SQLite file (not migrated)."""
    return f"sqlite:///{tmp_path / 'cachecast.db'}"


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated to head by Alembic (schema plus seed contracts), once per
    session: every ``migrated_db_url`` is a copy of it, so each test still gets a fresh,
    really migrated database without running the twenty migrations again (about a second)."""
    path = tmp_path_factory.mktemp("migrated") / "cachecast.db"
    url = f"sqlite:///{path}"
    db.upgrade(url)
    db.get_engine(url).dispose()
    # The engine uses WAL; with its last connection closed SQLite has checkpointed into the
    # main file and removed the log. Copying a live log would copy half a database.
    assert not path.with_name(path.name + "-wal").exists(), "the template's WAL log is live"
    return path


@pytest.fixture
def migrated_db_url(sqlite_url: str, tmp_path: Path, migrated_template: Path) -> Iterator[str]:
    """A fresh SQLite file migrated to head (schema plus seed contracts): a copy of the
    session's migrated template."""
    shutil.copyfile(migrated_template, tmp_path / "cachecast.db")
    yield sqlite_url
    db.get_engine(sqlite_url).dispose()


@pytest.fixture(scope="session")
def new_postgres_database() -> Iterator[Callable[[], str]]:
    """Makes fresh, empty (not migrated) databases on the PostgreSQL server; every one is
    dropped at the end of the session. Skips, saying why, when no server is configured."""
    server_url = os.environ.get(POSTGRES_ENV)
    if not server_url:
        pytest.skip(f"{POSTGRES_ENV} is not set: no PostgreSQL server to test against")
    admin_engine = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    created: list[tuple[str, str]] = []

    def create() -> str:
        name = f"cachecast_test_{uuid.uuid4().hex[:12]}"
        with admin_engine.connect() as connection:
            connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
        created.append((name, url))
        return url

    try:
        yield create
    finally:
        for name, url in created:
            db.get_engine(url).dispose()
            with admin_engine.connect() as connection:
                connection.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin_engine.dispose()


@pytest.fixture(scope="session")
def mooncake_trace() -> Path:
    """The published trace, checked against its published sha256 before use."""
    trace = shared_data(MOONCAKE_TRACE_PATH)
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    if digest != MOONCAKE_SHA256:
        pytest.fail(f"{trace} is not the published trace (sha256 {digest})")
    return trace
