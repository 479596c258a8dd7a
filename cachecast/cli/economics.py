"""``cachecast capacity``, ``compare`` and ``fleet``: self-hosted sizing and its economics.

Thin adapters over :mod:`cachecast.usecases.capacity`, :mod:`cachecast.usecases.compare` and
:mod:`cachecast.usecases.fleet`: options in, report out (a rich table, or ``--json`` = the
report's model dump; ``compare`` also ``--plot``/``--html``, whose paths are checked before
the work starts). The use cases name their request's fields in errors; here they are shown
as the options that set them (``kv_dtype`` is ``--kv-dtype``).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cachecast.cli import common
from cachecast.cli.common import (
    command,
    contract_store,
    expand_globs,
    log_of,
    parse_day,
    print_skipped,
    progress_bar,
    split_targets,
    stderr,
)
from cachecast.core.errors import CachecastError

if TYPE_CHECKING:
    from cachecast.usecases.capacity import CapacityReport
    from cachecast.usecases.compare import CompareReport, MeasurementFacts
    from cachecast.usecases.fleet import FleetReport

ModelOption = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="A preset (llama-3.3-70b, llama-3.1-8b, qwen2.5-72b, mistral-7b-v0.1,"
        " deepseek-v3, jamba-v0.1) or a Hugging Face config.json (or its directory).",
    ),
]
GpuOption = Annotated[
    str, typer.Option("--gpu", help="h100-sxm, h200, b200, a100-80gb, l40s or mi300x.")
]
GpusOption = Annotated[
    int, typer.Option("--gpus", min=1, help="GPUs per replica (tensor parallel).")
]
KvDtypeOption = Annotated[str, typer.Option("--kv-dtype", help="KV cache dtype: bf16, fp8, int4.")]
WeightDtypeOption = Annotated[
    str | None,
    typer.Option("--weight-dtype", help="Weight dtype (default: the model's own, e.g. bf16)."),
]
ParamsOption = Annotated[
    int | None,
    typer.Option("--params", help="Total parameter count, for configs it cannot be counted from."),
]
LogsArgument = Annotated[
    list[Path],
    typer.Argument(help="Prompt log(s), JSONL (or a Mooncake trace); quoted globs expand."),
]
GpuPriceOption = Annotated[
    str | None,
    typer.Option("--gpu-price", help="US$ per GPU-hour (no default: without it only GPU-hours)."),
]
BlockSizeOption = Annotated[
    int | None,
    typer.Option("--block-size", min=1, help="KV block (default 16; a block-key trace's own)."),
]
UtilizationOption = Annotated[
    float,
    typer.Option(
        "--gpu-memory-utilization",
        help="Share of GPU memory the engine may use (vLLM 0.32's own default is 0.92).",
    ),
]

# The request field each option sets, where the names differ beyond - and _.
OPTIONS = {
    "targets": "--target",
    "routings": "--routing",
    "window_seconds": "--window",
    "log": "LOG",
}


@contextmanager
def named_as_options() -> Iterator[None]:
    """Errors of the use cases name their request's fields (``kv_dtype``, ``targets[1]``);
    on the command line those are options (``--kv-dtype``, ``--target``: a repeated option's
    index is dropped, its value is in the message). Errors located in a file keep their
    fields, which are the file's."""
    try:
        yield
    except CachecastError as error:
        where = error.location
        named = re.fullmatch(r"([a-z_]+)(\[\d+\])?(.*)", where.field or "")
        if where.source is None and named is not None:
            name, _index, rest = named.groups()
            option = OPTIONS.get(name, "--" + name.replace("_", "-"))
            error.location = replace(where, field=option + rest)
        raise


def register(app: typer.Typer) -> None:
    """Add ``capacity``, ``compare`` and ``fleet`` to the root app."""
    app.command("capacity")(command(capacity_command))
    app.command("compare")(command(compare_command))
    app.command("fleet")(command(fleet_command))


def _deployment_fields(
    model: str,
    gpu: str,
    gpus: int,
    kv_dtype: str,
    weight_dtype: str | None,
    params: int | None,
    utilization: float,
    block_size: int | None,
) -> dict[str, Any]:
    """The deployment's fields of a request (``DeploymentRequest``)."""
    from cachecast.usecases.capacity import ModelReference

    return {
        "model": ModelReference.of_text(model),
        "gpu": gpu,
        "gpus": gpus,
        "kv_dtype": kv_dtype,
        "weight_dtype": weight_dtype,
        "params": params,
        "gpu_memory_utilization": utilization,
        "block_size": block_size,
    }


# ---------------------------------------------------------------------------------------------
# capacity


def capacity_command(
    model: ModelOption,
    gpu: GpuOption,
    gpus: GpusOption = 1,
    context: Annotated[
        int, typer.Option("--context", min=1, help="Tokens per request (prompt + output).")
    ] = 8192,
    batch: Annotated[
        int | None,
        typer.Option("--batch", min=1, help="Decode batch (default: as many as fit)."),
    ] = None,
    cached: Annotated[
        int, typer.Option("--cached", min=0, help="Cached prefix tokens of the prefill.")
    ] = 0,
    kv_dtype: KvDtypeOption = "bf16",
    weight_dtype: WeightDtypeOption = None,
    params: ParamsOption = None,
    gpu_memory_utilization: UtilizationOption = 0.9,
    block_size: Annotated[int, typer.Option("--block-size", min=1)] = 16,
    as_json: common.JsonOption = False,
) -> None:
    """KV bytes per token, KV capacity, concurrency, decode ceiling, B* and prefill time.

    Prefill of a CONTEXT-token prompt whose first CACHED tokens are cached. Exits 2 when the
    model does not fit (the report, printed first, says by how much).
    """
    from cachecast.usecases.capacity import CapacityRequest, capacity, require_fit

    with named_as_options():
        request = CapacityRequest(
            **_deployment_fields(
                model, gpu, gpus, kv_dtype, weight_dtype, params, gpu_memory_utilization, block_size
            ),
            context=context,
            batch=batch,
            cached=cached,
        )
        report = capacity(request)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _capacity_table(report)
    require_fit(report)


def _capacity_table(report: CapacityReport) -> None:
    inputs = report.inputs
    table = Table(
        title=f"{inputs.model.name} on {inputs.gpus} x {inputs.accelerator.label}",
        caption="ceilings from the roofline model (docs/economics.md); see --json for sources",
    )
    table.add_column("quantity", justify="left")
    table.add_column("value", justify="right")

    def gb(value: float | None) -> str:
        return "-" if value is None else f"{value / 1e9:,.2f} GB"

    rows = [
        ("KV bytes per token", f"{report.kv_bytes_per_token:,}"),
        ("recurrent state per request", f"{report.recurrent_state_bytes_per_request:,} B"),
        ("weights", gb(report.weight_bytes)),
        ("usable memory", gb(report.usable_bytes)),
        ("KV budget", gb(report.kv_budget_bytes)),
        ("KV blocks", f"{report.num_blocks:,} x {inputs.block_size} tokens"),
        ("KV capacity (tokens)", f"{report.kv_capacity_tokens:,}"),
        (
            f"concurrent requests at {inputs.context_tokens:,} tokens",
            f"{report.max_concurrent_requests:,}",
        ),
    ]
    if report.decode_ceiling_tokens_per_s is not None and report.prefill is not None:
        rows += [
            (
                f"decode ceiling at batch {report.decode_batch}",
                f"{report.decode_ceiling_tokens_per_s:,.0f} tok/s",
            ),
            (
                "B* (KV traffic = weights)",
                "-" if report.b_star is None else f"{report.b_star:,.1f}",
            ),
            (
                f"prefill of {inputs.context_tokens - inputs.cached_tokens:,} new after"
                f" {inputs.cached_tokens:,} cached",
                f"{report.prefill.prefill_ms:,.1f} ms ({report.prefill.bound}-bound)",
            ),
        ]
    for name, value in rows:
        table.add_row(name, value)
    Console(file=sys.stdout, markup=False).print(table)


# ---------------------------------------------------------------------------------------------
# compare


def compare_command(
    logs: LogsArgument,
    model: ModelOption,
    gpu: GpuOption,
    gpus: GpusOption = 1,
    gpu_price: GpuPriceOption = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            metavar="PROVIDER:MODEL",
            help="Hosted PROVIDER:MODEL to compare with (repeatable, or a comma-separated list).",
            callback=split_targets,
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="Contracts in force on this date (YYYY-MM-DD)."),
    ] = None,
    kv_dtype: KvDtypeOption = "bf16",
    weight_dtype: WeightDtypeOption = None,
    params: ParamsOption = None,
    gpu_memory_utilization: UtilizationOption = 0.9,
    block_size: BlockSizeOption = None,
    host_memory_gib: Annotated[
        float | None,
        typer.Option(
            "--host-memory-gib",
            help="Host DRAM KV tier per replica (default: unbounded).",
        ),
    ] = None,
    state_checkpoint: Annotated[
        int | None,
        typer.Option(
            "--state-checkpoint",
            min=1,
            help="Hybrid models: recurrent-state checkpoint interval (tokens) hits round to.",
        ),
    ] = None,
    measurement_id: Annotated[
        int | None,
        typer.Option(
            "--measurement-id",
            help="Fit prefill time from this stored vLLM measurement (cachecast measure)"
            " instead of the roofline model; it must be of this model and accelerator.",
        ),
    ] = None,
    max_utilization: Annotated[
        float,
        typer.Option("--max-utilization", help="Busiest a replica may be at the log's rate."),
    ] = 0.8,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Model whose tokenizer counts the self-hosted tokens."),
    ] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="Provider of the records that name none.")
    ] = None,
    strict: common.StrictOption = False,
    as_json: common.JsonOption = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the charts as PNG.")] = None,
    html_file: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML report.")
    ] = None,
    database_url: common.DatabaseUrlOption = None,
) -> None:
    """Self-hosted vLLM (prefix caching) against hosted contracts for the same LOG.

    GPU-hours at the log's arrival rate and at full utilization, cost per million tokens,
    each hosted bill, break-even monthly volume and hit rate, a host-memory KV tier, and the
    hit rate at several KV capacities. Figures are roofline ceilings unless a vLLM
    measurement is used (the report's timing_source says which).
    """
    from cachecast.passes.per_request import check_output_path
    from cachecast.usecases.compare import CompareRequest, compare, parse_price

    if plot is not None:
        check_output_path(plot, "--plot")
    if html_file is not None:
        check_output_path(html_file, "--html")
    with named_as_options():
        request = CompareRequest(
            **_deployment_fields(
                model, gpu, gpus, kv_dtype, weight_dtype, params, gpu_memory_utilization, block_size
            ),
            log=log_of(expand_globs(logs), provider=provider, strict=strict),
            gpu_price=parse_price(gpu_price),
            targets=target or [],
            at=parse_day(at),
            tokenizer=tokenizer,
            host_memory_gib=host_memory_gib,
            state_checkpoint=state_checkpoint,
            measurement_id=measurement_id,
            max_utilization=max_utilization,
        )
        needs_store = bool(target) or measurement_id is not None
        store = contract_store(database_url) if needs_store else None
        with progress_bar() as progress:
            report = compare(request, store, progress=progress)
    print_skipped(report.errors, report.skipped_lines)
    rows = comparison_rows(report)
    if plot is not None or html_file is not None:
        from cachecast.cli.plots import write_comparison_html, write_png

        if plot is not None:
            write_png(report, plot)
            stderr.print(f"wrote {plot}")
        if html_file is not None:
            write_comparison_html(report, html_file, rows)
            stderr.print(f"wrote {html_file}")
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _comparison_table(report, rows)


def comparison_rows(report: CompareReport) -> list[list[str]]:
    """The summary table (header first): self-hosted lines, then every hosted target."""
    from cachecast.usecases.compare import BreakEvenVolume

    header = ["option", "hit rate", "GPU-h", "cost of log", "$/M input", "break-even req/month"]
    rows = [header]
    shown = report.self_hosted
    cost = shown.cost
    rows.append(
        [
            "self-hosted, fully used",
            f"{shown.hit_rate:.1%}",
            str(shown.full_utilization.gpu_hours),
            "-" if cost is None else f"${cost.full_utilization}",
            "-" if cost is None else f"${cost.per_million_input_tokens_full_utilization}",
            "",
        ]
    )
    at_rate = shown.at_arrival_rate
    if at_rate is not None:
        priced = cost is not None and cost.at_arrival_rate is not None
        rows.append(
            [
                f"self-hosted at the log's rate ({at_rate.replicas} replica(s),"
                f" {at_rate.utilization:.0%} busy)",
                f"{shown.hit_rate:.1%}",
                str(at_rate.gpu_hours),
                f"${cost.at_arrival_rate}" if priced and cost else "-",
                f"${cost.per_million_input_tokens_at_arrival_rate}" if priced and cost else "-",
                "",
            ]
        )
    for line, versus in zip(report.hosted, report.versus, strict=True):
        even = versus.break_even_monthly
        rows.append(
            [
                f"{line.provider}:{line.model} @{line.contract.effective_from}",
                f"{line.hit_rate:.1%}",
                "",
                f"${line.cost.total}",
                f"${versus.hosted_per_million_input_tokens}",
                "-"
                if even is None
                else (f"{even.requests:,.0f}" if isinstance(even, BreakEvenVolume) else "never"),
            ]
        )
    return rows


def _comparison_table(report: CompareReport, rows: list[list[str]]) -> None:
    out = Console(file=sys.stdout, markup=False)
    header, *body = rows
    deployment = report.deployment
    table = Table(
        title=f"{deployment.model.name} on {deployment.gpus} x"
        f" {deployment.accelerator.label}: {report.log.requests:,} requests,"
        f" KV {report.capacity.kv_capacity_tokens:,} tokens",
        caption=report.timing_source,
    )
    for column in header:
        table.add_column(column, justify="left" if column == "option" else "right")
    for row in body:
        table.add_row(*row)
    out.print(table)
    tier = report.host_tier
    out.print(
        f"host-memory tier ({'unbounded' if tier.unbounded else tier.host_bytes}):"
        f" hit rate {tier.hit_rate_with_tier:.1%}, fetch pays for"
        f" {tier.requests_where_fetch_pays:,} requests, saves {tier.gpu_hours_saved} GPU-h"
    )
    if report.gpu_price_per_hour is None:
        out.print("no --gpu-price: self-hosted costs are given in GPU-hours only")
    if report.measurement is not None:
        _print_measurement(out, report.measurement)


def _print_measurement(out: Console, facts: MeasurementFacts) -> None:
    """The measurement used for prefill time, and the roofline model set against it."""
    passport, versus = facts.passport, facts.against_roofline
    out.print(
        f"measurement #{passport.id}: vLLM {passport.engine_version} ({passport.engine_kind}),"
        f" model {passport.model} on {passport.device}, block {passport.block_size} x"
        f" {passport.num_blocks}, dtype {passport.dtype or 'unknown'}, measured"
        f" {passport.measured_at} ({passport.requests} requests of {passport.source})"
    )
    out.print(
        f"  measured TTFT mean {versus.measured_ttft_mean_ms:.2f} ms over"
        f" {versus.measured_requests} requests; the roofline model of this deployment gives"
        f" {versus.roofline_mean_ms:.4f} ms for the same tokens (measured / model"
        f" {versus.measured_over_roofline:,.1f}x)"
    )
    out.print(
        f"  this log's prefill: {versus.log_prefill_seconds:.4f} s by the measurement,"
        f" {versus.log_roofline_prefill_seconds:.6f} s by the roofline model (difference"
        f" {versus.log_difference_seconds:+.4f} s, {versus.log_measured_over_roofline:,.1f}x);"
        f" p50 {versus.log_prefill_ms.p50:.3f} ms against {versus.log_roofline_prefill_ms.p50:.5f}"
        " ms"
    )
    for warning in facts.warnings:
        out.print(f"  warning: {warning}")


# ---------------------------------------------------------------------------------------------
# fleet


def fleet_command(
    logs: LogsArgument,
    model: ModelOption,
    gpu: GpuOption,
    replicas: Annotated[
        int, typer.Option("--replicas", min=1, help="vLLM replicas, each with its own KV pool.")
    ],
    routing: Annotated[
        list[str] | None,
        typer.Option(
            "--routing",
            help="Routing policy (repeatable): round-robin, least-loaded, session-sticky,"
            " prefix-hash, cache-aware or all.",
        ),
    ] = None,
    gpus: GpusOption = 1,
    gpu_price: GpuPriceOption = None,
    kv_dtype: KvDtypeOption = "bf16",
    weight_dtype: WeightDtypeOption = None,
    params: ParamsOption = None,
    gpu_memory_utilization: UtilizationOption = 0.9,
    block_size: BlockSizeOption = None,
    window: Annotated[
        float,
        typer.Option("--window", help="Seconds of computed prompt tokens that make a load."),
    ] = 60.0,
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Model whose tokenizer counts the tokens."),
    ] = None,
    strict: common.StrictOption = False,
    as_json: common.JsonOption = False,
) -> None:
    """K self-hosted vLLM replicas under each routing policy: hit rate, load, TTFT, cost.

    Each replica's KV capacity is the model's on --gpus x --gpu (as in compare). Per policy:
    hit rate, computed prompt tokens per replica and their imbalance, TTFT (M/G/1 wait +
    roofline prefill, mean and p90), GPU-hours of the fleet (the busiest replica bounds the
    makespan) and, with --gpu-price, their cost. Default routing: all.
    """
    from cachecast.usecases.compare import parse_price
    from cachecast.usecases.fleet import FleetRequest, fleet

    with named_as_options():
        request = FleetRequest(
            **_deployment_fields(
                model, gpu, gpus, kv_dtype, weight_dtype, params, gpu_memory_utilization, block_size
            ),
            log=log_of(expand_globs(logs), strict=strict),
            replicas=replicas,
            routings=routing or ["all"],
            gpu_price=parse_price(gpu_price),
            tokenizer=tokenizer,
            window_seconds=window,
        )
        with progress_bar() as progress:
            report = fleet(request, progress=progress)
    print_skipped(report.errors, report.skipped_lines)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    _fleet_table(report)


def _fleet_table(report: FleetReport) -> None:
    inputs = report.inputs
    table = Table(
        title=f"{inputs.replicas} x {inputs.model} on {inputs.gpus_per_replica} x"
        f" {inputs.accelerator}: {report.log.requests:,} requests, KV"
        f" {inputs.kv_capacity_tokens_per_replica:,} tokens per replica",
        caption="roofline ceilings; TTFT = M/G/1 mean wait + prefill; see --json for definitions",
    )
    header = ["routing", "hit rate", "imbalance", "busiest util.", "TTFT mean ms", "TTFT p90 ms"]
    for column in [*header, "GPU-h", "cost"]:
        table.add_column(column, justify="left" if column == "routing" else "right")
    for policy in report.policies:
        busiest = max((replica.utilization or 0.0) for replica in policy.replicas)
        mean, p90 = policy.ttft_ms.mean, policy.ttft_ms.p90
        table.add_row(
            str(policy.routing),
            f"{policy.hit_rate:.1%}",
            f"{policy.imbalance:.3f}",
            f"{busiest:.1%}",
            "saturated" if mean is None else f"{mean:,.1f}",
            "saturated" if p90 is None else f"{p90:,.1f}",
            str(policy.gpu_hours),
            "-" if policy.cost is None else f"${policy.cost}",
        )
    Console(file=sys.stdout, markup=False).print(table)
    if inputs.gpu_price_per_hour is None:
        Console(file=sys.stdout, markup=False).print(
            "no --gpu-price: costs are given in GPU-hours only"
        )
