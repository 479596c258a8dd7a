"""``cachecast usage --html FILE``: the session usage report as one self-contained page.

The same look as the other reports (``cli.html_report``'s style, tables and charts: inline
SVG, no script, nothing fetched): the rows with their bills, the observed hit rate over time,
dollars lost by cause, the worst requests with their causes, the what-if scenarios, and the
contracts that priced it. Usage that headless output states per turn or per run (``turns``,
``runs``: how many requests is not known) is counted as the table counts it, and a headless
run's own ``total_cost_usd`` is set beside our bill (``client_statements``;
docs/usage-report.md). Money is printed exact, as the report has it.
"""

from __future__ import annotations

from decimal import Decimal
from html import escape
from typing import TYPE_CHECKING, Any, cast

from cachecast.cli.html_report import _STYLE, _bars, _table, _timeline
from cachecast.cli.usage import requests_shown, unit_notes

if TYPE_CHECKING:
    from cachecast.usecases.usage import UsageReport, UsageTotals


def _usd(amount: Decimal) -> str:
    """Exact dollars, the sign before the symbol."""
    return f"-${-amount}" if amount < 0 else f"${amount}"


def _lost(row: UsageTotals) -> Decimal:
    return sum(row.lost_by_cause.values(), start=Decimal(0))


def _units(totals: UsageTotals) -> str:
    """The units of usage the headline counts: requests, then any turns and run totals."""
    shown = f"{requests_shown(totals)} requests"
    if totals.turns:
        shown += f", {totals.turns:,} turn(s)"
    if totals.runs:
        shown += f", {totals.runs:,} run total(s)"
    return shown


def render_usage_html(report: UsageReport) -> str:
    totals = report.totals
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Session usage</title><style>{_STYLE}</style></head><body>",
        "<h1>Session usage</h1>",
        f"<p class='meta'>{len(report.files):,} file(s); clients: "
        + escape(", ".join(f"{name} ({count:,})" for name, count in report.clients.items()))
        + f"; days in {escape(report.timezone)}; hit rate = {escape(report.hit_rate_definition)};"
        f" predicted reads: {escape(report.predictor)}</p>",
        f"<p>{_units(totals)}, {totals.prompt_tokens:,} prompt tokens, hit rate"
        f" {float(totals.hit_rate):.1%}: billed {_usd(totals.cost)},"
        f" {_usd(totals.cost_without_cache)} without caching (saved {_usd(totals.saved)});"
        f" misses cost {_usd(_lost(totals))} above reads.</p>",
    ]
    if not report.complete_bill:
        parts.append(
            "<p class='note'>Not priced (no contract in force on their date): "
            + escape(
                "; ".join(
                    f"{entry.provider}/{entry.model}: {entry.requests:,} request(s)"
                    for entry in report.unpriced
                )
            )
            + ". Their tokens are counted, their cost is not.</p>"
        )
    # Turns and runs get columns only where the usage holds some (docs/usage-report.md).
    units = [name for name in ("turns", "runs") if getattr(totals, name)]
    headers = [*report.by, "requests", *units, "prompt", "read", "write 5m", "write 1h"]
    headers += ["hit rate", "cost", "no cache", "saved", "lost", "top causes"]
    rows: list[list[Any]] = []
    for row in [*report.rows, totals]:
        keys = list(row.group.values()) or ["total", *([""] * (len(report.by) - 1))]
        rows.append(
            [
                *keys,
                requests_shown(row),
                *(getattr(row, name) for name in units),
                row.prompt_tokens,
                row.cache_read_tokens,
                row.cache_write_5m_tokens,
                row.cache_write_1h_tokens,
                f"{float(row.hit_rate):.1%}",
                _usd(row.cost),
                _usd(row.cost_without_cache),
                _usd(row.saved),
                _usd(_lost(row)),
                ", ".join(row.top_causes),
            ]
        )
    parts.append("<h2>Usage</h2>" + _table(headers, rows))
    for note in unit_notes(totals):
        parts.append(f"<p class='note'>{escape(note)}.</p>")
    for note in report.notes:  # what the bill assumed or leaves out, as the text table says
        parts.append(f"<p class='note'>note: {escape(note)}</p>")
    if report.client_statements:
        parts.append("<h2>The client's own figures</h2>")
        parts.append(
            _table(
                (
                    "run",
                    "session",
                    "total_cost_usd (client's estimate)",
                    "our bill",
                    "turns",
                    "usage check",
                ),
                [
                    (
                        f"{stated.source}:{stated.line}",
                        stated.session,
                        "none" if stated.stated_cost_usd is None else f"${stated.stated_cost_usd}",
                        _usd(stated.cost),
                        "" if stated.num_turns is None else stated.num_turns,
                        stated.usage_check,
                    )
                    for stated in report.client_statements
                ],
                prose=(5,),
            )
        )
    parts.append("<h2>Hit rate over time (observed)</h2>")
    parts.append(_timeline(cast(Any, [("observed", report.timeline)])))
    if totals.lost_by_cause:
        parts.append("<h2>Dollars lost by cause</h2>")
        parts.append(
            _table(
                ("cause", "tokens not read", "dollars lost"),
                [
                    (cause, totals.missed_tokens_by_cause.get(cause, 0), _usd(amount))
                    for cause, amount in totals.lost_by_cause.items()
                ],
            )
        )
        parts.append(
            _bars(
                [(cause, amount, None) for cause, amount in totals.lost_by_cause.items()],
                ("dollars lost",),
                "dollars",
            )
        )
    if report.worst_requests:
        parts.append("<h2>Worst requests</h2>")
        parts.append(
            _table(
                ("request", "when", "model", "prompt", "read", "expected", "lost", "cause", "why"),
                [
                    (
                        f"{worst.source}:{worst.line}",
                        worst.timestamp.isoformat(timespec="seconds") if worst.timestamp else "",
                        worst.model,
                        worst.prompt_tokens,
                        worst.cache_read_tokens,
                        worst.expected_read_tokens,
                        _usd(worst.lost),
                        worst.cause,
                        worst.detail,
                    )
                    for worst in report.worst_requests
                ],
            )
        )
    if report.what_if:
        parts.append("<h2>What if</h2>")
        parts.append(
            _table(
                ("scenario", "requests priced", "cost", "difference", "not priced"),
                [
                    (
                        scenario.scenario,
                        scenario.priced_requests,
                        _usd(scenario.cost),
                        _usd(scenario.difference),
                        scenario.unpriced_requests,
                    )
                    for scenario in report.what_if
                ],
            )
        )
    hosted = report.self_hosted_what_if
    if hosted is not None:
        parts.append(f"<h2>What if: {escape(hosted.scenario)}</h2>")
        parts.append(
            _table(
                ("", "hit rate", "GPU-hours", "cost", "difference"),
                [
                    (
                        "observed (hosted)",
                        f"{hosted.observed_hit_rate:.1%}",
                        "",
                        _usd(hosted.observed_cost),
                        "",
                    ),
                    (
                        "self-hosted, busy time only",
                        f"{hosted.hit_rate:.1%}",
                        f"{hosted.gpu_hours_full_utilization}",
                        ""
                        if hosted.cost_full_utilization is None
                        else _usd(hosted.cost_full_utilization),
                        ""
                        if hosted.difference_full_utilization is None
                        else _usd(hosted.difference_full_utilization),
                    ),
                    (
                        "self-hosted, replicas kept up for the span",
                        f"{hosted.hit_rate:.1%}",
                        f"{hosted.gpu_hours_at_arrival_rate or ''}",
                        ""
                        if hosted.cost_at_arrival_rate is None
                        else _usd(hosted.cost_at_arrival_rate),
                        "",
                    ),
                ],
            )
        )
        for line in hosted.assumptions:
            parts.append(f"<p class='meta'>{escape(line)}</p>")
    parts.append(f"<p class='meta'>{escape(report.self_hosted)}</p>")
    if report.contracts:
        parts.append("<h2>Contracts</h2>")
        parts.append(
            _table(
                ("version", "verified", "source"),
                [(c.version, c.verified_on.isoformat(), c.source) for c in report.contracts],
            )
        )
    parts.append("</body></html>")
    return "".join(parts)
