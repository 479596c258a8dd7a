"""``cachecast price``: one request's usage priced under a dated contract, without a log.

A thin adapter over :func:`cachecast.usecases.price.price`: options in, report out (a table
for people, ``--json`` = the report's model dump, exact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.table import Table

from cachecast.cli import common
from cachecast.cli.common import command, contract_store, parse_day
from cachecast.cli.output import count, money, stdout_console

if TYPE_CHECKING:
    from cachecast.usecases.price import PriceReport


# PriceRequest's bound (usecases.price.MAX_TOKENS), repeated so that `--help` does not
# import the use case; the request validates it again.
MAX_TOKENS = 10**12


def _tokens(flag: str, help_text: str) -> Any:
    """A token-count option: N, from 0 to the use case's bound."""
    return typer.Option(flag, min=0, max=MAX_TOKENS, metavar="N", help=help_text)


def register(app: typer.Typer) -> None:
    """Add ``price`` to the root app."""
    app.command("price")(command(price_command))


def price_command(
    target: Annotated[
        str, typer.Argument(metavar="PROVIDER:MODEL", help="e.g. anthropic:claude-sonnet-4-5")
    ],
    input_tokens: Annotated[
        int, _tokens("--input", "Prompt tokens neither read from nor written to the cache.")
    ] = 0,
    cache_read: Annotated[int, _tokens("--cache-read", "Tokens read.")] = 0,
    cache_write: Annotated[
        int, _tokens("--cache-write", "Tokens written with the contract's default TTL.")
    ] = 0,
    cache_write_5m: Annotated[int, _tokens("--cache-write-5m", "Tokens written for 5 min.")] = 0,
    cache_write_1h: Annotated[int, _tokens("--cache-write-1h", "Tokens written for 1 h.")] = 0,
    output_tokens: Annotated[int, _tokens("--output", "Output tokens.")] = 0,
    at: Annotated[
        str | None,
        typer.Option(metavar="DATE", help="Contracts in force on this date (default: today)."),
    ] = None,
    as_json: common.JsonOption = False,
    database_url: common.DatabaseUrlOption = None,
) -> None:
    """Price one request's usage under PROVIDER:MODEL's contract, without a log.

    The same bill as `estimate` (long-context tiers, TTL write multipliers); the prompt is
    --input + --cache-read + every --cache-write*.
    """
    from cachecast.usecases.price import PriceRequest, price

    by_ttl = {name: n for name, n in (("5m", cache_write_5m), ("1h", cache_write_1h)) if n}
    request = PriceRequest(
        target=target,
        at=parse_day(at),
        input_tokens=input_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_by_ttl=by_ttl,
        output_tokens=output_tokens,
    )
    report = price(request, contract_store(database_url))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_price(report)


def print_price(report: PriceReport) -> None:
    out = stdout_console()
    out.print(
        f"{report.target} on {report.at.isoformat()}: {count(report.prompt_tokens)} prompt"
        f" tokens, {count(report.output_tokens)} output",
        soft_wrap=True,
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("part", no_wrap=True)
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    cost = report.cost
    uncached = report.prompt_tokens - report.cache_read_tokens
    uncached -= sum(report.cache_write_by_ttl.values())
    table.add_row("input", count(uncached), money(cost.input))
    table.add_row("cache read", count(report.cache_read_tokens), money(cost.cache_read))
    for name, tokens in report.cache_write_by_ttl.items():
        table.add_row(f"cache write {name}", count(tokens), "")
    table.add_row(
        "cache writes", count(sum(report.cache_write_by_ttl.values())), money(cost.cache_write)
    )
    table.add_row("output", count(report.output_tokens), money(cost.output))
    if cost.storage:
        table.add_row("storage", "", money(cost.storage))
    table.add_row("total", "", money(cost.total), style="bold")
    out.print(table)
    out.print(
        f"without the cache {money(report.cost_without_cache)}; saved {money(report.savings)}",
        soft_wrap=True,
    )
    tier = report.long_context_tier_above
    if tier is not None:
        out.print(f"long-context prices: the prompt is above {count(tier)} tokens", soft_wrap=True)
    contract = report.contract
    out.print(
        f"contract {contract.described()} (verified {contract.verified_on.isoformat()},"
        f" {contract.source}); --json is exact",
        soft_wrap=True,
    )
