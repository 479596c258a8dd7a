"""``fleet``: K self-hosted vLLM replicas under each routing policy, priced and timed.

One replica is sized for the log as ``compare`` sizes it; the log (read as ``compare`` reads
it: :class:`~cachecast.passes.log_passes.LogPasses`, a pass for the sizing, one more for every
routing policy at once, in the replay order of every other command: timestamp order within
the reorder window) is then routed over ``replicas`` such replicas by every policy asked
for (:func:`cachecast.economics.fleet.route_fleet`): hit rate, load imbalance, TTFT, GPU-hours
and, with a GPU price, cost. Definitions are in the report (``definitions``) and derived in
docs/economics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from pydantic import Field

from cachecast.core.errors import BadInputError, Location
from cachecast.economics.capacity import DEFAULT_MAX_NUM_SEQS
from cachecast.economics.errors import ComparisonError
from cachecast.economics.fleet import (
    DEFINITIONS,
    PolicyResult,
    check_fleet_options,
    fleet_assumptions,
    route_fleet,
)
from cachecast.economics.sizing import size_deployment
from cachecast.economics.timing import ROOFLINE_TIMING
from cachecast.logs.errors import bad_line_count
from cachecast.passes.log_input import LogInput
from cachecast.passes.log_passes import LogPasses
from cachecast.passes.progress import NoProgress, Progress
from cachecast.simulator.routing import DEFAULT_WINDOW_SECONDS, Routing
from cachecast.usecases.capacity import (
    CapacityFacts,
    DeploymentFacts,
    DeploymentRequest,
    resolve_deployment,
)
from cachecast.usecases.compare import LogSummary
from cachecast.usecases.reports import InputIssue, Report, issues_of

ALL_ROUTINGS = "all"
ROUTING_CHOICES = ", ".join(str(routing) for routing in Routing) + f" or {ALL_ROUTINGS}"


class FleetRequest(DeploymentRequest):
    """Route ``log`` over ``replicas`` replicas of the deployment under each routing."""

    log: LogInput
    replicas: int = Field(description="vLLM replicas, each with its own KV pool")
    routings: list[str] = Field(
        default_factory=lambda: [ALL_ROUTINGS],
        description=f"routing policies: {ROUTING_CHOICES}",
    )
    gpu_price: Decimal | None = Field(default=None, description="US$ per GPU-hour")
    tokenizer: str | None = Field(default=None, description="model whose tokenizer counts")
    window_seconds: float = Field(
        default=DEFAULT_WINDOW_SECONDS, description="seconds of computed tokens that make a load"
    )
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS


def parse_routings(names: Sequence[str], field: str = "routings") -> list[Routing]:
    """Routing policy names (``all``: every one) in the order given, each once."""
    routings: list[Routing] = []
    known = {str(routing): routing for routing in Routing}
    for index, name in enumerate(names):
        if name == ALL_ROUTINGS:
            chosen = list(Routing)
        elif name in known:
            chosen = [known[name]]
        else:
            raise ComparisonError(
                f"{name!r} is not one of {ROUTING_CHOICES}",
                location=Location(field=f"{field}[{index}]"),
            )
        routings.extend(routing for routing in chosen if routing not in routings)
    if not routings:
        raise ComparisonError("no routing policy given", location=Location(field=field))
    return routings


class FleetInputs(Report):
    sources: list[str]
    model: str
    accelerator: str
    gpus_per_replica: int
    replicas: int
    routing: list[Routing]
    gpu_price_per_hour: Decimal | None
    kv_dtype: str
    block_size: int
    num_blocks_per_replica: int
    kv_capacity_tokens_per_replica: int


class FleetReport(Report):
    """Every routing policy asked for, on the same fleet and log."""

    inputs: FleetInputs
    deployment: DeploymentFacts
    capacity: CapacityFacts
    log: LogSummary
    timing_source: str = ROOFLINE_TIMING
    definitions: dict[str, str] = Field(default_factory=lambda: dict(DEFINITIONS))
    policies: list[PolicyResult]
    skipped_lines: int
    errors: list[InputIssue]
    assumptions: list[str]


def fleet(request: FleetRequest, *, progress: Progress | None = None) -> FleetReport:
    """Route the log under every policy asked for; see the module docstring."""
    deployment = resolve_deployment(request)
    routings = parse_routings(request.routings)
    check_fleet_options(request.replicas, request.window_seconds, request.gpu_price)
    passes = LogPasses(request.log, request.tokenizer, progress or NoProgress(), "routing")
    try:
        sized = size_deployment(passes, deployment, request.block_size)
        policies = route_fleet(
            sized,
            replicas=request.replicas,
            routings=routings,
            gpu_price=request.gpu_price,
            max_num_seqs=request.max_num_seqs,
            window_seconds=request.window_seconds,
        )
    except BadInputError as error:
        raise passes.relocated(error) from None
    deployment, kv = sized.deployment, sized.capacity
    sources = request.log.source_names
    return FleetReport(
        inputs=FleetInputs(
            sources=sources,
            model=deployment.model.name,
            accelerator=deployment.accelerator.label,
            gpus_per_replica=deployment.gpus,
            replicas=request.replicas,
            routing=[policy.routing for policy in policies],
            gpu_price_per_hour=request.gpu_price,
            kv_dtype=deployment.kv_dtype,
            block_size=deployment.block_size,
            num_blocks_per_replica=kv.num_blocks,
            kv_capacity_tokens_per_replica=kv.kv_capacity_tokens,
        ),
        deployment=DeploymentFacts.of(deployment),
        capacity=CapacityFacts.of(kv),
        log=LogSummary.of(sources, sized),
        policies=policies,
        skipped_lines=bad_line_count(passes.errors),
        errors=issues_of(passes.errors),
        assumptions=fleet_assumptions(request.window_seconds),
    )
