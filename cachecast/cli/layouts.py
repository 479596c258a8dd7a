"""``cachecast check`` (prompt-layout regressions in CI) and ``cachecast suggest``.

Thin adapters over :func:`cachecast.app.check.check` / :func:`~cachecast.app.check.check_each`
and :func:`cachecast.app.suggest.suggest`: options and ``[tool.cachecast]`` in pyproject.toml
(the command line wins) -> request -> report -> text, Markdown, JSON. ``check`` exits 0 when
the candidate passes, 1 on a regression, 2 on bad input or configuration, 3 on a bug.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cachecast.cli.common import (
    command,
    contract_store,
    database_url_option,
    parse_day,
    progress_bar,
)
from cachecast.errors import EXIT_OK, EXIT_REGRESSION, BadInputError, Location

if TYPE_CHECKING:
    from cachecast.app.check import CheckReport, DivergenceReport
    from cachecast.app.suggest import SuggestReport
    from cachecast.app.thresholds import CheckConfig, Thresholds
    from cachecast.contracts import ContractStore

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


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``suggest`` to the root app."""
    app.command("check")(command(check_command))
    app.command("suggest")(command(suggest_command))


def _settings(
    config: Path | None,
    *,
    thresholds: Thresholds | None = None,
    targets: list[str] | None,
    at: str | None,
    block_size: int | None,
) -> CheckConfig:
    """``[tool.cachecast]`` of ``--config`` (default: the nearest pyproject.toml) under the
    command line's values."""
    from cachecast.app.thresholds import find_pyproject, load_config, merge

    if config is not None and not config.is_file():
        raise BadInputError("no such file", location=Location(source=str(config), field="--config"))
    pyproject = config if config is not None else find_pyproject(Path.cwd())
    return merge(
        load_config(pyproject),
        thresholds=thresholds,
        targets=targets,
        at=at,
        block_size=block_size,
    )


def _store(
    targets: tuple[str, ...], block_size: int | None, url: str | None
) -> ContractStore | None:
    from cachecast.app.evaluation import needs_contract_store

    return contract_store(url) if needs_contract_store(targets, block_size=block_size) else None


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
    from cachecast.app.check import CheckEachRequest, CheckRequest, check, check_each
    from cachecast.app.per_request import check_output_path
    from cachecast.app.prompt_sets import PromptSource
    from cachecast.app.thresholds import parse_thresholds

    if len(paths) == 2 and not baseline_ref:
        pair = (paths[0], paths[1])
    elif paths and baseline_ref:
        pair = None  # each path against itself at the baseline revision (a pre-commit hook)
    else:
        raise BadInputError(
            "give BASELINE CANDIDATE, or CANDIDATE... with --baseline-ref REF",
            location=Location(field="PATHS"),
        )
    for path, option in ((markdown, "--markdown"), (json_out, "--json")):
        if path is not None:
            check_output_path(path, option)
    options = {
        "max_cost_increase": max_cost_increase,
        "max_hit_rate_drop": max_hit_rate_drop,
        "min_hit_rate": min_hit_rate,
    }
    settings = _settings(
        config,
        thresholds=parse_thresholds(options, lambda name: "--" + name.replace("_", "-")),
        targets=target,
        at=at,
        block_size=block_size,
    )
    common = {
        "targets": list(settings.targets),
        "thresholds": settings.thresholds,
        "at": parse_day(settings.at),
        "model": model,
        "block_size": settings.block_size,
    }
    store = _store(settings.targets, settings.block_size, database_url)
    reports: list[CheckReport]
    if pair is not None:
        baseline, candidate = pair
        request = CheckRequest(
            baseline=PromptSource(path=baseline, values_path=values),
            candidate=PromptSource(path=candidate, ref=candidate_ref, values_path=values),
            **common,
        )
        reports = [check(request, store)]
        document = reports[0].model_dump_json(indent=2)
    else:
        assert baseline_ref is not None
        run = check_each(
            CheckEachRequest(
                paths=paths,
                baseline_ref=baseline_ref,
                candidate_ref=candidate_ref,
                values_path=values,
                **common,
            ),
            store,
        )
        for skipped in run.skipped:
            typer.echo(f"cachecast check: {skipped.message}")
        reports = run.checks
        # One file checked: its report; several (or none): the run, every check under "checks".
        document = (reports[0] if len(reports) == 1 else run).model_dump_json(indent=2)
    for report in reports:
        for line in summary_lines(report):
            typer.echo(line)
    if markdown is not None:
        text = "".join(markdown_text(report) for report in reports)
        _write_markdown(markdown, text or "### cachecast check: no layout to compare\n")
    if json_out is not None:
        json_out.write_text(document + "\n", encoding="utf-8")
    raise typer.Exit(EXIT_OK if all(report.passed for report in reports) else EXIT_REGRESSION)


def _write_markdown(path: Path, text: str) -> None:
    # GitHub's step summary is shared by every step of the job: add to it, never replace it.
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    mode = "a" if summary and Path(summary).resolve() == path.resolve() else "w"
    with path.open(mode, encoding="utf-8") as handle:
        handle.write(text)


def _change(amount: Decimal) -> str:
    return f"{'+' if amount >= 0 else '-'}${abs(amount):.4f}"


def summary_lines(report: CheckReport) -> list[str]:
    from cachecast.app.evaluation import PER_REQUESTS

    verdict = "PASS" if report.passed else "REGRESSION"
    lines = [f"cachecast check: {verdict}  ({report.baseline} -> {report.candidate})"]
    for comparison in report.targets:
        base, cand = comparison.baseline, comparison.candidate
        line = (
            f"  {comparison.target}: hit rate {base.hit_rate:.2%} -> {cand.hit_rate:.2%}"
            f" ({comparison.hit_rate_change_pp:+.2f}pp)"
        )
        change = comparison.cost_change_per_1k_requests
        if change is not None and base.cost_per_1k_requests is not None:
            line += (
                f"; per {PER_REQUESTS:,} requests ${base.cost_per_1k_requests:.4f} ->"
                f" ${cand.cost_per_1k_requests:.4f} ({_change(change)})"
            )
        lines.append(line)
        lines.extend(f"    ✗ {violation}" for violation in comparison.violations)
    lines.append(_divergence_sentence(report.divergence))
    lines.extend(f"  note: {note}" for note in report.notes)
    return lines


def markdown_text(report: CheckReport) -> str:
    verdict = "✅ passed" if report.passed else "❌ regression"
    out = [
        f"### cachecast check: {verdict}",
        "",
        f"Baseline `{report.baseline}` → candidate `{report.candidate}`;"
        f" contracts as of {report.at.isoformat()}.",
        "",
        "| target | hit rate (baseline → candidate) | change | cost / 1k requests"
        " (baseline → candidate) | change | result |",
        "|---|---|---|---|---|---|",
    ]
    for comparison in report.targets:
        base, cand = comparison.baseline, comparison.candidate
        change = comparison.cost_change_per_1k_requests
        cost = (
            "n/a (self-hosted)"
            if base.cost_per_1k_requests is None or cand.cost_per_1k_requests is None
            else f"${base.cost_per_1k_requests:.4f} → ${cand.cost_per_1k_requests:.4f}"
        )
        result = "ok" if comparison.passed else "<br>".join(comparison.violations)
        out.append(
            f"| `{comparison.target}` | {base.hit_rate:.2%} → {cand.hit_rate:.2%} |"
            f" {comparison.hit_rate_change_pp:+.2f}pp | {cost} |"
            f" {'' if change is None else _change(change)} | {result} |"
        )
    out += ["", _divergence_sentence(report.divergence).strip()]
    if report.divergence is not None:
        out += ["", "```diff"]
        out += [f"- {line}" for line in report.divergence.baseline_text.splitlines()]
        out += [f"+ {line}" for line in report.divergence.candidate_text.splitlines()]
        out += ["```"]
    for comparison in report.targets:
        contract = comparison.candidate.contract
        if contract is not None:
            out.append(
                f"\n`{comparison.target}`: contract {contract.version},"
                f" verified {contract.verified_on.isoformat()}, source {contract.source}"
            )
    out.extend(f"\n_{note}_" for note in report.notes)
    return "\n".join(out) + "\n"


def _divergence_sentence(divergence: DivergenceReport | None) -> str:
    if divergence is None:
        return "  prompts are identical: no divergence"
    where = (
        f"token {divergence.token_position}"
        if divergence.token_position is not None
        else "the text"
    )
    if divergence.segment.label is not None:
        where += f" in {divergence.segment.kind} `{divergence.segment.label}`"
    return (
        f"  first divergence at {where}"
        f" of request {divergence.request_id} ({divergence.differing_requests} of"
        f" {divergence.compared_requests} requests differ): {divergence.candidate_text!r}"
    )


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
    from pydantic import SecretStr

    from cachecast.app.prompt_sets import PromptSource
    from cachecast.app.suggest import EngineValidation, SuggestRequest, suggest

    settings = _settings(None, targets=target, at=at, block_size=block_size)
    engine = None
    if validate_on_engine is not None:
        key = SecretStr(engine_api_key) if engine_api_key is not None else None
        engine = EngineValidation(url=validate_on_engine, api_key=key)
    request = SuggestRequest(
        source=PromptSource(path=path, values_path=values),
        targets=list(settings.targets),
        at=parse_day(settings.at),
        model=model,
        block_size=settings.block_size,
        top=top,
        validate_on_engine=engine,
    )
    store = _store(settings.targets, settings.block_size, database_url)
    with progress_bar() as progress:
        report = suggest(request, store, progress=progress)
    if as_json:
        typer.echo(report.model_dump_json(indent=2))
    else:
        print_suggestions(report)


def print_suggestions(report: SuggestReport) -> None:
    spans = report.analysis.volatile_spans
    typer.echo(f"{len(spans)} volatile span(s) in {report.input}:")
    for span in spans:
        typer.echo(f"  - {span.describe()}; e.g. {span.examples[0]!r}")
    if not report.suggestions:
        typer.echo("no change to suggest")
    original = report.engine_original
    for rank, suggestion in enumerate(report.suggestions, start=1):
        review = "  [needs review]" if suggestion.needs_review else ""
        typer.echo(f"\n{rank}. {suggestion.title}{review}")
        typer.echo(f"   {suggestion.rationale}")
        for outcome in suggestion.targets:
            line = (
                f"   {outcome.target}: hit rate {outcome.hit_rate_before:.2%} ->"
                f" {outcome.hit_rate_after:.2%}"
            )
            if outcome.saving_per_1k_requests is not None:
                line += f"; saves ${outcome.saving_per_1k_requests:.4f} per 1,000 requests"
            typer.echo(line)
        engine = suggestion.engine
        if engine is not None and original is not None:
            typer.echo(
                f"   measured on the engine: hit rate {original.hit_rate:.2%} ->"
                f" {engine.hit_rate:.2%} (simulator predicted"
                f" {engine.predicted_cached_tokens} cached tokens, engine"
                f" {engine.measured_cached_tokens})"
            )
        typer.echo("   " + suggestion.diff.replace("\n", "\n   ").rstrip())
