"""The library entry point for anything that reports on sessions (``reconcile``, the usage
report): every request predicted in log-time order, judged against its observation, and
explained in words where it is outside tolerance.

    requests = [r for r in session_requests(path, name) if isinstance(r, SessionRequest)]
    for each in predict_sessions(requests, profile_for_format("claude-code")):
        each.request.usage, each.predicted.read, each.within_tolerance, each.cause, each.why
        missed_reads(each)  # the cached tokens it did not read, why (the usage report's loss)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from cachecast.sessions.causes import DIRECTORY_CHANGED, IDLE_GAP, directory_words, explain, within
from cachecast.sessions.predictor import Prediction, SessionPredictor, duration
from cachecast.sessions.profiles import ClientProfile
from cachecast.sessions.reading import SessionRequest


@dataclass(frozen=True, slots=True)
class PredictedRequest:
    request: SessionRequest
    predicted: Prediction
    within_tolerance: bool
    cause: str | None  # a code of ``sessions.causes`` (None: within tolerance)
    why: str  # the cause in words with its figures, else what the prediction rests on
    # What the request would have read had the idle gap before it not outlived its lineage's
    # cached prefix (the same prediction made at the moment that prefix was last used); None
    # where no gap outlived a TTL.
    kept: int | None = None


def predict_sessions(
    requests: Iterable[SessionRequest],
    profile: ClientProfile,
    minimum: Callable[[SessionRequest], int] | None = None,
) -> Iterator[PredictedRequest]:
    """Each request predicted from the ones before it (sorted here by log time: sub-agent
    files interleave with their session's), then learned from. ``minimum`` gives the
    shortest prompt the provider caches for a request's model, from the contract in force
    (callers that know the contracts; without it no minimum is applied)."""
    predictor = SessionPredictor(profile)
    for each in sorted(requests, key=lambda request: request.facts.timestamp):
        facts, observed = each.facts, each.observed
        if minimum is not None:
            facts = dataclasses.replace(facts, minimum_prefix=minimum(each))
        predicted = predictor.predict(facts)  # k's facts only: never its observed split
        kept = None
        gap, ttl = predicted.gap_seconds, predicted.ttl_seconds
        if gap is not None and ttl is not None and gap > ttl and not predicted.new_lineage:
            # ``predict`` reads the predictor's state and changes none of it.
            then = dataclasses.replace(facts, timestamp=facts.timestamp - gap)
            kept = predictor.predict(then).read
        ok = within(facts, predicted, observed)
        # What a request that read less than predicted did read, named from the requests
        # before it (before ``learn``, which adds its own): for the explanation only.
        held = None
        if not ok and observed.read < predicted.read:
            held = predictor.held_prefix(facts, observed.read)
        predictor.learn(facts, predicted, observed)
        cause, why = (None, predicted.basis)
        if not ok:
            cause, why = explain(facts, predicted, observed, profile, held, each.client_version)
        yield PredictedRequest(each, predicted, ok, cause, why, kept)


@dataclass(frozen=True, slots=True)
class MissedReads:
    """Cached tokens a request did not read: ``expected`` of them were there, it read
    ``expected - tokens``; ``cause`` is a code of ``sessions.causes``, ``detail`` in words."""

    tokens: int
    expected: int
    cause: str
    detail: str


def missed_reads(each: PredictedRequest) -> MissedReads | None:
    """What a request failed to read (None: nothing): the prefix an idle gap let expire
    (``kept``), else, outside tolerance, the shortfall from the prediction. A shortfall
    within tolerance is the prediction's own margin, not a miss (docs/usage-report.md)."""
    read = each.request.observed.read
    predicted = each.predicted
    if each.kept is not None and each.kept > max(read, predicted.read):
        gap, ttl = predicted.gap_seconds or 0.0, predicted.ttl_seconds or 0.0
        return MissedReads(
            each.kept - read,
            each.kept,
            IDLE_GAP,
            f"the idle gap of {duration(gap)} outlived the cache's {duration(ttl)} lifetime:"
            f" {each.kept:,} cached tokens were written again or sent uncached",
        )
    before = predicted.before_directory_change
    change = each.request.facts.directory_change
    if each.within_tolerance and before is not None and change is not None and before > read:
        # Predicted right, and still a loss: the prefix before the prompt was written again.
        words = directory_words(change, read, before)
        return MissedReads(before - read, before, DIRECTORY_CHANGED, words)
    if not each.within_tolerance and each.cause is not None and predicted.read > read:
        return MissedReads(predicted.read - read, predicted.read, each.cause, each.why)
    return None
