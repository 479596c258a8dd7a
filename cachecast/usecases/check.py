"""``check``: does a candidate prompt layout (or log) regress against a baseline?

Both sides are replayed under every target (``usecases.evaluation``); the candidate regresses
when, for any target, its cost per 1,000 requests rises more than ``max_cost_increase``, its
hit rate falls more than ``max_hit_rate_drop``, or its hit rate is under ``min_hit_rate``
(docs/layouts.md). On a ``vllm-engine:URL`` target both sides are replayed on the engine: the
hit rates are measured, and the candidate also regresses when its median time to first token
rises more than ``max_ttft_increase``. The report also names where the candidate's prompts
first stop sharing a prefix with the baseline's. A regression is an answer, not an error:
``passed`` is False (the CLI exits 1, the API answers 200).

:func:`check` compares two sides; :func:`check_each` compares each of several files with
itself at a git revision (what a pre-commit hook or a CI job passes), skipping files that are
not layouts and files the revision does not have yet.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from cachecast.contracts import ContractStore
from cachecast.core.errors import LogRecordError
from cachecast.layouts.divergence import Tokenize, find_divergence
from cachecast.layouts.spec import NotALayoutError
from cachecast.passes.prompt_sets import (
    MissingAtRevisionError,
    PromptSet,
    PromptSource,
    load_prompt_set,
)
from cachecast.tokenizers import read_records
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.evaluation import (
    PER_REQUESTS,
    DecimalNumber,
    LayoutTarget,
    SideMetrics,
    TargetPlan,
    TargetSettings,
    evaluate,
    plan_targets,
)
from cachecast.usecases.reports import Money, Ratio, Report
from cachecast.usecases.thresholds import DEFAULT_THRESHOLDS, Thresholds

RATIO_PLACES = Decimal("0.000001")


class CheckSettings(TargetSettings):
    """What every check shares: the targets, the day, the tokenization, the limits."""

    thresholds: Thresholds | None = Field(
        default=None, description="None, or no limit set: the defaults (+5% cost, -2pp)"
    )
    max_layout_requests: int | None = Field(
        default=None, gt=0, description="the most requests a layout may expand to"
    )
    on_bad_record: Literal["stop", "reject"] = Field(
        default="stop",
        description="a bad record is bad input either way: the first stops the check, or all"
        " are read and listed",
    )


class CheckRequest(CheckSettings):
    """Compare ``candidate`` with ``baseline``."""

    baseline: PromptSource
    candidate: PromptSource


class CheckEachRequest(CheckSettings):
    """Compare each of ``paths`` (at ``candidate_ref``, default the working tree) with the
    same path at ``baseline_ref``."""

    paths: list[Path] = Field(min_length=1)
    baseline_ref: str
    candidate_ref: str | None = None
    values_path: Path | None = None


# ---------------------------------------------------------------------------------------------
# The report.


class TargetCheck(Report):
    """Both sides under one target, and the limits the candidate breaks there."""

    target: str = Field(examples=["openai:gpt-4o"])
    kind: Literal["contract", "vllm", "vllm-engine"]
    passed: bool
    violations: list[str]
    baseline: SideMetrics
    candidate: SideMetrics
    hit_rate_change_pp: DecimalNumber
    cost_change_per_1k_requests: Money | None
    cost_change_ratio: Ratio | None

    @classmethod
    def of(
        cls,
        target: LayoutTarget,
        baseline: SideMetrics,
        candidate: SideMetrics,
        thresholds: Thresholds,
    ) -> TargetCheck:
        before, after = baseline.cost_per_1k_requests, candidate.cost_per_1k_requests
        change = None if before is None or after is None else after - before
        ratio = None
        if change is not None and before:
            ratio = (change / before).quantize(RATIO_PLACES)
        violations = judge(baseline, candidate, thresholds)
        return cls(
            target=target.name,
            kind=target.kind,
            passed=not violations,
            violations=violations,
            baseline=baseline,
            candidate=candidate,
            hit_rate_change_pp=(candidate.hit_rate - baseline.hit_rate) * 100,
            cost_change_per_1k_requests=change,
            cost_change_ratio=ratio,
        )


class SegmentReference(Report):
    kind: str | None = Field(examples=["system"])
    label: str | None = Field(examples=["messages[0]"])


class DivergenceReport(Report):
    """The earliest token where a candidate prompt stops sharing the baseline's prefix."""

    request_id: str
    token_position: int | None = Field(description="None where a side has no token ids")
    segment: SegmentReference
    baseline_text: str
    candidate_text: str
    differing_requests: int
    compared_requests: int


class CheckReport(Report):
    """The verdict on one candidate: ``passed`` is False when any target regresses."""

    passed: bool
    baseline: str = Field(examples=["prompts/agent.yaml@origin/main"])
    candidate: str = Field(examples=["prompts/agent.yaml"])
    at: dt.date
    thresholds: Thresholds
    targets: list[TargetCheck]
    divergence: DivergenceReport | None = Field(
        description="first token position where the prefixes differ, its segment and text"
    )
    notes: list[str]


class SkippedFile(Report):
    path: str
    reason: Literal["not_a_layout", "new_file"]
    message: str


class CheckRunReport(Report):
    """Several files checked: every check, and the files passed over."""

    passed: bool
    checks: list[CheckReport]
    skipped: list[SkippedFile]


# ---------------------------------------------------------------------------------------------


def judge(baseline: SideMetrics, candidate: SideMetrics, thresholds: Thresholds) -> list[str]:
    """Every limit the candidate breaks, in words (docs/layouts.md has the rules)."""
    violations: list[str] = []
    limit = thresholds.max_cost_increase
    before, after = baseline.cost_per_1k_requests, candidate.cost_per_1k_requests
    if limit is not None and before is not None and after is not None:
        if before == 0:
            if after > 0:
                violations.append(f"cost per {PER_REQUESTS:,} requests rose from 0 to ${after:.4f}")
        elif (after - before) / before > limit:
            violations.append(
                f"cost per {PER_REQUESTS:,} requests +{(after - before) / before:.2%}"
                f" (${before:.4f} -> ${after:.4f}) exceeds +{limit:.2%}"
            )
    drop = baseline.hit_rate - candidate.hit_rate
    if thresholds.max_hit_rate_drop is not None and drop > thresholds.max_hit_rate_drop:
        violations.append(
            f"hit rate fell {drop * 100:.2f}pp"
            f" ({baseline.hit_rate:.2%} -> {candidate.hit_rate:.2%}),"
            f" more than {thresholds.max_hit_rate_drop * 100:g}pp"
        )
    if thresholds.min_hit_rate is not None and candidate.hit_rate < thresholds.min_hit_rate:
        violations.append(
            f"hit rate {candidate.hit_rate:.2%} is under the minimum {thresholds.min_hit_rate:.2%}"
        )
    violations.extend(_ttft_violations(baseline, candidate, thresholds.max_ttft_increase))
    return violations


def _ttft_violations(
    baseline: SideMetrics, candidate: SideMetrics, limit: Decimal | None
) -> list[str]:
    """The median TTFT measured on an engine (both sides replayed on it) rising more than
    ``limit``, relative."""
    if limit is None or baseline.engine is None or candidate.engine is None:
        return []
    before, after = baseline.engine.ttft.p50_s, candidate.engine.ttft.p50_s
    if before is None or after is None or before <= 0:
        return []
    change = Decimal(str(after)) / Decimal(str(before)) - 1
    if change <= limit:
        return []
    return [
        f"median TTFT +{change:.2%} ({before * 1000:.1f} ms -> {after * 1000:.1f} ms)"
        f" exceeds +{limit:.2%}"
    ]


def _thresholds(settings: CheckSettings) -> Thresholds:
    thresholds = settings.thresholds
    return DEFAULT_THRESHOLDS if thresholds is None or thresholds.is_empty else thresholds


def _load(source: PromptSource, role: str, settings: CheckSettings) -> PromptSet:
    return load_prompt_set(
        source, role, model=settings.model, max_layout_requests=settings.max_layout_requests
    )


def check(request: CheckRequest, store: ContractStore | None) -> CheckReport:
    """Replay both sides under every target and judge the candidate. ``store`` may be None
    when every target is self-hosted. Checked before any side is read: the targets (format,
    contract in force, tokenizer)."""
    plan = plan_targets(request, store)
    baseline = _load(request.baseline, "baseline", request)
    candidate = _load(request.candidate, "candidate", request)
    return _compare(plan, baseline, candidate, request)


def check_each(request: CheckEachRequest, store: ContractStore | None) -> CheckRunReport:
    """Each path against itself at the baseline revision. With several paths, a YAML file
    that is not a layout is skipped (a hook passes every staged YAML file); a file the
    baseline revision does not have has nothing to regress from and is skipped too."""
    plan = plan_targets(request, store)
    checks: list[CheckReport] = []
    skipped: list[SkippedFile] = []
    for path in request.paths:

        def side(ref: str | None, role: str, path: Path = path) -> PromptSet:
            source = PromptSource(path=path, ref=ref, values_path=request.values_path)
            return _load(source, role, request)

        try:
            candidate = side(request.candidate_ref, "candidate")
        except NotALayoutError:
            if len(request.paths) == 1:
                raise
            skipped.append(
                SkippedFile(
                    path=str(path), reason="not_a_layout", message=f"{path}: not a layout, skipped"
                )
            )
            continue
        try:
            baseline = side(request.baseline_ref, "baseline")
        except MissingAtRevisionError:
            skipped.append(
                SkippedFile(
                    path=str(path),
                    reason="new_file",
                    message=f"{path} does not exist at {request.baseline_ref}: new file,"
                    " nothing to compare",
                )
            )
            continue
        checks.append(_compare(plan, baseline, candidate, request))
    return CheckRunReport(
        passed=all(report.passed for report in checks), checks=checks, skipped=skipped
    )


def _compare(
    plan: TargetPlan, baseline: PromptSet, candidate: PromptSet, settings: CheckSettings
) -> CheckReport:
    before, after = (
        evaluate(
            side,
            plan.targets,
            day=plan.day,
            store=plan.store,
            token_model=plan.replay_model,
            on_bad_record=settings.on_bad_record,
            engine=plan.engine,
        )
        for side in (baseline, candidate)
    )
    thresholds = _thresholds(settings)
    comparisons = [
        TargetCheck.of(target, base, cand, thresholds)
        for target, base, cand in zip(plan.targets, before.metrics, after.metrics, strict=True)
    ]
    divergence = find_divergence(baseline.records, candidate.records, _tokenizing(plan.token_model))
    notes = [
        f"{side.label} expanded as {side.layout.arrival.describe()}"
        for side in (baseline, candidate)
        if side.layout is not None
    ]
    return CheckReport(
        passed=all(comparison.passed for comparison in comparisons),
        baseline=baseline.label,
        candidate=candidate.label,
        at=plan.day,
        thresholds=thresholds,
        targets=comparisons,
        divergence=None if divergence is None else DivergenceReport.model_validate(divergence),
        notes=notes,
    )


def _tokenizing(model: str | None) -> Tokenize:
    """Records tokenized as ``model`` (None: each record's own), one per record (None where
    a record cannot be): what the divergence finder compares where two requests differ."""

    def tokenize(records: Sequence[dict[str, Any]]) -> list[TokenizedRequest | None]:
        tokenized: list[TokenizedRequest | None] = [None] * len(records)
        errors: list[LogRecordError] = []  # a side's bad records were refused by its replay
        for request in read_records(records, "divergence", model=model, errors=errors):
            tokenized[request.line - 1] = request
        return tokenized

    return tokenize
