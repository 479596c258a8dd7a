"""The library entry point for anything that reports on sessions (``reconcile``, the usage
report): every request predicted in log-time order, judged against its observation, and
explained in words where it is outside tolerance.

    requests = [r for r in session_requests(path, name) if isinstance(r, SessionRequest)]
    for each in predict_sessions(requests, profile_for_format("claude-code")):
        each.request.usage, each.predicted.read, each.within_tolerance, each.cause, each.why
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cachecast.sessions.causes import explain, within
from cachecast.sessions.predictor import Prediction, SessionPredictor
from cachecast.sessions.profiles import ClientProfile
from cachecast.sessions.reading import SessionRequest


@dataclass(frozen=True, slots=True)
class PredictedRequest:
    request: SessionRequest
    predicted: Prediction
    within_tolerance: bool
    cause: str | None  # a code of ``sessions.causes`` (None: within tolerance)
    why: str  # the cause in words with its figures, else what the prediction rests on


def predict_sessions(
    requests: Iterable[SessionRequest], profile: ClientProfile
) -> Iterator[PredictedRequest]:
    """Each request predicted from the ones before it (sorted here by log time: sub-agent
    files interleave with their session's), then learned from."""
    predictor = SessionPredictor(profile)
    for each in sorted(requests, key=lambda request: request.facts.timestamp):
        facts, observed = each.facts, each.observed
        predicted = predictor.predict(facts)  # k's facts only: never its observed split
        predictor.learn(facts, predicted, observed)
        ok = within(facts, predicted, observed)
        cause, why = (None, predicted.basis)
        if not ok:
            cause, why = explain(facts, predicted, observed, profile)
        yield PredictedRequest(each, predicted, ok, cause, why)
