"""``cachecast usage``: what agent sessions cost, what caching saved, what misses cost.

A thin adapter over :func:`cachecast.usecases.usage.usage_report`: options in, report out (a
rich table, ``--json`` = the report's model dump, ``--csv`` one row per group, ``--html`` a
self-contained page). It imports only what the report needs: no tokenizer, no simulator
policy, no migration tooling beyond the revision check.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cachecast.cli import common
from cachecast.cli.common import command, contract_store, parse_day, stderr
from cachecast.core.errors import BadInputError, Location

if TYPE_CHECKING:
    from cachecast.usecases.usage import UsageReport, UsageTotals
    from cachecast.usecases.usage_self_hosted import SelfHostedWhatIf


def register(app: typer.Typer) -> None:
    """Add ``usage`` to the root app."""
    app.command("usage")(command(usage_command))


def usage_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Session files, folders or globs (default: ~/.claude/projects,"
            " $CLAUDE_CONFIG_DIR, ~/.codex/sessions and archived_sessions, $CODEX_HOME).",
            show_default=False,
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="First day included, YYYY-MM-DD (in --timezone).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Last day included, YYYY-MM-DD (in --timezone).")
    ] = None,
    timezone: Annotated[
        str, typer.Option(help="IANA time zone that days are counted in (default UTC).")
    ] = "UTC",
    by: Annotated[
        list[str] | None,
        typer.Option(
            help="Group rows by day, session, project or model (repeatable).", show_default=False
        ),
    ] = None,
    ttl: Annotated[
        str | None, typer.Option(help="What-if: every cache write with this TTL (5m or 1h).")
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(help="What-if: the same tokens priced as PROVIDER:MODEL (repeatable)."),
    ] = None,
    self_hosted: Annotated[
        str | None,
        typer.Option(
            "--self-hosted",
            metavar="MODEL@GPU[xN][:PRICE]",
            help="What-if: the same requests served by vLLM (a model preset or config.json,"
            " an accelerator, GPUs per replica, US$ per GPU-hour), as compare figures it.",
        ),
    ] = None,
    worst: Annotated[int, typer.Option(help="How many of the worst requests to list.")] = 20,
    model: common.DefaultModelOption = None,
    as_json: common.JsonOption = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print one CSV row per group.")] = False,
    html: Annotated[
        Path | None,
        typer.Option("--html", help="Also write the report as a self-contained HTML page."),
    ] = None,
    strict: common.StrictOption = False,
    database_url: common.DatabaseUrlOption = None,
) -> None:
    """Per day, session, project or model: requests, prompt tokens, cache reads and writes
    (5m, 1h), hit rate, the bill from the observed usage under the contract in force on each
    request's date, the bill without caching, what caching saved and the dollars lost by
    miss cause. Reads Claude Code transcripts and Codex CLI rollouts, and their headless
    output (claude -p --output-format stream-json or json, codex exec --json: give --model).
    """
    from cachecast.usecases.usage import SessionFile, UsageRequest, usage_report

    if as_json and as_csv:
        raise BadInputError("choose one of --json, --csv", location=Location(field="--json"))
    if html is not None:
        from cachecast.cli.html_report import check_html_path

        check_html_path(html)
    files = []
    if paths:
        from cachecast.usecases.session_files import session_files

        files = [SessionFile(path=path) for path in session_files(paths)]
    if ttl is not None and ttl not in ("5m", "1h"):
        raise BadInputError(
            f"--ttl must be 5m or 1h, not {ttl!r}", location=Location(field="--ttl")
        )
    for dimension in by or ():
        if dimension not in ("day", "session", "project", "model"):
            raise BadInputError(
                f"--by must be day, session, project or model, not {dimension!r}",
                location=Location(field="--by"),
            )
    hosting = None
    if self_hosted is not None:
        from cachecast.usecases.usage_self_hosted import SelfHostedOption

        hosting = SelfHostedOption.of_text(self_hosted, files=True)
    request = UsageRequest.model_validate(
        {
            "files": files,
            "since": parse_day(since, "--since"),
            "until": parse_day(until, "--until"),
            "timezone": timezone,
            "by": by or ["day"],
            "ttl": ttl,
            "targets": target or [],
            "self_hosted": hosting,
            "worst": worst,
            "model": model,
            "on_bad_record": "stop" if strict else "skip",
        }
    )
    from cachecast.contracts.answers import RememberedAnswers
    from cachecast.core.db_location import chosen_database_url

    # The store is opened only for a (provider, model, day) whose answer is not remembered.
    answers = RememberedAnswers(
        chosen_database_url(database_url), lambda: contract_store(database_url)
    )
    report = usage_report(request, answers)
    answers.save()
    if html is not None:
        from cachecast.cli.usage_html import render_usage_html

        html.write_text(render_usage_html(report), encoding="utf-8")
    if as_json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    elif as_csv:
        sys.stdout.write(csv_text(report))
    else:
        _print(report)
    for issue in report.issues:
        stderr.print(issue.one_line(), markup=False)
    if report.issue_count > len(report.issues):
        stderr.print(f"... and {report.issue_count - len(report.issues)} more unreadable lines")


CSV_COLUMNS = (
    "requests",
    "turns",
    "runs",
    "prompt_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "uncached_input_tokens",
    "output_tokens",
    "hit_rate",
    "cost",
    "cost_without_cache",
    "saved",
    "unpriced_requests",
)


def csv_text(report: UsageReport) -> str:
    """One CSV row per group and a last row ``total``; money exact, lost dollars per cause
    as ``lost_<cause>`` columns."""
    import csv
    import io

    causes = sorted(report.totals.lost_by_cause)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*report.by, *CSV_COLUMNS, *(f"lost_{cause}" for cause in causes)])
    rows = [(list(row.group.values()), row) for row in report.rows]
    rows.append((["total", *([""] * (len(report.by) - 1))], report.totals))
    for keys, row in rows:
        dumped = row.model_dump(mode="json")
        lost = dumped["lost_by_cause"]
        writer.writerow(
            [*keys, *(dumped[name] for name in CSV_COLUMNS), *(lost.get(c, "0") for c in causes)]
        )
    hosted = report.self_hosted_what_if
    if hosted is not None:
        # One more row: the same requests self-hosted (its cost: busy GPU time only; no
        # cache reads or writes of a provider's, so those columns are empty).
        shown = hosted.model_dump(mode="json")
        values = {
            "requests": shown["requests"],
            "prompt_tokens": shown["prompt_tokens"],
            "hit_rate": shown["hit_rate"],
            "cost": shown["cost_full_utilization"] or "",
        }
        writer.writerow(
            [
                f"what-if {hosted.scenario}",
                *([""] * (len(report.by) - 1)),
                *(values.get(name, "") for name in CSV_COLUMNS),
                *([""] * len(causes)),
            ]
        )
    return out.getvalue()


def _dollars(amount: object) -> str:
    from decimal import ROUND_HALF_EVEN, Decimal

    assert isinstance(amount, Decimal)
    cents = amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    return f"-${-cents:,}" if cents < 0 else f"${cents:,}"


def requests_shown(row: UsageTotals) -> str:
    """The requests of a row; where some usage came as turns or run totals, the count is not
    known (``+ ?``). The table and ``--html`` both show it."""
    if not (row.turns or row.runs):
        return f"{row.requests:,}"
    return f"{row.requests:,} + ?" if row.requests else "not known"


def unit_notes(totals: UsageTotals) -> list[str]:
    """What the turns and run totals among the usage are (docs/usage-report.md): the table
    and ``--html`` both say it."""
    notes = []
    if totals.turns:
        notes.append(
            f"{totals.turns:,} turn(s) of codex exec --json: each states its requests' usage"
            " summed, how many requests is not known (no read predicted or missed)"
        )
    if totals.runs:
        notes.append(
            f"{totals.runs:,} model total(s) of claude -p --output-format json: a model's usage"
            " over a whole run, how many requests is not known (no read predicted or missed)"
        )
    return notes


def _priced(amount: object, requests: int, unpriced: int) -> str:
    """``n/a`` where no request of the row was priced, ``*`` where some were not."""
    if requests and unpriced == requests:
        return "n/a"
    return _dollars(amount) + ("*" if unpriced else "")


def _print(report: UsageReport) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    # Piped output is not cut to 80 columns: the table is read in files and CI logs.
    width = None if sys.stdout.isatty() else 220
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True, width=width, markup=False)
    table = Table(
        box=box.SIMPLE_HEAD, title="Session usage (money rounded to cents here; exact in --json)"
    )
    for dimension in report.by:
        table.add_column(dimension)
    for name in (
        "requests",
        "prompt",
        "read",
        "write 5m",
        "write 1h",
        "hit rate",
        "cost",
        "no cache",
        "saved",
        "lost",
        "top causes",
    ):
        table.add_column(name, justify="left" if name == "top causes" else "right")
    for row in [*report.rows, report.totals]:
        keys = list(row.group.values()) or ["total", *([""] * (len(report.by) - 1))]
        lost = sum(row.lost_by_cause.values(), start=type(row.cost)(0))
        units = row.requests + row.turns + row.runs
        table.add_row(
            *keys,
            requests_shown(row),
            f"{row.prompt_tokens:,}",
            f"{row.cache_read_tokens:,}",
            f"{row.cache_write_5m_tokens:,}",
            f"{row.cache_write_1h_tokens:,}",
            f"{row.hit_rate:.1%}",
            *(
                _priced(amount, units, row.unpriced_requests)
                for amount in (row.cost, row.cost_without_cache, row.saved, lost)
            ),
            ", ".join(row.top_causes),
            end_section=row is report.rows[-1] if report.rows else False,
        )
    out.print(table)
    for entry in report.unpriced:
        out.print(
            f"not priced (n/a, * above): {entry.requests:,} request(s) of"
            f" {entry.provider}/{entry.model}"
            f" ({entry.reason}); their tokens are counted, their cost is not",
            markup=False,
        )
    for note in unit_notes(report.totals):
        out.print(note, markup=False)
    for note in report.notes:  # what the bill assumed or leaves out
        out.print(f"note: {note}", markup=False)
    for stated in report.client_statements:
        cost = "none" if stated.stated_cost_usd is None else f"${stated.stated_cost_usd}"
        out.print(
            f"{stated.source}:{stated.line}: the client's own estimate total_cost_usd {cost},"
            f" our bill {_dollars(stated.cost)}; {stated.usage_check}",
            markup=False,
        )
    for contract in report.contracts:
        out.print(
            f"contract {contract.described()}: verified {contract.verified_on}, {contract.source}",
            markup=False,
        )
    for scenario in report.what_if:
        sign = "+" if scenario.difference >= 0 else "-"
        out.print(
            f"what-if {scenario.scenario}: {_dollars(scenario.cost)} on"
            f" {scenario.priced_requests:,} request(s) ({sign}{_dollars(abs(scenario.difference))}"
            f" against the observed bill of the same requests)"
            + (
                f", {scenario.unpriced_requests:,} not priced" if scenario.unpriced_requests else ""
            ),
            markup=False,
        )
    if report.self_hosted_what_if is not None:
        out.print(_self_hosted_line(report.self_hosted_what_if), markup=False)
    if report.worst_requests:
        worst = report.worst_requests[0]
        out.print(
            f"worst request: {worst.source}:{worst.line} lost {_dollars(worst.lost)}:"
            f" {worst.cause}: {worst.detail}",
            markup=False,
        )
    out.print(f"predicted reads: {report.predictor}; {report.self_hosted}", markup=False)


def _self_hosted_line(hosted: SelfHostedWhatIf) -> str:
    """The self-hosted what-if in one line: hit rates, GPU-hours, cost and its difference."""
    priced = f"{hosted.gpu_hours_full_utilization} GPU-h busy"
    if hosted.cost_full_utilization is None:
        priced += " (no --self-hosted price: GPU-hours only)"
    else:
        priced = f"{_dollars(hosted.cost_full_utilization)} for {priced}"
        change = hosted.difference_full_utilization
        observed = _dollars(hosted.observed_cost)
        if change is None:
            priced += f" (the observed bill, {observed}, leaves unpriced requests out)"
        else:
            sign = "+" if change >= 0 else "-"
            priced += f" ({sign}{_dollars(abs(change))} against the observed bill of {observed})"
    if hosted.cost_at_arrival_rate is not None:
        priced += (
            f"; {_dollars(hosted.cost_at_arrival_rate)} with replicas kept up for the sessions'"
            " span"
        )
    return (
        f"what-if {hosted.scenario}: hit rate {hosted.hit_rate:.1%} (observed"
        f" {hosted.observed_hit_rate:.1%}) on {hosted.requests:,} request(s); {priced}"
    )
