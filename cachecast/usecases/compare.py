"""``compare``: hosted caching bills against a self-hosted vLLM deployment, for one log.

The self-hosted side is :func:`cachecast.economics.compare.compare_self_hosted` on the log's
requests, read through :class:`~cachecast.passes.log_passes.LogPasses` (tokenized as
``tokenizer`` or each record's own model) in the replay order of every other command,
timestamp order within the reorder window: a first pass for the sizing (numbers per request),
one more for every replay at once, so that the memory follows the live cache states, not the
log. Every hosted target is priced by :func:`cachecast.usecases.estimate.estimate` on the
same :class:`~cachecast.passes.log_input.LogInput` (each target counts the log with its own
tokenizer), and its :class:`~cachecast.usecases.estimate.TargetEstimate` is set against the
self-hosted cost (:func:`~cachecast.economics.versus.versus`). The CLI and
``POST /v1/comparisons`` both call :func:`compare`.

Agent sessions (every file of the log a Claude Code transcript or Codex CLI rollout) are not
tokenized: their transcripts lack the client's system prompt and tools. They are read once,
predicted under their client's profile, and replayed as block keys from their observed prompt
lengths and lineages (:class:`~cachecast.usecases.session_prompts.SessionPrompts`); the usage
report's self-hosted what-if hands its requests over as ``sessions``. Their hosted targets
are ``estimate``'s on sessions: the observed usage under each contract.

Checked before any log is read: the deployment (model, accelerator, dtypes), the options,
every target's contract, the measurement. A stored vLLM measurement (``measurement_id``)
replaces the roofline prefill model; ``timing_source`` says which was used, and
``measurement`` shows the measurement's passport, its fit, and the roofline model set against
it: on the measured requests themselves (measured TTFT against the roofline prefill of the
same cached and new tokens) and on this log (the fitted prefill against the roofline's), with
a warning for every way the measured engine differs from the deployment compared.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from pydantic import ConfigDict, Field

from cachecast.core import db
from cachecast.core.errors import BadInputError, ConfigurationError, Location, LogRecordError
from cachecast.economics.capacity import DEFAULT_BLOCK_SIZE, DEFAULT_MAX_NUM_SEQS, Deployment
from cachecast.economics.compare import (
    DEFAULT_CAPACITY_FACTORS,
    DEFAULT_MAX_UTILIZATION,
    HIT_RATE_DEFINITION,
    CapacityPoint,
    PrefillSpread,
    SelfHosted,
    SelfHostedComparison,
    check_comparison_options,
    compare_self_hosted,
)
from cachecast.economics.gpu_hours import monthly_self_hosted_cost
from cachecast.economics.host_tier import HostTier
from cachecast.economics.measured import FittedPrefill, UnknownMeasurementError, fit_from_report
from cachecast.economics.sizing import SizedLog
from cachecast.economics.timing import prefill_seconds_many
from cachecast.economics.versus import BreakEvenVolume as BreakEvenVolume
from cachecast.economics.versus import Versus, versus
from cachecast.logs.errors import bad_line_count
from cachecast.passes.log_input import LogInput
from cachecast.passes.log_passes import LogPasses
from cachecast.passes.progress import NoProgress, Progress
from cachecast.sessions.reading import ModelDefaults
from cachecast.usecases.capacity import (
    CapacityFacts,
    DeploymentFacts,
    DeploymentRequest,
    resolve_deployment,
)
from cachecast.usecases.estimate import EstimateRequest, TargetEstimate, estimate, plan_estimate
from cachecast.usecases.measure import Passport
from cachecast.usecases.reports import (
    ContractReference,
    CostBreakdown,
    InputIssue,
    Money,
    Report,
    issues_of,
)
from cachecast.usecases.session_prompts import (
    SHARING,
    SessionPrompts,
    read_predicted,
    session_paths,
)

if TYPE_CHECKING:
    from cachecast.contracts import ContractStore
    from cachecast.sessions.replay import PredictedRequest

GIB = 2**30


class CompareRequest(DeploymentRequest):
    """Self-host ``model`` on ``gpus`` x ``gpu`` for ``log``, against every hosted target."""

    log: LogInput
    gpu_price: Decimal | None = Field(
        default=None, description="US$ per GPU-hour; without it only GPU-hours"
    )
    targets: list[str] = Field(
        default_factory=list, description="hosted PROVIDER:MODEL pairs to compare with"
    )
    at: dt.date | None = Field(default=None, description="contracts in force on this day")
    tokenizer: str | None = Field(
        default=None, description="model whose tokenizer counts the self-hosted tokens"
    )
    host_memory_gib: float | None = Field(
        default=None, description="host DRAM KV tier per replica (default: unbounded)"
    )
    state_checkpoint: int | None = Field(
        default=None, description="hybrid models: recurrent-state checkpoint interval (tokens)"
    )
    measurement_id: int | None = Field(
        default=None, description="a stored vLLM measurement whose prefill fit replaces the model"
    )
    max_utilization: float = Field(
        default=DEFAULT_MAX_UTILIZATION, description="busiest a replica may be at the log's rate"
    )
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    capacity_factors: list[Fraction] = Field(
        default_factory=lambda: list(DEFAULT_CAPACITY_FACTORS),
        description="KV capacities (as multiples of the deployment's) to re-simulate at",
    )

    @property
    def host_tier_bytes(self) -> int | None:
        return None if self.host_memory_gib is None else int(self.host_memory_gib * GIB)


class LogSummary(Report):
    """The log as the self-hosted side counts it."""

    sources: list[str]
    requests: int
    input_tokens: int
    output_tokens: int
    duration_s: float
    arrival_rate_per_s: float | None
    mean_decode_context_tokens: int
    block_size: int

    @classmethod
    def of(cls, sources: list[str], sized: SizedLog, **given: Any) -> Self:
        """The summary of ``sized``, read from ``sources``: the fields named otherwise than
        its attributes are set here, those of ``given`` (a subclass's that ``sized`` lacks)
        as given, every other one is ``sized``'s attribute of that name."""
        renamed = {
            "sources": sources,
            "requests": sized.count,
            "duration_s": sized.duration,
            "mean_decode_context_tokens": sized.decode_context,
        }
        named = cls.model_fields.keys() - renamed.keys() - given.keys()
        return cls(**renamed, **given, **{name: getattr(sized, name) for name in named})


class CompareLog(LogSummary):
    mean_input_tokens: float
    p95_input_tokens: float
    max_input_tokens: int
    state_checkpoint_tokens: int | None
    tokenizer: str | None
    exact_tokens: bool


class HostedBill(Report):
    """One hosted target's bill for the log, as ``estimate`` priced it."""

    model_config = ConfigDict(from_attributes=True)

    provider: str
    model: str
    contract: ContractReference
    hit_rate: float
    cost: CostBreakdown
    cost_without_cache: Money

    @classmethod
    def of(cls, result: TargetEstimate) -> HostedBill:
        """The target's estimate, these fields of it (the very values ``estimate`` gave)."""
        return cls.model_validate(result)


class MeasuredPassport(Passport):
    """What produced a stored measurement (``cachecast measure``, or a replay of ``suggest
    --validate-on-engine`` / ``check --target vllm-engine:URL`` with --store-measurements);
    ``dtype`` is None where it was not recorded."""

    id: int
    source: str = Field(description="what was replayed")
    requests: int


class MeasurementFit(Report):
    """``ttft(C, S) = fixed + per_token * S + per_pair * pairs(C, S)`` (docs/economics.md):
    a :class:`FittedPrefill`'s coefficients, read from it by name."""

    model_config = ConfigDict(from_attributes=True)

    fixed_s: float
    per_token_s: float
    per_pair_s: float
    rows: int


class RooflineAgainstMeasurement(Report):
    """The roofline prefill model of the deployment compared, set against the measurement."""

    measured_requests: int = Field(description="requests with the engine's cached-token count")
    measured_ttft_mean_ms: float
    roofline_mean_ms: float = Field(
        description="the roofline prefill of the same (cached, new) tokens on this deployment"
    )
    measured_over_roofline: float = Field(description="sum of measured / sum of roofline")
    log_prefill_ms: PrefillSpread = Field(description="this log, timed by the measurement's fit")
    log_roofline_prefill_ms: PrefillSpread = Field(description="this log, by the roofline model")
    log_prefill_seconds: float
    log_roofline_prefill_seconds: float
    log_difference_seconds: float = Field(description="measured fit - roofline, whole log")
    log_measured_over_roofline: float


class MeasurementFacts(Report):
    passport: MeasuredPassport
    fit: MeasurementFit
    against_roofline: RooflineAgainstMeasurement
    warnings: list[str] = Field(
        description="how the measured engine differs from the deployment compared"
    )


class CompareReport(Report):
    """Everything ``compare`` answers."""

    deployment: DeploymentFacts
    capacity: CapacityFacts
    log: CompareLog
    hit_rate_definition: str = HIT_RATE_DEFINITION
    timing_source: str
    gpu_price_per_hour: Decimal | None
    self_hosted: SelfHosted
    hosted: list[HostedBill]
    versus: list[Versus]
    host_tier: HostTier
    capacity_curve: list[CapacityPoint]
    measurement: MeasurementFacts | None = None
    at: dt.date | None
    skipped_lines: int
    errors: list[InputIssue]
    assumptions: list[str]

    @property
    def busy_seconds_full(self) -> float:
        """One log's GPU time on one replica at full utilization."""
        shown = self.self_hosted
        return (shown.prefill_gpu_seconds + shown.decode_gpu_seconds) / self.deployment.gpus

    def monthly_self_hosted_cost(self, logs_per_month: float) -> Decimal | None:
        """The self-hosted bill of a month serving the log ``logs_per_month`` times (whole
        replicas paid for whole months); None without a GPU price."""
        if self.gpu_price_per_hour is None:
            return None
        return monthly_self_hosted_cost(
            self.busy_seconds_full, self.deployment.gpus, self.gpu_price_per_hour, logs_per_month
        )


# ---------------------------------------------------------------------------------------------


MAX_GPU_PRICE = Decimal(1_000_000)


def parse_price(text: str | None, field: str = "gpu_price") -> Decimal | None:
    """A $/GPU-hour given as text (an option, a body field) as an exact Decimal, >= 0."""
    if text is None:
        return None
    try:
        price = Decimal(text.strip())
    except InvalidOperation:
        raise BadInputError(
            f"{text!r} is not a decimal number", location=Location(field=field)
        ) from None
    if not price.is_finite() or price < 0:
        raise BadInputError(
            f"must be a non-negative number, got {text!r}", location=Location(field=field)
        )
    # Exact money arithmetic needs bounded operands: a price past any GPU's (1e400) would
    # overflow the decimal context where the bill is rounded.
    exponent = price.as_tuple().exponent
    if price > MAX_GPU_PRICE or (isinstance(exponent, int) and exponent < -10):
        raise BadInputError(
            f"must be at most {MAX_GPU_PRICE} US$ per GPU-hour with at most 10 decimal places,"
            f" got {text!r}",
            location=Location(field=field),
        )
    return price


def load_measurement(url: str, measurement_id: int) -> FittedPrefill:
    """The prefill fit of measurement ``measurement_id`` stored by ``cachecast measure`` in
    the database at ``url``; an unknown id is not found."""
    return _fitted(measurement_id, stored_report(url, measurement_id))


PASSPORT_COLUMNS = (
    "engine_kind",
    "engine_version",
    "model",
    "device",
    "block_size",
    "num_blocks",
    "dtype",
    "kv_cache_dtype",
    "endpoint",
)


def stored_report(url: str, measurement_id: int) -> dict[str, Any]:
    """The stored report of measurement ``measurement_id`` (its passport, every request),
    with the passport's columns as stored; an unknown id is not found."""
    from sqlmodel import Session

    from cachecast.gpu_backend.tables import EngineMeasurement

    with Session(db.get_engine(url)) as session:
        stored = session.get(EngineMeasurement, measurement_id)
        if stored is None:
            raise UnknownMeasurementError(
                f"no engine measurement with id {measurement_id} in the database at"
                f" {db.display_url(url)}",
                location=Location(field="measurement_id"),
            )
        report: dict[str, Any] = json.loads(stored.report_json)
        # The row's columns are the passport (older reports lack the dtypes in their JSON).
        report["passport"] = {
            **(report.get("passport") or {}),
            **{name: getattr(stored, name) for name in PASSPORT_COLUMNS},
            "measured_at": stored.measured_at.isoformat(),
        }
        report.setdefault("source", stored.source)
    return report


def _fitted(measurement_id: int, report: dict[str, Any]) -> FittedPrefill:
    fitted = fit_from_report(report, f"measurement #{measurement_id}")
    return replace(fitted, source=f"measurement #{measurement_id}: {fitted.source}")


def measurement_facts(
    measurement_id: int,
    report: dict[str, Any],
    fitted: FittedPrefill,
    deployment: Deployment,
    comparison: SelfHostedComparison,
) -> MeasurementFacts:
    """The measurement, and the roofline model of ``deployment`` set against it."""
    passport = report.get("passport") or {}
    rows = [
        (int(row["measured_cached_tokens"]), int(row["prompt_tokens"]), float(row["ttft_s"]))
        for row in report.get("per_request") or []
        if row.get("measured_cached_tokens") is not None
    ]
    cached = np.array([c for c, _, _ in rows], dtype=np.float64)
    prompt = np.array([p for _, p, _ in rows], dtype=np.float64)
    measured = np.array([t for _, _, t in rows], dtype=np.float64)
    roofline = prefill_seconds_many(deployment, cached, prompt - cached)
    shown = comparison.self_hosted.prefill_ms
    model_ms = comparison.roofline_prefill_ms
    log_seconds = comparison.self_hosted.prefill_gpu_seconds / deployment.gpus
    log_roofline = comparison.roofline_prefill_seconds
    assert model_ms is not None and log_roofline is not None  # set whenever measured
    passport_facts = MeasuredPassport(
        **{name: passport.get(name) for name in Passport.model_fields},
        id=measurement_id,
        source=str(report.get("source", "")),
        requests=len(report.get("per_request") or []),
    )
    return MeasurementFacts(
        passport=passport_facts,
        fit=MeasurementFit.model_validate(fitted),
        against_roofline=RooflineAgainstMeasurement(
            measured_requests=len(rows),
            measured_ttft_mean_ms=float(measured.mean()) * 1000,
            roofline_mean_ms=float(roofline.mean()) * 1000,
            measured_over_roofline=float(measured.sum() / roofline.sum()),
            log_prefill_ms=shown,
            log_roofline_prefill_ms=model_ms,
            log_prefill_seconds=log_seconds,
            log_roofline_prefill_seconds=log_roofline,
            log_difference_seconds=log_seconds - log_roofline,
            log_measured_over_roofline=log_seconds / log_roofline,
        ),
        warnings=passport_warnings(passport_facts, deployment, comparison.sized.block_size),
    )


def passport_warnings(
    passport: MeasuredPassport, deployment: Deployment, block_size: int
) -> list[str]:
    """Every way the measured engine is not the deployment compared (the fit then describes
    another engine, and the difference from the roofline is partly that)."""
    warnings: list[str] = []
    accelerator = deployment.accelerator.name
    if passport.device.lower() not in (accelerator.lower(), deployment.accelerator.label.lower()):
        warnings.append(
            f"measured on {passport.device!r}, compared on {accelerator}: the fit times another"
            " device"
        )
    if passport.model != deployment.model.name:
        warnings.append(
            f"measured model {passport.model!r} is not the compared model {deployment.model.name!r}"
        )
    weight_dtype = deployment.weight_dtype or deployment.model.weight_dtype
    if passport.dtype is None:
        warnings.append("the measurement does not record the engine's dtype")
    elif _dtype(passport.dtype) != _dtype(weight_dtype):
        warnings.append(f"measured in {passport.dtype}, compared in {weight_dtype}")
    if passport.block_size and passport.block_size != block_size:
        warnings.append(
            f"measured with block size {passport.block_size}, compared with {block_size}"
        )
    return warnings


def _dtype(name: str) -> str:
    """'bfloat16' and 'bf16' alike."""
    short = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}
    return short.get(name.lower(), name.lower())


def compare(
    request: CompareRequest,
    store: ContractStore | None = None,
    *,
    progress: Progress | None = None,
    sessions: Sequence[PredictedRequest] | None = None,
) -> CompareReport:
    """Compare self-hosting with every hosted target; see the module docstring. ``store``
    holds the contracts (and the measurement): needed with targets or a measurement.
    ``sessions``: agent-session requests already read and predicted (the usage report's),
    replayed in place of ``request.log``'s."""
    deployment = resolve_deployment(request)
    check_comparison_options(
        request.gpu_price,
        request.max_utilization,
        request.host_tier_bytes,
        request.state_checkpoint,
    )
    needs_store = bool(request.targets) or request.measurement_id is not None
    if needs_store and store is None:
        raise ConfigurationError(
            "hosted targets and measurements need the database",
            location=Location(field="database_url"),
        )
    pricing = None
    if request.targets:
        assert store is not None
        pricing = EstimateRequest(log=request.log, targets=request.targets, at=request.at)
        plan_estimate(pricing, store)  # an unknown target fails here, before any work
    measurement = None
    stored: dict[str, Any] | None = None
    if request.measurement_id is not None:
        assert store is not None
        stored = stored_report(store.url, request.measurement_id)
        measurement = _fitted(request.measurement_id, stored)
    passes: LogPasses | SessionPrompts
    paths = None if sessions is not None else session_paths(request.log)
    if sessions is not None or paths is not None:
        passes = _session_prompts(request, sessions, paths)
    else:
        passes = LogPasses(request.log, request.tokenizer, progress or NoProgress(), "simulating")
    try:
        result = compare_self_hosted(
            passes,
            deployment,
            block_size=request.block_size,
            gpu_price=request.gpu_price,
            max_num_seqs=request.max_num_seqs,
            max_utilization=request.max_utilization,
            host_tier_bytes=request.host_tier_bytes,
            state_checkpoint_tokens=request.state_checkpoint,
            measurement=measurement,
            capacity_factors=request.capacity_factors,
        )
    except BadInputError as error:
        if isinstance(passes, SessionPrompts):
            raise
        raise passes.relocated(error) from None
    hosted: list[HostedBill] = []
    at = request.at
    if pricing is not None:
        assert store is not None
        priced = estimate(pricing, store, progress=progress)
        at = priced.at
        hosted = [HostedBill.of(target) for target in priced.targets]
    sized = result.sized
    return CompareReport(
        deployment=DeploymentFacts.of(sized.deployment),
        capacity=CapacityFacts.of(sized.capacity),
        log=CompareLog.of(
            request.log.source_names, sized, state_checkpoint_tokens=request.state_checkpoint
        ),
        timing_source=result.timing_source,
        gpu_price_per_hour=request.gpu_price,
        self_hosted=result.self_hosted,
        hosted=hosted,
        versus=[
            versus(
                result,
                provider=line.provider,
                model=line.model,
                contract_version=line.contract.version,
                hosted_total=line.cost.total,
                hosted_hit_rate=line.hit_rate,
            )
            for line in hosted
        ],
        host_tier=result.host_tier,
        capacity_curve=result.capacity_curve,
        measurement=(
            None
            if measurement is None or stored is None or request.measurement_id is None
            else measurement_facts(
                request.measurement_id, stored, measurement, sized.deployment, result
            )
        ),
        at=at,
        skipped_lines=bad_line_count(passes.errors),
        errors=issues_of(passes.errors),
        assumptions=result.assumptions + ([SHARING] if isinstance(passes, SessionPrompts) else []),
    )


def _session_prompts(
    request: CompareRequest,
    sessions: Sequence[PredictedRequest] | None,
    paths: list[tuple[Path, str]] | None,
) -> SessionPrompts:
    """Agent sessions as the self-hosted side replays them: their observed prompt lengths
    and the prefixes their lineages share (``session_prompts``), no tokenizer."""
    if request.tokenizer is not None:
        raise BadInputError(
            "agent sessions are not tokenized: their prompt lengths are the provider's counts",
            location=Location(field="tokenizer"),
        )
    errors: list[LogRecordError] = []
    if sessions is None:
        assert paths is not None
        request.log.check_sources()
        defaults = ModelDefaults(request.log.default_model, request.log.default_provider)
        sessions = read_predicted(paths, request.log.on_bad_record, errors, None, defaults)
    if not sessions:
        raise BadInputError(
            "the sessions hold no request with usage", location=Location(field="log")
        )
    prompts = SessionPrompts(sessions, request.block_size or DEFAULT_BLOCK_SIZE)
    prompts.errors = errors
    return prompts
