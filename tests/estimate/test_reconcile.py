"""Reconciliation of predicted against observed usage; expected figures computed by hand."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from cachecast.simulator.reconcile import ReconciliationSummary, reconcile_request
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import ObservedUsage
from tests.estimate.test_billing import anthropic_sonnet

D = Decimal


def predicted(
    request_id: str, input_tokens: int, read: int, writes: dict[str, int]
) -> RequestUsage:
    return RequestUsage(
        request_id=request_id,
        line=int(request_id[1:]),
        timestamp=0.0,
        scope="org",
        input_tokens=input_tokens,
        output_tokens=0,
        cache_read_tokens=read,
        cache_write_tokens=writes,
        uncached_input_tokens=input_tokens - read - sum(writes.values()),
    )


def test_rows_and_summary() -> None:
    contract = anthropic_sonnet()  # $3 input, read x0.1, 5m write x1.25
    rows = [
        # r1: exact on both reads and writes; same bill.
        reconcile_request(
            predicted("r1", 10_000, 8_000, {"5m": 1_500}),
            ObservedUsage(input_tokens=10_000, cache_read_tokens=8_000, cache_write_tokens=1_500),
            contract,
        ),
        # r2: provider reported no writes, so only reads are compared: exact in tokens.
        # Bills: predicted 2000 * 3 * 1.25 / 1e6 = 0.0075; observed 2000 * 3 / 1e6 = 0.006.
        reconcile_request(
            predicted("r2", 2_000, 0, {"5m": 2_000}),
            ObservedUsage(input_tokens=2_000, cache_read_tokens=0),
            contract,
        ),
        # r3: predicted 4096 read, observed 4000 read + 500 written: error 96 + 500 = 596.
        # predicted bill: 4096 * 0.3 / 1e6 + 904 * 3 / 1e6 = 0.0012288 + 0.002712 = 0.0039408
        # observed bill:  4000 * 0.3 / 1e6 + 500 * 3.75 / 1e6 + 500 * 3 / 1e6
        #               = 0.0012 + 0.001875 + 0.0015 = 0.004575 ; |diff| = 0.0006342
        reconcile_request(
            predicted("r3", 5_000, 4_096, {}),
            ObservedUsage(input_tokens=5_000, cache_read_tokens=4_000, cache_write_tokens=500),
            contract,
        ),
    ]
    assert [row.exact_match for row in rows] == [True, True, False]
    assert rows[1].observed_write is None
    assert (rows[1].predicted_cost, rows[1].observed_cost) == (D("0.0075"), D("0.006"))
    assert (rows[2].predicted_cost, rows[2].observed_cost) == (D("0.0039408"), D("0.004575"))
    assert rows[2].token_error == 596

    summary = ReconciliationSummary()
    for row in rows:
        summary.add(row)
    assert summary.exact_match_share == Fraction(2, 3)
    assert summary.mean_abs_error_tokens == Fraction(596, 3)
    # (0 + 0.0015 + 0.0006342) / 3 = 0.0021342 / 3 = 0.0007114
    assert summary.mean_abs_error_cost == Fraction("0.0007114")
    as_json = summary.to_json()
    assert as_json["exact_match_share"] == "0.666666667"
    assert as_json["mean_abs_error_tokens"] == "198.666666667"
    assert as_json["mean_abs_error_cost"] == "0.0007114"
    assert as_json["predicted_cache_read_tokens"] == 8_000 + 0 + 4_096
    assert as_json["observed_cache_read_tokens"] == 8_000 + 0 + 4_000


def test_empty_summary_is_zero_not_an_error() -> None:
    assert ReconciliationSummary().to_json()["exact_match_share"] == "0"
