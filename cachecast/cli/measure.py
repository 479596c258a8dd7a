"""``cachecast measure``: replay a log on a real vLLM engine and report hits and TTFT."""

from __future__ import annotations

import json
import os
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cachecast import db
from cachecast.cli.common import command, database_url_option, progress_bar
from cachecast.gpu_backend.engine.backend import EngineBackend
from cachecast.gpu_backend.engine.report import MeasurementReport
from cachecast.gpu_backend.engine.types import EngineError, ReplayOptions

console = Console(stderr=True)


class EngineKind(StrEnum):
    offline = "offline"
    http = "http"


def register(app: typer.Typer) -> None:
    """Add ``measure`` to the root app."""
    app.command("measure")(command(measure))


def measure(
    log: Annotated[
        Path,
        typer.Argument(
            help="Token-id log ({'tokens': [...]} per line) or any log cachecast reads.",
            exists=True,
            dir_okay=False,
        ),
    ],
    engine: Annotated[
        EngineKind,
        typer.Option("--engine", help="offline: vllm.LLM in this process; http: a vLLM server."),
    ] = EngineKind.offline,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Model path or name (offline: required; http: default the first served).",
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option("--url", help="Base URL of a vLLM OpenAI-compatible server (http)."),
    ] = None,
    compare_simulator: Annotated[
        bool,
        typer.Option(
            "--compare-simulator/--no-compare-simulator",
            help="Also run the simulator's vllm policy with the engine's geometry.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the report as JSON on stdout.")
    ] = False,
    block_size: Annotated[
        int | None,
        typer.Option(
            "--block-size", help="Offline: KV block size (a multiple of 32 on vLLM's CPU build)."
        ),
    ] = None,
    kv_cache_bytes: Annotated[
        int | None, typer.Option("--kv-cache-bytes", help="Offline: KV cache memory in bytes.")
    ] = None,
    num_blocks: Annotated[
        int | None, typer.Option("--num-blocks", help="Offline: exact number of KV blocks.")
    ] = None,
    max_model_len: Annotated[
        int | None, typer.Option("--max-model-len", help="Offline: longest sequence.")
    ] = None,
    dtype: Annotated[str, typer.Option("--dtype", help="Offline: weight dtype.")] = "auto",
    enforce_eager: Annotated[
        bool, typer.Option("--enforce-eager", help="Offline: no graph capture/compilation.")
    ] = False,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            min=1,
            help="Requests in flight at once (1 = exact comparison with the simulator).",
        ),
    ] = 1,
    arrival_scale: Annotated[
        float | None,
        typer.Option(
            "--arrival-scale",
            min=0.0,
            help="Follow the log's inter-arrival times times this factor.",
        ),
    ] = None,
    warmup: Annotated[
        int, typer.Option("--warmup", min=0, help="Warm-up requests before the measured run.")
    ] = 2,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=1, help="Tokens generated per request.")
    ] = 1,
    device: Annotated[
        str | None, typer.Option("--device", help="Http: the server's device, for the passport.")
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", envvar="CACHECAST_ENGINE_API_KEY", help="Http: bearer token."),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Replay only the first N requests.")
    ] = None,
    store: Annotated[
        bool, typer.Option("--store/--no-store", help="Store the passport row in the database.")
    ] = True,
    database_url: Annotated[str | None, database_url_option("SQLAlchemy URL.")] = None,
) -> None:
    """Replay LOG on a real vLLM engine; measure cached tokens, hit rate, TTFT and tokens/s."""
    from cachecast.gpu_backend.engine.passport import DatabaseNotMigratedError, store_report
    from cachecast.gpu_backend.engine.replay import LogFormatError, load_log, measure_layout

    try:
        requests = load_log(log, model=model)[:limit]
    except ValueError as error:  # LogFormatError, or the general log reader's LogError
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from error
    options = ReplayOptions(
        concurrency=concurrency,
        arrival_scale=arrival_scale,
        warmup_requests=warmup,
        max_tokens=max_tokens,
    )
    try:
        backend = _backend(
            engine,
            model,
            url,
            block_size,
            kv_cache_bytes,
            num_blocks,
            max_model_len,
            dtype,
            enforce_eager,
            device,
            api_key,
        )
        with progress_bar(console) as progress:
            progress.start("replaying", len(requests))
            report = measure_layout(
                requests,
                backend,
                options=options,
                compare_simulator=compare_simulator,
                source=str(log),
                progress=progress.advance,
            )
    except LogFormatError as error:  # a prompt the engine cannot take; nothing was sent
        console.print(f"[red]error:[/red] {error}")
        raise typer.Exit(2) from error
    except EngineError as error:
        console.print(f"[red]engine error:[/red] {error}")
        raise typer.Exit(1) from error
    if store:
        url_db = db.resolve_database_url(database_url)
        try:
            store_report(report, url_db)
        except DatabaseNotMigratedError as error:
            console.print(f"[red]error:[/red] {error}")
            raise typer.Exit(1) from error
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        _render(report)


def _backend(
    engine: EngineKind,
    model: str | None,
    url: str | None,
    block_size: int | None,
    kv_cache_bytes: int | None,
    num_blocks: int | None,
    max_model_len: int | None,
    dtype: str,
    enforce_eager: bool,
    device: str | None,
    api_key: str | None,
) -> EngineBackend:
    if engine is EngineKind.http:
        if url is None:
            raise typer.BadParameter("--engine http needs --url", param_hint="--url")
        from cachecast.gpu_backend.engine.http_backend import REMOTE_DEVICE, HttpBackend

        return HttpBackend(url, model=model, api_key=api_key, device=device or REMOTE_DEVICE)
    if model is None:
        raise typer.BadParameter("--engine offline needs --model", param_hint="--model")
    # One process is enough to drive the engine step by step and starts much faster; a
    # user who exported the variable keeps their choice.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    # vLLM logs to stdout by default, which would corrupt the --json report printed there.
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    from cachecast.gpu_backend.engine.offline import OfflineBackend

    return OfflineBackend.create(
        model,
        block_size=block_size,
        kv_cache_bytes=kv_cache_bytes,
        num_blocks=num_blocks,
        max_model_len=max_model_len,
        dtype=dtype,
        enforce_eager=enforce_eager,
    )


def _ms(value: float | int | None) -> str:
    return "-" if value is None else f"{float(value) * 1000:.1f}"


def _render(report: MeasurementReport) -> None:
    out = Console()
    engine = report.engine
    out.print(
        f"[bold]{engine.kind} vLLM {engine.engine_version}[/bold]  model {engine.model}"
        f"  device {engine.device}  block {engine.block_size} x {engine.num_blocks} blocks"
    )
    summary = Table(show_header=False)
    summary.add_row("requests", str(len(report.requests)))
    summary.add_row("prompt tokens", str(report.prompt_tokens))
    summary.add_row("measured cached tokens", str(report.measured_cached_tokens))
    if report.simulator_policy is not None:
        summary.add_row("predicted cached tokens", str(report.predicted_cached_tokens))
        share = report.exact_match_share
        summary.add_row("exact-match share", "-" if share is None else f"{share:.1%}")
    summary.add_row("hit rate", f"{report.hit_rate:.2%}")
    for label, warm in (("cold", False), ("warm", True)):
        ttft = report.ttft(warm=warm)
        summary.add_row(
            f"TTFT {label} p50/p90/p99 ms (n={ttft['count']})",
            f"{_ms(ttft['p50_s'])} / {_ms(ttft['p90_s'])} / {_ms(ttft['p99_s'])}",
        )
    summary.add_row("input tokens/s", f"{report.input_tokens_per_s:.0f}")
    summary.add_row("output tokens/s", f"{report.output_tokens_per_s:.1f}")
    delta = report.metrics_delta
    summary.add_row(
        "engine counters (queries/hits)",
        f"{delta.prefix_cache_queries} / {delta.prefix_cache_hits}"
        + (
            ""
            if report.counters_agree
            else "  [yellow](disagree with per-request figures)[/yellow]"
        ),
    )
    if report.stored_id is not None:
        summary.add_row("stored passport id", str(report.stored_id))
    out.print(summary)
    mismatches = report.mismatches
    if mismatches:
        table = Table("line", "request", "prompt", "measured", "predicted", title="mismatches")
        for row in mismatches[:20]:
            table.add_row(
                str(row.line),
                row.request_id,
                str(row.prompt_tokens),
                str(row.measured_cached_tokens),
                str(row.predicted_cached_tokens),
            )
        out.print(table)
