"""``estimate``: what a prompt log costs under several providers' dated caching contracts.

For every target (provider, model) the contract in force on ``at`` (default: today, UTC) is
looked up first; the same contract applies to every request whatever the request's own
date: the question answered is "what would this traffic cost under the terms in force on
``at``". Targets whose models share a tokenizer share one pass over the log
(``targets.tokenizer_passes``); a pass is run by an executor (:class:`LocalExecutor` in this
process, or the Ray executor in ``passes.ray``) and its targets' totals come back to be
put in the user's order. Nothing else differs between the CLI, the API, service jobs and Ray.

Hit rate is token-weighted over the whole log from a cold cache (:data:`HIT_RATE_DEFINITION`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, Location, LogRecordError
from cachecast.logs.errors import bad_line_count
from cachecast.passes.executors import LocalExecutor, PassExecutor, PassWork
from cachecast.passes.log_input import check_reading
from cachecast.passes.per_request import PerRequestTable, check_table_path
from cachecast.passes.progress import NoProgress, Progress
from cachecast.passes.targets import (
    ResolvedTarget,
    TokenizerPass,
    parse_targets,
    resolve_targets,
    tokenizer_passes,
)
from cachecast.simulator.pricing import (
    PerRequestRow,
    TargetTotals,
)
from cachecast.usecases.predictions import (
    CalibrationReport,
    MissCauseTotal,
    TimelinePoint,
    calibration_of,
    miss_causes_of,
    notes_of,
    timeline_of,
)
from cachecast.usecases.reports import (
    TARGET_NOTES,
    ContractReference,
    CostBreakdown,
    FractionText,
    InputIssue,
    Money,
    ObservedReads,
    PredictedReads,
    Report,
    issues_of,
)
from cachecast.usecases.requests import LogRequest
from cachecast.usecases.session_prompts import session_paths
from cachecast.usecases.session_reports import ClientReport, client_of

HIT_RATE_DEFINITION = (
    "cache_read_tokens / input_tokens (prompt tokens read from cache, all targets)"
)


class EstimateRequest(LogRequest):
    """Price ``log`` under every target's contract in force on ``at``."""

    targets: list[str] = Field(min_length=1, description="PROVIDER:MODEL pairs")
    at: dt.date | None = Field(default=None, description="default: today, UTC")
    auto_cache_control: bool = Field(
        default=False,
        description="for explicit-breakpoint contracts (Anthropic), assume each request ends"
        " its latest message with a breakpoint (top-level automatic cache_control)",
    )
    per_request: Path | None = Field(
        default=None, description="also write every billed request to this .csv/.parquet file"
    )
    explain_misses: bool = Field(
        default=True,
        description="attribute every request's uncached tokens to their causes (miss_causes)."
        " The replay then reads every prompt's token ids; without it a distributed run ships"
        " only block keys (docs/capacity-plan.md)",
    )


class ReconciliationReport(Report):
    """Predicted against observed cache reads and writes, over the requests whose usage the
    log carries and whose model is the target's own."""

    requests: int
    exact_matches: int
    exact_match_share: FractionText
    mean_abs_error_tokens: FractionText
    mean_abs_error_cost: FractionText
    predicted_cache_read_tokens: PredictedReads = Field(
        description="predicted reads, summed over the requests whose usage reports reads"
    )
    observed_cache_read_tokens: ObservedReads = Field(
        description="observed reads, summed over the same requests"
    )
    reads_not_reported: int = Field(
        default=0,
        description="requests predicted to read whose usage reports no cache read (the field"
        " absent, not 0): never exact, their reads in neither sum (simulator.reconcile)",
    )


class TargetEstimate(Report):
    """One target's totals over the whole log."""

    provider: str = Field(examples=["openai"])
    model: str = Field(examples=["gpt-4o"])
    contract: ContractReference
    tokenizer: str
    requests: int
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_tokens_by_ttl: dict[str, int]
    uncached_input_tokens: int
    output_tokens: int
    hit_rate: float
    exact_tokens: bool
    requests_with_breakpoints: int
    assumed_breakpoint: str | None
    cost: CostBreakdown
    cost_without_cache: Money
    savings: Money
    reconciliation: ReconciliationReport | None
    miss_causes: list[MissCauseTotal] = Field(
        default_factory=list,
        description="prompt tokens not read from cache by cause (they add up to input_tokens"
        " - cache_read_tokens), and what reading them would have saved",
    )
    calibration: list[CalibrationReport] = Field(
        default_factory=list, description="approximate tokenizers: how they were calibrated"
    )
    timeline: list[TimelinePoint] = Field(default_factory=list, description="hit rate over time")
    notes: list[str] = Field(default_factory=list, description=TARGET_NOTES)

    @classmethod
    def of(cls, result: TargetTotals) -> TargetEstimate:
        totals = result.totals  # the token counts and bills; the rest is the target's
        return cls.read(
            totals,
            provider=result.target.provider,
            model=result.target.model,
            contract=ContractReference.of(result.contract),
            tokenizer=result.tokenizer,
            cache_write_tokens=totals.cache_write_total,
            cache_write_tokens_by_ttl=dict(sorted(totals.cache_write_tokens.items())),
            requests_with_breakpoints=result.requests_with_breakpoints,
            assumed_breakpoint=result.assumed_breakpoint,
            cost=CostBreakdown.of(totals.cost),
            cost_without_cache=totals.cost_without_cache.total,
            reconciliation=result.reconciliation if result.reconciliation.requests else None,
            miss_causes=miss_causes_of(result),
            timeline=timeline_of(result),
            notes=notes_of(result),
        )

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"


class EstimateReport(Report):
    """Everything ``estimate`` answers: one entry per target, in the order asked."""

    at: dt.date
    hit_rate_definition: str = HIT_RATE_DEFINITION
    sources: list[str]
    skipped_lines: int
    errors: list[InputIssue]
    targets: list[TargetEstimate]
    client: ClientReport | None = Field(default=None, description="agent sessions: the client")


def today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


def plan_estimate(
    request: EstimateRequest, store: ContractStore
) -> tuple[dt.date, list[ResolvedTarget], list[TokenizerPass]]:
    """The day, every target resolved (an unknown one fails here), and the passes the log
    will be read in: what a caller may check before committing to the work."""
    day = request.at or today()
    resolved = resolve_targets(parse_targets(request.targets), store, day)
    return day, resolved, tokenizer_passes(resolved)


def estimate(
    request: EstimateRequest,
    store: ContractStore,
    *,
    progress: Progress | None = None,
    executor: PassExecutor | None = None,
    on_row: Callable[[PerRequestRow], None] | None = None,
) -> EstimateReport:
    """Price the log under every target; see the module docstring.

    Checked before any work: the targets (format, contract, tokenizer), the log's sources,
    the per-request table's path. ``progress`` counts requests as they are replayed: the
    first pass without a total, the later ones (other tokenizers) with the first's count.
    ``on_row`` receives every billed request of every target (pass by pass, each pass in
    replay order), as the per-request table does.
    """
    day, resolved, passes = plan_estimate(request, store)
    request.log.check_sources()
    paths = session_paths(request.log)
    if paths is not None:
        # Agent sessions: priced from their observed usage, predicted under their client's
        # profile (session_estimate), not tokenized.
        from cachecast.usecases.session_estimate import session_estimate

        if request.per_request is not None:
            raise BadInputError(
                "agent sessions are priced from their observed usage: no per-request table",
                location=Location(field="per_request"),
            )
        return session_estimate(request, paths, day, resolved, store, progress or NoProgress())
    if request.per_request is not None:
        check_table_path(request.per_request)
    progress = progress or NoProgress()
    # Requests, not lines (a transcript has many lines a request): the first pass counts
    # them as it reads, later passes (other tokenizers) know how many there are.
    progress.start("replaying requests", None)
    executor = executor or LocalExecutor()
    table = PerRequestTable(request.per_request) if request.per_request is not None else None
    sink = _rows_to(table, on_row)
    results: list[TargetTotals | None] = [None] * len(resolved)
    calibrations: list[list[CalibrationReport]] = [[] for _ in resolved]
    errors: list[LogRecordError] = []
    try:
        for number, tokenizer_pass in enumerate(passes):
            outcome = executor.run_pass(
                PassWork(
                    log=request.log,
                    tokenizer_pass=tokenizer_pass,
                    targets=[resolved[index] for index in tokenizer_pass.members],
                    day=day,
                    store=store,
                    auto_cache_control=request.auto_cache_control,
                    progress=progress.advance,
                    per_request=sink,
                    explain_misses=request.explain_misses,
                )
            )
            if number == 0:  # every pass reads the same lines: check and keep them once
                check_reading(
                    request.log,
                    outcome.errors,
                    outcome.requests_by_source,
                    elsewhere=outcome.counted_elsewhere,
                )
                errors = outcome.errors
                if len(passes) > 1:
                    read = sum(outcome.requests_by_source.values())
                    progress.start(
                        f"replaying requests ({len(passes) - 1} more tokenizer(s))",
                        read * (len(passes) - 1),
                    )
            calibration = calibration_of(outcome.calibration or {})
            for index, totals in zip(tokenizer_pass.members, outcome.totals, strict=True):
                results[index] = totals
                calibrations[index] = calibration
        if table is not None:
            table.close()
    except BaseException:
        if table is not None:
            table.discard()  # no half-written table after an error
        raise
    return EstimateReport(
        client=client_of(request),
        at=day,
        sources=request.log.source_names,
        skipped_lines=bad_line_count(errors),
        errors=issues_of(errors),
        targets=[
            TargetEstimate.of(result).model_copy(update={"calibration": calibration})
            for result, calibration in zip(results, calibrations, strict=True)
            if result is not None
        ],
    )


def _rows_to(
    table: PerRequestTable | None, on_row: Callable[[PerRequestRow], None] | None
) -> Callable[[PerRequestRow], None] | None:
    if table is None or on_row is None:
        return table or on_row

    def both(row: PerRequestRow) -> None:
        table(row)
        on_row(row)

    return both
