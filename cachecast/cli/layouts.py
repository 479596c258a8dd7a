"""``cachecast check`` (prompt-layout regressions in CI) and ``cachecast suggest``."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID

from cachecast import db
from cachecast.cli.common import command, database_url_option
from cachecast.layouts.check import (
    DEFAULT_THRESHOLDS,
    EXIT_BAD_INPUT,
    EXIT_PASS,
    CheckReport,
    run_check,
)
from cachecast.layouts.evaluate import TargetSpec, parse_target
from cachecast.layouts.sources import InputError, MissingAtRevision, load_prompt_set
from cachecast.layouts.spec import LayoutError, NotALayoutError
from cachecast.layouts.thresholds import (
    CheckConfig,
    ConfigError,
    Thresholds,
    find_pyproject,
    load_config,
    merge,
    parse_points,
    parse_rate,
    parse_relative,
)

console = Console(stderr=True)

TargetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--target",
        "-t",
        help="PROVIDER:MODEL (contract as of --at), or vllm / vllm:BLOCK_SIZE. Repeatable.",
    ),
]
AtOption = Annotated[
    str | None, typer.Option("--at", help="Contracts in force on this date (YYYY-MM-DD).")
]
DatabaseUrlOption = Annotated[str | None, database_url_option("Contract database URL.")]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="Tokenize with this model for vllm targets and the divergence."),
]
ValuesOption = Annotated[
    Path | None,
    typer.Option("--values", help="Sample of variable values for layout inputs (YAML/JSON)."),
]
BlockSizeOption = Annotated[
    int | None, typer.Option("--block-size", help="Block size of the vllm target (default 16).")
]


class BadInput(Exception):
    """Raised inside a command for anything that must end with exit code 2."""


def _bad_input_errors() -> tuple[type[BaseException], ...]:
    # Imported here: the contracts and tokenizers packages define these; all are user errors.
    from cachecast.contracts import UnknownContractError
    from cachecast.errors import BadInputError as TargetError
    from cachecast.tokenizers import LogError, UnknownModelError

    errors: list[type[BaseException]] = [
        BadInput,
        InputError,
        LayoutError,
        ConfigError,
        TargetError,
        UnknownContractError,
        UnknownModelError,
    ]
    if isinstance(LogError, type) and issubclass(LogError, BaseException):
        errors.append(LogError)
    return tuple(errors)


@contextmanager
def _exit_2_on_bad_input() -> Iterator[None]:
    try:
        yield
    except _bad_input_errors() as error:
        console.print("[red]error:[/red]", escape(str(error)), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_BAD_INPUT) from error


def _parse_day(text: str | None) -> dt.date:
    if text is None:
        return dt.datetime.now(dt.UTC).date()
    try:
        return dt.date.fromisoformat(text)
    except ValueError as error:
        raise BadInput(f"--at: {text!r} is not a date YYYY-MM-DD") from error


def _store(database_url: str | None) -> Any:
    from cachecast.contracts import ContractStore

    url = db.resolve_database_url(database_url)
    if not db.is_current(url):
        raise BadInput(
            f"the contract database at {url} is not migrated to the newest revision;"
            " run `cachecast db upgrade` first"
        )
    return ContractStore(url)


def _targets(config: CheckConfig) -> list[TargetSpec]:
    if not config.targets:
        raise BadInput(
            "no target: give --target PROVIDER:MODEL or vllm, or set targets in"
            " [tool.cachecast] of pyproject.toml"
        )
    return [parse_target(text, default_block_size=config.block_size) for text in config.targets]


def _write_markdown(path: Path, text: str) -> None:
    # GitHub's step summary is shared by every step of the job: add to it, never replace it.
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    mode = "a" if summary and Path(summary).resolve() == path.resolve() else "w"
    with path.open(mode, encoding="utf-8") as handle:
        handle.write(text)


def check_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="BASELINE CANDIDATE, or CANDIDATE... with --baseline-ref (each compared with"
            " the same path at that git revision). Each a prompt log (JSONL) or a layout"
            " (YAML / Jinja2).",
            show_default=False,
        ),
    ],
    target: TargetOption = None,
    at: AtOption = None,
    baseline_ref: Annotated[
        str | None, typer.Option("--baseline-ref", help="Read the baseline at this git revision.")
    ] = None,
    candidate_ref: Annotated[
        str | None, typer.Option("--candidate-ref", help="Read the candidate at this git revision.")
    ] = None,
    max_cost_increase: Annotated[
        str | None, typer.Option("--max-cost-increase", help="e.g. 5% (cost per 1,000 requests).")
    ] = None,
    max_hit_rate_drop: Annotated[
        str | None, typer.Option("--max-hit-rate-drop", help="e.g. 2pp (percentage points).")
    ] = None,
    min_hit_rate: Annotated[
        str | None, typer.Option("--min-hit-rate", help="e.g. 0.6 or 60% (candidate's floor).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="pyproject.toml with [tool.cachecast] (default: nearest)."),
    ] = None,
    block_size: BlockSizeOption = None,
    model: ModelOption = None,
    values: ValuesOption = None,
    markdown: Annotated[
        Path | None, typer.Option("--markdown", help="Write a Markdown report (PR comment).")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the JSON report to this file.")
    ] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Fail (exit 1) when CANDIDATE's prompt layout regresses hit rate or cost against
    BASELINE; exit 2 on bad input or configuration."""
    with _exit_2_on_bad_input():
        if len(paths) == 2 and not baseline_ref:
            pairs = [(paths[0], paths[1])]
        elif paths and baseline_ref:
            # Each path against itself at the baseline revision: what a pre-commit hook passes.
            pairs = [(path, path) for path in paths]
        else:
            raise BadInput("give BASELINE CANDIDATE, or CANDIDATE... with --baseline-ref REF")
        pyproject = config if config is not None else find_pyproject(Path.cwd())
        if config is not None and not config.is_file():
            raise BadInput(f"--config {config}: no such file")
        settings = merge(
            load_config(pyproject),
            max_cost_increase=None
            if max_cost_increase is None
            else parse_relative(max_cost_increase),
            max_hit_rate_drop=None
            if max_hit_rate_drop is None
            else parse_points(max_hit_rate_drop),
            min_hit_rate=None if min_hit_rate is None else parse_rate(min_hit_rate),
            targets=target,
            at=at,
            block_size=block_size,
        )
        thresholds = settings.thresholds
        if thresholds == Thresholds():
            thresholds = DEFAULT_THRESHOLDS
        specs = _targets(settings)
        day = _parse_day(settings.at)
        store = _store(database_url) if any(s.kind == "contract" for s in specs) else None
        reports: list[CheckReport] = []
        for baseline_path, candidate_path in pairs:
            with tempfile.TemporaryDirectory(prefix="cachecast-check-") as workdir:
                try:
                    candidate = load_prompt_set(
                        candidate_path,
                        Path(workdir),
                        ref=candidate_ref,
                        values=values,
                        model=model,
                        name="candidate",
                    )
                except NotALayoutError:
                    if len(pairs) == 1:
                        raise
                    # A hook passes every staged YAML file; only layouts are ours to check.
                    typer.echo(f"cachecast check: {candidate_path}: not a layout, skipped")
                    continue
                try:
                    baseline = load_prompt_set(
                        baseline_path,
                        Path(workdir),
                        ref=baseline_ref,
                        values=values,
                        model=model,
                        name="baseline",
                    )
                except MissingAtRevision as missing:
                    # A file the base revision does not have yet has nothing to regress from.
                    typer.echo(f"cachecast check: {missing}: new file, nothing to compare")
                    continue
                reports.append(
                    run_check(
                        baseline, candidate, specs, thresholds, at=day, store=store, model=model
                    )
                )
        _emit(reports, markdown, json_out)
    raise typer.Exit(max((report.exit_code for report in reports), default=EXIT_PASS))


def _emit(reports: list[CheckReport], markdown: Path | None, json_out: Path | None) -> None:
    for report in reports:
        for line in report.summary_lines():
            typer.echo(line)
    if markdown is not None:
        text = "".join(report.to_markdown() for report in reports)
        _write_markdown(markdown, text or "### cachecast check: no layout to compare\n")
    if json_out is not None:
        # One file checked: its report; several: all of them under "checks".
        document: dict[str, Any] = (
            reports[0].to_json()
            if len(reports) == 1
            else {
                "passed": all(report.passed for report in reports),
                "checks": [report.to_json() for report in reports],
            }
        )
        json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


class _Progress:
    """A rich progress bar on a terminal (stderr), nothing otherwise."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Callable[[int, int], None]:
        if console.is_terminal:
            self._bar = Progress(console=console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self._description, total=None)
        return self._advance

    def _advance(self, done: int, total: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``suggest`` to the root app."""
    app.command("check")(command(check_command))
    app.command("suggest")(command(suggest_command))


def suggest_command(
    path: Annotated[Path, typer.Argument(help="A prompt log (JSONL) or a layout (YAML / Jinja2).")],
    target: TargetOption = None,
    at: AtOption = None,
    block_size: BlockSizeOption = None,
    model: ModelOption = None,
    values: ValuesOption = None,
    top: Annotated[int, typer.Option("--top", help="Show this many suggestions.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    validate_on_engine: Annotated[
        str | None,
        typer.Option(
            "--validate-on-engine",
            help="Base URL of a vLLM server: replay the original and each shown suggestion"
            " there (tokenized with --model, the served model) and report measured hit rates.",
        ),
    ] = None,
    engine_api_key: Annotated[
        str | None,
        typer.Option("--engine-api-key", envvar="CACHECAST_ENGINE_API_KEY", help="Bearer token."),
    ] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Find volatile spans and propose layout changes, each re-simulated and ranked."""
    from cachecast.layouts.suggest import suggest
    from cachecast.layouts.volatile import analyze

    with _exit_2_on_bad_input():
        settings = merge(
            load_config(find_pyproject(Path.cwd())), targets=target, at=at, block_size=block_size
        )
        specs = _targets(settings)
        day = _parse_day(settings.at)
        store = _store(database_url) if any(s.kind == "contract" for s in specs) else None
        with tempfile.TemporaryDirectory(prefix="cachecast-suggest-") as workdir:
            prompt_set = load_prompt_set(
                path, Path(workdir), values=values, model=model, name="input"
            )
            analysis = analyze(prompt_set.records)
            with _Progress("re-simulating changes") as advance:
                suggestions = suggest(
                    prompt_set,
                    specs,
                    at=day,
                    store=store,
                    model=model,
                    analysis=analysis,
                    progress=advance,
                )
            shown = suggestions[: max(top, 0)]
            measured: dict[str, Any] = {}
            if validate_on_engine is not None:
                if model is None:
                    raise BadInput("--validate-on-engine needs --model (the served model)")
                measured = _validate_on_engine(
                    validate_on_engine, engine_api_key, model, prompt_set.records, shown
                )
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "input": prompt_set.label,
                    "at": day.isoformat(),
                    "targets": [spec.name for spec in specs],
                    "analysis": analysis.to_json(),
                    "suggestions": [
                        {**suggestion.to_json(), "engine": measured.get(f"#{rank}")}
                        for rank, suggestion in enumerate(shown, start=1)
                    ],
                    "engine_original": measured.get("original"),
                },
                indent=2,
            )
        )
        return
    typer.echo(f"{len(analysis.spans)} volatile span(s) in {prompt_set.label}:")
    for span in analysis.spans:
        typer.echo(f"  - {span.describe()}; e.g. {span.examples[0]!r}")
    if not shown:
        typer.echo("no change to suggest")
    for rank, suggestion in enumerate(shown, start=1):
        review = "  [needs review]" if suggestion.needs_review else ""
        typer.echo(f"\n{rank}. {suggestion.title}{review}")
        typer.echo(f"   {suggestion.rationale}")
        for outcome in suggestion.outcomes:
            line = (
                f"   {outcome.target}: hit rate {outcome.before.hit_rate:.2%} ->"
                f" {outcome.after.hit_rate:.2%}"
            )
            if outcome.saving_per_1k is not None:
                line += f"; saves ${outcome.saving_per_1k:.4f} per 1,000 requests"
            typer.echo(line)
        if f"#{rank}" in measured:
            engine = measured[f"#{rank}"]
            typer.echo(
                f"   measured on the engine: hit rate {measured['original']['hit_rate']:.2%} ->"
                f" {engine['hit_rate']:.2%} (simulator predicted"
                f" {engine['predicted_cached_tokens']} cached tokens, engine"
                f" {engine['measured_cached_tokens']})"
            )
        typer.echo("   " + suggestion.diff.replace("\n", "\n   ").rstrip())


def _validate_on_engine(
    url: str,
    api_key: str | None,
    model: str,
    original: list[dict[str, Any]],
    suggestions: list[Any],
) -> dict[str, Any]:
    """Replay the original requests and each suggestion's on a vLLM server.

    The engine side lives in ``cachecast.gpu_backend``, which builds on the simulator; it is
    reached through the measurer that ``cachecast.cli`` installs in ``engine_hook``, so the
    simulator never imports it.
    """
    from cachecast.layouts.engine_hook import (
        EngineTarget,
        EngineValidationUnavailable,
        measure_on_engine,
    )

    target = EngineTarget(url=url, model=model, api_key=api_key)

    def measure(records: list[dict[str, Any]], label: str) -> dict[str, Any]:
        try:
            return measure_on_engine(target, records, label)
        except EngineValidationUnavailable as error:  # unreachable or misconfigured: exit 2
            raise BadInput(f"--validate-on-engine {url}: {error}") from error

    results = {"original": measure(original, "original")}
    for rank, suggestion in enumerate(suggestions, start=1):
        results[f"#{rank}"] = measure(list(suggestion.transformed_records), suggestion.kind)
    return results
