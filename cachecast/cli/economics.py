"""``cachecast capacity``, ``compare`` and ``fleet``: self-hosted sizing and its economics."""

from __future__ import annotations

import datetime as dt
import json
import sys
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cachecast import db
from cachecast.cli.common import DatabaseUrlOption, command, progress_bar

if TYPE_CHECKING:
    from cachecast.economics.capacity import Deployment
    from cachecast.economics.compare import ComparisonReport
    from cachecast.tokenizers import LogError

EXIT_BAD_INPUT = 1
EXIT_USAGE = 2

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
    list[Path], typer.Argument(help="Prompt log(s), JSONL (or a Mooncake trace).")
]
GpuPriceOption = Annotated[
    str | None,
    typer.Option("--gpu-price", help="US$ per GPU-hour (no default: without it only GPU-hours)."),
]
BlockSizeOption = Annotated[
    int | None,
    typer.Option("--block-size", min=1, help="KV block (default 16; a block-key trace's own)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
UtilizationOption = Annotated[
    float,
    typer.Option(
        "--gpu-memory-utilization",
        help="Share of GPU memory the engine may use (vLLM's default 0.9).",
    ),
]


def register(app: typer.Typer) -> None:
    """Add ``capacity``, ``compare`` and ``fleet`` to the root app."""
    app.command("capacity")(command(capacity_command))
    app.command("compare")(command(compare_command))
    app.command("fleet")(command(fleet_command))


def _fail(console: Console, message: str, code: int = EXIT_USAGE) -> Any:
    console.print(f"[red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def _gpu_price(console: Console, text: str | None) -> Decimal | None:
    """``--gpu-price`` as a non-negative Decimal (None when not given)."""
    if text is None:
        return None
    try:
        price = Decimal(text)
    except InvalidOperation:
        return _fail(console, f"--gpu-price {text!r} is not a number")  # type: ignore[no-any-return]
    if not price.is_finite() or price < 0:
        _fail(console, f"--gpu-price must be a non-negative number, got {text}")
    return price


def _check_files(console: Console, logs: list[Path]) -> None:
    for log in logs:
        if not log.is_file():
            _fail(console, f"{log}: no such file")


def _print_log_errors(console: Console, errors: list[LogError]) -> None:
    """Every skipped log line, on stderr, naming file, line and field."""
    for problem in errors:
        console.print(
            f"{problem.file}:{problem.line}: {problem.field}: {problem.reason}", highlight=False
        )


def _deployment(
    console: Console,
    model: str,
    gpu: str,
    gpus: int,
    kv_dtype: str,
    weight_dtype: str | None,
    params: int | None,
    utilization: float,
    block_size: int | None,
) -> Deployment:
    """The deployment the options describe (``block_size`` None: vLLM's default), or exit 2
    naming the bad option."""
    from cachecast.economics.capacity import DEFAULT_BLOCK_SIZE, Deployment
    from cachecast.economics.geometry import KV_DTYPES, GeometryError, load_model
    from cachecast.economics.hardware import UnknownAcceleratorError, get_accelerator

    if kv_dtype not in KV_DTYPES:
        _fail(console, f"--kv-dtype {kv_dtype!r}: choose one of {', '.join(KV_DTYPES)}")
    try:
        geometry = load_model(model, params_total=params, weight_dtype=weight_dtype)
        accelerator = get_accelerator(gpu)
        return Deployment(
            model=geometry,
            accelerator=accelerator,
            gpus=gpus,
            kv_dtype=kv_dtype,
            weight_dtype=weight_dtype,
            gpu_memory_utilization=Fraction(str(utilization)),
            block_size=block_size or DEFAULT_BLOCK_SIZE,
        )
    except (GeometryError, UnknownAcceleratorError, ValueError) as error:
        return _fail(console, str(error))  # type: ignore[no-any-return]


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
    as_json: JsonOption = False,
) -> None:
    """KV bytes per token, KV capacity, concurrency, decode ceiling, B* and prefill time.

    Prefill of a CONTEXT-token prompt whose first CACHED tokens are cached. Exits 1 when the
    model does not fit (the output says by how much).
    """
    from cachecast.economics.sizing import capacity_report

    err = Console(stderr=True)
    deployment = _deployment(
        err, model, gpu, gpus, kv_dtype, weight_dtype, params, gpu_memory_utilization, block_size
    )
    try:
        data = capacity_report(deployment, context=context, batch=batch, cached=cached)
    except ValueError as error:
        _fail(err, str(error))
    if as_json:
        typer.echo(json.dumps(data, indent=2))
    else:
        _capacity_table(data)
    if not data["fits"]:
        err.print(f"[red]error:[/] {data['error']}", highlight=False)
        raise typer.Exit(EXIT_BAD_INPUT)


def _capacity_table(data: dict[str, Any]) -> None:
    inputs = data["inputs"]
    table = Table(
        title=f"{inputs['model']['name']} on {inputs['gpus']} x {inputs['accelerator']['label']}",
        caption="ceilings from the roofline model (MISSION.md formulas); see --json for sources",
    )
    table.add_column("quantity", justify="left")
    table.add_column("value", justify="right")

    def gb(value: float | int | None) -> str:
        return "-" if value is None else f"{value / 1e9:,.2f} GB"

    rows = [
        ("KV bytes per token", f"{data['kv_bytes_per_token']:,}"),
        ("recurrent state per request", f"{data['recurrent_state_bytes_per_request']:,} B"),
        ("weights", gb(data["weight_bytes"])),
        ("usable memory", gb(data["usable_bytes"])),
        ("KV budget", gb(data["kv_budget_bytes"])),
        ("KV blocks", f"{data['num_blocks']:,} x {inputs['block_size']} tokens"),
        ("KV capacity (tokens)", f"{data['kv_capacity_tokens']:,}"),
        (
            f"concurrent requests at {inputs['context_tokens']:,} tokens",
            f"{data['max_concurrent_requests']:,}",
        ),
    ]
    if data["decode_ceiling_tokens_per_s"] is not None:
        rows += [
            (
                f"decode ceiling at batch {data['decode_batch']}",
                f"{data['decode_ceiling_tokens_per_s']:,.0f} tok/s",
            ),
            (
                "B* (KV traffic = weights)",
                "-" if data["b_star"] is None else f"{data['b_star']:,.1f}",
            ),
            (
                f"prefill of {inputs['context_tokens'] - inputs['cached_tokens']:,} new after"
                f" {inputs['cached_tokens']:,} cached",
                f"{data['prefill_ms']:,.1f} ms ({data['prefill']['bound']}-bound)",
            ),
        ]
    for name, value in rows:
        table.add_row(name, value)
    Console(file=sys.stdout).print(table)


def compare_command(
    logs: LogsArgument,
    model: ModelOption,
    gpu: GpuOption,
    gpus: GpusOption = 1,
    gpu_price: GpuPriceOption = None,
    target: Annotated[
        list[str] | None,
        typer.Option("--target", "-t", help="Hosted PROVIDER:MODEL to compare with (repeatable)."),
    ] = None,
    at: Annotated[
        str | None, typer.Option(help="Contracts in force on this date (YYYY-MM-DD).")
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
    as_json: JsonOption = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the charts as PNG.")] = None,
    html_file: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML report.")
    ] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Self-hosted vLLM (prefix caching) against hosted contracts for the same LOG.

    GPU-hours at the log's arrival rate and at full utilization, cost per million tokens,
    each hosted bill, break-even monthly volume and hit rate, a host-memory KV tier, and the
    hit rate at several KV capacities. Figures are roofline ceilings unless a vLLM
    measurement is used (the report's timing_source says which).
    """
    from cachecast.economics.compare import ComparisonError, compare
    from cachecast.economics.plots import write_html, write_png

    err = Console(stderr=True)
    price = _gpu_price(err, gpu_price)
    day = None
    if at is not None:
        try:
            day = dt.date.fromisoformat(at)
        except ValueError:
            _fail(err, f"--at {at!r} is not a date (YYYY-MM-DD)")
    _check_files(err, logs)
    deployment = _deployment(
        err, model, gpu, gpus, kv_dtype, weight_dtype, params, gpu_memory_utilization, block_size
    )
    measurement = None
    if measurement_id is not None:
        from cachecast.economics.measured import MeasurementError, load_measurement

        try:
            measurement = load_measurement(db.resolve_database_url(database_url), measurement_id)
        except MeasurementError as error:
            _fail(err, str(error), EXIT_BAD_INPUT)
    store = None
    targets = []
    if target:
        from cachecast.app.targets import parse_target
        from cachecast.contracts import ContractStore
        from cachecast.errors import BadInputError as TargetError

        try:
            targets = [parse_target(text) for text in target]
        except TargetError as error:
            _fail(err, str(error))
        url = db.resolve_database_url(database_url)
        if not db.is_current(url):
            _fail(
                err, f"the contract database at {url} is not migrated: run `cachecast db upgrade`"
            )
        store = ContractStore(url)
    host_bytes = None if host_memory_gib is None else int(host_memory_gib * 2**30)
    try:
        with progress_bar(err) as progress:
            progress.start("simulating", None)
            report = compare(
                logs,
                model=deployment.model,
                accelerator=deployment.accelerator,
                gpus=gpus,
                gpu_price=price,
                targets=targets,
                at=day,
                store=store,
                kv_dtype=kv_dtype,
                weight_dtype=weight_dtype,
                block_size=block_size,
                gpu_memory_utilization=deployment.gpu_memory_utilization,
                host_tier_bytes=host_bytes,
                max_utilization=max_utilization,
                state_checkpoint_tokens=state_checkpoint,
                measurement=measurement,
                tokenizer_model=tokenizer,
                progress=progress.advance,
            )
    except (ComparisonError, ValueError) as error:  # also log errors of the tokenizer
        _fail(err, str(error), EXIT_BAD_INPUT)
    _print_log_errors(err, report.errors)
    rows = comparison_rows(report)
    if plot is not None:
        write_png(report, plot)
        err.print(f"wrote {plot}")
    if html_file is not None:
        write_html(report, html_file, rows)
        err.print(f"wrote {html_file}")
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        _comparison_table(report, rows)


def comparison_rows(report: ComparisonReport) -> list[list[str]]:
    """The summary table (header first): self-hosted lines, then every hosted target."""
    header = ["option", "hit rate", "GPU-h", "cost of log", "$/M input", "break-even req/month"]
    rows = [header]
    cost = report.self_hosted["cost"]
    full = report.self_hosted["full_utilization"]
    rows.append(
        [
            "self-hosted, fully used",
            f"{report.self_hosted['hit_rate']:.1%}",
            full["gpu_hours"],
            "-" if cost is None else f"${cost['full_utilization']}",
            "-" if cost is None else f"${cost['per_million_input_tokens_full_utilization']}",
            "",
        ]
    )
    at_rate = report.self_hosted["at_arrival_rate"]
    if at_rate is not None:
        priced = cost is not None and cost["at_arrival_rate"] is not None
        rows.append(
            [
                f"self-hosted at the log's rate ({at_rate['replicas']} replica(s),"
                f" {at_rate['utilization']:.0%} busy)",
                f"{report.self_hosted['hit_rate']:.1%}",
                at_rate["gpu_hours"],
                f"${cost['at_arrival_rate']}" if priced and cost else "-",
                f"${cost['per_million_input_tokens_at_arrival_rate']}" if priced and cost else "-",
                "",
            ]
        )
    for line, versus in zip(report.hosted, report.versus, strict=True):
        even = versus.get("break_even_monthly") or {}
        requests = even.get("requests")
        rows.append(
            [
                f"{line.provider}:{line.model} @{line.contract.get('effective_from')}",
                f"{line.hit_rate:.1%}",
                "",
                f"${line.total}",
                f"${versus['hosted_per_million_input_tokens']}",
                "never"
                if even and requests is None
                else ("-" if requests is None else f"{requests:,.0f}"),
            ]
        )
    return rows


def _comparison_table(report: ComparisonReport, rows: list[list[str]]) -> None:
    out = Console(file=sys.stdout)
    header, *body = rows
    table = Table(
        title=f"{report.deployment.model.name} on {report.deployment.gpus} x"
        f" {report.deployment.accelerator.label}: {report.log['requests']:,} requests,"
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
        f"host-memory tier ({'unbounded' if tier['unbounded'] else tier['host_bytes']}):"
        f" hit rate {tier['hit_rate_with_tier']:.1%}, fetch pays for"
        f" {tier['requests_where_fetch_pays']:,} requests, saves {tier['gpu_hours_saved']} GPU-h"
    )
    if report.gpu_price is None:
        out.print("no --gpu-price: self-hosted costs are given in GPU-hours only")


ROUTING_CHOICES = "round-robin, least-loaded, session-sticky, prefix-hash, cache-aware or all"


def fleet_command(
    logs: LogsArgument,
    model: ModelOption,
    gpu: GpuOption,
    replicas: Annotated[
        int, typer.Option("--replicas", min=1, help="vLLM replicas, each with its own KV pool.")
    ],
    routing: Annotated[
        list[str] | None,
        typer.Option("--routing", help=f"Routing policy (repeatable): {ROUTING_CHOICES}."),
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
    as_json: JsonOption = False,
) -> None:
    """K self-hosted vLLM replicas under each routing policy: hit rate, load, TTFT, cost.

    Each replica's KV capacity is the model's on --gpus x --gpu (as in compare). Per policy:
    hit rate, computed prompt tokens per replica and their imbalance, TTFT (M/G/1 wait +
    roofline prefill, mean and p90), GPU-hours of the fleet (the busiest replica bounds the
    makespan) and, with --gpu-price, their cost. Default routing: all.
    """
    from cachecast.economics.compare import ComparisonError
    from cachecast.economics.fleet import fleet, format_table_rows
    from cachecast.simulator.routing import Routing

    err = Console(stderr=True)
    names = routing or ["all"]
    routings: list[Routing] = []
    for name in names:
        if name == "all":
            routings.extend(r for r in Routing if r not in routings)
            continue
        try:
            chosen = Routing(name)
        except ValueError:
            _fail(err, f"--routing {name!r} is not one of {ROUTING_CHOICES}")
        if chosen not in routings:
            routings.append(chosen)
    if window <= 0:
        _fail(err, f"--window must be positive, got {window}")
    price = _gpu_price(err, gpu_price)
    _check_files(err, logs)
    deployment = _deployment(
        err, model, gpu, gpus, kv_dtype, weight_dtype, params, gpu_memory_utilization, block_size
    )
    try:
        with progress_bar(err) as progress:
            progress.start("routing", None)
            result = fleet(
                logs,
                model=deployment.model,
                accelerator=deployment.accelerator,
                replicas=replicas,
                routings=routings,
                gpus=gpus,
                gpu_price=price,
                kv_dtype=kv_dtype,
                weight_dtype=weight_dtype,
                block_size=block_size,
                gpu_memory_utilization=deployment.gpu_memory_utilization,
                window_seconds=window,
                tokenizer_model=tokenizer,
                progress=progress.advance,
            )
    except (ComparisonError, ValueError) as error:  # also log errors of the tokenizer
        _fail(err, str(error), EXIT_BAD_INPUT)
    _print_log_errors(err, result.errors)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2))
        return
    out = Console(file=sys.stdout)
    header, *body = format_table_rows(result)
    table = Table(
        title=f"{replicas} x {deployment.model.name} on {gpus} x {deployment.accelerator.label}:"
        f" {result.log['requests']:,} requests, KV {result.capacity.kv_capacity_tokens:,}"
        " tokens per replica",
        caption="roofline ceilings; TTFT = M/G/1 mean wait + prefill; see --json for definitions",
    )
    for column in header:
        table.add_column(column, justify="left" if column == "routing" else "right")
    for row in body:
        table.add_row(*row)
    out.print(table)
    if price is None:
        out.print("no --gpu-price: costs are given in GPU-hours only")
