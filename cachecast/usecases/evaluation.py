"""A prompt set replayed under the targets of ``check`` and ``suggest``: hit rate and cost.

A target is ``PROVIDER:MODEL`` (the contract in force on the day asked, priced by
``usecases.estimate.estimate``: the same passes, bills and contract references as ``cachecast
estimate``) or ``vllm`` / ``vllm:BLOCK_SIZE`` (self-hosted vLLM automatic prefix caching with
an unbounded block pool, simulated; hit rate only: a self-hosted deployment has no per-token
price, ``cachecast compare`` prices it) or ``vllm-engine:URL`` (a real vLLM server the prompt
set is replayed on, ``usecases.engine_replay``: the measured hit rate and TTFT).

A prompt set is streamed, never held: the simulated self-hosted targets replay the requests
of the estimate's pass with the token model's tokenizer as that pass reads them (where there
is such a pass), or read the set once more (where there is not). Formulas: docs/layouts.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from pydantic import Field, SecretStr

from cachecast.contracts import ContractStore
from cachecast.core.errors import BadInputError, ConfigurationError, Location
from cachecast.passes.executors import LocalExecutor, PassWork
from cachecast.passes.log_input import LogReading, OnBadRecord
from cachecast.passes.prompt_sets import PromptSet
from cachecast.passes.targets import ResolvedTarget, parse_target, resolve_target
from cachecast.simulator import build_policy
from cachecast.simulator.pricing import Target
from cachecast.tokenizers import get_tokenizer
from cachecast.tokenizers.types import TokenizedRequest
from cachecast.usecases.engine_replay import EngineEndpoint, EngineRun, replay_on_engine
from cachecast.usecases.estimate import EstimateRequest, estimate, today
from cachecast.usecases.reports import ContractReference, Money, Report, hit_rate_of
from cachecast.usecases.reports import (
    DecimalNumber as DecimalNumber,  # re-exported for check, suggest
)
from cachecast.usecases.requests import Request

DEFAULT_VLLM_BLOCK_SIZE = 16
PER_REQUESTS = 1000  # costs are compared per this many requests


ENGINE_TARGET = "vllm-engine"


@dataclass(frozen=True, slots=True)
class LayoutTarget:
    """A hosted target (its contract), a simulated self-hosted vLLM one (its block size) or a
    real vLLM server (its URL)."""

    kind: Literal["contract", "vllm", "vllm-engine"]
    target: Target | None = None
    block_size: int | None = None
    url: str | None = None

    @property
    def name(self) -> str:
        if self.url is not None:
            return f"{ENGINE_TARGET}:{self.url}"
        if self.target is None:
            return f"vllm:{self.block_size}"
        return str(self.target)


def parse_layout_target(
    text: str, field: str = "target", *, default_block_size: int | None = None
) -> LayoutTarget:
    """``vllm``, ``vllm:BLOCK_SIZE``, ``vllm-engine:URL`` or ``PROVIDER:MODEL``; errors name
    ``field``."""
    cleaned = text.strip()
    head, _, tail = cleaned.partition(":")
    if head.lower() == ENGINE_TARGET:
        url = tail.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise BadInputError(
                f"{text!r}: write {ENGINE_TARGET}:URL with the server's base URL"
                f" (e.g. {ENGINE_TARGET}:http://127.0.0.1:8000)",
                location=Location(field=field),
            )
        return LayoutTarget("vllm-engine", url=url)
    if head.lower() == "vllm" and (not tail or tail.isdigit()):
        block_size = int(tail) if tail else (default_block_size or DEFAULT_VLLM_BLOCK_SIZE)
        if block_size < 1:
            raise BadInputError(
                f"{text!r}: the block size must be positive", location=Location(field=field)
            )
        return LayoutTarget("vllm", block_size=block_size)
    return LayoutTarget("contract", target=parse_target(cleaned, field))


def parse_layout_targets(
    texts: Sequence[str], *, block_size: int | None = None, field: str = "targets"
) -> list[LayoutTarget]:
    if not texts:
        raise BadInputError(
            "no target: give PROVIDER:MODEL or vllm (on the command line: --target, or"
            " targets in [tool.cachecast] of pyproject.toml)",
            location=Location(field=field),
        )
    return [
        parse_layout_target(text, f"{field}[{index}]", default_block_size=block_size)
        for index, text in enumerate(texts)
    ]


def uses_contracts(targets: Sequence[LayoutTarget]) -> bool:
    """Whether pricing these targets needs the contract store."""
    return any(target.kind == "contract" for target in targets)


def resolve_contracts(
    targets: Sequence[LayoutTarget],
    store: ContractStore | None,
    day: dt.date,
    field: str = "targets",
) -> list[ResolvedTarget]:
    """The contract in force of every hosted target, before any work (an unknown one fails
    here, with close matches, named by its index among all targets)."""
    if not uses_contracts(targets):
        return []
    store = _required(store, field)
    return [
        resolve_target(target.target, store, day, Location(field=f"{field}[{index}]"))
        for index, target in enumerate(targets)
        if target.target is not None
    ]


def _required(store: ContractStore | None, field: str = "targets") -> ContractStore:
    if store is None:
        raise ConfigurationError(
            "PROVIDER:MODEL targets need the contract database", location=Location(field=field)
        )
    return store


def token_model_of(model: str | None, resolved: Sequence[ResolvedTarget]) -> str | None:
    """The model the self-hosted targets and the divergence tokenize as: ``model`` if given,
    else the first hosted target's, else each record's own (None)."""
    return model if model is not None else (resolved[0].tokenize_as if resolved else None)


class TargetSettings(Request):
    """The targets a prompt set is replayed under, on which day, tokenized as what."""

    targets: list[str] = Field(description="PROVIDER:MODEL (contract as of 'at'), or vllm[:BLOCK]")
    at: dt.date | None = Field(default=None, description="default: today, UTC")
    model: str | None = Field(
        default=None,
        description="tokenize the self-hosted targets (and check's divergence) as this model"
        " (default: the first hosted target's); also the model a layout's requests name, and"
        " the served model when validating on an engine",
    )
    block_size: int | None = Field(default=None, gt=0, description="of vllm targets (16)")
    engine_api_key: SecretStr | None = Field(
        default=None, description="bearer token for vllm-engine targets and validation"
    )
    store_measurements: str | None = Field(
        default=None,
        description="database URL: every replay on an engine is stored there with its"
        " passport (for cachecast compare --measurement-id); None: not stored",
    )


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """How ``vllm-engine`` targets are replayed: the model to tokenize as (None: the served
    model), the bearer token, the database their measurements are stored in (None: not
    stored)."""

    model: str | None = None
    api_key: SecretStr | None = None
    store_url: str | None = None


@dataclass(frozen=True, slots=True)
class TargetPlan:
    """What a use case settles before reading any prompt set. ``token_model`` is what the
    divergence tokenizes as; ``replay_model`` what the self-hosted targets do: ``--model``
    only, so that one target's results never depend on which others are asked for."""

    targets: list[LayoutTarget]
    day: dt.date
    token_model: str | None
    store: ContractStore | None
    engine: EngineSettings = EngineSettings()
    replay_model: str | None = None


def plan_targets(settings: TargetSettings, store: ContractStore | None) -> TargetPlan:
    """Every target parsed and every hosted one resolved (format, contract in force,
    tokenizer), the day, and the token model: all checked before any work."""
    targets = parse_layout_targets(settings.targets, block_size=settings.block_size)
    day = settings.at or today()
    resolved = resolve_contracts(targets, store, day)
    engine = EngineSettings(settings.model, settings.engine_api_key, settings.store_measurements)
    return TargetPlan(
        targets,
        day,
        token_model_of(settings.model, resolved),
        store,
        engine,
        replay_model=settings.model,
    )


class SideMetrics(Report):
    """One prompt set under one target."""

    requests: int
    input_tokens: int
    cache_read_tokens: int
    hit_rate: DecimalNumber  # cache_read_tokens / input_tokens, 6 places (half-even)
    cost: Money | None  # None for self-hosted targets
    cost_per_1k_requests: Money | None
    exact_tokens: bool
    contract: ContractReference | None
    engine: EngineRun | None = Field(
        default=None, description="vllm-engine targets: the replay measured on the engine"
    )

    @classmethod
    def of(
        cls,
        *,
        requests: int,
        input_tokens: int,
        cache_read_tokens: int,
        cost: Decimal | None,
        exact_tokens: bool,
        contract: ContractReference | None,
    ) -> SideMetrics:
        hit_rate = hit_rate_of(cache_read_tokens, input_tokens)
        per_1k = None if cost is None or requests == 0 else cost * PER_REQUESTS / requests
        return cls(
            requests=requests,
            input_tokens=input_tokens,
            cache_read_tokens=cache_read_tokens,
            hit_rate=hit_rate,
            cost=cost,
            cost_per_1k_requests=per_1k,
            exact_tokens=exact_tokens,
            contract=contract,
        )


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A prompt set under every target, in target order."""

    metrics: list[SideMetrics]


class _SelfHostedReplay:
    """The simulated vLLM targets, each with its own unbounded block pool, fed the requests
    of one pass one by one (tokenized as the token model, in replay order)."""

    def __init__(self, targets: Sequence[LayoutTarget]) -> None:
        self.targets = list(targets)
        self.policies = [build_policy("vllm", block_size=t.block_size) for t in self.targets]
        self.read = [0] * len(self.targets)
        self.total = [0] * len(self.targets)
        self.requests = 0
        self.exact = True

    def feed(self, request: TokenizedRequest) -> None:
        self.requests += 1
        self.exact = self.exact and request.exact
        for index, policy in enumerate(self.policies):
            usage = policy.process(request)
            usage.check()
            self.read[index] += usage.cache_read_tokens
            self.total[index] += usage.input_tokens

    def metrics(self) -> dict[str, SideMetrics]:
        return {
            target.name: SideMetrics.of(
                requests=self.requests,
                input_tokens=self.total[index],
                cache_read_tokens=self.read[index],
                cost=None,
                exact_tokens=self.exact,
                contract=None,
            )
            for index, target in enumerate(self.targets)
        }


class _FeedingExecutor(LocalExecutor):
    """Runs the estimate's passes in this process and feeds the requests of the pass whose
    tokenizer is ``tokenizer`` to ``replay`` as they go by, so that nobody tokenizes the
    set with it again. Only a pass that keeps token ids (one explaining misses) can: the
    self-hosted targets hash blocks of their own size."""

    def __init__(self, tokenizer: str, replay: _SelfHostedReplay) -> None:
        self.tokenizer = tokenizer
        self.replay = replay
        self.fed = False

    def stream(
        self, requests: Iterator[TokenizedRequest], work: PassWork
    ) -> Iterator[TokenizedRequest]:
        if work.tokenizer_pass.tokenizer != self.tokenizer or self.fed or not work.explain_misses:
            return requests
        self.fed = True
        replay = self.replay

        def feed() -> Iterator[TokenizedRequest]:
            for request in requests:
                if request.controls.creates is None:  # a cache object is no inference call
                    replay.feed(request)
                yield request

        return feed()


def _tokenizer_name(model: str) -> str:
    """The tokenizer of ``model``; an unknown one is UnknownModelError at the field "model"."""
    return get_tokenizer(model).name


def evaluate(
    prompt_set: PromptSet,
    targets: Sequence[LayoutTarget],
    *,
    day: dt.date,
    store: ContractStore | None,
    token_model: str | None,
    on_bad_record: OnBadRecord = "stop",
    engine: EngineSettings | None = None,
) -> Evaluation:
    """Metrics of ``prompt_set`` under each target, in target order. Simulated self-hosted
    targets tokenize as ``token_model`` (None: as each record's own model); ``vllm-engine``
    targets are replayed on their engine as ``engine`` says. The set is streamed: memory
    holds the caches' state, not the requests."""
    log = prompt_set.log(on_bad_record)
    hosted = [target for target in targets if target.kind == "contract"]
    replay = _SelfHostedReplay([target for target in targets if target.kind == "vllm"])
    executor: _FeedingExecutor | None = None
    if replay.targets and token_model is not None:
        executor = _FeedingExecutor(_tokenizer_name(token_model), replay)
    by_name: dict[str, SideMetrics] = {}
    if hosted:
        report = estimate(
            EstimateRequest(log=log, targets=[target.name for target in hosted], at=day),
            _required(store),
            executor=executor,
        )
        for target, result in zip(hosted, report.targets, strict=True):
            by_name[target.name] = SideMetrics.of(
                requests=result.requests,
                input_tokens=result.input_tokens,
                cache_read_tokens=result.cache_read_tokens,
                cost=result.cost.total,
                exact_tokens=result.exact_tokens,
                contract=result.contract,
            )
    if replay.targets:
        if executor is None or not executor.fed:
            reading = LogReading(log, token_model)
            for request in reading.requests():
                replay.feed(request)
            reading.finish()
        by_name.update(replay.metrics())
    for index, target in enumerate(targets):
        if target.url is not None:
            by_name[target.name] = _on_engine(
                prompt_set, target.url, engine or EngineSettings(), f"targets[{index}]"
            )
    return Evaluation([by_name[target.name] for target in targets])


def _on_engine(prompt_set: PromptSet, url: str, engine: EngineSettings, field: str) -> SideMetrics:
    """The side replayed on the engine at ``url``: the measured cached tokens (exact: the
    engine's prompt ids were checked against cachecast's)."""
    run = replay_on_engine(
        EngineEndpoint(url=url, api_key=engine.api_key),
        prompt_set.records,
        prompt_set.label,
        model=engine.model,
        store_url=engine.store_url,
        field=field,
    )
    metrics = SideMetrics.of(
        requests=run.requests,
        input_tokens=run.prompt_tokens,
        cache_read_tokens=run.measured_cached_tokens,
        cost=None,
        exact_tokens=True,
        contract=None,
    )
    return metrics.model_copy(update={"engine": run})


def needs_contract_store(texts: Sequence[str], *, block_size: int | None = None) -> bool:
    """Whether these targets are priced from the contract store (a front end opens it only
    then: a self-hosted-only check needs no database); a malformed target fails here."""
    return uses_contracts(parse_layout_targets(texts, block_size=block_size))
