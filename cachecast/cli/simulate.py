"""``cachecast simulate``: cache-hit statistics of a log under one cache policy (no bills).

A thin adapter over :func:`cachecast.usecases.simulate.simulate`: options in, report out (plain
text, or ``--json`` = the report's model dump).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cachecast.cli import common
from cachecast.cli.common import command, contract_store, log_of, parse_day, progress_bar, stderr
from cachecast.simulator.types import PolicyKind, Routing

if TYPE_CHECKING:
    from cachecast.usecases.simulate import FleetSimulationReport, SimulationReport


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the root app."""
    app.command("simulate")(command(simulate_command))


def simulate_command(
    log: Annotated[Path, typer.Argument(help="request log (JSONL, Mooncake trace, ...)")],
    policy: Annotated[PolicyKind, typer.Option(help="cache model")] = PolicyKind.vllm,
    target: Annotated[
        str | None,
        typer.Option(
            help="PROVIDER:MODEL whose contract parameterises a provider policy (and whose"
            " model the log is tokenized as)"
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            metavar="DATE", help="the target's contract in force on this date (YYYY-MM-DD)"
        ),
    ] = None,
    block_size: Annotated[
        int | None, typer.Option(help="tokens per block (vllm default 16)", min=1)
    ] = None,
    capacity_blocks: Annotated[
        int | None, typer.Option(help="cache size in blocks (default: unbounded)", min=1)
    ] = None,
    ttl_seconds: Annotated[
        int | None,
        typer.Option("--ttl", help="entry lifetime in seconds (provider policies)", min=1),
    ] = None,
    min_tokens: Annotated[
        int | None, typer.Option(help="shortest cacheable prefix (default 1024)", min=0)
    ] = None,
    increment: Annotated[
        int | None, typer.Option(help="hit granularity past the minimum", min=1)
    ] = None,
    model: common.DefaultModelOption = None,
    provider: common.DefaultProviderOption = None,
    log_format: common.FormatOption = None,
    results: common.ResultsOption = None,
    as_json: common.JsonOption = False,
    strict: common.StrictOption = False,
    replicas: Annotated[
        int | None, typer.Option(help="vLLM replicas, each with its own pool", min=1)
    ] = None,
    routing: Annotated[
        Routing | None, typer.Option(help="how requests are routed to the replicas")
    ] = None,
    database_url: common.DatabaseUrlOption = None,
) -> None:
    """Replay LOG through a cache model and print hit statistics (no bills)."""
    options = dict(locals())  # the policy's options, named as the request's fields
    from cachecast.usecases.requests import request_of
    from cachecast.usecases.simulate import FleetSimulationReport, SimulateRequest, simulate

    log_input = log_of(
        [log],
        log_format=log_format,
        results=results,
        model=model,
        provider=provider,
        strict=strict,
    )
    request = request_of(SimulateRequest, options, log=log_input, at=parse_day(at))
    store = contract_store(database_url) if target is not None else None
    with progress_bar() as progress:
        report = simulate(request, store, progress=progress)
    for issue in report.errors:
        stderr.print(f"skipped: {issue.one_line()}", markup=False)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    elif isinstance(report, FleetSimulationReport):
        typer.echo(fleet_text(report))
    else:
        typer.echo(statistics_text(report))


def _options_text(report: SimulationReport | FleetSimulationReport) -> str:
    policy = report.policy
    given = policy.model_dump(exclude={"kind", "contract"}, exclude_none=True)
    text = f"{policy.kind.value} {given}" if given else policy.kind.value
    if policy.contract is not None:
        text += f" under {policy.contract.described()} ({policy.contract.source})"
    return text


def statistics_text(report: SimulationReport) -> str:
    lines = [
        f"policy            {_options_text(report)}",
        f"requests          {report.requests:,}",
        f"input tokens      {report.input_tokens:,}",
        f"hit tokens        {report.hit_tokens:,}",
        f"hit rate          {report.hit_rate:.4f}  ({report.hit_rate_definition})",
        f"written tokens    {report.written_tokens:,}",
        f"requests with hit {report.requests_with_hit:,}",
    ]
    if report.skipped_lines:
        lines.append(f"skipped lines     {report.skipped_lines} (listed on stderr)")
    return "\n".join(lines)


def fleet_text(report: FleetSimulationReport) -> str:
    """Totals, then one line per replica."""
    options = report.options.model_dump(exclude_none=True)
    lines = [
        f"policy            {_options_text(report)}",
        f"routing           {report.routing.value} {options}",
        f"replicas          {report.replica_count}",
        f"input tokens      {report.input_tokens:,}",
        f"hit tokens        {report.hit_tokens:,}",
        f"hit rate          {report.hit_rate:.4f}  ({report.hit_rate_definition})",
        f"imbalance         {report.imbalance:.3f}  ({report.imbalance_definition})",
        "replica  requests  input tokens  hit tokens  computed tokens  hit rate",
    ]
    for index, replica in enumerate(report.replicas):
        lines.append(
            f"{index:>7}  {replica.requests:>8,}  {replica.input_tokens:>12,}"
            f"  {replica.hit_tokens:>10,}  {replica.computed_tokens:>15,}  {replica.hit_rate:>8.4f}"
        )
    if report.skipped_lines:
        lines.append(f"skipped lines     {report.skipped_lines} (listed on stderr)")
    return "\n".join(lines)
