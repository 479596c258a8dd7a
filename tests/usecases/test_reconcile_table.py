"""The ``reconcile`` table for people (issue 29, point 4): the headline predicted against
observed dollars, errors with sensible decimals, no Python ``None``, and only the worst
mismatches unless asked (``--limit``)."""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from tests.conftest import shared_data

LOG = "recordings/claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"


def _dollars(text: str) -> str:
    # Cents for amounts of a dollar or more, thousands separators (the display rule).
    return f"${Decimal(text).quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN):,}"


@pytest.mark.parametrize("columns", [80, 120])
def test_headline_worst_mismatches_and_limit(migrated_db_url: str, columns: int) -> None:
    log = str(shared_data(LOG))
    db = ["--database-url", migrated_db_url]
    env = {"COLUMNS": str(columns)}
    exact = CliRunner().invoke(app, ["reconcile", log, "--json", *db], env=env)
    assert exact.exit_code == 0, exact.output
    report = json.loads(exact.stdout)
    summary = report["summary"]
    # A session's claim is tolerance, any other log's exactness (docs/predictions.md): the
    # listing's mismatches are the rows that miss the claim, counted here from the JSON rows.
    claim = "within_tolerance" if report["client"] is not None else "exact_match"
    mismatches = sum(1 for row in report["requests"] if not row[claim])
    assert mismatches > 2  # so that a limit of 2 leaves some out
    default = CliRunner().invoke(app, ["reconcile", log, *db], env=env)
    assert f"the {min(20, mismatches)} worst of {mismatches:,} mismatches" in default.output
    shown = CliRunner().invoke(app, ["reconcile", log, "--limit", "2", *db], env=env)
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    first = text.splitlines()[0]
    assert f"predicted {_dollars(summary['predicted_cost'])}" in first
    assert f"against observed {_dollars(summary['observed_cost'])}" in first
    assert "None" not in text
    assert f"the 2 worst of {mismatches:,} mismatches" in text
    assert f"{mismatches - 2:,} more: --limit 0 lists every mismatch" in text
    assert all(len(line) <= columns for line in text.splitlines()[1:] if "│" not in line)
    every = CliRunner().invoke(app, ["reconcile", log, "--limit", "0", *db], env=env)
    assert f"the {mismatches} worst of {mismatches:,} mismatches" in every.output
    assert "more: --limit 0" not in every.output


@pytest.mark.parametrize("columns", [200, 40])  # 40: rows stacked (output.fit)
def test_bracketed_file_names_are_printed_as_they_are(
    migrated_db_url: str, tmp_path: Path, columns: int
) -> None:
    """pytest-parametrised recordings are named ``test_x[param].yaml``: the human table and
    ``inspect`` print that name, not rich markup read out of it (``[gpt-4o-mini]`` as a style
    tag would vanish)."""
    system = "The quick brown fox jumps over the lazy dog. " * 200
    records = [
        {
            "timestamp": 1_750_000_000 + 10 * index,
            "provider": "openai",
            "model": "gpt-4o-mini",
            "request_id": f"r{index}",
            "request": {
                "model": "gpt-4o-mini",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": f"question {index}"},
                ],
            },
            # The second request shares a prompt prefix of well over 1,024 tokens with the
            # first, yet reads nothing: a mismatch the table lists by file and line.
            "observed": {"input_tokens": 1820, "cache_read_tokens": 0, "output_tokens": 5},
        }
        for index in range(2)
    ]
    log = tmp_path / "test_x[gpt-4o-mini].jsonl"
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    env = {"COLUMNS": str(columns)}
    db = ["--database-url", migrated_db_url]
    shown = CliRunner().invoke(app, ["reconcile", str(log), "--limit", "0", *db], env=env)
    assert shown.exit_code == 0, shown.output
    assert "test_x[gpt-4o-mini].jsonl:2" in shown.stdout
    inspected = CliRunner().invoke(app, ["inspect", str(log)], env=env)
    assert inspected.exit_code == 0, inspected.output
    assert "test_x[gpt-4o-mini].jsonl" in inspected.stdout
