"""Seed contracts-v3.json: contract history back to each model's launch, and the models the
public price maps price with caching that the catalog lacked.

Revision ID: 0009_seed_contracts_v3
Revises: 0008_contract_off_peak
Create Date: 2026-12-03

The document was built by ``python -m cachecast.contracts.catalog_fill`` from a database at
0008, LiteLLM 1.110.2's and genai-prices 0.2.3's bundled maps, ``data/lifecycle.json`` and
the hand-written versions of ``scripts/contracts-v3-hand.json`` (docs/contracts.md). Stored
history is never rewritten: the rows are added exactly as revision 0006 adds its own (same
overlap check, same closing of an open version that a later one follows), with origin
'seed:contracts-v3'; the downgrade deletes those rows (their off-peak rows go with them,
ON DELETE CASCADE, or are deleted first where SQLite leaves foreign keys off) and reopens
what they closed. Off-peak prices (revision 0008's table, which 0006 does not know) are
written here for the seeded versions that have them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.serialize import loads_json, parse_document
from cachecast.contracts.sqltypes import ExactDecimal

revision: str = "0009_seed_contracts_v3"
down_revision: str | None = "0008_contract_off_peak"
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


# The off-peak table as revision 0008 created it: its text windows and three exact prices.
PRICES = ("input_per_mtok", "output_per_mtok", "read_multiplier")
off_peak_table = sa.table(
    "contract_off_peak",
    sa.column("contract_id", sa.Integer),
    sa.column("windows", sa.Text),
    *(sa.column(name, ExactDecimal()) for name in PRICES),
)


def upgrade() -> None:
    seeding = _seeding()
    seeding.seed_file(SEED_FILE, ORIGIN)
    versions = seeding.versions_table
    text = resources.files("cachecast.contracts").joinpath("data", SEED_FILE).read_text("utf-8")
    connection = op.get_bind()
    for terms in parse_document(loads_json(text, SEED_FILE), SEED_FILE):
        if terms.off_peak is None:
            continue
        contract_id = connection.execute(
            sa.select(versions.c.id).where(
                versions.c.provider == terms.provider,
                versions.c.model == terms.model,
                versions.c.effective_from == terms.effective_from,
            )
        ).scalar_one()
        windows = "; ".join(window.text() for window in terms.off_peak.windows)
        prices = {name: getattr(terms.off_peak, name) for name in PRICES}
        connection.execute(
            off_peak_table.insert().values(contract_id=contract_id, windows=windows, **prices)
        )


def downgrade() -> None:
    seeding = _seeding()
    versions = seeding.versions_table
    seeded = sa.select(versions.c.id).where(versions.c.origin == ORIGIN)
    op.execute(off_peak_table.delete().where(off_peak_table.c.contract_id.in_(seeded)))
    seeding.unseed(ORIGIN)
