"""``cachecast tokenize``: each request's token count, exactness, tokenizer and segment spans.

A thin adapter over :func:`cachecast.usecases.tokenize.tokenize`: requests are printed as they
are read (``--json``: one JSON object per line, the dump of ``RequestTokens``), skipped lines
and the totals go to stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cachecast.cli.common import FormatOption, ResultsOption, command, progress_bar, stderr

if TYPE_CHECKING:
    from cachecast.usecases.tokenize import RequestTokens


def register(app: typer.Typer) -> None:
    """Add ``tokenize`` to the root app."""
    app.command("tokenize")(command(tokenize_command))


def tokenize_command(
    log: Annotated[Path, typer.Argument(help="JSONL prompt log.")],
    model: Annotated[
        str | None, typer.Option("--model", help="Tokenize as this model (overrides the log's).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per request.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Stop at the first bad line.")] = False,
    log_format: FormatOption = None,
    results: ResultsOption = None,
) -> None:
    """Print each request's token total, exactness, tokenizer and segment spans."""
    from cachecast.passes.log_input import LogInput
    from cachecast.usecases.tokenize import TokenizeRequest, tokenize

    request = TokenizeRequest(
        log=LogInput.of_paths(
            [log],
            format=log_format,
            results=results,
            on_bad_record="stop" if strict else "skip",
        ),
        model=model,
    )
    with progress_bar() as progress:
        report = tokenize(
            request, progress=progress, on_request=_print_json if as_json else _print_text
        )
    for issue in report.errors:
        stderr.print(f"skipped: {issue.one_line()}", markup=False)
    stderr.print(
        f"{report.requests} requests, {report.input_tokens} input tokens;"
        f" {report.skipped_lines} bad lines skipped",
        markup=False,
    )


def _print_json(request: RequestTokens) -> None:
    typer.echo(json.dumps(request.model_dump(mode="json")))


def _print_text(request: RequestTokens) -> None:
    exact = "exact" if request.exact else "approx"
    typer.echo(f"{request.request_id}\t{request.input_tokens} tokens\t{exact}\t{request.tokenizer}")
    for segment in request.segments:
        typer.echo(f"  [{segment.start}, {segment.end})\t{segment.kind}\t{segment.label}")
    for breakpoint in request.breakpoints:
        typer.echo(f"  breakpoint at {breakpoint.offset}\tttl={breakpoint.ttl or 'default'}")
