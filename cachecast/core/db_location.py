"""Where the database is, decided without loading SQLAlchemy: the setting's name, the
embedded default, and the URL chosen before it is parsed (``core.db`` parses and checks it).

A command that may not need the database at all (``usage`` answers from the contract
answers it remembers, ``contracts.answers``) asks here first.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DATABASE_URL_ENV = "CACHECAST_DATABASE_URL"


def default_database_url() -> str:
    """The embedded default: a SQLite file in the user's data directory."""
    data_dir = Path(platformdirs.user_data_dir("cachecast", appauthor=False))
    return f"sqlite:///{data_dir / 'cachecast.db'}"


def chosen_database_url(explicit: str | None = None) -> str:
    """``explicit``, else ``$CACHECAST_DATABASE_URL``, else the default (not parsed)."""
    return explicit or os.environ.get(DATABASE_URL_ENV) or default_database_url()


def plain_sqlite_file(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL (no driver, no query); None otherwise."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url or len(url) == len(prefix):
        return None
    return Path(url[len(prefix) :])


def migrations_dir() -> Path:
    """Alembic scripts: inside the package for a wheel install, else the repository's."""
    package = Path(__file__).resolve().parent.parent  # cachecast/, above core/
    packaged = package / "_migrations"
    if packaged.is_dir():
        return packaged
    return package.parent / "migrations"
