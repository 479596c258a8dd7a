"""``cachecast simulate``: cache-hit statistics of a log under one cache policy (no bills)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from cachecast.cli.common import command
from cachecast.simulator.ordering import simulate
from cachecast.simulator.policies import build_policy
from cachecast.simulator.routing import Routing
from cachecast.simulator.types import RequestUsage

HIT_RATE_DEFINITION = (
    "hit_tokens / input_tokens summed over the whole log, cold start (the cache is empty"
    " before the first request; no warm-up is excluded)"
)


class PolicyKind(StrEnum):
    vllm = "vllm"
    radix = "radix"
    automatic = "automatic"
    explicit = "explicit"


@dataclass(slots=True)
class HitStatistics:
    """Totals of a replay; ``hit_rate`` is token-weighted over the whole log."""

    requests: int = 0
    input_tokens: int = 0
    hit_tokens: int = 0
    written_tokens: int = 0
    uncached_tokens: int = 0
    requests_with_hit: int = 0

    def add(self, usage: RequestUsage) -> None:
        self.requests += 1
        self.input_tokens += usage.input_tokens
        self.hit_tokens += usage.cache_read_tokens
        self.written_tokens += usage.cache_write_total
        self.uncached_tokens += usage.uncached_input_tokens
        self.requests_with_hit += usage.cache_read_tokens > 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0

    def to_json(self, policy: dict[str, Any]) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "hit_tokens": self.hit_tokens,
            "hit_rate": self.hit_rate,
            "hit_rate_definition": HIT_RATE_DEFINITION,
            "written_tokens": self.written_tokens,
            "uncached_tokens": self.uncached_tokens,
            "requests_with_hit": self.requests_with_hit,
            "policy": policy,
        }


def _with_progress(usages: Iterator[RequestUsage], label: str) -> Iterator[RequestUsage]:
    """Show a live request counter on a terminal; pass through silently otherwise."""
    if not sys.stderr.isatty():
        yield from usages
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,} requests"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=None)
        for count, usage in enumerate(usages, 1):
            yield usage
            if count % 256 == 0:
                progress.update(task, completed=count)


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the root app."""

    @app.command("simulate")
    @command
    def simulate_command(
        log: Annotated[Path, typer.Argument(help="request log (JSONL, Mooncake trace, ...)")],
        policy: Annotated[PolicyKind, typer.Option(help="cache model")] = PolicyKind.vllm,
        block_size: Annotated[
            int | None, typer.Option(help="tokens per block (vllm default 16)", min=1)
        ] = None,
        capacity_blocks: Annotated[
            int | None, typer.Option(help="cache size in blocks (default: unbounded)", min=2)
        ] = None,
        ttl: Annotated[
            int | None, typer.Option(help="entry lifetime in seconds (provider policies)", min=1)
        ] = None,
        min_tokens: Annotated[
            int | None, typer.Option(help="shortest cacheable prefix (default 1024)", min=0)
        ] = None,
        increment: Annotated[
            int | None, typer.Option(help="hit granularity past the minimum", min=1)
        ] = None,
        model: Annotated[str | None, typer.Option(help="model of records that name none")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
        replicas: Annotated[
            int | None, typer.Option(help="vLLM replicas, each with its own pool", min=1)
        ] = None,
        routing: Annotated[
            Routing | None, typer.Option(help="how requests are routed to the replicas")
        ] = None,
    ) -> None:
        """Replay LOG through a cache model and print hit statistics (no bills)."""
        from cachecast.tokenizers import read_log

        options: dict[str, Any] = {}
        for name, value in (
            ("block_size", block_size),
            ("capacity_blocks", capacity_blocks),
            ("ttl_seconds", ttl),
            ("min_tokens", min_tokens),
            ("increment", increment),
        ):
            if value is not None:
                options[name] = value
        if policy in (PolicyKind.vllm, PolicyKind.radix):
            ignored = sorted({"ttl_seconds", "min_tokens", "increment"} & set(options))
            if ignored:
                raise typer.BadParameter(f"--policy {policy.value} does not use {ignored}")
        if replicas is not None or routing is not None:
            _simulate_fleet(log, policy, options, model, replicas, routing, as_json)
            return
        cache_policy = build_policy(policy.value, None, **options)
        errors: list[Any] = []
        statistics = HitStatistics()
        try:
            usages = simulate(read_log(log, model=model, errors=errors), cache_policy)
            for usage in _with_progress(usages, f"simulate {policy.value}"):
                statistics.add(usage)
        except (ValueError, OSError) as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(2) from error
        for bad_line in errors:
            typer.echo(f"skipped: {bad_line}", err=True)
        description = {"kind": policy.value, **options}
        if as_json:
            typer.echo(json.dumps(statistics.to_json(description), indent=2))
            return
        typer.echo(f"policy            {policy.value} {options or ''}".rstrip())
        typer.echo(f"requests          {statistics.requests:,}")
        typer.echo(f"input tokens      {statistics.input_tokens:,}")
        typer.echo(f"hit tokens        {statistics.hit_tokens:,}")
        typer.echo(f"hit rate          {statistics.hit_rate:.4f}  ({HIT_RATE_DEFINITION})")
        typer.echo(f"written tokens    {statistics.written_tokens:,}")
        typer.echo(f"requests with hit {statistics.requests_with_hit:,}")
        if errors:
            typer.echo(f"skipped lines     {len(errors)} (listed on stderr)")


def _simulate_fleet(
    log: Path,
    policy: PolicyKind,
    options: dict[str, Any],
    model: str | None,
    replicas: int | None,
    routing: Routing | None,
    as_json: bool,
) -> None:
    """``--replicas K --routing POLICY``: K vLLM pools behind a router (see ``routing``)."""
    from cachecast.simulator.policies import VllmPrefixCache
    from cachecast.simulator.routing import format_report, simulate_fleet
    from cachecast.tokenizers import read_log

    if policy is not PolicyKind.vllm or replicas is None or routing is None:
        raise typer.BadParameter("--replicas and --routing go together, with --policy vllm")
    errors: list[Any] = []

    def make_replica() -> VllmPrefixCache:
        replica = build_policy("vllm", None, **options)
        assert isinstance(replica, VllmPrefixCache)
        return replica

    try:
        report = simulate_fleet(
            read_log(log, model=model, errors=errors), make_replica, replicas, routing
        )
    except (ValueError, OSError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from error
    for bad_line in errors:
        typer.echo(f"skipped: {bad_line}", err=True)
    data = report.to_json() | {"policy": {"kind": policy.value, **options}}
    typer.echo(json.dumps(data, indent=2) if as_json else format_report(report))
