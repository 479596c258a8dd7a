"""Charts of a comparison for ``cachecast compare --plot/--html`` (matplotlib, Agg backend:
no display needed), drawn from the report's attributes.

* cost against monthly volume: every hosted target is a straight line (k logs cost k times the
  log's bill); self-hosting is a staircase of whole replicas paid by the month;
* hit rate against KV capacity: the self-hosted hit rate re-simulated at several capacities,
  with the deployment's own capacity marked and the hosted targets' hit rates for reference.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from cachecast.cli.html_report import page

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from cachecast.usecases.compare import CompareReport


def _cost_panel(report: CompareReport, axes: Axes) -> None:
    requests = report.log.requests
    axes.set_title("Monthly cost against volume")
    axes.set_xlabel("requests per month")
    axes.set_ylabel("US$ per month")
    if report.gpu_price_per_hour is None and not report.hosted:
        axes.text(0.5, 0.5, "no --gpu-price and no --target", ha="center", transform=axes.transAxes)
        return
    logs = np.logspace(-2, 6, 200)  # multiples of the log per month
    volume = logs * requests
    for index, line in enumerate(report.hosted):
        axes.plot(
            volume,
            logs * float(line.cost.total),
            color=f"C{index}",
            label=f"{line.provider}:{line.model}",
        )
    if report.gpu_price_per_hour is not None:
        self_cost = [float(report.monthly_self_hosted_cost(float(k)) or 0) for k in logs]
        label = (
            f"self-hosted {report.deployment.gpus} x {report.deployment.accelerator.label}"
            f" @ ${report.gpu_price_per_hour}/GPU-h"
        )
        axes.step(volume, self_cost, where="post", color="black", linewidth=2, label=label)
    else:
        axes.text(0.02, 0.02, "self-hosted line needs --gpu-price", transform=axes.transAxes)
    rate = report.log.arrival_rate_per_s
    if rate:
        axes.axvline(rate * 730 * 3600, color="grey", linestyle=":", label="this log's rate")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)


def _hit_rate_panel(report: CompareReport, axes: Axes) -> None:
    bounded = [
        (p.kv_capacity_tokens, p.hit_rate)
        for p in report.capacity_curve
        if p.kv_capacity_tokens is not None
    ]
    axes.set_title("Self-hosted hit rate against KV capacity (vLLM policy)")
    axes.set_xlabel("KV capacity (tokens)")
    axes.set_ylabel("hit rate (cached / input tokens)")
    axes.plot(
        [tokens for tokens, _ in bounded],
        [rate for _, rate in bounded],
        marker="o",
        color="black",
        label="re-simulated",
    )
    unbounded = [p for p in report.capacity_curve if p.kv_capacity_tokens is None]
    if unbounded:
        axes.axhline(unbounded[0].hit_rate, color="grey", linestyle="--", label="unbounded cache")
    axes.axvline(
        report.capacity.kv_capacity_tokens, color="tab:red", linestyle=":", label="this deployment"
    )
    for index, line in enumerate(report.hosted):
        axes.axhline(
            line.hit_rate,
            color=f"C{index}",
            linewidth=1.2,
            alpha=0.8,
            label=f"{line.provider}:{line.model} (hosted)",
        )
    axes.set_xscale("log")
    axes.set_ylim(-0.02, 1.02)  # a 0% or 100% line stays visible
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)


def render_png(report: CompareReport) -> bytes:
    """Both panels side by side as PNG bytes."""
    figure, (cost_axes, hit_axes) = plt.subplots(1, 2, figsize=(13, 5), dpi=100)
    try:
        _cost_panel(report, cost_axes)
        _hit_rate_panel(report, hit_axes)
        figure.suptitle(
            f"{report.deployment.model.name} on {report.deployment.gpus} x"
            f" {report.deployment.accelerator.label}: {report.log.requests} requests"
        )
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
    finally:
        plt.close(figure)
    return buffer.getvalue()


def write_png(report: CompareReport, path: Path) -> None:
    path.write_bytes(render_png(report))


def write_comparison_html(report: CompareReport, path: Path, table_rows: list[list[str]]) -> None:
    """A self-contained page: the table (first row is the header) and the chart inline."""
    image = base64.b64encode(render_png(report)).decode("ascii")
    header, *rows = table_rows
    head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    notes = "".join(f"<li>{html.escape(text)}</li>" for text in report.assumptions)
    title = (
        f"cachecast compare: {report.deployment.model.name} on {report.deployment.gpus} x"
        f" {report.deployment.accelerator.label}"
    )
    body = (
        f"<p class='meta'>{html.escape(report.timing_source)}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"<img alt='cost and hit-rate charts' src='data:image/png;base64,{image}'>"
        f"<h2>Assumptions</h2><ul class='note'>{notes}</ul>"
    )
    # The one look of every cachecast page (html_report.page).
    path.write_text(page(title, body), encoding="utf-8")
