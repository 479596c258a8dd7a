"""DeepSeek's off-peak prices: chosen per request by its UTC time, base prices without one.

Terms of deepseek/deepseek-v4-flash from 2026-10-02 (contracts-v3.json, from LiteLLM
1.110.2's ``off_peak_pricing``): peak $0.30 in, reads 0.02x ($0.006), $1.20 out; off-peak
$0.15 in, reads 0.02x ($0.003), $0.60 out; off-peak Monday-Friday 00:00-01:00, 04:00-06:00
and 10:00-24:00 UTC, all day on Saturday and Sunday.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.contracts.model import OffPeakWindow
from cachecast.simulator.billing import bill_request, prices_for
from cachecast.simulator.types import RequestUsage

DAY = dt.date(2026, 12, 3)


def _at(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


def _usage(timestamp: float) -> RequestUsage:
    # 1,000,000 prompt tokens: 600,000 read from cache, 400,000 not; 100,000 out.
    return RequestUsage(
        request_id="r",
        line=1,
        timestamp=timestamp,
        scope="default",
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_tokens=600_000,
        uncached_input_tokens=400_000,
    )


# Peak: 400,000 x 0.30 / 1e6 = 0.12; 600,000 x 0.30 x 0.02 / 1e6 = 0.0036;
#       100,000 x 1.20 / 1e6 = 0.12; total 0.2436.
# Off-peak: 400,000 x 0.15 / 1e6 = 0.06; 600,000 x 0.15 x 0.02 / 1e6 = 0.0018;
#           100,000 x 0.60 / 1e6 = 0.06; total 0.1218.
PEAK, OFF_PEAK = Decimal("0.2436"), Decimal("0.1218")


@pytest.mark.parametrize(
    ("moment", "expected", "off_peak"),
    [
        ("2026-12-02T03:00:00", PEAK, False),  # a Wednesday, between two windows
        ("2026-12-02T00:59:59", OFF_PEAK, True),  # Wednesday, the first window's last second
        ("2026-12-02T01:00:00", PEAK, False),  # its end is exclusive
        ("2026-12-02T12:00:00", OFF_PEAK, True),  # Wednesday 10:00-24:00
        ("2026-12-05T08:00:00", OFF_PEAK, True),  # a Saturday: all day
    ],
)
def test_a_request_pays_the_prices_of_its_utc_time(
    migrated_db_url: str, moment: str, expected: Decimal, off_peak: bool
) -> None:
    contract = ContractStore(migrated_db_url).as_of("deepseek", "deepseek-v4-flash", DAY)
    usage = _usage(_at(moment))
    assert bill_request(usage, contract).total == expected
    assert prices_for(contract, usage.input_tokens, usage.timestamp).off_peak is off_peak


def test_a_request_without_a_wall_clock_time_pays_the_base_prices(migrated_db_url: str) -> None:
    contract = ContractStore(migrated_db_url).as_of("deepseek", "deepseek-v4-flash", DAY)
    usage = _usage(0.0)  # what a record without a timestamp gets
    assert bill_request(usage, contract).total == PEAK
    assert prices_for(contract, usage.input_tokens, usage.timestamp).off_peak is None


def test_windows_are_checked() -> None:
    with pytest.raises(ValueError, match="start must be before end"):
        OffPeakWindow(weekdays=(1,), start="16:30", end="00:30")
    with pytest.raises(ValueError, match="ISO numbers"):
        OffPeakWindow(weekdays=(0,), start="00:00", end="01:00")
    assert OffPeakWindow.parse("6,7 00:00-24:00").text() == "6,7 00:00-24:00"


def test_estimate_counts_off_peak_requests_and_those_without_a_time(
    migrated_db_url: str, tmp_path: Path
) -> None:
    body = {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "hello"}]}
    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps({"request": body, "output_tokens": 5})  # no timestamp
        + "\n"
        + json.dumps({"request": body, "output_tokens": 5, "timestamp": "2026-12-05T08:00:00Z"})
        + "\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "estimate",
            str(log),
            "-t",
            "deepseek:deepseek-v4-flash",
            "--at",
            DAY.isoformat(),
            "--json",
            "--database-url",
            migrated_db_url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "billed at the off-peak prices (the request's UTC time is in a window) (1 requests)" in (
        result.output
    )
    assert "no wall-clock timestamp: billed at the base (peak) prices" in result.output
