"""Who runs one tokenizer pass of ``estimate``: this process (:class:`LocalExecutor`) or a Ray
cluster (:func:`ray_executor`, the ``distributed`` extra).

A pass reads the log once for the targets that share one tokenizer, replays it through their
policies and bills every request; the use case turns the outcomes into its report.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from cachecast.contracts import ContractStore
from cachecast.core.errors import LogRecordError
from cachecast.passes.log_input import LogInput, LogReading
from cachecast.passes.targets import ResolvedTarget, TokenizerPass
from cachecast.simulator.compact import Compactor, key_needs
from cachecast.simulator.pricing import (
    ObservedModelMatcher,
    PerRequestRow,
    TargetTotals,
    replay_targets,
    target_policy,
)
from cachecast.tokenizers.calibration import RatioStats
from cachecast.tokenizers.types import TokenizedRequest


@dataclass(frozen=True, slots=True)
class PassWork:
    """One pass over the log for the targets sharing one tokenizer."""

    log: LogInput
    tokenizer_pass: TokenizerPass
    targets: list[ResolvedTarget]  # the pass's members, in order
    day: dt.date
    store: ContractStore
    auto_cache_control: bool
    progress: Callable[[int], None]
    per_request: Callable[[PerRequestRow], None] | None
    explain_misses: bool = True

    def empty_totals(self) -> list[TargetTotals]:
        return [
            TargetTotals(
                item.target,
                item.contract,
                item.tokenizer,
                tier_terms=tuple(self.store.batch_terms(item.contract.provider)),
                priced_on=self.day,
            )
            for item in self.targets
        ]


@dataclass(slots=True)
class PassOutcome:
    totals: list[TargetTotals]  # one per member, in order
    errors: list[LogRecordError]  # lines or records that could not be read
    requests_by_source: dict[str, int]
    calibration: dict[str, RatioStats] | None = None  # approximate tokenizers' calibration
    # Per source, its requests that another source counted (``LogReading.counted_elsewhere``).
    counted_elsewhere: dict[str, int] = field(default_factory=dict)


class PassExecutor(Protocol):
    def run_pass(self, work: PassWork) -> PassOutcome: ...


class LocalExecutor:
    """Runs a pass in this process: read, tokenize, replay, bill, request by request."""

    def run_pass(self, work: PassWork) -> PassOutcome:
        reading = LogReading(work.log, work.tokenizer_pass.tokenize_as)
        totals = work.empty_totals()
        # The reorder window holds the keys the targets' policies read, not token ids (the
        # ids too where misses are explained).
        needs = key_needs(
            (target_policy(each, work.auto_cache_control) for each in totals),
            tokens=work.explain_misses,
        )
        replay_targets(
            self.stream(reading.requests(Compactor(needs).compact, cache_objects=True), work),
            totals,
            ObservedModelMatcher(work.store, work.day),
            work.progress,
            work.per_request,
            work.auto_cache_control,
            explain=work.explain_misses,
        )
        return PassOutcome(
            totals,
            reading.errors,
            reading.requests_by_source,
            reading.calibration,
            reading.counted_elsewhere,
        )

    def stream(
        self, requests: Iterator[TokenizedRequest], work: PassWork
    ) -> Iterator[TokenizedRequest]:
        """The pass's requests on their way to the replay; a subclass may look at them
        (``check`` keeps one pass's tokenized requests instead of tokenizing the log again)."""
        return requests


def ray_executor(address: str | None = None) -> PassExecutor:
    """The Ray executor (the ``distributed`` extra): joins the cluster at ``address``, or
    starts a local one bound to loopback (which must be set up before Ray is imported)."""
    if address is None:
        from cachecast.simulator.distributed.local_cluster import bind_local_cluster_to_loopback

        bind_local_cluster_to_loopback()
    from cachecast.passes.ray.executor import RayExecutor

    return RayExecutor(address)
