"""The dated contract store: append-only history of provider caching contracts.

Reads and writes go through one SQLAlchemy engine per URL (``cachecast.core.db.get_engine``).
Every write is one transaction that takes the write lock first (``BEGIN IMMEDIATE`` on
SQLite, a table lock on PostgreSQL), so two processes adding versions at once serialise
instead of both passing the overlap check.
"""

from __future__ import annotations

import builtins
import datetime as dt
import difflib
import fnmatch
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel
from sqlalchemy.engine import Connection, make_url

from cachecast.contracts.batch_terms import BatchTerm, batch_term_from_row
from cachecast.contracts.errors import ContractConflictError, ContractKeyError
from cachecast.contracts.model import (
    CacheMode,
    ContractTerms,
    OffPeakPrices,
    OffPeakWindow,
    PriceTier,
    TtlOption,
)
from cachecast.contracts.rules import (
    coverage,
    fallback_names,
    first_lost_span,
    key_problems,
    span_text,
    versioned_names,
)
from cachecast.contracts.served import ServedContract, served_contract
from cachecast.contracts.sqltypes import check_storable
from cachecast.contracts.tables import (
    BatchTermRow,
    ContractAliasRow,
    ContractInferredFieldRow,
    ContractOffPeakRow,
    ContractPriceTierRow,
    ContractTtlOptionRow,
    ContractVersionRow,
)
from cachecast.core import db
from cachecast.core.errors import (
    ContractNotYetInForceError,
    NotMigratedError,
    UnknownContractError,
)

# (re-exported: the alias table lives apart from the database layer)
from cachecast.core.provider_names import PROVIDER_ALIASES as PROVIDER_ALIASES
from cachecast.core.provider_names import normalize_provider as normalize_provider

VERSIONS: sa.Table = sa.inspect(ContractVersionRow).local_table  # type: ignore[assignment]
TTL_OPTIONS: sa.Table = sa.inspect(ContractTtlOptionRow).local_table  # type: ignore[assignment]
ALIASES: sa.Table = sa.inspect(ContractAliasRow).local_table  # type: ignore[assignment]
PRICE_TIERS: sa.Table = sa.inspect(ContractPriceTierRow).local_table  # type: ignore[assignment]
INFERRED: sa.Table = sa.inspect(ContractInferredFieldRow).local_table  # type: ignore[assignment]
OFF_PEAK: sa.Table = sa.inspect(ContractOffPeakRow).local_table  # type: ignore[assignment]
BATCH_TERMS: sa.Table = sa.inspect(BatchTermRow).local_table  # type: ignore[assignment]


def _range_text(terms: ContractTerms) -> str:
    end = terms.effective_to.isoformat() if terms.effective_to else "open"
    return f"[{terms.effective_from.isoformat()}, {end})"


def _overlaps(a: ContractTerms, b: ContractTerms) -> bool:
    a_end = a.effective_to or dt.date.max
    b_end = b.effective_to or dt.date.max
    return a.effective_from < b_end and b.effective_from < a_end


@dataclass
class AddResult:
    """What one batch write did."""

    added: list[ContractTerms] = field(default_factory=list)
    closed: list[ContractTerms] = field(default_factory=list)  # versions given an end date
    unchanged: list[ContractTerms] = field(default_factory=list)  # identical, already stored


class ContractStore:
    """Dated provider caching contracts in a migrated database at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine = db.get_engine(url)
        self._ready = False
        # A database below migration 0005 has no table for inferred fields: it reads as
        # "nothing inferred", and writing a version that has some asks for the upgrade.
        self._has_inferred = False
        self._has_off_peak = False  # below migration 0008: no off-peak prices stored
        self._has_batch_terms = False  # below migration 0034: no batch terms stored

    # ----------------------------------------------------------------- reading

    def as_of(self, provider: str, model: str, day: dt.date) -> ContractTerms:
        """The version in force on ``day`` (from inclusive, to exclusive), resolving aliases."""
        with self._connect() as connection:
            versions = self._resolve(connection, provider, model, day)
        for terms in versions:
            if terms.in_force_on(day):
                return terms
        known = ", ".join(_range_text(terms) for terms in versions)
        name = f"{versions[0].provider}/{versions[0].model}"
        requested = model.strip().lower()
        via = f" (alias {requested!r})" if requested != versions[0].model else ""
        first = min(terms.effective_from for terms in versions)
        if day < first:
            raise ContractNotYetInForceError(
                f"{name}{via} has no contract before {first.isoformat()}, its first version"
                f" (asked for {day.isoformat()})"
            )
        ends = [terms.effective_to for terms in versions]
        last = max(end for end in ends if end is not None) if None not in ends else None
        retired = (
            f": its last version ended on {last.isoformat()} (retired; a recording dated"
            " later may carry a rewritten date: give the day it was made with --at)"
            if last is not None and day >= last
            else ""
        )
        raise UnknownContractError(
            f"{name}{via} has no contract version in force on {day.isoformat()}{retired} "
            f"(stored versions: {known})"
        )

    def served(self, provider: str, model: str, day: dt.date, today: dt.date) -> ServedContract:
        """The version a logged request that ``model`` served on ``day`` is priced under, with
        what was assumed (``contracts.served``)."""
        return served_contract(self, provider, model, day, today)

    def batch_terms(self, provider: str | None = None) -> builtins.list[BatchTerm]:
        """The dated batch and flex price terms (``contracts.batch_terms``), of one provider
        or all, by provider, tier and start; none on a database below migration 0034 (its
        batch requests keep the on-demand prices and the note)."""
        with self._connect() as connection:
            if not self._has_batch_terms:
                return []
            query = sa.select(BATCH_TERMS).order_by(
                BATCH_TERMS.c.provider, BATCH_TERMS.c.tier, BATCH_TERMS.c.effective_from
            )
            if provider is not None:
                query = query.where(BATCH_TERMS.c.provider == normalize_provider(provider))
            rows = connection.execute(query).mappings().all()
        return [batch_term_from_row(row) for row in rows]

    def history(self, provider: str, model: str) -> builtins.list[ContractTerms]:
        """Every version of one contract, oldest first (aliases resolve as in ``as_of``)."""
        with self._connect() as connection:
            return self._resolve(connection, provider, model, None)

    def list(
        self, at: dt.date | None = None, provider: str | None = None
    ) -> builtins.list[ContractTerms]:
        """Versions in force on ``at`` (every version when ``at`` is None), by provider/model."""
        condition: sa.ColumnElement[bool] = sa.true()
        if provider is not None:
            condition = VERSIONS.c.provider == normalize_provider(provider)
        if at is not None:
            condition = sa.and_(
                condition,
                VERSIONS.c.effective_from <= at,
                sa.or_(VERSIONS.c.effective_to.is_(None), VERSIONS.c.effective_to > at),
            )
        with self._connect() as connection:
            return self._load(connection, condition)

    def known_models(self, provider: str | None = None) -> builtins.list[tuple[str, str]]:
        """Distinct (provider, model) pairs with at least one stored version."""
        query = sa.select(VERSIONS.c.provider, VERSIONS.c.model).distinct()
        if provider is not None:
            query = query.where(VERSIONS.c.provider == normalize_provider(provider))
        with self._connect() as connection:
            rows = connection.execute(query.order_by(VERSIONS.c.provider, VERSIONS.c.model))
            return [(row.provider, row.model) for row in rows]

    # ----------------------------------------------------------------- writing

    def add_version(self, terms: ContractTerms) -> ContractTerms:
        """Append one version; closes the version in force when this one starts after it.

        Raises ContractConflictError (and writes nothing) when the new range overlaps any
        other stored version of the same provider and model.
        """
        result = self.add_versions([terms], origin="api")
        return result.added[0]

    def add_versions(
        self,
        versions: Sequence[ContractTerms],
        *,
        origin: str = "api",
        skip_identical: bool = False,
    ) -> AddResult:
        """Append several versions in ONE transaction: all are written, or none.

        ``skip_identical`` lets an export be re-imported: a version equal to a stored one
        (same dates and terms) is counted as unchanged instead of rejected as an overlap.
        """
        for terms in versions:  # every version's keys first: nothing is read or written
            check_keys(terms)
        result = AddResult()
        with self._connect() as connection:
            self._begin_write(connection)
            try:
                before: dict[tuple[str, str], builtins.list[ContractTerms]] = {}
                for terms in versions:
                    key = (terms.provider, terms.model)
                    if key not in before:
                        before[key] = self._versions_of(connection, *key)
                    self._add_one(connection, terms, origin, skip_identical, result)
                for key, earlier in before.items():
                    self._check_coverage(connection, key, earlier)
            except sa.exc.IntegrityError as error:
                connection.rollback()
                raise ContractConflictError(
                    f"the database refused the write ({error.orig}); nothing was written"
                ) from error
            except BaseException:
                connection.rollback()
                raise
            connection.commit()
        return result

    # ----------------------------------------------------------------- internals

    def _connect(self) -> Connection:
        self._ensure_ready()
        return self._engine.connect()

    def _ensure_ready(self) -> None:
        if self._ready:
            return
        if not sa.inspect(self._engine).has_table(VERSIONS.name):
            shown = make_url(self.url).render_as_string(hide_password=True)
            raise NotMigratedError(
                f"database {shown} has no contract tables: run `cachecast db upgrade` first"
            )
        self._has_inferred = sa.inspect(self._engine).has_table(INFERRED.name)
        self._has_off_peak = sa.inspect(self._engine).has_table(OFF_PEAK.name)
        self._has_batch_terms = sa.inspect(self._engine).has_table(BATCH_TERMS.name)
        self._ready = True

    def _begin_write(self, connection: Connection) -> None:
        if connection.dialect.name == "sqlite":
            # Take the write lock before reading, so the overlap check and the insert see
            # the same data; a second writer waits (busy_timeout) instead of interleaving.
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        elif connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"LOCK TABLE {VERSIONS.name} IN SHARE ROW EXCLUSIVE MODE")

    def _add_one(
        self,
        connection: Connection,
        terms: ContractTerms,
        origin: str,
        skip_identical: bool,
        result: AddResult,
    ) -> None:
        existing = self._versions_of(connection, terms.provider, terms.model)
        if skip_identical and terms in existing:
            result.unchanged.append(terms)
            return
        if skip_identical and terms.effective_to is not None:
            # An exported history read back: a version stored open whose export is the same
            # version closed since (the next one follows in the same document).
            still_open = terms.model_copy(update={"effective_to": None})
            if still_open in existing:
                self._close(connection, still_open, terms.effective_to)
                result.closed.append(terms)
                return
        to_close: ContractTerms | None = None
        conflicts: builtins.list[ContractTerms] = []
        for stored in existing:
            if stored.effective_to is None and stored.effective_from < terms.effective_from:
                to_close = stored  # the version in force ends where the new one begins
            elif _overlaps(stored, terms):
                conflicts.append(stored)
        if conflicts:
            ranges = ", ".join(_range_text(stored) for stored in conflicts)
            raise ContractConflictError(
                f"{terms.provider}/{terms.model} {_range_text(terms)} overlaps the stored "
                f"version(s) {ranges}; nothing was written"
            )
        if to_close is not None:
            self._close(connection, to_close, terms.effective_from)
            result.closed.append(to_close.model_copy(update={"effective_to": terms.effective_from}))
        self._insert(connection, terms, origin)
        result.added.append(terms)

    def _versions_of(
        self, connection: Connection, provider: str, model: str
    ) -> builtins.list[ContractTerms]:
        return self._load(
            connection, sa.and_(VERSIONS.c.provider == provider, VERSIONS.c.model == model)
        )

    @staticmethod
    def _close(connection: Connection, version: ContractTerms, end: dt.date) -> None:
        connection.execute(
            VERSIONS.update()
            .where(
                VERSIONS.c.provider == version.provider,
                VERSIONS.c.model == version.model,
                VERSIONS.c.effective_from == version.effective_from,
            )
            .values(effective_to=end)
        )

    def _check_coverage(
        self,
        connection: Connection,
        key: tuple[str, str],
        earlier: builtins.list[ContractTerms],
    ) -> None:
        """Adding versions never takes a day from a contract (contracts.rules): a bounded
        version that would end the open one is refused, nothing written."""
        lost = first_lost_span(coverage(earlier), coverage(self._versions_of(connection, *key)))
        if lost is None:
            return
        name = f"{key[0]}/{key[1]}"
        raise ContractConflictError(
            f"{name} would have no version in force on {span_text(lost)}: a bounded version"
            " (with effective_to) cannot end the open one. Add it without effective_to, or"
            " import it together with the version that follows it (docs/contracts.md);"
            " nothing was written"
        )

    def _insert(self, connection: Connection, terms: ContractTerms, origin: str) -> None:
        if not terms.offers_caching and not _admits_mode_none(connection):
            shown = make_url(self.url).render_as_string(hide_password=True)
            raise NotMigratedError(
                f"database {shown} cannot store {terms.provider}/{terms.model} from"
                f" {terms.effective_from} with mode 'none' (no prompt caching offered): run"
                " `cachecast db upgrade` first"
            )
        inserted = connection.execute(VERSIONS.insert().values(**version_row_values(terms, origin)))
        primary_key = inserted.inserted_primary_key
        assert primary_key is not None  # an INSERT of one row always reports its key
        contract_id = int(primary_key[0])
        child_rows = child_row_values(terms, contract_id)
        if child_rows["inferred_fields"] and not self._has_inferred:
            shown = make_url(self.url).render_as_string(hide_password=True)
            raise NotMigratedError(
                f"database {shown} cannot store inferred fields of {terms.provider}/"
                f"{terms.model}: run `cachecast db upgrade` first"
            )
        if child_rows["off_peak"] and not self._has_off_peak:
            shown = make_url(self.url).render_as_string(hide_password=True)
            raise NotMigratedError(
                f"database {shown} cannot store the off-peak prices of {terms.provider}/"
                f"{terms.model}: run `cachecast db upgrade` first"
            )
        for table, rows in (
            (OFF_PEAK, child_rows["off_peak"]),
            (TTL_OPTIONS, child_rows["ttl_options"]),
            (ALIASES, child_rows["aliases"]),
            (PRICE_TIERS, child_rows["price_tiers"]),
            (INFERRED, child_rows["inferred_fields"]),
        ):
            if rows:
                connection.execute(table.insert(), rows)

    def _load(self, connection: Connection, condition: Any) -> builtins.list[ContractTerms]:
        rows = connection.execute(
            sa.select(VERSIONS)
            .where(condition)
            .order_by(VERSIONS.c.provider, VERSIONS.c.model, VERSIONS.c.effective_from)
        ).all()
        if not rows:
            return []
        ids = sa.select(VERSIONS.c.id).where(condition).scalar_subquery()
        ttl = _children(
            connection,
            TTL_OPTIONS,
            ids,
            TTL_OPTIONS.c.position,
            lambda option: _from_row(TtlOption, option),
        )
        aliases = _children(
            connection, ALIASES, ids, ALIASES.c.position, lambda alias: str(alias.pattern)
        )
        tiers = _children(
            connection,
            PRICE_TIERS,
            ids,
            PRICE_TIERS.c.above_input_tokens,
            lambda tier: _from_row(PriceTier, tier),
        )
        inferred = (
            _children(connection, INFERRED, ids, INFERRED.c.position, lambda item: str(item.field))
            if self._has_inferred
            else {}
        )
        off_peak = (
            _children(connection, OFF_PEAK, ids, OFF_PEAK.c.id, _off_peak_from_row)
            if self._has_off_peak
            else {}
        )
        return [
            _from_row(
                ContractTerms,
                row,
                mode=CacheMode(row.mode),
                aliases=tuple(aliases.get(row.id, ())),
                ttl_options=tuple(ttl.get(row.id, ())),
                long_context_tiers=tuple(tiers.get(row.id, ())),
                inferred_fields=tuple(inferred.get(row.id, ())),
                off_peak=next(iter(off_peak.get(row.id, ())), None),
            )
            for row in rows
        ]

    def _resolve(
        self, connection: Connection, provider: str, model: str, day: dt.date | None
    ) -> builtins.list[ContractTerms]:
        """All versions of the contract that ``model`` names: exact id first, then aliases."""
        provider_id = normalize_provider(provider)
        model_id = model.strip().lower()
        by_provider = self._load(connection, VERSIONS.c.provider == provider_id)
        if not by_provider:
            providers = [
                name for (name,) in connection.execute(sa.select(VERSIONS.c.provider).distinct())
            ]
            elsewhere = sorted(
                f"{name}/{model_id}"
                for (name,) in connection.execute(
                    sa.select(VERSIONS.c.provider).where(VERSIONS.c.model == model_id).distinct()
                )
            )
            matches = difflib.get_close_matches(provider_id, providers, n=5, cutoff=0.6)
            known = ", ".join(sorted(providers)) or "none"
            raise UnknownContractError.listing(
                f"unknown provider {provider_id!r} (known: {known})",
                matches or elsewhere,
            )
        for name in (model_id, *fallback_names(model_id)):
            exact = [terms for terms in by_provider if terms.model == name]
            if exact:
                return exact
            chosen = _best_alias_match(by_provider, name, day)
            if chosen is not None:
                return [terms for terms in by_provider if terms.model == chosen]
        names = sorted({terms.model for terms in by_provider})
        aliases = {a for terms in by_provider for a in terms.aliases if not _is_pattern(a)}
        if provider_id == "bedrock":
            # Bedrock's OpenAI- and Anthropic-compatible APIs name a model without the
            # version suffix of its base model id (docs/contracts.md, "Bedrock Mantle ids").
            for name in versioned_names(model_id, [*names, *sorted(aliases)]):
                chosen = name if name in names else _best_alias_match(by_provider, name, day)
                return [terms for terms in by_provider if terms.model == chosen]
        names += sorted(aliases - set(names))
        raise UnknownContractError.listing(
            f"unknown model {model_id!r} for provider {provider_id!r}",
            close_models(model_id, names),
        )


# Bedrock's cross-region inference prefixes, in front of the vendor's (us.anthropic....).
_GEO_PREFIXES = frozenset(
    {"us", "eu", "apac", "global", "regional", "us-gov", "in", "jp", "au", "ca"}
)
_VENDOR = re.compile(r"[a-z][a-z0-9]*")
_FAMILY = re.compile(r"[a-z]+")


def model_vendor(model_id: str) -> str | None:
    """The vendor a Bedrock-style id names before its first dot, past a geography prefix
    (``us.meta.llama3-...`` -> meta, ``mistral.mistral-7b-...`` -> mistral); None for ids that
    name none (``gpt-3.5-turbo``: the dot is a version's)."""
    head, _, rest = model_id.partition(".")
    if head in _GEO_PREFIXES and rest:
        head, _, rest = rest.partition(".")
    return head if rest and _VENDOR.fullmatch(head) else None


def close_models(model_id: str, names: Sequence[str]) -> builtins.list[str]:
    """Up to five names close to an unknown ``model_id``, its own vendor's first: a model of
    another vendor is no stand-in (a Mistral id listing Meta Llama ids misleads), so an id
    that names its vendor gets only that vendor's names; one that names none (``gpt-...``)
    gets its family's (the leading letters) first, then any close name."""
    vendor = model_vendor(model_id)
    key = vendor if vendor is not None else (_family(model_id) or model_id)

    def key_of(name: str) -> str:
        own = model_vendor(name)
        return own if own is not None else (_family(name) or name)

    same = [name for name in names if key_of(name) == key]
    matches = difflib.get_close_matches(model_id, same, n=5, cutoff=0.4)
    if vendor is None and len(matches) < 5:
        others = difflib.get_close_matches(model_id, names, n=5, cutoff=0.6)
        matches += [name for name in others if name not in matches][: 5 - len(matches)]
    return matches


def _family(model_id: str) -> str | None:
    found = _FAMILY.match(model_id)
    return found.group(0) if found else None


Child = TypeVar("Child")


def _children(
    connection: Connection,
    table: sa.Table,
    ids: sa.ScalarSelect[Any],
    order: sa.ColumnElement[Any],
    build: Callable[[sa.Row[Any]], Child],
) -> dict[int, builtins.list[Child]]:
    """One child table's rows of the versions ``ids``, built and grouped by contract id."""
    grouped: dict[int, builtins.list[Child]] = {}
    for row in connection.execute(
        sa.select(table).where(table.c.contract_id.in_(ids)).order_by(table.c.contract_id, order)
    ):
        grouped.setdefault(row.contract_id, []).append(build(row))
    return grouped


def check_keys(terms: ContractTerms) -> None:
    """Refuse, naming the field, a version the rules of ``contracts.rules`` do not allow;
    then a decimal the money columns cannot hold exactly."""
    problems = [
        ContractKeyError(
            f"{terms.provider}/{terms.model} from {terms.effective_from}: {why}", field=field
        )
        for field, why in key_problems(terms)
    ]
    if problems:
        first = problems[0]
        raise ContractKeyError(first.message, field=first.field, problems=problems)
    _check_exact_columns(terms)


def _check_exact_columns(terms: ContractTerms) -> None:
    """Refuse a decimal the money columns cannot hold exactly, naming the field."""
    values: list[tuple[str, Decimal | None]] = [
        ("read_multiplier", terms.read_multiplier),
        ("storage_per_mtok_hour", terms.storage_per_mtok_hour),
        ("input_per_mtok", terms.input_per_mtok),
        ("output_per_mtok", terms.output_per_mtok),
    ]
    values += [
        (f"ttl_options[{index}].write_multiplier", option.write_multiplier)
        for index, option in enumerate(terms.ttl_options)
    ]
    for index, tier in enumerate(terms.long_context_tiers):
        values.append((f"long_context_tiers[{index}].input_per_mtok", tier.input_per_mtok))
        values.append((f"long_context_tiers[{index}].output_per_mtok", tier.output_per_mtok))
    if terms.off_peak is not None:
        values += [
            (f"off_peak.{name}", getattr(terms.off_peak, name))
            for name in ("input_per_mtok", "output_per_mtok", "read_multiplier")
        ]
    for name, value in values:
        if value is None:
            continue
        try:
            check_storable(value)
        except ValueError as error:
            raise ContractKeyError(
                f"{terms.provider}/{terms.model} from {terms.effective_from}: {error}", field=name
            ) from error


def _is_pattern(alias: str) -> bool:
    return any(char in alias for char in "*?[")


def _best_alias_match(
    versions: Iterable[ContractTerms], model_id: str, day: dt.date | None
) -> str | None:
    """The model whose aliases name ``model_id`` most specifically.

    Ranking: versions in force on ``day`` before others; an exact alias before a pattern;
    a longer literal part of the pattern before a shorter one. A tie between two different
    models is an error rather than a guess.
    """
    ranked: list[tuple[tuple[int, int, int], str, str]] = []
    for terms in versions:
        for alias in terms.aliases:
            alias_id = alias.lower()
            if alias_id == model_id:
                kind = 0
            elif _is_pattern(alias_id) and fnmatch.fnmatchcase(model_id, alias_id):
                kind = 1
            else:
                continue
            in_force = 0 if day is None or terms.in_force_on(day) else 1
            literal = len(alias_id) - sum(alias_id.count(char) for char in "*?[]")
            ranked.append(((in_force, kind, -literal), terms.model, alias))
    if not ranked:
        return None
    ranked.sort()
    best_rank, best_model, best_alias = ranked[0]
    for rank, other_model, other_alias in ranked[1:]:
        if rank != best_rank:
            break
        if other_model != best_model:
            raise UnknownContractError.listing(
                f"model {model_id!r} is ambiguous: alias {best_alias!r} of {best_model!r} and "
                f"alias {other_alias!r} of {other_model!r} match equally",
                sorted({best_model, other_model}),
            )
    return best_model


Model = TypeVar("Model", bound=BaseModel)


def _from_row(model: type[Model], row: sa.Row[Any], **values: Any) -> Model:
    """``model`` from a table row: ``values``, and every other field from the column of the
    same name where the table has one."""
    columns = row._mapping
    read = {name: columns[name] for name in model.model_fields if name in columns}
    return model.model_validate({**read, **values})


def _columns(table: sa.Table, terms: BaseModel) -> dict[str, Any]:
    """``terms``' fields that are columns of ``table``, by name (as stored: plain values)."""
    return terms.model_dump(include=set(table.c.keys()))


def version_row_values(terms: ContractTerms, origin: str) -> dict[str, Any]:
    """Column values of one ``contract_version`` row."""
    return {**_columns(VERSIONS, terms), "mode": terms.mode.value, "origin": origin}


def child_row_values(terms: ContractTerms, contract_id: int) -> dict[str, list[dict[str, Any]]]:
    """Rows of the child tables for one version."""
    return {
        "ttl_options": [
            {"contract_id": contract_id, "position": position, **_columns(TTL_OPTIONS, option)}
            for position, option in enumerate(terms.ttl_options)
        ],
        "aliases": [
            {"contract_id": contract_id, "position": position, "pattern": alias}
            for position, alias in enumerate(terms.aliases)
        ],
        "price_tiers": [
            {"contract_id": contract_id, **_columns(PRICE_TIERS, tier)}
            for tier in terms.long_context_tiers
        ],
        "inferred_fields": [
            {"contract_id": contract_id, "position": position, "field": name}
            for position, name in enumerate(terms.inferred_fields)
        ],
        "off_peak": []
        if terms.off_peak is None
        else [
            {
                "contract_id": contract_id,
                "windows": "; ".join(window.text() for window in terms.off_peak.windows),
                "input_per_mtok": terms.off_peak.input_per_mtok,
                "output_per_mtok": terms.off_peak.output_per_mtok,
                "read_multiplier": terms.off_peak.read_multiplier,
            }
        ],
    }


def _off_peak_from_row(row: sa.Row[Any]) -> OffPeakPrices:
    return OffPeakPrices(
        windows=tuple(OffPeakWindow.parse(text) for text in str(row.windows).split(";")),
        input_per_mtok=row.input_per_mtok,
        output_per_mtok=row.output_per_mtok,
        read_multiplier=row.read_multiplier,
    )


def _admits_mode_none(connection: Connection) -> bool:
    """Whether the schema's mode check admits 'none' (migration 0017 on)."""
    for check in sa.inspect(connection).get_check_constraints(VERSIONS.name):
        if check.get("name") == "ck_contract_version_mode":
            return "'none'" in str(check.get("sqltext", ""))
    return True  # no such check (a schema without it admits every mode)
