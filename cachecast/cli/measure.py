"""``cachecast measure``: replay a log on a real vLLM engine and report hits and TTFT.

A thin adapter over :func:`cachecast.usecases.measure.measure`: options in, report out (a rich
table, or ``--json``: the report's model dump).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cachecast.cli.common import DatabaseUrlOption, command, progress_bar, stderr
from cachecast.gpu_backend.types import EngineKind

if TYPE_CHECKING:
    from cachecast.usecases.measure import MeasureReport


def register(app: typer.Typer) -> None:
    """Add ``measure`` to the root app."""
    app.command("measure")(command(measure_command))


def measure_command(
    log: Annotated[
        Path,
        typer.Argument(
            help="Token-id log ({'tokens': [...]} per line) or any log cachecast reads.",
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
    database_url: DatabaseUrlOption = None,
) -> None:
    """Replay LOG on a real vLLM engine; measure cached tokens, hit rate, TTFT and tokens/s."""
    from cachecast.core import db

    options = dict(locals())  # every option named as the request's field it sets
    from cachecast.passes.log_input import LogInput
    from cachecast.usecases.measure import MeasureRequest, measure
    from cachecast.usecases.requests import request_of

    request = request_of(MeasureRequest, options, log=LogInput.of_paths([log]))
    store_url = db.resolve_database_url(database_url) if store else None
    with progress_bar(stderr) as progress:
        report = measure(request, store_url=store_url, progress=progress)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        _render(report)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def _render(report: MeasureReport) -> None:
    out = Console(markup=False)
    passport = report.passport
    out.print(
        f"[bold]{escape(passport.engine_kind)} vLLM {escape(passport.engine_version)}[/bold]"
        f"  model {escape(passport.model)}  device {escape(passport.device)}"
        f"  block {passport.block_size} x {passport.num_blocks} blocks",
        markup=True,
    )
    summary = Table(show_header=False)
    summary.add_row("requests", str(report.requests))
    summary.add_row("prompt tokens", str(report.prompt_tokens))
    summary.add_row("measured cached tokens", str(report.measured_cached_tokens))
    if report.simulator_policy is not None:
        summary.add_row("predicted cached tokens", str(report.predicted_cached_tokens))
        share = report.exact_match_share
        summary.add_row("exact-match share", "-" if share is None else f"{share:.1%}")
    summary.add_row("hit rate", f"{report.hit_rate:.2%}")
    for label, ttft in (
        ("all", report.ttft),
        ("cold", report.ttft_cold),
        ("warm", report.ttft_warm),
    ):
        summary.add_row(
            f"TTFT {label} p50/p90/p95/p99 ms (n={ttft.count})",
            f"{_ms(ttft.p50_s)} / {_ms(ttft.p90_s)} / {_ms(ttft.p95_s)} / {_ms(ttft.p99_s)}",
        )
    summary.add_row("input tokens/s", f"{report.input_tokens_per_s:.0f}")
    summary.add_row("output tokens/s", f"{report.output_tokens_per_s:.1f}")
    delta = report.engine_counters_delta
    summary.add_row(
        "engine counters (queries/hits)",
        Text(f"{delta.prefix_cache_queries} / {delta.prefix_cache_hits}")
        + (
            Text("")
            if delta.agree_with_requests
            else Text("  (disagree with per-request figures)", style="yellow")
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
