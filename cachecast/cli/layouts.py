"""``cachecast check`` (prompt-layout regressions in CI) and ``cachecast suggest``.

Thin adapters over :func:`cachecast.usecases.check.check` /
:func:`~cachecast.usecases.check.check_each` and :func:`cachecast.usecases.suggest.suggest`:
options and ``[tool.cachecast]`` in pyproject.toml (the command line wins) -> request ->
report -> text, Markdown, JSON. ``check`` exits 0 when the candidate passes, 1 on a
regression, 2 on bad input or configuration, 3 on a bug.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cachecast.cli import common
from cachecast.cli.common import (
    command,
    contract_store,
    database_url_option,
    parse_day,
    progress_bar,
    split_targets,
)
from cachecast.core.errors import EXIT_OK, EXIT_REGRESSION, BadInputError, Location

if TYPE_CHECKING:
    from cachecast.contracts import ContractStore
    from cachecast.usecases.check import CheckReport, DivergenceReport
    from cachecast.usecases.engine_replay import EngineRun
    from cachecast.usecases.suggest import SuggestionReport, SuggestReport
    from cachecast.usecases.thresholds import CheckConfig, Thresholds

TargetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--target",
        "-t",
        metavar="TARGET",
        help="PROVIDER:MODEL (contract as of --at), vllm / vllm:BLOCK_SIZE (simulated), or"
        " vllm-engine:URL (replayed on that vLLM server, measured). Repeatable, or a"
        " comma-separated list.",
        callback=split_targets,
    ),
]
AtOption = Annotated[
    str | None,
    typer.Option("--at", metavar="DATE", help="Contracts in force on this date (YYYY-MM-DD)."),
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
EngineApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--engine-api-key",
        envvar="CACHECAST_ENGINE_API_KEY",
        help="Bearer token for the vLLM server (vllm-engine targets, --validate-on-engine).",
    ),
]
StoreMeasurementsOption = Annotated[
    bool,
    typer.Option(
        "--store-measurements",
        help="Store every replay on an engine, with its passport, in the database"
        " (--database-url; for cachecast compare --measurement-id).",
    ),
]


def register(app: typer.Typer) -> None:
    """Add ``check`` and ``suggest`` to the root app."""
    app.command("check")(command(check_command))
    app.command("suggest")(command(suggest_command))


def _engine_settings(
    api_key: str | None, store_measurements: bool, database_url: str | None
) -> dict[str, Any]:
    """The request fields of the engine options (a measurement database only when asked)."""
    from pydantic import SecretStr

    from cachecast.core import db

    store = None
    if store_measurements:
        store = db.resolve_database_url(database_url)
        if not db.is_current(store):
            from cachecast.core.errors import NotMigratedError

            raise NotMigratedError(
                f"the database at {db.display_url(store)} is not migrated: run"
                " `cachecast db upgrade`",
                location=Location(field="--store-measurements"),
            )
    return {
        "engine_api_key": SecretStr(api_key) if api_key is not None else None,
        "store_measurements": store,
    }


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
    from cachecast.usecases.thresholds import find_pyproject, load_config, merge

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
    from cachecast.usecases.evaluation import needs_contract_store

    return contract_store(url) if needs_contract_store(targets, block_size=block_size) else None


def check_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="BASELINE CANDIDATE, or CANDIDATE... with --baseline-ref (each compared with"
            " the same path at that git revision). Each a prompt log, in any format"
            " cachecast reads (see --format), or a layout (YAML / Jinja2).",
            show_default=False,
        ),
    ],
    target: TargetOption = None,
    at: AtOption = None,
    log_format: common.FormatOption = None,
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
    max_ttft_increase: Annotated[
        str | None,
        typer.Option(
            "--max-ttft-increase",
            help="e.g. 25% (median TTFT measured on vllm-engine targets).",
        ),
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
        Path | None,
        typer.Option("--json-file", metavar="FILE", help="Also write the JSON report to FILE."),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the JSON report instead of the summary lines."),
    ] = False,
    engine_api_key: EngineApiKeyOption = None,
    store_measurements: StoreMeasurementsOption = False,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Fail (exit 1) when CANDIDATE's prompt layout regresses hit rate or cost (or, on a
    vllm-engine target, the measured TTFT) against BASELINE; exit 2 on bad input or
    configuration."""
    from cachecast.passes.per_request import check_output_path
    from cachecast.passes.prompt_sets import PromptSource
    from cachecast.usecases.check import CheckEachRequest, CheckRequest, check, check_each
    from cachecast.usecases.thresholds import parse_thresholds

    if len(paths) == 2 and not baseline_ref:
        pair = (paths[0], paths[1])
    elif paths and baseline_ref:
        pair = None  # each path against itself at the baseline revision (a pre-commit hook)
    else:
        raise BadInputError(
            "give BASELINE CANDIDATE, or CANDIDATE... with --baseline-ref REF",
            location=Location(field="PATHS"),
        )
    for path, option in ((markdown, "--markdown"), (json_out, "--json-file")):
        if path is not None:
            check_output_path(path, option)
    options = {
        "max_cost_increase": max_cost_increase,
        "max_hit_rate_drop": max_hit_rate_drop,
        "min_hit_rate": min_hit_rate,
        "max_ttft_increase": max_ttft_increase,
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
        **_engine_settings(engine_api_key, store_measurements, database_url),
    }
    store = _store(settings.targets, settings.block_size, database_url)
    reports: list[CheckReport]
    if pair is not None:
        baseline, candidate = pair
        request = CheckRequest(
            baseline=PromptSource(path=baseline, values_path=values, format=log_format),
            candidate=PromptSource(
                path=candidate, ref=candidate_ref, values_path=values, format=log_format
            ),
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
            typer.echo(f"cachecast check: {skipped.message}", err=as_json)
        reports = run.checks
        # One file checked: its report; several (or none): the run, every check under "checks".
        document = (reports[0] if len(reports) == 1 else run).model_dump_json(indent=2)
    if as_json:
        typer.echo(document)
    else:
        for report in reports:
            for line in summary_lines(report):
                typer.echo(line)
    if markdown is not None:
        text = "".join(check_markdown(report) for report in reports)
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
    from cachecast.usecases.evaluation import PER_REQUESTS

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
        if base.engine is not None and cand.engine is not None:
            line += f"; TTFT {_ttft_change(base.engine, cand.engine)} (measured)"
            if base.engine.measurement_id is not None and cand.engine.measurement_id is not None:
                line += (
                    f"; stored as measurements #{base.engine.measurement_id} (baseline) and"
                    f" #{cand.engine.measurement_id} (candidate)"
                )
        lines.append(line)
        lines.extend(f"    ✗ {violation}" for violation in comparison.violations)
    lines.append(_divergence_sentence(report.divergence))
    lines.extend(f"  note: {note}" for note in report.notes)
    return lines


def check_markdown(report: CheckReport) -> str:
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
        base, cand = comparison.baseline, comparison.candidate
        if base.engine is not None and cand.engine is not None:
            out.append(
                f"\n`{comparison.target}`: {_passport(cand.engine)}; TTFT"
                f" {_ttft_change(base.engine, cand.engine)}"
            )
        contract = comparison.candidate.contract
        if contract is not None:
            out.append(
                f"\n`{comparison.target}`: contract {contract.described()},"
                f" verified {contract.verified_on.isoformat()}, source {contract.source}"
            )
    out.extend(f"\n_{note}_" for note in report.notes)
    return "\n".join(out) + "\n"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def _ttft_change(before: EngineRun, after: EngineRun) -> str:
    """'p50 449.0 ms -> 198.0 ms (-55.9%), p95 670.0 ms -> 352.0 ms (-47.5%)'."""
    parts = []
    for name, old, new in (
        ("p50", before.ttft.p50_s, after.ttft.p50_s),
        ("p95", before.ttft.p95_s, after.ttft.p95_s),
    ):
        text = f"{name} {_ms(old)} -> {_ms(new)}"
        if old and new is not None:
            text += f" ({new / old - 1:+.1%})"
        parts.append(text)
    return ", ".join(parts)


def _passport(run: EngineRun) -> str:
    passport = run.passport
    return (
        f"vLLM {passport.engine_version} at {passport.endpoint}, model {passport.model},"
        f" block {passport.block_size} x {passport.num_blocks},"
        f" dtype {passport.dtype or 'unknown'}, device {passport.device}"
    )


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
    path: Annotated[
        Path,
        typer.Argument(
            help="A prompt log, in any format cachecast reads (see --format), or a layout"
            " (YAML / Jinja2)."
        ),
    ],
    target: TargetOption = None,
    at: AtOption = None,
    log_format: common.FormatOption = None,
    results: common.ResultsOption = None,
    block_size: BlockSizeOption = None,
    model: ModelOption = None,
    values: ValuesOption = None,
    top: Annotated[int, typer.Option("--top", help="Show this many suggestions.")] = 5,
    show_all: Annotated[
        bool,
        typer.Option("--all", help="Also list the changes that do not help, each with why."),
    ] = False,
    combine: Annotated[
        bool,
        typer.Option(
            "--combine/--no-combine", help="Also try the best combination of compatible changes."
        ),
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    validate_on_engine: Annotated[
        str | None,
        typer.Option(
            "--validate-on-engine",
            help="Base URL of a vLLM server: replay the original and each suggestion shown"
            " there (chat requests, the server's template, a cache reset before each) and"
            " report measured hit rates and TTFT beside the simulated ones.",
        ),
    ] = None,
    engine_model: Annotated[
        str | None,
        typer.Option("--engine-model", help="The served model to send to (default: the first)."),
    ] = None,
    gain_tolerance: Annotated[
        str,
        typer.Option(
            "--gain-tolerance",
            help="Flag a suggestion whose measured hit-rate gain is further than this from"
            " the simulated one (percentage points; default 0pp: the engine is deterministic"
            " when replayed alone after a reset).",
        ),
    ] = "0pp",
    engine_api_key: EngineApiKeyOption = None,
    store_measurements: StoreMeasurementsOption = False,
    write_requests: Annotated[
        Path | None,
        typer.Option(
            "--write-requests",
            help="An existing folder: write each suggestion listed there as NN-KIND.jsonl"
            " (the requests after the change), to check, measure or estimate it.",
        ),
    ] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Find volatile spans and propose layout changes that help, each re-simulated and
    ranked (and with --validate-on-engine, measured on a real vLLM server)."""
    from cachecast.passes.prompt_sets import PromptSource
    from cachecast.usecases.suggest import EngineValidation, SuggestRequest, suggest
    from cachecast.usecases.thresholds import parse_points

    settings = _settings(None, targets=target, at=at, block_size=block_size)
    engine_fields = _engine_settings(engine_api_key, store_measurements, database_url)
    engine = None
    if validate_on_engine is not None:
        engine = EngineValidation(
            url=validate_on_engine,
            api_key=engine_fields["engine_api_key"],
            served_model=engine_model,
            gain_tolerance_pp=parse_points(gain_tolerance, "--gain-tolerance") * 100,
        )
    request = SuggestRequest(
        source=PromptSource(path=path, values_path=values, format=log_format, results=results),
        targets=list(settings.targets),
        at=parse_day(settings.at),
        model=model,
        block_size=settings.block_size,
        top=top,
        include_all=show_all,
        combine=combine,
        validate_on_engine=engine,
        write_requests_to=write_requests,
        **engine_fields,
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
    original = report.engine_original
    if original is not None:
        typer.echo(f"\nEngine: {_passport(original)}")
        typer.echo(f"  original: {_engine_line(original)}")
    for target in report.uncached_targets:
        typer.echo(
            f"\n{target}: no prompt caching offered on {report.at.isoformat()}: no change to"
            " the prompts saves anything under it"
        )
    if not report.suggestions:
        typer.echo(
            "\nno change to suggest: none helps"
            if report.other_changes or report.hidden_changes
            else "\nno change to suggest"
        )
    for rank, suggestion in enumerate(report.suggestions, start=1):
        _print_suggestion(f"{rank}.", suggestion)
        engine = suggestion.engine
        if engine is not None and original is not None:
            run = engine.run
            typer.echo(f"   on the engine: {_engine_line(run)}")
            typer.echo(
                f"     gain measured {engine.measured_gain_pp:+.2f}pp, simulated"
                f" {engine.simulated_gain_pp:+.2f}pp; TTFT {_ttft_change(original, run)}"
            )
            if engine.flag is not None:
                typer.echo(f"     ⚠ {engine.flag}")
        if suggestion.requests_file is not None:
            typer.echo(f"   requests after the change: {suggestion.requests_file}")
        typer.echo("   " + suggestion.diff.replace("\n", "\n   ").rstrip())
    if report.hidden_changes:
        typer.echo(
            f"\n{report.hidden_changes} other change(s) do not help (--all lists them, each"
            " with why)"
        )
    if report.other_changes:
        typer.echo("\nChanges that do not help:")
        for change in report.other_changes:
            _print_suggestion("-", change)
            typer.echo(f"   why not: {change.why_not}")


def _print_suggestion(mark: str, suggestion: SuggestionReport) -> None:
    review = "  [needs review]" if suggestion.needs_review else ""
    typer.echo(f"\n{mark} {suggestion.title}{review}")
    typer.echo(f"   {suggestion.rationale}")
    for outcome in suggestion.targets:
        line = (
            f"   {outcome.target}: hit rate {outcome.hit_rate_before:.2%} ->"
            f" {outcome.hit_rate_after:.2%}"
        )
        saving = outcome.saving_per_1k_requests
        if saving is not None:
            line += (
                f"; saves ${saving:.4f} per 1,000 requests"
                if saving >= 0
                else f"; costs ${-saving:.4f} more per 1,000 requests"
            )
        typer.echo(line)


def _engine_line(run: EngineRun) -> str:
    """'hit rate measured 70.35% (simulated 70.35%), 15,488 of 22,016 tokens; 14 requests'."""
    mismatched = (
        ""
        if not run.mismatched_requests
        else f"; {run.mismatched_requests} request(s) differ from the simulator"
    )
    stored = "" if run.measurement_id is None else f"; measurement #{run.measurement_id}"
    return (
        f"hit rate measured {run.measured_hit_rate:.2%} (simulated {run.simulated_hit_rate:.2%}),"
        f" {run.measured_cached_tokens:,} of {run.prompt_tokens:,} prompt tokens cached;"
        f" TTFT p50 {_ms(run.ttft.p50_s)}, p95 {_ms(run.ttft.p95_s)}{mismatched}{stored}"
    )
