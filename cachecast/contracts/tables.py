"""SQLModel tables of the contract store (created only by migrations 0001, 0005 and 0008; 0017
admits mode 'none' in the mode check).

One ``contract_version`` row per dated version of a provider+model contract; its TTL
options, aliases and long-context price tiers hang off it in child tables. Money columns
use :class:`ExactDecimal` so nothing passes through a float.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from cachecast.contracts.sqltypes import ExactDecimal

MODES = ("automatic", "explicit", "both", "none")


def _contract_id_column(foreign_key_name: str) -> sa.Column[int]:
    """The child tables' link to their version; deleting a version deletes its children."""
    return sa.Column(
        "contract_id",
        sa.Integer,
        sa.ForeignKey("contract_version.id", ondelete="CASCADE", name=foreign_key_name),
        nullable=False,
        index=True,
    )


class ContractVersionRow(SQLModel, table=True):
    __tablename__ = "contract_version"
    __table_args__ = (
        sa.UniqueConstraint(
            "provider", "model", "effective_from", name="uq_contract_version_start"
        ),
        sa.CheckConstraint(
            "effective_to IS NULL OR effective_to > effective_from",
            name="ck_contract_version_range",
        ),
        sa.CheckConstraint(
            "mode IN ('automatic', 'explicit', 'both', 'none')", name="ck_contract_version_mode"
        ),
        sa.CheckConstraint("min_cacheable_tokens >= 0", name="ck_contract_version_min"),
        sa.Index("ix_contract_version_lookup", "provider", "model", "effective_from"),
    )

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    model: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))
    effective_from: dt.date = Field(sa_column=sa.Column(sa.Date, nullable=False))
    effective_to: dt.date | None = Field(default=None, sa_column=sa.Column(sa.Date))
    verified_on: dt.date = Field(sa_column=sa.Column(sa.Date, nullable=False))
    source: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    notes: str = Field(default="", sa_column=sa.Column(sa.Text, nullable=False))
    mode: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    min_cacheable_tokens: int = Field(sa_column=sa.Column(sa.Integer, nullable=False))
    increment_tokens: int | None = Field(default=None, sa_column=sa.Column(sa.Integer))
    lookback_blocks: int | None = Field(default=None, sa_column=sa.Column(sa.Integer))
    max_breakpoints: int | None = Field(default=None, sa_column=sa.Column(sa.Integer))
    read_multiplier: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    storage_per_mtok_hour: Decimal | None = Field(default=None, sa_column=sa.Column(ExactDecimal()))
    scope: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    reported_input_includes_cached: bool = Field(sa_column=sa.Column(sa.Boolean, nullable=False))
    input_per_mtok: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    output_per_mtok: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    # Where the row came from ('seed:contracts-v1', 'import', 'api'): lets the seed
    # migration's downgrade remove exactly the rows it added.
    origin: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))


class ContractTtlOptionRow(SQLModel, table=True):
    __tablename__ = "contract_ttl_option"
    __table_args__ = (
        sa.UniqueConstraint("contract_id", "name", name="uq_contract_ttl_option_name"),
        sa.UniqueConstraint("contract_id", "position", name="uq_contract_ttl_option_position"),
        sa.CheckConstraint("ttl_seconds > 0", name="ck_contract_ttl_option_seconds"),
    )

    id: int | None = Field(default=None, primary_key=True)
    contract_id: int = Field(sa_column=_contract_id_column("fk_contract_ttl_option_contract"))
    position: int = Field(sa_column=sa.Column(sa.Integer, nullable=False))
    name: str = Field(sa_column=sa.Column(sa.String(32), nullable=False))
    ttl_seconds: int = Field(sa_column=sa.Column(sa.Integer, nullable=False))
    refresh_on_hit: bool = Field(sa_column=sa.Column(sa.Boolean, nullable=False))
    write_multiplier: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))


class ContractAliasRow(SQLModel, table=True):
    __tablename__ = "contract_alias"
    __table_args__ = (
        sa.UniqueConstraint("contract_id", "pattern", name="uq_contract_alias_pattern"),
    )

    id: int | None = Field(default=None, primary_key=True)
    contract_id: int = Field(sa_column=_contract_id_column("fk_contract_alias_contract"))
    position: int = Field(sa_column=sa.Column(sa.Integer, nullable=False))
    pattern: str = Field(sa_column=sa.Column(sa.String(200), nullable=False))


class ContractPriceTierRow(SQLModel, table=True):
    __tablename__ = "contract_price_tier"
    __table_args__ = (
        sa.UniqueConstraint(
            "contract_id", "above_input_tokens", name="uq_contract_price_tier_threshold"
        ),
        sa.CheckConstraint("above_input_tokens > 0", name="ck_contract_price_tier_threshold"),
    )

    id: int | None = Field(default=None, primary_key=True)
    contract_id: int = Field(sa_column=_contract_id_column("fk_contract_price_tier_contract"))
    above_input_tokens: int = Field(sa_column=sa.Column(sa.Integer, nullable=False))
    input_per_mtok: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    output_per_mtok: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))


class ContractInferredFieldRow(SQLModel, table=True):
    """One caching rule a version inherits from its model family (created by migration 0005)."""

    __tablename__ = "contract_inferred_field"
    __table_args__ = (
        sa.UniqueConstraint("contract_id", "field", name="uq_contract_inferred_field_field"),
    )

    id: int | None = Field(default=None, primary_key=True)
    contract_id: int = Field(sa_column=_contract_id_column("fk_contract_inferred_field_contract"))
    position: int = Field(sa_column=sa.Column(sa.Integer, nullable=False))
    field: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))


class ContractOffPeakRow(SQLModel, table=True):
    """A version's off-peak prices and windows (created by migration 0008). The windows are
    one text column, ``OffPeakWindow.text()`` forms joined by ``'; '``."""

    __tablename__ = "contract_off_peak"
    __table_args__ = (sa.UniqueConstraint("contract_id", name="uq_contract_off_peak_contract"),)

    id: int | None = Field(default=None, primary_key=True)
    contract_id: int = Field(sa_column=_contract_id_column("fk_contract_off_peak_contract"))
    windows: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    input_per_mtok: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    output_per_mtok: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    read_multiplier: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))


class BatchTermRow(SQLModel, table=True):
    """One dated batch (or flex) price term (``contracts.batch_terms``; created by migration
    0034). ``models`` is a JSON list of contract model ids, NULL for every model of the
    provider; ``applies_to`` the discounted token classes joined by ','."""

    __tablename__ = "batch_term"
    __table_args__ = (
        sa.UniqueConstraint("provider", "tier", "effective_from", "models", name="uq_batch_term"),
        sa.CheckConstraint(
            "effective_to IS NULL OR effective_to > effective_from", name="ck_batch_term_range"
        ),
        sa.CheckConstraint("tier IN ('batch', 'flex')", name="ck_batch_term_tier"),
    )

    id: int | None = Field(default=None, primary_key=True)
    provider: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    models: str | None = Field(default=None, sa_column=sa.Column(sa.Text))
    tier: str = Field(sa_column=sa.Column(sa.String(16), nullable=False))
    effective_from: dt.date = Field(sa_column=sa.Column(sa.Date, nullable=False))
    effective_to: dt.date | None = Field(default=None, sa_column=sa.Column(sa.Date))
    price_ratio: Decimal = Field(sa_column=sa.Column(ExactDecimal(), nullable=False))
    applies_to: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    verified_on: dt.date = Field(sa_column=sa.Column(sa.Date, nullable=False))
    source: str = Field(sa_column=sa.Column(sa.Text, nullable=False))
    notes: str = Field(default="", sa_column=sa.Column(sa.Text, nullable=False))
    origin: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
