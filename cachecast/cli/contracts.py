"""``cachecast contracts``: list, show, history, import and export dated contracts."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import sqlalchemy as sa
import typer
from rich.console import Console
from rich.table import Table

from cachecast import db
from cachecast.cli.common import DatabaseUrlOption
from cachecast.contracts.errors import ContractStoreError
from cachecast.contracts.importers import is_litellm_map, plan_litellm_import, read_json_file
from cachecast.contracts.model import ContractTerms
from cachecast.contracts.serialize import dumps_document, parse_document, terms_to_json
from cachecast.contracts.sqltypes import decimal_text
from cachecast.contracts.store import ContractStore

contracts_app = typer.Typer(
    help="Dated provider caching contracts: list, show, history, import, export.",
    no_args_is_help=True,
)
stderr = Console(stderr=True)


def _stdout() -> Console:
    """A terminal keeps its width; a pipe or file gets lines wide enough for a table row."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


AtOption = Annotated[
    str | None, typer.Option("--at", help="Date YYYY-MM-DD (default: today, UTC).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ProviderArgument = Annotated[str, typer.Argument(help="Provider id, e.g. openai, anthropic.")]
ModelArgument = Annotated[str, typer.Argument(help="Model id or alias, e.g. gpt-5.6.")]


class ImportFormat(StrEnum):
    AUTO = "auto"
    CACHECAST = "cachecast"
    LITELLM = "litellm"


class CliError(Exception):
    """A user error found by the CLI itself (bad date, wrong option for a format)."""


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    app.add_typer(contracts_app, name="contracts")


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Known failures end the command with one line on stderr and exit status 2."""
    try:
        yield
    except (ContractStoreError, CliError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
    except sa.exc.ArgumentError as error:
        typer.echo(f"error: bad database URL: {error}", err=True)
        raise typer.Exit(2) from error
    except sa.exc.OperationalError as error:
        typer.echo(f"error: database: {error.orig}", err=True)
        raise typer.Exit(2) from error


def _store(database_url: str | None) -> ContractStore:
    return ContractStore(db.resolve_database_url(database_url))


def _date(value: str | None, option: str) -> dt.date | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value)
    except ValueError as error:
        raise CliError(f"{option} {value!r} is not a date (expected YYYY-MM-DD)") from error


def _today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def _ttl_text(terms: ContractTerms) -> str:
    """'5m 300s x1.25 refresh, 1h 3600s x2 refresh' for the detail view."""
    return ", ".join(
        f"{option.name} {option.ttl_seconds}s x{decimal_text(option.write_multiplier)}"
        + (" refresh" if option.refresh_on_hit else "")
        for option in terms.ttl_options
    )


def _ttl_short(terms: ContractTerms) -> str:
    """'5m x1.25+ 1h x2+' for tables; '+' marks a lifetime that a hit refreshes."""
    return " ".join(
        f"{option.name} x{decimal_text(option.write_multiplier)}"
        + ("+" if option.refresh_on_hit else "")
        for option in terms.ttl_options
    )


def _versions_table(versions: list[ContractTerms], title: str) -> Table:
    with_storage = any(terms.storage_per_mtok_hour is not None for terms in versions)
    table = Table(
        title=title,
        caption="TTL: write multiplier, + = refreshed on hit; * = some rules inferred from "
        "the model family (see `contracts show`)",
    )
    table.add_column("contract", overflow="fold")
    table.add_column("in force", overflow="fold")
    table.add_column("mode")
    table.add_column("min", justify="right")
    table.add_column("TTL", overflow="fold")
    table.add_column("read", justify="right")
    table.add_column("in/out $/M", justify="right")
    if with_storage:
        table.add_column("store $/M/h", justify="right")
    table.add_column("verified")
    for terms in versions:
        end = terms.effective_to.isoformat() if terms.effective_to else ""
        row = [
            f"{terms.provider}/{terms.model}" + ("*" if terms.inferred_fields else ""),
            f"{terms.effective_from.isoformat()} -> {end}",
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
    return table


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


@contracts_app.command("list")
def list_command(
    provider: Annotated[str | None, typer.Option("--provider", help="Only this provider.")] = None,
    at: AtOption = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Contracts in force on a date (default today)."""
    with _one_line_errors():
        day = _date(at, "--at") or _today()
        versions = _store(database_url).list(at=day, provider=provider)
    if as_json:
        _print_json([terms_to_json(terms) for terms in versions])
        return
    if not versions:
        stderr.print(f"no contracts in force on {day.isoformat()}")
        return
    _stdout().print(_versions_table(versions, f"contracts in force on {day.isoformat()}"))


@contracts_app.command("show")
def show_command(
    provider: ProviderArgument,
    model: ModelArgument,
    at: AtOption = None,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """The contract version in force for PROVIDER MODEL on a date (default today)."""
    with _one_line_errors():
        day = _date(at, "--at") or _today()
        terms = _store(database_url).as_of(provider, model, day)
    data = terms_to_json(terms)
    if as_json:
        _print_json(data)
        return
    table = Table(title=f"{terms.provider}/{terms.model} on {day.isoformat()}", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        if key == "ttl_options":
            value = _ttl_text(terms)
        elif key == "long_context_tiers":
            value = "; ".join(
                f"> {tier['above_input_tokens']} tokens: in {tier['input_per_mtok']} "
                f"out {tier['output_per_mtok']}"
                for tier in value
            )
        elif key == "aliases":
            value = ", ".join(value)
        elif key == "inferred_fields":
            # Say plainly which rules no source states for this model.
            value = (
                f"{', '.join(value)} (inherited from the model family, not documented "
                "for this model)"
                if value
                else "none"
            )
        table.add_row(key, "" if value is None else str(value))
    _stdout().print(table)


@contracts_app.command("history")
def history_command(
    provider: ProviderArgument,
    model: ModelArgument,
    as_json: JsonOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Every stored version of one contract, oldest first."""
    with _one_line_errors():
        versions = _store(database_url).history(provider, model)
    if as_json:
        _print_json([terms_to_json(terms) for terms in versions])
        return
    _stdout().print(
        _versions_table(versions, f"history of {versions[0].provider}/{versions[0].model}")
    )


@contracts_app.command("import")
def import_command(
    file: Annotated[Path, typer.Argument(help="Contracts JSON or LiteLLM price map.")],
    file_format: Annotated[
        ImportFormat, typer.Option("--format", help="File format (auto: detect).")
    ] = ImportFormat.AUTO,
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
    with _one_line_errors():
        store = _store(database_url)
        data = read_json_file(file)
        kind = file_format
        if kind is ImportFormat.AUTO:
            kind = ImportFormat.LITELLM if is_litellm_map(data) else ImportFormat.CACHECAST
        if kind is ImportFormat.CACHECAST:
            if effective_from or source or verified_on:
                raise CliError(
                    "--effective-from, --source and --verified-on apply to LiteLLM files only"
                )
            versions = parse_document(data, str(file))
            result = store.add_versions(versions, origin="import", skip_identical=True)
            skipped: list[str] = []
            unchanged = len(result.unchanged)
        else:
            start = _date(effective_from, "--effective-from")
            if start is None:
                raise CliError("a LiteLLM price map needs --effective-from YYYY-MM-DD")
            plan = plan_litellm_import(
                data,
                file=str(file),
                effective_from=start,
                verified_on=_date(verified_on, "--verified-on") or start,
                source=source or str(file),
                lookup=store.as_of,
            )
            result = store.add_versions(plan.versions, origin="import:litellm")
            skipped = plan.skipped
            unchanged = len(plan.unchanged)
    typer.echo(
        f"imported {len(result.added)} version(s) from {file} ({kind.value} format); "
        f"closed {len(result.closed)}, unchanged {unchanged}, skipped {len(skipped)}"
    )
    for terms in result.added:
        typer.echo(f"  + {terms.provider}/{terms.model} from {terms.effective_from.isoformat()}")
    if verbose:
        for line in skipped:
            typer.echo(f"  skipped {line}")


@contracts_app.command("export")
def export_command(
    at: Annotated[
        str | None, typer.Option("--at", help="Only versions in force on this date.")
    ] = None,
    provider: Annotated[str | None, typer.Option("--provider", help="Only this provider.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Write contracts (every version, or those in force --at a date) in our JSON format."""
    with _one_line_errors():
        versions = _store(database_url).list(at=_date(at, "--at"), provider=provider)
        text = dumps_document(versions)
        if output is None:
            typer.echo(text, nl=False)
            return
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise CliError(f"cannot write {output}: {error.strerror}") from error
    stderr.print(f"wrote {len(versions)} version(s) to {output}")
