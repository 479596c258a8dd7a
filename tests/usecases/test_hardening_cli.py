"""The command line under hostile or broken input: a claimed size is exit 2 at once, a log
nobody can read is exit 2, a read command creates nothing, close matches are printed once,
an export reads back into a freshly migrated database, and no alias captures a provider.

The real CLI: in a subprocess where its memory is measured, else through typer's runner.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.peak import run_measured
from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.core import db

REPO = Path(__file__).resolve().parents[2]
NOV = dt.date(2026, 11, 1)
MAX_REQUEST_TOKENS = 10_000_000  # docs/limits.md: the default of max_request_tokens


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_1_a_claimed_prompt_of_1e8_tokens_is_exit_2_without_the_memory(
    migrated_db_url: str, tmp_path: Path
) -> None:
    """Before: 10 s and 554 MB padding 1e8 approximate tokens, then exit 0. The claim is over
    max_request_tokens, so exit 2 naming the line and field, in the memory of a start-up."""
    log = tmp_path / "claim.jsonl"
    log.write_text(
        json.dumps({"model": "claude-sonnet-4-5", "prompt": "hi", "usage": {"input_tokens": 1e8}})
        + "\n"
    )
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"model": "claude-sonnet-4-5", "prompt": "hi"}) + "\n")
    env = {**os.environ, "CACHECAST_DATABASE_URL": migrated_db_url, "PYTHONPATH": str(REPO)}
    options = ["--target", "anthropic:claude-sonnet-4-5", "--at", "2026-11-01"]
    # The same command on the same record without the claim: the memory of a start-up.
    baseline = run_measured("cachecast", ["estimate", str(plain), *options], env=env, cwd=REPO)
    assert baseline.returncode == 0, baseline.stderr
    claimed = run_measured("cachecast", ["estimate", str(log), *options], env=env, cwd=REPO)
    assert claimed.returncode == 2, claimed.stderr
    assert f"{log}:1: usage.input_tokens:" in claimed.stderr
    assert str(MAX_REQUEST_TOKENS) in claimed.stderr
    assert "Traceback" not in claimed.stderr
    # Padding 1e8 tokens took 554 MB more; refused, the peak is the start-up's (KiB).
    assert claimed.peak_kib < baseline.peak_kib + 20 * 1024, (claimed, baseline)
    # CPU, not wall time: padding took 10 s of CPU; refused, it costs what the start-up does.
    assert claimed.cpu_seconds < baseline.cpu_seconds + 5


def test_10_a_binary_log_is_exit_2(migrated_db_url: str, tmp_path: Path) -> None:
    log = tmp_path / "binary.jsonl"
    log.write_bytes(bytes(range(256)) * 16)
    code, out, err = run(
        "estimate", str(log), "--target", "openai:gpt-4o", "--database-url", migrated_db_url
    )
    assert code == 2, out
    assert str(log) in err and "$0" not in out


@pytest.mark.parametrize(
    "command",
    [
        ("contracts", "list"),
        ("contracts", "show", "openai", "gpt-4o"),
        ("contracts", "history", "openai", "gpt-4o"),
        ("contracts", "export"),
        ("db", "current"),
    ],
)
def test_10_a_read_command_creates_no_database(tmp_path: Path, command: tuple[str, ...]) -> None:
    folder = tmp_path / "not" / "there"
    run(*command, "--database-url", f"sqlite:///{folder / 'cachecast.db'}")
    assert not (tmp_path / "not").exists()


@pytest.mark.parametrize(
    "command",
    [
        ("contracts", "show", "openai", "gpt-4oo", "--at", "2026-11-01"),
        ("contracts", "history", "openai", "gpt-4oo"),
        ("estimate", "examples/agent-log.jsonl", "--target", "openai:gpt-4oo"),
    ],
)
def test_10_close_matches_are_printed_once(
    migrated_db_url: str, command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    code, _, err = run(*command, "--database-url", migrated_db_url)
    assert code == 2
    assert err.count("close matches") == 1, err
    assert "gpt-4o" in err.split("close matches", 1)[1]


def test_10_an_export_imports_into_a_freshly_migrated_database(
    migrated_db_url: str, tmp_path: Path
) -> None:
    """A seeded version closed by a newer one: the export holds it closed, the fresh database
    holds it open; reading the export back closes it there too, and exports then agree."""
    store = ContractStore(migrated_db_url)
    seeded = store.as_of("openai", "gpt-4o", NOV)
    assert seeded.effective_to is None
    store.add_version(
        seeded.model_copy(
            update={"effective_from": dt.date(2026, 12, 1), "verified_on": dt.date(2026, 11, 20)}
        )
    )
    exported = tmp_path / "export.json"
    code, _, err = run(
        "contracts", "export", "-o", str(exported), "--database-url", migrated_db_url
    )
    assert code == 0, err

    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    db.upgrade(fresh)
    code, out, err = run("contracts", "import", str(exported), "--database-url", fresh)
    assert code == 0, err
    assert "imported 1 version(s)" in out and "closed 1" in out
    again = tmp_path / "again.json"
    code, _, err = run("contracts", "export", "-o", str(again), "--database-url", fresh)
    assert code == 0, err
    assert json.loads(again.read_text()) == json.loads(exported.read_text())


@pytest.mark.parametrize("alias", ["*", "?*", "gpt-*", "[a-z]*"])
def test_10_an_alias_capturing_a_provider_is_refused(
    migrated_db_url: str, tmp_path: Path, alias: str
) -> None:
    store = ContractStore(migrated_db_url)
    base = store.as_of("openai", "gpt-4o", NOV)
    entry = base.model_copy(update={"model": "catch-all", "aliases": (alias,)})
    document = {
        "format": "cachecast-contracts",
        "format_version": 1,
        "contracts": [entry.model_dump(mode="json")],
    }
    path = tmp_path / "catch-all.json"
    path.write_text(json.dumps(document))
    code, _, err = run("contracts", "import", str(path), "--database-url", migrated_db_url)
    assert code == 2, err
    assert "aliases[0]" in err and "literal characters" in err
    code, _, err = run(
        "contracts", "show", "openai", "no-such-model-at-all", "--database-url", migrated_db_url
    )
    assert code == 2  # still unknown: nothing was written


def test_bad_lines_are_counted_not_kept(migrated_db_url: str, tmp_path: Path) -> None:
    """Before: every skipped line's error was kept and listed (400,000 bad lines of 22 bytes:
    1,084 MB and 51 s for `estimate`). A report lists the first 1,000 (KEPT_BAD_RECORDS,
    docs/limits.md) and counts them all; the peak stays near a one-line run's."""
    bad = 200_000
    log = tmp_path / "bad.jsonl"
    good = json.dumps({"model": "gpt-4o", "prompt": "hello there"}) + "\n"
    log.write_text(good + '{"model": 5, "x": 1}\n' * bad)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(good)
    env = {**os.environ, "CACHECAST_DATABASE_URL": migrated_db_url, "PYTHONPATH": str(REPO)}
    options = ["--target", "openai:gpt-4o", "--at", "2026-11-01", "--json"]
    baseline = run_measured("cachecast", ["estimate", str(plain), *options], env=env, cwd=REPO)
    assert baseline.returncode == 0, baseline.stderr
    measured = run_measured("cachecast", ["estimate", str(log), *options], env=env, cwd=REPO)
    assert measured.returncode == 0, measured.stderr
    report = json.loads(measured.stdout)
    assert report["skipped_lines"] == bad  # lines 2 .. 200,001, one error each
    assert len(report["errors"]) == 1_000
    assert report["errors"][0]["line"] == 2 and report["errors"][0]["field"] == "model"
    # Kept, 200,000 errors of about a kilobyte took some 500 MB more than the start-up.
    assert measured.peak_kib < baseline.peak_kib + 100 * 1024, (measured, baseline)
