"""``simulate``: cache-hit statistics of a log under one cache policy, no prices.

The log is replayed from a cold cache in timestamp order through one policy: a self-hosted
engine's (``vllm``: vLLM's block-level prefix cache; ``radix``: SGLang-style token radix
tree) or a provider's (``automatic``, ``explicit``, ``gemini``), whose parameters come from
the contract of ``target`` in force on ``at`` where one is named, then from the options.
With ``replicas`` and ``routing``, the log goes to a fleet of vLLM replicas, each with its
own pool, behind a router (``simulator.routing`` defines the policies and the load).

Hit rate is token-weighted over the whole log from a cold cache
(:data:`HIT_RATE_DEFINITION`); docs/simulate.md defines every figure of the reports.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pydantic import Field

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, ConfigurationError, Location
from cachecast.logs.errors import bad_line_count
from cachecast.passes.log_input import LogReading
from cachecast.passes.progress import NoProgress, Progress
from cachecast.passes.targets import ResolvedTarget, parse_target, resolve_target
from cachecast.simulator.compact import Compactor, key_needs
from cachecast.simulator.policies import ENGINE_KINDS, CachePolicy, VllmPrefixCache, build_policy
from cachecast.simulator.policies.vllm import UNBOUNDED_BLOCKS
from cachecast.simulator.routing import Fleet, Routing, RoutingStats
from cachecast.simulator.types import PolicyKind as PolicyKind  # its home before
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.reports import ContractReference, InputIssue, Report, issues_of
from cachecast.usecases.requests import LogRequest

HIT_RATE_DEFINITION = (
    "hit_tokens / input_tokens summed over the whole log, cold start (the cache is empty"
    " before the first request; no warm-up is excluded)"
)
FLEET_HIT_RATE_DEFINITION = "hit tokens / input tokens over the whole log, cold start"
IMBALANCE_DEFINITION = "max / mean of prompt tokens computed per replica"
PROGRESS_STEP = 256  # requests per progress update
# Options only the provider policies read; the engine policies have no TTL or minimum.
PROVIDER_ONLY_OPTIONS = ("ttl_seconds", "min_tokens", "increment")
# The policies count blocks in machine integers; 2**62 is what "unbounded" means to them.
MAX_CAPACITY_BLOCKS = UNBOUNDED_BLOCKS


class SimulateRequest(LogRequest):
    """Replay ``log`` through one policy (or a fleet of vLLM replicas)."""

    policy: PolicyKind = PolicyKind.vllm
    target: str | None = Field(
        default=None,
        description="PROVIDER:MODEL whose contract parameterises the policy (and whose model"
        " the log is tokenized as)",
        examples=["openai:gpt-4o"],
    )
    at: dt.date | None = Field(
        default=None, description="the day whose contract applies (default: today, UTC)"
    )
    block_size: int | None = Field(default=None, gt=0, le=1_000_000, examples=[16])
    capacity_blocks: int | None = Field(
        default=None,
        gt=0,
        le=MAX_CAPACITY_BLOCKS,
        description="cache size in blocks (default: unbounded)",
    )
    ttl_seconds: int | None = Field(default=None, gt=0, description="entry lifetime")
    min_tokens: int | None = Field(default=None, ge=0, description="shortest cacheable prefix")
    increment: int | None = Field(default=None, gt=0, description="hit granularity")
    replicas: int | None = Field(
        default=None, gt=0, le=1024, description="vLLM replicas, each with its own pool"
    )
    routing: Routing | None = Field(default=None, description="how requests reach the replicas")


class PolicySettings(Report):
    """The policy replayed and the options given to it (None: the policy's default, or the
    contract's where a target is named)."""

    kind: PolicyKind
    contract: ContractReference | None = Field(
        description="the target's contract whose terms parameterise the policy, if any"
    )
    block_size: int | None
    capacity_blocks: int | None
    ttl_seconds: int | None
    min_tokens: int | None
    increment: int | None


class SimulationReport(Report):
    """Hit statistics of one policy over the whole log."""

    requests: int = Field(examples=[3993])
    input_tokens: int
    hit_tokens: int = Field(description="prompt tokens read from cache")
    hit_rate: float = Field(description="hit_tokens / input_tokens")
    hit_rate_definition: str = HIT_RATE_DEFINITION
    written_tokens: int = Field(description="prompt tokens written to the cache")
    uncached_tokens: int = Field(description="prompt tokens neither read nor written")
    requests_with_hit: int
    policy: PolicySettings
    skipped_lines: int
    errors: list[InputIssue]


class ReplicaReport(Report):
    """What one replica received and computed."""

    requests: int
    input_tokens: int
    hit_tokens: int
    computed_tokens: int = Field(description="prompt tokens prefilled (not read from cache)")
    hit_rate: float


class FleetOptions(Report):
    """The router's parameters (None where the routing policy has no such parameter)."""

    window_seconds: float = Field(description="the load window (see simulator.routing)")
    overlap_weight: float | None = Field(description="cache-aware: weight of the overlap")
    load_weight: float | None = Field(description="cache-aware: weight of the load share")
    prefix_tokens: int | None = Field(description="prefix-hash: tokens hashed")


class FleetSimulationReport(Report):
    """Hit rate and load balance of a fleet of vLLM replicas behind one routing policy."""

    routing: Routing
    replica_count: int
    options: FleetOptions
    requests: int
    input_tokens: int
    hit_tokens: int
    hit_rate: float
    hit_rate_definition: str = FLEET_HIT_RATE_DEFINITION
    imbalance: float = Field(description="max / mean computed tokens per replica (1: even)")
    imbalance_definition: str = IMBALANCE_DEFINITION
    replicas: list[ReplicaReport]
    policy: PolicySettings
    skipped_lines: int
    errors: list[InputIssue]

    @classmethod
    def of(
        cls,
        fleet: RoutingStats,
        policy: PolicySettings,
        errors: list[InputIssue],
        skipped_lines: int,
    ) -> FleetSimulationReport:
        return cls.read(
            fleet,  # routing, the token counts, hit_rate, imbalance, replicas
            replica_count=len(fleet.replicas),
            options=FleetOptions.model_validate(fleet),  # every parameter, None where unused
            requests=sum(replica.requests for replica in fleet.replicas),
            policy=policy,
            skipped_lines=skipped_lines,
            errors=errors,
        )


@dataclass(slots=True)
class HitStatistics:
    """Running totals of a replay; ``hit_rate`` is token-weighted over the whole log."""

    requests: int = 0
    input_tokens: int = 0
    hit_tokens: int = 0
    written_tokens: int = 0
    uncached_tokens: int = 0
    requests_with_hit: int = 0

    def add(self, usage: RequestUsage) -> None:
        self.requests += 1
        self.input_tokens += usage.input_tokens
        self.hit_tokens += usage.cache_read_tokens
        self.written_tokens += usage.cache_write_total
        self.uncached_tokens += usage.uncached_input_tokens
        self.requests_with_hit += usage.cache_read_tokens > 0

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0

    def report(
        self, policy: PolicySettings, errors: list[InputIssue], skipped_lines: int
    ) -> SimulationReport:
        return SimulationReport.read(
            self,
            policy=policy,
            skipped_lines=skipped_lines,
            errors=errors,
        )


def policy_settings(request: SimulateRequest, resolved: ResolvedTarget | None) -> PolicySettings:
    return PolicySettings.read(
        request,  # the policy's options as given
        kind=request.policy,
        contract=ContractReference.of(resolved.contract) if resolved is not None else None,
    )


def check_options(request: SimulateRequest) -> None:
    """Refuse options the chosen policy would silently ignore, and a fleet of anything but
    vLLM replicas."""
    if request.policy in (PolicyKind.vllm, PolicyKind.radix):
        ignored = [name for name in PROVIDER_ONLY_OPTIONS if getattr(request, name) is not None]
        if ignored:
            raise BadInputError(
                f"the {request.policy.value} policy does not use {', '.join(ignored)}"
                " (provider policies only)",
                location=Location(field=ignored[0]),
            )
    if (
        request.policy is PolicyKind.vllm
        and request.capacity_blocks is not None
        and request.capacity_blocks < 2
    ):
        raise BadInputError(
            "the vllm policy needs at least 2 blocks (block 0 is vLLM's null block)",
            location=Location(field="capacity_blocks"),
        )
    fleet = (request.replicas is not None, request.routing is not None)
    if any(fleet):
        if not all(fleet):
            missing = "routing" if request.routing is None else "replicas"
            raise BadInputError(
                "replicas and routing go together (a fleet needs both)",
                location=Location(field=missing),
            )
        if request.policy is not PolicyKind.vllm:
            raise BadInputError(
                "a fleet is made of vLLM replicas: run replicas and routing with --policy vllm",
                location=Location(field="policy"),
            )


def simulate(
    request: SimulateRequest,
    store: ContractStore | None = None,
    *,
    progress: Progress | None = None,
) -> SimulationReport | FleetSimulationReport:
    """Replay the log through the policy (or the fleet); see the module docstring.

    Checked before any work: the options against the policy, the target's contract (a
    ``store`` is needed then) and the log's sources. A source with no readable request is
    bad input; other bad lines follow ``on_bad_record``.
    """
    check_options(request)
    resolved = _resolve(request, store)
    log = request.log
    log.check_sources()
    settings = policy_settings(request, resolved)
    make_policy = _policy_factory(request, resolved)
    progress = progress or NoProgress()
    progress.start(f"simulating {request.policy.value}: requests", None)  # as read
    reading = LogReading(log, resolved.tokenize_as if resolved is not None else None)
    try:
        if request.replicas is not None and request.routing is not None:
            replicas = [_vllm(make_policy()) for _ in range(request.replicas)]
            fleet = Fleet(replicas, request.routing)
            # Full requests: prefix-hash routing reads the prompt's first token ids.
            for tokenized in _counted(reading.requests(), progress):
                fleet.process(tokenized)
            reading.finish()
            return FleetSimulationReport.of(
                fleet.report(), settings, issues_of(reading.errors), bad_line_count(reading.errors)
            )
        policy = make_policy()
        statistics = HitStatistics()
        # The reorder window holds each request as the keys the policy reads, not its ids
        # (simulator.compact): memory for the window's requests, not for their prompts.
        compact = Compactor(key_needs([policy])).compact
        for tokenized in _counted(reading.requests(compact), progress):
            usage = policy.process(tokenized)
            usage.check()
            statistics.add(usage)
        reading.finish()
    except BadInputError as error:
        raise reading.relocated(error) from None
    return statistics.report(settings, issues_of(reading.errors), bad_line_count(reading.errors))


def _resolve(request: SimulateRequest, store: ContractStore | None) -> ResolvedTarget | None:
    if request.target is None:
        return None
    if store is None:
        raise ConfigurationError(
            "a target's contract needs the contract database", location=Location(field="target")
        )
    from cachecast.usecases.estimate import today

    target = parse_target(request.target, "target")
    return resolve_target(target, store, request.at or today(), Location(field="target"))


def _policy_factory(
    request: SimulateRequest, resolved: ResolvedTarget | None
) -> Callable[[], CachePolicy]:
    """A fresh policy per call (a fleet needs one per replica), the options as given."""
    contract = resolved.contract if resolved is not None else None
    if (
        contract is not None
        and not contract.offers_caching
        and request.policy.value not in ENGINE_KINDS
    ):
        raise ConfigurationError(
            f"{contract.provider}:{contract.model} offers no prompt caching on the day asked"
            f" (contract from {contract.effective_from}, {contract.source}): the"
            f" {request.policy.value!r} policy has no terms to take from it; every prompt token"
            " is uncached input (`cachecast estimate` prices it)",
            location=Location(field="policy"),
        )
    options = {
        name: value
        for name in ("block_size", "capacity_blocks", "ttl_seconds", "min_tokens", "increment")
        if (value := getattr(request, name)) is not None
    }
    return lambda: build_policy(request.policy.value, contract, **options)


def _vllm(policy: CachePolicy) -> VllmPrefixCache:
    if not isinstance(policy, VllmPrefixCache):
        raise TypeError(f"a fleet replica must be a vLLM pool, not {type(policy).__name__}")
    return policy


def _counted(
    requests: Iterator[TokenizedRequest], progress: Progress
) -> Iterator[TokenizedRequest]:
    pending = 0
    for request in requests:
        yield request
        pending += 1
        if pending == PROGRESS_STEP:
            progress.advance(pending)
            pending = 0
    progress.advance(pending)
