"""Database plumbing shared by every subpackage that stores something.

Only SQLAlchemy URLs are accepted, so the same Alembic migrations run on the embedded SQLite
file and on PostgreSQL. Tables are created by migrations only, never by ``create_all``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

# One place says where the database is (read without SQLAlchemy too): named here as before.
from cachecast.core.db_location import DATABASE_URL_ENV as DATABASE_URL_ENV
from cachecast.core.db_location import default_database_url as default_database_url
from cachecast.core.db_location import migrations_dir as migrations_dir
from cachecast.core.errors import (
    BadInputError,
    ConfigurationError,
    Location,
    NotMigratedError,
    UnavailableError,
)

if TYPE_CHECKING:
    from alembic.config import Config

# Alembic is imported where migrations are run or compared: a command that only reads the
# database does not pay for it at start-up (docs/usage-report.md, "Speed").


def resolve_database_url(explicit: str | None = None, *, origin: str = "--database-url") -> str:
    """``explicit`` (``--database-url``, or a setting named by ``origin``) wins, then
    ``CACHECAST_DATABASE_URL``, then the embedded default.

    A URL SQLAlchemy cannot parse is bad configuration; the error names where the URL came
    from but never repeats it (it may hold a password)."""
    if explicit:
        url = explicit
    elif os.environ.get(DATABASE_URL_ENV):
        url, origin = os.environ[DATABASE_URL_ENV], DATABASE_URL_ENV
    else:
        url, origin = default_database_url(), "the default database"
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigurationError(
            "not a SQLAlchemy database URL (e.g. sqlite:///path/cachecast.db or"
            " postgresql+psycopg://user@host/db)",
            location=Location(field=origin),
        ) from None
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        raise ConfigurationError(
            f"unknown database kind {parsed.drivername!r} (use sqlite or postgresql+psycopg)",
            location=Location(field=origin),
        ) from None
    return url


def display_url(url: str) -> str:
    """The URL as it may be shown: with any password masked."""
    return make_url(url).render_as_string(hide_password=True)


def require_existing(url: str) -> None:
    """For commands that only read: a SQLite file that does not exist is an error, not a new
    empty database (``get_engine`` would create it and its folders)."""
    path = _sqlite_file(url)
    if path is not None and not path.is_file():
        raise NotMigratedError(
            f"no database at {path}: run `cachecast db upgrade` first (or give --database-url)",
            location=Location(field="--database-url"),
        )


def _sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets readers run beside one writer; foreign keys are off by default in SQLite;
    # busy_timeout makes a second writing process wait instead of failing at once.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


@cache
def get_engine(url: str) -> Engine:
    """One engine per URL per process (engines pool connections, so they are shared)."""
    sqlite_path = _sqlite_file(url)
    if sqlite_path is not None:
        sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _on_sqlite_connect)
        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    # Alembic's Config treats '%' as interpolation; URLs may contain escaped passwords.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    from alembic import command

    with _migrating(url, revision):
        command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str) -> None:
    from alembic import command

    with _migrating(url, revision):
        command.downgrade(alembic_config(url), revision)


@contextmanager
def _migrating(url: str, revision: str) -> Iterator[None]:
    """Alembic's own errors (an unknown revision, a downgrade above the current one) are the
    user's; a database that does not answer is unavailable."""
    from alembic.util.exc import CommandError

    try:
        yield
    except CommandError as error:
        raise BadInputError(
            " ".join(str(error).split()), location=Location(field="revision")
        ) from None
    except OperationalError as error:
        raise unreachable(url, error) from None
    except OSError as error:  # the SQLite file or its folder cannot be created
        raise ConfigurationError(
            f"cannot create the database at {display_url(url)}: {error.strerror}",
            location=Location(field="database_url"),
        ) from None


def unreachable(url: str, error: OperationalError) -> UnavailableError:
    """The database at ``url`` did not answer (the password masked, the driver's reason)."""
    return UnavailableError(
        f"cannot reach the database at {display_url(url)}: {' '.join(str(error.orig).split())}",
        location=Location(field="database_url"),
    )


def exists(url: str) -> bool:
    """False only for a SQLite file that is not there (a server is asked when connected)."""
    path = _sqlite_file(url)
    return path is None or path.is_file()


def current_revision(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    try:
        with get_engine(url).connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    except OperationalError as error:
        raise unreachable(url, error) from None


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def readiness(url: str) -> tuple[str | None, str | None]:
    """(current revision, why the database cannot serve this code or None when it can):
    it must answer and be migrated to this code's newest revision."""
    try:
        with get_engine(url).connect() as connection:
            connection.execute(sa.text("SELECT 1"))
        revision = current_revision(url)
    except UnavailableError as error:
        return None, error.message
    except sa.exc.SQLAlchemyError as error:
        return None, f"database unreachable: {type(error).__name__}: {error}".strip()
    head = head_revision()
    if revision != head:
        return revision, (
            f"database at revision {revision or 'none'}, this code needs {head};"
            " run 'cachecast db upgrade'"
        )
    return revision, None


def is_current(url: str) -> bool:
    """True when the database is migrated to the newest revision this code knows."""
    return current_revision(url) == head_revision()
