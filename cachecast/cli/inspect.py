"""``cachecast inspect``: what a log holds, per file (the command to run first on a new file).

A thin adapter over :func:`cachecast.usecases.inspect.inspect`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from cachecast.cli.common import (
    ClientOption,
    DefaultModelOption,
    FormatOption,
    ResultsOption,
    command,
    expand_globs,
    stderr,
)

if TYPE_CHECKING:
    from cachecast.usecases.inspect import FileInspection


def register(app: typer.Typer) -> None:
    """Add ``inspect`` to the root app."""
    app.command("inspect")(command(inspect_command))


def inspect_command(
    logs: Annotated[list[Path], typer.Argument(help="Log file(s) of any supported format.")],
    log_format: FormatOption = None,
    results: ResultsOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    client: ClientOption = None,
    model: DefaultModelOption = None,
) -> None:
    """Per file: the detected format, billed requests, models and providers, the time span,
    observed usage totals, and every line that could not be read (file:line: field: reason).
    """
    from cachecast.passes.log_input import LogInput
    from cachecast.usecases.inspect import InspectRequest, inspect

    files = LogInput.of_paths(expand_globs(logs), format=log_format, results=results).files
    report = inspect(InspectRequest(files=files, client=client, default_model=model))
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
        return
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True, markup=False)
    for file in report.files:
        _print_file(out, file)
    for file in report.files:
        for error in file.errors:
            stderr.print(error)
        if file.error_count > len(file.errors):
            stderr.print(f"{file.path}: ... and {file.error_count - len(file.errors)} more")


def _print_file(out: Console, file: FileInspection) -> None:
    paired = f" + {file.results_path}" if file.results_path else ""
    out.print(
        f"[bold]{escape(str(file.path))}[/bold]{escape(paired)}: format {file.format}", markup=True
    )
    if file.client is not None:
        versions = ", ".join(file.client.versions) or "not stated"
        out.print(
            f"  client        {file.client.title} (versions {versions}; {file.client.source})"
        )
    if file.turns or file.runs:
        # Headless output states some usage per turn or per run, each summing requests it
        # does not count (docs/usage-report.md): those are no request count.
        units = [f"requests {file.requests:,}"]
        if file.turns:
            units.append(f"turns {file.turns:,} (codex exec --json; requests in them: not known)")
        if file.runs:
            units.append(f"runs {file.runs:,} (claude -p json model totals; requests: not known)")
        shown = ", ".join(units)
        with_usage = file.requests_with_usage
        out.print(f"  usage units   {shown} ({with_usage:,} with usage)")
    else:
        out.print(f"  requests      {file.requests:,} ({file.requests_with_usage:,} with usage)")
    if file.models:
        out.print("  models        " + ", ".join(f"{m} ({n:,})" for m, n in file.models.items()))
    if file.providers:
        shown = ", ".join(f"{p} ({n:,})" for p, n in file.providers.items())
        out.print(f"  providers     {shown}")
    if file.first_timestamp is None:
        out.print("  time span     unknown")
    elif file.last_timestamp is not None:
        out.print(
            f"  time span     {file.first_timestamp.isoformat()} .."
            f" {file.last_timestamp.isoformat()}"
        )
    observed = file.observed
    out.print(
        f"  observed      input {observed.input_tokens:,} (incl. cached), cache read"
        f" {observed.cache_read_tokens:,}, cache write {observed.cache_write_tokens:,},"
        f" output {observed.output_tokens:,}"
        + (f", reported cost ${observed.cost}" if observed.cost is not None else "")
    )
    if not file.prompt_complete:
        out.print(
            f"  prompts       {file.requests_prompt_incomplete:,} request(s) without their whole"
            " prompt (a transcript omits the system prompt and tools; a recording or export may"
            " hold a shortened body): their observed usage is exact, their prompts are not"
        )
    if file.skipped:
        out.print("  not requests  " + ", ".join(f"{r} ({n:,})" for r, n in file.skipped.items()))
    if file.error_count:
        out.print(f"  bad lines     {file.error_count:,} (listed on stderr)")
    for hint in file.hints:
        out.print(f"  hint          {hint}")
