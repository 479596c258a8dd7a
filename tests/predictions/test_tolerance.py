"""The reconciliation's tolerance (docs/predictions.md): reads and writes each within max(8
tokens, 1% of the prompt) of the observed ones, whatever the tokenizer; exact matches apart."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cachecast.simulator.reconcile import ReconciledRequest
from cachecast.usecases.reconcile import within_tolerance


def request(read: tuple[int, int], write: tuple[int, int | None], prompt: int) -> ReconciledRequest:
    return ReconciledRequest(
        request_id="r",
        line=1,
        predicted_read=read[0],
        observed_read=read[1],
        predicted_write=write[0],
        observed_write=write[1],
        predicted_cost=Decimal(0),
        observed_cost=Decimal(0),
        observed_input=prompt,
    )


@pytest.mark.parametrize(
    ("read", "write", "prompt", "within", "exact"),
    [
        # A write one token long of the observed 1,217 on a 1,220-token prompt: 1 <= 8.
        ((0, 0), (1_218, 1_217), 1_220, True, False),
        ((0, 0), (1_217, 1_217), 1_220, True, True),
        # 9 tokens off on a 500-token prompt: over 8 and over 1% (5).
        ((509, 500), (0, 0), 500, False, False),
        # 900 tokens off on a 100,000-token prompt: within 1% (1,000).
        ((99_100, 100_000), (0, None), 100_000, True, False),
        # Reads and writes are each held to it (700-token prompt: 1% is 7, so 8 tokens): 8 off
        # each is within, 9 off a write is not.
        ((308, 300), (208, 200), 700, True, False),
        ((308, 300), (209, 200), 700, False, False),
        # A provider that reports no writes: only the reads count.
        ((0, 0), (5_000, None), 6_000, True, True),
    ],
)
def test_reads_and_writes_each_within_8_tokens_or_1_percent(
    read: tuple[int, int], write: tuple[int, int | None], prompt: int, within: bool, exact: bool
) -> None:
    reconciled = request(read, write, prompt)
    assert within_tolerance(reconciled) is within
    assert reconciled.exact_match is exact
