"""``cachecast estimate``: bills of a prompt log under several providers' dated contracts.

A thin adapter over :func:`cachecast.usecases.estimate.estimate`: options in, report out (a rich
table, ``--json`` = the report's model dump, ``--csv``, ``--markdown``).
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal
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
    split_targets,
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
    tokens,
)
from cachecast.contracts.batch_terms import TERM_NOTE_PREFIXES
from cachecast.core.errors import BadInputError, Location
from cachecast.logs.canonical import SERVICE_TIER_NOTES

if TYPE_CHECKING:
    from cachecast.usecases.estimate import EstimateReport, TargetEstimate

TABLE_COLUMNS = (
    "target",
    "contract",
    "verified_on",
    "requests",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "uncached_input_tokens",
    "output_tokens",
    "hit_rate",
    "exact_tokens",
    "cost",
    "cost_without_cache",
    "savings",
)


def register(app: typer.Typer) -> None:
    """Add ``estimate`` to the root app."""
    app.command("estimate")(command(estimate_command))


def estimate_command(
    logs: Annotated[
        list[Path],
        typer.Argument(
            help="Prompt logs, in any format cachecast reads (see --format), or folders;"
            " quoted globs expand."
        ),
    ],
    target: Annotated[
        list[str],
        typer.Option(
            "--target",
            "-t",
            metavar="PROVIDER:MODEL",
            help="PROVIDER:MODEL to price against (repeatable, or a comma-separated list).",
            callback=split_targets,
        ),
    ],
    at: Annotated[
        str | None,
        typer.Option(
            metavar="DATE",
            help="Use the contracts in force on this date (YYYY-MM-DD; default today).",
        ),
    ] = None,
    model: common.DefaultModelOption = None,
    provider: common.DefaultProviderOption = None,
    log_format: common.FormatOption = None,
    results: common.ResultsOption = None,
    as_json: common.JsonOption = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print one CSV row per target.")] = False,
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a Markdown table.")
    ] = False,
    per_request: Annotated[
        Path | None,
        typer.Option(help="Also write every billed request to FILE (.csv or .parquet)."),
    ] = None,
    html: HtmlOption = None,
    client: common.ClientOption = None,
    strict: common.StrictOption = False,
    auto_cache_control: Annotated[
        bool,
        typer.Option(
            help="For explicit-breakpoint contracts (Anthropic), assume each request ends its"
            " latest message with a breakpoint, as top-level automatic cache_control does."
        ),
    ] = False,
    miss_causes: Annotated[
        bool,
        typer.Option(
            "--miss-causes/--no-miss-causes",
            help="Attribute every request's uncached tokens to their causes (default). Off, a"
            " --ray run ships only block keys between workers: faster, no causes.",
        ),
    ] = True,
    ray: Annotated[
        bool,
        typer.Option(
            "--ray",
            help="Partition the run over a Ray cluster (exact; a local one unless"
            " --ray-address names one).",
        ),
    ] = False,
    ray_address: Annotated[
        str | None,
        typer.Option(help="Ray cluster to join (host:port, or 'auto'); implies --ray."),
    ] = None,
    database_url: common.DatabaseUrlOption = None,
) -> None:
    """Predict cache reads, writes and the exact bill of LOG under each target's contract.

    Money is exact (decimal strings in --json/--csv/--markdown; the table rounds for display
    to 1/10,000 of a dollar). Hit rate = cache read tokens / all prompt tokens.
    """
    # Imported here so that `cachecast --help` stays fast.
    from cachecast.passes.executors import ray_executor
    from cachecast.usecases.estimate import EstimateRequest, estimate

    if sum((as_json, as_csv, as_markdown)) > 1:
        raise BadInputError(
            "choose at most one of --json, --csv, --markdown", location=Location(field="--json")
        )
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
    request = EstimateRequest(
        log=log_input,
        targets=target,
        at=parse_day(at),
        auto_cache_control=auto_cache_control,
        per_request=per_request,
        explain_misses=miss_causes,
        client=client,
    )
    store = contract_store(database_url)
    executor = ray_executor(ray_address) if ray or ray_address is not None else None
    with progress_bar() as progress:
        report = estimate(request, store, progress=progress, executor=executor)

    print_skipped(report.errors, report.skipped_lines)
    if report.client is not None:
        stderr.print(
            f"client: {report.client.title} (chosen by {report.client.chosen_by};"
            f" profile: {report.client.source})"
        )
    if per_request is not None:
        stderr.print(f"wrote {sum(t.requests for t in report.targets)} rows to {per_request}")
    if html is not None:
        write_html(html, report)
        stderr.print(f"wrote {html}")
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    elif as_csv:
        typer.echo(csv_text(report), nl=False)
    elif as_markdown:
        typer.echo(estimate_markdown(report))
    else:
        print_table(report)
    exit_if_files_unreadable(report.errors)


def _row(result: TargetEstimate) -> dict[str, object]:
    return {
        "target": result.name,
        "contract": result.contract.version,
        "verified_on": result.contract.verified_on.isoformat(),
        "requests": result.requests,
        "input_tokens": result.input_tokens,
        "cache_read_tokens": result.cache_read_tokens,
        "cache_write_tokens": result.cache_write_tokens,
        "uncached_input_tokens": result.uncached_input_tokens,
        "output_tokens": result.output_tokens,
        "hit_rate": f"{result.hit_rate:.4f}",
        "exact_tokens": result.exact_tokens,
        "cost": _money(result.cost.total),
        "cost_without_cache": _money(result.cost_without_cache),
        "savings": _money(result.savings),
    }


def _money(amount: Decimal) -> str:
    from cachecast.simulator.billing import money

    return money(amount)


def csv_text(report: EstimateReport) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=TABLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_row(result) for result in report.targets)
    return buffer.getvalue()


def estimate_markdown(report: EstimateReport) -> str:
    lines = [
        f"Contracts in force on {report.at.isoformat()}; hit rate = {report.hit_rate_definition}.",
        "",
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "|" + "|".join("---" for _ in TABLE_COLUMNS) + "|",
    ]
    for result in report.targets:
        row = _row(result)
        lines.append("| " + " | ".join(str(row[column]) for column in TABLE_COLUMNS) + " |")
    return "\n".join(lines)


def print_table(report: EstimateReport) -> None:
    out = stdout_console()
    requests = {result.requests for result in report.targets}
    table = Table(
        title=f"{'/'.join(count(n) for n in sorted(requests))} requests priced under the"
        f" contracts in force on {report.at.isoformat()}",
        caption="hit = cache read / prompt tokens; ~ = approximate token counts (not the"
        " provider's tokenizer, or tools and images, whose rendering is not published, with no"
        " observed usage); display rounding (k, M, cents); --json is exact",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
    )
    identifier_column(table, "target")
    for header in ("prompt", "read", "written", "hit", "cost", "no cache", "saved"):
        number_column(table, header)
    for result in report.targets:
        table.add_row(
            result.name + ("" if result.exact_tokens else "~"),
            tokens(result.input_tokens),
            tokens(result.cache_read_tokens),
            tokens(result.cache_write_tokens),
            percent(result.hit_rate),
            money(result.cost.total),
            money(result.cost_without_cache),
            money(result.savings),
        )
    fit(table, out, optional=("written", "read", "no cache"))
    out.print(table)
    for result in report.targets:
        contract = result.contract
        out.print(
            f"{result.name}: contract {contract.described()} (verified"
            f" {contract.verified_on.isoformat()}, {contract.source})",
            highlight=False,
            soft_wrap=True,
        )
        if contract.mode == "explicit" and not result.requests_with_breakpoints:
            if result.assumed_breakpoint:
                out.print(f"  assumed a breakpoint at the {result.assumed_breakpoint}")
            else:
                out.print(
                    "  the log marks no cache breakpoints, so nothing is cached under this"
                    " explicit contract; --auto-cache-control assumes one per request"
                )
        if result.miss_causes:
            lost = ", ".join(
                f"{cause.cause} {tokens(cause.tokens)} ({money(cause.cost_lost)})"
                for cause in result.miss_causes
            )
            out.print(f"  not read from cache: {lost}", highlight=False, soft_wrap=True)
        from cachecast.usecases.session_estimate import TOKENIZER as SESSION_TOKENIZER

        if result.tokenizer == SESSION_TOKENIZER:
            # Agent sessions: which figures are observed and which predicted.
            for note in result.notes:
                out.print(f"  {note}", highlight=False, soft_wrap=True)
        else:
            # Requests priced on demand that the provider billed under another tier (a
            # batch): the bill is not what was paid, and the text says so as the JSON does;
            # and those billed under a batch term, naming it.
            shown = (*SERVICE_TIER_NOTES.values(), *TERM_NOTE_PREFIXES)
            for note in result.notes:
                if note.startswith(shown):
                    out.print(f"  note: {note}", highlight=False, soft_wrap=True)
        summary = result.reconciliation
        if summary is not None:
            out.print(
                f"  against observed usage: {summary.exact_matches}/{summary.requests}"
                f" requests exact, mean |error| {summary.mean_abs_error_tokens} tokens and"
                f" ${summary.mean_abs_error_cost} per request",
                highlight=False,
            )
