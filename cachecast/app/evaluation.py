"""Replay one prompt set under the check's targets: hit rate and cost per target.

A target is ``PROVIDER:MODEL`` (the contract in force on ``at``, priced by
``cachecast.simulator.estimate``) or ``vllm`` / ``vllm:BLOCK_SIZE`` (self-hosted vLLM
automatic prefix caching with an unbounded block pool, hit rate only: a self-hosted
deployment has no per-token price; ``cachecast compare`` prices it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from cachecast.contracts import ContractStore
from cachecast.errors import BadInputError, Location
from cachecast.simulator import build_policy, simulate
from cachecast.tokenizers import read_log
from cachecast.tokenizers.types import TokenizedRequest

DEFAULT_VLLM_BLOCK_SIZE = 16
PER_REQUESTS = 1000  # costs are compared per this many requests


@dataclass(frozen=True, slots=True)
class TargetSpec:
    kind: str  # 'contract' or 'vllm'
    provider: str | None = None
    model: str | None = None
    block_size: int | None = None

    @property
    def name(self) -> str:
        if self.kind == "vllm":
            return f"vllm:{self.block_size}"
        return f"{self.provider}:{self.model}"


def parse_target(text: str, *, default_block_size: int | None = None) -> TargetSpec:
    """``vllm``, ``vllm:BLOCK_SIZE`` or ``PROVIDER:MODEL``."""
    cleaned = text.strip()
    head, _, tail = cleaned.partition(":")
    if head.lower() == "vllm" and (not tail or tail.isdigit()):
        block_size = int(tail) if tail else (default_block_size or DEFAULT_VLLM_BLOCK_SIZE)
        if block_size < 1:
            raise BadInputError(
                f"target {text!r}: the block size must be positive",
                location=Location(field="target"),
            )
        return TargetSpec("vllm", block_size=block_size)
    from cachecast.app.targets import parse_target

    target = parse_target(cleaned)
    return TargetSpec("contract", target.provider, target.model)


@dataclass(frozen=True, slots=True)
class SideMetrics:
    """One prompt set under one target."""

    requests: int
    input_tokens: int
    cache_read_tokens: int
    cost: Decimal | None  # None for self-hosted targets
    contract: dict[str, Any] | None
    exact_tokens: bool

    @property
    def hit_rate(self) -> Decimal:
        """cache_read_tokens / input_tokens, exact to 6 decimals (rounded half-even)."""
        if self.input_tokens == 0:
            return Decimal(0)
        return (Decimal(self.cache_read_tokens) / Decimal(self.input_tokens)).quantize(
            Decimal("0.000001")
        )

    @property
    def cost_per_1k(self) -> Decimal | None:
        if self.cost is None or self.requests == 0:
            return None
        return self.cost * PER_REQUESTS / self.requests

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "hit_rate": float(self.hit_rate),
            "cost": None if self.cost is None else str(self.cost),
            "cost_per_1k_requests": None if self.cost_per_1k is None else str(self.cost_per_1k),
            "exact_tokens": self.exact_tokens,
            "contract": self.contract,
        }


def tokenize(log_path: Path, model: str | None, provider: str | None) -> list[TokenizedRequest]:
    """Every request of a log, tokenized strictly (a bad line is bad input, never skipped)."""
    return list(read_log(log_path, model=model, default_provider=provider, strict=True))


def evaluate(
    log_path: Path,
    targets: Sequence[TargetSpec],
    *,
    at: dt.date,
    store: ContractStore | None,
    vllm_model: str | None,
    requests_by_model: dict[str | None, list[TokenizedRequest]] | None = None,
) -> list[SideMetrics]:
    """Metrics of one log under each target, in target order.

    ``requests_by_model`` caches tokenizations (keyed by model) across calls on the same log.
    """
    cache = requests_by_model if requests_by_model is not None else {}
    contract_targets = [t for t in targets if t.kind == "contract"]
    by_name: dict[str, SideMetrics] = {}
    if contract_targets:
        if store is None:
            raise BadInputError(
                "PROVIDER:MODEL targets need the contract database",
                location=Location(field="target"),
            )
        from cachecast.app.estimate import EstimateRequest, estimate
        from cachecast.app.logs import LogInput

        report = estimate(
            EstimateRequest(
                log=LogInput.of_paths([log_path], on_bad_record="stop"),
                targets=[f"{t.provider}:{t.model}" for t in contract_targets],
                at=at,
            ),
            store,
        )
        for spec, result in zip(contract_targets, report.targets, strict=True):
            by_name[spec.name] = SideMetrics(
                requests=result.requests,
                input_tokens=result.input_tokens,
                cache_read_tokens=result.cache_read_tokens,
                cost=result.cost.total,
                contract=result.contract.model_dump(mode="json"),
                exact_tokens=result.exact_tokens,
            )
    for spec in targets:
        if spec.kind != "vllm":
            continue
        if vllm_model not in cache:
            cache[vllm_model] = tokenize(log_path, vllm_model, None)
        requests = cache[vllm_model]
        policy = build_policy("vllm", block_size=spec.block_size)
        read = total = 0
        for usage in simulate(requests, policy):
            read += usage.cache_read_tokens
            total += usage.input_tokens
        by_name[spec.name] = SideMetrics(
            requests=len(requests),
            input_tokens=total,
            cache_read_tokens=read,
            cost=None,
            contract=None,
            exact_tokens=all(request.exact for request in requests),
        )
    return [by_name[spec.name] for spec in targets]
