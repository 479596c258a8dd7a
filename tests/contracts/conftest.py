"""Fixtures of the contract-store tests: real SQLite files migrated by real Alembic.

Migrating takes a noticeable fraction of a second, so each layout (schema only; schema
plus seed) is migrated once per session into a template file that every test copies.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cachecast.core import db

SEED_FILE = (
    Path(__file__).resolve().parents[2] / "cachecast" / "contracts" / "data" / "contracts-v1.json"
)
DATA_DIR = Path(__file__).resolve().parent / "data"
SCHEMA_REVISION = "0001_contracts_schema"
SEED_REVISION = "0002_seed_contracts"
TABLES = ("contract_version", "contract_ttl_option", "contract_alias", "contract_price_tier")


def _template(directory: Path, revision: str) -> Path:
    path = directory / f"{revision}.db"
    url = f"sqlite:///{path}"
    db.upgrade(url, revision)
    db.get_engine(url).dispose()
    # Fold the WAL into the main file so a plain copy carries every row.
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("contract-templates")
    return {
        revision: _template(directory, revision) for revision in (SCHEMA_REVISION, SEED_REVISION)
    }


def _copy(template: Path, tmp_path: Path) -> Iterator[str]:
    target = tmp_path / "contracts.db"
    shutil.copyfile(template, target)
    url = f"sqlite:///{target}"
    yield url
    db.get_engine(url).dispose()


@pytest.fixture
def seeded_url(templates: dict[str, Path], tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file at revision 0002: contract schema plus the seed contracts."""
    yield from _copy(templates[SEED_REVISION], tmp_path)


@pytest.fixture
def empty_url(templates: dict[str, Path], tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite file at revision 0001: contract tables, no rows."""
    yield from _copy(templates[SCHEMA_REVISION], tmp_path)


@pytest.fixture(scope="session")
def seed_entries() -> list[dict[str, Any]]:
    """The seed file read with the plain json module, independent of our parser."""
    entries: list[dict[str, Any]] = json.loads(SEED_FILE.read_text("utf-8"))["contracts"]
    return entries


def table_counts(url: str) -> dict[str, int]:
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        return {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in TABLES
        }


def dump_rows(url: str) -> list[tuple[Any, ...]]:
    """Every row of every contract table, to prove a failed write changed nothing."""
    path = url.removeprefix("sqlite:///")
    rows: list[tuple[Any, ...]] = []
    with sqlite3.connect(path) as connection:
        for table in TABLES:
            rows += [
                (table, *row) for row in connection.execute(f"SELECT * FROM {table} ORDER BY id")
            ]
    return rows
