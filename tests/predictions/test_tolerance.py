"""The reconciliation's tolerance (docs/predictions.md): reads and writes each within max(8
tokens, 1% of the prompt) of the observed ones, whatever the tokenizer; exact matches apart."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.reconcile import ReconciledRequest
from cachecast.usecases.reconcile import (
    UNEXPLAINED,
    ReconcileRequest,
    reconcile,
    within_tolerance,
)


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


def _gpt56_log(tmp_path: Path, usages: list[tuple[int, int]]) -> Path:
    """Identical 1,500-token prompts (the token ids themselves: our count is the provider's)
    to gpt-5.6, 10 s apart, with the given (cached_tokens, cache_write_tokens)."""
    records = [
        {
            "timestamp": f"2026-08-01T10:00:{index * 10:02d}Z",
            "provider": "openai",
            "model": "gpt-5.6",
            "request_id": f"r-{index + 1}",
            "request": {"tokens": PROMPT},
            "response": {
                "usage": {
                    "prompt_tokens": len(PROMPT),
                    "completion_tokens": 20,
                    "total_tokens": len(PROMPT) + 20,
                    "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": write},
                }
            },
        }
        for index, (read, write) in enumerate(usages)
    ]
    path = tmp_path / "gpt56.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


PROMPT = [2000 + position % 70 for position in range(1500)]


def test_a_request_within_tolerance_carries_no_class(store: ContractStore, tmp_path: Path) -> None:
    # gpt-5.6 (mode both): the implicit breakpoint of a prompt with no messages sits at its
    # end, so we predict read 0 / write 1,500. Observed: write 1,497, 3 tokens off (<= 8):
    # within tolerance, and no rule names a cause: no class, the margin said in words.
    # The second request repeats the prompt: we predict read 1,500 / write 0; observed read
    # 1,000 / write 500 is 1,000 tokens off, and stays classified.
    log = _gpt56_log(tmp_path, [(0, 1497), (1000, 500)])
    report = reconcile(ReconcileRequest(log=LogInput.of_paths([log])), store)
    first, second = sorted(report.requests, key=lambda row: row.line)
    assert (first.predicted_cache_read_tokens, first.predicted_cache_write_tokens) == (0, 1500)
    assert first.within_tolerance and not first.exact_match
    assert first.classification is None
    assert first.explanation.startswith("within tolerance (3 tokens off)")
    # (no rule of docs/predictions.md applies to it either: not approximated, no warm cache,
    # no stored term contradicted, not an automatic cache)
    assert not second.within_tolerance and second.classification == UNEXPLAINED
    assert report.summary.classes == {UNEXPLAINED: 1}
