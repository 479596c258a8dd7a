"""Seed the contract store from the packaged data file contracts-v1.json.

Revision ID: 0002_seed_contracts
Revises: 0001_contracts_schema
Create Date: 2026-12-02

The table shapes below are frozen copies of what 0001 created, so this migration keeps
working after later revisions add columns. Every seeded row carries origin
'seed:contracts-v1'; the downgrade deletes exactly those rows (and their children).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence
from importlib import resources

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.serialize import loads_json, parse_document
from cachecast.contracts.sqltypes import ExactDecimal

revision: str = "0002_seed_contracts"
down_revision: str | None = "0001_contracts_schema"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v1.json"
ORIGIN = "seed:contracts-v1"

versions_table = sa.table(
    "contract_version",
    sa.column("id", sa.Integer),
    sa.column("provider", sa.String),
    sa.column("model", sa.String),
    sa.column("effective_from", sa.Date),
    sa.column("effective_to", sa.Date),
    sa.column("verified_on", sa.Date),
    sa.column("source", sa.Text),
    sa.column("notes", sa.Text),
    sa.column("mode", sa.String),
    sa.column("min_cacheable_tokens", sa.Integer),
    sa.column("increment_tokens", sa.Integer),
    sa.column("lookback_blocks", sa.Integer),
    sa.column("max_breakpoints", sa.Integer),
    sa.column("read_multiplier", ExactDecimal()),
    sa.column("storage_per_mtok_hour", ExactDecimal()),
    sa.column("scope", sa.String),
    sa.column("reported_input_includes_cached", sa.Boolean),
    sa.column("input_per_mtok", ExactDecimal()),
    sa.column("output_per_mtok", ExactDecimal()),
    sa.column("origin", sa.String),
)
ttl_table = sa.table(
    "contract_ttl_option",
    sa.column("contract_id", sa.Integer),
    sa.column("position", sa.Integer),
    sa.column("name", sa.String),
    sa.column("ttl_seconds", sa.Integer),
    sa.column("refresh_on_hit", sa.Boolean),
    sa.column("write_multiplier", ExactDecimal()),
)
alias_table = sa.table(
    "contract_alias",
    sa.column("contract_id", sa.Integer),
    sa.column("position", sa.Integer),
    sa.column("pattern", sa.String),
)
tier_table = sa.table(
    "contract_price_tier",
    sa.column("contract_id", sa.Integer),
    sa.column("above_input_tokens", sa.Integer),
    sa.column("input_per_mtok", ExactDecimal()),
    sa.column("output_per_mtok", ExactDecimal()),
)


def _check_no_overlaps(ranges: dict[tuple[str, str], list[tuple[dt.date, dt.date | None]]]) -> None:
    for (provider, model), spans in ranges.items():
        spans.sort()
        for (start, end), (next_start, _) in itertools.pairwise(spans):
            if end is None or end > next_start:
                raise ValueError(
                    f"{SEED_FILE}: {provider}/{model} version from {start} overlaps the one "
                    f"from {next_start}"
                )


def upgrade() -> None:
    text = resources.files("cachecast.contracts").joinpath("data", SEED_FILE).read_text("utf-8")
    seed = parse_document(loads_json(text, SEED_FILE), SEED_FILE)
    ranges: dict[tuple[str, str], list[tuple[dt.date, dt.date | None]]] = {}
    for terms in seed:
        ranges.setdefault((terms.provider, terms.model), []).append(
            (terms.effective_from, terms.effective_to)
        )
    _check_no_overlaps(ranges)

    connection = op.get_bind()
    for terms in seed:
        inserted = connection.execute(
            versions_table.insert()
            .values(
                provider=terms.provider,
                model=terms.model,
                effective_from=terms.effective_from,
                effective_to=terms.effective_to,
                verified_on=terms.verified_on,
                source=terms.source,
                notes=terms.notes,
                mode=terms.mode.value,
                min_cacheable_tokens=terms.min_cacheable_tokens,
                increment_tokens=terms.increment_tokens,
                lookback_blocks=terms.lookback_blocks,
                max_breakpoints=terms.max_breakpoints,
                read_multiplier=terms.read_multiplier,
                storage_per_mtok_hour=terms.storage_per_mtok_hour,
                scope=terms.scope,
                reported_input_includes_cached=terms.reported_input_includes_cached,
                input_per_mtok=terms.input_per_mtok,
                output_per_mtok=terms.output_per_mtok,
                origin=ORIGIN,
            )
            .returning(versions_table.c.id)
        )
        contract_id = inserted.scalar_one()
        connection.execute(
            ttl_table.insert(),
            [
                {
                    "contract_id": contract_id,
                    "position": position,
                    "name": option.name,
                    "ttl_seconds": option.ttl_seconds,
                    "refresh_on_hit": option.refresh_on_hit,
                    "write_multiplier": option.write_multiplier,
                }
                for position, option in enumerate(terms.ttl_options)
            ],
        )
        if terms.aliases:
            connection.execute(
                alias_table.insert(),
                [
                    {"contract_id": contract_id, "position": position, "pattern": alias}
                    for position, alias in enumerate(terms.aliases)
                ],
            )
        if terms.long_context_tiers:
            connection.execute(
                tier_table.insert(),
                [
                    {
                        "contract_id": contract_id,
                        "above_input_tokens": tier.above_input_tokens,
                        "input_per_mtok": tier.input_per_mtok,
                        "output_per_mtok": tier.output_per_mtok,
                    }
                    for tier in terms.long_context_tiers
                ],
            )


def downgrade() -> None:
    seeded = sa.select(versions_table.c.id).where(versions_table.c.origin == ORIGIN)
    # Children first: SQLite enforces the foreign keys only when the pragma is on, so do
    # not rely on ON DELETE CASCADE.
    for child in (ttl_table, alias_table, tier_table):
        op.execute(child.delete().where(child.c.contract_id.in_(seeded)))
    op.execute(versions_table.delete().where(versions_table.c.origin == ORIGIN))
