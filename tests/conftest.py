"""Fixtures shared by every test package: a real SQLite file migrated by Alembic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cachecast import db

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DIR = REPO_ROOT.parent / "shared"
MOONCAKE_TRACE = SHARED_DIR / "data" / "mooncake" / "synthetic_trace.jsonl"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A URL for a fresh, empty SQLite file (not migrated)."""
    return f"sqlite:///{tmp_path / 'cachecast.db'}"


@pytest.fixture
def migrated_db_url(sqlite_url: str) -> Iterator[str]:
    """A fresh SQLite file migrated to head (schema plus seed contracts)."""
    db.upgrade(sqlite_url)
    yield sqlite_url
    db.get_engine(sqlite_url).dispose()


@pytest.fixture
def mooncake_trace() -> Path:
    if not MOONCAKE_TRACE.is_file():
        pytest.fail(f"the shared Mooncake trace is missing at {MOONCAKE_TRACE}")
    return MOONCAKE_TRACE
