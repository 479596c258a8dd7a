"""Contract store: mode 'none', a version under which the provider offers no prompt caching.

Revision ID: 0017_contract_mode_none
Revises: 0016_seed_contracts_v9
Create Date: 2026-12-05

The check ``ck_contract_version_mode`` admits 'none' besides 'automatic', 'explicit' and
'both'. A version with mode 'none' has no row in ``contract_ttl_option`` (it offers no
lifetime), which that child table already allows; every stored version keeps its meaning.

SQLite cannot alter a check constraint: batch mode copies ``contract_version`` into a new
table and drops the old one. With foreign keys enforced (``core.db`` turns them on, and a
pragma cannot change inside the migration's transaction), dropping the old table deletes
its rows first, and that delete cascades to the child tables (TTL options, aliases, price
tiers, inferred fields, off-peak prices). So the children's rows are read before the copy and
written back after it, ids unchanged; the copy keeps the versions' ids.

The downgrade **refuses** while versions with mode 'none' are stored (it names them): the old
check cannot hold them, and deleting contract data silently is worse than stopping. The
seed revisions that add such versions remove them in their own downgrades, which run first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0017_contract_mode_none"
down_revision: str | None = "0016_seed_contracts_v9"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "contract_version"
CHECK = "ck_contract_version_mode"
WITH_NONE = "mode IN ('automatic', 'explicit', 'both', 'none')"
WITHOUT_NONE = "mode IN ('automatic', 'explicit', 'both')"
# Every table whose rows hang off a version with ON DELETE CASCADE (contracts.tables).
CHILDREN = (
    "contract_ttl_option",
    "contract_alias",
    "contract_price_tier",
    "contract_inferred_field",
    "contract_off_peak",
)


def _replace_check(condition: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.drop_constraint(CHECK, TABLE, type_="check")
        op.create_check_constraint(CHECK, TABLE, condition)
        return
    inspector = sa.inspect(bind)
    kept: dict[str, list[dict[str, Any]]] = {}
    for name in CHILDREN:
        if inspector.has_table(name):
            table = sa.Table(name, sa.MetaData(), autoload_with=bind)
            kept[name] = [dict(row._mapping) for row in bind.execute(sa.select(table))]
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_constraint(CHECK, type_="check")
        batch.create_check_constraint(CHECK, condition)
    for name, rows in kept.items():
        table = sa.Table(name, sa.MetaData(), autoload_with=bind)
        bind.execute(table.delete())  # nothing is left, unless the engine did not cascade
        if rows:
            bind.execute(table.insert(), rows)


def upgrade() -> None:
    _replace_check(WITH_NONE)


def downgrade() -> None:
    bind = op.get_bind()
    rows = bind.execute(
        sa.text(
            "SELECT provider, model, effective_from, origin FROM contract_version"
            " WHERE mode = 'none' ORDER BY provider, model, effective_from"
        )
    ).all()
    if rows:
        listed = "; ".join(
            f"{row.provider}/{row.model} from {row.effective_from} ({row.origin})"
            for row in rows[:10]
        )
        more = f" and {len(rows) - 10} more" if len(rows) > 10 else ""
        raise RuntimeError(
            f"cannot downgrade below 0017_contract_mode_none: {len(rows)} stored contract"
            f" version(s) have mode 'none', which the older schema cannot hold: {listed}{more}."
            " Remove them first (their seed revision's downgrade, or `contracts` commands)."
        )
    _replace_check(WITHOUT_NONE)
