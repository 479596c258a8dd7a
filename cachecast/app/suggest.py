"""``suggest``: layout changes that make prompts share longer prefixes, re-simulated, ranked.

The prompt set's volatile spans are found (``layouts.volatile``), every applicable change
(``layouts.changes``) is applied to every request and replayed under the targets
(``app.evaluation``: hosted targets priced by ``estimate``, self-hosted ones simulated), and
the changes are ranked by savings: cost per 1,000 requests summed over the priced targets,
then hit-rate gain (for targets without a price), safe changes before those needing review
(docs/layouts.md). A change that saves nothing is still listed, after the others.

With ``validate_on_engine`` the original requests and each suggestion shown are also replayed
on a real vLLM server (``cachecast.gpu_backend``), tokenized as ``model`` (the served model),
and the measured hit rates are reported beside the simulator's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from cachecast.app.evaluation import (
    DecimalNumber,
    SideMetrics,
    TargetSettings,
    evaluate,
    plan_targets,
)
from cachecast.app.progress import NoProgress, Progress
from cachecast.app.prompt_sets import PromptSet, PromptSource, load_prompt_set
from cachecast.app.reports import Money, Report
from cachecast.contracts import ContractStore
from cachecast.errors import BadInputError, Location
from cachecast.layouts.changes import EXPLICIT_MODES, candidate_changes, change_diff
from cachecast.layouts.textview import prompt_parts
from cachecast.layouts.volatile import (
    Analysis,
    ScopeSplit,
    ToolOrderIssue,
    VolatileSpan,
    analyze,
    describe_span,
)


class EngineValidation(BaseModel):
    """A vLLM OpenAI-compatible server to replay the original and the suggestions on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(examples=["http://127.0.0.1:8000"])
    api_key: SecretStr | None = Field(default=None, description="sent as a bearer token")


class SuggestRequest(TargetSettings):
    """Suggest changes to the prompt set ``source`` under ``targets``."""

    source: PromptSource
    top: int = Field(default=5, description="how many suggestions the report keeps")
    validate_on_engine: EngineValidation | None = None


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

    @classmethod
    def of(cls, span: VolatileSpan) -> VolatileSpanReport:
        return cls.model_validate({item.name: getattr(span, item.name) for item in fields(span)})

    def describe(self) -> str:
        return describe_span(self)


class ToolOrderReport(Report):
    template: int
    distinct_orders: int
    requests: int
    canonical_order: list[str]

    @classmethod
    def of(cls, issue: ToolOrderIssue) -> ToolOrderReport:
        return cls(
            template=issue.template,
            distinct_orders=issue.orders,
            requests=issue.requests,
            canonical_order=list(issue.canonical),
        )


class ScopeSplitReport(Report):
    template: int
    scopes: int
    requests: int

    @classmethod
    def of(cls, split: ScopeSplit) -> ScopeSplitReport:
        return cls(template=split.template, scopes=split.scopes, requests=split.requests)


class AnalysisReport(Report):
    templates: list[int] = Field(description="requests of each template group")
    volatile_spans: list[VolatileSpanReport]
    tool_order: list[ToolOrderReport]
    scope_splits: list[ScopeSplitReport]

    @classmethod
    def of(cls, analysis: Analysis) -> AnalysisReport:
        return cls(
            templates=[len(group) for group in analysis.groups],
            volatile_spans=[VolatileSpanReport.of(span) for span in analysis.spans],
            tool_order=[ToolOrderReport.of(issue) for issue in analysis.tool_order],
            scope_splits=[ScopeSplitReport.of(split) for split in analysis.scope_splits],
        )


class TargetOutcome(Report):
    """One target before and after a change."""

    target: str
    hit_rate_before: DecimalNumber
    hit_rate_after: DecimalNumber
    cost_per_1k_before: Money | None
    cost_per_1k_after: Money | None
    saving_per_1k_requests: Money | None

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
        )


class EngineMeasurementReport(Report):
    """One replay on the engine: measured against the simulator's predicted cached tokens."""

    hit_rate: float
    measured_cached_tokens: int | None
    predicted_cached_tokens: int | None
    prompt_tokens: int


class SuggestionReport(Report):
    kind: str
    title: str
    rationale: str
    needs_review: bool
    saving_per_1k_requests: Money = Field(description="summed over the priced targets")
    hit_rate_gain_pp: DecimalNumber = Field(description="summed over the targets")
    targets: list[TargetOutcome]
    diff: str
    engine: EngineMeasurementReport | None = None


class SuggestReport(Report):
    input: str
    at: dt.date
    targets: list[str]
    analysis: AnalysisReport
    suggestions: list[SuggestionReport] = Field(description="best first, at most 'top'")
    engine_original: EngineMeasurementReport | None = None


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tried:
    """A change replayed: its report and the requests after it (for the engine)."""

    report: SuggestionReport
    records: list[dict[str, Any]]

    @property
    def rank_key(self) -> tuple[Decimal, Decimal, bool]:
        return (
            -self.report.saving_per_1k_requests,
            -self.report.hit_rate_gain_pp,
            self.report.needs_review,
        )


def suggest(
    request: SuggestRequest, store: ContractStore | None, *, progress: Progress | None = None
) -> SuggestReport:
    """Every applicable change, re-simulated under the targets, best first; see the module
    docstring. ``store`` may be None when every target is self-hosted. ``progress`` counts
    the changes replayed."""
    plan = plan_targets(request, store)
    targets, day = plan.targets, plan.day
    if request.validate_on_engine is not None and request.model is None:
        raise BadInputError(
            "validating on an engine needs the served model to tokenize with",
            location=Location(field="model"),
        )
    prompt_set = load_prompt_set(request.source, "input", model=request.model)
    analysis = analyze(prompt_set.records)

    def replay(side: PromptSet) -> list[SideMetrics]:
        return evaluate(side, targets, day=day, store=store, token_model=plan.token_model).metrics

    before = replay(prompt_set)
    has_breakpoints = any(
        part.breakpoint for record in prompt_set.records for part in prompt_parts(record)
    )
    explicit_targets = [
        target.name
        for target, metrics in zip(targets, before, strict=True)
        if metrics.contract is not None and metrics.contract.mode in EXPLICIT_MODES
    ]
    changes = candidate_changes(
        analysis, explicit_targets=[] if has_breakpoints else explicit_targets
    )
    progress = progress or NoProgress()
    progress.start("re-simulating changes", len(changes))
    tried: list[_Tried] = []
    for change in changes:
        records = change.transform(list(prompt_set.records))
        after = replay(prompt_set.changed(records))
        outcomes = [
            TargetOutcome.of(target.name, old, new)
            for target, old, new in zip(targets, before, after, strict=True)
        ]
        report = SuggestionReport(
            kind=change.kind,
            title=change.title,
            rationale=change.rationale,
            needs_review=change.needs_review,
            saving_per_1k_requests=sum(
                (
                    o.saving_per_1k_requests
                    for o in outcomes
                    if o.saving_per_1k_requests is not None
                ),
                Decimal(0),
            ),
            hit_rate_gain_pp=sum(
                (o.hit_rate_after - o.hit_rate_before for o in outcomes), Decimal(0)
            )
            * 100,
            targets=outcomes,
            diff=change_diff(
                change,
                prompt_set.records,
                records,
                layout=prompt_set.layout,
                name=prompt_set.label,
            ),
        )
        tried.append(_Tried(report, records))
        progress.advance(1)
    tried.sort(key=lambda item: item.rank_key)
    shown = tried[: max(request.top, 0)]
    engine_original = None
    suggestions = [item.report for item in shown]
    if request.validate_on_engine is not None:
        assert request.model is not None
        engine = request.validate_on_engine
        engine_original = _measure(engine, request.model, prompt_set.records, "original")
        suggestions = [
            item.report.model_copy(
                update={"engine": _measure(engine, request.model, item.records, item.report.kind)}
            )
            for item in shown
        ]
    return SuggestReport(
        input=prompt_set.label,
        at=day,
        targets=[target.name for target in targets],
        analysis=AnalysisReport.of(analysis),
        suggestions=suggestions,
        engine_original=engine_original,
    )


def _measure(
    engine: EngineValidation, model: str, records: list[dict[str, Any]], label: str
) -> EngineMeasurementReport:
    """Replay ``records`` on the engine (``cachecast.gpu_backend``; imported here, so that
    suggesting without an engine does not load the engine client)."""
    from cachecast.gpu_backend.engine.layout_validation import measure_records_on_engine

    api_key = engine.api_key.get_secret_value() if engine.api_key is not None else None
    measured = measure_records_on_engine(engine.url, model, api_key, records, label)
    return EngineMeasurementReport(
        hit_rate=measured.hit_rate,
        measured_cached_tokens=measured.measured_cached_tokens,
        predicted_cached_tokens=measured.predicted_cached_tokens,
        prompt_tokens=measured.prompt_tokens,
    )
