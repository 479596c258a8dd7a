"""The contract store's use cases: list, show, history, import, export, audit.

Every version is a dated, immutable :class:`~cachecast.contracts.model.ContractTerms` (its
JSON is the ``cachecast-contracts`` document's entry, decimals as exact strings). Reads
never change the store; an import writes all its versions in one transaction or none.
``audit`` holds the versions in force against public price maps (the ``audit`` extra).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import sqlalchemy as sa
from pydantic import Field

from cachecast.contracts import ContractStore
from cachecast.contracts.audit import AuditReport, audit_contracts
from cachecast.contracts.importers import is_litellm_map, plan_litellm_import, read_json_file
from cachecast.contracts.model import ContractTerms, ImportFormat
from cachecast.contracts.serialize import DOCUMENT_FORMAT_VERSION, parse_document
from cachecast.core import db
from cachecast.core.errors import BadInputError, Location, UnknownContractError
from cachecast.usecases.reports import Report
from cachecast.usecases.requests import Request


class ListRequest(Request):
    at: dt.date | None = Field(default=None, description="default: today, UTC")
    provider: str | None = None


class ContractList(Report):
    """The versions in force on ``at``, by provider and model."""

    at: dt.date
    contracts: list[ContractTerms]


class ShowRequest(Request):
    provider: str
    model: str = Field(description="model id, alias or pattern match")
    at: dt.date | None = Field(default=None, description="default: today, UTC")


class ContractShown(Report):
    """The version in force on ``at`` for the model asked (aliases resolved)."""

    at: dt.date
    contract: ContractTerms


class HistoryRequest(Request):
    provider: str
    model: str


class ContractHistory(Report):
    """Every stored version of one contract, oldest first."""

    provider: str
    model: str
    versions: list[ContractTerms] = Field(description="oldest first")


class ImportRequest(Request):
    """Add the versions of ``file``: our own document, or LiteLLM's price map (whose prices
    become new dated versions of contracts the store already holds)."""

    file: Path
    format: ImportFormat = ImportFormat.auto
    effective_from: dt.date | None = Field(
        default=None, description="LiteLLM: the day the imported prices start (required)"
    )
    source: str | None = Field(default=None, description="LiteLLM: the file's address")
    verified_on: dt.date | None = Field(
        default=None, description="LiteLLM: the day checked (default: effective_from)"
    )


class VersionRef(Report):
    """One contract version, by what identifies it."""

    provider: str
    model: str
    effective_from: dt.date
    effective_to: dt.date | None


class ImportReport(Report):
    """What an import wrote: every version added and every version it closed."""

    file: str
    format: ImportFormat = Field(description="the format read (never auto)")
    added: list[VersionRef]
    closed: list[VersionRef] = Field(description="versions in force that the import ended")
    unchanged: int = Field(description="versions equal to stored ones, not written again")
    skipped: list[str] = Field(description="LiteLLM entries left out, with the reason")


class ExportRequest(Request):
    at: dt.date | None = Field(default=None, description="only versions in force then")
    provider: str | None = None


class ContractDocument(Report):
    """A ``cachecast-contracts`` document: what ``import`` reads back."""

    format: Literal["cachecast-contracts"] = "cachecast-contracts"
    format_version: int = DOCUMENT_FORMAT_VERSION
    contracts: list[ContractTerms]


class AuditRequest(Request):
    """Hold the versions in force on ``at`` against LiteLLM's and genai-prices' maps."""

    at: dt.date | None = Field(default=None, description="default: today, UTC")
    provider: str | None = None
    litellm_file: Path | None = Field(
        default=None, description="a LiteLLM price map (default: the installed package's)"
    )
    genai_prices_file: Path | None = Field(
        default=None, description="a genai-prices data.json (default: the package's bundled data)"
    )


def _today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


@contextmanager
def _reachable(store: ContractStore) -> Iterator[None]:
    """A database that does not answer (down, locked past the timeout) is unavailable."""
    try:
        yield
    except sa.exc.OperationalError as error:
        raise db.unreachable(store.url, error) from None


def list_contracts(request: ListRequest, store: ContractStore) -> ContractList:
    day = request.at or _today()
    with _reachable(store):
        return ContractList(at=day, contracts=store.list(at=day, provider=request.provider))


def show_contract(request: ShowRequest, store: ContractStore) -> ContractShown:
    day = request.at or _today()
    with _reachable(store):
        return ContractShown(at=day, contract=store.as_of(request.provider, request.model, day))


def contract_history(request: HistoryRequest, store: ContractStore) -> ContractHistory:
    with _reachable(store):
        versions = store.history(request.provider, request.model)
    if not versions:
        raise UnknownContractError(
            f"no contract versions for {request.provider}/{request.model}",
            location=Location(field="model"),
        )
    newest = versions[-1]
    return ContractHistory(provider=newest.provider, model=newest.model, versions=versions)


def import_contracts(request: ImportRequest, store: ContractStore) -> ImportReport:
    """All versions of the file in one transaction, or none on any error."""
    file = str(request.file)
    data = read_json_file(request.file)
    kind = request.format
    if kind is ImportFormat.auto:
        kind = ImportFormat.litellm if is_litellm_map(data) else ImportFormat.cachecast
    with _reachable(store):
        if kind is ImportFormat.cachecast:
            for name in ("effective_from", "source", "verified_on"):
                if getattr(request, name) is not None:
                    option = "--" + name.replace("_", "-")
                    raise BadInputError(
                        f"applies to LiteLLM price maps only ({option})",
                        location=Location(field=name),
                    )
            result = store.add_versions(
                parse_document(data, file), origin="import", skip_identical=True
            )
            skipped: list[str] = []
            unchanged = len(result.unchanged)
        else:
            start = request.effective_from
            if start is None:
                raise BadInputError(
                    "a LiteLLM price map needs the day its prices start"
                    " (--effective-from YYYY-MM-DD)",
                    location=Location(source=file, field="effective_from"),
                )
            plan = plan_litellm_import(
                data,
                file=file,
                effective_from=start,
                verified_on=request.verified_on or start,
                source=request.source or file,
                lookup=store.as_of,
            )
            result = store.add_versions(plan.versions, origin="import:litellm")
            skipped = plan.skipped
            unchanged = len(plan.unchanged)
    return ImportReport(
        file=file,
        format=kind,
        added=result.added,  # each read as a VersionRef (Report)
        closed=result.closed,
        unchanged=unchanged,
        skipped=skipped,
    )


def export_contracts(request: ExportRequest, store: ContractStore) -> ContractDocument:
    """Every version (or those in force on ``at``) as a document ``import`` reads back."""
    with _reachable(store):
        versions = store.list(at=request.at, provider=request.provider)
    return ContractDocument(contracts=versions)


def audit(request: AuditRequest, store: ContractStore) -> AuditReport:
    """Every disagreement between our versions in force and the price maps (both values,
    both sources); a missing map package is a MissingExtraError naming ``cachecast[audit]``."""
    with _reachable(store):
        return audit_contracts(
            store,
            request.at or _today(),
            litellm_file=request.litellm_file,
            genai_prices_file=request.genai_prices_file,
            provider=request.provider,
        )
