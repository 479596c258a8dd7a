"""``--html FILE``: an estimate or reconcile report as one self-contained page.

One file, no network: styles inline, charts as inline SVG drawn here from the report's own
figures (no script, no font or image fetched). What it shows: the bill per target (with and
without caching), hit rate over time, prompt tokens and dollars lost by miss cause, and
predicted against observed (the reconciliation of each target; for ``reconcile`` every
request's predicted and observed reads as a scatter, and the mismatches with their
classification, the worst first). Money and counts are formatted for people
(``cli.output.money``); the exact figures are in ``--json``. :func:`page` and :func:`legend`
are the one look every cachecast page shares.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cachecast.cli.output import money

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
SCATTER_SIZE = 420
WORST_ROWS = 20  # mismatches listed on a page; every one is in --json

_STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; margin: 24px;
  color: #1a202c; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 4px 0; } h2 { font-size: 17px; margin: 28px 0 8px 0; }
p.meta { color: #4a5568; margin: 0 0 12px 0; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px 0; }
th, td { border-bottom: 1px solid #e2e8f0; padding: 4px 10px; text-align: right;
  vertical-align: top; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.wide { overflow-x: auto; max-width: 100%; }
th.prose { text-align: left; }
td.prose { text-align: left; white-space: normal; min-width: 240px; max-width: 520px; }
th { background: #edf2f7; }
svg { background: #f7fafc; border: 1px solid #e2e8f0; display: block; }
svg text { font-size: 11px; fill: #2d3748; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 18px; font-size: 13px; margin: 6px 0 14px 0;
  max-width: 720px; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; margin-right: 5px;
  vertical-align: -1px; border-radius: 2px; }
.note { color: #744210; font-size: 13px; }
.headline { font-size: 16px; margin: 8px 0 4px 0; }
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
        return page("cachecast estimate", _estimate_body(report))
    return page("cachecast reconcile", _reconcile_body(report))


def page(title: str, body: str) -> str:
    """The one look of every cachecast page (estimate, reconcile, compare): ``body`` is
    HTML, ``title`` text."""
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>{body}</body></html>\n"
    )


def legend(names: Sequence[str], colours: Sequence[str] | None = None) -> str:
    """A chart's legend, in HTML under the chart: it wraps instead of being cut, and each
    swatch has its own colour (a CSS rule on SVG text would repaint text swatches)."""
    colours = colours or [PALETTE[i % len(PALETTE)] for i in range(len(names))]
    items = "".join(
        f"<span><span class='swatch' style='background:{colour}'></span>{escape(name)}</span>"
        for name, colour in zip(names, colours, strict=True)
    )
    return f"<div class='legend'>{items}</div>"


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
                    t.name + ("" if t.exact_tokens else "~"),
                    t.contract.described(),
                    t.requests,
                    t.input_tokens,
                    t.cache_read_tokens,
                    t.cache_write_tokens,
                    f"{t.hit_rate:.1%}",
                    money(t.cost.total),
                    money(t.cost_without_cache),
                    money(t.savings),
                )
                for t in report.targets
            ],
        ),
        "<p class='meta'>~ approximate token counts (not the provider's tokenizer, or tools and"
        " images, whose rendering is not published). Amounts rounded for reading; --json is"
        " exact.</p>",
        _bars(
            [(t.name, t.cost.total, t.cost_without_cache) for t in report.targets],
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
                        _decimal(t.reconciliation.mean_abs_error_tokens),
                        money(Decimal(t.reconciliation.mean_abs_error_cost)),
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
    from cachecast.usecases.reconcile import reads_not_reported_note  # (lazy: startup)

    summary = report.summary
    mismatches = sorted(
        (row for row in report.requests if not row.exact_match),
        key=lambda row: (-abs(row.token_error), -abs(row.predicted_cost - row.observed_cost)),
    )
    worst = mismatches[:WORST_ROWS]
    difference = summary.predicted_cost - summary.observed_cost
    parts = [
        f"<p class='meta'>Sources: {escape(', '.join(Path(s).name for s in report.sources))};"
        " tolerance:"
        f" {escape(report.tolerance)}</p>",
        f"<p class='headline'>{summary.requests:,} requests with observed usage: predicted"
        f" <b>{money(summary.predicted_cost)}</b> against observed"
        f" <b>{money(summary.observed_cost)}</b> ({'+' if difference > 0 else ''}"
        f"{money(difference)}); {summary.exact_matches:,} exact.</p>",
        *(
            [f"<p class='meta'>{escape(reads_not_reported_note(summary.reads_not_reported))}.</p>"]
            if summary.reads_not_reported
            else []
        ),
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
                    _decimal(each.mean_abs_error_tokens),
                    money(Decimal(each.mean_abs_error_cost)),
                    _decimal(each.read_bias_tokens),
                    money(each.predicted_cost),
                    money(each.observed_cost),
                )
                for name, each in [*((t.name, t.summary) for t in report.targets), ("all", summary)]
            ],
        ),
        "<h3>Cache reads per request, predicted against observed</h3>",
        _scatter(
            [
                (row.predicted_cache_read_tokens, row.observed_cache_read_tokens, row.exact_match)
                for row in report.requests
                if row.observed_cache_read_tokens is not None  # not reported: no point
            ]
        ),
        legend(("exact", "mismatch"), (PALETTE[2], PALETTE[1])),
        f"<h2>The worst {len(worst):,} of {len(mismatches):,} mismatches</h2>",
        "<p class='meta'>By the size of the token error; every request is in --json and"
        " --per-request.</p>",
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
                    "-"
                    if row.observed_cache_read_tokens is None
                    else row.observed_cache_read_tokens,
                    row.predicted_cache_write_tokens,
                    "-"
                    if row.observed_cache_write_tokens is None
                    else row.observed_cache_write_tokens,
                    row.classification or "exact",
                    row.explanation,
                )
                for row in worst
            ],
            prose=(7,),
        ),
        "<h2>Bill per target</h2>",
        _table(
            ("target", "contract", "requests", "prompt", "read", "written", "hit", "cost"),
            [
                (
                    t.name,
                    t.contract.described(),
                    t.requests,
                    t.input_tokens,
                    t.cache_read_tokens,
                    t.cache_write_tokens,
                    f"{t.hit_rate:.1%}",
                    money(t.cost),
                )
                for t in report.targets
            ],
        ),
        _bars(
            [(t.name, t.summary.predicted_cost, t.summary.observed_cost) for t in report.targets],
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


def _decimal(text: str | None, places: int = 1) -> str:
    """A report's exact decimal string for people (``places`` decimals, separators)."""
    if text is None:
        return "-"
    return f"{Decimal(text).quantize(Decimal(1).scaleb(-places)):,}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], prose: Sequence[int] = ()) -> str:
    """A table; the columns at ``prose`` wrap, every other cell stays on one line (a number
    or a name is never broken)."""
    head = "".join(
        f"<th class='prose'>{escape(header)}</th>"
        if index in prose
        else f"<th>{escape(header)}</th>"
        for index, header in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='prose'>{_cell(value)}</td>"
            if index in prose
            else f"<td>{_cell(value)}</td>"
            for index, value in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    # A table wider than the window scrolls on its own: nothing is cut or wrapped mid-number.
    return (
        f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
        "</table></div>"
    )


def _causes(name: str, causes: Sequence[MissCauseTotal]) -> str:
    if not causes:
        return f"<p>{escape(name)}: every prompt token was read from cache.</p>"
    from cachecast.simulator.misses import CAUSE_MEANINGS

    total = sum(cause.tokens for cause in causes) or 1
    ranked = sorted(causes, key=lambda cause: -cause.cost_lost)
    rows = [
        (
            cause.cause,
            cause.tokens,
            f"{cause.tokens / total:.1%}",
            money(cause.cost_lost),
            CAUSE_MEANINGS.get(cause.cause, ""),
        )
        for cause in ranked
    ]
    lost = sum((cause.cost_lost for cause in causes), Decimal(0))
    rows.append(("all causes", total, "100%", money(lost), ""))
    table = _table(
        ("cause", "tokens not read", "share", "dollars lost", "what it means"), rows, prose=(4,)
    )
    chart = _bars(
        [(cause.cause, Decimal(cause.tokens), None) for cause in ranked], ("tokens",), "tokens"
    )
    return f"<h3>{escape(name)}</h3>{table}{chart}"


def _bars(
    rows: Sequence[tuple[str, Decimal, Decimal | None]], names: Sequence[str], unit: str
) -> str:
    """Horizontal bars, one or two per row, each labelled with its value (dollars for
    people where ``unit`` is dollars), and the legend under the chart."""
    if not rows:
        return ""
    dollars = "dollars" in unit
    top = float(max(max(a, b or Decimal(0)) for _, a, b in rows)) or 1.0
    pair = any(b is not None for _, _, b in rows)
    row_height = 34 if pair else 22
    height = 30 + row_height * len(rows) + 10
    label_width, chart_width = 250, WIDTH - 250 - 110
    shapes = [f"<text x='{label_width}' y='16'>{escape(unit)}</text>"]
    for index, (name, first, second) in enumerate(rows):
        y = 30 + index * row_height
        shapes.append(f"<text x='6' y='{y + 13}'>{escape(name[:40])}</text>")
        for slot, value in enumerate((first, second)):
            if value is None:
                continue
            width = max(1.0, chart_width * float(value) / top)
            top_y = y + slot * 14
            label = money(value) if dollars else f"{int(value):,}"
            shapes.append(
                f"<rect x='{label_width}' y='{top_y}' width='{width:.1f}' height='12'"
                f" fill='{PALETTE[slot]}'/>"
                f"<text x='{label_width + width + 4:.1f}' y='{top_y + 10}'>{escape(label)}</text>"
            )
    chart = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}'"
        f" viewBox='0 0 {WIDTH} {height}'>{''.join(shapes)}</svg>"
    )
    return chart + (legend(names) if pair else "")


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
    for index, (_name, timeline) in enumerate(series):
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
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{HEIGHT}'"
        f" viewBox='0 0 {WIDTH} {HEIGHT}'>{''.join(shapes)}</svg>"
        + legend([name for name, _ in series])
    )


def _scatter(points: Sequence[tuple[int, int, bool]]) -> str:
    """Predicted (x) against observed (y) cache reads per request, labelled axes with their
    range; on the dashed diagonal a prediction is exact."""
    if not points:
        return ""
    top = max(max(a, b) for a, b, _ in points) or 1
    size, left, bottom_margin, top_margin = SCATTER_SIZE, 70, 50, 20
    plot = size - left - 20
    scale = plot / top

    def x(value: int) -> float:
        return left + value * scale

    def y(value: int) -> float:
        return size - bottom_margin - value * scale

    shapes = [
        f"<line x1='{x(0)}' y1='{y(0)}' x2='{x(top):.1f}' y2='{y(top):.1f}'"
        " stroke='#a0aec0' stroke-dasharray='4 3'/>",
        f"<line x1='{left}' y1='{y(0)}' x2='{x(top):.1f}' y2='{y(0)}' stroke='#718096'/>",
        f"<line x1='{left}' y1='{y(0)}' x2='{left}' y2='{y(top):.1f}' stroke='#718096'/>",
        f"<text x='{left - 4}' y='{y(0) + 14}'>0</text>",
        f"<text x='{x(top) - 60:.1f}' y='{y(0) + 14}'>{top:,}</text>",
        f"<text x='{left - 64}' y='{y(top) + 4:.1f}'>{top:,}</text>",
        f"<text x='{left + plot / 2 - 90:.1f}' y='{size - 14}'>predicted cache-read tokens</text>",
        f"<text x='14' y='{y(0) - plot / 2 + 80:.1f}'"
        f" transform='rotate(-90 14 {y(0) - plot / 2 + 80:.1f})'>observed cache-read tokens</text>",
    ]
    for predicted, observed, exact in points:
        color = PALETTE[2] if exact else PALETTE[1]
        shapes.append(
            f"<circle cx='{x(predicted):.1f}' cy='{y(observed):.1f}' r='4'"
            f" fill='{color}' stroke='#ffffff' stroke-width='1'/>"
        )
    del top_margin
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
