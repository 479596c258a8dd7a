"""``--html FILE``: an estimate or reconcile report as one self-contained page.

One file, no network: styles inline, charts as inline SVG drawn here from the report's own
figures (no script, no font or image fetched). What it shows: the bill per target (with and
without caching), hit rate over time, prompt tokens and dollars lost by miss cause, and
predicted against observed (the reconciliation of each target; for ``reconcile`` every
request's predicted and observed reads as a scatter, and the mismatches with their
classification). Figures are printed as the report has them (money exact).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from cachecast.usecases.estimate import EstimateReport
    from cachecast.usecases.predictions import MissCauseTotal, TimelinePoint
    from cachecast.usecases.reconcile import ReconcileReport

HtmlOption = Annotated[
    Path | None,
    typer.Option("--html", help="Also write the report as a self-contained HTML page to FILE."),
]
HTML_SUFFIXES = (".html", ".htm")
PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#2c7a7b", "#975a16")
WIDTH, HEIGHT = 720, 260

_STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 24px;
  color: #1a202c; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 4px 0; } h2 { font-size: 17px; margin: 28px 0 8px 0; }
p.meta { color: #4a5568; margin: 0 0 12px 0; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px 0; }
th, td { border-bottom: 1px solid #e2e8f0; padding: 4px 10px; text-align: right;
  max-width: 340px; overflow-wrap: anywhere; vertical-align: top; }
th:first-child, td:first-child, td:last-child { text-align: left; }
th { background: #edf2f7; }
svg { background: #f7fafc; border: 1px solid #e2e8f0; }
svg text { font-size: 11px; fill: #2d3748; }
.note { color: #744210; font-size: 13px; }
"""


def check_html_path(path: Path) -> None:
    """A page can be written at ``path``: an .html name in an existing writable folder."""
    from cachecast.passes.per_request import check_suffixed_path

    check_suffixed_path(path, HTML_SUFFIXES, "--html", "an .html")


def write_html(path: Path, report: EstimateReport | ReconcileReport) -> None:
    path.write_text(render_html(report), encoding="utf-8")


def render_html(report: EstimateReport | ReconcileReport) -> str:
    from cachecast.usecases.estimate import EstimateReport

    if isinstance(report, EstimateReport):
        title, body = "cachecast estimate", _estimate_body(report)
    else:
        title, body = "cachecast reconcile", _reconcile_body(report)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>{body}</body></html>\n"
    )


# --- estimate ------------------------------------------------------------------------------


def _estimate_body(report: EstimateReport) -> str:
    parts = [
        f"<p class='meta'>Contracts in force on {report.at.isoformat()}; sources:"
        f" {escape(', '.join(Path(s).name for s in report.sources))}; hit rate ="
        f" {escape(report.hit_rate_definition)}"
        "</p>",
        "<h2>Bill per target</h2>",
        _table(
            (
                "target",
                "contract",
                "requests",
                "prompt",
                "read",
                "written",
                "hit",
                "cost",
                "no cache",
                "saved",
            ),
            [
                (
                    t.name + ("" if t.exact_tokens else " (approx. tokens)"),
                    t.contract.version,
                    t.requests,
                    t.input_tokens,
                    t.cache_read_tokens,
                    t.cache_write_tokens,
                    f"{t.hit_rate:.1%}",
                    f"${t.cost.total}",
                    f"${t.cost_without_cache}",
                    f"${t.savings}",
                )
                for t in report.targets
            ],
        ),
        _bars(
            [(t.name, float(t.cost.total), float(t.cost_without_cache)) for t in report.targets],
            ("with caching", "without caching"),
            "US dollars",
        ),
        "<h2>Hit rate over time</h2>",
        _timeline([(t.name, t.timeline) for t in report.targets]),
        "<h2>Tokens and dollars lost by miss cause</h2>",
    ]
    for target in report.targets:
        parts.append(_causes(target.name, target.miss_causes))
    parts.append("<h2>Predicted against observed</h2>")
    reconciled = [t for t in report.targets if t.reconciliation is not None]
    if reconciled:
        parts.append(
            _table(
                (
                    "target",
                    "requests",
                    "exact",
                    "mean |error| tokens",
                    "mean |error| $",
                    "predicted read",
                    "observed read",
                ),
                [
                    (
                        t.name,
                        t.reconciliation.requests,
                        t.reconciliation.exact_matches,
                        t.reconciliation.mean_abs_error_tokens,
                        t.reconciliation.mean_abs_error_cost,
                        t.reconciliation.predicted_cache_read_tokens,
                        t.reconciliation.observed_cache_read_tokens,
                    )
                    for t in reconciled
                    if t.reconciliation is not None
                ],
            )
        )
    else:
        parts.append("<p>No request carries usage of a target's own model.</p>")
    parts.extend(_calibration(report.targets))
    parts.extend(_notes(report.targets))
    return "".join(parts)


# --- reconcile -----------------------------------------------------------------------------


def _reconcile_body(report: ReconcileReport) -> str:
    summary = report.summary
    parts = [
        f"<p class='meta'>Sources: {escape(', '.join(Path(s).name for s in report.sources))};"
        " tolerance:"
        f" {escape(report.tolerance)}</p>",
        "<h2>Predicted against observed</h2>",
        _table(
            (
                "target",
                "requests",
                "exact",
                "within 1%",
                "within tolerance",
                "mean |error| tokens",
                "mean |error| $",
                "read bias",
                "predicted $",
                "observed $",
            ),
            [
                (
                    name,
                    each.requests,
                    each.exact_matches,
                    each.within_one_percent,
                    each.within_tolerance,
                    each.mean_abs_error_tokens,
                    each.mean_abs_error_cost,
                    each.read_bias_tokens,
                    f"${each.predicted_cost}",
                    f"${each.observed_cost}",
                )
                for name, each in [*((t.name, t.summary) for t in report.targets), ("all", summary)]
            ],
        ),
        _scatter(
            [
                (row.predicted_cache_read_tokens, row.observed_cache_read_tokens, row.exact_match)
                for row in report.requests
            ]
        ),
        _table(
            (
                "request",
                "target",
                "read predicted",
                "read observed",
                "write predicted",
                "write observed",
                "class",
                "why",
            ),
            [
                (
                    f"{Path(row.source).name}:{row.line}",
                    row.target,
                    row.predicted_cache_read_tokens,
                    row.observed_cache_read_tokens,
                    row.predicted_cache_write_tokens,
                    "-"
                    if row.observed_cache_write_tokens is None
                    else row.observed_cache_write_tokens,
                    row.classification or "exact",
                    row.explanation,
                )
                for row in report.requests
            ],
        ),
        "<h2>Bill per target</h2>",
        _table(
            ("target", "contract", "requests", "prompt", "read", "written", "hit", "cost"),
            [
                (
                    t.name,
                    t.contract.version,
                    t.requests,
                    t.input_tokens,
                    t.cache_read_tokens,
                    t.cache_write_tokens,
                    f"{t.hit_rate:.1%}",
                    f"${t.cost}",
                )
                for t in report.targets
            ],
        ),
        _bars(
            [
                (t.name, float(t.summary.predicted_cost), float(t.summary.observed_cost))
                for t in report.targets
            ],
            ("predicted", "observed"),
            "US dollars (requests with usage)",
        ),
        "<h2>Hit rate over time</h2>",
        _timeline([(t.name, t.timeline) for t in report.targets]),
        "<h2>Tokens and dollars lost by miss cause</h2>",
    ]
    for target in report.targets:
        parts.append(_causes(target.name, target.miss_causes))
    parts.extend(_calibration(report.targets))
    parts.extend(_notes(report.targets))
    return "".join(parts)


# --- pieces --------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return escape(str(value))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{_cell(value)}</td>" for value in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _causes(name: str, causes: Sequence[MissCauseTotal]) -> str:
    if not causes:
        return f"<p>{escape(name)}: every prompt token was read from cache.</p>"
    total = sum(cause.tokens for cause in causes) or 1
    rows = [
        (cause.cause, cause.tokens, f"{cause.tokens / total:.1%}", f"${cause.cost_lost}")
        for cause in causes
    ]
    lost = sum((cause.cost_lost for cause in causes), Decimal(0))
    rows.append(("all causes", total, "100%", f"${lost}"))
    table = _table(("cause", "tokens not read", "share", "dollars lost"), rows)
    chart = _bars([(cause.cause, cause.tokens, None) for cause in causes], ("tokens",), "tokens")
    return f"<h3>{escape(name)}</h3>{table}{chart}"


def _bars(rows: Sequence[tuple[str, float, float | None]], legend: Sequence[str], unit: str) -> str:
    """Horizontal bars, one or two per row."""
    if not rows:
        return ""
    top = max(max(a, b or 0.0) for _, a, b in rows) or 1.0
    pair = any(b is not None for _, _, b in rows)
    row_height = 34 if pair else 22
    height = 30 + row_height * len(rows) + 20
    label_width, chart_width = 250, WIDTH - 250 - 90
    shapes = [
        f"<text x='{label_width}' y='16'>{escape(unit)}: "
        + " / ".join(
            f"<tspan fill='{PALETTE[i]}'>■ {escape(name)}</tspan>" for i, name in enumerate(legend)
        )
        + "</text>"
    ]
    for index, (name, first, second) in enumerate(rows):
        y = 30 + index * row_height
        shapes.append(f"<text x='6' y='{y + 13}'>{escape(name[:40])}</text>")
        for slot, value in enumerate((first, second)):
            if value is None:
                continue
            width = max(1.0, chart_width * value / top)
            top_y = y + slot * 14
            shapes.append(
                f"<rect x='{label_width}' y='{top_y}' width='{width:.1f}' height='12'"
                f" fill='{PALETTE[slot]}'/>"
                f"<text x='{label_width + width + 4:.1f}' y='{top_y + 10}'>{value:,.6g}</text>"
            )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}'"
        f" viewBox='0 0 {WIDTH} {height}'>{''.join(shapes)}</svg>"
    )


def _timeline(series: Sequence[tuple[str, Sequence[TimelinePoint]]]) -> str:
    """Hit rate (0..100%) against time, one polyline per target."""
    points = [point for _, timeline in series for point in timeline]
    if not points:
        return "<p>No requests.</p>"
    first = min(point.start for point in points)
    last = max(point.start + dt.timedelta(seconds=point.seconds) for point in points)
    span = max((last - first).total_seconds(), 1.0)
    left, right, top, bottom = 50, WIDTH - 20, 20, HEIGHT - 40

    def x(moment: dt.datetime) -> float:
        return left + (right - left) * (moment - first).total_seconds() / span

    def y(rate: float) -> float:
        return bottom - (bottom - top) * rate

    shapes = [
        f"<line x1='{left}' y1='{bottom}' x2='{right}' y2='{bottom}' stroke='#718096'/>",
        f"<line x1='{left}' y1='{top}' x2='{left}' y2='{bottom}' stroke='#718096'/>",
        f"<text x='4' y='{top + 4}'>100%</text><text x='14' y='{bottom}'>0%</text>",
        f"<text x='{left}' y='{HEIGHT - 22}'>{escape(first.isoformat(timespec='seconds'))}</text>",
        f"<text x='{right - 150}' y='{HEIGHT - 22}'>"
        f"{escape(last.isoformat(timespec='seconds'))}</text>",
    ]
    for index, (name, timeline) in enumerate(series):
        color = PALETTE[index % len(PALETTE)]
        coordinates = [
            (x(point.start + dt.timedelta(seconds=point.seconds / 2)), y(point.hit_rate))
            for point in timeline
        ]
        if len(coordinates) > 1:
            path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in coordinates)
            shapes.append(
                f"<polyline points='{path}' fill='none' stroke='{color}' stroke-width='2'/>"
            )
        for cx, cy in coordinates:
            shapes.append(f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='3' fill='{color}'/>")
        shapes.append(
            f"<text x='{left + 10 + 200 * index}' y='{HEIGHT - 6}' fill='{color}'>"
            f"■ {escape(name[:30])}</text>"
        )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}'"
        f" viewBox='0 0 {WIDTH} {HEIGHT}'>{''.join(shapes)}</svg>"
    )


def _scatter(points: Sequence[tuple[int, int, bool]]) -> str:
    """Predicted (x) against observed (y) cache reads per request; the diagonal is exact."""
    if not points:
        return ""
    top = max(max(a, b) for a, b, _ in points) or 1
    size, margin = HEIGHT, 40
    scale = (size - 2 * margin) / top

    def at(value: int) -> float:
        return margin + value * scale

    shapes = [
        f"<line x1='{margin}' y1='{size - margin}' x2='{size - margin}' y2='{margin}'"
        " stroke='#a0aec0' stroke-dasharray='4 3'/>",
        f"<text x='{margin}' y='{size - 12}'>predicted read tokens (0 to {top:,})</text>",
        f"<text x='4' y='{margin - 8}'>observed</text>",
    ]
    for predicted, observed, exact in points:
        color = PALETTE[2] if exact else PALETTE[1]
        shapes.append(
            f"<circle cx='{at(predicted):.1f}' cy='{size - at(observed):.1f}' r='4'"
            f" fill='{color}' stroke='#ffffff' stroke-width='1'/>"
        )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{size}' height='{size}'"
        f" viewBox='0 0 {size} {size}'>{''.join(shapes)}</svg>"
    )


def _calibration(targets: Sequence[Any]) -> list[str]:
    rows = [
        (
            target.name,
            item.model,
            item.requests_fitted,
            item.requests_ratio_applied,
            item.requests_uncalibrated,
            item.ratio or "-",
            f"{item.ratio_min or '-'} .. {item.ratio_max or '-'}",
            item.implausible,
        )
        for target in targets
        for item in target.calibration
    ]
    if not rows:
        return []
    return [
        "<h2>Calibration of approximate tokenizers</h2>",
        _table(
            (
                "target",
                "logged model",
                "fitted",
                "ratio applied",
                "uncalibrated",
                "ratio",
                "range",
                "implausible",
            ),
            rows,
        ),
    ]


def _notes(targets: Sequence[Any]) -> list[str]:
    notes = [(target.name, note) for target in targets for note in target.notes]
    if not notes:
        return []
    items = "".join(f"<li>{escape(name)}: {escape(note)}</li>" for name, note in notes)
    return [f"<h2>Assumptions</h2><ul class='note'>{items}</ul>"]
