"""Progress counts requests, not lines (issue 29, point 10): a Claude Code transcript has
many lines a request; the bar said "replaying 0/21776" for 2,288 requests."""

from __future__ import annotations

import datetime as dt

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.usecases.estimate import EstimateRequest, estimate
from cachecast.usecases.reconcile import ReconcileRequest, reconcile
from tests.conftest import shared_data

LOG = "recordings/claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


class Recorder:
    def __init__(self) -> None:
        self.starts: list[tuple[str, int | None]] = []
        self.advanced: list[int] = []

    def start(self, label: str, total: int | None) -> None:
        self.starts.append((label, total))
        self.advanced.append(0)

    def advance(self, count: int) -> None:
        self.advanced[-1] += count


def test_estimate_and_reconcile_count_requests(migrated_db_url: str) -> None:
    path = shared_data(LOG)
    lines = sum(1 for line in path.read_bytes().splitlines() if line.strip())
    store = ContractStore(migrated_db_url)
    seen = Recorder()
    # Two targets with different tokenizers (a log that is not a session: two passes).
    report = estimate(
        EstimateRequest(
            log=LogInput.of_paths([path]),
            targets=["anthropic:claude-opus-4-6", "openai:gpt-4o"],
            at=dt.date(2026, 11, 1),
        ),
        store,
        progress=seen,
    )
    requests = report.targets[0].requests
    assert lines > 2 * requests  # a transcript: the case the bar got wrong
    assert all(total != lines for _, total in seen.starts)
    # A session is priced from its observed usage (docs/predictions.md), read and predicted
    # first: one bar whose total is the count of requests, every one counted, for all targets.
    assert seen.starts == [("pricing requests", requests)] and seen.advanced == [requests]
    seen = Recorder()
    reconciled = reconcile(ReconcileRequest(log=LogInput.of_paths([path])), store, progress=seen)
    # A session is read before it is predicted (docs/predictions.md): the bar's total is known,
    # and it is the count of requests predicted, every one counted, never the count of lines.
    predicted = sum(figures.requests for figures in reconciled.files)
    assert seen.starts[-1] == ("reconciling", predicted) and seen.advanced[-1] == predicted
    assert lines > 2 * predicted
