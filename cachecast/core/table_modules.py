"""The one place that knows every module declaring SQLModel tables (for Alembic)."""

from __future__ import annotations

import importlib

TABLE_MODULES = (
    "cachecast.contracts.tables",
    "cachecast.service.tables",
    "cachecast.gpu_backend.tables",
)


def import_all_tables() -> None:
    for name in TABLE_MODULES:
        importlib.import_module(name)
