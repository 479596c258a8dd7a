"""Money and counts for people (issue 29, point 9): what a table or a page shows. The
expected strings are written by hand from the rule in ``cachecast.cli.output.money``."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cachecast.cli.output import count, money, percent


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        ("-20.0038", "-$20.00"),  # was "$-20.0038"
        ("1234567.891", "$1,234,567.89"),
        ("3779470", "$3,779,470.00"),  # was "3.77947e+06" on a page
        ("0.25", "$0.25"),
        ("0.0038", "$0.0038"),
        ("0.00375", "$0.0038"),  # half-even at the 4th place: 0.0037|5 -> 0.0038
        ("0.02775", "$0.0278"),
        ("0.000012345", "$0.000012"),
        ("0", "$0.00"),
        ("-0.000001", "-$0.0000010"),
        ("-0.001", "-$0.001"),
    ],
)
def test_money(amount: str, shown: str) -> None:
    assert money(Decimal(amount)) == shown


def test_counts_and_shares() -> None:
    assert count(21776) == "21,776" and count(None) == "" and money(None) == ""
    assert percent(Decimal("0.658333")) == "65.8%" and percent(None) == ""
