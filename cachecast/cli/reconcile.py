"""``cachecast reconcile``: predictions held against the usage the providers returned.

A thin adapter over :func:`cachecast.usecases.reconcile.reconcile`: options in, report out (rich
tables, ``--json`` = the report's model dump, ``--html`` a self-contained page).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from cachecast.cli import common
from cachecast.cli.common import (
    command,
    contract_store,
    exit_if_files_unreadable,
    expand_globs,
    log_of,
    parse_day,
    print_skipped,
    progress_bar,
    stderr,
)
from cachecast.cli.html_report import HtmlOption, check_html_path, write_html

if TYPE_CHECKING:
    from cachecast.usecases.reconcile import ReconcileReport


def register(app: typer.Typer) -> None:
    """Add ``reconcile`` to the root app."""
    app.command("reconcile")(command(reconcile_command))


def reconcile_command(
    logs: Annotated[
        list[Path],
        typer.Argument(help="Logs with observed usage, any format cachecast reads."),
    ],
    at: Annotated[
        str | None,
        typer.Option(
            help="Use the contracts in force on this date (default: each model's first day)."
        ),
    ] = None,
    model: common.DefaultModelOption = None,
    provider: common.DefaultProviderOption = None,
    log_format: common.FormatOption = None,
    results: common.ResultsOption = None,
    as_json: common.JsonOption = False,
    per_request: Annotated[
        Path | None,
        typer.Option(help="Also write every replayed request to FILE (.csv or .parquet)."),
    ] = None,
    html: HtmlOption = None,
    strict: common.StrictOption = False,
    client: common.ClientOption = None,
    database_url: common.DatabaseUrlOption = None,
) -> None:
    """Replay LOG under the contract of the model that served each request and compare the
    predicted cache reads, writes and bill with what the provider reported.

    Exact where the tokenizer is public, within 8 tokens or 1% where it is approximated;
    every mismatch is classified (tokenizer approximation, warm cache at log start, contract
    disputed, provider best-effort miss, unexplained). Agent sessions (Claude Code, Codex;
    --client) are predicted from the log's own counts under the client's profile, each of
    reads and writes within 8 tokens or 1%, every other request given its cause.
    """
    from cachecast.usecases.reconcile import ReconcileRequest, reconcile

    if html is not None:
        check_html_path(html)
    log_input = log_of(
        expand_globs(logs),
        log_format=log_format,
        results=results,
        model=model,
        provider=provider,
        strict=strict,
    )
    request = ReconcileRequest(
        log=log_input, at=parse_day(at), per_request=per_request, client=client
    )
    store = contract_store(database_url)
    with progress_bar() as progress:
        report = reconcile(request, store, progress=progress)
    print_skipped(report.errors, report.skipped_lines)
    if html is not None:
        write_html(html, report)
        stderr.print(f"wrote {html}")
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_report(report)
    exit_if_files_unreadable(report.errors)


def print_report(report: ReconcileReport) -> None:
    out = Console(file=sys.stdout)
    summary = report.summary
    if report.client is not None:
        versions = ", ".join(report.client.versions) or "not stated"
        out.print(
            f"client: {report.client.title} (versions {versions}; chosen by"
            f" {report.client.chosen_by}; profile: {report.client.source})",
            highlight=False,
        )
        files = Table(title="session files", box=box.SIMPLE_HEAD, pad_edge=False)
        for header in ("file", "requests", "in tol.", "exact", "causes"):
            files.add_column(header, justify="left" if header in ("file", "causes") else "right")
        for figures in report.files:
            causes = ", ".join(f"{name} {count}" for name, count in figures.causes.items())
            files.add_row(
                Path(figures.source).name,
                str(figures.requests),
                str(figures.within_tolerance),
                str(figures.exact),
                causes,
            )
        out.print(files)
    table = Table(
        title=f"{summary.requests} requests with observed usage, predicted against observed",
        caption=f"tolerance: {report.tolerance}; MAE = mean |error| per request",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
    )
    headers = ("target", "requests", "exact", "≤1%", "in tol.", "MAE tok", "MAE $", "bias tok")
    for header in headers:
        table.add_column(header, justify="left" if header == "target" else "right")
    rows = [(target.name, target.summary) for target in report.targets]
    rows.append(("all", summary))
    for name, each in rows:
        table.add_row(
            name,
            str(each.requests),
            f"{each.exact_matches} ({float(each.exact_match_share):.0%})",
            f"{each.within_one_percent}",
            f"{each.within_tolerance}",
            each.mean_abs_error_tokens,
            each.mean_abs_error_cost,
            each.read_bias_tokens,
        )
    out.print(table)
    if report.client is not None:  # sessions: tolerance, not exactness, is the claim
        mismatches = [row for row in report.requests if not row.within_tolerance]
    else:
        mismatches = [row for row in report.requests if not row.exact_match]
    if mismatches:
        listing = Table(title="mismatches", box=box.SIMPLE_HEAD, pad_edge=False)
        for header in ("request", "read pred/obs", "write pred/obs", "class", "why"):
            listing.add_column(header, overflow="fold")
        for row in mismatches:
            written = (
                "-" if row.observed_cache_write_tokens is None else row.observed_cache_write_tokens
            )
            listing.add_row(
                f"{Path(row.source).name}:{row.line}",
                f"{row.predicted_cache_read_tokens}/{row.observed_cache_read_tokens}",
                f"{row.predicted_cache_write_tokens}/{written}",
                row.classification or "",
                row.explanation,
            )
        out.print(listing)
    for target in report.targets:
        causes = ", ".join(
            f"{cause.cause} {cause.tokens:,} (${cause.cost_lost})" for cause in target.miss_causes
        )
        out.print(f"{target.name}: contract {target.contract.version}", highlight=False)
        if causes:
            out.print(f"  not read from cache: {causes}", highlight=False)
        for calibration in target.calibration:
            if calibration.ratio is None:  # nothing plausible to learn from
                learned = f"no ratio learned from {calibration.samples} requests"
            else:
                learned = (
                    f"ratio {calibration.ratio} (min {calibration.ratio_min}, max"
                    f" {calibration.ratio_max}) over {calibration.samples} requests"
                )
            out.print(
                f"  calibration of {calibration.model}: {learned};"
                f" {calibration.implausible} implausible",
                highlight=False,
            )
        for note in target.notes:
            out.print(f"  note: {note}", highlight=False)
    for reason, count in report.unpriced.items():
        out.print(f"not replayed ({count} requests): {reason}", highlight=False)
