"""``suggest``: layout changes that make prompts share longer prefixes, re-simulated, ranked.

The prompt set's volatile spans are found (``layouts.volatile``), every applicable change
(``layouts.changes``) is applied to every request and replayed under the targets
(``usecases.evaluation``: hosted targets priced by ``estimate``, self-hosted ones simulated), and
the changes are ranked by savings: cost per 1,000 requests summed over the priced targets,
then hit-rate gain, safe changes before those needing review (docs/layouts.md).

A change *helps* when its simulated saving is positive (where no target is priced: its
hit-rate gain). Only those are suggested; the others are counted, and listed with the reason
they do not help when ``include_all`` is asked. The best combination of compatible changes
(the best helpful change, then each other change on top of it that raises the saving or the
gain further, in rank order) is offered as one more suggestion when it beats every single
change; it is simulated, ranked and validated like any other.

With ``validate_on_engine`` the original requests and each suggestion shown are also replayed
on a real vLLM server (``usecases.engine_replay``: chat requests as logged, the engine's own
template, a cache reset before each replay), and each suggestion's measured hit-rate gain is
set beside the simulated one (the simulator run with the engine's own geometry); a gain that
differs by more than ``gain_tolerance_pp`` is flagged.

With ``write_requests_to`` (a folder) every suggestion listed is also written there as
``NN-KIND.jsonl``, the requests after the change one per line, so that the change can be
checked, measured or estimated with any other command (``check BASELINE CANDIDATE`` with the
file as either side).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field

from cachecast.contracts import ContractStore
from cachecast.contracts.model import NO_CACHING
from cachecast.core.errors import ConfigurationError, Location
from cachecast.layouts.changes import (
    EXPLICIT_MODES,
    Change,
    candidate_changes,
    change_diff,
    combine,
    compatible,
    components,
)
from cachecast.layouts.volatile import (
    analyze,
    describe_span,
)
from cachecast.passes.progress import NoProgress, Progress
from cachecast.passes.prompt_sets import PromptSet, PromptSource, load_prompt_set
from cachecast.usecases.engine_replay import EngineEndpoint, EngineRun, replay_on_engine
from cachecast.usecases.evaluation import (
    PER_REQUESTS,
    DecimalNumber,
    SideMetrics,
    TargetSettings,
    evaluate,
    plan_targets,
)
from cachecast.usecases.reports import Money, Report

# Where no change helps alone, the combination search starts from this many of the best
# singles (each start replays every other change once).
COMBINATION_STARTS = 4


class EngineValidation(EngineEndpoint):
    """A vLLM OpenAI-compatible server to replay the original and the suggestions on."""

    gain_tolerance_pp: Decimal = Field(
        default=Decimal(0),
        ge=0,
        description="how far (percentage points) a suggestion's measured hit-rate gain may be"
        " from the simulated one before it is flagged. 0: replayed one request at a time"
        " after a cache reset, vLLM's hits are a deterministic function of the token ids and"
        " its block pool, which the simulator reproduces, so any difference is a finding."
        " Widen it for an engine shared with other traffic",
    )


class SuggestRequest(TargetSettings):
    """Suggest changes to the prompt set ``source`` under ``targets``."""

    source: PromptSource
    top: int = Field(default=5, description="how many suggestions the report keeps")
    include_all: bool = Field(
        default=False,
        description="also list the changes that do not help, each with the reason",
    )
    combine: bool = Field(
        default=True, description="also try the best combination of compatible changes"
    )
    validate_on_engine: EngineValidation | None = None
    write_requests_to: Path | None = Field(
        default=None,
        description="a folder to write each listed suggestion's requests to, NN-KIND.jsonl"
        " (CLI only: the service never writes where a client names)",
    )


# ---------------------------------------------------------------------------------------------
# The report.


class VolatileSpanReport(Report):
    """Text that changes from request to request among requests of one template."""

    template: int
    label: str
    part_kind: str
    role: str | None
    part_index: int
    first_line: int
    line_count: int
    lines_after: int
    part_lines: int | None
    kind: str
    examples: list[str]
    distinct_values: int
    requests: int
    stable_chars_after_in_part: int
    prompt_chars_after: int
    movable: bool
    data_only: bool

    def describe(self) -> str:
        return describe_span(self)


class ToolOrderReport(Report):
    template: int
    distinct_orders: int
    requests: int
    canonical_order: list[str]


class ScopeSplitReport(Report):
    template: int
    scopes: int
    requests: int


class AnalysisReport(Report):
    templates: list[int] = Field(
        description="requests of each template group",
        validation_alias=AliasChoices("templates", "sizes"),
    )
    volatile_spans: list[VolatileSpanReport] = Field(
        validation_alias=AliasChoices("volatile_spans", "spans")
    )
    tool_order: list[ToolOrderReport]
    scope_splits: list[ScopeSplitReport]


class TargetOutcome(Report):
    """One target before and after a change."""

    target: str
    hit_rate_before: DecimalNumber
    hit_rate_after: DecimalNumber
    cost_per_1k_before: Money | None
    cost_per_1k_after: Money | None
    saving_per_1k_requests: Money | None
    input_tokens_before: int
    input_tokens_after: int

    @classmethod
    def of(cls, target: str, before: SideMetrics, after: SideMetrics) -> TargetOutcome:
        old, new = before.cost_per_1k_requests, after.cost_per_1k_requests
        return cls(
            target=target,
            hit_rate_before=before.hit_rate,
            hit_rate_after=after.hit_rate,
            cost_per_1k_before=old,
            cost_per_1k_after=new,
            saving_per_1k_requests=None if old is None or new is None else old - new,
            input_tokens_before=before.input_tokens,
            input_tokens_after=after.input_tokens,
        )


class SuggestionOnEngine(Report):
    """A suggestion replayed on the engine, against the original's replay there."""

    run: EngineRun
    simulated_gain_pp: DecimalNumber = Field(
        description="(simulated hit rate after - before) x 100, with the engine's geometry"
    )
    measured_gain_pp: DecimalNumber
    gain_difference_pp: DecimalNumber = Field(description="measured - simulated")
    tolerance_pp: DecimalNumber
    flagged: bool = Field(description="the measured gain is not the simulated one")
    flag: str | None
    ttft_p50_change: float | None = Field(description="relative: -0.3 is 30% faster")
    ttft_p95_change: float | None


class SuggestionReport(Report):
    kind: str
    components: list[str] = Field(description="the single changes applied, in order")
    title: str
    rationale: str
    needs_review: bool
    saving_per_1k_requests: Money = Field(description="summed over the priced targets")
    hit_rate_gain_pp: DecimalNumber = Field(description="summed over the targets")
    helps: bool = Field(
        description="a positive saving (where no target is priced: a positive hit-rate gain)"
    )
    why_not: str | None = Field(description="why a change that does not help does not")
    targets: list[TargetOutcome]
    diff: str
    engine: SuggestionOnEngine | None = None
    requests_file: str | None = Field(
        default=None, description="where the requests after the change were written"
    )


class SuggestReport(Report):
    input: str
    at: dt.date
    targets: list[str]
    analysis: AnalysisReport
    suggestions: list[SuggestionReport] = Field(
        description="the changes that help, best first, at most 'top'"
    )
    hidden_changes: int = Field(description="changes that do not help, not listed without 'all'")
    other_changes: list[SuggestionReport] = Field(
        description="with 'include_all': the changes that do not help, each with why_not"
    )
    engine_original: EngineRun | None = None
    uncached_targets: list[str] = Field(
        default_factory=list,
        description="targets whose contract on the day offers no prompt caching: no change"
        " to the prompts saves anything under them (every prompt token is billed as input)",
    )


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tried:
    """A change replayed: the change, its report and the requests after it (streamed from
    the input on every read: for the engine and for writing them out)."""

    change: Change
    report: SuggestionReport
    changed: PromptSet

    @property
    def rank_key(self) -> tuple[Decimal, Decimal, bool]:
        return (
            -self.report.saving_per_1k_requests,
            -self.report.hit_rate_gain_pp,
            self.report.needs_review,
        )

    def beats(self, other: _Tried) -> bool:
        """A strictly larger saving, or as large a saving and a larger gain."""
        return self.rank_key[:2] < other.rank_key[:2]


def suggest(
    request: SuggestRequest, store: ContractStore | None, *, progress: Progress | None = None
) -> SuggestReport:
    """Every applicable change, re-simulated under the targets, best first; see the module
    docstring. ``store`` may be None when every target is self-hosted. ``progress`` counts
    the changes replayed."""
    if request.write_requests_to is not None:
        check_output_folder(request.write_requests_to, "write_requests_to (--write-requests)")
    plan = plan_targets(request, store)
    targets, day = plan.targets, plan.day
    prompt_set = load_prompt_set(request.source, "input", model=request.model)
    analysis = analyze(prompt_set.records)

    def replay(side: PromptSet) -> list[SideMetrics]:
        return evaluate(
            side, targets, day=day, store=store, token_model=plan.replay_model, engine=plan.engine
        ).metrics

    before = replay(prompt_set)
    uncached = [
        target.name
        for target, metrics in zip(targets, before, strict=True)
        if metrics.contract is not None and not metrics.contract.offers_caching
    ]
    priced = any(metrics.cost_per_1k_requests is not None for metrics in before)
    has_breakpoints = analysis.breakpoints
    explicit_targets = [
        target.name
        for target, metrics in zip(targets, before, strict=True)
        if metrics.contract is not None and metrics.contract.mode in EXPLICIT_MODES
    ]
    changes = candidate_changes(
        analysis, explicit_targets=[] if has_breakpoints else explicit_targets
    )

    def tried(change: Change) -> _Tried:
        changed = prompt_set.changed(change.stream)
        after = replay(changed)
        outcomes = [
            TargetOutcome.of(target.name, old, new)
            for target, old, new in zip(targets, before, after, strict=True)
        ]
        saving = sum(
            (o.saving_per_1k_requests for o in outcomes if o.saving_per_1k_requests is not None),
            Decimal(0),
        )
        gain = sum((o.hit_rate_after - o.hit_rate_before for o in outcomes), Decimal(0)) * 100
        helps = saving > 0 if priced else gain > 0
        report = SuggestionReport(
            kind=change.kind,
            components=list(components(change)),
            title=change.title,
            rationale=change.rationale,
            needs_review=change.needs_review,
            saving_per_1k_requests=saving,
            hit_rate_gain_pp=gain,
            helps=helps,
            why_not=None
            if helps
            else _why_not(outcomes, saving, gain, priced=priced, uncached=uncached),
            targets=outcomes,
            diff=change_diff(
                change, prompt_set.records, layout=prompt_set.layout, name=prompt_set.label
            ),
        )
        return _Tried(change, report, changed)

    progress = progress or NoProgress()
    progress.start("re-simulating changes", len(changes))
    singles: list[_Tried] = []
    for change in changes:
        singles.append(tried(change))
        progress.advance(1)
    singles.sort(key=lambda item: item.rank_key)
    helpful = [item for item in singles if item.report.helps]
    unhelpful = [item for item in singles if not item.report.helps]
    combination = None
    if request.combine and helpful:
        combination = _best_combination(helpful[0], singles, tried, progress)
    elif request.combine:
        # Nothing helps alone, yet changes may together (a timestamp moved out of the system
        # prompt helps nothing while the tool order still differs, and the reverse): the
        # search starts from each of the best singles in turn.
        for start in singles[:COMBINATION_STARTS]:
            found = _best_combination(start, singles, tried, progress)
            if (
                found is not None
                and found.report.helps
                and (combination is None or found.beats(combination))
            ):
                combination = found
    if combination is not None:
        helpful.append(combination)
        helpful.sort(key=lambda item: item.rank_key)
        unhelpful = [_noting_combination(item, combination) for item in unhelpful]
    shown = helpful[: max(request.top, 0)]
    suggestions = [item.report for item in shown]
    engine_original = None
    if request.validate_on_engine is not None:
        engine_original, suggestions = _validate(
            request.validate_on_engine, prompt_set, shown, request, plan.engine.store_url
        )
    if request.write_requests_to is not None:
        suggestions = [
            suggestion.model_copy(
                update={
                    "requests_file": str(
                        _write_requests(
                            request.write_requests_to / f"{rank:02d}-{suggestion.kind}.jsonl",
                            item.changed.records,
                        )
                    )
                }
            )
            for rank, (suggestion, item) in enumerate(zip(suggestions, shown, strict=True), 1)
        ]
    return SuggestReport(
        input=prompt_set.label,
        at=day,
        targets=[target.name for target in targets],
        analysis=AnalysisReport.model_validate(analysis),
        suggestions=suggestions,
        hidden_changes=0 if request.include_all else len(unhelpful),
        other_changes=[item.report for item in unhelpful] if request.include_all else [],
        engine_original=engine_original,
        uncached_targets=uncached,
    )


def check_output_folder(folder: Path, field: str) -> None:
    """``folder`` exists and files can be written in it: checked before any work."""
    where = Location(source=str(folder), field=field)
    if not folder.is_dir():
        raise ConfigurationError("is not an existing folder", location=where)
    if not os.access(folder, os.W_OK):
        raise ConfigurationError("the folder is not writable", location=where)


def _write_requests(path: Path, records: Iterable[dict[str, Any]]) -> Path:
    """``records`` as JSON lines at ``path``, whole or not at all (a temporary file in the
    same folder, renamed over ``path`` once written)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", text=True)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would have made it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def _best_combination(
    best: _Tried,
    singles: Sequence[_Tried],
    tried: Callable[[Change], _Tried],
    progress: Progress,
) -> _Tried | None:
    """Greedy: from the best helpful change, add each compatible change (in rank order, a
    change that does not help alone included: pinning the tool order saves nothing while a
    timestamp on top breaks every prefix, and much once it has moved) whose addition beats
    the combination so far. None when nothing could be added."""
    others = [item for item in singles if item is not best]
    progress.start("combining changes", len(others))
    chosen, current = [best], best
    for item in others:
        progress.advance(1)
        members = [member.change for member in chosen]
        if not compatible(members, item.change):
            continue
        change = combine([*members, item.change], "")
        candidate = tried(change)
        if candidate.beats(current):
            chosen.append(item)
            current = candidate
    if len(chosen) == 1:
        return None
    alone = ", ".join(
        f"{member.change.kind} alone {member.report.hit_rate_gain_pp:+.2f}pp"
        + (
            f" / saves ${member.report.saving_per_1k_requests:.4f}"
            if member.report.saving_per_1k_requests
            else ""
        )
        for member in chosen
    )
    rationale = (
        f"Together {current.report.hit_rate_gain_pp:+.2f}pp ({alone}): each removes a"
        " difference the others leave. " + " ".join(member.change.rationale for member in chosen)
    )
    return _Tried(
        current.change,
        current.report.model_copy(update={"rationale": rationale}),
        current.changed,
    )


def _noting_combination(item: _Tried, combination: _Tried) -> _Tried:
    """A change that does not help alone, noting the combination it helps in."""
    if item.change.kind not in combination.report.components:
        return item
    why = (
        f"{item.report.why_not}; combined it helps: it is part of"
        f" {combination.report.kind} ({combination.report.hit_rate_gain_pp:+.2f}pp)"
    )
    return _Tried(item.change, item.report.model_copy(update={"why_not": why}), item.changed)


def _why_not(
    outcomes: Sequence[TargetOutcome],
    saving: Decimal,
    gain: Decimal,
    *,
    priced: bool,
    uncached: Sequence[str] = (),
) -> str:
    """Why a change does not help, with the figures that say so; ``uncached``: the targets
    whose contract offers no prompt caching (nothing saves there)."""
    if priced:
        verdict = (
            "saves nothing"
            if saving == 0
            else f"costs ${-saving:.4f} more per {PER_REQUESTS:,} requests"
        )
    else:
        verdict = "no hit-rate gain" if gain == 0 else f"lowers the hit rate ({gain:+.2f}pp)"
    details = []
    for outcome in outcomes:
        detail = (
            f"{outcome.target}: hit rate {outcome.hit_rate_before:.2%} ->"
            f" {outcome.hit_rate_after:.2%}"
        )
        if outcome.cost_per_1k_before is not None and outcome.cost_per_1k_after is not None:
            detail += (
                f", ${outcome.cost_per_1k_before:.4f} -> ${outcome.cost_per_1k_after:.4f}"
                f" per {PER_REQUESTS:,} requests"
            )
        if outcome.input_tokens_after != outcome.input_tokens_before:
            detail += (
                f", {outcome.input_tokens_after - outcome.input_tokens_before:+,} input tokens"
            )
        if outcome.target in uncached:
            detail += f", {NO_CACHING}: no reordering saves anything"
        details.append(detail)
    return f"{verdict} ({'; '.join(details)})"


def _validate(
    engine: EngineValidation,
    prompt_set: PromptSet,
    shown: Sequence[_Tried],
    request: SuggestRequest,
    store_url: str | None,
) -> tuple[EngineRun, list[SuggestionReport]]:
    """The original and every suggestion shown, each replayed on the engine."""
    original = replay_on_engine(
        engine, prompt_set.records, prompt_set.label, model=request.model, store_url=store_url
    )
    reports = []
    for item in shown:
        run = replay_on_engine(
            engine,
            item.changed.records,
            f"{prompt_set.label} with {item.report.kind}",
            model=request.model,
            store_url=store_url,
        )
        reports.append(
            item.report.model_copy(
                update={"engine": _on_engine(original, run, engine.gain_tolerance_pp)}
            )
        )
    return original, reports


def _on_engine(original: EngineRun, run: EngineRun, tolerance: Decimal) -> SuggestionOnEngine:
    simulated = (run.simulated_hit_rate - original.simulated_hit_rate) * 100
    measured = (run.measured_hit_rate - original.measured_hit_rate) * 100
    difference = measured - simulated
    flagged = abs(difference) > tolerance
    flag = None
    if flagged:
        flag = (
            f"measured gain {measured:+.4f}pp differs from the simulated {simulated:+.4f}pp by"
            f" {difference:+.4f}pp (tolerance {tolerance}pp); requests whose cached tokens"
            f" differ: {original.mismatched_requests} of the original's,"
            f" {run.mismatched_requests} of this suggestion's"
        )
    return SuggestionOnEngine(
        run=run,
        simulated_gain_pp=simulated,
        measured_gain_pp=measured,
        gain_difference_pp=difference,
        tolerance_pp=tolerance,
        flagged=flagged,
        flag=flag,
        ttft_p50_change=_relative(original.ttft.p50_s, run.ttft.p50_s),
        ttft_p95_change=_relative(original.ttft.p95_s, run.ttft.p95_s),
    )


def _relative(before: float | None, after: float | None) -> float | None:
    if before is None or after is None or before <= 0:
        return None
    return after / before - 1
