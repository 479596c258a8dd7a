"""``cachecast contracts``: list, show, history, import, export and audit dated contracts.

Thin adapters over :mod:`cachecast.usecases.contracts`: options in, the use case's report out
(a rich table, or ``--json``: the contract versions as the store's JSON format).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console, RenderableType
from rich.table import Table

from cachecast.cli.common import DatabaseUrlOption, command, parse_day, stderr
from cachecast.cli.output import fit, identifier_column, number_column, stdout_console
from cachecast.contracts.model import NO_CACHING, ImportFormat
from cachecast.core.errors import BadInputError, ConfigurationError, Location

if TYPE_CHECKING:
    from cachecast.contracts import ContractStore
    from cachecast.contracts.audit import AuditReport
    from cachecast.contracts.model import ContractTerms

contracts_app = typer.Typer(
    help="Dated provider caching contracts: list, show, history, import, export, audit.",
    no_args_is_help=True,
)


def _stdout() -> Console:
    return stdout_console()


AtOption = Annotated[
    str | None, typer.Option("--at", metavar="DATE", help="Date YYYY-MM-DD (default: today, UTC).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ProviderArgument = Annotated[
    str,
    typer.Argument(
        help="PROVIDER:MODEL as every other command takes it (e.g. openai:gpt-5.6), or the"
        " provider id alone followed by MODEL."
    ),
]
ModelArgument = Annotated[
    str | None, typer.Argument(help="Model id or alias, e.g. gpt-5.6 (after a provider id).")
]


def _provider_model(provider: str, model: str | None) -> tuple[str, str]:
    """``openai:gpt-5.6`` or ``openai gpt-5.6`` as (provider, model)."""
    if model is not None:
        return provider, model
    name, colon, rest = provider.partition(":")
    if not colon or not name or not rest:
        raise BadInputError(
            f"{provider!r}: give PROVIDER:MODEL (e.g. openai:gpt-5.6) or PROVIDER MODEL",
            location=Location(field="PROVIDER"),
        )
    return name, rest


ProviderOption = Annotated[str | None, typer.Option("--provider", help="Only this provider.")]


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    app.add_typer(contracts_app, name="contracts")


def _store(database_url: str | None) -> ContractStore:
    """The store at ``--database-url`` (or the default). A SQLite file that is not there is
    an error, never created; the store itself refuses a database without its tables."""
    from cachecast.contracts import ContractStore
    from cachecast.core import db

    url = db.resolve_database_url(database_url)
    db.require_existing(url)
    return ContractStore(url)


def _ttl_text(terms: ContractTerms) -> str:
    """'5m 300s x1.25 refresh, 1h 3600s x2 refresh' for the detail view; 'none (no prompt
    caching offered)' for a version that caches nothing."""
    from cachecast.contracts.sqltypes import decimal_text

    if not terms.offers_caching:
        return f"none ({NO_CACHING})"
    return ", ".join(
        f"{option.name} {option.ttl_seconds}s x{decimal_text(option.write_multiplier)}"
        + (" refresh" if option.refresh_on_hit else "")
        for option in terms.ttl_options
    )


def _ttl_short(terms: ContractTerms) -> str:
    """'5m x1.25+ 1h x2+' for tables; '+' marks a lifetime that a hit refreshes; 'none' for a
    version that caches nothing."""
    from cachecast.contracts.sqltypes import decimal_text

    if not terms.offers_caching:
        return "none"
    return " ".join(
        f"{option.name} x{decimal_text(option.write_multiplier)}"
        + ("+" if option.refresh_on_hit else "")
        for option in terms.ttl_options
    )


def _versions_table(versions: list[ContractTerms], title: str) -> RenderableType:
    from cachecast.contracts.sqltypes import decimal_text

    with_storage = any(terms.storage_per_mtok_hour is not None for terms in versions)
    table = Table(
        title=title,
        caption="TTL: write multiplier, + = refreshed on hit; * = some rules inferred from "
        "the model family (see `contracts show`)",
    )
    identifier_column(table, "contract")
    table.add_column("from", no_wrap=True)
    table.add_column("until", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    number_column(table, "min")
    table.add_column("TTL")
    number_column(table, "read")
    number_column(table, "in/out $/M")
    if with_storage:
        number_column(table, "store $/M/h")
    table.add_column("verified", no_wrap=True)
    for terms in versions:
        end = terms.effective_to.isoformat() if terms.effective_to else ""
        row = [
            f"{terms.provider}/{terms.model}" + ("*" if terms.inferred_fields else ""),
            terms.effective_from.isoformat(),
            end,
            terms.mode.value,
            str(terms.min_cacheable_tokens),
            _ttl_short(terms),
            decimal_text(terms.read_multiplier),
            f"{decimal_text(terms.input_per_mtok)}/{decimal_text(terms.output_per_mtok)}",
        ]
        if with_storage:
            storage = terms.storage_per_mtok_hour
            row.append("" if storage is None else decimal_text(storage))
        row.append(terms.verified_on.isoformat())
        table.add_row(*row)
    return fit(table, _stdout(), optional=("until", "mode", "TTL", "store $/M/h", "verified"))


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _versions_json(versions: list[ContractTerms]) -> list[Any]:
    return [terms.model_dump(mode="json") for terms in versions]


@contracts_app.command("list")
@command
def list_command(
    provider: ProviderOption = None,
    at: AtOption = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Contracts in force on a date (default today)."""
    from cachecast.usecases.contracts import ListRequest, list_contracts

    report = list_contracts(ListRequest(at=parse_day(at), provider=provider), _store(database_url))
    if as_json:
        _print_json(_versions_json(report.contracts))
        return
    day = report.at.isoformat()
    if not report.contracts:
        stderr.print(f"no contracts in force on {day}", markup=False)
        return
    _stdout().print(_versions_table(report.contracts, f"contracts in force on {day}"))


def _field_text(terms: ContractTerms, name: str) -> str:
    """One field of a version as the detail view shows it."""
    from cachecast.contracts.sqltypes import decimal_text

    value = getattr(terms, name)
    if name == "ttl_options":
        return _ttl_text(terms)
    if name == "long_context_tiers":
        return "; ".join(
            f"> {tier.above_input_tokens} tokens: in {decimal_text(tier.input_per_mtok)} "
            f"out {decimal_text(tier.output_per_mtok)}"
            for tier in terms.long_context_tiers
        )
    if name == "off_peak" and terms.off_peak is not None:
        off_peak = terms.off_peak
        return (
            f"in {decimal_text(off_peak.input_per_mtok)} out "
            f"{decimal_text(off_peak.output_per_mtok)} read x"
            f"{decimal_text(off_peak.read_multiplier)} during (UTC, ISO weekdays) "
            + "; ".join(window.text() for window in off_peak.windows)
        )
    if name == "aliases":
        return ", ".join(terms.aliases)
    if name == "inferred_fields":
        # Say plainly which rules no source states for this model.
        inferred = terms.inferred_fields
        return (
            f"{', '.join(inferred)} (inherited from the model family, not documented "
            "for this model)"
            if inferred
            else "none"
        )
    if value is None:
        return ""
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, StrEnum):
        return value.value
    return str(value)


@contracts_app.command("show")
@command
def show_command(
    provider: ProviderArgument,
    model: ModelArgument = None,
    at: AtOption = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """The contract version in force for PROVIDER:MODEL on a date (default today)."""
    from cachecast.usecases.contracts import ShowRequest, show_contract

    provider, model = _provider_model(provider, model)
    report = show_contract(
        ShowRequest(provider=provider, model=model, at=parse_day(at)), _store(database_url)
    )
    terms = report.contract
    if as_json:
        _print_json(terms.model_dump(mode="json"))
        return
    table = Table(
        title=f"{terms.provider}/{terms.model} on {report.at.isoformat()}", show_header=False
    )
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")  # prose and lists: wrapped between words
    for name in type(terms).model_fields:
        table.add_row(name, _field_text(terms, name))
    _stdout().print(table)


@contracts_app.command("history")
@command
def history_command(
    provider: ProviderArgument,
    model: ModelArgument = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Every stored version of one contract, oldest first."""
    from cachecast.usecases.contracts import HistoryRequest, contract_history

    provider, model = _provider_model(provider, model)
    report = contract_history(HistoryRequest(provider=provider, model=model), _store(database_url))
    if as_json:
        _print_json(_versions_json(report.versions))
        return
    _stdout().print(
        _versions_table(report.versions, f"history of {report.provider}/{report.model}")
    )


@contracts_app.command("import")
@command
def import_command(
    file: Annotated[Path, typer.Argument(help="Contracts JSON or LiteLLM price map.")],
    file_format: Annotated[
        ImportFormat, typer.Option("--format", help="File format (auto: detect).")
    ] = ImportFormat.auto,
    effective_from: Annotated[
        str | None,
        typer.Option("--effective-from", help="LiteLLM: date the imported prices start."),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", help="LiteLLM: address of the file (default: its path)."),
    ] = None,
    verified_on: Annotated[
        str | None,
        typer.Option("--verified-on", help="LiteLLM: date checked (default: --effective-from)."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="List skipped entries.")] = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Add versions from FILE in one transaction: all of them, or none on any error."""
    from cachecast.usecases.contracts import ImportRequest, import_contracts

    request = ImportRequest(
        file=file,
        format=file_format,
        effective_from=parse_day(effective_from, "--effective-from"),
        source=source,
        verified_on=parse_day(verified_on, "--verified-on"),
    )
    report = import_contracts(request, _store(database_url))
    typer.echo(
        f"imported {len(report.added)} version(s) from {report.file} ({report.format.value}"
        f" format); closed {len(report.closed)}, unchanged {report.unchanged},"
        f" skipped {len(report.skipped)}"
    )
    for added in report.added:
        typer.echo(f"  + {added.provider}/{added.model} from {added.effective_from.isoformat()}")
    if verbose:
        for line in report.skipped:
            typer.echo(f"  skipped {line}")


@contracts_app.command("export")
@command
def export_command(
    at: Annotated[
        str | None, typer.Option("--at", help="Only versions in force on this date.")
    ] = None,
    provider: ProviderOption = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Write contracts (every version, or those in force --at a date) in our JSON format."""
    from cachecast.passes.per_request import check_output_path
    from cachecast.usecases.contracts import ExportRequest, export_contracts

    if output is not None:
        check_output_path(output, "--output")
    document = export_contracts(
        ExportRequest(at=parse_day(at), provider=provider), _store(database_url)
    )
    text = json.dumps(document.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:  # what no check foresees: a full disk
        raise ConfigurationError(
            f"cannot write: {error.strerror}",
            location=Location(source=str(output), field="--output"),
        ) from None
    stderr.print(f"wrote {len(document.contracts)} version(s) to {output}", markup=False)


@contracts_app.command("audit")
@command
def audit_command(
    at: AtOption = None,
    litellm: Annotated[
        Path | None,
        typer.Option("--litellm", help="A LiteLLM price map (default: the installed litellm's)."),
    ] = None,
    genai_prices: Annotated[
        Path | None,
        typer.Option(
            "--genai-prices", help="A genai-prices data.json (default: the package's bundled data)."
        ),
    ] = None,
    provider: ProviderOption = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Our contracts in force on a date held against LiteLLM's and genai-prices' price maps:
    every disagreement with both values and both sources (needs the 'audit' extra)."""
    from cachecast.usecases.contracts import AuditRequest, audit

    request = AuditRequest(
        at=parse_day(at), provider=provider, litellm_file=litellm, genai_prices_file=genai_prices
    )
    report = audit(request, _store(database_url))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    _print_audit(report)


def _print_audit(report: AuditReport) -> None:
    out = _stdout()
    out.print(
        f"{report.contracts_in_force} contract(s) in force on {report.at.isoformat()}",
        markup=False,
    )
    for summary in report.maps:
        left_out = ", ".join(f"{reason}: {n}" for reason, n in summary.entries_not_compared.items())
        out.print(
            f"{summary.map.value} {summary.version} ({summary.location}):"
            f" {summary.entries_compared} compared"
            + (f"; not compared: {left_out}" if left_out else ""),
            markup=False,
        )
    history = report.history
    if history is not None:
        out.print(
            f"history up to {history.until.isoformat()}: {history.contracts} contract(s),"
            f" {len(history.gaps)} gap(s), {history.retired} retired, launch date known for"
            f" {history.launch_known} (unknown: {len(history.launch_unknown)}; --json lists them)",
            markup=False,
        )
        for gap in history.gaps:
            out.print(
                f"  {gap.kind.value} {gap.provider}/{gap.model}: no contract"
                f" [{gap.start.isoformat()}, {gap.end.isoformat()}) ({gap.evidence})",
                markup=False,
            )
    if not report.disagreements:
        out.print("no disagreement", markup=False)
        return
    table = Table(
        title=f"{len(report.disagreements)} disagreement(s)",
        caption="USD per million tokens; --json gives both sources of every row",
    )
    for header in ("kind", "map", "contract", "field", "ours", "theirs"):
        table.add_column(header, overflow="fold")
    for item in report.disagreements:
        table.add_row(
            item.kind.value,
            item.map.value,
            f"{item.provider}/{item.model}",
            item.field,
            item.ours or "-",
            item.theirs or "-",
        )
    out.print(table)
    counts = ", ".join(f"{kind}: {count}" for kind, count in sorted(report.counts_by_kind.items()))
    out.print(f"by kind: {counts}", markup=False)
