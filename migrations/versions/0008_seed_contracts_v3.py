"""Seed contracts-v3.json: contract history back to each model's launch, and the models the
public price maps price with caching that the catalog lacked.

Revision ID: 0008_seed_contracts_v3
Revises: 0007_engine_measurement_dtype
Create Date: 2026-12-03

The document was built by ``python -m cachecast.contracts.catalog_fill`` from a database at
0007, LiteLLM 1.110.2's and genai-prices 0.2.3's bundled maps, ``data/lifecycle.json`` and
the hand-written versions of ``scripts/contracts-v3-hand.json`` (docs/contracts.md). Stored
history is never rewritten: the rows are added exactly as revision 0006 adds its own (same
overlap check, same closing of an open version that a later one follows), with origin
'seed:contracts-v3'; the downgrade deletes those rows and reopens what they closed.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

revision: str = "0008_seed_contracts_v3"
down_revision: str | None = "0007_engine_measurement_dtype"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v3.json"
ORIGIN = "seed:contracts-v3"


def _seeding() -> ModuleType:
    """Revision 0006's seeding (its file name is not an importable module name)."""
    path = Path(__file__).with_name("0006_seed_contracts_v2.py")
    spec = importlib.util.spec_from_file_location("cachecast_migration_0006", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    _seeding().seed_file(SEED_FILE, ORIGIN)


def downgrade() -> None:
    _seeding().unseed(ORIGIN)
