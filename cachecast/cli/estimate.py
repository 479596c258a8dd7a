"""``cachecast estimate``: bills of a prompt log under several providers' dated contracts."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import sys
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from cachecast import db
from cachecast.cli.common import DatabaseUrlOption, progress_bar

EXIT_USAGE = 2
EXIT_BAD_INPUT = 1
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
    app.command("estimate")(estimate_command)


def estimate_command(
    logs: Annotated[
        list[Path],
        typer.Argument(help="Prompt log(s), JSONL, one request a line; quoted globs expand."),
    ],
    target: Annotated[
        list[str],
        typer.Option("--target", "-t", help="PROVIDER:MODEL to price against (repeatable)."),
    ],
    at: Annotated[
        str | None,
        typer.Option(help="Use the contracts in force on this date (YYYY-MM-DD; default today)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print one CSV row per target.")] = False,
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Print a Markdown table.")
    ] = False,
    per_request: Annotated[
        Path | None,
        typer.Option(help="Also write every billed request to FILE (.csv or .parquet)."),
    ] = None,
    strict: Annotated[bool, typer.Option(help="Stop at the first bad log line.")] = False,
    auto_cache_control: Annotated[
        bool,
        typer.Option(
            help="For explicit-breakpoint contracts (Anthropic), assume each request ends its"
            " latest message with a breakpoint, as top-level automatic cache_control does."
        ),
    ] = False,
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
    database_url: DatabaseUrlOption = None,
) -> None:
    """Predict cache reads, writes and the exact bill of LOG under each target's contract.

    Money is exact (decimal strings in --json/--csv/--markdown; the table rounds for display
    to 1/10,000 of a dollar). Hit rate = cache read tokens / all prompt tokens.
    """
    # Imported here so that `cachecast --help` stays fast.
    from cachecast.contracts import ContractStore
    from cachecast.simulator.estimate import (
        OrderError,
        PerRequestTable,
        Target,
        TargetError,
        estimate,
        group_by_tokenizer,
        resolve_targets,
    )
    from cachecast.tokenizers import LogError
    from cachecast.tokenizers.records import count_lines

    err = Console(stderr=True)
    if sum((as_json, as_csv, as_markdown)) > 1:
        _usage_error(err, "choose at most one of --json, --csv, --markdown")
    try:
        targets = [Target.parse(text) for text in target]
    except TargetError as error:
        _usage_error(err, str(error))
    day = None
    if at is not None:
        try:
            day = dt.date.fromisoformat(at)
        except ValueError:
            _usage_error(err, f"--at {at!r} is not a date (YYYY-MM-DD)")
    logs = _expand_globs(logs)
    for log in logs:
        if not log.is_file():
            _usage_error(err, f"{log}: no such file")
    url = db.resolve_database_url(database_url)
    if not db.is_current(url):
        _usage_error(
            err, f"the contract database at {url} is not migrated: run `cachecast db upgrade`"
        )
    store = ContractStore(url)

    table_writer = None
    if per_request is not None:
        try:
            table_writer = PerRequestTable(per_request)
        except ValueError as error:
            _usage_error(err, str(error))

    progress = progress_bar(err)
    failed = True
    try:
        with progress:
            total = None
            if err.is_terminal:
                # One pass over the log per distinct tokenizer among the targets.
                contracts = resolve_targets(targets, store, day or dt.datetime.now(dt.UTC).date())
                passes = group_by_tokenizer(targets, contracts)
                total = count_lines(logs) * len(passes)
            task = progress.add_task("replaying", total=total)
            if ray or ray_address is not None:
                if ray_address is None:
                    from cachecast.simulator.distributed.local_cluster import (
                        bind_local_cluster_to_loopback,
                    )

                    bind_local_cluster_to_loopback()
                from cachecast.simulator.distributed.runner import estimate_on_ray

                report = estimate_on_ray(
                    logs,
                    targets,
                    day,
                    store,
                    url,
                    progress=lambda n: progress.advance(task, n),
                    strict=strict,
                    per_request=table_writer,
                    auto_cache_control=auto_cache_control,
                    address=ray_address,
                )
            else:
                report = estimate(
                    logs,
                    targets,
                    day,
                    store,
                    progress=lambda n: progress.advance(task, n),
                    strict=strict,
                    per_request=table_writer,
                    auto_cache_control=auto_cache_control,
                )
        failed = False
    except TargetError as error:
        message = str(error)
        if error.close_matches:
            message += "\nclose matches: " + ", ".join(error.close_matches)
        _usage_error(err, message)
    except (LogError, OrderError) as error:
        err.print(f"[red]error:[/] {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from error
    finally:
        if table_writer is not None:
            table_writer.close()
            if failed and per_request is not None:
                per_request.unlink(missing_ok=True)  # no half-written table after an error

    for problem in report.errors:
        err.print(
            f"{problem.file}:{problem.line}: {problem.field}: {problem.reason}",
            highlight=False,
            soft_wrap=True,
        )
    if report.skipped_lines:
        err.print(f"[yellow]skipped {report.skipped_lines} bad line(s)[/]")
    if table_writer is not None:
        err.print(f"wrote {table_writer.rows_written} rows to {per_request}")

    data = report.to_json()
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    elif as_csv:
        typer.echo(_csv(data), nl=False)
    elif as_markdown:
        typer.echo(_markdown(data))
    else:
        _rich_table(data)


def _expand_globs(logs: list[Path]) -> list[Path]:
    """Arguments with glob characters that name no file expand to their matches, sorted
    (for globs the shell did not expand, e.g. quoted ones)."""
    import glob

    expanded: list[Path] = []
    for log in logs:
        text = str(log)
        matches = sorted(glob.glob(text)) if any(char in text for char in "*?[") else []
        if matches and not log.exists():
            expanded.extend(Path(match) for match in matches)
        else:
            expanded.append(log)  # a literal name, or a glob matching nothing: "no such file"
    return expanded


def _usage_error(console: Console, message: str) -> Any:
    console.print(f"[red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


def _rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for result in data["targets"]:
        rows.append(
            {
                "target": f"{result['provider']}:{result['model']}",
                "contract": result["contract"]["version"],
                "verified_on": result["contract"]["verified_on"],
                "requests": result["requests"],
                "input_tokens": result["input_tokens"],
                "cache_read_tokens": result["cache_read_tokens"],
                "cache_write_tokens": result["cache_write_tokens"],
                "uncached_input_tokens": result["uncached_input_tokens"],
                "output_tokens": result["output_tokens"],
                "hit_rate": f"{result['hit_rate']:.4f}",
                "exact_tokens": result["exact_tokens"],
                "cost": result["cost"]["total"],
                "cost_without_cache": result["cost_without_cache"],
                "savings": result["savings"],
            }
        )
    return rows


def _csv(data: dict[str, Any]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=TABLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_rows(data))
    return buffer.getvalue()


def _markdown(data: dict[str, Any]) -> str:
    lines = [
        f"Contracts in force on {data['at']}; hit rate = {data['hit_rate_definition']}.",
        "",
        "| " + " | ".join(TABLE_COLUMNS) + " |",
        "|" + "|".join("---" for _ in TABLE_COLUMNS) + "|",
    ]
    for row in _rows(data):
        lines.append("| " + " | ".join(str(row[column]) for column in TABLE_COLUMNS) + " |")
    return "\n".join(lines)


def _dollars(text: str) -> str:
    """Display rounding only (to $0.0001); the JSON keeps every digit."""
    value = Decimal(text).quantize(Decimal("0.0001"), rounding=ROUND_HALF_EVEN)
    return f"${value:,}"


def _tokens(count: int) -> str:
    """Display form of a token count: 987, 12.3k, 4.56M."""
    if count < 10_000:
        return f"{count:,}"
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def _rich_table(data: dict[str, Any]) -> None:
    out = Console(file=sys.stdout)
    requests = {result["requests"] for result in data["targets"]}
    table = Table(
        title=f"{'/'.join(str(n) for n in sorted(requests))} requests priced under the"
        f" contracts in force on {data['at']}",
        caption="hit = cache read / prompt tokens; ~ = approximate tokenizer; display rounding"
        " (k, M, $0.0001); --json is exact",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        collapse_padding=True,
        pad_edge=False,
    )
    headers = ("target", "prompt", "read", "written", "hit", "cost", "no cache", "saved")
    for header in headers:
        table.add_column(header, justify="left" if header == "target" else "right", overflow="fold")
    for result, row in zip(data["targets"], _rows(data), strict=True):
        table.add_row(
            row["target"] + ("" if row["exact_tokens"] else "~"),
            _tokens(row["input_tokens"]),
            _tokens(row["cache_read_tokens"]),
            _tokens(row["cache_write_tokens"]),
            f"{result['hit_rate']:.1%}",
            _dollars(row["cost"]),
            _dollars(row["cost_without_cache"]),
            _dollars(row["savings"]),
        )
    out.print(table)
    for result in data["targets"]:
        name = f"{result['provider']}:{result['model']}"
        contract = result["contract"]
        out.print(
            f"{name}: contract {contract['version']} (verified {contract['verified_on']},"
            f" {contract['source']})",
            highlight=False,
            soft_wrap=True,
        )
        if contract["mode"] == "explicit" and not result["requests_with_breakpoints"]:
            if result["assumed_breakpoint"]:
                out.print(f"  assumed a breakpoint at the {result['assumed_breakpoint']}")
            else:
                out.print(
                    "  the log marks no cache breakpoints, so nothing is cached under this"
                    " explicit contract; --auto-cache-control assumes one per request"
                )
        summary = result.get("reconciliation")
        if summary:
            out.print(
                f"  against observed usage: {summary['exact_matches']}/{summary['requests']}"
                f" requests exact, mean |error| {summary['mean_abs_error_tokens']} tokens and"
                f" ${summary['mean_abs_error_cost']} per request",
                highlight=False,
            )
