"""``cachecast estimate`` end to end: the real CLI, a migrated SQLite file, the bundled log."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from cachecast.cli import app
from tests.conftest import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "agent-log.jsonl"
QUICK_START_TARGETS = [
    "openai:gpt-5.6",
    "openai:gpt-4o",
    "anthropic:claude-sonnet-4-5",
    "deepseek:deepseek-chat",
]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["estimate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_bundled_example_end_to_end(migrated_db_url: str, tmp_path: Path) -> None:
    example_lines = sum(1 for line in EXAMPLE.open() if line.strip())
    table = tmp_path / "requests.csv"
    args = [str(EXAMPLE), "--at", "2026-11-01", "--database-url", migrated_db_url]
    for target in QUICK_START_TARGETS:
        args += ["--target", target]
    code, out, err = run(*args, "--json", "--per-request", str(table))
    assert code == 0, err
    data = json.loads(out)
    assert data["skipped_lines"] == 0
    assert [f"{t['provider']}:{t['model']}" for t in data["targets"]] == QUICK_START_TARGETS
    frame = pd.read_csv(table, dtype={"cost_total": str})
    assert len(frame) == example_lines * len(QUICK_START_TARGETS)
    for target in data["targets"]:
        name = f"{target['provider']}:{target['model']}"
        assert target["requests"] == example_lines
        assert target["contract"]["source"].startswith("https://")
        # The per-request table adds up to the totals, to the last digit.
        rows = frame[frame["target"] == name]
        assert sum(Decimal(value) for value in rows["cost_total"]) == Decimal(
            target["cost"]["total"]
        )
        assert rows["cache_read_tokens"].sum() == target["cache_read_tokens"]
    gpt4o = data["targets"][1]
    # gpt-4o writes are free (x1), so caching off costs every prompt token at $2.50/MTok plus
    # output at $10/MTok, from the totals alone.
    expected_off = (
        Decimal(gpt4o["input_tokens"]) * Decimal("2.5") + Decimal(gpt4o["output_tokens"]) * 10
    ) / 1_000_000
    assert Decimal(gpt4o["cost_without_cache"]) == expected_off
    # The log resends a long shared prefix: the automatic cache must hit.
    assert gpt4o["cache_read_tokens"] > 0
    # The log marks no breakpoints: an explicit contract caches nothing unless asked to assume
    # Anthropic's automatic cache_control.
    sonnet = data["targets"][2]
    assert sonnet["cache_read_tokens"] == 0 and sonnet["cache_write_tokens"] == 0
    code, out, err = run(
        str(EXAMPLE),
        "--target",
        "anthropic:claude-sonnet-4-5",
        "--auto-cache-control",
        "--json",
        "--database-url",
        migrated_db_url,
    )
    assert code == 0, err
    assumed = json.loads(out)["targets"][0]
    assert assumed["assumed_breakpoint"] and assumed["cache_read_tokens"] > 0


def test_table_csv_markdown_and_parquet(migrated_db_url: str, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    prompt = {"tokens": list(range(2_000))}
    log.write_text(
        "\n".join(
            json.dumps({"timestamp": t, "model": "gpt-4o", "request": prompt, "output_tokens": 5})
            for t in (0, 10)
        )
        + "\n"
    )
    base = [str(log), "--target", "openai:gpt-4o", "--database-url", migrated_db_url]
    code, out, _ = run(*base)
    assert code == 0 and "openai:gpt-4o" in out and "contract openai/gpt-4o@2024-10-01" in out
    code, out, _ = run(*base, "--csv")
    assert code == 0
    header, row = out.strip().splitlines()
    assert header.startswith("target,contract,verified_on,requests")
    # 2 x 2,000 tokens; the second reads 15 blocks of 128 = 1,920 (the 16th is partial).
    assert row.startswith("openai:gpt-4o,openai/gpt-4o@2024-10-01,") and ",2,4000,1920," in row
    code, out, _ = run(*base, "--markdown")
    assert code == 0 and "| openai:gpt-4o |" in out
    parquet = tmp_path / "rows.parquet"
    code, _, err = run(*base, "--per-request", str(parquet))
    assert code == 0, err
    frame = pd.read_parquet(parquet)
    assert list(frame["cache_read_tokens"]) == [0, 1_920]
    # Exact decimal strings, not floats. r1: writes 1920 * 2.5 + uncached 80 * 2.5 + output
    # 5 * 10 = 5050e-6; r2: reads 1920 * 1.25 + 80 * 2.5 + 50 = 2650e-6.
    assert list(frame["cost_total"]) == ["0.00505", "0.00265"]


def test_malformed_and_unknown_targets_exit_2(migrated_db_url: str) -> None:
    code, _, err = run(str(EXAMPLE), "--target", "gpt-4o", "--database-url", migrated_db_url)
    assert code == 2 and "PROVIDER:MODEL" in err
    code, _, err = run(
        str(EXAMPLE), "--target", "openai:gpt-4oo", "--database-url", migrated_db_url
    )
    assert code == 2 and "close matches" in err and "gpt-4o" in err
    code, _, err = run(
        str(EXAMPLE), "--target", "openai:gpt-4o", "--at", "yesterday",
        "--database-url", migrated_db_url,
    )  # fmt: skip
    assert code == 2 and "--at" in err
    code, _, err = run(
        str(EXAMPLE), "--target", "openai:gpt-4o", "--per-request", "x.xlsx",
        "--database-url", migrated_db_url,
    )  # fmt: skip
    assert code == 2 and ".csv or .parquet" in err


def test_bad_lines_are_reported_with_file_line_field(migrated_db_url: str, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    good = json.dumps({"timestamp": 0, "model": "gpt-4o", "request": {"tokens": [1, 2, 3]}})
    log.write_text(good + "\n{not json\n" + good.replace('"timestamp": 0', '"timestamp": 1') + "\n")
    args = [str(log), "--target", "openai:gpt-4o", "--database-url", migrated_db_url]
    code, out, err = run(*args, "--json")
    assert code == 0
    assert f"{log}:2: <line>: invalid JSON" in err and "skipped 1 bad line" in err
    assert json.loads(out)["targets"][0]["requests"] == 2
    code, _, err = run(*args, "--strict")
    assert code == 2 and f"{log}:2:" in err  # bad input: exit 2, as every command


def test_unmigrated_database_is_a_clear_error(sqlite_url: str) -> None:
    code, _, err = run(str(EXAMPLE), "--target", "openai:gpt-4o", "--database-url", sqlite_url)
    assert code == 2 and "cachecast db upgrade" in err
