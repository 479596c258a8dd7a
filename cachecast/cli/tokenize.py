"""Commands of ``cachecast.tokenizers``, registered on the root ``cachecast`` app."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from cachecast.cli.common import command
from cachecast.tokenizers.records import LogError, count_lines, read_log
from cachecast.tokenizers.registry import UnknownModelError, get_tokenizer
from cachecast.tokenizers.types import TokenizedRequest

EXIT_BAD_INPUT = 2


def register(app: typer.Typer) -> None:
    """Add this subpackage's commands to the root app."""
    app.command("tokenize")(command(tokenize))


def tokenize(
    log: Annotated[Path, typer.Argument(help="JSONL prompt log.", exists=True, dir_okay=False)],
    model: Annotated[
        str | None, typer.Option("--model", help="Tokenize as this model (overrides the log's).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per request.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Stop at the first bad line.")] = False,
) -> None:
    """Print each request's token total, exactness, tokenizer and segment spans."""
    if model is not None:
        try:
            get_tokenizer(model)
        except UnknownModelError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from exc
    errors: list[LogError] = []
    requests = 0
    tokens = 0
    progress = _progress(log)
    try:
        task = progress.add_task("tokenizing", total=count_lines([log])) if progress else None
        for request in read_log(log, model=model, strict=strict, errors=errors):
            requests += 1
            tokens += request.input_tokens
            if as_json:
                sys.stdout.write(json.dumps(_as_json(request)) + "\n")
            else:
                _print_text(request)
            if progress is not None and task is not None:
                progress.update(task, completed=request.line)
    except LogError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from exc
    finally:
        if progress is not None:
            progress.stop()
    for error in errors:
        typer.echo(f"skipped: {error}", err=True)
    typer.echo(
        f"{requests} requests, {tokens} input tokens; {len(errors)} bad lines skipped", err=True
    )


def _progress(log: Path) -> Progress | None:
    """A progress bar on stderr when it is a terminal (never in pipes or tests)."""
    if not sys.stderr.isatty():
        return None
    progress = Progress(console=Console(stderr=True), transient=True)
    progress.start()
    return progress


def _as_json(request: TokenizedRequest) -> dict[str, object]:
    return {
        "request_id": request.request_id,
        "line": request.line,
        "timestamp": request.timestamp,
        "scope": request.scope,
        "provider": request.provider,
        "model": request.model,
        "input_tokens": request.input_tokens,
        "output_tokens": request.output_tokens,
        "exact": request.exact,
        "tokenizer": request.tokenizer,
        "segments": [
            {"kind": s.kind, "label": s.label, "start": s.start, "end": s.end}
            for s in request.segments
        ],
        "breakpoints": [{"offset": b.offset, "ttl": b.ttl} for b in request.breakpoints],
        "block_size": request.block_size,
        "blocks": len(request.block_keys) if request.block_keys is not None else None,
    }


def _print_text(request: TokenizedRequest) -> None:
    exact = "exact" if request.exact else "approx"
    typer.echo(f"{request.request_id}\t{request.input_tokens} tokens\t{exact}\t{request.tokenizer}")
    for segment in request.segments:
        typer.echo(f"  [{segment.start}, {segment.end})\t{segment.kind}\t{segment.label}")
    for breakpoint in request.breakpoints:
        typer.echo(f"  breakpoint at {breakpoint.offset}\tttl={breakpoint.ttl or 'default'}")
