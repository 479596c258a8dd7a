"""Seed the corrected and widened contracts of the packaged data file contracts-v2.json.

Revision ID: 0006_seed_contracts_v2
Revises: 0005_contract_inferred_fields
Create Date: 2026-12-02

Stored history is never rewritten: every entry is a new dated version. A version that starts
after a stored open version of the same contract closes it on that day, as
``ContractStore.add_version`` does; nothing else in existing rows changes. Every added row
carries origin 'seed:contracts-v2'. The downgrade deletes exactly those rows (and their
children) and reopens the versions they had closed: each gets back the start of the next
remaining version of its contract as its end, or none.

Table shapes are frozen copies of what 0001 and 0005 created, so later revisions that add
columns do not change what this one does.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence
from importlib import resources
from typing import Any

import sqlalchemy as sa
from alembic import op

from cachecast.contracts.model import ContractTerms
from cachecast.contracts.serialize import loads_json, parse_document
from cachecast.contracts.sqltypes import ExactDecimal

revision: str = "0006_seed_contracts_v2"
down_revision: str | None = "0005_contract_inferred_fields"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SEED_FILE = "contracts-v2.json"
ORIGIN = "seed:contracts-v2"

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
inferred_table = sa.table(
    "contract_inferred_field",
    sa.column("contract_id", sa.Integer),
    sa.column("position", sa.Integer),
    sa.column("field", sa.String),
)
CHILDREN = (ttl_table, alias_table, tier_table, inferred_table)

Span = tuple[dt.date, dt.date | None]


def _end(span: Span) -> dt.date:
    return span[1] or dt.date.max


def _read_seed(seed_file: str) -> list[ContractTerms]:
    text = resources.files("cachecast.contracts").joinpath("data", seed_file).read_text("utf-8")
    return parse_document(loads_json(text, seed_file), seed_file)


def _stored_spans(connection: sa.Connection) -> dict[tuple[str, str], list[Span]]:
    spans: dict[tuple[str, str], list[Span]] = {}
    rows = connection.execute(
        sa.select(
            versions_table.c.provider,
            versions_table.c.model,
            versions_table.c.effective_from,
            versions_table.c.effective_to,
        )
    )
    for row in rows:
        spans.setdefault((row.provider, row.model), []).append(
            (row.effective_from, row.effective_to)
        )
    return spans


def _check(
    seed: list[ContractTerms], stored: dict[tuple[str, str], list[Span]], seed_file: str
) -> None:
    """Raise on any overlap the seed would make, before anything is written."""
    for key, group in itertools.groupby(
        sorted(seed, key=lambda t: (t.provider, t.model, t.effective_from)),
        key=lambda t: (t.provider, t.model),
    ):
        spans = list(stored.get(key, []))
        for terms in group:
            new: Span = (terms.effective_from, terms.effective_to)
            for index, old in enumerate(spans):
                if old[1] is None and old[0] < new[0]:
                    spans[index] = (old[0], new[0])  # closed on the day the new one starts
                elif old[0] < _end(new) and new[0] < _end(old):
                    raise ValueError(
                        f"{seed_file}: {key[0]}/{key[1]} from {new[0]} overlaps the stored"
                        f" version from {old[0]}"
                    )
            spans.append(new)


def upgrade() -> None:
    seed_file(SEED_FILE, ORIGIN)


def seed_file(name: str, origin: str) -> None:
    """Add every version of the packaged document ``name`` with ``origin`` (also used by
    later seed revisions: a revision's tables are the frozen shapes above, and a later seed
    that needs new columns writes them itself)."""
    seed = _read_seed(name)
    connection = op.get_bind()
    stored = _stored_spans(connection)
    _check(seed, stored, name)
    for terms in sorted(seed, key=lambda t: (t.provider, t.model, t.effective_from)):
        connection.execute(
            versions_table.update()
            .where(
                versions_table.c.provider == terms.provider,
                versions_table.c.model == terms.model,
                versions_table.c.effective_to.is_(None),
                versions_table.c.effective_from < terms.effective_from,
            )
            .values(effective_to=terms.effective_from)
        )
        insert_version(connection, terms, origin)


def insert_version(connection: sa.Connection, terms: ContractTerms, origin: str) -> int:
    """Insert one version and its child rows (TTL options, aliases, tiers, inferred fields)
    as this revision's frozen tables hold them; its id. Later revisions that write a version
    back (a downgrade restoring rows it removed) use this, not a copy."""
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
            origin=origin,
        )
        .returning(versions_table.c.id)
    )
    contract_id: int = inserted.scalar_one()
    rows = {
        ttl_table: [
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
        alias_table: [
            {"contract_id": contract_id, "position": position, "pattern": alias}
            for position, alias in enumerate(terms.aliases)
        ],
        tier_table: [
            {
                "contract_id": contract_id,
                "above_input_tokens": tier.above_input_tokens,
                "input_per_mtok": tier.input_per_mtok,
                "output_per_mtok": tier.output_per_mtok,
            }
            for tier in terms.long_context_tiers
        ],
        inferred_table: [
            {"contract_id": contract_id, "position": position, "field": name}
            for position, name in enumerate(terms.inferred_fields)
        ],
    }
    for table, values in rows.items():
        if values:
            connection.execute(table.insert(), values)
    return contract_id


def _version_ids(provider: str, model: str, start: dt.date, origin: str) -> sa.Select[Any]:
    return sa.select(versions_table.c.id).where(
        versions_table.c.provider == provider,
        versions_table.c.model == model,
        versions_table.c.effective_from == start,
        versions_table.c.origin == origin,
    )


def delete_version(provider: str, model: str, start: dt.date, origin: str) -> None:
    """Delete one stored version (of ``origin``, starting on ``start``) and its child rows.
    Later revisions that remove a wrong row use this, not a copy."""
    ids = _version_ids(provider, model, start, origin)
    # Children first: SQLite enforces the foreign keys only when the pragma is on.
    for child in CHILDREN:
        op.execute(child.delete().where(child.c.contract_id.in_(ids)))
    op.execute(versions_table.delete().where(versions_table.c.id.in_(ids)))


def restore_version(provider: str, model: str, start: dt.date, origin: str, seed_file: str) -> None:
    """Write a deleted version back as the packaged ``seed_file`` has it, unless it is
    there (the downgrade of a revision that used ``delete_version``)."""
    connection = op.get_bind()
    if connection.execute(_version_ids(provider, model, start, origin)).first() is not None:
        return
    (terms,) = [
        terms
        for terms in _read_seed(seed_file)
        if (terms.provider, terms.model, terms.effective_from) == (provider, model, start)
    ]
    insert_version(connection, terms, origin)


def downgrade() -> None:
    unseed(ORIGIN)


def unseed(origin: str) -> None:
    """Delete the rows of ``origin`` and reopen the versions they closed."""
    connection = op.get_bind()
    seeded = connection.execute(
        sa.select(
            versions_table.c.provider, versions_table.c.model, versions_table.c.effective_from
        ).where(versions_table.c.origin == origin)
    ).all()
    seeded_ids = sa.select(versions_table.c.id).where(versions_table.c.origin == origin)
    # Children first: SQLite enforces the foreign keys only when the pragma is on.
    for child in CHILDREN:
        op.execute(child.delete().where(child.c.contract_id.in_(seeded_ids)))
    op.execute(versions_table.delete().where(versions_table.c.origin == origin))
    # Reopen what the upgrade closed: a remaining version that ended where a seeded one began,
    # unless another remaining version begins there, ends where the next one starts now.
    for provider, model, start in seeded:
        remaining = connection.execute(
            sa.select(
                versions_table.c.id, versions_table.c.effective_from, versions_table.c.effective_to
            )
            .where(versions_table.c.provider == provider, versions_table.c.model == model)
            .order_by(versions_table.c.effective_from)
        ).all()
        if any(row.effective_from == start for row in remaining):
            continue
        for row, following in itertools.zip_longest(remaining, remaining[1:]):
            if row.effective_to == start and row.effective_from < start:
                connection.execute(
                    versions_table.update()
                    .where(versions_table.c.id == row.id)
                    .values(effective_to=following.effective_from if following else None)
                )
