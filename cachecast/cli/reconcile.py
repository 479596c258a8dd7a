"""``cachecast reconcile``: predictions held against the usage the providers returned.

A thin adapter over :func:`cachecast.usecases.reconcile.reconcile`: options in, report out (rich
tables, ``--json`` = the report's model dump, ``--html`` a self-contained page).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
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
from cachecast.cli.output import (
    count,
    fit,
    identifier_column,
    money,
    number_column,
    percent,
    stdout_console,
)

# Mismatches the table lists by default: the worst ones; the rest on request (--limit 0).
DEFAULT_LIMIT = 20

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
            help=(
                "Use the contracts in force on this date (default: each request's own day;"
                " a log without dates: today)."
            )
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
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            metavar="N",
            min=0,
            help=f"List the N worst mismatches (default {DEFAULT_LIMIT}; 0: every one).",
        ),
    ] = DEFAULT_LIMIT,
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
        print_report(report, limit)
    exit_if_files_unreadable(report.errors)


def _decimal(text: str | None, places: int = 2) -> str:
    """A report's exact decimal string for people: ``places`` decimals, thousands
    separators; empty for None (never Python's ``None``)."""
    if text is None:
        return ""
    value = Decimal(text).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    return f"{value:,}"


def _signed(amount: Decimal) -> str:
    return ("+" if amount > 0 else "") + money(amount)


def print_report(report: ReconcileReport, limit: int = DEFAULT_LIMIT) -> None:
    out = stdout_console()
    summary = report.summary
    out.print(
        f"{count(summary.requests)} requests with observed usage: predicted"
        f" {money(summary.predicted_cost)} against observed {money(summary.observed_cost)}"
        f" ({_signed(summary.predicted_cost - summary.observed_cost)});"
        f" cache reads predicted {count(summary.predicted_cache_read_tokens)} against"
        f" observed {count(summary.observed_cache_read_tokens)} tokens",
        soft_wrap=True,
    )
    if summary.reads_not_reported:
        from cachecast.usecases.reconcile import reads_not_reported_note  # (lazy: startup)

        out.print(reads_not_reported_note(summary.reads_not_reported), soft_wrap=True)
    if summary.warm_at_log_start:
        out.print(
            f"{count(summary.warm_at_log_start)} request(s) found the cache warm before the log"
            f" began (outside tolerance: the log does not say what was cached); within tolerance"
            f" {percent(Decimal(summary.within_tolerance_share), 1)} of all,"
            f" {percent(Decimal(summary.within_tolerance_share_after_warm_start), 1)} of the"
            " others",
        )
    clients = report.clients or ([report.client] if report.client is not None else [])
    for client in clients:
        versions = ", ".join(client.versions) or "not stated"
        out.print(
            f"client: {client.title} (versions {versions}; chosen by"
            f" {client.chosen_by}; profile: {client.source})",
            highlight=False,
        )
    # Several kinds of file (a log that mixes clients, or sessions with other logs): each
    # file's row names the profile it was read with.
    mixed = len({figures.client for figures in report.files}) > 1
    if clients:
        files = Table(
            title="files" if mixed else "session files", box=box.SIMPLE_HEAD, pad_edge=False
        )
        identifier_column(files, "file")
        if mixed:
            files.add_column("client", no_wrap=True)
        for header in ("requests", "in tol.", "exact"):
            number_column(files, header)
        files.add_column("causes")  # prose: wrapped between words
        for figures in report.files:
            causes = ", ".join(f"{name} {number}" for name, number in figures.causes.items())
            files.add_row(
                Path(figures.source).name,
                *([figures.client] if mixed else []),
                count(figures.requests),
                count(figures.within_tolerance),
                count(figures.exact),
                causes,
            )
        out.print(fit(files, out, optional=("exact",)))
    table = Table(
        caption=f"tolerance: {report.tolerance}; MAE = mean |error| per request; --json is exact",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
    )
    identifier_column(table, "target")
    for header in (
        "requests",
        "exact",
        "≤1%",
        "in tol.",
        "predicted",
        "observed",
        "MAE tok",
        "MAE $",
        "bias tok",
    ):
        number_column(table, header)
    rows = [(target.name, target.summary) for target in report.targets]
    rows.append(("all", summary))
    for name, each in rows:
        table.add_row(
            name,
            count(each.requests),
            f"{count(each.exact_matches)} ({percent(Decimal(each.exact_match_share), 0)})",
            count(each.within_one_percent),
            count(each.within_tolerance),
            money(each.predicted_cost),
            money(each.observed_cost),
            _decimal(each.mean_abs_error_tokens, 1),
            money(Decimal(each.mean_abs_error_cost)),
            _decimal(each.read_bias_tokens, 1),
        )
    # Columns dropped first where the terminal is narrow; a session's claim is tolerance, so
    # there exactness goes before it (docs/predictions.md).
    secondary = "exact" if clients else "in tol."
    out.print(fit(table, out, optional=("bias tok", "≤1%", secondary, "MAE $")))
    if clients:  # sessions: tolerance, not exactness, is the claim
        mismatches = [row for row in report.requests if not row.within_tolerance]
    else:
        mismatches = [row for row in report.requests if not row.exact_match]
    # The worst first: by the size of the token error, then of the bill's.
    mismatches.sort(
        key=lambda row: (-abs(row.token_error), -abs(row.predicted_cost - row.observed_cost))
    )
    shown = mismatches if limit <= 0 else mismatches[:limit]
    if shown:
        listing = Table(
            title=f"the {len(shown)} worst of {count(len(mismatches))} mismatches",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
        )
        identifier_column(listing, "request")
        number_column(listing, "read pred/obs")
        number_column(listing, "write pred/obs")
        listing.add_column("class", no_wrap=True)
        listing.add_column("why")  # prose: wrapped between words
        for row in shown:
            written = (
                "-"
                if row.observed_cache_write_tokens is None
                else count(row.observed_cache_write_tokens)
            )
            read = (
                "-"
                if row.observed_cache_read_tokens is None
                else count(row.observed_cache_read_tokens)
            )
            listing.add_row(
                f"{Path(row.source).name}:{row.line}",
                f"{count(row.predicted_cache_read_tokens)}/{read}",
                f"{count(row.predicted_cache_write_tokens)}/{written}",
                row.classification or "",
                row.explanation,
            )
        out.print(fit(listing, out, optional=("write pred/obs",)))
        if len(shown) < len(mismatches):
            out.print(
                f"{count(len(mismatches) - len(shown))} more: --limit 0 lists every mismatch,"
                " --json or --html hold them all",
                soft_wrap=True,
            )
    for target in report.targets:
        causes = ", ".join(
            f"{cause.cause} {cause.tokens:,} ({money(cause.cost_lost)})"
            for cause in target.miss_causes
        )
        out.print(f"{target.name}: contract {target.contract.described()}", highlight=False)
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
    for reason, requests in report.unpriced.items():
        out.print(f"not replayed ({count(requests)} requests): {reason}", highlight=False)
